/*
 * test_orch_work.c: work.c's fair shares: per-key queues served round
 * robin (one key's backlog does not stand in front of another's), the
 * per-key cap (refused beyond, counted), and keys freed when idle. One
 * worker thread (workers.max 1: no reserve), so the order is exact.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "lib/work.h"
#include "unit.h"

static struct event_base *base;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int gate_open, ndone;
static char order[64];

struct item {
	char	 name[8];
	int	 gate;		/* wait for gate_open */
};

static void
item_run(void *arg)
{
	struct item *it = arg;

	pthread_mutex_lock(&mu);
	while (it->gate && !gate_open)
		pthread_cond_wait(&cv, &mu);
	strncat(order, it->name, sizeof(order) - strlen(order) - 1);
	pthread_mutex_unlock(&mu);
}

static void
item_done(void *arg)
{
	free(arg);
	ndone++;
	event_base_loopbreak(base);
}

static struct item *
item(const char *name, int gate)
{
	struct item *it = calloc(1, sizeof(*it));

	snprintf(it->name, sizeof(it->name), "%s", name);
	it->gate = gate;
	return it;
}

static void
open_gate(void)
{
	pthread_mutex_lock(&mu);
	gate_open = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

/* Runs the loop until n completions arrived (or about 5 s). */
static void
wait_done(int n)
{
	struct timeval tv = { 0, 50000 };
	int i;

	for (i = 0; i < 100 && ndone < n; i++) {
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
}

static void
reset(void)
{
	gate_open = 0;
	ndone = 0;
	order[0] = '\0';
}

TEST(test_round_robin)
{
	reset();
	/* The one thread is held by g; a's backlog queues before b's item. */
	CHECK_INT(work_submit_key("g", 0, item_run, item_done, item("g", 1)), 0);
	usleep(20000);
	CHECK_INT(work_submit_key("a", 0, item_run, item_done, item("a1", 0)), 0);
	CHECK_INT(work_submit_key("a", 0, item_run, item_done, item("a2", 0)), 0);
	CHECK_INT(work_submit_key("a", 0, item_run, item_done, item("a3", 0)), 0);
	CHECK_INT(work_submit_key("b", 0, item_run, item_done, item("b1", 0)), 0);
	work_submit(item_run, item_done, item("s1", 0));
	open_gate();
	wait_done(6);
	CHECK_INT(ndone, 6);
	/* Turns, item by item: b1 and the daemon's s1 do not wait for a2, a3. */
	CHECK_STR(order, "ga1b1s1a2a3");
}

TEST(test_cap)
{
	int keys, rc;
	unsigned long long refused0, refused;
	struct item *c3;

	reset();
	work_key_stats(&keys, &refused0);
	CHECK_INT(work_submit_key("c", 2, item_run, item_done, item("c1", 1)), 0);
	CHECK_INT(work_submit_key("c", 2, item_run, item_done, item("c2", 1)), 0);
	/* running + queued = 2: the third is refused, nothing queued (and
	 * not taken: it is still ours to free) */
	c3 = item("c3", 1);
	rc = work_submit_key("c", 2, item_run, item_done, c3);
	CHECK_INT(rc, -1);
	if (rc == -1)
		free(c3);
	CHECK_INT(work_key_load("c"), 2);
	/* another key is not held to c's cap */
	CHECK_INT(work_submit_key("d", 2, item_run, item_done, item("d1", 1)), 0);
	work_key_stats(&keys, &refused);
	CHECK_INT(refused - refused0, 1);
	open_gate();
	wait_done(3);
	CHECK_INT(ndone, 3);
	CHECK_INT(work_key_load("c"), 0);
	CHECK_INT(work_key_load("d"), 0);
	work_key_stats(&keys, &refused);
	CHECK_INT(keys, 0);	/* idle keys are freed */
	/* room again once they finished */
	CHECK_INT(work_submit_key("c", 2, item_run, item_done, item("c4", 0)), 0);
	wait_done(4);
	CHECK_INT(ndone, 4);
}

int
main(void)
{
	evthread_use_pthreads();
	base = event_base_new();
	if (base == NULL || work_init(base, 1, 1) == -1)
		return 1;
	RUN(test_round_robin);
	RUN(test_cap);
	return unit_done();
}
