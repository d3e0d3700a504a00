/*
 * areq.h: one request of a tool call to its session's agent, and what the
 * model is told when it fails (tools.c and filetools.c share them).
 *
 * Everything the agent returns is treated as hostile: parsed with size
 * caps, strings cleaned to valid UTF-8 (a NUL byte shown as U+2400),
 * nothing interpreted. A request that finds the sandbox stopped before it
 * reached it marks its tool call (tc->lost): tools.c then starts the
 * sandbox again and runs the tool once more.
 */
#ifndef AREQ_H
#define AREQ_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "buf.h"
#include "session/sess.h"

struct tool_call;

struct areq {
	struct sess	*s;
	struct tool_call *tc;	/* the call whose context (cancel, lost mark)
				 * the requests carry; NULL: none */
	struct buf	 resp;
	int		 status;
	cJSON		*j;	/* parsed reply */
	char		 err[768];
};

/*
 * Does one agent request with a JSON body (or none); on success a->j holds
 * the parsed JSON object (any status). -1 with a->err saying, for a model,
 * what happened. Free with areq_free either way.
 */
int	areq_do(struct areq *a, const char *method, const char *path,
	    cJSON *body, int timeout_ms);
/*
 * A request whose reply body (GET /v1/files/raw) or request body (PUT) is
 * bytes: a 200/201 reply stays as it came in a->resp (a->j NULL), an error
 * reply is parsed into a->j when it is a JSON object. max caps the reply.
 */
int	areq_bytes(struct areq *a, const char *method, const char *path,
	    const char *body, size_t len, size_t max, int timeout_ms);
void	areq_free(struct areq *a);
/* The agent's error reply as a message for the model, appended to out. */
void	areq_error_text(struct areq *a, const char *what, struct buf *out);

#endif
