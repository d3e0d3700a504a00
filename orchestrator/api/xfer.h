/*
 * xfer.h: REST file transfer and streamed exec for trusted clients
 * (docs/operator-guide.md, "REST"), relayed to the session's agent
 * (docs/internals/agent-protocol.md: /v1/files/raw, list, delete,
 * /v1/exec) without holding a body whole:
 *   PUT    /v1/sessions/{id}/files/<abs path>[?mode=0644][&append=1]
 *   GET    /v1/sessions/{id}/files/<abs path>       the bytes
 *   GET    /v1/sessions/{id}/files/<dir>/[?recursive=1][&max_entries=N]
 *   DELETE /v1/sessions/{id}/files/<abs path>[?recursive=1]
 *   POST   /v1/sessions/{id}/exec                    NDJSON, streamed
 */
#ifndef XFER_H
#define XFER_H

#include "conf.h"
#include "http/http.h"
#include "session/sess.h"

/* The route's body_streamed: a PUT of a file. */
int	xfer_body_streamed(const char *path, enum http_method);
/*
 * Serves op ("files/...", "exec") of session sid for rest.c (which has
 * checked the id). Answers every error itself.
 */
void	xfer_handle(struct http *, struct sessmgr *, const struct conf *,
	    struct http_req *, const char *sid, const char *op);
/* Is op one of these routes'? */
int	xfer_route(const char *op);

/*
 * The HTTP status and error code of a session error, for rest.c and
 * xfer.c alike (here, in the lower of the two: rest.c calls into xfer.c,
 * so xfer.c neither calls nor includes anything of rest.c). A runtime or
 * agent failure is 503 (Retry-After); every error's text goes out with its
 * host paths taken out (rest.c, rjob_run).
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
