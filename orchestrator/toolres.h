/*
 * toolres.h: what a tool call answers (toolres.c): the CallToolResult of
 * each tool built from the agent's reply (a text block for the model and
 * structuredContent matching the tool's outputSchema, tools.c), and the
 * helpers that read an agent reply without trusting it.
 */
#ifndef ORCH_TOOLRES_H
#define ORCH_TOOLRES_H

#include <cjson/cJSON.h>
#include "buf.h"

struct tool_call;

/* The largest agent reply read (a job's output page and its JSON). */
#define AGENT_RESP_MAX	((size_t)24 * 1024 * 1024)

/* Job ids: in the tools' schema pattern and from the agent. */
#define MAX_JOB_ID	64
/* Whether s may be a job id (letters, digits, - _ .; not . or ..). */
int	job_id_ok(const char *s);

/* A CallToolResult with one text block (is_error: a tool error). */
cJSON	*tools_text_result(const char *text, int is_error);
/* A string member of o, or NULL (o may be NULL). */
const char *tr_str(const cJSON *o, const char *k);
/* tc's result: text alone (replacing any), and from a buf. */
void	tr_set_text(struct tool_call *tc, const char *text, int is_error);
void	tr_set_buf(struct tool_call *tc, struct buf *b, int is_error);
/* "cpu 2 cores, memory 2GiB, ...": a session JSON's limits, for a model. */
void	tr_limits_text(const cJSON *st, struct buf *out);

/* Each tool's result from the agent's reply j (never trusted). */
void	shell_result(struct tool_call *tc, const cJSON *j, long long tmo);
void	job_started_result(struct tool_call *tc, const cJSON *j);
void	job_output_result(struct tool_call *tc, const cJSON *j,
	    const char *jid, long long off, long long wait_s);
void	job_stop_result(struct tool_call *tc, const cJSON *j, const char *jid);
void	edit_result(struct tool_call *tc, const char *cmd, const char *path,
	    const char *file_text, long long line, const cJSON *j);
void	sandbox_result(struct tool_call *tc, struct buf *text,
	    const char *sandbox_id, const char *image);
void	cleared_result(struct tool_call *tc, int had);
/* expose_port: app is {name, port, url, token} (taken); note: "" or a line
 * for the model. */
void	app_result(struct tool_call *tc, cJSON *app, const char *note);
/* list_apps: list is {apps: [...]} (taken). */
void	apps_list_result(struct tool_call *tc, cJSON *list);
/* unexpose_port. */
void	unexposed_result(struct tool_call *tc, const char *name);
/* sandbox_status's result from sess_status's JSON st (taken). */
void	status_result(struct tool_call *tc, cJSON *st);

#endif
