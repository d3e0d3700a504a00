// live.mjs DOC [URL KEY]: checks docs/openapi.json, then (with URL and
// KEY) a scripted REST session against the live orchestrator at URL:
// every request it sends and every response it gets is checked against
// the document (oavalid.mjs). Prints one line per step ("ok" or "FAIL"
// with the operation and the schema location) and exits 1 on any failure.
//
//   1. The document is a valid OpenAPI 3.1 document
//      (@seriousme/openapi-schema-validator, references included).
//   2. The session: every operation with a success, the error statuses
//      the server can be brought to (400 401 403 404 405 409 413 415 422
//      429 507), each request valid per the document unless the step sends a
//      bad one on purpose (then the document must refuse it too: it is as
//      strict as the code), each response valid, each status the one the
//      step expects (so an error case was reached, not skipped).
//   3. Every operation of the document was exercised with a 2xx.
//   4. The checker can fail: real responses, spoilt (a member missing, one
//      too many, a status not listed, a header missing, an NDJSON line of
//      another shape), must each be refused.
import fs from "node:fs";
import http from "node:http";
import crypto from "node:crypto";
import { Validator } from "@seriousme/openapi-schema-validator";
import { OpenApiChecker } from "./oavalid.mjs";

const [docPath, baseUrl, key] = process.argv.slice(2);
if (!docPath) {
	console.error("usage: node live.mjs DOC [URL KEY]");
	process.exit(2);
}
const docText = fs.readFileSync(docPath);
const doc = JSON.parse(docText);
let failures = 0;
const ok = (msg) => console.log(`ok   ${msg}`);
const fail = (msg) => { failures++; console.log(`FAIL ${msg}`); };

// ---- 1. the document ----
{
	const v = new Validator();
	const r = await v.validate(structuredClone(doc));
	if (r.valid && v.version === "3.1") ok(`document: valid OpenAPI ${v.version} (${Object.keys(doc.paths).length} paths)`);
	else fail(`document: not a valid OpenAPI 3.1 document: ${JSON.stringify(r.errors).slice(0, 2000)}`);
}
const ck = new OpenApiChecker(doc);
if (!baseUrl) process.exit(failures ? 1 : 0);

// ---- 2. the session ----
const base = new URL(baseUrl);
const AUTH = { authorization: `Bearer ${key}` };
const JSONH = { ...AUTH, "content-type": "application/json" };
const exercised = new Map();	// operationId -> 2xx seen
const kept = {};		// real exchanges for part 4

// One HTTP exchange, the body buffered. body: Buffer/string, or a function
// writing a chunked body to the request.
function send(method, path, headers = {}, body = null) {
	return new Promise((resolve, reject) => {
		const h = { ...headers };
		if (typeof body === "string" || Buffer.isBuffer(body)) h["content-length"] = Buffer.byteLength(body);
		const req = http.request({ host: base.hostname, port: base.port, method, path, headers: h, agent: false, setHost: !("host" in h) });
		req.on("response", (res) => {
			const chunks = [];
			res.on("data", (c) => chunks.push(c));
			res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
			res.on("error", reject);
		});
		req.on("error", reject);
		if (typeof body === "function") body(req);
		else {
			if (body !== null) req.write(body);
			req.end();
		}
	});
}

// A checked step: the request against the document (valid unless
// opts.bad: then it must be refused by it), the response against the
// document, the status against opts.status.
async function step(label, method, path, headers = {}, body = null, opts = {}) {
	const [p, q] = path.split("?");
	const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
	const bodyBuf = typeof body === "string" ? Buffer.from(body) : Buffer.isBuffer(body) ? body : opts.sentBody || null;
	const req = { method, path: p, query: q || "", headers: lower, body: bodyBuf };
	const rq = ck.checkRequest(req);
	if (opts.bad && rq.length === 0) fail(`${label}: the document accepts this request, the server is expected to refuse it`);
	else if (!opts.bad && rq.length > 0) rq.forEach((e) => fail(`${label}: request: ${e}`));
	let res;
	try {
		res = await send(method, path, headers, body);
	} catch (e) {
		fail(`${label}: ${method} ${path}: ${e.message}`);
		return null;
	}
	const rs = ck.checkResponse(req, res);
	rs.forEach((e) => fail(`${label}: response: ${e}`));
	const want = opts.status === undefined ? null : [].concat(opts.status);
	if (want && !want.includes(res.status)) fail(`${label}: status ${res.status}, expected ${want.join(" or ")}: ${res.body.toString().slice(0, 300)}`);
	else if (rs.length === 0 && (opts.bad ? rq.length > 0 : rq.length === 0)) ok(`${label}: ${method} ${path.slice(0, 70)} -> ${res.status}`);
	const mt = ck.match(method, p);
	if (mt && mt.op && res.status < 300) exercised.set(mt.op.operationId, true);
	res.req = req;
	res.json = () => JSON.parse(res.body.toString());
	return res;
}

const S = "oa-1";
const SP = `/v1/sessions/${S}`;
const FP = `${SP}/files`;

// -- the server's own routes
let r = await step("healthz", "GET", "/healthz", {}, null, { status: 200 });
r = await step("readyz", "GET", "/readyz", {}, null, { status: 200 });
r = await step("metrics", "GET", "/metrics", AUTH, null, { status: 200 });
kept.metrics = r;
r = await step("openapi.json", "GET", "/openapi.json", AUTH, null, { status: 200 });
if (r) {
	if (Buffer.compare(r.body, docText) === 0) ok("openapi.json: the bytes of the document checked here (the binary is current)");
	else fail("openapi.json: the served document differs from the one in the tree (rebuild the orchestrator)");
	const etag = `"${crypto.createHash("sha256").update(docText).digest("hex").slice(0, 16)}"`;
	if (r.headers.etag === etag) ok(`openapi.json: ETag ${etag}`);
	else fail(`openapi.json: ETag ${r.headers.etag}, expected ${etag}`);
}
await step("openapi.json without the key: 401", "GET", "/openapi.json", {}, null, { status: 401, bad: true });

// -- sessions
const create = { id: S, org: "acme", user: "u1", lifetime: "1h", policy: { github: { push: ["refs/heads/agent/**"], repositories: ["acme/*"] }, credentials: [] } };
r = await step("create", "POST", "/v1/sessions", JSONH, JSON.stringify(create), { status: 201 });
kept.create = r;
if (r && r.status === 201 && r.json().state !== "running") fail(`create: state ${r.json().state}`);
r = await step("create again: 200", "POST", "/v1/sessions", JSONH, JSON.stringify({ id: S, org: "acme", user: "u1", image: null }), { status: 200 });
await step("create with another org: 409 identity_mismatch", "POST", "/v1/sessions", JSONH, JSON.stringify({ id: S, org: "other" }), { status: 409 });
await step("create, Idempotency-Key declared", "POST", "/v1/sessions", { ...JSONH, "idempotency-key": "k-1" }, JSON.stringify({ id: S }), { status: 200 });
await step("create: not JSON: 400 bad_json", "POST", "/v1/sessions", JSONH, "{nope", { status: 400, bad: true });
await step("create: unknown member: 400", "POST", "/v1/sessions", JSONH, JSON.stringify({ id: "oa-x", bogus: 1 }), { status: 400, bad: true });
await step("create: bad id: 400", "POST", "/v1/sessions", JSONH, JSON.stringify({ id: "a b" }), { status: 400, bad: true });
await step("create: bad option: 400", "POST", "/v1/sessions", JSONH, JSON.stringify({ id: "oa-x", cpu: "two" }), { status: 400, bad: true });
await step("create: text/plain: 415", "POST", "/v1/sessions", { ...AUTH, "content-type": "text/plain" }, JSON.stringify({ id: "oa-x" }), { status: 415, bad: true });
await step("create without the key: 401", "POST", "/v1/sessions", { "content-type": "application/json" }, JSON.stringify({ id: "oa-x" }), { status: 401, bad: true });
await step("a foreign Origin: 403", "GET", "/v1/sessions", { ...AUTH, origin: "http://evil.example" }, null, { status: 403 });
await step("a foreign Host: 403", "GET", "/v1/sessions", { ...AUTH, host: "evil.example" }, null, { status: 403 });
r = await step("list", "GET", "/v1/sessions?org=acme&state=running", AUTH, null, { status: 200 });
if (r && r.status === 200 && !r.json().sessions.some((s) => s.id === S)) fail("list: the session is not listed");
await step("list: bad state: 400", "GET", "/v1/sessions?state=gone", AUTH, null, { status: 400, bad: true });
await step("list: an unknown query parameter is ignored", "GET", "/v1/sessions?zzz=1", AUTH, null, { status: 200, bad: true });
r = await step("get", "GET", SP, AUTH, null, { status: 200 });
kept.get = r;
await step("get: unknown session: 404", "GET", "/v1/sessions/oa-none", AUTH, null, { status: 404 });
await step("get: bad id: 400", "GET", "/v1/sessions/bad%2Fid", AUTH, null, { status: 400, bad: true });
await step("no such route: 404", "GET", "/v1/nothing", AUTH, null, { status: 404, bad: true });

// -- policy
r = await step("policy: narrow", "PUT", `${SP}/policy`, JSONH, JSON.stringify({ github: { push: ["refs/heads/agent/x"], repositories: ["acme/app"] } }), { status: 200 });
if (r && r.status === 200 && JSON.stringify(r.json().policy.github.push) !== '["refs/heads/agent/x"]') fail(`policy: not narrowed: ${JSON.stringify(r.json().policy)}`);
await step("policy: widen: 409 would_widen", "PUT", `${SP}/policy`, JSONH, JSON.stringify({ github: { push: ["refs/heads/**"] } }), { status: 409 });
await step("policy: unknown member: 400", "PUT", `${SP}/policy`, JSONH, JSON.stringify({ github: { pull: [] } }), { status: 400, bad: true });
await step("policy: no Content-Type: 415", "PUT", `${SP}/policy`, AUTH, "{}", { status: 415, bad: true });

// -- apps
r = await step("apps: expose", "POST", `${SP}/apps`, JSONH, JSON.stringify({ port: 8000, name: "web" }), { status: 201 });
r = await step("apps: list", "GET", `${SP}/apps`, AUTH, null, { status: 200 });
if (r && r.status === 200 && r.json().apps.length !== 1) fail(`apps: list: ${r.body}`);
await step("apps: get", "GET", `${SP}/apps/web`, AUTH, null, { status: 200 });
await step("apps: beyond apps.max_per_sandbox: 429", "POST", `${SP}/apps`, JSONH, JSON.stringify({ port: 8001, name: "web2" }), { status: 429 });
await step("apps: get unknown: 404", "GET", `${SP}/apps/zzz`, AUTH, null, { status: 404 });
await step("apps: a name that is no DNS label: 404", "GET", `${SP}/apps/A.b`, AUTH, null, { status: 404, bad: true });
await step("apps: bad port: 400", "POST", `${SP}/apps`, JSONH, JSON.stringify({ port: 0 }), { status: 400, bad: true });
await step("apps: unknown member: 400", "POST", `${SP}/apps`, JSONH, JSON.stringify({ port: 8000, x: 1 }), { status: 400, bad: true });
await step("apps: unexpose", "DELETE", `${SP}/apps/web`, AUTH, null, { status: 200 });
await step("apps: unexpose again: 404", "DELETE", `${SP}/apps/web`, AUTH, null, { status: 404 });

// -- files
const data = crypto.randomBytes(70000);
r = await step("files: put (Content-Length)", "PUT", `${FP}/workspace/oa/a.bin?mode=0640`, { ...AUTH, "content-type": "application/octet-stream" }, data, { status: 201 });
await step("exec: mkdir", "POST", `${SP}/exec`, JSONH, JSON.stringify({ command: "mkdir -p /workspace/oa/d/e && echo x > /workspace/oa/d/e/f" }), { status: 200 });
r = await step("files: put again, chunked: 200", "PUT", `${FP}/workspace/oa/a.bin`, { ...AUTH, "transfer-encoding": "chunked" },
	(req) => { req.write(data.subarray(0, 30000)); req.write(data.subarray(30000)); req.end(); }, { status: 200, sentBody: data });
r = await step("files: get", "GET", `${FP}/workspace/oa/a.bin`, AUTH, null, { status: 200 });
kept.file = r;
if (r && r.status === 200) {
	if (Buffer.compare(r.body, data) !== 0) fail("files: get: not the bytes put");
	if (r.headers["x-file-mode"] !== "0640") fail(`files: get: X-File-Mode ${r.headers["x-file-mode"]}`);
	if (r.headers.etag !== `"${r.headers["x-file-version"]}"`) fail("files: get: ETag is not the version");
}
await step("files: get a range", "GET", `${FP}/workspace/oa/a.bin?offset=10&length=5`, AUTH, null, { status: 200 });
await step("files: get, the path's slashes encoded", "GET", `${FP}/workspace%2Foa%2Fa.bin`, AUTH, null, { status: 200 });
r = await step("files: list (trailing /)", "GET", `${FP}/workspace/oa/`, AUTH, null, { status: 200 });
kept.list = r;
await step("files: list (list=1, recursive)", "GET", `${FP}/workspace/oa?list=1&recursive=true&max_entries=100`, AUTH, null, { status: 200 });
await step("files: list /", "GET", `${FP}/`, AUTH, null, { status: 200 });
await step("files: get a directory: 422", "GET", `${FP}/workspace/oa`, AUTH, null, { status: 422 });
await step("files: get missing: 404", "GET", `${FP}/workspace/oa/none`, AUTH, null, { status: 404 });
await step("files: unknown query parameter: 400", "GET", `${FP}/workspace/oa/a.bin?zz=1`, AUTH, null, { status: 400, bad: true });
await step("files: bad max_entries: 400", "GET", `${FP}/workspace/oa/?max_entries=0`, AUTH, null, { status: 400, bad: true });
await step("files: over files.max_bytes: 413", "PUT", `${FP}/workspace/oa/big`, AUTH, Buffer.alloc(2200000), { status: 413 });
await step("files: delete a non-empty directory: 422", "DELETE", `${FP}/workspace/oa/d`, AUTH, null, { status: 422 });
await step("files: delete recursively", "DELETE", `${FP}/workspace/oa/d?recursive=1`, AUTH, null, { status: 200 });
await step("files: delete", "DELETE", `${FP}/workspace/oa/a.bin`, AUTH, null, { status: 200 });
await step("files: delete again: 404", "DELETE", `${FP}/workspace/oa/a.bin`, AUTH, null, { status: 404 });
// the home (homes.size 16MiB) filled from inside: an upload there is 507
// (1.5 MB: more than the blocks the filesystem keeps for root)
await step("exec: fill the home", "POST", `${SP}/exec`, JSONH, JSON.stringify({ command: "dd if=/dev/zero of=/home/user/fill bs=1M count=20 2>/dev/null; df -k /home/user | tail -1" }), { status: 200 });
await step("files: put into a full home: 507", "PUT", `${FP}/home/user/x.bin`, AUTH, crypto.randomBytes(1500000), { status: 507 });
await step("files: delete the filler", "DELETE", `${FP}/home/user/fill`, AUTH, null, { status: 200 });
await step("files: unknown session: 404", "GET", `/v1/sessions/oa-none/files/workspace/x`, AUTH, null, { status: 404 });

// -- exec
const execBody = { command: 'echo "out $V"; echo err >&2; cat; exit 3', cwd: "/workspace", env: { V: "v1" }, stdin: Buffer.from("from stdin\n").toString("base64"), timeout: 30 };
r = await step("exec", "POST", `${SP}/exec`, JSONH, JSON.stringify(execBody), { status: 200 });
kept.exec = r;
if (r && r.status === 200) {
	const lines = r.body.toString().trim().split("\n").map((l) => JSON.parse(l));
	const out = Buffer.concat(lines.filter((l) => l.s === "out").map((l) => Buffer.from(l.b, "base64"))).toString();
	const last = lines[lines.length - 1];
	if (out !== "out v1\nfrom stdin\n" || last.exit !== 3 || !lines.some((l) => l.s === "err")) fail(`exec: ${r.body}`);
	else ok(`exec: ${lines.length} NDJSON lines, each of ExecLine; stdout, stderr, exit 3`);
}
r = await step("exec: timeout: exit 124", "POST", `${SP}/exec`, { ...JSONH, "idempotency-key": "k-2" }, JSON.stringify({ command: "sleep 10", timeout: 0.5 }), { status: 200 });
if (r && r.status === 200 && !/"exit":124,"timed_out":true/.test(r.body.toString())) fail(`exec: timeout: ${r.body}`);
await step("exec: unknown member: 400", "POST", `${SP}/exec`, JSONH, JSON.stringify({ command: "true", shell: "sh" }), { status: 400, bad: true });
await step("exec: empty command: 400", "POST", `${SP}/exec`, JSONH, JSON.stringify({ command: "" }), { status: 400, bad: true });
await step("exec: text/plain: 415", "POST", `${SP}/exec`, { ...AUTH, "content-type": "text/plain" }, JSON.stringify({ command: "true" }), { status: 415, bad: true });
await step("exec: over http.max_body: 413", "POST", `${SP}/exec`, JSONH, JSON.stringify({ command: `echo ${"x".repeat(70000)}` }), { status: 413 });
{
	// exec.max_concurrent is 1 here: a second exec while one runs is 429
	const first = step("exec: a long one", "POST", `${SP}/exec`, JSONH, JSON.stringify({ command: "sleep 3; echo done" }), { status: 200 });
	await new Promise((res) => setTimeout(res, 700));
	await step("exec: beyond exec.max_concurrent: 429", "POST", `${SP}/exec`, JSONH, JSON.stringify({ command: "true" }), { status: 429 });
	await first;
}

// -- homes
r = await step("home", "GET", "/v1/users/u1/home", AUTH, null, { status: 200 });
if (r && r.status === 200 && !(r.json().exists && r.json().sessions >= 1)) fail(`home: ${r.body}`);
await step("home: delete while in use: 409", "DELETE", "/v1/users/u1/home", AUTH, null, { status: 409 });
await step("home: bad user id: 400", "GET", "/v1/users/a%20b/home", AUTH, null, { status: 400, bad: true });

// -- stop, start
await step("stop: a field: 400", "POST", `${SP}/stop`, JSONH, JSON.stringify({ force: true }), { status: 400, bad: true });
r = await step("stop", "POST", `${SP}/stop`, JSONH, "{}", { status: 200 });
if (r && r.status === 200 && r.json().state !== "stopped") fail(`stop: state ${r.json().state}`);
r = await step("start", "POST", `${SP}/start`, AUTH, null, { status: 200 });
if (r && r.status === 200 && r.json().state !== "running") fail(`start: state ${r.json().state}`);

// -- methods each path does not serve: 405 with Allow
const sample = { id: S, name: "web", path: "workspace/x", user: "u1" };
for (const key of Object.keys(doc.paths)) {
	if (["/healthz", "/readyz", "/metrics"].includes(key)) continue;	// any method is GET there
	const path = key.replace(/\{([^}]+)\}/g, (_, n) => sample[n]);
	await step(`405 on ${key}`, "PATCH", path, AUTH, null, { status: 405, bad: true });
}

// -- the end of it
await step("delete", "DELETE", SP, AUTH, null, { status: 200 });
await step("delete again: 404", "DELETE", SP, AUTH, null, { status: 404 });
// the home may stay attached a moment after its session (homes.keep_mounted)
for (let i = 0; i < 20; i++) {
	r = await step("home: delete", "DELETE", "/v1/users/u1/home", AUTH, null, { status: [200, 409] });
	if (!r || r.status === 200) break;
	await new Promise((res) => setTimeout(res, 500));
}
if (!r || r.status !== 200) fail("home: delete: still in use after its session was deleted");
await step("home: delete again: 404", "DELETE", "/v1/users/u1/home", AUTH, null, { status: 404 });
r = await step("home: none", "GET", "/v1/users/u1/home", AUTH, null, { status: 200 });
if (r && r.status === 200 && r.json().exists !== false) fail(`home: still there: ${r.body}`);

// ---- 3. every operation exercised ----
for (const [key, item] of Object.entries(doc.paths))
	for (const m of ["get", "put", "post", "delete", "patch"])
		if (item[m] && !exercised.has(item[m].operationId)) fail(`coverage: ${m.toUpperCase()} ${key} (${item[m].operationId}) never answered 2xx`);
ok(`coverage: ${exercised.size} operations answered 2xx`);

// ---- 4. the checker can fail ----
function mustFail(label, req, res) {
	const e = ck.checkResponse(req, res);
	if (e.length === 0) fail(`negative: ${label}: the checker accepted it`);
	else ok(`negative: ${label}: refused (${e[0].slice(0, 140)})`);
}
const spoil = (res, f) => {
	const j = JSON.parse(res.body.toString());
	f(j);
	return { ...res, body: Buffer.from(JSON.stringify(j)) };
};
if (kept.get && kept.create && kept.exec && kept.file && kept.list) {
	mustFail("a session without state", kept.get.req, spoil(kept.get, (j) => { delete j.state; }));
	mustFail("a session with an unknown member", kept.create.req, spoil(kept.create, (j) => { j.extra = 1; }));
	mustFail("a session state of another value", kept.create.req, spoil(kept.create, (j) => { j.state = "sleeping"; }));
	mustFail("a listing entry of another type", kept.list.req, spoil(kept.list, (j) => { j.entries[0].type = "pipe"; }));
	mustFail("a status the operation does not list", kept.get.req, { ...kept.get, status: 418 });
	mustFail("an error code the status does not list", kept.get.req, { ...kept.get, status: 404, body: Buffer.from('{"error":{"code":"busy","message":"x"}}') });
	mustFail("a file without Cache-Control", kept.file.req, { ...kept.file, headers: { ...kept.file.headers, "cache-control": undefined } });
	mustFail("a file of another Content-Type", kept.file.req, { ...kept.file, headers: { ...kept.file.headers, "content-type": "text/html" } });
	mustFail("an NDJSON line of another shape", kept.exec.req, { ...kept.exec, body: Buffer.concat([kept.exec.body, Buffer.from('{"s":"out","b":"x","more":1}\n')]) });
	mustFail("metrics that are no Prometheus text", kept.metrics.req, { ...kept.metrics, body: Buffer.from("<html>\n") });
	const bad = ck.checkRequest({ method: "POST", path: "/v1/sessions", query: "", headers: JSONH, body: Buffer.from('{"id":"x","cpu":"2"}') });
	if (bad.length === 0) fail("negative: a create with cpu as a string: the checker accepted it");
	else ok(`negative: a create request with cpu as a string: refused (${bad[0].slice(0, 140)})`);
} else fail("negative: the exchanges to spoil are missing (an earlier step failed)");

console.log(failures ? `${failures} failed` : "all passed");
process.exit(failures ? 1 : 0);
