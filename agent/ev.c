/*
 * ev.c: the agent's event loop (see ev.h): one epoll fd with a callback
 * per fd, and one-shot timers kept unsorted in an array (a few at a time)
 * on util_mono_ms. A callback may add and delete fds and timers; a timer
 * is gone from the list before its callback runs, and timers added while
 * timers run wait for the next round.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

struct ev_fd {
	ev_io_cb	 cb;
	void		*arg;
};

struct ev_timer {
	uint64_t	 id;
	long long	 when;		/* due, util_mono_ms */
	ev_timer_cb	 cb;
	void		*arg;
};

static int ev_epfd = -1;
static struct ev_fd *ev_fds;
static size_t ev_nfds;
static struct ev_timer *ev_timers;
static size_t ev_ntimers, ev_captimers;
static uint64_t ev_next_id = 1;
static int ev_stopped;

int
ev_init(void)
{
	if ((ev_epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		return -1;
	return 0;
}

int
ev_add(int fd, uint32_t events, ev_io_cb cb, void *arg)
{
	struct epoll_event e;
	size_t n;

	if (fd < 0)
		return -1;
	if ((size_t)fd >= ev_nfds) {
		n = ev_nfds == 0 ? 64 : ev_nfds;
		while (n <= (size_t)fd)
			n *= 2;
		ev_fds = xreallocarray(ev_fds, n, sizeof(*ev_fds));
		memset(ev_fds + ev_nfds, 0, (n - ev_nfds) * sizeof(*ev_fds));
		ev_nfds = n;
	}
	memset(&e, 0, sizeof(e));
	e.events = events;
	e.data.fd = fd;
	if (epoll_ctl(ev_epfd, EPOLL_CTL_ADD, fd, &e) == -1)
		return -1;
	ev_fds[fd].cb = cb;
	ev_fds[fd].arg = arg;
	return 0;
}

int
ev_mod(int fd, uint32_t events)
{
	struct epoll_event e;

	memset(&e, 0, sizeof(e));
	e.events = events;
	e.data.fd = fd;
	return epoll_ctl(ev_epfd, EPOLL_CTL_MOD, fd, &e);
}

void
ev_del(int fd)
{
	if (fd < 0 || (size_t)fd >= ev_nfds)
		return;
	epoll_ctl(ev_epfd, EPOLL_CTL_DEL, fd, NULL);
	ev_fds[fd].cb = NULL;
	ev_fds[fd].arg = NULL;
}

uint64_t
ev_timer_add(uint64_t delay_ms, ev_timer_cb cb, void *arg)
{
	struct ev_timer *t;

	if (ev_ntimers == ev_captimers) {
		ev_captimers = ev_captimers == 0 ? 16 : ev_captimers * 2;
		ev_timers = xreallocarray(ev_timers, ev_captimers,
		    sizeof(*ev_timers));
	}
	t = &ev_timers[ev_ntimers++];
	t->id = ev_next_id++;
	t->when = util_mono_ms() + (long long)delay_ms;
	t->cb = cb;
	t->arg = arg;
	return t->id;
}

void
ev_timer_del(uint64_t id)
{
	size_t i;

	for (i = 0; i < ev_ntimers; i++) {
		if (ev_timers[i].id == id) {
			ev_timers[i] = ev_timers[--ev_ntimers];
			return;
		}
	}
}

void
ev_stop(void)
{
	ev_stopped = 1;
}

/* Runs due timers (one pass: timers added meanwhile wait for the next). */
static void
ev_run_timers(void)
{
	long long now = util_mono_ms();
	uint64_t maxid = ev_next_id;
	size_t i;
	struct ev_timer t;

	for (i = 0; i < ev_ntimers;) {
		if (ev_timers[i].when <= now && ev_timers[i].id < maxid) {
			t = ev_timers[i];
			ev_timers[i] = ev_timers[--ev_ntimers];
			t.cb(t.arg);
			i = 0;	/* the callback may have changed the list */
			continue;
		}
		i++;
	}
}

void
ev_run(void)
{
	struct epoll_event evs[64];
	long long now, next;
	int i, n, tmo, fd;
	size_t k;

	while (!ev_stopped) {
		now = util_mono_ms();
		tmo = -1;
		for (k = 0; k < ev_ntimers; k++) {
			next = ev_timers[k].when > now ? ev_timers[k].when - now : 0;
			if (tmo == -1 || next < tmo)
				tmo = (int)(next > 60000 ? 60000 : next);
		}
		n = epoll_wait(ev_epfd, evs, (int)NELEM(evs), tmo);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			fatal("epoll_wait");
		}
		for (i = 0; i < n; i++) {
			fd = evs[i].data.fd;
			if ((size_t)fd < ev_nfds && ev_fds[fd].cb != NULL)
				ev_fds[fd].cb(fd, evs[i].events, ev_fds[fd].arg);
		}
		ev_run_timers();
	}
}
