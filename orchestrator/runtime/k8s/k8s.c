/*
 * runtime/k8s/k8s.c: the kubernetes runtime behind runtime.h
 * (docs/kubernetes.md): the runtime_ops table, the ops, and setup.
 *
 * Per sandbox <id> (all labelled managed-by, instance, id):
 *   PVC     sbx-<id>-ws     /workspace; its annotations are the spec and
 *                           the labels it was made with; kept while
 *                           stopped, deleted on destroy; a create that
 *                           carries a /workspace over clones the old
 *                           sandbox's claim (dataSource), leaving it as
 *                           it was;
 *   Secret  sbx-<id>-agent  the agent's bearer token (owned by the PVC);
 *   Policy  sbx-<id>        ingress only from the orchestrator to the agent
 *                           port and from the app gateway to the exposed
 *                           ports, egress only to the assigned proxy pod;
 *                           its annotations are the session record (the
 *                           labels, the proxy assignment, the app ports;
 *                           fleet.c), so a claim is one write; kept across
 *                           a stop, deleted on destroy;
 *   Pod     sbx-<id>        deleted on stop, created again on start;
 *                           mounts its user's home claim (home.c) when
 *                           the spec names one.
 * Per user with a home: PVC home-<hash> (home.c), never a sandbox's.
 * Tokens and proxy credentials are HMAC-SHA256(agent_key, purpose:id), so
 * a restarted orchestrator needs no read access to Secrets to reach its
 * sandboxes again.
 *
 * Rules: what the cluster holds is the truth; nothing here is cached
 * between calls. A sandbox's identity at its proxy is its session labels
 * (orchestrator/lib/egress.h): attach_egress registers with the labels it is
 * given and returns the env for the core to push; start re-registers from
 * the labels the policy records. The proxy fleet (fleet.c) and the API helpers
 * (api.c) sit below this file (k8s_int.h); neither calls back up. All
 * calls are blocking and run in the caller's (worker) thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/rand.h>

#include "buf.h"
#include "client.h"
#include "k8s_int.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

static const struct runtime_ops k8s_ops;

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

/* ---- state ---- */

/* The annotations holding sandbox's session labels: its policy's (np)
 * when they do, else those of its claim or pod (ann; a sandbox made
 * before the record moved to the policy, or one whose policy is gone). */
static const cJSON *
rec_ann(const cJSON *ann, const cJSON *np)
{
	const cJSON *pa = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(np, "metadata"), "annotations");

	return k8s_ann(pa, K8S_ANN_LABELS) != NULL ? pa : ann;
}

static void
info_fill(struct k8s_rt *r, struct rt_info *out, const char *id,
    const cJSON *pod, const cJSON *pvc, const cJSON *np)
{
	const cJSON *ann = NULL, *src, *md;
	struct k8s_podview v;
	struct k8s_sbx s;
	char e[128];
	const char *spec;

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
		out->lim.mem_bytes = s.mem;
		out->lim.mem_reserve_bytes = s.mem_req > 0 ? s.mem_req : s.mem;
		out->lim.cpu_millis = s.cpu;
		out->lim.pids_max = s.pids;
		out->lim.disk_bytes = s.ws > 0 ? s.ws : r->conf->workspace_bytes;
		out->use_kata = s.use_kata;
		out->run_as_root = s.run_as_root;
		out->writable_root = s.writable_root;
		k8s_sbx_clear(&s);
	}
	out->created_ms = k8s_ann_ll(ann, K8S_ANN_CREATED);
	api_labels(rec_ann(ann, np), out);
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

struct k8s_client *
runtime_k8s_client(struct runtime *rt)
{
	return ((struct k8s_rt *)rt->impl)->cl;
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
	if (api_sbx_pod(r, id, &pod, err, errlen) == -1)
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
	if (s->ws == 0)
		s->ws = r->conf->workspace_bytes;
}

/*
 * The /workspace a new sandbox carries over (sp->workspace_from): the
 * claim it clones (into s->ws_from), which must exist and be no larger
 * than the new claim (a clone cannot shrink). 0, or -1 with err.
 */
static int
ws_source(struct k8s_rt *r, const struct rt_spec *sp, struct k8s_sbx *s,
    char *err, size_t errlen)
{
	const cJSON *q;
	cJSON *pvc = NULL;
	long long have;

	if (sp->workspace_from == NULL)
		return 0;
	if (!r->conf->workspace_clone) {
		snprintf(err, errlen, "carrying /workspace to a new sandbox is off "
		    "on this cluster (kubernetes.workspace_clone: false)");
		return -1;
	}
	if (!id_sandbox_valid(sp->workspace_from) ||
	    api_pvc_get(r, sp->workspace_from, &pvc, err, errlen) == -1 ||
	    pvc == NULL) {
		if (pvc == NULL)
			snprintf(err, errlen, "sandbox %s has no workspace claim to "
			    "copy", sp->workspace_from);
		return -1;
	}
	q = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pvc,
	    "spec"), "resources"), "requests"), "storage");
	have = cJSON_IsString(q) ? k8s_qty_bytes(q->valuestring) : -1;
	cJSON_Delete(pvc);
	if (have > s->ws) {
		snprintf(err, errlen, "disk %lld bytes is smaller than the /workspace "
		    "being carried over (%lld bytes): a copy cannot shrink", s->ws,
		    have);
		return -1;
	}
	k8s_name_pvc(sp->workspace_from, s->ws_from, sizeof(s->ws_from));
	return 0;
}

/* What create needs from a spec, checked (check() and create()): s filled
 * with the defaults, the clone source found. 0, or -1 with err. */
static int
sbx_check(struct k8s_rt *r, const struct rt_spec *sp, struct k8s_sbx *s,
    char *err, size_t errlen)
{
	if (k8s_sbx_from_spec(s, sp, r->conf->image, err, errlen) == -1)
		return -1;
	sbx_defaults(r, s);
	if (s->use_kata && (r->conf->kata_runtime_class == NULL ||
	    r->conf->kata_runtime_class[0] == '\0')) {
		snprintf(err, errlen, "use_kata: no kata runtime class is configured "
		    "(kubernetes.kata_runtime_class)");
		goto fail;
	}
	if (sp->nlabels > K8S_MAX_LABELS) {
		snprintf(err, errlen, "too many labels (max %d)", K8S_MAX_LABELS);
		goto fail;
	}
	if (s->mem_req > s->mem) {
		snprintf(err, errlen, "memory_reservation %lld MiB is above the "
		    "sandbox's memory limit of %lld MiB (it becomes the pod's "
		    "requests.memory, within limits.memory): ask for a larger "
		    "memory or a smaller memory_reservation", s->mem_req >> 20,
		    s->mem >> 20);
		goto fail;
	}
	if (rt_limit_ok("kubernetes", "memory", s->mem, 16, 1LL << 20,
	    1LL << 20, "MiB", err, errlen) == -1 ||
	    rt_limit_ok("kubernetes", "cpu", s->cpu, 10, 256000, 1,
	    " millicores", err, errlen) == -1 ||
	    rt_limit_ok("kubernetes", "disk", s->ws, 1, 1LL << 24, 1LL << 20,
	    "MiB", err, errlen) == -1 ||
	    rt_limit_ok("kubernetes", "ephemeral storage", s->disk, 16,
	    1LL << 22, 1LL << 20, "MiB", err, errlen) == -1 ||
	    ws_source(r, sp, s, err, errlen) == -1)
		goto fail;
	return 0;
fail:
	k8s_sbx_clear(s);
	return -1;
}

static int
k8s_check(struct runtime *rt, const struct rt_spec *sp, char *err,
    size_t errlen)
{
	struct rt_spec c = *sp;
	struct k8s_sbx s;

	if (c.id == NULL)
		c.id = "check";
	if (sbx_check(rt->impl, &c, &s, err, errlen) == -1)
		return -1;
	k8s_sbx_clear(&s);
	return 0;
}

/*
 * Health: can the API be reached, and does it let us list our pods (the
 * first thing every create and reconcile does)? One list of at most one
 * pod; the client's retries bound how long an unreachable API takes.
 */
static cJSON *
k8s_health(struct runtime *rt)
{
	struct k8s_rt *r = rt->impl;
	cJSON *arr = cJSON_CreateArray(), *c = cJSON_CreateObject(), *out = NULL;
	char path[512], q[1200], err[512];
	int st = 0, ok;

	api_path(&api_pods, r->ns, NULL, path, sizeof(path));
	snprintf(q, sizeof(q), "limit=1&%s", r->sel_q);
	ok = api_call(r, "GET", path, q, NULL, NULL, 0, &st, &out, err,
	    sizeof(err)) == 0;
	cJSON_Delete(out);
	cJSON_AddStringToObject(c, "name", "kubernetes_api");
	cJSON_AddBoolToObject(c, "ok", ok);
	cJSON_AddBoolToObject(c, "isolation", 0);
	if (!ok)
		cJSON_AddStringToObject(c, "error", err);
	cJSON_AddItemToArray(arr, c);
	return arr;
}

static cJSON *
k8s_images(struct runtime *rt)
{
	(void)rt;
	return NULL;	/* any reference the cluster can pull */
}

/* Nothing the API tells cheaply (no metrics API is assumed): unknown. */
static int
k8s_usage(struct runtime *rt, const char *id, struct rt_usage *out, char *err,
    size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	cJSON *pvc = NULL;

	out->mem_bytes = out->disk_bytes = out->oom_kills = -1;
	out->disk_partial = 0;
	if (!id_sandbox_valid(id) || api_pvc_get(r, id, &pvc, err, errlen) == -1 ||
	    pvc == NULL) {
		if (pvc == NULL)
			snprintf(err, errlen, "not found");
		return -1;
	}
	cJSON_Delete(pvc);
	return 0;
}

static int
pod_create(struct k8s_rt *r, const struct k8s_sbx *s, const char *labels_json,
    long long created_ms, char *err, size_t errlen)
{
	char path[512], name[128];
	cJSON *pod;
	int st, rc;

	pod = k8s_build_pod(&r->par, s, labels_json, created_ms, util_unix_ms());
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
k8s_create(struct runtime *rt, const struct rt_spec *sp,
    const struct rt_progress *pg, struct rt_info *out, char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	struct k8s_sbx s;
	cJSON *obj = NULL, *resp = NULL, *pod = NULL;
	const cJSON *uid;
	char path[512], name[128], tok[65], *labels = NULL, e2[256];
	long long created = util_unix_ms();
	int st, rc = -1, made = 0;

	memset(out, 0, sizeof(*out));
	if (sbx_check(r, sp, &s, err, errlen) == -1)
		return -1;
	if (khome_for_create(r, &s, err, errlen) == -1) {
		k8s_sbx_clear(&s);
		return -1;
	}
	labels = k8s_labels_encode(sp->labels, sp->nlabels);
	if (strlen(labels) > K8S_MAX_ANN) {
		snprintf(err, errlen, "labels too large (max %zu bytes)", K8S_MAX_ANN);
		goto out;
	}

	/* 1. The workspace claim: the session record. */
	obj = k8s_build_pvc(&r->par, &s, labels, created);
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
	if (fleet_netpol_new(r, s.id, labels, err, errlen) == -1 ||
	    pod_create(r, &s, labels, created, err, errlen) == -1 ||
	    kstart_wait(r, s.id, pg, &pod, err, errlen) == -1)
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
k8s_start(struct runtime *rt, const char *id, const struct rt_progress *pg,
    char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	cJSON *pvc = NULL, *pod = NULL, *np = NULL;
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
	if (api_sbx_pod(r, id, &pod, err, errlen) == -1)
		goto out;
	if (pod != NULL) {
		k8s_pod_view(pod, &v);
		if (!v.deleting && !v.failed) {
			/* Already there: wait for it rather than start twice. */
			cJSON_Delete(pod);
			pod = NULL;
			rc = kstart_wait(r, id, pg, &pod, err, errlen);
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
	    fleet_attached(r, id, &attached, err, errlen) == -1 ||
	    api_netpol_get(r, id, &np, err, errlen) == -1 ||
	    khome_ensure(r, &s, err, errlen) == -1)
		goto out;
	sbx_defaults(r, &s);
	/* The pod carries the labels recorded (the policy's, else the
	 * claim's); its policy lets it reach no proxy until it is assigned
	 * again, the record kept. */
	if (pod_create(r, &s, k8s_ann(rec_ann(ann, np), K8S_ANN_LABELS),
	    k8s_ann_ll(ann, K8S_ANN_CREATED), err, errlen) == -1 ||
	    fleet_netpol_apply(r, id, NULL, NULL, NULL, err, errlen) == -1 ||
	    kstart_wait(r, id, pg, &pod, err, errlen) == -1)
		goto out;
	if (attached) {
		/*
		 * It was attached: give it a proxy again, named by the session
		 * labels the new pod carries (those recorded). The env is not
		 * pushed here: the core attaches after a start and pushes what
		 * attach_egress returns.
		 */
		k8s_pod_view(pod, &v);
		api_labels(v.annotations, &li);
		rc = fleet_assign(r, id, v.ip, NULL, li.labels, li.nlabels, NULL,
		    NULL, env, sizeof(env), err, errlen);
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
	cJSON_Delete(np);
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
	if (api_sbx_pod(r, id, &pod, err, errlen) == -1)
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
	/* The policy stays, with the record (it allows nothing without a
	 * pod); the proxy it names is the record of an attach, which a start
	 * gives again. */
	log_info("sandbox=%s stopped", id);
	fleet_rescale(r);
	return 0;
}

static int
k8s_get(struct runtime *rt, const char *id, struct rt_info *out, char *err,
    size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	cJSON *pod = NULL, *pvc = NULL, *np = NULL;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "not found");
		return RT_ENOTFOUND;
	}
	if (api_pod_get(r, id, &pod, err, errlen) == -1 ||
	    api_pvc_get(r, id, &pvc, err, errlen) == -1 ||
	    api_netpol_get(r, id, &np, err, errlen) == -1)
		goto out;
	if (pod == NULL && pvc == NULL) {
		snprintf(err, errlen, "not found");
		rc = RT_ENOTFOUND;
		goto out;
	}
	info_fill(r, out, id, pod, pvc, np);
	rc = 0;
out:
	cJSON_Delete(pod);
	cJSON_Delete(pvc);
	cJSON_Delete(np);
	return rc;
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
	if (api_sandbox_netpols(r, &nps, err, errlen) == -1)
		goto out;
	api_path(&api_pvcs, r->ns, NULL, path, sizeof(path));
	if (api_sandbox_pvcs(r, &pvcs, err, errlen) == -1) {
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
 * Records the session labels lj (JSON) in the sandbox's policy, the
 * record (fleet_record): one write, none when it says that already. -1
 * with err "not found" when the claim is gone.
 */
static int
labels_write(struct k8s_rt *r, const char *id, const char *lj, char *err,
    size_t errlen)
{
	cJSON *pvc = NULL;

	if (strlen(lj) > K8S_MAX_ANN) {
		snprintf(err, errlen, "labels too large (max %zu bytes)", K8S_MAX_ANN);
		return -1;
	}
	if (api_pvc_get(r, id, &pvc, err, errlen) == -1)
		return -1;
	if (pvc == NULL) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	cJSON_Delete(pvc);
	return fleet_record(r, id, lj, err, errlen);
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
	if (api_sbx_pod(r, id, pod, err, errlen) == -1)
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
 * The identity is the session labels (orchestrator/lib/egress.h): eg's are the
 * ones the sandbox registers with now. With eg->record they replace the
 * record (a warm-pool claim: set_labels' job, done in the attach's one
 * write); else those of them the record (rec, from the policy) lacks are
 * added to it, so that a later re-registration (start, a fleet move)
 * finds them: the core passes the labels it has just set, so that adds
 * nothing; k8sctl attach ID ORG USER SESSION adds them here. A label the
 * record has is left alone: set_labels owns it. *lj: the record to write
 * with the assignment (freed by the caller), NULL when it stays.
 */
static int
labels_adopt(const struct rt_info *rec, const struct rt_egress *eg,
    char **lj, char *err, size_t errlen)
{
	struct rt_kv *m;
	size_t n, i;
	int rc = 0;

	*lj = NULL;
	if (eg->record) {
		if (eg->nlabels > K8S_MAX_LABELS) {
			snprintf(err, errlen, "too many labels (max %d)",
			    K8S_MAX_LABELS);
			return -1;
		}
		*lj = k8s_labels_encode(eg->labels, eg->nlabels);
		goto check;
	}
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
	} else if (n > rec->nlabels)
		*lj = k8s_labels_encode(m, n);
	free(m);
	if (rc == -1)
		return -1;
check:
	if (*lj != NULL && strlen(*lj) > K8S_MAX_ANN) {
		snprintf(err, errlen, "labels too large (max %zu bytes)", K8S_MAX_ANN);
		free(*lj);
		*lj = NULL;
		return -1;
	}
	return 0;
}

static int
k8s_attach_egress(struct runtime *rt, const char *id, const struct rt_egress *eg,
    char *env_out, size_t envlen, char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	struct k8s_podview v;
	struct rt_info rec;
	cJSON *pod = NULL;
	char *lj = NULL;
	int rc = -1;

	if (envlen > 0)
		env_out[0] = '\0';
	memset(&rec, 0, sizeof(rec));
	if (running_pod(r, id, &pod, &v, err, errlen) == -1)
		return -1;
	api_labels(v.annotations, &rec);
	if (labels_adopt(&rec, eg, &lj, err, errlen) == -1)
		goto out;
	rc = fleet_assign(r, id, v.ip, k8s_ann(v.annotations, K8S_ANN_PROXY),
	    eg->labels, eg->nlabels < K8S_MAX_LABELS ? eg->nlabels : K8S_MAX_LABELS,
	    lj, eg, env_out, envlen, err, errlen);
	if (rc == 0)
		fleet_rescale(r);
out:
	free(lj);
	rt_info_clear(&rec);
	cJSON_Delete(pod);
	return rc;
}

/*
 * Apps (docs/gateway.md): the gateway connects to the pod IP itself, so
 * this only says where. The pod must be Running with an IP; a sandbox
 * whose claim is there without such a pod is "stopped" (the next tool call
 * of its session starts it). Whether anything listens is for the gateway's
 * connect to find out (the orchestrator's pods cannot reach app ports).
 */
static int
k8s_app_connect(struct runtime *rt, const char *id, int port,
    struct rt_app_conn *out, char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	cJSON *pod = NULL, *pvc = NULL;
	struct k8s_podview v;
	int rc = -1;

	out->fd = -1;
	out->addr[0] = '\0';
	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "not found");
		return RT_ENOTFOUND;
	}
	if (port < 1 || port > 65535 || port == r->conf->agent_port) {
		snprintf(err, errlen, port == r->conf->agent_port ? "port %d is the "
		    "agent's" : "port %d out of range (1-65535)", port);
		return -1;
	}
	if (api_pod_get(r, id, &pod, err, errlen) == -1)
		return -1;
	if (pod != NULL) {
		k8s_pod_view(pod, &v);
		if (!v.deleting && !v.failed && v.ip != NULL &&
		    strcmp(v.phase, "Running") == 0) {
			snprintf(out->addr, sizeof(out->addr), strchr(v.ip, ':') ?
			    "[%s]:%d" : "%s:%d", v.ip, port);
			rc = 0;
			goto out;
		}
	}
	if (api_pvc_get(r, id, &pvc, err, errlen) == -1)
		goto out;
	snprintf(err, errlen, pvc != NULL ? "stopped" : "not found");
	rc = pvc != NULL ? RT_ESTOPPED : RT_ENOTFOUND;
out:
	cJSON_Delete(pod);
	cJSON_Delete(pvc);
	return rc;
}

static int
port_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The exposed ports changed: the policy admits the gateway to exactly
 * these (checked here: in range, not the agent's, each once). */
static int
k8s_app_ports(struct runtime *rt, const char *id, const int *ports, size_t n,
    char *err, size_t errlen)
{
	struct k8s_rt *r = rt->impl;
	int sorted[K8S_MAX_APP_PORTS];
	size_t i;

	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	if (n > K8S_MAX_APP_PORTS) {
		snprintf(err, errlen, "too many app ports (%zu; at most %d)", n,
		    K8S_MAX_APP_PORTS);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (ports[i] < 1 || ports[i] > 65535) {
			snprintf(err, errlen, "port %d out of range (1-65535)", ports[i]);
			return -1;
		}
		if (ports[i] == r->conf->agent_port) {
			snprintf(err, errlen, "port %d is the agent's", ports[i]);
			return -1;
		}
		sorted[i] = ports[i];
	}
	if (n > 0)
		qsort(sorted, n, sizeof(sorted[0]), port_cmp);
	for (i = 1; i < n; i++)
		if (sorted[i] == sorted[i - 1]) {
			snprintf(err, errlen, "port %d is given twice", sorted[i]);
			return -1;
		}
	return fleet_app_ports(r, id, sorted, n, err, errlen);
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
		api_cache_stop(r);
		k8s_client_free(r->cl);
		free(r->orch_buf);
		free(r->proxy_buf);
		free(r->gw_buf);
		explicit_bzero(r->key, sizeof(r->key));
		explicit_bzero(r->admin_token, sizeof(r->admin_token));
		pthread_mutex_destroy(&r->fleet_mtx);
		pthread_mutex_destroy(&r->np_mtx);
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
	.check = k8s_check,
	.images = k8s_images,
	.usage = k8s_usage,
	.health = k8s_health,
	.app_connect = k8s_app_connect,
	.app_ports = k8s_app_ports,
	/* volumes cannot be added to a running pod: no home_attach, the
	 * pod is made with the claim (rt_spec.home_user) */
	.home_prepare = khome_prepare,
	.home_get = khome_get,
	.home_delete = khome_delete,
	.home_list = khome_list,
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
	snprintf(r->gns, sizeof(r->gns), "%s", conf->gateway_namespace &&
	    conf->gateway_namespace[0] ? conf->gateway_namespace : r->ons);
	if (!dns_label_ok(r->ns) || !dns_label_ok(r->pns) || !dns_label_ok(r->ons) ||
	    !dns_label_ok(r->gns)) {
		snprintf(err, errlen, "kubernetes: namespaces must be DNS labels "
		    "(got \"%.64s\", \"%.64s\", \"%.64s\", \"%.64s\")", r->ns,
		    r->pns, r->ons, r->gns);
		return -1;
	}
	return 0;
}

/* Setup: the names and images the configuration gives. */
static int
setup_check(const struct rt_k8s_conf *conf, char *err, size_t errlen)
{
	size_t i;

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
	if (conf->homes_access_mode != NULL && conf->homes_access_mode[0] != '\0' &&
	    strcmp(conf->homes_access_mode, "ReadWriteOnce") != 0 &&
	    strcmp(conf->homes_access_mode, "ReadWriteOncePod") != 0 &&
	    strcmp(conf->homes_access_mode, "ReadWriteMany") != 0) {
		snprintf(err, errlen, "homes.k8s.access_mode: expected "
		    "ReadWriteOnce, ReadWriteOncePod or ReadWriteMany");
		return -1;
	}
	for (i = 0; i < conf->node_selector.n; i++)
		if (!k8s_label_ok(conf->node_selector.k[i], conf->node_selector.v[i])) {
			snprintf(err, errlen, "kubernetes.sandbox.node_selector: "
			    "\"%.64s: %.64s\" is not a label key and value",
			    conf->node_selector.k[i], conf->node_selector.v[i]);
			return -1;
		}
	for (i = 0; i < conf->tolerations.n; i++)
		if (k8s_toleration_valid(conf->tolerations.v[i], err, errlen) == -1)
			return -1;
	return 0;
}

/* Setup: the label selectors (orchestrator pods, proxy pods, our objects). */
static int
setup_selectors(struct k8s_rt *r, char *err, size_t errlen)
{
	char sel[512];

	r->orch_buf = xstrdup(r->conf->orch_labels ? r->conf->orch_labels : "");
	r->proxy_buf = xstrdup(r->conf->proxy_selector ? r->conf->proxy_selector :
	    "");
	r->gw_buf = xstrdup(r->conf->gateway_labels ? r->conf->gateway_labels : "");
	if (api_sel_parse(r->orch_buf, r->orch, &r->norch) == -1) {
		snprintf(err, errlen, "kubernetes.orchestrator_labels: expected k=v[,k=v]");
		return -1;
	}
	if (api_sel_parse(r->gw_buf, r->gw, &r->ngw) == -1 || r->ngw == 0) {
		snprintf(err, errlen, "kubernetes.gateway_labels: expected k=v[,k=v]");
		return -1;
	}
	if (api_sel_parse(r->proxy_buf, r->proxy, &r->nproxy) == -1 ||
	    api_sel_query(r->conf->proxy_selector, r->proxy_q,
	    sizeof(r->proxy_q)) == -1) {
		snprintf(err, errlen, "kubernetes.proxy.selector: expected k=v[,k=v]");
		return -1;
	}
	snprintf(sel, sizeof(sel), "%s=%s,%s=%s", K8S_LBL_MANAGED, K8S_MANAGER,
	    K8S_LBL_INSTANCE, r->conf->instance);
	if (api_sel_query(sel, r->sel_q, sizeof(r->sel_q)) == -1) {
		snprintf(err, errlen, "label selector too long");
		return -1;
	}
	return 0;
}

/* Setup: the agent key, from its file or (without one) random. */
static int
setup_agent_key(struct k8s_rt *r, char *err, size_t errlen)
{
	const char *path = r->conf->agent_key_file;
	char kbuf[512];
	size_t n;
	int rc = -1;

	if (path == NULL || path[0] == '\0') {
		if (RAND_bytes(r->key, 32) != 1) {
			snprintf(err, errlen, "RAND_bytes failed");
			return -1;
		}
		r->keylen = 32;
		log_warnx("kubernetes.agent_key_file is not set: using a random key; "
		    "sandboxes will be unreachable after a restart");
		return 0;
	}
	if (read_secret_file(path, kbuf, sizeof(kbuf), &n, err, errlen) == -1)
		goto out;
	if (n < 32) {
		snprintf(err, errlen, "%s: the agent key needs at least 32 bytes",
		    path);
		goto out;
	}
	r->keylen = n > sizeof(r->key) ? sizeof(r->key) : n;
	memcpy(r->key, kbuf, r->keylen);
	rc = 0;
out:
	explicit_bzero(kbuf, sizeof(kbuf));
	return rc;
}

/* Setup: the proxy admin token, if a file is configured. */
static int
setup_admin_token(struct k8s_rt *r, char *err, size_t errlen)
{
	const char *path = r->conf->proxy_admin_token_file;
	size_t n;

	if (path == NULL || path[0] == '\0') {
		log_warnx("kubernetes.proxy.admin_token_file is not set: the proxy "
		    "admin port will refuse registrations");
		return 0;
	}
	return read_secret_file(path, r->admin_token, sizeof(r->admin_token), &n,
	    err, errlen);
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
	r->par.home_storage_class = conf->homes_storage_class;
	r->par.home_access_mode = conf->homes_access_mode;
	r->par.node_selector = &conf->node_selector;
	r->par.tolerations = &conf->tolerations;
}

struct runtime *
runtime_k8s_new(const struct rt_k8s_conf *conf, char *err, size_t errlen)
{
	struct runtime *rt = xcalloc(1, sizeof(*rt));
	struct k8s_rt *r = xcalloc(1, sizeof(*r));

	r->scale_have = -1;

	rt->ops = &k8s_ops;
	rt->impl = r;
	r->conf = conf;
	pthread_mutex_init(&r->fleet_mtx, NULL);
	pthread_mutex_init(&r->np_mtx, NULL);
	pthread_mutex_init(&r->stop_mtx, NULL);
	pthread_cond_init(&r->stop_cv, NULL);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (setup_client(r, err, errlen) == -1 ||
	    setup_check(conf, err, errlen) == -1 ||
	    setup_selectors(r, err, errlen) == -1 ||
	    setup_agent_key(r, err, errlen) == -1 ||
	    setup_admin_token(r, err, errlen) == -1)
		goto fail;
	setup_params(r);
	if (fleet_start(r, err, errlen) == -1 ||
	    (conf->fleet_interval_ms > 0 && api_cache_start(r, fleet_proxy_event,
	    err, errlen) == -1))
		goto fail;
	log_info("k8s runtime server=%s namespace=%s proxies=%s/%s",
	    k8s_client_server(r->cl), r->ns, r->pns, conf->proxy_deployment);
	return rt;
fail:
	k8s_free(rt);
	return NULL;
}
