// file-tools.mjs: the MCP file tools (read_file, write_file, list_files,
// delete_file) and live shell output, driven by the official MCP SDK client
// against the real orchestrator and real sandboxes (tests/e2e/58b-orch-file-tools.sh).
// Prints "ok NAME" / "not ok NAME".
//
//   node file-tools.mjs URL KEY CAP HOSTFILE HOSTDIR
//
// CAP: the server's files.tool_max_bytes. HOSTFILE: a file on the host
// that no sandbox may read; HOSTDIR: a host directory where no write of a
// sandbox may land (the script checks it afterwards).
//
// The client validates every structuredContent against the tool's
// outputSchema once listTools() has run (callTool throws when it does not
// match), so each call below also checks the results' shape.
import { createHash, randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ok, fail, check as check0, failed } from './tap.mjs';
const check = (name, fn) => check0(name, fn, 1200);

const [url, key, capArg, hostFile, hostDir] = process.argv.slice(2);
const CAP = Number(capArg);

const sid = `ft-${process.pid}`;
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}`, 'X-Session-Id': sid } },
});
const c = new Client({ name: 'file-tools-e2e', version: '1.0.0' });
await c.connect(transport);

const text = (r) => r.content.map((x) => x.text || '').join('');
const sha = (b) => createHash('sha256').update(b).digest('hex');
const call = (name, args, opts = {}) => c.callTool({ name, arguments: args }, undefined, { timeout: 120000, ...opts });
const sh = async (command) => (await call('shell', { command })).structuredContent.output;
const HEX16 = /^[0-9a-f]{16}$/;

await check('file tools listed with outputSchemas the client validates with', async () => {
  const { tools } = await c.listTools();
  const want = ['read_file', 'write_file', 'list_files', 'delete_file'];
  const got = tools.filter((t) => want.includes(t.name));
  return (got.length === 4 && got.every((t) => t.outputSchema && t.outputSchema.type === 'object' &&
    typeof c.getToolOutputValidator(t.name) === 'function')) || got.map((t) => t.name);
});

// Binary round trips: write base64, sha256 inside the sandbox, read base64.
for (const [label, n] of [['1 byte', 1], ['100 KiB', 100 * 1024], ['just under the cap', CAP - 1], ['the cap', CAP]]) {
  await check(`binary round trip ${label} (${n} bytes): sha256 in the sandbox and back`, async () => {
    const data = randomBytes(n);
    const p = `/workspace/bin-${n}.dat`;
    const w = await call('write_file', { path: p, content: data.toString('base64'), encoding: 'base64' });
    const ws = w.structuredContent || {};
    if (w.isError || ws.bytes !== n || ws.size !== n || ws.created !== true || !HEX16.test(ws.version)) return ['write', w];
    const inside = (await sh(`sha256sum ${p} | cut -d' ' -f1`)).trim();
    const r = await call('read_file', { path: p, encoding: 'base64' });
    const rs = r.structuredContent || {};
    const back = Buffer.from(rs.content || '', 'base64');
    return (!r.isError && inside === sha(data) && sha(back) === sha(data) && rs.bytes === n && rs.size === n &&
      rs.eof === true && rs.next_offset === n && rs.offset === 0 && rs.version === ws.version &&
      rs.encoding === 'base64' && rs.mode === '0644' && rs.path === p) || [inside, sha(data), sha(back), { ...rs, content: undefined }];
  });
}

await check('a write just over the cap is a tool error naming the cap, not a transport error', async () => {
  const data = randomBytes(CAP + 1);
  const w = await call('write_file', { path: '/workspace/over.dat', content: data.toString('base64'), encoding: 'base64' });
  const gone = (await sh('test -e /workspace/over.dat && echo there || echo absent')).trim();
  return (w.isError === true && text(w).includes('files.tool_max_bytes') && text(w).includes(String(CAP)) &&
    text(w).includes('append') && gone === 'absent') || [text(w), gone];
});

await check('a text write over the cap is a tool error too', async () => {
  const w = await call('write_file', { path: '/workspace/over.txt', content: 'x'.repeat(CAP + 1) });
  return (w.isError === true && text(w).includes('files.tool_max_bytes')) || text(w);
});

await check('read max_bytes over the cap is a tool error pointing at offset/max_bytes and REST', async () => {
  const r = await call('read_file', { path: '/workspace/bin-1.dat', max_bytes: CAP + 1 });
  return (r.isError === true && text(r).includes('files.tool_max_bytes') && text(r).includes('offset') &&
    text(r).includes('/v1/sessions/')) || text(r);
});

await check('a file over the cap reads in parts (offset, next_offset, eof) bytes exact', async () => {
  const n = CAP + 4097;
  const inside = (await sh(`head -c ${n} /dev/urandom > /workspace/big.dat; sha256sum /workspace/big.dat | cut -d' ' -f1`)).trim();
  const parts = [];
  let off = 0, eof = false, rounds = 0, firstEof = null;
  while (!eof && rounds++ < 10) {
    const r = await call('read_file', { path: '/workspace/big.dat', offset: off, encoding: 'base64' });
    const rs = r.structuredContent || {};
    if (r.isError) return text(r);
    if (firstEof === null) firstEof = rs.eof;
    parts.push(Buffer.from(rs.content, 'base64'));
    off = rs.next_offset;
    eof = rs.eof;
  }
  const all = Buffer.concat(parts);
  return (firstEof === false && rounds === 2 && all.length === n && sha(all) === inside) || [firstEof, rounds, all.length, n];
});

await check('append writes in parts, atomically, with mode', async () => {
  const a = randomBytes(5000), b = randomBytes(7000);
  const p = '/workspace/parts/app.bin';
  const w1 = await call('write_file', { path: p, content: a.toString('base64'), encoding: 'base64', mode: '0755' });
  const w2 = await call('write_file', { path: p, content: b.toString('base64'), encoding: 'base64', append: true });
  const inside = (await sh(`sha256sum ${p} | cut -d' ' -f1; stat -c %a ${p}`)).trim().split('\n');
  const s2 = w2.structuredContent || {};
  return (!w1.isError && !w2.isError && w1.structuredContent.created === true && s2.created === false &&
    s2.append === true && s2.bytes === 7000 && s2.size === 12000 && inside[0] === sha(Buffer.concat([a, b])) &&
    inside[1] === '755' && s2.version !== w1.structuredContent.version) || [w1, w2, inside];
});

await check('text reads with offset and max_bytes (a character never cut)', async () => {
  const body = 'héllo wörld\nsecond line\n';
  const w = await call('write_file', { path: 'notes/t.txt', content: body });
  const whole = await call('read_file', { path: 'notes/t.txt' });
  const part = await call('read_file', { path: 'notes/t.txt', offset: 7, max_bytes: 6 });
  // 'ö' is bytes 8-9: 3 bytes from 7 end inside it, so the read stops before
  const cut = await call('read_file', { path: 'notes/t.txt', offset: 7, max_bytes: 2 });
  const ws = whole.structuredContent, ps = part.structuredContent, cs = cut.structuredContent;
  return (!w.isError && ws.content === body && ws.path === '/workspace/notes/t.txt' && ws.encoding === 'text' &&
    ws.eof === true && ps.content === 'wörld' && ps.bytes === 6 && ps.next_offset === 13 && ps.eof === false &&
    cs.content === 'w' && cs.next_offset === 8 && cs.eof === false) || [ws, ps, cs];
});

await check('a text read inside a character is refused with the base64 hint', async () => {
  const r = await call('read_file', { path: 'notes/t.txt', offset: 2 });
  return (r.isError === true && text(r).includes('base64') && text(r).includes('offset 2')) || text(r);
});

await check('a text read of non-UTF-8 data is refused, suggesting base64; base64 reads it', async () => {
  await sh("printf 'ok\\377\\376 bytes' > /workspace/latin.bin; printf 'a\\0b' > /workspace/nul.bin");
  const r = await call('read_file', { path: '/workspace/latin.bin' });
  const z = await call('read_file', { path: '/workspace/nul.bin' });
  const b = await call('read_file', { path: '/workspace/latin.bin', encoding: 'base64' });
  return (r.isError === true && text(r).includes('not UTF-8') && text(r).includes('"base64"') &&
    text(r).includes('offset 2') && z.isError === true && text(z).includes('NUL') && text(z).includes('base64') &&
    !b.isError && Buffer.from(b.structuredContent.content, 'base64').equals(Buffer.from('ok\xff\xfe bytes', 'latin1'))) ||
    [text(r), text(z), b];
});

await check('missing files, directories and FIFOs are clear tool errors', async () => {
  await sh('mkfifo /workspace/fifo 2>/dev/null; mkdir -p /workspace/dir');
  const m = await call('read_file', { path: '/workspace/nope.txt' });
  const d = await call('read_file', { path: '/workspace/dir' });
  const f = await call('read_file', { path: '/workspace/fifo' });
  const l = await call('list_files', { path: '/workspace/nope' });
  const x = await call('delete_file', { path: '/workspace/nope' });
  return (m.isError && text(m).includes('does not exist') && d.isError && text(d).includes('directory') &&
    text(d).includes('list_files') && f.isError && text(f).includes('not a regular file') &&
    l.isError && text(l).includes('does not exist') && x.isError && text(x).includes('does not exist')) ||
    [text(m), text(d), text(f), text(l), text(x)];
});

await check('the edit tool\'s binary refusal points at read_file base64 and the REST route', async () => {
  const v = await call('str_replace_based_edit_tool', { command: 'view', path: '/workspace/latin.bin' });
  const e = await call('str_replace_based_edit_tool', { command: 'str_replace', path: '/workspace/latin.bin', old_str: 'ok', new_str: 'no' });
  return (v.isError && text(v).includes('read_file') && text(v).includes('base64') &&
    text(v).includes('GET /v1/sessions/{id}/files/') && !text(v).includes('/v1/files/raw') &&
    e.isError && text(e).includes('write_file') && !text(e).includes('/v1/files/raw')) || [text(v), text(e)];
});

// Confinement: paths and symlinks resolve inside the sandbox, never on the host.
await check('a host path is not readable from the sandbox, directly or through a symlink', async () => {
  const direct = await call('read_file', { path: hostFile });
  await sh(`ln -sf ${hostFile} /workspace/to-host; ln -sf ../../../../../..${hostFile} /workspace/to-host-rel`);
  const viaLink = await call('read_file', { path: '/workspace/to-host' });
  const viaRel = await call('read_file', { path: '/workspace/to-host-rel' });
  const trav = await call('read_file', { path: `/workspace/../../../../..${hostFile}` });
  return ([direct, viaLink, viaRel, trav].every((r) => r.isError && text(r).includes('does not exist'))) ||
    [direct, viaLink, viaRel, trav].map(text);
});

await check('a symlink to a sandbox file reads the sandbox\'s file', async () => {
  const want = await sh('cat /etc/hostname');
  await sh('ln -sf /etc/hostname /workspace/hn; ln -sf hn /workspace/hn2; ln -sf loop1 /workspace/loop2; ln -sf loop2 /workspace/loop1');
  const r = await call('read_file', { path: '/workspace/hn2' });
  const loop = await call('read_file', { path: '/workspace/loop1' });
  return (!r.isError && r.structuredContent.content === want && r.structuredContent.path === '/etc/hostname' &&
    loop.isError && text(loop).includes('symbolic links')) || [r, text(loop)];
});

await check('writes through traversal and symlinks land inside the sandbox', async () => {
  const name = `h4-escape-${process.pid}`;
  const w1 = await call('write_file', { path: `/workspace/../../../../..${hostDir}/${name}-a`, content: 'in' });
  await sh(`ln -sfn ${hostDir} /workspace/hostdir`);
  const w2 = await call('write_file', { path: `/workspace/hostdir/${name}-b`, content: 'in' });
  const inside = (await sh(`cat ${hostDir}/${name}-a ${hostDir}/${name}-b 2>&1`));
  // the e2e script checks the host side: neither file exists there
  console.log(`# escape-name ${name}`);
  return (!w1.isError && !w2.isError && inside === 'inin') || [text(w1), text(w2), inside];
});

await check('list_files: fields, symlinks listed not followed, depth-first sorted, truncated', async () => {
  await sh('rm -rf /workspace/tree && mkdir -p /workspace/tree/b/c && printf 12345 > /workspace/tree/a.txt && ' +
    'printf x > /workspace/tree/b/c/z && chmod 0600 /workspace/tree/a.txt && ln -s /etc /workspace/tree/b/etc-link');
  const r = await call('list_files', { path: '/workspace/tree', recursive: true });
  const st = r.structuredContent || {};
  const paths = (st.entries || []).map((e) => e.path);
  const a = st.entries.find((e) => e.name === 'a.txt'), l = st.entries.find((e) => e.name === 'etc-link');
  const flat = await call('list_files', { path: '/workspace/tree' });
  const cut = await call('list_files', { path: '/workspace/tree', recursive: true, max_entries: 2 });
  const one = await call('list_files', { path: '/workspace/tree/a.txt' });
  return (!r.isError && JSON.stringify(paths) === JSON.stringify(['/workspace/tree/a.txt', '/workspace/tree/b',
    '/workspace/tree/b/c', '/workspace/tree/b/c/z', '/workspace/tree/b/etc-link']) &&
    a.type === 'file' && a.size === 5 && a.mode === '0600' && HEX16.test(a.version) && a.mtime_ms > 1.6e12 &&
    l.type === 'symlink' && l.target === '/etc' && l.version === undefined && st.truncated === false && st.count === 5 &&
    flat.structuredContent.count === 2 && cut.structuredContent.truncated === true && cut.structuredContent.count === 2 &&
    one.structuredContent.count === 1 && one.structuredContent.entries[0].name === 'a.txt') || [st, flat, cut, one];
});

await check('a file\'s version changes when its content changes', async () => {
  const v = async () => (await call('list_files', { path: '/workspace/tree/a.txt' })).structuredContent.entries[0].version;
  const v1 = await v();
  const w = await call('write_file', { path: '/workspace/tree/a.txt', content: '54321' });
  const v2 = await v();
  const r = await call('read_file', { path: '/workspace/tree/a.txt' });
  return (v1 !== v2 && w.structuredContent.version === v2 && r.structuredContent.version === v2) || [v1, v2, w, r];
});

await check('delete_file: a file, a symlink (not its target), a tree; refusals', async () => {
  const f = await call('delete_file', { path: '/workspace/tree/a.txt' });
  const l = await call('delete_file', { path: '/workspace/tree/b/etc-link' });
  const etc = (await sh('test -d /etc && echo kept')).trim();
  const ne = await call('delete_file', { path: '/workspace/tree' });
  const rec = await call('delete_file', { path: '/workspace/tree', recursive: true });
  const ws = await call('delete_file', { path: '/workspace', recursive: true });
  const gone = (await sh('test -e /workspace/tree && echo there || echo gone; test -d /workspace && echo ws')).trim();
  return (f.structuredContent.deleted === 1 && l.structuredContent.deleted === 1 && etc === 'kept' &&
    ne.isError && text(ne).includes('recursive') && rec.structuredContent.deleted === 4 &&
    ws.isError && text(ws).includes('refused') && gone === 'gone\nws') || [f, l, etc, text(ne), rec, text(ws), gone];
});

await check('bad arguments are tool errors from the schema', async () => {
  const e1 = await call('write_file', { path: '/workspace/x', content: 'Zm9v!', encoding: 'base64' });
  const e2 = await call('write_file', { path: '/workspace/x', content: 'a', mode: '999' });
  const e3 = await call('read_file', { path: '/workspace/x', encoding: 'hex' });
  const e4 = await call('list_files', { path: '/workspace', max_entries: 0 });
  return (e1.isError && text(e1).includes('not base64') && e2.isError && e3.isError && e4.isError) ||
    [text(e1), text(e2), text(e3), text(e4)];
});

// Live output: a sleep-paced command's lines arrive in progress messages
// while it runs (tools.progress_interval is 1s in the e2e config).
await check('progress notifications of a long shell call carry its latest output lines', async () => {
  const seen = [];
  const t0 = Date.now();
  const r = await c.callTool({ name: 'shell', arguments: { command: 'for i in 1 2 3 4 5 6; do echo tick-$i; sleep 1; done; echo finished' } },
    undefined, { timeout: 120000, onprogress: (p) => seen.push({ at: Date.now() - t0, m: p.message || '' }) });
  const done = Date.now() - t0;
  const ticks = seen.map((s) => { const m = s.m.match(/tick-(\d)\n?$/); return m ? Number(m[1]) : 0; });
  const withLines = seen.filter((s) => s.m.includes('tick-'));
  // lines seen before the end, never going backwards, never the final line
  const mono = ticks.filter((x) => x > 0).every((x, i, a) => i === 0 || x >= a[i - 1]);
  return (!r.isError && r.structuredContent.output.includes('finished') && withLines.length >= 2 &&
    withLines[0].at < done - 1000 && Math.max(...ticks) >= 3 && mono &&
    seen.every((s) => s.m.length <= 2200 && !s.m.includes('finished'))) || { done, seen };
});

await check('progress messages keep at most ~20 lines and 2 KiB of a chatty command', async () => {
  const seen = [];
  const r = await c.callTool({ name: 'shell', arguments: { command: 'for i in 1 2 3 4; do seq 1 300 | sed "s/^/L$i-/"; sleep 1; done' } },
    undefined, { timeout: 120000, onprogress: (p) => seen.push(p.message || '') });
  const lines = seen.filter((m) => m.includes('\n')).map((m) => m.split('\n').length - 1);
  return (!r.isError && seen.length >= 2 && seen.some((m) => /L\d-\d+/.test(m)) &&
    seen.every((m) => m.length <= 2200) && lines.every((n) => n <= 21)) || seen;
});

await check('a shell call without a progressToken still answers as before', async () => {
  const r = await call('shell', { command: 'echo plain' });
  return (r.structuredContent.output === 'plain\n') || r;
});

await c.close();
process.exit(failed() ? 1 : 0);
