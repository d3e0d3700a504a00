/*
 * lguard.h: the listeners' guard against descriptor exhaustion (lguard.c).
 * Every TCP listener of the process (the main one, each sandbox's, the
 * HTTP admin and metrics ones) is added here; it sets their accept error
 * callback. When accept() fails for want of descriptors or memory (EMFILE,
 * ENFILE, ENOBUFS, ENOMEM) every listener stops accepting for a back-off
 * (LGUARD_BACKOFF_MIN_MS doubling to LGUARD_BACKOFF_MAX_MS while the
 * shortage lasts), the workers close their oldest unidentified
 * connections (idle ones first, proxy_shed), and one line is logged per
 * LGUARD_LOG_INTERVAL_MS. No busy loop, no log flood. Main thread only.
 */
#ifndef PROXY_LGUARD_H
#define PROXY_LGUARD_H

struct event_base;
struct evconnlistener;

/* Once, before any lguard_add. */
void	lguard_init(struct event_base *);
/* Guards l (sets its error callback; disabled at once while paused). */
void	lguard_add(struct evconnlistener *l);
/* Forgets l (call before evconnlistener_free). */
void	lguard_del(struct evconnlistener *l);
/* Raises the soft RLIMIT_NOFILE to the hard limit and logs both. */
void	lguard_raise_nofile(void);

#endif
