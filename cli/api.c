/*
 * api.c: settings, libcurl handles, JSON calls and errors of the CLI
 * (api.h). Rules: the key never appears in an error or on stdout; a reply
 * is read into a buffer capped at API_BODY_MAX; every error is one line
 * of printable characters, the API's message when it sent one.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api.h"
#include "buf.h"
#include "xmalloc.h"

#define API_KEY_MAX	4096	/* a key line longer than this is refused */
#define API_LINE_MAX	8192	/* a config line */

/* ---- settings ---- */

static char *
trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* The first line of path, trailing white space dropped; caller frees. */
static char *
read_key_file(const char *path, char *err, size_t errlen)
{
	FILE *f;
	char line[API_KEY_MAX + 2], *k = NULL;

	if ((f = fopen(path, "r")) == NULL) {
		snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fgets(line, sizeof(line), f) == NULL || strlen(line) > API_KEY_MAX)
		snprintf(err, errlen, "key file %s: no key on its first line", path);
	else if (*trim(line) == '\0')
		snprintf(err, errlen, "key file %s: its first line is empty", path);
	else
		k = xstrdup(trim(line));
	fclose(f);
	return k;
}

/* Reads the config file; sets what a has not yet. -1 with err. */
static int
conf_file(struct api *a, const char *path, int must, char **key_file,
    char *err, size_t errlen)
{
	FILE *f;
	struct stat st;
	char line[API_LINE_MAX], *k, *v, *eq;
	int n = 0, rc = -1, had_key = a->key != NULL;

	if ((f = fopen(path, "r")) == NULL) {
		if (!must && errno == ENOENT)
			return 0;
		snprintf(err, errlen, "config %s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		n++;
		k = trim(line);
		if (*k == '\0' || *k == '#')
			continue;
		if ((eq = strchr(k, '=')) == NULL) {
			snprintf(err, errlen, "config %s:%d: not key = value", path, n);
			goto out;
		}
		*eq = '\0';
		k = trim(k);
		v = trim(eq + 1);
		if (strcmp(k, "url") == 0) {
			if (a->url == NULL)
				a->url = xstrdup(v);
		} else if (strcmp(k, "key") == 0) {
			if (a->key == NULL && *key_file == NULL)
				a->key = xstrdup(v);
		} else if (strcmp(k, "key_file") == 0) {
			if (a->key == NULL && *key_file == NULL)
				*key_file = xstrdup(v);
		} else {
			snprintf(err, errlen, "config %s:%d: unknown key %.64s "
			    "(url, key, key_file are known)", path, n, k);
			goto out;
		}
	}
	rc = 0;
	if (!had_key && a->key != NULL && fstat(fileno(f), &st) == 0 &&
	    (st.st_mode & 077))
		fprintf(stderr, "orch: warning: %s holds the key and others may "
		    "read it (chmod 600 it, or use key_file)\n", path);
out:
	fclose(f);
	return rc;
}

int
api_conf_load(struct api *a, const char *cfg, const char *url,
    const char *key, const char *key_file, char *err, size_t errlen)
{
	char *kf = NULL, *def = NULL;
	const char *e, *home;
	int must = cfg != NULL, rc = -1;

	a->url = url != NULL ? xstrdup(url) : NULL;
	a->key = key != NULL ? xstrdup(key) : NULL;
	kf = key_file != NULL ? xstrdup(key_file) : NULL;
	if (a->url == NULL && (e = getenv("ORCH_URL")) != NULL && *e != '\0')
		a->url = xstrdup(e);
	if (a->key == NULL && kf == NULL) {
		if ((e = getenv("ORCH_KEY")) != NULL && *e != '\0')
			a->key = xstrdup(e);
		else if ((e = getenv("ORCH_KEY_FILE")) != NULL && *e != '\0')
			kf = xstrdup(e);
	}
	if (cfg == NULL && (e = getenv("ORCH_CONFIG")) != NULL && *e != '\0') {
		cfg = e;
		must = 1;
	}
	if (cfg == NULL) {
		if ((e = getenv("XDG_CONFIG_HOME")) != NULL && *e == '/')
			xasprintf(&def, "%s/orch/config", e);
		else if ((home = getenv("HOME")) != NULL && *home == '/')
			xasprintf(&def, "%s/.config/orch/config", home);
		cfg = def;
	}
	if (cfg != NULL && conf_file(a, cfg, must, &kf, err, errlen) == -1)
		goto out;
	if (a->key == NULL && kf != NULL &&
	    (a->key = read_key_file(kf, err, errlen)) == NULL)
		goto out;
	if (a->url == NULL) {
		snprintf(err, errlen, "no orchestrator URL: set ORCH_URL, --url or "
		    "url = in %s", cfg != NULL ? cfg : "~/.config/orch/config");
		goto out;
	}
	if (strncmp(a->url, "http://", 7) != 0 &&
	    strncmp(a->url, "https://", 8) != 0) {
		snprintf(err, errlen, "the URL must start with http:// or https://");
		goto out;
	}
	while (strlen(a->url) > 8 && a->url[strlen(a->url) - 1] == '/')
		a->url[strlen(a->url) - 1] = '\0';
	if (a->key == NULL) {
		snprintf(err, errlen, "no key: set ORCH_KEY or ORCH_KEY_FILE, "
		    "--key-file, or key_file = in the config file");
		goto out;
	}
	if (strpbrk(a->key, "\r\n") != NULL) {
		snprintf(err, errlen, "the key holds a line break");
		goto out;
	}
	rc = 0;
out:
	free(kf);
	free(def);
	return rc;
}

void
api_conf_free(struct api *a)
{
	free(a->url); a->url = NULL;
	free(a->key); a->key = NULL;
}

/* ---- requests ---- */

/* s percent-encoded; '/' kept when slash. Caller frees. */
static char *
enc(const char *s0, int slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s0), i, o = 0;
	char *s = xmalloc(3 * n + 1);

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s0[i];

		if (isalnum(c) || strchr("-._~", c) != NULL || (slash && c == '/'))
			s[o++] = (char)c;
		else {
			s[o++] = '%';
			s[o++] = hex[c >> 4];
			s[o++] = hex[c & 15];
		}
	}
	s[o] = '\0';
	return s;
}

char *
api_path_enc(const char *path)
{
	return enc(path, 1);
}

char *
api_spath(const char *id, const char *rest)
{
	char *e = enc(id, 0), *p;

	/* a '/' in an id is encoded too: it names one session, never a route */
	xasprintf(&p, "/v1/sessions/%s%s", e, rest != NULL ? rest : "");
	free(e);
	return p;
}

CURL *
api_easy(const struct api *a, const char *method, const char *path,
    struct curl_slist **hdrs)
{
	CURL *c;
	char *url, *auth, *eb;

	if ((c = curl_easy_init()) == NULL)
		return NULL;
	eb = xcalloc(1, CURL_ERROR_SIZE);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, eb);
	curl_easy_setopt(c, CURLOPT_PRIVATE, eb);
	xasprintf(&url, "%s%s", a->url, path);
	xasprintf(&auth, "Authorization: Bearer %s", a->key);
	*hdrs = curl_slist_append(*hdrs, auth);
	free(auth);
	curl_easy_setopt(c, CURLOPT_URL, url);
	free(url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "GET") == 0)
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, a->connect_s);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	/* a path is the sandbox's to resolve ("..", confined there), not
	 * curl's to squash */
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "orch-cli/1");
	/* a stalled server: nothing for 5 min is an error (exec output may
	 * pause for long, so only a complete stall counts) */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 300L);
	return c;
}

void
api_easy_free(CURL *c)
{
	char *eb = NULL;

	if (c == NULL)
		return;
	curl_easy_getinfo(c, CURLINFO_PRIVATE, &eb);
	curl_easy_cleanup(c);
	free(eb);
}

const char *
api_strerror(CURL *c, CURLcode cc)
{
	char *eb = NULL;

	curl_easy_getinfo(c, CURLINFO_PRIVATE, &eb);
	return eb != NULL && eb[0] != '\0' ? eb : curl_easy_strerror(cc);
}

static size_t
body_cb(char *p, size_t sz, size_t nm, void *arg)
{
	struct buf *b = arg;

	if (buf_add(b, p, sz * nm) == -1)
		return 0;	/* over API_BODY_MAX: the transfer fails */
	return sz * nm;
}

int
api_json(const struct api *a, const char *method, const char *path,
    const cJSON *body, cJSON **out, char *err, size_t errlen)
{
	struct curl_slist *h = NULL;
	struct buf b;
	CURL *c;
	CURLcode cc;
	char *js = NULL, line[300];
	long st = -1;

	*out = NULL;
	buf_init(&b, (size_t)API_BODY_MAX);
	if (body != NULL)
		h = curl_slist_append(h, "Content-Type: application/json");
	if ((c = api_easy(a, method, path, &h)) == NULL) {
		snprintf(err, errlen, "libcurl could not start");
		goto out;
	}
	if (body != NULL) {
		js = cJSON_PrintUnformatted(body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, js);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)strlen(js));
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if ((cc = curl_easy_perform(c)) != CURLE_OK) {
		if (cc == CURLE_WRITE_ERROR)
			snprintf(err, errlen, "%s %s: the reply is longer than "
			    "%lld bytes", method, path, API_BODY_MAX);
		else
			snprintf(err, errlen, "%s %s: %s", method, path,
			    api_strerror(c, cc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	if (b.len > 0 && memmem(b.p, b.len, "\\u0000", 6) != NULL) {
		/* a string with a NUL in it would be cut short by cJSON: a
		 * path cut short names another file */
		snprintf(err, errlen, "%s %s: the reply holds a NUL (\\u0000) in "
		    "a string", method, path);
		st = -1;
		goto out;
	}
	if (b.len > 0 && (*out = cJSON_ParseWithLength(b.p, b.len)) == NULL) {
		if (st >= 200 && st < 300) {
			api_oneline(b.p, b.len > 80 ? 80 : b.len, line, sizeof(line));
			snprintf(err, errlen, "%s %s: HTTP %ld but the reply is not "
			    "JSON (%s)", method, path, st, line);
			st = -1;
		}
		else {
			/* an error status with a body not the API's: said so,
			 * with its start, as the API's error */
			char m[400];

			api_oneline(b.p, b.len > 120 ? 120 : b.len, line, sizeof(line));
			snprintf(m, sizeof(m), "the server's reply is not the API's "
			    "error JSON: %s", line);
			*out = cJSON_CreateObject();
			cJSON_AddStringToObject(cJSON_AddObjectToObject(*out,
			    "error"), "message", m);
		}
	}
out:
	free(js);
	buf_free(&b);
	curl_slist_free_all(h);
	api_easy_free(c);
	return (int)st;
}

/* ---- errors and output ---- */

void
api_oneline(const char *s, size_t n, char *out, size_t outlen)
{
	size_t i, o = 0;

	if (outlen == 0)
		return;
	for (i = 0; i < n && o + 5 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c >= 0x20 && c < 0x7f) || c >= 0x80)
			out[o++] = (char)c;	/* UTF-8 passes */
		else if (c == '\n' || c == '\t' || c == '\r')
			out[o++] = ' ';
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
	}
	out[o] = '\0';
}

void
api_err_of(long status, const cJSON *reply, char *code, size_t codelen,
    char *err, size_t errlen)
{
	const cJSON *e, *m, *c;
	char msg[1024];

	e = cJSON_GetObjectItemCaseSensitive(reply, "error");
	m = cJSON_GetObjectItemCaseSensitive(e, "message");
	c = cJSON_GetObjectItemCaseSensitive(e, "code");
	snprintf(code, codelen, "%s", cJSON_IsString(c) &&
	    strspn(c->valuestring, "abcdefghijklmnopqrstuvwxyz_") ==
	    strlen(c->valuestring) ? c->valuestring : "http");
	if (cJSON_IsString(m)) {
		api_oneline(m->valuestring, strlen(m->valuestring), msg, sizeof(msg));
		snprintf(err, errlen, "%s (%s, HTTP %ld)", msg, code, status);
	} else
		snprintf(err, errlen, "HTTP %ld, and the reply is not the API's "
		    "error JSON", status);
}

void
api_err_raw(long status, const char *p, size_t n, char *code, size_t codelen,
    char *err, size_t errlen)
{
	cJSON *j = n > 0 ? cJSON_ParseWithLength(p, n) : NULL;
	char line[300], m[400];

	if (j == NULL && n > 0) {
		api_oneline(p, n > 120 ? 120 : n, line, sizeof(line));
		snprintf(m, sizeof(m), "the server's reply is not the API's error "
		    "JSON: %s", line);
		j = cJSON_CreateObject();
		cJSON_AddStringToObject(cJSON_AddObjectToObject(j, "error"),
		    "message", m);
	}
	api_err_of(status, j, code, codelen, err, errlen);
	cJSON_Delete(j);
}

int
api_call(const struct api *a, const char *method, const char *path,
    const cJSON *body, cJSON **out)
{
	char err[1400], code[64];
	int st;

	st = api_json(a, method, path, body, out, err, sizeof(err));
	if (st == -1)
		return api_fail(a, "transport", err);
	if (st < 200 || st >= 300) {
		api_err_of(st, *out, code, sizeof(code), err, sizeof(err));
		cJSON_Delete(*out);
		*out = NULL;
		return api_fail(a, code, err);
	}
	if (*out == NULL)
		*out = cJSON_CreateObject();
	return 0;
}

int
api_fail(const struct api *a, const char *code, const char *err)
{
	char line[2048];

	api_oneline(err, strlen(err), line, sizeof(line));
	fprintf(stderr, "orch: %s\n", line);
	if (a != NULL && a->json) {
		cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o,
		    "error");

		cJSON_AddStringToObject(e, "code", code != NULL ? code : "error");
		cJSON_AddStringToObject(e, "message", line);
		api_print_json(o, 1);
		cJSON_Delete(o);
	}
	return API_EXIT_ERR;
}

void
api_print_json(const cJSON *j, int compact)
{
	char *s = compact ? cJSON_PrintUnformatted(j) : cJSON_Print(j);

	if (s != NULL) {
		fputs(s, stdout);
		fputc('\n', stdout);
		free(s);
	}
}
