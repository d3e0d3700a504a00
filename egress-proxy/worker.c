/*
 * worker.c: the worker threads, the top of the connection engine
 * (proxy_int.h): their tick and inbox, and proxy.h's calls that start,
 * stop and feed them. A worker's loop owns its connections, pool and
 * targets. Other threads reach it only through its inbox (worker_post).
 * The tick (every 500 ms) enforces every deadline and idle timeout, parks
 * idle upstreams and runs the quiet-time Lua collection.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>

#include "addon.h"
#include "audit.h"
#include "credtok.h"
#include "ghapp.h"
#include "log.h"
#include "proxy_int.h"
#include "sandbox.h"
#include "tgtab.h"
#include "util.h"
#include "xmalloc.h"

static struct worker *workers;
static int nworkers;

static void
tick_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct worker *w = arg;
	struct conn *c, *n;
	long long now = util_mono_coarse_ms();
	unsigned long long work;

	(void)fd;
	(void)ev;
	upool_expire(w, now);
	for (c = TAILQ_FIRST(&w->conns); c != NULL; c = n) {
		n = TAILQ_NEXT(c, link);
		if (c->deadline != 0 && now > c->deadline) {
			switch (c->st) {
			case CS_CONNECTING:
				proxy_connect_fail(c, 504, "connect_timeout", "upstream connect timed out");
				break;
			case CS_DECIDE:
			case CS_HOOK:
				atomic_fetch_add(&addon_errors_total, 1);
				log_warnx("conn=%llx addon hook timed out", (unsigned long long)c->id);
				conn_respond(c, 502, "hook_timeout", "addon hook timed out");
				break;
			case CS_GATE:
				conn_respond(c, 408, "body_timeout",
				    "request body start not received in time (policy check)");
				break;
			case CS_HEAD:
				if (c->unid)
					atomic_fetch_add(&the_proxy.st.unid_expired, 1);
				if (c->cl != NULL &&
				    evbuffer_get_length(bufferevent_get_input(c->cl)) > 0)
					conn_respond(c, 408, "head_timeout", "request head timeout");
				else
					conn_kill(c);
				break;
			default:
				conn_kill(c);
				break;
			}
			continue;
		}
		if (c->head_start != 0 && now - c->head_start > the_proxy.conf->header_ms &&
		    (c->st == CS_HEAD || c->st == CS_REQ_HEAD)) {
			conn_respond(c, 408, "head_timeout", "request head timeout");
			continue;
		}
		if (c->deadline == 0 && now - c->last_active > the_proxy.conf->idle_ms) {
			conn_kill(c);
			continue;
		}

		if (c->st == CS_REQ_HEAD && c->head_start == 0 && c->sleep_ev == NULL &&
		    now - c->last_active > the_proxy.conf->upstream_idle_ms) {
			/*
			 * Idle: park the upstream TLS connection (or drop it),
			 * drop all parser state and sleep.
			 */
			if (c->up != NULL)
				upool_park(c);
			if (c->up != NULL)
				bufferevent_free(c->up);
			c->up = NULL;
			proxy_conn_rest(c);
		}
	}
	/*
	 * A worker with no new connection or request for a whole tick runs
	 * a full Lua collection once: the hooks' finished coroutines and
	 * closed connections' ctx tables are otherwise kept until the
	 * incremental collector's next cycle (up to the heap doubling).
	 */
	work = (unsigned long long)w->next_id + w->nreq;
	if (work == w->work_seen && work != w->work_gc && w->vm != NULL) {
		addon_vm_gc(w->vm);
		w->work_gc = work;
	}
	w->work_seen = work;
}

static void
inbox_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct worker *w = arg;
	struct msg *m, *next;
	struct conn *c, *cn;

	(void)fd;
	(void)ev;
	pthread_mutex_lock(&w->mtx);
	m = w->inbox;
	w->inbox = w->inbox_tail = NULL;
	pthread_mutex_unlock(&w->mtx);
	for (; m != NULL; m = next) {
		next = m->next;
		switch (m->type) {
		case MSG_ACCEPT:
			proxy_accept(w, m->fd, m->sb);
			break;
		case MSG_KILL_SB:
			for (c = TAILQ_FIRST(&w->conns); c != NULL; c = cn) {
				cn = TAILQ_NEXT(c, link);
				if (c->sb == m->sb)
					conn_kill(c);
			}
			upool_kill_sb(w, m->sb);
			sandbox_unref(m->sb);
			break;
		case MSG_SHED:
			conn_shed(w, m->fd);
			break;
		case MSG_EVICT_SRC:
			conn_evict_src(w, m->fd, m->peer);
			break;
		case MSG_STOP:
			event_base_loopbreak(w->base);
			break;
		}
		free(m);
	}
}

static void
worker_post(struct worker *w, struct msg *m)
{
	wmsg_post(w, m);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	event_base_loop(w->base, 0);
	upool_kill_sb(w, NULL);
	return NULL;
}

/* ---- proxy.h: starting, stopping and feeding the workers ---- */
/* Called on the main thread. */

int
proxy_workers_start(int n)
{
	struct timeval one = { 0, 500000 };
	int i;

	workers = xcalloc((size_t)n, sizeof(*workers));
	nworkers = n;
	wmsg_init(workers, n);
	for (i = 0; i < n; i++) {
		struct worker *w = &workers[i];
		w->idx = i;
		pthread_mutex_init(&w->mtx, NULL);
		TAILQ_INIT(&w->conns);
		TAILQ_INIT(&w->dead);
		TAILQ_INIT(&w->unid);
		TAILQ_INIT(&w->pool);
		TAILQ_INIT(&w->idleup);
		buf_init(&w->scratch, (size_t)4 * 1024 * 1024);
		w->tgts = tgtab_new();
		{
			/* The changelist coalesces the many enable/disable pairs
			 * of a request cycle into fewer epoll_ctl calls. */
			struct event_config *ec = event_config_new();
			if (ec == NULL)
				return -1;
			event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
			w->base = event_base_new_with_config(ec);
			event_config_free(ec);
			if (w->base == NULL)
				return -1;
		}
		w->dns = evdns_base_new(w->base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
		    EVDNS_BASE_DISABLE_WHEN_INACTIVE);
		if (w->dns == NULL)
			w->dns = evdns_base_new(w->base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
		if (w->dns == NULL)
			return -1;
		w->inbox_ev = event_new(w->base, -1, EV_READ | EV_PERSIST, inbox_cb, w);
		w->reap_ev = event_new(w->base, -1, 0, conn_reap_cb, w);
		if (the_proxy.audit_fd != -1)
			w->audit = auditq_new(w->base, the_proxy.audit_fd);
		w->tick_ev = event_new(w->base, -1, EV_PERSIST, tick_cb, w);
		event_add(w->tick_ev, &one);
		w->gh = ghapp_new(w->base, the_proxy.conf);
		w->ct = credtok_new(w->base, the_proxy.conf, w->audit);
		(void)proxy_worker_vm(w);
		if (pthread_create(&w->th, NULL, worker_main, w) != 0)
			return -1;
	}
	return 0;
}

void
proxy_workers_stop(void)
{
	int i;

	for (i = 0; i < nworkers; i++) {
		struct msg *m = xcalloc(1, sizeof(*m));
		m->type = MSG_STOP;
		worker_post(&workers[i], m);
	}
	for (i = 0; i < nworkers; i++) {
		pthread_join(workers[i].th, NULL);
		if (workers[i].audit != NULL)
			auditq_flush(workers[i].audit);
	}
}

void
proxy_dispatch(int fd, struct sandbox *sb)
{
	struct msg *m = xcalloc(1, sizeof(*m));
	int i, best = 0;
	long bl = -1, l;

	for (i = 0; i < nworkers; i++) {
		l = atomic_load(&workers[i].load);
		if (bl == -1 || l < bl) {
			bl = l;
			best = i;
		}
	}
	/*
	 * Counted now, not when the worker gets to it, so a burst of accepts
	 * spreads over the workers (conn_kill uncounts it).
	 */
	atomic_fetch_add(&workers[best].load, 1);
	m->type = MSG_ACCEPT;
	m->fd = fd;
	m->sb = sb;
	worker_post(&workers[best], m);
}

void
proxy_kill_sandbox(struct sandbox *sb)
{
	int i;

	for (i = 0; i < nworkers; i++) {
		struct msg *m = xcalloc(1, sizeof(*m));
		m->type = MSG_KILL_SB;
		m->sb = sandbox_ref(sb);
		worker_post(&workers[i], m);
	}
}

long
proxy_shed(int n)
{
	int i;

	for (i = 0; i < nworkers; i++) {
		struct msg *m = xcalloc(1, sizeof(*m));
		m->type = MSG_SHED;
		m->fd = n;
		worker_post(&workers[i], m);
	}
	return (long)n * nworkers;
}
