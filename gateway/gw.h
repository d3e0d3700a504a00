/*
 * gw.h: the app gateway's shared state: the route table the control
 * channel fills (ctl.c), the client connections (conn.c), the pages
 * (page.c). One thread, one event loop.
 */
#ifndef GW_GW_H
#define GW_GW_H

#include <stdint.h>
#include <sys/queue.h>

#include "auth.h"
#include "conf.h"

struct event_base;
struct bufferevent;
struct conn;
struct upidle;
typedef struct ssl_ctx_st SSL_CTX;

/* One exposed app, as the orchestrator announced it. */
struct route {
	LIST_ENTRY(route)	 link;
	LIST_HEAD(rconns, conn) conns;		/* client connections bound to it */
	TAILQ_HEAD(upoolq, upidle) pool;	/* idle upstreams to its app (upool.c) */
	int			 npool;
	uint64_t		 epoch;		/* bumped at each replacement: an upstream
						 * opened before is never pooled after */
	char			 host[GW_HOST_MAX + 1];
	char			 app[64];
	char			 sandbox[64];
	char			 session[128];
	char			 sha[65];	/* sha256 hex of the token */
	int			 port;
	int			 public;
	uint64_t		 gen;		/* ctl sync generation that last sent it */
	int			 active;	/* carried traffic since the last activity message */
};

struct gw {
	struct gwconf		*c;
	struct event_base	*base;
	SSL_CTX			*ssl;
	LIST_HEAD(routelist, route) routes;
	long			 nconns;
	int			 shutting;
};

/* The one instance (gw.c): the gateway's shared state. */
extern struct gw gw_state;

/* routes (ctl.c) */
struct route	*ctl_route_find(const char *host);

/*
 * the control channel (ctl.c). It tells the connections what happens
 * through callbacks given with each call, so that ctl.c never calls
 * conn.c (the layers point one way: main, conn, ctl, the rest;
 * docs/architecture.md).
 */
/* A route is going (unroute, new token): route_gone(rt, arg) first. */
void	ctl_start(const char *token, void (*route_gone)(struct route *rt, void *arg),
	    void *arg);
void	ctl_stop(void);
/* 1 when the channel is up and synced. */
int	ctl_ready(void);
/*
 * The answer to an open: an fd (>= 0), else addr, else status (401, 404,
 * 502, 503) with err; retry_after > 0 with a 503: the sandbox is starting,
 * try again in that many seconds. Called once, unless the open was
 * cancelled.
 */
typedef void (*ctl_open_cb)(void *arg, int fd, const char *addr, int status,
    int retry_after, const char *err);
/* Asks for a connection to host's app; 0: the channel is not up (cb not called). */
uint64_t ctl_open(const char *host, const char *token, ctl_open_cb cb, void *arg);
/* cb is not called for id any more (a late fd is closed). */
void	ctl_cancel(uint64_t id);

/* connections (conn.c) */
void	conn_accept(int fd, const struct sockaddr *sa, int salen);
/* Closes every client connection bound to rt (unroute, new token; arg unused). */
void	conn_close_route(struct route *rt, void *arg);
/* Closes the oldest idle keep-alive connection; 0 if there was none. */
int	conn_shed_idle(void);
void	conn_stop_all(void);

/* the idle upstream connections of each route (upool.c) */
/* Parks b (a connection to rt's app that finished an exchange cleanly) in
 * rt's pool, or frees it (pool full, bytes pending). Takes b. */
void	upool_put(struct route *rt, struct bufferevent *b);
/* The newest live parked connection of rt (the caller's now, its callbacks
 * unset), or NULL. */
struct bufferevent *upool_take(struct route *rt);
/* Closes every parked connection of rt (unroute, replacement, shutdown). */
void	upool_drain(struct route *rt);
/* Closes the oldest parked connection of some route (short of fds); 0 if
 * none was parked. */
int	upool_shed_one(void);
/* Every route's pool (shutdown). */
void	upool_drain_all(void);

/* pages (page.c) */
struct buf;
/*
 * Writes a whole response with a small HTML page into out: status, a
 * title and a sentence (escaped), extra header lines ("Name: v\r\n"...,
 * or NULL), Connection: close when close.
 */
int	page_build(struct buf *out, int status, const char *title,
	    const char *text, const char *extra, int close);

#endif
