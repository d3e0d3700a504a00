/*
 * cmds.c: session, app, policy and home commands (cmds.h). Each builds
 * one request, sends it with api_json and hands the reply to a printer:
 * --json prints the API's JSON compact on one line (what scripts parse),
 * else a short human form. A non-2xx reply is the API's message on one
 * line and exit status 1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cmds.h"
#include "xmalloc.h"

#define CMDS_POLICY_MAX	(64 * 1024)	/* a policy file (the API takes 8 KiB) */

typedef void (*printer)(const cJSON *);

/* One call and its output; returns the exit status. */
static int
call(struct api *a, const char *method, const char *path, const cJSON *body,
    printer human)
{
	cJSON *r = NULL;
	int rc;

	if ((rc = api_call(a, method, path, body, &r)) != 0)
		return rc;
	if (a->json || human == NULL)
		api_print_json(r, a->json);
	else
		human(r);
	cJSON_Delete(r);
	return 0;
}

static const char *
str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "-";
}

static const char *
ago(const cJSON *o, const char *k, char *b, size_t n)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	double ms;

	if (!cJSON_IsNumber(v) || v->valuedouble <= 0)
		return "-";
	ms = (double)time(NULL) * 1000 - v->valuedouble;
	if (ms < 0)
		ms = 0;
	if (ms < 120000)
		snprintf(b, n, "%.0fs", ms / 1000);
	else if (ms < 7200000)
		snprintf(b, n, "%.0fm", ms / 60000);
	else
		snprintf(b, n, "%.0fh", ms / 3600000);
	return b;
}

/* ---- sessions ---- */

static void
print_sessions(const cJSON *r)
{
	const cJSON *s;
	char b[32];

	printf("%-24s %-12s %-20s %-12s %-12s %s\n", "ID", "STATE", "SANDBOX",
	    "IMAGE", "USER", "CREATED");
	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(r, "sessions")) {
		printf("%-24s %-12s %-20s %-12s %-12s %s\n", str(s, "id"),
		    str(s, "state"), str(s, "sandbox_id"), str(s, "image"),
		    *str(s, "user") != '\0' ? str(s, "user") : "-",
		    ago(s, "created_ms", b, sizeof(b)));
	}
}

int
cmds_list(struct api *a, int argc, char **argv)
{
	static const struct option o[] = {
		{ "org", required_argument, NULL, 'o' },
		{ "user", required_argument, NULL, 'u' },
		{ "state", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	struct buf q;
	char *e, *p;
	int ch, rc, bad = 0;

	buf_init(&q, 4096);
	bad |= buf_addstr(&q, "/v1/sessions");
	while ((ch = getopt_long(argc, argv, "", o, NULL)) != -1) {
		if (ch == '?') {
			buf_free(&q);
			return API_USAGE;
		}
		e = api_path_enc(optarg);
		bad |= buf_addf(&q, "%c%s=%s", q.len == 12 ? '?' : '&',
		    ch == 'o' ? "org" : ch == 'u' ? "user" : "state", e);
		free(e);
	}
	if (optind != argc || bad) {
		buf_free(&q);
		return API_USAGE;
	}
	p = xstrndup(q.p, q.len);
	rc = call(a, "GET", p, NULL, print_sessions);
	free(p);
	buf_free(&q);
	return rc;
}

static void
print_session(const cJSON *r)
{
	char b[32];
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "policy");

	printf("%s: %s, sandbox %s, image %s, created %s ago\n", str(r, "id"),
	    str(r, "state"), str(r, "sandbox_id"), str(r, "image"),
	    ago(r, "created_ms", b, sizeof(b)));
	if (*str(r, "user") != '\0' && strcmp(str(r, "user"), "-") != 0)
		printf("user: %s\n", str(r, "user"));
	if (*str(r, "org") != '\0' && strcmp(str(r, "org"), "-") != 0)
		printf("org: %s\n", str(r, "org"));
	printf("policy: %s\n", p != NULL ? "set (orch policy shows it)" : "none");
	api_print_json(r, 0);
}

/* Takes one ID argument, no options: the path for it, or NULL. */
static char *
one_id(int argc, char **argv, const char *rest)
{
	if (argc != 2 || argv[1][0] == '-')
		return NULL;
	return api_spath(argv[1], rest);
}

int
cmds_show(struct api *a, int argc, char **argv)
{
	char *p;
	int rc;

	if ((p = one_id(argc, argv, NULL)) == NULL)
		return API_USAGE;
	rc = call(a, "GET", p, NULL, print_session);
	free(p);
	return rc;
}

static void
print_brief(const cJSON *r)
{
	printf("%s: %s (sandbox %s)\n", str(r, "id"), str(r, "state"),
	    str(r, "sandbox_id"));
}

/* OPTION=VALUE: VALUE as JSON when it is (true, 2, 0.5), else a string. */
static int
add_opt(cJSON *o, const char *kv)
{
	const char *eq = strchr(kv, '=');
	cJSON *v;
	char *k;

	if (eq == NULL || eq == kv)
		return -1;
	k = xstrndup(kv, (size_t)(eq - kv));
	if ((v = cJSON_Parse(eq + 1)) == NULL || cJSON_IsObject(v) ||
	    cJSON_IsArray(v)) {
		cJSON_Delete(v);
		v = cJSON_CreateString(eq + 1);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(o, k);
	cJSON_AddItemToObject(o, k, v);
	free(k);
	return 0;
}

char *
cmds_slurp(const char *path, size_t max, size_t *lenp, int *toobig,
    char *err, size_t errlen)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	struct buf b;
	char chunk[65536], *out = NULL;
	size_t n;

	if (toobig != NULL)
		*toobig = 0;
	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	buf_init(&b, max + 1);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (buf_add(&b, chunk, n) == -1) {
			snprintf(err, errlen, "%s: longer than %zu bytes", path, max);
			if (toobig != NULL)
				*toobig = 1;
			goto out;
		}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (buf_add(&b, "", 1) == -1) {
		snprintf(err, errlen, "%s: longer than %zu bytes", path, max);
		goto out;
	}
	out = buf_steal(&b, &n);
	*lenp = n - 1;
out:
	buf_free(&b);
	if (f != stdin)
		fclose(f);
	return out;
}

/* The JSON of a policy file (or "-"), or NULL with err. */
static cJSON *
policy_file(const char *path, char *err, size_t errlen)
{
	char *s;
	size_t n;
	cJSON *j;

	if ((s = cmds_slurp(path, CMDS_POLICY_MAX, &n, NULL, err, errlen)) == NULL)
		return NULL;
	if ((j = cJSON_ParseWithLength(s, n)) == NULL || !cJSON_IsObject(j)) {
		snprintf(err, errlen, "%s: not a JSON object", path);
		cJSON_Delete(j);
		j = NULL;
	}
	free(s);
	return j;
}

int
cmds_create(struct api *a, int argc, char **argv)
{
	static const struct option o[] = {
		{ "org", required_argument, NULL, 'o' },
		{ "user", required_argument, NULL, 'u' },
		{ "image", required_argument, NULL, 'i' },
		{ "policy", required_argument, NULL, 'p' },
		{ "set", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	cJSON *b = cJSON_CreateObject(), *pol;
	char err[1024];
	int ch, rc = API_USAGE;

	while ((ch = getopt_long(argc, argv, "", o, NULL)) != -1) {
		switch (ch) {
		case 'o': cJSON_AddStringToObject(b, "org", optarg); break;
		case 'u': cJSON_AddStringToObject(b, "user", optarg); break;
		case 'i': cJSON_AddStringToObject(b, "image", optarg); break;
		case 'p':
			if ((pol = policy_file(optarg, err, sizeof(err))) == NULL) {
				rc = api_fail(a, "bad_policy", err);
				goto out;
			}
			cJSON_AddItemToObject(b, "policy", pol);
			break;
		case 's':
			if (add_opt(b, optarg) == 0)
				break;
			/* FALLTHROUGH */
		default:
			goto out;
		}
	}
	if (optind != argc - 1)
		goto out;
	cJSON_AddStringToObject(b, "id", argv[optind]);
	rc = call(a, "POST", "/v1/sessions", b, print_brief);
out:
	cJSON_Delete(b);
	return rc;
}

static int
post_op(struct api *a, int argc, char **argv, const char *op)
{
	char *p;
	int rc;

	if ((p = one_id(argc, argv, op)) == NULL)
		return API_USAGE;
	rc = call(a, "POST", p, NULL, print_brief);
	free(p);
	return rc;
}

int
cmds_stop(struct api *a, int argc, char **argv)
{
	return post_op(a, argc, argv, "/stop");
}

int
cmds_start(struct api *a, int argc, char **argv)
{
	return post_op(a, argc, argv, "/start");
}

static void
print_deleted(const cJSON *r UNUSED)
{
	printf("deleted\n");
}

int
cmds_delete(struct api *a, int argc, char **argv)
{
	char *p;
	int rc;

	if ((p = one_id(argc, argv, NULL)) == NULL)
		return API_USAGE;
	rc = call(a, "DELETE", p, NULL, print_deleted);
	free(p);
	return rc;
}

/* ---- apps ---- */

static void
print_apps(const cJSON *r)
{
	const cJSON *x;

	printf("%-20s %-6s %s\n", "NAME", "PORT", "URL");
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(r, "apps")) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(x, "port");

		printf("%-20s %-6d %s\n", str(x, "name"), cJSON_IsNumber(p) ?
		    p->valueint : 0, str(x, "url"));
	}
}

int
cmds_apps(struct api *a, int argc, char **argv)
{
	char *p;
	int rc;

	if ((p = one_id(argc, argv, "/apps")) == NULL)
		return API_USAGE;
	rc = call(a, "GET", p, NULL, print_apps);
	free(p);
	return rc;
}

static void
print_exposed(const cJSON *r)
{
	printf("url:   %s\ntoken: %s\nopen:  %s?token=%s\n", str(r, "url"),
	    str(r, "token"), str(r, "url"), str(r, "token"));
	if (strcmp(str(r, "note"), "-") != 0)
		printf("note:  %s\n", str(r, "note"));
	fprintf(stderr, "orch: the token is shown this once; expose again for "
	    "a new one (the old one stops working)\n");
}

int
cmds_expose(struct api *a, int argc, char **argv)
{
	static const struct option o[] = {
		{ "name", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 }
	};
	const char *name = NULL;
	char *p, *end;
	cJSON *b;
	long port;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "", o, NULL)) != -1) {
		if (ch != 'n')
			return API_USAGE;
		name = optarg;
	}
	if (optind != argc - 2)
		return API_USAGE;
	port = strtol(argv[optind + 1], &end, 10);
	if (*end != '\0' || port < 1 || port > 65535) {
		fprintf(stderr, "orch: PORT is 1 to 65535\n");
		return API_USAGE;
	}
	b = cJSON_CreateObject();
	cJSON_AddNumberToObject(b, "port", (double)port);
	if (name != NULL)
		cJSON_AddStringToObject(b, "name", name);
	p = api_spath(argv[optind], "/apps");
	rc = call(a, "POST", p, b, print_exposed);
	free(p);
	cJSON_Delete(b);
	return rc;
}

static void
print_unexposed(const cJSON *r)
{
	printf("unexposed %s\n", str(r, "unexposed"));
}

int
cmds_unexpose(struct api *a, int argc, char **argv)
{
	char *p, *n, *rest;
	int rc;

	if (argc != 3)
		return API_USAGE;
	n = api_path_enc(argv[2]);
	if (strchr(argv[2], '/') != NULL) {
		free(n);
		return api_fail(a, "bad_request", "an app name has no '/'");
	}
	xasprintf(&rest, "/apps/%s", n);
	p = api_spath(argv[1], rest);
	rc = call(a, "DELETE", p, NULL, print_unexposed);
	free(p);
	free(rest);
	free(n);
	return rc;
}

/* ---- policy ---- */

static void
print_policy(const cJSON *r)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "policy");

	if (p == NULL)
		printf("session %s has no credential policy\n", str(r, "id"));
	else
		api_print_json(p, 0);
}

int
cmds_policy(struct api *a, int argc, char **argv)
{
	cJSON *pol, *r = NULL;
	char *p, err[1400];
	int rc;

	if (argc != 2 && argc != 3)
		return API_USAGE;
	p = api_spath(argv[1], argc == 3 ? "/policy" : NULL);
	if (argc == 3) {
		if ((pol = policy_file(argv[2], err, sizeof(err))) == NULL)
			rc = api_fail(a, "bad_policy", err);
		else
			rc = call(a, "PUT", p, pol, print_policy);
		cJSON_Delete(pol);
		free(p);
		return rc;
	}
	/* show: the session's "policy" member ({"policy":null} for none) */
	rc = api_call(a, "GET", p, NULL, &r);
	free(p);
	if (rc != 0)
		return rc;
	if (a->json) {
		cJSON *o = cJSON_CreateObject(), *v;

		v = cJSON_GetObjectItemCaseSensitive(r, "policy");
		cJSON_AddItemToObject(o, "policy", v != NULL ?
		    cJSON_Duplicate(v, 1) : cJSON_CreateNull());
		api_print_json(o, 1);
		cJSON_Delete(o);
	} else
		print_policy(r);
	cJSON_Delete(r);
	return 0;
}

/* ---- homes ---- */

static void
print_home(const cJSON *r)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "exists"),
	    *sz = cJSON_GetObjectItemCaseSensitive(r, "size_bytes"),
	    *u = cJSON_GetObjectItemCaseSensitive(r, "used_bytes"),
	    *iu = cJSON_GetObjectItemCaseSensitive(r, "in_use"),
	    *ss = cJSON_GetObjectItemCaseSensitive(r, "sessions"),
	    *d = cJSON_GetObjectItemCaseSensitive(r, "deleted");

	if (cJSON_IsTrue(d)) {
		printf("deleted the home of %s\n", str(r, "user"));
		return;
	}
	if (!cJSON_IsTrue(e)) {
		printf("%s has no home\n", str(r, "user"));
		return;
	}
	printf("%s: size %.0f bytes, used %.0f bytes, %s, %d session(s)\n",
	    str(r, "user"), cJSON_IsNumber(sz) ? sz->valuedouble : 0,
	    cJSON_IsNumber(u) ? u->valuedouble : 0, cJSON_IsTrue(iu) ?
	    "in use" : "not in use", cJSON_IsNumber(ss) ? ss->valueint : 0);
}

int
cmds_home(struct api *a, int argc, char **argv)
{
	char *p, *u;
	int del = 0, rc;

	if (argc == 3 && strcmp(argv[2], "--delete") == 0)
		del = 1;
	else if (argc != 2)
		return API_USAGE;
	if (argv[1][0] == '-' || strchr(argv[1], '/') != NULL)
		return API_USAGE;
	u = api_path_enc(argv[1]);
	xasprintf(&p, "/v1/users/%s/home", u);
	rc = call(a, del ? "DELETE" : "GET", p, NULL, print_home);
	free(p);
	free(u);
	return rc;
}
