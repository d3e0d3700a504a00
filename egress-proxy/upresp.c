/*
 * upresp.c: an upstream's reply on the request cycle (intercepted and
 * plain), read and relayed. Its head is read whole by common/h1head.c,
 * the reader of every request head (llhttp strict and the rules of
 * common/h1.c, the framing decided once), then relayed verbatim with the
 * body bytes that came with it; the body is framed by that reader and
 * relayed as it comes, with backpressure. A reply the proxy and the
 * client could frame two ways is never passed on: a 502 while nothing of
 * it went out, else the connection is cut (docs/proxy.md "Upstream
 * replies"; tests/e2e/26-proxy-upstream-replies.sh).
 *
 * Between conn.c (answers, kills) and upool.c below and proxy.c above,
 * which calls upresp_read from its upstream read callback and finishes
 * the request when it returns 1. It never calls proxy.c.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "h1.h"
#include "h1head.h"
#include "log.h"
#include "proxy_int.h"
#include "sandbox.h"
#include "tls.h"
#include "util.h"
#include "xmalloc.h"

/* Decoded response body bytes, for the audit line. */
static int
resp_body_count(void *arg, const char *p, size_t n)
{
	struct conn *c = arg;

	(void)p;
	c->req_down += n;
	return 0;
}

void
upresp_start(struct conn *c)
{
	if (c->rh == NULL) {
		c->rh = xmalloc(sizeof(*c->rh));
		h1head_init(c->rh, (size_t)the_proxy.conf->header_bytes);
	}
	c->rh->on_body = resp_body_count;
	c->rh->arg = c;
	c->rh->skip_body = c->head_req;
	c->resp_active = 1;
	c->resp_done = 0;
	c->resp_wrote = 0;
	c->resp_hdone = 0;
	c->resp_status = 0;
	c->req_down = 0;
}

void
upresp_free(struct conn *c)
{
	if (c->rh == NULL)
		return;
	h1head_free(c->rh);
	free(c->rh);
	c->rh = NULL;
}

int
upresp_eof(struct conn *c)
{
	if (!c->resp_hdone)
		return -1;
	return h1head_finish(c->rh);
}

/*
 * The upstream's response broke the rules (why): a 502 when nothing of it
 * reached the client yet, else the connection is cut, so the client never
 * takes a half-relayed message for a whole one.
 */
static void
resp_bad(struct conn *c, const char *why)
{
	static struct log_rate rl;
	char r[300];
	long dropped;

	atomic_fetch_add(&the_proxy.st.ref_upstream_resp, 1);
	snprintf(r, sizeof(r), "bad response from upstream: %s", why);
	if (!c->resp_wrote && evbuffer_get_length(bufferevent_get_output(c->cl)) == 0) {
		conn_respond(c, 502, "bad_upstream_response", r);	/* logged there */
		return;
	}
	if (log_rate_ok(&rl, 5, 10000, &dropped))
		log_info("conn=%llx target=%s %s; connection cut (%ld similar suppressed)",
		    (unsigned long long)c->id, c->tgt->hostport, r, dropped);
	conn_kill(c);
}

/* Response bytes relayed to the client as they came: n from in. */
static void
resp_relay(struct conn *c, struct evbuffer *in, size_t n)
{
	if (n == 0)
		return;
	atomic_fetch_add(&the_proxy.st.bytes_down, (long)n);
	atomic_fetch_add(&c->sb->bytes_down, (long)n);
	c->tot_down += n;
	c->resp_wrote = 1;
	tls_move(c->cl, in, n);
}

/*
 * Reads a response head at the front of in (h1head: llhttp strict and the
 * rules of h1.h, the framing decided once) and relays it verbatim, with
 * the body bytes that came with it in one move (one TLS record for a
 * small response). 1 when a head went out, 0 when more bytes are needed,
 * -1 when the connection was answered or cut. The head is looked for in
 * in's first segment, pulled up only when it spans more.
 */
static int
resp_head(struct conn *c, struct evbuffer *in)
{
	size_t avail = evbuffer_get_length(in), max = (size_t)the_proxy.conf->header_bytes, m;
	struct h1head *rh = c->rh;
	struct evbuffer_iovec v;
	char err[256];
	const char *p;
	long end, k = 0;
	int st;

	if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
		return 0;
	p = v.iov_base;
	m = v.iov_len < max + 1 ? v.iov_len : max + 1;
	end = h1_head_end(p, m, max);
	if (end == H1_HEAD_MORE && avail > m) {
		m = avail < max + 1 ? avail : max + 1;
		if ((p = (const char *)evbuffer_pullup(in, (ssize_t)m)) == NULL) {
			conn_kill(c);
			return -1;
		}
		end = h1_head_end(p, m, max);
	}
	if (end == H1_HEAD_MORE)
		return 0;
	if (end < 0) {
		resp_bad(c, end == H1_HEAD_LARGE ? "head too large" :
		    "malformed head (bare CR or LF, obs-fold or NUL)");
		return -1;
	}
	if ((st = h1head_parse(rh, HTTP_RESPONSE, p, (size_t)end,
	    (size_t)the_proxy.conf->max_headers, err, sizeof(err))) != 0) {
		resp_bad(c, err);
		return -1;
	}
	if (rh->status == 101) {
		/* The proxy forwards no upgrade (httpreq.c refuses them). */
		resp_bad(c, "switched protocols unasked");
		return -1;
	}
	if (rh->status < 200) {
		/* Informational: relayed, the final response follows. */
		resp_relay(c, in, (size_t)end);
		return 1;
	}
	c->resp_status = rh->status;
	c->resp_hdone = 1;
	if (!rh->msg_done && m > (size_t)end &&
	    (k = h1head_body(rh, p + end, m - (size_t)end)) < 0) {
		resp_bad(c, "bad body framing");
		return -1;
	}
	resp_relay(c, in, (size_t)end + (size_t)k);
	if (rh->msg_done)
		c->resp_done = 1;
	return 1;
}

int
upresp_read(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->up);
	struct evbuffer *out = bufferevent_get_output(c->cl);
	struct evbuffer_iovec v;
	size_t hwm = (size_t)the_proxy.conf->high_watermark;
	long n;

	c->last_active = util_mono_coarse_ms();
	if (!c->resp_active) {
		/* Bytes with no request outstanding: drop the upstream. */
		if (evbuffer_get_length(in) > 0) {
			bufferevent_free(c->up);
			c->up = NULL;
		}
		return 0;
	}
	while (c->resp_active && !c->resp_done && evbuffer_get_length(in) > 0) {
		if (!c->resp_hdone) {
			n = resp_head(c, in);
			if (n == -1)
				return -1;
			if (n == 0)
				break;
			continue;
		}
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		if ((n = h1head_body(c->rh, v.iov_base, v.iov_len)) < 0) {
			resp_bad(c, "bad body framing");
			return -1;
		}
		resp_relay(c, in, (size_t)n);
		if (c->rh->msg_done)
			c->resp_done = 1;
	}
	if (c->resp_done) {
		if (evbuffer_get_length(in) > 0 || upool_junk(c))
			c->close_after = 1;	/* junk after the response */
		return 1;
	}
	if (evbuffer_get_length(out) >= hwm)
		bufferevent_disable(c->up, EV_READ);
	else
		upool_kick(c);
	return 0;
}
