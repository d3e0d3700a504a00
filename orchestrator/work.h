/*
 * work.h: a growable pool of worker threads for blocking work (runtime
 * operations, agent calls), with completions handed back to the event
 * loop. The runtime interface is synchronous by design; this keeps the
 * event loop free so a long call never blocks another session.
 */
#ifndef WORK_H
#define WORK_H

#include <event2/event.h>
#include "attrib.h"

typedef void (*work_fn)(void *arg);

/* Starts min threads; grows to max when every thread is busy. */
int	work_init(struct event_base *, int min, int max);
/*
 * Runs fn(arg) on a worker, then done(arg) on the event loop thread (done
 * may be NULL). Never fails: beyond max threads, work queues.
 */
void	work_submit(work_fn fn, work_fn done, void *arg);
/* Runs fn(arg) on the event loop thread soon (callable from any thread). */
void	work_loop_call(work_fn fn, void *arg);
/* Threads alive, threads running work now, items waiting for a thread. */
void	work_stats(int *threads, int *busy, int *queued);
/* Stops accepting completions; lets threads finish (does not join). */
void	work_shutdown(void);

#endif
