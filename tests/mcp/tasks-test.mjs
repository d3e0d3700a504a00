// tasks-test.mjs: the official MCP TypeScript client 2.x, pinned to
// 2026-07-28, polls a task with tasks/get (its transport sets Mcp-Name to
// the taskId). The task is made by a raw POST with the client's headers:
// client 2.4.0 does not implement the Tasks extension (its result decoder
// refuses resultType "task" on tools/call), so it cannot take a handle
// itself; what a client without the extension gets is the plain result,
// which tests/e2e/r32-orch-mcp-tasks.sh checks. The command outlives the
// 5 s timeout of every request made here. Prints "ok NAME" / "not ok NAME".
//
//   node tasks-test.mjs URL KEY
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { ok, fail, failed } from './tap.mjs';

const [url, key] = process.argv.slice(2);

// Takes any result as it came (the SDK has no schema for the extension's
// task shape; the checks below are the validation).
const any = { '~standard': { version: 1, vendor: 'e2e', validate: (value) => ({ value }) } };
const TASKS = { 'io.modelcontextprotocol/tasks': {} };
const sid = `tasks-sdk-${process.pid}`;
const meta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { extensions: TASKS },
};

const wire = [];
function recordingFetch(input, init) {
  wire.push({ headers: new Headers(init && init.headers), body: init && init.body });
  return fetch(input, init);
}

try {
  const t0 = Date.now();
  const res = await fetch(url, {
    method: 'POST', signal: AbortSignal.timeout(5000),
    headers: { Authorization: `Bearer ${key}`, 'X-Session-Id': sid, 'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/call', 'Mcp-Name': 'shell' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {
      name: 'shell', arguments: { command: 'sleep 8; echo outlived-the-timeout', timeout: 60 }, _meta: meta } }),
  });
  const created = (await res.json()).result;
  if (created && created.resultType === 'task' && Date.now() - t0 < 5000)
    ok('a command longer than a 5 s timeout comes back as a task within it');
  else
    fail('task handle', JSON.stringify(created).slice(0, 400));

  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}`, 'X-Session-Id': sid } },
    fetch: recordingFetch,
  });
  const client = new Client({ name: 'orchestrator-tasks-e2e', version: '2.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(transport);
  let r = null;
  for (let i = 0; i < 60; i++) {
    r = await client.request({ method: 'tasks/get',
      params: { taskId: created.taskId, _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: TASKS } } } },
    any, { timeout: 5000 });
    if (r.status !== 'working') break;
    await new Promise((done) => setTimeout(done, 1000));
  }
  const text = r && r.result ? r.result.content.map((c) => c.text || '').join('') : '';
  if (r && r.status === 'completed' && text.includes('outlived-the-timeout') && Date.now() - t0 > 8000)
    ok('the official client polls it with tasks/get to the command\'s result');
  else
    fail('tasks/get result', JSON.stringify(r).slice(0, 400));
  const g = wire.find((w) => typeof w.body === 'string' && w.body.includes('"tasks/get"'));
  if (g && g.headers.get('mcp-name') === created.taskId)
    ok('its transport sent the taskId as Mcp-Name, which the server checks');
  else
    fail('Mcp-Name on tasks/get', g ? g.headers.get('mcp-name') : 'no tasks/get sent');
  await client.close();
} catch (e) {
  fail('tasks through the official client', (e && e.stack ? e.stack : String(e)).slice(0, 800));
}
process.exit(failed() ? 1 : 0);
