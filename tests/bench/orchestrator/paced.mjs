// paced.mjs: N sessions each make one `shell` call every PERIOD ms (with
// jitter) for S seconds, after every session has its sandbox; prints the
// latency figures as JSON (for load-hostile.sh). Exit 1 on any error.
//
//   node paced.mjs URL KEY N SECONDS PERIOD_MS [PREFIX]
import http from 'node:http';

const [url, key, nArg, secArg, perArg, prefix = 'paced'] = process.argv.slice(2);
const N = Number(nArg), S = Number(secArg), PERIOD = Number(perArg);
const u = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: N * 2 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function call(sid, command) {
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { name: 'shell', arguments: { command } } }));
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json',
        Accept: 'application/json', 'X-Session-Id': sid, 'Content-Length': body.length } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        let d = null;
        try { d = JSON.parse(Buffer.concat(chunks).toString()); } catch (e) { /* counted below */ }
        resolve({ status: res.statusCode, ok: res.statusCode === 200 && d && d.result && !d.result.isError, ms });
      });
    });
    req.on('error', reject);
    req.setTimeout(120000, () => req.destroy(new Error('timeout')));
    req.end(body);
  });
}

const lat = [];
let errors = 0, ready = 0, go;
const barrier = new Promise((r) => { go = r; });
async function session(i) {
  const sid = `${prefix}-${i}`;
  const f = await call(sid, 'true');
  if (!f.ok) errors++;
  if (++ready === N) go();
  await barrier;
  await sleep(Math.random() * PERIOD);
  const end = Date.now() + S * 1000;
  while (Date.now() < end) {
    const r = await call(sid, 'true');
    lat.push(r.ms);
    if (!r.ok) errors++;
    await sleep(PERIOD * (0.5 + Math.random()));
  }
}
await Promise.all(Array.from({ length: N }, (_, i) => session(i)));
lat.sort((a, b) => a - b);
const pct = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(lat.length * p))] : 0);
console.log(JSON.stringify({ sessions: N, calls: lat.length, calls_per_s: Math.round(lat.length / S),
  p50_ms: +pct(0.5).toFixed(2), p99_ms: +pct(0.99).toFixed(2), max_ms: +pct(1).toFixed(2), errors }));
agent.destroy();
process.exit(errors ? 1 : 0);
