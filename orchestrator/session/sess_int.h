/*
 * sess_int.h: what the session manager's files share. Not for the rest of
 * the orchestrator, which sees only sess.h.
 *
 * Layers, each calling only those below it:
 *   sessmgr.c   table, pending set, slots, runtime wrappers, record labels,
 *               agent calls over cached connections, metrics
 *   pool.c      the warm pool
 *   sessfiles.c the client files of named credentials, written at attach
 *   sess.c      lifecycle (the sess.h API)
 *   pressure.c  host memory pressure: reclaim, freeze, stop idle sandboxes
 *   reconcile.c reconcile and the reaper (sessmgr_tick)
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
#ifndef SESS_INT_H
#define SESS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <cjson/cJSON.h>

#include "lib/agentc.h"
#include "buf.h"
#include "lib/policy.h"
#include "sess.h"

#define HASH_SIZE	1024
#define LIFECYCLE_WAIT_MS 30000
#define AGENT_CONNECT_MS 3000
#define MAX_PENDING	4096
#define CREATE_SLOT_WAIT_S 120
#define POOL_WARM_CMD	"{\"command\":\"true\",\"timeout_ms\":10000}"
/* sess_status: how long it waits for a lifecycle change to finish before
 * it answers without the sandbox's figures, how long each agent request
 * may take, the largest agent reply it reads, the running jobs it lists
 * and the bytes of each job's command it shows. */
#define STATUS_LOCK_MS	2000
#define STATUS_AGENT_MS	5000
#define STATUS_RESP_MAX	((size_t)4 << 20)
/* The list of a session's credentials in force (names, forms, hosts,
 * variables, files) kept for its views: 128 credentials of 64 long
 * hosts fit; a larger one is not kept (logged). */
#define SESS_CREDS_MAX	((size_t)2 << 20)
#define STATUS_MAX_JOBS	50
#define STATUS_CMD_MAX	200

/* Session record labels at most (sm_record). */
#define SM_MAX_LABELS	9
/* The apps label's longest value: apps.max_per_sandbox (at most 32) times
 * "name:port:<64 hex>," with a name of at most 40 bytes (apps.c). */
#define SM_APPS_MAX	4096

/* What a sandbox was made with, as its runtime reports it (rt_info). */
struct sbxcfg {
	struct rt_limits lim;
	int		 use_kata;
	int		 run_as_root;
	int		 writable_root;
};

/* The session record as labels: kv's strings point into s and here. */
struct sm_rec {
	struct rt_kv	 kv[SM_MAX_LABELS];
	size_t		 n;
	char		 created[24], stopped[24], life[24], idle[24];
	char		 apps[SM_APPS_MAX];
	char		 policy[POLICY_MAX_JSON + 1];	/* the policy label */
};

enum sstate {
	S_NONE,		/* no sandbox (new, cleared, or lost) */
	S_RUNNING,
	S_STOPPED,
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
	struct sbxcfg	 cfg;		/* what the sandbox was made with */
	long long	 lifetime_ms;	/* the session's own reaper limits (its */
	long long	 idle_ms;	/* labels); 0: reap.lifetime, reap.idle */
	atomic_int	 dead;		/* the agent stopped answering */
	/* under mgr->mu */
	char		 apps[SM_APPS_MAX];	/* the apps label (apps.c): "" none */
	char		 apps_of[ID_SANDBOX_MAX];	/* the sandbox they are in:
						 * apps of any other are gone */
	char		*policy;	/* its credential policy (policy.h) as
					 * canonical JSON; NULL: none */
	int		 policy_pinned;	/* set by a trusted client: the record
					 * outlives its sandbox (sess_put) */
	char		*creds;		/* the named credentials in force at
					 * the proxy for sandbox creds_of, as
					 * its last register answered them
					 * (rt_egress.creds_out: names, no
					 * value); NULL: not known */
	char		 creds_of[ID_SANDBOX_MAX];
	int		 creds_from_policy;	/* that register's policy named
						 * them (else: the proxy's
						 * defaults) */
	int		 refs;
	int		 removed;	/* out of the table */
	int		 provisioning;
	struct sess	*hnext;
	/* atomics */
	atomic_int	 inflight;
	atomic_llong	 last_used_ms;
	/* Frozen (docs/local-runtime.md, "Idle sandboxes"): set under lk
	 * exclusive (the reaper, pressure.c), cleared by sm_thaw under lk
	 * either way, so no call ever runs while it is set. */
	atomic_int	 frozen;
	atomic_llong	 frozen_ms;	/* unix ms it was frozen; 0: not */
	/* the reaper's last CPU sample of its sandbox (cpu_usec: the one
	 * reaper thread only; cpu_at_ms 0: none yet, as sm_thaw resets it) */
	long long	 cpu_usec;
	atomic_llong	 cpu_at_ms;
	/* pressure.c: last_used_ms when it last reclaimed this sandbox (not
	 * again until it has been used since) */
	long long	 reclaimed_use;
	atomic_llong	 interrupt_ms;	/* last sess_interrupt (mono) */
	/* agent connection cache */
	struct agentc_cache conns;	/* idle agent connections */
};

struct poolmem {
	char		 id[ID_SANDBOX_MAX];
	long long	 added_ms;
	char		 image[256];	/* as created (reconcile: as listed) */
	struct sbxcfg	 cfg;
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
	int			 env_shared;	/* the last two claims got env_cache:
						 * it names no sandbox (pool.c) */
	size_t			 nsess;
	struct poolmem		*pool;		/* ready warm sandboxes */
	int			 npool;
	int			 pool_creating;
	int			 creating;	/* session creations */
	char			**pending;	/* ids being created/destroyed */
	size_t			 npending;
	int			 draining;
	int			 ready;
	cJSON			*health;	/* the runtime's last checks (an
						 * array; NULL: none yet; under mu) */
	long long		 health_ms;	/* when they ran (mono ms) */
	int			 ticking;
	long long		 last_reconcile_ms;
	/* counters (under mu) */
	unsigned long long	 n_created, n_create_fail, n_claimed, n_started,
				 n_stopped, n_destroyed, n_adopted, n_orphans,
				 n_reap_idle, n_reap_lifetime, n_reap_ttl,
				 n_reap_limit, n_fixed;
	unsigned long long	 n_frozen, n_thawed, n_reap_frozen;
	double			 thaw_secs_sum;
	/* pressure.c: actions taken, bytes reclaimed, rounds under pressure */
	unsigned long long	 n_press_reclaim, n_press_freeze, n_press_stop,
				 press_reclaimed, n_press_rounds;
	double			 create_secs_sum;
	unsigned long long	 create_count;
};

/* Thaws s's sandbox if it is frozen (held: s->lk, either way); counted
 * and logged with the time it took. 0, or -1 with err (the runtime could
 * not: the caller treats the sandbox as gone). */
int	sm_thaw(struct sess *s, char *err, size_t errlen);
/* Freezes s's running sandbox (held: s->lk exclusive; no call in flight).
 * why is logged. 0, or -1 with err. */
int	sm_freeze(struct sess *s, const char *why, char *err, size_t errlen);

typedef int (*sm_rt_idop)(struct runtime *, const char *, char *, size_t);

/* ---- sessmgr.c ---- */
void	sm_new_rtid(char *out, size_t len, const char *prefix);

void	sm_pending_add_locked(struct sessmgr *m, const char *id);

void	sm_pending_del(struct sessmgr *m, const char *id);

int	sm_pending_has_locked(struct sessmgr *m, const char *id);

struct sess *sm_lookup_locked(struct sessmgr *m, const char *sid);

struct sess *sm_insert_locked(struct sessmgr *m, const char *sid, const char *org,
    const char *user);

void	sm_remove_locked(struct sessmgr *m, struct sess *s);


void	sm_sess_free(struct sess *s);

void	sm_poolmem_free(struct poolmem *p);

/* One lifecycle operation (ops->stop or destroy) on sandbox id. */
int	sm_rt_call(struct sessmgr *m, sm_rt_idop op, const char *id, char *err, size_t errlen);

/* ops->create and ops->start, pg the caller's progress sink (runtime.h
 * rt_progress; NULL: none). */
int	sm_rt_create(struct sessmgr *m, const struct rt_spec *sp,
    const struct rt_progress *pg, struct rt_info *ri, char *err, size_t errlen);
int	sm_rt_start(struct sessmgr *m, const char *id, const struct rt_progress *pg,
    char *err, size_t errlen);

int	sm_rt_attach(struct sessmgr *m, const char *id, const struct rt_egress *eg,
    char *env, size_t envlen, char *err, size_t errlen);

/* Sessions whose sandbox is in state st. */
int	sm_count_state_locked(struct sessmgr *m, enum sstate st);

/* Running sandboxes, the warm pool and creations included. */
int	sm_count_frozen_locked(struct sessmgr *m);
int	sm_count_running_locked(struct sessmgr *m);

void	sm_fmt_ll(char *b, size_t n, long long v);

/*
 * Does a request's identity (org, user: X-Org-Id, X-User-Id; NULL or ""
 * when absent) match s's, fixed when s was created? A request naming
 * neither makes no claim (1); one naming either claims both, so a value
 * it leaves out must be unset on s too. 0 with err naming what differs.
 */
int	sm_identity_ok_locked(const struct sess *s, const char *org,
    const char *user, char *err, size_t errlen);

/* The session record as labels for sandbox id (stopped: with s's
 * stopped-ms; its apps only if they are id's). Takes mgr->mu. */
void	sm_record(struct sess *s, const char *id, int stopped, struct sm_rec *r);

/* s (adopted from a sandbox, mgr->mu held) takes its policy from the
 * record's policy label: the label's, when it reads as a policy (then
 * pinned when it differs from the operator's), else the operator's. */
void	sm_policy_adopt_locked(struct sess *s, const char *label);

/* A spec from o and the configuration's defaults. */
void	sm_spec_defaults(struct sessmgr *m, struct rt_spec *sp, const struct sess_opts *o);

/* ri's settings as a session keeps them. */
void	sm_cfg_from_info(struct sbxcfg *cfg, const struct rt_info *ri);

/* The reaper limits of s in effect (its own, else the configuration's). */
long long sm_lifetime_ms(const struct sess *s);
long long sm_idle_ms(const struct sess *s);

int	sm_rt_destroy_logged(struct sessmgr *m, const char *id, const char *sid,
    const char *reason);

/*
 * A creation ended (under mu): frees its slot (*slots: creating or
 * pool_creating) and counts it. outcome: 1 created (t0: its start), 0
 * failed, -1 neither (a claim).
 */
void	sm_slot_done_locked(struct sessmgr *m, int *slots, int outcome, long long t0);


/* One agent request, a stale keep-alive connection retried when that is
 * safe. 0 with *status, or -1 with err; -2 when the request never reached
 * the agent whole (no connection, or the peer gone before it was sent). */
int	sm_agent_call(struct sess *s, const char *method, const char *path,
    const char *body, size_t bodylen, int timeout_ms,
    const struct agentc_cancel *cx, int *status, struct buf *resp, char *err,
    size_t errlen);
#define sm_rt_stop(m, id, e, l)	sm_rt_call((m), (m)->rt->ops->stop, (id), (e), (l))
#define sm_rt_destroy(m, id, e, l)	sm_rt_call((m), (m)->rt->ops->destroy, (id), (e), (l))
#define sm_count_stopped_locked(m)	sm_count_state_locked((m), S_STOPPED)

/* ---- sessfiles.c ---- */
/*
 * Writes the client files text describes (rt_egress.files_out: the JSON
 * text {"path":"content"}; NULL or "": none) into s's sandbox's home
 * (RT_HOME_PATH when the session has a home, else its commands' HOME), mode 0600.
 * Failures are logged.
 */
void	sess_client_files_write(struct sess *s, const char *text);

/* ---- pressure.c ---- */
/* One round of host memory pressure handling (sessmgr_tick). */
void	pressure_tick(struct sessmgr *m);

/* ---- pool.c ---- */
/* Takes one ready pool member (the caller frees it); NULL if none. */
struct poolmem *pool_take(struct sessmgr *m);

void	pool_refill(struct sessmgr *m);

/* ---- sess.c ---- */
/* Resolves the agent's address of an adopted sandbox. Held: lk exclusive. */
int	sess_ensure_addr(struct sess *s, char *err, size_t errlen);

/* Stops s's sandbox. Held: s->lk exclusive. */
int	sess_do_stop(struct sess *s, const char *reason, char *err, size_t errlen);

/* Destroys s's sandbox; s goes back to S_NONE. Held: s->lk exclusive. */
int	sess_do_destroy(struct sess *s, const char *reason, char *err, size_t errlen);

#endif
