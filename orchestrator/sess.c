/*
 * sess.c: session lifecycle (sess.h, rules in sess_int.h): looking a session
 * up or creating it, provisioning its sandbox (a pool claim or a create),
 * resuming a stopped one, the shared/exclusive lock around each call,
 * agent calls with liveness, interrupt, stop, delete, re-provision, and the
 * JSON views. Calls sessmgr.c and pool.c, never reconcile.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "agentc.h"
#include "log.h"
#include "sess_int.h"
#include "strnum.h"
#include "util.h"
#include "work.h"
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
	if (s->refs == 0 && !s->removed && s->state == S_NONE && !s->provisioning) {
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
	eg.nlabels = sm_record_labels(s, kv, created, sizeof(created), NULL, 0);
	eg.labels = kv;
	envbuf[0] = '\0';
	if (sm_rt_attach(m, s->rtid, &eg, envbuf, sizeof(envbuf),
	    err, sizeof(err)) == -1) {
		log_warnx("session=%s sandbox=%s egress attach failed err=\"%s\"",
		    s->sid, s->rtid, err);
		s->personalised = 1;	/* the sandbox works, without network */
		return;
	}
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
		if (sm_agent_call(s, "POST", "/v1/env", txt, strlen(txt), 10000,
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
		size_t n = sm_record_labels(s, kv, created, sizeof(created), NULL, 0);

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
			sm_slot_done_locked(m, &m->creating, -1, 0);
			m->n_claimed++;
			pthread_mutex_unlock(&m->mu);
			sm_pending_del(m, id);
			if (pm->conn != NULL &&
			    util_mono_ms() - pm->added_ms < AGENTC_CACHE_IDLE_MS) {
				agentc_cache_put(&s->conns, pm->conn);	/* opened in the pool */
				pm->conn = NULL;
			}
			log_info("session=%s sandbox=%s claimed from pool labels_ms=%lld",
			    s->sid, id, t1 - t0);
			personalise(s, pm->env);
			sm_poolmem_free(pm);
			return 0;
		}
		sm_poolmem_free(pm);
		log_warnx("sandbox=%s pool claim failed err=\"%s\"", id, rerr);
		pthread_mutex_lock(&m->mu);
		sm_slot_done_locked(m, &m->creating, -1, 0);
		pthread_mutex_unlock(&m->mu);
		(void)sm_rt_destroy_logged(m, id, s->sid, "pool claim failed");
		sm_pending_del(m, id);
	}

	pthread_mutex_lock(&m->mu);
	if (m->draining) {
		pthread_mutex_unlock(&m->mu);
		*e = SE_DRAINING;
		snprintf(err, errlen, "the orchestrator is shutting down; retry in a moment");
		return -1;
	}
	if (sm_count_running_locked(m) >= m->conf->max_running) {
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

		util_deadline(&ts, CREATE_SLOT_WAIT_S * 1000LL);
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
	sm_new_rtid(id, sizeof(id), "s-");
	sm_pending_add_locked(m, id);
	pthread_mutex_unlock(&m->mu);

	sm_spec_defaults(m, &sp, o);
	sp.id = id;
	sp.labels = kv;
	sp.nlabels = sm_record_labels(s, kv, created, sizeof(created), NULL, 0);
	memset(&ri, 0, sizeof(ri));
	log_info("session=%s sandbox=%s creating image=%s", s->sid, id,
	    sp.image ? sp.image : "(default)");
	if (sm_rt_create(m, &sp, &ri, rerr, sizeof(rerr)) == -1) {
		rt_info_clear(&ri);
		log_warnx("session=%s sandbox=%s create failed err=\"%s\"", s->sid,
		    id, rerr);
		/* Whatever got half made goes. */
		(void)sm_rt_destroy_logged(m, id, s->sid, "create failed");
		pthread_mutex_lock(&m->mu);
		sm_slot_done_locked(m, &m->creating, 0, 0);
		pthread_mutex_unlock(&m->mu);
		sm_pending_del(m, id);
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
			(void)sm_rt_destroy_logged(m, id, s->sid, "no agent address");
			pthread_mutex_lock(&m->mu);
			sm_slot_done_locked(m, &m->creating, 0, 0);
			pthread_mutex_unlock(&m->mu);
			sm_pending_del(m, id);
			*e = SE_RUNTIME;
			snprintf(err, errlen, "sandbox created but its agent cannot be "
			    "reached: %s", rerr);
			return -1;
		}
		pthread_mutex_lock(&m->mu);
		set_running_locked(s, id, img);
		s->addr = addr;
		s->personalised = 0;
		sm_slot_done_locked(m, &m->creating, 1, t0);
		pthread_mutex_unlock(&m->mu);
	}
	sm_pending_del(m, id);
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
	if (sm_rt_start(m, s->rtid, rerr, sizeof(rerr)) == -1 ||
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
	n = sm_record_labels(s, kv, created, sizeof(created), NULL, 0);
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

	util_deadline(&ts, ms);
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
		else if (sess_ensure_addr(s, err, errlen) == -1) {
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

int
sess_agent(struct sess *s, const char *method, const char *path,
    const char *body, size_t bodylen, int timeout_ms, int *status,
    struct buf *resp, char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	struct rt_info ri;
	char rerr[128];

	if (sm_agent_call(s, method, path, body, bodylen, timeout_ms, status, resp,
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
	    &status, &resp, err, sizeof(err))) == 0 && status == 200) {
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
	if (sm_agent_call(s, "GET", "/v1/health", NULL, 0, 5000, &status, &resp,
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
	if (sm_agent_call(s, "POST", "/v1/jobs", txt, strlen(txt), 5000, &status,
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
	struct rt_kv kv[6];
	char created[32], stopped[32];
	size_t n;

	if (s->state != S_RUNNING)
		return 0;
	s->stopped_ms = util_unix_ms();
	n = sm_record_labels(s, kv, created, sizeof(created), stopped, sizeof(stopped));
	if (m->rt->ops->set_labels(m->rt, s->rtid, kv, n, err, errlen) == -1)
		log_warnx("session=%s sandbox=%s set_labels failed err=\"%s\"",
		    s->sid, s->rtid, err);
	agentc_cache_clear(&s->conns);
	if (sm_rt_stop(m, s->rtid, err, errlen) == -1) {
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
	if (sess_do_destroy(s, "re-provisioned by create_sandbox", err, errlen) == -1) {
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
