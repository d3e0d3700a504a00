/*
 * tools.h: the MCP tools (names, JSON Schemas, descriptions) and their
 * execution against a session's sandbox. A tool's inputSchema is also its
 * argument check, and its outputSchema the check of every structuredContent
 * it returns (schema.h). tools_run blocks: call it on a worker thread.
 */
#ifndef TOOLS_H
#define TOOLS_H

#include <stdatomic.h>
#include <cjson/cJSON.h>
#include "toolres.h"
#include "conf.h"
#include "lib/agentc.h"
#include "session/sess.h"

/* Limits the tools' schemas show and their handlers use (tools.c,
 * filetools.c). */
#define TOOLS_MAX_PATH	4096	/* PATH_MAX: the kernel refuses longer */
#define TOOLS_DEF_LIST	1000	/* list_files' default max_entries */

struct tool_call {
	/* in */
	char		 sid[ID_SESSION_MAX + 1];
	char		 org[ID_SESSION_MAX + 1];
	char		 user[ID_SESSION_MAX + 1];
	char		*name;		/* owned */
	char		 trace[64];	/* W3C traceparent from _meta, or "" */
	char		 task_id[48];	/* may become a task (tasks.h): the
					 * agent's result id or job@offset */
	char		 idem_key[256];	/* _meta's idempotency key (mcp.h), or ""
					 * (task_id is then its result id) */
	cJSON		*args;		/* owned; an object */
	int		 structured;	/* add structuredContent (2025-06-18+),
					 * matching the tool's outputSchema */
	int		 progress;	/* the client takes progress notifications
					 * (mcp_http.c): a shell call keeps
					 * toollive_progress_text's message fresh */
	/* out */
	cJSON		*result;	/* CallToolResult */
	cJSON		*rpc_error;	/* or a JSON-RPC error {code, message}
					 * (tasks/get etc.: an unknown task) */
	int		 is_error;
	/* notifications/cancelled named this call (set on the loop thread,
	 * read by the worker); refs: holders besides the owner */
	atomic_int	 cancelled;
	atomic_int	 finished;	/* tools_run returned */
	atomic_int	 refs;
	char		*live;		/* the latest progress message, or NULL
					 * (tools.c's lock: toollive_progress_text) */
	/* The call's context for its agent requests (areq.c), on the worker
	 * that runs it: what cancels them (tools_run1 sets it around the
	 * handler; the shell widens its grace), and the mark a request
	 * leaves when it found the sandbox stopped before reaching it (then
	 * tools_run1 starts the sandbox again and runs the tool once more). */
	struct agentc_cancel cancel;
	int		 lost;
	char		 lost_why[256];
	/* Where a sandbox create or start the call waits on (sess_enter,
	 * sess_reprovision) tells what it waits for: the call's message
	 * (toollive_start_note) when the client takes progress, else nowhere
	 * (fn NULL). tools_run sets it. */
	struct rt_progress starting;
};

int	tools_init(void);		/* compiles the schemas; -1 on a bug */
/*
 * The runtime's image names (a JSON array of strings; NULL or empty: the
 * runtime takes any reference) become an "enum" of create_sandbox's image
 * and a sentence of its description. Thread-safe; a list equal to the
 * last one changes nothing. 0, or -1 (logged) if the rows would not
 * compile (they stay as they were).
 */
int	tools_set_images(const cJSON *images);
void	tools_cleanup(void);
int	tools_exists(const char *name);
/*
 * Checks a call's arguments against the tool's inputSchema, as tools_run
 * does first: 0, or -1 with the message the call's result would carry.
 */
int	tools_check(const char *name, const cJSON *args, char *err,
	    size_t errlen);
/* A fresh copy of the tools array for tools/list (caller frees). */
cJSON	*tools_list(void);
/* Runs the call; always sets tc->result. */
void	tools_run(struct sessmgr *, const struct conf *, struct tool_call *);
/*
 * The message a progress notification of tc carries now: head (e.g.
 * "shell still running (12s)") and a running shell command's latest
 * output lines (polled from the agent while the call runs, when
 * tc->progress), or NULL when there are none yet. Takes only a mutex:
 * for the event loop. Caller frees.
 */
char	*toollive_progress_text(struct tool_call *tc, const char *head);
/* Drops a reference (the owner's when refs is 0: then frees). */
void	tools_call_free(struct tool_call *);
/*
 * Stops what a cancelled call runs in the sandbox (the shell command, with
 * its process tree); blocks: call it on a worker. The call itself then
 * returns soon; waits on the agent give up at once.
 */
void	tools_cancel(struct sessmgr *, struct tool_call *);

/* A CallToolResult with one text block. */
/* toolres_text: toolres.h */

#endif
