/*
 * lguard.c: pausing accept() while descriptors are short (see lguard.h).
 *
 * libevent's listener, when accept() fails with anything but EAGAIN-like
 * errors, calls the error callback or logs a warning and returns; the
 * listening socket stays readable, so under EMFILE the loop spins, one
 * warning per turn (52 MB of log in 4 s). Here the error callback disables
 * every guarded listener and arms one timer: the pending connections wait
 * in the kernel's backlog meanwhile. When the timer fires they are enabled
 * again; if accept() fails again within LGUARD_STEADY_MS of that the pause
 * doubles (capped), otherwise it starts again at the minimum.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "lguard.h"
#include "log.h"
#include "proxy.h"
#include "util.h"
#include "xmalloc.h"

/* The first pause, and the longest one: a longer one only delays clients. */
#define LGUARD_BACKOFF_MIN_MS	50
#define LGUARD_BACKOFF_MAX_MS	2000
/* Accepting this long after a resume without a failure resets the pause. */
#define LGUARD_STEADY_MS	1000
/* At most one "descriptors short" line per this interval. */
#define LGUARD_LOG_INTERVAL_MS	10000
/* Unidentified connections each worker closes per failure (idle ones first). */
#define LGUARD_SHED_PER_WORKER	32

static struct event *resume_ev;
static struct evconnlistener **ls;
static size_t nls, capls;
static int paused;
static long long backoff_ms, resumed_at;
static struct log_rate accept_rl, other_rl;

static void
resume_cb(evutil_socket_t fd, short ev, void *arg)
{
	size_t i;

	(void)fd;
	(void)ev;
	(void)arg;
	paused = 0;
	resumed_at = util_mono_coarse_ms();
	for (i = 0; i < nls; i++)
		evconnlistener_enable(ls[i]);
}

static void
error_cb(struct evconnlistener *l, void *arg)
{
	int e = EVUTIL_SOCKET_ERROR();
	long long now = util_mono_coarse_ms();
	struct timeval tv;
	long dropped, shed;
	size_t i;

	(void)l;
	(void)arg;
	if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM) {
		/* Anything else (a peer's reset) is the connection's own. */
		if (log_rate_ok(&other_rl, 1, LGUARD_LOG_INTERVAL_MS, &dropped))
			log_warnx("accept: %s (%ld similar suppressed)", strerror(e), dropped);
		return;
	}
	if (paused)
		return;
	if (backoff_ms == 0 || now - resumed_at > LGUARD_STEADY_MS)
		backoff_ms = LGUARD_BACKOFF_MIN_MS;
	else if ((backoff_ms *= 2) > LGUARD_BACKOFF_MAX_MS)
		backoff_ms = LGUARD_BACKOFF_MAX_MS;
	paused = 1;
	for (i = 0; i < nls; i++)
		evconnlistener_disable(ls[i]);
	tv.tv_sec = backoff_ms / 1000;
	tv.tv_usec = (backoff_ms % 1000) * 1000;
	evtimer_add(resume_ev, &tv);
	atomic_fetch_add(&the_proxy.st.accept_paused, 1);
	shed = proxy_shed(LGUARD_SHED_PER_WORKER);
	if (log_rate_ok(&accept_rl, 1, LGUARD_LOG_INTERVAL_MS, &dropped))
		log_warnx("accept: %s: not accepting for %lld ms, closing up to %ld oldest unidentified connections (%ld similar suppressed; open %ld)",
		    strerror(e), backoff_ms, shed, dropped, proxy_open_conns());
}

void
lguard_init(struct event_base *base)
{
	resume_ev = evtimer_new(base, resume_cb, NULL);
}

void
lguard_add(struct evconnlistener *l)
{
	if (l == NULL)
		return;
	if (nls == capls) {
		capls = capls ? capls * 2 : 16;
		ls = xreallocarray(ls, capls, sizeof(*ls));
	}
	ls[nls++] = l;
	evconnlistener_set_error_cb(l, error_cb);
	if (paused)
		evconnlistener_disable(l);
}

void
lguard_del(struct evconnlistener *l)
{
	size_t i;

	for (i = 0; i < nls; i++)
		if (ls[i] == l) {
			ls[i] = ls[--nls];
			return;
		}
}

void
lguard_raise_nofile(void)
{
	struct rlimit rl;
	rlim_t was;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1) {
		log_warn("getrlimit RLIMIT_NOFILE");
		return;
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
}
