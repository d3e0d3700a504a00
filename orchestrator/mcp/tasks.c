/*
 * tasks.c: the Tasks extension of MCP 2026-07-28 (tasks.h).
 *
 * A task id is "<what>~<session id>": <what> is "s-<24 hex>", the result id
 * of a shell command (the agent's GET /v1/shell/result/{id}), or
 * "j-<12 hex>@<offset>", a job and the offset its shell_wait read from.
 * Session ids cannot hold '~', so the id splits at the first one. A task
 * is answered only to a request carrying that session's X-Session-Id (and
 * its org and user): any other gets "unknown task", as an id never made
 * does. Everything a task is lives in its sandbox: the agent keeps a shell
 * result and a job for a day (TASKS_TTL_MS), across restarts of the
 * orchestrator and stops of the sandbox; a command still running when its
 * sandbox stopped is lost, and its task says so.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "areq.h"
#include "buf.h"
#include "digest.h"
#include "log.h"
#include "tasks.h"
#include "toolres.h"
#include "tools.h"
#include "util.h"
#include "xmalloc.h"

#define E_PARAMS	(-32602)
#define E_INTERNAL	(-32603)

int
tasks_method(const char *s)
{
	return strcmp(s, "tasks/get") == 0 || strcmp(s, "tasks/cancel") == 0 ||
	    strcmp(s, "tasks/update") == 0;
}

int
tasks_prepare(struct tool_call *tc)
{
	unsigned char r[12];
	const cJSON *jid, *off;
	size_t i;

	if (strcmp(tc->name, "shell") == 0 && tc->task_id[0] != '\0')
		return 1;	/* keyed: its result id is its key's */
	if (strcmp(tc->name, "shell") == 0) {
		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
			return 0;
		memcpy(tc->task_id, "s-", 2);
		for (i = 0; i < sizeof(r); i++)
			snprintf(tc->task_id + 2 + 2 * i, 3, "%02x", r[i]);
		return 1;
	}
	if (strcmp(tc->name, "shell_wait") == 0) {
		jid = cJSON_GetObjectItemCaseSensitive(tc->args, "job_id");
		off = cJSON_GetObjectItemCaseSensitive(tc->args, "offset");
		if (!cJSON_IsString(jid) || !toolres_job_id_ok(jid->valuestring) ||
		    strlen(jid->valuestring) > 24 ||
		    (off != NULL && (!cJSON_IsNumber(off) || off->valuedouble < 0 ||
		    off->valuedouble > 1e15)))
			return 0;
		snprintf(tc->task_id, sizeof(tc->task_id), "%s@%lld",
		    jid->valuestring, off != NULL ? (long long)off->valuedouble : 0);
		return 1;
	}
	return 0;
}

int
tasks_attach(struct tool_call *tc, struct sess *s, const char *command,
    long long tmo, char fp[33])
{
	struct areq a = { .s = s, .tc = tc };
	struct timespec nap = { 0, 250 * 1000000 };
	long long t0 = util_mono_ms();
	const char *state, *rfp;
	char path[128], hx[DIGEST_SHA256_HEX + 1], msg[512], esc[96];
	struct buf in;
	cJSON *ct, *t;
	int done = 1;

	buf_init(&in, strlen(command) + 32);
	if (buf_addf(&in, "%s\n%lld", command, tmo) == -1 ||
	    digest_sha256_hex(in.p, in.len, hx) == -1) {
		buf_free(&in);
		toolres_set_text(tc, "internal error: no fingerprint", 1);
		return 1;
	}
	buf_free(&in);
	memcpy(fp, hx, 32);
	fp[32] = '\0';
	log_escape(esc, sizeof(esc), tc->idem_key, strlen(tc->idem_key));
	snprintf(path, sizeof(path), "/v1/shell/result/%s", tc->task_id);
	for (;;) {
		if (areq_do(&a, "GET", path, NULL, 10000) == -1) {
			toolres_set_text(tc, a.err, 1);
			break;
		}
		if (a.status == 404) {
			done = 0;	/* never ran here: run it */
			break;
		}
		state = toolres_str(a.j, "state");
		rfp = toolres_str(a.j, "fp");
		if (a.status != 200 || state == NULL) {
			toolres_set_text(tc, "the sandbox's agent gave an unexpected "
			    "answer about this idempotency key", 1);
			break;
		}
		if (rfp != NULL && rfp[0] != '\0' && strcmp(rfp, fp) != 0) {
			snprintf(msg, sizeof(msg), "idempotency key '%s' was used "
			    "in this session for another command (or timeout): "
			    "nothing ran. Use a new key for a new command.", esc);
			toolres_set_text(tc, msg, 1);
			break;
		}
		if (strcmp(state, "lost") == 0) {
			toolres_set_text(tc, "The command of this idempotency key "
			    "started before and its outcome is unknown: its sandbox "
			    "stopped while it ran. Nothing ran now; check its "
			    "effects, then use a new key.", 1);
			break;
		}
		if (strcmp(state, "done") == 0) {
			toolres_shell(tc, cJSON_GetObjectItemCaseSensitive(a.j,
			    "result"), tmo);
			ct = cJSON_GetObjectItemCaseSensitive(tc->result, "content");
			snprintf(msg, sizeof(msg), "[idempotency key '%s': the "
			    "command ran before; this is that run's result, and it "
			    "did not run again]", esc);
			if (cJSON_IsArray(ct)) {
				t = cJSON_CreateObject();
				cJSON_AddStringToObject(t, "type", "text");
				cJSON_AddStringToObject(t, "text", msg);
				cJSON_AddItemToArray(ct, t);
			}
			log_info("session=%s shell key %s: the first run's result",
			    tc->sid, tc->task_id);
			break;
		}
		/* running: the first call's command; wait for its end */
		if (atomic_load(&tc->cancelled)) {
			toolres_set_text(tc, "cancelled", 1);
			break;
		}
		if (util_mono_ms() - t0 > tmo * 1000) {
			snprintf(msg, sizeof(msg), "idempotency key '%s': its "
			    "command (started by an earlier call) still runs after "
			    "%llds; call again with the same key to wait for it",
			    esc, tmo);
			toolres_set_text(tc, msg, 1);
			break;
		}
		areq_free(&a);
		memset(&a, 0, sizeof(a));
		a.s = s;
		a.tc = tc;
		nanosleep(&nap, NULL);
	}
	areq_free(&a);
	return done;
}

static cJSON *
task_obj(const char *tid, const char *status, long long created,
    long long updated, const char *msg)
{
	cJSON *t = cJSON_CreateObject();
	char ts[40];

	cJSON_AddStringToObject(t, "taskId", tid);
	cJSON_AddStringToObject(t, "status", status);
	if (msg != NULL)
		cJSON_AddStringToObject(t, "statusMessage", msg);
	util_iso_ms(ts, sizeof(ts), created);
	cJSON_AddStringToObject(t, "createdAt", ts);
	util_iso_ms(ts, sizeof(ts), updated);
	cJSON_AddStringToObject(t, "lastUpdatedAt", ts);
	cJSON_AddNumberToObject(t, "ttlMs", (double)TASKS_TTL_MS);
	cJSON_AddNumberToObject(t, "pollIntervalMs", TASKS_POLL_MS);
	return t;
}

cJSON *
tasks_created(const struct tool_call *tc, long long started_ms)
{
	char tid[sizeof(tc->task_id) + ID_SESSION_MAX + 2], msg[160];
	long long now = util_unix_ms();

	snprintf(tid, sizeof(tid), "%s~%s", tc->task_id, tc->sid);
	snprintf(msg, sizeof(msg), "%s still running after %lld ms: poll "
	    "tasks/get for its result", tc->name, now - started_ms);
	return task_obj(tid, "working", started_ms, now, msg);
}

static void
rpc_fail(struct tool_call *tc, int code, const char *msg)
{
	cJSON_Delete(tc->rpc_error);
	tc->rpc_error = cJSON_CreateObject();
	cJSON_AddNumberToObject(tc->rpc_error, "code", code);
	cJSON_AddStringToObject(tc->rpc_error, "message", msg);
}

static void
unknown_task(struct tool_call *tc, const char *tid)
{
	char esc[160], msg[320];

	log_escape(esc, sizeof(esc), tid, strlen(tid));
	snprintf(msg, sizeof(msg), "Unknown task: %s (a task is answered to "
	    "the X-Session-Id that made it, for a day after it ended)", esc);
	rpc_fail(tc, E_PARAMS, msg);
}

/* A completed task whose result is the one made on scratch call t. */
static cJSON *
completed(const char *tid, long long t0, long long t1, struct tool_call *t)
{
	cJSON *o = task_obj(tid, "completed", t0, t1, NULL);

	cJSON_AddItemToObject(o, "result", t->result != NULL ? t->result :
	    toolres_text("internal error: no result", 1));
	t->result = NULL;
	return o;
}

/*
 * GET path of the task's agent: 0 with a->j its answer, *state its state
 * and *t0 its start (now when not known); -1 with tc's error set (an
 * unknown task on 404). Free a either way.
 */
static int
fetch(struct tool_call *tc, struct areq *a, const char *path, const char *tid,
    const char **state, long long *t0)
{
	if (areq_do(a, "GET", path, NULL, 30000) == -1) {
		rpc_fail(tc, E_INTERNAL, a->err);
		return -1;
	}
	if (a->status == 404) {
		unknown_task(tc, tid);
		return -1;
	}
	if (a->status != 200 || (*state = toolres_str(a->j, "state")) == NULL) {
		rpc_fail(tc, E_INTERNAL, "the sandbox's agent gave an "
		    "unexpected answer about this task");
		return -1;
	}
	*t0 = (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
	    a->j, "started_ms"));
	if (*t0 <= 0)
		*t0 = util_unix_ms();
	return 0;
}

/* The shell command's output so far, for a working task's statusMessage. */
static char *
shell_live(struct sess *s)
{
	struct areq a = { .s = s };
	char *msg = NULL;

	if (areq_do(&a, "GET", "/v1/shell/output?max=2048", NULL, 5000) == 0 &&
	    a.status == 200)
		msg = toolres_live_text(a.j);
	areq_free(&a);
	return msg;
}

/* tasks/get on a shell command: running, its kept result, or lost. */
static void
get_shell(struct tool_call *tc, struct sess *s, const char *tid,
    const char *rid)
{
	struct areq a = { .s = s };
	struct tool_call t;
	const char *state;
	char path[128], *live;
	long long t0, t1;
	cJSON *o;

	snprintf(path, sizeof(path), "/v1/shell/result/%s", rid);
	if (fetch(tc, &a, path, tid, &state, &t0) == -1)
		goto out;
	if (strcmp(state, "lost") == 0) {
		/* started here and never ended: its sandbox stopped under it */
		o = task_obj(tid, "completed", t0, t0, "the command was lost "
		    "with its sandbox");
		cJSON_AddItemToObject(o, "result", toolres_text("The outcome "
		    "of this task's command is unknown: its sandbox was stopped "
		    "while the command ran, and its processes ended with it. "
		    "Check the command's effects before running it again.", 1));
		tc->result = o;
		goto out;
	}
	if (strcmp(state, "running") == 0) {
		live = shell_live(s);
		tc->result = task_obj(tid, "working", t0, util_unix_ms(),
		    live != NULL ? live : "running");
		free(live);
		goto out;
	}
	t1 = (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
	    a.j, "ended_ms"));
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a.j, "cancelled"))) {
		tc->result = task_obj(tid, "cancelled", t0, t1, "cancelled by "
		    "tasks/cancel: the command was stopped");
		goto out;
	}
	memset(&t, 0, sizeof(t));
	t.structured = tc->structured;
	toolres_shell(&t, cJSON_GetObjectItemCaseSensitive(a.j, "result"), -1);
	tc->result = completed(tid, t0, t1, &t);
out:
	areq_free(&a);
}

/* tasks/get on a job (a shell_wait's): its state, or its output from the
 * wait's offset as shell_wait gives it. */
static void
get_job(struct tool_call *tc, struct sess *s, const struct conf *c,
    const char *tid, const char *jid, long long off)
{
	struct areq a = { .s = s };
	struct tool_call t;
	const char *state;
	char path[160], msg[96];
	long long t0, now = util_unix_ms();

	snprintf(path, sizeof(path), "/v1/jobs/%s?offset=%lld&max=%lld", jid,
	    off, (long long)c->max_output);
	if (fetch(tc, &a, path, tid, &state, &t0) == -1)
		goto out;
	if (strcmp(state, "running") == 0) {
		snprintf(msg, sizeof(msg), "job %s running", jid);
		tc->result = task_obj(tid, "working", t0, now, msg);
		goto out;
	}
	if (strcmp(state, "stopped") == 0) {
		tc->result = task_obj(tid, "cancelled", t0, now, "the job was "
		    "stopped (tasks/cancel or shell_stop)");
		goto out;
	}
	memset(&t, 0, sizeof(t));
	t.structured = tc->structured;
	toolres_job_output(&t, a.j, jid, off, -1);
	tc->result = completed(tid, t0, now, &t);
out:
	areq_free(&a);
}

/* tasks/cancel: the command stopped (its task then reads cancelled). */
static void
cancel(struct tool_call *tc, struct sess *s, const char *tid, const char *what,
    const char *jid)
{
	struct areq a = { .s = s };
	char path[160];

	if (jid != NULL)
		snprintf(path, sizeof(path), "/v1/jobs/%s/stop", jid);
	else
		snprintf(path, sizeof(path), "/v1/shell/result/%s/cancel", what);
	if (areq_do(&a, "POST", path, NULL, 30000) == -1)
		rpc_fail(tc, E_INTERNAL, a.err);
	else if (a.status == 404)
		unknown_task(tc, tid);
	else if (a.status != 200)
		rpc_fail(tc, E_INTERNAL, "the sandbox's agent could not stop "
		    "this task's command");
	else {
		log_info("session=%s task %s cancelled", tc->sid, what);
		tc->result = cJSON_CreateObject();
	}
	areq_free(&a);
}

void
tasks_run(struct sessmgr *m, const struct conf *c, struct tool_call *tc)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(tc->args, "taskId");
	char what[64], jid[32], err[512];
	const char *tid, *sep, *at;
	enum sess_err e = SE_OK;
	struct sess *s;
	long long off = 0;
	size_t n;

	if (!cJSON_IsString(id)) {
		rpc_fail(tc, E_PARAMS, "Invalid params: params.taskId (a string) "
		    "is required");
		return;
	}
	tid = id->valuestring;
	/* <what>~<session>, <what> as tasks_prepare makes it */
	if ((sep = strchr(tid, '~')) == NULL || strcmp(sep + 1, tc->sid) != 0 ||
	    (n = (size_t)(sep - tid)) < 3 || n >= sizeof(what)) {
		unknown_task(tc, tid);
		return;
	}
	memcpy(what, tid, n);
	what[n] = '\0';
	jid[0] = '\0';
	if (strncmp(what, "j-", 2) == 0) {
		if ((at = strchr(what, '@')) == NULL ||
		    (size_t)(at - what) >= sizeof(jid) ||
		    (off = strtoll(at + 1, NULL, 10)) < 0) {
			unknown_task(tc, tid);
			return;
		}
		memcpy(jid, what, (size_t)(at - what));
		jid[at - what] = '\0';
		if (!toolres_job_id_ok(jid)) {
			unknown_task(tc, tid);
			return;
		}
	} else if (strncmp(what, "s-", 2) != 0 ||
	    strspn(what + 2, "0123456789abcdef") != strlen(what + 2)) {
		unknown_task(tc, tid);
		return;
	}
	/* the session must exist: a task never creates a sandbox */
	if ((s = sess_get(m, tc->sid, tc->org, tc->user, 0, &e, err,
	    sizeof(err))) == NULL) {
		if (e == SE_IDENTITY)
			rpc_fail(tc, E_PARAMS, err);
		else
			unknown_task(tc, tid);
		return;
	}
	if (sess_enter(s, &tc->starting, &e, err, sizeof(err)) == -1) {
		rpc_fail(tc, E_INTERNAL, err);
		sess_put(s);
		return;
	}
	if (strcmp(tc->name, "tasks/cancel") == 0)
		cancel(tc, s, tid, what, jid[0] != '\0' ? jid : NULL);
	else {
		if (jid[0] != '\0')
			get_job(tc, s, c, tid, jid, off);
		else
			get_shell(tc, s, tid, what);
		/* tasks/update: no task here ever asks for input; its
		 * responses are taken and ignored once the task is known */
		if (strcmp(tc->name, "tasks/update") == 0 && tc->result != NULL) {
			cJSON_Delete(tc->result);
			tc->result = cJSON_CreateObject();
		}
	}
	sess_leave(s);
	sess_put(s);
}
