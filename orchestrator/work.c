/* work.c: worker threads and the completion queue back to the event loop. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "log.h"
#include "util.h"
#include "work.h"
#include "xmalloc.h"

#define WORK_IDLE_EXIT_S	30	/* extra threads exit after this idle */

struct witem {
	work_fn		 fn;
	work_fn		 done;
	void		*arg;
	struct witem	*next;
};

static struct {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	struct witem	*head, *tail;	/* pending work */
	int		 nqueued;
	int		 nthreads, nidle, nbusy;
	int		 min, max;
	int		 stopping;
	/* completions */
	pthread_mutex_t	 cmu;
	struct witem	*chead, *ctail;
	struct event	*cev;
	struct event_base *base;
} wq = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
	.cmu = PTHREAD_MUTEX_INITIALIZER,
};

static void *work_main(void *);

static void
complete(struct witem *it)
{
	int kick;

	pthread_mutex_lock(&wq.cmu);
	kick = wq.chead == NULL;
	it->next = NULL;
	if (wq.ctail != NULL)
		wq.ctail->next = it;
	else
		wq.chead = it;
	wq.ctail = it;
	pthread_mutex_unlock(&wq.cmu);
	if (kick)
		event_active(wq.cev, EV_READ, 0);
}

static void
completions_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg UNUSED)
{
	struct witem *it, *next;

	pthread_mutex_lock(&wq.cmu);
	it = wq.chead;
	wq.chead = wq.ctail = NULL;
	pthread_mutex_unlock(&wq.cmu);
	for (; it != NULL; it = next) {
		next = it->next;
		if (it->done != NULL)
			it->done(it->arg);
		free(it);
	}
}

static int
spawn_locked(void)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, (size_t)256 * 1024);
	rc = pthread_create(&t, &attr, work_main, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		errno = rc;
		log_warn("work: pthread_create");
		return -1;
	}
	wq.nthreads++;
	wq.nidle++;
	return 0;
}

static void *
work_main(void *arg UNUSED)
{
	struct witem *it;
	struct timespec ts;

	pthread_mutex_lock(&wq.mu);
	for (;;) {
		while (wq.head == NULL && !wq.stopping) {
			util_deadline(&ts, WORK_IDLE_EXIT_S * 1000LL);
			if (pthread_cond_timedwait(&wq.cv, &wq.mu, &ts) == ETIMEDOUT &&
			    wq.head == NULL && wq.nthreads > wq.min)
				goto out;
		}
		if (wq.stopping && wq.head == NULL)
			goto out;
		it = wq.head;
		wq.head = it->next;
		if (wq.head == NULL)
			wq.tail = NULL;
		wq.nqueued--;
		wq.nidle--;
		wq.nbusy++;
		pthread_mutex_unlock(&wq.mu);
		it->fn(it->arg);
		complete(it);
		pthread_mutex_lock(&wq.mu);
		wq.nbusy--;
		wq.nidle++;
	}
out:
	wq.nthreads--;
	wq.nidle--;
	pthread_mutex_unlock(&wq.mu);
	return NULL;
}

static void
loop_only(void *arg UNUSED)
{
}

int
work_init(struct event_base *base, int min, int max)
{
	int i;

	wq.base = base;
	wq.min = min;
	wq.max = max;
	if ((wq.cev = event_new(base, -1, EV_PERSIST, completions_cb, NULL)) == NULL)
		return -1;
	pthread_mutex_lock(&wq.mu);
	for (i = 0; i < min; i++)
		if (spawn_locked() == -1) {
			pthread_mutex_unlock(&wq.mu);
			return -1;
		}
	pthread_mutex_unlock(&wq.mu);
	return 0;
}

void
work_submit(work_fn fn, work_fn done, void *arg)
{
	struct witem *it = xcalloc(1, sizeof(*it));

	it->fn = fn;
	it->done = done;
	it->arg = arg;
	pthread_mutex_lock(&wq.mu);
	if (wq.tail != NULL)
		wq.tail->next = it;
	else
		wq.head = it;
	wq.tail = it;
	wq.nqueued++;
	if (wq.nidle < wq.nqueued && wq.nthreads < wq.max)
		(void)spawn_locked();
	pthread_cond_signal(&wq.cv);
	pthread_mutex_unlock(&wq.mu);
}

void
work_loop_call(work_fn fn, void *arg)
{
	struct witem *it = xcalloc(1, sizeof(*it));

	it->fn = loop_only;
	it->done = fn;
	it->arg = arg;
	complete(it);
}

void
work_stats(int *threads, int *busy, int *queued)
{
	pthread_mutex_lock(&wq.mu);
	*threads = wq.nthreads;
	*busy = wq.nbusy;
	*queued = wq.nqueued;
	pthread_mutex_unlock(&wq.mu);
}

void
work_shutdown(void)
{
	pthread_mutex_lock(&wq.mu);
	wq.stopping = 1;
	pthread_cond_broadcast(&wq.cv);
	pthread_mutex_unlock(&wq.mu);
}
