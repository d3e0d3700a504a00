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
 *
 * A session has at most limits.session_calls calls in flight (work.h
 * counts them per session id, with the REST operations): a call beyond
 * gets a tool error at once. A client that disconnects cancels its calls
 * in flight as notifications/cancelled does (HTTP_ABORT_GONE), so the
 * session's next call does not find its shell busy. At the drain deadline
 * (HTTP_ABORT_DEADLINE) each call still running is answered with a
 * JSON-RPC error (mcp_abort_body) and forgotten; its worker's late result
 * is dropped.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <cjson/cJSON.h>

#include "http/http.h"
#include "log.h"
#include "mcp.h"
#include "mcp_http.h"
#include "tasks.h"
#include "tools.h"
#include "util.h"
#include "lib/work.h"
#include "xmalloc.h"

/* Tools counted by name in the metrics (there are fewer). */
#define NTOOLS_STAT	32

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
	unsigned long long	 n_refused;	/* over limits.session_calls */
	unsigned long long	 n_tasks;	/* calls answered with a task */
};

struct mcall {
	struct mcp_front	*fr;
	struct http		*ht;
	struct http_req		*req;		/* NULL once answered (deadline) */
	struct mcall		*prev, *next;	/* fr->calls: in flight */
	int			 aborted;	/* answered at the drain deadline */
	struct mcp_out		 out;
	size_t			 remaining;
	int			 sse;		/* reply is an SSE stream */
	struct event		*ptimer;	/* progress notifications */
	int			 progress;
	long long		 t0;
	struct event		*ttimer;	/* tools.task_after: becomes a task */
	int			 tasked;	/* answered with a task handle: its
						 * call's result goes nowhere */
	long long		 t0_unix;
};

struct mjob {
	struct mcall	*mc;
	size_t		 i;
	long long	 t0;
	int		 refused;	/* over the session's cap: not run */
};

struct cjob {
	struct mcp_front	*fr;
	struct tool_call	*tc;
};

/* MCP transport error: HTTP status + JSON-RPC error without id. */
static void
send_rpc_err(struct http *ht, struct http_req *req, int code,
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
sse_send(struct http_req *req, cJSON *msg)
{
	char *txt = cJSON_PrintUnformatted(msg), *ev;
	size_t n = strlen(txt) + 32;

	ev = xmalloc(n);
	snprintf(ev, n, "event: message\ndata: %s\n\n", txt);
	http_stream_chunk(req, ev, strlen(ev));
	free(ev);
	free(txt);
}

static void
progress_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct mcall *mc = arg;
	cJSON *n, *p;
	char msg[96], *live;

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
	/* a shell call's latest output lines, when it has them */
	live = mc->out.npend == 1 ? toollive_progress_text(mc->out.pend[0].tc,
	    msg) : NULL;
	cJSON_AddStringToObject(p, "message", live != NULL ? live : msg);
	free(live);
	sse_send(mc->req, n);
	cJSON_Delete(n);
}

/* Off the list of calls in flight, the progress timer stopped. */
static void
mcall_unlink(struct mcall *mc)
{
	struct mcp_front *fr = mc->fr;

	if (mc->prev != NULL)
		mc->prev->next = mc->next;
	else
		fr->calls = mc->next;
	if (mc->next != NULL)
		mc->next->prev = mc->prev;
	mc->prev = mc->next = NULL;
	if (mc->ptimer != NULL)
		event_free(mc->ptimer);
	mc->ptimer = NULL;
	if (mc->ttimer != NULL)
		event_free(mc->ttimer);
	mc->ttimer = NULL;
}

static void
mcall_finish(struct mcall *mc)
{
	struct http *ht = mc->ht;

	if (mc->aborted || mc->tasked) {
		/* answered at the drain deadline, or with a task handle (the
		 * agent keeps the result for tasks/get) */
		mcp_out_free(&mc->out);
		free(mc);
		return;
	}
	mcall_unlink(mc);
	/* No body: every request in it was cancelled and gets no response. */
	if (mc->sse) {
		if (mc->out.body != NULL)
			sse_send(mc->req, mc->out.body);
		http_stream_end(ht, mc->req);
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

	tools_call_free(c->tc);	/* our reference */
	free(c);
}

/* Cancels tc (running on a worker) as notifications/cancelled does. */
static void
cancel_tc(struct mcp_front *fr, struct tool_call *tc, const char *by)
{
	struct cjob *c;

	atomic_store(&tc->cancelled, 1);
	fr->n_cancelled++;
	log_info("session=%s tool=%s cancelled %s", tc->sid, tc->name, by);
	atomic_fetch_add(&tc->refs, 1);
	c = xcalloc(1, sizeof(*c));
	c->fr = fr;
	c->tc = tc;
	work_submit(cjob_run, cjob_done, c);
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
				cancel_tc(fr, tc, "by the client");
			}
}

/*
 * The POST's client went (HTTP_ABORT_GONE): its calls are cancelled, and
 * the reply, when they return, goes nowhere. The drain deadline
 * (HTTP_ABORT_DEADLINE): a JSON-RPC error for each call still running,
 * now; the workers' results are dropped.
 */
static void
mcall_abort(struct http_req *req, enum http_abort why, void *arg)
{
	struct mcall *mc = arg;
	struct tool_call *tc;
	cJSON *body;
	size_t i;

	if (why == HTTP_ABORT_GONE) {
		if (mc->ptimer != NULL)
			event_del(mc->ptimer);
		if (mc->ttimer != NULL)
			event_del(mc->ttimer);
		/* A call with an idempotency key runs on: its client will
		 * re-issue it for the result (tasks_attach). */
		for (i = 0; i < mc->out.npend; i++) {
			tc = mc->out.pend[i].tc;
			if (tc != NULL && !atomic_load(&tc->cancelled) &&
			    !atomic_load(&tc->finished) && tc->idem_key[0] == '\0')
				cancel_tc(mc->fr, tc, "(the client disconnected)");
		}
		return;
	}
	body = mcp_abort_body(&mc->out, -32000, "the orchestrator shut down "
	    "(drain deadline) before this call finished; it may still be running "
	    "in the sandbox: check its effects before retrying");
	mcall_unlink(mc);
	mc->aborted = 1;
	mc->req = NULL;
	if (mc->sse) {
		if (body != NULL)
			sse_send(req, body);
		http_stream_end(mc->ht, req);
	} else if (body == NULL)
		http_send_body(mc->ht, req, 202, NULL, NULL, 0);
	else
		http_send_json(mc->ht, req, 200, body);
	cJSON_Delete(body);
	http_inflight_add(mc->ht, -1);
}

static void
mjob_run(void *arg)
{
	struct mjob *j = arg;

	struct tool_call *tc = j->mc->out.pend[j->i].tc;

	if (tasks_method(tc->name))
		tasks_run(j->mc->fr->mgr, j->mc->fr->conf, tc);
	else
		tools_run(j->mc->fr->mgr, j->mc->fr->conf, tc);
}

static void
mjob_done(void *arg)
{
	struct mjob *j = arg;
	struct mcall *mc = j->mc;
	struct tool_call *tc = mc->out.pend[j->i].tc;
	double secs = (double)(util_mono_us() - j->t0) / 1e6;
	char msg[256];

	if (j->refused) {
		snprintf(msg, sizeof(msg), "too many calls in flight for session "
		    "%s: at most %lld at once (limits.session_calls); wait for one "
		    "to finish, then retry", tc->sid, mc->fr->conf->session_calls);
		tc->result = toolres_text(msg, 1);
		tc->is_error = 1;
		atomic_store(&tc->finished, 1);
		mc->fr->n_refused++;
	}

	tool_stat(mc->fr, tc->name, tc->is_error, secs);
	log_info("session=%s tool=%s ms=%.1f error=%d%s%s%s", tc->sid, tc->name,
	    secs * 1000.0, tc->is_error,
	    atomic_load(&tc->cancelled) ? " cancelled=1" : "",
	    tc->trace[0] != '\0' ? " traceparent=" : "", tc->trace);
	if (mcp_complete(&mc->out, j->i))
		mcall_finish(mc);
	free(j);
}

/*
 * tools.task_after passed and the call still runs: it becomes a task. The
 * handle goes out now (the command already has its result id, so the agent
 * keeps its result: tasks/get finds it whatever happens to us), and the
 * call is no longer the client's: a disconnect does not cancel it, and
 * its result, when the worker returns, is dropped.
 */
static void
task_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct mcall *mc = arg;
	struct tool_call *tc = mc->out.pend[0].tc;
	cJSON *r, *o;

	if (tc == NULL || atomic_load(&tc->finished) ||
	    atomic_load(&tc->cancelled) || mc->req == NULL)
		return;
	r = tasks_created(tc, mc->t0_unix);
	era_complete(r, "task");
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddItemToObject(o, "id", cJSON_Duplicate(mc->out.pend[0].id, 1));
	cJSON_AddItemToObject(o, "result", r);
	log_info("session=%s tool=%s became task %s~%s after %lld ms",
	    tc->sid, tc->name, tc->task_id, tc->sid,
	    (util_mono_us() - mc->t0) / 1000);
	mcall_unlink(mc);
	mc->tasked = 1;
	if (mc->sse) {
		sse_send(mc->req, o);
		http_stream_end(mc->ht, mc->req);
	} else
		http_send_json(mc->ht, mc->req, 200, o);
	cJSON_Delete(o);
	mc->req = NULL;
	mc->fr->n_tasks++;
	http_inflight_add(mc->ht, -1);
}

/*
 * subscriptions/listen (2026-07-28): a stream that stays open until the
 * client closes it. Nothing this server offers changes while it runs (its
 * tool list changes only with the runtime's image names, which it does not
 * notify), so the acknowledgment grants no notification type; the stream
 * then carries a keep-alive comment every LISTEN_KEEPALIVE ticks, and a
 * drain ends it with the graceful result (basic/patterns/subscriptions).
 * It counts as a reply in flight, so a drain waits for that result.
 */
#define LISTEN_TICK_MS		1000
#define LISTEN_KEEPALIVE	15

struct mlisten {
	struct http	*ht;
	struct http_req	*req;
	cJSON		*id;		/* the listen request's id (owned) */
	struct event	*tick;
	int		 ticks;
};

static cJSON *
listen_meta(const cJSON *id)
{
	cJSON *meta = cJSON_CreateObject();

	cJSON_AddItemToObject(meta, "io.modelcontextprotocol/subscriptionId",
	    cJSON_Duplicate(id, 1));
	return meta;
}

static void
listen_end(struct mlisten *l, int graceful)
{
	cJSON *o, *r;

	if (graceful) {
		r = cJSON_CreateObject();
		cJSON_AddItemToObject(r, "_meta", listen_meta(l->id));
		era_complete(r, "complete");
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "jsonrpc", "2.0");
		cJSON_AddItemToObject(o, "id", cJSON_Duplicate(l->id, 1));
		cJSON_AddItemToObject(o, "result", r);
		sse_send(l->req, o);
		cJSON_Delete(o);
	}
	event_free(l->tick);
	http_stream_end(l->ht, l->req);
	http_inflight_add(l->ht, -1);
	cJSON_Delete(l->id);
	free(l);
}

static void
listen_tick(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct mlisten *l = arg;

	if (http_draining(l->ht)) {
		listen_end(l, 1);
		return;
	}
	if (++l->ticks % LISTEN_KEEPALIVE == 0)
		http_stream_chunk(l->req, ":\n\n", 3);
}

static void
listen_abort(struct http_req *req UNUSED, enum http_abort why, void *arg)
{
	listen_end(arg, why == HTTP_ABORT_DEADLINE);
}

static void
listen_start(struct http *ht,
    struct http_req *req, struct mcall *mc, int sse_ok)
{
	struct mlisten *l;
	struct timeval tv = { LISTEN_TICK_MS / 1000, (LISTEN_TICK_MS % 1000) * 1000 };
	cJSON *ack, *p;

	if (!sse_ok || http_draining(ht)) {
		cJSON *e = mcp_error(mc->out.listen_id, -32600, sse_ok ?
		    "the orchestrator is shutting down; retry in a moment" :
		    "Invalid Request: subscriptions/listen answers with an SSE "
		    "stream; the request must accept text/event-stream");
		http_send_json(ht, req, sse_ok ? 503 : 406, e);
		cJSON_Delete(e);
		mcp_out_free(&mc->out);
		free(mc);
		return;
	}
	l = xcalloc(1, sizeof(*l));
	l->ht = ht;
	l->req = req;
	l->id = mc->out.listen_id;
	mc->out.listen_id = NULL;
	mcp_out_free(&mc->out);
	free(mc);
	http_inflight_add(ht, 1);
	http_add_header(req, "Content-Type", "text/event-stream");
	http_add_header(req, "Cache-Control", "no-cache, no-transform");
	http_add_header(req, "X-Accel-Buffering", "no");
	http_stream_start(ht, req, 200);
	ack = cJSON_CreateObject();
	cJSON_AddStringToObject(ack, "jsonrpc", "2.0");
	cJSON_AddStringToObject(ack, "method",
	    "notifications/subscriptions/acknowledged");
	p = cJSON_AddObjectToObject(ack, "params");
	cJSON_AddItemToObject(p, "_meta", listen_meta(l->id));
	cJSON_AddObjectToObject(p, "notifications");
	sse_send(req, ack);
	cJSON_Delete(ack);
	l->tick = event_new(http_base(ht), -1, EV_PERSIST, listen_tick, l);
	event_add(l->tick, &tv);
	http_req_on_abort(req, listen_abort, l);
}

static int
hdr_id(struct http_req *req, const char *name, const char **out)
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
mcp_http_handle(struct http *ht, struct http_req *req,
    const char *path UNUSED, void *arg)
{
	struct mcp_front *fr = arg;
	const char *acc = http_hdr(req, "Accept"), *bad = NULL;
	struct mcp_in mi;
	struct mcall *mc;
	size_t i, len;
	int json_ok, sse_ok;

	switch (http_req_method(req)) {
	case HTTP_M_POST:
		break;
	case HTTP_M_GET:
		/* No server-initiated stream: 405 per the transport spec. */
		http_add_header(req, "Allow", "POST");
		send_rpc_err(ht, req, 405, -32000, "Method Not Allowed: this server "
		    "offers no SSE stream on GET; send requests with POST");
		return;
	case HTTP_M_DELETE:
		http_add_header(req, "Allow", "POST");
		send_rpc_err(ht, req, 405, -32000, "Method Not Allowed: this server "
		    "issues no Mcp-Session-Id, so there is no session to delete");
		return;
	default:
		http_add_header(req, "Allow", "POST");
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
	mi.proto = http_hdr(req, "MCP-Protocol-Version");
	/* A 2025 request needs X-Session-Id whatever it asks; a 2026-07-28
	 * one (which names its version in this header) only to call a tool. */
	if (mi.sid == NULL &&
	    (mi.proto == NULL || strcmp(mi.proto, ERA_MODERN) != 0)) {
		char msg[300];
		snprintf(msg, sizeof(msg), "Bad Request: the X-Session-Id header is "
		    "missing; every request to this server (initialize and tools/list "
		    "too) must carry it: 1-%d characters from A-Z a-z 0-9 - _ . : @ + "
		    "=, naming this session's sandbox", ID_SESSION_MAX);
		send_rpc_err(ht, req, 400, -32600, msg);
		return;
	}
	mi.hmethod = http_hdr(req, "Mcp-Method");
	mi.hname = http_hdr(req, "Mcp-Name");
	mi.tasks = fr->conf->task_after_ms > 0;
	mi.body = http_req_body(req, &len);
	mi.len = len;

	mc = xcalloc(1, sizeof(*mc));
	mc->fr = fr;
	mc->ht = ht;
	mc->req = req;
	mc->t0 = util_mono_us();
	mc->t0_unix = util_unix_ms();
	mcp_dispatch(&mi, &mc->out);
	if (mc->out.cancels != NULL)
		cancel_calls(fr, mi.sid, mc->out.cancels);
	if (mc->out.listen) {
		listen_start(ht, req, mc, sse_ok);
		return;
	}
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
		struct timeval tv;

		mc->sse = 1;
		http_add_header(req, "Content-Type", "text/event-stream");
		http_add_header(req, "Cache-Control", "no-cache, no-transform");
		http_add_header(req, "X-Accel-Buffering", "no");
		http_stream_start(ht, req, 200);
		if (mc->out.want_progress) {
			if (mc->out.npend == 1 && mc->out.pend[0].tc != NULL)
				mc->out.pend[0].tc->progress = 1;
			mc->ptimer = event_new(http_base(ht), -1, EV_PERSIST, progress_cb, mc);
			tv.tv_sec = fr->conf->progress_interval_ms / 1000;
			tv.tv_usec = (fr->conf->progress_interval_ms % 1000) * 1000;
			event_add(mc->ptimer, &tv);
		}
	}
	/* A call that may outlive the client's patience becomes a task. */
	if (mi.tasks && mc->out.modern && mc->out.era.tasks &&
	    mc->out.npend == 1 && tasks_prepare(mc->out.pend[0].tc)) {
		struct timeval tt = { fr->conf->task_after_ms / 1000,
		    (fr->conf->task_after_ms % 1000) * 1000 };

		mc->ttimer = event_new(http_base(ht), -1, 0, task_cb, mc);
		event_add(mc->ttimer, &tt);
	}
	http_req_on_abort(req, mcall_abort, mc);
	for (i = 0; i < mc->out.npend; i++) {
		struct mjob *j = xcalloc(1, sizeof(*j));
		j->mc = mc;
		j->i = i;
		j->t0 = util_mono_us();
		if (work_submit_key(mc->out.pend[i].tc->sid,
		    (int)fr->conf->session_calls, mjob_run, mjob_done, j) == -1) {
			j->refused = 1;	/* answered from the loop, not run */
			work_loop_call(mjob_done, j);
		}
	}
}

struct mcp_front *
mcp_http_new(struct sessmgr *mgr, const struct conf *conf)
{
	struct mcp_front *fr = xcalloc(1, sizeof(*fr));

	fr->mgr = mgr;
	fr->conf = conf;
	return fr;
}

void
mcp_http_free(struct mcp_front *fr)
{
	free(fr);
}

int
mcp_http_metrics(const struct mcp_front *fr, struct buf *b)
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
	    "orch_tool_calls_cancelled_total %llu\n"
	    "# HELP orch_tool_calls_refused_total Tool calls refused at the "
	    "per-session cap (limits.session_calls).\n"
	    "# TYPE orch_tool_calls_refused_total counter\n"
	    "orch_tool_calls_refused_total %llu\n"
	    "# HELP orch_tool_calls_tasked_total Tool calls answered with a "
	    "task handle (MCP 2026-07-28 Tasks, tools.task_after).\n"
	    "# TYPE orch_tool_calls_tasked_total counter\n"
	    "orch_tool_calls_tasked_total %llu\n", fr->n_cancelled, fr->n_refused,
	    fr->n_tasks);
	r |= buf_addf(b, "# HELP orch_tool_call_seconds_sum Time spent in tool calls.\n"
	    "# TYPE orch_tool_call_seconds_sum counter\n");
	for (i = 0; i < fr->ntools; i++)
		r |= buf_addf(b, "orch_tool_call_seconds_sum{tool=\"%s\"} %.6f\n",
		    fr->tools[i].name, fr->tools[i].secs);
	return r ? -1 : 0;
}
