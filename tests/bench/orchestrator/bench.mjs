// bench.mjs: latency figures for the orchestrator benchmark (run.sh).
//   node bench.mjs rtt   URL KEY SID N      tools/call shell `true`, sequential, keep-alive
//   node bench.mjs first URL KEY PREFIX N GAP_MS   first call on N new session ids
//   node bench.mjs agent SOCKET N           the agent's own /v1/shell `true` round trip
// Prints one JSON line.
import http from 'node:http';

const [mode, ...a] = process.argv.slice(2);
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

function req(opts, body) {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const t0 = process.hrtime.bigint();
    const r = http.request({ ...opts, method: 'POST', agent, headers: { ...opts.headers, 'Content-Type': 'application/json', 'Content-Length': data.length } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, status: res.statusCode, body: Buffer.concat(chunks).toString() }));
    });
    r.on('error', reject);
    r.end(data);
  });
}
const pct = (v, p) => v[Math.min(v.length - 1, Math.floor(v.length * p))];
function summary(v) {
  v.sort((x, y) => x - y);
  return { n: v.length, p50_ms: +pct(v, 0.5).toFixed(3), p99_ms: +pct(v, 0.99).toFixed(3), max_ms: +v[v.length - 1].toFixed(3) };
}
function mcp(url, key, sid) {
  const u = new URL(url);
  return { host: u.hostname, port: u.port, path: u.pathname, headers: { Authorization: `Bearer ${key}`, 'X-Session-Id': sid, Accept: 'application/json, text/event-stream' } };
}
const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'shell', arguments: { command: 'true' } } };

if (mode === 'rtt') {
  const [url, key, sid, n] = a;
  const o = mcp(url, key, sid);
  for (let i = 0; i < 50; i++) await req(o, call); // warm up
  const v = [];
  for (let i = 0; i < Number(n); i++) {
    const r = await req(o, call);
    if (r.status !== 200 || r.body.includes('"isError":true')) throw new Error(r.body);
    v.push(r.ms);
  }
  console.log(JSON.stringify(summary(v)));
} else if (mode === 'first') {
  const [url, key, prefix, n, gap] = a;
  const v = [];
  for (let i = 0; i < Number(n); i++) {
    const r = await req(mcp(url, key, `${prefix}-${i}`), call);
    if (r.status !== 200 || r.body.includes('"isError":true')) throw new Error(r.body);
    v.push(r.ms);
    await new Promise((res) => setTimeout(res, Number(gap)));
  }
  console.log(JSON.stringify(summary(v)));
} else if (mode === 'agent') {
  const [sock, n] = a;
  const o = { socketPath: sock, path: '/v1/shell', headers: {} };
  const body = { command: 'true', timeout_ms: 10000, max_output: 65536 };
  for (let i = 0; i < 50; i++) await req(o, body);
  const v = [];
  for (let i = 0; i < Number(n); i++) v.push((await req(o, body)).ms);
  console.log(JSON.stringify(summary(v)));
}
agent.destroy();
