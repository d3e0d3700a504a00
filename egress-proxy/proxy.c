/*
 * proxy.c: the connection engine's state machine.
 *
 * A connection starts as plain HTTP on the client side (CS_HEAD). A CONNECT
 * is canonicalised, identified, decided by the addons, then the upstream is
 * resolved, checked against the address policy and dialled (with TLS for
 * interception); then it becomes a blind tunnel (CS_TUNNEL) or an
 * intercepted HTTP/1.1 session (CS_CL_TLS, then the request cycle). An
 * absolute-form http:// request runs the same request cycle without TLS
 * and without credentials. The request cycle is: head (CS_REQ_HEAD or
 * CS_HEAD) -> hook (CS_HOOK) -> upstream (CS_CONNECTING if needed) -> body
 * (CS_BODY) -> response (CS_WAIT) -> head again; one request at a time, so
 * pipelined requests wait in the client's input buffer (bounded by the
 * read watermark).
 *
 * Objects are never freed inside a callback that still uses them:
 * conn_kill() unhooks every callback and queues the connection on the
 * worker's dead list, which a deferred event frees (conn.c).
 *
 * This file is that one state machine, in sections ("---- name ----", each
 * opening with its rules). What is not the state machine lives beside it
 * and never calls back into it (proxy_int.h lists the engine's files and
 * their order): the connection object, its answers and its close in
 * conn.c, the blind tunnel's relay in tunnel.c, the upstream pool in
 * upool.c, the unidentified connections' caps in unid.c, the audit records
 * in connaudit.c; outside the engine the TLS contexts in tls.c, the audit
 * log in audit.c, the interned targets in tgtab.c, the Prometheus text in
 * metrics.c (which only reads the counters). Only the worker threads
 * (worker.c) call into it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "addon.h"
#include "bodygate.h"
#include "buf.h"
#include "canon.h"
#include "certcache.h"
#include "cred.h"
#include "evrelay.h"
#include "h1.h"
#include "httpreq.h"
#include "log.h"
#include "netcheck.h"
#include "proxy_int.h"
#include "sandbox.h"
#include "sigv4.h"
#include "tls.h"
#include "util.h"
#include "xmalloc.h"

static void cl_read_head(struct bufferevent *, void *);
static void cl_read_req(struct bufferevent *, void *);
static void cl_event(struct bufferevent *, short, void *);
static void up_event(struct bufferevent *, short, void *);
static void up_read(struct bufferevent *, void *);
static void up_write(struct bufferevent *, void *);
static void cl_write(struct bufferevent *, void *);
static void cl_wake(evutil_socket_t, short, void *);
static void up_connect(struct conn *);
static void req_send(struct conn *);
static void body_pump(struct conn *);
static void req_go(struct conn *);
static void gate_start(struct conn *);
static void creds_go(struct conn *);
static void creds_ready(void *, const char *);
static void hook_done(void *, const struct hook_result *);
static void next_request(struct conn *);
static void up_connected(struct conn *);

/* ---- the plain side (CS_HEAD): accept, heads, the on_connect decision ---- */
/*
 * A new connection (conn_new: made, admitted) reads request heads: a
 * CONNECT or an absolute-form http:// request. Its sender is identified
 * (conn_identify) at the first head. The CONNECT target (or the http://
 * URL's) is canonicalised here, once; only the canonical form is used
 * afterwards.
 */

/* Starts reading request heads on a new connection on fd (conn_new). */
void
proxy_accept(struct worker *w, int fd, struct sandbox *sb)
{
	struct conn *c;

	if ((c = conn_new(w, fd, sb)) == NULL)
		return;
	bufferevent_setcb(c->cl, cl_read_head, NULL, cl_event, c);
	bufferevent_setwatermark(c->cl, EV_READ, 0, (size_t)the_proxy.conf->header_bytes + 4096);
	evrelay_bev_enable(c->cl, EV_READ | EV_WRITE);
	c->st = CS_HEAD;
}

/*
 * Reads one request head from bev's input into c->req. Returns 1 when a
 * head was parsed (and drained), 0 when more bytes are needed, -1 when the
 * connection was answered/closed.
 */
static int
read_head(struct conn *c, struct bufferevent *bev, int allow_connect)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t avail = evbuffer_get_length(in), want;
	size_t max = (size_t)the_proxy.conf->header_bytes;
	char err[256];
	const char *p;
	long end;
	int st;

	if (avail == 0)
		return 0;
	if (c->head_start == 0) {
		c->head_start = util_mono_coarse_ms();
		upool_idle_unlink(c);
	}
	want = avail < max + 1 ? avail : max + 1;
	if ((p = (const char *)evbuffer_pullup(in, (ssize_t)want)) == NULL) {
		conn_kill(c);
		return -1;
	}
	end = h1_head_end(p, want, max);
	if (end == 0)
		return 0;
	if (end < 0) {
		atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
		conn_respond(c, end == H1_HEAD_LARGE ? 431 : 400, end == H1_HEAD_LARGE ?
		    "head_too_large" : "malformed_head", end == H1_HEAD_LARGE ? "request head too large" :
		    "malformed request head (bare LF, obs-fold or NUL)");
		return -1;
	}
	if (c->req == NULL) {
		c->req = xmalloc(sizeof(*c->req));
		hreq_init(c->req, max, (size_t)the_proxy.conf->max_headers);
	}
	c->req->allow_connect = allow_connect;
	st = hreq_parse(c->req, p, (size_t)end, err, sizeof(err));
	evbuffer_drain(in, (size_t)end);
	c->head_start = 0;
	if (st != 0) {
		atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
		conn_respond(c, st, st == 431 ? "head_too_large" : st == 501 ?
		    "not_implemented" : "malformed_head", err);
		return -1;
	}
	return 1;
}

/* The hooks' view of c: its sandbox's attributes as they are now (conn_attrs_refresh). */
static void
ctx_fill(struct conn *c, struct hook_ctx *hc, int plain)
{
	conn_attrs_refresh(c);
	memset(hc, 0, sizeof(*hc));
	hc->t = c->tgt;
	hc->sb = c->sb;
	hc->attrs = c->attrs;
	hc->plain = plain;
	hc->conn_id = c->id;
}

/* Attaches the current addon VM of the worker (reloading it if stale). */
struct addon_vm *
proxy_worker_vm(struct worker *w)
{
	struct addon_src *src = proxy_addons();
	static struct log_rate rl;	/* a failing rebuild is tried per connection */
	struct addon_vm *vm;
	char err[512];
	long dropped;

	if (src == NULL)
		return w->vm;
	if (w->vm == NULL || addon_vm_gen(w->vm) != addon_src_gen(src)) {
		if ((vm = addon_vm_new(src, the_proxy.conf, w->gh, err, sizeof(err))) == NULL) {
			if (log_rate_ok(&rl, 1, 10000, &dropped))
				log_warnx("worker=%d addons not reloaded: %s (%ld more "
				    "not logged)", w->idx, err, dropped);
		} else {
			if (w->vm != NULL)
				addon_vm_unref(w->vm);
			w->vm = vm;
		}
	}
	addon_src_unref(src);
	return w->vm;
}

static void
decide(struct conn *c, int plain)
{
	struct hook_ctx hc;
	struct hook_result res;
	struct addon_vm *vm = proxy_worker_vm(c->w);

	/* Client bytes arriving meanwhile wait in its input buffer (bounded). */
	c->st = CS_DECIDE;
	c->deadline = util_mono_coarse_ms() + the_proxy.conf->hook_ms;
	if (vm == NULL) {
		memset(&res, 0, sizeof(res));
		res.action = ACT_NONE;
		res.addon = -1;
		hook_done(c, &res);
		return;
	}
	if (c->vm != vm) {
		if (c->vm != NULL) {
			if (c->ctx_ref > 0)
				addon_ctx_release(c->vm, c->ctx_ref);
			addon_vm_unref(c->vm);
		}
		c->vm = addon_vm_ref(vm);
		c->ctx_ref = 0;
	} else if (c->ctx_ref > 0) {
		addon_ctx_release(c->vm, c->ctx_ref);
		c->ctx_ref = 0;
	}
	ctx_fill(c, &hc, plain);
	if (addon_on_connect(c->vm, &hc, &c->ctx_ref, &res, hook_done, c, &c->hook) == 0)
		hook_done(c, &res);
}

static void
cl_read_head(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct hreq *r;
	char err[256];
	int st;

	c->last_active = util_mono_coarse_ms();
	if (c->st != CS_HEAD)
		return;
	if (read_head(c, bev, 1) <= 0)
		return;
	r = c->req;
	if (r->hd.method == HTTP_CONNECT)
		c->aud_connect = 1;
	else
		c->aud_req = 1;
	if (conn_identify(c, r) == -1)
		return;
	if (r->hd.method == HTTP_CONNECT) {
		struct target t;

		if (canon_authority(r->hd.data.p + r->hd.url_o, r->hd.url_l, &t, err,
		    sizeof(err)) == -1) {
			atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
			conn_respond(c, 400, "bad_target", err);
			return;
		}
		conn_tgt_set(c, &t);
		if (c->up != NULL) {		/* a previous plain upstream */
			bufferevent_free(c->up);
			c->up = NULL;
		}
		if (atomic_fetch_add(&c->sb->tunnels, 1) >= the_proxy.conf->tunnels_per_sandbox) {
			atomic_fetch_sub(&c->sb->tunnels, 1);
			atomic_fetch_add(&the_proxy.st.ref_limit, 1);
			conn_respond(c, 429, "tunnel_limit", "too many tunnels for this sandbox");
			return;
		}
		c->counted_tun = 1;
		c->mode = MODE_NONE;
		decide(c, 0);
		return;
	}
	/* Plain http:// forward request. */
	{
		struct target t;
		st = hreq_check_target(r, NULL, &t, err, sizeof(err));
		if (st != 0) {
			atomic_fetch_add(st == 421 ? &the_proxy.st.ref_misdirected :
			    &the_proxy.st.ref_badrequest, 1);
			conn_respond(c, st, st == 421 ? "misdirected" : "bad_target", err);
			return;
		}
		if (c->up != NULL && strcmp(t.hostport, c->tgt->hostport) != 0) {
			bufferevent_free(c->up);
			c->up = NULL;
		}
		conn_tgt_set(c, &t);
		h1head_strip_hop(&r->hd);
	}
	c->mode = MODE_PLAIN;
	decide(c, 1);
}

/* ---- hooks: on_connect and on_request (CS_DECIDE, CS_HOOK) ---- */
/*
 * hook_done is the one continuation of both hooks, called inline or later
 * by the addon runtime; c->hook is NULL once it runs, and a dead connection
 * ignores the result. Deny and error fail closed: nothing is forwarded.
 */

static void
hook_done(void *arg, const struct hook_result *res)
{
	struct conn *c = arg;

	c->hook = NULL;
	if (c->dead)
		return;
	if (c->st == CS_DECIDE) {
		enum addon_action a = res->action;
		/* A host a credential of the sandbox's lists: opened, so it can go in. */
		if ((a == ACT_NONE || a == ACT_TUNNEL) && c->mode != MODE_PLAIN && conncred_select(c) > 0)
			a = ACT_INTERCEPT;
		if (a == ACT_NONE)
			a = the_proxy.conf->deny_default ? ACT_DENY : ACT_TUNNEL;
		c->addon = res->addon;
		c->decision = a == ACT_ERROR ? "error" : a == ACT_DENY ? "deny" :
		    a == ACT_INTERCEPT ? "intercept" : "tunnel";
		if (a == ACT_ERROR) {
			atomic_fetch_add(&the_proxy.st.connect_error, 1);
			atomic_fetch_add(&the_proxy.st.ref_addon, 1);
			conn_respond(c, 502, "addon_error", "addon error (see proxy log)");
			return;
		}
		if (a == ACT_DENY) {
			atomic_fetch_add(&the_proxy.st.connect_deny, 1);
			conn_respond(c, res->status >= 400 && res->status <= 599 ?
			    res->status : 403, "deny", res->reason[0] ? res->reason :
			    "denied by policy");
			return;
		}
		if (c->mode == MODE_PLAIN) {
			atomic_fetch_add(&the_proxy.st.req_plain, 1);
			atomic_fetch_add(&c->sb->requests, 1);
			if (c->up == NULL) {
				c->connect_then_req = 1;
				up_connect(c);
			} else
				req_send(c);
			return;
		}
		c->mode = a == ACT_INTERCEPT ? MODE_INTERCEPT : MODE_TUNNEL;
		atomic_fetch_add(a == ACT_INTERCEPT ? &the_proxy.st.connect_intercept :
		    &the_proxy.st.connect_tunnel, 1);
		atomic_fetch_add(a == ACT_INTERCEPT ? &the_proxy.st.tunnels_intercept :
		    &the_proxy.st.tunnels_blind, 1);
		if (a == ACT_INTERCEPT)
			atomic_fetch_add(&c->sb->intercepted, 1);
		log_debug("conn=%llx sandbox=%s target=%s decision=%s",
		    (unsigned long long)c->id, c->sb->id, c->tgt->hostport,
		    a == ACT_INTERCEPT ? "intercept" : "tunnel");
		c->connect_then_req = 0;
		up_connect(c);
		return;
	}
	if (c->st == CS_HOOK) {
		if (res->action == ACT_ERROR) {
			atomic_fetch_add(&the_proxy.st.ref_addon, 1);
			conn_respond(c, 502, "addon_error",
			    "addon error (see proxy log); request not forwarded");
			return;
		}
		if (res->action == ACT_DENY && res->body_len > 0) {
			conn_answer(c, res->status >= 400 && res->status <= 599 ? res->status : 403,
			    "deny", res->reason, res->ctype, res->body, res->body_len);
			return;
		}
		if (res->action == ACT_DENY) {
			conn_respond(c, res->status >= 400 && res->status <= 599 ?
			    res->status : 403, "deny", res->reason[0] ? res->reason :
			    "denied by policy");
			return;
		}
		if (c->req->injected && !hreq_cred_ok(c->req)) {
			/*
			 * An injection that carries no credential ("Bearer "
			 * with nothing after it, an empty value): fail closed
			 * rather than send an empty credential.
			 */
			atomic_fetch_add(&addon_errors_total, 1);
			atomic_fetch_add(&the_proxy.st.ref_addon, 1);
			conn_respond(c, 502, "empty_credential",
			    "addon injected an empty credential; request not forwarded");
			return;
		}
		if (c->req->injected)
			atomic_fetch_add(&the_proxy.st.req_injected, 1);
		creds_go(c);
	}
}

/* After the hook: the named credentials (conncred.c), then the body gate or the request. */
static void
creds_go(struct conn *c)
{
	if (conncred_apply(c, creds_ready) != 0)
		return;		/* waiting for an access token, or answered */
	if (c->req->s4_body != 0) {
		/* SigV4 over the body's hash: read it whole first (bodygate.h) */
		if (c->req->gate != NULL) {
			atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
			conn_respond(c, 501, "credential", "an AWS request without "
			    "x-amz-content-sha256 cannot be signed again under a body policy");
			return;
		}
		c->req->gate = bgate_hash_new(BGATE_HASH_MAX);
	}
	if (c->req->gate != NULL) {
		gate_start(c);
		return;
	}
	req_go(c);
}

/* An exchange creds_go waited for ended (err NULL: the token is cached). */
static void
creds_ready(void *arg, const char *err)
{
	struct conn *c = arg;

	if (c->dead || c->st != CS_HOOK)
		return;
	if (err != NULL)
		conncred_fail(c, err);
	else
		creds_go(c);
}

/* Sends the request: on c->up, or once a new upstream is connected. */
static void
req_go(struct conn *c)
{
	if (c->up == NULL) {
		c->connect_then_req = 1;
		up_connect(c);
	} else
		req_send(c);
}

/* ---- body gates (bodygate.c): the body's start decides before anything goes up ---- */
/*
 * A refused gated request is answered (conn_answer) and its body drained
 * before the close (conn.c, CS_DRAIN).
 */

static int
gate_sink(void *arg, const char *p, size_t n)
{
	struct conn *c = arg;

	bgate_feed(c->req->gate, p, n);
	return 0;
}

/*
 * Feeds the client's body to the gate (BGATE_FEED bytes at a time) until
 * it decides; then sends the request or answers the refusal.
 */
static void
gate_pump(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	struct bgate *g = c->req->gate;
	struct evbuffer_iovec v;
	enum bgate_verdict vd = BG_MORE;
	size_t n;
	long used;

	while (vd == BG_MORE && !c->req->hd.msg_done && evbuffer_get_length(in) > 0) {
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		n = v.iov_len < BGATE_FEED ? v.iov_len : BGATE_FEED;
		if ((used = h1head_body(&c->req->hd, v.iov_base, n)) < 0) {
			atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
			c->req->hd.msg_done = 1;	/* nothing more can be read from it */
			conn_respond(c, 400, "bad_body", "bad request body framing");
			return;
		}
		evbuffer_drain(in, (size_t)used);
		vd = bgate_check(g, c->req->hd.msg_done);
	}
	if (vd == BG_MORE && c->req->hd.msg_done)
		vd = bgate_check(g, 1);
	if (vd == BG_MORE) {
		if (c->cl_eof)
			conn_kill(c);
		return;
	}
	if (vd == BG_DENY) {
		size_t bl;
		const char *b = bgate_body(g, &bl);

		atomic_fetch_add(&the_proxy.st.ref_gate, 1);
		conn_answer(c, bgate_status(g), bgate_kind(g), bgate_detail(g), bgate_ctype(g),
		    b, bl);
		return;
	}
	if (bgate_hashes(g) && conncred_body_signed(c, bgate_hash(g)) != 0)
		return;		/* answered */
	c->st = CS_HOOK;
	req_go(c);
}

static void
gate_start(struct conn *c)
{
	struct hreq *r = c->req;
	const char *v;
	size_t n;

	c->st = CS_GATE;
	c->deadline = util_mono_coarse_ms() + the_proxy.conf->header_ms;
	if (!bgate_hashes(r->gate) && (v = h1head_get(&r->hd, "content-encoding", &n)) != NULL &&
	    !(n == 8 && strncasecmp(v, "identity", 8) == 0)) {
		atomic_fetch_add(&the_proxy.st.ref_gate, 1);
		conn_respond(c, 415, bgate_kind(r->gate), "the policy check needs an uncompressed "
		    "request body: Content-Encoding refused");
		return;
	}
	if ((v = h1head_get(&r->hd, "expect", &n)) != NULL) {
		/* The body is read before the upstream sees the head: answer 100 here. */
		if (n == 12 && strncasecmp(v, "100-continue", 12) == 0)
			evbuffer_add(bufferevent_get_output(c->cl), "HTTP/1.1 100 Continue\r\n\r\n",
			    25);
		h1head_del(&r->hd, "expect");
	}
	r->hd.on_body = gate_sink;
	r->hd.arg = c;
	evrelay_bev_enable(c->cl, EV_READ);
	gate_pump(c);
}

/* ---- dialling: resolve, check, connect (CS_CONNECTING) ---- */
/*
 * resolve overrides first, then literal addresses, then evdns. Every
 * address is checked by netcheck_addr against upstream.allow_cidrs before
 * it is dialled (or taken from the pool), and they are tried in order. A
 * failure answers through proxy_connect_fail (logged): 403 when no address is
 * allowed, else 502 (504 on the connect timeout, 400 for a bad literal).
 */

/*
 * The dial failed: code is the audit reason ("address_policy",
 * "resolve_failed", "connect_failed", "connect_timeout", "upstream_tls",
 * "upstream_certificate", "tls_setup", "bad_target"); counted in the
 * metrics, logged (rate-limited) and answered by conn_respond.
 */
void
proxy_connect_fail(struct conn *c, int status, const char *code, const char *why)
{
	if (strcmp(code, "resolve_failed") == 0)
		atomic_fetch_add(&the_proxy.st.resolve_failed, 1);
	else if (strcmp(code, "connect_failed") == 0 || strcmp(code, "connect_timeout") == 0)
		atomic_fetch_add(&the_proxy.st.connect_failed, 1);
	conn_respond(c, status, code, why);
}

/*
 * c->up from the pool (upool.c), or the idle upstream of another connection
 * of c's sandbox, which then rests. 1 when one was taken.
 */
static int
up_from_pool(struct conn *c, const struct sockaddr *sa)
{
	struct conn *v;

	if (!upool_take(c, sa, &v))
		return 0;
	if (v != NULL) {
		proxy_conn_rest(v);
		atomic_fetch_add(&the_proxy.st.pool_lent, 1);
		log_debug("conn=%llx upstream %s taken over from idle conn=%llx",
		    (unsigned long long)c->id, c->tgt->hostport, (unsigned long long)v->id);
	}
	bufferevent_setcb(c->up, NULL, NULL, up_event, c);
	return 1;
}

static void
up_try(struct conn *c)
{
	struct evutil_addrinfo *ai;
	const char *why = NULL;
	char abuf[INET6_ADDRSTRLEN], msg[300];
	SSL *ssl;

	for (ai = c->ai_cur; ai != NULL; ai = ai->ai_next) {
		if ((why = netcheck_addr(ai->ai_addr, the_proxy.conf->allow, the_proxy.conf->nallow)) == NULL)
			break;
	}
	if (ai == NULL) {
		if (c->ai_cur == c->ai || why != NULL) {
			atomic_fetch_add(&the_proxy.st.ref_ssrf, 1);
			snprintf(msg, sizeof(msg), "destination %s not allowed (%s)",
			    c->tgt->hostport, why != NULL ? why : "no address");
			proxy_connect_fail(c, 403, "address_policy", msg);
		} else
			proxy_connect_fail(c, 502, "connect_failed", "cannot connect to upstream");
		return;
	}
	c->ai_cur = ai->ai_next;
	if (c->up != NULL) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	if (up_from_pool(c, ai->ai_addr)) {
		log_debug("conn=%llx upstream %s from the pool", (unsigned long long)c->id,
		    c->tgt->hostport);
		up_connected(c);
		return;
	}
	c->up_nreq = 0;
	if (upool_sa_set(&c->up_addr, ai->ai_addr) == -1)
		memset(&c->up_addr, 0, sizeof(c->up_addr));
	if (c->mode == MODE_INTERCEPT) {
		if ((ssl = tls_upstream_new(c->tgt)) == NULL) {
			proxy_connect_fail(c, 502, "tls_setup", "TLS setup failed");
			return;
		}
		c->up = bufferevent_openssl_socket_new(c->w->base, -1, ssl,
		    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
		if (c->up == NULL) {
			SSL_free(ssl);
			proxy_connect_fail(c, 502, "tls_setup", "TLS setup failed");
			return;
		}
		bufferevent_openssl_set_allow_dirty_shutdown(c->up, 1);
		c->up_tls = 1;
	} else {
		c->up = bufferevent_socket_new(c->w->base, -1, BEV_OPT_CLOSE_ON_FREE);
		c->up_tls = 0;
		if (c->up == NULL) {
			proxy_connect_fail(c, 502, "connect_failed", "socket failed");
			return;
		}
	}
	bufferevent_setcb(c->up, NULL, NULL, up_event, c);
	if (ai->ai_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, abuf, sizeof(abuf));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, abuf, sizeof(abuf));
	log_debug("conn=%llx dial %s (%s)", (unsigned long long)c->id, abuf, c->tgt->hostport);
	if (bufferevent_socket_connect(c->up, ai->ai_addr, (int)ai->ai_addrlen) == -1) {
		up_try(c);
		return;
	}
}

static void
dns_cb(int result, struct evutil_addrinfo *res, void *arg)
{
	struct conn *c = arg;

	if (result == EVUTIL_EAI_CANCEL) {
		if (res != NULL)
			evutil_freeaddrinfo(res);
		return;
	}
	c->dnsreq = NULL;
	if (c->dead) {
		if (res != NULL)
			evutil_freeaddrinfo(res);
		return;
	}
	if (result != 0 || res == NULL) {
		char m[300];
		snprintf(m, sizeof(m), "cannot resolve %s: %s", c->tgt->host,
		    evutil_gai_strerror(result));
		if (res != NULL)
			evutil_freeaddrinfo(res);
		proxy_connect_fail(c, 502, "resolve_failed", m);
		return;
	}
	if (c->ai != NULL)
		evutil_freeaddrinfo(c->ai);
	c->ai = c->ai_cur = res;
	up_try(c);
}

static struct evutil_addrinfo *
ai_from_sa(const struct sockaddr *sa, socklen_t len)
{
	struct evutil_addrinfo hints, *res = NULL;
	char host[INET6_ADDRSTRLEN], port[8];
	const void *a;

	if (sa->sa_family == AF_INET) {
		a = &((const struct sockaddr_in *)sa)->sin_addr;
		snprintf(port, sizeof(port), "%u", ntohs(((const struct sockaddr_in *)sa)->sin_port));
	} else {
		a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		snprintf(port, sizeof(port), "%u", ntohs(((const struct sockaddr_in6 *)sa)->sin6_port));
	}
	(void)len;
	inet_ntop(sa->sa_family, a, host, sizeof(host));
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = sa->sa_family;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_NUMERICHOST | EVUTIL_AI_NUMERICSERV;
	if (evutil_getaddrinfo(host, port, &hints, &res) != 0)
		return NULL;
	return res;
}

static void
up_connect(struct conn *c)
{
	struct evutil_addrinfo hints;
	struct evdns_getaddrinfo_request *rq;
	char port[8];
	size_t i;

	c->st = CS_CONNECTING;
	c->deadline = util_mono_coarse_ms() + the_proxy.conf->connect_ms +
	    (c->mode == MODE_INTERCEPT ? the_proxy.conf->handshake_ms : 0);
	if (c->cl != NULL)
		bufferevent_disable(c->cl, EV_READ);
	if (c->ai != NULL) {
		evutil_freeaddrinfo(c->ai);
		c->ai = c->ai_cur = NULL;
	}
	for (i = 0; i < the_proxy.conf->nresolve; i++)
		if (strcmp(the_proxy.conf->resolve[i].hostport, c->tgt->hostport) == 0) {
			c->ai = c->ai_cur = ai_from_sa((struct sockaddr *)&the_proxy.conf->resolve[i].ss,
			    the_proxy.conf->resolve[i].sslen);
			if (c->ai == NULL) {
				proxy_connect_fail(c, 502, "resolve_failed", "bad resolve override");
				return;
			}
			up_try(c);
			return;
		}
	snprintf(port, sizeof(port), "%u", c->tgt->port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	if (c->tgt->kind != CANON_NAME) {
		hints.ai_flags = EVUTIL_AI_NUMERICHOST | EVUTIL_AI_NUMERICSERV;
		if (evutil_getaddrinfo(c->tgt->host, port, &hints, &c->ai) != 0) {
			proxy_connect_fail(c, 400, "bad_target", "bad address");
			return;
		}
		c->ai_cur = c->ai;
		up_try(c);
		return;
	}
	hints.ai_flags = EVUTIL_AI_ADDRCONFIG;
	rq = evdns_getaddrinfo(c->w->dns, c->tgt->host, port, &hints, dns_cb, c);
	if (rq != NULL && c->st == CS_CONNECTING && c->ai == NULL && !c->dead)
		c->dnsreq = rq;
}

/* ---- client TLS bufferevent (CS_CL_TLS and the request cycle) ---- */
/*
 * The client's TLS bufferevent never owns its SSL or fd: the conn does
 * (c->cl_ssl, c->cfd), so it can be dropped and made again.
 */

/* A TLS bufferevent on the conn's client fd and SSL (owned by the conn). */
static int
cl_tls_bev(struct conn *c, enum bufferevent_ssl_state state)
{
	c->cl = bufferevent_openssl_socket_new(c->w->base, c->cfd, c->cl_ssl, state, 0);
	if (c->cl == NULL)
		return -1;
	bufferevent_openssl_set_allow_dirty_shutdown(c->cl, 1);
	return 0;
}

/* Client TLS bufferevent settings while requests are exchanged. */
static void
cl_req_setup(struct conn *c)
{
	size_t hwm = (size_t)the_proxy.conf->high_watermark;
	size_t rw = (size_t)the_proxy.conf->header_bytes + 4096;

	/* A whole request head must fit under the read watermark. */
	bufferevent_setwatermark(c->cl, EV_READ, 0, hwm > rw ? hwm : rw);
	bufferevent_setwatermark(c->cl, EV_WRITE, hwm / 2, 0);
	bufferevent_setcb(c->cl, cl_read_req, cl_write, cl_event, c);
	evrelay_bev_enable(c->cl, EV_READ | EV_WRITE);
}

/* ---- sleeping connections: idle clients without a bufferevent ---- */
/*
 * Only a connection with nothing buffered anywhere sleeps (c->cl NULL,
 * c->sleep_ev pending); any byte or EOF from the client wakes it, and its
 * next request allocates the parser state again.
 */

/*
 * An intercepted connection idle between requests, with nothing buffered
 * anywhere (its upstream and parser state already dropped), gives up its
 * TLS bufferevent and waits for the client with a bare read event: the
 * bufferevent and its two evbuffers are most of what the connection holds
 * beyond OpenSSL's own state (about 1 KiB of 17). cl_wake makes it again
 * around the same SSL and fd when the client sends anything (or closes).
 */
static void
cl_sleep(struct conn *c)
{
	if (c->cl == NULL || c->cl_ssl == NULL || c->sleep_ev != NULL || c->cl_eof)
		return;
	if (evbuffer_get_length(bufferevent_get_input(c->cl)) > 0 ||
	    evbuffer_get_length(bufferevent_get_output(c->cl)) > 0 ||
	    SSL_has_pending(c->cl_ssl)) {
		log_debug("conn=%llx idle, but bytes are buffered: stays awake", (unsigned long long)c->id);
		return;
	}
	c->sleep_ev = event_new(c->w->base, c->cfd, EV_READ, cl_wake, c);
	if (c->sleep_ev == NULL)
		return;
	if (event_add(c->sleep_ev, NULL) == -1) {
		event_free(c->sleep_ev);
		c->sleep_ev = NULL;
		return;
	}
	bufferevent_free(c->cl);
	c->cl = NULL;
	atomic_fetch_add(&the_proxy.st.conns_asleep, 1);
	log_debug("conn=%llx idle: asleep", (unsigned long long)c->id);
}

/*
 * An intercepted connection between requests without an upstream (parked,
 * closed or lent): drops its parser state and goes to sleep. Its next
 * request allocates them again.
 */
void
proxy_conn_rest(struct conn *c)
{
	upresp_free(c);
	if (c->req != NULL) {
		hreq_free(c->req);
		free(c->req);
		c->req = NULL;
	}
	cl_sleep(c);
}

static void
cl_wake(evutil_socket_t fd, short ev, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)ev;
	event_free(c->sleep_ev);	/* not persistent: no longer pending */
	c->sleep_ev = NULL;
	atomic_fetch_sub(&the_proxy.st.conns_asleep, 1);
	if (cl_tls_bev(c, BUFFEREVENT_SSL_OPEN) == -1) {
		conn_kill(c);
		return;
	}
	c->last_active = util_mono_coarse_ms();
	/* The bytes (or EOF) that woke us are read on the bufferevent's event. */
	cl_req_setup(c);
}

/* ---- upstream connected: the 200, then tunnel or client TLS ---- */
/*
 * For interception the upstream handshake (certificate verified) is done
 * before the client gets its 200; a failed upstream handshake answers the
 * CONNECT with 502 and no request byte is ever sent.
 */

static void
client_tls_start(struct conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	X509 *leaf;
	SSL *ssl;
	int hit;
	ssize_t n;

	if (c->cl_eof) {
		conn_kill(c);
		return;
	}
	if (evbuffer_get_length(bufferevent_get_input(c->cl)) > 0) {
		conn_respond(c, 400, "bad_request", "bytes sent before the CONNECT response");
		return;
	}
	if ((leaf = certcache_get(the_proxy.cc, c->tgt, &hit)) == NULL) {
		proxy_connect_fail(c, 502, "tls_setup", "cannot mint certificate");
		return;
	}
	ssl = tls_client_new(leaf, certcache_leaf_key(the_proxy.cc));
	X509_free(leaf);
	if (ssl == NULL) {
		proxy_connect_fail(c, 502, "tls_setup", "TLS setup failed");
		return;
	}
	/* Nothing is queued on the plain side: write the 200 directly. */
	n = send(c->cfd, ok, sizeof(ok) - 1, MSG_NOSIGNAL);
	if (n != (ssize_t)sizeof(ok) - 1) {
		SSL_free(ssl);
		conn_kill(c);
		return;
	}
	connaudit_connect(c, 200, NULL, NULL);
	bufferevent_free(c->cl);
	c->cl_ssl = ssl;
	if (cl_tls_bev(c, BUFFEREVENT_SSL_ACCEPTING) == -1) {
		conn_kill(c);
		return;
	}
	c->st = CS_CL_TLS;
	c->deadline = util_mono_coarse_ms() + the_proxy.conf->handshake_ms;
	bufferevent_setcb(c->cl, NULL, NULL, cl_event, c);
	evrelay_bev_enable(c->cl, EV_READ | EV_WRITE);
}

static void
up_connected(struct conn *c)
{
	size_t hwm = (size_t)the_proxy.conf->high_watermark;

	if (c->ai != NULL) {
		evutil_freeaddrinfo(c->ai);
		c->ai = c->ai_cur = NULL;
	}
	c->no_pool = 0;
	if (c->up_tls && c->up_nreq == 0)
		log_debug("conn=%llx upstream TLS %s", (unsigned long long)c->id,
		    SSL_session_reused(bufferevent_openssl_get_ssl(c->up)) ? "resumed" : "full");
	bufferevent_setcb(c->up, up_read, up_write, up_event, c);
	bufferevent_setwatermark(c->up, EV_READ, 0, hwm);
	bufferevent_setwatermark(c->up, EV_WRITE, hwm / 2, 0);
	evrelay_bev_enable(c->up, EV_READ | EV_WRITE);
	upool_kick(c);
	if (c->connect_then_req) {
		c->connect_then_req = 0;
		req_send(c);
		return;
	}
	if (c->mode == MODE_TUNNEL) {
		connaudit_connect(c, 200, NULL, NULL);
		evbuffer_add(bufferevent_get_output(c->cl),
		    "HTTP/1.1 200 Connection established\r\n\r\n", 39);
		tunnel_start(c);
		return;
	}
	client_tls_start(c);
}

/* ---- request cycle (intercept and plain) ---- */
/*
 * Head, hook, send, body, response; one request at a time per connection:
 * the next head is read only once the response is complete (pipelined
 * bytes wait, bounded by the read watermark). The request goes upstream
 * rebuilt (hreq_build), its body re-framed with backpressure; the response
 * is relayed as it arrives, parsed only for its status and its end. An
 * idempotent request that a reused upstream closed on before answering is
 * sent once more, on a fresh connection.
 */

static int
body_sink(void *arg, const char *p, size_t n)
{
	struct conn *c = arg;
	struct evbuffer *out = bufferevent_get_output(c->up);
	struct hreq *r = c->req;
	static struct log_rate rl;
	char hdr[24], err[200];
	long dropped;
	int hl;

	if (r->s4c != NULL) {
		/* Signed chunks (credreq.c): each signed again with the real key. */
		buf_reset(&r->s4out);
		if (sigv4_chunks_feed(r->s4c, p, n, &r->s4out, err, sizeof(err)) == -1) {
			if (log_rate_ok(&rl, 5, 10000, &dropped))
				log_info("conn=%llx target=%s signed chunks refused: %s (%ld "
				    "similar suppressed)", (unsigned long long)c->id,
				    c->tgt->hostport, err, dropped);
			return -1;
		}
		p = r->s4out.p;
		n = r->s4out.len;
	}
	c->req_up += n;
	c->tot_up += n;
	if (c->req->hd.chunked) {
		hl = snprintf(hdr, sizeof(hdr), "%zx\r\n", n);
		evbuffer_add(out, hdr, (size_t)hl);
		evbuffer_add(out, p, n);
		evbuffer_add(out, "\r\n", 2);
	} else
		evbuffer_add(out, p, n);
	return 0;
}

static void
req_send(struct conn *c)
{
	struct buf *b = &c->w->scratch;
	struct hreq *r = c->req;

	buf_reset(b);
	if (hreq_build(r, c->tgt, b) == -1) {
		conn_respond(c, 431, "head_too_large", "request head too large after rewriting");
		return;
	}
	tls_add(c->up, b->p, b->len);
	c->up_nreq++;
	c->req_up = 0;
	c->head_req = r->hd.method == HTTP_HEAD;
	upresp_start(c);
	c->req_done = r->hd.msg_done;
	c->st = c->req_done ? CS_WAIT : CS_BODY;
	c->deadline = 0;
	c->last_active = util_mono_coarse_ms();
	r->hd.on_body = body_sink;
	r->hd.arg = c;
	if (r->gate != NULL) {
		/* What the gate read goes first; the rest streams from the client. */
		size_t hn;
		const char *hp = bgate_held(r->gate, &hn);
		if (hn > 0 && body_sink(c, hp, hn) == -1) {
			bgate_release(r->gate);
			conn_respond(c, 400, "bad_body", "bad request body (signed chunks)");
			return;
		}
		if (r->hd.msg_done && r->hd.chunked)
			evbuffer_add(bufferevent_get_output(c->up), "0\r\n\r\n", 5);
		bgate_release(r->gate);
	}
	evrelay_bev_enable(c->cl, EV_READ);
	evrelay_bev_enable(c->up, EV_READ | EV_WRITE);
	upool_kick(c);
	if (c->st == CS_BODY)
		body_pump(c);
}

/* Moves request body from the client to the upstream, with backpressure. */
static void
body_pump(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	struct evbuffer *out;
	struct evbuffer_iovec v;
	size_t hwm = (size_t)the_proxy.conf->high_watermark;
	long n;

	if (c->up == NULL)
		return;
	out = bufferevent_get_output(c->up);
	while (c->st == CS_BODY && evbuffer_get_length(in) > 0) {
		if (evbuffer_get_length(out) >= hwm) {
			bufferevent_disable(c->cl, EV_READ);
			return;
		}
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		n = h1head_body(&c->req->hd, v.iov_base, v.iov_len);
		if (n < 0) {
			atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
			conn_respond(c, 400, "bad_body", "bad request body framing");
			return;
		}
		evbuffer_drain(in, (size_t)n);
		if (c->req->hd.msg_done) {
			if (c->req->hd.chunked)
				evbuffer_add(out, "0\r\n\r\n", 5);
			c->req_done = 1;
			c->st = CS_WAIT;
			if (c->resp_done)
				next_request(c);
			return;
		}
	}
	if (c->cl_eof && c->st == CS_BODY) {
		conn_kill(c);	/* client went away mid-body */
		return;
	}
	evrelay_bev_enable(c->cl, EV_READ);
}

/* The response is complete: audit, then the next request or close. */
static void
resp_finish(struct conn *c)
{
	if (c->mode == MODE_INTERCEPT) {
		/* plain requests were counted when forwarded */
		atomic_fetch_add(&c->sb->requests, 1);
		if (!c->req->injected)
			atomic_fetch_add(&the_proxy.st.req_plain, 1);
	}
	conncred_answered(c, c->resp_status);
	connaudit_req(c, c->resp_status, NULL, NULL);
	if (c->vm != NULL && c->addon >= 0 && c->mode == MODE_INTERCEPT &&
	    addon_has_response(c->vm, c->addon))
		addon_on_response(c->vm, c->addon, c->ctx_ref, c->req, c->resp_status);
	c->resp_active = 0;
	if (!c->rh->keepalive && c->up != NULL) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	if (!c->req_done) {
		/* Upstream answered before the body was sent: stop here. */
		c->close_after = 1;
	}
	if (c->close_after || !c->req->hd.keepalive || c->cl_eof) {
		c->st = CS_CLOSING;
		c->deadline = util_mono_coarse_ms() + 5000;
		/*
		 * The client's Connection: close (hop-by-hop) ends only
		 * this client connection: a clean kept-alive upstream
		 * goes to the pool.
		 */
		if (c->up != NULL && !c->close_after)
			upool_park(c);
		if (c->up != NULL) {
			bufferevent_free(c->up);
			c->up = NULL;
		}
		bufferevent_disable(c->cl, EV_READ);
		bufferevent_setcb(c->cl, NULL, conn_closing_write, conn_closing_event, c);
		bufferevent_setwatermark(c->cl, EV_WRITE, 0, 0);
		if (evbuffer_get_length(bufferevent_get_output(c->cl)) == 0)
			conn_kill(c);
		return;
	}
	if (c->req_done)
		next_request(c);
}

static void
next_request(struct conn *c)
{
	c->st = c->mode == MODE_INTERCEPT ? CS_REQ_HEAD : CS_HEAD;
	c->deadline = 0;
	c->last_active = util_mono_coarse_ms();
	if (c->mode == MODE_INTERCEPT && upool_clean(c))
		upool_idle_link(c);
	bufferevent_setcb(c->cl, c->mode == MODE_INTERCEPT ? cl_read_req : cl_read_head,
	    cl_write, cl_event, c);
	evrelay_bev_enable(c->cl, EV_READ);
	if (evbuffer_get_length(bufferevent_get_input(c->cl)) > 0) {
		if (c->mode == MODE_INTERCEPT)
			cl_read_req(c->cl, c);
		else
			cl_read_head(c->cl, c);
	}
}

static void
intercept_request(struct conn *c)
{
	struct hook_ctx hc;
	struct hook_result res;
	const char *const *strip;
	char err[256];
	size_t i, n;
	int st;

	if (read_head(c, c->cl, 0) <= 0)
		return;
	c->aud_req = 1;
	c->w->nreq++;
	st = hreq_check_target(c->req, c->tgt, NULL, err, sizeof(err));
	if (st != 0) {
		atomic_fetch_add(st == 421 ? &the_proxy.st.ref_misdirected : &the_proxy.st.ref_badrequest, 1);
		conn_respond(c, st, st == 421 ? "misdirected" : "bad_target", err);
		return;
	}
	/*
	 * Hop-by-hop headers go before the addon sees the request: what it
	 * sets or injects afterwards is never removed as one (a client's
	 * "Connection: close, Authorization" strips nothing injected).
	 */
	h1head_strip_hop(&c->req->hd);
	/*
	 * The client's fields carrying its placeholders are held out of the
	 * strip and the hook, and go back swapped once the hook allows the
	 * request (credreq.h).
	 */
	if (conncred_select(c) > 0 && credreq_hold(c->req, c->cred, c->ncred, c->sb->id) == -1) {
		atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
		conn_respond(c, 400, "bad_request", "more than 8 header fields carry placeholders");
		return;
	}
	/* Exactly one credential upstream: the client's own never passes. */
	h1head_del(&c->req->hd, "authorization");
	h1head_del(&c->req->hd, "proxy-authorization");
	if (c->vm != NULL && c->addon >= 0) {
		strip = addon_vm_strip(c->vm, c->addon, &n);
		for (i = 0; i < n; i++)
			h1head_del(&c->req->hd, strip[i]);
	}
	c->st = CS_HOOK;
	c->deadline = util_mono_coarse_ms() + the_proxy.conf->hook_ms;
	if (c->vm == NULL || c->addon < 0) {
		memset(&res, 0, sizeof(res));
		res.action = ACT_NONE;
		hook_done(c, &res);
		return;
	}
	ctx_fill(c, &hc, 0);
	if (addon_on_request(c->vm, c->addon, c->ctx_ref, &hc, c->req, c->tgt, &res, hook_done,
	    c, &c->hook) == 0)
		hook_done(c, &res);
}

/* ---- bufferevent callbacks of the request cycle ---- */
/*
 * Each callback acts on c->st; after a call that may kill c it returns, or
 * checks c->dead, before touching c again (the free comes later anyway).
 * The blind tunnel (tunnel.c) and the close after an answer (conn.c) have
 * callbacks of their own.
 */

static void
cl_read_req(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	c->last_active = util_mono_coarse_ms();
	switch (c->st) {
	case CS_REQ_HEAD:
		intercept_request(c);
		return;
	case CS_BODY:
		body_pump(c);
		return;
	case CS_GATE:
		gate_pump(c);
		return;
	default:
		/* Pipelined bytes wait (bounded by the read watermark). */
		return;
	}
}

/* The upstream's bytes: the reply read and relayed (upresp.c), then the next request. */
static void
up_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	if (upresp_read(arg) == 1)
		resp_finish(arg);
}

/* The upstream's output drained below the low watermark. */
static void
up_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (c->st == CS_BODY)
		body_pump(c);
}

/* The client's output drained below the low watermark. */
static void
cl_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (c->up != NULL && c->resp_active) {
		evrelay_bev_enable(c->up, EV_READ);
		upool_kick(c);
	}
}

static void
cl_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		/* Client TLS handshake done. */
		c->st = CS_REQ_HEAD;
		c->deadline = 0;
		c->last_active = util_mono_coarse_ms();
		cl_req_setup(c);
		return;
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (c->st == CS_CL_TLS)
			log_debug("conn=%llx target=%s client TLS handshake failed",
			    (unsigned long long)c->id, c->tgt->hostport);
		/*
		 * A reset or EPIPE (conn_cl_eof: not a half-close) closes
		 * whatever the state (a response being relayed to the client
		 * would otherwise wait for timeouts.idle).
		 */
		if (conn_cl_eof(c, what)) {
			if (c->st == CS_DECIDE || c->st == CS_CONNECTING)
				return;	/* finish what was asked, then close */
			if ((c->st == CS_WAIT || c->st == CS_BODY) && c->req_done) {
				/*
				 * Deliver the response, then close. The TLS
				 * bufferevent stopped its write event with the
				 * EOF and only re-arms it when its output was
				 * empty: re-arm it now, so a backpressured
				 * response keeps flowing, or its write fails
				 * (a vanished client) and closes the conn.
				 */
				if (c->cl != NULL)
					evrelay_bev_enable(c->cl, EV_WRITE);
				return;
			}
		}
		conn_kill(c);
	}
}

static void
up_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	char m[300];

	if (what & BEV_EVENT_CONNECTED) {
		if (c->st == CS_CONNECTING) {
			int one = 1;
			setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one,
			    sizeof(one));
			up_connected(c);
		}
		return;
	}
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if (c->st == CS_CONNECTING) {
		if (c->up_tls && (what & BEV_EVENT_ERROR)) {
			if (tls_upstream_error(bev, m, sizeof(m)) == TLS_UP_VERIFY) {
				atomic_fetch_add(&the_proxy.st.ref_upstream_tls, 1);
				proxy_connect_fail(c, 502, "upstream_certificate", m);
				return;
			}
			if (c->ai_cur == NULL) {
				proxy_connect_fail(c, 502, "upstream_tls", m);
				return;
			}
		}
		if (c->ai_cur != NULL) {
			up_try(c);	/* next address */
			return;
		}
		snprintf(m, sizeof(m), "cannot connect to %s: %s", c->tgt->hostport,
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		proxy_connect_fail(c, 502, "connect_failed", m);
		return;
	}
	/* Request cycle: EOF may end an EOF-delimited response. */
	if (c->resp_active && !c->resp_done) {
		if (c->up_nreq > 1 && !c->resp_hdone && !c->resp_wrote &&
		    evbuffer_get_length(bufferevent_get_input(bev)) == 0 && c->req_done && c->req_up == 0 && !c->no_pool &&
		    c->req != NULL && (c->req->hd.method == HTTP_GET ||
		    c->req->hd.method == HTTP_HEAD || c->req->hd.method == HTTP_OPTIONS)) {
			/*
			 * A kept-alive or pooled upstream closed as the
			 * request went out (the server's idle close raced
			 * it): send it once more on a fresh connection, as
			 * HTTP clients do for idempotent requests.
			 */
			atomic_fetch_add(&the_proxy.st.pool_retried, 1);
			log_info("conn=%llx target=%s reused upstream closed before answering; retrying on a new connection",
			    (unsigned long long)c->id, c->tgt->hostport);
			bufferevent_free(c->up);
			c->up = NULL;
			c->no_pool = 1;
			c->connect_then_req = 1;
			up_connect(c);
			return;
		}
		if (upresp_eof(c) == 0) {
			c->resp_done = 1;
			c->close_after = 1;
			bufferevent_free(c->up);
			c->up = NULL;
			resp_finish(c);
			return;
		}
		if (!c->resp_wrote && evbuffer_get_length(bufferevent_get_output(c->cl)) == 0) {
			conn_respond(c, 502, "upstream_closed", "upstream closed without a response");
		} else
			conn_kill(c);	/* a body the close cut short */
		return;
	}
	/* Idle keep-alive upstream went away: reconnect on the next request. */
	bufferevent_free(c->up);
	c->up = NULL;
}
