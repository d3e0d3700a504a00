/*
 * work.h: a growable pool of worker threads for blocking work (runtime
 * operations, agent calls), with completions handed back to the event
 * loop. The runtime interface is synchronous by design; this keeps the
 * event loop free so a long call never blocks another session.
 *
 * Fair shares. Work is queued per key (a session id; NULL: the daemon's
 * own work: ticks, cancels, REST listings), and threads take the next item
 * from the keys in turn (round robin), so one session's queue never stands
 * in front of another's. A key may hold at most cap items queued or
 * running (work_submit_key refuses beyond: the caller answers "too many
 * calls"), and keyed work may use all threads but WORK_RESERVE, kept for
 * the daemon's own work (a cancel gets a thread while sessions fill the
 * rest). No session can then delay another's call by more than a thread's
 * start-up while sessions x cap stays below max - WORK_RESERVE.
 */
#ifndef WORK_H
#define WORK_H

#include <event2/event.h>
#include "attrib.h"

#define WORK_RESERVE	8	/* threads only the daemon's own work may take
				 * (fewer when workers.max is small: max / 4) */

typedef void (*work_fn)(void *arg);

/* Starts min threads; grows to max when every thread is busy. */
int	work_init(struct event_base *, int min, int max);
/*
 * Runs fn(arg) on a worker, then done(arg) on the event loop thread (done
 * may be NULL). Never fails: beyond max threads, work queues. The
 * daemon's own work (no key, no cap).
 */
void	work_submit(work_fn fn, work_fn done, void *arg);
/*
 * The same for key (copied, at most 128 bytes; NULL: as work_submit).
 * 0, or -1 with nothing queued when key already has cap items queued or
 * running (cap <= 0: no cap).
 */
int	work_submit_key(const char *key, int cap, work_fn fn, work_fn done,
	    void *arg) WUNRES;
/* Items of key queued or running now. */
int	work_key_load(const char *key);
/* Runs fn(arg) on the event loop thread soon (callable from any thread). */
void	work_loop_call(work_fn fn, void *arg);
/* Threads alive, threads running work now, items waiting for a thread. */
void	work_stats(int *threads, int *busy, int *queued);
/* Keys with work queued or running; calls refused at a key's cap. */
void	work_key_stats(int *keys, unsigned long long *refused);
/* Stops accepting completions; lets threads finish (does not join). */
void	work_shutdown(void);

#endif
