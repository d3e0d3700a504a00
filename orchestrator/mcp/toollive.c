/*
 * toollive.c: a tool call's live progress message (toollive_progress_text):
 * a running shell command's output tail, polled from the agent on a
 * thread of its own, or what a sandbox start it waits on is waiting for
 * (toollive_start_note, the sink a call passes to the runtime: rt_progress).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "areq.h"
#include "log.h"
#include "toollive.h"
#include "toolres.h"
#include "tools.h"
#include "xmalloc.h"

/*
 * Live output. While a shell call whose client takes progress
 * notifications runs, a thread of its own asks the agent for the running
 * command's output tail (GET /v1/shell/output) every LIVE_PERIOD and
 * keeps the message in tc->live; each progress notification (mcp_http.c,
 * every tools.progress_interval) sends the latest one.
 */
static pthread_mutex_t live_lk = PTHREAD_MUTEX_INITIALIZER;

#define LIVE_MIN_MS	250
#define LIVE_MAX_MS	2000
#define LIVE_REQ_MS	3000	/* one poll's request */

struct live {
	struct tool_call	*tc;
	struct sess		*s;
	long long		 period_ms;
	pthread_t		 th;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	int			 stop;
};

char *
toollive_progress_text(struct tool_call *tc, const char *head)
{
	char *m = NULL;
	size_t n;

	pthread_mutex_lock(&live_lk);
	if (tc->live != NULL) {
		n = strlen(head) + strlen(tc->live) + 3;
		m = xmalloc(n);
		snprintf(m, n, "%s, %s", head, tc->live);
	}
	pthread_mutex_unlock(&live_lk);
	return m;
}

/* Replaces tc's progress message with m (owned; NULL: none). */
void
toollive_set(struct tool_call *tc, char *m)
{
	char *old;

	pthread_mutex_lock(&live_lk);
	old = tc->live;
	tc->live = m;
	pthread_mutex_unlock(&live_lk);
	free(old);
}

/*
 * The sink a call that takes progress passes down to the runtime
 * (tc->starting, through sess_enter and sess_reprovision): what a sandbox
 * start it waits on is waiting for (an image pull, scheduling) is its
 * progress message until the sandbox is up.
 */
void
toollive_start_note(void *arg, const char *msg)
{
	toollive_set(arg, xstrdup(msg));
}

static void *
live_main(void *arg)
{
	struct live *l = arg;
	struct timespec ts;
	struct areq a;
	char *m, path[64];
	int stop = 0;

	snprintf(path, sizeof(path), "/v1/shell/output?max=%d", TR_LIVE_BYTES * 2);
	while (!stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(l->period_ms / 1000);
		ts.tv_nsec += (long)(l->period_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&l->mu);
		while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &ts) == 0)
			;
		stop = l->stop;
		pthread_mutex_unlock(&l->mu);
		if (stop)
			break;
		memset(&a, 0, sizeof(a));
		a.s = l->s;
		if (areq_do(&a, "GET", path, NULL, LIVE_REQ_MS) == 0 &&
		    a.status == 200 && (m = toolres_live_text(a.j)) != NULL)
			toollive_set(l->tc, m);
		else if (a.status == 404)
			stop = 1;	/* an agent without the route */
		areq_free(&a);
	}
	return NULL;
}

/* Starts live output for tc's shell call (when its client asked for
 * progress); NULL when it does not, or the thread did not start. */
struct live *
toollive_start(struct tool_call *tc, struct sess *s, const struct conf *c)
{
	struct live *l;

	if (!tc->progress)
		return NULL;
	l = xcalloc(1, sizeof(*l));
	l->tc = tc;
	l->s = s;
	l->period_ms = c->progress_interval_ms / 2;
	if (l->period_ms < LIVE_MIN_MS)
		l->period_ms = LIVE_MIN_MS;
	if (l->period_ms > LIVE_MAX_MS)
		l->period_ms = LIVE_MAX_MS;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	if (pthread_create(&l->th, NULL, live_main, l) != 0) {
		log_warnx("session=%s live output: no thread", tc->sid);
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->cv);
		free(l);
		return NULL;
	}
	return l;
}

/* Stops it (at most one poll's LIVE_REQ_MS later). */
void
toollive_stop(struct live *l)
{
	if (l == NULL)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->th, NULL);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l);
}

