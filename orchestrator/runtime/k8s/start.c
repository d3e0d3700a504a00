/*
 * runtime/k8s/start.c: a sandbox pod coming up (docs/kubernetes.md,
 * "Failing fast"): following its status and Events and those of the
 * claims it mounts, failing fast with the cluster's reason, and telling
 * the caller what it waits for (rt_progress, to the sink the caller
 * passed). Calls api.c only.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "client.h"
#include "k8s_int.h"
#include "log.h"
#include "util.h"

/* Events of the object with uid (a pod, a claim), for start_verdict. */
static int
events_of(struct k8s_rt *r, const char *uid, cJSON **items, char *err,
    size_t errlen)
{
	static const struct api_res events = { "/api/v1", "events" };
	char path[512], q[256], enc[160];

	*items = NULL;
	if (uid == NULL || k8s_urlencode(uid, enc, sizeof(enc)) == -1)
		return 0;
	api_path(&events, r->ns, NULL, path, sizeof(path));
	snprintf(q, sizeof(q), "fieldSelector=involvedObject.uid%%3D%s", enc);
	return api_list(r, path, q, items, err, errlen);
}

/*
 * The Events of claim (name; the sandbox's workspace claim is read through
 * the cache) when it is not Bound, scanned for a hard reason into hard.
 */
static void
claim_verdict(struct k8s_rt *r, const char *id, const char *claim, char *hard,
    size_t hardlen)
{
	cJSON *items = NULL, *pvc = NULL;
	const cJSON *md, *ph;
	char e[256] = "", path[512], wsname[128], p2[8];
	int rc;

	k8s_name_pvc(id, wsname, sizeof(wsname));
	if (strcmp(claim, wsname) == 0)
		rc = api_pvc_get(r, id, &pvc, e, sizeof(e));
	else {
		api_path(&api_pvcs, r->ns, claim, path, sizeof(path));
		rc = api_get(r, path, &pvc, e, sizeof(e));
	}
	if (rc == -1 || pvc == NULL) {
		if (e[0] != '\0')
			log_warnx("sandbox=%s: reading claim %s: %s", id, claim, e);
		return;
	}
	ph = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pvc,
	    "status"), "phase");
	md = cJSON_GetObjectItemCaseSensitive(pvc, "metadata");
	if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "Bound") != 0) {
		md = cJSON_GetObjectItemCaseSensitive(md, "uid");
		if (events_of(r, cJSON_IsString(md) ? md->valuestring : NULL, &items,
		    e, sizeof(e)) == -1)
			log_warnx("sandbox=%s: reading claim %s's events: %s", id,
			    claim, e);
		k8s_events_scan(items, hard, hardlen, p2, sizeof(p2));
		if (hard[0] != '\0' && strcmp(claim, wsname) != 0) {
			/* name the claim that is not the workspace (a home) */
			char h[512];

			snprintf(h, sizeof(h), "%s (claim %s)", hard, claim);
			snprintf(hard, hardlen, "%s", h);
		}
		cJSON_Delete(items);
	}
	cJSON_Delete(pvc);
}

/*
 * Why a starting pod (v, pod) will not come up though it has not failed,
 * from its Events and those of every claim it mounts that is not bound
 * (its /workspace, its user's home) (docs/kubernetes.md, "Failing fast"):
 * a hard reason into hard, an image pull under way into pulling. An API
 * error reading them is logged and ignored (the ready timeout still
 * bounds the wait).
 */
static void
start_verdict(struct k8s_rt *r, const char *id, const cJSON *pod,
    const struct k8s_podview *v, char *hard, size_t hardlen, char *pulling,
    size_t pulllen)
{
	cJSON *items = NULL;
	const cJSON *vol, *c;
	char e[256];

	hard[0] = pulling[0] = '\0';
	if (events_of(r, v->uid, &items, e, sizeof(e)) == -1)
		log_warnx("sandbox=%s: reading its pod's events: %s", id, e);
	k8s_events_scan(items, hard, hardlen, pulling, pulllen);
	cJSON_Delete(items);
	if (hard[0] != '\0' || !v->unschedulable)
		return;
	/* Not scheduled: is it waiting for a claim that cannot be made? */
	cJSON_ArrayForEach(vol, cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(pod, "spec"), "volumes")) {
		c = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(vol, "persistentVolumeClaim"),
		    "claimName");
		if (!cJSON_IsString(c))
			continue;
		claim_verdict(r, id, c->valuestring, hard, hardlen);
		if (hard[0] != '\0')
			return;
	}
}

/*
 * What a starting pod (v) waits for, told to the caller's sink pg
 * (rt_progress) when it changes from shown: a pull under way (pulling,
 * from its Events), scheduling, the container's creation, the agent.
 */
static void
start_progress(const struct rt_progress *pg, const struct k8s_podview *v,
    const char *pulling, char *shown, size_t shownlen)
{
	char now[320];

	if (pulling[0] != '\0')
		snprintf(now, sizeof(now), "sandbox starting: %s", pulling);
	else if (v->unschedulable)
		snprintf(now, sizeof(now), "sandbox starting: waiting for a node "
		    "(%s)", v->reason[0] ? v->reason : "Unschedulable");
	else if (strcmp(v->phase, "Pending") == 0 && v->reason[0] != '\0')
		snprintf(now, sizeof(now), "sandbox starting: pod waiting (%s)",
		    v->reason);
	else if (strcmp(v->phase, "Pending") == 0)
		snprintf(now, sizeof(now), "sandbox starting: pod pending");
	else
		snprintf(now, sizeof(now), "sandbox starting: waiting for its agent");
	if (strcmp(now, shown) == 0)
		return;
	snprintf(shown, shownlen, "%s", now);
	rt_progress(pg, "%s", now);
}

/*
 * Waits until the pod is Running, Ready, has an IP and the agent answers.
 * Fails fast with the cluster's reason (docs/kubernetes.md, "Failing
 * fast"): at once on a Failed pod; once a reason the kubelet retries
 * (ErrImagePull, CreateContainerConfigError, ...) or a hard Event
 * (FailedCreatePodSandBox, ProvisioningFailed) has lasted fail_after; once
 * the pod has been Unschedulable for unschedulable_grace; else after
 * ready_timeout. The Events are read only while the pod is Pending after
 * its first second, at most once a second.
 */
int
kstart_wait(struct k8s_rt *r, const char *id, const struct rt_progress *pg,
    cJSON **podp, char *err, size_t errlen)
{
	long long t0 = util_mono_ms(), now, step = 100, hard_since = -1;
	long long unsched_since = -1, ev_at = t0 + 1000;
	long long deadline = t0 + r->conf->ready_timeout_ms;
	struct k8s_podview v;
	cJSON *pod = NULL;
	char aerr[256] = "", hard[512] = "", evhard[512] = "", pulling[256] = "";
	char said[256] = "", shown[320] = "";

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
		now = util_mono_ms();
		if (v.failed && !v.hard) {
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
		if (strcmp(v.phase, "Pending") == 0 && now >= ev_at) {
			start_verdict(r, id, pod, &v, evhard, sizeof(evhard), pulling,
			    sizeof(pulling));
			ev_at = now + 1000;
			if (pulling[0] != '\0' && strcmp(pulling, said) != 0) {
				log_info("sandbox=%s starting: %s", id, pulling);
				snprintf(said, sizeof(said), "%s", pulling);
			}
		} else if (strcmp(v.phase, "Pending") != 0)
			evhard[0] = pulling[0] = '\0';
		start_progress(pg, &v, pulling, shown, sizeof(shown));
		/* The hard reason now: the pod's own, else an Event's. */
		if (v.failed)
			snprintf(hard, sizeof(hard), "%s", v.reason);
		else
			snprintf(hard, sizeof(hard), "%s", evhard);
		if (hard[0] == '\0')
			hard_since = -1;
		else if (hard_since < 0)
			hard_since = now;
		if (hard_since >= 0 && now - hard_since >= r->conf->fail_after_ms) {
			snprintf(err, errlen, "sandbox %s failed to start: %s", id, hard);
			goto fail;
		}
		if (!v.unschedulable)
			unsched_since = -1;
		else if (unsched_since < 0)
			unsched_since = now;
		if (unsched_since >= 0 && now - unsched_since >= r->conf->unsched_grace_ms) {
			snprintf(err, errlen, "sandbox %s cannot be scheduled (for %lld s): %s",
			    id, (now - unsched_since) / 1000, v.reason);
			goto fail;
		}
		if (now >= deadline) {
			snprintf(err, errlen, "sandbox %s not ready after %lld s (phase %s%s%s%s%s%s%s)",
			    id, r->conf->ready_timeout_ms / 1000,
			    v.phase[0] ? v.phase : "unknown", v.reason[0] ? ", " : "",
			    v.reason, pulling[0] ? ", " : "", pulling,
			    aerr[0] ? ", agent: " : "", aerr);
			goto fail;
		}
		api_nap(hard_since >= 0 && r->conf->fail_after_ms < step ?
		    (r->conf->fail_after_ms > 10 ? r->conf->fail_after_ms : 10) : step);
		step = step * 2 > 1000 ? 1000 : step * 2;
	}
	*podp = pod;
	return 0;
fail:
	cJSON_Delete(pod);
	return -1;
}

