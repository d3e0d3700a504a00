/*
 * mcp_http.c: MCP over Streamable HTTP (mcp_http.h): the transport rules
 * (POST only, Accept and Content-Type, the X-Session-Id/X-Org-Id/X-User-Id
 * headers: X-Session-Id on every POST, initialize included), JSON or SSE replies with progress notifications, cancellation
 * of calls in flight, and the per-tool counters. The JSON-RPC itself is
 * mcp.c (pure); each tool call runs on a worker (tools.h) and the reply
 * goes out when the last call of the POST completes.
 *
 * Rules: everything here runs on the event loop thread; a call holds one
 * http_inflight_add() from the POST until its reply ends; a cancelled call
 * keeps its slot until its worker returns (the tool_call is refcounted).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <cjson/cJSON.h>

#include "http.h"
#include "log.h"
#include "mcp.h"
#include "mcp_http.h"
#include "tools.h"
#include "util.h"
#include "work.h"
#include "xmalloc.h"

/* Tools counted by name in the metrics (there are fewer). */
#define NTOOLS_STAT	16

struct tool_stat {
	char			 name[40];
	unsigned long long	 ok, err;
	double			 secs;
};

struct mcp_front {
	struct sessmgr		*mgr;
	const struct conf	*conf;
	struct mcall		*calls;		/* in flight */
	struct tool_stat	 tools[NTOOLS_STAT];
	int			 ntools;
	unsigned long long	 n_cancelled;
};

struct mcall {
	struct mcp_front	*fr;
	struct http		*ht;
	struct evhttp_request	*req;
	struct mcall		*prev, *next;	/* fr->calls: in flight */
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

struct cjob {
	struct mcp_front	*fr;
	struct tool_call	*tc;
};

/* MCP transport error: HTTP status + JSON-RPC error without id. */
static void
send_rpc_err(struct http *ht, struct evhttp_request *req, int code,
    int rpc, const char *msg)
{
	cJSON *o = mcp_error(NULL, rpc, msg);

	http_send_json(ht, req, code, o);
	cJSON_Delete(o);
}

cJSON *
mcp_http_error(int status, const char *code UNUSED, const char *msg)
{
	char m[512];

	snprintf(m, sizeof(m), "%s%s", status == 401 ? "Unauthorized: " :
	    status == 403 ? "Forbidden: " : "", msg);
	return mcp_error(NULL, -32000, m);
}

static void
tool_stat(struct mcp_front *fr, const char *name, int is_err, double secs)
{
	int i;

	for (i = 0; i < fr->ntools; i++)
		if (strcmp(fr->tools[i].name, name) == 0)
			break;
	if (i == fr->ntools) {
		if (fr->ntools == NTOOLS_STAT)
			return;
		snprintf(fr->tools[i].name, sizeof(fr->tools[i].name), "%s", name);
		fr->ntools++;
	}
	if (is_err)
		fr->tools[i].err++;
	else
		fr->tools[i].ok++;
	fr->tools[i].secs += secs;
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
	    (util_mono_us() - mc->t0) / 1000000);
	cJSON_AddStringToObject(p, "message", msg);
	sse_send(mc->req, n);
	cJSON_Delete(n);
}

static void
mcall_finish(struct mcall *mc)
{
	struct mcp_front *fr = mc->fr;
	struct http *ht = mc->ht;

	if (mc->prev != NULL)
		mc->prev->next = mc->next;
	else
		fr->calls = mc->next;
	if (mc->next != NULL)
		mc->next->prev = mc->prev;
	/* No body: every request in it was cancelled and gets no response. */
	if (mc->sse) {
		if (mc->ptimer != NULL)
			event_free(mc->ptimer);
		if (mc->out.body != NULL)
			sse_send(mc->req, mc->out.body);
		evhttp_send_reply_end(mc->req);
		http_count_status(ht, 200);
	} else if (mc->out.body == NULL)
		http_send_body(ht, mc->req, 202, NULL, NULL, 0);
	else
		http_send_json(ht, mc->req, mc->out.status, mc->out.body);
	mcp_out_free(&mc->out);
	free(mc);
	http_inflight_add(ht, -1);
}

static void
cjob_run(void *arg)
{
	struct cjob *c = arg;

	tools_cancel(c->fr->mgr, c->tc);
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
cancel_calls(struct mcp_front *fr, const char *sid, cJSON *ids)
{
	struct mcall *mc;
	struct tool_call *tc;
	struct cjob *c;
	cJSON *id;
	size_t i;

	if (sid == NULL)
		return;
	cJSON_ArrayForEach(id, ids)
		for (mc = fr->calls; mc != NULL; mc = mc->next)
			for (i = 0; i < mc->out.npend; i++) {
				tc = mc->out.pend[i].tc;
				if (tc == NULL || strcmp(tc->sid, sid) != 0 ||
				    !cJSON_Compare(mc->out.pend[i].id, id, 1) ||
				    atomic_load(&tc->cancelled))
					continue;
				atomic_store(&tc->cancelled, 1);
				fr->n_cancelled++;
				log_info("session=%s tool=%s cancelled by the client",
				    tc->sid, tc->name);
				atomic_fetch_add(&tc->refs, 1);
				c = xcalloc(1, sizeof(*c));
				c->fr = fr;
				c->tc = tc;
				work_submit(cjob_run, cjob_done, c);
			}
}

static void
mjob_run(void *arg)
{
	struct mjob *j = arg;

	tools_run(j->mc->fr->mgr, j->mc->fr->conf, j->mc->out.pend[j->i].tc);
}

static void
mjob_done(void *arg)
{
	struct mjob *j = arg;
	struct mcall *mc = j->mc;
	struct tool_call *tc = mc->out.pend[j->i].tc;
	double secs = (double)(util_mono_us() - j->t0) / 1e6;

	tool_stat(mc->fr, tc->name, tc->is_error, secs);
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
	const char *v = http_hdr(req, name);

	*out = NULL;
	if (v == NULL || *v == '\0')
		return 0;
	if (!id_session_valid(v))
		return -1;
	*out = v;
	return 0;
}

void
mcp_http_handle(struct http *ht, struct evhttp_request *req,
    const char *path UNUSED, void *arg)
{
	struct mcp_front *fr = arg;
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	const char *acc = http_hdr(req, "Accept"), *bad = NULL;
	struct mcp_in mi;
	struct mcall *mc;
	size_t i, len;
	int json_ok, sse_ok;

	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_POST:
		break;
	case EVHTTP_REQ_GET:
		/* No server-initiated stream: 405 per the transport spec. */
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
		send_rpc_err(ht, req, 405, -32000, "Method Not Allowed: this server "
		    "offers no SSE stream on GET; send requests with POST");
		return;
	case EVHTTP_REQ_DELETE:
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
		send_rpc_err(ht, req, 405, -32000, "Method Not Allowed: this server "
		    "issues no Mcp-Session-Id, so there is no session to delete");
		return;
	default:
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
		send_rpc_err(ht, req, 405, -32000, "Method Not Allowed: use POST");
		return;
	}
	json_ok = acc == NULL || http_accepts(acc, "application/json");
	sse_ok = acc != NULL && http_accepts(acc, "text/event-stream");
	if (!json_ok && !sse_ok) {
		send_rpc_err(ht, req, 406, -32000, "Not Acceptable: the client must "
		    "accept application/json and/or text/event-stream");
		return;
	}
	if (!http_ctype_json(http_hdr(req, "Content-Type"))) {
		send_rpc_err(ht, req, 415, -32000, "Unsupported Media Type: "
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
		send_rpc_err(ht, req, 400, -32600, msg);
		return;
	}
	if (mi.sid == NULL) {
		char msg[300];
		snprintf(msg, sizeof(msg), "Bad Request: the X-Session-Id header is "
		    "missing; every request to this server (initialize and tools/list "
		    "too) must carry it: 1-%d characters from A-Z a-z 0-9 - _ . : @ + "
		    "=, naming this session's sandbox", ID_SESSION_MAX);
		send_rpc_err(ht, req, 400, -32600, msg);
		return;
	}
	mi.proto = http_hdr(req, "MCP-Protocol-Version");
	len = evbuffer_get_length(in);
	mi.body = (const char *)evbuffer_pullup(in, -1);
	mi.len = len;
	if (mi.body == NULL)
		mi.body = "";

	mc = xcalloc(1, sizeof(*mc));
	mc->fr = fr;
	mc->ht = ht;
	mc->req = req;
	mc->t0 = util_mono_us();
	mcp_dispatch(&mi, &mc->out);
	if (mc->out.cancels != NULL)
		cancel_calls(fr, mi.sid, mc->out.cancels);
	if (mc->out.npend == 0) {
		if (mc->out.status == 202)
			http_send_body(ht, req, 202, NULL, NULL, 0);
		else
			http_send_json(ht, req, mc->out.status, mc->out.body);
		mcp_out_free(&mc->out);
		free(mc);
		return;
	}
	if (http_draining(ht)) {
		send_rpc_err(ht, req, 503, -32000, "Service Unavailable: the "
		    "orchestrator is shutting down; retry in a moment");
		mcp_out_free(&mc->out);
		free(mc);
		return;
	}
	http_inflight_add(ht, 1);
	mc->remaining = mc->out.npend;
	mc->next = fr->calls;
	if (fr->calls != NULL)
		fr->calls->prev = mc;
	fr->calls = mc;
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
			mc->ptimer = event_new(http_base(ht), -1, EV_PERSIST, progress_cb, mc);
			tv.tv_sec = fr->conf->progress_interval_ms / 1000;
			tv.tv_usec = (fr->conf->progress_interval_ms % 1000) * 1000;
			event_add(mc->ptimer, &tv);
		}
	}
	for (i = 0; i < mc->out.npend; i++) {
		struct mjob *j = xcalloc(1, sizeof(*j));
		j->mc = mc;
		j->i = i;
		j->t0 = util_mono_us();
		work_submit(mjob_run, mjob_done, j);
	}
}

struct mcp_front *
mcp_front_new(struct sessmgr *mgr, const struct conf *conf)
{
	struct mcp_front *fr = xcalloc(1, sizeof(*fr));

	fr->mgr = mgr;
	fr->conf = conf;
	return fr;
}

void
mcp_front_free(struct mcp_front *fr)
{
	free(fr);
}

int
mcp_front_metrics(const struct mcp_front *fr, struct buf *b)
{
	int i, r = 0;

	r |= buf_addf(b, "# HELP orch_tool_calls_total MCP tool calls by tool and outcome.\n"
	    "# TYPE orch_tool_calls_total counter\n");
	for (i = 0; i < fr->ntools; i++)
		r |= buf_addf(b, "orch_tool_calls_total{tool=\"%s\",outcome=\"ok\"} %llu\n"
		    "orch_tool_calls_total{tool=\"%s\",outcome=\"error\"} %llu\n",
		    fr->tools[i].name, fr->tools[i].ok, fr->tools[i].name,
		    fr->tools[i].err);
	r |= buf_addf(b, "# HELP orch_tool_calls_cancelled_total Tool calls "
	    "cancelled by the client (notifications/cancelled).\n"
	    "# TYPE orch_tool_calls_cancelled_total counter\n"
	    "orch_tool_calls_cancelled_total %llu\n", fr->n_cancelled);
	r |= buf_addf(b, "# HELP orch_tool_call_seconds_sum Time spent in tool calls.\n"
	    "# TYPE orch_tool_call_seconds_sum counter\n");
	for (i = 0; i < fr->ntools; i++)
		r |= buf_addf(b, "orch_tool_call_seconds_sum{tool=\"%s\"} %.6f\n",
		    fr->tools[i].name, fr->tools[i].secs);
	return r ? -1 : 0;
}
