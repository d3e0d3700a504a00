// oavalid.mjs: checks HTTP requests and responses against an OpenAPI 3.1
// document (docs/openapi.json): the operation a method and raw path name,
// its security, path/query/header parameters, request body by media type;
// a response's status (listed for that operation), its headers (required
// ones present, values of their schemas) and its body by media type
// (application/json, application/x-ndjson: every line, text/plain).
// Schemas are checked with Ajv's 2020-12 draft (the dialect of OpenAPI
// 3.1) and ajv-formats. Each check returns a list of errors, each naming
// the operation and the schema's location; an empty list is a pass.
//
// Beyond what OpenAPI says itself: a query parameter the operation does
// not declare is an error (the server refuses unknown ones), a path the
// document has no template for must get components/responses/NotFound, a
// method its path item lacks must get components/responses/MethodNotAllowed
// with an Allow header naming exactly the path's methods.
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const DOC_ID = "https://orchestrator.invalid/openapi.json";

const esc = (s) => s.replace(/~/g, "~0").replace(/\//g, "~1");
const unesc = (s) => s.replace(/~1/g, "/").replace(/~0/g, "~");
const mediaOf = (ct) => (ct || "").split(";")[0].trim().toLowerCase();

export class OpenApiChecker {
	constructor(doc) {
		this.doc = doc;
		this.ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
		addFormats(this.ajv);
		// the whole document is the schemas' root: "#/components/..." refs
		// resolve in it (not a JSON Schema itself: its meta check is off)
		this.ajv.addSchema(doc, DOC_ID, undefined, false);
		this.compiled = new Map();
		// templates, the most literal first: "/v1/sessions/{id}/files/{path}"
		// takes the rest of the path in {path}, any other {x} one segment
		this.templates = Object.keys(doc.paths).map((key) => {
			const names = [];
			const re = key.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{([^}]+)\}/g, (_, n) => {
				names.push(n);
				return n === "path" ? "(.*)" : "([^/]+)";
			});
			return { key, names, re: new RegExp(`^${re}$`), lit: key.replace(/\{[^}]+\}/g, "").length };
		}).sort((a, b) => b.lit - a.lit);
	}

	// The object at a JSON pointer of the document.
	at(ptr) {
		return ptr.split("/").slice(1).reduce((o, k) => (o === undefined ? o : o[unesc(k)]), this.doc);
	}

	// A Reference Object followed (responses, parameters, headers): [obj, ptr].
	deref(obj, ptr) {
		for (let n = 0; obj && typeof obj.$ref === "string" && n < 10; n++) {
			ptr = obj.$ref.slice(1);
			obj = this.at(ptr);
		}
		return [obj, ptr];
	}

	// A validator for the schema at ptr (compiled once).
	validator(ptr) {
		let v = this.compiled.get(ptr);
		if (!v) {
			v = this.ajv.compile({ $ref: `${DOC_ID}#${ptr}` });
			this.compiled.set(ptr, v);
		}
		return v;
	}

	// Errors of value against the schema at ptr, each "what: ptr<schemaPath> instancePath message".
	schemaErrors(ptr, value, what) {
		const v = this.validator(ptr);
		if (v(value)) return [];
		return v.errors.slice(0, 8).map((e) =>
			`${what}: schema #${ptr} ${e.schemaPath} at '${e.instancePath || "/"}': ${e.message}` +
			(e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ""));
	}

	// A parameter or header value (a string) as its schema's type wants it.
	static coerce(schema, s) {
		const t = schema && schema.type;
		if ((t === "integer" || t === "number") && /^-?[0-9]+(\.[0-9]+)?$/.test(s)) return Number(s);
		return s;
	}

	// {key, item, ptr, op, opPtr, params} for method and raw path; op null
	// when the path item lacks the method; null when no template matches.
	match(method, rawPath) {
		for (const t of this.templates) {
			const m = t.re.exec(rawPath);
			if (!m) continue;
			const params = {};
			t.names.forEach((n, i) => { params[n] = m[i + 1]; });
			const ptr = `/paths/${esc(t.key)}`;
			const item = this.doc.paths[t.key];
			const lm = method.toLowerCase();
			return { key: t.key, item, ptr, op: item[lm] || null, opPtr: `${ptr}/${lm}`, params, method: method.toUpperCase() };
		}
		return null;
	}

	name(mt) {
		return mt && mt.op ? `${mt.method} ${mt.key} (${mt.op.operationId})` : mt ? `${mt.method} ${mt.key}` : "no path";
	}

	// The parameters of an operation, path item's first, each [param, ptr].
	params(mt) {
		const out = new Map();
		const add = (list, base) => (list || []).forEach((p, i) => {
			const [d, ptr] = this.deref(p, `${base}/parameters/${i}`);
			out.set(`${d.in}:${d.in === "header" ? d.name.toLowerCase() : d.name}`, [d, ptr]);
		});
		add(mt.item.parameters, mt.ptr);
		add(mt.op.parameters, mt.opPtr);
		return [...out.values()];
	}

	// Errors of a request {method, path (raw), query (string), headers
	// (lower-case names), body (Buffer or null)}.
	checkRequest(req) {
		const mt = this.match(req.method, req.path);
		if (!mt) return [`${req.method} ${req.path}: no path of the document matches`];
		if (!mt.op) return [`${req.method} ${req.path}: ${mt.key} has no ${req.method} operation`];
		const what = this.name(mt);
		const errs = [];
		const sec = mt.op.security !== undefined ? mt.op.security : this.doc.security || [];
		if (sec.length > 0 && !(sec.some((s) => Object.keys(s).length === 0))) {
			const a = req.headers.authorization;
			if (!a || !/^Bearer \S+$/i.test(a)) errs.push(`${what}: security: no Authorization: Bearer`);
		}
		const q = new URLSearchParams(req.query || "");
		const declared = new Set();
		for (const [p, ptr] of this.params(mt)) {
			let v;
			if (p.in === "path") {
				try { v = decodeURIComponent(mt.params[p.name]); } catch { errs.push(`${what}: path parameter ${p.name}: bad percent-encoding`); continue; }
			} else if (p.in === "query") {
				declared.add(p.name);
				v = q.has(p.name) ? q.get(p.name) : undefined;
			} else if (p.in === "header") {
				v = req.headers[p.name.toLowerCase()];
			} else continue;
			if (v === undefined) {
				if (p.required) errs.push(`${what}: ${p.in} parameter ${p.name} is required`);
				continue;
			}
			errs.push(...this.schemaErrors(`${ptr}/schema`, OpenApiChecker.coerce(this.at(`${ptr}/schema`), v), `${what}: ${p.in} parameter ${p.name}`));
		}
		for (const k of q.keys())
			if (!declared.has(k)) errs.push(`${what}: query parameter ${k} is not in the document`);
		const rb = mt.op.requestBody;
		const hasBody = req.body && req.body.length > 0;
		if (!rb) {
			if (hasBody) errs.push(`${what}: a body, and the operation takes none`);
			return errs;
		}
		const [body, bptr] = this.deref(rb, `${mt.opPtr}/requestBody`);
		if (!hasBody) {
			if (body.required) errs.push(`${what}: the request body is required`);
			return errs;
		}
		const ct = mediaOf(req.headers["content-type"]);
		const key = Object.keys(body.content).find((k) => k === ct) ||
			Object.keys(body.content).find((k) => k.endsWith("/*") && (k === "*/*" || ct.startsWith(k.slice(0, -1))));
		if (!key) return [...errs, `${what}: request Content-Type '${ct}' is not one of ${Object.keys(body.content).join(", ")}`];
		if (key === "application/json") {
			let j;
			try { j = JSON.parse(req.body.toString("utf8")); } catch { return [...errs, `${what}: the request body is not JSON`]; }
			errs.push(...this.schemaErrors(`${bptr}/content/${esc(key)}/schema`, j, `${what}: request body`));
		}
		return errs;
	}

	// Errors of a response {status, headers (lower-case), body (Buffer)} to req.
	checkResponse(req, res) {
		const mt = this.match(req.method, req.path);
		let resp, rptr, what;
		if (!mt) {
			what = `${req.method} ${req.path} (no path: NotFound)`;
			[resp, rptr] = this.deref({ $ref: "#/components/responses/NotFound" });
			if (res.status !== 404) return [`${what}: status ${res.status}, the document says 404`];
		} else if (!mt.op) {
			what = `${req.method} ${mt.key} (no such operation: MethodNotAllowed)`;
			[resp, rptr] = this.deref({ $ref: "#/components/responses/MethodNotAllowed" });
			if (res.status !== 405) return [`${what}: status ${res.status}, the document says 405`];
			const want = METHODS.filter((m) => mt.item[m]).map((m) => m.toUpperCase()).sort().join(",");
			const got = (res.headers.allow || "").split(",").map((s) => s.trim()).sort().join(",");
			if (want !== got) return [`${what}: Allow '${res.headers.allow}', the document's methods are ${want}`];
		} else {
			what = `${this.name(mt)} -> ${res.status}`;
			const rs = mt.op.responses;
			const k = rs[String(res.status)] ? String(res.status) : rs[`${String(res.status)[0]}XX`] ? `${String(res.status)[0]}XX` : rs.default ? "default" : null;
			if (!k) return [`${what}: status ${res.status} is not in the document for this operation (it lists ${Object.keys(rs).join(" ")})`];
			[resp, rptr] = this.deref(rs[k], `${mt.opPtr}/responses/${k}`);
		}
		const errs = [];
		for (const [name, h0] of Object.entries(resp.headers || {})) {
			if (name.toLowerCase() === "content-type") continue;
			const [h, hptr] = this.deref(h0, `${rptr}/headers/${esc(name)}`);
			const v = res.headers[name.toLowerCase()];
			if (v === undefined) {
				if (h.required) errs.push(`${what}: required header ${name} is missing (#${hptr})`);
				continue;
			}
			errs.push(...this.schemaErrors(`${hptr}/schema`, OpenApiChecker.coerce(this.at(`${hptr}/schema`), v), `${what}: header ${name}`));
		}
		const content = resp.content || {};
		const body = res.body || Buffer.alloc(0);
		if (Object.keys(content).length === 0) {
			if (body.length > 0) errs.push(`${what}: a body, and the document gives none`);
			return errs;
		}
		const ct = mediaOf(res.headers["content-type"]);
		if (!content[ct]) return [...errs, `${what}: Content-Type '${ct}' is not one of ${Object.keys(content).join(", ")} (#${rptr}/content)`];
		const sptr = `${rptr}/content/${esc(ct)}/schema`;
		if (ct === "application/json") {
			let j;
			try { j = JSON.parse(body.toString("utf8")); } catch { return [...errs, `${what}: the body is not JSON`]; }
			errs.push(...this.schemaErrors(sptr, j, `${what}: body`));
		} else if (ct === "application/x-ndjson") {
			const txt = body.toString("utf8");
			if (txt.length > 0 && !txt.endsWith("\n")) errs.push(`${what}: the NDJSON stream does not end with a newline`);
			txt.split("\n").filter((l) => l.length > 0).forEach((l, i) => {
				let j;
				try { j = JSON.parse(l); } catch { errs.push(`${what}: NDJSON line ${i + 1} is not JSON`); return; }
				errs.push(...this.schemaErrors(sptr, j, `${what}: NDJSON line ${i + 1}`));
			});
		} else if (ct.startsWith("text/")) {
			errs.push(...this.schemaErrors(sptr, body.toString("utf8"), `${what}: body`));
		} else if (res.headers["content-length"] !== undefined && Number(res.headers["content-length"]) !== body.length) {
			errs.push(`${what}: Content-Length ${res.headers["content-length"]}, ${body.length} bytes came`);
		}
		return errs;
	}
}
