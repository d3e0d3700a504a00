/*
 * pressure.c: host memory pressure (docs/local-runtime.md, "Memory
 * pressure"), one round per sweep (sessmgr_tick), between the lifecycle
 * (sess.c) and the reaper (reconcile.c). Admission counts what sandboxes
 * reserve, not their limits, so the host can be overcommitted; when it
 * runs short, this acts on the idle sandboxes, least recently used first,
 * in order, before the kernel's OOM killer would pick anything:
 *
 *   1. reclaim: ask the kernel to take back each one's memory (page cache;
 *      anonymous memory where the host swaps). Nothing is lost.
 *   2. freeze: what was reclaimed is not faulted back in, and no CPU.
 *   3. stop (MemAvailable still below pressure.stop_below): processes end,
 *      files are kept, as the idle reaper's stop.
 *
 * A sandbox with a call in flight (a command, an upload, a held app
 * request) is never touched; one that was used within pressure.idle
 * neither. Only *tries* a session's exclusive lock, as the reaper does.
 * Every action is logged with the figures and counted (metrics).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sess_int.h"
#include "util.h"
#include "xmalloc.h"

/* At most this many sandboxes are stopped in one round: the figures are
 * read again after each, and the next sweep goes on. */
#define PRESS_STOPS_MAX	16
#define MIB(x)		((x) >> 20)

struct cand {
	struct sess	*s;
	long long	 used;	/* last_used_ms when listed */
};

static int
cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return x->used < y->used ? -1 : x->used > y->used;
}

/* The thresholds, the defaults filled in from the host's size. */
static void
thresholds(const struct conf *c, const struct rt_pressure *p,
    long long *low, long long *stop)
{
	*low = c->press_min_avail;
	if (*low == 0) {
		*low = p->mem_total / 20;
		if (*low < (512LL << 20))
			*low = 512LL << 20;
	}
	*stop = c->press_stop_below != 0 ? c->press_stop_below : *low / 2;
}

static int
under(const struct conf *c, const struct rt_pressure *p, long long low)
{
	return p->mem_available < low ||
	    (c->press_psi > 0 && p->some_avg10 > (double)c->press_psi);
}

/* The idle, running sessions, least recently used first (refs held). */
static struct cand *
candidates(struct sessmgr *m, long long now, size_t *n)
{
	struct cand *v;
	struct sess *s;
	size_t i;

	*n = 0;
	pthread_mutex_lock(&m->mu);
	v = xcalloc(m->nsess + 1, sizeof(*v));
	for (i = 0; i < HASH_SIZE; i++)
		for (s = m->tab[i]; s != NULL; s = s->hnext) {
			if (s->state != S_RUNNING || s->provisioning ||
			    atomic_load(&s->inflight) > 0 ||
			    now - atomic_load(&s->last_used_ms) <
			    m->conf->press_idle_ms)
				continue;
			s->refs++;
			v[*n].s = s;
			v[(*n)++].used = atomic_load(&s->last_used_ms);
		}
	pthread_mutex_unlock(&m->mu);
	qsort(v, *n, sizeof(*v), cand_cmp);
	return v;
}

/* Holds s exclusive if it is still an idle candidate. 0, or -1. */
static int
take(struct sess *s, long long used)
{
	if (pthread_rwlock_trywrlock(&s->lk) != 0)
		return -1;
	if (s->state != S_RUNNING || s->provisioning ||
	    atomic_load(&s->inflight) > 0 ||
	    atomic_load(&s->last_used_ms) != used) {
		pthread_rwlock_unlock(&s->lk);
		return -1;
	}
	return 0;
}

/* Step 1: each one's reclaimable memory back, until need is met. */
static long long
reclaim_all(struct sessmgr *m, struct cand *v, size_t n, long long need)
{
	struct rt_load ld;
	char err[256];
	long long got = 0, freed;
	size_t i;

	if (m->rt->ops->reclaim == NULL || m->rt->ops->load == NULL)
		return 0;
	for (i = 0; i < n && got < need; i++) {
		if (v[i].s->reclaimed_use == v[i].used ||
		    take(v[i].s, v[i].used) == -1)
			continue;
		v[i].s->reclaimed_use = v[i].used;	/* once per use */
		if (m->rt->ops->load(m->rt, v[i].s->rtid, &ld, err,
		    sizeof(err)) == 0 && ld.mem_bytes > (1LL << 20) &&
		    m->rt->ops->reclaim(m->rt, v[i].s->rtid, ld.mem_bytes,
		    &freed, err, sizeof(err)) == 0) {
			got += freed;
			pthread_mutex_lock(&m->mu);
			m->n_press_reclaim++;
			m->press_reclaimed += (unsigned long long)freed;
			pthread_mutex_unlock(&m->mu);
			if (freed > 0)
				log_info("session=%s sandbox=%s reclaimed %lld KiB "
				    "of %lld KiB (memory pressure)", v[i].s->sid,
				    v[i].s->rtid, freed >> 10, ld.mem_bytes >> 10);
		}
		pthread_rwlock_unlock(&v[i].s->lk);
	}
	return got;
}

/* Step 2: every candidate frozen (it is idle: nothing waits on it). */
static void
freeze_all(struct sessmgr *m, struct cand *v, size_t n)
{
	char err[256];
	size_t i;

	if (m->rt->ops->freeze == NULL)
		return;
	for (i = 0; i < n; i++) {
		if (atomic_load(&v[i].s->frozen) ||
		    take(v[i].s, v[i].used) == -1)
			continue;
		if (sm_freeze(v[i].s, "pressure", err, sizeof(err)) == 0) {
			pthread_mutex_lock(&m->mu);
			m->n_press_freeze++;
			pthread_mutex_unlock(&m->mu);
		}
		pthread_rwlock_unlock(&v[i].s->lk);
	}
}

/* Step 3: stopped one by one, least recently used first, while the host
 * stays below stop. */
static void
stop_some(struct sessmgr *m, struct cand *v, size_t n, long long stop)
{
	struct rt_pressure p;
	char err[256];
	size_t i;
	int done = 0;

	for (i = 0; i < n && done < PRESS_STOPS_MAX; i++) {
		if (m->rt->ops->pressure(m->rt, &p) == -1 ||
		    p.mem_available >= stop)
			return;
		if (take(v[i].s, v[i].used) == -1)
			continue;
		if (sess_do_stop(v[i].s, "pressure", err, sizeof(err)) == 0) {
			done++;
			pthread_mutex_lock(&m->mu);
			m->n_press_stop++;
			pthread_mutex_unlock(&m->mu);
		}
		pthread_rwlock_unlock(&v[i].s->lk);
	}
}

void
pressure_tick(struct sessmgr *m)
{
	static struct log_rate lr;
	const struct conf *c = m->conf;
	struct rt_pressure p;
	struct cand *v;
	long long low, stop, got, now = util_unix_ms();
	size_t n, i;
	long dropped;

	if (m->rt->ops->pressure == NULL || m->rt->ops->pressure(m->rt, &p) == -1)
		return;
	thresholds(c, &p, &low, &stop);
	if (!under(c, &p, low))
		return;
	pthread_mutex_lock(&m->mu);
	m->n_press_rounds++;
	pthread_mutex_unlock(&m->mu);
	v = candidates(m, now, &n);
	if (log_rate_ok(&lr, 1, 10000, &dropped))
		log_warnx("memory pressure: %lld MiB available of %lld (acting "
		    "below %lld MiB, stopping below %lld), PSI some %.1f%%: %zu "
		    "idle sandboxes to reclaim, freeze or stop (%ld similar not "
		    "logged)", MIB(p.mem_available), MIB(p.mem_total), MIB(low),
		    MIB(stop), p.some_avg10, n, dropped);
	got = reclaim_all(m, v, n, p.mem_available < low ?
	    low - p.mem_available : 64LL << 20);
	if (m->rt->ops->pressure(m->rt, &p) == 0 && under(c, &p, low)) {
		freeze_all(m, v, n);
		stop_some(m, v, n, stop);
	} else if (got > 0)
		log_info("memory pressure: relieved by reclaiming %lld MiB",
		    MIB(got));
	for (i = 0; i < n; i++)
		sess_put(v[i].s);
	free(v);
}
