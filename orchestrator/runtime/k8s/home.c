/*
 * runtime/k8s/home.c: per-user homes on kubernetes (docs/kubernetes.md,
 * "Homes"; the contract is runtime.h's home ops). A home is a
 * PersistentVolumeClaim home-<hash> (hash: K8S_HOME_HASH hex digits of
 * sha256(user id), obj.c), labelled managed-by, instance and
 * K8S_LBL_HOME=<hash>, annotated with the user id (K8S_ANN_HOME_USER) and
 * its last use (K8S_ANN_HOME_USED, unix ms). It has no sandbox id label,
 * so the sandbox list, and so reconcile, never sees it: only home_delete
 * and the homes.ttl sweep (orchestrator/api/homes.c) remove one.
 *
 * A pod that mounts a home carries the same K8S_LBL_HOME label (obj.c):
 * "in use" is "a pod with that label exists", terminating ones included
 * (their volume is still mounted). Volumes cannot be added to a running
 * pod, so there is no home_attach: create mounts the claim
 * (rt_spec.home_user) and start mounts it again from the spec annotation.
 *
 * Rules: a user id passes id_session_valid before anything is built from
 * it, and only its hash names objects. A claim whose annotation names
 * another user, or whose instance label another orchestrator, is never
 * used, listed or deleted. The last use is written at most once a minute
 * (HOME_TOUCH_MS), judged from the annotation itself, so a restart keeps
 * it. Calls api.c only (k8s_int.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ids.h"
#include "k8s_int.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

/* How stale the last-use annotation may get before a use rewrites it:
 * homes.ttl is days or weeks, and a write per tool call would be an API
 * write per call. */
#define HOME_TOUCH_MS	60000LL

static int
user_ok(const char *user, char *err, size_t errlen)
{
	if (user == NULL || !id_session_valid(user)) {
		snprintf(err, errlen, "invalid user id");
		return 0;
	}
	return 1;
}

static const cJSON *
md_of(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(o, "metadata"), k);
}

/* The claim's size limit (spec.resources.requests.storage), or 0. */
static long long
claim_size(const cJSON *pvc)
{
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(pvc, "spec"), "resources"),
	    "requests"), "storage");
	long long v = cJSON_IsString(q) ? k8s_qty_bytes(q->valuestring) : -1;

	return v > 0 ? v : 0;
}

/* Whether claim pvc is user's home made by this instance. */
static int
claim_ours(struct k8s_rt *r, const cJSON *pvc, const char *user)
{
	const char *u = k8s_ann(md_of(pvc, "annotations"), K8S_ANN_HOME_USER);
	const char *in = k8s_ann(md_of(pvc, "labels"), K8S_LBL_INSTANCE);

	return u != NULL && strcmp(u, user) == 0 && in != NULL &&
	    strcmp(in, r->conf->instance) == 0;
}

/*
 * User's claim into *pvc (NULL if there is none). -1 with err on an API
 * error, or when the claim of that name is not this user's home of this
 * instance (nothing of it is used then).
 */
static int
claim_get(struct k8s_rt *r, const char *user, cJSON **pvc, char *err,
    size_t errlen)
{
	char name[128], path[512];

	*pvc = NULL;
	k8s_name_home(user, name, sizeof(name));
	api_path(&api_pvcs, r->ns, name, path, sizeof(path));
	if (api_get(r, path, pvc, err, errlen) == -1)
		return api_failf(err, errlen, "get home claim", name);
	if (*pvc != NULL && !claim_ours(r, *pvc, user)) {
		cJSON_Delete(*pvc);
		*pvc = NULL;
		snprintf(err, errlen, "claim %s is not the home of user %s made by "
		    "instance %s (another orchestrator's, or not a home): left "
		    "alone", name, user, r->conf->instance);
		return -1;
	}
	return 0;
}

/* Records a use of user's claim pvc now, unless its annotation is less
 * than HOME_TOUCH_MS old. A failure is logged: the use itself goes on. */
static void
claim_touch(struct k8s_rt *r, const char *user, const cJSON *pvc)
{
	long long now = util_unix_ms();
	char name[128], path[512], v[32], e[256];
	const char *pair[2];
	cJSON *patch;
	int st;

	if (now - k8s_ann_ll(md_of(pvc, "annotations"), K8S_ANN_HOME_USED) <
	    HOME_TOUCH_MS)
		return;
	k8s_name_home(user, name, sizeof(name));
	api_path(&api_pvcs, r->ns, name, path, sizeof(path));
	snprintf(v, sizeof(v), "%lld", now);
	pair[0] = K8S_ANN_HOME_USED;
	pair[1] = v;
	patch = api_ann_patch(pair, 1);
	if (api_merge_patch(r, path, patch, &st, e, sizeof(e)) == -1)
		log_warnx("home user=%s claim=%s last-use write failed err=\"%s\"",
		    user, name, e);
	cJSON_Delete(patch);
}

/* The selector query of our pods mounting homes: hash's, or any (NULL). */
static int
home_pods_query(struct k8s_rt *r, const char *hash, char *q, size_t qlen,
    char *err, size_t errlen)
{
	char sel[512];

	snprintf(sel, sizeof(sel), "%s=%s,%s=%s,%s%s%s", K8S_LBL_MANAGED,
	    K8S_MANAGER, K8S_LBL_INSTANCE, r->conf->instance, K8S_LBL_HOME,
	    hash != NULL ? "=" : "", hash != NULL ? hash : "");
	if (api_sel_query(sel, q, qlen) == -1) {
		snprintf(err, errlen, "label selector too long");
		return -1;
	}
	return 0;
}

/* *n = how many pods mount user's home (terminating ones too). */
static int
home_pods(struct k8s_rt *r, const char *user, int *n, char *err, size_t errlen)
{
	char hash[K8S_HOME_HASH + 1], q[1024], path[512];
	cJSON *items = NULL;

	k8s_home_hash(user, hash);
	if (home_pods_query(r, hash, q, sizeof(q), err, errlen) == -1)
		return -1;
	api_path(&api_pods, r->ns, NULL, path, sizeof(path));
	if (api_list(r, path, q, &items, err, errlen) == -1) {
		cJSON_Delete(items);
		return api_failf(err, errlen, "list pods mounting", "a home");
	}
	*n = cJSON_GetArraySize(items);
	cJSON_Delete(items);
	return 0;
}

/* A new claim for user, size bytes; a 409 (made meanwhile) is success. */
static int
claim_make(struct k8s_rt *r, const char *user, long long size, char *err,
    size_t errlen)
{
	char name[128], path[512];
	cJSON *obj;
	int st, rc;

	obj = k8s_build_home_pvc(&r->par, user, size, util_unix_ms());
	api_path(&api_pvcs, r->ns, NULL, path, sizeof(path));
	k8s_name_home(user, name, sizeof(name));
	rc = api_create(r, path, obj, &st, NULL, err, errlen);
	cJSON_Delete(obj);
	if (rc == -1)
		return api_failf(err, errlen, "create home claim", name);
	if (st != 409)
		log_info("home user=%s claim=%s created size=%lld", user, name,
		    size);
	return 0;
}

int
khome_prepare(struct runtime *rt, const char *user, long long size_bytes,
    char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	cJSON *pvc = NULL;
	int rc = -1;

	if (!user_ok(user, err, errlen))
		return -1;
	if (size_bytes <= 0) {
		snprintf(err, errlen, "home size must be positive");
		return -1;
	}
	if (claim_get(r, user, &pvc, err, errlen) == -1)
		return -1;
	if (pvc == NULL) {
		if (claim_make(r, user, size_bytes, err, errlen) == -1)
			return -1;
		/* made now (its last use is now), or by a concurrent
		 * session of the user: check it is ours either way */
		if (claim_get(r, user, &pvc, err, errlen) == -1)
			return -1;
		if (pvc == NULL) {
			snprintf(err, errlen, "the home claim of user %s went "
			    "away while it was being made", user);
			return -1;
		}
	}
	if (md_of(pvc, "deletionTimestamp") != NULL &&
	    !cJSON_IsNull(md_of(pvc, "deletionTimestamp"))) {
		snprintf(err, errlen, "the home of user %s is being deleted", user);
		goto out;
	}
	claim_touch(r, user, pvc);	/* an existing one keeps its size */
	rc = 0;
out:
	cJSON_Delete(pvc);
	return rc;
}

int
khome_get(struct runtime *rt, const char *user, struct rt_home *out, char *err,
    size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	cJSON *pvc = NULL;
	int n = 0;

	memset(out, 0, sizeof(*out));
	if (!user_ok(user, err, errlen))
		return -1;
	snprintf(out->user, sizeof(out->user), "%s", user);
	if (claim_get(r, user, &pvc, err, errlen) == -1)
		return -1;
	if (pvc == NULL)
		return 0;
	out->exists = 1;
	out->size_bytes = claim_size(pvc);
	out->used_bytes = 0;	/* no claim status tells it */
	out->last_used_ms = k8s_ann_ll(md_of(pvc, "annotations"),
	    K8S_ANN_HOME_USED);
	if (home_pods(r, user, &n, err, errlen) == -1) {
		cJSON_Delete(pvc);
		return -1;
	}
	if (n > 0) {
		out->in_use = 1;
		out->last_used_ms = util_unix_ms();
	}
	cJSON_Delete(pvc);
	return 0;
}

int
khome_delete(struct runtime *rt, const char *user, char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	char name[128], path[512];
	cJSON *pvc = NULL;
	int n = 0;

	if (!user_ok(user, err, errlen))
		return -1;
	if (claim_get(r, user, &pvc, err, errlen) == -1)
		return -1;
	if (pvc == NULL)
		return 0;
	cJSON_Delete(pvc);
	if (home_pods(r, user, &n, err, errlen) == -1)
		return -1;
	if (n > 0) {
		snprintf(err, errlen, "in use");
		return -1;
	}
	/* A pod made between the list and here keeps the claim until it
	 * goes (the API server's pvc-protection finalizer). */
	k8s_name_home(user, name, sizeof(name));
	api_path(&api_pvcs, r->ns, name, path, sizeof(path));
	if (api_delete(r, path, NULL, err, errlen) == -1)
		return api_failf(err, errlen, "delete home claim", name);
	log_info("home user=%s claim=%s deleted", user, name);
	return 0;
}

int
khome_list(struct runtime *rt, struct rt_home **out, size_t *n, char *err,
    size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	cJSON *pvcs = NULL, *pods = NULL, *it, *p;
	char q[1024], path[512], name[128];
	const char *user, *nm, *h;
	struct rt_home *v = NULL;
	size_t cnt = 0, cap;
	int rc = -1;

	*out = NULL;
	*n = 0;
	if (home_pods_query(r, NULL, q, sizeof(q), err, errlen) == -1)
		return -1;
	api_path(&api_pvcs, r->ns, NULL, path, sizeof(path));
	if (api_list(r, path, q, &pvcs, err, errlen) == -1) {
		api_failf(err, errlen, "list home claims in", r->ns);
		goto out;
	}
	api_path(&api_pods, r->ns, NULL, path, sizeof(path));
	if (api_list(r, path, q, &pods, err, errlen) == -1) {
		api_failf(err, errlen, "list pods mounting homes in", r->ns);
		goto out;
	}
	cap = (size_t)cJSON_GetArraySize(pvcs);
	if (cap > 0)
		v = xcalloc(cap, sizeof(*v));
	cJSON_ArrayForEach(it, pvcs) {
		user = k8s_ann(md_of(it, "annotations"), K8S_ANN_HOME_USER);
		nm = cJSON_IsString(md_of(it, "name")) ?
		    md_of(it, "name")->valuestring : "";
		if (cnt >= cap || user == NULL || !id_session_valid(user))
			continue;
		k8s_name_home(user, name, sizeof(name));
		if (strcmp(name, nm) != 0 || !claim_ours(r, it, user))
			continue;	/* not what its annotation says */
		snprintf(v[cnt].user, sizeof(v[cnt].user), "%s", user);
		v[cnt].exists = 1;
		v[cnt].size_bytes = claim_size(it);
		v[cnt].last_used_ms = k8s_ann_ll(md_of(it, "annotations"),
		    K8S_ANN_HOME_USED);
		h = k8s_ann(md_of(it, "labels"), K8S_LBL_HOME);
		cJSON_ArrayForEach(p, pods)
			if (h != NULL && k8s_ann(md_of(p, "labels"), K8S_LBL_HOME) !=
			    NULL && strcmp(k8s_ann(md_of(p, "labels"),
			    K8S_LBL_HOME), h) == 0)
				v[cnt].in_use = 1;
		if (v[cnt].in_use) {
			/* last seen in use: now, and written down (at most
			 * once a minute) so that a restart knows it too */
			claim_touch(r, user, it);
			v[cnt].last_used_ms = util_unix_ms();
		}
		cnt++;
	}
	*out = v;
	*n = cnt;
	v = NULL;
	rc = 0;
out:
	free(v);
	cJSON_Delete(pvcs);
	cJSON_Delete(pods);
	return rc;
}

int
khome_for_create(struct k8s_rt *r, struct k8s_sbx *s, char *err, size_t errlen)
{
	cJSON *pvc = NULL;

	if (s->home[0] == '\0')
		return 0;
	if (claim_get(r, s->home, &pvc, err, errlen) == -1)
		return -1;
	if (pvc == NULL) {
		snprintf(err, errlen, "user %s has no home claim (home_prepare "
		    "makes it before the create)", s->home);
		return -1;
	}
	s->home_bytes = claim_size(pvc);
	cJSON_Delete(pvc);
	return 0;
}

int
khome_ensure(struct k8s_rt *r, const struct k8s_sbx *s, char *err,
    size_t errlen)
{
	cJSON *pvc = NULL;

	if (s->home[0] == '\0')
		return 0;
	if (claim_get(r, s->home, &pvc, err, errlen) == -1)
		return -1;
	if (pvc != NULL) {
		claim_touch(r, s->home, pvc);
		cJSON_Delete(pvc);
		return 0;
	}
	/* Deleted while this sandbox was stopped: a new, empty one of the
	 * size it had, as a new session of the user would get. */
	if (s->home_bytes <= 0) {
		snprintf(err, errlen, "the home of user %s is gone and its size is "
		    "unknown", s->home);
		return -1;
	}
	log_info("sandbox=%s home user=%s was deleted while stopped: made anew",
	    s->id, s->home);
	return claim_make(r, s->home, s->home_bytes, err, errlen);
}
