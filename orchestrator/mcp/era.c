/*
 * era.c: the 2026-07-28 rules of the dual-era /mcp endpoint (era.h).
 *
 * Which era serves a request is decided per request, from the request
 * alone (the 2026-07-28 protocol is stateless, and so is this server in
 * both eras: a 2025 client's version comes from its MCP-Protocol-Version
 * header, not from a session):
 * - params._meta["io.modelcontextprotocol/protocolVersion"] naming a
 *   2025 version: a 2025 request (its _meta is ignored, as those versions
 *   define no such key);
 * - naming anything else, or not a string, or no such member while the
 *   MCP-Protocol-Version header says 2026-07-28: a modern request, which
 *   then must pass every check of era_check (an unknown version gets
 *   -32022 with the versions served);
 * - otherwise a 2025 request (mcp.c).
 *
 * The checks follow basic/transports/streamable-http.mdx ("Server
 * Validation") and basic/index.mdx ("_meta"): the headers before the
 * version, the version before the members, so that a client told its
 * version is wrong is not also told its members are.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "b64.h"
#include "era.h"
#include "ids.h"
#include "log.h"
#include "util.h"

#define META_VERSION	"io.modelcontextprotocol/protocolVersion"
#define META_CAPS	"io.modelcontextprotocol/clientCapabilities"
#define META_INFO	"io.modelcontextprotocol/clientInfo"
#define META_LOG	"io.modelcontextprotocol/logLevel"
#define META_SERVER	"io.modelcontextprotocol/serverInfo"

/* Newest first: what -32022 and server/discover list. */
static const char *const era_versions[] = {
	ERA_MODERN, "2025-11-25", "2025-06-18", "2025-03-26",
};

static const char *const era_levels[] = {
	"debug", "info", "notice", "warning", "error", "critical", "alert",
	"emergency",
};

int
era_log_level(const char *s)
{
	size_t i;

	for (i = 0; s != NULL && i < NELEM(era_levels); i++)
		if (strcmp(s, era_levels[i]) == 0)
			return (int)i;
	return -1;
}

int
era_version_known(const char *v)
{
	size_t i;

	for (i = 0; v != NULL && i < NELEM(era_versions); i++)
		if (strcmp(v, era_versions[i]) == 0)
			return 1;
	return 0;
}

static const cJSON *
meta_of(const cJSON *m)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "params");

	return cJSON_GetObjectItemCaseSensitive(p, "_meta");
}

int
era_is_modern(const cJSON *m, const struct era_hdrs *h)
{
	const cJSON *pv = cJSON_GetObjectItemCaseSensitive(meta_of(m),
	    META_VERSION);

	if (pv != NULL)
		return !cJSON_IsString(pv) ||
		    strcmp(pv->valuestring, ERA_MODERN) == 0 ||
		    !era_version_known(pv->valuestring);
	return h->proto != NULL && strcmp(h->proto, ERA_MODERN) == 0;
}

cJSON *
era_unsupported_data(const char *requested)
{
	cJSON *d = cJSON_CreateObject(), *a;
	size_t i;

	a = cJSON_AddArrayToObject(d, "supported");
	for (i = 0; i < NELEM(era_versions); i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(era_versions[i]));
	cJSON_AddStringToObject(d, "requested", requested);
	return d;
}

static int fail(struct era_err *, int, const char *, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(struct era_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	e->status = 400;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* A header value holds only visible ASCII, space and tab (RFC 9110). */
static int
hdr_clean(const char *v)
{
	for (; *v != '\0'; v++)
		if ((*v < 0x20 && *v != '\t') || (unsigned char)*v >= 0x7f)
			return 0;
	return 1;
}

/*
 * Mcp-Name's value as the body would hold it: a "=?base64?...?=" value
 * decoded, any other as it is. The length, or -1 when it does not decode.
 */
static long
name_value(const char *v, char *out, size_t outlen)
{
	size_t n = strlen(v), pre = sizeof("=?base64?") - 1;
	const char *why;
	size_t at;
	long r;

	if (n >= pre + 2 && strncmp(v, "=?base64?", pre) == 0 &&
	    strcmp(v + n - 2, "?=") == 0) {
		n -= pre + 2;
		if ((n + 3) / 4 * 3 >= outlen)
			return -1;
		r = b64_decode(v + pre, n, (unsigned char *)out, 1, &why, &at);
		if (r < 0)
			return -1;
		out[r] = '\0';
		return r;
	}
	if (n >= outlen)
		return -1;
	memcpy(out, v, n + 1);
	return (long)n;
}

/* What names a request's target in Mcp-Name: params.name or params.uri. */
static const char *
name_source(const char *meth)
{
	if (strcmp(meth, "tools/call") == 0 || strcmp(meth, "prompts/get") == 0)
		return "name";
	if (strcmp(meth, "resources/read") == 0)
		return "uri";
	if (strcmp(meth, "tasks/get") == 0 || strcmp(meth, "tasks/cancel") == 0 ||
	    strcmp(meth, "tasks/update") == 0)
		return "taskId";	/* the Tasks extension's routing header */
	return NULL;
}

static int
check_headers(const char *meth_raw, const cJSON *params, const char *pv_raw,
    const struct era_hdrs *h, struct era_err *e)
{
	const char *src = name_source(meth_raw);
	const cJSON *nv;
	char esc[96], esc2[96], dec[1024], pv[96], meth[96];
	long n;

	/* the messages quote values escaped; the comparisons use them raw */
	log_escape(pv, sizeof(pv), pv_raw, strlen(pv_raw));
	log_escape(meth, sizeof(meth), meth_raw, strlen(meth_raw));

	if (h->proto == NULL)
		return fail(e, ERA_E_HEADER, "Header mismatch: the "
		    "MCP-Protocol-Version header is missing (the body's _meta "
		    "says %s)", pv);
	if (!hdr_clean(h->proto) || strcmp(h->proto, pv_raw) != 0) {
		log_escape(esc, sizeof(esc), h->proto, strlen(h->proto));
		return fail(e, ERA_E_HEADER, "Header mismatch: "
		    "MCP-Protocol-Version header value '%s' does not match the "
		    "body's _meta value '%s'", esc, pv);
	}
	if (h->method == NULL)
		return fail(e, ERA_E_HEADER, "Header mismatch: the Mcp-Method "
		    "header is missing (the body's method is %s)", meth);
	if (!hdr_clean(h->method) || strcmp(h->method, meth_raw) != 0) {
		log_escape(esc, sizeof(esc), h->method, strlen(h->method));
		return fail(e, ERA_E_HEADER, "Header mismatch: Mcp-Method "
		    "header value '%s' does not match the body's method '%s'",
		    esc, meth);
	}
	if (src == NULL)
		return 0;
	nv = cJSON_GetObjectItemCaseSensitive(params, src);
	if (h->name == NULL)
		return fail(e, ERA_E_HEADER, "Header mismatch: the Mcp-Name "
		    "header is missing (a %s request names its target in it: "
		    "params.%s)", meth, src);
	log_escape(esc, sizeof(esc), h->name, strlen(h->name));
	if (!hdr_clean(h->name) ||
	    (n = name_value(h->name, dec, sizeof(dec))) < 0)
		return fail(e, ERA_E_HEADER, "Header mismatch: Mcp-Name header "
		    "value '%s' holds invalid characters or a bad =?base64?...?= "
		    "value", esc);
	if (!cJSON_IsString(nv) || strlen(nv->valuestring) != (size_t)n ||
	    memcmp(nv->valuestring, dec, (size_t)n) != 0) {
		if (cJSON_IsString(nv))
			log_escape(esc2, sizeof(esc2), nv->valuestring,
			    strlen(nv->valuestring));
		else
			snprintf(esc2, sizeof(esc2), "(none)");
		return fail(e, ERA_E_HEADER, "Header mismatch: Mcp-Name header "
		    "value '%s' does not match the body value '%s'", esc, esc2);
	}
	return 0;
}

static void
trace_context(const cJSON *meta, struct era_req *r)
{
	const cJSON *tp = cJSON_GetObjectItemCaseSensitive(meta, "traceparent");
	const cJSON *ts = cJSON_GetObjectItemCaseSensitive(meta, "tracestate");

	if (!cJSON_IsString(tp) || !id_traceparent_valid(tp->valuestring))
		return;		/* W3C: an invalid one is ignored */
	snprintf(r->traceparent, sizeof(r->traceparent), "%s", tp->valuestring);
	if (cJSON_IsString(ts) && strlen(ts->valuestring) < sizeof(r->tracestate) &&
	    hdr_clean(ts->valuestring))
		snprintf(r->tracestate, sizeof(r->tracestate), "%s",
		    ts->valuestring);
}

int
era_check(const char *meth, const cJSON *params,
    const struct era_hdrs *h, struct era_req *r, struct era_err *e)
{
	const cJSON *meta, *pv, *caps, *info, *ext, *lv, *nm, *ver;
	char esc[96];

	memset(r, 0, sizeof(*r));
	memset(e, 0, sizeof(*e));
	r->log_level = -1;
	meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
	pv = cJSON_GetObjectItemCaseSensitive(meta, META_VERSION);
	if (!cJSON_IsObject(meta) || !cJSON_IsString(pv))
		return fail(e, -32602, "Invalid params: a %s request needs "
		    "params._meta with \"" META_VERSION "\" (a string) and \""
		    META_CAPS "\" (an object)", ERA_MODERN);
	if (check_headers(meth, params, pv->valuestring, h, e) == -1)
		return -1;
	if (strcmp(pv->valuestring, ERA_MODERN) != 0) {
		log_escape(esc, sizeof(esc), pv->valuestring,
		    strlen(pv->valuestring));
		fail(e, ERA_E_VERSION, "Unsupported protocol version: %s (this "
		    "server serves 2026-07-28 per request, and 2025-11-25, "
		    "2025-06-18 and 2025-03-26 after initialize)", esc);
		e->data = era_unsupported_data(pv->valuestring);
		return -1;
	}
	caps = cJSON_GetObjectItemCaseSensitive(meta, META_CAPS);
	if (!cJSON_IsObject(caps))
		return fail(e, -32602, "Invalid params: params._meta[\"%s\"] is "
		    "required and must be an object", META_CAPS);
	info = cJSON_GetObjectItemCaseSensitive(meta, META_INFO);
	if (info != NULL) {
		nm = cJSON_GetObjectItemCaseSensitive(info, "name");
		ver = cJSON_GetObjectItemCaseSensitive(info, "version");
		if (!cJSON_IsObject(info) || !cJSON_IsString(nm) ||
		    !cJSON_IsString(ver))
			return fail(e, -32602, "Invalid params: params._meta[\"%s\"] "
			    "must be an object with name and version "
			    "(strings)", META_INFO);
		snprintf(esc, sizeof(esc), "%.40s/%.40s", nm->valuestring,
		    ver->valuestring);
		log_escape(r->client, sizeof(r->client), esc, strlen(esc));
	}
	lv = cJSON_GetObjectItemCaseSensitive(meta, META_LOG);
	if (lv != NULL && (!cJSON_IsString(lv) ||
	    (r->log_level = era_log_level(lv->valuestring)) < 0))
		return fail(e, -32602, "Invalid params: params._meta[\"%s\"] must "
		    "be one of debug, info, notice, warning, error, critical, "
		    "alert, emergency", META_LOG);
	ext = cJSON_GetObjectItemCaseSensitive(caps, "extensions");
	r->tasks = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(ext,
	    ERA_EXT_TASKS));
	trace_context(meta, r);
	return 0;
}

cJSON *
era_discover(int tasks)
{
	cJSON *r = cJSON_CreateObject(), *a, *caps, *t, *ext;
	size_t i;

	a = cJSON_AddArrayToObject(r, "supportedVersions");
	for (i = 0; i < NELEM(era_versions); i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(era_versions[i]));
	caps = cJSON_AddObjectToObject(r, "capabilities");
	t = cJSON_AddObjectToObject(caps, "tools");
	cJSON_AddFalseToObject(t, "listChanged");
	if (tasks) {
		ext = cJSON_AddObjectToObject(caps, "extensions");
		cJSON_AddObjectToObject(ext, ERA_EXT_TASKS);
	}
	cJSON_AddStringToObject(r, "instructions", ERA_INSTRUCTIONS);
	era_cacheable(r, 3600000, "public");
	return r;
}

void
era_complete(cJSON *result, const char *rtype)
{
	cJSON *meta, *si;

	if (!cJSON_IsObject(result))
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(result, "resultType");
	cJSON_AddStringToObject(result, "resultType", rtype);
	meta = cJSON_GetObjectItemCaseSensitive(result, "_meta");
	if (!cJSON_IsObject(meta)) {
		cJSON_DeleteItemFromObjectCaseSensitive(result, "_meta");
		meta = cJSON_AddObjectToObject(result, "_meta");
	}
	cJSON_DeleteItemFromObjectCaseSensitive(meta, META_SERVER);
	si = cJSON_AddObjectToObject(meta, META_SERVER);
	cJSON_AddStringToObject(si, "name", ERA_SERVER_NAME);
	cJSON_AddStringToObject(si, "version", ERA_SERVER_VERSION);
}

void
era_cacheable(cJSON *result, long long ttl_ms, const char *scope)
{
	cJSON_DeleteItemFromObjectCaseSensitive(result, "ttlMs");
	cJSON_DeleteItemFromObjectCaseSensitive(result, "cacheScope");
	cJSON_AddNumberToObject(result, "ttlMs", (double)ttl_ms);
	cJSON_AddStringToObject(result, "cacheScope", scope);
}
