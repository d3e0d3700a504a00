/*
 * pool.c: the warm pool (sess_int.h): sandboxes created ahead of demand with
 * the default image, readied (an open agent connection, the egress env the
 * last claim got, the shell's first command paid) so a claim is a label
 * change. Members are created on worker threads (pool_refill); a claim takes
 * one under mgr->mu and counts as a creation until it is claimed or given
 * back, and starts the refill at once (sess.c). Calls only sessmgr.c.
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


struct poolmem *
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
	sm_pending_add_locked(m, p->id);
	pthread_mutex_unlock(&m->mu);
	return p;
}

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
	if (m->conf->egress && m->env_shared && m->env_cache != NULL)
		env = xstrdup(m->env_cache);	/* the same for every sandbox */
	pthread_mutex_unlock(&m->mu);
	buf_init(&resp, 64 * 1024);
	txt = NULL;
	if (env != NULL && (body = agentc_env_body(env)) != NULL) {
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

	sm_new_rtid(id, sizeof(id), "w-");
	pthread_mutex_lock(&m->mu);
	sm_pending_add_locked(m, id);
	pthread_mutex_unlock(&m->mu);
	sm_spec_defaults(m, &sp, NULL);
	sp.id = id;
	sm_fmt_ll(created, sizeof(created), util_unix_ms());
	kv[0].k = LBL_POOL;
	kv[0].v = "1";
	kv[1].k = LBL_CREATED;
	kv[1].v = created;
	sp.labels = kv;
	sp.nlabels = 2;
	memset(&ri, 0, sizeof(ri));
	if (sm_rt_create(m, &sp, NULL, &ri, err, sizeof(err)) == -1) {
		log_warnx("sandbox=%s pool create failed err=\"%s\"", id, err);
		(void)sm_rt_destroy_logged(m, id, NULL, "pool create failed");
		pthread_mutex_lock(&m->mu);
		sm_slot_done_locked(m, &m->pool_creating, 0, 0);
		pthread_mutex_unlock(&m->mu);
		sm_pending_del(m, id);
		rt_info_clear(&ri);
		return;
	}
	p = xcalloc(1, sizeof(*p));
	snprintf(p->id, sizeof(p->id), "%s", id);
	snprintf(p->image, sizeof(p->image), "%s", ri.image);
	sm_cfg_from_info(&p->cfg, &ri);
	rt_info_clear(&ri);
	pool_warm(m, p);
	p->added_ms = util_mono_ms();
	pthread_mutex_lock(&m->mu);
	p->next = m->pool;
	m->pool = p;
	m->npool++;
	sm_slot_done_locked(m, &m->pool_creating, 1, t0);
	pthread_mutex_unlock(&m->mu);
	sm_pending_del(m, id);
	log_info("sandbox=%s warm pool member ready ms=%lld", id, util_mono_ms() - t0);
}

void
pool_refill(struct sessmgr *m)
{
	int want = 0;

	pthread_mutex_lock(&m->mu);
	while (!m->draining && m->npool + m->pool_creating + want < m->conf->pool_min_idle &&
	    m->pool_creating + want < m->conf->pool_max_parallel &&
	    sm_count_running_locked(m) + want < m->conf->max_running)
		want++;
	m->pool_creating += want;
	pthread_mutex_unlock(&m->mu);
	while (want-- > 0)
		work_submit(pool_create, NULL, m);
}
