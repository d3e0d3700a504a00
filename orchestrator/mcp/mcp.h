/*
 * mcp.h: MCP JSON-RPC dispatch for one POST body (Streamable HTTP, protocol
 * versions 2025-03-26, 2025-06-18, 2025-11-25 and, per request, 2026-07-28
 * (era.h); see docs/operator-guide.md, "Protocol details"). Pure: no I/O. Tool calls are returned as pending
 * work (tools.h) that the HTTP layer runs on workers and then completes
 * with mcp_complete().
 */
#ifndef MCP_H
#define MCP_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "era.h"
#include "tools.h"

#define MCP_MAX_BATCH	100
/* A tools/call's idempotency key, in its params._meta (shell only). */
#define MCP_META_IDEM	"dev.sandbox-orchestrator/idempotencyKey"

enum mcp_version { MCP_V_NONE, MCP_V_0326, MCP_V_0618, MCP_V_1125, MCP_V_0728 };

extern const char *const mcp_versions[];	/* index by enum mcp_version */

struct mcp_in {
	const char	*body;
	size_t		 len;
	const char	*proto;		/* MCP-Protocol-Version header or NULL */
	const char	*sid;		/* X-Session-Id (validated) or NULL */
	const char	*org;		/* X-Org-Id or NULL */
	const char	*user;		/* X-User-Id or NULL */
	const char	*hmethod;	/* Mcp-Method header or NULL */
	const char	*hname;		/* Mcp-Name header or NULL */
	int		 tasks;		/* the Tasks extension is served */
};

struct mcp_pending {
	struct tool_call *tc;
	cJSON		*id;		/* the request's id (owned) */
	int		 slot;		/* index in a batch reply; -1: single */
};

struct mcp_out {
	int		 status;	/* HTTP status */
	cJSON		*body;		/* reply (object/array) or NULL (202) */
	int		 batch;
	enum mcp_version version;
	struct mcp_pending *pend;	/* tool calls to run */
	size_t		 npend;
	const char	*method;	/* single request: its method (for logs) */
	const char	*method_name;	/* 2026-07-28: the method served (static) */
	char		 tool[64];	/* single tools/call: the tool name */
	int		 want_progress;	/* single tools/call asked for progress */
	cJSON		*progress_token;	/* owned */
	/* notifications/cancelled: the requestIds to cancel (owned array) */
	cJSON		*cancels;
	/* a 2026-07-28 request (era.h) and what its _meta asked for */
	int		 modern;
	struct era_req	 era;
	/* subscriptions/listen: the HTTP layer opens its stream (id owned) */
	int		 listen;
	cJSON		*listen_id;
};

/* Fills out from in; never fails (errors become JSON-RPC errors). */
void	mcp_dispatch(const struct mcp_in *, struct mcp_out *);
/*
 * Stores pending call i's result (takes tc->result). When every call is
 * complete, returns 1 and out->body is the whole reply.
 */
int	mcp_complete(struct mcp_out *, size_t i);
void	mcp_out_free(struct mcp_out *);
/*
 * The drain deadline's reply for out: every call still pending answered
 * by a JSON-RPC error (code, msg), the completed ones with their results
 * (a batch keeps its order). NULL when nothing is to be sent (all
 * cancelled). Caller frees. out is left as it is: workers still hold its
 * pending calls, and mcp_complete() works on it as before.
 */
cJSON	*mcp_abort_body(const struct mcp_out *, int code, const char *msg);
/* A JSON-RPC error object: {"jsonrpc","id","error":{code,message}}. id is
 * duplicated (NULL: null). */
cJSON	*mcp_error(const cJSON *id, int code, const char *msg);
/* The same with error.data (taken; NULL: none). */
cJSON	*mcp_error_data(const cJSON *id, int code, const char *msg, cJSON *data);
/* The negotiated version for a requested one (supported: same; else latest). */
enum mcp_version mcp_negotiate(const char *requested);
enum mcp_version mcp_version_parse(const char *);

#endif
