/*
 * toolres.c: the results of tool calls (toolres.h). Each *_result builds
 * the CallToolResult from what the agent answered: a text block written
 * for the model and, for clients of 2025-06-18 and later,
 * structuredContent matching the tool's outputSchema (tools.c's table;
 * tools_run checks every result against it). The agent's reply is never
 * trusted: numbers are bounded, strings cleaned to valid UTF-8, states
 * mapped onto the schema's enum; tests/unit/test_orch_results.c feeds the
 * builders hostile replies.
 *
 * Rules: no I/O here (tools.c talks to the agent); calls only jsonu.c and
 * sessopt.c.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "b64.h"
#include "buf.h"
#include "lib/jsonu.h"
#include "log.h"
#include "session/sessopt.h"
#include "toolres.h"
#include "tools.h"
#include "xmalloc.h"

int
toolres_job_id_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > MAX_JOB_ID)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

cJSON *
toolres_text(const char *text, int is_error)
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

const char *
toolres_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * Member k of the agent's reply o as a whole number in [lo, hi] (a
 * fraction is cut off); def when it is absent, no number, or out of range
 * (1e400 is infinity, and no double that large converts).
 */
static long long
jint(const cJSON *o, const char *k, long long def, long long lo, long long hi)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble < (double)lo || v->valuedouble > (double)hi)
		return def;
	return (long long)v->valuedouble;
}

/* The bound of the numbers taken from agents: within it doubles are exact,
 * and so are the integers of the outputSchemas (schema.c's limit). */
#define JINT_MAX	(1LL << 53)

/* A count (bytes, offsets, milliseconds): never negative. */
static long long
jcount(const cJSON *o, const char *k, long long def)
{
	return jint(o, k, def, 0, JINT_MAX);
}

static int
jtrue(const cJSON *o, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* Member k of o as clean text (caller frees); "" when it is no string. */
static char *
jtext(const cJSON *o, const char *k)
{
	const char *v = toolres_str(o, k);

	return v != NULL ? jsonu_utf8_clean(v, strlen(v)) : xstrdup("");
}

void
toolres_set_text(struct tool_call *tc, const char *text, int is_error)
{
	cJSON_Delete(tc->result);
	tc->result = toolres_text(text, is_error);
	tc->is_error = is_error;
}

void
toolres_set_buf(struct tool_call *tc, struct buf *b, int is_error)
{
	toolres_set_text(tc, b->p ? b->p : "", is_error);
}

static void
add_structured(struct tool_call *tc, cJSON *obj)
{
	if (tc->structured && tc->result != NULL)
		cJSON_AddItemToObject(tc->result, "structuredContent", obj);
	else
		cJSON_Delete(obj);
}

static long long jll(const cJSON *o, const char *k);

/* ---- results (see the top of the file) ---- */

/*
 * shell's result from the agent's reply j to POST /v1/shell (tmo: the
 * timeout asked for, in seconds). A timeout is exit code 124 whatever the
 * agent said (older agents said -1).
 */
void
toolres_shell(struct tool_call *tc, const cJSON *j, long long tmo)
{
	struct buf out;
	int timed_out = jtrue(j, "timed_out"), oom = jtrue(j, "oom_killed");
	int trunc = jtrue(j, "truncated"), restarted = jtrue(j, "shell_restarted");
	long long code = timed_out ? 124 : jint(j, "exit_code", -1, INT_MIN,
	    INT_MAX);
	long long dropped = jcount(j, "dropped_bytes", 0);
	long long dur = jcount(j, "duration_ms", 0);
	char *text = jtext(j, "output");
	cJSON *st;

	buf_init(&out, AGENT_RESP_MAX);
	ign(buf_addstr(&out, text));
	if (out.len > 0 && out.p[out.len - 1] != '\n')
		ign(buf_addstr(&out, "\n"));
	if (timed_out && tmo > 0)
		ign(buf_addf(&out, "[timed out after %llds (exit code 124): the "
		    "command and its child processes were killed; the shell keeps "
		    "its state. Use shell_async for long-running commands, or a "
		    "larger timeout]", tmo));
	else if (timed_out)	/* a task's kept result: tmo not known */
		ign(buf_addstr(&out, "[timed out (exit code 124): the command "
		    "and its child processes were killed; the shell keeps its "
		    "state. Use a larger timeout]"));
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
	toolres_set_buf(tc, &out, timed_out || oom);
	buf_free(&out);
	st = cJSON_CreateObject();
	cJSON_AddNumberToObject(st, "exit_code", (double)code);
	cJSON_AddStringToObject(st, "output", text);
	cJSON_AddBoolToObject(st, "timed_out", timed_out);
	cJSON_AddBoolToObject(st, "truncated", trunc);
	cJSON_AddNumberToObject(st, "dropped_bytes", (double)dropped);
	cJSON_AddNumberToObject(st, "duration_ms", (double)dur);
	cJSON_AddBoolToObject(st, "oom_killed", oom);
	cJSON_AddBoolToObject(st, "shell_restarted", restarted);
	if (jtrue(j, "previous_interrupted"))
		cJSON_AddTrueToObject(st, "previous_interrupted");
	add_structured(tc, st);
	free(text);
}

/* The job's state as the outputSchemas' enum has it. */
static const char *
job_state(const cJSON *j)
{
	static const char *const states[] = { "running", "exited", "signaled",
	    "stopped" };
	const char *st = toolres_str(j, "state");
	size_t i;

	for (i = 0; st != NULL && i < NELEM(states); i++)
		if (strcmp(st, states[i]) == 0)
			return states[i];
	return "unknown";
}

static void
job_status_text(const cJSON *j, const char *jid, struct buf *out)
{
	const char *id = toolres_str(j, "id");
	cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "exit_code");
	cJSON *sig = cJSON_GetObjectItemCaseSensitive(j, "signal");
	char idc[80];

	if (id == NULL)
		id = jid;
	log_escape(idc, sizeof(idc), id, strlen(id));
	ign(buf_addf(out, "[job %s: %s", idc, job_state(j)));
	if (cJSON_IsNumber(code))
		ign(buf_addf(out, ", exit code %lld", jint(j, "exit_code", -1,
		    INT_MIN, INT_MAX)));
	if (cJSON_IsNumber(sig))
		ign(buf_addf(out, ", signal %lld", jint(j, "signal", -1, 0,
		    INT_MAX)));
	if (jtrue(j, "oom_killed"))
		ign(buf_addstr(out, ", killed: out of memory"));
	ign(buf_addf(out, ", %lld output bytes", jcount(j, "output_bytes", 0)));
	if (jtrue(j, "truncated"))
		ign(buf_addf(out, "; output capped, %lld bytes dropped (the spool "
		    "keeps the head; rerun with output piped through tail or to a "
		    "file for the end)", jcount(j, "dropped_bytes", 0)));
}

/*
 * A job's structuredContent from the agent's {job} j (jid: the id asked
 * for, used when j has none that is a job id). exit_code and signal only
 * when the agent gave usable numbers (it gives null while running, or
 * when the status was lost).
 */
static cJSON *
job_struct(const cJSON *j, const char *jid)
{
	cJSON *st = cJSON_CreateObject();
	const char *id = toolres_str(j, "id");
	long long v;

	cJSON_AddStringToObject(st, "job_id", id != NULL && toolres_job_id_ok(id) ? id :
	    jid);
	cJSON_AddStringToObject(st, "state", job_state(j));
	if ((v = jint(j, "exit_code", LLONG_MIN, INT_MIN, INT_MAX)) != LLONG_MIN)
		cJSON_AddNumberToObject(st, "exit_code", (double)v);
	if ((v = jint(j, "signal", LLONG_MIN, 0, INT_MAX)) != LLONG_MIN)
		cJSON_AddNumberToObject(st, "signal", (double)v);
	cJSON_AddBoolToObject(st, "oom_killed", jtrue(j, "oom_killed"));
	cJSON_AddNumberToObject(st, "output_bytes", (double)jcount(j,
	    "output_bytes", 0));
	cJSON_AddBoolToObject(st, "truncated", jtrue(j, "truncated"));
	cJSON_AddNumberToObject(st, "dropped_bytes", (double)jcount(j,
	    "dropped_bytes", 0));
	return st;
}

/* shell_async's result from the agent's reply j to POST /v1/jobs. */
void
toolres_job_started(struct tool_call *tc, const cJSON *j)
{
	const char *id = toolres_str(j, "id"), *note;
	long long pid = jint(j, "pid", 0, 0, INT_MAX);
	struct buf out;
	cJSON *st;

	if (id == NULL || !toolres_job_id_ok(id)) {
		toolres_set_text(tc, "shell_async: the agent returned no usable job id; retry", 1);
		return;
	}
	buf_init(&out, 64 * 1024);
	ign(buf_addf(&out, "Started job %s (pid %lld). Use shell_poll with "
	    "job_id \"%s\" to read its output, shell_wait to wait for it, "
	    "shell_stop to stop it.", id, pid, id));
	/* what the agent did first (a sandbox at its process limit) */
	if ((note = toolres_str(j, "note")) != NULL)
		ign(buf_addf(&out, "\n%.1000s", note));
	toolres_set_buf(tc, &out, 0);
	buf_free(&out);
	st = cJSON_CreateObject();
	cJSON_AddStringToObject(st, "job_id", id);
	cJSON_AddNumberToObject(st, "pid", (double)pid);
	add_structured(tc, st);
}

/*
 * shell_poll's (wait_s -1) or shell_wait's result from the agent's {job}
 * with output j, read from offset off for job jid.
 */
void
toolres_job_output(struct tool_call *tc, const cJSON *j, const char *jid,
    long long off, long long wait_s)
{
	const char *state = job_state(j);
	long long next = jcount(j, "next_offset", off);
	int eof = jtrue(j, "eof");
	char *text = jtext(j, "output");
	struct buf out;
	cJSON *st;

	buf_init(&out, AGENT_RESP_MAX);
	ign(buf_addstr(&out, text));
	if (out.len > 0 && out.p[out.len - 1] != '\n')
		ign(buf_addstr(&out, "\n"));
	job_status_text(j, jid, &out);
	ign(buf_addf(&out, "; next_offset %lld%s]", next,
	    eof ? ", eof: finished and all output read" : ""));
	if (wait_s >= 0 && strcmp(state, "running") == 0)
		ign(buf_addf(&out, "\n[still running after %llds; call "
		    "shell_wait again, or shell_poll from next_offset]", wait_s));
	if (!eof && strcmp(state, "running") != 0)
		ign(buf_addstr(&out, "\n[more output remains: call shell_poll "
		    "with offset = next_offset]"));
	toolres_set_buf(tc, &out, 0);
	buf_free(&out);
	st = job_struct(j, jid);
	cJSON_AddStringToObject(st, "output", text);
	cJSON_AddNumberToObject(st, "next_offset", (double)next);
	cJSON_AddBoolToObject(st, "eof", eof);
	add_structured(tc, st);
	free(text);
}

/* shell_stop's result from the agent's {job} j. */
void
toolres_job_stop(struct tool_call *tc, const cJSON *j, const char *jid)
{
	struct buf out;

	buf_init(&out, 64 * 1024);
	job_status_text(j, jid, &out);
	ign(buf_addstr(&out, "]"));
	toolres_set_buf(tc, &out, 0);
	buf_free(&out);
	add_structured(tc, job_struct(j, jid));
}

/*
 * str_replace_based_edit_tool's result for command cmd on path from the
 * agent's reply j (file_text: create's, line: insert's).
 */
void
toolres_edit(struct tool_call *tc, const char *cmd, const char *path,
    const char *file_text, long long line, const cJSON *j)
{
	struct buf out;
	char *text = NULL;
	cJSON *st = cJSON_CreateObject();

	buf_init(&out, AGENT_RESP_MAX);
	cJSON_AddStringToObject(st, "command", cmd);
	cJSON_AddStringToObject(st, "path", path);
	if (strcmp(cmd, "view") == 0) {
		text = jtext(j, "content");
		ign(buf_addstr(&out, text));
		cJSON_AddStringToObject(st, "content", text);
	} else if (strcmp(cmd, "str_replace") == 0) {
		text = jtext(j, "snippet");
		ign(buf_addf(&out, "Replaced the text in %s.%s%s", path,
		    *text ? " The edited part now reads:\n" : "", text));
		cJSON_AddStringToObject(st, "snippet", text);
	} else if (strcmp(cmd, "create") == 0) {
		ign(buf_addf(&out, "Created %s (%zu bytes).", path, strlen(file_text)));
		cJSON_AddNumberToObject(st, "bytes", (double)strlen(file_text));
	} else {
		ign(buf_addf(&out, "Inserted the text after line %lld of %s.", line,
		    path));
		cJSON_AddNumberToObject(st, "insert_line", (double)line);
	}
	toolres_set_buf(tc, &out, 0);
	buf_free(&out);
	add_structured(tc, st);
	free(text);
}

/* create_sandbox's result: text, the new sandbox's id and image. */
void
toolres_sandbox(struct tool_call *tc, struct buf *text, const char *sandbox_id,
    const char *image)
{
	cJSON *st;

	toolres_set_buf(tc, text, 0);
	st = cJSON_CreateObject();
	cJSON_AddStringToObject(st, "sandbox_id", sandbox_id);
	cJSON_AddStringToObject(st, "image", image);
	add_structured(tc, st);
}

/* clear_session's result (had: a sandbox was deleted). */
void
toolres_cleared(struct tool_call *tc, int had)
{
	cJSON *st;

	toolres_set_text(tc, "Session cleared: its sandbox and workspace are gone. The "
	    "next tool call starts a fresh default sandbox.", 0);
	st = cJSON_CreateObject();
	cJSON_AddTrueToObject(st, "cleared");
	cJSON_AddBoolToObject(st, "had_sandbox", had);
	add_structured(tc, st);
}

void
toolres_app(struct tool_call *tc, cJSON *app, const char *note)
{
	const char *name = toolres_str(app, "name"), *url = toolres_str(app, "url");
	const char *tok = toolres_str(app, "token");
	struct buf out;

	buf_init(&out, 8192);
	ign(buf_addf(&out, "Published port %d of the sandbox as app '%s' at %s\n"
	    "Open it in a browser with its token: %s?token=%s (the gateway then "
	    "keeps the token in a cookie for that one address and takes it out of "
	    "the URL). Scripts send 'Authorization: Bearer %s'. Each request "
	    "needs the token; the app never sees it. This token is shown only "
	    "now (expose_port again with the same name gives a new one, "
	    "unexpose_port ends it): give the URL with the token to the person "
	    "you work for, and keep it out of files and commits.",
	    (int)jll(app, "port"), name ? name : "", url ? url : "",
	    url ? url : "", tok ? tok : "", tok ? tok : ""));
	if (note != NULL && note[0] != '\0')
		ign(buf_addf(&out, "\n%s", note));
	toolres_set_buf(tc, &out, 0);
	buf_free(&out);
	add_structured(tc, app);
}

void
toolres_apps_list(struct tool_call *tc, cJSON *list)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(list, "apps"), *a;
	struct buf out;

	buf_init(&out, 64 * 1024);
	if (cJSON_GetArraySize(arr) == 0)
		ign(buf_addstr(&out, "This session's sandbox publishes no apps "
		    "(expose_port publishes one)."));
	else
		ign(buf_addstr(&out, "Published apps (tokens are shown only by "
		    "expose_port):"));
	cJSON_ArrayForEach(a, arr) {
		ign(buf_addf(&out, "\n- %s: port %d at %s", toolres_str(a, "name"),
		    (int)jll(a, "port"), toolres_str(a, "url")));
	}
	toolres_set_buf(tc, &out, 0);
	buf_free(&out);
	add_structured(tc, list);
}

void
toolres_unexposed(struct tool_call *tc, const char *name)
{
	struct buf out;
	cJSON *st;

	buf_init(&out, 4096);
	ign(buf_addf(&out, "App '%s' is no longer published: its URL answers 404 "
	    "and its token is void. The server in the sandbox keeps running.",
	    name));
	toolres_set_buf(tc, &out, 0);
	buf_free(&out);
	st = cJSON_CreateObject();
	cJSON_AddStringToObject(st, "name", name);
	cJSON_AddTrueToObject(st, "unexposed");
	add_structured(tc, st);
}

/* A number member of o (0 if absent or null). */
static long long
jll(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? (long long)v->valuedouble : 0;
}

/* "cpu 2 cores, memory 2GiB (4MiB reserved), disk 10GiB, lifetime 1h, idle
 * timeout 10m". */
void
toolres_limits_text(const cJSON *st, struct buf *out)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(st, "limits");
	const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(l, "cpu");
	char mem[48], res[48], disk[48], life[48], idle[48];

	sessopt_fmt_size(mem, sizeof(mem), jll(l, "memory_bytes"));
	if (jll(l, "memory_reservation_bytes") > 0)
		sessopt_fmt_size(res, sizeof(res), jll(l,
		    "memory_reservation_bytes"));
	else
		snprintf(res, sizeof(res), "none");
	if (jll(l, "disk_bytes") > 0)
		sessopt_fmt_size(disk, sizeof(disk), jll(l, "disk_bytes"));
	else
		snprintf(disk, sizeof(disk), "no limit");
	sessopt_fmt_duration(life, sizeof(life), jll(l, "lifetime_ms"));
	sessopt_fmt_duration(idle, sizeof(idle), jll(l, "idle_timeout_ms"));
	ign(buf_addf(out, "cpu %g cores, memory %s (%s reserved), disk %s, "
	    "lifetime %s, idle timeout %s", cJSON_IsNumber(cpu) ?
	    cpu->valuedouble : 0.0, mem, res, disk, life, idle));
}

/* "2h 5m", "3m 20s", "45s": a span for a model to read. */
static void
span_text(char *out, size_t len, long long ms)
{
	long long sec = ms / 1000;

	if (sec >= 3600)
		snprintf(out, len, "%lldh %lldm", sec / 3600, sec % 3600 / 60);
	else if (sec >= 60)
		snprintf(out, len, "%lldm %llds", sec / 60, sec % 60);
	else
		snprintf(out, len, "%llds", sec);
}

/* A JSON array of strings as "a, b" into out ("-" when empty). */
static void
list_text(const cJSON *a, struct buf *out)
{
	const cJSON *it;
	int n = 0;

	cJSON_ArrayForEach(it, a)
		if (cJSON_IsString(it))
			ign(buf_addf(out, "%s%s", n++ == 0 ? "" : ", ", it->valuestring));
	if (n == 0)
		ign(buf_addstr(out, "-"));
}

/* The credentials in force, from sess_status's JSON, one line. */
static void
creds_text(const cJSON *st, struct buf *out)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(st, "credentials"), *c;
	const char *from = toolres_str(st, "credentials_from");
	int n = 0;

	if (!cJSON_IsArray(a))
		return;
	ign(buf_addf(out, "\nCredentials the egress proxy adds (%s; the sandbox holds "
	    "no value, only stand-ins): ", from != NULL && strcmp(from, "policy") == 0 ?
	    "named by the session's policy" : "the proxy's defaults"));
	cJSON_ArrayForEach(c, a) {
		const char *nm = toolres_str(c, "name"), *fm = toolres_str(c, "form");

		ign(buf_addf(out, "%s%s (%s; hosts ", n++ == 0 ? "" : "; ",
		    nm != NULL ? nm : "?", fm != NULL ? fm : "?"));
		list_text(cJSON_GetObjectItemCaseSensitive(c, "hosts"), out);
		ign(buf_addstr(out, "; env "));
		list_text(cJSON_GetObjectItemCaseSensitive(c, "env"), out);
		ign(buf_addstr(out, "; files "));
		list_text(cJSON_GetObjectItemCaseSensitive(c, "files"), out);
		ign(buf_addstr(out, ")"));
	}
	ign(buf_addstr(out, n == 0 ? "none." : "."));
}

/* sandbox_status's text, from sess_status's JSON. */
static void
status_text(const cJSON *st, struct buf *out)
{
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(st, "usage"), *j;
	const char *state = toolres_str((cJSON *)st, "state");
	char a[48], b[48];
	int n;

	if (state != NULL && strcmp(state, "none") == 0) {
		ign(buf_addstr(out, "This session has no sandbox yet: the next "
		    "tool call creates a default one (create_sandbox picks "
		    "another). Limits a default sandbox gets: "));
		toolres_limits_text(st, out);
		ign(buf_addstr(out, ".\n"));
	} else {
		ign(buf_addf(out, "Sandbox %s (image %s) is %s", toolres_str((cJSON *)st,
		    "sandbox_id"), toolres_str((cJSON *)st, "image"), state ? state : "?"));
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(st, "uptime_ms"))) {
			span_text(a, sizeof(a), jll(st, "uptime_ms"));
			span_text(b, sizeof(b), jll(st, "lifetime_left_ms"));
			ign(buf_addf(out, ", up %s; %s left of its lifetime", a, b));
			if (state != NULL && strcmp(state, "frozen") == 0) {
				span_text(a, sizeof(a), jll(st, "frozen_ms"));
				ign(buf_addf(out, "; frozen for %s because it was "
				    "idle: its processes are kept as they were and "
				    "the next command thaws them", a));
			} else {
				span_text(a, sizeof(a), jll(st, "idle_left_ms"));
				ign(buf_addf(out, ", %s until the idle limit "
				    "freezes it", a));
			}
		}
		ign(buf_addf(out, ". Root: %s, writable root: %s.\nLimits: ",
		    jtrue((cJSON *)st, "run_as_root") ? "yes" : "no",
		    jtrue((cJSON *)st, "writable_root") ? "yes" : "no"));
		toolres_limits_text(st, out);
		ign(buf_addstr(out, ".\nIn use: memory "));
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(u, "memory_bytes"))) {
			sessopt_fmt_size(a, sizeof(a), jll(u, "memory_bytes"));
			ign(buf_addstr(out, a));
		} else
			ign(buf_addstr(out, "unknown"));
		ign(buf_addstr(out, ", disk "));
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(u, "disk_bytes"))) {
			sessopt_fmt_size(a, sizeof(a), jll(u, "disk_bytes"));
			ign(buf_addf(out, "%s%s", jtrue((cJSON *)u, "disk_partial") ?
			    "at least " : "", a));
		} else
			ign(buf_addstr(out, "unknown"));
		ign(buf_addf(out, ".\nShell: %s. Running background jobs: %lld",
		    jtrue((cJSON *)st, "busy") ? "a command is running" : "idle",
		    jll(st, "running_jobs")));
		n = 0;
		cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(st, "jobs")) {
			ign(buf_addf(out, "%s %s (%s)", n++ == 0 ? ":" : ";",
			    toolres_str((cJSON *)j, "id"), toolres_str((cJSON *)j, "command")));
		}
		ign(buf_addstr(out, ".\n"));
	}
	ign(buf_addf(out, "Works for org \"%s\", user \"%s\" at the egress proxy "
	    "(session %s).", toolres_str((cJSON *)st, "org"), toolres_str((cJSON *)st, "user"),
	    toolres_str((cJSON *)st, "id")));
	creds_text(st, out);
}

/* sandbox_status's result from sess_status's JSON st (taken). */
void
toolres_status(struct tool_call *tc, cJSON *st)
{
	struct buf out;

	buf_init(&out, 64 * 1024);
	status_text(st, &out);
	toolres_set_buf(tc, &out, 0);
	add_structured(tc, st);
	buf_free(&out);
}

/* ---- the file tools ---- */

char *
toolres_b64_encode(const unsigned char *p, size_t n)
{
	char *out = xmalloc(B64_ENC_LEN(n) + 1);

	out[b64_encode(p, n, out)] = '\0';
	return out;
}

int
toolres_b64_decode(const char *s, struct buf *out, char *err, size_t errlen)
{
	size_t n = strlen(s), at;
	const char *why;
	unsigned char *tmp;
	long k;

	out->len = 0;
	err[0] = '\0';
	if (n / 4 * 3 > out->max + 2)	/* surely over the caller's cap */
		return -1;
	tmp = xmalloc(n / 4 * 3 + 2);
	if ((k = b64_decode(s, n, tmp, 0, &why, &at)) < 0) {
		if (at == n)
			snprintf(err, errlen, "%s (%zu characters)", why, n);
		else
			snprintf(err, errlen, "character %zu: %s", at, why);
		free(tmp);
		return -1;
	}
	if (buf_add(out, tmp, (size_t)k) == -1) {
		free(tmp);
		return -1;
	}
	free(tmp);
	return 0;
}

/*
 * Scans p[0..n) as UTF-8: 0 valid; 1 an invalid byte at *at (or a NUL
 * byte: *nul set); 2 valid but for an incomplete character starting at
 * *at that runs past the end.
 */
static int
utf8_scan(const unsigned char *p, size_t n, size_t *at, int *nul)
{
	size_t i = 0, k, len;
	unsigned cp, min;

	*nul = 0;
	while (i < n) {
		unsigned char c = p[i];
		if (c == 0) {
			*at = i;
			*nul = 1;
			return 1;
		}
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			len = 2; cp = c & 0x1f; min = 0x80;
		} else if (c >= 0xe0 && c <= 0xef) {
			len = 3; cp = c & 0x0f; min = 0x800;
		} else if (c >= 0xf0 && c <= 0xf4) {
			len = 4; cp = c & 0x07; min = 0x10000;
		} else {
			*at = i;
			return 1;
		}
		for (k = 1; k < len; k++) {
			if (i + k >= n) {
				/* the prefix so far must be one a character can
				 * start with (checked on the bits present) */
				*at = i;
				return 2;
			}
			if ((p[i + k] & 0xc0) != 0x80) {
				*at = i;
				return 1;
			}
			cp = cp << 6 | (p[i + k] & 0x3f);
			if (k == 1 && ((len == 3 && cp < (0x800 >> 6)) ||
			    (len == 4 && (cp < (0x10000 >> 12) || cp > (0x10ffff >> 12))) ||
			    (len == 3 && cp >= (0xd800 >> 6) && cp <= (0xdfff >> 6)))) {
				*at = i;
				return 1;
			}
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
			*at = i;
			return 1;
		}
		i += len;
	}
	return 0;
}

int
toolres_file_from_entry(struct tr_file *f, const cJSON *e)
{
	const char *type = toolres_str(e, "type"), *path = toolres_str(e, "path");
	const char *ver = toolres_str(e, "version"), *mode = toolres_str(e, "mode");
	size_t i;

	memset(f, 0, sizeof(*f));
	if (type == NULL || strcmp(type, "file") != 0 || path == NULL ||
	    path[0] != '/' || strlen(path) >= sizeof(f->path) ||
	    !jsonu_utf8_valid(path, strlen(path)))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->size = jcount(e, "size", 0);
	f->mtime_ms = jcount(e, "mtime_ms", 0);
	if (ver != NULL && strlen(ver) == 16) {
		for (i = 0; i < 16; i++)
			if (!((ver[i] >= '0' && ver[i] <= '9') ||
			    (ver[i] >= 'a' && ver[i] <= 'f')))
				break;
		if (i == 16)
			memcpy(f->version, ver, 17);
	}
	if (mode != NULL && strlen(mode) <= 5 && strspn(mode, "01234567") ==
	    strlen(mode))
		snprintf(f->mode, sizeof(f->mode), "%s", mode);
	return 0;
}

void
toolres_read_file(struct tool_call *tc, const struct tr_file *f,
    const char *enc, const char *data, size_t n, long long off, long long max)
{
	int text = strcmp(enc, "text") == 0, eof, nul, r;
	size_t at = 0;
	char *content;
	struct buf out;
	cJSON *st;

	eof = off + (long long)n >= f->size || (long long)n < max;
	if (text && (r = utf8_scan((const unsigned char *)data, n, &at,
	    &nul)) != 0) {
		if (r == 2 && !eof && at > 0)
			n = at;		/* the rest of that character comes next */
		else {
			buf_init(&out, 8192);
			if (nul)
				ign(buf_addf(&out, "read_file: %s holds a NUL byte at "
				    "offset %lld, so it is not text: read it with "
				    "encoding \"base64\"", f->path, off + (long long)at));
			else
				ign(buf_addf(&out, "read_file: %s is not UTF-8 text at "
				    "offset %lld (binary data%s): read it with encoding "
				    "\"base64\"", f->path, off + (long long)at, at == 0 &&
				    off > 0 ? ", or an offset inside a character" :
				    r == 2 ? ", or a character cut by max_bytes" : ""));
			toolres_set_buf(tc, &out, 1);
			buf_free(&out);
			return;
		}
	}
	if (text) {
		content = xmalloc(n + 1);
		memcpy(content, data, n);
		content[n] = '\0';
	} else
		content = toolres_b64_encode((const unsigned char *)data, n);
	buf_init(&out, AGENT_RESP_MAX);
	if (!text)
		ign(buf_addf(&out, "base64 of bytes %lld-%lld of %s:\n", off,
		    off + (long long)n, f->path));
	ign(buf_addstr(&out, content));
	if (out.len > 0 && out.p[out.len - 1] != '\n')
		ign(buf_addstr(&out, "\n"));
	ign(buf_addf(&out, "[%s: %zu bytes from offset %lld of %lld; version %s, "
	    "mode %s; %s", f->path, n, off, f->size, f->version[0] ?
	    f->version : "unknown", f->mode[0] ? f->mode : "unknown", eof ?
	    "eof: the rest of the file is read]" : ""));
	if (!eof)
		ign(buf_addf(&out, "more follows: read_file with offset %lld]",
		    off + (long long)n));
	toolres_set_buf(tc, &out, 0);
	buf_free(&out);
	st = cJSON_CreateObject();
	cJSON_AddStringToObject(st, "path", f->path);
	cJSON_AddStringToObject(st, "encoding", text ? "text" : "base64");
	cJSON_AddStringToObject(st, "content", content);
	cJSON_AddNumberToObject(st, "offset", (double)off);
	cJSON_AddNumberToObject(st, "bytes", (double)n);
	cJSON_AddNumberToObject(st, "size", (double)f->size);
	cJSON_AddNumberToObject(st, "next_offset", (double)(off + (long long)n));
	cJSON_AddBoolToObject(st, "eof", eof);
	cJSON_AddStringToObject(st, "version", f->version);
	cJSON_AddStringToObject(st, "mode", f->mode);
	cJSON_AddNumberToObject(st, "mtime_ms", (double)f->mtime_ms);
	add_structured(tc, st);
	free(content);
}

/* A version stamp of the agent's reply, or "" (16 lowercase hex digits). */
static const char *
jversion(const cJSON *j, const char *k)
{
	const char *v = toolres_str(j, k);
	size_t i;

	if (v == NULL || strlen(v) != 16)
		return "";
	for (i = 0; i < 16; i++)
		if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
			return "";
	return v;
}

void
toolres_write_file(struct tool_call *tc, const char *path, int append,
    const cJSON *j)
{
	long long bytes = jcount(j, "bytes", 0), size = jcount(j, "size", 0);
	int created = jtrue(j, "created");
	const char *ver = jversion(j, "version");
	struct buf out;
	cJSON *st;

	buf_init(&out, 8192);
	ign(buf_addf(&out, "%s %s: %lld bytes %s, the file now has %lld bytes "
	    "(version %s). The write is atomic: readers see the old file or the "
	    "new one, never a part.", created ? "Created" : append ? "Appended to" :
	    "Replaced", path, bytes, append ? "appended" : "written", size,
	    ver[0] ? ver : "unknown"));
	toolres_set_buf(tc, &out, 0);
	buf_free(&out);
	st = cJSON_CreateObject();
	cJSON_AddStringToObject(st, "path", path);
	cJSON_AddNumberToObject(st, "bytes", (double)bytes);
	cJSON_AddNumberToObject(st, "size", (double)size);
	cJSON_AddStringToObject(st, "version", ver);
	cJSON_AddBoolToObject(st, "created", created);
	cJSON_AddBoolToObject(st, "append", append);
	add_structured(tc, st);
}

/* An entry's type as list_files's outputSchema has it. */
static const char *
entry_type(const cJSON *e)
{
	static const char *const types[] = { "file", "dir", "symlink", "other" };
	const char *t = toolres_str(e, "type");
	size_t i;

	for (i = 0; t != NULL && i < NELEM(types); i++)
		if (strcmp(t, types[i]) == 0)
			return types[i];
	return "other";
}

void
toolres_list_files(struct tool_call *tc, const cJSON *j)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "entries"), *e;
	int trunc = jtrue(j, "truncated");
	char *dir = jtext(j, "path"), *p, *name, *mode, *tgt;
	const char *type, *ver;
	struct buf out;
	cJSON *st, *ents, *o;
	long long n = 0, size;

	st = cJSON_CreateObject();
	cJSON_AddStringToObject(st, "path", dir);
	ents = cJSON_AddArrayToObject(st, "entries");
	buf_init(&out, AGENT_RESP_MAX);
	if (!cJSON_IsArray(arr))
		arr = NULL;
	cJSON_ArrayForEach(e, arr) {
		if (!cJSON_IsObject(e))
			continue;
		p = jtext(e, "path");
		name = jtext(e, "name");
		mode = jtext(e, "mode");
		type = entry_type(e);
		size = jcount(e, "size", 0);
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", p);
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddStringToObject(o, "type", type);
		cJSON_AddNumberToObject(o, "size", (double)size);
		cJSON_AddNumberToObject(o, "mtime_ms", (double)jcount(e,
		    "mtime_ms", 0));
		cJSON_AddStringToObject(o, "mode", mode);
		ign(buf_addf(&out, "%-7s %12lld %s %s", type, size, mode, p));
		if (strcmp(type, "file") == 0 && (ver = jversion(e, "version"))[0])
			cJSON_AddStringToObject(o, "version", ver);
		if (strcmp(type, "symlink") == 0 && toolres_str(e, "target") != NULL) {
			tgt = jtext(e, "target");
			cJSON_AddStringToObject(o, "target", tgt);
			ign(buf_addf(&out, " -> %s", tgt));
			free(tgt);
		}
		ign(buf_addstr(&out, "\n"));
		cJSON_AddItemToArray(ents, o);
		free(p);
		free(name);
		free(mode);
		n++;
	}
	cJSON_AddBoolToObject(st, "truncated", trunc);
	cJSON_AddNumberToObject(st, "count", (double)n);
	ign(buf_addf(&out, "[%s: %lld entries (type, size, mode, path)%s]", dir, n,
	    trunc ? "; truncated at max_entries: list a subdirectory, or pass a "
	    "larger max_entries" : ""));
	toolres_set_buf(tc, &out, 0);
	buf_free(&out);
	add_structured(tc, st);
	free(dir);
}

void
toolres_delete_file(struct tool_call *tc, const char *path, const cJSON *j)
{
	long long n = jcount(j, "deleted", 0);
	struct buf out;
	cJSON *st;

	buf_init(&out, 8192);
	ign(buf_addf(&out, "Deleted %s (%lld entr%s removed).", path, n,
	    n == 1 ? "y" : "ies"));
	toolres_set_buf(tc, &out, 0);
	buf_free(&out);
	st = cJSON_CreateObject();
	cJSON_AddStringToObject(st, "path", path);
	cJSON_AddNumberToObject(st, "deleted", (double)n);
	add_structured(tc, st);
}

char *
toolres_live_text(const cJSON *j)
{
	char *tail, *p;
	long long bytes;
	struct buf out;
	size_t n, len;
	int lines;

	if (!jtrue(j, "running"))
		return NULL;
	bytes = jcount(j, "bytes", 0);
	tail = jtext(j, "tail");
	n = strlen(tail);
	/* the last TR_LIVE_BYTES bytes, starting at a character */
	p = tail + (n > TR_LIVE_BYTES ? n - TR_LIVE_BYTES : 0);
	while (*p != '\0' && ((unsigned char)*p & 0xc0) == 0x80)
		p++;
	/* the last TR_LIVE_LINES lines (a trailing newline ends the last) */
	len = strlen(p);
	for (lines = 0, n = len; n > 0; n--)
		if (p[n - 1] == '\n' && n < len && ++lines == TR_LIVE_LINES)
			break;
	p += n;
	buf_init(&out, 8192);
	if (bytes == 0 || *p == '\0')
		ign(buf_addstr(&out, "no output yet"));
	else
		ign(buf_addf(&out, "%lld output bytes; latest:\n%s", bytes, p));
	free(tail);
	return out.p != NULL ? out.p : xstrdup("");
}
