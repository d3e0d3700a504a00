/*
 * tasks.h: the Tasks extension (io.modelcontextprotocol/tasks) of MCP
 * 2026-07-28 (tasks.c). A shell call from a client that declared the
 * extension runs in the persistent shell as any shell call does, but with
 * a result id: the agent keeps its result on disk, and the command does
 * not stop when the orchestrator goes away. When it outlives
 * tools.task_after the client gets a task handle instead of waiting
 * (mcp_http.c), and tasks/get asks the agent. A shell_wait becomes a task
 * on its job. The task id names the session and what the agent keeps, so
 * the orchestrator holds no state of its own: a task survives its restart.
 */
#ifndef TASKS_H
#define TASKS_H

#include <cjson/cJSON.h>

#include "conf.h"
#include "session/sess.h"

struct tool_call;

/* What the agent keeps (its --job-keep-ms default): a task's ttlMs. */
#define TASKS_TTL_MS	86400000LL
#define TASKS_POLL_MS	2000

/* 1 if s is tasks/get, tasks/cancel or tasks/update. */
int	tasks_method(const char *s);
/*
 * Marks tc (a 2026-07-28 call from a client with the extension) as one
 * that may become a task: a shell call gets a fresh result id, a shell_wait
 * the job it waits on. 1 if it may, else 0.
 */
int	tasks_prepare(struct tool_call *tc);
/*
 * A shell call with an idempotency key (tc->idem_key; its result id in
 * tc->task_id): when a command with that id ran, runs or was lost in the
 * sandbox, sets tc->result to its result (waiting for it while it runs,
 * within tmo seconds) and returns 1; 0 when it never ran: run it, with
 * "result_id" and "result_fp" *fp (the fingerprint of command and tmo,
 * which a re-issue must match).
 */
int	tasks_attach(struct tool_call *tc, struct sess *s, const char *command,
	    long long tmo, char fp[33]);
/* The CreateTaskResult for tc, made a task now (started_ms: when the call
 * started, unix ms). Caller frees. */
cJSON	*tasks_created(const struct tool_call *tc, long long started_ms);
/*
 * Runs tasks/get, tasks/cancel or tasks/update (tc->name; tc->args
 * {"taskId"}) against the session's agent: sets tc->result (the result
 * object) or tc->rpc_error. Blocks: call it on a worker.
 */
void	tasks_run(struct sessmgr *, const struct conf *, struct tool_call *);

#endif
