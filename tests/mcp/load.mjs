// load.mjs: N sessions make concurrent MCP tool calls for S seconds (raw
// JSON-RPC over keep-alive HTTP). Prints a JSON summary; exit 1 on any error.
//
//   node load.mjs URL KEY N SECONDS [PREFIX] [COMMAND]
import http from 'node:http';

const [url, key, nArg, secArg, prefix = 'load', command = null] = process.argv.slice(2);
const N = Number(nArg), S = Number(secArg);
const u = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: N * 2 });

function post(sid, body) {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const t0 = process.hrtime.bigint();
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent,
      headers: {
        Authorization: `Bearer ${key}`, 'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream', 'X-Session-Id': sid,
        'Content-Length': data.length,
      },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        try { resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(chunks).toString()), ms }); } catch (e) { reject(e); }
      });
    });
    req.on('error', reject);
    req.setTimeout(120000, () => req.destroy(new Error('timeout')));
    req.end(data);
  });
}

let id = 0;
function call(sid, name, args) {
  return post(sid, { jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: args } });
}
const text = (r) => (r.body.result ? r.body.result.content.map((c) => c.text).join('') : JSON.stringify(r.body));

const errors = [];
const lat = [];
let calls = 0;
const firstCall = [];
let firstDone = 0;		// sessions past their first call
let tSteady = 0, steadyCalls = 0;	// after every session has its sandbox
let allFirst;
const barrier = new Promise((res) => { allFirst = res; });

async function session(i) {
  const sid = `${prefix}-${i}`;
  let n = 0;
  const first = await call(sid, 'shell', { command: command || `echo first-${sid}` });
  firstCall.push(first.ms);
  if (++firstDone === N) { tSteady = Date.now(); allFirst(); }
  if (first.status !== 200 || first.body.result?.isError) errors.push(`${sid} first: ${text(first)}`);
  await barrier;	// every session has its sandbox: measure the steady state
  const end = tSteady + S * 1000;
  while (Date.now() < end) {
    n++;
    const want = `${sid}-${n}`;
    const r = await call(sid, 'shell', { command: command || `echo ${want}` });
    calls++;
    if (tSteady) steadyCalls++;
    lat.push(r.ms);
    if (r.status !== 200 || r.body.result?.isError || (!command && !text(r).includes(want))) {
      errors.push(`${sid} call ${n}: ${r.status} ${text(r).slice(0, 200)}`);
      if (errors.length > 20) return;
    }
    if (!command && n % 10 === 0) {
      const f = await call(sid, 'str_replace_based_edit_tool', { command: 'create', path: `load-${n}.txt`, file_text: want });
      const v = await call(sid, 'str_replace_based_edit_tool', { command: 'view', path: `load-${n}.txt` });
      calls += 2;
      if (f.body.result?.isError || !text(v).includes(want)) errors.push(`${sid} file ${n}: ${text(f)} ${text(v)}`.slice(0, 300));
    }
  }
}

const t0 = Date.now();
await Promise.all(Array.from({ length: N }, (_, i) => session(i)));
const secs = (Date.now() - t0) / 1000;
lat.sort((a, b) => a - b);
firstCall.sort((a, b) => a - b);
const pct = (a, p) => (a.length ? a[Math.min(a.length - 1, Math.floor(a.length * p))] : 0);
const out = {
  sessions: N, seconds: secs, calls,
  calls_per_s: Math.round(steadyCalls / Math.max(0.001, (Date.now() - tSteady) / 1000)),
  p50_ms: +pct(lat, 0.5).toFixed(2), p99_ms: +pct(lat, 0.99).toFixed(2),
  first_call_p50_ms: +pct(firstCall, 0.5).toFixed(2), errors: errors.length,
};
console.log(JSON.stringify(out));
for (const e of errors.slice(0, 10)) console.error('error:', e);
agent.destroy();
process.exit(errors.length ? 1 : 0);
