/*
 * sandbox.h: registered sandboxes (thread-safe registry). A sandbox has a
 * stable identity with counters (struct sandbox) and an immutable,
 * refcounted attribute snapshot (struct sbattrs). Re-registering swaps the
 * snapshot; a connection takes the current one before each hook runs
 * (conn_attrs_refresh), so a narrower policy reaches the next request of a
 * connection already open, and a snapshot lives as long as a hook uses it.
 */
#ifndef PROXY_SANDBOX_H
#define PROXY_SANDBOX_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct cJSON;

struct sbattrs {
	atomic_int	 refs;
	uint64_t	 serial;	/* unique per snapshot, set on register; 0: none */
	char		*secret;	/* NULL: no proxy credential */
	char		*org, *user, *session;
	char		**lk, **lv;	/* labels */
	size_t		 nl;
	/* Source addresses allowed to use the secret (none: any). */
	struct sbaddr {
		int		 family;
		unsigned char	 a[16];
	}		*ips;
	size_t		 nips;
	/* The credential policy (register's "policy" object), read only; NULL: none. */
	struct cJSON	*policy;
};

/* Bounds of a registered policy (docs/internals/proxy-admin.md). */
#define SB_POLICY_MAX_DEPTH	8
#define SB_POLICY_MAX_BYTES	(16 * 1024)

struct sandbox {
	atomic_int	 refs;
	char		 id[128];
	atomic_int	 dead;		/* deregistered */
	atomic_long	 conns, tunnels, intercepted, requests;
	atomic_long	 bytes_up, bytes_down, denied;
	struct sbattrs	*attrs;		/* current; guarded by the registry lock */
	void		*listener;	/* main thread only (struct evconnlistener) */
	struct sockaddr_storage listen_ss;	/* main thread only: the listener's address */
	socklen_t	 listen_sslen;	/* 0: none */
	char		 trace[56];	/* W3C traceparent of the orchestrator's
					 * call in flight (admin "trace"); ""
					 * none. Guarded by the registry lock */
};

/* The sandbox used for anonymous connections. */
struct sandbox	*sandbox_anonymous(void);
/* Whether sb is the anonymous sandbox (no named credential goes to it). */
int	sandbox_is_anonymous(const struct sandbox *);

struct sandbox	*sandbox_ref(struct sandbox *);
void		 sandbox_unref(struct sandbox *);
struct sbattrs	*sbattrs_ref(struct sbattrs *);
void		 sbattrs_unref(struct sbattrs *);
/* The current attributes of sb, referenced. */
struct sbattrs	*sandbox_attrs(struct sandbox *);

/*
 * Registers or updates id with attrs (ownership passes to the registry).
 * Returns the sandbox, referenced; *created says whether it is new.
 */
struct sandbox	*sandbox_register(const char *id, struct sbattrs *attrs, int *created);
/* Removes id from the registry; returns it referenced, or NULL. */
struct sandbox	*sandbox_deregister(const char *id);
/* Looks up id; referenced, or NULL. */
struct sandbox	*sandbox_find(const char *id);
/*
 * Checks a Proxy-Authorization "Basic base64(id:secret)" value.
 * Referenced sandbox and attrs on success, NULL otherwise.
 */
struct sandbox	*sandbox_auth(const char *value, size_t len, struct sbattrs **attrs);
/* Sets (tp a traceparent) or clears (NULL) sb's trace context. */
void		 sandbox_set_trace(struct sandbox *, const char *tp);
/* The trace context of the sandbox named id into out (sizeof trace): 1,
 * or 0 when it has none (cheap while no sandbox has one). */
int		 sandbox_trace_of(const char *id, char out[56]);
/* Calls fn for each registered sandbox (under the lock: keep it short). */
void		 sandbox_foreach(void (*fn)(struct sandbox *, void *), void *);
size_t		 sandbox_count(void);

#endif
