/*
 * runtime/k8s/fleet.c: the egress-proxy fleet (docs/kubernetes.md, "The
 * proxy fleet"): the proxy pods and their load, the least-loaded choice,
 * assigning a sandbox to a proxy pod (register through orchestrator/lib/egress.h,
 * open its policy to that pod only and record the assignment there, its
 * proxy env), scaling the Deployment and the sweep that moves sandboxes
 * off pods that go, on its own thread. The sandbox's NetworkPolicy is
 * written here only, and it is the sandbox's record: which proxy pod the
 * sandbox may reach (none before an attach; so also the record that it
 * was attached, fleet_attached), its session labels (fleet_record), and
 * which exposed app ports the app gateway pods may reach; each in an
 * annotation of the policy (struct np_rec). A claim is one write of it.
 *
 * Rules: every assignment and every scale runs under fleet_mtx, taken
 * here (fleet_assign, fleet_rescale, the sweep) and never held across a
 * call back into k8s.c (there is none: fleet.c calls only api.c). The
 * fleet reads pods with their record (api_sbx_pods: the policy's
 * K8S_ANN_PROXY, K8S_ANN_PROXY_IP, K8S_ANN_LABELS on each pod); the
 * identity a sandbox registers with is its session labels.
 * Env goes to an agent from here only after a move the fleet makes itself.
 * The sweep also heals registrations (proxy_heal): a proxy restarted in
 * place (a new boot id) or missing a registration gets it again; one of
 * a sandbox gone or assigned elsewhere is removed.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "lib/egress.h"
#include "k8s_int.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

/* Hosts a sandbox reaches without the proxy: its own loopback only. */
#define K8S_NO_PROXY	"localhost,127.0.0.1,::1"

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
#define FLEET_WAKE_MIN_MS	1000	/* woken sweeps: at most one a second */
#define FLEET_RETRY_MS		500	/* a failed heal: the first retry ... */
#define FLEET_RETRIES		6	/* ... doubling, this many (~32 s) */

/* A proxy pod's admin endpoint (orchestrator/lib/egress.h); strings borrowed. */
static struct egress_admin
proxy_admin_at(struct k8s_rt *r, const char *ip)
{
	struct egress_admin a = { .host = ip, .port = r->conf->proxy_admin_port,
	    .token = r->admin_token };

	return a;
}

void
fleet_detach(struct k8s_rt *r, const char *id, const cJSON *pod_ann)
{
	struct egress_admin a = proxy_admin_at(r, k8s_ann(pod_ann, K8S_ANN_PROXY_IP));

	egress_deregister(&a, id);
}

/*
 * The app ports a policy's K8S_ANN_APP_PORTS annotation records ("3000,8080")
 * into ports (room for K8S_MAX_APP_PORTS); none if absent. One that does
 * not read (edited by hand) counts as none: the gateway then reaches
 * nothing until the core sets the ports again (on reconcile).
 */
static void
np_ports_read(const cJSON *np, const char *id, int *ports, size_t *n)
{
	const char *s = k8s_ann(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(np, "metadata"), "annotations"),
	    K8S_ANN_APP_PORTS);
	long v;
	int digits;

	*n = 0;
	if (s == NULL || *s == '\0')
		return;
	for (;;) {
		for (v = 0, digits = 0; *s >= '0' && *s <= '9' && digits < 6;
		    s++, digits++)
			v = v * 10 + (*s - '0');
		if (digits == 0 || v < 1 || v > 65535 || *n >= K8S_MAX_APP_PORTS)
			break;
		ports[(*n)++] = (int)v;
		if (*s == '\0')
			return;
		if (*s++ != ',')
			break;
	}
	log_warnx("sandbox=%s network policy: annotation %s does not read; no "
	    "app ports", id, K8S_ANN_APP_PORTS);
	*n = 0;
}

/* The proxy pod a policy lets its sandbox reach, or NULL (in np). */
static const char *
np_proxy_pod(const cJSON *np)
{
	const cJSON *rule, *to, *sel;
	const char *pod;

	cJSON_ArrayForEach(rule, cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(np, "spec"), "egress")) {
		cJSON_ArrayForEach(to, cJSON_GetObjectItemCaseSensitive(rule, "to")) {
			sel = cJSON_GetObjectItemCaseSensitive(to, "podSelector");
			if ((pod = k8s_ann(cJSON_GetObjectItemCaseSensitive(sel,
			    "matchLabels"), K8S_LBL_PROXY_POD)) != NULL)
				return pod;
		}
	}
	return NULL;
}

/* The policy now (cur, NULL if there is none) already says what obj says. */
static int
np_same(const cJSON *cur, const cJSON *obj)
{
	const cJSON *cm, *om;
	static const char *const meta[] = { "labels", "annotations" };
	size_t i;

	if (cur == NULL || !cJSON_Compare(cJSON_GetObjectItemCaseSensitive(cur,
	    "spec"), cJSON_GetObjectItemCaseSensitive(obj, "spec"), 1))
		return 0;
	cm = cJSON_GetObjectItemCaseSensitive(cur, "metadata");
	om = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	for (i = 0; i < NELEM(meta); i++) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(cm, meta[i]);
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(om, meta[i]);

		if ((a == NULL) != (b == NULL) || (a != NULL &&
		    !cJSON_Compare(a, b, 1)))
			return 0;
	}
	return 1;
}

/*
 * What a sandbox's policy says besides its fixed rules, and so the
 * session record it keeps in its annotations: the proxy pod it may reach
 * (K8S_ANN_PROXY, K8S_ANN_PROXY_IP; none before an attach), the session
 * labels (K8S_ANN_LABELS), the app ports the gateway may reach
 * (K8S_ANN_APP_PORTS). Strings are borrowed from the objects they were
 * read from.
 */
struct np_rec {
	const char	*proxy_pod, *proxy_ip;
	const char	*labels;
	int		 ports[K8S_MAX_APP_PORTS];
	size_t		 nports;
};

/*
 * Renders sandbox id's policy from rec and writes it unless cur, the
 * policy now (NULL: none), already says that: a create, or an
 * unconditional replace (no resourceVersion; np_mtx keeps this process's
 * writes in order). Caller holds np_mtx.
 */
static int
np_write(struct k8s_rt *r, const char *id, const struct np_rec *rec,
    const cJSON *cur, char *err, size_t errlen)
{
	struct netpol_kv lbl[3] = {
		{ K8S_LBL_MANAGED, K8S_MANAGER },
		{ K8S_LBL_INSTANCE, r->conf->instance },
		{ K8S_LBL_ID, id },
	};
	struct netpol_kv podsel[2] = { { K8S_LBL_ID, id }, { K8S_LBL_ROLE, "sandbox" } };
	struct netpol_kv psel[K8S_MAX_SEL + 1], ann[4];
	char name[128], path[512], pbuf[K8S_MAX_APP_PORTS * 6 + 1];
	struct netpol_sandbox np;
	size_t i, nann = 0, off = 0;
	cJSON *obj;
	int st, rc = -1;

	memset(&np, 0, sizeof(np));
	k8s_name_netpol(id, name, sizeof(name));
	np.name = name;
	np.ns = r->ns;
	np.labels = lbl;
	np.nlabels = 3;
	np.pod = podsel;
	np.npod = 2;
	if (rec->labels != NULL)
		ann[nann++] = (struct netpol_kv){ K8S_ANN_LABELS, rec->labels };
	if (rec->proxy_pod != NULL) {
		for (i = 0; i < r->nproxy; i++)
			psel[i] = r->proxy[i];
		psel[i].k = K8S_LBL_PROXY_POD;
		psel[i].v = rec->proxy_pod;
		np.proxy = psel;
		np.nproxy = r->nproxy + 1;
		np.proxy_ns = r->pns;
		np.proxy_port = (int)r->conf->proxy_port;
		ann[nann++] = (struct netpol_kv){ K8S_ANN_PROXY, rec->proxy_pod };
		if (rec->proxy_ip != NULL)
			ann[nann++] = (struct netpol_kv){ K8S_ANN_PROXY_IP,
			    rec->proxy_ip };
	}
	np.orch_ns = r->ons;
	np.orch = r->orch;
	np.norch = r->norch;
	np.agent_port = (int)r->conf->agent_port;
	np.dns = r->conf->netpol_dns;
	if (rec->nports > 0) {
		pbuf[0] = '\0';
		for (i = 0; i < rec->nports && i < K8S_MAX_APP_PORTS; i++)
			off += (size_t)snprintf(pbuf + off, sizeof(pbuf) - off,
			    "%s%d", i ? "," : "", rec->ports[i]);
		ann[nann++] = (struct netpol_kv){ K8S_ANN_APP_PORTS, pbuf };
		np.gw_ns = r->gns;
		np.gw = r->gw;
		np.ngw = r->ngw;
		np.app_ports = rec->ports;
		np.napp_ports = rec->nports;
	}
	np.annotations = ann;
	np.nannotations = nann;
	if (rec->nports > K8S_MAX_APP_PORTS ||
	    (obj = netpol_render_sandbox(&np)) == NULL) {
		snprintf(err, errlen, "cannot render network policy for %s", id);
		return -1;
	}
	if (np_same(cur, obj)) {
		rc = 0;
		goto out;
	}
	st = 409;
	if (cur == NULL) {
		api_path(&api_netpols, r->ns, NULL, path, sizeof(path));
		if (api_create(r, path, obj, &st, NULL, err, errlen) == -1) {
			api_failf(err, errlen, "create network policy", name);
			goto out;
		}
	}
	if (st == 409) {
		/* Unconditional update (no resourceVersion). */
		api_path(&api_netpols, r->ns, name, path, sizeof(path));
		if (api_put(r, path, obj, &st, err, errlen) == -1) {
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
 * The record sandbox id's policy keeps, into rec (borrowing from the
 * objects in *hold, which the caller frees): from the policy, or, when
 * there is none, from what the claim and the pod say (the labels the
 * claim was made with, an assignment a pod records from before the
 * record moved to the policy), with a warning: the policy is rewritten
 * from that. -1 with err ("not found" when the claim is gone too).
 * Caller holds np_mtx.
 */
struct np_hold {
	cJSON	*np, *pod, *pvc;
};

static int
np_current(struct k8s_rt *r, const char *id, struct np_rec *rec,
    struct np_hold *h, char *err, size_t errlen)
{
	const cJSON *ann;
	struct k8s_podview v;

	memset(rec, 0, sizeof(*rec));
	memset(h, 0, sizeof(*h));
	if (api_netpol_get(r, id, &h->np, err, errlen) == -1)
		return -1;
	if (h->np != NULL) {
		ann = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(h->np, "metadata"), "annotations");
		rec->proxy_pod = np_proxy_pod(h->np);
		rec->proxy_ip = rec->proxy_pod ? k8s_ann(ann, K8S_ANN_PROXY_IP) : NULL;
		rec->labels = k8s_ann(ann, K8S_ANN_LABELS);
		np_ports_read(h->np, id, rec->ports, &rec->nports);
		return 0;
	}
	/* The policy is made with the claim and goes with it: without one,
	 * the sandbox is gone; else it is made again. */
	if (api_pvc_get(r, id, &h->pvc, err, errlen) == -1 ||
	    api_pod_get(r, id, &h->pod, err, errlen) == -1)
		return -1;
	if (h->pvc == NULL) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	rec->labels = k8s_ann(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(h->pvc, "metadata"), "annotations"),
	    K8S_ANN_LABELS);
	if (h->pod != NULL) {
		k8s_pod_view(h->pod, &v);
		rec->proxy_pod = k8s_ann(v.annotations, K8S_ANN_PROXY);
		rec->proxy_ip = k8s_ann(v.annotations, K8S_ANN_PROXY_IP);
	}
	log_warnx("sandbox=%s had no network policy; writing it again", id);
	return 0;
}

static void
np_hold_free(struct np_hold *h)
{
	cJSON_Delete(h->np);
	cJSON_Delete(h->pod);
	cJSON_Delete(h->pvc);
}

int
fleet_netpol_new(struct k8s_rt *r, const char *id, const char *labels,
    char *err, size_t errlen)
{
	struct np_rec rec;
	int rc;

	memset(&rec, 0, sizeof(rec));
	rec.labels = labels;
	pthread_mutex_lock(&r->np_mtx);
	rc = np_write(r, id, &rec, NULL, err, errlen);
	pthread_mutex_unlock(&r->np_mtx);
	return rc;
}

/* Rewrites id's policy from its current record: with set_proxy, the
 * assignment proxy_pod/proxy_ip (NULL: none); labels, if not NULL, as the
 * session labels. Under np_mtx, so concurrent rewrites do not lose one. */
static int
np_rewrite(struct k8s_rt *r, const char *id, int set_proxy,
    const char *proxy_pod, const char *proxy_ip, const char *labels, char *err,
    size_t errlen)
{
	struct np_hold h;
	struct np_rec rec;
	int rc = -1;

	pthread_mutex_lock(&r->np_mtx);
	if (np_current(r, id, &rec, &h, err, errlen) == -1)
		goto out;
	if (set_proxy) {
		rec.proxy_pod = proxy_pod;
		rec.proxy_ip = proxy_pod != NULL ? proxy_ip : NULL;
	}
	if (labels != NULL)
		rec.labels = labels;
	rc = np_write(r, id, &rec, h.np, err, errlen);
out:
	pthread_mutex_unlock(&r->np_mtx);
	np_hold_free(&h);
	return rc;
}

int
fleet_netpol_apply(struct k8s_rt *r, const char *id, const char *proxy_pod,
    const char *proxy_ip, const char *labels, char *err, size_t errlen)
{
	return np_rewrite(r, id, 1, proxy_pod, proxy_ip, labels, err, errlen);
}

int
fleet_record(struct k8s_rt *r, const char *id, const char *labels, char *err,
    size_t errlen)
{
	return np_rewrite(r, id, 0, NULL, NULL, labels, err, errlen);
}

int
fleet_app_ports(struct k8s_rt *r, const char *id, const int *ports, size_t n,
    char *err, size_t errlen)
{
	struct np_hold h;
	struct np_rec rec;
	size_t i;
	int rc = -1;

	if (n > K8S_MAX_APP_PORTS) {
		snprintf(err, errlen, "too many app ports (max %d)", K8S_MAX_APP_PORTS);
		return -1;
	}
	pthread_mutex_lock(&r->np_mtx);
	if (np_current(r, id, &rec, &h, err, errlen) == -1)
		goto out;
	for (i = 0; i < n; i++)
		rec.ports[i] = ports[i];
	rec.nports = n;
	rc = np_write(r, id, &rec, h.np, err, errlen);
	if (rc == 0)
		log_info("sandbox=%s app ports=%zu", id, n);
out:
	pthread_mutex_unlock(&r->np_mtx);
	np_hold_free(&h);
	return rc;
}

int
fleet_attached(struct k8s_rt *r, const char *id, int *yes, char *err,
    size_t errlen)
{
	cJSON *np;

	*yes = 0;
	if (api_netpol_get(r, id, &np, err, errlen) == -1)
		return -1;
	*yes = np_proxy_pod(np) != NULL;
	cJSON_Delete(np);
	return 0;
}

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
	if (api_proxy_pods(r, &items, err, errlen) == -1)
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
 * scale-down: controller.kubernetes.io/pod-deletion-cost VICTIM_COST for
 * the pods chosen to go (0 again for a pod that was one and stays; other
 * pods are not written). Each PATCH is applied once it is answered. -1 if a victim's mark did not take (then the caller
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
		/* A victim gets the lowest cost; a pod that was one and stays
		 * gets 0 back; others keep theirs (the victims are below any
		 * cost written, so no write per assignment). */
		want = p[i].victim ? VICTIM_COST : 0;
		if (p[i].deleting || p[i].cost == want ||
		    (!p[i].victim && p[i].cost != VICTIM_COST))
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

/*
 * Sets the proxy Deployment's replicas through the scale subresource
 * (caller holds fleet_mtx). fresh: read the scale first (the timed sweep:
 * it corrects a scale someone else changed); else the scale as last read
 * or set stands when known (the rescale after each create, start, stop or
 * destroy: two requests fewer per new session; a change made behind our
 * back lasts until the next sweep).
 */
static int
scale_to(struct k8s_rt *r, long long want, int fresh, char *err,
    size_t errlen)
{
	char path[512];
	cJSON *sc = NULL, *patch;
	const cJSON *spec, *rep;
	int st, rc = -1;
	long long have = r->scale_have;

	snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/deployments/%s/scale",
	    r->pns, r->conf->proxy_deployment);
	if (fresh || have < 0) {
		if (api_call(r, "GET", path, NULL, NULL, NULL, 0, &st, &sc, err,
		    errlen) == -1) {
			r->scale_have = -1;
			return api_failf(err, errlen, "get scale of deployment",
			    r->conf->proxy_deployment);
		}
		spec = cJSON_GetObjectItemCaseSensitive(sc, "spec");
		rep = cJSON_GetObjectItemCaseSensitive(spec, "replicas");
		have = cJSON_IsNumber(rep) ? (long long)rep->valuedouble : 0;
		cJSON_Delete(sc);
		r->scale_have = have;
	}
	if (have == want)
		return 0;
	patch = cJSON_CreateObject();
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(patch, "spec"), "replicas",
	    (double)want);
	if (api_call(r, "PATCH", path, API_Q_STRICT, API_CT_MERGE, patch, 0, &st, NULL, err,
	    errlen) == -1) {
		r->scale_have = -1;
		api_failf(err, errlen, "scale deployment", r->conf->proxy_deployment);
		goto out;
	}
	r->scale_have = want;
	log_info("k8s proxy deployment=%s/%s replicas=%lld (was %lld)", r->pns,
	    r->conf->proxy_deployment, want, have);
	rc = 0;
out:
	cJSON_Delete(patch);
	return rc;
}

/*
 * A warm-pool member (orchestrator/session/pool.c): never attached, its session
 * labels say pool and name no session. It holds no proxy replica: it is
 * assigned a proxy at claim (attach_egress adds the session label first).
 */
static int
pod_warm(const struct k8s_podview *v)
{
	struct rt_info li;
	int warm;

	if (k8s_ann(v->annotations, K8S_ANN_PROXY) != NULL)
		return 0;
	memset(&li, 0, sizeof(li));
	api_labels(v->annotations, &li);
	warm = rt_kv_get(li.labels, li.nlabels, LBL_POOL) != NULL &&
	    rt_kv_get(li.labels, li.nlabels, LBL_SESSION) == NULL;
	rt_info_clear(&li);
	return warm;
}

/* The load of each proxy pod, and *running: the sandboxes that hold a
 * proxy replica (not failed, not going, not warm). */
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
		if (v.deleting || v.failed || pod_warm(&v))
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
 * "K=V\n" lines (orchestrator/lib/egress.h): its credential, NO_PROXY, and the
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
	int rc = -1, tries = 0;

	*px = NULL;
	for (;; tries++) {
		free(*px);
		*px = NULL;
		cJSON_Delete(pods);
		pods = NULL;
		if (proxies_list(r, px, &npx, err, errlen) == -1 ||
		    api_sbx_pods(r, &pods, err, errlen) == -1)
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
		/* (read back after the first try: a scale changed behind our
		 * back must not keep us waiting) */
		if (scale_to(r, desired_replicas(r, running > 0 ? running : 1),
		    tries > 0, err, errlen) == -1)
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
 * named by labels (orchestrator/lib/egress.h), with its derived credential,
 * good only from its pod IP; ce gets its named credentials' variables,
 * out (NULL: nothing wanted) their client files and names (its
 * files_out and creds_out; egress_reg).
 */
static int
proxy_register(struct k8s_rt *r, const struct proxy *p, const char *id,
    const char *pod_ip, const struct rt_kv *labels, size_t nlabels, struct buf *ce,
    const struct rt_egress *out, char *err, size_t errlen)
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
	reg.cred_env = ce;
	reg.client_files = out != NULL ? out->files_out : NULL;
	reg.creds = out != NULL ? out->creds_out : NULL;
	rc = egress_register(&a, &reg, err, errlen);
	explicit_bzero(sec, sizeof(sec));
	if (rc == -1)
		return api_failf(err, errlen, "register sandbox with proxy pod", p->name);
	return 0;
}

/*
 * Assigns a sandbox (whose pod is running at pod_ip) to the least-loaded
 * ready proxy pod, scaling the fleet up first if there is none: registers
 * it there under labels, then, in one write of its policy, lets it reach
 * that pod only and records the assignment (and record, the session
 * labels JSON to keep from now on, unless NULL), and writes the proxy env
 * to env_out. With avoid (a proxy list with victims marked), it moves the
 * sandbox off those pods and fails rather than scale or wait. Caller
 * holds fleet_mtx.
 */
static int
assign_locked(struct k8s_rt *r, const char *id, const char *pod_ip,
    const char *current, const struct rt_kv *labels, size_t nlabels,
    const char *record, const struct proxy *avoid, size_t navoid,
    const struct rt_egress *out, char *env_out, size_t envlen, char *err, size_t errlen)
{
	struct proxy *px = NULL, *best = NULL;
	struct buf ce;
	int rc = -1;

	buf_init(&ce, 4096);
	if (proxy_pick(r, current, avoid, navoid, &px, &best, err, errlen) == -1 ||
	    proxy_label(r, best, err, errlen) == -1 ||
	    proxy_register(r, best, id, pod_ip, labels, nlabels, &ce, out, err,
	    errlen) == -1)
		goto out;
	best->load++;
	if (fleet_netpol_apply(r, id, best->name, best->ip, record, err,
	    errlen) == -1 ||
	    proxy_env(r, id, best->ip, env_out, envlen, err, errlen) == -1)
		goto out;
	/* the named credentials' placeholders (issue 30) ride with it */
	if (ce.len > 0 && strlen(env_out) + ce.len >= envlen) {
		snprintf(err, errlen, "sandbox %s: the proxy env needs more than %zu bytes",
		    id, envlen);
		goto out;
	}
	if (ce.len > 0)
		memcpy(env_out + strlen(env_out), ce.p, ce.len + 1);
	log_info("sandbox=%s proxy=%s/%s ip=%s load=%lld", id, r->pns, best->name,
	    best->ip, best->load);
	rc = 0;
out:
	buf_free(&ce);
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
	rc = assign_locked(r, v->id, v->ip, NULL, li.labels, li.nlabels, NULL,
	    avoid, navoid, NULL, env, sizeof(env), err, errlen);
	if (rc == 0 && api_agent_push_env(r, v->id, v->ip, env, e2, sizeof(e2)) == -1)
		log_warnx("sandbox=%s could not push proxy env to the agent: %s",
		    v->id, e2);
	explicit_bzero(env, sizeof(env));
	rt_info_clear(&li);
	return rc;
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
	if (api_sbx_pods(r, pods, err, errlen) == -1 ||
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
 * A proxy pod's boot id as the last sweep saw it (its admin stats
 * "boot_id", docs/internals/proxy-admin.md): a new one means the proxy
 * process restarted in place and forgot every registration.
 */
struct fleet_boot {
	char	name[254];
	char	id[64];
};

static struct fleet_boot *
boot_find(struct k8s_rt *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nboots; i++)
		if (strcmp(r->boots[i].name, name) == 0)
			return &r->boots[i];
	return NULL;
}

static void
boot_note(struct k8s_rt *r, const char *name, const char *id)
{
	struct fleet_boot *b;

	if ((b = boot_find(r, name)) == NULL) {
		r->boots = xreallocarray(r->boots, r->nboots + 1,
		    sizeof(*r->boots));
		b = &r->boots[r->nboots++];
		snprintf(b->name, sizeof(b->name), "%s", name);
	}
	snprintf(b->id, sizeof(b->id), "%s", id);
}

/* Forgets the boot ids of pods no longer listed. */
static void
boots_prune(struct k8s_rt *r, struct proxy *p, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < r->nboots; i++)
		if (proxy_find(p, n, r->boots[i].name) != NULL)
			r->boots[k++] = r->boots[i];
	r->nboots = k;
}

static int
ids_cmp(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The running sandbox pod v is assigned to proxy pod name. */
static int
assigned_to(const struct k8s_podview *v, const char *name)
{
	const char *cur = k8s_ann(v->annotations, K8S_ANN_PROXY);

	return !v->deleting && !v->failed && v->id != NULL &&
	    id_sandbox_valid(v->id) && v->ip != NULL &&
	    strcmp(v->phase, "Running") == 0 && cur != NULL &&
	    strcmp(cur, name) == 0;
}

/* The ids of the sandboxes the listing has running at proxy pod name,
 * sorted (borrowed from pods; caller frees the array). */
static const char **
assigned_ids(cJSON *pods, const char *name, size_t *n)
{
	struct k8s_podview v;
	const char **ids = NULL;
	size_t cap = 0;
	cJSON *it;

	*n = 0;
	cJSON_ArrayForEach(it, pods) {
		k8s_pod_view(it, &v);
		if (!assigned_to(&v, name))
			continue;
		if (*n == cap) {
			cap = cap != 0 ? cap * 2 : 64;
			ids = xreallocarray(ids, cap, sizeof(*ids));
		}
		ids[(*n)++] = v.id;
	}
	if (*n > 0)
		qsort(ids, *n, sizeof(*ids), ids_cmp);
	return ids;
}

/*
 * Sandbox id is registered at proxy pod p but the listing does not have
 * it there: asks its pod itself (a listing may be older than an
 * assignment). 1 if it is gone, going or assigned elsewhere (so the
 * registration is stale), 0 if it is p's after all or the API did not
 * answer (then nothing is removed this sweep).
 */
static int
registration_stale(struct k8s_rt *r, const char *id, const struct proxy *p,
    const char **why)
{
	struct k8s_podview v;
	cJSON *pod = NULL;
	char err[512];
	int stale = 0;

	if (api_sbx_pod(r, id, &pod, err, sizeof(err)) == -1) {
		log_warnx("sandbox=%s proxy=%s stale check: %s", id, p->name, err);
		return 0;
	}
	if (pod == NULL) {
		*why = "its pod is gone";
		stale = 1;
	} else {
		k8s_pod_view(pod, &v);
		if (v.deleting || v.failed) {
			*why = "its pod is going";
			stale = 1;
		} else if (k8s_ann(v.annotations, K8S_ANN_PROXY) == NULL ||
		    strcmp(k8s_ann(v.annotations, K8S_ANN_PROXY), p->name) != 0) {
			/* (Unassigned: a start makes a new pod, assigned after
			 * it runs, under fleet_mtx, which we hold.) */
			*why = "it is assigned elsewhere";
			stale = 1;
		}
	}
	cJSON_Delete(pod);
	return stale;
}

/*
 * Sweep, healing step, for ready proxy pod p (pods: the sandbox pods
 * listed by this sweep): asks p's stats summary (its boot id and how many
 * it has registered). If its boot id is the one the last sweep saw and
 * the count is the number of sandboxes assigned to p, nothing more is
 * asked. Otherwise (the proxy restarted in place, the pod staying Ready;
 * or a registration is missing or stale) it reads p's ids page by page
 * and registers there again every sandbox assigned to p that it lacks
 * (all of them after a restart), as assign_locked did (session labels on
 * its pod, the derived credential, its pod IP): its env is unchanged, so
 * nothing is pushed. A registration there of a sandbox that is gone or
 * assigned elsewhere is removed.
 * Caller holds fleet_mtx. Errors are logged and set r->heal_failed: the
 * fleet thread then sweeps again soon (FLEET_RETRY_MS, doubling), not
 * one fleet_interval later. (A proxy restarted in place is woken for as
 * soon as its restartCount rises, which can be before its new process
 * listens on its admin port: that stats call is refused.)
 */
static void
proxy_heal(struct k8s_rt *r, cJSON *pods, const struct proxy *p)
{
	static struct log_rate rl;
	struct egress_admin a = proxy_admin_at(r, p->ip);
	const struct fleet_boot *seen = boot_find(r, p->name);
	struct egress_ids sum, known;
	struct k8s_podview v;
	struct rt_info li;
	const char **mine;
	cJSON *it;
	const char *id, *why;
	char err[512];
	size_t nmine, i;
	int restarted;
	long dropped;

	memset(&known, 0, sizeof(known));
	mine = assigned_ids(pods, p->name, &nmine);
	if (egress_stats_summary(&a, &sum, err, sizeof(err)) == -1)
		goto failed;
	restarted = sum.boot_id[0] != '\0' && seen != NULL &&
	    strcmp(seen->id, sum.boot_id) != 0;
	if (!restarted && seen != NULL && sum.count == (long long)nmine)
		goto out;
	if (egress_stats_ids(&a, &known, err, sizeof(err)) == -1)
		goto failed;
	restarted = known.boot_id[0] != '\0' && seen != NULL &&
	    strcmp(seen->id, known.boot_id) != 0;
	if (restarted)
		log_info("k8s proxy pod=%s restarted (boot id %s, was %s); "
		    "registering its sandboxes again", p->name, known.boot_id,
		    seen->id);
	cJSON_ArrayForEach(it, pods) {
		k8s_pod_view(it, &v);
		if (!assigned_to(&v, p->name) || (!restarted &&
		    egress_ids_has(&known, v.id)))
			continue;
		memset(&li, 0, sizeof(li));
		api_labels(v.annotations, &li);
		if (proxy_register(r, p, v.id, v.ip, li.labels, li.nlabels, NULL,
		    NULL, err, sizeof(err)) == -1) {
			log_warnx("sandbox=%s register again: %s", v.id, err);
			r->heal_failed = 1;
		} else
			log_info("sandbox=%s proxy=%s registered again (%s)", v.id,
			    p->name, restarted ? "the proxy restarted" :
			    "its registration was missing");
		rt_info_clear(&li);
	}
	for (i = 0; i < known.n; i++) {
		id = known.v[i];
		/* (Not a sandbox id: the proxy's anonymous one, not ours.) */
		if (!id_sandbox_valid(id) || (nmine > 0 && bsearch(&id, mine,
		    nmine, sizeof(*mine), ids_cmp) != NULL) ||
		    !registration_stale(r, id, p, &why))
			continue;
		log_info("sandbox=%s proxy=%s stale registration (%s); "
		    "deregistering", id, p->name, why);
		egress_deregister(&a, id);
	}
	memcpy(sum.boot_id, known.boot_id, sizeof(sum.boot_id));
out:
	if (sum.boot_id[0] != '\0')
		boot_note(r, p->name, sum.boot_id);
	egress_ids_free(&known);
	free(mine);
	return;
failed:
	if (log_rate_ok(&rl, 5, 60000, &dropped))
		log_warnx("k8s proxy pod=%s stats (registrations not "
		    "checked): %s", p->name, err);
	r->heal_failed = 1;
	egress_ids_free(&known);
	free(mine);
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

	if (api_sbx_pods(r, &pods, err, errlen) == -1 ||
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
	if (scale_to(r, want, reassign, err, errlen) == -1)
		goto out;
	for (i = 0; i < npx; i++)
		if (px[i].ready && proxy_label(r, &px[i], e2, sizeof(e2)) == -1)
			log_warnx("k8s %s", e2);
	if (reassign) {
		r->heal_failed = 0;
		reassign_orphans(r, pods, px, npx);
		for (i = 0; i < npx; i++)
			if (px[i].ready && !px[i].victim)
				proxy_heal(r, pods, &px[i]);
		boots_prune(r, px, npx);
	}
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

void
fleet_rescale(struct k8s_rt *r)
{
	char err[512];

	pthread_mutex_lock(&r->fleet_mtx);
	if (fleet_sync_locked(r, 0, err, sizeof(err)) == -1)
		log_warnx("k8s %s", err);
	pthread_mutex_unlock(&r->fleet_mtx);
}

int
fleet_assign(struct k8s_rt *r, const char *id, const char *pod_ip,
    const char *current, const struct rt_kv *labels, size_t nlabels,
    const char *record, const struct rt_egress *out, char *env_out, size_t envlen,
    char *err, size_t errlen)
{
	int rc;

	pthread_mutex_lock(&r->fleet_mtx);
	rc = assign_locked(r, id, pod_ip, current, labels, nlabels, record, NULL,
	    0, out, env_out, envlen, err, errlen);
	pthread_mutex_unlock(&r->fleet_mtx);
	return rc;
}

/* The restarts of a pod's containers, summed; -1: no statuses yet. */
static long long
pod_restarts(const cJSON *pod)
{
	const cJSON *cs, *c, *n;
	long long sum = -1;

	cs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod,
	    "status"), "containerStatuses");
	cJSON_ArrayForEach(c, cs) {
		n = cJSON_GetObjectItemCaseSensitive(c, "restartCount");
		if (cJSON_IsNumber(n))
			sum = (sum < 0 ? 0 : sum) + (long long)n->valuedouble;
	}
	return sum;
}

void
fleet_proxy_event(void *arg, const cJSON *old, const cJSON *now)
{
	struct k8s_rt *r = arg;
	struct k8s_podview vo, vn;
	long long ro, rn;

	if (now == NULL)
		return;	/* a pod gone: the sweep's re-assignment, as before */
	k8s_pod_view(now, &vn);
	if (!vn.ready || vn.deleting)
		return;
	if (old != NULL) {
		k8s_pod_view(old, &vo);
		ro = pod_restarts(old);
		rn = pod_restarts(now);
		if (vo.ready && (ro < 0 || rn <= ro))
			return;	/* was Ready and did not restart */
	}
	pthread_mutex_lock(&r->stop_mtx);
	r->sweep_now = 1;
	pthread_cond_signal(&r->stop_cv);
	pthread_mutex_unlock(&r->stop_mtx);
}

/*
 * The fleet thread: a sweep every fleet_interval until fleet_stop(), and
 * one as soon as fleet_proxy_event asks (a proxy turned Ready or
 * restarted), at most one per FLEET_WAKE_MIN_MS so a flapping proxy
 * cannot drive sweeps back to back. A sweep whose healing step failed at
 * some proxy pod (proxy_heal: its stats or a registration refused, e.g.
 * a proxy woken for before its new process listens) is followed by
 * another FLEET_RETRY_MS later, doubling, at most FLEET_RETRIES in a row
 * (then one fleet_interval later, as before), each no later than the
 * timed one would be.
 */
static void *
fleet_main(void *arg)
{
	struct k8s_rt *r = arg;
	struct timespec ts;
	char err[512];
	long long last = 0, wait, period;
	int rc, woken, failed, retries = 0;

	pthread_mutex_lock(&r->stop_mtx);
	while (!r->stopping) {
		period = r->conf->fleet_interval_ms;
		if (retries > 0 && retries <= FLEET_RETRIES &&
		    (FLEET_RETRY_MS << (retries - 1)) < period)
			period = FLEET_RETRY_MS << (retries - 1);
		util_deadline(&ts, period);
		while (!r->stopping && !r->sweep_now)
			if (pthread_cond_timedwait(&r->stop_cv, &r->stop_mtx,
			    &ts) == ETIMEDOUT)
				break;
		woken = r->sweep_now;
		r->sweep_now = 0;
		if (r->stopping)
			break;
		wait = last + FLEET_WAKE_MIN_MS - util_mono_ms();
		if (woken && wait > 0) {
			util_deadline(&ts, wait);
			while (!r->stopping && pthread_cond_timedwait(&r->stop_cv,
			    &r->stop_mtx, &ts) != ETIMEDOUT)
				;
			r->sweep_now = 0;
			if (r->stopping)
				break;
		}
		pthread_mutex_unlock(&r->stop_mtx);
		if (woken)
			log_info("k8s fleet: a proxy pod turned Ready or restarted: "
			    "sweeping now");
		else if (retries > 0 && retries <= FLEET_RETRIES)
			log_info("k8s fleet: retrying the last sweep's failed "
			    "healing (retry %d of %d)", retries, FLEET_RETRIES);
		last = util_mono_ms();
		pthread_mutex_lock(&r->fleet_mtx);
		rc = fleet_sync_locked(r, 1, err, sizeof(err));
		failed = rc == 0 && r->heal_failed;
		pthread_mutex_unlock(&r->fleet_mtx);
		if (rc == -1)
			log_warnx("k8s fleet sync: %s", err);
		/* (A woken sweep that failed starts the retries over.) */
		retries = !failed ? 0 : woken ? 1 : retries + 1;
		pthread_mutex_lock(&r->stop_mtx);
	}
	pthread_mutex_unlock(&r->stop_mtx);
	return NULL;
}

int
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

void
fleet_stop(struct k8s_rt *r)
{
	if (!r->thr_started)
		goto out;
	pthread_mutex_lock(&r->stop_mtx);
	r->stopping = 1;
	pthread_cond_signal(&r->stop_cv);
	pthread_mutex_unlock(&r->stop_mtx);
	pthread_join(r->thr, NULL);
	r->thr_started = 0;
out:
	free(r->boots);
	r->boots = NULL;
	r->nboots = 0;
}
