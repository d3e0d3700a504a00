/*
 * runtime/k8s/k8s_int.h: what the kubernetes runtime's own files share
 * (docs/kubernetes.md); nothing outside orchestrator/runtime/k8s/ includes
 * it. The layers point one way:
 *
 *   k8s.c    the runtime_ops table and the ops, setup and teardown
 *     |  \  \
 *     |   \  home.c   per-user homes: their claims, who mounts them;
 *     |   \          start.c a pod coming up (fail fast, progress)
 *     |   fleet.c  the egress-proxy fleet: proxy pods, load, assignment,
 *     |  /  /      the sandbox's NetworkPolicy, scaling, the sweep thread
 *   api.c    API calls and object paths, label selectors, derived
 *            credentials, agent calls
 *     |
 *     |
 *   cache.c  the watch cache of our pods, claims and proxy pods
 *     |
 *   client.c (REST), obj.c (object builders), orchestrator/lib/agentc.c
 *
 * k8s.c calls fleet.c, home.c, start.c and api.c; fleet.c, home.c and
 * start.c call api.c
 * (not each other); api.c calls none of them.
 * Every call is blocking and runs on the caller's (worker) thread, or on
 * the fleet thread; struct k8s_rt is set up once by runtime_k8s_new() and
 * read-only after it, but for the fleet fields under their mutexes.
 */
#ifndef K8S_INT_H
#define K8S_INT_H

#include <pthread.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#include "attrib.h"
#include "k8s.h"
#include "netpol.h"
#include "obj.h"

#define K8S_MAX_SEL		16		/* labels in one configured selector */
/* Bytes of the proxy admin token, NUL included: it travels to the proxy
 * in an rt_agent_addr (egress.h over agentc), whose token holds this. */
#define K8S_MAX_ADMIN_TOKEN	sizeof(((struct rt_agent_addr *)0)->token)
/* Bytes of one sandbox's proxy env: four proxy URLs with the id and a
 * 64-digit credential, NO_PROXY twice and five CA paths fit in a fourth. */
#define K8S_ENV_MAX	4096
/* Exposed app ports one sandbox's policy admits the gateway to. */
#define K8S_MAX_APP_PORTS	256

struct fleet_boot;	/* fleet.c: a proxy pod's boot id as last seen */

/* The runtime's state (runtime->impl). */
struct k8s_rt {
	const struct rt_k8s_conf *conf;
	struct k8s_client	*cl;
	struct k8s_params	 par;
	char			 ns[64], pns[64], ons[64];
	char			 sel_q[1024];	/* encoded selector of our objects */
	char			 proxy_q[1024];	/* encoded selector of proxy pods */
	char			 gns[64];	/* the app gateway's */
	struct netpol_kv	 orch[K8S_MAX_SEL], proxy[K8S_MAX_SEL];
	struct netpol_kv	 gw[K8S_MAX_SEL];
	size_t			 norch, nproxy, ngw;
	char			*orch_buf, *proxy_buf, *gw_buf;
	unsigned char		 key[64];
	size_t			 keylen;
	char			 admin_token[K8S_MAX_ADMIN_TOKEN];
	pthread_mutex_t		 fleet_mtx;	/* assignments and scaling */
	struct fleet_boot	*boots;		/* under fleet_mtx */
	size_t			 nboots;
	int			 heal_failed;	/* under fleet_mtx: the last sweep
						 * could not check or register
						 * at some ready proxy pod */
	long long		 scale_have;	/* under fleet_mtx: the proxy
						 * Deployment's replicas as last
						 * read or set; -1: unknown */
	pthread_mutex_t		 np_mtx;	/* a policy's read and rewrite;
						 * taken after fleet_mtx */
	pthread_mutex_t		 stop_mtx;
	pthread_cond_t		 stop_cv;
	int			 stopping;
	int			 thr_started;
	int			 sweep_now;	/* fleet_proxy_event (stop_mtx) */
	pthread_t		 thr;
	struct kcache		*cache;		/* watch cache (api.c); NULL: none */
};

/* ---- api.c ---- */

#define API_Q_STRICT	"fieldValidation=Strict"
#define API_CT_MERGE	"application/merge-patch+json"

/* Resources, by API prefix and plural. */
struct api_res {
	const char	*prefix;
	const char	*plural;
};
extern const struct api_res api_pods, api_pvcs, api_secrets, api_netpols;

/* Sleeps ms milliseconds (polling between API calls). */
void	api_nap(long long ms);

/* Splits "k=v,k=v" (in buf, modified) into kv; -1 if malformed. */
int	api_sel_parse(char *buf, struct netpol_kv *kv, size_t *n) WUNRES;

/* "labelSelector=<sel, encoded>" into dst; -1 if it does not fit. */
int	api_sel_query(const char *sel, char *dst, size_t len) WUNRES;

/* HMAC-SHA256(key, purpose ":" id) as 64 hex digits. */
void	api_derive(struct k8s_rt *r, const char *purpose, const char *id,
	    char out[65]);

/*
 * One API call: method on path (plus "?q" when q is set) with a JSON body
 * (may be NULL). Returns 0 when the answer is 2xx or the status `also`
 * (404 for a delete, 409 for a create...; 0: none), with *status set and
 * for 2xx *out (if given) the parsed body; otherwise -1 with err set (the
 * Status message for a non-2xx answer).
 */
int	api_call(struct k8s_rt *r, const char *method, const char *path,
	    const char *q, const char *ctype, const cJSON *body, int also,
	    int *status, cJSON **out, char *err, size_t errlen) WUNRES;

/* Wraps an API error with what we were doing; returns -1. */
int	api_failf(char *err, size_t errlen, const char *what, const char *name);

/* The path of a collection (name NULL) or of one object. */
void	api_path(const struct api_res *rs, const char *ns, const char *name,
	    char *dst, size_t len);

/* GET; *out NULL (and 0 returned) on 404. */
int	api_get(struct k8s_rt *r, const char *path, cJSON **out, char *err,
	    size_t errlen) WUNRES;

/* DELETE; 404 is success. */
int	api_delete(struct k8s_rt *r, const char *path, const char *q, char *err,
	    size_t errlen) WUNRES;

/* POST with fieldValidation=Strict; *st tells a 409 apart. */
int	api_create(struct k8s_rt *r, const char *path, const cJSON *obj, int *st,
	    cJSON **out, char *err, size_t errlen) WUNRES;

/* Merge PATCH with fieldValidation=Strict; *st tells a 404 apart. */
int	api_merge_patch(struct k8s_rt *r, const char *path, const cJSON *patch,
	    int *st, char *err, size_t errlen) WUNRES;

/* {"metadata":{"annotations":{k:v,...}}} from pairs (v NULL deletes). */
cJSON	*api_ann_patch(const char *const *kv, size_t n);

/* Lists every object under path matching query q into a new array. */
int	api_list(struct k8s_rt *r, const char *path, const char *q, cJSON **items,
	    char *err, size_t errlen) WUNRES;

/* Sandbox id's pod, claim or policy (caller frees); NULL if absent. A
 * pod or claim the watch cache holds comes from it, else from the API. */
int	api_pod_get(struct k8s_rt *r, const char *id, cJSON **pod, char *err,
	    size_t errlen) WUNRES;
int	api_pvc_get(struct k8s_rt *r, const char *id, cJSON **pvc, char *err,
	    size_t errlen) WUNRES;
int	api_netpol_get(struct k8s_rt *r, const char *id, cJSON **np, char *err,
	    size_t errlen) WUNRES;

/* Our sandbox pods, every one (callers skip the deleting and failed);
 * from the watch cache when it serves them. */
int	api_sandbox_pods(struct k8s_rt *r, cJSON **items, char *err,
	    size_t errlen) WUNRES;

/*
 * The same with the session record on each pod: the annotations
 * K8S_ANN_LABELS, K8S_ANN_PROXY and K8S_ANN_PROXY_IP its policy keeps
 * replace the pod's own (a policy without one leaves the pod's). The
 * fleet and the ops that read a pod's assignment or labels use these.
 */
int	api_sbx_pod(struct k8s_rt *r, const char *id, cJSON **pod, char *err,
	    size_t errlen) WUNRES;
int	api_sbx_pods(struct k8s_rt *r, cJSON **items, char *err,
	    size_t errlen) WUNRES;

/* Our sandbox claims and the proxy pods, every one: from the watch
 * cache when it serves them (cache.h), else listed. */
int	api_sandbox_pvcs(struct k8s_rt *r, cJSON **items, char *err,
	    size_t errlen) WUNRES;
int	api_sandbox_netpols(struct k8s_rt *r, cJSON **items, char *err,
	    size_t errlen) WUNRES;
/* PUT (an unconditional replace; fieldValidation=Strict); the reply goes
 * into the watch cache as a create's does. */
int	api_put(struct k8s_rt *r, const char *path, const cJSON *obj, int *st,
	    char *err, size_t errlen) WUNRES;
int	api_proxy_pods(struct k8s_rt *r, cJSON **items, char *err,
	    size_t errlen) WUNRES;

/* Starts the watch cache of our sandbox pods, claims and proxy pods
 * (r->cache), which api_sandbox_pods(), api_sandbox_pvcs() and
 * api_proxy_pods() then read; on_proxy (may be NULL) sees each watch
 * event of a proxy pod (kcache_src's on_event, arg r). stop joins its
 * threads. */
int	api_cache_start(struct k8s_rt *r,
	    void (*on_proxy)(void *, const cJSON *, const cJSON *), char *err,
	    size_t errlen) WUNRES;
void	api_cache_stop(struct k8s_rt *r);

/*
 * The session labels kept in the annotations ann (the record list() and
 * get() return) into ri->labels; none if absent or unreadable. Free with
 * rt_info_clear().
 */
void	api_labels(const cJSON *ann, struct rt_info *ri);

/* How to reach the agent of sandbox id in the pod at ip (token derived). */
void	api_agent_at(struct k8s_rt *r, const char *id, const char *ip,
	    struct rt_agent_addr *out);

/*
 * One request to the agent of sandbox id at ip: method on path with an
 * optional JSON body. 0 if it answers 200; -1 with err otherwise.
 */
int	api_agent_call(struct k8s_rt *r, const char *id, const char *ip,
	    const char *method, const char *path, const char *body, char *err,
	    size_t errlen) WUNRES;

/*
 * Pushes the proxy env lines to the agent of sandbox id at pod_ip: the one
 * place the runtime sets a shell's env, for the paths after which no core
 * call does (a fleet move; k8sctl attach through runtime_k8s_push_env).
 */
int	api_agent_push_env(struct k8s_rt *r, const char *id, const char *pod_ip,
	    const char *env, char *err, size_t errlen) WUNRES;

/* ---- fleet.c (and runtime_k8s_fleet_sync in k8s.h) ---- */

/*
 * Assigns running sandbox id (pod IP pod_ip, now on proxy pod current or
 * NULL) to a proxy pod under labels, records record (the session labels
 * JSON to keep; NULL: the record stays) with the assignment in the same
 * write of its policy, and writes the proxy env it must get to env_out,
 * which the caller pushes (or leaves to the core), with the placeholders
 * of its named credentials; out (NULL: nothing wanted) gets their client
 * files and names (its files_out and creds_out). 0, or -1 with err.
 */
int	fleet_assign(struct k8s_rt *r, const char *id, const char *pod_ip,
	    const char *current, const struct rt_kv *labels, size_t nlabels,
	    const char *record, const struct rt_egress *out, char *env_out,
	    size_t envlen, char *err, size_t errlen) WUNRES;

/* The NetworkPolicy of a sandbox being created (no egress, no app
 * ports; its record the session labels JSON labels), without reading
 * first: one of the same name left over is replaced. 0, or -1 with err. */
int	fleet_netpol_new(struct k8s_rt *r, const char *id, const char *labels,
	    char *err, size_t errlen) WUNRES;

/* Creates or replaces the sandbox's NetworkPolicy; proxy_pod NULL: no
 * egress, else egress to it only, recorded with its IP proxy_ip. labels
 * (NULL: as they are) replaces the session record; the exposed app ports
 * it admits the gateway to are kept as they are. */
int	fleet_netpol_apply(struct k8s_rt *r, const char *id,
	    const char *proxy_pod, const char *proxy_ip, const char *labels,
	    char *err, size_t errlen) WUNRES;

/*
 * Replaces the session labels (JSON) sandbox id's policy records, the
 * rest kept; no write when it already says that. A policy that is gone
 * while the claim is there is made again (with a warning). 0, or -1 with
 * err ("not found" when the sandbox is gone).
 */
int	fleet_record(struct k8s_rt *r, const char *id, const char *labels,
	    char *err, size_t errlen) WUNRES;

/*
 * Sets the app ports sandbox id's policy admits the gateway pods to:
 * ports[0..n), distinct, sorted, checked by the caller (at most
 * K8S_MAX_APP_PORTS); n 0: no gateway ingress at all. They are kept in the
 * policy's K8S_ANN_APP_PORTS annotation, so later rewrites (an attach, a
 * fleet move, a start) and a restarted orchestrator keep them; its egress
 * is kept as it is. No write when the policy already says this. 0, or -1
 * with err ("not found" when the sandbox is gone).
 */
int	fleet_app_ports(struct k8s_rt *r, const char *id, const int *ports,
	    size_t n, char *err, size_t errlen) WUNRES;

/*
 * *yes = 1 if the sandbox's policy lets it reach a proxy pod, that is, it
 * was attached: the policy outlives a stop, and is the runtime's only
 * record of an attachment (the identity itself is the session labels).
 */
int	fleet_attached(struct k8s_rt *r, const char *id, int *yes, char *err,
	    size_t errlen) WUNRES;

/* Deregisters id from the proxy pod its pod annotations (with the
 * record: api_sbx_pod) name, if any. */
void	fleet_detach(struct k8s_rt *r, const char *id, const cJSON *pod_ann);

/* Scales to what runs now; errors are logged (the fleet thread retries). */
void	fleet_rescale(struct k8s_rt *r);

/*
 * A watch event of a proxy pod (api_cache_start's on_proxy; arg r): a pod
 * that became Ready, or whose containers restarted, wakes the fleet
 * thread for a sweep now (it heals that proxy's registrations) rather
 * than at the next fleet_interval. Does not block.
 */
void	fleet_proxy_event(void *arg, const cJSON *old, const cJSON *now);

/* Starts the fleet thread (when fleet_interval is set). 0 or -1 with err. */
int	fleet_start(struct k8s_rt *r, char *err, size_t errlen) WUNRES;

/* Stops and joins the fleet thread, if it runs, and frees the fleet's
 * state (the proxy pods' boot ids). */
void	fleet_stop(struct k8s_rt *r);

/* ---- start.c ---- */

/*
 * Waits until sandbox id's pod is Running, Ready, has an IP and its agent
 * answers: 0 with *podp (caller frees), or -1 with err, failing fast with
 * the cluster's reason (docs/kubernetes.md, "Failing fast"). What it
 * waits for goes to pg (rt_progress; NULL: nowhere) as it changes.
 */
int	kstart_wait(struct k8s_rt *r, const char *id, const struct rt_progress *pg,
	    cJSON **podp, char *err, size_t errlen) WUNRES;

/* ---- home.c ---- */

/* The runtime's home ops (runtime.h; k8s_ops points at them). */
int	khome_prepare(struct runtime *, const char *user, long long size_bytes,
	    char *err, size_t errlen) WUNRES;
int	khome_get(struct runtime *, const char *user, struct rt_home *out,
	    char *err, size_t errlen) WUNRES;
int	khome_delete(struct runtime *, const char *user, char *err,
	    size_t errlen) WUNRES;
int	khome_list(struct runtime *, struct rt_home **out, size_t *n, char *err,
	    size_t errlen) WUNRES;

/* Create: s->home's claim must be there (home_prepare made it); its size
 * goes into s->home_bytes (kept in the spec). 0 with no home. */
int	khome_for_create(struct k8s_rt *r, struct k8s_sbx *s, char *err,
	    size_t errlen) WUNRES;

/* Start: s->home's claim is there again (made anew, s->home_bytes, if it
 * was deleted while the sandbox was stopped) and its use recorded. */
int	khome_ensure(struct k8s_rt *r, const struct k8s_sbx *s, char *err,
	    size_t errlen) WUNRES;

#endif
