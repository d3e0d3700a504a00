/*
 * sessfiles.c: writes the client files of a session's named credentials
 * (orchestrator/lib/credfiles.h: ~/.npmrc, pip.conf, settings.xml, the
 * docker and aws files, placeholders only) into its sandbox, at every
 * attach, through the agent's file service.
 *
 * Rules:
 * - the home is RT_HOME_PATH when the session has one (home_setup set
 *   HOME there), else the HOME the sandbox's commands get, asked from the
 *   agent (/v1/exec); a home that is not a clean absolute path is refused;
 * - a file is written with PUT /v1/files/raw and mode=0600: atomic,
 *   owned by the user a command would give it (the sandbox user), never
 *   merged with what was there;
 * - only the names credfiles_build makes are written, whatever the text
 *   says; failures are logged, never fatal (the sandbox works without).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "b64.h"
#include "lib/credfiles.h"
#include "log.h"
#include "sess_int.h"
#include "util.h"
#include "xmalloc.h"

#define HOME_MAX	1024	/* a home path we take */
#define FILES_MS	10000	/* each agent call */

/* Whether h is a clean absolute path: no "." or ".." part, no "//", no control byte. */
static int
home_ok(const char *h)
{
	size_t i, n = strlen(h);

	if (n < 1 || n > HOME_MAX || h[0] != '/' || strstr(h, "//") != NULL ||
	    strstr(h, "/./") != NULL || strstr(h, "/../") != NULL ||
	    (n >= 2 && strcmp(h + n - 2, "/.") == 0) || (n >= 3 && strcmp(h + n - 3, "/..") == 0))
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)h[i] < 0x20 || h[i] == 0x7f)
			return 0;
	return 1;
}

/*
 * The HOME of s's sandbox's commands into out (one /v1/exec of printf,
 * whose ndjson reply is read here). 0, or -1.
 */
static int
home_ask(struct sess *s, char *out, size_t outlen)
{
	static const char body[] = "{\"command\":\"printf '%s' \\\"$HOME\\\"\","
	    "\"timeout_ms\":5000,\"max_output\":2048}";
	char err[256];
	struct buf resp;
	const char *p, *nl;
	unsigned char dec[HOME_MAX + 8];
	size_t at, got = 0;
	long dl;
	const char *why;
	int status = 0, rc = -1, exit_ok = 0;
	cJSON *j;

	buf_init(&resp, 64 * 1024);
	if (sm_agent_call(s, "POST", "/v1/exec", body, sizeof(body) - 1, FILES_MS, NULL,
	    &status, &resp, err, sizeof(err)) != 0 || status != 200 || resp.len == 0)
		goto out;
	if (buf_add(&resp, "", 1) != 0)
		goto out;
	for (p = resp.p; *p != '\0'; p = nl + 1) {
		const cJSON *st, *b, *ex;

		if ((nl = strchr(p, '\n')) == NULL)
			nl = p + strlen(p) - 1;
		if ((j = cJSON_ParseWithLength(p, (size_t)(nl - p + 1))) == NULL)
			goto out;
		st = cJSON_GetObjectItemCaseSensitive(j, "s");
		b = cJSON_GetObjectItemCaseSensitive(j, "b");
		ex = cJSON_GetObjectItemCaseSensitive(j, "exit");
		if (cJSON_IsString(st) && strcmp(st->valuestring, "out") == 0 &&
		    cJSON_IsString(b)) {
			if (got + strlen(b->valuestring) / 4 * 3 + 2 > sizeof(dec) ||
			    (dl = b64_decode(b->valuestring, strlen(b->valuestring), dec + got, 1,
			    &why, &at)) < 0) {
				cJSON_Delete(j);
				goto out;
			}
			got += (size_t)dl;
		}
		if (cJSON_IsNumber(ex))
			exit_ok = ex->valuedouble == 0;
		cJSON_Delete(j);
		if (nl[1] == '\0')
			break;
	}
	if (!exit_ok || got >= outlen || memchr(dec, '\0', got) != NULL)
		goto out;
	memcpy(out, dec, got);
	out[got] = '\0';
	rc = home_ok(out) ? 0 : -1;
out:
	buf_free(&resp);
	return rc;
}

void
sess_client_files_write(struct sess *s, const char *text)
{
	const struct runtime_ops *op = s->mgr->rt->ops;
	/* the session has a home (homes): RT_HOME_PATH is mounted there */
	int has_home = s->mgr->conf->homes_enabled && s->user[0] != '\0' &&
	    (op->home_prepare != NULL || op->home_attach != NULL);

	cJSON *files = NULL, *f;
	char home[HOME_MAX + 1], err[256], *path, *enc, target[3 * (HOME_MAX + 64) + 64];
	struct buf resp;
	int status, n = 0, failed = 0;

	if (text == NULL || *text == '\0')
		return;
	if ((files = cJSON_Parse(text)) == NULL || !cJSON_IsObject(files)) {
		log_warnx("session=%s sandbox=%s client files malformed; none written",
		    s->sid, s->rtid);
		goto out;
	}
	if (has_home)
		snprintf(home, sizeof(home), "%s", RT_HOME_PATH);
	else if (home_ask(s, home, sizeof(home)) == -1) {
		log_warnx("session=%s sandbox=%s client files: the sandbox's HOME could "
		    "not be read (or is not a clean absolute path); none written",
		    s->sid, s->rtid);
		goto out;
	}
	cJSON_ArrayForEach(f, files) {
		if (!cJSON_IsString(f) || !credfiles_path_ok(f->string)) {
			failed++;
			continue;
		}
		xasprintf(&path, "%s%s%s", home, strcmp(home, "/") == 0 ? "" : "/", f->string);
		enc = evhttp_uriencode(path, -1, 0);
		free(path);
		if (enc == NULL) {
			failed++;
			continue;
		}
		snprintf(target, sizeof(target), "/v1/files/raw?path=%s&mode=0600", enc);
		free(enc);
		buf_init(&resp, 64 * 1024);
		status = 0;
		if (sm_agent_call(s, "PUT", target, f->valuestring, strlen(f->valuestring),
		    FILES_MS, NULL, &status, &resp, err, sizeof(err)) != 0 || status != 200) {
			log_warnx("session=%s sandbox=%s client file %s not written: "
			    "status=%d %s", s->sid, s->rtid, f->string, status,
			    status != 0 ? "" : err);
			failed++;
		} else
			n++;
		buf_free(&resp);
	}
	log_info("session=%s sandbox=%s client files written=%d failed=%d home=%s",
	    s->sid, s->rtid, n, failed, home);
out:
	cJSON_Delete(files);
}
