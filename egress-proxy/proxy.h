/*
 * proxy.h: the proxy's process-wide state (pstate.c), its worker threads
 * (worker.c) and the connection engine they run (proxy.c and the files
 * proxy_int.h lists). main.c fills the_proxy (conf, cc, audit_fd, the
 * first addon source) before proxy_workers_start; afterwards only the
 * counters (atomics, any thread) and the addon source (proxy_set_addons)
 * change. The counters are shown by metrics.c.
 */
#ifndef PROXY_PROXY_H
#define PROXY_PROXY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "config.h"

struct certcache;
struct sandbox;
struct addon_src;

struct pstats {
	atomic_long	 conns, conns_total;
	atomic_long	 conns_asleep;	/* idle intercepted, bufferevent dropped */
	atomic_long	 conns_unid;	/* main listener, not identified yet */
	atomic_long	 unid_evicted, unid_refused, unid_expired, unid_shed;
	atomic_long	 accept_paused;	/* accept() short of descriptors (lguard.c) */
	atomic_long	 resolve_failed, connect_failed;
	atomic_long	 tunnels_blind, tunnels_intercept;
	atomic_long	 connect_intercept, connect_tunnel, connect_deny, connect_error;
	atomic_long	 req_injected, req_plain;
	atomic_long	 req_cred;	/* requests that got a named credential (credreq.c) */
	atomic_long	 ref_auth, ref_limit, ref_ssrf, ref_misdirected, ref_badrequest,
			 ref_addon, ref_upstream_tls, ref_gate, ref_upstream_resp;
	atomic_long	 bytes_up, bytes_down;
	atomic_long	 reload_ok, reload_failed;
	atomic_long	 pool_idle;			/* parked upstream connections */
	atomic_long	 pool_parked, pool_reused, pool_lent, pool_dropped, pool_retried;
};

struct proxy {
	struct pconf		*conf;
	struct certcache	*cc;
	int			 audit_fd;	/* -1: no audit log */
	struct pstats		 st;
	_Atomic(struct addon_src *) src;	/* current addons (main thread swaps) */
	pthread_mutex_t		 src_mtx;
};

extern struct proxy the_proxy;	/* the process's one proxy (pstate.c) */

/* Starts n worker threads. 0 or -1. */
int	proxy_workers_start(int n);
void	proxy_workers_stop(void);
/* Hands an accepted fd to the least-loaded worker (sb referenced or NULL). */
void	proxy_dispatch(int fd, struct sandbox *sb);
/* Closes every connection of sb on every worker. */
void	proxy_kill_sandbox(struct sandbox *sb);
/* The current addon source, referenced (under src_mtx). */
struct addon_src *proxy_addons(void);
/* Swaps in a new addon source (ownership passes). */
void	proxy_set_addons(struct addon_src *);
/* Open connections on all workers. */
long	proxy_open_conns(void);
/*
 * Asks every worker to close up to n of its oldest unidentified
 * connections, idle ones (no byte received) first: descriptors are short.
 * Returns the most that may be closed in all.
 */
long	proxy_shed(int n);

#endif
