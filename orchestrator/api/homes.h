/*
 * homes.h: per-user homes over REST for trusted clients (homes.c):
 * GET and DELETE /v1/users/{id}/home, and the homes.ttl purge
 * (docs/operator-guide.md, "Homes").
 */
#ifndef HOMES_H
#define HOMES_H

#include "conf.h"
#include "http/http.h"
#include "session/sess.h"

struct homes_ctx {		/* the route's argument */
	struct sessmgr		*mgr;
	const struct conf	*conf;
};

/* The /v1/users route's handler; arg: a struct homes_ctx. */
void	homes_handle(struct http *, struct http_req *, const char *path,
	    void *arg);
/* Deletes the homes unused for homes.ttl and not in use (nothing when
 * homes.ttl is 0); at most once a minute, or ttl/4 when that is sooner.
 * Blocks: from a worker (the tick). */
void	homes_sweep(struct sessmgr *, const struct conf *);

#endif
