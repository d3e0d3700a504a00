/*
 * work.c: worker threads, per-key queues served round robin (work.h), and
 * the completion queue back to the event loop.
 *
 * State (all under wq.mu): every key with items queued is on the ring
 * (wq.ring, a circular list); a thread takes the first item of the first
 * key on the ring it may run (keyed work stops at max - reserve busy
 * threads; the daemon's own key never does), then moves the ring past
 * that key, so keys take turns item by item. A key lives while it has
 * items queued or running, then is freed; the daemon's key is static.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "log.h"
#include "util.h"
#include "work.h"
#include "xmalloc.h"

#define WORK_IDLE_EXIT_S	30	/* extra threads exit after this idle */
#define WORK_KEY_MAX		128	/* bytes of a key (a session id) */
#define WORK_KEY_BUCKETS	256

struct wkey;

struct witem {
	work_fn		 fn;
	work_fn		 done;
	void		*arg;
	struct wkey	*key;
	struct witem	*next;
};

struct wkey {
	char		 name[WORK_KEY_MAX + 1];
	int		 system;	/* the daemon's own work */
	struct witem	*head, *tail;	/* queued */
	int		 queued, running;
	int		 on_ring;
	struct wkey	*rprev, *rnext;	/* the ring, while queued > 0 */
	struct wkey	*hnext;		/* hash chain (not the system key) */
};

static struct {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	struct wkey	*ring;		/* next key to serve */
	struct wkey	*keys[WORK_KEY_BUCKETS];
	struct wkey	 sys;
	int		 nkeys;
	unsigned long long n_refused;
	int		 nqueued;
	int		 nthreads, nidle, nbusy, nbusy_keyed;
	int		 min, max, reserve;
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
	.sys = { .system = 1 },
};

static void *work_main(void *);

static unsigned
key_hash(const char *s)
{
	unsigned h = 5381;

	while (*s != '\0')
		h = h * 33 + (unsigned char)*s++;
	return h % WORK_KEY_BUCKETS;
}

/* The key named s (created when create), or NULL. Under wq.mu. */
static struct wkey *
key_find(const char *s, int create)
{
	struct wkey *k;
	unsigned h;

	if (s == NULL)
		return &wq.sys;
	h = key_hash(s);
	for (k = wq.keys[h]; k != NULL; k = k->hnext)
		if (strcmp(k->name, s) == 0)
			return k;
	if (!create)
		return NULL;
	k = xcalloc(1, sizeof(*k));
	snprintf(k->name, sizeof(k->name), "%s", s);
	k->hnext = wq.keys[h];
	wq.keys[h] = k;
	wq.nkeys++;
	return k;
}

/* Frees k if nothing of it is queued or running. Under wq.mu. */
static void
key_maybe_free(struct wkey *k)
{
	struct wkey **pp;

	if (k->system || k->queued > 0 || k->running > 0)
		return;
	for (pp = &wq.keys[key_hash(k->name)]; *pp != NULL; pp = &(*pp)->hnext)
		if (*pp == k) {
			*pp = k->hnext;
			wq.nkeys--;
			free(k);
			return;
		}
}

static void
ring_add(struct wkey *k)
{
	if (k->on_ring)
		return;
	k->on_ring = 1;
	if (wq.ring == NULL) {
		k->rprev = k->rnext = k;
		wq.ring = k;
		return;
	}
	/* at the back: just before the next key to serve */
	k->rnext = wq.ring;
	k->rprev = wq.ring->rprev;
	wq.ring->rprev->rnext = k;
	wq.ring->rprev = k;
}

static void
ring_del(struct wkey *k)
{
	if (!k->on_ring)
		return;
	k->on_ring = 0;
	if (k->rnext == k)
		wq.ring = NULL;
	else {
		k->rprev->rnext = k->rnext;
		k->rnext->rprev = k->rprev;
		if (wq.ring == k)
			wq.ring = k->rnext;
	}
	k->rprev = k->rnext = NULL;
}

/* May a thread take an item of k now? */
static int
key_runnable(const struct wkey *k)
{
	return k->system || wq.nbusy_keyed < wq.max - wq.reserve;
}

/* The next item to run (round robin), or NULL. Under wq.mu. */
static struct witem *
take_locked(void)
{
	struct wkey *k = wq.ring;
	struct witem *it;

	if (k == NULL)
		return NULL;
	do {
		if (key_runnable(k))
			break;
		k = k->rnext;
	} while (k != wq.ring);
	if (!key_runnable(k))
		return NULL;
	it = k->head;
	k->head = it->next;
	if (k->head == NULL)
		k->tail = NULL;
	k->queued--;
	k->running++;
	wq.nqueued--;
	if (!k->system)
		wq.nbusy_keyed++;
	wq.ring = k->rnext;	/* the next key's turn */
	if (k->queued == 0)
		ring_del(k);
	return it;
}

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
	struct wkey *k;
	struct timespec ts;

	pthread_mutex_lock(&wq.mu);
	for (;;) {
		while ((it = take_locked()) == NULL && !wq.stopping) {
			util_deadline(&ts, WORK_IDLE_EXIT_S * 1000LL);
			if (pthread_cond_timedwait(&wq.cv, &wq.mu, &ts) == ETIMEDOUT &&
			    wq.ring == NULL && wq.nthreads > wq.min)
				goto out;
		}
		if (it == NULL)
			goto out;	/* stopping, nothing queued we may run */
		wq.nidle--;
		wq.nbusy++;
		pthread_mutex_unlock(&wq.mu);
		it->fn(it->arg);
		pthread_mutex_lock(&wq.mu);
		k = it->key;
		k->running--;
		if (!k->system)
			wq.nbusy_keyed--;
		key_maybe_free(k);
		wq.nbusy--;
		wq.nidle++;
		/* a keyed item may have waited for this thread */
		if (wq.ring != NULL)
			pthread_cond_signal(&wq.cv);
		pthread_mutex_unlock(&wq.mu);
		complete(it);
		pthread_mutex_lock(&wq.mu);
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
	wq.reserve = max / 4 < WORK_RESERVE ? max / 4 : WORK_RESERVE;
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

int
work_submit_key(const char *key, int cap, work_fn fn, work_fn done, void *arg)
{
	struct witem *it;
	struct wkey *k;

	pthread_mutex_lock(&wq.mu);
	k = key_find(key, 1);
	if (!k->system && cap > 0 && k->queued + k->running >= cap) {
		wq.n_refused++;
		key_maybe_free(k);
		pthread_mutex_unlock(&wq.mu);
		return -1;
	}
	it = xcalloc(1, sizeof(*it));
	it->fn = fn;
	it->done = done;
	it->arg = arg;
	it->key = k;
	if (k->tail != NULL)
		k->tail->next = it;
	else
		k->head = it;
	k->tail = it;
	k->queued++;
	ring_add(k);
	wq.nqueued++;
	if (wq.nidle < wq.nqueued && wq.nthreads < wq.max)
		(void)spawn_locked();
	pthread_cond_signal(&wq.cv);
	pthread_mutex_unlock(&wq.mu);
	return 0;
}

void
work_submit(work_fn fn, work_fn done, void *arg)
{
	if (work_submit_key(NULL, 0, fn, done, arg) == -1)
		fatalx("work: the daemon's own work was refused");	/* never: no cap */
}

int
work_key_load(const char *key)
{
	struct wkey *k;
	int n = 0;

	pthread_mutex_lock(&wq.mu);
	if ((k = key_find(key, 0)) != NULL)
		n = k->queued + k->running;
	pthread_mutex_unlock(&wq.mu);
	return n;
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
work_key_stats(int *keys, unsigned long long *refused)
{
	pthread_mutex_lock(&wq.mu);
	*keys = wq.nkeys;
	*refused = wq.n_refused;
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
