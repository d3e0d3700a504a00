/*
 * runtime/k8s/k8s.c: the kubernetes runtime behind runtime.h.
 *
 * Per sandbox <id> (all labelled managed-by, instance, id):
 *   PVC     sbx-<id>-ws     /workspace; its annotations are the session
 *                           record (spec, labels, egress identity); kept
 *                           while stopped, deleted on destroy;
 *   Secret  sbx-<id>-agent  the agent's bearer token (owned by the PVC);
 *   Policy  sbx-<id>        ingress only from the orchestrator to the agent
 *                           port, egress only to the assigned proxy pod;
 *   Pod     sbx-<id>        deleted on stop, created again on start.
 * Tokens and proxy credentials are HMAC-SHA256(agent_key, purpose:id), so
 * a restarted orchestrator needs no read access to Secrets to reach its
 * sandboxes again.
 *
 * All calls are blocking and run in the caller's (worker) thread; a fleet
 * thread scales the proxy Deployment and re-assigns sandboxes.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "agentc.h"
#include "buf.h"
#include "client.h"
#include "egress.h"
#include "obj.h"
#include "log.h"
#include "netpol.h"
#include "k8s.h"
#include "strnum.h"
#include "xmalloc.h"
#include "util.h"

#define K8S_MAX_SEL		16		/* labels in one configured selector */
/* Bytes of the proxy admin token, NUL included: it travels to the proxy
 * in an rt_agent_addr (egress.h over agentc), whose token holds this. */
#define K8S_MAX_ADMIN_TOKEN	sizeof(((struct rt_agent_addr *)0)->token)
#define AGENT_TIMEOUT_MS 5000	/* one agent call (health, env) */
/* An agent's answer to health or env is a small JSON object. */
#define AGENT_MAX_REPLY	65536
#define LIST_PAGE	"500"
/* Hosts a sandbox reaches without the proxy: its own loopback only. */
#define K8S_NO_PROXY	"localhost,127.0.0.1,::1"
/* Bytes of one sandbox's proxy env: four proxy URLs with the id and a
 * 64-digit credential, NO_PROXY twice and five CA paths fit in a fourth. */
#define K8S_ENV_MAX	4096

struct k8s_rt {
	const struct rt_k8s_conf *conf;
	struct k8s_client	*cl;
	struct k8s_params	 par;
	char			 ns[64], pns[64], ons[64];
	char			 sel_q[1024];	/* encoded selector of our objects */
	char			 proxy_q[1024];	/* encoded selector of proxy pods */
	struct netpol_kv	 orch[K8S_MAX_SEL], proxy[K8S_MAX_SEL];
	size_t			 norch, nproxy;
	char			*orch_buf, *proxy_buf;
	unsigned char		 key[64];
	size_t			 keylen;
	char			 admin_token[K8S_MAX_ADMIN_TOKEN];
	pthread_mutex_t		 fleet_mtx;	/* assignments and scaling */
	pthread_mutex_t		 stop_mtx;
	pthread_cond_t		 stop_cv;
	int			 stopping;
	int			 thr_started;
	pthread_t		 thr;
};

static const struct runtime_ops k8s_ops;

static void
api_nap(long long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static int
dns_label_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '-'))
			return 0;
	return 1;
}

/* Splits "k=v,k=v" (in buf, modified) into kv; -1 if malformed. */
static int
api_sel_parse(char *buf, struct netpol_kv *kv, size_t *n)
{
	char *p, *next, *k, *v;

	*n = 0;
	for (p = buf; p != NULL && *p != '\0'; p = next) {
		if ((next = strchr(p, ',')) != NULL)
			*next++ = '\0';
		if (*n >= K8S_MAX_SEL || util_kv_split(p, &k, &v) == -1)
			return -1;
		kv[*n].k = k;
		kv[*n].v = v;
		(*n)++;
	}
	return *n > 0 ? 0 : -1;
}

static int
api_sel_query(const char *sel, char *dst, size_t len)
{
	char enc[900];

	if (k8s_urlencode(sel, enc, sizeof(enc)) == -1)
		return -1;
	return snprintf(dst, len, "labelSelector=%s", enc) >= (int)len ? -1 : 0;
}

/* HMAC-SHA256(key, purpose ":" id) as 64 hex digits. */
static void
api_derive(struct k8s_rt *r, const char *purpose, const char *id, char out[65])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mlen = 0, i;
	char msg[128];
	int n;

	n = snprintf(msg, sizeof(msg), "%s:%s", purpose, id);
	if (HMAC(EVP_sha256(), r->key, (int)r->keylen, (unsigned char *)msg,
	    (size_t)n, mac, &mlen) == NULL || mlen < 32)
		fatalx("HMAC failed");
	for (i = 0; i < 32; i++)
		snprintf(out + (size_t)i * 2, 3, "%02x", mac[i]);
	out[64] = '\0';
}

/* ---- API helpers ---- */

#define API_Q_STRICT	"fieldValidation=Strict"
#define API_CT_MERGE	"application/merge-patch+json"

/*
 * One API call: method on path (plus "?q" when q is set) with a JSON body
 * (may be NULL). Returns 0 when the answer is 2xx or the status `also`
 * (404 for a delete, 409 for a create...; 0: none), with *status set and
 * for 2xx *out (if given) the parsed body; otherwise -1 with err set (the
 * Status message for a non-2xx answer).
 */
static int
api_call(struct k8s_rt *r, const char *method, const char *path, const char *q,
    const char *ctype, const cJSON *body, int also, int *status, cJSON **out,
    char *err, size_t errlen)
{
	char full[4096];
	struct buf b;
	char *txt = NULL;
	int rc;

	if (out != NULL)
		*out = NULL;
	if (snprintf(full, sizeof(full), "%s%s%s", path, q ? "?" : "",
	    q ? q : "") >= (int)sizeof(full)) {
		snprintf(err, errlen, "%s %.200s: path too long", method, path);
		return -1;
	}
	if (body != NULL && (txt = cJSON_PrintUnformatted(body)) == NULL)
		abort();
	buf_init(&b, K8S_MAX_RESP);
	rc = k8s_request(r->cl, method, full, ctype, txt, status, &b, err, errlen);
	free(txt);
	if (rc == 0) {
		if (*status / 100 == 2) {
			if (out != NULL &&
			    (*out = cJSON_ParseWithLength(b.p, b.len)) == NULL) {
				snprintf(err, errlen, "%s %s: unparseable response",
				    method, path);
				rc = -1;
			}
		} else {
			k8s_status_error(*status, b.p, b.len, err, errlen);
			if (*status != also)
				rc = -1;
		}
	}
	buf_free(&b);
	return rc;
}

/* Wraps an API error with what we were doing. */
static int
api_failf(char *err, size_t errlen, const char *what, const char *name)
{
	char tmp[512];

	snprintf(tmp, sizeof(tmp), "%s", err);
	snprintf(err, errlen, "%s %s: %s", what, name, tmp);
	return -1;
}

/* Resources, by API prefix and plural. */
struct api_res {
	const char	*prefix;
	const char	*plural;
};
static const struct api_res api_pods = { "/api/v1", "pods" };
static const struct api_res api_pvcs = { "/api/v1", "persistentvolumeclaims" };
static const struct api_res api_secrets = { "/api/v1", "secrets" };
static const struct api_res api_netpols = { "/apis/networking.k8s.io/v1",
    "networkpolicies" };

/* The path of a collection (name NULL) or of one object. */
static void
api_path(const struct api_res *rs, const char *ns, const char *name, char *dst,
    size_t len)
{
	snprintf(dst, len, "%s/namespaces/%s/%s%s%s", rs->prefix, ns, rs->plural,
	    name ? "/" : "", name ? name : "");
}

/* GET; *out NULL (and 0 returned) on 404. */
static int
api_get(struct k8s_rt *r, const char *path, cJSON **out, char *err, size_t errlen)
{
	int st;

	return api_call(r, "GET", path, NULL, NULL, NULL, 404, &st, out, err, errlen);
}

/* DELETE; 404 is success. */
static int
api_delete(struct k8s_rt *r, const char *path, const char *q, char *err, size_t errlen)
{
	int st;

	return api_call(r, "DELETE", path, q, NULL, NULL, 404, &st, NULL, err, errlen);
}

/* POST with fieldValidation=Strict; *st tells a 409 apart. */
static int
api_create(struct k8s_rt *r, const char *path, const cJSON *obj, int *st,
    cJSON **out, char *err, size_t errlen)
{
	return api_call(r, "POST", path, API_Q_STRICT, NULL, obj, 409, st, out, err,
	    errlen);
}

/* Merge PATCH with fieldValidation=Strict; *st tells a 404 apart. */
static int
api_merge_patch(struct k8s_rt *r, const char *path, const cJSON *patch, int *st,
    char *err, size_t errlen)
{
	return api_call(r, "PATCH", path, API_Q_STRICT, API_CT_MERGE, patch, 404, st, NULL,
	    err, errlen);
}

/* {"metadata":{"annotations":{k:v,...}}} from pairs (v NULL deletes). */
static cJSON *
api_ann_patch(const char *const *kv, size_t n)
{
	cJSON *p = cJSON_CreateObject(), *a;
	size_t i;

	a = cJSON_AddObjectToObject(cJSON_AddObjectToObject(p, "metadata"),
	    "annotations");
	for (i = 0; i + 1 < 2 * n; i += 2) {
		if (kv[i + 1] != NULL)
			cJSON_AddStringToObject(a, kv[i], kv[i + 1]);
		else
			cJSON_AddNullToObject(a, kv[i]);
	}
	return p;
}

/* Lists every object under path matching query q into a new array. */
static int
api_list(struct k8s_rt *r, const char *path, const char *q, cJSON **items,
    char *err, size_t errlen)
{
	char full[2048], cont[1024] = "";
	cJSON *page, *arr, *it, *md, *c;
	int st, pages = 0;

	*items = cJSON_CreateArray();
	do {
		snprintf(full, sizeof(full), "%s&limit=" LIST_PAGE "%s%s", q,
		    cont[0] ? "&continue=" : "", cont);
		if (api_call(r, "GET", path, full, NULL, NULL, 0, &st, &page, err,
		    errlen) == -1)
			goto fail;
		arr = cJSON_DetachItemFromObjectCaseSensitive(page, "items");
		while (arr != NULL && (it = cJSON_DetachItemFromArray(arr, 0)) != NULL)
			cJSON_AddItemToArray(*items, it);
		cJSON_Delete(arr);
		cont[0] = '\0';
		md = cJSON_GetObjectItemCaseSensitive(page, "metadata");
		c = cJSON_GetObjectItemCaseSensitive(md, "continue");
		if (cJSON_IsString(c) && c->valuestring[0] != '\0' &&
		    k8s_urlencode(c->valuestring, cont, sizeof(cont)) == -1) {
			snprintf(err, errlen, "list %s: continue token too long", path);
			cJSON_Delete(page);
			goto fail;
		}
		cJSON_Delete(page);
	} while (cont[0] != '\0' && ++pages < 1000);
	return 0;
fail:
	cJSON_Delete(*items);
	*items = NULL;
	return -1;
}

/* ---- the agent (orchestrator/agentc.h) and the proxy admin (egress.h) ---- */

/* How to reach the agent of sandbox id in the pod at ip (token derived). */
static void
api_agent_at(struct k8s_rt *r, const char *id, const char *ip,
    struct rt_agent_addr *out)
{
	char tok[65];

	memset(out, 0, sizeof(*out));
	snprintf(out->host, sizeof(out->host), "%s", ip);
	out->port = (int)r->conf->agent_port;
	api_derive(r, "agent", id, tok);
	snprintf(out->token, sizeof(out->token), "%s", tok);
	explicit_bzero(tok, sizeof(tok));
}

/*
 * One request to the agent of sandbox id at ip: method on path with an
 * optional JSON body. 0 if it answers 200; -1 with err otherwise.
 */
static int
api_agent_call(struct k8s_rt *r, const char *id, const char *ip,
    const char *method, const char *path, const char *body, char *err,
    size_t errlen)
{
	struct rt_agent_addr a;
	struct agentc *c;
	struct buf b;
	int st = 0, rc = -1;

	api_agent_at(r, id, ip, &a);
	buf_init(&b, AGENT_MAX_REPLY);
	if ((c = agentc_open(&a, AGENT_TIMEOUT_MS, err, errlen)) == NULL)
		goto out;
	if (agentc_request(c, method, path, body != NULL ? "application/json" :
	    NULL, body, body != NULL ? strlen(body) : 0, AGENT_TIMEOUT_MS, &st, &b,
	    err, errlen) == 0) {
		if (st == 200)
			rc = 0;
		else
			snprintf(err, errlen, "agent %s answered %d", path, st);
	}
	agentc_close(c);
out:
	explicit_bzero(&a, sizeof(a));
	buf_free(&b);
	return rc;
}

/* A proxy pod's admin endpoint (orchestrator/egress.h); strings borrowed. */
static struct egress_admin
proxy_admin_at(struct k8s_rt *r, const char *ip)
{
	struct egress_admin a = { .host = ip, .port = r->conf->proxy_admin_port,
	    .token = r->admin_token };

	return a;
}

/* Deregisters id from the proxy pod its pod annotations name, if any. */
static void
fleet_detach(struct k8s_rt *r, const char *id, const cJSON *pod_ann)
{
	struct egress_admin a = proxy_admin_at(r, k8s_ann(pod_ann, K8S_ANN_PROXY_IP));

	egress_deregister(&a, id);
}

/*
 * The session labels kept in the annotations ann (the record list() and
 * get() return) into ri->labels; none if absent or unreadable. Free with
 * rt_info_clear().
 */
static void
api_labels(const cJSON *ann, struct rt_info *ri)
{
	if (k8s_labels_decode(k8s_ann(ann, K8S_ANN_LABELS), &ri->labels,
	    &ri->nlabels) == -1) {
		ri->labels = NULL;
		ri->nlabels = 0;
	}
}

/* ---- state ---- */

static void
info_fill(struct k8s_rt *r, struct rt_info *out, const char *id,
    const cJSON *pod, const cJSON *pvc, const cJSON *np)
{
	const cJSON *ann = NULL, *src, *md;
	struct k8s_podview v;
	struct k8s_sbx s;
	char e[128];
	const char *spec;

	(void)r;
	memset(out, 0, sizeof(*out));
	snprintf(out->id, sizeof(out->id), "%s", id);
	src = pvc ? pvc : pod;
	if (src != NULL) {
		md = cJSON_GetObjectItemCaseSensitive(src, "metadata");
		ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
	}
	if ((spec = k8s_ann(ann, K8S_ANN_SPEC)) != NULL &&
	    k8s_sbx_decode(spec, id, &s, e, sizeof(e)) == 0) {
		snprintf(out->image, sizeof(out->image), "%s", s.image);
		k8s_sbx_clear(&s);
	}
	out->created_ms = k8s_ann_ll(ann, K8S_ANN_CREATED);
	api_labels(ann, out);
	if (pod != NULL) {
		k8s_pod_view(pod, &v);
		if (pvc == NULL) {
			out->state = RT_FAILED;
			snprintf(out->reason, sizeof(out->reason),
			    "orphan pod: its workspace claim is gone");
		} else if (v.deleting) {
			out->state = RT_STOPPED;
		} else if (v.failed) {
			out->state = RT_FAILED;
			snprintf(out->reason, sizeof(out->reason), "%s", v.reason);
		} else if (strcmp(v.phase, "Running") == 0 && v.ready && v.ip) {
			out->state = RT_RUNNING;
			out->started_ms = k8s_ann_ll(v.annotations, K8S_ANN_STARTED);
		} else {
			out->state = RT_CREATING;
			snprintf(out->reason, sizeof(out->reason), "%s", v.reason);
		}
	} else if (pvc != NULL) {
		out->state = RT_STOPPED;
	} else {
		out->state = RT_FAILED;
		snprintf(out->reason, sizeof(out->reason), "orphan %s",
		    np ? "network policy" : "object");
	}
}

/* One object of a sandbox (named by namefn from its id); NULL if absent. */
static int
sbx_obj_get(struct k8s_rt *r, const struct api_res *rs,
    void (*namefn)(const char *, char *, size_t), const char *what,
    const char *id, cJSON **out, char *err, size_t errlen)
{
	char name[128], path[512];

	namefn(id, name, sizeof(name));
	api_path(rs, r->ns, name, path, sizeof(path));
	if (api_get(r, path, out, err, errlen) == -1)
		return api_failf(err, errlen, what, name);
	return 0;
}

static int
api_pod_get(struct k8s_rt *r, const char *id, cJSON **pod, char *err, size_t errlen)
{
	return sbx_obj_get(r, &api_pods, k8s_name_pod, "get pod", id, pod, err,
	    errlen);
}

static int
api_pvc_get(struct k8s_rt *r, const char *id, cJSON **pvc, char *err, size_t errlen)
{
	return sbx_obj_get(r, &api_pvcs, k8s_name_pvc, "get claim", id, pvc, err,
	    errlen);
}

/* Waits until the pod is Running, Ready, has an IP and the agent answers. */
static int
wait_ready(struct k8s_rt *r, const char *id, cJSON **podp, char *err,
    size_t errlen)
{
	long long deadline = util_mono_ms() + r->conf->ready_timeout_ms, step = 100;
	struct k8s_podview v;
	cJSON *pod = NULL;
	char aerr[256] = "";

	for (;;) {
		cJSON_Delete(pod);
		pod = NULL;
		if (api_pod_get(r, id, &pod, err, errlen) == -1)
			return -1;
		if (pod == NULL) {
			snprintf(err, errlen, "sandbox %s: pod disappeared while starting", id);
			return -1;
		}
		k8s_pod_view(pod, &v);
		if (v.failed) {
			snprintf(err, errlen, "sandbox %s failed to start: %s", id, v.reason);
			goto fail;
		}
		if (v.deleting) {
			snprintf(err, errlen, "sandbox %s: pod is being deleted", id);
			goto fail;
		}
		if (strcmp(v.phase, "Running") == 0 && v.ready && v.ip != NULL) {
			if (api_agent_call(r, id, v.ip, "GET", "/v1/health", NULL, aerr,
			    sizeof(aerr)) == 0)
				break;
		}
		if (util_mono_ms() >= deadline) {
			snprintf(err, errlen, "sandbox %s not ready after %lld s (phase %s%s%s%s%s)",
			    id, r->conf->ready_timeout_ms / 1000,
			    v.phase[0] ? v.phase : "unknown", v.reason[0] ? ", " : "",
			    v.reason, aerr[0] ? ", agent: " : "", aerr);
			goto fail;
		}
		api_nap(step);
		step = step * 2 > 1000 ? 1000 : step * 2;
	}
	*podp = pod;
	return 0;
fail:
	cJSON_Delete(pod);
	return -1;
}

/* Waits until the pod is gone (after a delete). */
static int
wait_gone(struct k8s_rt *r, const char *id, long long timeout_ms, char *err,
    size_t errlen)
{
	long long deadline = util_mono_ms() + timeout_ms, step = 50;
	cJSON *pod;

	for (;;) {
		if (api_pod_get(r, id, &pod, err, errlen) == -1)
			return -1;
		if (pod == NULL)
			return 0;
		cJSON_Delete(pod);
		if (util_mono_ms() >= deadline) {
			snprintf(err, errlen, "sandbox %s: pod still terminating after %lld s",
			    id, timeout_ms / 1000);
			return -1;
		}
		api_nap(step);
		step = step * 2 > 500 ? 500 : step * 2;
	}
}

static int
delete_pod(struct k8s_rt *r, const char *id, long long grace, char *err,
    size_t errlen)
{
	char name[128], path[512], q[64];

	k8s_name_pod(id, name, sizeof(name));
	api_path(&api_pods, r->ns, name, path, sizeof(path));
	snprintf(q, sizeof(q), "gracePeriodSeconds=%lld", grace);
	if (api_delete(r, path, q, err, errlen) == -1)
		return api_failf(err, errlen, "delete pod", name);
	return 0;
}

/* Creates or replaces the sandbox's NetworkPolicy; proxy NULL: no egress. */
static int
api_netpol_apply(struct k8s_rt *r, const char *id, const char *proxy_pod, char *err,
    size_t errlen)
{
	struct netpol_kv lbl[3] = {
		{ K8S_LBL_MANAGED, K8S_MANAGER },
		{ K8S_LBL_INSTANCE, r->conf->instance },
		{ K8S_LBL_ID, id },
	};
	struct netpol_kv podsel[2] = { { K8S_LBL_ID, id }, { K8S_LBL_ROLE, "sandbox" } };
	struct netpol_kv psel[K8S_MAX_SEL + 1];
	struct netpol_sandbox np;
	char name[128], path[512];
	cJSON *obj;
	size_t i;
	int st, rc = -1;

	memset(&np, 0, sizeof(np));
	k8s_name_netpol(id, name, sizeof(name));
	np.name = name;
	np.ns = r->ns;
	np.labels = lbl;
	np.nlabels = 3;
	np.pod = podsel;
	np.npod = 2;
	if (proxy_pod != NULL) {
		for (i = 0; i < r->nproxy; i++)
			psel[i] = r->proxy[i];
		psel[i].k = K8S_LBL_PROXY_POD;
		psel[i].v = proxy_pod;
		np.proxy = psel;
		np.nproxy = r->nproxy + 1;
		np.proxy_ns = r->pns;
		np.proxy_port = (int)r->conf->proxy_port;
	}
	np.orch_ns = r->ons;
	np.orch = r->orch;
	np.norch = r->norch;
	np.agent_port = (int)r->conf->agent_port;
	np.dns = r->conf->netpol_dns;
	if ((obj = netpol_render_sandbox(&np)) == NULL) {
		snprintf(err, errlen, "cannot render network policy for %s", id);
		return -1;
	}
	api_path(&api_netpols, r->ns, NULL, path, sizeof(path));
	if (api_create(r, path, obj, &st, NULL, err, errlen) == -1) {
		api_failf(err, errlen, "create network policy", name);
		goto out;
	}
	if (st == 409) {
		/* Unconditional update (no resourceVersion). */
		api_path(&api_netpols, r->ns, name, path, sizeof(path));
		if (api_call(r, "PUT", path, API_Q_STRICT, NULL, obj, 0, &st, NULL, err,
		    errlen) == -1) {
			api_failf(err, errlen, "replace network policy", name);
			goto out;
		}
	}
	rc = 0;
out:
	cJSON_Delete(obj);
	return rc;
}

/*
 * *yes = 1 if the sandbox's policy lets it reach a proxy pod, that is, it
 * was attached: the policy outlives a stop, and is the runtime's only
 * record of an attachment (the identity itself is the session labels).
 */
static int
api_netpol_attached(struct k8s_rt *r, const char *id, int *yes, char *err,
    size_t errlen)
{
	const cJSON *rules, *rule, *to, *sel;
	cJSON *np;

	*yes = 0;
	if (sbx_obj_get(r, &api_netpols, k8s_name_netpol, "get network policy", id,
	    &np, err, errlen) == -1)
		return -1;
	rules = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(np,
	    "spec"), "egress");
	cJSON_ArrayForEach(rule, rules) {
		cJSON_ArrayForEach(to, cJSON_GetObjectItemCaseSensitive(rule, "to")) {
			sel = cJSON_GetObjectItemCaseSensitive(to, "podSelector");
			if (k8s_ann(cJSON_GetObjectItemCaseSensitive(sel,
			    "matchLabels"), K8S_LBL_PROXY_POD) != NULL)
				*yes = 1;
		}
	}
	cJSON_Delete(np);
	return 0;
}

/* ---- the proxy fleet ---- */

struct proxy {
	char		 name[254];
	char		 ip[64];
	int		 ready;
	int		 deleting;
	int		 labelled;
	int		 victim;	/* chosen to go on this scale-down */
	long long	 load;
	long long	 oldest;	/* created-ms of its oldest sandbox */
	long long	 cost;		/* pod-deletion-cost (LLONG_MIN: none) */
};

#define ANN_DELETION_COST	"controller.kubernetes.io/pod-deletion-cost"
#define VICTIM_COST		(-1000)	/* below any load */

static int
proxies_list(struct k8s_rt *r, struct proxy **out, size_t *n, char *err,
    size_t errlen)
{
	char path[512];
	cJSON *items, *it;
	struct k8s_podview v;
	struct proxy *p;
	const char *l;
	size_t cnt;

	*out = NULL;
	*n = 0;
	api_path(&api_pods, r->pns, NULL, path, sizeof(path));
	if (api_list(r, path, r->proxy_q, &items, err, errlen) == -1)
		return api_failf(err, errlen, "list proxy pods in", r->pns);
	cnt = (size_t)cJSON_GetArraySize(items);
	p = cnt ? xcalloc(cnt, sizeof(*p)) : NULL;
	cJSON_ArrayForEach(it, items) {
		k8s_pod_view(it, &v);
		if (p == NULL || *n >= cnt)
			break;
		if (v.name == NULL)
			continue;
		snprintf(p[*n].name, sizeof(p[*n].name), "%s", v.name);
		snprintf(p[*n].ip, sizeof(p[*n].ip), "%s", v.ip ? v.ip : "");
		p[*n].ready = !v.deleting && !v.failed && v.ready && v.ip != NULL &&
		    strcmp(v.phase, "Running") == 0;
		p[*n].deleting = v.deleting;
		l = k8s_ann(v.labels, K8S_LBL_PROXY_POD);
		p[*n].labelled = l != NULL && strcmp(l, v.name) == 0;
		p[*n].cost = k8s_ann(v.annotations, ANN_DELETION_COST) ?
		    k8s_ann_ll(v.annotations, ANN_DELETION_COST) : LLONG_MIN;
		p[*n].oldest = LLONG_MAX;
		(*n)++;
	}
	cJSON_Delete(items);
	*out = p;
	return 0;
}

static struct proxy *
proxy_find(struct proxy *p, size_t n, const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < n; i++)
		if (strcmp(p[i].name, name) == 0)
			return &p[i];
	return NULL;
}

/* Labels a proxy pod with its own name so a policy can select just it. */
static int
proxy_label(struct k8s_rt *r, struct proxy *p, char *err, size_t errlen)
{
	cJSON *patch;
	char path[512];
	int st, rc;

	if (p->labelled)
		return 0;
	patch = cJSON_CreateObject();
	cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(
	    patch, "metadata"), "labels"), K8S_LBL_PROXY_POD, p->name);
	api_path(&api_pods, r->pns, p->name, path, sizeof(path));
	rc = api_merge_patch(r, path, patch, &st, err, errlen);
	cJSON_Delete(patch);
	if (rc == -1 || st == 404)
		return api_failf(err, errlen, "label proxy pod", p->name);
	p->labelled = 1;
	return 0;
}

static long long
desired_replicas(struct k8s_rt *r, long long running)
{
	long long per = r->conf->sandboxes_per_proxy, d;

	d = running == 0 ? 0 : (running + per - 1) / per;
	return d < r->conf->proxy_min_replicas ? r->conf->proxy_min_replicas : d;
}

/*
 * Tells the ReplicaSet controller which proxy pods to remove first on a
 * scale-down: controller.kubernetes.io/pod-deletion-cost = sandboxes
 * served, and VICTIM_COST for the pods chosen to go. Each PATCH is applied
 * once it is answered. -1 if a victim's mark did not take (then the caller
 * must not scale down: the controller would choose blindly).
 */
static int
proxy_costs(struct k8s_rt *r, struct proxy *p, size_t n)
{
	char path[512], v[32], err[512];
	const char *kv[2];
	long long want;
	cJSON *patch;
	size_t i;
	int st, rc = 0;

	for (i = 0; i < n; i++) {
		want = p[i].victim ? VICTIM_COST : p[i].load;
		if (p[i].deleting || p[i].cost == want)
			continue;
		snprintf(v, sizeof(v), "%lld", want);
		kv[0] = ANN_DELETION_COST;
		kv[1] = v;
		patch = api_ann_patch(kv, 1);
		api_path(&api_pods, r->pns, p[i].name, path, sizeof(path));
		if (api_merge_patch(r, path, patch, &st, err, sizeof(err)) == -1 ||
		    st == 404) {
			log_warnx("k8s proxy pod=%s deletion cost: %s", p[i].name,
			    st == 404 ? "pod gone" : err);
			if (p[i].victim)
				rc = -1;
		} else
			p[i].cost = want;
		cJSON_Delete(patch);
	}
	return rc;
}

/* a is a better pod to remove than b: not ready, fewer sandboxes, then
 * younger sandboxes (moving one changes its proxy URL, so long-lived
 * sessions stay put), then the name (deterministic). */
static int
more_removable(const struct proxy *a, const struct proxy *b)
{
	if (a->ready != b->ready)
		return !a->ready;
	if (a->load != b->load)
		return a->load < b->load;
	if (a->oldest != b->oldest)
		return a->oldest > b->oldest;
	return strcmp(a->name, b->name) > 0;
}

/* Marks the (live - want) pods to remove; returns how many. */
static size_t
pick_victims(struct proxy *p, size_t n, long long want)
{
	size_t i, live = 0, k = 0;
	struct proxy *best;

	for (i = 0; i < n; i++)
		if (!p[i].deleting)
			live++;
	while ((long long)(live - k) > want) {
		best = NULL;
		for (i = 0; i < n; i++)
			if (!p[i].deleting && !p[i].victim &&
			    (best == NULL || more_removable(&p[i], best)))
				best = &p[i];
		if (best == NULL)
			break;
		best->victim = 1;
		k++;
	}
	return k;
}

static int
is_victim(const struct proxy *p, size_t n, const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < n; i++)
		if (p[i].victim && strcmp(p[i].name, name) == 0)
			return 1;
	return 0;
}

/* Sets the proxy Deployment's replicas through the scale subresource. */
static int
scale_to(struct k8s_rt *r, long long want, char *err, size_t errlen)
{
	char path[512];
	cJSON *sc = NULL, *patch;
	const cJSON *spec, *rep;
	int st, rc = -1;
	long long have = -1;

	snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/deployments/%s/scale",
	    r->pns, r->conf->proxy_deployment);
	if (api_call(r, "GET", path, NULL, NULL, NULL, 0, &st, &sc, err, errlen) == -1)
		return api_failf(err, errlen, "get scale of deployment",
		    r->conf->proxy_deployment);
	spec = cJSON_GetObjectItemCaseSensitive(sc, "spec");
	rep = cJSON_GetObjectItemCaseSensitive(spec, "replicas");
	if (cJSON_IsNumber(rep))
		have = (long long)rep->valuedouble;
	else
		have = 0;
	cJSON_Delete(sc);
	if (have == want)
		return 0;
	patch = cJSON_CreateObject();
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(patch, "spec"), "replicas",
	    (double)want);
	if (api_call(r, "PATCH", path, API_Q_STRICT, API_CT_MERGE, patch, 0, &st, NULL, err,
	    errlen) == -1) {
		api_failf(err, errlen, "scale deployment", r->conf->proxy_deployment);
		goto out;
	}
	log_info("k8s proxy deployment=%s/%s replicas=%lld (was %lld)", r->pns,
	    r->conf->proxy_deployment, want, have);
	rc = 0;
out:
	cJSON_Delete(patch);
	return rc;
}

/* Our sandbox pods that count as running (not deleting, not failed). */
static int
api_sandbox_pods(struct k8s_rt *r, cJSON **items, char *err, size_t errlen)
{
	char path[512];

	api_path(&api_pods, r->ns, NULL, path, sizeof(path));
	if (api_list(r, path, r->sel_q, items, err, errlen) == -1)
		return api_failf(err, errlen, "list sandbox pods in", r->ns);
	return 0;
}

static void
count_load(cJSON *pods, struct proxy *p, size_t np, long long *running)
{
	struct k8s_podview v;
	struct proxy *x;
	long long born;
	cJSON *it;

	*running = 0;
	cJSON_ArrayForEach(it, pods) {
		k8s_pod_view(it, &v);
		if (v.deleting || v.failed)
			continue;
		(*running)++;
		if ((x = proxy_find(p, np, k8s_ann(v.annotations, K8S_ANN_PROXY))) != NULL) {
			x->load++;
			born = k8s_ann_ll(v.annotations, K8S_ANN_CREATED);
			if (born < x->oldest)
				x->oldest = born;
		}
	}
}

/* The ready pod with the fewest sandboxes, not one of avoid's victims. */
static struct proxy *
least_loaded(struct proxy *p, size_t n, const struct proxy *avoid,
    size_t navoid)
{
	struct proxy *best = NULL;
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i].ready && !is_victim(avoid, navoid, p[i].name) &&
		    (best == NULL || p[i].load < best->load))
			best = &p[i];
	return best;
}

/*
 * The proxy env of sandbox id served by the proxy pod at proxy_ip, as
 * "K=V\n" lines (orchestrator/egress.h): its credential, NO_PROXY, and the
 * CA paths when a CA ConfigMap is mounted. 0, or -1 with err if it does
 * not fit in out.
 */
static int
proxy_env(struct k8s_rt *r, const char *id, const char *proxy_ip, char *out,
    size_t outlen, char *err, size_t errlen)
{
	char sec[65], hostport[128];
	const char *ca = NULL;
	int rc;

	if (r->conf->proxy_ca_configmap != NULL && r->conf->proxy_ca_configmap[0])
		ca = K8S_PROXY_CA_DIR "/ca.crt";
	snprintf(hostport, sizeof(hostport), strchr(proxy_ip, ':') ?
	    "[%s]:%lld" : "%s:%lld", proxy_ip, r->conf->proxy_port);
	api_derive(r, "proxy", id, sec);
	rc = egress_proxy_env(id, sec, hostport, K8S_NO_PROXY, ca, out, outlen);
	explicit_bzero(sec, sizeof(sec));
	if (rc == -1)
		snprintf(err, errlen, "sandbox %s: the proxy env needs more than "
		    "%zu bytes", id, outlen);
	return rc;
}

/* {"set":{K:V,...}}, the agent's /v1/env request, from "K=V\n" lines. */
static cJSON *
env_set_body(const char *lines)
{
	cJSON *body = cJSON_CreateObject(), *set;
	const char *l, *v;
	size_t n, klen;
	char *k, *val;

	set = cJSON_AddObjectToObject(body, "set");
	for (l = lines; *l != '\0'; l += n + (l[n] == '\n')) {
		n = strcspn(l, "\n");
		if ((v = util_kv_find(l, n, &klen)) == NULL)
			continue;
		k = xstrndup(l, klen);
		val = xstrndup(v, n - klen - 1);
		cJSON_AddStringToObject(set, k, val);
		explicit_bzero(val, strlen(val));	/* a credential */
		free(val);
		free(k);
	}
	return body;
}

/*
 * Pushes the proxy env lines to the agent of sandbox id at pod_ip: the one
 * place the runtime sets a shell's env, for the paths after which no core
 * call does (a fleet move; k8sctl attach through runtime_k8s_push_env).
 */
static int
api_agent_push_env(struct k8s_rt *r, const char *id, const char *pod_ip,
    const char *env, char *err, size_t errlen)
{
	cJSON *body = env_set_body(env);
	char *txt;
	int rc;

	if ((txt = cJSON_PrintUnformatted(body)) == NULL)
		abort();
	cJSON_Delete(body);
	rc = api_agent_call(r, id, pod_ip, "POST", "/v1/env", txt, err, errlen);
	explicit_bzero(txt, strlen(txt));
	free(txt);
	return rc;
}

/*
 * Assignment, step 1: the proxy pod for a sandbox now on current (NULL:
 * none): current while it is ready and not one of avoid's victims, else
 * the least-loaded ready pod. Without avoid, scales the fleet up and waits
 * up to proxy_wait when no pod is ready; with avoid, fails instead. 0 with
 * *px the listing (caller frees) and *best in it, or -1 with err.
 */
static int
proxy_pick(struct k8s_rt *r, const char *current, const struct proxy *avoid,
    size_t navoid, struct proxy **px, struct proxy **best, char *err,
    size_t errlen)
{
	long long running, deadline = util_mono_ms() + r->conf->proxy_wait_ms;
	cJSON *pods = NULL;
	size_t npx = 0;
	int rc = -1;

	*px = NULL;
	for (;;) {
		free(*px);
		*px = NULL;
		cJSON_Delete(pods);
		pods = NULL;
		if (proxies_list(r, px, &npx, err, errlen) == -1 ||
		    api_sandbox_pods(r, &pods, err, errlen) == -1)
			goto out;
		count_load(pods, *px, npx, &running);
		/* Stay where we are while that pod is ready. */
		if ((*best = proxy_find(*px, npx, current)) != NULL &&
		    (*best)->ready && !is_victim(avoid, navoid, current)) {
			(*best)->load--;	/* counted us already */
			break;
		}
		if ((*best = least_loaded(*px, npx, avoid, navoid)) != NULL)
			break;
		if (navoid > 0) {
			snprintf(err, errlen, "no other ready egress-proxy pod");
			goto out;
		}
		if (scale_to(r, desired_replicas(r, running > 0 ? running : 1), err,
		    errlen) == -1)
			goto out;
		if (util_mono_ms() >= deadline) {
			snprintf(err, errlen, "no ready egress-proxy pod in %s after %lld s",
			    r->pns, r->conf->proxy_wait_ms / 1000);
			goto out;
		}
		api_nap(250);
	}
	rc = 0;
out:
	cJSON_Delete(pods);
	if (rc == -1) {
		free(*px);
		*px = NULL;
	}
	return rc;
}

/*
 * Assignment, step 2: registers sandbox id (pod IP pod_ip) at proxy pod p,
 * named by labels (orchestrator/egress.h), with its derived credential,
 * good only from its pod IP.
 */
static int
proxy_register(struct k8s_rt *r, const struct proxy *p, const char *id,
    const char *pod_ip, const struct rt_kv *labels, size_t nlabels, char *err,
    size_t errlen)
{
	struct egress_admin a = proxy_admin_at(r, p->ip);
	const char *ips[1] = { pod_ip };
	struct egress_reg reg;
	char sec[65];
	int rc;

	api_derive(r, "proxy", id, sec);
	memset(&reg, 0, sizeof(reg));
	reg.id = id;
	reg.labels = labels;
	reg.nlabels = nlabels;
	reg.secret = sec;
	reg.listen_fd = -1;
	reg.client_ips = ips;
	reg.nclient_ips = 1;
	rc = egress_register(&a, &reg, err, errlen);
	explicit_bzero(sec, sizeof(sec));
	if (rc == -1)
		return api_failf(err, errlen, "register sandbox with proxy pod", p->name);
	return 0;
}

/* Assignment, step 3: the assignment on the sandbox's pod, which is where
 * the fleet sweep reads it back (and what marks the pod as attached). */
static int
assignment_record(struct k8s_rt *r, const char *id, const struct proxy *p,
    char *err, size_t errlen)
{
	const char *kv[4] = { K8S_ANN_PROXY, p->name, K8S_ANN_PROXY_IP, p->ip };
	char name[128], path[512];
	cJSON *body = api_ann_patch(kv, 2);
	int st, rc;

	k8s_name_pod(id, name, sizeof(name));
	api_path(&api_pods, r->ns, name, path, sizeof(path));
	rc = api_merge_patch(r, path, body, &st, err, errlen);
	cJSON_Delete(body);
	if (rc == 0 && st == 404) {
		snprintf(err, errlen, "sandbox %s: pod gone while attaching", id);
		rc = -1;
	}
	return rc;
}

/*
 * Assigns a sandbox (whose pod is running at pod_ip) to the least-loaded
 * ready proxy pod, scaling the fleet up first if there is none: registers
 * it there under labels, records the assignment on the pod, lets the
 * policy reach that pod only, and writes the proxy env to env_out. With
 * avoid (a proxy list with victims marked), it moves the sandbox off those
 * pods and fails rather than scale or wait. Caller holds fleet_mtx.
 */
static int
assign_locked(struct k8s_rt *r, const char *id, const char *pod_ip,
    const char *current, const struct rt_kv *labels, size_t nlabels,
    const struct proxy *avoid, size_t navoid, char *env_out, size_t envlen,
    char *err, size_t errlen)
{
	struct proxy *px = NULL, *best = NULL;
	int rc = -1;

	if (proxy_pick(r, current, avoid, navoid, &px, &best, err, errlen) == -1 ||
	    proxy_label(r, best, err, errlen) == -1 ||
	    proxy_register(r, best, id, pod_ip, labels, nlabels, err, errlen) == -1)
		goto out;
	best->load++;
	if (assignment_record(r, id, best, err, errlen) == -1 ||
	    api_netpol_apply(r, id, best->name, err, errlen) == -1 ||
	    proxy_env(r, id, best->ip, env_out, envlen, err, errlen) == -1)
		goto out;
	log_info("sandbox=%s proxy=%s/%s ip=%s load=%lld", id, r->pns, best->name,
	    best->ip, best->load);
	rc = 0;
out:
	free(px);
	return rc;
}

/*
 * A fleet move: re-attaches the running sandbox pod v under the session
 * labels on it (off avoid's victims when given) and pushes the new env to
 * its agent, since no core call follows a move the fleet makes on its own
 * thread. Caller holds fleet_mtx. 0, or -1 with err.
 */
static int
fleet_move_locked(struct k8s_rt *r, const struct k8s_podview *v,
    const struct proxy *avoid, size_t navoid, char *err, size_t errlen)
{
	char env[K8S_ENV_MAX], e2[256];
	struct rt_info li;
	int rc;

	memset(&li, 0, sizeof(li));
	api_labels(v->annotations, &li);
	rc = assign_locked(r, v->id, v->ip, NULL, li.labels, li.nlabels, avoid,
	    navoid, env, sizeof(env), err, errlen);
	if (rc == 0 && api_agent_push_env(r, v->id, v->ip, env, e2, sizeof(e2)) == -1)
		log_warnx("sandbox=%s could not push proxy env to the agent: %s",
		    v->id, e2);
	explicit_bzero(env, sizeof(env));
	rt_info_clear(&li);
	return rc;
}

struct k8s_client *
runtime_k8s_client(struct runtime *rt)
{
	return ((struct k8s_rt *)rt->impl)->cl;
}

/* Moves the attached sandboxes of the victim pods to pods that stay. */
static void
move_off_victims(struct k8s_rt *r, cJSON *pods, const struct proxy *px,
    size_t npx)
{
	struct k8s_podview v;
	const char *cur;
	char e2[512];
	cJSON *it;

	cJSON_ArrayForEach(it, pods) {
		k8s_pod_view(it, &v);
		cur = k8s_ann(v.annotations, K8S_ANN_PROXY);
		if (v.deleting || v.failed || v.id == NULL || !id_sandbox_valid(v.id) ||
		    v.ip == NULL || !is_victim(px, npx, cur))
			continue;
		log_info("sandbox=%s proxy=%s goes on scale-down; moving", v.id, cur);
		if (fleet_move_locked(r, &v, px, npx, e2, sizeof(e2)) == -1)
			log_warnx("sandbox=%s move failed (the next sweep "
			    "re-assigns it): %s", v.id, e2);
	}
}

/*
 * Sweep, scale-down step: picks the pods to remove (down to want), moves
 * their sandboxes to the pods that stay, then lists again (*pods and *px
 * are replaced) with the victims marked, except those a sandbox could not
 * leave; *want grows to cover the pods kept. 0, or -1 with err.
 */
static int
plan_scale_down(struct k8s_rt *r, cJSON **pods, struct proxy **px,
    size_t *npx, long long *want, char *err, size_t errlen)
{
	struct proxy *old = *px;
	size_t nold = *npx, i;
	long long running, keep = 0;

	move_off_victims(r, *pods, old, nold);
	/* Count again: the moves changed the loads. */
	cJSON_Delete(*pods);
	*pods = NULL;
	*px = NULL;
	if (api_sandbox_pods(r, pods, err, errlen) == -1 ||
	    proxies_list(r, px, npx, err, errlen) == -1) {
		free(old);
		return -1;
	}
	count_load(*pods, *px, *npx, &running);
	for (i = 0; i < *npx; i++) {
		if ((*px)[i].deleting)
			continue;
		(*px)[i].victim = is_victim(old, nold, (*px)[i].name);
		if ((*px)[i].victim && (*px)[i].load > 0) {
			/* A sandbox could not move: keep its pod until the
			 * next sweep. */
			log_warnx("k8s proxy pod=%s kept: %lld sandboxes could "
			    "not move", (*px)[i].name, (*px)[i].load);
			(*px)[i].victim = 0;
		}
		if (!(*px)[i].victim)
			keep++;
	}
	free(old);
	if (keep > *want)
		*want = keep;
	return 0;
}

/* Sweep, last step: re-assigns the attached sandboxes whose proxy pod went
 * away or is not ready. */
static void
reassign_orphans(struct k8s_rt *r, cJSON *pods, struct proxy *px, size_t npx)
{
	struct k8s_podview v;
	struct proxy *cur;
	const char *was;
	char err[512];
	cJSON *it;

	cJSON_ArrayForEach(it, pods) {
		k8s_pod_view(it, &v);
		if (v.deleting || v.failed || v.id == NULL || !id_sandbox_valid(v.id) ||
		    v.ip == NULL || strcmp(v.phase, "Running") != 0)
			continue;
		if ((was = k8s_ann(v.annotations, K8S_ANN_PROXY)) == NULL)
			continue;	/* never attached (e.g. warm) */
		cur = proxy_find(px, npx, was);
		if (cur != NULL && cur->ready)
			continue;
		log_info("sandbox=%s proxy=%s gone; re-assigning", v.id, was);
		if (fleet_move_locked(r, &v, NULL, 0, err, sizeof(err)) == -1)
			log_warnx("sandbox=%s re-assign failed: %s", v.id, err);
	}
}

/*
 * The fleet sweep (caller holds fleet_mtx): scale the Deployment to the
 * running sandboxes and re-assign sandboxes whose proxy pod is gone or not
 * ready. A scale-down first picks the pods to remove, moves their
 * sandboxes to the pods that stay, and marks them with the lowest
 * pod-deletion-cost; only once those marks are applied is the scale
 * patched, so the controller removes those pods and no sandbox is left
 * without a proxy. (Should the controller still choose others, e.g. from
 * a stale cache, the re-assignment below or in the next sweep covers it.)
 */
static int
fleet_sync_locked(struct k8s_rt *r, int reassign, char *err, size_t errlen)
{
	struct proxy *px = NULL;
	size_t npx = 0, i;
	cJSON *pods = NULL;
	long long running, want;
	char e2[512];
	int rc = -1;

	if (api_sandbox_pods(r, &pods, err, errlen) == -1 ||
	    proxies_list(r, &px, &npx, err, errlen) == -1)
		goto out;
	count_load(pods, px, npx, &running);
	want = desired_replicas(r, running);
	/* (To zero, every pod goes: nothing to choose or move.) */
	if (want > 0 && pick_victims(px, npx, want) > 0 &&
	    plan_scale_down(r, &pods, &px, &npx, &want, err, errlen) == -1)
		goto out;
	if (proxy_costs(r, px, npx) == -1) {
		snprintf(err, errlen, "not scaling down: the pod-deletion-cost "
		    "of the pods to remove could not be set");
		goto out;
	}
	if (scale_to(r, want, err, errlen) == -1)
		goto out;
	for (i = 0; i < npx; i++)
		if (px[i].ready && proxy_label(r, &px[i], e2, sizeof(e2)) == -1)
			log_warnx("k8s %s", e2);
	if (reassign)
		reassign_orphans(r, pods, px, npx);
	rc = 0;
out:
	cJSON_Delete(pods);
	free(px);
	return rc;
}

int
runtime_k8s_fleet_sync(struct runtime *rt, char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	int rc;

	pthread_mutex_lock(&r->fleet_mtx);
	rc = fleet_sync_locked(r, 1, err, errlen);
	pthread_mutex_unlock(&r->fleet_mtx);
	return rc;
}

/* Scales to what runs now; errors are logged (the fleet thread retries). */
static void
fleet_rescale(struct k8s_rt *r)
{
	char err[512];

	pthread_mutex_lock(&r->fleet_mtx);
	if (fleet_sync_locked(r, 0, err, sizeof(err)) == -1)
		log_warnx("k8s %s", err);
	pthread_mutex_unlock(&r->fleet_mtx);
}

/*
 * Assigns running sandbox id (pod IP pod_ip, now on proxy pod current or
 * NULL) to a proxy pod under labels, and writes the proxy env it must get
 * to env_out, which the caller pushes (or leaves to the core). 0, or -1
 * with err.
 */
static int
fleet_assign(struct k8s_rt *r, const char *id, const char *pod_ip,
    const char *current, const struct rt_kv *labels, size_t nlabels,
    char *env_out, size_t envlen, char *err, size_t errlen)
{
	int rc;

	pthread_mutex_lock(&r->fleet_mtx);
	rc = assign_locked(r, id, pod_ip, current, labels, nlabels, NULL, 0,
	    env_out, envlen, err, errlen);
	pthread_mutex_unlock(&r->fleet_mtx);
	return rc;
}

/* The fleet thread: a sweep every fleet_interval until fleet_stop(). */
static void *
fleet_main(void *arg)
{
	struct k8s_rt *r = arg;
	struct timespec ts;
	char err[512];
	int rc;

	pthread_mutex_lock(&r->stop_mtx);
	while (!r->stopping) {
		util_deadline(&ts, r->conf->fleet_interval_ms);
		ign(pthread_cond_timedwait(&r->stop_cv, &r->stop_mtx, &ts));
		if (r->stopping)
			break;
		pthread_mutex_unlock(&r->stop_mtx);
		pthread_mutex_lock(&r->fleet_mtx);
		rc = fleet_sync_locked(r, 1, err, sizeof(err));
		pthread_mutex_unlock(&r->fleet_mtx);
		if (rc == -1)
			log_warnx("k8s fleet sync: %s", err);
		pthread_mutex_lock(&r->stop_mtx);
	}
	pthread_mutex_unlock(&r->stop_mtx);
	return NULL;
}

/* Starts the fleet thread (when fleet_interval is set). 0 or -1 with err. */
static int
fleet_start(struct k8s_rt *r, char *err, size_t errlen)
{
	if (r->conf->fleet_interval_ms <= 0)
		return 0;
	if (pthread_create(&r->thr, NULL, fleet_main, r) != 0) {
		snprintf(err, errlen, "pthread_create failed");
		return -1;
	}
	r->thr_started = 1;
	return 0;
}

/* Stops and joins the fleet thread, if it runs. */
static void
fleet_stop(struct k8s_rt *r)
{
	if (!r->thr_started)
		return;
	pthread_mutex_lock(&r->stop_mtx);
	r->stopping = 1;
	pthread_cond_signal(&r->stop_cv);
	pthread_mutex_unlock(&r->stop_mtx);
	pthread_join(r->thr, NULL);
	r->thr_started = 0;
}

/* ---- runtime ops ---- */

static int
k8s_destroy(struct runtime *rt, const char *id, char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	char name[128], path[512];
	cJSON *pod = NULL;
	struct k8s_podview v;

	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "invalid sandbox id");
		return -1;
	}
	if (api_pod_get(r, id, &pod, err, errlen) == -1)
		return -1;
	if (pod != NULL) {
		k8s_pod_view(pod, &v);
		fleet_detach(r, id, v.annotations);
		cJSON_Delete(pod);
		if (delete_pod(r, id, 0, err, errlen) == -1)
			return -1;
	}
	k8s_name_netpol(id, name, sizeof(name));
	api_path(&api_netpols, r->ns, name, path, sizeof(path));
	if (api_delete(r, path, NULL, err, errlen) == -1)
		return api_failf(err, errlen, "delete network policy", name);
	k8s_name_secret(id, name, sizeof(name));
	api_path(&api_secrets, r->ns, name, path, sizeof(path));
	if (api_delete(r, path, NULL, err, errlen) == -1)
		return api_failf(err, errlen, "delete secret", name);
	k8s_name_pvc(id, name, sizeof(name));
	api_path(&api_pvcs, r->ns, name, path, sizeof(path));
	if (api_delete(r, path, "propagationPolicy=Background", err, errlen) == -1)
		return api_failf(err, errlen, "delete claim", name);
	log_info("sandbox=%s destroyed", id);
	fleet_rescale(r);
	return 0;
}

/* Fills the spec defaults from the configuration. */
static void
sbx_defaults(struct k8s_rt *r, struct k8s_sbx *s)
{
	if (s->mem == 0)
		s->mem = r->conf->mem_bytes;
	if (s->cpu == 0)
		s->cpu = r->conf->cpu_millis;
	if (s->disk == 0)
		s->disk = r->conf->disk_bytes;
}

static int
pod_create(struct k8s_rt *r, const struct k8s_sbx *s, const char *labels_json,
    const char *egress_json, long long created_ms, char *err, size_t errlen)
{
	char path[512], name[128];
	cJSON *pod;
	int st, rc;

	pod = k8s_build_pod(&r->par, s, labels_json, egress_json, created_ms,
	    util_unix_ms());
	api_path(&api_pods, r->ns, NULL, path, sizeof(path));
	rc = api_create(r, path, pod, &st, NULL, err, errlen);
	cJSON_Delete(pod);
	k8s_name_pod(s->id, name, sizeof(name));
	if (rc == -1)
		return api_failf(err, errlen, "create pod", name);
	if (st == 409) {
		snprintf(err, errlen, "sandbox %s already has a pod", s->id);
		return -1;
	}
	return 0;
}

static int
k8s_create(struct runtime *rt, const struct rt_spec *sp, struct rt_info *out,
    char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	struct k8s_sbx s;
	cJSON *obj = NULL, *resp = NULL, *pod = NULL;
	const cJSON *uid;
	char path[512], name[128], tok[65], *labels = NULL, e2[256];
	long long created = util_unix_ms();
	int st, rc = -1, made = 0;

	memset(out, 0, sizeof(*out));
	if (k8s_sbx_from_spec(&s, sp, r->conf->image, err, errlen) == -1)
		return -1;
	sbx_defaults(r, &s);
	if (s.use_kata && (r->conf->kata_runtime_class == NULL ||
	    r->conf->kata_runtime_class[0] == '\0')) {
		snprintf(err, errlen, "use_kata: no kata runtime class is configured "
		    "(kubernetes.kata_runtime_class)");
		goto out;
	}
	if (sp->nlabels > K8S_MAX_LABELS) {
		snprintf(err, errlen, "too many labels (max %d)", K8S_MAX_LABELS);
		goto out;
	}
	labels = k8s_labels_encode(sp->labels, sp->nlabels);
	if (strlen(labels) > K8S_MAX_ANN) {
		snprintf(err, errlen, "labels too large (max %zu bytes)", K8S_MAX_ANN);
		goto out;
	}

	/* 1. The workspace claim: the session record. */
	obj = k8s_build_pvc(&r->par, &s, labels, NULL, created);
	api_path(&api_pvcs, r->ns, NULL, path, sizeof(path));
	k8s_name_pvc(s.id, name, sizeof(name));
	if (api_create(r, path, obj, &st, &resp, err, errlen) == -1) {
		api_failf(err, errlen, "create claim", name);
		goto out;
	}
	if (st == 409) {
		snprintf(err, errlen, "sandbox %s already exists", s.id);
		goto out;
	}
	made = 1;
	cJSON_Delete(obj);
	uid = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(resp,
	    "metadata"), "uid");

	/* 2. The agent token, garbage-collected with the claim. */
	api_derive(r, "agent", s.id, tok);
	obj = k8s_build_secret(&r->par, s.id, tok, cJSON_IsString(uid) ?
	    uid->valuestring : NULL);
	explicit_bzero(tok, sizeof(tok));
	api_path(&api_secrets, r->ns, NULL, path, sizeof(path));
	k8s_name_secret(s.id, name, sizeof(name));
	rc = api_create(r, path, obj, &st, NULL, err, errlen);
	cJSON_Delete(obj);
	obj = NULL;
	if (rc == -1) {
		api_failf(err, errlen, "create secret", name);
		goto out;
	}
	rc = -1;

	/* 3. The policy (no egress until attached), then the pod. */
	if (api_netpol_apply(r, s.id, NULL, err, errlen) == -1 ||
	    pod_create(r, &s, labels, NULL, created, err, errlen) == -1 ||
	    wait_ready(r, s.id, &pod, err, errlen) == -1)
		goto out;
	info_fill(r, out, s.id, pod, resp, NULL);
	log_info("sandbox=%s created image=%s runtimeClass=%s", s.id, s.image,
	    s.use_kata ? r->conf->kata_runtime_class : r->conf->runtime_class);
	rc = 0;
out:
	if (rc == -1 && made) {
		/* The caller gets nothing half-made. */
		if (k8s_destroy(rt, s.id, e2, sizeof(e2)) == -1)
			log_warnx("sandbox=%s cleanup after failed create: %s", s.id, e2);
	}
	cJSON_Delete(obj);
	cJSON_Delete(resp);
	cJSON_Delete(pod);
	free(labels);
	k8s_sbx_clear(&s);
	if (rc == 0)
		fleet_rescale(r);
	return rc;
}

static int
k8s_start(struct runtime *rt, const char *id, char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	cJSON *pvc = NULL, *pod = NULL;
	const cJSON *ann;
	struct k8s_podview v;
	struct k8s_sbx s;
	struct rt_info li;
	char env[K8S_ENV_MAX];
	int attached, rc = -1;

	memset(&s, 0, sizeof(s));
	memset(&li, 0, sizeof(li));
	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "invalid sandbox id");
		return -1;
	}
	if (api_pvc_get(r, id, &pvc, err, errlen) == -1)
		return -1;
	if (pvc == NULL) {
		snprintf(err, errlen, "sandbox %s not found", id);
		return -1;
	}
	ann = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pvc,
	    "metadata"), "annotations");
	if (api_pod_get(r, id, &pod, err, errlen) == -1)
		goto out;
	if (pod != NULL) {
		k8s_pod_view(pod, &v);
		if (!v.deleting && !v.failed) {
			/* Already there: wait for it rather than start twice. */
			cJSON_Delete(pod);
			pod = NULL;
			rc = wait_ready(r, id, &pod, err, errlen);
			goto out;
		}
		/* A failed or evicted pod is replaced on the same claim. */
		log_info("sandbox=%s replacing pod (%s)", id,
		    v.failed ? v.reason : "terminating");
		fleet_detach(r, id, v.annotations);
		cJSON_Delete(pod);
		pod = NULL;
		if (delete_pod(r, id, 0, err, errlen) == -1 ||
		    wait_gone(r, id, 60000, err, errlen) == -1)
			goto out;
	}
	if (k8s_sbx_decode(k8s_ann(ann, K8S_ANN_SPEC), id, &s, err, errlen) == -1 ||
	    api_netpol_attached(r, id, &attached, err, errlen) == -1)
		goto out;
	sbx_defaults(r, &s);
	if (pod_create(r, &s, k8s_ann(ann, K8S_ANN_LABELS), NULL,
	    k8s_ann_ll(ann, K8S_ANN_CREATED), err, errlen) == -1 ||
	    api_netpol_apply(r, id, NULL, err, errlen) == -1 ||
	    wait_ready(r, id, &pod, err, errlen) == -1)
		goto out;
	if (attached) {
		/*
		 * It was attached: give it a proxy again, named by the session
		 * labels the new pod carries (those of the claim). The env is
		 * not pushed here: the core attaches after a start and pushes
		 * what attach_egress returns.
		 */
		k8s_pod_view(pod, &v);
		api_labels(v.annotations, &li);
		rc = fleet_assign(r, id, v.ip, NULL, li.labels, li.nlabels, env,
		    sizeof(env), err, errlen);
		explicit_bzero(env, sizeof(env));
		if (rc == -1)
			goto out;
	}
	log_info("sandbox=%s started", id);
	rc = 0;
out:
	rt_info_clear(&li);
	k8s_sbx_clear(&s);
	cJSON_Delete(pvc);
	cJSON_Delete(pod);
	fleet_rescale(r);
	return rc;
}

static int
k8s_stop(struct runtime *rt, const char *id, char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	cJSON *pod = NULL, *pvc = NULL;
	struct k8s_podview v;

	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "invalid sandbox id");
		return -1;
	}
	if (api_pod_get(r, id, &pod, err, errlen) == -1)
		return -1;
	if (pod == NULL) {
		if (api_pvc_get(r, id, &pvc, err, errlen) == -1)
			return -1;
		if (pvc == NULL) {
			snprintf(err, errlen, "sandbox %s not found", id);
			return -1;
		}
		cJSON_Delete(pvc);
		return 0;
	}
	k8s_pod_view(pod, &v);
	fleet_detach(r, id, v.annotations);
	cJSON_Delete(pod);
	if (delete_pod(r, id, r->conf->stop_grace_s, err, errlen) == -1 ||
	    wait_gone(r, id, (r->conf->stop_grace_s + 60) * 1000, err, errlen) == -1)
		return -1;
	/* The policy stays (it allows nothing without a pod); the proxy
	 * assignment went with the pod. */
	log_info("sandbox=%s stopped", id);
	fleet_rescale(r);
	return 0;
}

static int
k8s_get(struct runtime *rt, const char *id, struct rt_info *out, char *err,
    size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	cJSON *pod = NULL, *pvc = NULL;

	memset(out, 0, sizeof(*out));
	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	if (api_pod_get(r, id, &pod, err, errlen) == -1 ||
	    api_pvc_get(r, id, &pvc, err, errlen) == -1) {
		cJSON_Delete(pod);
		return -1;
	}
	if (pod == NULL && pvc == NULL) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	info_fill(r, out, id, pod, pvc, NULL);
	cJSON_Delete(pod);
	cJSON_Delete(pvc);
	return 0;
}

struct ent {
	const char	*id;
	const cJSON	*pod, *pvc, *np;
};

static struct ent *
ent_get(struct ent **arr, size_t *n, size_t *cap, const char *id)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp((*arr)[i].id, id) == 0)
			return &(*arr)[i];
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*arr = xreallocarray(*arr, *cap, sizeof(**arr));
	}
	memset(&(*arr)[*n], 0, sizeof(**arr));
	(*arr)[*n].id = id;
	return &(*arr)[(*n)++];
}

static const char *
obj_id(const cJSON *o)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(o, "metadata"), "labels");
	const char *id = k8s_ann(l, K8S_LBL_ID);

	return id != NULL && id_sandbox_valid(id) ? id : NULL;
}

static int
k8s_list(struct runtime *rt, struct rt_info **out, size_t *n, char *err,
    size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	cJSON *pods = NULL, *nps = NULL, *pvcs = NULL, *it;
	struct ent *e = NULL, *x;
	size_t ne = 0, cap = 0, i;
	char path[512];
	const char *id;
	int rc = -1;

	*out = NULL;
	*n = 0;
	/* Pods and policies first: a pod's claim is made before it, so any
	 * pod seen here has its claim in the later list unless it is going. */
	if (api_sandbox_pods(r, &pods, err, errlen) == -1)
		goto out;
	api_path(&api_netpols, r->ns, NULL, path, sizeof(path));
	if (api_list(r, path, r->sel_q, &nps, err, errlen) == -1) {
		api_failf(err, errlen, "list network policies in", r->ns);
		goto out;
	}
	api_path(&api_pvcs, r->ns, NULL, path, sizeof(path));
	if (api_list(r, path, r->sel_q, &pvcs, err, errlen) == -1) {
		api_failf(err, errlen, "list claims in", r->ns);
		goto out;
	}
	cJSON_ArrayForEach(it, pvcs)
		if ((id = obj_id(it)) != NULL)
			ent_get(&e, &ne, &cap, id)->pvc = it;
	cJSON_ArrayForEach(it, pods)
		if ((id = obj_id(it)) != NULL)
			ent_get(&e, &ne, &cap, id)->pod = it;
	cJSON_ArrayForEach(it, nps)
		if ((id = obj_id(it)) != NULL)
			ent_get(&e, &ne, &cap, id)->np = it;
	if (ne > 0)
		*out = xcalloc(ne, sizeof(**out));
	for (i = 0; i < ne; i++) {
		x = &e[i];
		info_fill(r, &(*out)[i], x->id, x->pod, x->pvc, x->np);
	}
	*n = ne;
	rc = 0;
out:
	free(e);
	cJSON_Delete(pods);
	cJSON_Delete(nps);
	cJSON_Delete(pvcs);
	return rc;
}

/*
 * Writes the session labels lj (JSON) to the claim, then the pod (if it
 * exists). -1 with err "not found" when the claim is gone.
 */
static int
labels_write(struct k8s_rt *r, const char *id, const char *lj, char *err,
    size_t errlen)
{
	char name[128], path[512];
	const char *pair[2];
	cJSON *patch;
	int st, rc = -1;

	if (strlen(lj) > K8S_MAX_ANN) {
		snprintf(err, errlen, "labels too large (max %zu bytes)", K8S_MAX_ANN);
		return -1;
	}
	pair[0] = K8S_ANN_LABELS;
	pair[1] = lj;
	patch = api_ann_patch(pair, 1);
	k8s_name_pvc(id, name, sizeof(name));
	api_path(&api_pvcs, r->ns, name, path, sizeof(path));
	if (api_merge_patch(r, path, patch, &st, err, errlen) == -1) {
		api_failf(err, errlen, "label claim", name);
		goto out;
	}
	if (st == 404) {
		snprintf(err, errlen, "not found");
		goto out;
	}
	k8s_name_pod(id, name, sizeof(name));
	api_path(&api_pods, r->ns, name, path, sizeof(path));
	if (api_merge_patch(r, path, patch, &st, err, errlen) == -1) {
		api_failf(err, errlen, "label pod", name);
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(patch);
	return rc;
}

static int
k8s_set_labels(struct runtime *rt, const char *id, const struct rt_kv *kv,
    size_t nkv, char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	char *lj;
	int rc;

	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	if (nkv > K8S_MAX_LABELS) {
		snprintf(err, errlen, "too many labels (max %d)", K8S_MAX_LABELS);
		return -1;
	}
	lj = k8s_labels_encode(kv, nkv);
	rc = labels_write(r, id, lj, err, errlen);
	free(lj);
	return rc;
}

/* The sandbox's pod if it runs (*pod freed by the caller; v views it);
 * else -1 with why. */
static int
running_pod(struct k8s_rt *r, const char *id, cJSON **pod,
    struct k8s_podview *v, char *err, size_t errlen)
{
	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	if (api_pod_get(r, id, pod, err, errlen) == -1)
		return -1;
	if (*pod == NULL) {
		snprintf(err, errlen, "sandbox %s is not running", id);
		return -1;
	}
	k8s_pod_view(*pod, v);
	if (v->failed)
		snprintf(err, errlen, "sandbox %s failed: %s; it is not running", id,
		    v->reason);
	else if (v->deleting || v->ip == NULL || strcmp(v->phase, "Running") != 0)
		snprintf(err, errlen, "sandbox %s is not running (%s)", id,
		    v->deleting ? "terminating" : v->phase[0] ? v->phase : "pending");
	else
		return 0;
	cJSON_Delete(*pod);
	*pod = NULL;
	return -1;
}

static int
k8s_agent_addr(struct runtime *rt, const char *id, struct rt_agent_addr *out,
    char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	struct k8s_podview v;
	cJSON *pod = NULL;

	memset(out, 0, sizeof(*out));
	if (running_pod(r, id, &pod, &v, err, errlen) == -1)
		return -1;
	api_agent_at(r, id, v.ip, out);
	cJSON_Delete(pod);
	return 0;
}

int
runtime_k8s_push_env(struct runtime *rt, const char *id, const char *env,
    char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	struct k8s_podview v;
	cJSON *pod = NULL;
	int rc;

	if (running_pod(r, id, &pod, &v, err, errlen) == -1)
		return -1;
	rc = api_agent_push_env(r, id, v.ip, env, err, errlen);
	cJSON_Delete(pod);
	return rc;
}

/*
 * The identity is the session labels (orchestrator/egress.h): eg's are the
 * ones the sandbox registers with now, and those of them the record (rec,
 * from the pod) lacks are added to it, so that a later re-registration
 * (start, a fleet move) finds them. The core passes the labels it has just
 * set, so that adds nothing; k8sctl attach ID ORG USER SESSION adds them
 * here. A label the record has is left alone: set_labels owns it.
 */
static int
labels_adopt(struct k8s_rt *r, const char *id, const struct rt_info *rec,
    const struct rt_egress *eg, char *err, size_t errlen)
{
	struct rt_kv *m;
	size_t n, i;
	char *lj;
	int rc = 0;

	m = xcalloc(rec->nlabels + eg->nlabels + 1, sizeof(*m));
	for (n = 0; n < rec->nlabels; n++)
		m[n] = rec->labels[n];
	for (i = 0; i < eg->nlabels; i++)
		if (eg->labels[i].k != NULL && eg->labels[i].v != NULL &&
		    rt_label(rec, eg->labels[i].k) == NULL)
			m[n++] = eg->labels[i];
	if (n > K8S_MAX_LABELS) {
		snprintf(err, errlen, "too many labels (max %d)", K8S_MAX_LABELS);
		rc = -1;
	} else if (n > rec->nlabels) {
		lj = k8s_labels_encode(m, n);
		rc = labels_write(r, id, lj, err, errlen);
		free(lj);
	}
	free(m);
	return rc;
}

static int
k8s_attach_egress(struct runtime *rt, const char *id, const struct rt_egress *eg,
    char *env_out, size_t envlen, char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	struct k8s_podview v;
	struct rt_info rec;
	cJSON *pod = NULL;
	int rc = -1;

	if (envlen > 0)
		env_out[0] = '\0';
	memset(&rec, 0, sizeof(rec));
	if (running_pod(r, id, &pod, &v, err, errlen) == -1)
		return -1;
	api_labels(v.annotations, &rec);
	if (labels_adopt(r, id, &rec, eg, err, errlen) == -1)
		goto out;
	rc = fleet_assign(r, id, v.ip, k8s_ann(v.annotations, K8S_ANN_PROXY),
	    eg->labels, eg->nlabels < K8S_MAX_LABELS ? eg->nlabels : K8S_MAX_LABELS,
	    env_out, envlen, err, errlen);
	if (rc == 0)
		fleet_rescale(r);
out:
	rt_info_clear(&rec);
	cJSON_Delete(pod);
	return rc;
}

static void
k8s_free(struct runtime *rt)
{
	struct k8s_rt *r;

	if (rt == NULL)
		return;
	r = rt->impl;
	if (r != NULL) {
		fleet_stop(r);
		k8s_client_free(r->cl);
		free(r->orch_buf);
		free(r->proxy_buf);
		explicit_bzero(r->key, sizeof(r->key));
		explicit_bzero(r->admin_token, sizeof(r->admin_token));
		pthread_mutex_destroy(&r->fleet_mtx);
		pthread_mutex_destroy(&r->stop_mtx);
		pthread_cond_destroy(&r->stop_cv);
		free(r);
	}
	free(rt);
}

static const struct runtime_ops k8s_ops = {
	.name = "kubernetes",
	.create = k8s_create,
	.start = k8s_start,
	.stop = k8s_stop,
	.destroy = k8s_destroy,
	.list = k8s_list,
	.get = k8s_get,
	.set_labels = k8s_set_labels,
	.agent_addr = k8s_agent_addr,
	.attach_egress = k8s_attach_egress,
	.free = k8s_free,
};

/*
 * Reads a secret file (the agent key, the admin token) into dst without
 * its trailing newlines and spaces; *outlen is its length. -1 with err if
 * it cannot be read or holds more than len - 1 bytes.
 */
static int
read_secret_file(const char *path, char *dst, size_t len, size_t *outlen,
    char *err, size_t errlen)
{
	struct buf b;
	size_t n;
	int rc = -1;

	buf_init(&b, len - 1);
	if (util_read_file(path, &b, err, errlen) == -1)
		goto out;
	for (n = b.len; n > 0 && (b.p[n - 1] == '\n' || b.p[n - 1] == '\r' ||
	    b.p[n - 1] == ' '); n--)
		;
	if (n > 0)
		memcpy(dst, b.p, n);
	dst[n] = '\0';
	*outlen = n;
	rc = 0;
out:
	if (b.p != NULL)
		explicit_bzero(b.p, b.len);
	buf_free(&b);
	return rc;
}

/* Setup: the API client, and the namespaces it and the configuration name. */
static int
setup_client(struct k8s_rt *r, char *err, size_t errlen)
{
	const struct rt_k8s_conf *conf = r->conf;
	struct k8s_conn cc;

	memset(&cc, 0, sizeof(cc));
	cc.server = conf->api_server;
	cc.kubeconfig = conf->kubeconfig;
	cc.context = conf->context;
	cc.incluster_dir = conf->incluster_dir;
	cc.ca_file = conf->ca_file;
	cc.token_file = conf->token_file;
	cc.namespace = conf->namespace;
	cc.timeout_ms = conf->request_timeout_ms;
	cc.retries = conf->retries;
	cc.backoff_ms = conf->retry_backoff_ms;
	cc.token_check_ms = conf->token_check_ms;
	cc.base = conf->base;
	if ((r->cl = k8s_client_new(&cc, err, errlen)) == NULL)
		return -1;
	snprintf(r->ns, sizeof(r->ns), "%s", k8s_client_namespace(r->cl));
	snprintf(r->pns, sizeof(r->pns), "%s", conf->proxy_namespace &&
	    conf->proxy_namespace[0] ? conf->proxy_namespace : r->ns);
	snprintf(r->ons, sizeof(r->ons), "%s", conf->orch_namespace &&
	    conf->orch_namespace[0] ? conf->orch_namespace : r->ns);
	if (!dns_label_ok(r->ns) || !dns_label_ok(r->pns) || !dns_label_ok(r->ons)) {
		snprintf(err, errlen, "kubernetes: namespaces must be DNS labels "
		    "(got \"%.64s\", \"%.64s\", \"%.64s\")", r->ns, r->pns, r->ons);
		return -1;
	}
	return 0;
}

/* Setup: the names and images the configuration gives. */
static int
setup_check(const struct rt_k8s_conf *conf, char *err, size_t errlen)
{
	if (conf->instance == NULL || !dns_label_ok(conf->instance)) {
		snprintf(err, errlen, "kubernetes.instance must be a DNS label");
		return -1;
	}
	if (conf->proxy_deployment == NULL || !dns_label_ok(conf->proxy_deployment)) {
		snprintf(err, errlen, "kubernetes.proxy.deployment must be a DNS label");
		return -1;
	}
	if (conf->agent_image == NULL ||
	    k8s_image_valid(conf->agent_image, err, errlen) == -1 ||
	    conf->image == NULL || k8s_image_valid(conf->image, err, errlen) == -1) {
		snprintf(err, errlen, "kubernetes.image and kubernetes.agent_image "
		    "must be valid image names");
		return -1;
	}
	if (conf->image_pull_policy == NULL ||
	    (strcmp(conf->image_pull_policy, "Always") != 0 &&
	    strcmp(conf->image_pull_policy, "IfNotPresent") != 0 &&
	    strcmp(conf->image_pull_policy, "Never") != 0)) {
		snprintf(err, errlen, "kubernetes.image_pull_policy: expected "
		    "Always, IfNotPresent or Never");
		return -1;
	}
	return 0;
}

/* Setup: the label selectors (orchestrator pods, proxy pods, our objects). */
static int
setup_selectors(struct k8s_rt *r, char *err, size_t errlen)
{
	const struct rt_k8s_conf *conf = r->conf;
	char sel[512];

	r->orch_buf = xstrdup(conf->orch_labels ? conf->orch_labels : "");
	r->proxy_buf = xstrdup(conf->proxy_selector ? conf->proxy_selector : "");
	if (api_sel_parse(r->orch_buf, r->orch, &r->norch) == -1) {
		snprintf(err, errlen, "kubernetes.orchestrator_labels: expected k=v[,k=v]");
		return -1;
	}
	if (api_sel_parse(r->proxy_buf, r->proxy, &r->nproxy) == -1 ||
	    api_sel_query(conf->proxy_selector, r->proxy_q, sizeof(r->proxy_q)) == -1) {
		snprintf(err, errlen, "kubernetes.proxy.selector: expected k=v[,k=v]");
		return -1;
	}
	snprintf(sel, sizeof(sel), "%s=%s,%s=%s", K8S_LBL_MANAGED, K8S_MANAGER,
	    K8S_LBL_INSTANCE, conf->instance);
	if (api_sel_query(sel, r->sel_q, sizeof(r->sel_q)) == -1) {
		snprintf(err, errlen, "label selector too long");
		return -1;
	}
	return 0;
}

/* Setup: the agent key (random without a file) and the proxy admin token. */
static int
setup_keys(struct k8s_rt *r, char *err, size_t errlen)
{
	const struct rt_k8s_conf *conf = r->conf;
	char kbuf[512];
	size_t n;
	int rc = -1;

	if (conf->agent_key_file != NULL && conf->agent_key_file[0] != '\0') {
		if (read_secret_file(conf->agent_key_file, kbuf, sizeof(kbuf), &n,
		    err, errlen) == -1)
			goto out;
		if (n < 32) {
			snprintf(err, errlen, "%s: the agent key needs at least 32 bytes",
			    conf->agent_key_file);
			goto out;
		}
		r->keylen = n > sizeof(r->key) ? sizeof(r->key) : n;
		memcpy(r->key, kbuf, r->keylen);
	} else {
		if (RAND_bytes(r->key, 32) != 1) {
			snprintf(err, errlen, "RAND_bytes failed");
			goto out;
		}
		r->keylen = 32;
		log_warnx("kubernetes.agent_key_file is not set: using a random key; "
		    "sandboxes will be unreachable after a restart");
	}
	if (conf->proxy_admin_token_file != NULL && conf->proxy_admin_token_file[0]) {
		if (read_secret_file(conf->proxy_admin_token_file, r->admin_token,
		    sizeof(r->admin_token), &n, err, errlen) == -1)
			goto out;
	} else
		log_warnx("kubernetes.proxy.admin_token_file is not set: the proxy "
		    "admin port will refuse registrations");
	rc = 0;
out:
	explicit_bzero(kbuf, sizeof(kbuf));
	return rc;
}

/* Setup: what the object builders (obj.h) take from the configuration. */
static void
setup_params(struct k8s_rt *r)
{
	const struct rt_k8s_conf *conf = r->conf;

	r->par.ns = r->ns;
	r->par.instance = conf->instance;
	r->par.agent_image = conf->agent_image;
	r->par.pull_policy = conf->image_pull_policy;
	r->par.runtime_class = conf->runtime_class;
	r->par.kata_runtime_class = conf->kata_runtime_class;
	r->par.storage_class = conf->storage_class;
	r->par.proxy_ca_configmap = conf->proxy_ca_configmap;
	r->par.cpu_request = conf->cpu_request_millis;
	r->par.run_as_user = conf->run_as_user;
	r->par.agent_port = conf->agent_port;
	r->par.workspace_bytes = conf->workspace_bytes;
	r->par.grace_s = conf->stop_grace_s;
	r->par.cluster_dns = conf->netpol_dns;
	r->par.seccomp_localhost = conf->seccomp_profile;
}

struct runtime *
runtime_k8s_new(const struct rt_k8s_conf *conf, char *err, size_t errlen)
{
	struct runtime *rt = xcalloc(1, sizeof(*rt));
	struct k8s_rt *r = xcalloc(1, sizeof(*r));

	rt->ops = &k8s_ops;
	rt->impl = r;
	r->conf = conf;
	pthread_mutex_init(&r->fleet_mtx, NULL);
	pthread_mutex_init(&r->stop_mtx, NULL);
	pthread_cond_init(&r->stop_cv, NULL);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (setup_client(r, err, errlen) == -1 ||
	    setup_check(conf, err, errlen) == -1 ||
	    setup_selectors(r, err, errlen) == -1 ||
	    setup_keys(r, err, errlen) == -1)
		goto fail;
	setup_params(r);
	if (fleet_start(r, err, errlen) == -1)
		goto fail;
	log_info("k8s runtime server=%s namespace=%s proxies=%s/%s",
	    k8s_client_server(r->cl), r->ns, r->pns, conf->proxy_deployment);
	return rt;
fail:
	k8s_free(rt);
	return NULL;
}
