/*
 * sessview.c: a session as the outside sees it (sess.h): its JSON for
 * REST and the tools, its status (with the agent's health read under a
 * short deadline), the session list and the per-user counts. Reads the
 * session table and its records; changes nothing.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "lib/agentc.h"
#include "lib/jsonu.h"
#include "log.h"
#include "sess_int.h"
#include "util.h"
#include "xmalloc.h"

static const char *
sstate_name(const struct sess *s)
{
	if (s->provisioning)
		return "provisioning";
	switch (s->state) {
	case S_NONE: return "none";
	case S_RUNNING: return atomic_load(&s->frozen) ? "frozen" : "running";
	case S_STOPPED: return "stopped";
	}
	return "unknown";
}

/* max(0, v) as a JSON number, or null when unknown (v < 0 asks for null). */
static void
add_ms_or_null(cJSON *o, const char *k, int known, long long v)
{
	if (known)
		cJSON_AddNumberToObject(o, k, (double)(v > 0 ? v : 0));
	else
		cJSON_AddNullToObject(o, k);
}

static cJSON *
sess_json_locked(struct sess *s)
{
	cJSON *o = cJSON_CreateObject(), *l;
	long long now = util_unix_ms(), used = atomic_load(&s->last_used_ms);
	long long life = sm_lifetime_ms(s), idle = sm_idle_ms(s);
	int run = s->state == S_RUNNING && !s->provisioning;

	cJSON_AddStringToObject(o, "id", s->sid);
	cJSON_AddStringToObject(o, "org", s->org);
	cJSON_AddStringToObject(o, "user", s->user);
	cJSON_AddStringToObject(o, "state", sstate_name(s));
	cJSON_AddStringToObject(o, "sandbox_id", s->rtid);
	cJSON_AddStringToObject(o, "image", s->image);
	cJSON_AddBoolToObject(o, "run_as_root", s->cfg.run_as_root);
	cJSON_AddBoolToObject(o, "writable_root", s->cfg.writable_root);
	cJSON_AddBoolToObject(o, "use_kata", s->cfg.use_kata);
	l = cJSON_AddObjectToObject(o, "limits");
	cJSON_AddNumberToObject(l, "cpu", (double)s->cfg.lim.cpu_millis / 1000.0);
	cJSON_AddNumberToObject(l, "memory_bytes", (double)s->cfg.lim.mem_bytes);
	cJSON_AddNumberToObject(l, "memory_reservation_bytes",
	    (double)s->cfg.lim.mem_reserve_bytes);
	cJSON_AddNumberToObject(l, "disk_bytes", (double)s->cfg.lim.disk_bytes);
	cJSON_AddNumberToObject(l, "pids", (double)s->cfg.lim.pids_max);
	cJSON_AddNumberToObject(l, "lifetime_ms", (double)life);
	cJSON_AddNumberToObject(l, "idle_timeout_ms", (double)idle);
	cJSON_AddNumberToObject(o, "created_ms", (double)s->created_ms);
	cJSON_AddNumberToObject(o, "started_ms", (double)s->started_ms);
	cJSON_AddNumberToObject(o, "stopped_ms", (double)s->stopped_ms);
	cJSON_AddNumberToObject(o, "last_used_ms", (double)used);
	cJSON_AddNumberToObject(o, "calls_in_flight", atomic_load(&s->inflight));
	add_ms_or_null(o, "uptime_ms", run, now - s->started_ms);
	add_ms_or_null(o, "lifetime_left_ms", run, s->started_ms + life - now);
	add_ms_or_null(o, "idle_left_ms", run, used + idle - now);
	/* how long since its last call, and since when it is frozen */
	add_ms_or_null(o, "idle_ms", run, now - used);
	add_ms_or_null(o, "frozen_ms", run && atomic_load(&s->frozen),
	    now - atomic_load(&s->frozen_ms));
	/* absent when none (sandbox_status's outputSchema: an object) */
	if (s->policy != NULL && (l = cJSON_Parse(s->policy)) != NULL)
		cJSON_AddItemToObject(o, "policy", l);
	/* the named credentials in force at the proxy for its sandbox
	 * (names, no value); absent when not known (no sandbox, no egress,
	 * not registered since it was made, resumed or adopted) */
	if (s->state != S_NONE && s->creds != NULL && strcmp(s->creds_of, s->rtid) == 0 &&
	    (l = cJSON_Parse(s->creds)) != NULL) {
		cJSON_AddItemToObject(o, "credentials", l);
		cJSON_AddStringToObject(o, "credentials_from", s->creds_from_policy ?
		    "policy" : "defaults");
	}
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

/*
 * GET path from s's agent (held shared; the cached connections when its
 * address is current, else a connection of its own) into *out: the
 * parsed object, or NULL.
 */
static void
status_get(struct sess *s, const char *path, cJSON **out)
{
	struct sessmgr *m = s->mgr;
	struct rt_agent_addr addr;
	struct agentc *c;
	struct buf resp;
	char err[256];
	int status = 0, rc = -1;

	*out = NULL;
	buf_init(&resp, STATUS_RESP_MAX);
	if (s->addr_ok)
		rc = sm_agent_call(s, "GET", path, NULL, 0, STATUS_AGENT_MS, NULL, &status,
		    &resp, err, sizeof(err));
	else if (m->rt->ops->agent_addr(m->rt, s->rtid, &addr, err,
	    sizeof(err)) == 0 && (c = agentc_open(&addr, AGENT_CONNECT_MS, err,
	    sizeof(err))) != NULL) {
		rc = agentc_request(c, "GET", path, NULL, NULL, 0, STATUS_AGENT_MS,
		    &status, &resp, err, sizeof(err));
		agentc_close(c);
	}
	if (rc == 0 && status == 200 && resp.p != NULL &&
	    (*out = cJSON_ParseWithLength(resp.p, resp.len)) != NULL &&
	    !cJSON_IsObject(*out)) {
		cJSON_Delete(*out);
		*out = NULL;
	}
	buf_free(&resp);
}

/* A number the agent sent, bounded, or null. */
static void
add_agent_num(cJSON *o, const char *k, const cJSON *from, const char *fk)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, fk);

	if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0 &&
	    v->valuedouble < 9.0e15)
		cJSON_AddNumberToObject(o, k, (double)(long long)v->valuedouble);
	else
		cJSON_AddNullToObject(o, k);
}

/* The agent's view: busy, last activity, and its running jobs (at most
 * STATUS_MAX_JOBS; commands cut, cleaned to UTF-8). */
static void
status_agent(struct sess *s, cJSON *o)
{
	cJSON *h = NULL, *jl = NULL, *jobs, *j, *x, *it;
	const char *cmd, *id, *st;
	char *cl;
	int n = 0;

	status_get(s, "/v1/health", &h);
	cJSON_AddBoolToObject(o, "busy", cJSON_IsTrue(
	    cJSON_GetObjectItemCaseSensitive(h, "busy")));
	add_agent_num(o, "last_activity_ms", h, "last_activity_ms");
	jobs = cJSON_AddArrayToObject(o, "jobs");
	status_get(s, "/v1/jobs", &jl);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(jl, "jobs")) {
		id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "id"));
		st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "state"));
		if (id == NULL || st == NULL || strcmp(st, "running") != 0)
			continue;
		if (++n > STATUS_MAX_JOBS)
			break;
		j = cJSON_CreateObject();
		cl = jsonu_utf8_clean(id, strnlen(id, 64));
		cJSON_AddStringToObject(j, "id", cl);
		free(cl);
		x = cJSON_GetObjectItemCaseSensitive(it, "command");
		cmd = cJSON_GetStringValue(x);
		cl = jsonu_utf8_clean(cmd ? cmd : "", cmd ? strnlen(cmd,
		    STATUS_CMD_MAX) : 0);
		cJSON_AddStringToObject(j, "command", cl);
		free(cl);
		add_agent_num(j, "pid", it, "pid");
		add_agent_num(j, "started_ms", it, "started_ms");
		cJSON_AddItemToArray(jobs, j);
	}
	cJSON_AddNumberToObject(o, "running_jobs", n);
	cJSON_Delete(h);
	cJSON_Delete(jl);
}

cJSON *
sess_status(struct sess *s)
{
	struct sessmgr *m = s->mgr;
	struct rt_usage us;
	struct timespec ts;
	char err[256];
	cJSON *o, *u;
	int held;

	util_deadline(&ts, STATUS_LOCK_MS);
	held = pthread_rwlock_timedrdlock(&s->lk, &ts) == 0;
	o = sess_json(s);
	us.mem_bytes = us.disk_bytes = us.oom_kills = -1;
	us.disk_partial = 0;
	if (held && s->state != S_NONE && s->rtid[0] != '\0' &&
	    m->rt->ops->usage(m->rt, s->rtid, &us, err, sizeof(err)) == -1)
		us.mem_bytes = us.disk_bytes = us.oom_kills = -1;
	u = cJSON_AddObjectToObject(o, "usage");
	add_ms_or_null(u, "memory_bytes", us.mem_bytes >= 0, us.mem_bytes);
	add_ms_or_null(u, "disk_bytes", us.disk_bytes >= 0, us.disk_bytes);
	cJSON_AddBoolToObject(u, "disk_partial", us.disk_partial);
	add_ms_or_null(u, "oom_kills", us.oom_kills >= 0, us.oom_kills);
	/* A frozen sandbox's agent cannot answer, and a look is no call:
	 * it stays frozen (the next command thaws it). */
	if (held && s->state == S_RUNNING && !atomic_load(&s->frozen))
		status_agent(s, o);
	else {
		cJSON_AddBoolToObject(o, "busy", 0);
		cJSON_AddNullToObject(o, "last_activity_ms");
		cJSON_AddArrayToObject(o, "jobs");
		cJSON_AddNumberToObject(o, "running_jobs", 0);
	}
	if (held)
		pthread_rwlock_unlock(&s->lk);
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

int
sessmgr_user_active(struct sessmgr *m, const char *user)
{
	struct sess *s;
	size_t i;
	int n = 0;

	pthread_mutex_lock(&m->mu);
	for (i = 0; i < HASH_SIZE; i++)
		for (s = m->tab[i]; s != NULL; s = s->hnext)
			if (strcmp(user, s->user) == 0 && (s->state == S_RUNNING ||
			    s->provisioning))
				n++;
	pthread_mutex_unlock(&m->mu);
	return n;
}

struct runtime *
sessmgr_runtime(struct sessmgr *m)
{
	return m->rt;
}

void
sess_trace(struct sess *s, const char *tp)
{
	struct runtime *rt = s->mgr->rt;

	if (rt->ops->trace != NULL && s->rtid[0] != '\0')
		rt->ops->trace(rt, s->rtid, tp);
}
