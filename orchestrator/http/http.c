/*
 * http.c: the HTTP/1.1 server (http.h): listener and accept back-off,
 * connection caps, request heads (read by common/h1head.c, the store
 * every daemon shares) and bodies, dispatch, whole replies. The request side (accessors, route table, Origin/Host/
 * auth, the counters page) is httpreq.c, below this file; streamed
 * request bodies and streamed replies are httpstream.c, above it (it
 * queues on c->out and calls the reply helpers http_int.h exports from
 * here); the structs all three share are http_int.h.
 *
 * Connections. Each accepted socket is a struct hconn with one state:
 *   C_IDLE     no request bytes; on the idle list (oldest first), closed
 *              after http.idle_timeout, or first when a cap or EMFILE
 *              needs a descriptor;
 *   C_READING  a request is arriving; its head and body must come within
 *              http.request_timeout (408);
 *   C_BODY     a request whose body is streamed (route->body_streamed) is
 *              with its handler from its head while the body arrives: the
 *              body is read only while the handler takes the bytes (input
 *              stops at PEND_MAX otherwise), no timeout here (the handler
 *              times its transfer), http.max_body does not apply;
 *   C_INFLIGHT the request is with its handler: no timeout (a long tool
 *              call keeps its time); input is still read, to see the
 *              client go (its call is then aborted, HTTP_ABORT_GONE), and
 *              kept (pipelining) up to PEND_MAX;
 *   C_SINK     an error went out and the connection closes: the write
 *              side is shut once the reply is written and input is read
 *              and dropped until EOF, SINK_LINGER_MS without a byte,
 *              SINK_LINGER_MAX_MS in all or SINK_DROP_MAX bytes, so a
 *              client still sending its body (a 413 at the head) sees the
 *              reply rather than a reset.
 * A reply's bytes wait in c->out; a client that takes none of them for
 * http.timeout loses the connection. One request is handled at a time:
 * the next one's bytes wait in c->in until the reply is out.
 *
 * Free rule (as the proxy's conn_kill): conn_kill closes the socket,
 * unhooks every event, hands the request in flight to its handler as gone
 * (req->c = NULL) and frees the connection from a deferred event, never
 * on the stack of its own callback. A request is freed only by its final
 * reply (http.h), so a handler's late reply never touches a freed
 * connection.
 *
 * Descriptors. At the connection cap (http.max_conns, kept below the
 * descriptor limit with FD_RESERVE for sandboxes, agents and logs) or the
 * per-address cap, the oldest idle connection (of that address) is closed
 * to make room; with none idle the new connection is answered 503 (429
 * per address) in its route's shape. On EMFILE/ENFILE accept() the oldest
 * idle connection is closed and accept retried; with none idle every
 * listener of the process pauses for a back-off (common/lguard.c), one
 * line per interval logged: no busy loop, no flood.
 *
 * Framing. A head is framed by h1_head_end and read by h1head_parse, the
 * rules every daemon shares (common/h1.c: version, field grammar,
 * Content-Length with Transfer-Encoding, duplicates, a coding other than
 * chunked, bare CR, obs-fold); its body is read through the same parser
 * (h1head_body), which stops at the message's end. A body announced over
 * http.max_body gets 413 before it is read (and before auth), a chunked
 * one as soon as it passes the limit; a head over http.max_headers,
 * HDR_MAX lines or a target over URL_MAX gets 431.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include <llhttp.h>

#include "h1.h"
#include "http.h"
#include "httplisten.h"
#include "http_int.h"
#include "lib/jsonu.h"
#include "addrcount.h"
#include "lguard.h"
#include "log.h"
#include "strnum.h"
#include "util.h"
#include "xmalloc.h"

#define FD_RESERVE		256	/* descriptors kept from connections */
#define URL_MAX			8192	/* request target (414 beyond: 431) */
#define PEND_MAX		(64 * 1024)	/* input kept while a request is
					 * in flight; reading stops beyond */
#define READ_CHUNK		16384
/* One read of a streamed body (C_BODY): the handler takes the bytes as
 * they come, so a large read is fewer loop turns per MiB uploaded. */
#define BODY_READ		(256 * 1024)
#define ACCEPT_BATCH		64	/* accepts per listener callback */
#define ACCEPT_LOG_INTERVAL_S	10
#define REFUSING_MAX		64	/* connections being refused at once;
					 * more are closed unanswered */
#define REFUSE_TIMEOUT_MS	2000	/* a refused connection's head */
/* After an error reply the client's input is read and dropped until it
 * pauses this long (a client that sends without waiting for 100-continue
 * would get a reset, not the reply, if we closed with its bytes unread),
 * at most SINK_LINGER_MAX_MS and SINK_DROP_MAX bytes in all (nginx's
 * lingering_timeout and lingering_time play the same part): one that
 * never stops sending is not reading the reply anyway. */
#define SINK_LINGER_MS		2000
#define SINK_LINGER_MAX_MS	30000
#define SINK_DROP_MAX		(64LL * 1024 * 1024)
#define RETRY_AFTER		"1"	/* seconds, on every 503 and 429 */

static void conn_kill(struct hconn *, const char *why);
static void conn_parse(struct hconn *);
static void conn_arm(struct hconn *);
static void conn_set(struct hconn *, enum cstate);

void
http_count_status(struct http *ht, int code)
{
	if (code < 300)
		ht->st_2xx++;
	else if (code < 500)
		ht->st_4xx++;
	else
		ht->st_5xx++;
	if (code == 401)
		ht->st_401++;
	if (code == 403)
		ht->st_403++;
}

/* ---- the request ---- */

static struct http_req *
req_new(struct http *ht, struct hconn *c)
{
	struct http_req *r = xcalloc(1, sizeof(*r));

	r->ht = ht;
	r->c = c;
	/* What h1head keeps of a head is never longer than the head. */
	h1head_init(&r->hd, (size_t)ht->conf->max_headers);
	buf_init(&r->body, (size_t)ht->conf->max_body);
	buf_init(&r->extra, 16384);
	r->clen = -1;
	return r;
}

void
http_req_free(struct http_req *r)
{
	if (r == NULL)
		return;
	if (r->dispatched)
		TAILQ_REMOVE(&r->ht->reqs, r, link);
	h1head_free(&r->hd);
	buf_free(&r->body);
	buf_free(&r->extra);
	free(r->path);
	free(r->query);
	free(r);
}

/* ---- replies ---- */

/* The head of a reply to r (on c). body_len -1: streamed (chunked). */
void
http_put_head(struct http *ht, struct hconn *c, struct http_req *r, int code,
    const char *ctype, long long body_len)
{
	int close;

	/* The rest of a streamed body is not read: the connection ends. */
	if (r->body_streamed && !r->body_done)
		c->close_after = 1;
	close = c->close_after || ht->draining || !r->keepalive;

	evbuffer_add_printf(c->out, "HTTP/1.1 %d %s\r\n", code, h1_reason(code));
	if (ctype != NULL)
		evbuffer_add_printf(c->out, "Content-Type: %s\r\n", ctype);
	if (code == 503 || code == 429)
		evbuffer_add_printf(c->out, "Retry-After: %s\r\n", RETRY_AFTER);
	if (r->extra.len > 0)
		evbuffer_add(c->out, r->extra.p, r->extra.len);
	if (body_len >= 0)
		evbuffer_add_printf(c->out, "Content-Length: %lld\r\n", body_len);
	else if (!r->http10)
		evbuffer_add_printf(c->out, "Transfer-Encoding: chunked\r\n");
	else
		close = 1;	/* HTTP/1.0: the end of the body is the close */
	if (close) {
		evbuffer_add_printf(c->out, "Connection: close\r\n");
		c->close_after = 1;
	}
	evbuffer_add(c->out, "\r\n", 2);
}

/* The request's reply is complete: the connection takes its next one. */
void
http_reply_done(struct hconn *c)
{
	c->req = NULL;
	if (c->close_after) {
		conn_set(c, C_SINK);
		http_conn_want_write(c);
		conn_arm(c);
		return;
	}
	conn_set(c, c->in.len > 0 ? C_READING : C_IDLE);
	if (c->reading_off) {
		c->reading_off = 0;
		event_add(c->rev, NULL);
	}
	http_conn_want_write(c);
	conn_arm(c);
	/* Pipelined bytes: parse them from a fresh callback. */
	if (c->in.len > 0)
		event_active(c->kick, EV_TIMEOUT, 0);
}

void
http_send_body(struct http *ht, struct http_req *r, int code,
    const char *ctype, const char *body, size_t len)
{
	struct hconn *c = r->c;

	if (!r->answered)
		http_count_status(ht, code);
	if (c == NULL || r->answered || r->streaming) {
		http_req_free(r);	/* gone, or answered at the deadline */
		return;
	}
	if (ctype != NULL)
		http_add_header(r, "Cache-Control", "no-store");
	http_put_head(ht, c, r, code, ctype, (long long)len);
	if (body != NULL && len > 0 && r->method != HTTP_M_HEAD)
		evbuffer_add(c->out, body, len);
	http_req_free(r);
	http_reply_done(c);
}

void
http_send_json(struct http *ht, struct http_req *r, int code, const cJSON *j)
{
	char *txt = cJSON_PrintUnformatted(j);

	http_send_body(ht, r, code, "application/json", txt, strlen(txt));
	free(txt);
}

void
http_send_err(struct http *ht, struct http_req *r, int code,
    const char *ecode, const char *msg)
{
	cJSON *o = http_err_json(ecode, msg);

	http_send_json(ht, r, code, o);
	cJSON_Delete(o);
}

/* Takes c's streamed body again: parse what waits, read more. */
void
http_body_kick(struct hconn *c)
{
	if (c->dead || c->st != C_BODY)
		return;
	if (c->reading_off) {
		c->reading_off = 0;
		event_add(c->rev, NULL);
	}
	event_active(c->kick, EV_TIMEOUT, 0);
}

/*
 * An error this layer answers on c (route shape), outside any handler:
 * the connection closes after it (C_SINK). r may be NULL (no request yet).
 */
static void
conn_error(struct hconn *c, int code, const char *ecode, const char *msg)
{
	struct http *ht = c->ht;
	struct http_req *r = c->req;
	cJSON *o;
	char *txt;
	size_t n;

	if (r == NULL)
		hreq_guess(c);	/* no head read: the route c->in's line names */
	o = hreq_route_error(r != NULL ? r->route : c->guess, code, ecode, msg);
	txt = cJSON_PrintUnformatted(o);
	n = strlen(txt);
	cJSON_Delete(o);
	http_count_status(ht, code);
	if (r != NULL && r->dispatched) {
		/* Never two replies to one request. */
		free(txt);
		conn_kill(c, ecode);
		return;
	}
	evbuffer_add_printf(c->out, "HTTP/1.1 %d %s\r\nContent-Type: "
	    "application/json\r\nCache-Control: no-store\r\n%sConnection: close\r\n"
	    "Content-Length: %zu\r\n\r\n", code, h1_reason(code),
	    code == 503 || code == 429 ? "Retry-After: " RETRY_AFTER "\r\n" : "", n);
	evbuffer_add(c->out, txt, n);
	free(txt);
	if (r != NULL) {
		http_req_free(r);
		c->req = NULL;
	}
	c->close_after = 1;
	conn_set(c, C_SINK);
	http_conn_want_write(c);
	conn_arm(c);
}

/* ---- dispatch ---- */

static void
send_route_err(struct http *ht, struct http_req *req, int status,
    const char *code, const char *msg)
{
	cJSON *o = hreq_route_error(req->route, status, code, msg);

	http_send_json(ht, req, status, o);
	cJSON_Delete(o);
}

/* The request on c is whole: to its handler (which owns it from now). */
static void
dispatch(struct hconn *c)
{
	struct http *ht = c->ht;
	struct http_req *req = c->req;
	const struct http_route *r = req->route;
	const char *path = req->path;

	req->dispatched = 1;
	TAILQ_INSERT_TAIL(&ht->reqs, req, link);
	if (!hreq_host_ok(ht, req)) {
		char shown[80], msg[256];
		const char *h = http_hdr(req, "Host");

		log_escape(shown, sizeof(shown), h, strlen(h));
		snprintf(msg, sizeof(msg), "Host '%s' not allowed: this server "
		    "listens on a loopback address and answers only requests for "
		    "localhost, 127.0.0.1 or [::1] (DNS rebinding defence)", shown);
		send_route_err(ht, req, 403, "forbidden_host", msg);
		return;
	}
	if (!hreq_origin_ok(ht, req)) {
		send_route_err(ht, req, 403, "forbidden_origin", ht->loopback ?
		    "Origin not allowed: only pages from localhost, 127.0.0.1, "
		    "[::1] or an origin in allowed_origins may call this server" :
		    "Origin not allowed: only origins in allowed_origins may call "
		    "this server");
		return;
	}
	if (r != NULL && !r->auth) {
		ht->req[r->endpoint]++;
		r->handler(ht, req, path, r->arg);
		return;
	}
	if (!hreq_auth_ok(ht, req)) {
		http_add_header(req, "WWW-Authenticate", "Bearer realm=\"orchestrator\"");
		send_route_err(ht, req, 401, "unauthorized", "send "
		    "Authorization: Bearer <key> with the orchestrator's key");
		return;
	}
	if (r != NULL) {
		ht->req[r->endpoint]++;
		r->handler(ht, req, path, r->arg);
		return;
	}
	ht->req[HTTP_EP_OTHER]++;
	http_send_err(ht, req, 404, "not_found", "no such endpoint (try /mcp, "
	    "/v1/sessions, /healthz, /readyz, /metrics)");
}

/* ---- connections ---- */

static void
conn_set(struct hconn *c, enum cstate st)
{
	if (c->st == C_IDLE && st != C_IDLE)
		TAILQ_REMOVE(&c->ht->idleq, c, idle);
	else if (c->st != C_IDLE && st == C_IDLE)
		TAILQ_INSERT_TAIL(&c->ht->idleq, c, idle);
	c->st = st;
	c->t_state = util_mono_ms();
	c->t_sink_read = c->t_state;
	c->sink_bytes = 0;
}

void
http_conn_want_write(struct hconn *c)
{
	if (!c->dead && evbuffer_get_length(c->out) > 0)
		event_add(c->wev, NULL);
}

/* The timer for c's state (see the top of the file). */
static void
conn_arm(struct hconn *c)
{
	const struct conf *cf = c->ht->conf;
	long long now = util_mono_ms(), due = -1, t;
	struct timeval tv;

	if (c->dead)
		return;
	switch (c->st) {
	case C_IDLE:
		due = c->t_state + cf->http_idle_timeout_ms;
		break;
	case C_READING:
		due = c->t_state + (c->refuse != NULL ? REFUSE_TIMEOUT_MS :
		    cf->http_request_timeout_ms);
		break;
	case C_BODY:
	case C_INFLIGHT:
		break;
	case C_SINK:
		due = c->t_sink_read + SINK_LINGER_MS;
		if (due > c->t_state + SINK_LINGER_MAX_MS)
			due = c->t_state + SINK_LINGER_MAX_MS;
		break;
	}
	if (evbuffer_get_length(c->out) > 0) {
		t = c->t_wrote + cf->http_timeout_ms;
		if (due == -1 || t > due)
			due = t;
	}
	if (due == -1) {
		event_del(c->tmo);
		return;
	}
	t = due > now ? due - now : 0;
	tv.tv_sec = t / 1000;
	tv.tv_usec = (t % 1000) * 1000;
	event_add(c->tmo, &tv);
}

static void
conn_free_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct hconn *c = arg;

	event_free(c->rev);
	event_free(c->wev);
	event_free(c->tmo);
	event_free(c->kick);
	evbuffer_free(c->out);
	buf_free(&c->in);
	free(c);
}

/*
 * Closes c now and frees it from a deferred event (see the top of the
 * file). A request with its handler is handed over as gone.
 */
static void
conn_kill(struct hconn *c, const char *why)
{
	struct http *ht = c->ht;
	struct http_req *r = c->req;
	static const struct timeval zero = { 0, 0 };

	if (c->dead)
		return;
	if (c->st == C_IDLE)
		TAILQ_REMOVE(&ht->idleq, c, idle);
	c->dead = 1;
	event_del(c->rev);
	event_del(c->wev);
	event_del(c->tmo);
	event_del(c->kick);
	close(c->fd);
	c->fd = -1;
	ht->nconns--;
	if (c->refuse != NULL)
		ht->nrefusing--;
	addrcount_put(ht->addrs, c->ac);
	c->ac = NULL;
	TAILQ_REMOVE(&ht->conns, c, all);
	c->req = NULL;
	if (r != NULL && r->dispatched) {
		r->c = NULL;
		ht->n_gone++;
		log_debug("http: client %s gone (%s) with a request in flight",
		    c->peer, why);
		if (r->abort_cb != NULL && !r->aborted) {
			r->aborted = 1;
			r->abort_cb(r, HTTP_ABORT_GONE, r->abort_arg);
		}
	} else
		http_req_free(r);
	if (event_base_once(ht->base, -1, EV_TIMEOUT, conn_free_cb, c, &zero) == -1)
		log_warnx("http: cannot schedule a connection's free (leaked)");
}

/* At most one line per interval for a kind of event; 1: log it now. */
static int
log_now(long long *last, unsigned long long *skipped)
{
	long long now = util_mono_ms();

	if (*last != 0 && now - *last < ACCEPT_LOG_INTERVAL_S * 1000LL) {
		(*skipped)++;
		return 0;
	}
	*last = now;
	return 1;
}

/* Is c's streamed body taken by its handler right now? */
static int
body_taken(const struct hconn *c)
{
	return c->st == C_BODY && c->req != NULL && c->req->body_reading &&
	    !c->req->body_paused;
}

static enum http_method
method_of(uint8_t m)
{
	switch (m) {	/* llhttp's enum llhttp_method */
	case HTTP_GET: return HTTP_M_GET;
	case HTTP_POST: return HTTP_M_POST;
	case HTTP_DELETE: return HTTP_M_DELETE;
	case HTTP_PUT: return HTTP_M_PUT;
	case HTTP_PATCH: return HTTP_M_PATCH;
	case HTTP_OPTIONS: return HTTP_M_OPTIONS;
	case HTTP_HEAD: return HTTP_M_HEAD;
	default: break;
	}
	return HTTP_M_OTHER;
}

/*
 * The body's sink (r->hd.on_body), called inside h1head_body, so it never
 * answers: a streamed body goes to its handler (which never answers from
 * inside either, http.h), a whole one into r->body up to http.max_body
 * (c->body_full: conn_body answers 413 once the parse returned).
 */
static int
body_in(void *arg, const char *at, size_t n)
{
	struct hconn *c = arg;
	struct http_req *r = c->req;

	if (r->body_streamed) {
		if (c->st != C_BODY || r->body_data == NULL)
			return -1;
		r->body_data(r, at, n, r->body_arg);
		return 0;
	}
	if (buf_add(&r->body, at, n) == -1) {
		c->body_full = 1;
		return -1;
	}
	return 0;
}

/* 400 for a malformed request on c (why: what was wrong), logged at most once an interval. */
static void
bad_request(struct hconn *c, const char *why)
{
	static long long last;
	static unsigned long long skipped;
	char msg[256], shown[120];

	c->ht->n_bad++;
	log_escape(shown, sizeof(shown), why, strlen(why));
	if (log_now(&last, &skipped)) {
		log_info("http: 400 from %s: %s (%llu more since the last line)",
		    c->peer, shown, skipped);
		skipped = 0;
	}
	snprintf(msg, sizeof(msg), "Bad Request: malformed HTTP request (%s)", shown);
	conn_error(c, 400, "bad_request", msg);
}

static void
head_too_large(struct hconn *c)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "Request Header Fields Too Large: the head passed "
	    "http.max_headers (%lld bytes), %d header lines or a target of %d bytes",
	    c->ht->conf->max_headers, HDR_MAX, URL_MAX);
	conn_error(c, 431, "headers_too_large", msg);
}

/* The answer to a head h1head_parse refused with st (why: its reason). */
static void
head_refused(struct hconn *c, int st, const char *why)
{
	char msg[200];

	switch (st) {
	case 431:
		head_too_large(c);
		break;
	case 505:
		conn_error(c, 505, "http_version", "only HTTP/1.0 and HTTP/1.1 are served");
		break;
	case 501:
		snprintf(msg, sizeof(msg), "Not Implemented: %s", why);
		conn_error(c, 501, "not_implemented", msg);
		break;
	default:
		bad_request(c, why);
		break;
	}
}

/*
 * The head of the request arriving on c (c->req NULL): framed by the rules
 * every daemon shares before it is read (common/h1.h: no bare CR or LF,
 * obs-fold or NUL, at most a few leading empty lines, at most
 * http.max_headers bytes and never more than c->in holds), read by
 * h1head_parse (version, field grammar, one body framing), then judged by
 * this server's own rules: the connection's refusal, a path target,
 * Expect, http.max_body. 0: c->req holds the head, whose bytes left
 * c->in; -1: more bytes must come, or c was answered.
 */
static int
conn_head(struct hconn *c)
{
	struct http *ht = c->ht;
	struct http_req *r;
	size_t max = (size_t)ht->conf->max_headers;
	const char *e;
	char why[160], msg[200];
	long end;
	int st;

	if (max >= c->in.max)
		max = c->in.max - 1;
	end = h1_head_end(c->in.p, c->in.len, max);
	if (end == H1_HEAD_MORE)
		return -1;
	if (end == H1_HEAD_LARGE) {
		head_too_large(c);
		return -1;
	}
	if (end < 0) {
		bad_request(c, "bare CR or LF, obs-fold, NUL, or empty lines only");
		return -1;
	}
	r = req_new(ht, c);
	if ((st = h1head_parse(&r->hd, HTTP_REQUEST, c->in.p, (size_t)end, HDR_MAX,
	    why, sizeof(why))) != 0) {
		http_req_free(r);	/* answered in the shape c->in's line names */
		head_refused(c, st, why);
		return -1;
	}
	c->req = r;
	buf_consume(&c->in, (size_t)end);
	r->method = method_of(r->hd.method);
	r->keepalive = r->hd.keepalive;
	r->http10 = r->hd.minor == 0;
	r->hd.on_body = body_in;
	r->hd.arg = c;
	if (r->hd.url_l > URL_MAX) {
		head_too_large(c);
		return -1;
	}
	if (hreq_split_target(r) == 0)
		r->route = hreq_route_find(ht, r->path);
	if (c->refuse != NULL) {
		conn_error(c, c->refuse_code, c->refuse_code == 429 ?
		    "too_many_connections" : "overloaded", c->refuse);
		return -1;
	}
	if (r->path == NULL) {
		bad_request(c, "the request target must be a path");
		return -1;
	}
	if (r->hd.upgrade)
		c->close_after = 1;	/* no upgrades here: answer and close */
	if (r->hd.has_cl)
		r->clen = r->hd.content_length > (uint64_t)LLONG_MAX ? LLONG_MAX :
		    (long long)r->hd.content_length;
	if ((e = http_hdr(r, "Expect")) != NULL && strcasecmp(e, "100-continue") != 0) {
		bad_request(c, "only Expect: 100-continue is understood");
		return -1;
	}
	if (r->route != NULL && r->route->body_streamed != NULL &&
	    r->route->body_streamed(r->path, r->method)) {
		r->body_streamed = 1;
		r->expect100 = e != NULL;	/* when the handler takes it */
		return 0;
	}
	if (r->hd.has_cl && r->hd.content_length > (uint64_t)ht->conf->max_body) {
		snprintf(msg, sizeof(msg), "Payload Too Large: the request body is "
		    "%llu bytes; the limit is %lld bytes (http.max_body)",
		    (unsigned long long)r->hd.content_length, ht->conf->max_body);
		ht->n_too_large++;
		log_info("413: request body of %llu bytes refused (limit %lld)",
		    (unsigned long long)r->hd.content_length, ht->conf->max_body);
		conn_error(c, 413, "too_large", msg);
		return -1;
	}
	if (e != NULL) {
		if (!r->http10)
			evbuffer_add_printf(c->out, "HTTP/1.1 100 Continue\r\n\r\n");
		http_conn_want_write(c);
	}
	return 0;
}

/* c->req was read whole: to its handler, or its streamed body's end to it. */
static void
conn_msg_done(struct hconn *c)
{
	struct http_req *r = c->req;
	int streaming = c->st == C_BODY;

	if (r->body_streamed)
		r->body_done = 1;
	conn_set(c, C_INFLIGHT);
	conn_arm(c);
	if (!streaming)
		dispatch(c);	/* may reply at once: c kicks itself */
	else if (r->body_end != NULL)
		r->body_end(r, r->body_arg);
}

/*
 * Reads p[0..n) as c->req's body: c->in's bytes (in 1), or a read of a
 * streamed body taken as it is (in 0: no copy into c->in; what follows the
 * body, a pipelined request, goes there).
 */
static void
conn_body(struct hconn *c, const char *p, size_t n, int in)
{
	struct http_req *r = c->req;
	struct http *ht = c->ht;
	const char *why;
	char msg[200];
	long used;

	if ((used = h1head_body(&r->hd, p, n)) < 0) {
		if (c->dead || c->st == C_SINK)
			return;
		if (c->body_full) {
			snprintf(msg, sizeof(msg), "Payload Too Large: the chunked request "
			    "body passed the limit of %lld bytes (http.max_body)",
			    ht->conf->max_body);
			ht->n_too_large++;
			log_info("413: chunked request body over %lld bytes refused",
			    ht->conf->max_body);
			conn_error(c, 413, "too_large", msg);
		} else {
			if ((why = llhttp_get_error_reason(&r->hd.p)) == NULL)
				why = llhttp_errno_name(llhttp_get_errno(&r->hd.p));
			bad_request(c, why);
		}
		if (in && !c->dead)
			buf_reset(&c->in);
		return;
	}
	if (in)
		buf_consume(&c->in, (size_t)used);
	else if ((size_t)used < n && buf_add(&c->in, p + used, n - (size_t)used) == -1) {
		conn_kill(c, "input overflow");
		return;
	}
	if (r->hd.msg_done)
		conn_msg_done(c);
	else if (c->st == C_BODY && c->reading_off)
		http_body_kick(c);
}

/* Reads what c->in holds while a request is arriving. */
static void
conn_parse(struct hconn *c)
{
	struct http_req *r;

	if (c->dead || (c->st != C_READING && c->st != C_BODY) || c->in.len == 0)
		return;
	if (c->st == C_READING && c->req == NULL) {
		if (conn_head(c) == -1)
			return;
		r = c->req;
		if (r->hd.msg_done) {
			conn_msg_done(c);	/* no body */
			return;
		}
		if (r->body_streamed) {
			conn_set(c, C_BODY);	/* the head: to its handler */
			conn_arm(c);
			dispatch(c);
			return;
		}
		if (c->in.len == 0)
			return;
	}
	if (c->st == C_BODY && !body_taken(c))
		return;		/* the handler is not taking bytes now */
	conn_body(c, c->in.p, c->in.len, 1);
}

static void
kick_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	conn_parse(arg);
}

static void
read_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct hconn *c = arg;
	static char tmp[BODY_READ];	/* the loop thread's only */
	ssize_t n;

	n = read(c->fd, tmp, c->st == C_BODY || c->st == C_SINK ? BODY_READ :
	    READ_CHUNK);
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		conn_kill(c, "read error");
		return;
	}
	if (n == 0) {
		c->eof = 1;
		if (c->st == C_SINK && evbuffer_get_length(c->out) > 0) {
			event_del(c->rev);	/* write the reply, then close */
			return;
		}
		conn_kill(c, "eof");
		return;
	}
	if (c->st == C_SINK) {
		/* dropped; the linger runs from the last byte */
		c->t_sink_read = util_mono_ms();
		if ((c->sink_bytes += n) > SINK_DROP_MAX) {
			conn_kill(c, "sink full");
			return;
		}
		conn_arm(c);
		return;
	}
	if (c->in.len == 0 && body_taken(c)) {
		conn_body(c, tmp, (size_t)n, 0);	/* no copy into c->in */
		goto taken;
	}
	if (buf_add(&c->in, tmp, (size_t)n) == -1) {
		conn_kill(c, "input overflow");
		return;
	}
	if (c->st == C_IDLE) {
		conn_set(c, C_READING);
		conn_arm(c);
	}
	if (c->st == C_READING || c->st == C_BODY)
		conn_parse(c);
taken:
	if ((c->st == C_INFLIGHT || c->st == C_BODY) && !c->dead &&
	    c->in.len >= PEND_MAX) {
		event_del(c->rev);	/* pipelined too far ahead */
		c->reading_off = 1;
	}
}

static void
write_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct hconn *c = arg;
	int n;

	n = evbuffer_write(c->out, c->fd);
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		conn_kill(c, "write error");
		return;
	}
	if (n > 0)
		c->t_wrote = util_mono_ms();
	if (evbuffer_get_length(c->out) > 0) {
		conn_arm(c);
		if (evbuffer_get_length(c->out) < HTTP_DRAIN_LOW &&
		    c->req != NULL && c->req->drain_cb != NULL &&
		    c->req->streaming)
			c->req->drain_cb(c->req, c->req->drain_arg);
		return;
	}
	event_del(c->wev);
	if (c->st == C_SINK) {
		if (c->eof) {
			conn_kill(c, "closed");
			return;
		}
		if (!c->wr_shut) {
			(void)shutdown(c->fd, SHUT_WR);
			c->wr_shut = 1;
		}
	}
	if (c->reading_off && c->st != C_INFLIGHT && c->st != C_BODY) {
		c->reading_off = 0;
		event_add(c->rev, NULL);
	}
	conn_arm(c);
	if (c->req != NULL && c->req->drain_cb != NULL && c->req->streaming)
		c->req->drain_cb(c->req, c->req->drain_arg);	/* may end it */
}

static void
tmo_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct hconn *c = arg;
	struct http *ht = c->ht;
	long long now = util_mono_ms();
	char msg[160];

	if (evbuffer_get_length(c->out) > 0 &&
	    now - c->t_wrote >= ht->conf->http_timeout_ms) {
		ht->n_timeout++;
		log_info("http: client %s read nothing of its reply for %lldms "
		    "(http.timeout): closed", c->peer, ht->conf->http_timeout_ms);
		conn_kill(c, "write timeout");
		return;
	}
	switch (c->st) {
	case C_IDLE:
		if (now - c->t_state >= ht->conf->http_idle_timeout_ms) {
			ht->n_idle_closed++;
			conn_kill(c, "idle");
			return;
		}
		break;
	case C_READING:
		ht->n_timeout++;
		if (c->refuse != NULL) {
			conn_kill(c, "refused");
			return;
		}
		snprintf(msg, sizeof(msg), "Request Timeout: the request did not "
		    "arrive whole within %lldms (http.request_timeout)",
		    ht->conf->http_request_timeout_ms);
		conn_error(c, 408, "request_timeout", msg);
		return;
	case C_SINK:
		if ((now - c->t_sink_read >= SINK_LINGER_MS ||
		    now - c->t_state >= SINK_LINGER_MAX_MS) &&
		    evbuffer_get_length(c->out) == 0) {
			conn_kill(c, "linger");
			return;
		}
		break;
	case C_BODY:
	case C_INFLIGHT:
		break;
	}
	conn_arm(c);
}

/* Closes the oldest idle connection (from ac's address when ac != NULL). */
static int
evict_idle(struct http *ht, const struct addrcount_ent *ac)
{
	struct hconn *c;

	TAILQ_FOREACH(c, &ht->idleq, idle)
		if (ac == NULL || c->ac == ac) {
			ht->n_evicted++;
			conn_kill(c, "evicted");
			return 0;
		}
	return -1;
}

static void
conn_new(struct http *ht, int fd, const struct sockaddr_storage *ss)
{
	struct addrcount_ent *ac = addrcount_get(ht->addrs, (const struct sockaddr *)ss);
	struct hconn *c;
	const char *refuse = NULL;
	int code = 0, addr_full;
	static char msg_total[160], msg_addr[160];

	/*
	 * Counted in at once: closing an idle connection below may close the
	 * address's last other one, which would free its counter while ac
	 * still points at it (a use-after-free at max_conns_per_addr 1).
	 */
	addr_full = addrcount_full(ac, ht->conf->http_max_conns_per_addr);
	addrcount_hold(ht->addrs, ac);
	if (ht->nconns >= ht->max_conns && evict_idle(ht, NULL) == -1) {
		snprintf(msg_total, sizeof(msg_total), "Service Unavailable: %lld "
		    "client connections are open, none idle (http.max_conns); retry "
		    "in a moment", ht->max_conns);
		refuse = msg_total;
		code = 503;
		ht->n_refused_total++;
	} else if (addr_full && evict_idle(ht, ac) == -1) {
		snprintf(msg_addr, sizeof(msg_addr), "Too Many Requests: your "
		    "address has %lld connections open, none idle "
		    "(http.max_conns_per_addr)", ht->conf->http_max_conns_per_addr);
		refuse = msg_addr;
		code = 429;
		ht->n_refused_addr++;
	}
	if (refuse != NULL && ht->nrefusing >= REFUSING_MAX) {
		close(fd);	/* no descriptor to spend on an answer */
		addrcount_put(ht->addrs, ac);
		return;
	}
	c = xcalloc(1, sizeof(*c));
	c->ht = ht;
	c->fd = fd;
	c->ac = ac;	/* held above */
	c->refuse = refuse;
	c->refuse_code = code;
	if (refuse != NULL)
		ht->nrefusing++;
	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, c->peer,
		    sizeof(c->peer));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr,
		    c->peer, sizeof(c->peer));
	else
		snprintf(c->peer, sizeof(c->peer), "local");
	buf_init(&c->in, PEND_MAX + BODY_READ);
	c->out = evbuffer_new();
	c->rev = event_new(ht->base, fd, EV_READ | EV_PERSIST, read_cb, c);
	c->wev = event_new(ht->base, fd, EV_WRITE | EV_PERSIST, write_cb, c);
	c->tmo = evtimer_new(ht->base, tmo_cb, c);
	c->kick = event_new(ht->base, -1, 0, kick_cb, c);
	c->t_wrote = util_mono_ms();
	c->st = C_READING;	/* not on the idle list yet */
	conn_set(c, refuse != NULL ? C_READING : C_IDLE);
	TAILQ_INSERT_TAIL(&ht->conns, c, all);
	ht->nconns++;
	event_add(c->rev, NULL);
	conn_arm(c);
}

static void
accept_cb(evutil_socket_t lfd, short ev UNUSED, void *arg)
{
	struct http *ht = arg;
	struct sockaddr_storage ss;
	socklen_t len;
	int i, fd, tries = 0;

	memset(&ss, 0, sizeof(ss));

	for (i = 0; i < ACCEPT_BATCH; i++) {
		len = sizeof(ss);
		fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK |
		    SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
				continue;
			ht->n_accept_err++;
			if ((errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) && tries++ < 4 &&
			    evict_idle(ht, NULL) == 0)
				continue;	/* a descriptor freed: retry */
			lguard_accept_failed(errno);	/* every listener pauses */
			return;
		}
		lguard_accept_ok();
		conn_new(ht, fd, &ss);
	}
}

/* ---- the server ---- */

/* A server without a listener (http_new's first half; the fuzz target's). */
static struct http *
http_alloc(struct event_base *base, const struct conf *conf, const char *key,
    const struct http_route *routes, size_t n, long long max_fds)
{
	struct http *ht = xcalloc(1, sizeof(*ht));

	ht->base = base;
	ht->conf = conf;
	ht->routes = routes;
	ht->nroutes = n;
	ht->key = xstrdup(key);
	ht->keylen = strlen(key);
	ht->lfd = -1;
	ht->addrs = addrcount_new(0);
	TAILQ_INIT(&ht->conns);
	TAILQ_INIT(&ht->idleq);
	TAILQ_INIT(&ht->reqs);
	ht->max_conns = conf->http_max_conns;
	if (max_fds > 0 && ht->max_conns > max_fds - FD_RESERVE) {
		ht->max_conns = max_fds - FD_RESERVE > 16 ? max_fds - FD_RESERVE : 16;
		log_warnx("http.max_conns %lld is above the descriptor limit %lld "
		    "less %d kept for sandboxes and agents: at most %lld connections",
		    conf->http_max_conns, max_fds, FD_RESERVE, ht->max_conns);
	}
	return ht;
}

struct http *
http_new(struct event_base *base, const struct conf *conf, const char *key,
    const struct http_route *routes, size_t n, long long max_fds, char *err,
    size_t errlen)
{
	struct http *ht = http_alloc(base, conf, key, routes, n, max_fds);
	char host[256];
	long long port;

	if (httplisten_split(conf->listen, host, sizeof(host), &port, err,
	    errlen) == -1)
		goto fail;
	ht->loopback = httplisten_loopback(host);
	snprintf(ht->listen_host, sizeof(ht->listen_host), strchr(host, ':') ?
	    "[%s]" : "%s", host);
	if ((ht->lfd = httplisten_open(host, port, err, errlen)) == -1)
		goto fail;
	ht->lev = event_new(base, ht->lfd, EV_READ | EV_PERSIST, accept_cb, ht);
	event_add(ht->lev, NULL);
	lguard_add_event(ht->lev, NULL, NULL);	/* accept_cb sheds idle ones itself */
	return ht;
fail:
	http_free(ht);
	return NULL;
}

void
http_drain(struct http *ht)
{
	ht->draining = 1;	/* the listener stays: see http.h */
}

int
http_draining(const struct http *ht)
{
	return ht->draining;
}

/* The first dispatched request still owed an answer, or NULL. */
static struct http_req *
next_unanswered(struct http *ht)
{
	struct http_req *r;

	TAILQ_FOREACH(r, &ht->reqs, link)
		if (!r->answered && !(r->aborted && r->c == NULL))
			return r;
	return NULL;
}

int
http_abort_inflight(struct http *ht)
{
	struct http_req *r;
	int n = 0;
	cJSON *o;
	char *txt;

	while ((r = next_unanswered(ht)) != NULL) {
		n++;
		if (r->abort_cb != NULL && !r->aborted) {
			r->aborted = 1;
			r->abort_cb(r, HTTP_ABORT_DEADLINE, r->abort_arg);
			continue;	/* r may be freed: look again */
		}
		r->aborted = 1;
		r->answered = 1;
		if (r->c == NULL)
			continue;
		/* Answered here; the handler's own reply frees r later. */
		o = hreq_route_error(r->route, 503, "draining", "Service Unavailable: the "
		    "orchestrator shut down (drain deadline) before this request "
		    "finished; retry");
		txt = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
		http_count_status(ht, 503);
		r->c->close_after = 1;
		if (r->streaming) {
			/* one more event, then the end */
			if (!r->http10)
				evbuffer_add_printf(r->c->out, "%zx\r\n", strlen(txt) + 23);
			evbuffer_add_printf(r->c->out, "event: message\ndata: %s\n\n", txt);
			if (!r->http10)
				evbuffer_add(r->c->out, "\r\n0\r\n\r\n", 7);
		} else {
			r->extra.len = 0;
			http_put_head(ht, r->c, r, 503, "application/json",
			    (long long)strlen(txt));
			evbuffer_add(r->c->out, txt, strlen(txt));
		}
		free(txt);
		conn_set(r->c, C_SINK);
		http_conn_want_write(r->c);
		conn_arm(r->c);
		r->c->req = NULL;	/* the connection no longer waits for r */
		r->c = NULL;
	}
	return n;
}

int
http_output_pending(const struct http *ht)
{
	const struct hconn *c;
	int n = 0;

	TAILQ_FOREACH(c, &ht->conns, all)
		if (evbuffer_get_length(c->out) > 0)
			n++;
	return n;
}

void
http_inflight_add(struct http *ht, int delta)
{
	ht->inflight += delta;
}

int
http_inflight(const struct http *ht)
{
	return ht->inflight;
}

struct event_base *
http_base(const struct http *ht)
{
	return ht->base;
}

void
http_free(struct http *ht)
{
	struct hconn *c;

	if (ht == NULL)
		return;
	/* Connections go without their handlers hearing (the daemon ends). */
	while ((c = TAILQ_FIRST(&ht->conns)) != NULL) {
		if (c->req != NULL && c->req->dispatched) {
			c->req->c = NULL;
			c->req->abort_cb = NULL;
			c->req = NULL;
		}
		conn_kill(c, "shutdown");
	}
	if (ht->lev != NULL) {
		lguard_del(ht->lev);
		event_free(ht->lev);
	}
	if (ht->lfd != -1)
		close(ht->lfd);
	addrcount_free(ht->addrs);
	if (ht->key != NULL) {
		explicit_bzero(ht->key, ht->keylen);
		free(ht->key);
	}
	free(ht);
}
