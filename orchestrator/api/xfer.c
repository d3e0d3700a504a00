/*
 * xfer.c: REST files and exec (xfer.h), relayed between the client's
 * connection (http.c) and the session's agent (agentc.h's agentx) on the
 * event loop, bytes flowing as they come, each side paused while the
 * other is behind: the orchestrator holds at most about AGENTX_OUT_HIGH
 * of an upload and XFER_OUT_HIGH of a download or an exec's output.
 *
 * One transfer is one struct xj. A worker (work.h) finds the session,
 * starts or resumes its sandbox (sess_enter: the sandbox cannot stop or
 * change under the transfer) and dials the agent, hands the connection
 * to the loop (xj_go) and waits until the loop releases it (xj_release:
 * after the final reply, or the client's going), then leaves the session
 * on the same thread that entered it. The loop frees xj in xj_done.
 *
 * An exec with an Idempotency-Key (keyed_exec, on the worker) is not the
 * agent's /v1/exec but one of its jobs: recorded first (idem.h, with the
 * job id), started with exec's options unless the record says it was,
 * then relayed as GET /v1/jobs/{id}/stream, exec's NDJSON from the job's
 * first byte; the client going away closes that stream only.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <cjson/cJSON.h>

#include "lib/agentc.h"
#include "http/http.h"
#include "idem.h"
#include "ids.h"
#include "lib/jsonu.h"
#include "log.h"
#include "session/sess.h"
#include "util.h"
#include "lib/work.h"
#include "xfer.h"
#include "xmalloc.h"

#define XFER_OUT_HIGH	(1024 * 1024)	/* reply bytes queued: agent paused */
#define XFER_SMALL_MAX	(1024 * 1024)	/* a JSON reply of the agent kept */
#define XFER_CONNECT_MS	5000
#define XFER_TIMEOUT_S	86400		/* exec timeout: at most a day */
#define XFER_EXEC_DEFAULT_MS	120000	/* the agent's exec default */
#define XFER_JOB_START_MS	30000	/* a keyed exec's job start */

enum xop { X_PUT, X_GET, X_LIST, X_DELETE, X_EXEC };

struct xj {
	struct http		*ht;
	struct http_req		*req;		/* NULL once replied */
	struct sessmgr		*mgr;
	const struct conf	*conf;
	enum xop		 op;
	char			 sid[ID_SESSION_MAX + 1];
	char			*method, *target;	/* the agent request */
	char			*body;			/* X_DELETE, X_EXEC */
	size_t			 bodylen;
	long long		 body_len;	/* X_PUT: Content-Length, -1 */
	long long		 put_bytes;	/* X_PUT: body bytes taken */
	/* X_EXEC with an Idempotency-Key: run as an agent job (idem.h) */
	char			 trace[ID_TRACEPARENT_LEN + 1];	/* W3C, or "" */
	char			*idem_key;	/* NULL: none */
	char			 idem_fp[IDEM_FP_HEX + 1];
	/* the worker: its result, and the loop's release */
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	int			 released;
	int			 held;		/* the worker holds the session */
	struct agentc		*ac;
	int			 err_status;
	char			 err_code[32];
	char			 err[1024];
	/* the loop */
	struct agentx		*x;
	struct buf		 small;		/* a JSON reply of the agent */
	struct event		*tl_ev;		/* answers a 413 mid-body */
	int			 status;
	unsigned		 gone:1, streaming:1, body_end:1, too_large:1,
				 going:1,	/* xj_go ran: the loop's */
				 mid_line:1;	/* X_EXEC: the last byte relayed
						 * was not a newline */
};

/* ---- the end of a transfer ---- */

static void
xj_release(struct xj *j)
{
	if (j->x != NULL) {
		agentx_close(j->x);
		j->x = NULL;
	}
	pthread_mutex_lock(&j->mu);
	j->released = 1;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

/* The final reply: an error (JSON), unless already replied. */
static void
xj_err(struct xj *j, int status, const char *code, const char *msg)
{
	struct http_req *r = j->req;

	if (r == NULL)
		return;
	j->req = NULL;
	if (j->streaming)
		http_stream_abort(j->ht, r);
	else
		http_send_err(j->ht, r, status, code, msg);
}

static void
xj_fail(struct xj *j, int status, const char *code, const char *msg)
{
	xj_err(j, status, code, msg);
	xj_release(j);
}

/* The agent's small JSON reply, passed through (201 for a new file). */
static void
xj_reply_small(struct xj *j)
{
	struct http_req *r = j->req;
	cJSON *o = NULL, *c;
	int st = j->status;

	if (r == NULL)
		return;
	j->req = NULL;
	if (j->small.len > 0)
		o = cJSON_ParseWithLength(j->small.p, j->small.len);
	if (o == NULL) {
		http_send_err(j->ht, r, 502, "bad_gateway", "the agent's reply "
		    "is not JSON");
		return;
	}
	c = cJSON_GetObjectItemCaseSensitive(o, "created");
	if (j->op == X_PUT && st == 200 && cJSON_IsTrue(c))
		st = 201;
	if (j->op == X_EXEC && j->idem_key != NULL && st == 404) {
		/* the job that ran it was removed by the agent's retention */
		cJSON_Delete(o);
		http_send_err(j->ht, r, 410, "idempotency_expired", "the first "
		    "run of this Idempotency-Key is no longer kept in the "
		    "sandbox (the agent keeps the newest finished jobs, for a "
		    "day): its output and exit status are gone");
		return;
	}
	if (st == 429)
		http_add_header(r, "Retry-After", "1");
	http_send_json(j->ht, r, st, o);
	cJSON_Delete(o);
}

/* ---- the agent's side ---- */

static void
ax_head(struct agentx *x, int status, void *arg)
{
	struct xj *j = arg;
	const char *v;
	char etag[64];

	j->status = status;
	if (j->req == NULL || status != 200)
		return;
	if (j->op == X_GET) {
		long long len = -1;

		if ((v = agentx_hdr(x, "Content-Length")) != NULL)
			len = strtoll(v, NULL, 10);
		if (len < 0) {
			xj_fail(j, 502, "bad_gateway", "the agent's file reply "
			    "has no Content-Length");
			return;
		}
		http_add_header(j->req, "Content-Type", "application/octet-stream");
		http_add_header(j->req, "Cache-Control", "no-store");
		if ((v = agentx_hdr(x, "X-File-Version")) != NULL &&
		    strlen(v) < 40) {
			http_add_header(j->req, "X-File-Version", v);
			snprintf(etag, sizeof(etag), "\"%s\"", v);
			http_add_header(j->req, "ETag", etag);
		}
		if ((v = agentx_hdr(x, "X-File-Mode")) != NULL)
			http_add_header(j->req, "X-File-Mode", v);
		if ((v = agentx_hdr(x, "X-File-Size")) != NULL)
			http_add_header(j->req, "X-File-Size", v);
		j->streaming = 1;
		http_stream_start_len(j->ht, j->req, 200, len);
	} else if (j->op == X_EXEC) {
		http_add_header(j->req, "Content-Type", "application/x-ndjson");
		http_add_header(j->req, "Cache-Control", "no-store");
		http_add_header(j->req, "X-Content-Type-Options", "nosniff");
		j->streaming = 1;
		http_stream_start(j->ht, j->req, 200);
	}
}

static void
ax_data(struct agentx *x, const char *p, size_t n, void *arg)
{
	struct xj *j = arg;

	if (j->req == NULL)
		return;
	if (j->streaming) {
		if (n > 0)
			j->mid_line = p[n - 1] != '\n';
		http_stream_chunk(j->req, p, n);
		if (http_stream_pending(j->req) >= XFER_OUT_HIGH)
			agentx_pause(x, 1);	/* the client is behind */
		return;
	}
	if (buf_add(&j->small, p, n) == -1)
		xj_fail(j, 502, "bad_gateway", "the agent's reply is too long");
}

/*
 * An exec stream that broke off (the agent died, or its connection did):
 * the stream ends with a last line saying so instead of just stopping,
 * {"error":{"code":"agent_lost","message":...}}, after a newline if the
 * agent's last line was cut.
 */
static void
exec_lost(struct xj *j, const char *why)
{
	struct http_req *r = j->req;
	cJSON *o;
	char msg[512], *line;

	if (j->idem_key != NULL)
		snprintf(msg, sizeof(msg), "session %s: the agent's stream of the "
		    "command broke off (%s); the command may still run: send the "
		    "request again with the same Idempotency-Key to attach to it",
		    j->sid, why);
	else
		snprintf(msg, sizeof(msg), "session %s: the agent was lost while "
		    "the command ran (%s): its exit status and the rest of its "
		    "output are unknown", j->sid, why);
	log_warnx("session=%s rest exec: %s", j->sid, why);
	o = http_err_json("agent_lost", msg);
	line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	j->req = NULL;
	if (j->mid_line)
		http_stream_chunk(r, "\n", 1);
	http_stream_chunk(r, line, strlen(line));
	http_stream_chunk(r, "\n", 1);
	free(line);
	http_stream_end(j->ht, r);
}

static void
ax_done(struct agentx *x UNUSED, int ok, const char *why, void *arg)
{
	struct xj *j = arg;
	char msg[256];

	if (j->req != NULL) {
		if (ok && j->streaming) {
			struct http_req *r = j->req;

			j->req = NULL;
			http_stream_end(j->ht, r);
		} else if (ok)
			xj_reply_small(j);
		else if (j->streaming && j->op == X_EXEC)
			exec_lost(j, why);
		else {
			snprintf(msg, sizeof(msg), "session %s: %s", j->sid, why);
			log_warnx("session=%s rest %s: %s", j->sid, j->target, why);
			xj_err(j, 503, "agent_unavailable", msg);
		}
	}
	xj_release(j);
}

static void
ax_drain(struct agentx *x UNUSED, void *arg)
{
	struct xj *j = arg;

	if (j->req != NULL && j->op == X_PUT && !j->too_large)
		http_req_body_pause(j->req, 0);
}

static const struct agentx_cb xcb = { ax_head, ax_data, ax_done, ax_drain };

/* ---- the client's side ---- */

static void
client_drain(struct http_req *r UNUSED, void *arg)
{
	struct xj *j = arg;

	if (j->x != NULL)
		agentx_pause(j->x, 0);
}

static void
too_large_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct xj *j = arg;
	char msg[200];

	if (j->req == NULL)
		return;
	snprintf(msg, sizeof(msg), "Payload Too Large: the file passed %lld "
	    "bytes (files.max_bytes); nothing of it was kept",
	    j->conf->files_max_bytes);
	xj_fail(j, 413, "too_large", msg);
}

static void
put_data(struct http_req *r, const char *p, size_t n, void *arg)
{
	struct xj *j = arg;

	if (j->x == NULL || j->too_large)
		return;
	j->put_bytes += (long long)n;
	if (j->put_bytes > j->conf->files_max_bytes) {
		/* a chunked body over the cap: the agent's connection is closed
		 * before its end, so it removes its temp file */
		j->too_large = 1;
		http_req_body_pause(r, 1);
		agentx_close(j->x);
		j->x = NULL;
		j->tl_ev = event_new(http_base(j->ht), -1, 0, too_large_cb, j);
		event_active(j->tl_ev, EV_TIMEOUT, 0);
		return;
	}
	agentx_body(j->x, p, n);
	if (agentx_body_full(j->x))
		http_req_body_pause(r, 1);
}

static void
put_end(struct http_req *r UNUSED, void *arg)
{
	struct xj *j = arg;

	j->body_end = 1;
	if (j->x != NULL)
		agentx_body_end(j->x);
}

static void
on_abort(struct http_req *r UNUSED, enum http_abort why, void *arg)
{
	struct xj *j = arg;

	if (j->going) {
		/* the agent's connection closes: it drops the temp file, kills
		 * the exec's tree */
		if (j->x != NULL) {
			agentx_close(j->x);
			j->x = NULL;
		}
		if (why == HTTP_ABORT_GONE)
			j->gone = 1;
		xj_fail(j, 503, "draining", "shutting down");
		return;
	}
	/* still with the worker: xj_go or xj_done answers */
	j->gone = why == HTTP_ABORT_GONE;
	if (why == HTTP_ABORT_DEADLINE)
		xj_err(j, 503, "draining", "shutting down");
}

/* ---- the worker ---- */

static void
xj_go(void *arg)
{
	struct xj *j = arg;
	char err[256];
	const char *ctype = NULL;
	long long blen = 0;

	j->going = 1;
	if (j->req == NULL || j->gone) {
		agentc_close(j->ac);
		j->ac = NULL;
		xj_err(j, 503, "gone", "the client went away");
		xj_release(j);
		return;
	}
	if (j->op == X_PUT) {
		ctype = "application/octet-stream";
		blen = j->body_len;
	} else if (j->body != NULL) {
		ctype = "application/json";
		blen = (long long)j->bodylen;
	}
	j->x = agentx_start(http_base(j->ht), j->ac, j->method, j->target,
	    ctype, blen, &xcb, j, err, sizeof(err));
	j->ac = NULL;
	if (j->x == NULL) {
		xj_fail(j, 503, "agent_unavailable", err);
		return;
	}
	if (j->body != NULL)
		agentx_body(j->x, j->body, j->bodylen);
	http_req_on_drain(j->req, client_drain, j);
	if (j->op == X_PUT && http_req_body_is_streamed(j->req))
		http_req_body_stream(j->req, put_data, put_end, j);
}

static void
xj_set_err(struct xj *j, int status, const char *code, const char *msg)
{
	j->err_status = status;
	snprintf(j->err_code, sizeof(j->err_code), "%s", code);
	snprintf(j->err, sizeof(j->err), "%s", msg);
}

/* The agent's error reply {"error":{"code","message"}} as j's error. */
static void
xj_agent_err(struct xj *j, int status, const struct buf *resp)
{
	cJSON *o = cJSON_ParseWithLength(resp->p != NULL ? resp->p : "", resp->len);
	cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
	cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
	cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");

	xj_set_err(j, status >= 400 && status < 600 ? status : 502,
	    cJSON_IsString(c) ? c->valuestring : "agent_error",
	    cJSON_IsString(m) ? m->valuestring : "the agent refused the command");
	cJSON_Delete(o);
}

/*
 * A keyed exec, on the worker: the record first (idem_begin writes it,
 * with the job id, before anything starts), then the agent job that runs
 * the command (started unless the record says it was; the agent refuses a
 * second start of one id, 409, so two re-issues racing start it once),
 * then j's request becomes the stream of that job from its first byte.
 * 0, or -1 with j's error set (ac is then unusable: close it).
 */
static int
keyed_exec(struct xj *j, struct agentc *ac)
{
	static const struct { enum idem_rc rc; int st; const char *code; } errs[] = {
		{ IDEM_MISMATCH, 422, "idempotency_mismatch" },
		{ IDEM_BUSY, 409, "idempotency_in_progress" },
		{ IDEM_FULL_SCOPE, 429, "idempotency_limit" },
		{ IDEM_FULL, 503, "idempotency_limit" },
		{ IDEM_OFF, 501, "idempotency_unavailable" },
		{ IDEM_ERR, 503, "idempotency_unavailable" },
	};
	struct idem_view v;
	enum idem_rc rc;
	struct buf resp;
	cJSON *o;
	char err[768], msg[1024], *body = NULL;
	size_t i;
	int st, rv = -1;

	rc = idem_begin(j->conf, IDEM_EXEC, j->sid, j->idem_key, j->idem_fp, &v,
	    err, sizeof(err));
	free(v.body);
	if (rc != IDEM_NEW && rc != IDEM_SAME) {
		for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
			if (errs[i].rc == rc)
				xj_set_err(j, errs[i].st, errs[i].code, err);
		return -1;
	}
	buf_init(&resp, 64 * 1024);
	if (rc == IDEM_SAME && v.started)
		goto stream;
	/* the agent's exec body, as a job: stdout and stderr apart, exec's
	 * default timeout and working directory */
	if ((o = cJSON_Parse(j->body)) == NULL) {
		xj_set_err(j, 500, "internal", "exec body");
		return -1;
	}
	cJSON_AddStringToObject(o, "id", v.job);
	cJSON_AddStringToObject(o, "streams", "split");
	cJSON_AddBoolToObject(o, "kill_leftovers", 1);
	if (!cJSON_HasObjectItem(o, "timeout_ms"))
		cJSON_AddNumberToObject(o, "timeout_ms", XFER_EXEC_DEFAULT_MS);
	if (!cJSON_HasObjectItem(o, "cwd"))
		cJSON_AddStringToObject(o, "cwd", ".");
	body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (agentc_request(ac, "POST", "/v1/jobs", "application/json", body,
	    strlen(body), XFER_JOB_START_MS, &st, &resp, err, sizeof(err)) == -1) {
		/* not sent whole: nothing ran, the key is free again */
		if (!agentc_delivered(ac))
			idem_forget(j->conf, j->sid, j->idem_key);
		snprintf(msg, sizeof(msg), "session %s: starting the command: %s",
		    j->sid, err);
		xj_set_err(j, 503, "agent_unavailable", msg);
		goto out;
	}
	if (st == 200 || st == 409)	/* started now, or before */
		idem_started(j->conf, j->sid, j->idem_key);
	else {
		/* refused (a bad cwd, the process limit): it never ran */
		idem_forget(j->conf, j->sid, j->idem_key);
		xj_agent_err(j, st, &resp);
		goto out;
	}
stream:
	log_info("session=%s rest exec key=%s job=%s %s", j->sid, j->idem_key,
	    v.job, rc == IDEM_NEW ? "started" : "attached");
	free(j->method);
	j->method = xstrdup("GET");
	free(j->target);
	xasprintf(&j->target, "/v1/jobs/%s/stream?offset=0", v.job);
	free(j->body);
	j->body = NULL;
	j->bodylen = 0;
	rv = 0;
out:
	buf_free(&resp);
	free(body);
	return rv;
}

static void
xj_run(void *arg)
{
	struct xj *j = arg;
	struct sess *s;
	enum sess_err e = SE_OK;
	const char *code;
	char err[512];

	if ((s = sess_get(j->mgr, j->sid, NULL, NULL, 0, &e, err,
	    sizeof(err))) == NULL ||
	    sess_enter(s, NULL, &e, err, sizeof(err)) == -1) {
		j->err_status = sess_err_http(e, &code);
		snprintf(j->err_code, sizeof(j->err_code), "%s", code);
		snprintf(j->err, sizeof(j->err), "%s", err);
		if (s != NULL)
			sess_put(s);
		return;
	}
	if ((j->ac = agentc_open(sess_agent_addr(s), XFER_CONNECT_MS, err,
	    sizeof(err))) == NULL) {
		sess_leave(s);
		sess_put(s);
		j->err_status = 503;
		snprintf(j->err_code, sizeof(j->err_code), "agent_unavailable");
		snprintf(j->err, sizeof(j->err), "session %s: its agent does not "
		    "answer: %s", j->sid, err);
		return;
	}
	if (j->idem_key != NULL && keyed_exec(j, j->ac) == -1) {
		agentc_close(j->ac);
		j->ac = NULL;
		sess_leave(s);
		sess_put(s);
		return;
	}
	j->held = 1;
	if (j->trace[0] != '\0')	/* the proxy's audit lines name it */
		sess_trace(s, j->trace);
	work_loop_call(xj_go, j);
	pthread_mutex_lock(&j->mu);
	while (!j->released)
		pthread_cond_wait(&j->cv, &j->mu);
	pthread_mutex_unlock(&j->mu);
	if (j->trace[0] != '\0')
		sess_trace(s, NULL);
	sess_leave(s);	/* counts as activity */
	sess_put(s);
}

static void
xj_free(struct xj *j)
{
	agentc_close(j->ac);
	if (j->tl_ev != NULL)
		event_free(j->tl_ev);
	buf_free(&j->small);
	free(j->method);
	free(j->target);
	free(j->body);
	free(j->idem_key);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j);
}

static void
xj_done(void *arg)
{
	struct xj *j = arg;

	if (!j->held)
		xj_err(j, j->err_status, j->err_code, j->err);
	http_inflight_add(j->ht, -1);
	xj_free(j);
}

/* ---- requests ---- */

int
xfer_route(const char *op)
{
	return strcmp(op, "exec") == 0 || strcmp(op, "files") == 0 ||
	    strncmp(op, "files/", 6) == 0;
}

int
xfer_body_streamed(const char *path, enum http_method m)
{
	const char *p;

	if (m != HTTP_M_PUT || strncmp(path, "/v1/sessions/", 13) != 0)
		return 0;
	p = strchr(path + 13, '/');
	return p != NULL && strncmp(p, "/files/", 7) == 0;
}

/* The query's value of name: 1 and *v set, 0 if absent, -1 if bad. */
static int
qnum(struct evkeyvalq *kv, const char *name, long long lo, long long hi,
    int base, long long *v)
{
	const char *s = evhttp_find_header(kv, name);
	char *end;

	if (s == NULL)
		return 0;
	if (*s == '\0' || strlen(s) > 12 || !isdigit((unsigned char)*s))
		return -1;
	*v = strtoll(s, &end, base);
	return *end == '\0' && *v >= lo && *v <= hi ? 1 : -1;
}

static int
qbool(struct evkeyvalq *kv, const char *name)
{
	const char *s = evhttp_find_header(kv, name);

	if (s == NULL)
		return 0;
	if (strcmp(s, "1") == 0 || strcmp(s, "true") == 0)
		return 1;
	if (strcmp(s, "0") == 0 || strcmp(s, "false") == 0)
		return 0;
	return -1;
}

static const char *const query_names[] = { "mode", "append", "recursive",
	"max_entries", "list", "offset", "length", NULL };

/* The agent's target for a files request, or NULL with why. */
static char *
files_target(struct xj *j, enum http_method m, const char *raw,
    const char *query, const char **why)
{
	struct evkeyvalq kv;
	struct evkeyval *e;
	struct buf t;
	char *path = NULL, *enc = NULL, *out = NULL;
	size_t plen = 0, i;
	long long mode = -1, maxe = -1, off = -1, len = -1;
	int list = 0, rec, app, known, bad = 0;

	TAILQ_INIT(&kv);
	*why = NULL;
	if (query != NULL && evhttp_parse_query_str(query, &kv) == -1) {
		*why = "malformed query string";
		goto out;
	}
	TAILQ_FOREACH(e, &kv, next) {
		for (known = 0, i = 0; query_names[i] != NULL; i++)
			known |= strcmp(e->key, query_names[i]) == 0;
		if (!known) {
			*why = "unknown query parameter (mode, append, recursive, "
			    "max_entries, list, offset, length are known)";
			goto out;
		}
	}
	if ((path = evhttp_uridecode(raw, 0, &plen)) == NULL ||
	    strlen(path) != plen) {
		*why = "the path holds a NUL byte";
		goto out;
	}
	if (path[0] != '/') {
		*why = "the path after /files must be absolute: "
		    "/v1/sessions/{id}/files/<absolute path>";
		goto out;
	}
	if ((rec = qbool(&kv, "recursive")) == -1 ||
	    (app = qbool(&kv, "append")) == -1 ||
	    (list = qbool(&kv, "list")) == -1) {
		*why = "recursive, append and list are 0 or 1";
		goto out;
	}
	if (qnum(&kv, "mode", 0, 07777, 8, &mode) == -1) {
		*why = "mode is octal permission bits (0644)";
		goto out;
	}
	if (qnum(&kv, "max_entries", 1, 100000, 10, &maxe) == -1) {
		*why = "max_entries is 1 to 100000";
		goto out;
	}
	if (qnum(&kv, "offset", 0, 1LL << 50, 10, &off) == -1 ||
	    qnum(&kv, "length", 0, 1LL << 50, 10, &len) == -1) {
		*why = "offset and length are byte counts";
		goto out;
	}
	if (plen > 1 && path[plen - 1] == '/' && m == HTTP_M_GET)
		list = 1;
	while (plen > 1 && path[plen - 1] == '/')
		path[--plen] = '\0';	/* "/workspace/" lists /workspace */
	enc = evhttp_uriencode(path, (ev_ssize_t)plen, 0);
	buf_init(&t, 16384 + 3 * plen);
	switch (m) {
	case HTTP_M_PUT:
		j->op = X_PUT;
		j->method = xstrdup("PUT");
		bad |= buf_addf(&t, "/v1/files/raw?path=%s", enc);
		if (mode >= 0)
			bad |= buf_addf(&t, "&mode=%04llo", mode);
		if (app == 1)
			bad |= buf_addf(&t, "&append=1");
		break;
	case HTTP_M_GET:
		j->method = xstrdup("GET");
		if (list || strcmp(path, "/") == 0) {
			j->op = X_LIST;
			bad |= buf_addf(&t, "/v1/files/list?path=%s", enc);
			if (rec == 1)
				bad |= buf_addf(&t, "&recursive=1");
			if (maxe > 0)
				bad |= buf_addf(&t, "&max_entries=%lld", maxe);
		} else {
			j->op = X_GET;
			bad |= buf_addf(&t, "/v1/files/raw?path=%s", enc);
			if (off >= 0)
				bad |= buf_addf(&t, "&offset=%lld", off);
			if (len >= 0)
				bad |= buf_addf(&t, "&length=%lld", len);
		}
		break;
	case HTTP_M_DELETE: {
		cJSON *o = cJSON_CreateObject();

		j->op = X_DELETE;
		j->method = xstrdup("POST");
		bad |= buf_addf(&t, "/v1/files/delete");
		cJSON_AddStringToObject(o, "path", path);
		cJSON_AddBoolToObject(o, "recursive", rec == 1);
		j->body = cJSON_PrintUnformatted(o);
		j->bodylen = strlen(j->body);
		cJSON_Delete(o);
		break;
	}
	default:
		*why = "method";
		buf_free(&t);
		goto out;
	}
	if (bad == 0)
		out = xstrndup(t.p, t.len);
	else
		*why = "the path is too long";
	buf_free(&t);
out:
	evhttp_clear_headers(&kv);
	free(path);
	free(enc);
	return out;
}

/*
 * A REST exec's W3C trace context (the traceparent header; a malformed one
 * is ignored, as W3C says): logged, handed to the agent in its body and to
 * the egress proxy for the exec's time (xj_run).
 */
static void
exec_trace(struct xj *j, const char *tp)
{
	cJSON *o;
	char *txt;

	if (tp == NULL || !id_traceparent_valid(tp))
		return;
	snprintf(j->trace, sizeof(j->trace), "%s", tp);
	log_info("session=%s rest exec traceparent=%s", j->sid, j->trace);
	if ((o = cJSON_Parse(j->body)) == NULL)
		return;
	cJSON_AddStringToObject(o, "traceparent", j->trace);
	if ((txt = cJSON_PrintUnformatted(o)) != NULL) {
		free(j->body);
		j->body = txt;
		j->bodylen = strlen(txt);
	}
	cJSON_Delete(o);
}

/* X_EXEC: the agent's body for the client's, or NULL with why. */
static char *
exec_body(const struct conf *conf, const char *body, size_t len,
    const char **why)
{
	static const char *const names[] = { "command", "timeout", "cwd", "env",
		"stdin", NULL };
	cJSON *j, *o, *v, *it;
	char *out;
	size_t i;
	int known;

	*why = NULL;
	if (len == 0 || !jsonu_utf8_valid(body, len) ||
	    (j = cJSON_ParseWithLength(body, len)) == NULL) {
		*why = "the body must be a JSON object {\"command\", \"timeout\"?, "
		    "\"cwd\"?, \"env\"?, \"stdin\"?}";
		return NULL;
	}
	if (!cJSON_IsObject(j) || jsonu_mark_nul(body, len, j) != 0) {
		*why = cJSON_IsObject(j) ? "strings may not hold NUL" :
		    "the body must be a JSON object";
		cJSON_Delete(j);
		return NULL;
	}
	cJSON_ArrayForEach(it, j) {
		for (known = 0, i = 0; names[i] != NULL; i++)
			known |= it->string != NULL && strcmp(it->string, names[i]) == 0;
		if (!known) {
			*why = "unknown member (command, timeout, cwd, env, stdin "
			    "are known)";
			cJSON_Delete(j);
			return NULL;
		}
	}
	o = cJSON_CreateObject();
	v = cJSON_GetObjectItemCaseSensitive(j, "command");
	if (!cJSON_IsString(v) || v->valuestring[0] == '\0')
		*why = "command must be a non-empty string";
	else
		cJSON_AddStringToObject(o, "command", v->valuestring);
	if (*why == NULL && (v = cJSON_GetObjectItemCaseSensitive(j,
	    "timeout")) != NULL) {
		if (!cJSON_IsNumber(v) || v->valuedouble <= 0 ||
		    v->valuedouble > XFER_TIMEOUT_S)
			*why = "timeout is seconds, more than 0 and at most 86400";
		else
			cJSON_AddNumberToObject(o, "timeout_ms",
			    v->valuedouble * 1000 < 1 ? 1 :
			    (double)(long long)(v->valuedouble * 1000));
	}
	if (*why == NULL && (v = cJSON_GetObjectItemCaseSensitive(j, "cwd")) != NULL) {
		if (!cJSON_IsString(v))
			*why = "cwd must be a string";
		else
			cJSON_AddStringToObject(o, "cwd", v->valuestring);
	}
	if (*why == NULL && (v = cJSON_GetObjectItemCaseSensitive(j, "env")) != NULL) {
		if (!cJSON_IsObject(v))
			*why = "env must be an object of strings";
		else {
			cJSON_ArrayForEach(it, v)
				if (!cJSON_IsString(it)) {
					*why = "env must be an object of strings";
					break;
				}
			if (*why == NULL)
				cJSON_AddItemToObject(o, "env", cJSON_Duplicate(v, 1));
		}
	}
	if (*why == NULL && (v = cJSON_GetObjectItemCaseSensitive(j, "stdin")) != NULL) {
		if (!cJSON_IsString(v))
			*why = "stdin must be a base64 string";
		else
			cJSON_AddStringToObject(o, "stdin", v->valuestring);
	}
	cJSON_AddNumberToObject(o, "max_output", (double)conf->exec_max_output);
	out = *why == NULL ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	cJSON_Delete(j);
	return out;
}

/*
 * An exec's Idempotency-Key header: none (0), checked and fingerprinted
 * into j (0), or -1 when it is bad (answered: 400).
 */
static int
exec_key(struct xj *j, struct http_req *req, const char *b, size_t len)
{
	const char *key = http_hdr(req, "Idempotency-Key");
	cJSON *o;
	int rc;

	if (key == NULL)
		return 0;
	if (!idem_key_valid(key)) {
		http_send_err(j->ht, req, 400, "bad_idempotency_key",
		    "Idempotency-Key must be 1 to 255 printable ASCII characters");
		return -1;
	}
	o = cJSON_ParseWithLength(b, len);
	rc = o != NULL ? idem_fingerprint("POST", "/v1/sessions/{id}/exec", o,
	    j->idem_fp) : -1;
	cJSON_Delete(o);
	if (rc == -1) {
		http_send_err(j->ht, req, 500, "internal", "fingerprint");
		return -1;
	}
	j->idem_key = xstrdup(key);
	return 0;
}

void
xfer_handle(struct http *ht, struct sessmgr *mgr, const struct conf *conf,
    struct http_req *req, const char *sid, const char *op)
{
	enum http_method m = http_req_method(req);
	struct xj *j;
	const char *why = NULL;
	char key[ID_SESSION_MAX + 8], msg[256];
	int cap;

	j = xcalloc(1, sizeof(*j));
	j->ht = ht;
	j->req = req;
	j->mgr = mgr;
	j->conf = conf;
	snprintf(j->sid, sizeof(j->sid), "%s", sid);
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	buf_init(&j->small, XFER_SMALL_MAX);
	if (strcmp(op, "exec") == 0) {
		size_t len;
		const char *b = http_req_body(req, &len);

		if (m != HTTP_M_POST) {
			http_add_header(req, "Allow", "POST");
			http_send_err(ht, req, 405, "method_not_allowed", "use POST");
			goto fail;
		}
		if (!http_ctype_json(http_hdr(req, "Content-Type"))) {
			http_send_err(ht, req, 415, "unsupported_media_type",
			    "Content-Type must be application/json");
			goto fail;
		}
		if ((j->body = exec_body(conf, b, len, &why)) == NULL) {
			http_send_err(ht, req, 400, "bad_request", why);
			goto fail;
		}
		j->bodylen = strlen(j->body);
		if (exec_key(j, req, b, len) == -1)
			goto fail;
		exec_trace(j, http_hdr(req, "traceparent"));
		j->op = X_EXEC;
		j->method = xstrdup("POST");
		j->target = xstrdup("/v1/exec");
	} else {
		if (m != HTTP_M_GET && m != HTTP_M_PUT && m != HTTP_M_DELETE) {
			http_add_header(req, "Allow", "GET, PUT, DELETE");
			http_send_err(ht, req, 405, "method_not_allowed",
			    "use GET, PUT or DELETE");
			goto fail;
		}
		if (strncmp(op, "files/", 6) != 0) {
			http_send_err(ht, req, 400, "bad_request", "name a path: "
			    "/v1/sessions/{id}/files/<absolute path>");
			goto fail;
		}
		if ((j->target = files_target(j, m, op + 5, http_req_query(req),
		    &why)) == NULL) {
			http_send_err(ht, req, 400, "bad_request", why);
			goto fail;
		}
		if (j->op == X_PUT) {
			j->body_len = http_req_content_length(req);
			if (!http_req_body_is_streamed(req))
				j->body_len = 0;	/* no body: an empty file */
			if (j->body_len > conf->files_max_bytes) {
				snprintf(msg, sizeof(msg), "Payload Too Large: the "
				    "file is %lld bytes; the limit is %lld bytes "
				    "(files.max_bytes)", j->body_len,
				    conf->files_max_bytes);
				http_send_err(ht, req, 413, "too_large", msg);
				goto fail;
			}
		} else if (http_req_body_is_streamed(req)) {
			http_send_err(ht, req, 400, "bad_request", "no body here");
			goto fail;
		}
	}
	if (http_draining(ht)) {
		http_send_err(ht, req, 503, "draining", "shutting down");
		goto fail;
	}
	/* exec has its own cap per session; files share the calls' */
	snprintf(key, sizeof(key), "%s:%s", j->op == X_EXEC ? "x" : "f", sid);
	cap = j->op == X_EXEC ? (int)conf->exec_max_concurrent :
	    (int)conf->session_calls;
	http_req_on_abort(req, on_abort, j);
	if (work_submit_key(key, cap, xj_run, xj_done, j) == -1) {
		http_req_on_abort(req, NULL, NULL);
		snprintf(msg, sizeof(msg), "too many %s in flight for session %s: "
		    "at most %d at once (%s); retry when one finished",
		    j->op == X_EXEC ? "execs" : "transfers", sid, cap,
		    j->op == X_EXEC ? "exec.max_concurrent" : "limits.session_calls");
		http_send_err(ht, req, 429, "too_many_calls", msg);
		goto fail;
	}
	http_inflight_add(ht, 1);
	return;
fail:
	j->req = NULL;
	xj_free(j);
}
