/*
 * agentc.h: blocking HTTP/1.1 client for the in-sandbox agent
 * (docs/internals/agent-protocol.md), over a unix socket or TCP with a
 * bearer token. One struct agentc is one keep-alive connection, used by one
 * thread at a time. Responses are capped (AGENTC_MAX_RESP); JSON is left to
 * the caller (cJSON).
 */
#ifndef AGENTC_H
#define AGENTC_H

#include <stdatomic.h>
#include <stddef.h>
#include "attrib.h"
#include "buf.h"
#include "runtime/runtime.h"

#define AGENTC_MAX_RESP	(32 * 1024 * 1024)

struct agentc;

/* Connects (timeout_ms for the connect). NULL with err on failure. */
struct agentc *agentc_open(const struct rt_agent_addr *, int timeout_ms,
	    char *err, size_t errlen);
/*
 * Sends one request and reads the whole response into resp (reset first).
 * body may be NULL. timeout_ms bounds the whole exchange (use the command's
 * timeout plus a margin for /v1/shell). Returns 0 with *status set, or -1
 * with err (then the connection is unusable: close it).
 */
int	agentc_request(struct agentc *, const char *method, const char *path,
	    const char *ctype, const char *body, size_t bodylen, int timeout_ms,
	    int *status, struct buf *resp, char *err, size_t errlen) WUNRES;
void	agentc_close(struct agentc *);
/*
 * Makes this thread's requests give up (-1, "cancelled") grace_ms after
 * *flag becomes non-zero while they wait on the agent. NULL: never.
 */
void	agentc_set_cancel(const atomic_int *flag, int grace_ms);

#endif
