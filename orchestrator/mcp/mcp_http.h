/*
 * mcp_http.h: MCP over Streamable HTTP at /mcp (mcp_http.c), served by
 * http.c through its route table (server.c). The JSON-RPC is mcp.h.
 */
#ifndef MCP_HTTP_H
#define MCP_HTTP_H

#include <cjson/cJSON.h>

#include "buf.h"
#include "conf.h"
#include "http/http.h"
#include "session/sess.h"

/* The state of the MCP surface: calls in flight, per-tool counters. */
struct mcp_front;

struct mcp_front *mcp_http_new(struct sessmgr *, const struct conf *);
void	mcp_http_free(struct mcp_front *);
/* The /mcp route's handler; arg: the struct mcp_front. */
void	mcp_http_handle(struct http *, struct http_req *, const char *path,
	    void *arg);
/* The /mcp route's error shape: a JSON-RPC error without id. */
cJSON	*mcp_http_error(int status, const char *code, const char *msg);
/* The tool counters as Prometheus text, appended to b. 0 or -1. */
int	mcp_http_metrics(const struct mcp_front *, struct buf *) WUNRES;

#endif
