/*
 * conn.c: the agent's HTTP connections (see conn.h). One request at a time
 * per connection:
 *
 *   CS_READ -> (a complete request) CS_BUSY -> (conn_reply*) CS_WRITE ->
 *   (sent) CS_READ again, or CS_LINGER when the connection is to close
 *   (drain the peer's input for LINGER_MS, then close).
 *
 * The two streaming hooks add two states a handler holds, like CS_BUSY:
 * CS_BODY (a streamed-body route's body goes to the handler as it arrives,
 * from the head on: conn_body) and CS_STREAM (a streamed response is being
 * written: conn_stream_*; conn_stream_end makes it CS_WRITE).
 *
 * conn_one parses a head (http.c on common/h1head.c), waits for the body, takes the request
 * out of the input buffer and hands it to the dispatch callback; the
 * handler it reaches owns the connection (CS_BUSY) until it replies.
 * Pipelined requests wait in the input buffer and run in conn_process's
 * loop, not by recursion. sweep_cb closes stalled (slowloris), idle and
 * lingering connections once a second.
 *
 * Freeing: conn_free closes the fd at once and marks the connection dead;
 * its memory goes when nothing holds it any more: at once, or when the
 * handler replies (CS_BUSY), or when conn_process (in_process) returns.
 * Nothing here knows the routes or the handlers.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "backoff.h"
#include "conn.h"
#include "ev.h"
#include "h1.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

/* Open connections; beyond it a new one is accepted and closed at once,
 * so that a flood cannot take the fds the shell and jobs need. */
#define MAX_CONNS		512
/* One recv; an emptied input buffer larger than two is given back. */
#define READ_CHUNK		((size_t)64 * 1024)
/* One recv of a streamed body (CS_BODY), handed to the handler as it is:
 * a unix socket holds about 200 KiB, so this takes what is there. */
#define BODY_CHUNK		((size_t)256 * 1024)
/* How often the sweep looks at stalled, idle and lingering connections. */
#define SWEEP_MS		1000
/* After a closing reply, how long the peer's input is drained, so that
 * it reads the reply instead of a reset. */
#define LINGER_MS		2000
/* Out of descriptors (EMFILE/ENFILE) the listener is taken out of epoll
 * for a pause (level-triggered, it would fire again at once: a busy loop)
 * whose length and log rate are common/backoff.c's, as for the daemons'
 * lguard; the idle connections longest without a request are closed
 * first, so the next accept has room. Idle connections closed per pause:
 * enough that the backlog drains in a few pauses, few enough that busy
 * clients keep theirs. */
#define ACCEPT_SHED		16
/* At most one "too many connections" line per this interval. */
#define FULLLOG_INTERVAL_MS	10000

enum conn_state {
	CS_READ,	/* reading a request */
	CS_BUSY,	/* a handler owns it until conn_reply */
	CS_WRITE,	/* sending the response */
	CS_LINGER,	/* response sent, draining input before close */
	CS_BODY,	/* a handler owns it and takes its body (conn_body) */
	CS_STREAM,	/* a handler owns it and streams the response */
};

/* The handler holds the connection: its memory waits for the reply. */
#define HELD(c)	((c)->state == CS_BUSY || (c)->state == CS_BODY || \
	(c)->state == CS_STREAM)

struct conn {
	int		 fd;
	enum conn_state	 state;
	int		 dead;		/* closed; memory freed when nothing holds it */
	void		(*gone_cb)(void *);	/* conn_on_gone */
	void		*gone_arg;
	int		 in_process;	/* conn_process is on the stack */
	int		 close_after;	/* close once the response is out */
	int		 have_head;
	int		 sent_continue;
	int		 streamed;	/* this request's route streams its body */
	int		 body_unread;	/* and the handler has not read all of it */
	unsigned long long body_left;	/* Content-Length bytes still to come */
	struct http_chunked ck;
	int		(*body_data)(void *, const char *, size_t);
	void		(*body_end)(void *, const char *);
	void		*body_arg;
	int		 chunked_out;	/* the streamed response is chunked */
	void		(*drain_cb)(void *);	/* conn_on_drain */
	void		*drain_arg;
	struct http_req	 req;
	struct buf	 in;
	struct buf	 out;
	size_t		 out_off;
	long long	 since;		/* this request/idle period began, util_mono_ms */
	struct conn	*prev, *next;
};

static struct conn *conns;
static int nconns;
static conn_dispatch_cb dispatch;	/* where complete requests go */
static conn_streams_cb streams;		/* which routes stream their body */

static void conn_io(int, uint32_t, void *);
static void conn_free(struct conn *);
static void conn_destroy(struct conn *);
static void conn_process(struct conn *);

/* Responses. */

static void
conn_want(struct conn *c, uint32_t ev)
{
	if (ev_mod(c->fd, ev) == -1)
		log_warn("conn fd=%d epoll", c->fd);
}

/*
 * Sends what the socket takes of the output (asking for EPOLLOUT when it
 * takes no more). 0, or -1 when the connection failed and was freed.
 */
static int
conn_send(struct conn *c)
{
	ssize_t n;

	while (c->out_off < c->out.len) {
		n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off,
		    MSG_NOSIGNAL);
		if (n > 0) {
			c->out_off += (size_t)n;
			if (c->state == CS_STREAM)
				c->since = util_mono_ms();	/* progress */
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			conn_want(c, EPOLLOUT | (c->state == CS_STREAM ?
			    EPOLLRDHUP : 0));
			return 0;
		}
		conn_free(c);
		return -1;
	}
	return 0;
}

/* The handler is done with a dead connection: its memory goes. */
static void
conn_release(struct conn *c)
{
	c->gone_cb = NULL;
	c->drain_cb = NULL;
	c->body_data = NULL;
	c->state = CS_READ;
	if (!c->in_process)
		conn_destroy(c);
}

/* The peer went away (or stalled) while the handler holds c: closed now
 * (the memory stays for the handler's end), then the handler is told. */
static void
conn_gone(struct conn *c)
{
	void (*cb)(void *) = c->gone_cb;
	void *arg = c->gone_arg;

	c->gone_cb = NULL;
	c->drain_cb = NULL;
	c->body_data = NULL;
	conn_free(c);
	if (cb != NULL)
		cb(arg);	/* may reply or end: frees c */
}

static void
conn_flush(struct conn *c)
{
	if (conn_send(c) == -1 || c->out_off < c->out.len)
		return;
	buf_free(&c->out);
	c->out_off = 0;
	if (c->close_after) {
		/* Stop sending, drain what the peer still sends, then close. */
		shutdown(c->fd, SHUT_WR);
		c->state = CS_LINGER;
		c->since = util_mono_ms();
		conn_want(c, EPOLLIN);
		return;
	}
	c->state = CS_READ;
	c->have_head = 0;
	c->sent_continue = 0;
	c->since = util_mono_ms();
	conn_want(c, EPOLLIN);
	/* A pipelined request may already be buffered. */
	if (c->in.len > 0)
		conn_process(c);
}

void
conn_reply(struct conn *c, int status, const char *ctype, const char *body,
    size_t len)
{
	c->gone_cb = NULL;	/* answered: conn_on_gone was for this request */
	if (c->dead) {
		/* The peer went away while the handler ran. */
		conn_release(c);
		return;
	}
	if (!c->req.keepalive || status == 400 || status == 413 || status == 431 ||
	    status == 501 || status == 408)
		c->close_after = 1;
	/* A streamed body not read to its end: what is left of it cannot be
	 * told from a next request. */
	if (c->body_unread)
		c->close_after = 1;
	c->body_data = NULL;
	c->drain_cb = NULL;
	buf_init(&c->out, AGENT_MAX_RESP + 1024);
	c->since = util_mono_ms();
	if (buf_addf(&c->out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\n%s\r\n", status, h1_reason(status),
	    ctype, len, c->close_after ? "Connection: close\r\n" : "") == -1 ||
	    buf_add(&c->out, body, len) == -1) {
		conn_free(c);
		return;
	}
	c->out_off = 0;
	c->state = CS_WRITE;
	conn_flush(c);
}

void
conn_reply_json(struct conn *c, int status, const struct buf *body)
{
	conn_reply(c, status, "application/json", body->p ? body->p : "",
	    body->len);
}

void
conn_reply_error(struct conn *c, int status, const char *code,
    const char *fmt, ...)
{
	char msg[2048];
	struct buf b;
	struct jw w;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	buf_init(&b, 16384);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "error");
	jw_obj(&w);
	jw_key(&w, "code"); jw_cstr(&w, code);
	jw_key(&w, "message"); jw_cstr(&w, msg);
	jw_obj_end(&w);
	jw_obj_end(&w);
	if (jw_finish(&w) == -1) {
		buf_free(&b);
		conn_reply(c, 500, "application/json", "{}", 2);
		return;
	}
	conn_reply_json(c, status, &b);
	buf_free(&b);
}

void
conn_reply_jw(struct conn *c, struct jw *w, struct buf *body)
{
	if (jw_finish(w) == -1)
		conn_reply_error(c, 500, "internal", "response too large");
	else
		conn_reply_json(c, 200, body);
	buf_free(body);
}

/* Parses one request from the input; 1 if it was dispatched. */
static int
conn_one(struct conn *c)
{
	char err[256];
	int r, status;

	if (!c->have_head) {
		r = http_parse_head(c->in.p ? c->in.p : "", c->in.len, &c->req,
		    err, sizeof(err));
		if (r == HTTP_NEED_MORE)
			return 0;
		if (r != HTTP_DONE) {
			status = r;	/* 400, 431, 501 or 505 */
			c->req.keepalive = 0;
			c->state = CS_BUSY;
			conn_reply_error(c, status, status == 431 ? "too_large" :
			    "bad_request", "%s", err);
			return 1;
		}
		c->have_head = 1;
		c->streamed = streams != NULL && streams(&c->req);
		if (c->req.chunked && !c->streamed) {
			c->req.keepalive = 0;
			c->state = CS_BUSY;
			conn_reply_error(c, 501, "bad_request", "Transfer-Encoding "
			    "is not supported here; send Content-Length");
			return 1;
		}
		if (!c->streamed && c->req.content_length > HTTP_MAX_BODY) {
			c->req.keepalive = 0;
			c->state = CS_BUSY;
			conn_reply_error(c, 413, "too_large",
			    "request body over %zu bytes", HTTP_MAX_BODY);
			return 1;
		}
	}
	if (c->streamed) {
		/* The handler gets the head now and the body as it comes. */
		conn_want(c, 0);
		buf_consume(&c->in, c->req.head_len);
		c->have_head = 0;
		c->streamed = 0;
		c->body_left = c->req.content_length;
		memset(&c->ck, 0, sizeof(c->ck));
		c->body_unread = c->req.chunked || c->req.content_length > 0;
		c->state = CS_BUSY;
		dispatch(c, &c->req, NULL, 0);
		return 1;
	}
	if (c->in.len - c->req.head_len < c->req.content_length) {
		if (c->req.expect_continue && !c->sent_continue) {
			static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
			c->sent_continue = 1;
			(void)send(c->fd, cont, sizeof(cont) - 1, MSG_NOSIGNAL);
		}
		return 0;
	}
	conn_want(c, 0);
	{
		/* Take the request out of the input buffer before dispatching:
		 * the reply may be written before the handler returns. */
		size_t n = c->req.head_len + (size_t)c->req.content_length;
		char *req = xmalloc(n + 1);

		memcpy(req, c->in.p, n);
		req[n] = '\0';
		buf_consume(&c->in, n);
		if (c->in.len == 0 && c->in.cap > READ_CHUNK * 2)
			buf_free(&c->in);	/* do not keep a big body's memory */
		c->have_head = 0;
		c->state = CS_BUSY;
		dispatch(c, &c->req, req + c->req.head_len,
		    (size_t)c->req.content_length);
		free(req);
	}
	return 1;
}

/*
 * Handles the requests that have arrived, one after the other (pipelining),
 * in a loop rather than by recursion. The connection is not freed while
 * this runs (in_process); it is freed at the end if it died meanwhile.
 */
static void
conn_process(struct conn *c)
{
	if (c->in_process)
		return;
	c->in_process = 1;
	while (!c->dead && c->state == CS_READ && c->in.len > 0)
		if (!conn_one(c))
			break;
	c->in_process = 0;
	if (c->dead && c->state != CS_BUSY)
		conn_destroy(c);
}

static void
conn_destroy(struct conn *c)
{
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	nconns--;
	buf_free(&c->in);
	buf_free(&c->out);
	free(c);
}

/*
 * Closes the connection. The memory goes now, or, while a handler holds
 * the connection (CS_BUSY) or conn_process runs, when that ends.
 */
static void
conn_free(struct conn *c)
{
	if (c->fd != -1) {
		ev_del(c->fd);
		close(c->fd);
		c->fd = -1;
	}
	c->dead = 1;
	if (HELD(c) || c->in_process)
		return;
	conn_destroy(c);
}

/* Streamed request bodies. */

/*
 * Hands p[0..n) (writable: chunked is decoded in place) of a streamed body
 * to the handler; what follows the body's end goes back to the input (a
 * pipelined request). At the end the handler's end callback runs.
 */
static void
body_feed(struct conn *c, char *p, size_t n)
{
	char err[128];
	size_t used, dlen;
	long k;
	int done;

	if (c->req.chunked) {
		if ((k = http_chunked_decode(&c->ck, p, n, &dlen, err,
		    sizeof(err))) < 0) {
			void (*end)(void *, const char *) = c->body_end;

			c->body_data = NULL;
			c->state = CS_BUSY;
			conn_want(c, 0);
			end(c->body_arg, err);	/* replies 400 */
			return;
		}
		used = (size_t)k;
		done = http_chunked_done(&c->ck);
	} else {
		used = (unsigned long long)n < c->body_left ? n : (size_t)c->body_left;
		dlen = used;
		c->body_left -= used;
		done = c->body_left == 0;
	}
	if (dlen > 0 && c->body_data(c->body_arg, p, dlen) == -1)
		return;	/* replied */
	if (c->dead || c->state != CS_BODY || !done)
		return;
	if (used < n)
		ign(buf_add(&c->in, p + used, n - used));
	c->body_unread = 0;
	c->body_data = NULL;
	c->state = CS_BUSY;
	conn_want(c, 0);
	c->body_end(c->body_arg, NULL);
}

void
conn_body(struct conn *c, int (*data)(void *, const char *, size_t),
    void (*end)(void *, const char *), void *arg)
{
	char *p;
	size_t n;

	if (c->dead || c->state != CS_BUSY)
		return;
	c->body_data = data;
	c->body_end = end;
	c->body_arg = arg;
	c->state = CS_BODY;
	c->since = util_mono_ms();
	if (c->req.expect_continue && c->body_unread) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		(void)send(c->fd, cont, sizeof(cont) - 1, MSG_NOSIGNAL);
	}
	conn_want(c, EPOLLIN | EPOLLRDHUP);
	/* What came with the head. */
	p = buf_steal(&c->in, &n);
	body_feed(c, p != NULL ? p : (char *)"", n);
	free(p);
}

static void
conn_read_body(struct conn *c)
{
	static char tmp[BODY_CHUNK];	/* one thread; body_feed is done with it */
	ssize_t n;

	/* As conn_process: c stays while this runs (the handler may reply and
	 * the reply fail); pipelined requests run after. */
	c->in_process = 1;
	while (!c->dead && c->state == CS_BODY) {
		n = recv(c->fd, tmp, sizeof(tmp), 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		if (n <= 0) {
			conn_gone(c);
			break;
		}
		c->since = util_mono_ms();
		body_feed(c, tmp, (size_t)n);
	}
	c->in_process = 0;
	if (c->dead && !HELD(c))
		conn_destroy(c);
	else if (!c->dead && c->state == CS_READ && c->in.len > 0)
		conn_process(c);
}

/* Streamed responses. */

int
conn_stream_begin(struct conn *c, int status, const char *ctype,
    long long length, const char *extra)
{
	if (c->dead)
		return -1;
	if (!c->req.keepalive || c->body_unread)
		c->close_after = 1;
	buf_init(&c->out, AGENT_MAX_RESP + 1024);
	c->out_off = 0;
	c->chunked_out = length < 0;
	c->state = CS_STREAM;
	c->since = util_mono_ms();
	if (buf_addf(&c->out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n",
	    status, h1_reason(status), ctype) == -1 ||
	    (length >= 0 ? buf_addf(&c->out, "Content-Length: %lld\r\n",
	    length) : buf_addstr(&c->out, "Transfer-Encoding: chunked\r\n")) == -1 ||
	    buf_addf(&c->out, "%s%s\r\n", extra != NULL ? extra : "",
	    c->close_after ? "Connection: close\r\n" : "") == -1) {
		conn_free(c);
		return -1;
	}
	conn_want(c, EPOLLRDHUP);
	return conn_send(c);
}

int
conn_stream_write(struct conn *c, const void *p, size_t n)
{
	if (c->dead || c->state != CS_STREAM)
		return -1;
	if (n == 0)
		return 0;
	/* Give back what was sent before queueing more. */
	if (c->out_off > 0 && (c->out_off == c->out.len ||
	    c->out_off >= c->out.len / 2)) {
		buf_consume(&c->out, c->out_off);
		c->out_off = 0;
	}
	if ((c->chunked_out && buf_addf(&c->out, "%zx\r\n", n) == -1) ||
	    buf_add(&c->out, p, n) == -1 ||
	    (c->chunked_out && buf_add(&c->out, "\r\n", 2) == -1)) {
		conn_free(c);
		return -1;
	}
	return conn_send(c);
}

size_t
conn_stream_pending(const struct conn *c)
{
	return c->out.len - c->out_off;
}

void
conn_on_drain(struct conn *c, void (*cb)(void *), void *arg)
{
	if (c->dead || c->state != CS_STREAM)
		return;
	c->drain_cb = cb;
	c->drain_arg = arg;
	conn_want(c, EPOLLOUT | EPOLLRDHUP);
}

void
conn_stream_end(struct conn *c)
{
	if (c->dead) {
		conn_release(c);
		return;
	}
	c->gone_cb = NULL;
	c->drain_cb = NULL;
	if (c->chunked_out && buf_add(&c->out, "0\r\n\r\n", 5) == -1) {
		conn_stream_abort(c);
		return;
	}
	c->state = CS_WRITE;	/* no longer held: the rest is conn_flush's */
	c->since = util_mono_ms();
	conn_flush(c);
}

void
conn_stream_abort(struct conn *c)
{
	if (c->dead) {
		conn_release(c);
		return;
	}
	c->gone_cb = NULL;
	c->drain_cb = NULL;
	c->state = CS_READ;
	conn_free(c);
}

/* EPOLLOUT or a hang-up while a handler streams the response. */
static void
conn_stream_io(struct conn *c, uint32_t events)
{
	void (*cb)(void *);

	if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
		conn_gone(c);
		return;
	}
	if (!(events & EPOLLOUT))
		return;
	if (conn_send(c) == -1) {
		conn_gone(c);	/* conn_free ran; the handler is told */
		return;
	}
	if (conn_stream_pending(c) >= CONN_STREAM_HIGH / 2)
		return;
	cb = c->drain_cb;
	c->drain_cb = NULL;
	if (conn_stream_pending(c) == 0)
		conn_want(c, EPOLLRDHUP);
	if (cb != NULL)
		cb(c->drain_arg);
}

static void
conn_read(struct conn *c)
{
	char tmp[READ_CHUNK];
	ssize_t n;

	for (;;) {
		n = recv(c->fd, tmp, sizeof(tmp), 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		if (n <= 0) {
			conn_free(c);
			return;
		}
		if (c->state == CS_LINGER)
			continue;
		if (c->in.len == 0 && c->state == CS_READ)
			c->since = util_mono_ms();
		if (buf_add(&c->in, tmp, (size_t)n) == -1) {
			/* Over head+body max: framing was checked, so this is junk. */
			c->req.keepalive = 0;
			c->state = CS_BUSY;
			conn_reply_error(c, 413, "too_large", "request too large");
			return;
		}
		if ((size_t)n < sizeof(tmp))
			break;
	}
	if (c->state == CS_READ)
		conn_process(c);
}

static void
conn_io(int fd, uint32_t events, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	if (c->state == CS_STREAM) {
		conn_stream_io(c, events);
		return;
	}
	if (c->state == CS_BODY) {
		if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
			conn_read_body(c);
		return;
	}
	if (c->state == CS_BUSY) {
		/* Peer went away while a handler runs: closed now (the memory
		 * stays for the late reply), then the handler is told. */
		if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))
			conn_gone(c);
		return;
	}
	if (events & EPOLLOUT && c->state == CS_WRITE) {
		conn_flush(c);
		return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		conn_read(c);
}

static int	 listen_sock = -1;
static int	 accept_paused;
static struct backoff accept_bo;	/* the pause and its log rate */

static void accept_cb(int, uint32_t, void *);

static void
accept_resume(void *arg)
{
	(void)arg;
	accept_paused = 0;
	backoff_resumed(&accept_bo, util_mono_ms());
	if (ev_mod(listen_sock, EPOLLIN) == -1)
		log_warn("epoll listener");
}

/*
 * accept failed with EMFILE/ENFILE: close the oldest idle connections
 * (reading, nothing received), stop accepting for backoff_pause's time,
 * log at most once per BACKOFF_LOG_MS.
 */
static void
accept_pause(int err)
{
	struct conn *c, *old;
	static struct log_rate short_rl;
	long long now = util_mono_ms(), ms;
	long missed;
	int i, shed = 0;

	for (i = 0; i < ACCEPT_SHED; i++) {
		old = NULL;
		for (c = conns; c != NULL; c = c->next)
			if (!c->dead && c->state == CS_READ && c->in.len == 0 &&
			    (old == NULL || c->since < old->since))
				old = c;
		if (old == NULL)
			break;
		conn_free(old);
		shed++;
	}
	if (accept_paused)
		return;
	ms = backoff_pause(&accept_bo, now);
	if (log_rate_ok(&short_rl, 1, BACKOFF_LOG_MS, &missed))
		log_warnx("accept: %s (%d connections); closed %d idle, "
		    "pausing accept %lld ms (%ld more since the last report)",
		    strerror(err), nconns, shed, ms, missed);
	if (ev_mod(listen_sock, 0) == -1)
		log_warn("epoll listener");
	accept_paused = 1;
	ev_timer_add((uint64_t)ms, accept_resume, NULL);
}

static void
accept_cb(int fd, uint32_t events, void *arg)
{
	struct conn *c;
	int cfd, one = 1;

	(void)events; (void)arg;
	for (;;) {
		cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE) {
				accept_pause(errno);
				return;
			}
			if (errno != EAGAIN)
				log_warn("accept");
			return;
		}
		backoff_ok(&accept_bo);
		if (nconns >= MAX_CONNS) {
			static struct log_rate full_rl;
			long dropped;

			if (log_rate_ok(&full_rl, 1, FULLLOG_INTERVAL_MS, &dropped))
				log_warnx("too many connections (%d); refused %ld "
				    "more since the last report", nconns, dropped);
			close(cfd);
			continue;
		}
		(void)setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = xcalloc(1, sizeof(*c));
		c->fd = cfd;
		c->state = CS_READ;
		c->since = util_mono_ms();
		buf_init(&c->in, HTTP_MAX_HEAD + HTTP_MAX_BODY);
		buf_init(&c->out, AGENT_MAX_RESP + 1024);
		if (ev_add(cfd, EPOLLIN | EPOLLRDHUP, conn_io, c) == -1) {
			close(cfd);
			free(c);
			continue;
		}
		c->next = conns;
		if (conns != NULL)
			conns->prev = c;
		conns = c;
		nconns++;
	}
}

/* Closes stalled connections (slowloris) and lingering ones. */
static void
sweep_cb(void *arg)
{
	struct conn *c, *nx;
	long long now = util_mono_ms();

	(void)arg;
	for (c = conns; c != NULL; c = nx) {
		nx = c->next;
		if ((c->state == CS_LINGER && now - c->since > LINGER_MS) ||
		    (c->state == CS_READ && c->in.len == 0 &&
		    now - c->since > agent_conf.idle_timeout_ms) ||
		    (c->state == CS_WRITE && now - c->since >
		    agent_conf.idle_timeout_ms))
			conn_free(c);
		else if ((c->state == CS_BODY && now - c->since >
		    agent_conf.request_timeout_ms) || (c->state == CS_STREAM &&
		    conn_stream_pending(c) > 0 && now - c->since >
		    agent_conf.idle_timeout_ms)) {
			log_info("conn fd=%d: no progress for %lld ms; closing",
			    c->fd, now - c->since);
			conn_gone(c);
		} else if (c->state == CS_READ && c->in.len > 0 &&
		    now - c->since > agent_conf.request_timeout_ms) {
			c->req.keepalive = 0;
			c->state = CS_BUSY;
			log_info("conn fd=%d request not complete after %lld ms; closing",
			    c->fd, agent_conf.request_timeout_ms);
			conn_reply_error(c, 408, "bad_request", "request timeout");
		}
	}
	ev_timer_add(SWEEP_MS, sweep_cb, NULL);
}

void
conn_on_gone(struct conn *c, void (*cb)(void *), void *arg)
{
	if (c->dead || !HELD(c))
		return;
	c->gone_cb = cb;
	c->gone_arg = arg;
}

int
conn_serve(int listen_fd, conn_dispatch_cb cb, conn_streams_cb st)
{
	dispatch = cb;
	streams = st;
	listen_sock = listen_fd;
	if (ev_add(listen_fd, EPOLLIN, accept_cb, NULL) == -1)
		return -1;
	ev_timer_add(SWEEP_MS, sweep_cb, NULL);
	return 0;
}
