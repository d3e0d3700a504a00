/*
 * server.h: the HTTP front end (http.h): bearer auth, Origin
 * check, MCP at /mcp, REST at /v1/sessions, /healthz, /readyz, /metrics.
 * Runs on the event loop; blocking work goes to work.h workers.
 */
#ifndef SERVER_H
#define SERVER_H

#include <event2/event.h>
#include "conf.h"
#include "session/sess.h"

struct server;

/* key: the bearer key (copied); max_fds: the soft RLIMIT_NOFILE. NULL
 * with err on failure. */
struct server *server_new(struct event_base *, const struct conf *,
	    struct sessmgr *, const char *key, long long max_fds, char *err,
	    size_t errlen);
/* Drain: the listener stays open; new calls and /readyz get 503 with
 * Retry-After; in-flight calls finish (server_inflight() reaches 0). */
void	server_drain(struct server *);
/* The drain deadline: every call still in flight gets an error reply now
 * (JSON-RPC on /mcp, the REST shape on /v1). How many. */
int	server_abort_inflight(struct server *);
/* Connections whose reply bytes are not all written yet. */
int	server_output_pending(struct server *);
int	server_inflight(struct server *);
void	server_free(struct server *);

#endif
