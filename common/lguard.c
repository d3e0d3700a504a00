/*
 * lguard.c: pausing accept() while descriptors are short (see lguard.h).
 *
 * libevent's listener, when accept() fails with anything but EAGAIN-like
 * errors, calls the error callback or logs a warning and returns; the
 * listening socket stays readable, so under EMFILE the loop spins, one
 * warning per turn (52 MB of log in 4 s). Here a failure disables every
 * guarded listener and arms one timer: the pending connections wait in the
 * kernel's backlog meanwhile. When the timer fires they are enabled again.
 * How long each pause lasts and when a line is logged is backoff.c's policy
 * (the agent's own loop applies the same one); this file does the pausing.
 * The timer lives on the event base of the first listener added.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "backoff.h"
#include "lguard.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

/* Connections each distinct shed callback may close per failure (per worker in the proxy). */
#define LGUARD_SHED_PER_LISTENER	32

struct lguard_entry {
	struct evconnlistener	*lis;	/* one of lis, ev */
	struct event		*ev;
	lguard_shed_fn		 shed;
	void			*arg;
};

static struct event *lguard_resume_ev;
static struct lguard_entry *lguard_ents;
static size_t lguard_n, lguard_cap;
static int lguard_paused;
static struct backoff lguard_bo;	/* the pause and its log rate */
static struct log_rate lguard_other_rl;
static struct log_rate lguard_short_rl;

static void
entry_enable(const struct lguard_entry *e, int on)
{
	if (e->lis != NULL) {
		if (on)
			evconnlistener_enable(e->lis);
		else
			evconnlistener_disable(e->lis);
	} else if (on)
		event_add(e->ev, NULL);
	else
		event_del(e->ev);
}

static void
resume_cb(evutil_socket_t fd, short ev, void *arg)
{
	size_t i;

	(void)fd;
	(void)ev;
	(void)arg;
	lguard_paused = 0;
	backoff_resumed(&lguard_bo, util_mono_coarse_ms());
	for (i = 0; i < lguard_n; i++)
		entry_enable(&lguard_ents[i], 1);
}

/* 1 when an entry before i has i's shed callback and argument (called once). */
static int
shed_seen(size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (lguard_ents[j].shed == lguard_ents[i].shed &&
		    lguard_ents[j].arg == lguard_ents[i].arg)
			return 1;
	return 0;
}

int
lguard_is_short(int e)
{
	return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

void
lguard_accept_failed(int e)
{
	long long now = util_mono_coarse_ms(), ms;
	struct timeval tv;
	long dropped, shed = 0;
	size_t i;

	if (!lguard_is_short(e)) {
		/* Anything else (a peer's reset) is the connection's own. */
		if (log_rate_ok(&lguard_other_rl, 1, BACKOFF_LOG_MS, &dropped))
			log_warnx("accept: %s (%ld similar suppressed)", strerror(e), dropped);
		return;
	}
	if (lguard_paused || lguard_resume_ev == NULL)
		return;
	ms = backoff_pause(&lguard_bo, now);
	lguard_paused = 1;
	for (i = 0; i < lguard_n; i++)
		entry_enable(&lguard_ents[i], 0);
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(lguard_resume_ev, &tv);
	for (i = 0; i < lguard_n; i++)
		if (lguard_ents[i].shed != NULL && !shed_seen(i))
			shed += lguard_ents[i].shed(lguard_ents[i].arg, LGUARD_SHED_PER_LISTENER);
	if (log_rate_ok(&lguard_short_rl, 1, BACKOFF_LOG_MS, &dropped))
		log_warnx("accept: %s: not accepting for %lld ms, closed %ld oldest connections (%ld similar suppressed)",
		    strerror(e), ms, shed, dropped);
}

static void
error_cb(struct evconnlistener *l, void *arg)
{
	(void)l;
	(void)arg;
	lguard_accept_failed(EVUTIL_SOCKET_ERROR());
}

static void
add_entry(struct evconnlistener *l, struct event *ev, struct event_base *base,
    lguard_shed_fn shed, void *arg)
{
	if (lguard_resume_ev == NULL)
		lguard_resume_ev = evtimer_new(base, resume_cb, NULL);
	if (lguard_n == lguard_cap) {
		lguard_cap = lguard_cap ? lguard_cap * 2 : 16;
		lguard_ents = xreallocarray(lguard_ents, lguard_cap, sizeof(*lguard_ents));
	}
	lguard_ents[lguard_n].lis = l;
	lguard_ents[lguard_n].ev = ev;
	lguard_ents[lguard_n].shed = shed;
	lguard_ents[lguard_n].arg = arg;
	if (lguard_paused)
		entry_enable(&lguard_ents[lguard_n], 0);
	lguard_n++;
}

void
lguard_add(struct evconnlistener *l, lguard_shed_fn shed, void *arg)
{
	if (l == NULL)
		return;
	evconnlistener_set_error_cb(l, error_cb);
	add_entry(l, NULL, evconnlistener_get_base(l), shed, arg);
}

void
lguard_add_event(struct event *ev, lguard_shed_fn shed, void *arg)
{
	if (ev == NULL)
		return;
	add_entry(NULL, ev, event_get_base(ev), shed, arg);
}

void
lguard_del(const void *l)
{
	size_t i;

	for (i = 0; i < lguard_n; i++)
		if ((const void *)lguard_ents[i].lis == l ||
		    (const void *)lguard_ents[i].ev == l) {
			lguard_ents[i] = lguard_ents[--lguard_n];
			break;
		}
	if (lguard_n == 0 && lguard_resume_ev != NULL) {
		/* The last listener went (shutdown, a unit test): the timer goes too. */
		event_free(lguard_resume_ev);
		lguard_resume_ev = NULL;
		lguard_paused = 0;
		free(lguard_ents);
		lguard_ents = NULL;
		lguard_cap = 0;
	}
}

void
lguard_accept_ok(void)
{
	backoff_ok(&lguard_bo);
}

long
lguard_pauses(void)
{
	return (long)lguard_bo.npauses;
}

long long
lguard_raise_nofile(void)
{
	struct rlimit rl;
	rlim_t was;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1) {
		log_warn("getrlimit RLIMIT_NOFILE");
		return 1024;
	}
	was = rl.rlim_cur;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1) {
			log_warn("setrlimit RLIMIT_NOFILE %llu", (unsigned long long)rl.rlim_max);
			rl.rlim_cur = was;
		}
	}
	log_info("descriptors: soft limit %llu (was %llu), hard limit %llu",
	    (unsigned long long)rl.rlim_cur, (unsigned long long)was,
	    (unsigned long long)rl.rlim_max);
	return rl.rlim_cur == RLIM_INFINITY ? (1LL << 30) : (long long)rl.rlim_cur;
}
