/*
 * conn.c: the client connections: accept, the request cycle (head, open,
 * forward, response), the upgraded byte stream, backpressure, timeouts,
 * limits; the upstream goes back to its route's pool (upool.c) when its
 * last exchange ended cleanly. Each callback that may end a connection
 * (conn_kill) returns, or checks c->dead, before touching it again; the
 * memory goes at the end of the event-loop turn (the graveyard).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/ssl.h>

#include "conn.h"
#include "addrcount.h"
#include "evrelay.h"
#include "h1.h"
#include "log.h"
#include "req.h"
#include "util.h"
#include "xmalloc.h"

#define CLOSING_MS	5000	/* a last response gets this long to flush */
#define WAKE_RETRY_S	5	/* Retry-After when timeouts.wake ends a wait */
/* A whole response up to this size goes to a plain client in one sendmsg
 * (resp_send_first): pulled up contiguous, so kept small. */
#define SEND_FIRST_MAX	65536

/* Open connections per client address (limits.max_conns_per_addr). */
static struct addrcount *addrs;
static TAILQ_HEAD(connq, conn) conns = TAILQ_HEAD_INITIALIZER(conns);
static TAILQ_HEAD(idleq, conn) idles = TAILQ_HEAD_INITIALIZER(idles);
static TAILQ_HEAD(graveq, conn) grave = TAILQ_HEAD_INITIALIZER(grave);
static struct event *reaper;
static uint64_t next_conn_id;
static struct log_rate bad_rl;

static void cl_read(struct bufferevent *, void *);
static void cl_write(struct bufferevent *, void *);
static void cl_event(struct bufferevent *, short, void *);
static void up_read(struct bufferevent *, void *);
static void up_write(struct bufferevent *, void *);
static void up_event(struct bufferevent *, short, void *);
static void head_process(struct conn *);
static void conn_arm(struct conn *);
static void open_done(void *, int, const char *, int, int, const char *);

/* The upstream closed, whatever it was doing. */
static void
up_drop(struct conn *c)
{
	if (c->up != NULL)
		bufferevent_free(c->up);
	c->up = NULL;
	c->up_reuse = 0;
}

/*
 * The client connection is done with its upstream: back to the route's
 * pool when its last exchange ended cleanly (up_reuse, set by
 * response_done) and the route is still the one it was opened under.
 */
static void
up_release(struct conn *c)
{
	if (c->up != NULL && c->up_reuse && c->rt != NULL && c->up_epoch == c->rt->epoch) {
		upool_put(c->rt, c->up);
		c->up = NULL;
		c->up_reuse = 0;
		return;
	}
	up_drop(c);
}

/* Input kept per side: a whole head must fit, whatever the watermark. */
static size_t
read_hwm(void)
{
	size_t h = (size_t)gw_state.c->high_watermark, m = (size_t)gw_state.c->header_bytes + 1;

	return h > m ? h : m;
}

static void
reap_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct conn *c;

	(void)fd;
	(void)ev;
	(void)arg;
	while ((c = TAILQ_FIRST(&grave)) != NULL) {
		TAILQ_REMOVE(&grave, c, all);
		free(c);
	}
}

static void
idle_unlink(struct conn *c)
{
	if (c->in_idle) {
		TAILQ_REMOVE(&idles, c, idle);
		c->in_idle = 0;
	}
}

static void
heads_free(struct conn *c)
{
	if (c->req != NULL) {
		h1head_free(c->req);
		free(c->req);
		c->req = NULL;
	}
	if (c->resp != NULL) {
		h1head_free(c->resp);
		free(c->resp);
		c->resp = NULL;
	}
	if (c->fwd != NULL) {
		buf_free(c->fwd);
		free(c->fwd);
		c->fwd = NULL;
	}
}

static void
conn_kill(struct conn *c)
{
	if (c->dead)
		return;
	c->dead = 1;
	log_debug("conn=%llx addr=%s host=%s requests=%u closed", (unsigned long long)c->id,
	    addrcount_ip(c->ae), c->rt != NULL ? c->rt->host : "-", c->nreq);
	if (c->open_id != 0)
		ctl_cancel(c->open_id);
	c->open_id = 0;
	idle_unlink(c);
	up_release(c);
	if (c->rt != NULL)
		LIST_REMOVE(c, rlink);
	c->rt = NULL;
	if (c->cl != NULL)
		bufferevent_free(c->cl);
	c->cl = NULL;
	if (c->tmo != NULL)
		event_free(c->tmo);
	c->tmo = NULL;
	heads_free(c);
	addrcount_put(addrs, c->ae);
	TAILQ_REMOVE(&conns, c, all);
	TAILQ_INSERT_TAIL(&grave, c, all);
	gw_state.nconns--;
	event_active(reaper, EV_TIMEOUT, 0);
}

static void
set_state(struct conn *c, int st)
{
	if (st != CS_OPEN && c->open_id != 0) {
		/* left waiting for the app (timeout, client gone): no answer */
		ctl_cancel(c->open_id);
		c->open_id = 0;
	}
	c->st = (uint8_t)st;
	c->since = util_mono_coarse_ms();
	conn_arm(c);
}

/*
 * The last response is out: half-close and read (and drop) what the
 * client still sends until it closes, so that the kernel does not answer
 * its unread bytes with a reset that could destroy the response (a
 * lingering close, as nginx does); at most CLOSING_MS.
 */
static void
closing_flushed(struct conn *c)
{
	if (c->tls || c->cl_eof || c->lingering) {
		if (c->tls || c->cl_eof)
			conn_kill(c);
		return;
	}
	/*
	 * A client that asked to close (Connection: close, HTTP/1.0) and whose
	 * request was read whole sends nothing more (RFC 9112 9.6): close at
	 * once, as nginx does when nothing is pending. One request per
	 * connection is the common case for such clients.
	 */
	if (c->cl_close && c->req_done &&
	    evbuffer_get_length(bufferevent_get_input(c->cl)) == 0) {
		conn_kill(c);
		return;
	}
	c->lingering = 1;
	shutdown(bufferevent_getfd(c->cl), SHUT_WR);
}

/*
 * Bytes wait in the client's output: let libevent write them. A plain
 * client's write event is enabled only from the first time this happens
 * (responses sent whole at once never arm it: resp_send_first), so every
 * place that queues output for the client calls this.
 */
static void
cl_out(struct conn *c)
{
	if (!c->dead && c->cl != NULL && evbuffer_get_length(bufferevent_get_output(c->cl)) > 0)
		evrelay_bev_enable(c->cl, EV_WRITE);
}

/* Queues a whole answer (out) and closes or goes on with the next request. */
static void
answer(struct conn *c, const struct buf *out, int close)
{
	struct evbuffer *o = bufferevent_get_output(c->cl);

	if (out->len > 0)
		evbuffer_add(o, out->p, out->len);
	c->sent = 1;
	if (close || c->cl_eof) {
		bufferevent_setwatermark(c->cl, EV_WRITE, 0, 0);
		up_release(c);
		heads_free(c);
		set_state(c, CS_CLOSING);
		evrelay_bev_enable(c->cl, EV_READ);
		cl_out(c);
		if (evbuffer_get_length(o) == 0)
			closing_flushed(c);
		return;
	}
	/* head_process, our caller, goes on with a pipelined request */
	heads_free(c);
	c->head_started = 0;
	set_state(c, CS_HEAD);
	evrelay_bev_enable(c->cl, EV_READ);
	cl_out(c);
	if (evbuffer_get_length(bufferevent_get_input(c->cl)) == 0 && !c->in_idle) {
		TAILQ_INSERT_TAIL(&idles, c, idle);
		c->in_idle = 1;
	}
}

/* A page of our own: status, title, text, extra header lines (or NULL);
 * close after it. */
static void
answer_page_x(struct conn *c, int status, const char *title, const char *text,
    const char *extra)
{
	struct buf b;

	if (c->sent && c->st != CS_HEAD) {
		conn_kill(c);	/* a response already started: cut it */
		return;
	}
	buf_init(&b, 16384);
	if (page_build(&b, status, title, text, extra, 1) == -1) {
		buf_free(&b);
		conn_kill(c);
		return;
	}
	answer(c, &b, 1);
	buf_free(&b);
}

static void
answer_page(struct conn *c, int status, const char *title, const char *text)
{
	answer_page_x(c, status, title, text, NULL);
}

/* 503 with Retry-After: the sandbox is waking up (or did not in time). */
static void
answer_starting(struct conn *c, int retry_after, const char *text)
{
	char extra[64];

	snprintf(extra, sizeof(extra), "Retry-After: %d\r\n", retry_after);
	answer_page_x(c, 503, "The sandbox is starting", text, extra);
}

/* The deadline of c's current state (0: none). */
static long long
deadline(const struct conn *c)
{
	const struct gwconf *k = gw_state.c;

	switch (c->st) {
	case CS_TLS:
		return c->since + k->head_ms;
	case CS_HEAD:
		return c->head_started ? c->since + k->head_ms : c->last + k->idle_ms;
	case CS_OPEN:
		return c->since + k->wake_ms;
	case CS_CONNECT:
		return c->since + k->connect_ms;
	case CS_FWD:
		return k->response_ms > 0 ? c->last + k->response_ms : 0;
	case CS_UPGRADED:
		return k->upgraded_ms > 0 ? c->last + k->upgraded_ms : 0;
	default:
		return c->since + CLOSING_MS;
	}
}

static void
conn_arm(struct conn *c)
{
	long long d = deadline(c), now = util_mono_coarse_ms(), left;
	struct timeval tv;

	if (d == 0) {
		event_del(c->tmo);
		return;
	}
	left = d - now;
	if (left < 10)
		left = 10;
	tv.tv_sec = left / 1000;
	tv.tv_usec = (left % 1000) * 1000;
	event_add(c->tmo, &tv);
}

static void
tmo_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct conn *c = arg;
	long long d = deadline(c);

	(void)fd;
	(void)ev;
	if (d == 0)
		return;
	if (util_mono_coarse_ms() < d) {
		conn_arm(c);	/* traffic moved the deadline */
		return;
	}
	switch (c->st) {
	case CS_HEAD:
		if (c->head_started)
			answer_page(c, 408, "Request timeout",
			    "The request head did not arrive in time.");
		else
			conn_kill(c);
		return;
	case CS_OPEN:
		/* the orchestrator is still waking the sandbox (or is stuck) */
		answer_starting(c, WAKE_RETRY_S, "The sandbox is starting; try again in a few seconds.");
		return;
	case CS_CONNECT:
		answer_page(c, 504, "App timeout", "The app did not accept the connection in time.");
		return;
	case CS_FWD:
		if (c->resp == NULL && !c->sent)
			answer_page(c, 504, "App timeout",
			    "The app did not answer in time.");
		else
			conn_kill(c);
		return;
	default:
		conn_kill(c);
	}
}

int
conn_shed_idle(void)
{
	struct conn *c = TAILQ_FIRST(&idles);

	if (c == NULL)
		return 0;
	conn_kill(c);
	return 1;
}

void
conn_accept(int fd, const struct sockaddr *sa, int salen)
{
	struct addrcount_ent *ae;
	struct conn *c;
	int one = 1, full;

	(void)salen;
	if (addrs == NULL)
		addrs = addrcount_new(0);
	ae = addrcount_get(addrs, sa);
	full = addrcount_full(ae, gw_state.c->max_conns_per_addr);
	/*
	 * Counted in at once: shedding an idle connection below may close the
	 * address's last other one, which would free its counter while ae
	 * still points at it.
	 */
	addrcount_hold(addrs, ae);
	if (full || (gw_state.nconns >= gw_state.c->max_conns && !conn_shed_idle())) {
		long dropped;

		if (log_rate_ok(&bad_rl, 5, 10000, &dropped))
			log_warnx("addr=%s connection refused: too many connections "
			    "(%ld similar suppressed)", addrcount_ip(ae), dropped);
		addrcount_put(addrs, ae);
		close(fd);
		return;
	}
	if (reaper == NULL)
		reaper = event_new(gw_state.base, -1, 0, reap_cb, NULL);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c = xcalloc(1, sizeof(*c));
	c->id = ++next_conn_id;
	c->ae = ae;	/* held above */
	gw_state.nconns++;
	TAILQ_INSERT_TAIL(&conns, c, all);
	c->tls = gw_state.ssl != NULL;
	if (c->tls) {
		SSL *ssl = SSL_new(gw_state.ssl);

		c->cl = ssl == NULL ? NULL : bufferevent_openssl_socket_new(gw_state.base, fd, ssl,
		    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
		if (c->cl != NULL)
			bufferevent_openssl_set_allow_dirty_shutdown(c->cl, 1);
	} else
		c->cl = bufferevent_socket_new(gw_state.base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->tmo = evtimer_new(gw_state.base, tmo_cb, c);
	if (c->cl == NULL) {
		close(fd);
		conn_kill(c);
		return;
	}
	bufferevent_setcb(c->cl, cl_read, cl_write, cl_event, c);
	bufferevent_setwatermark(c->cl, EV_READ, 0, read_hwm());
	bufferevent_setwatermark(c->cl, EV_WRITE, (size_t)gw_state.c->high_watermark / 2, 0);
	/* Bulk: fewer, larger writes than libevent's 16 KiB. */
	bufferevent_set_max_single_write(c->cl, (size_t)gw_state.c->high_watermark);
	c->last = util_mono_coarse_ms();
	if (!c->tls) {
		TAILQ_INSERT_TAIL(&idles, c, idle);
		c->in_idle = 1;
	}
	set_state(c, c->tls ? CS_TLS : CS_HEAD);
	/* plain: writing is enabled when output first waits (cl_out) */
	bufferevent_enable(c->cl, c->tls ? EV_READ | EV_WRITE : EV_READ);
}

/* ---- the request ---- */

static void
bind_route(struct conn *c, struct route *rt)
{
	if (c->rt == rt)
		return;
	c->rt = rt;
	LIST_INSERT_HEAD(&rt->conns, c, rlink);
}

static void up_ready(struct conn *c);
static void up_setup(struct conn *c, struct bufferevent *b);

/* Sends the head in c->fwd: at once if the upstream is there, else asks
 * for one with the token that authenticated this request. */
static void
forward(struct conn *c, const char *token)
{
	/*
	 * The client stays readable while the app answers: what it sends
	 * meanwhile (a body, pipelined requests) waits in its input, bounded
	 * by the read watermark, and an EOF is kept for after the response
	 * (cl_event). Turning reading off and on again cost two epoll_ctl
	 * calls per request.
	 */
	c->rt->active = 1;
	if (c->up != NULL) {
		up_ready(c);
		return;
	}
	if ((c->up = upool_take(c->rt)) != NULL) {
		/* the common case: no round trip to the orchestrator */
		up_setup(c, c->up);
		up_ready(c);
		return;
	}
	if ((c->open_id = ctl_open(c->rt->host, token, open_done, c)) == 0) {
		answer_page(c, 503, "App unavailable",
		    "The orchestrator is unavailable; try again in a moment.");
		return;
	}
	set_state(c, CS_OPEN);
}

static int head_one(struct conn *);

/* Request heads in the client's input, one after the other (pipelining). */
static void
head_process(struct conn *c)
{
	while (!c->dead && c->st == CS_HEAD &&
	    evbuffer_get_length(bufferevent_get_input(c->cl)) > 0 && head_one(c) == 1)
		;
}

/* One request head: 1 answered and ready for the next, 0 otherwise. */
static int
head_one(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	size_t n = evbuffer_get_length(in), max = (size_t)gw_state.c->header_bytes, m;
	struct gwreq_in ri;
	struct gwreq_out ro;
	struct buf out;
	char err[256];
	const char *p;
	long end;
	int rc;

	if (n == 0)
		return 0;
	if (!c->head_started) {
		c->head_started = 1;
		idle_unlink(c);
		set_state(c, CS_HEAD);
	}
	m = n < max + 1 ? n : max + 1;
	p = (const char *)evbuffer_pullup(in, (ev_ssize_t)m);
	end = h1_head_end(p, m, max);
	if (end == 0)
		return 0;
	if (end < 0) {
		answer_page(c, end == H1_HEAD_LARGE ? 431 : 400, end == H1_HEAD_LARGE ? "Request head too large" :
		    "Bad request", end == H1_HEAD_LARGE ? "The request head is larger than this gateway accepts." :
		    "The request is malformed.");
		return 0;
	}
	c->req = xcalloc(1, sizeof(*c->req));
	rc = gwhead_parse(c->req, HTTP_REQUEST, p, (size_t)end, (size_t)gw_state.c->header_fields,
	    GW_TARGET_MAX, err, sizeof(err));
	evbuffer_drain(in, (size_t)end);
	if (rc != 0) {
		long dropped;

		if (log_rate_ok(&bad_rl, 5, 10000, &dropped))
			log_info("conn=%llx addr=%s bad request: %s (%ld similar suppressed)",
			    (unsigned long long)c->id, addrcount_ip(c->ae), err, dropped);
		answer_page(c, rc, rc == 431 ? "Request head too large" : rc == 414 ?
		    "Request target too long" : rc == 501 ? "Not implemented" : "Bad request",
		    err);
		return 0;
	}
	c->nreq++;
	c->req_done = c->req->msg_done;
	c->cl_close = !c->req->keepalive;
	memset(&ri, 0, sizeof(ri));
	ri.tls = gw_state.c->https;	/* what the browser uses (scheme), not the hop */
	ri.client_ip = addrcount_ip(c->ae);
	ri.bound = c->rt;
	ri.find = ctl_route_find;
	buf_init(&out, (size_t)gw_state.c->header_bytes * 2 + 16384);
	rc = req_decide(&ri, c->req, &out, &ro);
	if (rc == -1) {
		buf_free(&out);
		answer_page(c, 431, "Request head too large", "The request head is too large.");
		return 0;
	}
	if (ro.rt != NULL && c->rt == NULL)
		bind_route(c, ro.rt);
	if (rc == GWREQ_ANSWER) {
		explicit_bzero(ro.token, sizeof(ro.token));
		answer(c, &out, ro.close);
		buf_free(&out);
		return !c->dead && c->st == CS_HEAD;
	}
	c->authed = (uint8_t)ro.authed;
	c->keep = c->req->keepalive;
	c->fwd = xmalloc(sizeof(*c->fwd));
	*c->fwd = out;
	forward(c, ro.token);
	explicit_bzero(ro.token, sizeof(ro.token));
	return 0;
}

/* Client bytes of the request body to the upstream, as far as it takes them. */
/*
 * libevent reads 4 KiB per readable event, so an 8 MiB body cost two
 * thousand wake-ups, each with its read, parse and epoll calls. Once what
 * libevent read is through, a body of known length is read on straight
 * from src's socket into dst (the other side's output; at most what is
 * left of the body, so nothing past it is ever taken, and at most up to
 * the watermark) in large chains (evrelay_tunnel_pull, common/evrelay.h), and the
 * parser is run over what came. Chunked and close-delimited bodies take
 * libevent's path. The bytes pulled (0: none, wait for libevent), or -1
 * when the body is broken (the connection is killed).
 */
static long
body_pull(struct conn *c, struct h1head *h, struct bufferevent *src,
    struct evbuffer *dst)
{
	size_t hwm = (size_t)gw_state.c->high_watermark, before = evbuffer_get_length(dst);
	size_t got, cap, i;
	struct evbuffer_iovec v[16];
	struct evbuffer_ptr at;
	uint64_t left;
	int nv;

	if (h->msg_done || h->skip_body || !(h->p.flags & F_CONTENT_LENGTH) ||
	    (h->p.flags & F_CHUNKED) || (left = h->p.content_length) == 0 ||
	    before >= hwm)
		return 0;
	cap = hwm - before;
	if (cap > left)
		cap = (size_t)left;
	if ((got = evrelay_tunnel_pull(src, dst, before + cap)) == 0 || c->dead)
		return c->dead ? -1 : 0;
	if (evbuffer_ptr_set(dst, &at, before, EVBUFFER_PTR_SET) == -1)
		return -1;
	while (got > 0) {
		nv = evbuffer_peek(dst, (ev_ssize_t)got, &at, v, NELEM(v));
		if (nv <= 0)
			break;
		if (nv > (int)NELEM(v))
			nv = NELEM(v);
		for (i = 0; i < (size_t)nv && got > 0; i++) {
			size_t k = v[i].iov_len < got ? v[i].iov_len : got;

			if (h1head_body(h, v[i].iov_base, k) != (long)k) {
				conn_kill(c);
				return -1;
			}
			got -= k;
			if (evbuffer_ptr_set(dst, &at, k, EVBUFFER_PTR_ADD) == -1 && got > 0)
				return -1;
		}
	}
	return (long)(evbuffer_get_length(dst) - before);
}

static void
body_pump(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	struct evbuffer *o = bufferevent_get_output(c->up);
	size_t hwm = (size_t)gw_state.c->high_watermark;
	struct evbuffer_iovec v;
	long n;

	while (!c->req_done) {
		if (evbuffer_get_length(in) == 0) {
			/* never under TLS: the SSL owns the client's fd */
			if (c->tls || (n = body_pull(c, c->req, c->cl, o)) == 0)
				break;
			if (n < 0)
				return;
			evrelay_bev_enable(c->up, EV_WRITE);
			if (c->req->msg_done)
				c->req_done = 1;
			continue;
		}
		if (evbuffer_get_length(o) >= hwm) {
			bufferevent_disable(c->cl, EV_READ);
			return;
		}
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		if ((n = h1head_body(c->req, v.iov_base, v.iov_len)) < 0) {
			answer_page(c, 400, "Bad request", "The request body is malformed.");
			return;
		}
		evbuffer_remove_buffer(in, o, (size_t)n);
		evrelay_bev_enable(c->up, EV_WRITE);
		if (c->req->msg_done)
			c->req_done = 1;
	}
	if (!c->req_done)
		evrelay_bev_enable(c->cl, EV_READ);
	/* else pipelined requests wait in the input (forward) */
}

/* The upstream is there: send the head, stream the body, await the response. */
static void
up_ready(struct conn *c)
{
	struct evbuffer *o = bufferevent_get_output(c->up);
	size_t off = 0;
	ssize_t w;

	/*
	 * Sent at once when nothing waits before it: a head the socket takes
	 * whole never arms the write event (two epoll_ctl calls a request on a
	 * kept upstream). A failed send leaves it all to libevent, whose write
	 * reports the error.
	 */
	if (evbuffer_get_length(o) == 0 && (w = send(bufferevent_getfd(c->up), c->fwd->p,
	    c->fwd->len, MSG_NOSIGNAL | MSG_DONTWAIT)) > 0)
		off = (size_t)w;
	if (off < c->fwd->len)
		evbuffer_add(o, c->fwd->p + off, c->fwd->len - off);
	buf_free(c->fwd);
	free(c->fwd);
	c->fwd = NULL;
	c->sent = 0;
	c->up_reuse = 0;	/* until this exchange ends cleanly */
	set_state(c, CS_FWD);
	c->last = util_mono_coarse_ms();
	/* writing only while bytes wait (body_pump enables it for a body) */
	evrelay_bev_enable(c->up, evbuffer_get_length(o) > 0 ? EV_READ | EV_WRITE : EV_READ);
	body_pump(c);
}

static void
up_setup(struct conn *c, struct bufferevent *b)
{
	c->up = b;
	c->up_reuse = 0;
	c->up_epoch = c->rt->epoch;
	bufferevent_setcb(b, up_read, up_write, up_event, c);
	bufferevent_setwatermark(b, EV_READ, 0, read_hwm());
	bufferevent_setwatermark(b, EV_WRITE, (size_t)gw_state.c->high_watermark / 2, 0);
	bufferevent_set_max_single_write(b, (size_t)gw_state.c->high_watermark);
}

static void
open_done(void *arg, int fd, const char *addr, int status, int retry_after,
    const char *err)
{
	struct conn *c = arg;
	char msg[512];

	c->open_id = 0;
	if (status == 503 && retry_after > 0) {
		snprintf(msg, sizeof(msg), "%s", err);
		answer_starting(c, retry_after, msg);
	} else if (status != 0) {
		/* The orchestrator's text says why (a port nothing
		 * listens on, a stopped sandbox, a token it refused). */
		snprintf(msg, sizeof(msg), "%s", err);
		answer_page(c, status, status == 404 ? "No app here" : status == 503 ?
		    "App unavailable" : status == 401 ? "Authentication required" :
		    "App not reachable", msg);
	} else if (fd >= 0) {
		struct bufferevent *b = bufferevent_socket_new(gw_state.base, fd, BEV_OPT_CLOSE_ON_FREE);
		int one = 1;

		evutil_make_socket_nonblocking(fd);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		up_setup(c, b);
		up_ready(c);
	} else {
		struct sockaddr_storage ss;
		socklen_t sl;
		struct bufferevent *b = bufferevent_socket_new(gw_state.base, -1, BEV_OPT_CLOSE_ON_FREE);

		up_setup(c, b);
		set_state(c, CS_CONNECT);
		if (addr == NULL || conf_parse_addr(addr, &ss, &sl) == -1 ||
		    bufferevent_socket_connect(b, (struct sockaddr *)&ss, (int)sl) == -1)
			answer_page(c, 502, "App not reachable", "The app's address is unusable.");
	}
}

/* ---- the response ---- */

static void
response_done(struct conn *c)
{
	int keep = c->keep && c->req_done && !c->cl_eof;

	/*
	 * The upstream may serve another client connection when this exchange
	 * ended cleanly: the request sent whole, the response complete and
	 * framed (not by the close), the app keeping the connection, nothing
	 * more from it.
	 */
	c->up_reuse = c->up != NULL && c->req_done && c->resp != NULL && c->resp->msg_done &&
	    c->resp->keepalive && c->resp->status >= 200 &&
	    evbuffer_get_length(bufferevent_get_input(c->up)) == 0;

	if (!keep) {
		struct buf none = { 0 };

		answer(c, &none, 1);
		return;
	}
	heads_free(c);
	c->head_started = 0;
	c->last = util_mono_coarse_ms();
	set_state(c, CS_HEAD);
	evrelay_bev_enable(c->cl, EV_READ);
	if (evbuffer_get_length(bufferevent_get_input(c->cl)) > 0)
		head_process(c);
	else {
		TAILQ_INSERT_TAIL(&idles, c, idle);
		c->in_idle = 1;
	}
}

static void
go_upgraded(struct conn *c)
{
	struct evbuffer *cin = bufferevent_get_input(c->cl);

	heads_free(c);
	set_state(c, CS_UPGRADED);
	evbuffer_add_buffer(bufferevent_get_output(c->up), cin);
	evbuffer_add_buffer(bufferevent_get_output(c->cl), bufferevent_get_input(c->up));
	evrelay_bev_enable(c->cl, EV_READ | EV_WRITE);
	evrelay_bev_enable(c->up, EV_READ | EV_WRITE);
}

/*
 * The response head (out) for a plain client whose output is empty, with
 * what of the body is already here: when that makes the response whole,
 * head and body go in one sendmsg, so a small response arms no write event
 * (two epoll_ctl calls); what the socket does not take, or a body still
 * coming, goes to the output as usual. The body bytes taken went through
 * the parser, as resp_body does. 0, or -1 when the body's framing is
 * broken (c killed).
 */
static int
resp_send_first(struct conn *c, const struct buf *out)
{
	struct evbuffer *in = bufferevent_get_input(c->up), *o = bufferevent_get_output(c->cl);
	size_t avail = evbuffer_get_length(in), max = (size_t)gw_state.c->high_watermark;
	size_t n = 0, sent = 0, bs;
	const char *p = NULL;
	struct iovec iov[2];
	struct msghdr mh;
	ssize_t w;
	long r;

	if (max > SEND_FIRST_MAX)
		max = SEND_FIRST_MAX;
	if (!c->resp->msg_done && avail > 0) {
		if (avail > max)
			avail = max;
		p = (const char *)evbuffer_pullup(in, (ev_ssize_t)avail);
		if ((r = h1head_body(c->resp, p, avail)) < 0) {
			conn_kill(c);	/* the body is broken: nothing was sent */
			return -1;
		}
		n = (size_t)r;
	}
	if (c->resp->msg_done) {
		iov[0].iov_base = out->p;
		iov[0].iov_len = out->len;
		iov[1].iov_base = (void *)(uintptr_t)p;
		iov[1].iov_len = n;
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = iov;
		mh.msg_iovlen = n > 0 ? 2 : 1;
		if ((w = sendmsg(bufferevent_getfd(c->cl), &mh, MSG_NOSIGNAL | MSG_DONTWAIT)) > 0)
			sent = (size_t)w;
	}
	if (sent < out->len)
		evbuffer_add(o, out->p + sent, out->len - sent);
	bs = sent > out->len ? sent - out->len : 0;
	evbuffer_drain(in, bs);
	if (n > bs)
		evbuffer_remove_buffer(in, o, n - bs);
	if (c->resp->msg_done && evbuffer_get_length(in) > 0)
		c->keep = 0;	/* junk after the response */
	cl_out(c);
	return 0;
}

/* Parses the response head in the upstream's input; 0 go on, -1 stop. */
static int
resp_head(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->up);
	size_t n = evbuffer_get_length(in), max = (size_t)gw_state.c->header_bytes, m;
	struct buf out;
	char err[256];
	const char *p;
	long end;
	int rc;

	m = n < max + 1 ? n : max + 1;
	p = (const char *)evbuffer_pullup(in, (ev_ssize_t)m);
	end = h1_head_end(p, m, max);
	if (end == 0)
		return -1;
	c->resp = xcalloc(1, sizeof(*c->resp));
	c->resp->skip_body = c->req->method == HTTP_HEAD;
	rc = end < 0 ? -1 : gwhead_parse(c->resp, HTTP_RESPONSE, p, (size_t)end,
	    (size_t)gw_state.c->header_fields, GW_TARGET_MAX, err, sizeof(err));
	if (rc != 0) {
		long dropped;

		if (log_rate_ok(&bad_rl, 5, 10000, &dropped))
			log_info("conn=%llx host=%s bad response from the app: %s (%ld similar suppressed)",
			    (unsigned long long)c->id, c->rt->host, end == -2 ? "head too large" :
			    end == -1 ? "malformed head" : err, dropped);
		answer_page(c, 502, "Bad response from the app",
		    "The app sent something that is not an HTTP response.");
		return -1;
	}
	evbuffer_drain(in, (size_t)end);
	if (c->resp->status == 101 && !c->req->upgrade) {
		answer_page(c, 502, "Bad response from the app", "The app switched protocols unasked.");
		return -1;
	}
	if (c->resp->status != 101)
		c->keep = c->keep && c->resp->keepalive;
	buf_init(&out, max * 2 + 1024);
	if (req_response(c->resp, c->tls, c->keep && c->req_done, c->req->minor, &out) == -1) {
		buf_free(&out);
		answer_page(c, 502, "Bad response from the app", "The app's response head is too large.");
		return -1;
	}
	if (!c->tls && c->resp->status >= 200 && c->resp->status != 101 &&
	    evbuffer_get_length(bufferevent_get_output(c->cl)) == 0) {
		if (resp_send_first(c, &out) == -1) {
			buf_free(&out);
			return -1;
		}
	} else {
		evbuffer_add(bufferevent_get_output(c->cl), out.p, out.len);
		cl_out(c);
	}
	buf_free(&out);
	c->sent = 1;
	if (c->resp->status == 101) {
		go_upgraded(c);
		return -1;
	}
	if (c->resp->status < 200) {	/* interim: the real one follows */
		h1head_free(c->resp);
		free(c->resp);
		c->resp = NULL;
		return 0;
	}
	if (c->resp->msg_done) {
		response_done(c);
		return -1;
	}
	return 0;
}

static void
resp_body(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->up);
	struct evbuffer *o = bufferevent_get_output(c->cl);
	size_t hwm = (size_t)gw_state.c->high_watermark;
	struct evbuffer_iovec v;
	long n;

	for (;;) {
		if (evbuffer_get_length(in) == 0) {
			if (c->resp == NULL || (n = body_pull(c, c->resp, c->up, o)) == 0)
				break;
			if (n < 0)
				return;
			cl_out(c);
			if (c->resp->msg_done) {
				response_done(c);
				return;
			}
			continue;
		}
		if (c->resp == NULL) {
			if (resp_head(c) == -1)
				return;
			continue;
		}
		if (evbuffer_get_length(o) >= hwm) {
			bufferevent_disable(c->up, EV_READ);
			return;
		}
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		if ((n = h1head_body(c->resp, v.iov_base, v.iov_len)) < 0) {
			conn_kill(c);	/* the body is broken: the client sees a cut response */
			return;
		}
		evbuffer_remove_buffer(in, o, (size_t)n);
		cl_out(c);
		if (c->resp->msg_done) {
			if (evbuffer_get_length(in) > 0)
				c->keep = 0;	/* junk after the response */
			response_done(c);
			return;
		}
	}
}

/* ---- callbacks ---- */

static void
relay(struct conn *c, struct bufferevent *src, struct bufferevent *dst, int pull)
{
	struct evbuffer *o = bufferevent_get_output(dst);
	size_t hwm = (size_t)gw_state.c->high_watermark;

	evbuffer_add_buffer(o, bufferevent_get_input(src));
	if (pull)
		evrelay_tunnel_pull(src, o, hwm);
	if (c->dead)
		return;
	if (c->rt != NULL)
		c->rt->active = 1;
	if (evbuffer_get_length(o) >= hwm)
		bufferevent_disable(src, EV_READ);
}

static void
cl_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	c->last = util_mono_coarse_ms();
	switch (c->st) {
	case CS_HEAD:
		head_process(c);
		return;
	case CS_FWD:
		if (!c->req_done)
			body_pump(c);
		/* else a pipelined request: it waits in the input (forward) */
		return;
	case CS_UPGRADED:
		relay(c, c->cl, c->up, !c->tls);
		return;
	case CS_CLOSING:
		evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
		return;	/* EOF (cl_event) ends a lingering close */
	default:
		bufferevent_disable(bev, EV_READ);
	}
}

static void
cl_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->st == CS_CLOSING) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			closing_flushed(c);
		return;
	}
	if (c->up != NULL && (c->st == CS_UPGRADED || c->st == CS_FWD))
		evrelay_bev_enable(c->up, EV_READ);
	if (c->st == CS_FWD && c->up != NULL && evbuffer_get_length(bufferevent_get_input(c->up)) > 0)
		resp_body(c);
}

static void
cl_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		c->last = util_mono_coarse_ms();
		TAILQ_INSERT_TAIL(&idles, c, idle);
		c->in_idle = 1;
		set_state(c, CS_HEAD);
		return;
	}
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
		c->cl_eof = 1;
		/*
		 * A client that leaves while its request waits for the sandbox to
		 * wake (CS_OPEN, up to timeouts.wake) cancels it (conn_kill), as
		 * nginx ends a request whose client closed before the upstream
		 * answered; once the request is on its way, a half-close keeps
		 * the response coming.
		 */
		if ((c->st == CS_FWD || c->st == CS_CONNECT) && c->req_done) {
			bufferevent_disable(c->cl, EV_READ);
			return;	/* deliver the response, then close */
		}
		if (c->st == CS_UPGRADED && c->up != NULL &&
		    evbuffer_get_length(bufferevent_get_output(c->up)) > 0) {
			/* flush what the client sent, then close */
			bufferevent_disable(c->cl, EV_READ);
			shutdown(bufferevent_getfd(c->cl), SHUT_RD);
			bufferevent_setwatermark(c->up, EV_WRITE, 0, 0);
			return;
		}
	}
	conn_kill(c);
}

static void
up_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	c->last = util_mono_coarse_ms();
	if (c->st == CS_UPGRADED) {
		relay(c, c->up, c->cl, 1);
		return;
	}
	if (c->st != CS_FWD) {
		/* bytes with no request outstanding: this upstream is done */
		(void)bev;
		up_drop(c);
		return;
	}
	resp_body(c);
}

static void
up_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->st == CS_UPGRADED) {
		if (c->cl_eof && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
			conn_kill(c);
			return;
		}
		evrelay_bev_enable(c->cl, EV_READ);
	} else if (c->st == CS_FWD && !c->req_done)
		body_pump(c);
}

static void
up_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	char msg[256];

	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		int one = 1;

		setsockopt(bufferevent_getfd(c->up), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (c->st == CS_CONNECT)
			up_ready(c);
		return;
	}
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	switch (c->st) {
	case CS_CONNECT:
		snprintf(msg, sizeof(msg), "Nothing listens on port %d in the sandbox.",
		    c->rt != NULL ? c->rt->port : 0);
		answer_page(c, 502, "App not reachable", msg);
		return;
	case CS_FWD:
		if (c->resp == NULL && !c->sent) {
			answer_page(c, 502, "Bad response from the app",
			    "The app closed the connection without a response.");
			return;
		}
		if (c->resp != NULL && (what & BEV_EVENT_EOF))
			ign(h1head_finish(c->resp));	/* sets msg_done when the body is whole */
		if (c->resp != NULL && c->resp->msg_done) {
			/* a body delimited by the close */
			up_drop(c);
			c->keep = 0;
			response_done(c);
			return;
		}
		break;
	case CS_UPGRADED:
		if (evbuffer_get_length(bufferevent_get_output(c->cl)) > 0) {
			struct buf none = { 0 };

			up_drop(c);
			answer(c, &none, 1);	/* flush to the client, then close */
			return;
		}
		break;
	case CS_HEAD:
	case CS_CLOSING:
		/* between requests: the next one takes or opens another upstream */
		up_drop(c);
		return;
	default:
		break;
	}
	conn_kill(c);
}

void
conn_close_route(struct route *rt, void *arg)
{
	struct conn *c;

	(void)arg;
	while ((c = LIST_FIRST(&rt->conns)) != NULL)
		conn_kill(c);
	upool_drain(rt);	/* what the kills just parked */
}

void
conn_stop_all(void)
{
	struct conn *c;

	while ((c = TAILQ_FIRST(&conns)) != NULL)
		conn_kill(c);
	upool_drain_all();
	reap_cb(-1, 0, NULL);
	addrcount_free(addrs);
	addrs = NULL;
}
