/*
 * areq.c: a tool call's requests to its session's agent (areq.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "areq.h"
#include "lib/jsonu.h"
#include "toolres.h"
#include "tools.h"

/*
 * The request found the session's sandbox stopped before reaching it
 * (sess_agent -2): marks the tool call, whose tools_run1 then starts the
 * sandbox again (sess_enter) and runs the tool once more.
 */
static void
mark_lost(struct areq *a, const char *why)
{
	if (a->tc == NULL)
		return;
	a->tc->lost = 1;
	snprintf(a->tc->lost_why, sizeof(a->tc->lost_why), "%s", why);
}

static const struct agentc_cancel *
cancel_of(const struct areq *a)
{
	return a->tc != NULL ? &a->tc->cancel : NULL;
}



/*
 * Does one agent request; on success j holds the parsed JSON (any status).
 * On failure err says, for a model, what happened.
 */
int
areq_do(struct areq *a, const char *method, const char *path, cJSON *body,
    int timeout_ms)
{
	char *txt = NULL, terr[256];
	int rc;

	buf_init(&a->resp, AGENT_RESP_MAX);
	if (body != NULL)
		txt = cJSON_PrintUnformatted(body);
	rc = sess_agent(a->s, method, path, txt, txt ? strlen(txt) : 0, timeout_ms,
	    cancel_of(a), &a->status, &a->resp, terr, sizeof(terr));
	free(txt);
	if (rc == -2) {
		/* nothing ran: tools_run1 starts the sandbox again and retries */
		mark_lost(a, terr);
	}
	if (rc == -2 || rc == -3) {
		snprintf(a->err, sizeof(a->err), "the sandbox stopped (%s). Its "
		    "/workspace is kept: the next call starts the sandbox again "
		    "with it, with a fresh shell (variables and directory reset) "
		    "and no background jobs. %s", terr, rc == -3 ? "Whether this "
		    "call's command finished is unknown: check its effects "
		    "before running it again." : "This call did not run.");
		return -1;
	}
	if (rc != 0) {
		snprintf(a->err, sizeof(a->err), "the sandbox did not answer (%s). "
		    "It may be overloaded or the command may still hold it; retry "
		    "the call (sandbox_status shows what runs)", terr);
		return -1;
	}
	/*
	 * A NUL byte of the output comes as "\u0000", which cJSON would end
	 * the string at: it reads as U+2400 instead. Raw NUL bytes are no
	 * JSON, and cJSON would stop at them too; trailing ones are let go
	 * (the agent's file create reply counts its C string's terminator).
	 */
	while (a->resp.len > 0 && a->resp.p[a->resp.len - 1] == '\0')
		a->resp.len--;
	if (a->resp.p != NULL)
		(void)jsonu_nul_to_symbol(a->resp.p, a->resp.len);
	if ((a->resp.p != NULL && memchr(a->resp.p, '\0', a->resp.len) != NULL) ||
	    (a->j = cJSON_ParseWithLength(a->resp.p ? a->resp.p : "", a->resp.len)) == NULL ||
	    !cJSON_IsObject(a->j)) {
		snprintf(a->err, sizeof(a->err), "the sandbox's agent sent an "
		    "unreadable reply (HTTP %d); retry the call", a->status);
		return -1;
	}
	return 0;
}

void
areq_free(struct areq *a)
{
	cJSON_Delete(a->j);
	buf_free(&a->resp);
}

/* The agent's error reply as a message for the model. */
void
areq_error_text(struct areq *a, const char *what, struct buf *out)
{
	cJSON *e = cJSON_GetObjectItemCaseSensitive(a->j, "error");
	const char *code = toolres_str(e, "code"), *msg = toolres_str(e, "message");
	char *clean = msg ? jsonu_utf8_clean(msg, strlen(msg)) : NULL;

	if (a->status == 409)
		ign(buf_addf(out, "%s failed: another command is still running in "
		    "this session's shell (a concurrent call). Wait for it to finish, "
		    "or run long work with shell_async.", what));
	else
		ign(buf_addf(out, "%s failed (%s): %s", what,
		    code ? code : "error", clean ? clean : "no details"));
	/* a full disk or home (the agent's 507), for every file writer */
	if (a->status == 507)
		ign(buf_addstr(out, ". Free space (delete_file, or a shell "
		    "command) and retry; the file is unchanged."));
	free(clean);
}


/*
 * An agent request whose reply body is bytes (GET /v1/files/raw) or whose
 * request body is (PUT): like areq_do, but a 200 reply stays as it came
 * in a->resp (a->j NULL), and only an error reply is parsed (a->j, for
 * areq_error_text). 0, or -1 with a->err.
 */
int
areq_bytes(struct areq *a, const char *method, const char *path,
    const char *body, size_t len, size_t max, int timeout_ms)
{
	char terr[256];
	int rc;

	buf_init(&a->resp, max);
	rc = sess_agent(a->s, method, path, body, len, timeout_ms, cancel_of(a),
	    &a->status, &a->resp, terr, sizeof(terr));
	if (rc == -2) {
		mark_lost(a, terr);
	}
	if (rc == -2 || rc == -3) {
		snprintf(a->err, sizeof(a->err), "the sandbox stopped (%s). Its "
		    "/workspace is kept: the next call starts the sandbox again. %s",
		    terr, rc == -3 ? "Whether this call's write happened is "
		    "unknown: check the file before writing again." : "This call "
		    "did not run.");
		return -1;
	}
	if (rc != 0) {
		snprintf(a->err, sizeof(a->err), "the sandbox did not answer (%s); "
		    "retry the call", terr);
		return -1;
	}
	if (a->status != 200 && a->status != 201) {
		a->j = cJSON_ParseWithLength(a->resp.p ? a->resp.p : "", a->resp.len);
		if (!cJSON_IsObject(a->j)) {
			cJSON_Delete(a->j);
			a->j = NULL;
		}
	}
	return 0;
}
