/*
 * proxy_int.h: what the files of the connection engine share; the rest of
 * the proxy sees proxy.h only. The engine is layered, listed here lowest
 * first: a file calls only files listed before it (tests/lib/layers.sh
 * checks that no two call each other):
 *
 *   pstate.c     the_proxy and its addon source (proxy.h)
 *   wmsg.c       messages into the workers' inboxes (struct msg)
 *   connaudit.c  the audit lines of a connection
 *   unid.c       unidentified connections: their share, per source and in total
 *   upool.c      parked and idle upstreams, per worker
 *   conn.c       a connection: made and admitted, identified, answered and
 *                closed (CS_CLOSING, CS_DRAIN), killed and freed
 *   tunnel.c     a blind tunnel's relay (CS_TUNNEL)
 *   conncred.c   the named credentials of a connection's requests
 *   proxy.c      the state machine: heads, hooks, body gates, dialling,
 *                client TLS, sleeping connections, the request cycle
 *   worker.c     worker threads: the tick, the inbox, proxy.h's calls to them
 *
 * A phase with callbacks of its own (closing, tunnel) is entered once and
 * left only by conn_kill, so its file never calls back into proxy.c.
 *
 * A struct conn, a struct pooled and everything they point to belong to one
 * worker and are touched on its thread only; a struct msg is the one thing
 * that crosses threads, through the worker's inbox under w->mtx. Shared:
 * the_proxy (written before the workers start; afterwards its counters are
 * atomics, the addon source is under src_mtx and the leaf cache locks
 * itself) and the sandboxes (refcounted, atomic counters).
 */
#ifndef PROXY_INT_H
#define PROXY_INT_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/util.h>
#include <openssl/ssl.h>

#include "buf.h"
#include "canon.h"
#include "credreq.h"
#include "httpreq.h"
#include "proxy.h"

struct addon_vm;
struct auditq;
struct bufferevent;
struct event;
struct event_base;
struct evdns_base;
struct evdns_getaddrinfo_request;
struct ghapp;
struct hook;
struct sandbox;
struct sbattrs;
struct credset;
struct cred;
struct tgtab;

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
	TAILQ_ENTRY(conn)	 upool_idle_link;	/* on w->idleup */
	TAILQ_ENTRY(conn)	 unid_link;	/* on w->unid while unid */
	struct worker		*w;
	uint64_t		 id;
	struct sandbox		*sb;		/* NULL until identified */
	struct sbattrs		*attrs;		/* sb's, refreshed before each hook */
	/* The named credentials sb may use on the target (credreq.h), from
	 * creds (the addons' declarations, referenced): conn_creds. */
	struct credset		*creds;
	struct cred		*cred[CREDREQ_MAX];
	size_t			 ncred;
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
	unsigned		 resp_hdone:1;	/* the final response's head was read */
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
						   interned (conn_tgt_set); never NULL */
	struct hreq		*req;
	struct h1head		*rh;		/* the response head (up_read) */
	int			 resp_status;
	long long		 deadline;	/* ms, util_mono_coarse_ms; 0: none */
	long long		 last_active;
	long long		 head_start;
	unsigned long long	 req_up, req_down;	/* body bytes, for audit */
	unsigned long long	 tot_up, tot_down;
};

enum msgtype { MSG_ACCEPT, MSG_KILL_SB, MSG_SHED, MSG_EVICT_SRC, MSG_STOP };

struct msg {
	struct msg	*next;
	enum msgtype	 type;
	int		 fd;		/* MSG_ACCEPT; MSG_SHED: how many;
					   MSG_EVICT_SRC: the address family */
	struct sandbox	*sb;
	unsigned char	 peer[16];	/* MSG_EVICT_SRC: the client address */
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
	struct tgtab		*tgts;		/* interned targets (conn_tgt_set) */
	/* work counters for the tick's quiet-time Lua garbage collection */
	unsigned long long	 nreq, work_seen, work_gc;
	struct addon_vm		*vm;
	struct ghapp		*gh;
	struct credtok		*ct;		/* oauth2 access tokens (credtok.h) */
	struct buf		 scratch;
	struct auditq		*audit;		/* NULL: no audit log */
	uint64_t		 next_id;
};

/* connaudit.c: the lines a connection writes to the audit log (audit.c). */
/* The audit line of c's current request, answered with status (0: none). */
void	connaudit_req(struct conn *c, int status, const char *code, const char *detail);
/* The audit line of c's CONNECT: 200 or the refusal (0: none sent). */
void	connaudit_connect(struct conn *c, int status, const char *code, const char *detail);
/*
 * The line of a refusal (status) of c: its CONNECT's, its request's, or a
 * "refused" line when no head was parsed (malformed, too large, timed out).
 */
void	connaudit_refusal(struct conn *c, int status, const char *code, const char *detail);
/* The audit line of c, a blind tunnel closing. */
void	connaudit_tunnel(struct conn *c);

/* unid.c: unidentified connections. */
/* c is unidentified: listed and counted. Returns its address's count. */
long	unid_enter(struct conn *c);
/* c is identified or closing: no longer counted. Idempotent. */
void	unid_leave(struct conn *c);
/* No byte received yet: nothing is lost by closing it. */
int	unid_idle(struct conn *c);
/*
 * Applies the caps to c, just accepted unidentified with nsrc connections
 * of its address counted. Returns the connection the caller closes: NULL
 * (none, c goes on), another one (evicted, c goes on) or c (refused).
 */
struct conn *unid_admit(struct conn *c, long nsrc);
/*
 * w's oldest unidentified connection of the client address (fam, peer),
 * idle ones first, whatever its age; NULL: none (conn_evict_src closes it).
 */
struct conn *unid_src_victim(struct worker *w, int fam, const unsigned char peer[16]);

/* wmsg.c: messages into the workers' inboxes. */
/* The workers (worker.c, once they exist). */
void	wmsg_init(struct worker *w, int n);
/* Queues m for w's thread and wakes it. */
void	wmsg_post(struct worker *w, struct msg *m);
/*
 * Asks every worker but w to close one unidentified connection of the
 * client address (fam, peer): MSG_EVICT_SRC, conn_evict_src. Another
 * worker admitted one of a lighter address in its place (unid_admit).
 */
void	proxy_evict_src(const struct worker *w, int fam, const unsigned char peer[16]);

/* upool.c: parked and idle upstreams. */
/* *a = sa (AF_INET or AF_INET6; -1 otherwise, *a zeroed). */
int	upool_sa_set(union sa_any *a, const struct sockaddr *sa);
/* Runs c->up's read callback again for TLS records OpenSSL holds (read-ahead). */
void	upool_kick(struct conn *c);
/* 1 when application bytes follow a complete response inside OpenSSL. */
int	upool_junk(struct conn *c);
/* 1 when c->up is a clean idle upstream TLS connection another may use. */
int	upool_clean(struct conn *c);
/* c is between requests and keeps its upstream: it may be lent (newest first). */
void	upool_idle_link(struct conn *c);
/* c's upstream may no longer be lent. Idempotent. */
void	upool_idle_unlink(struct conn *c);
/* Parks c->up if it is clean (c->up is then NULL); else leaves it. */
void	upool_park(struct conn *c);
/*
 * Takes into c->up a parked upstream of c's sandbox to c's target at sa
 * (*lender NULL), or the idle upstream of another connection (*lender:
 * that one, which the caller puts to rest). 1 when one was taken: it is
 * connected and verified, its callbacks are the caller's to set. 0: none.
 */
int	upool_take(struct conn *c, const struct sockaddr *sa, struct conn **lender);
/* Drops w's parked upstreams that expired by now. */
void	upool_expire(struct worker *w, long long now);
/* Drops w's parked upstreams of sb (NULL: all). */
void	upool_kill_sb(struct worker *w, struct sandbox *sb);

/* conn.c: a connection's object. */
/* Points c->tgt at the worker's copy of t (made if there is none). */
void	conn_tgt_set(struct conn *c, const struct target *t);
/*
 * A new connection on fd (sb: its listener's sandbox, referenced, or NULL)
 * with its client bufferevent, no callbacks set; NULL when it was refused
 * at a cap (it is killed).
 */
struct conn *conn_new(struct worker *w, int fd, struct sandbox *sb);
/*
 * c->attrs = its sandbox's current attributes: a re-registration (a
 * narrower policy) reaches the next request of a connection already open.
 */
void	conn_attrs_refresh(struct conn *c);
/* Identifies c by its listener or r's Proxy-Authorization. 0, or -1: answered. */
int	conn_identify(struct conn *c, struct hreq *r);
/* Answers c with status and body (of type ctype), then closes. */
void	conn_answer(struct conn *c, int status, const char *code, const char *reason,
	    const char *ctype, const char *body, size_t blen);
/* conn_answer with the reason as a text/plain body. */
void	conn_respond(struct conn *c, int status, const char *code, const char *reason);
/* 1 when what is the client's half-close (c->cl_eof set); 0: error or reset. */
int	conn_cl_eof(struct conn *c, short what);
/* The client callbacks of CS_CLOSING: the flush, then conn_kill. */
void	conn_closing_write(struct bufferevent *bev, void *arg);
void	conn_closing_event(struct bufferevent *bev, short what, void *arg);
/* Stops every callback of c and queues it for freeing. Idempotent. */
void	conn_kill(struct conn *c);
/* The worker's deferred free of its dead connections (w->reap_ev). */
void	conn_reap_cb(evutil_socket_t fd, short ev, void *arg);
/* Closes one unidentified connection of (fam, peer) on w (MSG_EVICT_SRC). */
void	conn_evict_src(struct worker *w, int fam, const unsigned char peer[16]);
/* Closes up to n unidentified connections of w, oldest idle ones first. */
long	conn_shed(struct worker *w, long n);

/* upresp.c: the upstream's reply on the request cycle. */
/* A request went upstream (c->head_req set): its reply is awaited. */
void	upresp_start(struct conn *c);
/*
 * Reads and relays what c's upstream sent: 1 when the reply is whole (the
 * caller finishes the request), 0 for more, -1 when c was answered (502)
 * or killed.
 */
int	upresp_read(struct conn *c);
/*
 * The upstream closed mid-reply: 0 when that close ends the reply (a body
 * delimited by it), -1 when no whole head came or the body was cut.
 */
int	upresp_eof(struct conn *c);
/* Frees c's reply state (between requests, at the end). */
void	upresp_free(struct conn *c);

/* tunnel.c: the blind tunnel. */
/* c's upstream is connected and the 200 queued: relay bytes (CS_TUNNEL). */
void	tunnel_start(struct conn *c);

/* conncred.c: the named credentials. */
/*
 * The named credentials c's sandbox may use on its target (credreq.h), by
 * the addons' current declarations and the sandbox's current policy, into
 * c->cred. The anonymous sandbox gets none. Returns how many.
 */
size_t	conncred_select(struct conn *c);
/*
 * After the hook: c's credentials into its request. 0: go on. 1: waiting
 * for an oauth2 or registry token exchange; ready(c, err) is called from
 * the loop (err NULL: call again), unless c goes first (conn.c forgets
 * it). -1: answered (refused: 400 for a registry request whose scope
 * cannot be derived, 502 for a token that cannot be had).
 */
int	conncred_apply(struct conn *c, void (*ready)(void *arg, const char *err));
/* An exchange failed: the request is refused, 502 with err. */
void	conncred_fail(struct conn *c, const char *err);
/*
 * c's request waited for its body (c->req->s4_body: a SigV4 request of a
 * service other than S3): signed again with the body's SHA-256 (hex).
 * 0: go on. -1: answered (refused as conncred_apply's).
 */
int	conncred_body_signed(struct conn *c, const char *hash);
/*
 * c's upstream answered its request with status: a 401 to a request that
 * carried an oauth2 or registry access token drops that token (a
 * registry credential's for the request's scope; credtok_invalidate).
 */
void	conncred_answered(struct conn *c, int status);

/* proxy.c: the state machine. */
/* Starts reading request heads on a new connection (conn_new). */
void	proxy_accept(struct worker *w, int fd, struct sandbox *sb);
/* The current addon VM of the worker (reloading it if stale). */
struct addon_vm *proxy_worker_vm(struct worker *w);
/* The dial failed: counted, logged and answered (conn_respond). */
void	proxy_connect_fail(struct conn *c, int status, const char *code, const char *why);
/* Between requests without an upstream: drops parser state and sleeps. */
void	proxy_conn_rest(struct conn *c);

#endif
