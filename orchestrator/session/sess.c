/*
 * sess.c: session lifecycle (sess.h, rules in sess_int.h): looking a session
 * up or creating it, provisioning its sandbox (a pool claim or a create),
 * resuming a stopped one, the shared/exclusive lock around each call,
 * agent calls with liveness, interrupt, stop, delete, re-provision, the
 * credential policy. The JSON views (sess_json, sess_status) are in
 * sessview.c. Calls sessmgr.c, sessopt.c and pool.c, never reconcile.c.
 *
 * A new sandbox is made beside the session's (struct newsb): it stays
 * pending and holds a creation slot until take_sandbox gives it to the
 * session or drop_sandbox removes it, so a re-provision that fails at any
 * step before the swap leaves the old sandbox as it was; the old one is
 * pending too from the swap until it is destroyed (reconcile must not take
 * it for a duplicate and race the destroy).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "lib/agentc.h"
#include "lib/credfiles.h"
#include "lib/jsonu.h"
#include "log.h"
#include "sess_int.h"
#include "strnum.h"
#include "util.h"
#include "lib/work.h"
#include "xmalloc.h"


/*
 * Fallback for agents older than POST /v1/shell/interrupt (they answer 404,
 * and only a 404 takes this path):
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
	s = sm_lookup_locked(m, sid);
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
		s = sm_insert_locked(m, sid, org, user);
	} else if (!sm_identity_ok_locked(s, org, user, err, errlen)) {
		pthread_mutex_unlock(&m->mu);
		*e = SE_IDENTITY;
		return NULL;
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
	if (s->refs == 0 && !s->removed && s->state == S_NONE && !s->provisioning &&
	    !s->policy_pinned) {
		sm_remove_locked(m, s);
		fr = 1;
	}
	pthread_mutex_unlock(&m->mu);
	if (fr)
		sm_sess_free(s);
}

int
sess_ensure_addr(struct sess *s, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct rt_agent_addr addr;

	if (s->addr_ok)
		return 0;
	if (m->rt->ops->agent_addr(m->rt, s->rtid, &addr, err, errlen) == -1)
		return -1;
	agentc_cache_clear(&s->conns);
	s->addr = addr;
	s->addr_ok = 1;
	return 0;
}

/*
 * Keeps text (rt_egress.creds_out of an attach of sandbox rtid; NULL or
 * empty: not known) as the credentials in force for s's views.
 */
static void
set_creds(struct sess *s, const char *rtid, const struct buf *text)
{
	char *t = NULL;
	cJSON *p;

	if (text != NULL && text->len > 0) {
		t = xmalloc(text->len + 1);
		memcpy(t, text->p, text->len);
		t[text->len] = '\0';
	}
	pthread_mutex_lock(&s->mgr->mu);
	free(s->creds);
	s->creds = t;
	snprintf(s->creds_of, sizeof(s->creds_of), "%s", rtid);
	/* the policy the record (and so that register) carried */
	p = s->policy != NULL ? cJSON_Parse(s->policy) : NULL;
	s->creds_from_policy = cJSON_GetObjectItemCaseSensitive(p, "credentials") != NULL;
	pthread_mutex_unlock(&s->mgr->mu);
	cJSON_Delete(p);
}

/*
 * applied: the env a warm pool member's agent already has (or NULL): the
 * same env again needs no agent round trip at claim. pre: the env of an
 * attach made already (the claim's, claim_record), or NULL: attach now,
 * unless PRE_FAILED: that attach failed (it waited for a proxy already).
 */
static const char pre_failed[] = "";
#define PRE_FAILED	pre_failed

static void
personalise_egress(struct sess *s, const char *applied, const char *pre,
    struct buf *files)
{
	struct sessmgr *m = s->mgr;
	struct rt_egress eg;
	struct sm_rec rec;
	char envbuf[8192], err[256];
	cJSON *body = NULL;
	char *txt;
	struct buf resp, creds;
	int status = 0;
	long long t0 = util_mono_ms(), t1;

	if (!m->conf->egress) {
		s->personalised = 1;
		return;
	}
	memset(&eg, 0, sizeof(eg));
	sm_record(s, s->rtid, 0, &rec);
	eg.nlabels = rec.n;
	eg.labels = rec.kv;
	eg.files_out = files;
	buf_init(&creds, SESS_CREDS_MAX);
	eg.creds_out = &creds;
	envbuf[0] = '\0';
	if (pre == PRE_FAILED) {
		s->personalised = 1;	/* logged by the claim */
		return;
	}
	if (pre != NULL)
		snprintf(envbuf, sizeof(envbuf), "%s", pre);
	else if (sm_rt_attach(m, s->rtid, &eg, envbuf, sizeof(envbuf),
	    err, sizeof(err)) == -1) {
		log_warnx("session=%s sandbox=%s egress attach failed err=\"%s\"",
		    s->sid, s->rtid, err);
		buf_free(&creds);
		s->personalised = 1;	/* the sandbox works, without network */
		return;
	} else
		set_creds(s, s->rtid, &creds);
	buf_free(&creds);
	t1 = util_mono_ms();
	pthread_mutex_lock(&m->mu);
	/* Two claims in a row with the same env: it names no sandbox (local:
	 * one listener address for all), so the pool may apply it ahead. An
	 * env that differs carries a per-sandbox credential (kubernetes,
	 * fake): it must never reach another sandbox. */
	if (m->env_cache != NULL && strcmp(m->env_cache, envbuf) == 0)
		m->env_shared = 1;
	else {
		m->env_shared = 0;
		if (m->env_cache != NULL)
			explicit_bzero(m->env_cache, strlen(m->env_cache));
		free(m->env_cache);
		m->env_cache = xstrdup(envbuf);
	}
	pthread_mutex_unlock(&m->mu);
	if ((applied == NULL || strcmp(applied, envbuf) != 0) &&
	    (body = agentc_env_body(envbuf)) != NULL) {
		txt = cJSON_PrintUnformatted(body);
		buf_init(&resp, 64 * 1024);
		if (sm_agent_call(s, "POST", "/v1/env", txt, strlen(txt), 10000, NULL,
		    &status, &resp, err, sizeof(err)) != 0 || status != 200)
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

/*
 * Whether s's sandbox must be made with its user's home mounted: homes
 * are on, s has a user, and the runtime mounts homes only at create
 * (kubernetes: home_prepare, no home_attach). Such a sandbox is created
 * (create_for prepares the home and names it in the spec), never claimed
 * from the warm pool (a pool sandbox has no home).
 */
static int
home_at_create(const struct sess *s)
{
	const struct runtime_ops *op = s->mgr->rt->ops;

	return s->mgr->conf->homes_enabled && s->user[0] != '\0' &&
	    op->home_prepare != NULL && op->home_attach == NULL;
}

/*
 * A session with a user gets that user's home at RT_HOME_PATH (made on
 * first use, homes.size or the user's homes.users size) and HOME there
 * for the shell, jobs and exec (/v1/env). Local attaches it into the
 * running sandbox (a warm claim stays warm); kubernetes mounted it at
 * create (create_for prepared it; start mounts it again), so only HOME
 * is set here. 0, or -1 with err.
 */
static int
home_setup(struct sess *s, char *err, size_t errlen)
{
	static const char body[] = "{\"set\":{\"HOME\":\"" RT_HOME_PATH "\"}}";
	struct sessmgr *m = s->mgr;
	const struct runtime_ops *op = m->rt->ops;
	char rerr[256];
	struct buf resp;
	int status = 0;
	long long t0 = util_mono_ms();

	if (!m->conf->homes_enabled || s->user[0] == '\0' ||
	    (op->home_prepare == NULL && op->home_attach == NULL))
		return 0;
	if ((op->home_prepare != NULL && !home_at_create(s) &&
	    op->home_prepare(m->rt, s->user, conf_home_size(m->conf, s->user),
	    rerr, sizeof(rerr)) == -1) ||
	    (op->home_attach != NULL && op->home_attach(m->rt, s->rtid, s->user,
	    rerr, sizeof(rerr)) == -1)) {
		log_warnx("session=%s sandbox=%s home failed err=\"%s\"",
		    s->sid, s->rtid, rerr);
		snprintf(err, errlen, "the home of user %s could not be attached: "
		    "%s; retry in a moment", s->user, rerr);
		return -1;
	}
	buf_init(&resp, 64 * 1024);
	if (sm_agent_call(s, "POST", "/v1/env", body, sizeof(body) - 1, 10000, NULL,
	    &status, &resp, rerr, sizeof(rerr)) != 0 || status != 200) {
		buf_free(&resp);
		snprintf(err, errlen, "the home of user %s is attached but HOME "
		    "could not be set (agent status %d); retry", s->user, status);
		return -1;
	}
	buf_free(&resp);
	log_info("session=%s sandbox=%s home attached user=%s home_ms=%lld",
	    s->sid, s->rtid, s->user, util_mono_ms() - t0);
	return 0;
}

/* Egress, env, the home and the client files of the named credentials
 * (pre_files: those of the attach pre came from); personalised once all
 * are done. 0, or -1 with err (the next call tries again). */
static int
personalise(struct sess *s, const char *applied, const char *pre,
    const char *pre_files, char *err, size_t errlen)
{
	struct buf files;
	int rc = 0;

	buf_init(&files, CREDFILES_MAX);
	if (pre != NULL && pre != PRE_FAILED && pre_files != NULL &&
	    buf_addstr(&files, pre_files) == -1)
		buf_reset(&files);
	personalise_egress(s, applied, pre, &files);
	if (home_setup(s, err, errlen) == -1) {
		s->personalised = 0;
		rc = -1;
	} else if (files.len > 0 && buf_add(&files, "", 1) == 0)
		/* after the home: written into it, not under its mount */
		sess_client_files_write(s, files.p);
	buf_free(&files);
	return rc;
}

static void
set_running_locked(struct sess *s, const char *id, const char *image)
{
	agentc_cache_clear(&s->conns);	/* cached connections went to the old sandbox */
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

/* The session's own reaper limits (0: the configuration's). */
static void
set_reap_ms(struct sess *s, long long life, long long idle)
{
	pthread_mutex_lock(&s->mgr->mu);
	s->lifetime_ms = life;
	s->idle_ms = idle;
	pthread_mutex_unlock(&s->mgr->mu);
}

/*
 * A sandbox made or claimed for a session and not yet its own: reconcile
 * leaves it alone (pending) and it holds a creation slot, until
 * take_sandbox gives it to the session or drop_sandbox removes it.
 */
struct newsb {
	char			 id[ID_SANDBOX_MAX];
	char			 image[256];
	struct rt_agent_addr	 addr;
	struct sbxcfg		 cfg;
	long long		 t0;	/* mono ms: when its creation began */
	struct poolmem		*pm;	/* claimed from the warm pool, or NULL */
	int			 attached;	/* 1: env is the claim's attach's;
					 * -1: that attach failed */
	char			 env[8192];
	struct buf		 files;		/* the claim's attach's client files */
	struct buf		 creds;		/* ... and credentials' names */
};

/* A new sandbox nobody will use: destroyed, its slot and id freed. */
static void
drop_sandbox(struct sess *s, struct newsb *nw, const char *why)
{
	struct sessmgr *m = s->mgr;

	(void)sm_rt_destroy_logged(m, nw->id, s->sid, why);
	buf_free(&nw->files);
	buf_free(&nw->creds);
	pthread_mutex_lock(&m->mu);
	sm_slot_done_locked(m, &m->creating, nw->pm != NULL ? -1 : 0, 0);
	pthread_mutex_unlock(&m->mu);
	sm_pending_del(m, nw->id);
	sm_poolmem_free(nw->pm);
	nw->pm = NULL;
}

/*
 * The claim's record rec, written before the member is s's: with egress,
 * by the attach itself (rt_egress.record: on kubernetes the claim is then
 * one write, the sandbox's policy), its env kept in nw for personalise;
 * when that fails, or without egress, by set_labels (personalise attaches
 * then, as after a create). 0, or -1 with err: nothing recorded.
 */
static int
claim_record(struct sess *s, struct newsb *nw, const struct sm_rec *rec,
    char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct rt_egress eg;

	if (m->conf->egress) {
		memset(&eg, 0, sizeof(eg));
		eg.labels = rec->kv;
		eg.nlabels = rec->n;
		eg.record = 1;
		buf_init(&nw->files, CREDFILES_MAX);
		eg.files_out = &nw->files;
		buf_init(&nw->creds, SESS_CREDS_MAX);
		eg.creds_out = &nw->creds;
		if (sm_rt_attach(m, nw->id, &eg, nw->env, sizeof(nw->env), err,
		    errlen) == 0) {
			nw->attached = 1;
			return 0;
		}
		log_warnx("sandbox=%s pool claim: egress attach failed (the "
		    "sandbox works without network) err=\"%s\"", nw->id, err);
		explicit_bzero(nw->env, sizeof(nw->env));
		nw->attached = -1;
	}
	return m->rt->ops->set_labels(m->rt, nw->id, rec->kv, rec->n, err,
	    errlen);
}

/*
 * Claims a warm pool member for s into nw: the record first (a crash after
 * this leaves a session's sandbox, never a used one back in the pool).
 * The pool starts its refill at once. 0, or -1 when there is none or the
 * claim failed (then create one). Held: s->lk exclusive.
 */
static int
claim_pool(struct sess *s, struct newsb *nw)
{
	struct sessmgr *m = s->mgr;
	struct sm_rec rec;
	char rerr[256];
	struct poolmem *pm;
	long long t0 = util_mono_ms();

	memset(nw, 0, sizeof(*nw));
	if ((pm = pool_take(m)) == NULL)
		return -1;
	pool_refill(m);		/* replace it now, not at the next tick */
	snprintf(nw->id, sizeof(nw->id), "%s", pm->id);
	snprintf(nw->image, sizeof(nw->image), "%s", pm->image[0] ? pm->image :
	    m->conf->image ? m->conf->image : "");
	nw->cfg = pm->cfg;
	nw->pm = pm;
	nw->t0 = t0;
	sm_record(s, nw->id, 0, &rec);
	if (claim_record(s, nw, &rec, rerr, sizeof(rerr)) == -1 ||
	    m->rt->ops->agent_addr(m->rt, nw->id, &nw->addr, rerr,
	    sizeof(rerr)) == -1) {
		log_warnx("sandbox=%s pool claim failed err=\"%s\"", nw->id, rerr);
		explicit_bzero(nw->env, sizeof(nw->env));
		drop_sandbox(s, nw, "pool claim failed");
		return -1;
	}
	log_info("session=%s sandbox=%s claimed from pool labels_ms=%lld",
	    s->sid, nw->id, util_mono_ms() - t0);
	return 0;
}

/*
 * Waits (bounded) for a creation slot and takes it with a new id into
 * nw->id, pending. replacing: the session's current sandbox goes once the
 * new one is ready, so it may pass limits.max_running by that one. 0, or
 * -1 with *e and err.
 */
static int
take_slot(struct sessmgr *m, int replacing, struct newsb *nw, enum sess_err *e,
    char *err, size_t errlen)
{
	struct timespec ts;

	pthread_mutex_lock(&m->mu);
	if (m->draining) {
		pthread_mutex_unlock(&m->mu);
		*e = SE_DRAINING;
		snprintf(err, errlen, "the orchestrator is shutting down; retry in a moment");
		return -1;
	}
	if (sm_count_running_locked(m) >= m->conf->max_running + replacing) {
		pthread_mutex_unlock(&m->mu);
		*e = SE_LIMIT;
		snprintf(err, errlen, "limit reached: %lld sandboxes are running "
		    "(limits.max_running); retry later", m->conf->max_running);
		return -1;
	}
	/* Wait (bounded) for a creation slot rather than failing. */
	util_deadline(&ts, CREATE_SLOT_WAIT_S * 1000LL);
	while (m->creating + m->pool_creating >= m->conf->max_creating &&
	    !m->draining)
		if (pthread_cond_timedwait(&m->slot_cv, &m->mu, &ts) == ETIMEDOUT)
			break;
	if (m->creating + m->pool_creating >= m->conf->max_creating) {
		pthread_mutex_unlock(&m->mu);
		*e = SE_LIMIT;
		snprintf(err, errlen, "limit reached: %lld sandboxes are being "
		    "created (limits.max_creating); retry in a few seconds",
		    m->conf->max_creating);
		return -1;
	}
	m->creating++;
	sm_new_rtid(nw->id, sizeof(nw->id), "s-");
	sm_pending_add_locked(m, nw->id);
	pthread_mutex_unlock(&m->mu);
	return 0;
}

/*
 * Creates a sandbox for s from o into nw, labelled with s's record (its
 * lifetime and idle limits already set), its /workspace a copy of
 * sandbox ws_from's when that is set, its user's home mounted when the
 * runtime mounts homes at create (the home made first). s itself is not
 * changed. 0, or -1 with *e and err (nothing left behind but the home,
 * which outlives sandboxes anyway). Held: s->lk exclusive.
 */
static int
create_for(struct sess *s, const struct sess_opts *o, const char *ws_from,
    int replacing, const struct rt_progress *pg, struct newsb *nw,
    enum sess_err *e, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct rt_spec sp;
	struct rt_info ri;
	struct sm_rec rec;
	char rerr[256];

	memset(nw, 0, sizeof(*nw));
	nw->t0 = util_mono_ms();
	if (home_at_create(s) && m->rt->ops->home_prepare(m->rt, s->user,
	    conf_home_size(m->conf, s->user), rerr, sizeof(rerr)) == -1) {
		log_warnx("session=%s home failed user=%s err=\"%s\"", s->sid,
		    s->user, rerr);
		*e = SE_RUNTIME;
		snprintf(err, errlen, "the home of user %s could not be made "
		    "ready: %s; retry in a moment", s->user, rerr);
		return -1;
	}
	if (take_slot(m, replacing, nw, e, err, errlen) == -1)
		return -1;
	sm_spec_defaults(m, &sp, o);
	sp.id = nw->id;
	if (home_at_create(s))
		sp.home_user = s->user;	/* mounted from the start */
	sm_record(s, nw->id, 0, &rec);
	sp.labels = rec.kv;
	sp.nlabels = rec.n;
	sp.workspace_from = ws_from;
	memset(&ri, 0, sizeof(ri));
	log_info("session=%s sandbox=%s creating image=%s%s%s", s->sid, nw->id,
	    sp.image ? sp.image : "(default)", ws_from ? " workspace_from=" : "",
	    ws_from ? ws_from : "");
	if (sm_rt_create(m, &sp, pg, &ri, rerr, sizeof(rerr)) == -1) {
		rt_info_clear(&ri);
		log_warnx("session=%s sandbox=%s create failed err=\"%s\"", s->sid,
		    nw->id, rerr);
		drop_sandbox(s, nw, "create failed");	/* whatever got half made */
		*e = SE_RUNTIME;
		snprintf(err, errlen, "could not create the sandbox: %s", rerr);
		return -1;
	}
	snprintf(nw->image, sizeof(nw->image), "%s", ri.image[0] ? ri.image :
	    sp.image ? sp.image : "");
	sm_cfg_from_info(&nw->cfg, &ri);
	rt_info_clear(&ri);
	if (m->rt->ops->agent_addr(m->rt, nw->id, &nw->addr, rerr,
	    sizeof(rerr)) == -1) {
		drop_sandbox(s, nw, "no agent address");
		*e = SE_RUNTIME;
		snprintf(err, errlen, "sandbox created but its agent cannot be "
		    "reached: %s", rerr);
		return -1;
	}
	return 0;
}

/* s takes nw as its sandbox (running), then gets personalised. Held:
 * s->lk exclusive. 0, or -1 with err when personalising failed (the
 * sandbox is s's all the same). */
static int
take_sandbox(struct sess *s, struct newsb *nw, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct poolmem *pm = nw->pm;
	int rc;

	pthread_mutex_lock(&m->mu);
	set_running_locked(s, nw->id, nw->image);
	s->addr = nw->addr;
	s->cfg = nw->cfg;
	s->personalised = 0;
	sm_slot_done_locked(m, &m->creating, pm != NULL ? -1 : 1, nw->t0);
	if (pm != NULL)
		m->n_claimed++;
	pthread_mutex_unlock(&m->mu);
	sm_pending_del(m, nw->id);
	/* the claim's attach registered it: its credentials are in force */
	set_creds(s, nw->id, nw->attached > 0 ? &nw->creds : NULL);
	if (pm == NULL) {
		log_info("session=%s sandbox=%s created ms=%lld", s->sid, nw->id,
		    util_mono_ms() - nw->t0);
		return personalise(s, NULL, NULL, NULL, err, errlen);
	}
	if (pm->conn != NULL && util_mono_ms() - pm->added_ms < AGENTC_CACHE_IDLE_MS) {
		agentc_cache_put(&s->conns, pm->conn);	/* opened in the pool */
		pm->conn = NULL;
	}
	rc = personalise(s, pm->env, nw->attached > 0 ? nw->env :
	    nw->attached < 0 ? PRE_FAILED : NULL, nw->files.len > 0 &&
	    buf_add(&nw->files, "", 1) == 0 ? nw->files.p : NULL, err, errlen);
	explicit_bzero(nw->env, sizeof(nw->env));
	buf_free(&nw->files);
	buf_free(&nw->creds);
	sm_poolmem_free(pm);
	nw->pm = NULL;
	return rc;
}

/* Creates or claims a sandbox for s (state NONE) from o (NULL: the
 * defaults; the warm pool serves those, but not a session whose home
 * must be mounted at create), a creation's progress told to pg. Held:
 * s->lk exclusive. */
static int
provision(struct sess *s, const struct sess_opts *o,
    const struct rt_progress *pg, enum sess_err *e, char *err, size_t errlen)
{
	struct newsb nw;

	s->created_ms = util_unix_ms();
	set_reap_ms(s, o != NULL ? o->lifetime_ms : 0, o != NULL ? o->idle_ms : 0);
	if ((o == NULL || !sessopt_sandbox_given(o)) && !home_at_create(s) &&
	    claim_pool(s, &nw) == 0)
		goto take;
	if (create_for(s, o, NULL, 0, pg, &nw, e, err, errlen) == -1)
		return -1;
take:
	if (take_sandbox(s, &nw, err, errlen) == -1) {
		*e = SE_RUNTIME;
		return -1;
	}
	return 0;
}

/* Starts s's stopped sandbox, its progress told to pg. Held: s->lk
 * exclusive. */
static int
resume(struct sess *s, const struct rt_progress *pg, enum sess_err *e,
    char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct rt_agent_addr addr;
	struct sm_rec rec;
	char rerr[256];

	pthread_mutex_lock(&m->mu);
	if (sm_count_running_locked(m) >= m->conf->max_running) {
		pthread_mutex_unlock(&m->mu);
		*e = SE_LIMIT;
		snprintf(err, errlen, "limit reached: %lld sandboxes are running "
		    "(limits.max_running); this session's sandbox is stopped and "
		    "cannot be resumed now; retry later", m->conf->max_running);
		return -1;
	}
	pthread_mutex_unlock(&m->mu);
	agentc_cache_clear(&s->conns);
	if (sm_rt_start(m, s->rtid, pg, rerr, sizeof(rerr)) == -1 ||
	    m->rt->ops->agent_addr(m->rt, s->rtid, &addr, rerr, sizeof(rerr)) == -1) {
		log_warnx("session=%s sandbox=%s start failed err=\"%s\"", s->sid,
		    s->rtid, rerr);
		*e = SE_RUNTIME;
		snprintf(err, errlen, "this session's sandbox could not be "
		    "restarted (%s); its /workspace is kept: retry in a moment",
		    rerr);
		return -1;
	}
	/* The record no longer says stopped. */
	sm_record(s, s->rtid, 0, &rec);
	if (m->rt->ops->set_labels(m->rt, s->rtid, rec.kv, rec.n, rerr,
	    sizeof(rerr)) == -1)
		log_warnx("session=%s sandbox=%s set_labels failed err=\"%s\"",
		    s->sid, s->rtid, rerr);
	pthread_mutex_lock(&m->mu);
	set_running_locked(s, s->rtid, NULL);
	s->addr = addr;
	s->personalised = 0;
	m->n_started++;
	pthread_mutex_unlock(&m->mu);
	log_info("session=%s sandbox=%s resumed", s->sid, s->rtid);
	if (personalise(s, NULL, NULL, NULL, err, errlen) == -1) {
		*e = SE_RUNTIME;
		return -1;
	}
	return 0;
}

static int
timed_wrlock(struct sess *s, int ms)
{
	struct timespec ts;

	util_deadline(&ts, ms);
	return pthread_rwlock_timedwrlock(&s->lk, &ts) == 0 ? 0 : -1;
}

int
sess_hold(struct sess *s, int ms)
{
	struct timespec ts;

	util_deadline(&ts, ms);
	return pthread_rwlock_timedrdlock(&s->lk, &ts) == 0 ? 0 : -1;
}

void
sess_release(struct sess *s)
{
	pthread_rwlock_unlock(&s->lk);
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

/*
 * sess_enter, and sess_wake with nocreate: a session with no sandbox is
 * not given one (-1, *e SE_NOTFOUND).
 */
static int
enter(struct sess *s, const struct rt_progress *pg, int nocreate,
    enum sess_err *e, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	int rc;

	for (;;) {
		pthread_rwlock_rdlock(&s->lk);
		if (s->state == S_RUNNING && s->personalised && !atomic_load(&s->dead)) {
			atomic_fetch_add(&s->inflight, 1);
			atomic_store(&s->last_used_ms, util_unix_ms());
			/* Frozen while idle: a call thaws it (milliseconds). A
			 * runtime that cannot is a sandbox gone wrong: the
			 * slow path below looks at it again. */
			if (sm_thaw(s, err, errlen) == 0)
				return 0;
			atomic_store(&s->dead, 1);
			atomic_fetch_sub(&s->inflight, 1);
		}
		if (nocreate && s->state == S_NONE) {
			pthread_rwlock_unlock(&s->lk);
			*e = SE_NOTFOUND;
			snprintf(err, errlen, "the session has no sandbox");
			return -1;
		}
		pthread_rwlock_unlock(&s->lk);
		if (lock_excl(s, "this session's sandbox is busy being changed by "
		    "another call; retry in a moment", e, err, errlen) == -1)
			return -1;
		set_provisioning(s, 1);
		/* A dead agent's sandbox, or a stopped one (reconcile may have
		 * seen it stopping while something outside destroyed it): when
		 * the runtime no longer has it, make a new one instead. */
		if ((atomic_load(&s->dead) && s->state == S_RUNNING) ||
		    s->state == S_STOPPED) {
			struct rt_info ri;
			char gerr[128];
			int gone, grc;

			memset(&ri, 0, sizeof(ri));
			grc = m->rt->ops->get(m->rt, s->rtid, &ri, gerr, sizeof(gerr));
			rt_info_clear(&ri);
			/* A stopped sandbox holds the session's /workspace: only
			 * the runtime's own "not found" gives it up. */
			gone = grc == RT_ENOTFOUND ||
			    (grc != 0 && s->state != S_STOPPED);
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
		if (s->state == S_NONE && nocreate) {
			*e = SE_NOTFOUND;
			snprintf(err, errlen, "the session has no sandbox");
			rc = -1;
		} else if (s->state == S_NONE)
			rc = provision(s, NULL, pg, e, err, errlen);
		else if (s->state == S_STOPPED)
			rc = resume(s, pg, e, err, errlen);
		else if (sess_ensure_addr(s, err, errlen) == -1) {
			/* Adopted but unreachable: start it over. */
			pthread_mutex_lock(&m->mu);
			s->state = S_STOPPED;
			pthread_mutex_unlock(&m->mu);
			rc = resume(s, pg, e, err, errlen);
		} else if (!s->personalised &&
		    personalise(s, NULL, NULL, NULL, err, errlen) == -1) {
			*e = SE_RUNTIME;
			rc = -1;
		}
		set_provisioning(s, 0);
		pthread_rwlock_unlock(&s->lk);
		if (rc == -1)
			return -1;
	}
}

int
sess_enter(struct sess *s, const struct rt_progress *pg, enum sess_err *e,
    char *err, size_t errlen)
{
	return enter(s, pg, 0, e, err, errlen);
}

int
sess_wake(struct sess *s, enum sess_err *e, char *err, size_t errlen)
{
	if (enter(s, NULL, 1, e, err, errlen) == -1)
		return -1;
	sess_leave(s);
	return 0;
}

const struct rt_agent_addr *
sess_agent_addr(struct sess *s)
{
	return &s->addr;
}

void
sess_leave(struct sess *s)
{
	atomic_store(&s->last_used_ms, util_unix_ms());
	atomic_fetch_sub(&s->inflight, 1);
	pthread_rwlock_unlock(&s->lk);
}

/*
 * After a failed agent request: has the sandbox stopped? An agent that
 * refuses connections is gone, but its sandbox's pid 1 exits a moment
 * later: the runtime is asked again for up to SESS_GONE_WAIT_MS while the
 * agent stays unreachable. 1 with why (the state and reason), 0 if the
 * sandbox runs and its agent answers connections.
 */
#define SESS_GONE_WAIT_MS	1500

static int
sandbox_gone(struct sess *s, char *why, size_t whylen)
{
	struct sessmgr *m = s->mgr;
	struct rt_info ri;
	struct agentc *c;
	char e[256];
	long long until = util_mono_ms() + SESS_GONE_WAIT_MS;
	int gone = 0;

	for (;;) {
		memset(&ri, 0, sizeof(ri));
		if (m->rt->ops->get(m->rt, s->rtid, &ri, e, sizeof(e)) != 0) {
			snprintf(why, whylen, "gone from the runtime");
			gone = 1;
		} else if (ri.state != RT_RUNNING) {
			snprintf(why, whylen, "%s%s%s", rt_state_name(ri.state),
			    ri.reason[0] != '\0' ? ": " : "", ri.reason);
			gone = 1;
		}
		rt_info_clear(&ri);
		if (gone)
			return 1;
		/* running, says the runtime: does its agent take a connection? */
		if ((c = agentc_open(&s->addr, AGENT_CONNECT_MS, e,
		    sizeof(e))) != NULL) {
			agentc_close(c);
			return 0;
		}
		if (util_mono_ms() >= until) {
			snprintf(why, whylen, "its agent refuses connections");
			return 1;
		}
		nanosleep(&(struct timespec){ 0, 50 * 1000000L }, NULL);
	}
}

int
sess_agent(struct sess *s, const char *method, const char *path,
    const char *body, size_t bodylen, int timeout_ms,
    const struct agentc_cancel *cx, int *status, struct buf *resp, char *err,
    size_t errlen)
{
	char why[384];
	int rc;

	if ((rc = sm_agent_call(s, method, path, body, bodylen, timeout_ms, cx,
	    status, resp, err, errlen)) == 0)
		return 0;
	/* Has the sandbox stopped? Then the next sess_enter starts it again
	 * (its workspace kept). */
	if (!sandbox_gone(s, why, sizeof(why)))
		return -1;
	atomic_store(&s->dead, 1);
	log_warnx("session=%s sandbox=%s agent unreachable, sandbox %s", s->sid,
	    s->rtid, why);
	snprintf(err, errlen, "its agent was gone: sandbox %s", why);
	return rc == -2 ? -2 : -3;
}

int
sess_interrupt(struct sessmgr *m, const char *sid)
{
	struct sess *s;
	struct buf resp;
	enum sess_err e;
	char err[256], cmd[1024], *txt;
	cJSON *j, *x, *body;
	int status, sent, rc = -1, pid = 0, busy = 0;

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
	if ((sent = sm_agent_call(s, "POST", "/v1/shell/interrupt", "{}", 2, 5000,
	    NULL, &status, &resp, err, sizeof(err))) == 0 && status == 200) {
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
	/* Only an agent that does not know the request (404) gets the job;
	 * any other failure is the agent's answer, not its age. */
	if (sent == -1 || status != 404) {
		log_warnx("session=%s sandbox=%s interrupt failed status=%d%s%s",
		    s->sid, s->rtid, status, sent == -1 ? " err=" : "",
		    sent == -1 ? err : "");
		buf_free(&resp);
		goto out;
	}
	if (sm_agent_call(s, "GET", "/v1/health", NULL, 0, 5000, NULL, &status, &resp,
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
	if (sm_agent_call(s, "POST", "/v1/jobs", txt, strlen(txt), 5000, NULL, &status,
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

int
sess_do_stop(struct sess *s, const char *reason, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct sm_rec rec;

	if (s->state != S_RUNNING)
		return 0;
	/* A frozen sandbox's processes could not take their signals. */
	if (sm_thaw(s, err, errlen) == -1)
		log_warnx("session=%s sandbox=%s stopped frozen", s->sid, s->rtid);
	s->stopped_ms = util_unix_ms();
	sm_record(s, s->rtid, 1, &rec);
	if (m->rt->ops->set_labels(m->rt, s->rtid, rec.kv, rec.n, err,
	    errlen) == -1)
		log_warnx("session=%s sandbox=%s set_labels failed err=\"%s\"",
		    s->sid, s->rtid, err);
	agentc_cache_clear(&s->conns);
	if (sm_rt_stop(m, s->rtid, err, errlen) == -1) {
		log_warnx("session=%s sandbox=%s stop failed reason=%s err=\"%s\"",
		    s->sid, s->rtid, reason, err);
		return -1;
	}
	atomic_store(&s->frozen, 0);
	atomic_store(&s->frozen_ms, 0);
	pthread_mutex_lock(&m->mu);
	s->state = S_STOPPED;
	s->started_ms = 0;
	m->n_stopped++;
	pthread_mutex_unlock(&m->mu);
	log_info("session=%s sandbox=%s stopped reason=%s", s->sid, s->rtid, reason);
	return 0;
}

int
sess_do_destroy(struct sess *s, const char *reason, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	char id[ID_SANDBOX_MAX];

	if (s->rtid[0] == '\0' || s->state == S_NONE) {
		s->state = S_NONE;
		return 0;
	}
	snprintf(id, sizeof(id), "%s", s->rtid);
	(void)sm_thaw(s, err, errlen);
	atomic_store(&s->frozen, 0);
	agentc_cache_clear(&s->conns);
	pthread_mutex_lock(&m->mu);
	sm_pending_add_locked(m, id);
	pthread_mutex_unlock(&m->mu);
	if (sm_rt_destroy(m, id, err, errlen) == -1) {
		log_warnx("session=%s sandbox=%s destroy failed reason=%s err=\"%s\"",
		    s->sid, id, reason, err);
		sm_pending_del(m, id);
		return -1;
	}
	pthread_mutex_lock(&m->mu);
	s->state = S_NONE;
	s->rtid[0] = '\0';
	s->personalised = 0;
	m->n_destroyed++;
	pthread_mutex_unlock(&m->mu);
	sm_pending_del(m, id);
	log_info("session=%s sandbox=%s destroyed reason=%s", s->sid, id, reason);
	return 0;
}

/*
 * Checks o before anything is touched: the operator's maxima, then the
 * runtime (image, options, its bounds). 0, or -1 with *e SE_BAD and err.
 */
static int
check_opts(struct sessmgr *m, const struct sess_opts *o, enum sess_err *e,
    char *err, size_t errlen)
{
	struct rt_spec sp;

	if (sessopt_check(m->conf, o, err, errlen) == -1) {
		*e = SE_BAD;
		return -1;
	}
	sm_spec_defaults(m, &sp, o);
	if (m->rt->ops->check(m->rt, &sp, err, errlen) == -1) {
		*e = SE_BAD;
		return -1;
	}
	return 0;
}

/* err = "why; your sandbox ... unchanged" (why: a copy of err). */
static void
say_unchanged(char *err, size_t errlen, int had_one)
{
	char why[512];

	snprintf(why, sizeof(why), "%s", err);
	snprintf(err, errlen, "%s. %s", why, had_one ? "Your sandbox and its "
	    "/workspace are unchanged." : "No sandbox was made.");
}

/*
 * Replaces s's sandbox with one built from o: checked first, then built
 * beside the old one (its /workspace a copy of the old one's unless
 * o->fresh_workspace; a stopped sandbox is started for the copy), and
 * only once it answers is it swapped in and the old one destroyed. Any
 * failure before the swap leaves the old sandbox as it was. Held: s->lk
 * exclusive.
 */
static int
replace_locked(struct sess *s, const struct sess_opts *o,
    const struct rt_progress *pg, enum sess_err *e, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	char old[ID_SANDBOX_MAX];
	long long life = s->lifetime_ms, idle = s->idle_ms;
	int carry = !o->fresh_workspace, rc;
	struct newsb nw;

	if (check_opts(m, o, e, err, errlen) == -1) {
		say_unchanged(err, errlen, s->state != S_NONE);
		return -1;
	}
	if (s->state == S_NONE) {
		if (provision(s, o, pg, e, err, errlen) == -1) {
			say_unchanged(err, errlen, 0);
			return -1;
		}
		return 0;
	}
	if (carry && s->state == S_STOPPED &&
	    resume(s, pg, e, err, errlen) == -1) {
		say_unchanged(err, errlen, 1);
		return -1;
	}
	set_reap_ms(s, o->lifetime_ms, o->idle_ms);	/* the new record's */
	if (create_for(s, o, carry ? s->rtid : NULL, 1, pg, &nw, e, err,
	    errlen) == -1) {
		set_reap_ms(s, life, idle);
		say_unchanged(err, errlen, 1);
		return -1;
	}
	snprintf(old, sizeof(old), "%s", s->rtid);
	pthread_mutex_lock(&m->mu);
	sm_pending_add_locked(m, old);	/* reconcile: not a duplicate */
	pthread_mutex_unlock(&m->mu);
	agentc_cache_clear(&s->conns);
	rc = take_sandbox(s, &nw, err, errlen);
	log_info("session=%s sandbox=%s replaces sandbox=%s workspace=%s",
	    s->sid, s->rtid, old, carry ? "copied" : "fresh");
	(void)sm_rt_destroy_logged(m, old, s->sid, "replaced by create_sandbox");
	sm_pending_del(m, old);
	if (rc == -1)
		*e = SE_RUNTIME;
	return rc;
}

int
sess_reprovision(struct sess *s, const struct sess_opts *o,
    const struct rt_progress *pg, enum sess_err *e, char *err, size_t errlen)
{
	int rc;

	if (lock_excl(s, "another call (a shell command) is still running in "
	    "this session; wait for it to finish, then retry create_sandbox. Your "
	    "sandbox and its /workspace are unchanged.", e, err, errlen) == -1)
		return -1;
	set_provisioning(s, 1);
	rc = replace_locked(s, o, pg, e, err, errlen);
	set_provisioning(s, 0);
	pthread_rwlock_unlock(&s->lk);
	return rc;
}

/* 1 if every sandbox option o names is what s's sandbox has. */
static int
opts_match(const struct sess *s, const struct sess_opts *o)
{
	const struct sbxcfg *c = &s->cfg;

	return (o->image == NULL || strcmp(o->image, s->image) == 0) &&
	    (o->use_kata < 0 || o->use_kata == c->use_kata) &&
	    (o->run_as_root < 0 || o->run_as_root == c->run_as_root) &&
	    (o->writable_root < 0 || o->writable_root == c->writable_root) &&
	    (o->cpu_millis <= 0 || o->cpu_millis == c->lim.cpu_millis) &&
	    (o->mem_bytes <= 0 || o->mem_bytes == c->lim.mem_bytes) &&
	    (o->mem_reserve_bytes <= 0 ||
	    o->mem_reserve_bytes == c->lim.mem_reserve_bytes) &&
	    (o->disk_bytes <= 0 || o->disk_bytes == c->lim.disk_bytes);
}

/* New reaper limits for s's sandbox as it is, kept in its record. Held:
 * s->lk exclusive. */
static void
set_reap_limits(struct sess *s, const struct sess_opts *o)
{
	struct sessmgr *m = s->mgr;
	struct sm_rec rec;
	char err[256];

	if ((o->lifetime_ms <= 0 || o->lifetime_ms == s->lifetime_ms) &&
	    (o->idle_ms <= 0 || o->idle_ms == s->idle_ms))
		return;
	set_reap_ms(s, o->lifetime_ms > 0 ? o->lifetime_ms : s->lifetime_ms,
	    o->idle_ms > 0 ? o->idle_ms : s->idle_ms);
	sm_record(s, s->rtid, s->state == S_STOPPED, &rec);
	if (m->rt->ops->set_labels(m->rt, s->rtid, rec.kv, rec.n, err,
	    sizeof(err)) == -1)
		log_warnx("session=%s sandbox=%s set_labels failed err=\"%s\"",
		    s->sid, s->rtid, err);
}

int
sess_create(struct sess *s, const struct sess_opts *o, int *created,
    enum sess_err *e, char *err, size_t errlen)
{
	int rc = 0, same;

	if (lock_excl(s, "a call is still running in this session; retry in a "
	    "moment", e, err, errlen) == -1)
		return -1;
	set_provisioning(s, 1);
	*created = s->state == S_NONE;
	same = !*created && (!sessopt_sandbox_given(o) || opts_match(s, o));
	if (same) {
		if (sessopt_check(s->mgr->conf, o, err, errlen) == -1) {
			*e = SE_BAD;
			rc = -1;
		} else
			set_reap_limits(s, o);
	} else
		rc = replace_locked(s, o, NULL, e, err, errlen);
	set_provisioning(s, 0);
	pthread_rwlock_unlock(&s->lk);
	/* The same sandbox: running, as a call would find it. */
	if (rc == 0 && same && (rc = sess_enter(s, NULL, e, err, errlen)) == 0)
		sess_leave(s);
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
		if (sm_count_stopped_locked(m) >= m->conf->max_stopped) {
			pthread_mutex_unlock(&m->mu);
			*e = SE_LIMIT;
			snprintf(err, errlen, "limit reached: %lld stopped sandboxes "
			    "(limits.max_stopped); delete some first",
			    m->conf->max_stopped);
			goto out;
		}
		pthread_mutex_unlock(&m->mu);
	}
	if ((destroy ? sess_do_destroy(s, reason, err, errlen) :
	    sess_do_stop(s, reason, err, errlen)) == -1) {
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

/* ---- the credential policy ---- */

/* One policy change at a time, so that the last one stored is the last
 * one registered. */
static pthread_mutex_t policy_mu = PTHREAD_MUTEX_INITIALIZER;

/*
 * s's record (with its policy) into the runtime and, when its sandbox
 * runs, registered again at its proxy so that new connections and
 * requests have it. Held: s shared and policy_mu. 0, or -1 with err.
 */
static int
policy_apply(struct sess *s, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct rt_egress eg;
	struct sm_rec rec;
	char rerr[256], envbuf[8192];
	struct rt_info ri;
	struct buf creds, files;
	const char *got;
	int again, tries;

	if (s->state == S_NONE)
		return 0;	/* the next sandbox is made with the record */
	/* Another record writer (apps.c, under a shared hold too) may have
	 * read the record before the policy changed and write it after:
	 * read it back, and write again when it lost the policy. */
	for (tries = 0; tries < 3; tries++) {
		sm_record(s, s->rtid, s->state == S_STOPPED, &rec);
		if (m->rt->ops->set_labels(m->rt, s->rtid, rec.kv, rec.n, rerr,
		    sizeof(rerr)) == -1) {
			snprintf(err, errlen, "the policy is set but could not be "
			    "kept in the sandbox's record: %s", rerr);
			return -1;
		}
		memset(&ri, 0, sizeof(ri));
		if (m->rt->ops->get(m->rt, s->rtid, &ri, rerr, sizeof(rerr)) != 0) {
			rt_info_clear(&ri);
			break;
		}
		got = rt_label(&ri, POLICY_LABEL);
		again = (got == NULL) != (rec.policy[0] == '\0') ||
		    (got != NULL && strcmp(got, rec.policy) != 0);
		rt_info_clear(&ri);
		if (!again)
			break;
	}
	if (s->state != S_RUNNING || !m->conf->egress) {
		set_creds(s, s->rtid, NULL);	/* known at the next attach */
		return 0;	/* a start registers it with the record */
	}
	memset(&eg, 0, sizeof(eg));
	eg.labels = rec.kv;
	eg.nlabels = rec.n;
	buf_init(&creds, SESS_CREDS_MAX);
	eg.creds_out = &creds;
	buf_init(&files, CREDFILES_MAX);
	eg.files_out = &files;
	if (sm_rt_attach(m, s->rtid, &eg, envbuf, sizeof(envbuf), rerr,
	    sizeof(rerr)) == -1) {
		snprintf(err, errlen, "the policy is set but the sandbox could not "
		    "be registered again at its proxy (retry): %s", rerr);
		explicit_bzero(envbuf, sizeof(envbuf));
		buf_free(&creds);
		buf_free(&files);
		return -1;
	}
	explicit_bzero(envbuf, sizeof(envbuf));
	set_creds(s, s->rtid, &creds);	/* the names follow the policy */
	buf_free(&creds);
	/*
	 * The client files follow it too: each file the credentials left
	 * in force make is written again without the others (a client all
	 * of whose credentials went keeps its file, whose placeholders the
	 * proxy no longer swaps). The environment of commands already
	 * running cannot change; the proxy refuses nothing by it.
	 */
	if (files.len > 0 && buf_add(&files, "", 1) == 0)
		sess_client_files_write(s, files.p);
	buf_free(&files);
	log_info("session=%s sandbox=%s policy registered at the proxy",
	    s->sid, s->rtid);
	return 0;
}

int
sess_set_policy(struct sess *s, const struct policy *p, int put,
    enum sess_err *e, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct policy *cur = NULL, *nw = NULL;
	char *curtxt = NULL, *txt = NULL;
	int fresh, widens = 0, changed, rc = -1;

	if (sess_hold(s, LIFECYCLE_HOLD_MS) == -1) {
		*e = SE_BUSY;
		snprintf(err, errlen, "the session's sandbox is being changed: retry");
		return -1;
	}
	pthread_mutex_lock(&policy_mu);
	pthread_mutex_lock(&m->mu);
	/* A session nothing has made yet takes the operator's policy for
	 * its org, narrowed; any other only narrows what it has. */
	fresh = !put && s->state == S_NONE && !s->provisioning &&
	    !s->policy_pinned;
	if (s->policy != NULL)
		curtxt = xstrdup(s->policy);
	pthread_mutex_unlock(&m->mu);
	if (fresh)
		nw = policy_combine(policy_set_for(m->conf->policies, s->org), p,
		    &widens, err, errlen);
	else {
		if (curtxt != NULL && (cur = policy_parse(curtxt, strlen(curtxt),
		    "policy", err, errlen)) == NULL) {
			*e = SE_RUNTIME;
			goto out;
		}
		nw = policy_narrow(cur, p, &widens, err, errlen);
	}
	if (nw == NULL && widens) {
		*e = fresh ? SE_BAD : SE_WIDEN;
		goto out;
	}
	txt = nw != NULL ? policy_text(nw) : NULL;
	if (txt != NULL && strlen(txt) > POLICY_MAX_JSON) {
		*e = SE_BAD;
		snprintf(err, errlen, "policy: %zu bytes of compact JSON with the "
		    "sections it takes from %s, more than the %d a policy may have",
		    strlen(txt), fresh ? "the operator's policy" : "the current one",
		    POLICY_MAX_JSON);
		goto out;
	}
	pthread_mutex_lock(&m->mu);
	changed = (txt == NULL) != (s->policy == NULL) ||
	    (txt != NULL && strcmp(txt, s->policy) != 0);
	free(s->policy);
	s->policy = txt;
	txt = NULL;
	s->policy_pinned = 1;
	pthread_mutex_unlock(&m->mu);
	if (changed)
		log_info("session=%s policy %s", s->sid, put ? "narrowed" : "set");
	if ((changed || put) && policy_apply(s, err, errlen) == -1) {
		*e = SE_RUNTIME;
		goto out;
	}
	rc = 0;
out:
	pthread_mutex_unlock(&policy_mu);
	sess_release(s);
	policy_free(cur);
	policy_free(nw);
	free(curtxt);
	free(txt);
	return rc;
}

void
sess_policy_forget(struct sessmgr *m, const char *sid)
{
	struct sess *s;
	int fr = 0;

	pthread_mutex_lock(&m->mu);
	if ((s = sm_lookup_locked(m, sid)) != NULL) {
		s->policy_pinned = 0;
		if (s->refs == 0 && !s->removed && s->state == S_NONE &&
		    !s->provisioning) {
			sm_remove_locked(m, s);
			fr = 1;
		}
	}
	pthread_mutex_unlock(&m->mu);
	if (fr)
		sm_sess_free(s);
}
