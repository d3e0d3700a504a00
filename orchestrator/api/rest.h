/*
 * rest.h: the REST surface (rest.c), served by http.c through its route
 * table (server.c).
 */
#ifndef REST_H
#define REST_H

#include "conf.h"
#include "http/http.h"
#include "session/sess.h"

struct rest_ctx {		/* the route's argument */
	struct sessmgr		*mgr;
	const struct conf	*conf;	/* limits.session_calls */
};

/* The /v1/sessions route's handler; arg: a struct rest_ctx. */
void	rest_handle(struct http *, struct http_req *, const char *path,
	    void *arg);

#endif
