/*
 * era.h: the modern half of the dual-era /mcp endpoint (era.c). A request
 * whose params._meta carries io.modelcontextprotocol/protocolVersion, or
 * whose MCP-Protocol-Version header names 2026-07-28, is served statelessly
 * by the 2026-07-28 rules: its version, client capabilities and log level
 * come from its own _meta, its headers must match its body, and every
 * result says its resultType and the server's identity. Anything else is
 * a 2025 request (mcp.c), as before. Pure: no I/O, no state.
 */
#ifndef MCP_ERA_H
#define MCP_ERA_H

#include <stddef.h>
#include <cjson/cJSON.h>

#define ERA_MODERN		"2026-07-28"
#define ERA_SERVER_NAME		"sandbox-orchestrator"
#define ERA_SERVER_VERSION	"0.1.0"
#define ERA_INSTRUCTIONS \
	"Each session (the X-Session-Id header) has its own isolated Linux " \
	"sandbox, created on the first tool call and kept between calls: " \
	"files in /workspace, a persistent shell (cwd, variables), and " \
	"background jobs. Use shell for commands, shell_async/shell_poll/" \
	"shell_wait/shell_stop for long-running ones, and " \
	"str_replace_based_edit_tool to view and edit files. git works " \
	"against configured hosts without credentials in the sandbox. A " \
	"sandbox left idle is frozen and later stopped, and one past its " \
	"lifetime is stopped (the operator sets both; sandbox_status shows " \
	"idle_left_ms and lifetime_left_ms): a stopped sandbox keeps its " \
	"files and the next call resumes it with a fresh shell, until it is " \
	"deleted with its files after the operator's retention (a day by " \
	"default)."

/* The JSON-RPC codes of the 2026-07-28 specification (basic/index). */
#define ERA_E_HEADER		(-32020)	/* HeaderMismatch */
#define ERA_E_CAPABILITY	(-32021)	/* MissingRequiredClientCapability */
#define ERA_E_VERSION		(-32022)	/* UnsupportedProtocolVersion */

/* The extension a client declares to be answered with tasks. */
#define ERA_EXT_TASKS		"io.modelcontextprotocol/tasks"

/* The request headers the modern rules compare with the body. */
struct era_hdrs {
	const char	*proto;		/* MCP-Protocol-Version */
	const char	*method;	/* Mcp-Method */
	const char	*name;		/* Mcp-Name */
};

/* What a checked modern request asked for. */
struct era_req {
	int		 log_level;	/* 0 debug .. 7 emergency; -1: none */
	int		 tasks;		/* declared io.modelcontextprotocol/tasks */
	char		 client[96];	/* clientInfo "name/version", for logs */
	char		 traceparent[64];	/* W3C trace context, or "" */
	char		 tracestate[520];
};

/* An error of the modern rules: its JSON-RPC code, HTTP status and text;
 * data (owned) for -32022's supported versions. */
struct era_err {
	int		 code;
	int		 status;
	char		 msg[320];
	cJSON		*data;
};

/* 1 when message m (an object) is a modern one by its _meta or headers. */
int	era_is_modern(const cJSON *m, const struct era_hdrs *);
/* 1 when v names a version this server knows in either era. */
int	era_version_known(const char *v);
/*
 * The modern rules for a request (method meth, params an object or NULL):
 * headers against the body, _meta's required members, the version. 0 and
 * *r filled, or -1 and *e (e->data to free).
 */
int	era_check(const char *meth, const cJSON *params,
	    const struct era_hdrs *, struct era_req *r, struct era_err *e);
/* -32022's data: {"supported":[...],"requested":v}. */
cJSON	*era_unsupported_data(const char *requested);
/* server/discover's result (before era_complete). */
cJSON	*era_discover(int tasks);
/* Every modern result: resultType (rtype) and the server's identity. */
void	era_complete(cJSON *result, const char *rtype);
/* A cacheable result's ttlMs and cacheScope. */
void	era_cacheable(cJSON *result, long long ttl_ms, const char *scope);
/* The 2026-07-28 logging levels: the index of s, or -1. */
int	era_log_level(const char *s);

#endif
