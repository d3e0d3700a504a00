/*
 * test_backoff.c: the accept pause policy shared by common/lguard.c and
 * agent/conn.c (common/backoff.c), driven with a made-up clock.
 */
#include <string.h>

#include "backoff.h"
#include "unit.h"

/* A shortage that lasts: each pause starts again within the steady time. */
TEST(test_backoff_doubles_to_max)
{
	static const long long want[] = { 50, 100, 200, 400, 800, 1600, 2000, 2000 };
	struct backoff b;
	long long now = 1000;
	size_t i;

	memset(&b, 0, sizeof(b));
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		long long ms = backoff_pause(&b, now);

		CHECK_INT(ms, want[i]);
		now += ms;
		backoff_resumed(&b, now);
		now += 10;	/* fails again soon after the resume */
	}
	CHECK_INT(b.npauses, 8);
}

/* Quiet for longer than the steady time, or an accept that worked: the minimum again. */
TEST(test_backoff_resets)
{
	struct backoff b;
	long long now = 5000;

	memset(&b, 0, sizeof(b));
	CHECK_INT(backoff_pause(&b, now), BACKOFF_MIN_MS);
	backoff_resumed(&b, now += 50);
	CHECK_INT(backoff_pause(&b, now += BACKOFF_STEADY_MS), 2 * BACKOFF_MIN_MS);
	backoff_resumed(&b, now += 100);
	CHECK_INT(backoff_pause(&b, now + BACKOFF_STEADY_MS + 1), BACKOFF_MIN_MS);
	backoff_resumed(&b, now += BACKOFF_STEADY_MS + 51);
	CHECK_INT(backoff_pause(&b, now += 1), 2 * BACKOFF_MIN_MS);
	backoff_ok(&b);
	backoff_resumed(&b, now += 100);
	CHECK_INT(backoff_pause(&b, now += 1), BACKOFF_MIN_MS);
}

int
main(void)
{
	RUN(test_backoff_doubles_to_max);
	RUN(test_backoff_resets);
	return unit_done();
}
