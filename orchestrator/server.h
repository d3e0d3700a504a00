/*
 * server.h: the HTTP front end (libevent evhttp): bearer auth, Origin
 * check, MCP at /mcp, REST at /v1/sessions, /healthz, /readyz, /metrics.
 * Runs on the event loop; blocking work goes to work.h workers.
 */
#ifndef SERVER_H
#define SERVER_H

#include <event2/event.h>
#include "conf.h"
#include "sess.h"

struct server;

/* key: the bearer key (copied). NULL with err on failure. */
struct server *server_new(struct event_base *, const struct conf *,
	    struct sessmgr *, const char *key, char *err, size_t errlen);
/* Stops accepting; in-flight calls finish; calls done() when idle. */
void	server_drain(struct server *);
int	server_inflight(struct server *);
void	server_free(struct server *);

#endif
