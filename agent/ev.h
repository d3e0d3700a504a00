/*
 * ev.h: the agent's single-threaded event loop: epoll for fds, a short
 * list of one-shot timers (on util_mono_ms, common/util.h).
 */
#ifndef AGENT_EV_H
#define AGENT_EV_H

#include <stdint.h>

typedef void (*ev_io_cb)(int fd, uint32_t events, void *arg);
typedef void (*ev_timer_cb)(void *arg);

int		ev_init(void);
int		ev_add(int fd, uint32_t events, ev_io_cb, void *arg);
int		ev_mod(int fd, uint32_t events);
void		ev_del(int fd);
/* One-shot timer; returns a non-zero id for ev_timer_del. */
uint64_t	ev_timer_add(uint64_t delay_ms, ev_timer_cb, void *arg);
void		ev_timer_del(uint64_t id);
void		ev_run(void);
void		ev_stop(void);

#endif
