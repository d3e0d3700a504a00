// sandbox-test.mjs: create_sandbox and sandbox_status through the official
// MCP TypeScript SDK client: a failed create_sandbox (an image that does not
// exist, use_kata where there is none, a limit beyond the server's maximum,
// an unknown argument) leaves /workspace as it was and says so; a good one
// keeps /workspace by default (owners follow the new agent user, a disk
// image both ways) and empties it with fresh_workspace; a per-sandbox
// memory limit is enforced (OOM-killed, reported as OOM); sandbox_status
// reports limits, usage, jobs and the identity. Prints "ok NAME" / "not ok
// NAME".
//
//   node sandbox-test.mjs URL KEY IMAGE2
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ok, fail, check as check0, failed } from './tap.mjs';
const check = (name, fn) => check0(name, fn, 1200);

const [url, key, image2] = process.argv.slice(2);

async function connect(sid) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}`, 'X-Session-Id': sid, 'X-Org-Id': 'acme', 'X-User-Id': 'alice' } },
  });
  const client = new Client({ name: 'sandbox-e2e', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const text = (r) => r.content.map((c) => c.text || '').join('');
const call = (c, name, args) => c.callTool({ name, arguments: args }, undefined, { timeout: 240000 });
const sh = (c, command) => call(c, 'shell', { command });
const status = async (c) => (await call(c, 'sandbox_status', {})).structuredContent;
const UNCHANGED = 'Your sandbox and its /workspace are unchanged';

const sid = `sbx-${process.pid}`;
const a = await connect(sid);

await check('tools list: create_sandbox names the images, sandbox_status has an outputSchema', async () => {
  const { tools } = await a.listTools();
  const cs = tools.find((t) => t.name === 'create_sandbox');
  const st = tools.find((t) => t.name === 'sandbox_status');
  const en = cs.inputSchema.properties.image.enum || [];
  return (en.includes(image2) && en.includes('busybox') && cs.description.includes('Images here:') &&
    st && st.outputSchema && st.outputSchema.type === 'object' &&
    ['cpu', 'memory', 'disk', 'lifetime', 'idle_timeout', 'fresh_workspace'].every((k) => k in cs.inputSchema.properties)) ||
    { en, desc: cs.description, out: st && st.outputSchema };
});

await sh(a, 'echo precious > /workspace/keep.txt && mkdir -p /workspace/d/e && ln -s ../keep.txt /workspace/d/link && echo hl > /workspace/h1 && ln /workspace/h1 /workspace/h2 && ' +
  'truncate -s 4294967296 /workspace/sparse && echo tail >> /workspace/sparse && mkfifo /workspace/fifo');
const first = await status(a);

async function refused(name, args, want) {
  await check(name, async () => {
    const r = await call(a, 'create_sandbox', args);
    const t = text(r);
    const after = await sh(a, 'cat /workspace/keep.txt');
    const st = await status(a);
    return (r.isError === true && t.includes(want) && t.includes(UNCHANGED) &&
      text(after).includes('precious') && st.sandbox_id === first.sandbox_id) || [t, text(after), st.sandbox_id, first.sandbox_id];
  });
}
await refused('create_sandbox with an image that does not exist: refused, /workspace unchanged', { image: 'no-such-image' }, "unknown image 'no-such-image'");
await refused('create_sandbox with use_kata on the local runtime: refused, /workspace unchanged', { use_kata: true }, 'use_kata is not available');
await refused('create_sandbox with memory beyond the maximum: refused, names the maximum', { memory: '100GiB' }, 'is above the maximum of 1GiB (sandbox.max_memory)');
await refused('create_sandbox with cpu beyond the maximum: refused, names the maximum', { cpu: 3 }, 'above the maximum of 2 cores (sandbox.max_cpu_millis)');
await refused('create_sandbox with a lifetime beyond the maximum: refused', { lifetime: '48h' }, 'reap.max_lifetime');
await refused('create_sandbox with a bad size: refused', { memory: 'lots' }, 'memory must be a size');
await refused('create_sandbox with an unknown argument: refused', { gpus: 1 }, "unknown argument 'gpus'");
await refused('create_sandbox with a limit below the runtime minimum: refused', { memory: '1MiB' }, "outside the local runtime's bounds");

await check('create_sandbox keeps /workspace by default (another image, links kept)', async () => {
  const r = await call(a, 'create_sandbox', { image: image2, memory: '256MiB', lifetime: '2h', idle_timeout: '30m', cpu: 1.5 });
  const t = await sh(a, 'cat /workspace/keep.txt; readlink /workspace/d/link; cat /workspace/d/link; ' +
    'ls -i /workspace/h1 /workspace/h2 | awk \'{print $1}\' | uniq | wc -l; echo more >> /workspace/keep.txt && echo appended; ' +
    'echo size=$(stat -c %s /workspace/sparse) kb=$(du -k /workspace/sparse | cut -f1); tail -c 5 /workspace/sparse; [ -p /workspace/fifo ] && echo fifo-kept');
  const st = await status(a);
  return (!r.isError && text(r).includes('holds a copy') && text(t).includes('precious') &&
    text(t).includes('../keep.txt') && /\n1\n/.test(text(t)) && text(t).includes('appended') &&
    text(t).includes('size=4294967301 ') && Number((text(t).match(/kb=(\d+)/) || [])[1]) < 1024 &&
    text(t).includes('tail') && text(t).includes('fifo-kept') &&
    st.sandbox_id !== first.sandbox_id && st.image === image2 && st.limits.memory_bytes === 256 * 1048576 &&
    st.limits.cpu === 1.5 && st.limits.lifetime_ms === 7200000 && st.limits.idle_timeout_ms === 1800000) ||
    [text(r), text(t), st];
});

await check('create_sandbox run_as_root false: the carried files belong to the new user', async () => {
  const r = await call(a, 'create_sandbox', { run_as_root: false });
  const t = await sh(a, 'id -u; echo again >> /workspace/keep.txt && cat /workspace/keep.txt');
  return (!r.isError && /^1000\n/.test(text(t)) && text(t).includes('precious') && text(t).includes('again')) || [text(r), text(t)];
});

await check('create_sandbox with a disk limit carries /workspace into the disk image and out of it', async () => {
  const r1 = await call(a, 'create_sandbox', { disk: '64MiB' });
  const t1 = await sh(a, 'cat /workspace/keep.txt; df -k /workspace | tail -1');
  const r2 = await call(a, 'create_sandbox', { disk: '96MiB' });
  const t2 = await sh(a, 'cat /workspace/keep.txt');
  const st = await status(a);
  return (!r1.isError && !r2.isError && text(t1).includes('precious') && text(t2).includes('precious') &&
    st.limits.disk_bytes === 96 * 1048576 && typeof st.usage.disk_bytes === 'number') || [text(r1), text(t1), text(r2), text(t2), st];
});

await check('create_sandbox fresh_workspace starts with an empty /workspace', async () => {
  const r = await call(a, 'create_sandbox', { fresh_workspace: true });
  const t = await sh(a, 'ls -A /workspace | wc -l');
  return (!r.isError && text(r).includes('is empty') && text(t).trim().startsWith('0')) || [text(r), text(t)];
});

await check('per-sandbox memory limit: a command beyond it is OOM-killed and reported as OOM', async () => {
  const r = await call(a, 'create_sandbox', { memory: '64MiB' });
  const st = await status(a);
  const o = await sh(a, 'head -c 400000000 /dev/zero | tr "\\0" x | sort >/dev/null');
  const after = await sh(a, 'echo still-here');
  return (!r.isError && st.limits.memory_bytes === 64 * 1048576 && o.isError === true &&
    text(o).includes('out of memory') && o.structuredContent && o.structuredContent.oom_killed === true &&
    text(after).includes('still-here')) || [text(r), st.limits, text(o), o.structuredContent];
});

await check('sandbox_status: state, limits, usage, running jobs, identity', async () => {
  const j = await call(a, 'shell_async', { command: 'sleep 30' });
  const r = await call(a, 'sandbox_status', {});
  const s = r.structuredContent;
  const t = text(r);
  const job = text(j).match(/Started job (\S+)/)[1];
  await call(a, 'shell_stop', { job_id: job });
  return (!r.isError && s.state === 'running' && s.org === 'acme' && s.user === 'alice' && s.id === sid &&
    typeof s.usage.memory_bytes === 'number' && s.usage.memory_bytes > 0 &&
    typeof s.usage.disk_bytes === 'number' && typeof s.uptime_ms === 'number' &&
    s.lifetime_left_ms > 0 && s.idle_left_ms > 0 && s.running_jobs >= 1 &&
    s.jobs.some((x) => x.id === job && x.command === 'sleep 30') &&
    t.includes('Running background jobs: 1') && t.includes('org "acme", user "alice"') &&
    t.includes('memory 64MiB')) || [t, s];
});

await check('sandbox_status of a session without a sandbox does not create one', async () => {
  const b = await connect(`${sid}-none`);
  const r = await call(b, 'sandbox_status', {});
  const s = r.structuredContent;
  return (!r.isError && s.state === 'none' && s.sandbox_id === '' && text(r).includes('no sandbox yet')) || [text(r), s];
});

await a.close();
process.exit(failed() ? 1 : 0);
