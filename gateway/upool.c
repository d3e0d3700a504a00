/*
 * upool.c: idle upstream connections kept per route (upstream keep-alive,
 * docs/gateway.md "Connections to apps"), so that a new client connection
 * of a route costs no `open` round trip to the orchestrator.
 *
 * Rules: only a connection whose last exchange ended cleanly goes in (the
 * response framed by Content-Length or chunked and complete, the app said
 * keep-alive, the request sent whole, nothing unread either way: conn.c
 * decides); a parked connection is watched, and any byte, EOF, error or
 * upstream_idle timeout closes it at once; a taken connection is checked
 * alive (a non-blocking peek) before a request goes on it, so a request is
 * only ever sent once. Unroute and any route replacement drain the route's
 * pool (ctl.c), so a pooled connection is never used under another route.
 * Most recently parked first: the least likely to have been closed by the
 * app.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "gw.h"
#include "log.h"
#include "xmalloc.h"

/* One parked upstream. */
struct upidle {
	TAILQ_ENTRY(upidle)	 link;	/* in rt->pool, newest first */
	struct route		*rt;
	struct bufferevent	*b;
};

/* Parked connections over all routes: at most limits.max_conns, so that
 * the pools never hold more descriptors than the client connections may. */
static long long total;

static void
idle_free(struct upidle *u)
{
	TAILQ_REMOVE(&u->rt->pool, u, link);
	u->rt->npool--;
	total--;
	bufferevent_free(u->b);
	free(u);
}

/* Anything from a parked connection (bytes, EOF, error, timeout) ends it. */
static void
idle_read(struct bufferevent *b, void *arg)
{
	(void)b;
	idle_free(arg);
}

static void
idle_event(struct bufferevent *b, short what, void *arg)
{
	(void)b;
	(void)what;
	idle_free(arg);
}

void
upool_put(struct route *rt, struct bufferevent *b)
{
	struct timeval tv = { gw_state.c->upstream_idle_ms / 1000,
	    (gw_state.c->upstream_idle_ms % 1000) * 1000 };
	struct upidle *u;

	if (rt->npool >= gw_state.c->upstream_keepalive || total >= gw_state.c->max_conns ||
	    gw_state.shutting ||
	    evbuffer_get_length(bufferevent_get_input(b)) > 0 ||
	    evbuffer_get_length(bufferevent_get_output(b)) > 0) {
		bufferevent_free(b);
		return;
	}
	u = xcalloc(1, sizeof(*u));
	u->rt = rt;
	u->b = b;
	TAILQ_INSERT_HEAD(&rt->pool, u, link);
	rt->npool++;
	total++;
	bufferevent_setcb(b, idle_read, NULL, idle_event, u);
	bufferevent_setwatermark(b, EV_READ, 0, 0);
	bufferevent_set_timeouts(b, &tv, NULL);
	/* EV_WRITE stays as it was: with nothing to write it costs nothing,
	 * and enabling it again at reuse would cost two epoll_ctl calls */
	bufferevent_enable(b, EV_READ);
}

struct bufferevent *
upool_take(struct route *rt)
{
	struct upidle *u;
	struct bufferevent *b;
	char c;

	while ((u = TAILQ_FIRST(&rt->pool)) != NULL) {
		ssize_t r = recv(bufferevent_getfd(u->b), &c, 1, MSG_PEEK | MSG_DONTWAIT);

		if (r != -1 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
			/* closed by the app (or bytes nobody asked for): next */
			idle_free(u);
			continue;
		}
		TAILQ_REMOVE(&rt->pool, u, link);
		rt->npool--;
		total--;
		b = u->b;
		free(u);
		/* reading stays enabled (conn.c reads the answer on it) */
		bufferevent_set_timeouts(b, NULL, NULL);
		bufferevent_setcb(b, NULL, NULL, NULL, NULL);
		return b;
	}
	return NULL;
}

void
upool_drain(struct route *rt)
{
	struct upidle *u;

	while ((u = TAILQ_FIRST(&rt->pool)) != NULL)
		idle_free(u);
}

int
upool_shed_one(void)
{
	struct route *rt;

	LIST_FOREACH(rt, &gw_state.routes, link)
		if (!TAILQ_EMPTY(&rt->pool)) {
			idle_free(TAILQ_LAST(&rt->pool, upoolq));
			return 1;
		}
	return 0;
}

void
upool_drain_all(void)
{
	struct route *rt;

	LIST_FOREACH(rt, &gw_state.routes, link)
		upool_drain(rt);
}
