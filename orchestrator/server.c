/*
 * server.c: HTTP front end. One evhttp on the main event loop; tool calls
 * and runtime operations run on workers and come back through
 * work_submit()'s completion, so a long call never blocks the loop.
 */
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "jsonu.h"
#include "log.h"
#include "mcp.h"
#include "server.h"
#include "strnum.h"
#include "tools.h"
#include "work.h"
#include "xmalloc.h"

#define NTOOLS_STAT	16

struct tool_stat {
	char			 name[40];
	unsigned long long	 ok, err;
	double			 secs;
};

struct server {
	struct event_base		*base;
	struct evhttp			*http;
	struct evhttp_bound_socket	*bound;
	const struct conf		*conf;
	struct sessmgr			*mgr;
	char				*key;
	size_t				 keylen;
	int				 draining;
	int				 inflight;	/* async requests */
	/* metrics (event loop thread only) */
	unsigned long long		 req_mcp, req_rest, req_other;
	unsigned long long		 st_2xx, st_4xx, st_5xx, st_401, st_403;
	struct tool_stat		 tools[NTOOLS_STAT];
	int				 ntools;
	unsigned long long		 n_cancelled, n_too_large;
	struct mcall			*calls;		/* MCP calls in flight */
};

static long long
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static const char *
reason(int code)
{
	switch (code) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 406: return "Not Acceptable";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 415: return "Unsupported Media Type";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	}
	return "Status";
}

static void
count_status(struct server *sv, int code)
{
	if (code < 300)
		sv->st_2xx++;
	else if (code < 500)
		sv->st_4xx++;
	else
		sv->st_5xx++;
	if (code == 401)
		sv->st_401++;
	if (code == 403)
		sv->st_403++;
}

static void
send_body(struct server *sv, struct evhttp_request *req, int code,
    const char *ctype, const char *body, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	if (ctype != NULL)
		evhttp_add_header(h, "Content-Type", ctype);
	evhttp_add_header(h, "Cache-Control", "no-store");
	if (sv->draining)
		evhttp_add_header(h, "Connection", "close");
	if (body != NULL && len > 0)
		evbuffer_add(b, body, len);
	count_status(sv, code);
	evhttp_send_reply(req, code, reason(code), b);
	evbuffer_free(b);
}

static void
send_json(struct server *sv, struct evhttp_request *req, int code, cJSON *j)
{
	char *txt = cJSON_PrintUnformatted(j);

	send_body(sv, req, code, "application/json", txt, strlen(txt));
	free(txt);
}

/* REST/other error: {"error":{"code","message"}} */
static void
send_err(struct server *sv, struct evhttp_request *req, int code,
    const char *ecode, const char *msg)
{
	cJSON *o = cJSON_CreateObject(), *e;

	e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddStringToObject(e, "code", ecode);
	cJSON_AddStringToObject(e, "message", msg);
	send_json(sv, req, code, o);
	cJSON_Delete(o);
}

/* MCP transport error: HTTP status + JSON-RPC error without id. */
static void
send_rpc_err(struct server *sv, struct evhttp_request *req, int code,
    int rpc, const char *msg)
{
	cJSON *o = mcp_error(NULL, rpc, msg);

	send_json(sv, req, code, o);
	cJSON_Delete(o);
}

static const char *
hdr(struct evhttp_request *req, const char *name)
{
	return evhttp_find_header(evhttp_request_get_input_headers(req), name);
}

/* ---- auth and origin ---- */

static int
origin_ok(struct server *sv, struct evhttp_request *req)
{
	const char *o = hdr(req, "Origin");
	size_t i;

	if (o == NULL)
		return 1;	/* not a browser */
	for (i = 0; i < sv->conf->allowed_origins.n; i++)
		if (strcmp(o, sv->conf->allowed_origins.v[i]) == 0)
			return 1;
	return 0;
}

static int
auth_ok(struct server *sv, struct evhttp_request *req)
{
	const char *a = hdr(req, "Authorization"), *tok;

	if (a == NULL || strncasecmp(a, "Bearer ", 7) != 0)
		return 0;
	for (tok = a + 7; *tok == ' '; tok++)
		;
	return jsonu_ct_equal(tok, strlen(tok), sv->key, sv->keylen);
}

static void
send_401(struct server *sv, struct evhttp_request *req, int mcp)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
	    "Bearer realm=\"orchestrator\"");
	if (mcp)
		send_rpc_err(sv, req, 401, -32000, "Unauthorized: send "
		    "Authorization: Bearer <key> with the orchestrator's key");
	else
		send_err(sv, req, 401, "unauthorized", "send Authorization: Bearer "
		    "<key> with the orchestrator's key");
}

/* ---- media types ---- */

/* Does the media-type list in h allow type ("application/json")? */
static int
accepts(const char *h, const char *type)
{
	const char *p = h, *slash = strchr(type, '/');
	size_t tl = strlen(type), ml = (size_t)(slash - type);

	while (*p != '\0') {
		const char *e = p, *semi;
		size_t n;

		while (*e != '\0' && *e != ',')
			e++;
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		semi = p;
		while (semi < e && *semi != ';')
			semi++;
		n = (size_t)(semi - p);
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		/* q=0 means "not acceptable" */
		if (semi < e) {
			const char *q = semi;
			while (q < e) {
				while (q < e && (*q == ';' || *q == ' '))
					q++;
				if ((size_t)(e - q) >= 3 && strncasecmp(q, "q=0", 3) == 0 &&
				    (q + 3 == e || q[3] == ';' || q[3] == ' ' ||
				    (q[3] == '.' && strspn(q + 4, "0") >= (size_t)(e - q - 4))))
					goto next;
				while (q < e && *q != ';')
					q++;
			}
		}
		if ((n == tl && strncasecmp(p, type, tl) == 0) ||
		    (n == 3 && strncmp(p, "*/*", 3) == 0) ||
		    (n == ml + 2 && strncasecmp(p, type, ml + 1) == 0 && p[ml + 1] == '*'))
			return 1;
next:
		p = *e == ',' ? e + 1 : e;
	}
	return 0;
}

static int
ctype_json(const char *ct)
{
	size_t n;

	if (ct == NULL)
		return 0;
	while (*ct == ' ')
		ct++;
	n = strcspn(ct, "; ");
	return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

/* ---- MCP ---- */

struct mcall {
	struct server		*sv;
	struct evhttp_request	*req;
	struct mcall		*prev, *next;	/* sv->calls: in flight */
	struct mcp_out		 out;
	size_t			 remaining;
	int			 sse;		/* reply is an SSE stream */
	struct event		*ptimer;	/* progress notifications */
	int			 progress;
	long long		 t0;
};

struct mjob {
	struct mcall	*mc;
	size_t		 i;
	long long	 t0;
};

static void
tool_stat(struct server *sv, const char *name, int is_err, double secs)
{
	int i;

	for (i = 0; i < sv->ntools; i++)
		if (strcmp(sv->tools[i].name, name) == 0)
			break;
	if (i == sv->ntools) {
		if (sv->ntools == NTOOLS_STAT)
			return;
		snprintf(sv->tools[i].name, sizeof(sv->tools[i].name), "%s", name);
		sv->ntools++;
	}
	if (is_err)
		sv->tools[i].err++;
	else
		sv->tools[i].ok++;
	sv->tools[i].secs += secs;
}

static void
sse_send(struct evhttp_request *req, cJSON *msg)
{
	struct evbuffer *b = evbuffer_new();
	char *txt = cJSON_PrintUnformatted(msg);

	evbuffer_add_printf(b, "event: message\ndata: %s\n\n", txt);
	evhttp_send_reply_chunk(req, b);
	evbuffer_free(b);
	free(txt);
}

static void
progress_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct mcall *mc = arg;
	cJSON *n, *p;
	char msg[96];

	mc->progress++;
	n = cJSON_CreateObject();
	cJSON_AddStringToObject(n, "jsonrpc", "2.0");
	cJSON_AddStringToObject(n, "method", "notifications/progress");
	p = cJSON_AddObjectToObject(n, "params");
	cJSON_AddItemToObject(p, "progressToken",
	    cJSON_Duplicate(mc->out.progress_token, 1));
	cJSON_AddNumberToObject(p, "progress", mc->progress);
	snprintf(msg, sizeof(msg), "%s still running (%llds)", mc->out.tool,
	    (mono_us() - mc->t0) / 1000000);
	cJSON_AddStringToObject(p, "message", msg);
	sse_send(mc->req, n);
	cJSON_Delete(n);
}

static void
mcall_finish(struct mcall *mc)
{
	struct server *sv = mc->sv;

	if (mc->prev != NULL)
		mc->prev->next = mc->next;
	else
		sv->calls = mc->next;
	if (mc->next != NULL)
		mc->next->prev = mc->prev;
	/* No body: every request in it was cancelled and gets no response. */
	if (mc->sse) {
		if (mc->ptimer != NULL)
			event_free(mc->ptimer);
		if (mc->out.body != NULL)
			sse_send(mc->req, mc->out.body);
		evhttp_send_reply_end(mc->req);
		count_status(sv, 200);
	} else if (mc->out.body == NULL)
		send_body(sv, mc->req, 202, NULL, NULL, 0);
	else
		send_json(sv, mc->req, mc->out.status, mc->out.body);
	mcp_out_free(&mc->out);
	free(mc);
	sv->inflight--;
}

struct cjob {
	struct server		*sv;
	struct tool_call	*tc;
};

static void
cjob_run(void *arg)
{
	struct cjob *c = arg;

	tools_cancel(c->sv->mgr, c->tc);
}

static void
cjob_done(void *arg)
{
	struct cjob *c = arg;

	tool_call_free(c->tc);	/* our reference */
	free(c);
}

/*
 * notifications/cancelled: the in-flight tools/call with that request id
 * from the same client session (X-Session-Id; every caller holds the one
 * key) stops, and gets no response. Unknown or finished ids are ignored.
 */
static void
cancel_calls(struct server *sv, const char *sid, cJSON *ids)
{
	struct mcall *mc;
	struct tool_call *tc;
	struct cjob *c;
	cJSON *id;
	size_t i;

	if (sid == NULL)
		return;
	cJSON_ArrayForEach(id, ids)
		for (mc = sv->calls; mc != NULL; mc = mc->next)
			for (i = 0; i < mc->out.npend; i++) {
				tc = mc->out.pend[i].tc;
				if (tc == NULL || strcmp(tc->sid, sid) != 0 ||
				    !cJSON_Compare(mc->out.pend[i].id, id, 1) ||
				    atomic_load(&tc->cancelled))
					continue;
				atomic_store(&tc->cancelled, 1);
				sv->n_cancelled++;
				log_info("session=%s tool=%s cancelled by the client",
				    tc->sid, tc->name);
				atomic_fetch_add(&tc->refs, 1);
				c = xcalloc(1, sizeof(*c));
				c->sv = sv;
				c->tc = tc;
				work_submit(cjob_run, cjob_done, c);
			}
}

static void
mjob_run(void *arg)
{
	struct mjob *j = arg;

	tools_run(j->mc->sv->mgr, j->mc->sv->conf, j->mc->out.pend[j->i].tc);
}

static void
mjob_done(void *arg)
{
	struct mjob *j = arg;
	struct mcall *mc = j->mc;
	struct tool_call *tc = mc->out.pend[j->i].tc;
	double secs = (double)(mono_us() - j->t0) / 1e6;

	tool_stat(mc->sv, tc->name, tc->is_error, secs);
	log_info("session=%s tool=%s ms=%.1f error=%d%s", tc->sid, tc->name,
	    secs * 1000.0, tc->is_error,
	    atomic_load(&tc->cancelled) ? " cancelled=1" : "");
	if (mcp_complete(&mc->out, j->i))
		mcall_finish(mc);
	free(j);
}

static int
hdr_id(struct evhttp_request *req, const char *name, const char **out)
{
	const char *v = hdr(req, name);

	*out = NULL;
	if (v == NULL || *v == '\0')
		return 0;
	if (!id_session_valid(v))
		return -1;
	*out = v;
	return 0;
}

static void
handle_mcp(struct server *sv, struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	const char *acc = hdr(req, "Accept"), *bad = NULL;
	struct mcp_in mi;
	struct mcall *mc;
	size_t i, len;
	int json_ok, sse_ok;

	sv->req_mcp++;
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_POST:
		break;
	case EVHTTP_REQ_GET:
		/* No server-initiated stream: 405 per the transport spec. */
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
		send_rpc_err(sv, req, 405, -32000, "Method Not Allowed: this server "
		    "offers no SSE stream on GET; send requests with POST");
		return;
	case EVHTTP_REQ_DELETE:
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
		send_rpc_err(sv, req, 405, -32000, "Method Not Allowed: this server "
		    "issues no Mcp-Session-Id, so there is no session to delete");
		return;
	default:
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
		send_rpc_err(sv, req, 405, -32000, "Method Not Allowed: use POST");
		return;
	}
	json_ok = acc == NULL || accepts(acc, "application/json");
	sse_ok = acc != NULL && accepts(acc, "text/event-stream");
	if (!json_ok && !sse_ok) {
		send_rpc_err(sv, req, 406, -32000, "Not Acceptable: the client must "
		    "accept application/json and/or text/event-stream");
		return;
	}
	if (!ctype_json(hdr(req, "Content-Type"))) {
		send_rpc_err(sv, req, 415, -32000, "Unsupported Media Type: "
		    "Content-Type must be application/json");
		return;
	}
	memset(&mi, 0, sizeof(mi));
	if (hdr_id(req, "X-Session-Id", &mi.sid) == -1)
		bad = "X-Session-Id";
	else if (hdr_id(req, "X-Org-Id", &mi.org) == -1)
		bad = "X-Org-Id";
	else if (hdr_id(req, "X-User-Id", &mi.user) == -1)
		bad = "X-User-Id";
	if (bad != NULL) {
		char msg[200];
		snprintf(msg, sizeof(msg), "Bad Request: invalid %s header (use 1-%d "
		    "characters from A-Z a-z 0-9 - _ . : @ + =)", bad, ID_SESSION_MAX);
		send_rpc_err(sv, req, 400, -32600, msg);
		return;
	}
	mi.proto = hdr(req, "MCP-Protocol-Version");
	len = evbuffer_get_length(in);
	mi.body = (const char *)evbuffer_pullup(in, -1);
	mi.len = len;
	if (mi.body == NULL)
		mi.body = "";

	mc = xcalloc(1, sizeof(*mc));
	mc->sv = sv;
	mc->req = req;
	mc->t0 = mono_us();
	mcp_dispatch(&mi, &mc->out);
	if (mc->out.cancels != NULL)
		cancel_calls(sv, mi.sid, mc->out.cancels);
	if (mc->out.npend == 0) {
		if (mc->out.status == 202)
			send_body(sv, req, 202, NULL, NULL, 0);
		else
			send_json(sv, req, mc->out.status, mc->out.body);
		mcp_out_free(&mc->out);
		free(mc);
		return;
	}
	if (sv->draining) {
		send_rpc_err(sv, req, 503, -32000, "Service Unavailable: the "
		    "orchestrator is shutting down; retry in a moment");
		mcp_out_free(&mc->out);
		free(mc);
		return;
	}
	sv->inflight++;
	mc->remaining = mc->out.npend;
	mc->next = sv->calls;
	if (sv->calls != NULL)
		sv->calls->prev = mc;
	sv->calls = mc;
	/* SSE when the client can only take SSE, or asked for progress. */
	if (!mc->out.batch && sse_ok && (!json_ok || mc->out.want_progress)) {
		struct evkeyvalq *h = evhttp_request_get_output_headers(req);
		struct timeval tv;

		mc->sse = 1;
		evhttp_add_header(h, "Content-Type", "text/event-stream");
		evhttp_add_header(h, "Cache-Control", "no-cache, no-transform");
		evhttp_add_header(h, "X-Accel-Buffering", "no");
		evhttp_send_reply_start(req, 200, "OK");
		if (mc->out.want_progress) {
			mc->ptimer = event_new(sv->base, -1, EV_PERSIST, progress_cb, mc);
			tv.tv_sec = sv->conf->progress_interval_ms / 1000;
			tv.tv_usec = (sv->conf->progress_interval_ms % 1000) * 1000;
			event_add(mc->ptimer, &tv);
		}
	}
	for (i = 0; i < mc->out.npend; i++) {
		struct mjob *j = xcalloc(1, sizeof(*j));
		j->mc = mc;
		j->i = i;
		j->t0 = mono_us();
		work_submit(mjob_run, mjob_done, j);
	}
}

/* ---- REST ---- */

enum rop { R_CREATE, R_STOP, R_START, R_DELETE };

struct rjob {
	struct server		*sv;
	struct evhttp_request	*req;
	enum rop		 op;
	char			 sid[ID_SESSION_MAX + 1];
	char			 org[ID_SESSION_MAX + 1];
	char			 user[ID_SESSION_MAX + 1];
	char			*image;
	struct sess_opts	 opts;
	int			 custom;
	/* out */
	int			 status;
	cJSON			*body;
};

static int
sess_err_http(enum sess_err e, const char **code)
{
	switch (e) {
	case SE_BAD: *code = "bad_request"; return 400;
	case SE_NOTFOUND: *code = "not_found"; return 404;
	case SE_LIMIT: *code = "limit_reached"; return 429;
	case SE_DRAINING: *code = "draining"; return 503;
	case SE_BUSY: *code = "busy"; return 409;
	case SE_AGENT: *code = "agent_error"; return 502;
	case SE_RUNTIME:
	default: *code = "runtime_error"; return 502;
	}
}

static cJSON *
err_json(const char *code, const char *msg)
{
	cJSON *o = cJSON_CreateObject(), *e;

	e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	return o;
}

static void
rjob_run(void *arg)
{
	struct rjob *r = arg;
	struct sessmgr *m = r->sv->mgr;
	enum sess_err e = SE_OK;
	const char *code;
	char err[512];
	struct sess *s;
	int rc = 0;

	switch (r->op) {
	case R_CREATE:
	case R_START:
		s = sess_get(m, r->sid, r->org, r->user, r->op == R_CREATE, &e, err,
		    sizeof(err));
		if (s == NULL) {
			rc = -1;
			break;
		}
		if (r->custom)
			rc = sess_reprovision(s, &r->opts, &e, err, sizeof(err));
		else if ((rc = sess_enter(s, &e, err, sizeof(err))) == 0)
			sess_leave(s);
		if (rc == 0) {
			r->status = r->op == R_CREATE ? 201 : 200;
			r->body = sess_json(s);
		}
		sess_put(s);
		break;
	case R_STOP:
		if ((rc = sess_stop(m, r->sid, "stopped by REST", &e, err,
		    sizeof(err))) == 0 &&
		    (s = sess_get(m, r->sid, NULL, NULL, 0, &e, err, sizeof(err))) != NULL) {
			r->status = 200;
			r->body = sess_json(s);
			sess_put(s);
		}
		break;
	case R_DELETE:
		if ((rc = sess_delete(m, r->sid, "deleted by REST", &e, err,
		    sizeof(err))) == 0) {
			r->status = 200;
			r->body = cJSON_CreateObject();
			cJSON_AddStringToObject(r->body, "deleted", r->sid);
		}
		break;
	}
	if (rc == -1 || r->body == NULL) {
		r->status = sess_err_http(e, &code);
		r->body = err_json(code, err);
	}
}

static void
rjob_done(void *arg)
{
	struct rjob *r = arg;

	send_json(r->sv, r->req, r->status, r->body);
	r->sv->inflight--;
	cJSON_Delete(r->body);
	free(r->image);
	free(r);
}

/* An id-like string field; NULL if fine, else why not. */
static const char *
rest_id_field(cJSON *j, const char *name, char *dst, size_t len, int required)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);

	if (v == NULL && !required)
		return NULL;
	if (v == NULL || !cJSON_IsString(v) || !id_session_valid(v->valuestring))
		return "id, org and user must be 1-128 characters from A-Z a-z 0-9 - _ . : @ + = (id is required)";
	snprintf(dst, len, "%s", v->valuestring);
	return NULL;
}

static void
rest_create(struct server *sv, struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	const char *body = (const char *)evbuffer_pullup(in, -1);
	cJSON *j = NULL, *v;
	struct rjob *r;
	const char *why = NULL;

	if (!ctype_json(hdr(req, "Content-Type"))) {
		send_err(sv, req, 415, "unsupported_media_type",
		    "Content-Type must be application/json");
		return;
	}
	if (body == NULL || !jsonu_utf8_valid(body, len) ||
	    (j = cJSON_ParseWithLength(body, len)) == NULL || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		send_err(sv, req, 400, "bad_json", "the body must be a JSON object");
		return;
	}
	r = xcalloc(1, sizeof(*r));
	r->sv = sv;
	r->req = req;
	r->op = R_CREATE;
	r->opts.use_kata = r->opts.run_as_root = r->opts.writable_root = -1;
	why = rest_id_field(j, "id", r->sid, sizeof(r->sid), 1);
	if (why == NULL)
		why = rest_id_field(j, "org", r->org, sizeof(r->org), 0);
	if (why == NULL)
		why = rest_id_field(j, "user", r->user, sizeof(r->user), 0);
	if (why == NULL && (v = cJSON_GetObjectItemCaseSensitive(j, "image")) != NULL) {
		if (!cJSON_IsString(v) || strlen(v->valuestring) == 0 ||
		    strlen(v->valuestring) > 255)
			why = "image must be a non-empty string";
		else {
			r->image = xstrdup(v->valuestring);
			r->opts.image = r->image;
			r->custom = 1;
		}
	}
#define BOOLF(name, dst) do {							\
	if (why != NULL) break;							\
	v = cJSON_GetObjectItemCaseSensitive(j, name);				\
	if (v == NULL) break;							\
	if (!cJSON_IsBool(v)) { why = name " must be true or false"; break; }	\
	(dst) = cJSON_IsTrue(v);						\
	r->custom = 1;								\
} while (0)
	BOOLF("use_kata", r->opts.use_kata);
	BOOLF("run_as_root", r->opts.run_as_root);
	BOOLF("writable_root", r->opts.writable_root);
#undef BOOLF
	cJSON_Delete(j);
	if (why != NULL) {
		send_err(sv, req, 400, "bad_request", why);
		free(r->image);
		free(r);
		return;
	}
	sv->inflight++;
	work_submit(rjob_run, rjob_done, r);
}

static void
handle_rest(struct server *sv, struct evhttp_request *req, const char *path)
{
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	const char *rest = path + strlen("/v1/sessions");
	char *sid = NULL;
	struct rjob *r;
	struct sess *s;
	enum sess_err e;
	char err[256];
	const char *code = NULL, *op = NULL;

	sv->req_rest++;
	if (*rest == '\0' || strcmp(rest, "/") == 0) {
		if (cmd == EVHTTP_REQ_GET) {
			const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
			const char *q = evhttp_uri_get_query(u);
			struct evkeyvalq kv;
			const char *org = NULL, *user = NULL, *state = NULL;
			cJSON *o;

			TAILQ_INIT(&kv);
			if (q != NULL && evhttp_parse_query_str(q, &kv) == -1) {
				send_err(sv, req, 400, "bad_request", "malformed query string");
				return;
			}
			org = evhttp_find_header(&kv, "org");
			user = evhttp_find_header(&kv, "user");
			state = evhttp_find_header(&kv, "state");
			if (state != NULL && strcmp(state, "running") != 0 &&
			    strcmp(state, "stopped") != 0 &&
			    strcmp(state, "provisioning") != 0) {
				evhttp_clear_headers(&kv);
				send_err(sv, req, 400, "bad_request",
				    "state must be running, stopped or provisioning");
				return;
			}
			o = cJSON_CreateObject();
			cJSON_AddItemToObject(o, "sessions",
			    sessmgr_list_json(sv->mgr, org, user, state));
			evhttp_clear_headers(&kv);
			send_json(sv, req, 200, o);
			cJSON_Delete(o);
			return;
		}
		if (cmd == EVHTTP_REQ_POST) {
			if (sv->draining) {
				send_err(sv, req, 503, "draining", "shutting down");
				return;
			}
			rest_create(sv, req);
			return;
		}
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, POST");
		send_err(sv, req, 405, "method_not_allowed", "use GET or POST");
		return;
	}
	if (*rest != '/') {
		send_err(sv, req, 404, "not_found", "no such endpoint");
		return;
	}
	rest++;
	{
		const char *slash = strchr(rest, '/');
		size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
		char raw[3 * ID_SESSION_MAX + 1];

		if (n == 0 || n >= sizeof(raw)) {
			send_err(sv, req, 400, "bad_request", "invalid session id");
			return;
		}
		memcpy(raw, rest, n);
		raw[n] = '\0';
		sid = evhttp_uridecode(raw, 0, NULL);
		if (sid == NULL || !id_session_valid(sid)) {
			free(sid);
			send_err(sv, req, 400, "bad_request", "invalid session id");
			return;
		}
		op = slash ? slash + 1 : NULL;
	}
	if (op == NULL && cmd == EVHTTP_REQ_GET) {
		if ((s = sess_get(sv->mgr, sid, NULL, NULL, 0, &e, err, sizeof(err))) == NULL) {
			int st = sess_err_http(e, &code);
			send_err(sv, req, st, code, err);
		} else {
			cJSON *o = sess_json(s);
			sess_put(s);
			send_json(sv, req, 200, o);
			cJSON_Delete(o);
		}
		free(sid);
		return;
	}
	r = xcalloc(1, sizeof(*r));
	r->sv = sv;
	r->req = req;
	snprintf(r->sid, sizeof(r->sid), "%s", sid);
	free(sid);
	if (op == NULL && cmd == EVHTTP_REQ_DELETE)
		r->op = R_DELETE;
	else if (op != NULL && strcmp(op, "stop") == 0 && cmd == EVHTTP_REQ_POST)
		r->op = R_STOP;
	else if (op != NULL && strcmp(op, "start") == 0 && cmd == EVHTTP_REQ_POST)
		r->op = R_START;
	else {
		free(r);
		if (op == NULL || strcmp(op, "stop") == 0 || strcmp(op, "start") == 0) {
			evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
			    op == NULL ? "GET, DELETE" : "POST");
			send_err(sv, req, 405, "method_not_allowed",
			    op == NULL ? "use GET or DELETE" : "use POST");
		} else
			send_err(sv, req, 404, "not_found", "no such endpoint");
		return;
	}
	sv->inflight++;
	work_submit(rjob_run, rjob_done, r);
}

/* ---- metrics ---- */

static void
handle_metrics(struct server *sv, struct evhttp_request *req)
{
	struct buf b;
	int i, r = 0, wt, wb, wq;

	work_stats(&wt, &wb, &wq);
	buf_init(&b, 1 << 20);
	r |= buf_addf(&b, "# HELP orch_http_requests_total HTTP requests by endpoint.\n"
	    "# TYPE orch_http_requests_total counter\n"
	    "orch_http_requests_total{endpoint=\"mcp\"} %llu\n"
	    "orch_http_requests_total{endpoint=\"rest\"} %llu\n"
	    "orch_http_requests_total{endpoint=\"other\"} %llu\n",
	    sv->req_mcp, sv->req_rest, sv->req_other);
	r |= buf_addf(&b, "# HELP orch_http_responses_total HTTP responses by status class.\n"
	    "# TYPE orch_http_responses_total counter\n"
	    "orch_http_responses_total{class=\"2xx\"} %llu\n"
	    "orch_http_responses_total{class=\"4xx\"} %llu\n"
	    "orch_http_responses_total{class=\"5xx\"} %llu\n"
	    "# HELP orch_auth_failures_total Requests refused for a missing or wrong key.\n"
	    "# TYPE orch_auth_failures_total counter\norch_auth_failures_total %llu\n"
	    "# HELP orch_origin_rejected_total Requests refused for their Origin.\n"
	    "# TYPE orch_origin_rejected_total counter\norch_origin_rejected_total %llu\n",
	    sv->st_2xx, sv->st_4xx, sv->st_5xx, sv->st_401, sv->st_403);
	r |= buf_addf(&b, "# HELP orch_tool_calls_total MCP tool calls by tool and outcome.\n"
	    "# TYPE orch_tool_calls_total counter\n");
	for (i = 0; i < sv->ntools; i++)
		r |= buf_addf(&b, "orch_tool_calls_total{tool=\"%s\",outcome=\"ok\"} %llu\n"
		    "orch_tool_calls_total{tool=\"%s\",outcome=\"error\"} %llu\n",
		    sv->tools[i].name, sv->tools[i].ok, sv->tools[i].name,
		    sv->tools[i].err);
	r |= buf_addf(&b, "# HELP orch_tool_calls_cancelled_total Tool calls "
	    "cancelled by the client (notifications/cancelled).\n"
	    "# TYPE orch_tool_calls_cancelled_total counter\n"
	    "orch_tool_calls_cancelled_total %llu\n", sv->n_cancelled);
	r |= buf_addf(&b, "# HELP orch_tool_call_seconds_sum Time spent in tool calls.\n"
	    "# TYPE orch_tool_call_seconds_sum counter\n");
	for (i = 0; i < sv->ntools; i++)
		r |= buf_addf(&b, "orch_tool_call_seconds_sum{tool=\"%s\"} %.6f\n",
		    sv->tools[i].name, sv->tools[i].secs);
	r |= buf_addf(&b, "# HELP orch_inflight_requests Requests waiting for a worker result.\n"
	    "# TYPE orch_inflight_requests gauge\norch_inflight_requests %d\n"
	    "# HELP orch_worker_threads Worker threads alive.\n"
	    "# TYPE orch_worker_threads gauge\norch_worker_threads %d\n"
	    "# HELP orch_worker_busy Worker threads running work.\n"
	    "# TYPE orch_worker_busy gauge\norch_worker_busy %d\n"
	    "# HELP orch_worker_queued Work items waiting for a thread.\n"
	    "# TYPE orch_worker_queued gauge\norch_worker_queued %d\n",
	    sv->inflight, wt, wb, wq);
	r |= sessmgr_metrics(sv->mgr, &b);
	if (r != 0) {
		buf_free(&b);
		send_err(sv, req, 500, "internal", "metrics too large");
		return;
	}
	send_body(sv, req, 200, "text/plain; version=0.0.4", b.p, b.len);
	buf_free(&b);
}

/* ---- oversized bodies ----
 *
 * libevent answers a body over its limit with its own HTML page. To answer
 * with our JSON errors instead, every connection's input is watched as it
 * arrives, before evhttp parses it (an evbuffer callback on the input of the
 * bufferevent we make for evhttp): the request framing is tracked (request
 * line, the Content-Length and Transfer-Encoding headers, body length), and
 * a head announcing a body over http.max_body is answered at once with 413
 * and a JSON body (JSON-RPC error on /mcp, the REST error elsewhere), the
 * write side is shut and whatever else the client sends is discarded until
 * it closes, so evhttp never sees that request. Chunked bodies are left to
 * evhttp's own limit. State is per fd (a generation tells connections
 * apart), so nothing needs freeing when evhttp frees a connection.
 */

enum hs_state { HS_HEAD, HS_BODY, HS_PASS, HS_SINK };

struct hstream {
	const void	*bev;		/* whose state this is */
	long long	 sv_max;	/* http.max_body */
	unsigned char	 st;
	unsigned char	 nlines;	/* lines of this head seen (capped) */
	unsigned char	 has_body;	/* POST, PUT, PATCH */
	unsigned char	 chunked;
	unsigned char	 mcp;		/* request target starts with /mcp */
	char		 line[48];	/* the line so far (first bytes) */
	size_t		 llen;
	long long	 clen;		/* -1: none */
	unsigned long long left;	/* HS_BODY: body bytes to skip */
};

static struct hstream *hs_tab;
static size_t hs_n;
static struct server *hs_sv;

static struct hstream *
hs_get(int fd, const void *bev)
{
	struct hstream *h;

	if (fd < 0 || fd > (1 << 22))
		return NULL;
	if ((size_t)fd >= hs_n) {
		size_t n = (size_t)fd + 64;
		hs_tab = xreallocarray(hs_tab, n, sizeof(*hs_tab));
		memset(hs_tab + hs_n, 0, (n - hs_n) * sizeof(*hs_tab));
		hs_n = n;
	}
	h = &hs_tab[fd];
	if (h->bev != bev) {
		memset(h, 0, sizeof(*h));
		h->bev = bev;
		h->clen = -1;
		h->sv_max = hs_sv->conf->max_body;
	}
	return h;
}

static int
hs_prefix(const char *l, size_t n, const char *p)
{
	size_t pl = strlen(p);

	return n >= pl && strncasecmp(l, p, pl) == 0;
}

/* One complete line of a head (without CR LF); 1: the head ended. */
static int
hs_line(struct hstream *h, const char *l, size_t n)
{
	const char *v, *es;
	long long cl;
	char num[32];
	size_t k;

	if (n == 0)
		return h->nlines > 0;	/* blank lines before a request: skip */
	if (h->nlines < 255)
		h->nlines++;
	if (h->nlines == 1) {
		h->has_body = hs_prefix(l, n, "POST ") || hs_prefix(l, n, "PUT ") ||
		    hs_prefix(l, n, "PATCH ");
		v = memchr(l, ' ', n);
		h->mcp = v != NULL && (size_t)(v - l) + 5 <= n &&
		    strncmp(v + 1, "/mcp", 4) == 0;
		return 0;
	}
	if (hs_prefix(l, n, "content-length:")) {
		v = l + 15;
		while (v < l + n && (*v == ' ' || *v == '\t'))
			v++;
		k = (size_t)(l + n - v);
		while (k > 0 && (v[k - 1] == ' ' || v[k - 1] == '\t'))
			k--;
		if (k > 0 && k < sizeof(num)) {
			memcpy(num, v, k);
			num[k] = '\0';
			if (strnum_ll(num, 0, LLONG_MAX, &cl, &es) == 0)
				h->clen = cl;
		}
	} else if (hs_prefix(l, n, "transfer-encoding:"))
		h->chunked = 1;
	return 0;
}

static void
hs_too_large(struct bufferevent *bev, struct evbuffer *in, struct hstream *h)
{
	struct server *sv = hs_sv;
	char msg[200], head[256];
	cJSON *o;
	char *body;
	int fd = (int)bufferevent_getfd(bev), n;

	snprintf(msg, sizeof(msg), "Payload Too Large: the request body is %lld "
	    "bytes; the limit is %lld bytes (http.max_body)", h->clen,
	    sv->conf->max_body);
	if (h->mcp)
		o = mcp_error(NULL, -32000, msg);
	else
		o = err_json("too_large", msg);
	body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	n = snprintf(head, sizeof(head), "HTTP/1.1 413 Payload Too Large\r\n"
	    "Content-Type: application/json\r\nCache-Control: no-store\r\n"
	    "Connection: close\r\nContent-Length: %zu\r\n\r\n", strlen(body));
	/* Nothing else is being written (checked by the caller). */
	if (send(fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n ||
	    send(fd, body, strlen(body), MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    (ssize_t)strlen(body))
		log_debug("413 reply not sent whole");
	(void)shutdown(fd, SHUT_WR);
	free(body);
	count_status(sv, 413);
	sv->n_too_large++;
	log_info("413: request body of %lld bytes refused (limit %lld)", h->clen,
	    sv->conf->max_body);
	h->st = HS_SINK;
	evbuffer_drain(in, evbuffer_get_length(in));
}

static void
hs_input_cb(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
	struct bufferevent *bev = arg;
	struct hstream *h;
	struct evbuffer_ptr pos;
	struct evbuffer_iovec vec[16];
	size_t total, i, j, take;
	int nvec, k;
	const char *p;

	if (info->n_added == 0)
		return;
	if ((h = hs_get((int)bufferevent_getfd(bev), bev)) == NULL)
		return;
	if (h->st == HS_SINK) {
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	if (h->st == HS_PASS)
		return;
	total = evbuffer_get_length(in);
	if (info->n_added > total ||
	    evbuffer_ptr_set(in, &pos, total - info->n_added, EVBUFFER_PTR_SET) == -1)
		return;
	/* Walk the new bytes, 16 segments at a time. */
	for (i = total - info->n_added; i < total;) {
		if (evbuffer_ptr_set(in, &pos, i, EVBUFFER_PTR_SET) == -1)
			return;
		nvec = evbuffer_peek(in, (ev_ssize_t)(total - i), &pos, vec, 16);
		if (nvec <= 0)
			return;
		if (nvec > 16)
			nvec = 16;
		for (k = 0; k < nvec && i < total; k++) {
			p = vec[k].iov_base;
			take = vec[k].iov_len;
			if (take > total - i)
				take = total - i;
			for (j = 0; j < take; j++) {
				if (h->st == HS_BODY) {
					size_t skip = take - j;
					if ((unsigned long long)skip > h->left)
						skip = (size_t)h->left;
					h->left -= skip;
					j += skip - 1;
					if (h->left == 0)
						h->st = HS_HEAD;
					continue;
				}
				if (h->st != HS_HEAD)
					return;
				if (p[j] != '\n') {
					if (h->llen < sizeof(h->line))
						h->line[h->llen] = p[j];
					h->llen++;
					continue;
				}
				{
					size_t n = h->llen < sizeof(h->line) ?
					    h->llen : sizeof(h->line);
					if (h->llen <= sizeof(h->line) && n > 0 &&
					    h->line[n - 1] == '\r')
						n--;
					h->llen = 0;
					if (!hs_line(h, h->line, n))
						continue;
				}
				/* The head ended. */
				if (h->chunked && h->has_body) {
					h->st = HS_PASS;	/* evhttp's limit */
					return;
				}
				if (h->has_body && h->clen > h->sv_max) {
					/* A reply still being written (pipelining):
					 * ours must not overtake it; evhttp's page. */
					if (evbuffer_get_length(
					    bufferevent_get_output(bev)) > 0)
						h->st = HS_PASS;
					else
						hs_too_large(bev, in, h);
					return;
				}
				if (h->has_body && h->clen > 0) {
					h->st = HS_BODY;
					h->left = (unsigned long long)h->clen;
				}
				h->nlines = 0;
				h->clen = -1;
				h->chunked = h->has_body = h->mcp = 0;
			}
			i += take;
		}
	}
}

/* evhttp's bufferevent for each new connection, with the input watched. */
static struct bufferevent *
hs_bevcb(struct event_base *base, void *arg UNUSED)
{
	struct bufferevent *bev;
	size_t i;

	if ((bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE)) == NULL)
		return NULL;
	/* A freed connection's bufferevent may have had this address. */
	for (i = 0; i < hs_n; i++)
		if (hs_tab[i].bev == bev)
			hs_tab[i].bev = NULL;
	evbuffer_add_cb(bufferevent_get_input(bev), hs_input_cb, bev);
	return bev;
}

/* ---- dispatch ---- */

static void
http_cb(struct evhttp_request *req, void *arg)
{
	struct server *sv = arg;
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	const char *path = u ? evhttp_uri_get_path(u) : NULL;
	int is_mcp;

	if (path == NULL || *path == '\0')
		path = "/";
	if (strcmp(path, "/healthz") == 0) {
		sv->req_other++;
		send_body(sv, req, 200, "application/json", "{\"ok\":true}\n", 12);
		return;
	}
	if (strcmp(path, "/readyz") == 0) {
		sv->req_other++;
		if (!sv->draining && sessmgr_ready(sv->mgr))
			send_body(sv, req, 200, "application/json", "{\"ready\":true}\n", 15);
		else
			send_err(sv, req, 503, sv->draining ? "draining" : "not_ready",
			    sv->draining ? "shutting down" : "reconciling with the runtime");
		return;
	}
	is_mcp = strcmp(path, "/mcp") == 0 || strcmp(path, "/mcp/") == 0;
	if (!origin_ok(sv, req)) {
		if (is_mcp)
			send_rpc_err(sv, req, 403, -32000, "Forbidden: Origin not allowed");
		else
			send_err(sv, req, 403, "forbidden_origin", "Origin not allowed");
		return;
	}
	if (!auth_ok(sv, req)) {
		send_401(sv, req, is_mcp);
		return;
	}
	if (is_mcp) {
		handle_mcp(sv, req);
		return;
	}
	if (strncmp(path, "/v1/sessions", 12) == 0) {
		handle_rest(sv, req, path);
		return;
	}
	sv->req_other++;
	if (strcmp(path, "/metrics") == 0) {
		handle_metrics(sv, req);
		return;
	}
	send_err(sv, req, 404, "not_found", "no such endpoint (try /mcp, "
	    "/v1/sessions, /healthz, /readyz, /metrics)");
}

struct server *
server_new(struct event_base *base, const struct conf *conf,
    struct sessmgr *mgr, const char *key, char *err, size_t errlen)
{
	struct server *sv = xcalloc(1, sizeof(*sv));
	char host[256];
	const char *colon;
	long long port;
	const char *es;

	sv->base = base;
	sv->conf = conf;
	sv->mgr = mgr;
	sv->key = xstrdup(key);
	sv->keylen = strlen(key);
	if ((sv->http = evhttp_new(base)) == NULL) {
		snprintf(err, errlen, "evhttp_new failed");
		goto fail;
	}
	evhttp_set_max_body_size(sv->http, (ev_ssize_t)conf->max_body);
	evhttp_set_max_headers_size(sv->http, (ev_ssize_t)conf->max_headers);
	evhttp_set_timeout(sv->http, (int)(conf->http_timeout_ms / 1000));
	evhttp_set_allowed_methods(sv->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_DELETE | EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH |
	    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_HEAD);
	evhttp_set_gencb(sv->http, http_cb, sv);
	hs_sv = sv;
	evhttp_set_bevcb(sv->http, hs_bevcb, NULL);
	if ((colon = strrchr(conf->listen, ':')) == NULL ||
	    (size_t)(colon - conf->listen) >= sizeof(host) ||
	    strnum_ll(colon + 1, 1, 65535, &port, &es) == -1) {
		snprintf(err, errlen, "listen: expected host:port, got '%s'", conf->listen);
		goto fail;
	}
	memcpy(host, conf->listen, (size_t)(colon - conf->listen));
	host[colon - conf->listen] = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	if ((sv->bound = evhttp_bind_socket_with_handle(sv->http, host,
	    (ev_uint16_t)port)) == NULL) {
		snprintf(err, errlen, "cannot listen on %s", conf->listen);
		goto fail;
	}
	/*
	 * Small replies on keep-alive connections must not wait for the
	 * client's delayed ACK (Nagle): accepted sockets inherit this.
	 */
	{
		int one = 1;
		evutil_socket_t fd = evhttp_bound_socket_get_fd(sv->bound);

		if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
			log_warn("listen: TCP_NODELAY");
	}
	return sv;
fail:
	server_free(sv);
	return NULL;
}

void
server_drain(struct server *sv)
{
	sv->draining = 1;
	if (sv->bound != NULL) {
		evhttp_del_accept_socket(sv->http, sv->bound);
		sv->bound = NULL;
	}
}

int
server_inflight(struct server *sv)
{
	return sv->inflight;
}

void
server_free(struct server *sv)
{
	if (sv == NULL)
		return;
	if (sv->http != NULL)
		evhttp_free(sv->http);
	if (sv->key != NULL) {
		explicit_bzero(sv->key, sv->keylen);
		free(sv->key);
	}
	free(sv);
}
