/*
 * test_proxy_lograte.c: log_rate_ok (common/log.c), the rate limit the
 * proxy puts on every log line a peer can cause (accept errors, refusals,
 * libevent's warnings): at most burst lines per interval, the rest counted
 * and reported by the next line written.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "log.h"
#include "unit.h"

TEST(test_burst_then_drop)
{
	static struct log_rate r;
	long dropped = -1;
	int i, ok = 0;

	for (i = 0; i < 1000; i++)
		ok += log_rate_ok(&r, 3, 60000, &dropped);
	CHECK_INT(ok, 3);
	CHECK_INT(dropped, 0);		/* the third line had nothing suppressed */
	CHECK_INT(atomic_load(&r.dropped), 997);
}

TEST(test_next_window_reports_dropped)
{
	static struct log_rate r;
	struct timespec ts = { 0, 120 * 1000 * 1000 };
	long dropped = -1;
	int i;

	CHECK_INT(log_rate_ok(&r, 1, 50, &dropped), 1);
	for (i = 0; i < 5; i++)
		CHECK_INT(log_rate_ok(&r, 1, 50, &dropped), 0);
	nanosleep(&ts, NULL);
	CHECK_INT(log_rate_ok(&r, 1, 50, &dropped), 1);
	CHECK_INT(dropped, 5);
	CHECK_INT(log_rate_ok(&r, 1, 50, &dropped), 0);
}

static struct log_rate shared;
static atomic_int written;

static void *
hammer(void *arg)
{
	long d;
	int i;

	(void)arg;
	for (i = 0; i < 100000; i++)
		if (log_rate_ok(&shared, 5, 60000, &d))
			atomic_fetch_add(&written, 1);
	return NULL;
}

TEST(test_threads)
{
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, hammer, NULL);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK_INT(atomic_load(&written), 5);
	CHECK_INT(atomic_load(&shared.dropped), 400000 - 5);
}

int
main(void)
{
	RUN(test_burst_then_drop);
	RUN(test_next_window_reports_dropped);
	RUN(test_threads);
	return unit_done();
}
