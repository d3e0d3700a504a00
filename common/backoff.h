/*
 * backoff.h: when to stop accepting and for how long, while descriptors or
 * memory are short (backoff.c): the policy alone, with no I/O, no clock of
 * its own and no event loop, so that common/lguard.c (the daemons on
 * libevent) and agent/conn.c (the static agent's own loop) apply the same
 * one and a unit test drives it (tests/unit/test_backoff.c).
 *
 * A shortage pauses accepting for BACKOFF_MIN_MS; a new one within
 * BACKOFF_STEADY_MS of the last resume doubles the pause, up to
 * BACKOFF_MAX_MS; later, or after an accept that worked (backoff_ok), it
 * starts again at the minimum. Callers log at most one line per
 * BACKOFF_LOG_MS (log_rate_ok, common/log.c), with the count of the
 * shortages not logged since.
 * Times are milliseconds of a monotonic clock, > 0, from the caller.
 */
#ifndef COMMON_BACKOFF_H
#define COMMON_BACKOFF_H

/* The first pause, and the longest one: a longer one only delays clients. */
#define BACKOFF_MIN_MS		50
#define BACKOFF_MAX_MS		2000
/* Accepting this long after a resume without a shortage resets the pause. */
#define BACKOFF_STEADY_MS	1000
/* At most one "descriptors short" line per this interval. */
#define BACKOFF_LOG_MS		10000

/* Zero it to start (static storage is). One per process or per loop. */
struct backoff {
	long long	 pause_ms;	/* the last pause; 0: none since a reset */
	long long	 resumed_at;	/* when the last pause ended */
	unsigned long	 npauses;	/* pauses since start (metrics) */
};

/*
 * A shortage at now: returns the pause to take, BACKOFF_MIN_MS, or twice
 * the last one (at most BACKOFF_MAX_MS) when it comes within
 * BACKOFF_STEADY_MS of the last resume.
 */
long long backoff_pause(struct backoff *, long long now);
/* The pause ended at now: accepting again. */
void	backoff_resumed(struct backoff *, long long now);
/* An accept worked: the next pause starts at the minimum. */
void	backoff_ok(struct backoff *);

#endif
