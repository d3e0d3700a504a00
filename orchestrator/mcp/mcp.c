/*
 * mcp.c: JSON-RPC 2.0 dispatch for MCP over Streamable HTTP.
 *
 * Two eras on one endpoint, chosen per request (era.c): a request with the
 * 2026-07-28 _meta is served by that version's rules (modern_one below),
 * any other by the 2025 rules of the version its MCP-Protocol-Version
 * header names (handle_one), with no state between requests in either.
 *
 * HTTP status rules of the 2025 versions (per the transport spec and the
 * reference SDK): only notifications/responses -> 202 with no body; a
 * parse error -> 400 -32700 id null; an invalid request -> 400 -32600;
 * unsupported MCP-Protocol-Version -> 400 -32022 (the code 2026-07-28
 * gave it, with the versions served: a dual-era client recognises it);
 * batches only for 2025-03-26 (later versions -> 400 -32600);
 * method-level errors (-32601, -32602) -> 200 with the error object.
 * 2026-07-28: header and _meta errors -> 400 (-32020, -32022, -32602),
 * an unknown or removed method -> 404 -32601.
 *
 * Ids are echoed exactly as sent. cJSON keeps numbers as doubles (an id
 * of 9007199254740993 would come back as ...992) and cuts strings at a
 * NUL, so before dispatch the parsed tree is mended from the body's text
 * (raw_ids, jsonu_mark_nul): an integer id, requestId or progressToken
 * becomes a cJSON_Raw of its digits as written, a string holding a NUL a
 * Raw of its JSON text; ids are then strings or Raws, and a number id
 * written with a fraction or an exponent is no integer: -32600. A Raw
 * anywhere else is no string to any check, so a method, tool name or
 * argument holding a NUL is refused, never read cut short.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "lib/jsonu.h"
#include "log.h"
#include "mcp.h"
#include "xmalloc.h"

const char *const mcp_versions[] = {
	[MCP_V_NONE] = "",
	[MCP_V_0326] = "2025-03-26",
	[MCP_V_0618] = "2025-06-18",
	[MCP_V_1125] = "2025-11-25",
	[MCP_V_0728] = ERA_MODERN,
};

/* tools/list's ttlMs (2026-07-28): tools change only with the runtime's
 * image names. */
#define MCP_TOOLS_TTL_MS	60000

/* Longest integer id (digits and sign) echoed; longer ones are refused
 * (-32600): no client counts that high, and ids are copied per call. */
#define MCP_INT_ID_MAX	64

#define E_PARSE		(-32700)
#define E_INVALID	(-32600)
#define E_METHOD	(-32601)
#define E_PARAMS	(-32602)
#define E_SERVER	(-32000)

enum kind { K_INVALID, K_REQUEST, K_NOTIFY, K_RESPONSE };

enum mcp_version
mcp_version_parse(const char *s)
{
	int v;

	if (s == NULL)
		return MCP_V_NONE;
	for (v = MCP_V_0326; v <= MCP_V_0728; v++)
		if (strcmp(s, mcp_versions[v]) == 0)
			return (enum mcp_version)v;
	return MCP_V_NONE;
}

/* initialize negotiates a 2025 version: 2026-07-28 has no initialize. */
enum mcp_version
mcp_negotiate(const char *requested)
{
	enum mcp_version v = mcp_version_parse(requested);

	return v != MCP_V_NONE && v <= MCP_V_1125 ? v : MCP_V_1125;
}

cJSON *
mcp_error_data(const cJSON *id, int code, const char *msg, cJSON *data)
{
	cJSON *o = mcp_error(id, code, msg);

	if (data != NULL)
		cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(o, "error"),
		    "data", data);
	return o;
}

cJSON *
mcp_error(const cJSON *id, int code, const char *msg)
{
	cJSON *o = cJSON_CreateObject(), *e;

	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	if (id != NULL)
		cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 1));
	else
		cJSON_AddNullToObject(o, "id");
	e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	return o;
}

static cJSON *
mcp_result(const cJSON *id, cJSON *result)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 1));
	cJSON_AddItemToObject(o, "result", result);
	return o;
}

/* A request id: a string, or a Raw from raw_ids or jsonu_mark_nul. */
static int
id_ok(const cJSON *id)
{
	return cJSON_IsString(id) || cJSON_IsRaw(id);
}

/*
 * If v (a number child of parent, written t[0..n)) is written as a JSON
 * integer of at most MCP_INT_ID_MAX characters, it becomes a Raw of that
 * text; otherwise it stays a number, which id_ok refuses.
 */
static void
raw_int(cJSON *parent, cJSON *v, const char *t, size_t n)
{
	size_t i = t[0] == '-';
	cJSON *raw;
	char txt[MCP_INT_ID_MAX + 1];

	if (!cJSON_IsNumber(v) || n > MCP_INT_ID_MAX || i == n ||
	    (t[i] == '0' && n > i + 1))
		return;
	for (; i < n; i++)
		if (t[i] < '0' || t[i] > '9')
			return;
	memcpy(txt, t, n);
	txt[n] = '\0';
	if ((raw = cJSON_CreateRaw(txt)) == NULL)
		return;
	raw->string = v->string;	/* not kept by ReplaceItemViaPointer */
	v->string = NULL;
	if (!cJSON_ReplaceItemViaPointer(parent, v, raw)) {
		v->string = raw->string;
		raw->string = NULL;
		cJSON_Delete(raw);
	}
}

/*
 * The member of object o (its text t[0..n)) named key that the dispatch
 * reads (the first of that name), passed to fn with its value's text.
 */
static void
raw_members(cJSON *o, const char *t, size_t n, const char *key,
    void (*fn)(cJSON *, cJSON *, const char *, size_t))
{
	struct jsonu_iter it;
	const char *nm, *v;
	size_t nl, vl;
	cJSON *c, *want = cJSON_GetObjectItemCaseSensitive(o, key);

	if (want == NULL || jsonu_iter_init(&it, t, n, o) == -1)
		return;
	while (jsonu_iter_next(&it, &c, &nm, &nl, &v, &vl) == 1)
		if (c == want) {
			fn(o, c, v, vl);
			return;
		}
}

static void
raw_meta(cJSON *params UNUSED, cJSON *meta, const char *t, size_t n)
{
	if (cJSON_IsObject(meta))
		raw_members(meta, t, n, "progressToken", raw_int);
}

static void
raw_params(cJSON *m UNUSED, cJSON *params, const char *t, size_t n)
{
	if (!cJSON_IsObject(params))
		return;
	raw_members(params, t, n, "requestId", raw_int);
	raw_members(params, t, n, "_meta", raw_meta);
}

/* A message's id, params.requestId and params._meta.progressToken. */
static void
raw_message(cJSON *m, const char *t, size_t n)
{
	if (!cJSON_IsObject(m))
		return;
	raw_members(m, t, n, "id", raw_int);
	raw_members(m, t, n, "params", raw_params);
}

/* raw_message for the message root (t[0..n)) or each one of its batch. */
static void
raw_ids(cJSON *root, const char *t, size_t n)
{
	struct jsonu_iter it;
	const char *nm, *v;
	size_t nl, vl;
	cJSON *m;

	if (!cJSON_IsArray(root)) {
		raw_message(root, t, n);
		return;
	}
	if (jsonu_iter_init(&it, t, n, root) == -1)
		return;
	while (jsonu_iter_next(&it, &m, &nm, &nl, &v, &vl) == 1)
		raw_message(m, v, vl);
}

static enum kind
classify(const cJSON *m, const cJSON **idp)
{
	const cJSON *jr, *method, *id;

	*idp = NULL;
	if (!cJSON_IsObject(m))
		return K_INVALID;
	id = cJSON_GetObjectItemCaseSensitive(m, "id");
	if (id_ok(id))
		*idp = id;
	jr = cJSON_GetObjectItemCaseSensitive(m, "jsonrpc");
	if (!cJSON_IsString(jr) || strcmp(jr->valuestring, "2.0") != 0)
		return K_INVALID;
	method = cJSON_GetObjectItemCaseSensitive(m, "method");
	if (method != NULL) {
		if (!cJSON_IsString(method) || method->valuestring[0] == '\0')
			return K_INVALID;
		if (id == NULL)
			return K_NOTIFY;
		return id_ok(id) ? K_REQUEST : K_INVALID;
	}
	if ((cJSON_GetObjectItemCaseSensitive(m, "result") != NULL) !=
	    (cJSON_GetObjectItemCaseSensitive(m, "error") != NULL) &&
	    (id_ok(id) || cJSON_IsNull(id)))
		return K_RESPONSE;
	return K_INVALID;
}

/*
 * notifications/cancelled {requestId, reason?}: remembers the id for the
 * HTTP layer, which owns the in-flight calls. Invalid ones are ignored
 * (the spec: SHOULD ignore).
 */
static void
note_cancel(struct mcp_out *out, const cJSON *m)
{
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(m, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "params");
	const cJSON *rid = cJSON_GetObjectItemCaseSensitive(params, "requestId");

	if (!cJSON_IsString(method) ||
	    strcmp(method->valuestring, "notifications/cancelled") != 0 ||
	    !id_ok(rid))
		return;
	if (out->cancels == NULL)
		out->cancels = cJSON_CreateArray();
	if (cJSON_GetArraySize(out->cancels) < MCP_MAX_BATCH)
		cJSON_AddItemToArray(out->cancels, cJSON_Duplicate(rid, 1));
}

static cJSON *
initialize_result(enum mcp_version v)
{
	cJSON *r = cJSON_CreateObject(), *caps, *tools, *info;

	cJSON_AddStringToObject(r, "protocolVersion", mcp_versions[v]);
	caps = cJSON_AddObjectToObject(r, "capabilities");
	tools = cJSON_AddObjectToObject(caps, "tools");
	cJSON_AddFalseToObject(tools, "listChanged");
	info = cJSON_AddObjectToObject(r, "serverInfo");
	cJSON_AddStringToObject(info, "name", ERA_SERVER_NAME);
	if (v >= MCP_V_0618)
		cJSON_AddStringToObject(info, "title", "Sandbox orchestrator");
	cJSON_AddStringToObject(info, "version", ERA_SERVER_VERSION);
	cJSON_AddStringToObject(r, "instructions", ERA_INSTRUCTIONS);
	return r;
}

/*
 * One MCP method: answers the request with id and params (an object or
 * NULL), or returns NULL after adding a pending call. *status_hint is the
 * HTTP status for a single-message reply (200 unless set).
 */
struct mcp_method {
	const char	*name;
	cJSON		*(*handler)(const struct mcp_in *, struct mcp_out *,
			    const cJSON *id, const cJSON *params, int in_batch,
			    int slot, int *status_hint);
};

static cJSON *
m_initialize(const struct mcp_in *in UNUSED, struct mcp_out *out,
    const cJSON *id, const cJSON *params, int in_batch, int slot UNUSED,
    int *status_hint)
{
	const cJSON *pv = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");

	if (in_batch) {
		*status_hint = 400;
		return mcp_error(id, E_INVALID, "Invalid Request: initialize "
		    "must not be part of a JSON-RPC batch");
	}
	if (!cJSON_IsString(pv))
		return mcp_error(id, E_PARAMS, "Invalid params: initialize needs "
		    "params.protocolVersion (a string)");
	out->version = mcp_negotiate(pv->valuestring);
	return mcp_result(id, initialize_result(out->version));
}

static cJSON *
m_ping(const struct mcp_in *in UNUSED, struct mcp_out *out UNUSED,
    const cJSON *id, const cJSON *params UNUSED, int in_batch UNUSED,
    int slot UNUSED, int *status_hint UNUSED)
{
	return mcp_result(id, cJSON_CreateObject());
}

static cJSON *
m_tools_list(const struct mcp_in *in UNUSED, struct mcp_out *out,
    const cJSON *id, const cJSON *params, int in_batch UNUSED,
    int slot UNUSED, int *status_hint UNUSED)
{
	const cJSON *cur = cJSON_GetObjectItemCaseSensitive(params, "cursor");
	cJSON *r;

	if (cur != NULL && !cJSON_IsNull(cur))
		return mcp_error(id, E_PARAMS, "Invalid params: unknown cursor "
		    "(all tools fit in one page)");
	r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "tools", tools_list());
	if (out->modern) {
		/* the same for every caller; the image names may change */
		era_cacheable(r, MCP_TOOLS_TTL_MS, "public");
		era_complete(r, "complete");
	}
	return mcp_result(id, r);
}

/*
 * params._meta[MCP_META_IDEM]: the call's idempotency key, honoured by
 * shell: its result id is then a digest of the session and the key, so a
 * re-issue finds the first run (tasks_attach). 0, or -1 with msg.
 */
static int
idem_key(struct tool_call *tc, const cJSON *params, char *msg, size_t len)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(params, "_meta"), MCP_META_IDEM);
	char in[ID_SESSION_MAX + 260], hx[DIGEST_SHA256_HEX + 1];
	size_t i, n;

	if (k == NULL)
		return 0;
	n = cJSON_IsString(k) ? strlen(k->valuestring) : 0;
	for (i = 0; i < n; i++)
		if (k->valuestring[i] < 0x20 || k->valuestring[i] > 0x7e)
			break;
	if (n == 0 || n >= sizeof(tc->idem_key) || i < n) {
		snprintf(msg, len, "Invalid params: _meta[\"%s\"] must be 1-255 "
		    "printable ASCII characters", MCP_META_IDEM);
		return -1;
	}
	if (strcmp(tc->name, "shell") != 0) {
		snprintf(msg, len, "Invalid params: _meta[\"%s\"] is honoured "
		    "by the shell tool only (REST exec and create take the "
		    "Idempotency-Key header)", MCP_META_IDEM);
		return -1;
	}
	memcpy(tc->idem_key, k->valuestring, n + 1);
	snprintf(in, sizeof(in), "%s\n%s", tc->sid, tc->idem_key);
	if (digest_sha256_hex(in, strlen(in), hx) == -1) {
		snprintf(msg, len, "Internal error: no digest");
		return -1;
	}
	snprintf(tc->task_id, sizeof(tc->task_id), "s-%.24s", hx);
	return 0;
}

static cJSON *
m_tools_call(const struct mcp_in *in, struct mcp_out *out, const cJSON *id,
    const cJSON *params, int in_batch, int slot, int *status_hint)
{
	const cJSON *name, *args, *meta, *tok;
	struct tool_call *tc;
	char msg[256], nm[64];

	name = cJSON_GetObjectItemCaseSensitive(params, "name");
	args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (!cJSON_IsString(name))
		return mcp_error(id, E_PARAMS, "Invalid params: tools/call needs "
		    "params.name (a string)");
	if (!tools_exists(name->valuestring)) {
		log_escape(nm, sizeof(nm), name->valuestring,
		    strlen(name->valuestring));
		snprintf(msg, sizeof(msg), "Unknown tool: %s (tools/list names "
		    "the tools)", nm);
		return mcp_error(id, E_PARAMS, msg);
	}
	if (args != NULL && !cJSON_IsObject(args) && !cJSON_IsNull(args))
		return mcp_error(id, E_PARAMS, "Invalid params: params.arguments "
		    "must be an object");
	if (in->sid == NULL) {
		*status_hint = 400;
		return mcp_error(id, E_PARAMS, "Invalid params: tools/call needs "
		    "the X-Session-Id request header (1-128 characters from "
		    "A-Z a-z 0-9 - _ . : @ + =); it names this session's sandbox");
	}
	tc = xcalloc(1, sizeof(*tc));
	snprintf(tc->sid, sizeof(tc->sid), "%s", in->sid);
	snprintf(tc->org, sizeof(tc->org), "%s", in->org ? in->org : "");
	snprintf(tc->user, sizeof(tc->user), "%s", in->user ? in->user : "");
	tc->name = xstrdup(name->valuestring);
	tc->args = (args != NULL && cJSON_IsObject(args)) ?
	    cJSON_Duplicate(args, 1) : cJSON_CreateObject();
	tc->structured = out->version >= MCP_V_0618;
	snprintf(tc->trace, sizeof(tc->trace), "%s", out->era.traceparent);
	if (idem_key(tc, params, msg, sizeof(msg)) == -1) {
		tools_call_free(tc);
		return mcp_error(id, E_PARAMS, msg);
	}
	out->pend = xreallocarray(out->pend, out->npend + 1, sizeof(*out->pend));
	out->pend[out->npend].tc = tc;
	out->pend[out->npend].id = cJSON_Duplicate(id, 1);
	out->pend[out->npend].slot = slot;
	out->npend++;
	if (!in_batch) {
		snprintf(out->tool, sizeof(out->tool), "%s", tc->name);
		meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
		tok = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
		if (id_ok(tok)) {
			out->want_progress = 1;
			out->progress_token = cJSON_Duplicate(tok, 1);
		}
	}
	return NULL;	/* pending */
}

static const struct mcp_method mcp_methods[] = {
	{ "initialize", m_initialize },
	{ "ping", m_ping },
	{ "tools/list", m_tools_list },
	{ "tools/call", m_tools_call },
};

/*
 * Handles one message. Returns the reply (or NULL for none) and sets
 * *status_hint for a single-message reply. May add a pending call.
 */
static cJSON *
handle_one(const struct mcp_in *in, struct mcp_out *out, const cJSON *m,
    int in_batch, int slot, int *status_hint)
{
	const cJSON *id, *params;
	enum kind k = classify(m, &id);
	const char *method;
	char msg[256], nm[64];
	size_t i;

	*status_hint = 200;
	switch (k) {
	case K_INVALID:
		*status_hint = 400;
		return mcp_error(id, E_INVALID, "Invalid Request: not a JSON-RPC 2.0 "
		    "request, notification or response (check jsonrpc \"2.0\", "
		    "method, and that id is a string or integer)");
	case K_NOTIFY:
		note_cancel(out, m);
		*status_hint = 202;
		return NULL;
	case K_RESPONSE:
		*status_hint = 202;
		return NULL;
	case K_REQUEST:
		break;
	}
	method = cJSON_GetObjectItemCaseSensitive(m, "method")->valuestring;
	if (!in_batch)
		out->method = NULL;
	params = cJSON_GetObjectItemCaseSensitive(m, "params");
	if (params != NULL && !cJSON_IsObject(params) && !cJSON_IsNull(params))
		return mcp_error(id, E_PARAMS, "Invalid params: params must be an object");
	for (i = 0; i < NELEM(mcp_methods); i++)
		if (strcmp(method, mcp_methods[i].name) == 0)
			return mcp_methods[i].handler(in, out, id, params, in_batch,
			    slot, status_hint);
	log_escape(nm, sizeof(nm), method, strlen(method));
	snprintf(msg, sizeof(msg), "Method not found: %s", nm);
	return mcp_error(id, E_METHOD, msg);
}

static cJSON *
m_discover(const struct mcp_in *in, struct mcp_out *out UNUSED,
    const cJSON *id, const cJSON *params UNUSED, int in_batch UNUSED,
    int slot UNUSED, int *status_hint UNUSED)
{
	cJSON *r = era_discover(in->tasks);

	era_complete(r, "complete");
	return mcp_result(id, r);
}

/* subscriptions/listen: acknowledged and held open by the HTTP layer. */
static cJSON *
m_listen(const struct mcp_in *in UNUSED, struct mcp_out *out,
    const cJSON *id, const cJSON *params, int in_batch UNUSED,
    int slot UNUSED, int *status_hint)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(params,
	    "notifications");

	if (f != NULL && !cJSON_IsObject(f))
		return mcp_error(id, E_PARAMS, "Invalid params: "
		    "params.notifications must be an object");
	if (cJSON_GetObjectItemCaseSensitive(f, "taskIds") != NULL &&
	    !out->era.tasks) {
		cJSON *d = cJSON_CreateObject(), *rc, *ex;

		rc = cJSON_AddObjectToObject(d, "requiredCapabilities");
		ex = cJSON_AddObjectToObject(rc, "extensions");
		cJSON_AddObjectToObject(ex, ERA_EXT_TASKS);
		*status_hint = 400;
		return mcp_error_data(id, ERA_E_CAPABILITY, "Missing required "
		    "client capability: task notifications need the "
		    ERA_EXT_TASKS " extension in clientCapabilities", d);
	}
	out->listen = 1;
	out->listen_id = cJSON_Duplicate(id, 1);
	return NULL;
}

/*
 * tasks/get, tasks/cancel, tasks/update (tasks.h): pending calls run by
 * tasks_run against the task's session, which X-Session-Id must name.
 */
static cJSON *
m_tasks(const struct mcp_in *in, struct mcp_out *out, const cJSON *id,
    const cJSON *params, int in_batch UNUSED, int slot, int *status_hint)
{
	const cJSON *tid = cJSON_GetObjectItemCaseSensitive(params, "taskId");
	struct tool_call *tc;

	if (!in->tasks)
		return mcp_error(id, E_METHOD, "Method not found: this server "
		    "has tasks turned off (tools.task_after: 0)");
	if (!cJSON_IsString(tid) || strlen(tid->valuestring) > 256)
		return mcp_error(id, E_PARAMS, "Invalid params: params.taskId "
		    "(a string of at most 256 characters) is required");
	if (in->sid == NULL) {
		*status_hint = 400;
		return mcp_error(id, E_PARAMS, "Invalid params: tasks need the "
		    "X-Session-Id request header of the session that made the "
		    "task");
	}
	tc = xcalloc(1, sizeof(*tc));
	snprintf(tc->sid, sizeof(tc->sid), "%s", in->sid);
	snprintf(tc->org, sizeof(tc->org), "%s", in->org ? in->org : "");
	snprintf(tc->user, sizeof(tc->user), "%s", in->user ? in->user : "");
	tc->name = xstrdup(out->method_name);
	tc->args = cJSON_CreateObject();
	cJSON_AddStringToObject(tc->args, "taskId", tid->valuestring);
	tc->structured = 1;
	out->pend = xreallocarray(out->pend, out->npend + 1, sizeof(*out->pend));
	out->pend[out->npend].tc = tc;
	out->pend[out->npend].id = cJSON_Duplicate(id, 1);
	out->pend[out->npend].slot = slot;
	out->npend++;
	snprintf(out->tool, sizeof(out->tool), "%s", tc->name);
	return NULL;
}

/* 2026-07-28's methods; tools/call needs X-Session-Id (its sandbox). */
static const struct mcp_method modern_methods[] = {
	{ "server/discover", m_discover },
	{ "tools/list", m_tools_list },
	{ "tools/call", m_tools_call },
	{ "subscriptions/listen", m_listen },
	{ "tasks/get", m_tasks },
	{ "tasks/cancel", m_tasks },
	{ "tasks/update", m_tasks },
};

/* What 2025 had and 2026-07-28 removed: named so in the -32601. */
static const char *const modern_removed[] = {
	"initialize", "ping", "logging/setLevel", "resources/subscribe",
	"resources/unsubscribe", "tasks/result", "tasks/list",
};

static void
modern_error(struct mcp_out *out, const cJSON *id, int status, int code,
    const char *msg, cJSON *data)
{
	out->status = status;
	out->body = mcp_error_data(id, code, msg, data);
}

/*
 * One 2026-07-28 message (m, an object): the checks of era_check, then
 * its method. Notifications and responses are taken (202) and ignored:
 * that version defines none from the client over HTTP (closing a stream
 * is its cancellation).
 */
static void
modern_one(const struct mcp_in *in, struct mcp_out *out, const cJSON *m,
    const struct era_hdrs *h)
{
	const cJSON *id, *params;
	struct era_err e;
	const char *method;
	char msg[256], nm[64];
	cJSON *reply;
	size_t i;
	int hint = 200;

	out->modern = 1;
	out->version = MCP_V_0728;
	switch (classify(m, &id)) {
	case K_INVALID:
		modern_error(out, id, 400, E_INVALID, "Invalid Request: not a "
		    "JSON-RPC 2.0 request (check jsonrpc \"2.0\", method, and "
		    "that id is a string or integer)", NULL);
		return;
	case K_NOTIFY:
	case K_RESPONSE:
		out->status = 202;
		return;
	case K_REQUEST:
		break;
	}
	method = cJSON_GetObjectItemCaseSensitive(m, "method")->valuestring;
	params = cJSON_GetObjectItemCaseSensitive(m, "params");
	if (!cJSON_IsObject(params)) {
		modern_error(out, id, 400, E_PARAMS, "Invalid params: a "
		    ERA_MODERN " request's params must be an object holding "
		    "_meta", NULL);
		return;
	}
	if (era_check(method, params, h, &out->era, &e) == -1) {
		modern_error(out, id, e.status, e.code, e.msg, e.data);
		return;
	}
	log_escape(nm, sizeof(nm), method, strlen(method));
	for (i = 0; i < NELEM(modern_methods); i++)
		if (strcmp(method, modern_methods[i].name) == 0)
			break;
	if (i == NELEM(modern_methods)) {
		for (i = 0; i < NELEM(modern_removed); i++)
			if (strcmp(method, modern_removed[i]) == 0)
				break;
		snprintf(msg, sizeof(msg), i < NELEM(modern_removed) ?
		    "Method not found: %s is not part of protocol version "
		    ERA_MODERN " (send requests with their own _meta; a 2025 "
		    "client sends initialize without it)" :
		    "Method not found: %s", nm);
		modern_error(out, id, 404, E_METHOD, msg, NULL);
		return;
	}
	out->method = "(request)";
	out->method_name = modern_methods[i].name;
	reply = modern_methods[i].handler(in, out, id, params, 0, -1, &hint);
	if (reply != NULL) {
		out->status = hint;
		out->body = reply;
	} else
		out->status = 200;	/* pending, or a listen */
	if (out->npend > 0 || out->listen)
		return;
	if (reply == NULL)
		out->status = 202;
}

static void
legacy_refuse(struct mcp_out *out, const cJSON *root, int code,
    const char *msg, cJSON *data)
{
	const cJSON *id = NULL;

	if (cJSON_IsObject(root) && classify(root, &id) != K_REQUEST)
		id = NULL;
	out->status = 400;
	out->body = mcp_error_data(id, code, msg, data);
}

void
mcp_dispatch(const struct mcp_in *in, struct mcp_out *out)
{
	struct era_hdrs h = { in->proto, in->hmethod, in->hname };
	cJSON *root = NULL, *m, *reply;
	const char *end = NULL;
	int hint, n, i, idx;
	char msg[320];

	memset(out, 0, sizeof(*out));
	out->version = MCP_V_0326;	/* spec: assume 2025-03-26 without a header */
	/* JSON has no raw control bytes; cJSON would take a NUL as an end. */
	if (!jsonu_utf8_valid(in->body, in->len) ||
	    memchr(in->body, '\0', in->len) != NULL ||
	    (root = cJSON_ParseWithLengthOpts(in->body, in->len, &end, 0)) == NULL) {
		out->status = 400;
		out->body = mcp_error(NULL, E_PARSE, "Parse error: the body is not "
		    "valid JSON (UTF-8)");
		return;
	}
	/* Trailing bytes other than whitespace are a parse error too. */
	for (; end != NULL && end < in->body + in->len; end++)
		if (*end != ' ' && *end != '\t' && *end != '\r' && *end != '\n') {
			cJSON_Delete(root);
			out->status = 400;
			out->body = mcp_error(NULL, E_PARSE, "Parse error: trailing "
			    "data after the JSON value");
			return;
		}
	(void)jsonu_mark_nul(in->body, in->len, root);
	raw_ids(root, in->body, in->len);
	if (cJSON_IsObject(root) && era_is_modern(root, &h)) {
		modern_one(in, out, root, &h);
		cJSON_Delete(root);
		return;
	}
	if (in->proto != NULL &&
	    (out->version = mcp_version_parse(in->proto)) == MCP_V_NONE) {
		char pv[64];
		log_escape(pv, sizeof(pv), in->proto, strlen(in->proto));
		snprintf(msg, sizeof(msg), "Bad Request: unsupported "
		    "MCP-Protocol-Version '%s' (supported: " ERA_MODERN " with "
		    "_meta on each request; 2025-11-25, 2025-06-18, 2025-03-26)",
		    pv);
		legacy_refuse(out, root, ERA_E_VERSION, msg,
		    era_unsupported_data(in->proto));
		cJSON_Delete(root);
		return;
	}

	if (!cJSON_IsArray(root)) {
		reply = handle_one(in, out, root, 0, -1, &hint);
		if (reply == NULL && out->npend == 0) {
			out->status = 202;
		} else if (reply != NULL) {
			out->status = hint;
			out->body = reply;
		} else
			out->status = 200;	/* pending */
		{
			const cJSON *mm = cJSON_GetObjectItemCaseSensitive(root, "method");
			out->method = cJSON_IsString(mm) ? "(request)" : NULL;
		}
		cJSON_Delete(root);
		return;
	}
	out->batch = 1;
	n = cJSON_GetArraySize(root);
	if (out->version >= MCP_V_0618) {
		snprintf(msg, sizeof(msg), "Invalid Request: JSON-RPC batches are not "
		    "supported in protocol version %s; send one message per POST",
		    mcp_versions[out->version]);
		out->status = 400;
		out->body = mcp_error(NULL, E_INVALID, msg);
		cJSON_Delete(root);
		return;
	}
	if (n == 0 || n > MCP_MAX_BATCH) {
		snprintf(msg, sizeof(msg), "Invalid Request: a batch must hold 1 to %d "
		    "messages", MCP_MAX_BATCH);
		out->status = 400;
		out->body = mcp_error(NULL, E_INVALID, msg);
		cJSON_Delete(root);
		return;
	}
	out->body = cJSON_CreateArray();
	idx = 0;
	for (i = 0; i < n; i++) {
		m = cJSON_GetArrayItem(root, i);
		reply = handle_one(in, out, m, 1, idx, &hint);
		if (reply != NULL) {
			cJSON_AddItemToArray(out->body, reply);
			idx++;
		} else if (out->npend > 0 && out->pend[out->npend - 1].slot == idx) {
			/* placeholder, replaced by mcp_complete */
			cJSON_AddItemToArray(out->body, cJSON_CreateNull());
			idx++;
		}
	}
	cJSON_Delete(root);
	if (idx == 0) {
		cJSON_Delete(out->body);
		out->body = NULL;
		out->status = 202;
		return;
	}
	out->status = 200;
}

int
mcp_complete(struct mcp_out *out, size_t i)
{
	struct mcp_pending *p = &out->pend[i];
	cJSON *r, *result;
	size_t k;
	int n;

	result = p->tc->result;
	p->tc->result = NULL;
	if (atomic_load(&p->tc->cancelled)) {
		/* Cancelled: no response (the spec's SHOULD NOT respond). A
		 * batch keeps its null placeholder, removed below. */
		cJSON_Delete(result);
	} else {
		if (p->tc->rpc_error != NULL) {
			const cJSON *cd = cJSON_GetObjectItemCaseSensitive(
			    p->tc->rpc_error, "code");
			const cJSON *ms = cJSON_GetObjectItemCaseSensitive(
			    p->tc->rpc_error, "message");

			cJSON_Delete(result);
			r = mcp_error(p->id, cJSON_IsNumber(cd) ? cd->valueint :
			    -32603, cJSON_IsString(ms) ? ms->valuestring : "error");
		} else {
			if (result == NULL)
				result = toolres_text("internal error: no result", 1);
			if (out->modern)
				era_complete(result, "complete");
			r = mcp_result(p->id, result);
		}
		if (p->slot < 0) {
			cJSON_Delete(out->body);
			out->body = r;
		} else
			cJSON_ReplaceItemInArray(out->body, p->slot, r);
	}
	tools_call_free(p->tc);
	p->tc = NULL;
	for (k = 0; k < out->npend; k++)
		if (out->pend[k].tc != NULL)
			return 0;
	if (out->batch && out->body != NULL) {
		for (n = cJSON_GetArraySize(out->body) - 1; n >= 0; n--)
			if (cJSON_IsNull(cJSON_GetArrayItem(out->body, n)))
				cJSON_DeleteItemFromArray(out->body, n);
		if (cJSON_GetArraySize(out->body) == 0) {
			cJSON_Delete(out->body);
			out->body = NULL;
		}
	}
	if (out->body == NULL)
		out->status = 202;	/* every request in it was cancelled */
	return 1;
}

void
mcp_out_free(struct mcp_out *out)
{
	size_t i;

	for (i = 0; i < out->npend; i++) {
		tools_call_free(out->pend[i].tc);
		cJSON_Delete(out->pend[i].id);
	}
	free(out->pend);
	cJSON_Delete(out->body);
	cJSON_Delete(out->progress_token);
	cJSON_Delete(out->cancels);
	cJSON_Delete(out->listen_id);
	memset(out, 0, sizeof(*out));
}

cJSON *
mcp_abort_body(const struct mcp_out *out, int code, const char *msg)
{
	const struct mcp_pending *p;
	cJSON *b;
	size_t k;
	int n;

	if (!out->batch) {
		for (k = 0; k < out->npend; k++) {
			p = &out->pend[k];
			if (p->tc != NULL && !atomic_load(&p->tc->cancelled))
				return mcp_error(p->id, code, msg);
		}
		return out->body != NULL ? cJSON_Duplicate(out->body, 1) : NULL;
	}
	b = out->body != NULL ? cJSON_Duplicate(out->body, 1) : cJSON_CreateArray();
	for (k = 0; k < out->npend; k++) {
		p = &out->pend[k];
		if (p->tc == NULL || atomic_load(&p->tc->cancelled) || p->slot < 0)
			continue;
		cJSON_ReplaceItemInArray(b, p->slot, mcp_error(p->id, code, msg));
	}
	for (n = cJSON_GetArraySize(b) - 1; n >= 0; n--)
		if (cJSON_IsNull(cJSON_GetArrayItem(b, n)))
			cJSON_DeleteItemFromArray(b, n);
	if (cJSON_GetArraySize(b) == 0) {
		cJSON_Delete(b);
		return NULL;
	}
	return b;
}
