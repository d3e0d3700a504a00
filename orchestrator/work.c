/* work.c: worker threads and the completion queue back to the event loop. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "log.h"
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
} W = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
	.cmu = PTHREAD_MUTEX_INITIALIZER,
};

static void *work_main(void *);

static void
complete(struct witem *it)
{
	int kick;

	pthread_mutex_lock(&W.cmu);
	kick = W.chead == NULL;
	it->next = NULL;
	if (W.ctail != NULL)
		W.ctail->next = it;
	else
		W.chead = it;
	W.ctail = it;
	pthread_mutex_unlock(&W.cmu);
	if (kick)
		event_active(W.cev, EV_READ, 0);
}

static void
completions_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg UNUSED)
{
	struct witem *it, *next;

	pthread_mutex_lock(&W.cmu);
	it = W.chead;
	W.chead = W.ctail = NULL;
	pthread_mutex_unlock(&W.cmu);
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
	W.nthreads++;
	W.nidle++;
	return 0;
}

static void *
work_main(void *arg UNUSED)
{
	struct witem *it;
	struct timespec ts;

	pthread_mutex_lock(&W.mu);
	for (;;) {
		while (W.head == NULL && !W.stopping) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += WORK_IDLE_EXIT_S;
			if (pthread_cond_timedwait(&W.cv, &W.mu, &ts) == ETIMEDOUT &&
			    W.head == NULL && W.nthreads > W.min)
				goto out;
		}
		if (W.stopping && W.head == NULL)
			goto out;
		it = W.head;
		W.head = it->next;
		if (W.head == NULL)
			W.tail = NULL;
		W.nqueued--;
		W.nidle--;
		W.nbusy++;
		pthread_mutex_unlock(&W.mu);
		it->fn(it->arg);
		complete(it);
		pthread_mutex_lock(&W.mu);
		W.nbusy--;
		W.nidle++;
	}
out:
	W.nthreads--;
	W.nidle--;
	pthread_mutex_unlock(&W.mu);
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

	W.base = base;
	W.min = min;
	W.max = max;
	if ((W.cev = event_new(base, -1, EV_PERSIST, completions_cb, NULL)) == NULL)
		return -1;
	pthread_mutex_lock(&W.mu);
	for (i = 0; i < min; i++)
		if (spawn_locked() == -1) {
			pthread_mutex_unlock(&W.mu);
			return -1;
		}
	pthread_mutex_unlock(&W.mu);
	return 0;
}

void
work_submit(work_fn fn, work_fn done, void *arg)
{
	struct witem *it = xcalloc(1, sizeof(*it));

	it->fn = fn;
	it->done = done;
	it->arg = arg;
	pthread_mutex_lock(&W.mu);
	if (W.tail != NULL)
		W.tail->next = it;
	else
		W.head = it;
	W.tail = it;
	W.nqueued++;
	if (W.nidle < W.nqueued && W.nthreads < W.max)
		(void)spawn_locked();
	pthread_cond_signal(&W.cv);
	pthread_mutex_unlock(&W.mu);
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
	pthread_mutex_lock(&W.mu);
	*threads = W.nthreads;
	*busy = W.nbusy;
	*queued = W.nqueued;
	pthread_mutex_unlock(&W.mu);
}

void
work_shutdown(void)
{
	pthread_mutex_lock(&W.mu);
	W.stopping = 1;
	pthread_cond_broadcast(&W.cv);
	pthread_mutex_unlock(&W.mu);
}
