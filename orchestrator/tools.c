/*
 * tools.c: MCP tool definitions and their execution through the session's
 * agent (docs/internals/agent-protocol.md). Everything the agent returns is
 * treated as hostile: parsed with size caps, strings cleaned to valid UTF-8,
 * nothing interpreted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "agentc.h"
#include "buf.h"
#include "log.h"
#include "jsonu.h"
#include "tools.h"
#include "xmalloc.h"

#define MAX_COMMAND	(1024 * 1024)
#define MAX_FILE_TEXT	(8 * 1024 * 1024)
#define AGENT_RESP_MAX	((size_t)24 * 1024 * 1024)
#define MARGIN_MS	15000
#define CANCEL_SHELL_GRACE_MS	8000	/* the interrupt job's 3 s and more */
#define CANCEL_RECHECK	20		/* tools_cancel: 100 ms rounds */
#define BUSY_RETRIES	100		/* 50 ms rounds after an interrupt */


/*
 * The tool list. Descriptions are written for the model that calls them:
 * what the tool does, what persists, and what to do when it fails.
 */
static const char *const tools_json[] = {
"{\"name\":\"shell\",\"title\":\"Run a shell command\","
"\"description\":\"Runs a command in this session's persistent bash shell inside an isolated Linux sandbox and returns its combined stdout+stderr and exit code. "
"The shell keeps its state between calls: working directory (starts in /workspace), exported variables, functions and aliases. "
"stdin is /dev/null, so interactive prompts get EOF: pass -y/--yes flags. "
"If the command runs longer than timeout seconds it is killed with all its child processes and the shell keeps its state; for long builds, servers or anything that may exceed a few minutes use shell_async instead. "
"Long output keeps its head and tail with the middle replaced by a marker; redirect to a file and view it in parts when you need everything. "
"Network access is only through the sandbox's egress proxy (git clone/push to configured hosts works without credentials in the sandbox).\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"command\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The bash command line to run, e.g. \\\"cd repo && make test\\\". Multi-line scripts are allowed.\"},"
"\"timeout\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":86400,\"description\":\"Seconds before the command is killed (default 120; at most the server's limit, 3600 unless configured).\"}"
"},\"required\":[\"command\"],\"additionalProperties\":false},"
"\"annotations\":{\"title\":\"Run a shell command\",\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":true}}",

"{\"name\":\"shell_async\",\"title\":\"Start a background command\","
"\"description\":\"Starts a command in the background (a job) and returns its job_id at once. It runs in the shell's current directory with its exported variables, in its own process group, and its output is kept in the sandbox (it survives orchestrator restarts). "
"Use shell_poll to read output incrementally, shell_wait to wait for it to finish, shell_stop to kill it.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"command\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The bash command line to run in the background, e.g. \\\"npm run build\\\".\"}"
"},\"required\":[\"command\"],\"additionalProperties\":false},"
"\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":true}}",

"{\"name\":\"shell_poll\",\"title\":\"Read a background job's output\","
"\"description\":\"Returns a background job's state (running, exited, signaled, stopped), exit code, and its output starting at byte offset. "
"Pass the next_offset from the previous poll to read only new output; eof is true once the job has finished and everything was read.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"job_id\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9_.-]{1,64}$\",\"description\":\"The job_id returned by shell_async.\"},"
"\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Byte offset in the job's output to read from (default 0: from the start).\"},"
"\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":16777216,\"description\":\"Most output bytes to return (default: the server's output limit).\"}"
"},\"required\":[\"job_id\"],\"additionalProperties\":false},"
"\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}}",

"{\"name\":\"shell_wait\",\"title\":\"Wait for a background job\","
"\"description\":\"Waits until a background job finishes or timeout seconds pass, then returns its state, exit code and output from offset (default: all of it, head and tail kept when long). "
"If it is still running when the timeout passes, call shell_wait again or shell_poll later.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"job_id\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9_.-]{1,64}$\",\"description\":\"The job_id returned by shell_async.\"},"
"\"timeout\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":86400,\"description\":\"Most seconds to wait (default 30).\"},"
"\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Byte offset in the job's output to return from (default 0).\"}"
"},\"required\":[\"job_id\"],\"additionalProperties\":false},"
"\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}}",

"{\"name\":\"shell_stop\",\"title\":\"Stop a background job\","
"\"description\":\"Stops a background job: its whole process tree gets SIGTERM, then SIGKILL after 2 seconds. Returns its final state. Stopping a finished job is harmless.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"job_id\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9_.-]{1,64}$\",\"description\":\"The job_id returned by shell_async.\"}"
"},\"required\":[\"job_id\"],\"additionalProperties\":false},"
"\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":false}}",

"{\"name\":\"str_replace_based_edit_tool\",\"title\":\"View and edit files\","
"\"description\":\"Views and edits files in the sandbox. Paths are absolute or relative to /workspace. Commands: "
"view (a file with line numbers, optionally only view_range [first, last] with last -1 meaning the end; a directory lists files two levels deep); "
"create (writes file_text to path, replacing any file there, creating parent directories); "
"str_replace (replaces old_str, which must occur exactly once in the file, with new_str; include enough surrounding lines to make it unique, and match whitespace exactly); "
"insert (inserts insert_text after line insert_line; 0 inserts at the top). Writes are atomic.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"command\":{\"type\":\"string\",\"enum\":[\"view\",\"create\",\"str_replace\",\"insert\"],\"description\":\"The operation.\"},"
"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"File or directory path, e.g. /workspace/src/main.c.\"},"
"\"view_range\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,\"maxItems\":2,\"description\":\"view only: [first_line, last_line], 1-based, last_line -1 for the end of the file.\"},"
"\"file_text\":{\"type\":\"string\",\"description\":\"create only: the whole content of the new file.\"},"
"\"old_str\":{\"type\":\"string\",\"minLength\":1,\"description\":\"str_replace only: the exact text to replace (must occur exactly once).\"},"
"\"new_str\":{\"type\":\"string\",\"description\":\"str_replace only: the replacement text (may be empty to delete old_str).\"},"
"\"insert_line\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"insert only: the line number after which to insert (0 = top of the file).\"},"
"\"insert_text\":{\"type\":\"string\",\"description\":\"insert only: the text to insert.\"}"
"},\"required\":[\"command\",\"path\"],\"additionalProperties\":false},"
"\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":false}}",

"{\"name\":\"create_sandbox\",\"title\":\"Create a fresh sandbox\","
"\"description\":\"Replaces this session's sandbox with a new one built from the given options. Everything in the old sandbox (files in /workspace, shell state, background jobs) is lost. "
"You do not need this to start: the first tool call of a session creates a default sandbox. Use it to pick another image or settings, or to start over.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"image\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":255,\"description\":\"Image to build the sandbox from (default: the server's default image).\"},"
"\"use_kata\":{\"type\":\"boolean\",\"description\":\"Run under a VM-based runtime (Kata) for stronger isolation; only where the server offers it (default false).\"},"
"\"run_as_root\":{\"type\":\"boolean\",\"description\":\"Run commands as root inside the sandbox (root there is not root on the host; default true).\"},"
"\"writable_root\":{\"type\":\"boolean\",\"description\":\"Allow writes outside /workspace, e.g. to install packages (default true).\"}"
"},\"additionalProperties\":false},"
"\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":false,\"openWorldHint\":false}}",

"{\"name\":\"clear_session\",\"title\":\"Delete this session's sandbox\","
"\"description\":\"Deletes this session's sandbox and everything in it (workspace, shell, jobs). The next tool call starts a fresh default sandbox.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false},"
"\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,\"openWorldHint\":false}}",
};

static cJSON *tools_arr;

int
tools_init(void)
{
	if (tools_arr != NULL)
		return 0;
	size_t i;
	cJSON *t;

	tools_arr = cJSON_CreateArray();
	for (i = 0; i < NELEM(tools_json); i++) {
		if ((t = cJSON_Parse(tools_json[i])) == NULL || !cJSON_IsObject(t)) {
			cJSON_Delete(t);
			return -1;
		}
		cJSON_AddItemToArray(tools_arr, t);
	}
	return 0;
}

void
tools_cleanup(void)
{
	cJSON_Delete(tools_arr);
	tools_arr = NULL;
}

int
tools_exists(const char *name)
{
	cJSON *t;

	cJSON_ArrayForEach(t, tools_arr) {
		cJSON *n = cJSON_GetObjectItem(t, "name");
		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return 1;
	}
	return 0;
}

cJSON *
tools_list(void)
{
	return cJSON_Duplicate(tools_arr, 1);
}

void
tool_call_free(struct tool_call *tc)
{
	if (tc == NULL || atomic_fetch_sub(&tc->refs, 1) > 0)
		return;
	free(tc->name);
	cJSON_Delete(tc->args);
	cJSON_Delete(tc->result);
	free(tc);
}

cJSON *
tools_text_result(const char *text, int is_error)
{
	cJSON *r = cJSON_CreateObject(), *c, *t;

	c = cJSON_AddArrayToObject(r, "content");
	t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "type", "text");
	cJSON_AddStringToObject(t, "text", text);
	cJSON_AddItemToArray(c, t);
	if (is_error)
		cJSON_AddTrueToObject(r, "isError");
	return r;
}

/* ---- argument helpers: 0 ok, -1 with a message in err ---- */

static int
arg_str(cJSON *args, const char *k, int required, size_t maxlen,
    const char **out, char *err, size_t errlen)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(args, k);

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v)) {
		if (required) {
			snprintf(err, errlen, "missing required argument '%s' (a string)", k);
			return -1;
		}
		return 0;
	}
	if (!cJSON_IsString(v)) {
		snprintf(err, errlen, "argument '%s' must be a string", k);
		return -1;
	}
	if (strlen(v->valuestring) > maxlen) {
		snprintf(err, errlen, "argument '%s' is too long (more than %zu bytes)",
		    k, maxlen);
		return -1;
	}
	*out = v->valuestring;
	return 0;
}

static int
arg_int(cJSON *args, const char *k, long long min, long long max, long long def,
    long long *out, char *err, size_t errlen)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(args, k);
	double d;

	*out = def;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v)) {
		snprintf(err, errlen, "argument '%s' must be an integer", k);
		return -1;
	}
	d = v->valuedouble;
	if (d != (double)(long long)d) {
		snprintf(err, errlen, "argument '%s' must be a whole number", k);
		return -1;
	}
	if (d < (double)min || d > (double)max) {
		snprintf(err, errlen, "argument '%s' must be between %lld and %lld", k,
		    min, max);
		return -1;
	}
	*out = (long long)d;
	return 0;
}

static int
arg_bool(cJSON *args, const char *k, int *out, char *err, size_t errlen)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(args, k);

	*out = -1;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v)) {
		snprintf(err, errlen, "argument '%s' must be true or false", k);
		return -1;
	}
	*out = cJSON_IsTrue(v) ? 1 : 0;
	return 0;
}

/* Rejects arguments the schema does not have (additionalProperties false). */
static int
arg_only(cJSON *args, const char *const *allowed, char *err, size_t errlen)
{
	cJSON *v;
	size_t i;

	cJSON_ArrayForEach(v, args) {
		for (i = 0; allowed[i] != NULL; i++)
			if (v->string != NULL && strcmp(v->string, allowed[i]) == 0)
				break;
		if (allowed[i] == NULL) {
			char name[64];
			log_escape(name, sizeof(name), v->string ? v->string : "",
			    v->string ? strlen(v->string) : 0);
			snprintf(err, errlen, "unknown argument '%s'", name);
			return -1;
		}
	}
	return 0;
}

static int
job_id_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 64)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* ---- agent replies ---- */

struct areq {
	struct sess	*s;
	struct buf	 resp;
	int		 status;
	cJSON		*j;	/* parsed reply */
	char		 err[512];
};

/*
 * Does one agent request; on success j holds the parsed JSON (any status).
 * On failure err says, for a model, what happened.
 */
static int
agent_do(struct areq *a, const char *method, const char *path, cJSON *body,
    int timeout_ms)
{
	char *txt = NULL, terr[256];
	int rc;

	buf_init(&a->resp, AGENT_RESP_MAX);
	if (body != NULL)
		txt = cJSON_PrintUnformatted(body);
	rc = sess_agent(a->s, method, path, txt, txt ? strlen(txt) : 0, timeout_ms,
	    &a->status, &a->resp, terr, sizeof(terr));
	free(txt);
	if (rc == -1) {
		snprintf(a->err, sizeof(a->err), "the sandbox did not answer (%s). "
		    "It may have been killed (out of memory?) or be restarting; "
		    "retry the call, and if it keeps failing use create_sandbox "
		    "for a fresh sandbox", terr);
		return -1;
	}
	if ((a->j = cJSON_ParseWithLength(a->resp.p ? a->resp.p : "", a->resp.len)) == NULL ||
	    !cJSON_IsObject(a->j)) {
		snprintf(a->err, sizeof(a->err), "the sandbox's agent sent an "
		    "unreadable reply (HTTP %d); retry the call", a->status);
		return -1;
	}
	return 0;
}

static void
areq_free(struct areq *a)
{
	cJSON_Delete(a->j);
	buf_free(&a->resp);
}

static const char *
jstr(cJSON *o, const char *k)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static long long
jnum(cJSON *o, const char *k, long long def)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? (long long)v->valuedouble : def;
}

static int
jtrue(cJSON *o, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* The agent's error reply as a message for the model. */
static void
agent_error_text(struct areq *a, const char *what, struct buf *out)
{
	cJSON *e = cJSON_GetObjectItemCaseSensitive(a->j, "error");
	const char *code = jstr(e, "code"), *msg = jstr(e, "message");
	char *clean = msg ? jsonu_utf8_clean(msg, strlen(msg)) : NULL;

	if (a->status == 409)
		ign(buf_addf(out, "%s failed: another command is still running in "
		    "this session's shell (a concurrent call). Wait for it to finish, "
		    "or run long work with shell_async.", what));
	else
		ign(buf_addf(out, "%s failed (%s): %s", what,
		    code ? code : "error", clean ? clean : "no details"));
	free(clean);
}

static void
set_text(struct tool_call *tc, const char *text, int is_error)
{
	cJSON_Delete(tc->result);
	tc->result = tools_text_result(text, is_error);
	tc->is_error = is_error;
}

static void
set_buf(struct tool_call *tc, struct buf *b, int is_error)
{
	set_text(tc, b->p ? b->p : "", is_error);
}

static void
add_structured(struct tool_call *tc, cJSON *obj)
{
	if (tc->structured && tc->result != NULL)
		cJSON_AddItemToObject(tc->result, "structuredContent", obj);
	else
		cJSON_Delete(obj);
}

/* ---- tools ---- */

static void
t_shell(struct tool_call *tc, struct sess *s, const struct conf *c)
{
	static const char *const allowed[] = { "command", "timeout", NULL };
	struct areq a = { .s = s };
	struct buf out;
	const char *cmd;
	char err[256];
	long long tmo, maxs = c->shell_max_timeout_ms / 1000;
	struct timespec busy_wait = { 0, 50 * 1000000 };
	cJSON *body, *st;
	char *text;
	int tries;

	buf_init(&out, AGENT_RESP_MAX);
	if (arg_only(tc->args, allowed, err, sizeof(err)) == -1 ||
	    arg_str(tc->args, "command", 1, MAX_COMMAND, &cmd, err, sizeof(err)) == -1 ||
	    arg_int(tc->args, "timeout", 1, maxs < 1 ? 1 : maxs,
	    c->shell_timeout_ms / 1000, &tmo, err, sizeof(err)) == -1) {
		set_text(tc, err, 1);
		goto out;
	}
	if (*cmd == '\0') {
		set_text(tc, "argument 'command' is empty", 1);
		goto out;
	}
	if (atomic_load(&tc->cancelled)) {
		set_text(tc, "cancelled", 1);
		goto out;
	}
	/* A cancel interrupts the command (tools_cancel): let the agent
	 * answer then, and give up on it only if it does not. */
	agentc_set_cancel(&tc->cancelled, CANCEL_SHELL_GRACE_MS);
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "command", cmd);
	cJSON_AddNumberToObject(body, "timeout_ms", (double)(tmo * 1000));
	cJSON_AddNumberToObject(body, "max_output", (double)c->max_output);
	for (tries = 0;; tries++) {
		if (agent_do(&a, "POST", "/v1/shell", body,
		    (int)(tmo * 1000) + MARGIN_MS) == -1) {
			cJSON_Delete(body);
			set_text(tc, a.err, 1);
			goto out;
		}
		/* Busy right after a cancelled command was interrupted: it is
		 * winding down; wait for it rather than fail. */
		if (a.status != 409 || tries >= BUSY_RETRIES ||
		    !sess_interrupted_recently(s, CANCEL_SHELL_GRACE_MS) ||
		    atomic_load(&tc->cancelled))
			break;
		areq_free(&a);
		memset(&a, 0, sizeof(a));
		a.s = s;
		nanosleep(&busy_wait, NULL);
	}
	cJSON_Delete(body);
	if (a.status != 200) {
		agent_error_text(&a, "shell", &out);
		set_buf(tc, &out, 1);
		goto out;
	}
	{
		const char *o = jstr(a.j, "output");
		long long code = jnum(a.j, "exit_code", -1);
		int timed_out = jtrue(a.j, "timed_out"), oom = jtrue(a.j, "oom_killed");
		int trunc = jtrue(a.j, "truncated"), restarted = jtrue(a.j, "shell_restarted");
		long long dropped = jnum(a.j, "dropped_bytes", 0);
		long long dur = jnum(a.j, "duration_ms", 0);

		text = o ? jsonu_utf8_clean(o, strlen(o)) : xstrdup("");
		ign(buf_addstr(&out, text));
		free(text);
		if (out.len > 0 && out.p[out.len - 1] != '\n')
			ign(buf_addstr(&out, "\n"));
		if (timed_out)
			ign(buf_addf(&out, "[timed out after %llds: the command and "
			    "its child processes were killed; the shell keeps its "
			    "state. Use shell_async for long-running commands, or a "
			    "larger timeout]", tmo));
		else if (oom)
			ign(buf_addf(&out, "[killed: out of memory (the sandbox's "
			    "memory limit); exit code %lld]", code));
		else
			ign(buf_addf(&out, "[exit code %lld, %lld ms]", code, dur));
		if (trunc)
			ign(buf_addf(&out, "\n[output truncated: %lld bytes dropped "
			    "from the middle; redirect output to a file and view it "
			    "in parts]", dropped));
		if (restarted)
			ign(buf_addstr(&out, "\n[the shell exited and a fresh one "
			    "was started in /workspace; variables and cwd were reset]"));
		set_buf(tc, &out, timed_out || oom);
		st = cJSON_CreateObject();
		cJSON_AddNumberToObject(st, "exit_code", (double)code);
		cJSON_AddBoolToObject(st, "timed_out", timed_out);
		cJSON_AddBoolToObject(st, "truncated", trunc);
		cJSON_AddBoolToObject(st, "oom_killed", oom);
		cJSON_AddNumberToObject(st, "duration_ms", (double)dur);
		add_structured(tc, st);
	}
out:
	areq_free(&a);
	buf_free(&out);
}

static void
job_status_text(cJSON *j, struct buf *out)
{
	const char *id = jstr(j, "id"), *state = jstr(j, "state");
	cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "exit_code");
	cJSON *sig = cJSON_GetObjectItemCaseSensitive(j, "signal");
	char idc[80], stc[40];

	log_escape(idc, sizeof(idc), id ? id : "?", id ? strlen(id) : 1);
	log_escape(stc, sizeof(stc), state ? state : "unknown",
	    state ? strlen(state) : 7);
	ign(buf_addf(out, "[job %s: %s", idc, stc));
	if (cJSON_IsNumber(code))
		ign(buf_addf(out, ", exit code %lld", (long long)code->valuedouble));
	if (cJSON_IsNumber(sig))
		ign(buf_addf(out, ", signal %lld", (long long)sig->valuedouble));
	if (jtrue(j, "oom_killed"))
		ign(buf_addstr(out, ", killed: out of memory"));
	ign(buf_addf(out, ", %lld output bytes", jnum(j, "output_bytes", 0)));
	if (jtrue(j, "truncated"))
		ign(buf_addf(out, "; output capped, %lld bytes dropped (the spool "
		    "keeps the head; rerun with output piped through tail or to a "
		    "file for the end)", jnum(j, "dropped_bytes", 0)));
}

static cJSON *
job_struct(cJSON *j)
{
	cJSON *st = cJSON_CreateObject(), *v;
	static const char *const keys[] = { "id", "state", "exit_code", "signal",
	    "oom_killed", "output_bytes", "next_offset", "eof", "truncated",
	    "dropped_bytes", NULL };
	size_t i;

	for (i = 0; keys[i] != NULL; i++) {
		v = cJSON_GetObjectItemCaseSensitive(j, keys[i]);
		if (v == NULL)
			continue;
		if (cJSON_IsString(v)) {
			char *cl = jsonu_utf8_clean(v->valuestring, strlen(v->valuestring));
			cJSON_AddStringToObject(st, keys[i], cl);
			free(cl);
		} else if (cJSON_IsNumber(v) || cJSON_IsBool(v) || cJSON_IsNull(v))
			cJSON_AddItemToObject(st, keys[i], cJSON_Duplicate(v, 0));
	}
	return st;
}

static void
job_not_found(struct tool_call *tc, struct areq *a, const char *jid,
    const char *what)
{
	struct buf out;

	buf_init(&out, 64 * 1024);
	if (a->status == 404)
		ign(buf_addf(&out, "%s failed: no job '%s' in this session. Job ids "
		    "come from shell_async in the same session (X-Session-Id); a "
		    "sandbox re-created with create_sandbox or clear_session has no "
		    "old jobs.", what, jid));
	else
		agent_error_text(a, what, &out);
	set_buf(tc, &out, 1);
	buf_free(&out);
}

static void
t_shell_async(struct tool_call *tc, struct sess *s)
{
	static const char *const allowed[] = { "command", NULL };
	struct areq a = { .s = s };
	struct buf out;
	const char *cmd, *id;
	char err[256];
	cJSON *body, *st;

	buf_init(&out, 64 * 1024);
	if (arg_only(tc->args, allowed, err, sizeof(err)) == -1 ||
	    arg_str(tc->args, "command", 1, MAX_COMMAND, &cmd, err, sizeof(err)) == -1) {
		set_text(tc, err, 1);
		goto out;
	}
	if (*cmd == '\0') {
		set_text(tc, "argument 'command' is empty", 1);
		goto out;
	}
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "command", cmd);
	if (agent_do(&a, "POST", "/v1/jobs", body, 30000) == -1) {
		cJSON_Delete(body);
		set_text(tc, a.err, 1);
		goto out;
	}
	cJSON_Delete(body);
	if (a.status != 200 && a.status != 201) {
		agent_error_text(&a, "shell_async", &out);
		set_buf(tc, &out, 1);
		goto out;
	}
	if ((id = jstr(a.j, "id")) == NULL || !job_id_ok(id)) {
		set_text(tc, "shell_async: the agent returned no usable job id; retry", 1);
		goto out;
	}
	ign(buf_addf(&out, "Started job %s (pid %lld). Use shell_poll with "
	    "job_id \"%s\" to read its output, shell_wait to wait for it, "
	    "shell_stop to stop it.", id, jnum(a.j, "pid", 0), id));
	set_buf(tc, &out, 0);
	st = cJSON_CreateObject();
	cJSON_AddStringToObject(st, "job_id", id);
	cJSON_AddNumberToObject(st, "pid", (double)jnum(a.j, "pid", 0));
	add_structured(tc, st);
out:
	areq_free(&a);
	buf_free(&out);
}

/* poll (wait_s < 0) or wait. */
static void
t_shell_job(struct tool_call *tc, struct sess *s, const struct conf *c, int mode)
{
	static const char *const a_poll[] = { "job_id", "offset", "max_bytes", NULL };
	static const char *const a_wait[] = { "job_id", "timeout", "offset", NULL };
	static const char *const a_stop[] = { "job_id", NULL };
	const char *what = mode == 0 ? "shell_poll" : mode == 1 ? "shell_wait" :
	    "shell_stop";
	struct areq a = { .s = s }, w = { .s = s };
	struct buf out;
	const char *jid, *o;
	char err[256], path[256];
	long long off, maxb, tmo = 0, maxs = c->shell_max_timeout_ms / 1000;
	cJSON *body;
	char *text;

	buf_init(&out, AGENT_RESP_MAX);
	if (arg_only(tc->args, mode == 0 ? a_poll : mode == 1 ? a_wait : a_stop,
	    err, sizeof(err)) == -1 ||
	    arg_str(tc->args, "job_id", 1, 64, &jid, err, sizeof(err)) == -1 ||
	    arg_int(tc->args, "offset", 0, 1LL << 50, 0, &off, err, sizeof(err)) == -1 ||
	    arg_int(tc->args, "max_bytes", 1, 16 << 20, c->max_output, &maxb,
	    err, sizeof(err)) == -1 ||
	    arg_int(tc->args, "timeout", 0, maxs, 30 < maxs ? 30 : maxs, &tmo,
	    err, sizeof(err)) == -1) {
		set_text(tc, err, 1);
		goto out;
	}
	if (!job_id_ok(jid)) {
		set_text(tc, "argument 'job_id' is not a job id (use the job_id "
		    "returned by shell_async)", 1);
		goto out;
	}
	if (mode == 1 || mode == 2) {
		body = cJSON_CreateObject();
		if (mode == 1)
			cJSON_AddNumberToObject(body, "timeout_ms", (double)(tmo * 1000));
		snprintf(path, sizeof(path), "/v1/jobs/%s/%s", jid,
		    mode == 1 ? "wait" : "stop");
		if (agent_do(&w, "POST", path, body, (int)(tmo * 1000) + MARGIN_MS) == -1) {
			cJSON_Delete(body);
			set_text(tc, w.err, 1);
			goto out;
		}
		cJSON_Delete(body);
		if (w.status != 200) {
			job_not_found(tc, &w, jid, what);
			goto out;
		}
	}
	if (mode == 2) {
		job_status_text(w.j, &out);
		ign(buf_addstr(&out, "]"));
		set_buf(tc, &out, 0);
		add_structured(tc, job_struct(w.j));
		goto out;
	}
	snprintf(path, sizeof(path), "/v1/jobs/%s?offset=%lld&max=%lld", jid, off,
	    mode == 0 ? maxb : c->max_output);
	if (agent_do(&a, "GET", path, NULL, 30000) == -1) {
		set_text(tc, a.err, 1);
		goto out;
	}
	if (a.status != 200) {
		job_not_found(tc, &a, jid, what);
		goto out;
	}
	o = jstr(a.j, "output");
	text = o ? jsonu_utf8_clean(o, strlen(o)) : xstrdup("");
	ign(buf_addstr(&out, text));
	if (out.len > 0 && out.p[out.len - 1] != '\n')
		ign(buf_addstr(&out, "\n"));
	free(text);
	job_status_text(a.j, &out);
	ign(buf_addf(&out, "; next_offset %lld%s]", jnum(a.j, "next_offset", off),
	    jtrue(a.j, "eof") ? ", eof: finished and all output read" : ""));
	{
		const char *state = jstr(a.j, "state");
		if (mode == 1 && state != NULL && strcmp(state, "running") == 0)
			ign(buf_addf(&out, "\n[still running after %llds; call "
			    "shell_wait again, or shell_poll from next_offset]", tmo));
		if (!jtrue(a.j, "eof") && state != NULL && strcmp(state, "running") != 0)
			ign(buf_addstr(&out, "\n[more output remains: call shell_poll "
			    "with offset = next_offset]"));
	}
	set_buf(tc, &out, 0);
	add_structured(tc, job_struct(a.j));
out:
	areq_free(&a);
	areq_free(&w);
	buf_free(&out);
}

static void
t_edit(struct tool_call *tc, struct sess *s)
{
	static const char *const allowed[] = { "command", "path", "view_range",
	    "file_text", "old_str", "new_str", "insert_line", "insert_text", NULL };
	struct areq a = { .s = s };
	struct buf out;
	const char *cmd, *path, *ft, *os, *ns, *it, *p;
	char err[256], ep[256];
	long long line;
	cJSON *body = NULL, *vr;
	char *text;

	buf_init(&out, AGENT_RESP_MAX);
	if (arg_only(tc->args, allowed, err, sizeof(err)) == -1 ||
	    arg_str(tc->args, "command", 1, 32, &cmd, err, sizeof(err)) == -1 ||
	    arg_str(tc->args, "path", 1, 4096, &path, err, sizeof(err)) == -1 ||
	    arg_str(tc->args, "file_text", 0, MAX_FILE_TEXT, &ft, err, sizeof(err)) == -1 ||
	    arg_str(tc->args, "old_str", 0, MAX_FILE_TEXT, &os, err, sizeof(err)) == -1 ||
	    arg_str(tc->args, "new_str", 0, MAX_FILE_TEXT, &ns, err, sizeof(err)) == -1 ||
	    arg_str(tc->args, "insert_text", 0, MAX_FILE_TEXT, &it, err, sizeof(err)) == -1 ||
	    arg_int(tc->args, "insert_line", 0, 1LL << 40, -1, &line, err, sizeof(err)) == -1) {
		set_text(tc, err, 1);
		goto out;
	}
	if (*path == '\0') {
		set_text(tc, "argument 'path' is empty", 1);
		goto out;
	}
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "path", path);
	if (strcmp(cmd, "view") == 0) {
		vr = cJSON_GetObjectItemCaseSensitive(tc->args, "view_range");
		if (vr != NULL && !cJSON_IsNull(vr)) {
			cJSON *x0, *x1;
			if (!cJSON_IsArray(vr) || cJSON_GetArraySize(vr) != 2 ||
			    !cJSON_IsNumber(x0 = cJSON_GetArrayItem(vr, 0)) ||
			    !cJSON_IsNumber(x1 = cJSON_GetArrayItem(vr, 1)) ||
			    x0->valuedouble != (double)(long long)x0->valuedouble ||
			    x1->valuedouble != (double)(long long)x1->valuedouble) {
				set_text(tc, "argument 'view_range' must be two integers "
				    "[first_line, last_line] (last_line -1 = to the end)", 1);
				goto out;
			}
			if (x0->valuedouble < 1 || (x1->valuedouble != -1 &&
			    x1->valuedouble < x0->valuedouble)) {
				set_text(tc, "argument 'view_range': first_line must be >= 1 "
				    "and last_line >= first_line, or -1 for the end", 1);
				goto out;
			}
			cJSON_AddItemToObject(body, "view_range", cJSON_Duplicate(vr, 1));
		}
		p = "/v1/files/view";
	} else if (strcmp(cmd, "create") == 0) {
		if (ft == NULL) {
			set_text(tc, "create needs 'file_text' (the whole file content)", 1);
			goto out;
		}
		cJSON_AddStringToObject(body, "file_text", ft);
		p = "/v1/files/create";
	} else if (strcmp(cmd, "str_replace") == 0) {
		if (os == NULL || *os == '\0') {
			set_text(tc, "str_replace needs a non-empty 'old_str' (the exact "
			    "text to replace) and 'new_str'", 1);
			goto out;
		}
		cJSON_AddStringToObject(body, "old_str", os);
		cJSON_AddStringToObject(body, "new_str", ns ? ns : "");
		p = "/v1/files/str_replace";
	} else if (strcmp(cmd, "insert") == 0) {
		if (it == NULL)
			it = ns;	/* some clients send new_str for insert */
		if (line < 0 || it == NULL) {
			set_text(tc, "insert needs 'insert_line' (0 = top) and "
			    "'insert_text'", 1);
			goto out;
		}
		cJSON_AddNumberToObject(body, "insert_line", (double)line);
		cJSON_AddStringToObject(body, "insert_text", it);
		p = "/v1/files/insert";
	} else {
		char cc[40];
		log_escape(cc, sizeof(cc), cmd, strlen(cmd));
		snprintf(ep, sizeof(ep), "unknown command '%s': use view, create, "
		    "str_replace or insert", cc);
		set_text(tc, ep, 1);
		goto out;
	}
	if (agent_do(&a, "POST", p, body, 60000) == -1) {
		set_text(tc, a.err, 1);
		goto out;
	}
	if (a.status != 200) {
		agent_error_text(&a, cmd, &out);
		set_buf(tc, &out, 1);
		goto out;
	}
	if (strcmp(cmd, "view") == 0) {
		const char *ct = jstr(a.j, "content");
		text = ct ? jsonu_utf8_clean(ct, strlen(ct)) : xstrdup("");
		set_text(tc, text, 0);
		free(text);
	} else if (strcmp(cmd, "str_replace") == 0) {
		const char *sn = jstr(a.j, "snippet");
		text = sn ? jsonu_utf8_clean(sn, strlen(sn)) : xstrdup("");
		ign(buf_addf(&out, "Replaced the text in %s.%s%s", path,
		    *text ? " The edited part now reads:\n" : "", text));
		free(text);
		set_buf(tc, &out, 0);
	} else if (strcmp(cmd, "create") == 0) {
		ign(buf_addf(&out, "Created %s (%zu bytes).", path, strlen(ft)));
		set_buf(tc, &out, 0);
	} else {
		ign(buf_addf(&out, "Inserted the text after line %lld of %s.", line, path));
		set_buf(tc, &out, 0);
	}
out:
	cJSON_Delete(body);
	areq_free(&a);
	buf_free(&out);
}

static void
sess_error(struct tool_call *tc, enum sess_err e, const char *err)
{
	struct buf out;

	buf_init(&out, 4096);
	switch (e) {
	case SE_LIMIT:
	case SE_DRAINING:
	case SE_BUSY:
		ign(buf_addstr(&out, err));
		break;
	default:
		ign(buf_addf(&out, "%s", err));
	}
	set_buf(tc, &out, 1);
	buf_free(&out);
}

static void tools_run1(struct sessmgr *, const struct conf *,
    struct tool_call *);

void
tools_run(struct sessmgr *m, const struct conf *c, struct tool_call *tc)
{
	tools_run1(m, c, tc);
	agentc_set_cancel(NULL, 0);
	atomic_store(&tc->finished, 1);
}

void
tools_cancel(struct sessmgr *m, struct tool_call *tc)
{
	struct timespec ts = { 0, 100 * 1000000 };
	int i;

	if (strcmp(tc->name, "shell") != 0)
		return;
	/*
	 * The call may not have reached the shell yet (the shell is idle):
	 * look again until it has, or the call ended.
	 */
	for (i = 0; i < CANCEL_RECHECK && !atomic_load(&tc->finished); i++) {
		if (sess_interrupt(m, tc->sid) == 1)
			return;
		nanosleep(&ts, NULL);
	}
}

static void
tools_run1(struct sessmgr *m, const struct conf *c, struct tool_call *tc)
{
	struct sess *s;
	enum sess_err e = SE_OK;
	char err[512];

	if (tc->args == NULL)
		tc->args = cJSON_CreateObject();
	if (strcmp(tc->name, "clear_session") == 0) {
		static const char *const none[] = { NULL };
		if (arg_only(tc->args, none, err, sizeof(err)) == -1) {
			set_text(tc, err, 1);
			return;
		}
		if (sess_delete(m, tc->sid, "clear_session", &e, err, sizeof(err)) == -1 &&
		    e != SE_NOTFOUND) {
			sess_error(tc, e, err);
			return;
		}
		set_text(tc, "Session cleared: its sandbox and workspace are gone. The "
		    "next tool call starts a fresh default sandbox.", 0);
		return;
	}
	if ((s = sess_get(m, tc->sid, tc->org, tc->user, 1, &e, err, sizeof(err))) == NULL) {
		sess_error(tc, e, err);
		return;
	}
	if (strcmp(tc->name, "create_sandbox") == 0) {
		static const char *const allowed[] = { "image", "use_kata",
		    "run_as_root", "writable_root", NULL };
		struct sess_opts o;
		struct buf out;
		const char *img;

		if (arg_only(tc->args, allowed, err, sizeof(err)) == -1 ||
		    arg_str(tc->args, "image", 0, 255, &img, err, sizeof(err)) == -1 ||
		    arg_bool(tc->args, "use_kata", &o.use_kata, err, sizeof(err)) == -1 ||
		    arg_bool(tc->args, "run_as_root", &o.run_as_root, err, sizeof(err)) == -1 ||
		    arg_bool(tc->args, "writable_root", &o.writable_root, err, sizeof(err)) == -1) {
			set_text(tc, err, 1);
			goto out;
		}
		o.image = img;
		if (sess_reprovision(s, &o, &e, err, sizeof(err)) == -1) {
			sess_error(tc, e, err);
			goto out;
		}
		buf_init(&out, 4096);
		ign(buf_addf(&out, "A fresh sandbox is ready (id %s, image %s). "
		    "Its workspace is /workspace.", sess_sandbox_id(s),
		    img ? img : "default"));
		set_buf(tc, &out, 0);
		buf_free(&out);
		goto out;
	}
	if (sess_enter(s, &e, err, sizeof(err)) == -1) {
		sess_error(tc, e, err);
		goto out;
	}
	/* The tool's own waits on the agent give up as soon as the call is
	 * cancelled (not the sandbox's set-up above: it must complete). */
	agentc_set_cancel(&tc->cancelled, 0);
	if (strcmp(tc->name, "shell") == 0)
		t_shell(tc, s, c);
	else if (strcmp(tc->name, "shell_async") == 0)
		t_shell_async(tc, s);
	else if (strcmp(tc->name, "shell_poll") == 0)
		t_shell_job(tc, s, c, 0);
	else if (strcmp(tc->name, "shell_wait") == 0)
		t_shell_job(tc, s, c, 1);
	else if (strcmp(tc->name, "shell_stop") == 0)
		t_shell_job(tc, s, c, 2);
	else if (strcmp(tc->name, "str_replace_based_edit_tool") == 0)
		t_edit(tc, s);
	else
		set_text(tc, "unknown tool", 1);
	agentc_set_cancel(NULL, 0);
	sess_leave(s);
out:
	sess_put(s);
}
