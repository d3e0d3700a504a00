/*
 * lguard.h: the listeners' guard against descriptor exhaustion (lguard.c),
 * shared by the proxy, the gateway and the orchestrator.
 *
 * Every listener of the process on the main event loop (an evconnlistener
 * or a plain persistent read event on a listening socket) is added here.
 * When accept() fails for want of descriptors or memory (EMFILE, ENFILE,
 * ENOBUFS, ENOMEM) every guarded listener stops accepting for a back-off
 * (backoff.h: BACKOFF_MIN_MS doubling to BACKOFF_MAX_MS while the
 * shortage lasts, the policy the agent's loop shares), each listener's
 * shed callback closes the oldest connections its daemon can spare (a
 * callback shared by several listeners is called once), and one line is
 * logged per BACKOFF_LOG_MS. No busy loop, no log flood. Main thread only.
 * Rules: the state is the process's (one event loop guards its listeners);
 * callers decide what to shed, lguard decides when to stop and resume.
 */
#ifndef COMMON_LGUARD_H
#define COMMON_LGUARD_H

struct event;
struct evconnlistener;

/*
 * Closes up to n of the oldest connections the daemon can spare (idle
 * ones first) and returns how many it closed.
 */
typedef long	(*lguard_shed_fn)(void *arg, long n);

/* Guards l (sets its error callback; disabled at once while paused). */
void	lguard_add(struct evconnlistener *l, lguard_shed_fn shed, void *arg);
/* Guards a persistent read event on a listening socket the caller accepts on. */
void	lguard_add_event(struct event *ev, lguard_shed_fn shed, void *arg);
/* Forgets a listener or an event (call before freeing it). */
void	lguard_del(const void *l);
/* 1 when errno value e means descriptors or memory are short. */
int	lguard_is_short(int e);
/*
 * accept() failed with e on a guarded event (evconnlistener errors come
 * here by themselves): pauses every listener when e is a shortage, else
 * logs it (rate-limited).
 */
void	lguard_accept_failed(int e);
/*
 * accept() succeeded: the next pause starts again at the minimum. The
 * gateway and the orchestrator call it: they close an idle connection at
 * once per pause, so a short pause is what lets a new client in. The
 * proxy does not: its workers shed asynchronously and the pause doubles.
 */
void	lguard_accept_ok(void);
/* Times accepting paused since start (for the metrics). */
long	lguard_pauses(void);
/*
 * Raises the soft RLIMIT_NOFILE to the hard limit, logs both and returns
 * the soft limit in force (2^30 when unlimited).
 */
long long lguard_raise_nofile(void);

#endif
