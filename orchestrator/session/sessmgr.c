/*
 * sessmgr.c: the bottom layer of the session manager (sess_int.h): the
 * session table and its hash, the pending set that reconcile leaves alone,
 * creation slots, the runtime wrappers (serialised when the runtime asks),
 * the session record as labels, agent calls over each session's cached
 * connections, and the metrics. It calls nothing above it (pool.c, sess.c,
 * reconcile.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "hex.h"
#include "lib/agentc.h"
#include "log.h"
#include "sess_int.h"
#include "strnum.h"
#include "util.h"
#include "lib/work.h"
#include "xmalloc.h"


static unsigned
hash_str(const char *s)
{
	return util_hash_str(s) % HASH_SIZE;
}

void
sm_new_rtid(char *out, size_t len, const char *prefix)
{
	unsigned char r[8];
	char h[HEX_LEN(sizeof(r)) + 1];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		fatal("getrandom");
	hex_encode(r, sizeof(r), h);
	snprintf(out, len, "%s%s", prefix, h);
}

void
sm_pending_add_locked(struct sessmgr *m, const char *id)
{
	m->pending = xreallocarray(m->pending, m->npending + 1, sizeof(char *));
	m->pending[m->npending++] = xstrdup(id);
}

void
sm_pending_del(struct sessmgr *m, const char *id)
{
	size_t i;

	pthread_mutex_lock(&m->mu);
	for (i = 0; i < m->npending; i++)
		if (strcmp(m->pending[i], id) == 0) {
			free(m->pending[i]);
			m->pending[i] = m->pending[--m->npending];
			break;
		}
	pthread_mutex_unlock(&m->mu);
}

int
sm_pending_has_locked(struct sessmgr *m, const char *id)
{
	size_t i;

	for (i = 0; i < m->npending; i++)
		if (strcmp(m->pending[i], id) == 0)
			return 1;
	return 0;
}

struct sess *
sm_lookup_locked(struct sessmgr *m, const char *sid)
{
	struct sess *s;

	for (s = m->tab[hash_str(sid)]; s != NULL; s = s->hnext)
		if (strcmp(s->sid, sid) == 0)
			return s;
	return NULL;
}

struct sess *
sm_insert_locked(struct sessmgr *m, const char *sid, const char *org,
    const char *user)
{
	struct sess *s = xcalloc(1, sizeof(*s));
	unsigned h = hash_str(sid);
	const struct policy *pol;

	s->mgr = m;
	snprintf(s->sid, sizeof(s->sid), "%s", sid);
	snprintf(s->org, sizeof(s->org), "%s", org ? org : "");
	snprintf(s->user, sizeof(s->user), "%s", user ? user : "");
	/* Every session starts with the operator's policy for its org: a
	 * trusted REST client may narrow it (sess_set_policy), nothing else
	 * changes it. */
	if ((pol = policy_set_for(m->conf->policies, s->org)) != NULL)
		s->policy = policy_text(pol);
	pthread_rwlock_init(&s->lk, NULL);
	agentc_cache_init(&s->conns);
	s->state = S_NONE;
	atomic_store(&s->last_used_ms, util_unix_ms());
	s->hnext = m->tab[h];
	m->tab[h] = s;
	m->nsess++;
	return s;
}

void
sm_remove_locked(struct sessmgr *m, struct sess *s)
{
	struct sess **pp;

	if (s->removed)
		return;
	for (pp = &m->tab[hash_str(s->sid)]; *pp != NULL; pp = &(*pp)->hnext)
		if (*pp == s) {
			*pp = s->hnext;
			break;
		}
	s->removed = 1;
	m->nsess--;
}

void
sm_sess_free(struct sess *s)
{
	agentc_cache_clear(&s->conns);
	pthread_rwlock_destroy(&s->lk);
	agentc_cache_destroy(&s->conns);
	free(s->policy);
	free(s->creds);
	free(s);
}

void
sm_poolmem_free(struct poolmem *p)
{
	if (p == NULL)
		return;
	agentc_close(p->conn);
	free(p->env);
	free(p);
}

struct sessmgr *
sessmgr_new(struct runtime *rt, const struct conf *conf)
{
	struct sessmgr *m = xcalloc(1, sizeof(*m));

	m->rt = rt;
	m->conf = conf;
	pthread_mutex_init(&m->mu, NULL);
	pthread_mutex_init(&m->rtmu, NULL);
	pthread_cond_init(&m->slot_cv, NULL);
	if (conf->policies != NULL)
		log_info("credential policies from %s: default %s, %zu orgs",
		    conf->policy_file, policy_set_for(conf->policies, NULL) != NULL ?
		    "set" : "none", policy_set_norgs(conf->policies));
	sessmgr_health_refresh(m);
	return m;
}

void
sessmgr_health_refresh(struct sessmgr *m)
{
	cJSON *h = NULL, *old;

	if (m->rt->ops->health != NULL)
		h = m->rt->ops->health(m->rt);
	if (h == NULL)
		h = cJSON_CreateArray();
	pthread_mutex_lock(&m->mu);
	old = m->health;
	m->health = h;
	m->health_ms = util_mono_ms();
	pthread_mutex_unlock(&m->mu);
	cJSON_Delete(old);
}

void
sessmgr_heal(struct sessmgr *m)
{
	static atomic_flag running = ATOMIC_FLAG_INIT;

	if (m->rt->ops->heal == NULL || atomic_flag_test_and_set(&running))
		return;
	m->rt->ops->heal(m->rt);
	atomic_flag_clear(&running);
}

cJSON *
sessmgr_health(struct sessmgr *m, int *ready)
{
	cJSON *o = cJSON_CreateObject(), *checks, *c, *e;
	const char *failing = NULL, *name;
	char msg[1024];

	msg[0] = '\0';
	pthread_mutex_lock(&m->mu);
	checks = m->health != NULL ? cJSON_Duplicate(m->health, 1) :
	    cJSON_CreateArray();
	cJSON_AddNumberToObject(o, "checked_ms_ago", m->health != NULL ?
	    (double)(util_mono_ms() - m->health_ms) : -1);
	if (m->draining) {
		failing = "draining";
		snprintf(msg, sizeof(msg), "shutting down");
	} else if (!m->ready) {
		failing = "reconcile";
		snprintf(msg, sizeof(msg), "reconciling with the runtime");
	}
	pthread_mutex_unlock(&m->mu);
	cJSON_ArrayForEach(c, checks) {
		if (failing != NULL)
			break;
		if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c, "ok"))) {
			name = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(c, "name"));
			e = cJSON_GetObjectItemCaseSensitive(c, "error");
			failing = name != NULL ? name : "?";
			snprintf(msg, sizeof(msg), "runtime check %s failed: %s",
			    failing, cJSON_IsString(e) ? e->valuestring : "");
		}
	}
	*ready = failing == NULL;
	cJSON_AddBoolToObject(o, "ready", *ready);
	if (failing != NULL) {
		cJSON_AddStringToObject(o, "failing", failing);
		e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "code", "not_ready");
		cJSON_AddStringToObject(e, "message", msg);
	}
	cJSON_AddItemToObject(o, "checks", checks);
	return o;
}

void
sessmgr_free(struct sessmgr *m)
{
	struct poolmem *p, *pn;
	struct sess *s, *sn;
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < HASH_SIZE; i++)
		for (s = m->tab[i]; s != NULL; s = sn) {
			sn = s->hnext;
			sm_sess_free(s);
		}
	for (p = m->pool; p != NULL; p = pn) {
		pn = p->next;
		sm_poolmem_free(p);
	}
	for (i = 0; i < m->npending; i++)
		free(m->pending[i]);
	free(m->pending);
	if (m->env_cache != NULL)
		explicit_bzero(m->env_cache, strlen(m->env_cache));
	free(m->env_cache);
	cJSON_Delete(m->health);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

void
sessmgr_set_draining(struct sessmgr *m)
{
	pthread_mutex_lock(&m->mu);
	m->draining = 1;
	pthread_mutex_unlock(&m->mu);
}

int
sessmgr_ready(struct sessmgr *m)
{
	int r;

	pthread_mutex_lock(&m->mu);
	r = m->ready && !m->draining;
	pthread_mutex_unlock(&m->mu);
	return r;
}

const char *
sess_sandbox_id(struct sess *s)
{
	return s->rtid;
}

const char *
sess_sid(struct sess *s)
{
	return s->sid;
}

/*
 * Lifecycle calls into the runtime, one at a time when runtime_serialize is
 * set: the local runtime forks helpers whose inherited pipes and lock fds
 * deadlock when creations overlap.
 */
static void
rt_lock(struct sessmgr *m)
{
	if (m->conf->runtime_serialize)
		pthread_mutex_lock(&m->rtmu);
}

static void
rt_unlock(struct sessmgr *m)
{
	if (m->conf->runtime_serialize)
		pthread_mutex_unlock(&m->rtmu);
}

int
sm_rt_call(struct sessmgr *m, sm_rt_idop op, const char *id, char *err, size_t errlen)
{
	int rc;

	rt_lock(m);
	rc = op(m->rt, id, err, errlen);
	rt_unlock(m);
	return rc;
}

int
sm_rt_create(struct sessmgr *m, const struct rt_spec *sp,
    const struct rt_progress *pg, struct rt_info *ri, char *err, size_t errlen)
{
	int rc;

	rt_lock(m);
	rc = m->rt->ops->create(m->rt, sp, pg, ri, err, errlen);
	rt_unlock(m);
	return rc;
}

int
sm_rt_start(struct sessmgr *m, const char *id, const struct rt_progress *pg,
    char *err, size_t errlen)
{
	int rc;

	rt_lock(m);
	rc = m->rt->ops->start(m->rt, id, pg, err, errlen);
	rt_unlock(m);
	return rc;
}

int
sm_rt_attach(struct sessmgr *m, const char *id, const struct rt_egress *eg,
    char *env, size_t envlen, char *err, size_t errlen)
{
	/* No fork in attach (the local runtime uses setns on a thread): it
	 * need not wait behind a creation, so a pool claim stays fast. */
	return m->rt->ops->attach_egress(m->rt, id, eg, env, envlen, err, errlen);
}

int
sm_count_state_locked(struct sessmgr *m, enum sstate st)
{
	size_t i;
	struct sess *s;
	int n = 0;

	for (i = 0; i < HASH_SIZE; i++)
		for (s = m->tab[i]; s != NULL; s = s->hnext)
			if (s->state == st)
				n++;
	return n;
}

int
sm_count_frozen_locked(struct sessmgr *m)
{
	struct sess *s;
	int i, n = 0;

	for (i = 0; i < HASH_SIZE; i++)
		for (s = m->tab[i]; s != NULL; s = s->hnext)
			n += s->state == S_RUNNING && atomic_load(&s->frozen);
	return n;
}

int
sm_count_running_locked(struct sessmgr *m)
{
	return m->npool + m->pool_creating + m->creating +
	    sm_count_state_locked(m, S_RUNNING);
}

void
sm_fmt_ll(char *b, size_t n, long long v)
{
	snprintf(b, n, "%lld", v);
}

int
sm_identity_ok_locked(const struct sess *s, const char *org, const char *user,
    char *err, size_t errlen)
{
	const char *o = org != NULL ? org : "", *u = user != NULL ? user : "";
	const char *bad;

	if (*o == '\0' && *u == '\0')
		return 1;	/* no claim: the session's identity stands */
	if (strcmp(s->org, o) != 0)
		bad = "org (X-Org-Id)";
	else if (strcmp(s->user, u) != 0)
		bad = "user (X-User-Id)";
	else
		return 1;
	snprintf(err, errlen, "this request's %s differs from the one session "
	    "'%s' was created with: a session's org and user are fixed when it "
	    "is created and are never changed by a later request. Use a new "
	    "session id (X-Session-Id) for another org or user", bad, s->sid);
	return 0;
}

void
sm_record(struct sess *s, const char *id, int stopped, struct sm_rec *r)
{
	size_t n = 0;

	r->kv[n].k = LBL_SESSION;
	r->kv[n++].v = s->sid;
	if (s->org[0] != '\0') {
		r->kv[n].k = LBL_ORG;
		r->kv[n++].v = s->org;
	}
	if (s->user[0] != '\0') {
		r->kv[n].k = LBL_USER;
		r->kv[n++].v = s->user;
	}
	sm_fmt_ll(r->created, sizeof(r->created), s->created_ms);
	r->kv[n].k = LBL_CREATED;
	r->kv[n++].v = r->created;
	if (stopped) {
		sm_fmt_ll(r->stopped, sizeof(r->stopped), s->stopped_ms);
		r->kv[n].k = LBL_STOPPED;
		r->kv[n++].v = r->stopped;
	}
	if (s->lifetime_ms > 0) {
		sm_fmt_ll(r->life, sizeof(r->life), s->lifetime_ms);
		r->kv[n].k = LBL_LIFETIME;
		r->kv[n++].v = r->life;
	}
	if (s->idle_ms > 0) {
		sm_fmt_ll(r->idle, sizeof(r->idle), s->idle_ms);
		r->kv[n].k = LBL_IDLE;
		r->kv[n++].v = r->idle;
	}
	pthread_mutex_lock(&s->mgr->mu);
	if (s->apps[0] != '\0' && id != NULL && strcmp(id, s->apps_of) == 0)
		snprintf(r->apps, sizeof(r->apps), "%s", s->apps);
	else
		r->apps[0] = '\0';
	if (s->policy != NULL)
		snprintf(r->policy, sizeof(r->policy), "%s", s->policy);
	else
		r->policy[0] = '\0';
	pthread_mutex_unlock(&s->mgr->mu);
	if (r->apps[0] != '\0') {
		r->kv[n].k = LBL_APPS;
		r->kv[n++].v = r->apps;
	}
	if (r->policy[0] != '\0') {
		r->kv[n].k = POLICY_LABEL;
		r->kv[n++].v = r->policy;
	}
	ASSERT(n <= SM_MAX_LABELS);
	r->n = n;
}

void
sm_policy_adopt_locked(struct sess *s, const char *label)
{
	const struct policy *op = policy_set_for(s->mgr->conf->policies, s->org);
	struct policy *p;
	char err[512], *o;

	if (label == NULL)
		return;		/* a record from before policies: the operator's */
	if ((p = policy_parse(label, strlen(label), "policy", err,
	    sizeof(err))) == NULL) {
		log_warnx("session=%s policy label unreadable, the operator's "
		    "applies: %s", s->sid, err);
		return;
	}
	free(s->policy);
	s->policy = policy_text(p);
	policy_free(p);
	o = op != NULL ? policy_text(op) : NULL;
	s->policy_pinned = o == NULL || strcmp(o, s->policy) != 0;
	free(o);
}

void
sm_spec_defaults(struct sessmgr *m, struct rt_spec *sp, const struct sess_opts *o)
{
	const struct conf *c = m->conf;

	memset(sp, 0, sizeof(*sp));
	sp->image = (o && o->image && *o->image) ? o->image : c->image;
	sp->use_kata = (o && o->use_kata >= 0) ? o->use_kata : 0;
	sp->run_as_root = (o && o->run_as_root >= 0) ? o->run_as_root : c->run_as_root;
	sp->writable_root = (o && o->writable_root >= 0) ? o->writable_root :
	    c->writable_root;
	sp->mem_bytes = o && o->mem_bytes > 0 ? o->mem_bytes : c->mem_bytes;
	sp->mem_reserve_bytes = o && o->mem_reserve_bytes > 0 ?
	    o->mem_reserve_bytes : c->mem_reserve_bytes;
	sp->cpu_millis = o && o->cpu_millis > 0 ? o->cpu_millis : c->cpu_millis;
	sp->pids_max = c->pids_max;
	sp->disk_bytes = o && o->disk_bytes > 0 ? o->disk_bytes : c->disk_bytes;
}

void
sm_cfg_from_info(struct sbxcfg *cfg, const struct rt_info *ri)
{
	cfg->lim = ri->lim;
	cfg->use_kata = ri->use_kata;
	cfg->run_as_root = ri->run_as_root;
	cfg->writable_root = ri->writable_root;
}

long long
sm_lifetime_ms(const struct sess *s)
{
	return s->lifetime_ms > 0 ? s->lifetime_ms : s->mgr->conf->lifetime_ms;
}

long long
sm_idle_ms(const struct sess *s)
{
	return s->idle_ms > 0 ? s->idle_ms : s->mgr->conf->idle_ms;
}

int
sm_rt_destroy_logged(struct sessmgr *m, const char *id, const char *sid,
    const char *reason)
{
	char err[256];

	if (sm_rt_destroy(m, id, err, sizeof(err)) == -1) {
		log_warnx("sandbox=%s session=%s destroy failed reason=%s err=\"%s\"",
		    id, sid ? sid : "-", reason, err);
		return -1;
	}
	pthread_mutex_lock(&m->mu);
	m->n_destroyed++;
	pthread_mutex_unlock(&m->mu);
	log_info("sandbox=%s session=%s destroyed reason=%s", id, sid ? sid : "-",
	    reason);
	return 0;
}

void
sm_slot_done_locked(struct sessmgr *m, int *slots, int outcome, long long t0)
{
	(*slots)--;
	pthread_cond_broadcast(&m->slot_cv);
	if (outcome == 0)
		m->n_create_fail++;
	else if (outcome == 1) {
		m->n_created++;
		m->create_count++;
		m->create_secs_sum += (double)(util_mono_ms() - t0) / 1000.0;
	}
}

static int
idempotent(const char *method, const char *path)
{
	return strcmp(method, "GET") == 0 || strcmp(path, "/v1/files/view") == 0 ||
	    strcmp(path, "/v1/env") == 0;
}

int
sm_thaw(struct sess *s, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	long long t0, since;
	double dt;

	if (!atomic_load(&s->frozen))
		return 0;
	t0 = util_mono_us();
	if (m->rt->ops->freeze == NULL ||
	    m->rt->ops->freeze(m->rt, s->rtid, 0, err, errlen) == -1) {
		if (m->rt->ops->freeze == NULL)
			snprintf(err, errlen, "the runtime cannot thaw");
		log_warnx("session=%s sandbox=%s thaw failed err=\"%s\"", s->sid,
		    s->rtid, err);
		return -1;
	}
	since = atomic_exchange(&s->frozen_ms, 0);
	atomic_store(&s->frozen, 0);
	atomic_store(&s->cpu_at_ms, 0);	/* a new CPU window from now */
	dt = (double)(util_mono_us() - t0) / 1e6;
	pthread_mutex_lock(&m->mu);
	m->n_thawed++;
	m->thaw_secs_sum += dt;
	pthread_mutex_unlock(&m->mu);
	log_info("session=%s sandbox=%s thawed in %.2f ms (frozen %lld s)",
	    s->sid, s->rtid, dt * 1000.0, since > 0 ?
	    (util_unix_ms() - since) / 1000 : 0);
	return 0;
}

int
sm_freeze(struct sess *s, const char *why, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;

	if (atomic_load(&s->frozen))
		return 0;
	if (m->rt->ops->freeze == NULL) {
		snprintf(err, errlen, "the runtime cannot freeze");
		return -1;
	}
	/* Its idle connections go: the agent's timers would close them
	 * while it is frozen or just after, under the next call. */
	agentc_cache_clear(&s->conns);
	if (m->rt->ops->freeze(m->rt, s->rtid, 1, err, errlen) == -1) {
		log_warnx("session=%s sandbox=%s freeze failed err=\"%s\"", s->sid,
		    s->rtid, err);
		return -1;
	}
	atomic_store(&s->frozen_ms, util_unix_ms());
	atomic_store(&s->frozen, 1);
	pthread_mutex_lock(&m->mu);
	m->n_frozen++;
	pthread_mutex_unlock(&m->mu);
	log_info("session=%s sandbox=%s frozen reason=%s (idle %lld s)", s->sid,
	    s->rtid, why, (util_unix_ms() - atomic_load(&s->last_used_ms)) / 1000);
	return 0;
}

int
sm_agent_call(struct sess *s, const char *method, const char *path,
    const char *body, size_t bodylen, int timeout_ms,
    const struct agentc_cancel *cx, int *status, struct buf *resp, char *err,
    size_t errlen)
{
	struct agentc *c;
	int cached, tries, delivered = 0;

	*status = 0;
	/* Whatever asks its agent wakes it (tool calls thaw in sess_enter;
	 * this is for the rest: status, policy files, interrupts). */
	if (sm_thaw(s, err, errlen) == -1)
		return -2;
	for (tries = 0; tries < 2; tries++) {
		if ((c = agentc_cache_get(&s->conns, &s->addr, AGENT_CONNECT_MS, &cached,
		    err, errlen)) == NULL) {
			(void)rt_scrub(err, errlen, s->addr.unix_path, "(socket)");
			return delivered ? -1 : -2;
		}
		if (agentc_request_cx(c, method, path, "application/json", body,
		    bodylen, timeout_ms, cx, status, resp, err, errlen) == 0) {
			agentc_cache_put(&s->conns, c);
			return 0;
		}
		delivered |= agentc_delivered(c);
		agentc_close(c);
		/* A stale keep-alive connection: retry once when safe. */
		if (!cached || !idempotent(method, path))
			break;
	}
	(void)rt_scrub(err, errlen, s->addr.unix_path, "(socket)");
	return delivered ? -1 : -2;
}

int
sessmgr_metrics(struct sessmgr *m, struct buf *b)
{
	int running, stopped, r = 0;

	pthread_mutex_lock(&m->mu);
	running = sm_count_running_locked(m) - m->npool - m->pool_creating - m->creating;
	stopped = sm_count_stopped_locked(m);
#define METRIC_LINE(name, help, type, val) \
	r |= buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, \
	    name, type, name, (unsigned long long)(val))
	METRIC_LINE("orch_sessions_running", "Sessions with a running sandbox.", "gauge", running);
	METRIC_LINE("orch_sessions_stopped", "Sessions with a stopped sandbox.", "gauge", stopped);
	METRIC_LINE("orch_max_running", "limits.max_running in force (auto: resolved at start).", "gauge", m->conf->max_running);
	METRIC_LINE("orch_sessions_known", "Session records in memory.", "gauge", m->nsess);
	METRIC_LINE("orch_pool_idle", "Ready sandboxes in the warm pool.", "gauge", m->npool);
	METRIC_LINE("orch_pool_creating", "Warm pool sandboxes being created.", "gauge", m->pool_creating);
	METRIC_LINE("orch_sandboxes_creating", "Session sandboxes being created.", "gauge", m->creating);
	METRIC_LINE("orch_sandboxes_created_total", "Sandboxes created.", "counter", m->n_created);
	METRIC_LINE("orch_sandbox_create_failures_total", "Sandbox creations that failed.", "counter", m->n_create_fail);
	METRIC_LINE("orch_pool_claims_total", "Sessions served from the warm pool.", "counter", m->n_claimed);
	METRIC_LINE("orch_sandboxes_resumed_total", "Stopped sandboxes started again.", "counter", m->n_started);
	METRIC_LINE("orch_sandboxes_stopped_total", "Sandboxes stopped.", "counter", m->n_stopped);
	METRIC_LINE("orch_sandboxes_destroyed_total", "Sandboxes destroyed.", "counter", m->n_destroyed);
	METRIC_LINE("orch_sandboxes_adopted_total", "Sandboxes adopted by reconcile.", "counter", m->n_adopted);
	METRIC_LINE("orch_orphans_removed_total", "Unlabelled sandboxes removed by reconcile.", "counter", m->n_orphans);
	METRIC_LINE("orch_records_fixed_total", "Session records fixed by reconcile.", "counter", m->n_fixed);
	METRIC_LINE("orch_sessions_frozen", "Sessions whose sandbox is frozen.", "gauge", sm_count_frozen_locked(m));
	METRIC_LINE("orch_sandboxes_frozen_total", "Sandboxes frozen (idle or memory pressure).", "counter", m->n_frozen);
	METRIC_LINE("orch_sandboxes_thawed_total", "Frozen sandboxes thawed by a call or an app request.", "counter", m->n_thawed);
	METRIC_LINE("orch_pressure_rounds_total", "Reaper rounds that found the host under memory pressure.", "counter", m->n_press_rounds);
	METRIC_LINE("orch_pressure_reclaimed_bytes_total", "Memory idle sandboxes gave back under pressure.", "counter", m->press_reclaimed);
#undef METRIC_LINE
	r |= buf_addf(b, "# HELP orch_reaped_total Sandboxes reaped, by reason.\n"
	    "# TYPE orch_reaped_total counter\n"
	    "orch_reaped_total{reason=\"idle\"} %llu\n"
	    "orch_reaped_total{reason=\"lifetime\"} %llu\n"
	    "orch_reaped_total{reason=\"stopped_ttl\"} %llu\n"
	    "orch_reaped_total{reason=\"stopped_limit\"} %llu\n",
	    m->n_reap_idle, m->n_reap_lifetime, m->n_reap_ttl, m->n_reap_limit);
	r |= buf_addf(b, "orch_reaped_total{reason=\"frozen\"} %llu\n",
	    m->n_reap_frozen);
	r |= buf_addf(b, "# HELP orch_pressure_actions_total What memory pressure "
	    "did to idle sandboxes, least recently used first.\n"
	    "# TYPE orch_pressure_actions_total counter\n"
	    "orch_pressure_actions_total{action=\"reclaim\"} %llu\n"
	    "orch_pressure_actions_total{action=\"freeze\"} %llu\n"
	    "orch_pressure_actions_total{action=\"stop\"} %llu\n",
	    m->n_press_reclaim, m->n_press_freeze, m->n_press_stop);
	r |= buf_addf(b, "# HELP orch_thaw_seconds Time to thaw a frozen sandbox.\n"
	    "# TYPE orch_thaw_seconds summary\n"
	    "orch_thaw_seconds_sum %.6f\norch_thaw_seconds_count %llu\n",
	    m->thaw_secs_sum, m->n_thawed);
	r |= buf_addf(b, "# HELP orch_sandbox_create_seconds Time to create a sandbox.\n"
	    "# TYPE orch_sandbox_create_seconds summary\n"
	    "orch_sandbox_create_seconds_sum %.6f\norch_sandbox_create_seconds_count %llu\n",
	    m->create_secs_sum, m->create_count);
	pthread_mutex_unlock(&m->mu);
	return r ? -1 : 0;
}
