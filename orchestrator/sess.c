/*
 * sess.c: sessions, warm pool, reaper and reconcile.
 *
 * Locking. mgr->mu guards the table, the pool list, the pending set and the
 * counters, and is only ever held briefly (never across a runtime or agent
 * call). Each session has a rwlock: a tool call holds it shared while it
 * talks to the agent; lifecycle changes (create, start, stop, destroy,
 * re-provision) hold it exclusive. The reaper and reconcile only *try* the
 * exclusive lock, so a session with a call in flight is never stopped under
 * it. Lock order: s->lk, then mgr->mu (reconcile takes mgr->mu and then
 * only tries s->lk).
 *
 * Crash safety: the record is the sandbox's labels (set atomically by
 * create, or by set_labels on a pool claim). Sandbox ids being created are
 * kept in a pending set so reconcile leaves them alone; anything else the
 * runtime holds is adopted (labelled) or destroyed (unlabelled).
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

#include "agentc.h"
#include "log.h"
#include "sess.h"
#include "strnum.h"
#include "work.h"
#include "xmalloc.h"
#include "util.h"

#define HASH_SIZE	1024
#define CONN_CACHE	8
#define CONN_MAX_IDLE_MS 20000
#define LIFECYCLE_WAIT_MS 30000
#define AGENT_CONNECT_MS 3000
#define MAX_PENDING	4096
#define CREATE_SLOT_WAIT_S 120
#define POOL_WARM_CMD	"{\"command\":\"true\",\"timeout_ms\":10000}"

enum sstate {
	S_NONE,		/* no sandbox (new, cleared, or lost) */
	S_RUNNING,
	S_STOPPED,
};

struct conn {
	struct agentc	*c;
	long long	 used_ms;
};

struct sess {
	struct sessmgr	*mgr;
	char		 sid[ID_SESSION_MAX + 1];
	char		 org[ID_SESSION_MAX + 1];
	char		 user[ID_SESSION_MAX + 1];
	pthread_rwlock_t lk;		/* shared: calls; exclusive: lifecycle */
	/* written under lk exclusive (and mgr->mu), read under either */
	enum sstate	 state;
	char		 rtid[ID_SANDBOX_MAX];
	char		 image[256];
	struct rt_agent_addr addr;
	int		 personalised;	/* egress + env done */
	int		 addr_ok;	/* addr is current */
	long long	 created_ms, started_ms, stopped_ms;
	long long	 rt_set_ms;	/* when rtid was last assigned */
	atomic_int	 dead;		/* the agent stopped answering */
	/* under mgr->mu */
	int		 refs;
	int		 removed;	/* out of the table */
	int		 provisioning;
	struct sess	*hnext;
	/* atomics */
	atomic_int	 inflight;
	atomic_llong	 last_used_ms;
	atomic_llong	 interrupt_ms;	/* last sess_interrupt (mono) */
	/* agent connection cache */
	pthread_mutex_t	 cmu;
	struct conn	 conns[CONN_CACHE];
	int		 nconns;
};

struct poolmem {
	char		 id[ID_SANDBOX_MAX];
	long long	 added_ms;
	char		*env;		/* egress env already applied, or NULL */
	struct agentc	*conn;		/* an open agent connection, or NULL */
	struct poolmem	*next;
};

struct sessmgr {
	struct runtime		*rt;
	const struct conf	*conf;
	pthread_mutex_t		 mu;
	pthread_cond_t		 slot_cv;	/* a creation slot freed */
	pthread_mutex_t		 rtmu;		/* runtime_serialize */
	struct sess		*tab[HASH_SIZE];
	char			*env_cache;	/* last egress env (under mu) */
	size_t			 nsess;
	struct poolmem		*pool;		/* ready warm sandboxes */
	int			 npool;
	int			 pool_creating;
	int			 creating;	/* session creations */
	char			**pending;	/* ids being created/destroyed */
	size_t			 npending;
	int			 draining;
	int			 ready;
	int			 ticking;
	long long		 last_reconcile_ms;
	/* counters (under mu) */
	unsigned long long	 n_created, n_create_fail, n_claimed, n_started,
				 n_stopped, n_destroyed, n_adopted, n_orphans,
				 n_reap_idle, n_reap_lifetime, n_reap_ttl,
				 n_reap_limit, n_fixed;
	double			 create_secs_sum;
	unsigned long long	 create_count;
};

static unsigned
hash_str(const char *s)
{
	return util_hash_str(s) % HASH_SIZE;
}


static void
new_rtid(char *out, size_t len, const char *prefix)
{
	unsigned char r[8];
	size_t i, o;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		fatal("getrandom");
	o = (size_t)snprintf(out, len, "%s", prefix);
	for (i = 0; i < sizeof(r) && o + 2 < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%02x", r[i]);
}

/* ---- pending set (ids reconcile must not touch); under mu ---- */

static void
pending_add_locked(struct sessmgr *m, const char *id)
{
	m->pending = xreallocarray(m->pending, m->npending + 1, sizeof(char *));
	m->pending[m->npending++] = xstrdup(id);
}

static void
pending_del(struct sessmgr *m, const char *id)
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

static int
pending_has_locked(struct sessmgr *m, const char *id)
{
	size_t i;

	for (i = 0; i < m->npending; i++)
		if (strcmp(m->pending[i], id) == 0)
			return 1;
	return 0;
}

/* ---- table ---- */

static struct sess *
lookup_locked(struct sessmgr *m, const char *sid)
{
	struct sess *s;

	for (s = m->tab[hash_str(sid)]; s != NULL; s = s->hnext)
		if (strcmp(s->sid, sid) == 0)
			return s;
	return NULL;
}

static struct sess *
insert_locked(struct sessmgr *m, const char *sid, const char *org,
    const char *user)
{
	struct sess *s = xcalloc(1, sizeof(*s));
	unsigned h = hash_str(sid);

	s->mgr = m;
	snprintf(s->sid, sizeof(s->sid), "%s", sid);
	snprintf(s->org, sizeof(s->org), "%s", org ? org : "");
	snprintf(s->user, sizeof(s->user), "%s", user ? user : "");
	pthread_rwlock_init(&s->lk, NULL);
	pthread_mutex_init(&s->cmu, NULL);
	s->state = S_NONE;
	atomic_store(&s->last_used_ms, util_unix_ms());
	s->hnext = m->tab[h];
	m->tab[h] = s;
	m->nsess++;
	return s;
}

static void
remove_locked(struct sessmgr *m, struct sess *s)
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

static void
conns_close(struct sess *s)
{
	int i;

	pthread_mutex_lock(&s->cmu);
	for (i = 0; i < s->nconns; i++)
		agentc_close(s->conns[i].c);
	s->nconns = 0;
	pthread_mutex_unlock(&s->cmu);
}

static void
sess_free(struct sess *s)
{
	conns_close(s);
	pthread_rwlock_destroy(&s->lk);
	pthread_mutex_destroy(&s->cmu);
	free(s);
}

static void
poolmem_free(struct poolmem *p)
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
	return m;
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
			sess_free(s);
		}
	for (p = m->pool; p != NULL; p = pn) {
		pn = p->next;
		poolmem_free(p);
	}
	for (i = 0; i < m->npending; i++)
		free(m->pending[i]);
	free(m->pending);
	free(m->env_cache);
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

struct sess *
sess_get(struct sessmgr *m, const char *sid, const char *org, const char *user,
    int create, enum sess_err *e, char *err, size_t errlen)
{
	struct sess *s;

	if (!id_session_valid(sid)) {
		*e = SE_BAD;
		snprintf(err, errlen, "invalid session id: use 1-%d characters "
		    "from A-Z a-z 0-9 - _ . : @ + =", ID_SESSION_MAX);
		return NULL;
	}
	pthread_mutex_lock(&m->mu);
	s = lookup_locked(m, sid);
	if (s != NULL && !create && s->state == S_NONE && !s->provisioning)
		s = NULL;	/* an empty record is no session */
	if (s == NULL) {
		if (!create) {
			pthread_mutex_unlock(&m->mu);
			*e = SE_NOTFOUND;
			snprintf(err, errlen, "no session '%s'", sid);
			return NULL;
		}
		if (m->draining) {
			pthread_mutex_unlock(&m->mu);
			*e = SE_DRAINING;
			snprintf(err, errlen, "the orchestrator is shutting down and "
			    "accepts no new sessions; retry in a moment");
			return NULL;
		}
		s = insert_locked(m, sid, org, user);
	} else {
		/* Attribution follows the latest caller that named it. */
		if (org != NULL && *org != '\0' && strcmp(s->org, org) != 0)
			snprintf(s->org, sizeof(s->org), "%s", org);
		if (user != NULL && *user != '\0' && strcmp(s->user, user) != 0)
			snprintf(s->user, sizeof(s->user), "%s", user);
	}
	s->refs++;
	pthread_mutex_unlock(&m->mu);
	return s;
}

void
sess_put(struct sess *s)
{
	struct sessmgr *m = s->mgr;
	int fr;

	pthread_mutex_lock(&m->mu);
	fr = --s->refs == 0 && s->removed;
	/* An empty record nobody uses is dropped (no sandbox to keep). */
	if (s->refs == 0 && !s->removed && s->state == S_NONE && !s->provisioning) {
		remove_locked(m, s);
		fr = 1;
	}
	pthread_mutex_unlock(&m->mu);
	if (fr)
		sess_free(s);
}

/* ---- runtime helpers (no locks held but the session's) ---- */

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

typedef int (*rt_idop)(struct runtime *, const char *, char *, size_t);

/* One lifecycle operation (ops->start, stop or destroy) on sandbox id. */
static int
rt_call(struct sessmgr *m, rt_idop op, const char *id, char *err, size_t errlen)
{
	int rc;

	rt_lock(m);
	rc = op(m->rt, id, err, errlen);
	rt_unlock(m);
	return rc;
}

static int
rt_create(struct sessmgr *m, const struct rt_spec *sp, struct rt_info *ri,
    char *err, size_t errlen)
{
	int rc;

	rt_lock(m);
	rc = m->rt->ops->create(m->rt, sp, ri, err, errlen);
	rt_unlock(m);
	return rc;
}

#define rt_start(m, id, e, l)	rt_call((m), (m)->rt->ops->start, (id), (e), (l))
#define rt_stop(m, id, e, l)	rt_call((m), (m)->rt->ops->stop, (id), (e), (l))
#define rt_destroy(m, id, e, l)	rt_call((m), (m)->rt->ops->destroy, (id), (e), (l))

static int
rt_attach(struct sessmgr *m, const char *id, const struct rt_egress *eg,
    char *env, size_t envlen, char *err, size_t errlen)
{
	/* No fork in attach (the local runtime uses setns on a thread): it
	 * need not wait behind a creation, so a pool claim stays fast. */
	return m->rt->ops->attach_egress(m->rt, id, eg, env, envlen, err, errlen);
}

/* Sessions whose sandbox is in state st. */
static int
count_state_locked(struct sessmgr *m, enum sstate st)
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

/* Running sandboxes, the warm pool and creations included. */
static int
count_running_locked(struct sessmgr *m)
{
	return m->npool + m->pool_creating + m->creating +
	    count_state_locked(m, S_RUNNING);
}

#define count_stopped_locked(m)	count_state_locked((m), S_STOPPED)

static void
fmt_ll(char *b, size_t n, long long v)
{
	snprintf(b, n, "%lld", v);
}

/* The session record as labels. Strings point into s and the bufs. */
static size_t
record_labels(struct sess *s, struct rt_kv *kv, char *created, size_t clen,
    char *stopped, size_t slen)
{
	size_t n = 0;

	kv[n].k = LBL_SESSION;
	kv[n++].v = s->sid;
	if (s->org[0] != '\0') {
		kv[n].k = LBL_ORG;
		kv[n++].v = s->org;
	}
	if (s->user[0] != '\0') {
		kv[n].k = LBL_USER;
		kv[n++].v = s->user;
	}
	fmt_ll(created, clen, s->created_ms);
	kv[n].k = LBL_CREATED;
	kv[n++].v = created;
	if (stopped != NULL) {
		fmt_ll(stopped, slen, s->stopped_ms);
		kv[n].k = LBL_STOPPED;
		kv[n++].v = stopped;
	}
	return n;
}

static void
spec_defaults(struct sessmgr *m, struct rt_spec *sp, const struct sess_opts *o)
{
	const struct conf *c = m->conf;

	memset(sp, 0, sizeof(*sp));
	sp->image = (o && o->image && *o->image) ? o->image : c->image;
	sp->use_kata = (o && o->use_kata >= 0) ? o->use_kata : 0;
	sp->run_as_root = (o && o->run_as_root >= 0) ? o->run_as_root : c->run_as_root;
	sp->writable_root = (o && o->writable_root >= 0) ? o->writable_root :
	    c->writable_root;
	sp->mem_bytes = c->mem_bytes;
	sp->cpu_millis = c->cpu_millis;
	sp->pids_max = c->pids_max;
	sp->disk_bytes = c->disk_bytes;
}

static int
rt_destroy_logged(struct sessmgr *m, const char *id, const char *sid,
    const char *reason)
{
	char err[256];

	if (rt_destroy(m, id, err, sizeof(err)) == -1) {
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

/*
 * A creation ended (under mu): frees its slot (*slots: creating or
 * pool_creating) and counts it. outcome: 1 created (t0: its start), 0
 * failed, -1 neither (a claim).
 */
static void
slot_done_locked(struct sessmgr *m, int *slots, int outcome, long long t0)
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

/* Takes one ready pool member (the caller frees it); NULL if none. */
static struct poolmem *
pool_take(struct sessmgr *m)
{
	struct poolmem *p;

	pthread_mutex_lock(&m->mu);
	if ((p = m->pool) == NULL) {
		pthread_mutex_unlock(&m->mu);
		return NULL;
	}
	m->pool = p->next;
	m->npool--;
	/* counts as a session creation until it is claimed or given back */
	m->creating++;
	pending_add_locked(m, p->id);
	pthread_mutex_unlock(&m->mu);
	return p;
}

/*
 * Registers the sandbox with the egress proxy and hands the env it returns
 * to the agent. Held: s->lk exclusive.
 */
static int raw_agent(struct sess *, const char *, const char *, const char *,
    size_t, int, int *, struct buf *, char *, size_t);
static void conn_put(struct sess *, struct agentc *);

/* Resolves the agent's address of an adopted sandbox. Held: lk exclusive. */
static int
ensure_addr(struct sess *s, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct rt_agent_addr addr;

	if (s->addr_ok)
		return 0;
	if (m->rt->ops->agent_addr(m->rt, s->rtid, &addr, err, errlen) == -1)
		return -1;
	conns_close(s);
	s->addr = addr;
	s->addr_ok = 1;
	return 0;
}

/* {"set":{K:V...}} for the agent from "K=V\n" lines; NULL if none. */
static cJSON *
env_body(const char *env)
{
	cJSON *body = cJSON_CreateObject(), *set;
	const char *l, *nl, *eq;
	char k[256];

	set = cJSON_AddObjectToObject(body, "set");
	for (l = env; *l != '\0'; l = *nl ? nl + 1 : nl) {
		nl = l + strcspn(l, "\n");
		eq = memchr(l, '=', (size_t)(nl - l));
		if (eq == NULL || eq == l || (size_t)(eq - l) >= sizeof(k))
			continue;
		memcpy(k, l, (size_t)(eq - l));
		k[eq - l] = '\0';
		{
			char *v = xstrndup(eq + 1, (size_t)(nl - eq - 1));
			cJSON_AddStringToObject(set, k, v);
			free(v);
		}
	}
	if (cJSON_GetArraySize(set) == 0) {
		cJSON_Delete(body);
		return NULL;
	}
	return body;
}

/*
 * applied: the env a warm pool member's agent already has (or NULL): the
 * same env again needs no agent round trip at claim.
 */
static void
personalise(struct sess *s, const char *applied)
{
	struct sessmgr *m = s->mgr;
	struct rt_egress eg;
	struct rt_kv kv[6];
	char envbuf[8192], err[256], created[32];
	cJSON *body = NULL;
	char *txt;
	struct buf resp;
	int status = 0;
	long long t0 = util_mono_ms(), t1;

	if (!m->conf->egress) {
		s->personalised = 1;
		return;
	}
	memset(&eg, 0, sizeof(eg));
	eg.nlabels = record_labels(s, kv, created, sizeof(created), NULL, 0);
	eg.labels = kv;
	envbuf[0] = '\0';
	if (rt_attach(m, s->rtid, &eg, envbuf, sizeof(envbuf),
	    err, sizeof(err)) == -1) {
		log_warnx("session=%s sandbox=%s egress attach failed err=\"%s\"",
		    s->sid, s->rtid, err);
		s->personalised = 1;	/* the sandbox works, without network */
		return;
	}
	t1 = util_mono_ms();
	pthread_mutex_lock(&m->mu);
	if (m->env_cache == NULL || strcmp(m->env_cache, envbuf) != 0) {
		free(m->env_cache);
		m->env_cache = xstrdup(envbuf);
	}
	pthread_mutex_unlock(&m->mu);
	if ((applied == NULL || strcmp(applied, envbuf) != 0) &&
	    (body = env_body(envbuf)) != NULL) {
		txt = cJSON_PrintUnformatted(body);
		buf_init(&resp, 64 * 1024);
		if (raw_agent(s, "POST", "/v1/env", txt, strlen(txt), 10000,
		    &status, &resp, err, sizeof(err)) == -1 || status != 200)
			log_warnx("session=%s sandbox=%s agent env failed status=%d",
			    s->sid, s->rtid, status);
		buf_free(&resp);
		free(txt);
		cJSON_Delete(body);
	}
	log_info("session=%s sandbox=%s egress attached attach_ms=%lld env_ms=%lld%s",
	    s->sid, s->rtid, t1 - t0, util_mono_ms() - t1,
	    body == NULL && applied != NULL ? " (env applied in the pool)" : "");
	s->personalised = 1;
}

static void
set_running_locked(struct sess *s, const char *id, const char *image)
{
	conns_close(s);	/* cached connections went to the old sandbox */
	if (id != s->rtid)
		snprintf(s->rtid, sizeof(s->rtid), "%s", id);
	if (image != NULL)
		snprintf(s->image, sizeof(s->image), "%s", image);
	s->state = S_RUNNING;
	s->started_ms = util_unix_ms();
	s->stopped_ms = 0;
	s->rt_set_ms = util_mono_ms();
	s->addr_ok = 1;
	atomic_store(&s->dead, 0);
}

/* Creates or claims a sandbox for s (state NONE). Held: s->lk exclusive. */
static int
provision(struct sess *s, const struct sess_opts *o, enum sess_err *e,
    char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct rt_spec sp;
	struct rt_info ri;
	struct rt_kv kv[6];
	char id[ID_SANDBOX_MAX], created[32], rerr[256];
	struct poolmem *pm;
	long long t0 = util_mono_ms();
	int custom = o != NULL && ((o->image && *o->image) || o->use_kata > 0 ||
	    o->run_as_root >= 0 || o->writable_root >= 0);

	s->created_ms = util_unix_ms();
	/* Warm pool: only for default sandboxes. */
	if (!custom && (pm = pool_take(m)) != NULL) {
		struct rt_agent_addr addr;
		size_t n = record_labels(s, kv, created, sizeof(created), NULL, 0);

		snprintf(id, sizeof(id), "%s", pm->id);
		/* The record first: a crash after this leaves a session's
		 * sandbox, never a used one back in the pool. */
		if (m->rt->ops->set_labels(m->rt, id, kv, n, rerr, sizeof(rerr)) == 0 &&
		    m->rt->ops->agent_addr(m->rt, id, &addr, rerr, sizeof(rerr)) == 0) {
			long long t1 = util_mono_ms();

			pthread_mutex_lock(&m->mu);
			set_running_locked(s, id, m->conf->image);
			s->addr = addr;
			s->personalised = 0;
			slot_done_locked(m, &m->creating, -1, 0);
			m->n_claimed++;
			pthread_mutex_unlock(&m->mu);
			pending_del(m, id);
			if (pm->conn != NULL &&
			    util_mono_ms() - pm->added_ms < CONN_MAX_IDLE_MS) {
				conn_put(s, pm->conn);	/* opened in the pool */
				pm->conn = NULL;
			}
			log_info("session=%s sandbox=%s claimed from pool labels_ms=%lld",
			    s->sid, id, t1 - t0);
			personalise(s, pm->env);
			poolmem_free(pm);
			return 0;
		}
		poolmem_free(pm);
		log_warnx("sandbox=%s pool claim failed err=\"%s\"", id, rerr);
		pthread_mutex_lock(&m->mu);
		slot_done_locked(m, &m->creating, -1, 0);
		pthread_mutex_unlock(&m->mu);
		(void)rt_destroy_logged(m, id, s->sid, "pool claim failed");
		pending_del(m, id);
	}

	pthread_mutex_lock(&m->mu);
	if (m->draining) {
		pthread_mutex_unlock(&m->mu);
		*e = SE_DRAINING;
		snprintf(err, errlen, "the orchestrator is shutting down; retry in a moment");
		return -1;
	}
	if (count_running_locked(m) >= m->conf->max_running) {
		pthread_mutex_unlock(&m->mu);
		*e = SE_LIMIT;
		snprintf(err, errlen, "limit reached: %lld sandboxes are running "
		    "(limits.max_running); retry later or free one with clear_session",
		    m->conf->max_running);
		return -1;
	}
	{
		/* Wait (bounded) for a creation slot rather than failing. */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += CREATE_SLOT_WAIT_S;
		while (m->creating + m->pool_creating >= m->conf->max_creating &&
		    !m->draining)
			if (pthread_cond_timedwait(&m->slot_cv, &m->mu, &ts) == ETIMEDOUT)
				break;
	}
	if (m->creating + m->pool_creating >= m->conf->max_creating) {
		pthread_mutex_unlock(&m->mu);
		*e = SE_LIMIT;
		snprintf(err, errlen, "limit reached: %lld sandboxes are being "
		    "created (limits.max_creating); retry in a few seconds",
		    m->conf->max_creating);
		return -1;
	}
	m->creating++;
	new_rtid(id, sizeof(id), "s-");
	pending_add_locked(m, id);
	pthread_mutex_unlock(&m->mu);

	spec_defaults(m, &sp, o);
	sp.id = id;
	sp.labels = kv;
	sp.nlabels = record_labels(s, kv, created, sizeof(created), NULL, 0);
	memset(&ri, 0, sizeof(ri));
	log_info("session=%s sandbox=%s creating image=%s", s->sid, id,
	    sp.image ? sp.image : "(default)");
	if (rt_create(m, &sp, &ri, rerr, sizeof(rerr)) == -1) {
		rt_info_clear(&ri);
		log_warnx("session=%s sandbox=%s create failed err=\"%s\"", s->sid,
		    id, rerr);
		/* Whatever got half made goes. */
		(void)rt_destroy_logged(m, id, s->sid, "create failed");
		pthread_mutex_lock(&m->mu);
		slot_done_locked(m, &m->creating, 0, 0);
		pthread_mutex_unlock(&m->mu);
		pending_del(m, id);
		*e = SE_RUNTIME;
		snprintf(err, errlen, "could not create the sandbox: %s", rerr);
		return -1;
	}
	{
		struct rt_agent_addr addr;
		char img[256];

		snprintf(img, sizeof(img), "%s", ri.image[0] ? ri.image :
		    sp.image ? sp.image : "");
		rt_info_clear(&ri);
		if (m->rt->ops->agent_addr(m->rt, id, &addr, rerr, sizeof(rerr)) == -1) {
			(void)rt_destroy_logged(m, id, s->sid, "no agent address");
			pthread_mutex_lock(&m->mu);
			slot_done_locked(m, &m->creating, 0, 0);
			pthread_mutex_unlock(&m->mu);
			pending_del(m, id);
			*e = SE_RUNTIME;
			snprintf(err, errlen, "sandbox created but its agent cannot be "
			    "reached: %s", rerr);
			return -1;
		}
		pthread_mutex_lock(&m->mu);
		set_running_locked(s, id, img);
		s->addr = addr;
		s->personalised = 0;
		slot_done_locked(m, &m->creating, 1, t0);
		pthread_mutex_unlock(&m->mu);
	}
	pending_del(m, id);
	log_info("session=%s sandbox=%s created ms=%lld", s->sid, id, util_mono_ms() - t0);
	personalise(s, NULL);
	return 0;
}

/* Starts s's stopped sandbox. Held: s->lk exclusive. */
static int
resume(struct sess *s, enum sess_err *e, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct rt_agent_addr addr;
	struct rt_kv kv[6];
	char rerr[256], created[32];
	size_t n;

	pthread_mutex_lock(&m->mu);
	if (count_running_locked(m) >= m->conf->max_running) {
		pthread_mutex_unlock(&m->mu);
		*e = SE_LIMIT;
		snprintf(err, errlen, "limit reached: %lld sandboxes are running "
		    "(limits.max_running); this session's sandbox is stopped and "
		    "cannot be resumed now; retry later", m->conf->max_running);
		return -1;
	}
	pthread_mutex_unlock(&m->mu);
	conns_close(s);
	if (rt_start(m, s->rtid, rerr, sizeof(rerr)) == -1 ||
	    m->rt->ops->agent_addr(m->rt, s->rtid, &addr, rerr, sizeof(rerr)) == -1) {
		log_warnx("session=%s sandbox=%s start failed err=\"%s\"", s->sid,
		    s->rtid, rerr);
		*e = SE_RUNTIME;
		snprintf(err, errlen, "this session's sandbox could not be "
		    "restarted (%s); call create_sandbox to replace it with a fresh "
		    "one (its workspace will be lost)", rerr);
		return -1;
	}
	/* The record no longer says stopped. */
	n = record_labels(s, kv, created, sizeof(created), NULL, 0);
	if (m->rt->ops->set_labels(m->rt, s->rtid, kv, n, rerr, sizeof(rerr)) == -1)
		log_warnx("session=%s sandbox=%s set_labels failed err=\"%s\"",
		    s->sid, s->rtid, rerr);
	pthread_mutex_lock(&m->mu);
	set_running_locked(s, s->rtid, NULL);
	s->addr = addr;
	s->personalised = 0;
	m->n_started++;
	pthread_mutex_unlock(&m->mu);
	log_info("session=%s sandbox=%s resumed", s->sid, s->rtid);
	personalise(s, NULL);
	return 0;
}

static int
timed_wrlock(struct sess *s, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return pthread_rwlock_timedwrlock(&s->lk, &ts) == 0 ? 0 : -1;
}

/* Holds s exclusive for a lifecycle change; busy says why not, for a model. */
static int
lock_excl(struct sess *s, const char *busy, enum sess_err *e, char *err,
    size_t errlen)
{
	if (timed_wrlock(s, LIFECYCLE_WAIT_MS) == 0)
		return 0;
	*e = SE_BUSY;
	snprintf(err, errlen, "%s", busy);
	return -1;
}

static void
set_provisioning(struct sess *s, int on)
{
	pthread_mutex_lock(&s->mgr->mu);
	s->provisioning = on;
	pthread_mutex_unlock(&s->mgr->mu);
}

int
sess_enter(struct sess *s, enum sess_err *e, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	int rc;

	for (;;) {
		pthread_rwlock_rdlock(&s->lk);
		if (s->state == S_RUNNING && s->personalised && !atomic_load(&s->dead)) {
			atomic_fetch_add(&s->inflight, 1);
			atomic_store(&s->last_used_ms, util_unix_ms());
			return 0;
		}
		pthread_rwlock_unlock(&s->lk);
		if (lock_excl(s, "this session's sandbox is busy being changed by "
		    "another call; retry in a moment", e, err, errlen) == -1)
			return -1;
		set_provisioning(s, 1);
		if (atomic_load(&s->dead) && s->state == S_RUNNING) {
			struct rt_info ri;
			char gerr[128];
			int gone;

			memset(&ri, 0, sizeof(ri));
			gone = m->rt->ops->get(m->rt, s->rtid, &ri, gerr, sizeof(gerr)) == -1;
			rt_info_clear(&ri);
			pthread_mutex_lock(&m->mu);
			if (gone) {
				log_info("session=%s sandbox=%s fixed: sandbox gone from "
				    "the runtime; creating a new one", s->sid, s->rtid);
				s->state = S_NONE;
				s->rtid[0] = '\0';
				m->n_fixed++;
			} else
				s->state = S_STOPPED;
			atomic_store(&s->dead, 0);
			pthread_mutex_unlock(&m->mu);
		}
		rc = 0;
		if (s->state == S_NONE)
			rc = provision(s, NULL, e, err, errlen);
		else if (s->state == S_STOPPED)
			rc = resume(s, e, err, errlen);
		else if (ensure_addr(s, err, errlen) == -1) {
			/* Adopted but unreachable: start it over. */
			pthread_mutex_lock(&m->mu);
			s->state = S_STOPPED;
			pthread_mutex_unlock(&m->mu);
			rc = resume(s, e, err, errlen);
		} else if (!s->personalised)
			personalise(s, NULL);
		set_provisioning(s, 0);
		pthread_rwlock_unlock(&s->lk);
		if (rc == -1)
			return -1;
	}
}

void
sess_leave(struct sess *s)
{
	atomic_store(&s->last_used_ms, util_unix_ms());
	atomic_fetch_sub(&s->inflight, 1);
	pthread_rwlock_unlock(&s->lk);
}

/* ---- agent calls ---- */

static struct agentc *
conn_get(struct sess *s, int *cached, char *err, size_t errlen)
{
	struct agentc *c = NULL;
	long long now = util_mono_ms();

	pthread_mutex_lock(&s->cmu);
	while (s->nconns > 0) {
		struct conn *cn = &s->conns[--s->nconns];
		if (now - cn->used_ms > CONN_MAX_IDLE_MS) {
			agentc_close(cn->c);
			continue;
		}
		c = cn->c;
		break;
	}
	pthread_mutex_unlock(&s->cmu);
	*cached = c != NULL;
	if (c == NULL)
		c = agentc_open(&s->addr, AGENT_CONNECT_MS, err, errlen);
	return c;
}

static void
conn_put(struct sess *s, struct agentc *c)
{
	pthread_mutex_lock(&s->cmu);
	if (s->nconns < CONN_CACHE) {
		s->conns[s->nconns].c = c;
		s->conns[s->nconns].used_ms = util_mono_ms();
		s->nconns++;
		c = NULL;
	}
	pthread_mutex_unlock(&s->cmu);
	if (c != NULL)
		agentc_close(c);
}

static int
idempotent(const char *method, const char *path)
{
	return strcmp(method, "GET") == 0 || strcmp(path, "/v1/files/view") == 0 ||
	    strcmp(path, "/v1/env") == 0;
}

static int
raw_agent(struct sess *s, const char *method, const char *path,
    const char *body, size_t bodylen, int timeout_ms, int *status,
    struct buf *resp, char *err, size_t errlen)
{
	struct agentc *c;
	int cached, tries;

	*status = 0;
	for (tries = 0; tries < 2; tries++) {
		if ((c = conn_get(s, &cached, err, errlen)) == NULL)
			return -1;
		if (agentc_request(c, method, path, "application/json", body,
		    bodylen, timeout_ms, status, resp, err, errlen) == 0) {
			conn_put(s, c);
			return 0;
		}
		agentc_close(c);
		/* A stale keep-alive connection: retry once when safe. */
		if (!cached || !idempotent(method, path))
			break;
	}
	return -1;
}

int
sess_agent(struct sess *s, const char *method, const char *path,
    const char *body, size_t bodylen, int timeout_ms, int *status,
    struct buf *resp, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct rt_info ri;
	char rerr[128];

	if (raw_agent(s, method, path, body, bodylen, timeout_ms, status, resp,
	    err, errlen) == 0)
		return 0;
	/* Is the sandbox still there? If not, the next call restarts it. */
	memset(&ri, 0, sizeof(ri));
	if (m->rt->ops->get(m->rt, s->rtid, &ri, rerr, sizeof(rerr)) == -1 ||
	    ri.state != RT_RUNNING) {
		atomic_store(&s->dead, 1);
		log_warnx("session=%s sandbox=%s agent unreachable, sandbox %s",
		    s->sid, s->rtid, rt_state_name(ri.state));
	}
	rt_info_clear(&ri);
	return -1;
}

/*
 * Fallback for agents older than POST /v1/shell/interrupt (they answer 404):
 * a job (it runs beside the shell, not under it) does roughly what the
 * agent does at a command's timeout (but also kills earlier background
 * processes, since it cannot tell them apart):
 * SIGUSR1 to the shell (its trap abandons the rest of the command), then
 * SIGKILL to every descendant of the shell, repeated for a few seconds in
 * case the shell starts the command's next process. POSIX sh + awk, so it
 * works in busybox images too. %d: the shell's pid.
 */
#define INTERRUPT_SCRIPT \
	"p=%d; kill -USR1 $p 2>/dev/null; i=0; while [ $i -lt 30 ]; do " \
	"k=$(cat /proc/[0-9]*/status 2>/dev/null | awk -v r=$p '" \
	"/^Pid:/{c=$2} /^PPid:/{pp[c]=$2} END{s[r]=1; ch=1; while (ch) {ch=0; " \
	"for (x in pp) if (!(x in s) && (pp[x] in s)) {s[x]=1; ch=1}}; " \
	"for (x in s) if (x != r) print x}'); " \
	"[ -z \"$k\" ] && break; kill -9 $k 2>/dev/null; i=$((i+1)); sleep 0.1; done"

int
sess_interrupt(struct sessmgr *m, const char *sid)
{
	struct sess *s;
	struct buf resp;
	enum sess_err e;
	char err[256], cmd[1024], *txt;
	cJSON *j, *x, *body;
	int status, rc = -1, pid = 0, busy = 0;

	if ((s = sess_get(m, sid, NULL, NULL, 0, &e, err, sizeof(err))) == NULL)
		return -1;
	/* Shared, like a call: the sandbox cannot change under us; a
	 * lifecycle change in progress means there is nothing to stop. */
	if (pthread_rwlock_tryrdlock(&s->lk) != 0) {
		sess_put(s);
		return -1;
	}
	rc = -1;
	if (s->state != S_RUNNING || !s->addr_ok)
		goto out;
	buf_init(&resp, 64 * 1024);
	/* An agent that offers it interrupts the way its timeout does. */
	atomic_store(&s->interrupt_ms, util_mono_ms());
	if (raw_agent(s, "POST", "/v1/shell/interrupt", "{}", 2, 5000, &status,
	    &resp, err, sizeof(err)) == 0 && status == 200) {
		j = cJSON_ParseWithLength(resp.p, resp.len);
		x = cJSON_GetObjectItemCaseSensitive(j, "interrupted");
		rc = cJSON_IsBool(x) ? cJSON_IsTrue(x) : 1;
		cJSON_Delete(j);
		buf_free(&resp);
		if (rc == 1)
			log_info("session=%s sandbox=%s command interrupted "
			    "(cancelled)", s->sid, s->rtid);
		goto out;
	}
	if (raw_agent(s, "GET", "/v1/health", NULL, 0, 5000, &status, &resp,
	    err, sizeof(err)) == 0 && status == 200 &&
	    (j = cJSON_ParseWithLength(resp.p, resp.len)) != NULL) {
		busy = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "busy"));
		x = cJSON_GetObjectItemCaseSensitive(j, "shell_pid");
		if (cJSON_IsNumber(x) && x->valuedouble > 1 &&
		    x->valuedouble < 1 << 30)
			pid = (int)x->valuedouble;
		cJSON_Delete(j);
	}
	if (!busy || pid == 0) {
		rc = busy ? -1 : 0;
		buf_free(&resp);
		goto out;
	}
	snprintf(cmd, sizeof(cmd), INTERRUPT_SCRIPT, pid);
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "command", cmd);
	txt = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	atomic_store(&s->interrupt_ms, util_mono_ms());
	if (raw_agent(s, "POST", "/v1/jobs", txt, strlen(txt), 5000, &status,
	    &resp, err, sizeof(err)) == 0 && (status == 200 || status == 201)) {
		rc = 1;
		log_info("session=%s sandbox=%s command interrupted (cancelled)",
		    s->sid, s->rtid);
	} else
		log_warnx("session=%s sandbox=%s interrupt failed status=%d",
		    s->sid, s->rtid, status);
	free(txt);
	buf_free(&resp);
out:
	pthread_rwlock_unlock(&s->lk);
	sess_put(s);
	return rc;
}

int
sess_interrupted_recently(struct sess *s, int ms)
{
	long long t = atomic_load(&s->interrupt_ms);

	return t != 0 && util_mono_ms() - t < ms;
}

/* ---- lifecycle changes ---- */

/* Stops s's sandbox. Held: s->lk exclusive. */
static int
do_stop(struct sess *s, const char *reason, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct rt_kv kv[6];
	char created[32], stopped[32];
	size_t n;

	if (s->state != S_RUNNING)
		return 0;
	s->stopped_ms = util_unix_ms();
	n = record_labels(s, kv, created, sizeof(created), stopped, sizeof(stopped));
	if (m->rt->ops->set_labels(m->rt, s->rtid, kv, n, err, errlen) == -1)
		log_warnx("session=%s sandbox=%s set_labels failed err=\"%s\"",
		    s->sid, s->rtid, err);
	conns_close(s);
	if (rt_stop(m, s->rtid, err, errlen) == -1) {
		log_warnx("session=%s sandbox=%s stop failed reason=%s err=\"%s\"",
		    s->sid, s->rtid, reason, err);
		return -1;
	}
	pthread_mutex_lock(&m->mu);
	s->state = S_STOPPED;
	s->started_ms = 0;
	m->n_stopped++;
	pthread_mutex_unlock(&m->mu);
	log_info("session=%s sandbox=%s stopped reason=%s", s->sid, s->rtid, reason);
	return 0;
}

/* Destroys s's sandbox; s goes back to S_NONE. Held: s->lk exclusive. */
static int
do_destroy(struct sess *s, const char *reason, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	char id[ID_SANDBOX_MAX];

	if (s->rtid[0] == '\0' || s->state == S_NONE) {
		s->state = S_NONE;
		return 0;
	}
	snprintf(id, sizeof(id), "%s", s->rtid);
	conns_close(s);
	pthread_mutex_lock(&m->mu);
	pending_add_locked(m, id);
	pthread_mutex_unlock(&m->mu);
	if (rt_destroy(m, id, err, errlen) == -1) {
		log_warnx("session=%s sandbox=%s destroy failed reason=%s err=\"%s\"",
		    s->sid, id, reason, err);
		pending_del(m, id);
		return -1;
	}
	pthread_mutex_lock(&m->mu);
	s->state = S_NONE;
	s->rtid[0] = '\0';
	s->personalised = 0;
	m->n_destroyed++;
	pthread_mutex_unlock(&m->mu);
	pending_del(m, id);
	log_info("session=%s sandbox=%s destroyed reason=%s", s->sid, id, reason);
	return 0;
}

int
sess_reprovision(struct sess *s, const struct sess_opts *o, enum sess_err *e,
    char *err, size_t errlen)
{
	int rc = -1;

	if (lock_excl(s, "a command is still running in this session; stop it "
	    "(shell_stop) or wait for it, then retry create_sandbox", e, err,
	    errlen) == -1)
		return -1;
	set_provisioning(s, 1);
	if (do_destroy(s, "re-provisioned by create_sandbox", err, errlen) == -1) {
		*e = SE_RUNTIME;
		goto out;
	}
	rc = provision(s, o, e, err, errlen);
out:
	set_provisioning(s, 0);
	pthread_rwlock_unlock(&s->lk);
	return rc;
}

/* Stops (workspace kept) or destroys a session's sandbox, held exclusive. */
static int
stop_or_delete(struct sessmgr *m, const char *sid, const char *reason,
    int destroy, enum sess_err *e, char *err, size_t errlen)
{
	struct sess *s;
	int rc = -1;

	if ((s = sess_get(m, sid, NULL, NULL, 0, e, err, errlen)) == NULL)
		return -1;
	if (lock_excl(s, "a call is still running in this session; stop it "
	    "(shell_stop) or wait for it, then retry", e, err, errlen) == -1) {
		sess_put(s);
		return -1;
	}
	if (!destroy && s->state == S_RUNNING) {
		pthread_mutex_lock(&m->mu);
		if (count_stopped_locked(m) >= m->conf->max_stopped) {
			pthread_mutex_unlock(&m->mu);
			*e = SE_LIMIT;
			snprintf(err, errlen, "limit reached: %lld stopped sandboxes "
			    "(limits.max_stopped); delete some first",
			    m->conf->max_stopped);
			goto out;
		}
		pthread_mutex_unlock(&m->mu);
	}
	if ((destroy ? do_destroy(s, reason, err, errlen) :
	    do_stop(s, reason, err, errlen)) == -1) {
		*e = SE_RUNTIME;
		goto out;
	}
	rc = 0;
out:
	pthread_rwlock_unlock(&s->lk);
	sess_put(s);	/* a deleted session's empty record goes */
	return rc;
}

int
sess_stop(struct sessmgr *m, const char *sid, const char *reason,
    enum sess_err *e, char *err, size_t errlen)
{
	return stop_or_delete(m, sid, reason, 0, e, err, errlen);
}

int
sess_delete(struct sessmgr *m, const char *sid, const char *reason,
    enum sess_err *e, char *err, size_t errlen)
{
	return stop_or_delete(m, sid, reason, 1, e, err, errlen);
}

/* ---- JSON views ---- */

static const char *
sstate_name(const struct sess *s)
{
	if (s->provisioning)
		return "provisioning";
	switch (s->state) {
	case S_NONE: return "none";
	case S_RUNNING: return "running";
	case S_STOPPED: return "stopped";
	}
	return "unknown";
}

static cJSON *
sess_json_locked(struct sess *s)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "id", s->sid);
	cJSON_AddStringToObject(o, "org", s->org);
	cJSON_AddStringToObject(o, "user", s->user);
	cJSON_AddStringToObject(o, "state", sstate_name(s));
	cJSON_AddStringToObject(o, "sandbox_id", s->rtid);
	cJSON_AddStringToObject(o, "image", s->image);
	cJSON_AddNumberToObject(o, "created_ms", (double)s->created_ms);
	cJSON_AddNumberToObject(o, "started_ms", (double)s->started_ms);
	cJSON_AddNumberToObject(o, "stopped_ms", (double)s->stopped_ms);
	cJSON_AddNumberToObject(o, "last_used_ms",
	    (double)atomic_load(&s->last_used_ms));
	cJSON_AddNumberToObject(o, "calls_in_flight", atomic_load(&s->inflight));
	return o;
}

cJSON *
sess_json(struct sess *s)
{
	cJSON *o;

	pthread_mutex_lock(&s->mgr->mu);
	o = sess_json_locked(s);
	pthread_mutex_unlock(&s->mgr->mu);
	return o;
}

cJSON *
sessmgr_list_json(struct sessmgr *m, const char *org, const char *user,
    const char *state)
{
	cJSON *a = cJSON_CreateArray();
	struct sess *s;
	size_t i;

	pthread_mutex_lock(&m->mu);
	for (i = 0; i < HASH_SIZE; i++)
		for (s = m->tab[i]; s != NULL; s = s->hnext) {
			if (org != NULL && strcmp(org, s->org) != 0)
				continue;
			if (user != NULL && strcmp(user, s->user) != 0)
				continue;
			if (state != NULL && strcmp(state, sstate_name(s)) != 0)
				continue;
			if (s->state == S_NONE && !s->provisioning)
				continue;
			cJSON_AddItemToArray(a, sess_json_locked(s));
		}
	pthread_mutex_unlock(&m->mu);
	return a;
}

/* ---- reconcile ---- */

static long long
label_ll(const struct rt_info *ri, const char *k)
{
	const char *v = rt_label(ri, k), *es;
	long long n;

	if (v == NULL || strnum_ll(v, 0, 1LL << 62, &n, &es) == -1)
		return 0;
	return n;
}

struct idlist {
	char	(*ids)[ID_SANDBOX_MAX];
	char	**why;
	size_t	 n;
};

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
in_list(const struct rt_info *ri, size_t n, const char *id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(ri[i].id, id) == 0)
			return 1;
	return 0;
}

int
sessmgr_reconcile(struct sessmgr *m, int at_start UNUSED, char *err, size_t errlen)
{
	struct rt_info *ri = NULL;
	size_t n = 0, i;
	struct idlist kill = { 0 };
	struct poolmem *p, **pp;
	struct sess *s;
	long long t_list = util_mono_ms();

	if (m->rt->ops->list(m->rt, &ri, &n, err, errlen) == -1)
		return -1;
	pthread_mutex_lock(&m->mu);
	for (i = 0; i < n; i++) {
		const char *sid = rt_label(&ri[i], LBL_SESSION);
		const char *pool = rt_label(&ri[i], LBL_POOL);
		int live = ri[i].state == RT_RUNNING;
		int kept = ri[i].state == RT_STOPPED || ri[i].state == RT_FAILED;

		if (pending_has_locked(m, ri[i].id))
			continue;
		if (sid != NULL && id_session_valid(sid)) {
			s = lookup_locked(m, sid);
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
				s = insert_locked(m, sid, rt_label(&ri[i], LBL_ORG),
				    rt_label(&ri[i], LBL_USER));
			if (pthread_rwlock_trywrlock(&s->lk) != 0)
				continue;
			snprintf(s->rtid, sizeof(s->rtid), "%s", ri[i].id);
			snprintf(s->image, sizeof(s->image), "%s", ri[i].image);
			s->state = live ? S_RUNNING : S_STOPPED;
			s->created_ms = label_ll(&ri[i], LBL_CREATED);
			if (s->created_ms == 0)
				s->created_ms = ri[i].created_ms;
			s->started_ms = live ? ri[i].started_ms : 0;
			if (live && s->started_ms == 0)
				s->started_ms = util_unix_ms();
			s->stopped_ms = live ? 0 : label_ll(&ri[i], LBL_STOPPED);
			if (!live && s->stopped_ms == 0)
				s->stopped_ms = util_unix_ms();
			s->rt_set_ms = util_mono_ms();
			s->personalised = 0;
			s->addr_ok = 0;
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
					poolmem_free(p);
					m->npool--;
					idlist_add(&kill, ri[i].id, "pool member not running");
				}
				continue;
			}
			if (live && m->npool < m->conf->pool_min_idle) {
				p = xcalloc(1, sizeof(*p));
				snprintf(p->id, sizeof(p->id), "%s", ri[i].id);
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
			    s->rt_set_ms >= t_list || in_list(ri, n, s->rtid))
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
		if (p->added_ms < t_list && !in_list(ri, n, p->id)) {
			*pp = p->next;
			m->npool--;
			log_info("sandbox=%s dropped from pool: gone from the runtime", p->id);
			poolmem_free(p);
		} else
			pp = &p->next;
	}
	for (i = 0; i < kill.n; i++)
		pending_add_locked(m, kill.ids[i]);
	m->ready = 1;
	m->last_reconcile_ms = util_mono_ms();
	pthread_mutex_unlock(&m->mu);

	for (i = 0; i < kill.n; i++) {
		(void)rt_destroy_logged(m, kill.ids[i], NULL, kill.why[i]);
		pending_del(m, kill.ids[i]);
		free(kill.why[i]);
	}
	free(kill.ids);
	free(kill.why);
	rt_info_free_array(ri, n);
	/* Sessions adopted with state NONE and no ref are dropped lazily. */
	return 0;
}

/* ---- reaper and pool ---- */

/*
 * Readies a new pool member for a fast claim: an open agent connection, and
 * the egress env the last claim got (the same for every sandbox on some
 * runtimes: then the claim need not send it). Best effort.
 */
static void
pool_warm(struct sessmgr *m, struct poolmem *p)
{
	struct rt_agent_addr addr;
	struct buf resp;
	char err[256], *env = NULL, *txt;
	cJSON *body;
	int status;

	if (m->rt->ops->agent_addr(m->rt, p->id, &addr, err, sizeof(err)) == -1 ||
	    (p->conn = agentc_open(&addr, AGENT_CONNECT_MS, err, sizeof(err))) == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	if (m->conf->egress && m->env_cache != NULL)
		env = xstrdup(m->env_cache);
	pthread_mutex_unlock(&m->mu);
	buf_init(&resp, 64 * 1024);
	txt = NULL;
	if (env != NULL && (body = env_body(env)) != NULL) {
		txt = cJSON_PrintUnformatted(body);
		cJSON_Delete(body);
		if (agentc_request(p->conn, "POST", "/v1/env", "application/json",
		    txt, strlen(txt), 10000, &status, &resp, err, sizeof(err)) == 0 &&
		    status == 200) {
			p->env = env;
			env = NULL;
		}
	}
	/* The shell's first command costs more (and applies the env): pay
	 * it here rather than in the session's first call. */
	if (agentc_request(p->conn, "POST", "/v1/shell", "application/json",
	    POOL_WARM_CMD, strlen(POOL_WARM_CMD), 10000, &status, &resp, err,
	    sizeof(err)) == -1) {
		agentc_close(p->conn);
		p->conn = NULL;
	}
	buf_free(&resp);
	free(txt);
	free(env);
}

static void
pool_create(void *arg)
{
	struct sessmgr *m = arg;
	struct rt_spec sp;
	struct rt_info ri;
	struct rt_kv kv[2];
	struct poolmem *p;
	char id[ID_SANDBOX_MAX], err[256], created[32];
	long long t0 = util_mono_ms();

	new_rtid(id, sizeof(id), "w-");
	pthread_mutex_lock(&m->mu);
	pending_add_locked(m, id);
	pthread_mutex_unlock(&m->mu);
	spec_defaults(m, &sp, NULL);
	sp.id = id;
	fmt_ll(created, sizeof(created), util_unix_ms());
	kv[0].k = LBL_POOL;
	kv[0].v = "1";
	kv[1].k = LBL_CREATED;
	kv[1].v = created;
	sp.labels = kv;
	sp.nlabels = 2;
	memset(&ri, 0, sizeof(ri));
	if (rt_create(m, &sp, &ri, err, sizeof(err)) == -1) {
		log_warnx("sandbox=%s pool create failed err=\"%s\"", id, err);
		(void)rt_destroy_logged(m, id, NULL, "pool create failed");
		pthread_mutex_lock(&m->mu);
		slot_done_locked(m, &m->pool_creating, 0, 0);
		pthread_mutex_unlock(&m->mu);
		pending_del(m, id);
		rt_info_clear(&ri);
		return;
	}
	rt_info_clear(&ri);
	p = xcalloc(1, sizeof(*p));
	snprintf(p->id, sizeof(p->id), "%s", id);
	pool_warm(m, p);
	p->added_ms = util_mono_ms();
	pthread_mutex_lock(&m->mu);
	p->next = m->pool;
	m->pool = p;
	m->npool++;
	slot_done_locked(m, &m->pool_creating, 1, t0);
	pthread_mutex_unlock(&m->mu);
	pending_del(m, id);
	log_info("sandbox=%s warm pool member ready ms=%lld", id, util_mono_ms() - t0);
}

static void
pool_refill(struct sessmgr *m)
{
	int want = 0;

	pthread_mutex_lock(&m->mu);
	while (!m->draining && m->npool + m->pool_creating + want < m->conf->pool_min_idle &&
	    m->pool_creating + want < m->conf->pool_max_parallel &&
	    count_running_locked(m) + want < m->conf->max_running)
		want++;
	m->pool_creating += want;
	pthread_mutex_unlock(&m->mu);
	while (want-- > 0)
		work_submit(pool_create, NULL, m);
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
	if (raw_agent(s, "GET", "/v1/health", NULL, 0, 5000, &status, &resp,
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
	if (s->state == S_STOPPED) {
		if (s->stopped_ms == 0 || now - s->stopped_ms < c->stopped_ttl_ms)
			return;
		if (pthread_rwlock_trywrlock(&s->lk) != 0)
			return;
		if (s->state == S_STOPPED && do_destroy(s, "stopped_ttl", err,
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
	if (idle < c->idle_ms && life < c->lifetime_ms)
		return;
	if (pthread_rwlock_trywrlock(&s->lk) != 0)
		return;	/* a call is running: activity */
	if (s->state != S_RUNNING)
		goto out;
	if (ensure_addr(s, err, sizeof(err)) == 0 && agent_busy(s, &act)) {
		/* A running command or job is activity: never reap mid-way. */
		atomic_store(&s->last_used_ms, now);
		log_debug("session=%s sandbox=%s not reaped: command or job running",
		    s->sid, s->rtid);
		goto out;
	}
	if (act > atomic_load(&s->last_used_ms))
		atomic_store(&s->last_used_ms, act);
	idle = now - atomic_load(&s->last_used_ms);
	if (idle >= c->idle_ms)
		reason = "idle";
	else if (life >= c->lifetime_ms)
		reason = "lifetime";
	else
		goto out;
	pthread_mutex_lock(&m->mu);
	stopped_full = count_stopped_locked(m) >= c->max_stopped;
	pthread_mutex_unlock(&m->mu);
	if (stopped_full) {
		if (do_destroy(s, strcmp(reason, "idle") == 0 ?
		    "idle (stopped limit reached: deleted)" :
		    "lifetime (stopped limit reached: deleted)", err, sizeof(err)) == 0) {
			pthread_mutex_lock(&m->mu);
			m->n_reap_limit++;
			pthread_mutex_unlock(&m->mu);
		}
		goto out;
	}
	if (do_stop(s, reason, err, sizeof(err)) == 0) {
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
	if (do_rec && sessmgr_reconcile(m, 0, err, sizeof(err)) == -1)
		log_warnx("reconcile failed err=\"%s\"", err);
	pool_refill(m);
	pthread_mutex_lock(&m->mu);
	m->ticking = 0;
	pthread_mutex_unlock(&m->mu);
}

int
sessmgr_metrics(struct sessmgr *m, struct buf *b)
{
	int running, stopped, r = 0;

	pthread_mutex_lock(&m->mu);
	running = count_running_locked(m) - m->npool - m->pool_creating - m->creating;
	stopped = count_stopped_locked(m);
#define G(name, help, type, val) \
	r |= buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, \
	    name, type, name, (unsigned long long)(val))
	G("orch_sessions_running", "Sessions with a running sandbox.", "gauge", running);
	G("orch_sessions_stopped", "Sessions with a stopped sandbox.", "gauge", stopped);
	G("orch_sessions_known", "Session records in memory.", "gauge", m->nsess);
	G("orch_pool_idle", "Ready sandboxes in the warm pool.", "gauge", m->npool);
	G("orch_pool_creating", "Warm pool sandboxes being created.", "gauge", m->pool_creating);
	G("orch_sandboxes_creating", "Session sandboxes being created.", "gauge", m->creating);
	G("orch_sandboxes_created_total", "Sandboxes created.", "counter", m->n_created);
	G("orch_sandbox_create_failures_total", "Sandbox creations that failed.", "counter", m->n_create_fail);
	G("orch_pool_claims_total", "Sessions served from the warm pool.", "counter", m->n_claimed);
	G("orch_sandboxes_resumed_total", "Stopped sandboxes started again.", "counter", m->n_started);
	G("orch_sandboxes_stopped_total", "Sandboxes stopped.", "counter", m->n_stopped);
	G("orch_sandboxes_destroyed_total", "Sandboxes destroyed.", "counter", m->n_destroyed);
	G("orch_sandboxes_adopted_total", "Sandboxes adopted by reconcile.", "counter", m->n_adopted);
	G("orch_orphans_removed_total", "Unlabelled sandboxes removed by reconcile.", "counter", m->n_orphans);
	G("orch_records_fixed_total", "Session records fixed by reconcile.", "counter", m->n_fixed);
#undef G
	r |= buf_addf(b, "# HELP orch_reaped_total Sandboxes reaped, by reason.\n"
	    "# TYPE orch_reaped_total counter\n"
	    "orch_reaped_total{reason=\"idle\"} %llu\n"
	    "orch_reaped_total{reason=\"lifetime\"} %llu\n"
	    "orch_reaped_total{reason=\"stopped_ttl\"} %llu\n"
	    "orch_reaped_total{reason=\"stopped_limit\"} %llu\n",
	    m->n_reap_idle, m->n_reap_lifetime, m->n_reap_ttl, m->n_reap_limit);
	r |= buf_addf(b, "# HELP orch_sandbox_create_seconds Time to create a sandbox.\n"
	    "# TYPE orch_sandbox_create_seconds summary\n"
	    "orch_sandbox_create_seconds_sum %.6f\norch_sandbox_create_seconds_count %llu\n",
	    m->create_secs_sum, m->create_count);
	pthread_mutex_unlock(&m->mu);
	return r ? -1 : 0;
}
