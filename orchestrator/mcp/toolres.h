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
int	toolres_job_id_ok(const char *s);

/* A CallToolResult with one text block (is_error: a tool error). */
cJSON	*toolres_text(const char *text, int is_error);
/* A string member of o, or NULL (o may be NULL). */
const char *toolres_str(const cJSON *o, const char *k);
/* tc's result: text alone (replacing any), and from a buf. */
void	toolres_set_text(struct tool_call *tc, const char *text, int is_error);
void	toolres_set_buf(struct tool_call *tc, struct buf *b, int is_error);
/* "cpu 2 cores, memory 2GiB, ...": a session JSON's limits, for a model. */
void	toolres_limits_text(const cJSON *st, struct buf *out);

/* Each tool's result from the agent's reply j (never trusted). */
void	toolres_shell(struct tool_call *tc, const cJSON *j, long long tmo);
void	toolres_job_started(struct tool_call *tc, const cJSON *j);
void	toolres_job_output(struct tool_call *tc, const cJSON *j,
	    const char *jid, long long off, long long wait_s);
void	toolres_job_stop(struct tool_call *tc, const cJSON *j, const char *jid);
void	toolres_edit(struct tool_call *tc, const char *cmd, const char *path,
	    const char *file_text, long long line, const cJSON *j);
void	toolres_sandbox(struct tool_call *tc, struct buf *text,
	    const char *sandbox_id, const char *image);
void	toolres_cleared(struct tool_call *tc, int had);
/* expose_port: app is {name, port, url, token} (taken); note: "" or a line
 * for the model. */
void	toolres_app(struct tool_call *tc, cJSON *app, const char *note);
/* list_apps: list is {apps: [...]} (taken). */
void	toolres_apps_list(struct tool_call *tc, cJSON *list);
/* unexpose_port. */
void	toolres_unexposed(struct tool_call *tc, const char *name);
/* sandbox_status's result from sess_status's JSON st (taken). */
void	toolres_status(struct tool_call *tc, cJSON *st);

/* ---- the file tools (read_file, write_file, list_files, delete_file) ---- */

/* base64 (RFC 4648, padded) of p[0..n): NUL-terminated, caller frees. */
char	*toolres_b64_encode(const unsigned char *p, size_t n);
/*
 * Decodes s (padded or not; no whitespace or other characters) into out
 * (reset first; its cap bounds the size). 0, or -1: not base64 (err
 * says where) or bigger than out's cap (err empty).
 */
int	toolres_b64_decode(const char *s, struct buf *out, char *err, size_t errlen);
/*
 * The file a read concerns: the agent's listing entry of it (the symlink
 * followed), kept as toolres_read_file needs it.
 */
struct tr_file {
	char		 path[4096 + 1];	/* absolute, as the agent resolved it */
	long long	 size;
	char		 version[17];	/* 16 hex digits, or "" */
	char		 mode[8];	/* "0644", or "" */
	long long	 mtime_ms;
};
/* Fills f from a listing entry e; -1 when e is no usable regular-file
 * entry (type not "file", no absolute path). */
int	toolres_file_from_entry(struct tr_file *f, const cJSON *e);
/*
 * read_file's result: bytes data[0..n) of file f from offset off, asked
 * for at most max bytes, as enc ("text" or "base64"). text that is not
 * UTF-8 (or holds a NUL byte) is a tool error naming the offset and
 * suggesting base64; an incomplete character at the end of a read that
 * is not the file's end is left for the next read (next_offset before it).
 */
void	toolres_read_file(struct tool_call *tc, const struct tr_file *f,
	    const char *enc, const char *data, size_t n, long long off,
	    long long max);
/* write_file's result from the agent's reply j to PUT /v1/files/raw. */
void	toolres_write_file(struct tool_call *tc, const char *path, int append,
	    const cJSON *j);
/* list_files's result from the agent's reply j to GET /v1/files/list. */
void	toolres_list_files(struct tool_call *tc, const cJSON *j);
/* delete_file's result from the agent's reply j to POST /v1/files/delete. */
void	toolres_delete_file(struct tool_call *tc, const char *path,
	    const cJSON *j);
/*
 * What a progress message says of a running shell command, from the
 * agent's reply j to GET /v1/shell/output: "N output bytes; latest:\n"
 * and at most the last TR_LIVE_LINES lines and TR_LIVE_BYTES bytes of its
 * output as clean text, or "no output yet". NULL when j says nothing
 * runs. Caller frees.
 */
#define TR_LIVE_LINES	20
#define TR_LIVE_BYTES	2048
char	*toolres_live_text(const cJSON *j);

#endif
