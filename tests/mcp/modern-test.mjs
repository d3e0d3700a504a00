// modern-test.mjs: drives the orchestrator with the official MCP TypeScript
// client 2.x (@modelcontextprotocol/client) in the 2026-07-28 era: pinned to
// it, and in its dual-era 'auto' mode (which probes with server/discover and
// stays modern on this server), then in its 'legacy' mode (initialize, the
// 2025 path) on the same endpoint. Prints "ok NAME" / "not ok NAME".
//
//   node modern-test.mjs URL KEY
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { ok, fail, check, failed } from './tap.mjs';

const [url, key] = process.argv.slice(2);

// Every request the transport sends, with its headers and body, so the
// checks can see what went over the wire.
const wire = [];
function recordingFetch(input, init) {
  const h = new Headers(init && init.headers);
  let body = null;
  try { body = init && typeof init.body === 'string' ? JSON.parse(init.body) : null; } catch { /* not JSON */ }
  wire.push({ method: (init && init.method) || 'GET', headers: h, body });
  return fetch(input, init);
}

async function connect(sid, mode) {
  const headers = { Authorization: `Bearer ${key}` };
  if (sid !== null) headers['X-Session-Id'] = sid;
  const transport = new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers }, fetch: recordingFetch });
  const client = new Client({ name: 'orchestrator-modern-e2e', version: '2.0.0' },
    { versionNegotiation: { mode } });
  await client.connect(transport);
  return client;
}

function text(r) { return r.content.map((c) => c.text || '').join(''); }

const sid = `modern-${process.pid}`;

// 1. Pinned to 2026-07-28.
let c;
await check('pinned client connects (server/discover)', async () => {
  wire.length = 0;
  c = await connect(sid, { pin: '2026-07-28' });
  const d = wire.find((w) => w.body && w.body.method === 'server/discover');
  return d !== undefined && !wire.some((w) => w.body && w.body.method === 'initialize');
});
await check('pinned: the negotiated version is 2026-07-28', async () => {
  const v = typeof c.getNegotiatedProtocolVersion === 'function' ? c.getNegotiatedProtocolVersion()
    : c.getProtocolVersion?.();
  return v === '2026-07-28' || v;
});
await check('pinned: server identity from discover', async () => {
  const info = c.getServerVersion();
  return info && info.name === 'sandbox-orchestrator' ? true : info;
});
let tools;
await check('pinned: tools/list (headers Mcp-Method, MCP-Protocol-Version sent)', async () => {
  wire.length = 0;
  tools = (await c.listTools()).tools;
  const w = wire.find((x) => x.body && x.body.method === 'tools/list');
  return tools.length >= 16 && w.headers.get('mcp-method') === 'tools/list' &&
    w.headers.get('mcp-protocol-version') === '2026-07-28' &&
    w.body.params._meta['io.modelcontextprotocol/protocolVersion'] === '2026-07-28';
});
await check('pinned: tools come in the same order twice', async () => {
  const again = (await c.listTools()).tools.map((t) => t.name);
  return JSON.stringify(again) === JSON.stringify(tools.map((t) => t.name)) || again;
});
await check('pinned: shell runs in the session sandbox (Mcp-Name sent)', async () => {
  wire.length = 0;
  const r = await c.callTool({ name: 'shell', arguments: { command: 'cd /tmp; X=1; echo hi-$((20+22))' } });
  const w = wire.find((x) => x.body && x.body.method === 'tools/call');
  return (text(r).includes('hi-42') && !r.isError && w.headers.get('mcp-name') === 'shell') ||
    { t: text(r), n: w && w.headers.get('mcp-name') };
});
await check('pinned: the persistent shell kept cwd and variables', async () => {
  const r = await c.callTool({ name: 'shell', arguments: { command: 'echo "$PWD $X"' } });
  return text(r).includes('/tmp 1') || text(r);
});
await check('pinned: structuredContent matches the outputSchema (client validates it)', async () => {
  const r = await c.callTool({ name: 'sandbox_status', arguments: {} });
  return r.structuredContent && r.structuredContent.state === 'running' ? true : r;
});
await check('pinned: file tools', async () => {
  await c.callTool({ name: 'str_replace_based_edit_tool',
    arguments: { command: 'create', path: '/workspace/m.txt', file_text: 'one\ntwo\n' } });
  const r = await c.callTool({ name: 'str_replace_based_edit_tool',
    arguments: { command: 'view', path: '/workspace/m.txt' } });
  return text(r).includes('two') || text(r);
});
await check('pinned: a tool error is a result with isError', async () => {
  const r = await c.callTool({ name: 'shell_poll', arguments: { job_id: 'j-000000000000' } });
  return r.isError === true || r;
});
await check('pinned: an unknown tool is a JSON-RPC error', async () => {
  try {
    await c.callTool({ name: 'no_such_tool', arguments: {} });
    return 'no error';
  } catch (e) {
    return /Unknown tool|-32602/.test(String(e)) || String(e);
  }
});
await check('pinned: a call cancelled by its AbortSignal stops the command', async () => {
  const ac = new AbortController();
  const p = c.callTool({ name: 'shell', arguments: { command: 'sleep 30; echo late' } },
    { signal: ac.signal });
  setTimeout(() => ac.abort(), 1500);
  const t0 = Date.now();
  try { await p; } catch { /* aborted */ }
  // the shell is free again soon: the command was interrupted, not waited for
  const r = await c.callTool({ name: 'shell', arguments: { command: 'echo after-cancel' } });
  return (text(r).includes('after-cancel') && Date.now() - t0 < 20000) ||
    { ms: Date.now() - t0, t: text(r), wire: wire.map((w) => [w.method, w.body && w.body.method, w.headers.get('accept')]) };
});
await check('pinned: progress notifications on a long call', async () => {
  let n = 0;
  wire.length = 0;
  const r = await c.callTool({ name: 'shell', arguments: { command: 'sleep 3; echo slow-done' } },
    { onprogress: () => { n++; }, timeout: 60000 });
  return (text(r).includes('slow-done') && n >= 1) ||
    { n, t: text(r), wire: wire.map((w) => [w.body && w.body.method, w.headers.get('accept'), w.body && w.body.params && w.body.params._meta]) };
});
// Every tool once, modern era, each result checked (the client also checks
// each structuredContent against the tool's outputSchema).
await check('pinned: every tool in tools/list is called and answers (a session of its own)', async () => {
  const e = await connect(`${sid}-all`, { pin: '2026-07-28' });
  const got = {};
  const call = async (name, args) => {
    const r = await e.callTool({ name, arguments: args }, { timeout: 120000 });
    got[name] = r.isError ? `error: ${text(r).slice(0, 120)}` : 'ok';
    return r;
  };
  const a = await call('shell_async', { command: 'sleep 1; echo job-out' });
  const jid = a.structuredContent.job_id;
  await call('shell_poll', { job_id: jid });
  await call('shell_wait', { job_id: jid, timeout: 30 });
  const b = await call('shell_async', { command: 'sleep 60' });
  await call('shell_stop', { job_id: b.structuredContent.job_id });
  await call('write_file', { path: '/workspace/all.txt', content: 'all\n' });
  await call('read_file', { path: '/workspace/all.txt' });
  await call('list_files', { path: '/workspace' });
  await call('delete_file', { path: '/workspace/all.txt' });
  await call('shell', { command: 'nohup python3 -m http.server 8765 >/dev/null 2>&1 & sleep 0.5; true' });
  await call('expose_port', { port: 8765, name: 'allt' });
  await call('list_apps', {});
  await call('unexpose_port', { name: 'allt' });
  await call('sandbox_status', {});
  await call('create_sandbox', {});
  await call('clear_session', {});
  await e.close();
  const names = tools.map((t) => t.name).filter((n) => n !== 'str_replace_based_edit_tool');
  const missing = names.filter((n) => !(n in got));
  const bad = Object.entries(got).filter(([, v]) => v !== 'ok');
  return (missing.length === 0 && bad.length === 0) || { missing, bad, got };
});
await c.close();

// 2. The dual-era default a 2.x user opts into: 'auto' probes, stays modern.
await check('auto: probes with server/discover and stays modern', async () => {
  wire.length = 0;
  const a = await connect(sid, 'auto');
  const r = await a.callTool({ name: 'shell', arguments: { command: 'echo auto-ok' } });
  const init = wire.some((w) => w.body && w.body.method === 'initialize');
  await a.close();
  return (text(r).includes('auto-ok') && !init) || { init, t: text(r) };
});

// 3. The same client in its legacy mode: initialize, the 2025 path, same
// sandbox (X-Session-Id names it in both eras).
await check('legacy mode on the same endpoint: initialize, same sandbox', async () => {
  wire.length = 0;
  const l = await connect(sid, 'legacy');
  const r = await l.callTool({ name: 'shell', arguments: { command: 'cat /workspace/m.txt' } });
  const init = wire.some((w) => w.body && w.body.method === 'initialize');
  await l.close();
  return (init && text(r).includes('two')) || { init, t: text(r) };
});

// 4. Without X-Session-Id: discover and tools/list work, a tool call says why not.
await check('no X-Session-Id: connects, lists tools, a tool call is refused with the reason', async () => {
  const n = await connect(null, { pin: '2026-07-28' });
  const t = (await n.listTools()).tools.length;
  let msg = '';
  try { await n.callTool({ name: 'shell', arguments: { command: 'true' } }); } catch (e) { msg = String(e); }
  await n.close();
  return (t >= 16 && /X-Session-Id/.test(msg)) || { t, msg };
});

console.log(failed() ? `modern-test: ${failed()} failed` : 'modern-test: all passed');
process.exit(failed() ? 1 : 0);
