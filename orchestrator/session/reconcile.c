/*
 * reconcile.c: the top layer (sess_int.h): reconcile (adopt what the
 * runtime holds, remove unlabelled sandboxes, fix records, forget what is
 * gone) and the reaper (idle, lifetime: each session's own when its create
 * asked for them, else reap.idle and reap.lifetime; stopped TTL, stopped
 * limit), run from sessmgr_tick. Both only *try* a session's exclusive lock, so a call
 * in flight is never stopped under it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "lib/agentc.h"
#include "log.h"
#include "sess_int.h"
#include "strnum.h"
#include "util.h"
#include "lib/work.h"
#include "xmalloc.h"


struct idlist {
	char	(*ids)[ID_SANDBOX_MAX];
	char	**why;
	size_t	 n;
};

static long long
label_ll(const struct rt_info *ri, const char *k)
{
	const char *v = rt_label(ri, k), *es;
	long long n;

	if (v == NULL || strnum_ll(v, 0, 1LL << 62, &n, &es) == -1)
		return 0;
	return n;
}

static void
idlist_add(struct idlist *l, const char *id, const char *why)
{
	l->ids = xreallocarray(l->ids, l->n + 1, sizeof(*l->ids));
	l->why = xreallocarray(l->why, l->n + 1, sizeof(char *));
	snprintf(l->ids[l->n], ID_SANDBOX_MAX, "%s", id);
	l->why[l->n] = xstrdup(why);
	l->n++;
}

static int
id_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ids: the listing's sandbox ids, sorted (a lookup per session must not
 * walk thousands of them under mgr->mu). */
static int
in_list(const char **ids, size_t n, const char *id)
{
	return bsearch(&id, ids, n, sizeof(*ids), id_cmp) != NULL;
}

/* s (no sandbox) takes the sandbox ri as its record says. Held: s->lk
 * exclusive, mgr->mu. */
static void
adopt_locked(struct sess *s, const struct rt_info *ri, int live)
{
	snprintf(s->rtid, sizeof(s->rtid), "%s", ri->id);
	snprintf(s->image, sizeof(s->image), "%s", ri->image);
	s->state = live ? S_RUNNING : S_STOPPED;
	s->created_ms = label_ll(ri, LBL_CREATED);
	if (s->created_ms == 0)
		s->created_ms = ri->created_ms;
	s->started_ms = live ? ri->started_ms : 0;
	if (live && s->started_ms == 0)
		s->started_ms = util_unix_ms();
	s->stopped_ms = live ? 0 : label_ll(ri, LBL_STOPPED);
	if (!live && s->stopped_ms == 0)
		s->stopped_ms = util_unix_ms();
	s->rt_set_ms = util_mono_ms();
	sm_cfg_from_info(&s->cfg, ri);
	s->lifetime_ms = label_ll(ri, LBL_LIFETIME);
	s->idle_ms = label_ll(ri, LBL_IDLE);
	snprintf(s->apps, sizeof(s->apps), "%s",
	    rt_label(ri, LBL_APPS) != NULL ? rt_label(ri, LBL_APPS) : "");
	snprintf(s->apps_of, sizeof(s->apps_of), "%s", ri->id);
	sm_policy_adopt_locked(s, rt_label(ri, POLICY_LABEL));
	s->personalised = 0;
	s->addr_ok = 0;
	/* frozen before a restart: the next call thaws it (sm_thaw) */
	atomic_store(&s->frozen, live && ri->frozen);
	atomic_store(&s->frozen_ms, live && ri->frozen ? util_unix_ms() : 0);
	atomic_store(&s->cpu_at_ms, 0);
}

/*
 * Whether a session holds sandbox id now. The listing can predate a warm
 * claim (pool_take marks the member pending only until the session takes
 * it): the claimed sandbox then still shows its pool label, and must be
 * neither adopted into the pool again (two sessions would share it) nor
 * killed as a stale member. Held: m->mu.
 */
static int
held_by_session_locked(struct sessmgr *m, const char *id)
{
	struct sess *s;
	size_t i;

	for (i = 0; i < HASH_SIZE; i++)
		for (s = m->tab[i]; s != NULL; s = s->hnext)
			if (s->state != S_NONE && strcmp(s->rtid, id) == 0)
				return 1;
	return 0;
}

int
sessmgr_reconcile(struct sessmgr *m, int at_start UNUSED, char *err, size_t errlen)
{
	struct rt_info *ri = NULL;
	const char **ids;
	size_t n = 0, i;
	struct idlist kill = { 0 };
	struct poolmem *p, **pp;
	struct sess *s;
	long long t_list = util_mono_ms();

	if (m->rt->ops->list(m->rt, &ri, &n, err, errlen) == -1)
		return -1;
	ids = xcalloc(n + 1, sizeof(*ids));
	for (i = 0; i < n; i++)
		ids[i] = ri[i].id;
	qsort(ids, n, sizeof(*ids), id_cmp);
	pthread_mutex_lock(&m->mu);
	for (i = 0; i < n; i++) {
		const char *sid = rt_label(&ri[i], LBL_SESSION);
		const char *pool = rt_label(&ri[i], LBL_POOL);
		int live = ri[i].state == RT_RUNNING;
		int kept = ri[i].state == RT_STOPPED || ri[i].state == RT_FAILED;

		if (sm_pending_has_locked(m, ri[i].id))
			continue;
		if (sid != NULL && id_session_valid(sid)) {
			s = sm_lookup_locked(m, sid);
			if (s != NULL && strcmp(s->rtid, ri[i].id) == 0) {
				/* Known: fix drift between record and runtime. */
				if (s->state == S_RUNNING && !live &&
				    pthread_rwlock_trywrlock(&s->lk) == 0) {
					s->state = S_STOPPED;
					s->stopped_ms = util_unix_ms();
					m->n_fixed++;
					log_info("session=%s sandbox=%s fixed: runtime "
					    "says %s (%s); the next call restarts it", s->sid,
					    ri[i].id, rt_state_name(ri[i].state), ri[i].reason);
					pthread_rwlock_unlock(&s->lk);
				}
				continue;
			}
			if (!live && !kept) {
				idlist_add(&kill, ri[i].id, "interrupted creation");
				continue;
			}
			if (s != NULL && (s->state != S_NONE || s->provisioning)) {
				idlist_add(&kill, ri[i].id, "duplicate sandbox for session");
				continue;
			}
			if (s == NULL)
				s = sm_insert_locked(m, sid, rt_label(&ri[i], LBL_ORG),
				    rt_label(&ri[i], LBL_USER));
			if (pthread_rwlock_trywrlock(&s->lk) != 0)
				continue;
			adopt_locked(s, &ri[i], live);
			pthread_rwlock_unlock(&s->lk);
			m->n_adopted++;
			log_info("session=%s sandbox=%s adopted state=%s", s->sid,
			    ri[i].id, rt_state_name(ri[i].state));
			continue;
		}
		if (pool != NULL) {
			for (p = m->pool; p != NULL; p = p->next)
				if (strcmp(p->id, ri[i].id) == 0)
					break;
			if (p != NULL) {
				if (!live) {
					for (pp = &m->pool; *pp != p; pp = &(*pp)->next)
						;
					*pp = p->next;
					sm_poolmem_free(p);
					m->npool--;
					idlist_add(&kill, ri[i].id, "pool member not running");
				}
				continue;
			}
			if (held_by_session_locked(m, ri[i].id))
				continue;	/* claimed since the listing */
			if (live && m->npool < m->conf->pool_min_idle) {
				p = xcalloc(1, sizeof(*p));
				snprintf(p->id, sizeof(p->id), "%s", ri[i].id);
				snprintf(p->image, sizeof(p->image), "%s", ri[i].image);
				sm_cfg_from_info(&p->cfg, &ri[i]);
				p->added_ms = util_mono_ms();
				p->next = m->pool;
				m->pool = p;
				m->npool++;
				m->n_adopted++;
				log_info("sandbox=%s adopted into warm pool", ri[i].id);
			} else
				idlist_add(&kill, ri[i].id, "stale pool member");
			continue;
		}
		m->n_orphans++;
		idlist_add(&kill, ri[i].id, "orphan: no session label");
	}
	/* Records whose sandbox is gone. */
	for (i = 0; i < HASH_SIZE; i++)
		for (s = m->tab[i]; s != NULL; s = s->hnext) {
			if (s->state == S_NONE || s->provisioning ||
			    s->rt_set_ms >= t_list || in_list(ids, n, s->rtid))
				continue;
			if (pthread_rwlock_trywrlock(&s->lk) != 0)
				continue;
			log_info("session=%s sandbox=%s fixed: sandbox gone from the "
			    "runtime; the next call creates a new one", s->sid, s->rtid);
			s->state = S_NONE;
			s->rtid[0] = '\0';
			m->n_fixed++;
			pthread_rwlock_unlock(&s->lk);
		}
	for (pp = &m->pool; *pp != NULL;) {
		p = *pp;
		if (p->added_ms < t_list && !in_list(ids, n, p->id)) {
			*pp = p->next;
			m->npool--;
			log_info("sandbox=%s dropped from pool: gone from the runtime", p->id);
			sm_poolmem_free(p);
		} else
			pp = &p->next;
	}
	for (i = 0; i < kill.n; i++)
		sm_pending_add_locked(m, kill.ids[i]);
	m->ready = 1;
	m->last_reconcile_ms = util_mono_ms();
	pthread_mutex_unlock(&m->mu);

	for (i = 0; i < kill.n; i++) {
		(void)sm_rt_destroy_logged(m, kill.ids[i], NULL, kill.why[i]);
		sm_pending_del(m, kill.ids[i]);
		free(kill.why[i]);
	}
	free(kill.ids);
	free(kill.why);
	free(ids);
	rt_info_free_array(ri, n);
	/* Sessions adopted with state NONE and no ref are dropped lazily. */
	return 0;
}

/* Asks the agent whether anything runs; updates last_used from it. */
static int
agent_busy(struct sess *s, long long *last_activity)
{
	struct buf resp;
	char err[128];
	int status, busy = 0;
	cJSON *j, *x;

	*last_activity = 0;
	buf_init(&resp, 64 * 1024);
	if (sm_agent_call(s, "GET", "/v1/health", NULL, 0, 5000, NULL, &status, &resp,
	    err, sizeof(err)) == 0 && status == 200 &&
	    (j = cJSON_ParseWithLength(resp.p, resp.len)) != NULL) {
		if (cJSON_IsTrue(cJSON_GetObjectItem(j, "busy")))
			busy = 1;
		x = cJSON_GetObjectItem(j, "running_jobs");
		if (cJSON_IsNumber(x) && x->valuedouble > 0)
			busy = 1;
		x = cJSON_GetObjectItem(j, "last_activity_ms");
		if (cJSON_IsNumber(x))
			*last_activity = (long long)x->valuedouble;
		cJSON_Delete(j);
	}
	buf_free(&resp);
	return busy;
}

/*
 * The sandbox's CPU use since the reaper's last sample, in millicores
 * (1000: one core busy), sampling it now; -1 when there is no window of
 * a second yet (the first sample, or one too recent) or the runtime
 * cannot tell.
 */
static long long
cpu_millis(struct sess *s, long long now)
{
	struct sessmgr *m = s->mgr;
	struct rt_load ld;
	char err[128];
	long long r = -1, at = atomic_load(&s->cpu_at_ms);

	if (m->rt->ops->load == NULL || (at != 0 && now - at < 1000))
		return -1;
	if (m->rt->ops->load(m->rt, s->rtid, &ld, err, sizeof(err)) == -1 ||
	    ld.cpu_usec < 0)
		return -1;
	if (at != 0 && ld.cpu_usec >= s->cpu_usec)
		r = (ld.cpu_usec - s->cpu_usec) / (now - at);
	s->cpu_usec = ld.cpu_usec;
	atomic_store(&s->cpu_at_ms, now);
	return r;
}

/*
 * Idle, and the runtime can freeze: freeze it (docs/local-runtime.md,
 * "Idle sandboxes"). Idle means no call (a shell command in progress is
 * one) and CPU use under reap.idle_cpu over the last window: a build or a
 * test run in a job keeps it awake, a dev server waiting for requests
 * does not. Open app connections count as calls (the gateway's activity).
 * 1 when it is frozen (or stays awake for now), 0 when freezing is not
 * for it and the stop path decides.
 */
static int
freeze_idle(struct sess *s, long long now)
{
	struct sessmgr *m = s->mgr;
	char err[256];
	long long cpu;

	if (!m->conf->freeze || m->rt->ops->freeze == NULL)
		return 0;
	if ((cpu = cpu_millis(s, now)) < 0)
		return 1;	/* decided at the next sweep */
	if (cpu > m->conf->idle_cpu_millis) {
		log_debug("session=%s sandbox=%s not frozen: %lld millicores of "
		    "CPU", s->sid, s->rtid, cpu);
		return 1;
	}
	if (pthread_rwlock_trywrlock(&s->lk) != 0)
		return 1;	/* a call is starting */
	if (s->state == S_RUNNING && !s->provisioning &&
	    atomic_load(&s->inflight) == 0 &&
	    now - atomic_load(&s->last_used_ms) >= sm_idle_ms(s))
		(void)sm_freeze(s, "idle", err, sizeof(err));
	pthread_rwlock_unlock(&s->lk);
	return 1;
}

/* Frozen for reap.frozen (or past its lifetime): stopped, files kept. */
static void
stop_frozen(struct sess *s, long long now)
{
	struct sessmgr *m = s->mgr;
	char err[256];

	if (now - atomic_load(&s->frozen_ms) < m->conf->frozen_ms &&
	    now - s->started_ms < sm_lifetime_ms(s))
		return;
	if (pthread_rwlock_trywrlock(&s->lk) != 0)
		return;
	if (s->state == S_RUNNING && atomic_load(&s->frozen) &&
	    sess_do_stop(s, "frozen", err, sizeof(err)) == 0) {
		pthread_mutex_lock(&m->mu);
		m->n_reap_frozen++;
		pthread_mutex_unlock(&m->mu);
	}
	pthread_rwlock_unlock(&s->lk);
}

static void
reap_one(struct sess *s, long long now)
{
	struct sessmgr *m = s->mgr;
	const struct conf *c = m->conf;
	const char *reason = NULL;
	long long idle, life, act = 0;
	char err[256];
	int stopped_full;

	if (atomic_load(&s->inflight) > 0)
		return;
	if (s->state == S_RUNNING && atomic_load(&s->frozen)) {
		stop_frozen(s, now);
		return;
	}
	if (s->state == S_STOPPED) {
		if (s->stopped_ms == 0 || now - s->stopped_ms < c->stopped_ttl_ms)
			return;
		if (pthread_rwlock_trywrlock(&s->lk) != 0)
			return;
		if (s->state == S_STOPPED && sess_do_destroy(s, "stopped_ttl", err,
		    sizeof(err)) == 0) {
			pthread_mutex_lock(&m->mu);
			m->n_reap_ttl++;
			pthread_mutex_unlock(&m->mu);
		}
		pthread_rwlock_unlock(&s->lk);
		return;
	}
	if (s->state != S_RUNNING)
		return;
	idle = now - atomic_load(&s->last_used_ms);
	life = now - s->started_ms;
	if (idle < sm_idle_ms(s) && life < sm_lifetime_ms(s))
		return;
	if (idle >= sm_idle_ms(s) && life < sm_lifetime_ms(s) &&
	    freeze_idle(s, now))
		return;
	if (pthread_rwlock_trywrlock(&s->lk) != 0)
		return;	/* a call is running: activity */
	if (s->state != S_RUNNING)
		goto out;
	if (sess_ensure_addr(s, err, sizeof(err)) == 0 && agent_busy(s, &act)) {
		/* A running command or job is activity: never reap mid-way. */
		atomic_store(&s->last_used_ms, now);
		log_debug("session=%s sandbox=%s not reaped: command or job running",
		    s->sid, s->rtid);
		goto out;
	}
	if (act > atomic_load(&s->last_used_ms))
		atomic_store(&s->last_used_ms, act);
	idle = now - atomic_load(&s->last_used_ms);
	if (idle >= sm_idle_ms(s))
		reason = "idle";
	else if (life >= sm_lifetime_ms(s))
		reason = "lifetime";
	else
		goto out;
	pthread_mutex_lock(&m->mu);
	stopped_full = sm_count_stopped_locked(m) >= c->max_stopped;
	pthread_mutex_unlock(&m->mu);
	if (stopped_full) {
		if (sess_do_destroy(s, strcmp(reason, "idle") == 0 ?
		    "idle (stopped limit reached: deleted)" :
		    "lifetime (stopped limit reached: deleted)", err, sizeof(err)) == 0) {
			pthread_mutex_lock(&m->mu);
			m->n_reap_limit++;
			pthread_mutex_unlock(&m->mu);
		}
		goto out;
	}
	if (sess_do_stop(s, reason, err, sizeof(err)) == 0) {
		pthread_mutex_lock(&m->mu);
		if (strcmp(reason, "idle") == 0)
			m->n_reap_idle++;
		else
			m->n_reap_lifetime++;
		pthread_mutex_unlock(&m->mu);
	}
out:
	pthread_rwlock_unlock(&s->lk);
}

void
sessmgr_tick(struct sessmgr *m)
{
	struct sess **v = NULL;
	size_t nv = 0, i;
	struct sess *s;
	long long now = util_unix_ms();
	char err[256];
	int do_rec;

	pthread_mutex_lock(&m->mu);
	if (m->ticking) {
		pthread_mutex_unlock(&m->mu);
		return;
	}
	m->ticking = 1;
	do_rec = util_mono_ms() - m->last_reconcile_ms >= m->conf->reconcile_interval_ms;
	v = xcalloc(m->nsess + 1, sizeof(*v));
	for (i = 0; i < HASH_SIZE; i++)
		for (s = m->tab[i]; s != NULL; s = s->hnext) {
			s->refs++;
			v[nv++] = s;
		}
	pthread_mutex_unlock(&m->mu);

	for (i = 0; i < nv; i++) {
		reap_one(v[i], now);
		sess_put(v[i]);
	}
	free(v);
	pressure_tick(m);
	if (do_rec && sessmgr_reconcile(m, 0, err, sizeof(err)) == -1)
		log_warnx("reconcile failed err=\"%s\"", err);
	pool_refill(m);
	sessmgr_health_refresh(m);
	pthread_mutex_lock(&m->mu);
	m->ticking = 0;
	pthread_mutex_unlock(&m->mu);
}
