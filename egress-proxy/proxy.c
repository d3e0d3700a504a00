/*
 * proxy.c: worker threads and the connection engine.
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
 * worker's dead list, which a deferred event frees.
 *
 * This file is that one state machine, in sections ("---- name ----", each
 * opening with its rules). What is not the state machine lives beside it
 * and never calls back into it: the TLS contexts in tls.c, the audit lines
 * in audit.c, the interned targets in tgtab.c, the Prometheus text in
 * metrics.c (which only reads the counters).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/bufferevent_struct.h>	/* ev_read, for up_kick */
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <event2/util.h>
#include <openssl/err.h>

#include "addon.h"
#include "audit.h"
#include "bodygate.h"
#include "buf.h"
#include "canon.h"
#include "evrelay.h"
#include "certcache.h"
#include "ghapp.h"
#include "httpreq.h"
#include "log.h"
#include "netcheck.h"
#include "proxy.h"
#include "sandbox.h"
#include "tgtab.h"
#include "tls.h"
#include "util.h"
#include "xmalloc.h"

/* ---- objects: connection, worker message, parked upstream, worker ---- */
/*
 * A struct conn, a struct pooled and everything they point to belong to one
 * worker and are touched on its thread only; a struct msg is the one thing
 * that crosses threads, through the worker's inbox under w->mtx. Shared:
 * the_proxy (written before the workers start; afterwards its counters are
 * atomics, the addon source is under src_mtx and the leaf cache locks
 * itself) and the sandboxes (refcounted, atomic counters).
 */

struct proxy the_proxy;

enum cstate {
	CS_HEAD,	/* plain client side: CONNECT or http:// request head */
	CS_DECIDE,	/* on_connect hook running */
	CS_CONNECTING,	/* resolve + connect (+ TLS) to the upstream */
	CS_CL_TLS,	/* TLS handshake with the client */
	CS_TUNNEL,	/* blind bytes */
	CS_REQ_HEAD,	/* intercepted: waiting for a request head */
	CS_HOOK,	/* on_request running */
	CS_GATE,	/* reading the body's start for a body gate (bodygate.c) */
	CS_DRAIN,	/* gate refused: answered, discarding the rest of the body */
	CS_BODY,	/* request head sent, body streaming */
	CS_WAIT,	/* request sent, response streaming */
	CS_CLOSING	/* flushing the last bytes to the client */
};

enum cmode { MODE_NONE, MODE_TUNNEL, MODE_INTERCEPT, MODE_PLAIN };

struct worker;

struct conn {
	TAILQ_ENTRY(conn)	 link;
	TAILQ_ENTRY(conn)	 idle_link;	/* on w->idleup */
	TAILQ_ENTRY(conn)	 unid_link;	/* on w->unid while unid */
	struct worker		*w;
	uint64_t		 id;
	struct sandbox		*sb;		/* NULL until identified */
	struct sbattrs		*attrs;
	struct bufferevent	*cl, *up;
	int			 cfd;		/* client fd (the conn closes it) */
	SSL			*cl_ssl;	/* client TLS (the conn frees it) */
	struct event		*sleep_ev;	/* asleep: cl is NULL (cl_sleep) */
	enum cstate		 st;
	enum cmode		 mode;
	unsigned		 fixed_sb:1;	/* came in on a sandbox listener */
	unsigned		 peer_family:8;	/* client address, for client_ips */
	unsigned		 dead:1;	/* on the dead list */
	unsigned		 counted_sb:1;	/* counted in sb->conns */
	unsigned		 counted_tun:1;	/* counted in sb->tunnels */
	unsigned		 cl_eof:1;	/* client sent EOF */
	unsigned		 up_eof:1;	/* upstream sent EOF (tunnel) */
	unsigned		 close_after:1;	/* close once the response is out */
	unsigned		 resp_active:1;	/* a response is being relayed */
	unsigned		 resp_done:1;
	unsigned		 resp_wrote:1;	/* response bytes went to the client */
	unsigned		 req_done:1;	/* request fully sent upstream */
	unsigned		 head_req:1;	/* current request is HEAD */
	unsigned		 up_tls:1;	/* upstream bev is TLS */
	unsigned		 connect_then_req:1; /* connecting for a request */
	unsigned		 no_pool:1;	/* retrying: dial a fresh upstream */
	unsigned		 idle_linked:1;	/* on w->idleup */
	unsigned		 tunnel_open:1;	/* blind tunnel started (its line is due at close) */
	unsigned		 unid:1;	/* main listener, not identified: on w->unid,
						   counted in conns_unid and its source's count */
	unsigned		 aud_connect:1;	/* a CONNECT head parsed, its outcome line due */
	unsigned		 aud_req:1;	/* a request head parsed, its line due */
	const char		*decision;	/* on_connect's: "intercept", ...; NULL: none */
	long long		 accepted;	/* ms, util_mono_coarse_ms */
	unsigned		 up_nreq;	/* requests sent on c->up */
	union sa_any {
		struct sockaddr		sa;
		struct sockaddr_in	in;
		struct sockaddr_in6	in6;
	}			 up_addr;	/* the address c->up dialled */
	int			 addon;		/* deciding addon, -1 none */
	int			 ctx_ref;	/* Lua ctx table */
	struct addon_vm		*vm;
	struct hook		*hook;
	struct evdns_getaddrinfo_request *dnsreq;
	struct evutil_addrinfo	*ai, *ai_cur;
	unsigned char		 peer[16];
	const struct target	*tgt;		/* tunnel / current upstream target,
						   interned (tgt_set); never NULL */
	struct hreq		*req;
	llhttp_t		*rp;		/* response parser */
	size_t			 resp_head_bytes;
	int			 resp_status;
	long long		 deadline;	/* ms, util_mono_coarse_ms; 0: none */
	long long		 last_active;
	long long		 head_start;
	unsigned long long	 req_up, req_down;	/* body bytes, for audit */
	unsigned long long	 tot_up, tot_down;
};

enum msgtype { MSG_ACCEPT, MSG_KILL_SB, MSG_SHED, MSG_STOP };

struct msg {
	struct msg	*next;
	enum msgtype	 type;
	int		 fd;		/* MSG_ACCEPT; MSG_SHED: how many */
	struct sandbox	*sb;
};

/*
 * A parked upstream TLS connection: idle (its last response complete, no
 * byte pending either way), kept for the next intercepted connection of the
 * SAME sandbox to the same canonical target and dialled address. Parked
 * connections are read: any byte or EOF drops them.
 */
struct pooled {
	TAILQ_ENTRY(pooled)	 link;
	struct worker		*w;
	struct sandbox		*sb;		/* referenced */
	struct bufferevent	*bev;
	union sa_any		 addr;
	long long		 expires;
	char			 hostport[CANON_HOST_MAX + 10];
};

struct worker {
	int			 idx;
	pthread_t		 th;
	struct event_base	*base;
	struct evdns_base	*dns;
	struct event		*inbox_ev, *tick_ev, *reap_ev;
	pthread_mutex_t		 mtx;
	struct msg		*inbox, *inbox_tail;
	atomic_long		 load;
	TAILQ_HEAD(connq, conn)	 conns;
	struct connq		 dead;
	struct connq		 unid;		/* unidentified connections, oldest first */
	TAILQ_HEAD(poolq, pooled) pool;		/* newest first */
	long			 npool;
	/*
	 * Intercepted connections between requests that still hold their
	 * upstream, most recently idle first: a new connection of the same
	 * sandbox to the same target takes such an upstream over when the
	 * pool has none (see up_take_idle).
	 */
	struct connq		 idleup;
	struct tgtab		*tgts;		/* interned targets (tgt_set) */
	/* work counters for the tick's quiet-time Lua garbage collection */
	unsigned long long	 nreq, work_seen, work_gc;
	struct addon_vm		*vm;
	struct ghapp		*gh;
	struct buf		 scratch;
	struct auditq		*audit;		/* NULL: no audit log */
	uint64_t		 next_id;
};

static struct worker *workers;
static int nworkers;

static void conn_kill(struct conn *);
static void cl_read_head(struct bufferevent *, void *);
static void cl_read_req(struct bufferevent *, void *);
static void cl_event(struct bufferevent *, short, void *);
static void up_event(struct bufferevent *, short, void *);
static void up_read(struct bufferevent *, void *);
static void up_write(struct bufferevent *, void *);
static void cl_write(struct bufferevent *, void *);
static void cl_wake(evutil_socket_t, short, void *);
static void conn_rest(struct conn *);
static void up_connect(struct conn *);
static void req_send(struct conn *);
static void body_pump(struct conn *);
static void req_go(struct conn *);
static void gate_start(struct conn *);
static void hook_done(void *, const struct hook_result *);
static void next_request(struct conn *);
static void pool_park(struct conn *);
static void idle_unlink(struct conn *);
static void up_connected(struct conn *);
static void pool_drop(struct pooled *);

/* ---- connection targets: c->tgt, interned per worker (tgtab.c) ---- */
/*
 * c->tgt is never NULL: &tgt_none until the connection has a target, then
 * the worker's copy, one reference per connection, changed only by tgt_set
 * and put by conn_free.
 */

/* The target of a connection that has none yet: empty names. */
static const struct target tgt_none;

/* Points c->tgt at the worker's copy of t (made if there is none). */
static void
tgt_set(struct conn *c, const struct target *t)
{
	const struct target *old = c->tgt;

	c->tgt = tgtab_get(c->w->tgts, t);
	if (old != &tgt_none)
		tgtab_put(c->w->tgts, old);
}

/* ---- responses generated by the proxy ---- */
/*
 * conn_respond is the one way to answer a client with a status: it drops
 * the upstream and any hook, and closes once the answer is flushed
 * (CS_CLOSING, at most 5 s). The reason reaches the agent in the body and
 * X-Proxy-Deny-Reason, with control bytes replaced.
 */

static const char *
status_text(int s)
{
	switch (s) {
	case 200: return "Connection established";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 407: return "Proxy Authentication Required";
	case 408: return "Request Timeout";
	case 421: return "Misdirected Request";
	case 429: return "Too Many Requests";
	case 413: return "Payload Too Large";
	case 415: return "Unsupported Media Type";
	case 431: return "Request Header Fields Too Large";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

static void
reason_clean(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; src[i] != '\0' && i + 1 < len; i++) {
		unsigned char ch = (unsigned char)src[i];
		dst[i] = (char)((ch < 0x20 || ch == 0x7f) ? ' ' : ch);
	}
	dst[i] = '\0';
}

static void refusal_audit(struct conn *, int, const char *, const char *);

/*
 * Refusal log lines: a peer causes them at will (a flood of malformed
 * heads), so at most REFUSE_LOG_BURST per REFUSE_LOG_MS, the rest counted
 * and reported in the next line written.
 */
#define REFUSE_LOG_BURST	20
#define REFUSE_LOG_MS		1000
static struct log_rate refuse_rl;

static void gate_drain(struct conn *);
static void conn_closing_write(struct bufferevent *, void *);
static void conn_closing_event(struct bufferevent *, short, void *);
static void drain_read(struct bufferevent *, void *);
static void tun_cl_read(struct bufferevent *, void *);
static void tun_up_read(struct bufferevent *, void *);
static void tun_up_write(struct bufferevent *, void *);
static void tun_cl_write(struct bufferevent *, void *);
static void tun_cl_event(struct bufferevent *, short, void *);
static void tun_up_event(struct bufferevent *, short, void *);

/*
 * Answers the client with status and body (of type ctype), then closes
 * once it is flushed. The reason is readable by the agent (the
 * X-Proxy-Deny-Reason header of a refusal: status >= 400, or a body
 * gate's 200 report-status). code is the audit's reason ("deny",
 * "address_policy", ...; docs/proxy.md "Audit log and logs"): the line of
 * the CONNECT or request being answered, or a "refused" line, is written
 * here, once. A gated request whose body has not all arrived is drained
 * (gate_drain) rather than closed on, so the client reads the answer
 * instead of a reset.
 */
static void
conn_answer(struct conn *c, int status, const char *code, const char *reason,
    const char *ctype, const char *body, size_t blen)
{
	char r[300], e[400];
	struct evbuffer *out;
	long dropped;
	int refusal = status >= 400 || (c->req != NULL && c->req->gate != NULL);

	reason_clean(r, sizeof(r), reason != NULL ? reason : status_text(status));
	if (!c->dead) {
		refusal_audit(c, status, code, r);
		if (refusal && log_rate_ok(&refuse_rl, REFUSE_LOG_BURST, REFUSE_LOG_MS,
		    &dropped))
			log_info("conn=%llx sandbox=%s target=%s refused status=%d reason=%s detail=\"%s\"%s%.0ld%s",
			    (unsigned long long)c->id, c->sb != NULL ? c->sb->id : "-",
			    c->tgt->hostport[0] != '\0' ? c->tgt->hostport : "-", status,
			    code != NULL ? code : "-", log_escape(e, sizeof(e), r, strlen(r)),
			    dropped > 0 ? " (" : "", dropped, dropped > 0 ? " similar suppressed)" : "");
	}
	if (c->cl == NULL || c->dead) {
		conn_kill(c);
		return;
	}
	out = bufferevent_get_output(c->cl);
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n%s%s%s%s\r\n",
	    status, status == 200 && c->req != NULL ? "OK" : status_text(status), ctype, blen,
	    status == 407 ? "Proxy-Authenticate: Basic realm=\"egress-proxy\"\r\n" : "",
	    refusal ? "X-Proxy-Deny-Reason: " : "", refusal ? r : "",
	    refusal ? "\r\n" : "");
	evbuffer_add(out, body, blen);
	if (c->sb != NULL && refusal)
		atomic_fetch_add(&c->sb->denied, 1);
	/* Close after the flush; drop the upstream now. */
	if (c->up != NULL) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	if (c->hook != NULL) {
		addon_cancel(c->hook);
		c->hook = NULL;
	}
	if (c->req != NULL && c->req->gate != NULL && !c->req->body_done &&
	    (c->st == CS_GATE || c->st == CS_HOOK)) {
		gate_drain(c);
		return;
	}
	c->st = CS_CLOSING;
	c->deadline = util_mono_coarse_ms() + 5000;
	bufferevent_disable(c->cl, EV_READ);
	bufferevent_setcb(c->cl, NULL, conn_closing_write, conn_closing_event, c);
	bufferevent_setwatermark(c->cl, EV_WRITE, 0, 0);
	bev_enable(c->cl, EV_WRITE);
	if (evbuffer_get_length(out) == 0)
		conn_kill(c);
}

/* conn_answer with the reason as a text/plain body. */
static void
conn_respond(struct conn *c, int status, const char *code, const char *reason)
{
	char r[300], b[302];

	reason_clean(r, sizeof(r), reason != NULL ? reason : status_text(status));
	snprintf(b, sizeof(b), "%s\n", r);
	conn_answer(c, status, code, r, "text/plain", b, strlen(b));
}

/* ---- audit records: what a connection tells audit.c ---- */
/*
 * One line per request answered (forwarded, refused after its head, or
 * failed), with the status the client got; one per CONNECT (its 200 or its
 * refusal); one per refusal before any head was parsed; one per blind
 * tunnel when it closes; nothing when audit.log is unset (w->audit is
 * NULL). c->aud_connect / c->aud_req say a line is due: the first of the
 * answer (conn_respond), the success or the close (conn_kill) writes it,
 * so each gets exactly one.
 */

/* The audit line of c's current request, answered with status (0: none). */
static void
req_audit(struct conn *c, int status, const char *code, const char *detail)
{
	struct hreq *r = c->req;
	struct audit_rec a;

	c->aud_req = 0;
	if (c->w->audit == NULL || r == NULL)
		return;
	memset(&a, 0, sizeof(a));
	a.sandbox = c->sb != NULL ? c->sb->id : NULL;
	a.host = c->tgt->hostport;
	a.conn = c->id;
	a.type = c->mode == MODE_INTERCEPT ? "intercept" : "http";
	a.method = hreq_method(r);
	a.path = r->data.p + r->path_o;
	a.path_len = r->path_l;
	a.status = status;
	a.bytes_up = c->req_up;
	a.bytes_down = c->req_down;
	/* What was written upstream, not what the addon asked for. */
	a.injected = r->sent_cred;
	a.rule = r->rule;
	a.reason = code;
	a.detail = detail;
	audit_request(c->w->audit, &a);
}

/* The audit line of c's CONNECT: 200 or the refusal (0: none sent). */
static void
connect_audit(struct conn *c, int status, const char *code, const char *detail)
{
	struct audit_rec a;

	c->aud_connect = 0;
	if (c->w->audit == NULL)
		return;
	memset(&a, 0, sizeof(a));
	a.sandbox = c->sb != NULL ? c->sb->id : NULL;
	a.host = c->tgt->hostport;
	a.conn = c->id;
	a.status = status;
	a.decision = c->decision;
	a.reason = code;
	a.detail = detail;
	audit_connect(c->w->audit, &a);
}

/*
 * The line of a refusal (status) of c: its CONNECT's, its request's, or a
 * "refused" line when no head was parsed (malformed, too large, timed out).
 */
static void
refusal_audit(struct conn *c, int status, const char *code, const char *detail)
{
	struct audit_rec a;

	if (c->aud_connect) {
		connect_audit(c, status, code, detail);
		return;
	}
	if (c->aud_req && c->req != NULL) {
		req_audit(c, status, code, detail);
		return;
	}
	c->aud_req = 0;
	if (c->w->audit == NULL || status < 400)
		return;
	memset(&a, 0, sizeof(a));
	a.sandbox = c->sb != NULL ? c->sb->id : NULL;
	a.host = c->tgt->hostport[0] != '\0' ? c->tgt->hostport : NULL;
	a.conn = c->id;
	a.status = status;
	a.reason = code;
	a.detail = detail;
	audit_refused(c->w->audit, &a);
}

/* The audit line of c, a blind tunnel closing. */
static void
tunnel_audit(struct conn *c)
{
	struct audit_rec a;

	if (c->w->audit == NULL || c->sb == NULL)
		return;
	memset(&a, 0, sizeof(a));
	a.sandbox = c->sb->id;
	a.host = c->tgt->hostport;
	a.conn = c->id;
	a.bytes_up = c->tot_up;
	a.bytes_down = c->tot_down;
	audit_tunnel(c->w->audit, &a);
}


/* ---- unidentified connections: their share, per source and in total ---- */
/*
 * A connection on the main listener is unidentified until its first head
 * names a registered sandbox (identify). Unidentified connections have
 * their own caps, so that a client holding many idle ones cannot take the
 * connections of registered sandboxes: limits.unidentified_per_source per
 * client address (counted over all workers in srctab) and
 * limits.unidentified in total (at most a quarter of limits.max_conns). A
 * new connection beyond the per-address cap closes its address's oldest
 * unidentified one that is at least UNID_GRACE_MS old, idle ones (no byte
 * received) first; beyond the total cap, one of the address holding the
 * most (unid_heaviest), whatever its age, or the new one's own address's
 * as before when that is the one. When there is none to close, it is
 * admitted up to UNID_BURST times the cap and closed beyond.
 * They have timeouts.identify from accept to identify. When descriptors
 * run short, lguard.c asks the workers to shed the oldest (unid_shed).
 */

/* Buckets of the per-address counts (entries are freed at zero). */
#define SRC_BUCKETS	1024
/*
 * A connection younger than this is never closed to make room: a client's
 * burst of new connections (npm, git) arrives before any of them has sent
 * its head. Beyond a cap, young connections are admitted up to UNID_BURST
 * times the cap; an attacker's held connections age past it and go first.
 */
#define UNID_GRACE_MS	1000
#define UNID_BURST	2

struct srcent {
	struct srcent	*next;
	unsigned char	 fam;
	unsigned char	 a[16];
	long		 n;
};

static struct srcent *srctab[SRC_BUCKETS];
static pthread_mutex_t srctab_mtx = PTHREAD_MUTEX_INITIALIZER;
/* Evictions and refusals at the caps: a flood causes them at will. */
static struct log_rate unid_rl;

/* Adds d to the count of c's client address; returns the new count. */
static long
src_adj(const struct conn *c, long d)
{
	uint32_t h = 2166136261U;
	struct srcent **pp, *e;
	long n;
	int i;

	for (i = 0; i < 16; i++)
		h = (h ^ c->peer[i]) * 16777619U;
	h = (h ^ c->peer_family) * 16777619U;
	pthread_mutex_lock(&srctab_mtx);
	for (pp = &srctab[h % SRC_BUCKETS]; (e = *pp) != NULL; pp = &e->next)
		if (e->fam == c->peer_family && memcmp(e->a, c->peer, 16) == 0)
			break;
	if (e == NULL) {
		if (d <= 0) {
			pthread_mutex_unlock(&srctab_mtx);
			return 0;
		}
		e = xcalloc(1, sizeof(*e));
		e->fam = (unsigned char)c->peer_family;
		memcpy(e->a, c->peer, 16);
		e->next = srctab[h % SRC_BUCKETS];
		srctab[h % SRC_BUCKETS] = e;
		pp = &srctab[h % SRC_BUCKETS];
	}
	n = (e->n += d);
	if (n <= 0) {
		*pp = e->next;
		free(e);
	}
	pthread_mutex_unlock(&srctab_mtx);
	return n;
}

/* c is unidentified: listed and counted. Returns its address's count. */
static long
unid_enter(struct conn *c)
{
	c->unid = 1;
	TAILQ_INSERT_TAIL(&c->w->unid, c, unid_link);
	atomic_fetch_add(&the_proxy.st.conns_unid, 1);
	return src_adj(c, 1);
}

/* c is identified or closing: no longer counted. Idempotent. */
static void
unid_leave(struct conn *c)
{
	if (!c->unid)
		return;
	c->unid = 0;
	TAILQ_REMOVE(&c->w->unid, c, unid_link);
	atomic_fetch_sub(&the_proxy.st.conns_unid, 1);
	src_adj(c, -1);
}

/* No byte received yet: nothing is lost by closing it. */
static int
unid_idle(struct conn *c)
{
	return c->st == CS_HEAD && c->head_start == 0 &&
	    (c->cl == NULL || evbuffer_get_length(bufferevent_get_input(c->cl)) == 0);
}

/*
 * The oldest unidentified connection of w other than c and at least
 * UNID_GRACE_MS old, idle ones first; with same_src, of c's address only.
 * NULL: none.
 */
static struct conn *
unid_victim(struct worker *w, struct conn *c, int same_src)
{
	struct conn *v, *busy = NULL;
	long long now = util_mono_coarse_ms();

	TAILQ_FOREACH(v, &w->unid, unid_link) {
		if (now - v->accepted < UNID_GRACE_MS)
			break;	/* oldest first: the rest are younger */
		if (v == c || (same_src && (v->peer_family != c->peer_family ||
		    memcmp(v->peer, c->peer, 16) != 0)))
			continue;
		if (unid_idle(v))
			return v;
		if (busy == NULL)
			busy = v;
	}
	return busy;
}

/*
 * For the total cap: the unidentified connection of w, other than c and not
 * of c's address, whose address holds the most unidentified connections
 * (over all workers), idle ones first, then the oldest; its address's
 * count in *nv. NULL: none.
 */
static struct conn *
unid_heaviest(struct worker *w, struct conn *c, long *nv)
{
	struct conn *v, *best = NULL;
	struct srcent *e;
	long n, bn = 0;
	int bidle = 0, idle;
	uint32_t h;
	int i;

	pthread_mutex_lock(&srctab_mtx);
	TAILQ_FOREACH(v, &w->unid, unid_link) {
		if (v == c || (v->peer_family == c->peer_family &&
		    memcmp(v->peer, c->peer, 16) == 0))
			continue;
		h = 2166136261U;
		for (i = 0; i < 16; i++)
			h = (h ^ v->peer[i]) * 16777619U;
		h = (h ^ v->peer_family) * 16777619U;
		for (e = srctab[h % SRC_BUCKETS]; e != NULL; e = e->next)
			if (e->fam == v->peer_family && memcmp(e->a, v->peer, 16) == 0)
				break;
		n = e != NULL ? e->n : 0;
		idle = unid_idle(v);
		if (best == NULL || n > bn || (n == bn && idle && !bidle)) {
			best = v;
			bn = n;
			bidle = idle;
		}
	}
	pthread_mutex_unlock(&srctab_mtx);
	*nv = bn;
	return best;
}

/*
 * The total cap in force: limits.unidentified, at most a quarter of
 * max_conns, so that with its burst allowance (UNID_BURST times) half of
 * max_conns is always left to identified connections.
 */
static long
unid_cap(void)
{
	long long q = the_proxy.conf->max_conns / (2 * UNID_BURST);

	if (q < 1)
		q = 1;
	return (long)(the_proxy.conf->unid_max < q ? the_proxy.conf->unid_max : q);
}

/*
 * Applies the caps to c, just accepted unidentified with nsrc connections
 * of its address counted. Returns the connection the caller closes: NULL
 * (none, c goes on), another one (evicted, c goes on) or c (refused).
 */
static struct conn *
unid_admit(struct conn *c, long nsrc)
{
	struct conn *v, *other = NULL;
	const char *which = NULL;
	long dropped, n, cap, nv = 0;

	if (nsrc > the_proxy.conf->unid_per_source) {
		/* this address's own: its oldest aged one, else a young burst */
		which = "per-address";
		n = nsrc;
		cap = (long)the_proxy.conf->unid_per_source;
		v = unid_victim(c->w, c, 1);
	} else if ((n = atomic_load(&the_proxy.st.conns_unid)) > unid_cap()) {
		/*
		 * In total: the address holding the most pays, whatever the
		 * age of its connections (a flood renews them to keep them
		 * young); this address's own aged ones when it is the one.
		 */
		which = "total";
		cap = unid_cap();
		other = unid_heaviest(c->w, c, &nv);
		v = other != NULL && nv >= nsrc ? other : unid_victim(c->w, c, 1);
	} else
		return NULL;
	if (v == NULL && n <= cap * UNID_BURST &&
	    atomic_load(&the_proxy.st.conns_unid) <= unid_cap() * UNID_BURST)
		return NULL;	/* a burst of young ones: admitted */
	if (v == NULL)
		v = other;
	if (v != NULL) {
		atomic_fetch_add(&the_proxy.st.unid_evicted, 1);
		if (log_rate_ok(&unid_rl, 1, 10000, &dropped))
			log_info("conn=%llx unidentified connections at their %s cap: closed the oldest, conn=%llx (%ld similar suppressed)",
			    (unsigned long long)c->id, which, (unsigned long long)v->id, dropped);
		return v;
	}
	atomic_fetch_add(&the_proxy.st.unid_refused, 1);
	atomic_fetch_add(&the_proxy.st.ref_limit, 1);
	if (log_rate_ok(&unid_rl, 1, 10000, &dropped))
		log_info("conn=%llx unidentified connections at their %s cap: refused (%ld similar suppressed)",
		    (unsigned long long)c->id, which, dropped);
	return c;
}

/* Closes up to n unidentified connections of w, oldest idle ones first. */
static long
unid_shed(struct worker *w, long n)
{
	struct conn *c, *next;
	long done = 0;
	int pass;

	for (pass = 0; pass < 2 && done < n; pass++)
		for (c = TAILQ_FIRST(&w->unid); c != NULL && done < n; c = next) {
			next = TAILQ_NEXT(c, unid_link);
			if (pass == 0 && !unid_idle(c))
				continue;
			conn_kill(c);
			done++;
		}
	atomic_fetch_add(&the_proxy.st.unid_shed, done);
	return done;
}

/* ---- lifecycle: new, kill, free ---- */
/*
 * conn_kill unhooks every callback and queues c on w->dead (idempotent);
 * reap_cb frees it in a later loop pass, and nothing else frees a conn.
 * What a connection counts (w->load, the sandbox's conns and tunnels, the
 * proxy counters) is uncounted exactly once, in conn_kill or conn_free.
 */

static void
conn_free(struct conn *c)
{
	idle_unlink(c);
	if (c->hook != NULL)
		addon_cancel(c->hook);
	if (c->vm != NULL) {
		if (c->ctx_ref > 0)
			addon_ctx_release(c->vm, c->ctx_ref);
		addon_vm_unref(c->vm);
	}
	if (c->sleep_ev != NULL)
		event_free(c->sleep_ev);
	if (c->cl != NULL)
		bufferevent_free(c->cl);
	if (c->up != NULL)
		bufferevent_free(c->up);
	/*
	 * The TLS bufferevent neither frees its SSL nor closes the fd (it
	 * may be dropped and made again around them, see cl_sleep); its
	 * deferred destructor does not touch either.
	 */
	SSL_free(c->cl_ssl);
	if (c->cfd != -1)
		evutil_closesocket(c->cfd);
	if (c->ai != NULL)
		evutil_freeaddrinfo(c->ai);
	if (c->req != NULL) {
		hreq_free(c->req);
		free(c->req);
	}
	free(c->rp);
	if (c->sb != NULL) {
		if (c->counted_sb)
			atomic_fetch_sub(&c->sb->conns, 1);
		if (c->counted_tun)
			atomic_fetch_sub(&c->sb->tunnels, 1);
		sandbox_unref(c->sb);
	}
	if (c->counted_tun)
		atomic_fetch_sub(c->mode == MODE_INTERCEPT ? &the_proxy.st.tunnels_intercept :
		    &the_proxy.st.tunnels_blind, 1);
	sbattrs_unref(c->attrs);
	if (c->tgt != &tgt_none)
		tgtab_put(c->w->tgts, c->tgt);
	atomic_fetch_sub(&the_proxy.st.conns, 1);
	free(c);
}

static void
reap_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct worker *w = arg;
	struct conn *c;

	(void)fd;
	(void)ev;
	while ((c = TAILQ_FIRST(&w->dead)) != NULL) {
		TAILQ_REMOVE(&w->dead, c, link);
		conn_free(c);
	}
}

/* Stops every callback of c and queues it for freeing. Idempotent. */
static void
conn_kill(struct conn *c)
{
	if (c->dead)
		return;
	/* A CONNECT or request closed before it was answered. */
	if (c->aud_connect)
		connect_audit(c, 0, "closed", NULL);
	if (c->aud_req)
		req_audit(c, c->resp_status, "closed", NULL);
	unid_leave(c);
	idle_unlink(c);
	/* A clean idle upstream (between requests) goes to the pool. */
	if (c->up != NULL && (c->st == CS_REQ_HEAD || c->st == CS_CL_TLS))
		pool_park(c);
	c->dead = 1;
	if (c->tunnel_open)
		tunnel_audit(c);
	if (c->cl != NULL) {
		bufferevent_disable(c->cl, EV_READ | EV_WRITE);
		bufferevent_setcb(c->cl, NULL, NULL, NULL, NULL);
	}
	if (c->sleep_ev != NULL) {
		event_del(c->sleep_ev);
		atomic_fetch_sub(&the_proxy.st.conns_asleep, 1);
	}
	if (c->up != NULL) {
		bufferevent_disable(c->up, EV_READ | EV_WRITE);
		bufferevent_setcb(c->up, NULL, NULL, NULL, NULL);
	}
	if (c->hook != NULL) {
		addon_cancel(c->hook);
		c->hook = NULL;
	}
	if (c->dnsreq != NULL) {
		struct evdns_getaddrinfo_request *r = c->dnsreq;
		c->dnsreq = NULL;
		evdns_getaddrinfo_cancel(r);
	}
	atomic_fetch_sub(&c->w->load, 1);
	TAILQ_REMOVE(&c->w->conns, c, link);
	TAILQ_INSERT_TAIL(&c->w->dead, c, link);
	event_active(c->w->reap_ev, EV_TIMEOUT, 0);
}

/* Attaches the current addon VM of the worker (reloading it if stale). */
static struct addon_vm *
worker_vm(struct worker *w)
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

/*
 * A new connection on fd (sb: its listener's sandbox, the reference passes,
 * or NULL), admitted at the caps, with its client bufferevent and no
 * callbacks. NULL: it was refused (and killed).
 */
static struct conn *
conn_new(struct worker *w, int fd, struct sandbox *sb)
{
	struct conn *c = xcalloc(1, sizeof(*c));
	struct conn *v;
	int one = 1;

	c->w = w;
	c->tgt = &tgt_none;
	c->id = ((uint64_t)w->idx << 48) | ++w->next_id;
	c->cfd = fd;
	c->addon = -1;
	c->ctx_ref = 0;
	atomic_fetch_add(&the_proxy.st.conns, 1);
	atomic_fetch_add(&the_proxy.st.conns_total, 1);
	/* w->load was counted by proxy_dispatch; conn_kill uncounts it. */
	TAILQ_INSERT_TAIL(&w->conns, c, link);
	c->last_active = c->accepted = util_mono_coarse_ms();
	c->deadline = c->last_active + (sb == NULL ? the_proxy.conf->identify_ms :
	    the_proxy.conf->header_ms);
	evutil_make_socket_nonblocking(fd);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	{
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);

		memset(&ss, 0, sizeof(ss));
		if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
			c->peer_family = ss.ss_family;
			if (ss.ss_family == AF_INET)
				memcpy(c->peer, &((struct sockaddr_in *)&ss)->sin_addr, 4);
			else if (ss.ss_family == AF_INET6)
				memcpy(c->peer, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
		}
	}
	if (sb != NULL) {
		c->sb = sb;
		c->fixed_sb = 1;
		c->attrs = sandbox_attrs(sb);
		if (atomic_fetch_add(&sb->conns, 1) >= the_proxy.conf->conns_per_sandbox) {
			long dropped;

			atomic_fetch_sub(&sb->conns, 1);
			atomic_fetch_add(&the_proxy.st.ref_limit, 1);
			if (log_rate_ok(&refuse_rl, REFUSE_LOG_BURST, REFUSE_LOG_MS, &dropped))
				log_warnx("conn=%llx sandbox=%s refused reason=conn-limit (%ld similar suppressed)",
				    (unsigned long long)c->id, sb->id, dropped);
			conn_kill(c);
			return NULL;
		}
		c->counted_sb = 1;
	} else if ((v = unid_admit(c, unid_enter(c))) != NULL) {
		conn_kill(v);
		if (v == c)
			return NULL;
	}
	if ((c->cl = bufferevent_socket_new(w->base, fd, 0)) == NULL) {
		conn_kill(c);
		return NULL;
	}
	return c;
}

/* Starts reading request heads on a new connection on fd (conn_new). */
static void
conn_accept(struct worker *w, int fd, struct sandbox *sb)
{
	struct conn *c;

	if ((c = conn_new(w, fd, sb)) == NULL)
		return;
	bufferevent_setcb(c->cl, cl_read_head, NULL, cl_event, c);
	bufferevent_setwatermark(c->cl, EV_READ, 0, (size_t)the_proxy.conf->header_bytes + 4096);
	bev_enable(c->cl, EV_READ | EV_WRITE);
	c->st = CS_HEAD;
}

/* ---- identification and the plain side (CS_HEAD) ---- */
/*
 * A connection is identified once (by its listener or by Proxy-Authorization)
 * and stays that sandbox: a different credential later is refused (407).
 * Every refusal is counted in the_proxy.st.ref_* and answered through
 * conn_respond. The CONNECT target (or the http:// URL's) is canonicalised
 * here, once; only the canonical form is used afterwards.
 */

static int
identify(struct conn *c, struct hreq *r)
{
	const char *pa;
	size_t pal = 0;
	struct sbattrs *a = NULL;
	struct sandbox *sb;

	if (c->fixed_sb)
		return 0;
	pa = hreq_get(r, "proxy-authorization", &pal);
	if (c->sb != NULL) {
		if (pa == NULL)
			return 0;
		if ((sb = sandbox_auth(pa, pal, &a)) == c->sb) {
			sandbox_unref(sb);
			sbattrs_unref(a);
			return 0;
		}
		if (sb != NULL) {
			sandbox_unref(sb);
			sbattrs_unref(a);
		}
		atomic_fetch_add(&the_proxy.st.ref_auth, 1);
		conn_respond(c, 407, "auth", "proxy credential changed on this connection");
		return -1;
	}
	if (pa != NULL)
		sb = sandbox_auth(pa, pal, &a);
	else if (the_proxy.conf->anonymous) {
		sb = sandbox_anonymous();
		a = sandbox_attrs(sb);
	} else
		sb = NULL;
	if (sb == NULL) {
		atomic_fetch_add(&the_proxy.st.ref_auth, 1);
		conn_respond(c, 407, "auth", pa == NULL ? "proxy credential required" :
		    "bad proxy credential");
		return -1;
	}
	c->sb = sb;
	c->attrs = a;
	unid_leave(c);
	if (a->nips > 0) {
		size_t i;
		int match = 0;
		for (i = 0; i < a->nips && !match; i++)
			match = a->ips[i].family == (int)c->peer_family && memcmp(a->ips[i].a,
			    c->peer, a->ips[i].family == AF_INET ? 4 : 16) == 0;
		if (!match) {
			atomic_fetch_add(&the_proxy.st.ref_auth, 1);
			log_warnx("conn=%llx sandbox=%s refused: credential used from an address not registered for it",
			    (unsigned long long)c->id, sb->id);
			conn_respond(c, 407, "auth", "proxy credential not valid from this address");
			return -1;
		}
	}
	if (atomic_load(&sb->dead)) {
		conn_respond(c, 407, "auth", "sandbox deregistered");
		return -1;
	}
	if (atomic_fetch_add(&sb->conns, 1) >= the_proxy.conf->conns_per_sandbox) {
		atomic_fetch_sub(&sb->conns, 1);
		atomic_fetch_add(&the_proxy.st.ref_limit, 1);
		conn_respond(c, 429, "conn_limit", "too many connections for this sandbox");
		return -1;
	}
	c->counted_sb = 1;
	return 0;
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
		idle_unlink(c);
	}
	want = avail < max + 1 ? avail : max + 1;
	if ((p = (const char *)evbuffer_pullup(in, (ssize_t)want)) == NULL) {
		conn_kill(c);
		return -1;
	}
	end = hreq_head_end(p, want, max);
	if (end == 0)
		return 0;
	if (end < 0) {
		atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
		conn_respond(c, end == -2 ? 431 : 400, end == -2 ? "head_too_large" :
		    "malformed_head", end == -2 ? "request head too large" :
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

static void
ctx_fill(struct conn *c, struct hook_ctx *hc, int plain)
{
	memset(hc, 0, sizeof(*hc));
	hc->t = c->tgt;
	hc->sb = c->sb;
	hc->attrs = c->attrs;
	hc->plain = plain;
	hc->conn_id = c->id;
}

static void
decide(struct conn *c, int plain)
{
	struct hook_ctx hc;
	struct hook_result res;
	struct addon_vm *vm = worker_vm(c->w);

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
	if (r->method == HTTP_CONNECT)
		c->aud_connect = 1;
	else
		c->aud_req = 1;
	if (identify(c, r) == -1)
		return;
	if (r->method == HTTP_CONNECT) {
		struct target t;

		if (canon_authority(r->data.p + r->url_o, r->url_l, &t, err,
		    sizeof(err)) == -1) {
			atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
			conn_respond(c, 400, "bad_target", err);
			return;
		}
		tgt_set(c, &t);
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
		tgt_set(c, &t);
		hreq_strip_hop(r);
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
		if (c->req->gate != NULL) {
			gate_start(c);
			return;
		}
		req_go(c);
	}
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

#define GATE_DRAIN_MS	30000	/* a refused request's body is read and dropped this long at most */

static int
gate_sink(void *arg, const char *p, size_t n)
{
	struct conn *c = arg;

	bgate_feed(c->req->gate, p, n);
	return 0;
}

static int
drain_sink(void *arg, const char *p, size_t n)
{
	(void)arg;
	(void)p;
	(void)n;
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

	while (vd == BG_MORE && !c->req->body_done && evbuffer_get_length(in) > 0) {
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		n = v.iov_len < BGATE_FEED ? v.iov_len : BGATE_FEED;
		if ((used = hreq_body(c->req, v.iov_base, n)) < 0) {
			atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
			c->req->body_done = 1;	/* nothing more can be read from it */
			conn_respond(c, 400, "bad_body", "bad request body framing");
			return;
		}
		evbuffer_drain(in, (size_t)used);
		vd = bgate_check(g, c->req->body_done);
	}
	if (vd == BG_MORE && c->req->body_done)
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
	if ((v = hreq_get(r, "content-encoding", &n)) != NULL &&
	    !(n == 8 && strncasecmp(v, "identity", 8) == 0)) {
		atomic_fetch_add(&the_proxy.st.ref_gate, 1);
		conn_respond(c, 415, bgate_kind(r->gate), "the policy check needs an uncompressed "
		    "request body: Content-Encoding refused");
		return;
	}
	if ((v = hreq_get(r, "expect", &n)) != NULL) {
		/* The body is read before the upstream sees the head: answer 100 here. */
		if (n == 12 && strncasecmp(v, "100-continue", 12) == 0)
			evbuffer_add(bufferevent_get_output(c->cl), "HTTP/1.1 100 Continue\r\n\r\n",
			    25);
		hreq_remove(r, "expect");
	}
	r->on_body = gate_sink;
	r->arg = c;
	bev_enable(c->cl, EV_READ);
	gate_pump(c);
}

/* Refused and answered: reads and drops the rest of the body, then closes. */
static void
gate_drain(struct conn *c)
{
	struct evbuffer *in;
	long n;

	if (c->st != CS_DRAIN) {
		c->st = CS_DRAIN;
		c->deadline = util_mono_coarse_ms() + GATE_DRAIN_MS;
		c->req->on_body = drain_sink;
		bufferevent_setcb(c->cl, drain_read, conn_closing_write, conn_closing_event, c);
		bufferevent_setwatermark(c->cl, EV_WRITE, 0, 0);
		bev_enable(c->cl, EV_READ | EV_WRITE);
	}
	in = bufferevent_get_input(c->cl);
	while (!c->req->body_done && evbuffer_get_length(in) > 0) {
		struct evbuffer_iovec v;
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		if ((n = hreq_body(c->req, v.iov_base, v.iov_len)) < 0) {
			c->req->body_done = 1;
			break;
		}
		evbuffer_drain(in, (size_t)n);
	}
	if (c->req->body_done || c->cl_eof) {
		c->st = CS_CLOSING;
		bufferevent_disable(c->cl, EV_READ);
		bufferevent_setcb(c->cl, NULL, conn_closing_write, conn_closing_event, c);
		if (evbuffer_get_length(bufferevent_get_output(c->cl)) == 0)
			conn_kill(c);
	}
}

/*
 * The client's write callback while closing: in CS_CLOSING, c dies once
 * its output is flushed (in CS_DRAIN the answer waits for the body's end).
 */
static void
conn_closing_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->st == CS_CLOSING && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		conn_kill(c);
}

/*
 * The client's event callback while closing: EOF ends a drain (the answer
 * is flushed, then closed), any other EOF or an error closes. A TLS client
 * allows dirty shutdowns, so a reset or EPIPE arrives as EOF: on the write
 * side that means nothing more can reach the client.
 */
static void
conn_closing_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if ((what & BEV_EVENT_EOF) && !(what & (BEV_EVENT_ERROR | BEV_EVENT_WRITING))) {
		c->cl_eof = 1;
		if (c->st == CS_DRAIN) {
			gate_drain(c);	/* the answer is flushed, then closed */
			return;
		}
	}
	conn_kill(c);
}

/* The client's read callback in CS_DRAIN: more of the refused body. */
static void
drain_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	c->last_active = util_mono_coarse_ms();
	gate_drain(c);
}

/* ---- upstream pool: parked and idle upstreams, per worker ---- */
/*
 * An upstream is reused only by the same sandbox for the same canonical
 * target and dialled address, and only when clean (up_clean: handshake
 * done, last response complete, nothing buffered, not shut down). A parked
 * one is read: any byte, EOF or error drops it; it expires after
 * timeouts.pool_idle. Bounds: upstream.pool_per_target per key and
 * upstream.pool_max per worker. A connection idle between requests with
 * its upstream is on w->idleup, from which a new one may take it over.
 */

static int
sa_set(union sa_any *a, const struct sockaddr *sa)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET)
		memcpy(&a->in, sa, sizeof(a->in));
	else if (sa->sa_family == AF_INET6)
		memcpy(&a->in6, sa, sizeof(a->in6));
	else
		return -1;
	return 0;
}

static int
sa_same(const union sa_any *a, const union sa_any *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return 0;
	if (a->sa.sa_family == AF_INET)
		return a->in.sin_port == b->in.sin_port &&
		    a->in.sin_addr.s_addr == b->in.sin_addr.s_addr;
	if (a->sa.sa_family == AF_INET6)
		return a->in6.sin6_port == b->in6.sin6_port &&
		    memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, 16) == 0;
	return 0;
}

/* The pool key: same sandbox (never shared), canonical target, address. */
static int
pool_key(const struct pooled *p, const struct sandbox *sb, const char *hostport,
    const union sa_any *a)
{
	return p->sb == sb && sa_same(&p->addr, a) && strcmp(p->hostport, hostport) == 0;
}

static void
pool_drop(struct pooled *p)
{
	struct worker *w = p->w;

	TAILQ_REMOVE(&w->pool, p, link);
	w->npool--;
	atomic_fetch_sub(&the_proxy.st.pool_idle, 1);
	atomic_fetch_add(&the_proxy.st.pool_dropped, 1);
	bufferevent_free(p->bev);
	sandbox_unref(p->sb);
	free(p);
}

/* A parked connection got a byte, EOF or an error: it is never reused. */
static void
pool_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	pool_drop(arg);
}

static void
pool_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	pool_drop(arg);
}

/*
 * With read-ahead, whole records can sit inside OpenSSL after
 * bufferevent_openssl's read loop stops (it checks SSL_pending(), the
 * decrypted bytes of the current record only), and the socket has nothing
 * more to wake it: run its read callback again while reading is enabled.
 */
static void
up_kick(struct conn *c)
{
	SSL *ssl;

	if (c->up == NULL || !c->up_tls || c->dead ||
	    !(bufferevent_get_enabled(c->up) & EV_READ))
		return;
	ssl = bufferevent_openssl_get_ssl(c->up);
	if (ssl != NULL && SSL_is_init_finished(ssl) && SSL_has_pending(ssl))
		event_active(&c->up->ev_read, EV_READ, 1);
}

/*
 * 1 when application bytes follow a complete response inside OpenSSL
 * (records read ahead with it): they must never be taken for the next
 * request's response. Records that carry no data (a session ticket) are
 * consumed by the peek and do not count; a close_notify drops the upstream.
 */
static int
up_junk(struct conn *c)
{
	SSL *ssl;
	char b;

	if (c->up == NULL || !c->up_tls)
		return 0;
	ssl = bufferevent_openssl_get_ssl(c->up);
	if (ssl == NULL || !SSL_has_pending(ssl))
		return 0;
	if (SSL_peek(ssl, &b, 1) > 0)
		return 1;
	ERR_clear_error();
	if (SSL_get_shutdown(ssl) != 0) {	/* closed behind the response */
		bufferevent_free(c->up);
		c->up = NULL;
	}
	return 0;
}

/*
 * 1 when c->up is a clean idle upstream TLS connection that another
 * connection of the same sandbox may use: handshake done, last response
 * complete, nothing buffered either way, not shut down.
 */
static int
up_clean(struct conn *c)
{
	struct bufferevent *bev = c->up;
	SSL *ssl;

	if (bev == NULL || !c->up_tls || c->mode != MODE_INTERCEPT || c->sb == NULL ||
	    atomic_load(&c->sb->dead) || c->up_addr.sa.sa_family == 0 ||
	    c->resp_active || c->st == CS_CONNECTING)
		return 0;
	if (evbuffer_get_length(bufferevent_get_input(bev)) != 0 ||
	    evbuffer_get_length(bufferevent_get_output(bev)) != 0)
		return 0;
	ssl = bufferevent_openssl_get_ssl(bev);
	return ssl != NULL && SSL_is_init_finished(ssl) && !SSL_has_pending(ssl) &&
	    SSL_get_shutdown(ssl) == 0;
}

static void
idle_unlink(struct conn *c)
{
	if (c->idle_linked) {
		TAILQ_REMOVE(&c->w->idleup, c, idle_link);
		c->idle_linked = 0;
	}
}

/* c is between requests and keeps its upstream: it may be lent (newest first). */
static void
idle_link(struct conn *c)
{
	idle_unlink(c);
	if (c->up != NULL && c->mode == MODE_INTERCEPT && !c->dead) {
		TAILQ_INSERT_HEAD(&c->w->idleup, c, idle_link);
		c->idle_linked = 1;
	}
}

/*
 * Takes over the idle upstream of another connection of c's sandbox to
 * c's target at a (the longest idle first), so a burst of new connections
 * of one sandbox shares a few upstream connections instead of holding one
 * each until timeouts.upstream_idle: the one it is taken from dials (or
 * takes another) at its next request. Returns the one it was taken from,
 * which the caller puts to rest (conn_rest), or NULL.
 */
static struct conn *
up_take_idle(struct conn *c, const union sa_any *a)
{
	struct conn *v, *prev;
	int n = 0;

	for (v = TAILQ_LAST(&c->w->idleup, connq); v != NULL && n < 64; v = prev, n++) {
		prev = TAILQ_PREV(v, connq, idle_link);
		if (v == c)
			continue;
		if (v->dead || v->st != CS_REQ_HEAD || v->head_start != 0 || !up_clean(v)) {
			idle_unlink(v);
			continue;
		}
		if (v->sb != c->sb || !sa_same(&v->up_addr, a) ||
		    strcmp(v->tgt->hostport, c->tgt->hostport) != 0)
			continue;
		idle_unlink(v);
		c->up = v->up;
		v->up = NULL;
		return v;
	}
	return NULL;
}

/*
 * Parks c->up if it is a clean idle upstream TLS connection (handshake
 * done, last response complete, nothing buffered either way, not shut
 * down); c->up is then NULL. Otherwise c->up is left for the caller.
 */
static void
pool_park(struct conn *c)
{
	struct worker *w = c->w;
	struct bufferevent *bev = c->up;
	struct pooled *p, *oldest = NULL;
	long same = 0;

	idle_unlink(c);
	if (the_proxy.conf->pool_max <= 0 || !up_clean(c))
		return;
	TAILQ_FOREACH(p, &w->pool, link) {
		if (pool_key(p, c->sb, c->tgt->hostport, &c->up_addr)) {
			same++;
			oldest = p;
		}
	}
	if (same >= the_proxy.conf->pool_per_target && oldest != NULL) {
		pool_drop(oldest);
	} else if (w->npool >= the_proxy.conf->pool_max) {
		pool_drop(TAILQ_LAST(&w->pool, poolq));
	}
	p = xcalloc(1, sizeof(*p));
	p->w = w;
	p->sb = sandbox_ref(c->sb);
	p->bev = bev;
	p->addr = c->up_addr;
	p->expires = util_mono_coarse_ms() + the_proxy.conf->pool_idle_ms;
	memcpy(p->hostport, c->tgt->hostport, sizeof(p->hostport));
	c->up = NULL;
	bufferevent_setcb(bev, pool_read, NULL, pool_event, p);
	bufferevent_disable(bev, EV_WRITE);
	bev_enable(bev, EV_READ);
	TAILQ_INSERT_HEAD(&w->pool, p, link);
	w->npool++;
	atomic_fetch_add(&the_proxy.st.pool_idle, 1);
	atomic_fetch_add(&the_proxy.st.pool_parked, 1);
	log_debug("conn=%llx sandbox=%s target=%s upstream parked",
	    (unsigned long long)c->id, c->sb->id, c->tgt->hostport);
}

/*
 * Takes a parked connection of c's sandbox to c's target at sa into c->up
 * (*lender NULL), or the idle upstream of another connection of c's
 * sandbox (*lender: that one, which the caller puts to rest and counts in
 * pool_lent). 1 when one was taken (it is connected and verified; the
 * caller sets its callbacks), 0 otherwise.
 */
static int
pool_take(struct conn *c, const struct sockaddr *sa, struct conn **lender)
{
	struct worker *w = c->w;
	struct pooled *p, *hit = NULL;
	union sa_any a;
	long long now = util_mono_coarse_ms();

	*lender = NULL;
	if (the_proxy.conf->pool_max <= 0 || c->no_pool || c->mode != MODE_INTERCEPT ||
	    c->sb == NULL || sa_set(&a, sa) == -1)
		return 0;
	TAILQ_FOREACH(p, &w->pool, link) {
		if (p->expires > now && pool_key(p, c->sb, c->tgt->hostport, &a)) {
			hit = p;
			break;
		}
	}
	if (hit != NULL) {
		TAILQ_REMOVE(&w->pool, hit, link);
		w->npool--;
		atomic_fetch_sub(&the_proxy.st.pool_idle, 1);
		atomic_fetch_add(&the_proxy.st.pool_reused, 1);
		c->up = hit->bev;
		sandbox_unref(hit->sb);
		free(hit);
	} else if ((*lender = up_take_idle(c, &a)) == NULL)
		return 0;
	c->up_tls = 1;
	c->up_addr = a;
	c->up_nreq = 1;		/* it served before: a request on it may be retried */
	return 1;
}

static void
pool_expire(struct worker *w, long long now)
{
	struct pooled *p, *prev;

	for (p = TAILQ_LAST(&w->pool, poolq); p != NULL && p->expires <= now; p = prev) {
		prev = TAILQ_PREV(p, poolq, link);
		pool_drop(p);
	}
}

static void
pool_kill_sb(struct worker *w, struct sandbox *sb)
{
	struct pooled *p, *pn;

	for (p = TAILQ_FIRST(&w->pool); p != NULL; p = pn) {
		pn = TAILQ_NEXT(p, link);
		if (sb == NULL || p->sb == sb)
			pool_drop(p);
	}
}

/* ---- dialling: resolve, check, connect (CS_CONNECTING) ---- */
/*
 * resolve overrides first, then literal addresses, then evdns. Every
 * address is checked by netcheck_addr against upstream.allow_cidrs before
 * it is dialled (or taken from the pool), and they are tried in order. A
 * failure answers through connect_fail (logged): 403 when no address is
 * allowed, else 502 (504 on the connect timeout, 400 for a bad literal).
 */

/*
 * The dial failed: code is the audit reason ("address_policy",
 * "resolve_failed", "connect_failed", "connect_timeout", "upstream_tls",
 * "upstream_certificate", "tls_setup", "bad_target"); counted in the
 * metrics, logged (rate-limited) and answered by conn_respond.
 */
static void
connect_fail(struct conn *c, int status, const char *code, const char *why)
{
	if (strcmp(code, "resolve_failed") == 0)
		atomic_fetch_add(&the_proxy.st.resolve_failed, 1);
	else if (strcmp(code, "connect_failed") == 0 || strcmp(code, "connect_timeout") == 0)
		atomic_fetch_add(&the_proxy.st.connect_failed, 1);
	conn_respond(c, status, code, why);
}

/*
 * c->up from the pool, or the idle upstream of another connection
 * of c's sandbox, which then rests. 1 when one was taken.
 */
static int
up_from_pool(struct conn *c, const struct sockaddr *sa)
{
	struct conn *v;

	if (!pool_take(c, sa, &v))
		return 0;
	if (v != NULL) {
		conn_rest(v);
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
			connect_fail(c, 403, "address_policy", msg);
		} else
			connect_fail(c, 502, "connect_failed", "cannot connect to upstream");
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
	if (sa_set(&c->up_addr, ai->ai_addr) == -1)
		memset(&c->up_addr, 0, sizeof(c->up_addr));
	if (c->mode == MODE_INTERCEPT) {
		if ((ssl = tls_upstream_new(c->tgt)) == NULL) {
			connect_fail(c, 502, "tls_setup", "TLS setup failed");
			return;
		}
		c->up = bufferevent_openssl_socket_new(c->w->base, -1, ssl,
		    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
		if (c->up == NULL) {
			SSL_free(ssl);
			connect_fail(c, 502, "tls_setup", "TLS setup failed");
			return;
		}
		bufferevent_openssl_set_allow_dirty_shutdown(c->up, 1);
		c->up_tls = 1;
	} else {
		c->up = bufferevent_socket_new(c->w->base, -1, BEV_OPT_CLOSE_ON_FREE);
		c->up_tls = 0;
		if (c->up == NULL) {
			connect_fail(c, 502, "connect_failed", "socket failed");
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
		connect_fail(c, 502, "resolve_failed", m);
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
				connect_fail(c, 502, "resolve_failed", "bad resolve override");
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
			connect_fail(c, 400, "bad_target", "bad address");
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

/* ---- tunnel and client TLS bufferevent (CS_TUNNEL, CS_CL_TLS) ---- */
/*
 * A tunnel relays bytes both ways with backpressure (a side is not read
 * while the other has buffers.high_watermark unsent) and passes a
 * half-close on. The client's TLS bufferevent never owns its SSL or fd:
 * the conn does (c->cl_ssl, c->cfd), so it can be dropped and made again.
 */

/*
 * c's upstream is connected (not TLS) and the client's 200 is queued: bytes
 * both ways from now on, until conn_kill.
 */
static void
tunnel_start(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	size_t hwm = (size_t)the_proxy.conf->high_watermark;

	c->st = CS_TUNNEL;
	c->tunnel_open = 1;
	c->deadline = 0;
	bufferevent_setcb(c->cl, tun_cl_read, tun_cl_write, tun_cl_event, c);
	bufferevent_setcb(c->up, tun_up_read, tun_up_write, tun_up_event, c);
	bufferevent_setwatermark(c->cl, EV_READ, 0, hwm);
	bufferevent_setwatermark(c->up, EV_READ, 0, hwm);
	bufferevent_setwatermark(c->cl, EV_WRITE, hwm / 2, 0);
	bufferevent_setwatermark(c->up, EV_WRITE, hwm / 2, 0);
	/* Bulk: fewer, larger reads and writes than libevent's 16 KiB. */
	bufferevent_set_max_single_read(c->cl, hwm);
	bufferevent_set_max_single_read(c->up, hwm);
	bufferevent_set_max_single_write(c->cl, hwm);
	bufferevent_set_max_single_write(c->up, hwm);
	/* Bytes the client sent after CONNECT go first. */
	if (evbuffer_get_length(in) > 0) {
		c->tot_up += evbuffer_get_length(in);
		evbuffer_add_buffer(bufferevent_get_output(c->up), in);
	}
	bev_enable(c->cl, EV_READ | EV_WRITE);
	bev_enable(c->up, EV_READ | EV_WRITE);
	if (c->cl_eof) {
		/* The client already half-closed: FIN once its bytes are out. */
		bufferevent_disable(c->cl, EV_READ);
		if (evbuffer_get_length(bufferevent_get_output(c->up)) == 0)
			shutdown(bufferevent_getfd(c->up), SHUT_WR);
		else
			bufferevent_setwatermark(c->up, EV_WRITE, 0, 0);
	}
}

/* Client bytes go up; reading stops while the upstream has hwm unsent. */
static void
tun_cl_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t hwm = (size_t)the_proxy.conf->high_watermark;
	size_t n;

	c->last_active = util_mono_coarse_ms();
	n = evbuffer_get_length(in);
	evbuffer_add_buffer(bufferevent_get_output(c->up), in);
	n += tunnel_pull(bev, bufferevent_get_output(c->up), hwm);
	c->tot_up += n;
	atomic_fetch_add(&the_proxy.st.bytes_up, (long)n);
	atomic_fetch_add(&c->sb->bytes_up, (long)n);
	if (c->dead)
		return;
	if (evbuffer_get_length(bufferevent_get_output(c->up)) >= hwm)
		bufferevent_disable(c->cl, EV_READ);
}

/* Upstream bytes go to the client, with the same backpressure. */
static void
tun_up_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer *out = bufferevent_get_output(c->cl);
	size_t hwm = (size_t)the_proxy.conf->high_watermark, n;

	c->last_active = util_mono_coarse_ms();
	n = evbuffer_get_length(in);
	evbuffer_add_buffer(out, in);
	n += tunnel_pull(bev, out, hwm);
	c->tot_down += n;
	atomic_fetch_add(&the_proxy.st.bytes_down, (long)n);
	atomic_fetch_add(&c->sb->bytes_down, (long)n);
	if (c->dead)
		return;
	if (evbuffer_get_length(out) >= hwm)
		bufferevent_disable(c->up, EV_READ);
}

/* The upstream's output drained below the low watermark. */
static void
tun_up_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->cl_eof) {
		/* Client half-closed: pass the FIN on once flushed. */
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			shutdown(bufferevent_getfd(bev), SHUT_WR);
		return;
	}
	bev_enable(c->cl, EV_READ);
}

/* The client's output drained below the low watermark. */
static void
tun_cl_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->up_eof) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_kill(c);
		return;
	}
	if (c->up != NULL) {
		bev_enable(c->up, EV_READ);
		up_kick(c);
	}
}

/*
 * The client's EOF is a half-close, passed on; an error closes. The
 * client side is the plain socket it sent CONNECT on: no handshake event.
 */
static void
tun_cl_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if ((what & BEV_EVENT_EOF) && !(what & (BEV_EVENT_ERROR | BEV_EVENT_WRITING))) {
		c->cl_eof = 1;
		if (c->up != NULL && !c->up_eof) {
			/*
			 * Half-close: flush what the client sent, pass
			 * the FIN on, keep relaying the other way until
			 * the upstream closes (or the idle timeout).
			 */
			bufferevent_disable(c->cl, EV_READ);
			if (evbuffer_get_length(bufferevent_get_output(c->up)) == 0)
				shutdown(bufferevent_getfd(c->up), SHUT_WR);
			else
				bufferevent_setwatermark(c->up, EV_WRITE, 0, 0);
			return;
		}
	}
	conn_kill(c);
}

/* The upstream's EOF or error: flush to the client, then close. */
static void
tun_up_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if ((what & BEV_EVENT_CONNECTED) || !(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	c->up_eof = 1;
	if (evbuffer_get_length(bufferevent_get_output(c->cl)) > 0) {
		/* Flush to the client first (tun_cl_write closes). */
		bufferevent_disable(c->up, EV_READ);
		bufferevent_setwatermark(c->cl, EV_WRITE, 0, 0);
		return;
	}
	conn_kill(c);
}

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
	bev_enable(c->cl, EV_READ | EV_WRITE);
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
static void
conn_rest(struct conn *c)
{
	free(c->rp);
	c->rp = NULL;
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
		connect_fail(c, 502, "tls_setup", "cannot mint certificate");
		return;
	}
	ssl = tls_client_new(leaf, certcache_leaf_key(the_proxy.cc));
	X509_free(leaf);
	if (ssl == NULL) {
		connect_fail(c, 502, "tls_setup", "TLS setup failed");
		return;
	}
	/* Nothing is queued on the plain side: write the 200 directly. */
	n = send(c->cfd, ok, sizeof(ok) - 1, MSG_NOSIGNAL);
	if (n != (ssize_t)sizeof(ok) - 1) {
		SSL_free(ssl);
		conn_kill(c);
		return;
	}
	connect_audit(c, 200, NULL, NULL);
	bufferevent_free(c->cl);
	c->cl_ssl = ssl;
	if (cl_tls_bev(c, BUFFEREVENT_SSL_ACCEPTING) == -1) {
		conn_kill(c);
		return;
	}
	c->st = CS_CL_TLS;
	c->deadline = util_mono_coarse_ms() + the_proxy.conf->handshake_ms;
	bufferevent_setcb(c->cl, NULL, NULL, cl_event, c);
	bev_enable(c->cl, EV_READ | EV_WRITE);
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
	bev_enable(c->up, EV_READ | EV_WRITE);
	up_kick(c);
	if (c->connect_then_req) {
		c->connect_then_req = 0;
		req_send(c);
		return;
	}
	if (c->mode == MODE_TUNNEL) {
		connect_audit(c, 200, NULL, NULL);
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
	char hdr[24];
	int hl;

	c->req_up += n;
	c->tot_up += n;
	if (c->req->chunked) {
		hl = snprintf(hdr, sizeof(hdr), "%zx\r\n", n);
		evbuffer_add(out, hdr, (size_t)hl);
		evbuffer_add(out, p, n);
		evbuffer_add(out, "\r\n", 2);
	} else
		evbuffer_add(out, p, n);
	return 0;
}

static int
resp_on_headers(llhttp_t *p)
{
	struct conn *c = p->data;

	c->resp_status = p->status_code;
	if (c->head_req && p->status_code >= 200)
		return 1;	/* no body after a HEAD */
	return 0;
}

static int
resp_on_complete(llhttp_t *p)
{
	struct conn *c = p->data;

	if (p->status_code >= 100 && p->status_code < 200 && p->status_code != 101) {
		c->resp_head_bytes = 0;
		return 0;	/* informational: the final response follows */
	}
	c->resp_done = 1;
	return HPE_PAUSED;
}

static int
resp_on_data(llhttp_t *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	(void)at;
	c->resp_head_bytes += n;
	if (c->resp_head_bytes > (size_t)the_proxy.conf->header_bytes)
		return HPE_USER;
	return 0;
}

static int
resp_on_body(llhttp_t *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	(void)at;
	c->req_down += n;
	return 0;
}

static const llhttp_settings_t resp_settings = {
	.on_status = resp_on_data,
	.on_header_field = resp_on_data,
	.on_header_value = resp_on_data,
	.on_headers_complete = resp_on_headers,
	.on_body = resp_on_body,
	.on_message_complete = resp_on_complete,
};

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
	if (c->rp == NULL)
		c->rp = xmalloc(sizeof(*c->rp));
	llhttp_init(c->rp, HTTP_RESPONSE, &resp_settings);
	c->rp->data = c;
	c->resp_active = 1;
	c->resp_done = 0;
	c->resp_wrote = 0;
	c->resp_status = 0;
	c->resp_head_bytes = 0;
	c->req_up = c->req_down = 0;
	c->head_req = r->method == HTTP_HEAD;
	c->req_done = r->body_done;
	c->st = c->req_done ? CS_WAIT : CS_BODY;
	c->deadline = 0;
	c->last_active = util_mono_coarse_ms();
	r->on_body = body_sink;
	r->arg = c;
	if (r->gate != NULL) {
		/* What the gate read goes first; the rest streams from the client. */
		size_t hn;
		const char *hp = bgate_held(r->gate, &hn);
		if (hn > 0)
			body_sink(c, hp, hn);
		if (r->body_done && r->chunked)
			evbuffer_add(bufferevent_get_output(c->up), "0\r\n\r\n", 5);
		bgate_release(r->gate);
	}
	bev_enable(c->cl, EV_READ);
	bev_enable(c->up, EV_READ | EV_WRITE);
	up_kick(c);
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
		n = hreq_body(c->req, v.iov_base, v.iov_len);
		if (n < 0) {
			atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
			conn_respond(c, 400, "bad_body", "bad request body framing");
			return;
		}
		evbuffer_drain(in, (size_t)n);
		if (c->req->body_done) {
			if (c->req->chunked)
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
	bev_enable(c->cl, EV_READ);
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
	req_audit(c, c->resp_status, NULL, NULL);
	if (c->vm != NULL && c->addon >= 0 && c->mode == MODE_INTERCEPT &&
	    addon_has_response(c->vm, c->addon))
		addon_on_response(c->vm, c->addon, c->ctx_ref, c->req, c->resp_status);
	c->resp_active = 0;
	if (!llhttp_should_keep_alive(c->rp) && c->up != NULL) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	if (!c->req_done) {
		/* Upstream answered before the body was sent: stop here. */
		c->close_after = 1;
	}
	if (c->close_after || !c->req->keepalive || c->cl_eof) {
		c->st = CS_CLOSING;
		c->deadline = util_mono_coarse_ms() + 5000;
		/*
		 * The client's Connection: close (hop-by-hop) ends only
		 * this client connection: a clean kept-alive upstream
		 * goes to the pool.
		 */
		if (c->up != NULL && !c->close_after)
			pool_park(c);
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
	if (c->mode == MODE_INTERCEPT && up_clean(c))
		idle_link(c);
	bufferevent_setcb(c->cl, c->mode == MODE_INTERCEPT ? cl_read_req : cl_read_head,
	    cl_write, cl_event, c);
	bev_enable(c->cl, EV_READ);
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
	hreq_strip_hop(c->req);
	/* Exactly one credential upstream: the client's own never passes. */
	hreq_remove(c->req, "authorization");
	hreq_remove(c->req, "proxy-authorization");
	if (c->vm != NULL && c->addon >= 0) {
		strip = addon_vm_strip(c->vm, c->addon, &n);
		for (i = 0; i < n; i++)
			hreq_remove(c->req, strip[i]);
	}
	c->st = CS_HOOK;
	c->deadline = util_mono_coarse_ms() + the_proxy.conf->hook_ms;
	if (c->vm == NULL || c->addon < 0) {
		memset(&res, 0, sizeof(res));
		res.action = ACT_NONE;
		hook_done(c, &res);
		return;
	}
	if (addon_on_request(c->vm, c->addon, c->ctx_ref, c->req, c->tgt, &res, hook_done,
	    c, &c->hook) == 0)
		hook_done(c, &res);
}

/* ---- bufferevent callbacks of the tunnel and the request cycle ---- */
/*
 * Each callback acts on c->st; after a call that may kill c it returns, or
 * checks c->dead, before touching c again (the free comes later anyway).
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

static void
up_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer *out = bufferevent_get_output(c->cl);
	struct evbuffer_iovec v;
	size_t hwm = (size_t)the_proxy.conf->high_watermark, n;
	llhttp_errno_t e;

	c->last_active = util_mono_coarse_ms();
	if (!c->resp_active) {
		/* Bytes with no request outstanding: drop the upstream. */
		if (evbuffer_get_length(in) > 0) {
			bufferevent_free(c->up);
			c->up = NULL;
		}
		return;
	}
	while (c->resp_active && !c->resp_done && evbuffer_get_length(in) > 0) {
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		e = llhttp_execute(c->rp, v.iov_base, v.iov_len);
		if (e == HPE_OK)
			n = v.iov_len;
		else if (e == HPE_PAUSED && c->resp_done)
			n = (size_t)(llhttp_get_error_pos(c->rp) - (const char *)v.iov_base);
		else {
			log_info("conn=%llx target=%s bad upstream response: %s",
			    (unsigned long long)c->id, c->tgt->hostport, llhttp_errno_name(e));
			if (c->resp_status == 0 && !c->resp_wrote && evbuffer_get_length(out) == 0) {
				conn_respond(c, 502, "bad_upstream_response", "bad response from upstream");
			} else
				conn_kill(c);
			return;
		}
		atomic_fetch_add(&the_proxy.st.bytes_down, (long)n);
		atomic_fetch_add(&c->sb->bytes_down, (long)n);
		c->tot_down += n;
		if (n > 0)
			c->resp_wrote = 1;
		tls_move(c->cl, in, n);
	}
	if (c->resp_done) {
		if (evbuffer_get_length(in) > 0 || up_junk(c))
			c->close_after = 1;	/* junk after the response */
		resp_finish(c);
		return;
	}
	if (evbuffer_get_length(out) >= hwm)
		bufferevent_disable(c->up, EV_READ);
	else
		up_kick(c);
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
		bev_enable(c->up, EV_READ);
		up_kick(c);
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
		 * A TLS client bufferevent allows dirty shutdowns, so a reset
		 * or EPIPE on the socket arrives as EOF, not ERROR. On the
		 * write side that means nothing more can reach the client:
		 * close whatever the state (a response being relayed to it
		 * would otherwise wait for timeouts.idle).
		 */
		if ((what & BEV_EVENT_EOF) && !(what & (BEV_EVENT_ERROR | BEV_EVENT_WRITING))) {
			c->cl_eof = 1;
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
					bev_enable(c->cl, EV_WRITE);
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
	llhttp_errno_t e;

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
			tls_upstream_error(bev, m, sizeof(m));
			if (strstr(m, "verification") != NULL) {
				atomic_fetch_add(&the_proxy.st.ref_upstream_tls, 1);
				connect_fail(c, 502, "upstream_certificate", m);
				return;
			}
			if (c->ai_cur == NULL) {
				connect_fail(c, 502, "upstream_tls", m);
				return;
			}
		}
		if (c->ai_cur != NULL) {
			up_try(c);	/* next address */
			return;
		}
		snprintf(m, sizeof(m), "cannot connect to %s: %s", c->tgt->hostport,
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		connect_fail(c, 502, "connect_failed", m);
		return;
	}
	/* Request cycle: EOF may end an EOF-delimited response. */
	if (c->resp_active && !c->resp_done) {
		if (c->up_nreq > 1 && c->resp_status == 0 && c->resp_head_bytes == 0 &&
		    !c->resp_wrote && c->req_done && c->req_up == 0 && !c->no_pool &&
		    c->req != NULL && (c->req->method == HTTP_GET ||
		    c->req->method == HTTP_HEAD || c->req->method == HTTP_OPTIONS)) {
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
		e = llhttp_finish(c->rp);
		if (e == HPE_OK && c->resp_status != 0) {
			c->resp_done = 1;
			c->close_after = 1;
			bufferevent_free(c->up);
			c->up = NULL;
			resp_finish(c);
			return;
		}
		if (c->resp_status == 0 && !c->resp_wrote &&
		    evbuffer_get_length(bufferevent_get_output(c->cl)) == 0) {
			conn_respond(c, 502, "upstream_closed", "upstream closed without a response");
		} else
			conn_kill(c);
		return;
	}
	/* Idle keep-alive upstream went away: reconnect on the next request. */
	bufferevent_free(c->up);
	c->up = NULL;
}

/* ---- worker threads: the tick, the inbox ---- */
/*
 * A worker's loop owns its connections, pool and targets. Other threads
 * reach it only through its inbox (worker_post). The tick (every 500 ms)
 * enforces every deadline and idle timeout, parks idle upstreams and runs
 * the quiet-time Lua collection.
 */

static void
tick_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct worker *w = arg;
	struct conn *c, *n;
	long long now = util_mono_coarse_ms();
	unsigned long long work;

	(void)fd;
	(void)ev;
	pool_expire(w, now);
	for (c = TAILQ_FIRST(&w->conns); c != NULL; c = n) {
		n = TAILQ_NEXT(c, link);
		if (c->deadline != 0 && now > c->deadline) {
			switch (c->st) {
			case CS_CONNECTING:
				connect_fail(c, 504, "connect_timeout", "upstream connect timed out");
				break;
			case CS_DECIDE:
			case CS_HOOK:
				atomic_fetch_add(&addon_errors_total, 1);
				log_warnx("conn=%llx addon hook timed out", (unsigned long long)c->id);
				conn_respond(c, 502, "hook_timeout", "addon hook timed out");
				break;
			case CS_GATE:
				conn_respond(c, 408, "body_timeout",
				    "request body start not received in time (policy check)");
				break;
			case CS_HEAD:
				if (c->unid)
					atomic_fetch_add(&the_proxy.st.unid_expired, 1);
				if (c->cl != NULL &&
				    evbuffer_get_length(bufferevent_get_input(c->cl)) > 0)
					conn_respond(c, 408, "head_timeout", "request head timeout");
				else
					conn_kill(c);
				break;
			default:
				conn_kill(c);
				break;
			}
			continue;
		}
		if (c->head_start != 0 && now - c->head_start > the_proxy.conf->header_ms &&
		    (c->st == CS_HEAD || c->st == CS_REQ_HEAD)) {
			conn_respond(c, 408, "head_timeout", "request head timeout");
			continue;
		}
		if (c->deadline == 0 && now - c->last_active > the_proxy.conf->idle_ms) {
			conn_kill(c);
			continue;
		}

		if (c->st == CS_REQ_HEAD && c->head_start == 0 && c->sleep_ev == NULL &&
		    now - c->last_active > the_proxy.conf->upstream_idle_ms) {
			/*
			 * Idle: park the upstream TLS connection (or drop it),
			 * drop all parser state and sleep.
			 */
			if (c->up != NULL)
				pool_park(c);
			if (c->up != NULL)
				bufferevent_free(c->up);
			c->up = NULL;
			conn_rest(c);
		}
	}
	/*
	 * A worker with no new connection or request for a whole tick runs
	 * a full Lua collection once: the hooks' finished coroutines and
	 * closed connections' ctx tables are otherwise kept until the
	 * incremental collector's next cycle (up to the heap doubling).
	 */
	work = (unsigned long long)w->next_id + w->nreq;
	if (work == w->work_seen && work != w->work_gc && w->vm != NULL) {
		addon_vm_gc(w->vm);
		w->work_gc = work;
	}
	w->work_seen = work;
}

static void
inbox_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct worker *w = arg;
	struct msg *m, *next;
	struct conn *c, *cn;

	(void)fd;
	(void)ev;
	pthread_mutex_lock(&w->mtx);
	m = w->inbox;
	w->inbox = w->inbox_tail = NULL;
	pthread_mutex_unlock(&w->mtx);
	for (; m != NULL; m = next) {
		next = m->next;
		switch (m->type) {
		case MSG_ACCEPT:
			conn_accept(w, m->fd, m->sb);
			break;
		case MSG_KILL_SB:
			for (c = TAILQ_FIRST(&w->conns); c != NULL; c = cn) {
				cn = TAILQ_NEXT(c, link);
				if (c->sb == m->sb)
					conn_kill(c);
			}
			pool_kill_sb(w, m->sb);
			sandbox_unref(m->sb);
			break;
		case MSG_SHED:
			unid_shed(w, m->fd);
			break;
		case MSG_STOP:
			event_base_loopbreak(w->base);
			break;
		}
		free(m);
	}
}

static void
worker_post(struct worker *w, struct msg *m)
{
	m->next = NULL;
	pthread_mutex_lock(&w->mtx);
	if (w->inbox_tail != NULL)
		w->inbox_tail->next = m;
	else
		w->inbox = m;
	w->inbox_tail = m;
	pthread_mutex_unlock(&w->mtx);
	event_active(w->inbox_ev, EV_READ, 0);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	event_base_loop(w->base, 0);
	pool_kill_sb(w, NULL);
	return NULL;
}

/* ---- proxy.h: starting, stopping and feeding the workers ---- */
/*
 * Called on the main thread, but proxy_addons, which any thread may call
 * (under src_mtx), and proxy_open_conns (an atomic load).
 */

int
proxy_workers_start(int n)
{
	struct timeval one = { 0, 500000 };
	int i;

	workers = xcalloc((size_t)n, sizeof(*workers));
	nworkers = n;
	for (i = 0; i < n; i++) {
		struct worker *w = &workers[i];
		w->idx = i;
		pthread_mutex_init(&w->mtx, NULL);
		TAILQ_INIT(&w->conns);
		TAILQ_INIT(&w->dead);
		TAILQ_INIT(&w->unid);
		TAILQ_INIT(&w->pool);
		TAILQ_INIT(&w->idleup);
		buf_init(&w->scratch, (size_t)4 * 1024 * 1024);
		w->tgts = tgtab_new();
		{
			/* The changelist coalesces the many enable/disable pairs
			 * of a request cycle into fewer epoll_ctl calls. */
			struct event_config *ec = event_config_new();
			if (ec == NULL)
				return -1;
			event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
			w->base = event_base_new_with_config(ec);
			event_config_free(ec);
			if (w->base == NULL)
				return -1;
		}
		w->dns = evdns_base_new(w->base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
		    EVDNS_BASE_DISABLE_WHEN_INACTIVE);
		if (w->dns == NULL)
			w->dns = evdns_base_new(w->base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
		if (w->dns == NULL)
			return -1;
		w->inbox_ev = event_new(w->base, -1, EV_READ | EV_PERSIST, inbox_cb, w);
		w->reap_ev = event_new(w->base, -1, 0, reap_cb, w);
		if (the_proxy.audit_fd != -1)
			w->audit = auditq_new(w->base, the_proxy.audit_fd);
		w->tick_ev = event_new(w->base, -1, EV_PERSIST, tick_cb, w);
		event_add(w->tick_ev, &one);
		w->gh = ghapp_new(w->base, the_proxy.conf);
		(void)worker_vm(w);
		if (pthread_create(&w->th, NULL, worker_main, w) != 0)
			return -1;
	}
	return 0;
}

void
proxy_workers_stop(void)
{
	int i;

	for (i = 0; i < nworkers; i++) {
		struct msg *m = xcalloc(1, sizeof(*m));
		m->type = MSG_STOP;
		worker_post(&workers[i], m);
	}
	for (i = 0; i < nworkers; i++) {
		pthread_join(workers[i].th, NULL);
		if (workers[i].audit != NULL)
			auditq_flush(workers[i].audit);
	}
}

void
proxy_dispatch(int fd, struct sandbox *sb)
{
	struct msg *m = xcalloc(1, sizeof(*m));
	int i, best = 0;
	long bl = -1, l;

	for (i = 0; i < nworkers; i++) {
		l = atomic_load(&workers[i].load);
		if (bl == -1 || l < bl) {
			bl = l;
			best = i;
		}
	}
	/*
	 * Counted now, not when the worker gets to it, so a burst of accepts
	 * spreads over the workers (conn_kill uncounts it).
	 */
	atomic_fetch_add(&workers[best].load, 1);
	m->type = MSG_ACCEPT;
	m->fd = fd;
	m->sb = sb;
	worker_post(&workers[best], m);
}

void
proxy_kill_sandbox(struct sandbox *sb)
{
	int i;

	for (i = 0; i < nworkers; i++) {
		struct msg *m = xcalloc(1, sizeof(*m));
		m->type = MSG_KILL_SB;
		m->sb = sandbox_ref(sb);
		worker_post(&workers[i], m);
	}
}

long
proxy_open_conns(void)
{
	return atomic_load(&the_proxy.st.conns);
}

long
proxy_shed(int n)
{
	int i;

	for (i = 0; i < nworkers; i++) {
		struct msg *m = xcalloc(1, sizeof(*m));
		m->type = MSG_SHED;
		m->fd = n;
		worker_post(&workers[i], m);
	}
	return (long)n * nworkers;
}

struct addon_src *
proxy_addons(void)
{
	struct addon_src *s;

	pthread_mutex_lock(&the_proxy.src_mtx);
	s = the_proxy.src != NULL ? addon_src_ref(the_proxy.src) : NULL;
	pthread_mutex_unlock(&the_proxy.src_mtx);
	return s;
}

void
proxy_set_addons(struct addon_src *s)
{
	struct addon_src *old;

	pthread_mutex_lock(&the_proxy.src_mtx);
	old = the_proxy.src;
	the_proxy.src = s;
	pthread_mutex_unlock(&the_proxy.src_mtx);
	if (old != NULL)
		addon_src_unref(old);
}
