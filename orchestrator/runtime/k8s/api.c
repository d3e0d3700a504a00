/*
 * runtime/k8s/api.c: the kubernetes runtime's bottom layer (k8s_int.h):
 * one API call and its wrappers (get, delete, create, merge patch, paged
 * list), resource paths, label selectors, reading the sandbox objects
 * k8s.c and fleet.c both need (pod, claim, policy; our sandbox pods), the
 * derived credentials and the calls to a sandbox's agent.
 *
 * Rules: it calls only down (client.c, cache.c, obj.c, netpol/,
 * orchestrator/agentc); its one piece of state is the watch cache
 * (cache.h, r->cache), which list reads prefer and writes' replies feed; errors are -1 with one
 * line in err, prefixed by what was being done (api_failf).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "lib/agentc.h"
#include "buf.h"
#include "cache.h"
#include "client.h"
#include "digest.h"
#include "hex.h"
#include "k8s_int.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

#define AGENT_TIMEOUT_MS 5000	/* one agent call (health, env) */
/* An agent's answer to health or env is a small JSON object. */
#define AGENT_MAX_REPLY	65536
#define LIST_PAGE	"500"

const struct api_res api_pods = { "/api/v1", "pods" };
const struct api_res api_pvcs = { "/api/v1", "persistentvolumeclaims" };
const struct api_res api_secrets = { "/api/v1", "secrets" };
const struct api_res api_netpols = { "/apis/networking.k8s.io/v1",
    "networkpolicies" };

void
api_nap(long long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

int
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

int
api_sel_query(const char *sel, char *dst, size_t len)
{
	char enc[900];

	if (k8s_urlencode(sel, enc, sizeof(enc)) == -1)
		return -1;
	return snprintf(dst, len, "labelSelector=%s", enc) >= (int)len ? -1 : 0;
}

void
api_derive(struct k8s_rt *r, const char *purpose, const char *id, char out[65])
{
	unsigned char mac[DIGEST_SHA256_LEN];
	char msg[128];
	int n;

	n = snprintf(msg, sizeof(msg), "%s:%s", purpose, id);
	if (n < 0 || (size_t)n >= sizeof(msg) ||
	    digest_hmac_sha256(r->key, r->keylen, msg, (size_t)n, mac) == -1)
		fatalx("HMAC failed");
	hex_encode(mac, sizeof(mac), out);
}

int
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

int
api_failf(char *err, size_t errlen, const char *what, const char *name)
{
	char tmp[512];

	snprintf(tmp, sizeof(tmp), "%s", err);
	snprintf(err, errlen, "%s %s: %s", what, name, tmp);
	return -1;
}

void
api_path(const struct api_res *rs, const char *ns, const char *name, char *dst,
    size_t len)
{
	snprintf(dst, len, "%s/namespaces/%s/%s%s%s", rs->prefix, ns, rs->plural,
	    name ? "/" : "", name ? name : "");
}

int
api_get(struct k8s_rt *r, const char *path, cJSON **out, char *err, size_t errlen)
{
	int st;

	return api_call(r, "GET", path, NULL, NULL, NULL, 404, &st, out, err, errlen);
}

int
api_delete(struct k8s_rt *r, const char *path, const char *q, char *err, size_t errlen)
{
	int st;

	return api_call(r, "DELETE", path, q, NULL, NULL, 404, &st, NULL, err, errlen);
}

/* 1 if path is the collection coll or one object in it. */
static int
in_collection(const char *path, const char *coll)
{
	size_t n = strlen(coll);

	return strncmp(path, coll, n) == 0 && (path[n] == '\0' ||
	    (path[n] == '/' && strchr(path + n + 1, '/') == NULL));
}

/* 1 if the labels object has every pair of kv. */
static int
labels_have(const cJSON *labels, const struct netpol_kv *kv, size_t n)
{
	const char *v;
	size_t i;

	for (i = 0; i < n; i++)
		if ((v = k8s_ann(labels, kv[i].k)) == NULL || strcmp(v, kv[i].v) != 0)
			return 0;
	return 1;
}

/* A write's reply into the watch cache set it belongs to (cache.h): our
 * own writes are read back before their watch event arrives. */
static void
cache_note(struct k8s_rt *r, const char *path, const cJSON *obj)
{
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "labels");
	const struct netpol_kv ours[2] = { { K8S_LBL_MANAGED, K8S_MANAGER },
		{ K8S_LBL_INSTANCE, r->conf->instance } };
	char coll[512];

	if (r->cache == NULL || !cJSON_IsObject(labels))
		return;
	api_path(&api_pods, r->ns, NULL, coll, sizeof(coll));
	if (in_collection(path, coll) && labels_have(labels, ours, 2))
		kcache_put(r->cache, KC_SBX_PODS, obj);
	api_path(&api_pvcs, r->ns, NULL, coll, sizeof(coll));
	if (in_collection(path, coll) && labels_have(labels, ours, 2))
		kcache_put(r->cache, KC_SBX_PVCS, obj);
	api_path(&api_pods, r->pns, NULL, coll, sizeof(coll));
	if (in_collection(path, coll) && r->nproxy > 0 &&
	    labels_have(labels, r->proxy, r->nproxy))
		kcache_put(r->cache, KC_PROXY_PODS, obj);
	api_path(&api_netpols, r->ns, NULL, coll, sizeof(coll));
	if (in_collection(path, coll) && labels_have(labels, ours, 2))
		kcache_put(r->cache, KC_SBX_NETPOLS, obj);
}

int
api_put(struct k8s_rt *r, const char *path, const cJSON *obj, int *st,
    char *err, size_t errlen)
{
	cJSON *reply = NULL;
	int rc;

	rc = api_call(r, "PUT", path, API_Q_STRICT, NULL, obj, 0, st,
	    r->cache != NULL ? &reply : NULL, err, errlen);
	if (rc == 0 && reply != NULL)
		cache_note(r, path, reply);
	cJSON_Delete(reply);
	return rc;
}

int
api_create(struct k8s_rt *r, const char *path, const cJSON *obj, int *st,
    cJSON **out, char *err, size_t errlen)
{
	cJSON *reply = NULL;
	int rc;

	rc = api_call(r, "POST", path, API_Q_STRICT, NULL, obj, 409, st,
	    out != NULL || r->cache != NULL ? &reply : NULL, err, errlen);
	if (rc == 0 && reply != NULL)
		cache_note(r, path, reply);
	if (out != NULL)
		*out = reply;
	else
		cJSON_Delete(reply);
	return rc;
}

int
api_merge_patch(struct k8s_rt *r, const char *path, const cJSON *patch, int *st,
    char *err, size_t errlen)
{
	cJSON *reply = NULL;
	int rc;

	rc = api_call(r, "PATCH", path, API_Q_STRICT, API_CT_MERGE, patch, 404, st,
	    r->cache != NULL ? &reply : NULL, err, errlen);
	if (rc == 0 && reply != NULL)
		cache_note(r, path, reply);
	cJSON_Delete(reply);
	return rc;
}

cJSON *
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

int
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

void
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

int
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

void
api_labels(const cJSON *ann, struct rt_info *ri)
{
	if (k8s_labels_decode(k8s_ann(ann, K8S_ANN_LABELS), &ri->labels,
	    &ri->nlabels) == -1) {
		ri->labels = NULL;
		ri->nlabels = 0;
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

/* Sandbox id's object (named by namefn) from the cache set, if it holds it. */
static int
sbx_cached(struct k8s_rt *r, enum kcache_set set,
    void (*namefn)(const char *, char *, size_t), const char *id, cJSON **out)
{
	char name[128];

	if (r->cache == NULL)
		return 0;
	namefn(id, name, sizeof(name));
	return kcache_get(r->cache, set, name, out);
}

int
api_pod_get(struct k8s_rt *r, const char *id, cJSON **pod, char *err, size_t errlen)
{
	if (sbx_cached(r, KC_SBX_PODS, k8s_name_pod, id, pod))
		return 0;
	return sbx_obj_get(r, &api_pods, k8s_name_pod, "get pod", id, pod, err,
	    errlen);
}

int
api_pvc_get(struct k8s_rt *r, const char *id, cJSON **pvc, char *err, size_t errlen)
{
	if (sbx_cached(r, KC_SBX_PVCS, k8s_name_pvc, id, pvc))
		return 0;
	return sbx_obj_get(r, &api_pvcs, k8s_name_pvc, "get claim", id, pvc, err,
	    errlen);
}

int
api_netpol_get(struct k8s_rt *r, const char *id, cJSON **np, char *err,
    size_t errlen)
{
	if (sbx_cached(r, KC_SBX_NETPOLS, k8s_name_netpol, id, np))
		return 0;
	return sbx_obj_get(r, &api_netpols, k8s_name_netpol, "get network policy",
	    id, np, err, errlen);
}

int
api_sandbox_pods(struct k8s_rt *r, cJSON **items, char *err, size_t errlen)
{
	char path[512];

	if (r->cache != NULL && kcache_items(r->cache, KC_SBX_PODS, items))
		return 0;
	api_path(&api_pods, r->ns, NULL, path, sizeof(path));
	if (api_list(r, path, r->sel_q, items, err, errlen) == -1)
		return api_failf(err, errlen, "list sandbox pods in", r->ns);
	return 0;
}

int
api_sandbox_netpols(struct k8s_rt *r, cJSON **items, char *err, size_t errlen)
{
	char path[512];

	if (r->cache != NULL && kcache_items(r->cache, KC_SBX_NETPOLS, items))
		return 0;
	api_path(&api_netpols, r->ns, NULL, path, sizeof(path));
	if (api_list(r, path, r->sel_q, items, err, errlen) == -1)
		return api_failf(err, errlen, "list network policies in", r->ns);
	return 0;
}

/*
 * The session record a sandbox's policy keeps (K8S_REC_KEYS) over pod's
 * own annotations: the policy is written at claim, attach and relabel,
 * the pod never is. A key the policy lacks (one written before the
 * record moved there) leaves the pod's as it is.
 */
static const char *const rec_keys[] = { K8S_ANN_LABELS, K8S_ANN_PROXY,
    K8S_ANN_PROXY_IP };

static void
rec_overlay(cJSON *pod, const cJSON *np)
{
	const cJSON *from = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(np, "metadata"), "annotations");
	cJSON *md, *to;
	const char *v;
	size_t i;

	if (pod == NULL || from == NULL)
		return;
	if ((md = cJSON_GetObjectItemCaseSensitive(pod, "metadata")) == NULL)
		return;
	if ((to = cJSON_GetObjectItemCaseSensitive(md, "annotations")) == NULL &&
	    (to = cJSON_AddObjectToObject(md, "annotations")) == NULL)
		return;
	for (i = 0; i < NELEM(rec_keys); i++) {
		if ((v = k8s_ann(from, rec_keys[i])) == NULL)
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(to, rec_keys[i]);
		cJSON_AddStringToObject(to, rec_keys[i], v);
	}
}

int
api_sbx_pod(struct k8s_rt *r, const char *id, cJSON **pod, char *err,
    size_t errlen)
{
	cJSON *np = NULL;

	if (api_pod_get(r, id, pod, err, errlen) == -1)
		return -1;
	if (*pod == NULL)
		return 0;
	if (api_netpol_get(r, id, &np, err, errlen) == -1) {
		cJSON_Delete(*pod);
		*pod = NULL;
		return -1;
	}
	rec_overlay(*pod, np);
	cJSON_Delete(np);
	return 0;
}

struct np_ref {
	const char	*name;
	const cJSON	*np;
};

static int
np_ref_cmp(const void *a, const void *b)
{
	return strcmp(((const struct np_ref *)a)->name,
	    ((const struct np_ref *)b)->name);
}

int
api_sbx_pods(struct k8s_rt *r, cJSON **items, char *err, size_t errlen)
{
	cJSON *nps = NULL, *it;
	struct np_ref *v = NULL, key, *hit;
	const char *nm, *id;
	char name[128];
	size_t n = 0, cap;

	if (api_sandbox_pods(r, items, err, errlen) == -1)
		return -1;
	if (api_sandbox_netpols(r, &nps, err, errlen) == -1) {
		cJSON_Delete(*items);
		*items = NULL;
		return -1;
	}
	if ((cap = (size_t)cJSON_GetArraySize(nps)) > 0)
		v = xcalloc(cap, sizeof(*v));
	cJSON_ArrayForEach(it, nps) {
		nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(it, "metadata"), "name"));
		if (nm != NULL && n < cap) {
			v[n].name = nm;
			v[n++].np = it;
		}
	}
	if (n > 0)
		qsort(v, n, sizeof(*v), np_ref_cmp);
	key.name = name;
	key.np = NULL;
	cJSON_ArrayForEach(it, *items) {
		id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
		    it, "metadata"), "labels"), K8S_LBL_ID));
		if (id == NULL || n == 0)
			continue;
		k8s_name_netpol(id, name, sizeof(name));
		if ((hit = bsearch(&key, v, n, sizeof(*v), np_ref_cmp)) != NULL)
			rec_overlay(it, hit->np);
	}
	free(v);
	cJSON_Delete(nps);
	return 0;
}

int
api_sandbox_pvcs(struct k8s_rt *r, cJSON **items, char *err, size_t errlen)
{
	char path[512];

	if (r->cache != NULL && kcache_items(r->cache, KC_SBX_PVCS, items))
		return 0;
	api_path(&api_pvcs, r->ns, NULL, path, sizeof(path));
	return api_list(r, path, r->sel_q, items, err, errlen);
}

int
api_proxy_pods(struct k8s_rt *r, cJSON **items, char *err, size_t errlen)
{
	char path[512];

	if (r->cache != NULL && kcache_items(r->cache, KC_PROXY_PODS, items))
		return 0;
	api_path(&api_pods, r->pns, NULL, path, sizeof(path));
	return api_list(r, path, r->proxy_q, items, err, errlen);
}

int
api_cache_start(struct k8s_rt *r,
    void (*on_proxy)(void *, const cJSON *, const cJSON *), char *err,
    size_t errlen)
{
	char p0[512], p1[512], p2[512], p3[512];
	struct kcache_src src[KC_NSETS];

	api_path(&api_pods, r->ns, NULL, p0, sizeof(p0));
	api_path(&api_pvcs, r->ns, NULL, p1, sizeof(p1));
	api_path(&api_pods, r->pns, NULL, p2, sizeof(p2));
	src[KC_SBX_PODS] = (struct kcache_src){ p0, r->sel_q, NULL, NULL };
	src[KC_SBX_PVCS] = (struct kcache_src){ p1, r->sel_q, NULL, NULL };
	src[KC_PROXY_PODS] = (struct kcache_src){ p2, r->proxy_q, on_proxy, r };
	api_path(&api_netpols, r->ns, NULL, p3, sizeof(p3));
	src[KC_SBX_NETPOLS] = (struct kcache_src){ p3, r->sel_q, NULL, NULL };
	if ((r->cache = kcache_start(r->cl, src, err, errlen)) == NULL)
		return -1;
	return 0;
}

void
api_cache_stop(struct k8s_rt *r)
{
	kcache_stop(r->cache);
	r->cache = NULL;
}

int
api_agent_push_env(struct k8s_rt *r, const char *id, const char *pod_ip,
    const char *env, char *err, size_t errlen)
{
	cJSON *body = agentc_env_body(env);
	char *txt;
	int rc;

	if (body == NULL)
		return 0;	/* nothing to set */
	txt = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	rc = api_agent_call(r, id, pod_ip, "POST", "/v1/env", txt, err, errlen);
	explicit_bzero(txt, strlen(txt));
	free(txt);
	return rc;
}
