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

/*
 * The HTTP status and error code of a session error, for rest.c and
 * xfer.c alike (inline: rest.c calls into xfer.c, so xfer.c calls nothing
 * of rest.c). A runtime or agent failure is 503 (Retry-After); every
 * error's text goes out with its host paths taken out (rest.c, rjob_run).
 */
static inline int
sess_err_http(enum sess_err e, const char **code)
{
	switch (e) {
	case SE_BAD: *code = "bad_request"; return 400;
	case SE_NOTFOUND: *code = "not_found"; return 404;
	case SE_LIMIT: *code = "limit_reached"; return 429;
	case SE_DRAINING: *code = "draining"; return 503;
	case SE_BUSY: *code = "busy"; return 409;
	case SE_IDENTITY: *code = "identity_mismatch"; return 409;
	case SE_WIDEN: *code = "would_widen"; return 409;
	case SE_AGENT: *code = "agent_error"; return 503;
	case SE_RUNTIME:
	default: *code = "runtime_error"; return 503;
	}
}

#endif
