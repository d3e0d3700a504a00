/*
 * runtime/k8s/cache.h: a list-then-watch cache of the runtime's own
 * objects (docs/kubernetes.md, "Watch cache"): the sandbox pods, their
 * claims and NetworkPolicies, and the egress-proxy pods, each set kept by a thread of its own
 * that lists once (paged), then watches from that resourceVersion with
 * bookmarks, resumes from the last version it saw when a watch ends or
 * breaks, lists again on 410 Gone, and backs off on errors. Reads copy
 * the set; a set whose watch has been down for longer than
 * KCACHE_STALE_MS (or was never listed) is not served, and the caller
 * lists as before. Talks to client.c only (api.c calls it, not the other
 * way round). Thread-safe.
 */
#ifndef K8S_CACHE_H
#define K8S_CACHE_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "attrib.h"

#define KCACHE_STALE_MS		5000	/* a set is served this long after its watch broke */
#define KCACHE_WATCH_S		300	/* timeoutSeconds asked of a watch */
#define KCACHE_BACKOFF_MS	250	/* first back-off after an error; doubles */
#define KCACHE_BACKOFF_MAX_MS	30000
#define KCACHE_MAX_EVENT	((size_t)8 * 1024 * 1024)	/* bytes of one event line */

enum kcache_set { KC_SBX_PODS, KC_SBX_PVCS, KC_PROXY_PODS, KC_SBX_NETPOLS,
	KC_NSETS };

/* What to watch: a collection path ("/api/v1/namespaces/x/pods") and its
 * label selector query ("labelSelector=..."), per set. */
struct kcache_src {
	const char	*path;
	const char	*q;
	/* Called for each watch event of the set (not for a list), before
	 * it is applied: old the object as the set held it (NULL: none),
	 * now as it is (NULL: deleted). Runs on the set's thread with the
	 * cache locked: it must not block or call the cache. NULL: none. */
	void		(*on_event)(void *arg, const cJSON *old, const cJSON *now);
	void		*arg;
};

/* Counters since kcache_start, per set (tests, diagnostics). */
struct kcache_stats {
	long long	lists;		/* full lists (the first and every relist) */
	long long	watches;	/* watch requests */
	long long	events;		/* ADDED/MODIFIED/DELETED applied */
	long long	bookmarks;
	long long	expired;	/* 410 Gone: relisted */
	long long	errors;		/* failed lists and watches */
	long long	objects;	/* in the set now */
	int		served;		/* reads answered from the set now */
};

struct kcache;
struct k8s_client;

/* Starts the threads; NULL with err if a thread cannot start. */
struct kcache *kcache_start(struct k8s_client *cl,
	    const struct kcache_src src[KC_NSETS], char *err, size_t errlen);

/* Stops and joins the threads and frees the cache (NULL: nothing). */
void	kcache_stop(struct kcache *);

/* 1 with *items a new array (a copy of every object of set) when the set
 * is served; 0 (and *items NULL) when the caller must list itself. */
int	kcache_items(struct kcache *, enum kcache_set, cJSON **items) WUNRES;

/* 1 with *out a copy of object name of set when the set is served and
 * holds it; 0 (*out NULL) otherwise: the caller asks the API (so an
 * object the cache has not seen yet is never reported absent). */
int	kcache_get(struct kcache *, enum kcache_set, const char *name,
	    cJSON **out) WUNRES;

/*
 * A write's reply obj (a create's or a patch's) of an object of set: kept
 * when the set does not hold it yet, or holds an older resourceVersion of
 * it (both numeric; else left to the watch), so our own writes are read
 * back before their watch event arrives. Ignored while the set is not
 * listed yet.
 */
void	kcache_put(struct kcache *, enum kcache_set, const cJSON *obj);

void	kcache_stats(struct kcache *, enum kcache_set, struct kcache_stats *);

#endif
