/*
 * credfiles.c: client configuration files for named credentials
 * (credfiles.h has the rules).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "b64.h"
#include "buf.h"
#include "credfiles.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

#define F_NPMRC		".npmrc"
#define F_PIP		".config/pip/pip.conf"
#define F_MAVEN		".m2/settings.xml"
#define F_DOCKER	".docker/config.json"
#define F_AWS_CREDS	".aws/credentials"
#define F_AWS_CONF	".aws/config"
#define F_CARGO_CONF	".cargo/config.toml"
#define F_CARGO_CREDS	".cargo/credentials.toml"

static const char *const paths[] = { F_NPMRC, F_PIP, F_MAVEN, F_DOCKER, F_AWS_CREDS,
    F_AWS_CONF, F_CARGO_CONF, F_CARGO_CREDS };

/* The files as they are built. */
struct files {
	struct buf	 npmrc, pip, pip_extra, maven, aws_creds, aws_conf;
	struct buf	 cargo_conf, cargo_creds;
	cJSON		*auths;		/* docker's "auths" object */
	int		 npm_default;	/* a registry= line is in */
	int		 pip_index;	/* index-url is in */
};

int
credfiles_placeholder_ok(const cJSON *s)
{
	return cJSON_IsString(s) && strlen(s->valuestring) == 32 &&
	    strncmp(s->valuestring, "PXC", 3) == 0 &&
	    strspn(s->valuestring, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") == 32;
}

int
credfiles_path_ok(const char *path)
{
	size_t i;

	for (i = 0; i < NELEM(paths); i++)
		if (strcmp(path, paths[i]) == 0)
			return 1;
	return 0;
}

/* Whether s is all of set and 1..max long. */
static int
all_of(const char *s, const char *set, size_t max)
{
	size_t n = strlen(s);

	return n > 0 && n <= max && strspn(s, set) == n;
}

#define HOSTCH	"abcdefghijklmnopqrstuvwxyz0123456789.-"
#define PATHCH	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~/+-"

/*
 * Whether u is "https://HOST[:PORT]/PATH/" as the proxy checks it at
 * declaration (creddecl.c): nothing any of the files could read as its
 * own syntax.
 */
static int
url_ok(const char *u)
{
	const char *p;
	size_t hl;
	long port = 0;

	if (strncmp(u, "https://", 8) != 0 || strlen(u) > 256)
		return 0;
	p = u + 8;
	if ((hl = strspn(p, HOSTCH)) == 0 || hl > 253)
		return 0;
	p += hl;
	if (*p == ':') {
		for (p++; *p >= '0' && *p <= '9' && port <= 65535; p++)
			port = port * 10 + (*p - '0');
		if (port < 1 || port > 65535)
			return 0;
	}
	return *p == '/' && strspn(p, PATHCH) == strlen(p) && strstr(p, "//") == NULL &&
	    p[strlen(p) - 1] == '/';
}

/* Whether u is a Basic user the proxy takes: printable ASCII (space too) but ':', at most 256. */
static int
user_ok(const char *u)
{
	size_t i, n = strlen(u);

	if (n == 0 || n > 256)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)u[i] < 0x20 || (unsigned char)u[i] > 0x7e || u[i] == ':')
			return 0;
	return 1;
}

/* u percent-encoded for a URL's userinfo (all but unreserved). */
static int
add_pct(struct buf *b, const char *u)
{
	static const char hx[] = "0123456789ABCDEF";
	int bad = 0;

	for (; *u != '\0'; u++) {
		unsigned char c = (unsigned char)*u;

		if (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~",
		    c) != NULL)
			bad |= buf_add(b, u, 1);
		else
			bad |= buf_addf(b, "%%%c%c", hx[c >> 4], hx[c & 15]);
	}
	return bad;
}

/* u with XML's five entities. */
static int
add_xml(struct buf *b, const char *u)
{
	int bad = 0;

	for (; *u != '\0'; u++)
		switch (*u) {
		case '<': bad |= buf_addstr(b, "&lt;"); break;
		case '>': bad |= buf_addstr(b, "&gt;"); break;
		case '&': bad |= buf_addstr(b, "&amp;"); break;
		case '"': bad |= buf_addstr(b, "&quot;"); break;
		case '\'': bad |= buf_addstr(b, "&apos;"); break;
		default: bad |= buf_add(b, u, 1); break;
		}
	return bad;
}

/* A string member of o, or NULL. */
static const char *
str_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* One credential c into f. 0, or -1 with why: left out. */
static int
one(struct files *f, const cJSON *c, const char **why)
{
	const cJSON *cl = cJSON_GetObjectItemCaseSensitive(c, "client");
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(c, "placeholder");
	const char *v, *user = str_of(c, "user"), *scope, *region;
	int bad = 0;

	if (!cJSON_IsObject(cl) || !credfiles_placeholder_ok(ph)) {
		*why = "client or placeholder malformed";
		return -1;
	}
	if ((v = str_of(cl, "npm")) != NULL) {
		scope = str_of(cl, "scope");
		if (!url_ok(v) || (scope != NULL && (scope[0] != '@' ||
		    !all_of(scope + 1, "abcdefghijklmnopqrstuvwxyz0123456789._-", 63)))) {
			*why = "npm URL or scope malformed";
			return -1;
		}
		if (scope != NULL)
			bad |= buf_addf(&f->npmrc, "%s:registry=%s\n", scope, v);
		else if (!f->npm_default) {
			bad |= buf_addf(&f->npmrc, "registry=%s\n", v);
			f->npm_default = 1;
		}
		bad |= buf_addf(&f->npmrc, "%s:_authToken=%s\n", v + 6, ph->valuestring);
	} else if ((v = str_of(cl, "pip")) != NULL) {
		if (!url_ok(v) || user == NULL || !user_ok(user)) {
			*why = "pip URL or user malformed";
			return -1;
		}
		/* one index-url; the others on continuation lines of one
		 * extra-index-url (pip's parser refuses a repeated key) */
		struct buf *b = f->pip_index ? &f->pip_extra : &f->pip;

		bad |= buf_addstr(b, f->pip_index ? "\n    https://" : "index-url = https://");
		bad |= add_pct(b, user);
		bad |= buf_addf(b, ":%s@%s%s", ph->valuestring, v + 8, f->pip_index ? "" : "\n");
		f->pip_index = 1;
	} else if ((v = str_of(cl, "maven")) != NULL) {
		if (!all_of(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-",
		    64) || user == NULL || !user_ok(user)) {
			*why = "maven server id or user malformed";
			return -1;
		}
		bad |= buf_addf(&f->maven, "    <server>\n      <id>%s</id>\n      <username>", v);
		bad |= add_xml(&f->maven, user);
		bad |= buf_addf(&f->maven, "</username>\n      <password>%s</password>\n"
		    "    </server>\n", ph->valuestring);
	} else if ((v = str_of(cl, "docker")) != NULL) {
		char pair[300], enc[B64_ENC_LEN(sizeof(pair)) + 1], u[300];
		int n;

		snprintf(u, sizeof(u), "https://%s/", v);
		if (strlen(v) > 260 || strchr(v, '/') != NULL || !url_ok(u) || user == NULL ||
		    !user_ok(user) || (n = snprintf(pair, sizeof(pair), "%s:%s", user,
		    ph->valuestring)) < 0 || (size_t)n >= sizeof(pair)) {
			*why = "docker registry or user malformed";
			return -1;
		}
		enc[b64_encode(pair, (size_t)n, enc)] = '\0';
		cJSON_AddStringToObject(cJSON_AddObjectToObject(f->auths, v), "auth", enc);
	} else if ((v = str_of(cl, "aws")) != NULL) {
		const cJSON *kid = cJSON_GetObjectItemCaseSensitive(c, "key_id");
		const cJSON *tok = cJSON_GetObjectItemCaseSensitive(c, "session_token");

		region = str_of(cl, "region");
		if (!all_of(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
		    64) || !credfiles_placeholder_ok(kid) || (tok != NULL &&
		    !credfiles_placeholder_ok(tok)) || (region != NULL &&
		    !all_of(region, "abcdefghijklmnopqrstuvwxyz0123456789-", 63))) {
			*why = "aws profile, key id, session token or region malformed";
			return -1;
		}
		bad |= buf_addf(&f->aws_creds, "[%s]\naws_access_key_id = %s\n"
		    "aws_secret_access_key = %s\n", v, kid->valuestring, ph->valuestring);
		if (tok != NULL)
			bad |= buf_addf(&f->aws_creds, "aws_session_token = %s\n", tok->valuestring);
		if (region != NULL)
			bad |= buf_addf(&f->aws_conf, strcmp(v, "default") == 0 ? "[%s]\n" :
			    "[profile %s]\n", v);
		if (region != NULL)
			bad |= buf_addf(&f->aws_conf, "region = %s\n", region);
	} else if ((v = str_of(cl, "cargo")) != NULL) {
		/* the registry is named as the credential (a TOML bare key);
		 * cargo asks a provider for an auth-required registry's token:
		 * cargo:token reads credentials.toml */
		const char *form = str_of(c, "form"), *field = str_of(c, "field");

		if (!url_ok(v) || c->string == NULL || !all_of(c->string,
		    "abcdefghijklmnopqrstuvwxyz0123456789_-", 63) || form == NULL ||
		    strcmp(form, "header") != 0 || field == NULL ||
		    strcasecmp(field, "authorization") != 0) {
			*why = "cargo URL, name, form or field malformed";
			return -1;
		}
		bad |= buf_addf(&f->cargo_conf, "[registries.%s]\nindex = \"sparse+%s\"\n"
		    "credential-provider = [\"cargo:token\"]\n", c->string, v);
		bad |= buf_addf(&f->cargo_creds, "[registries.%s]\ntoken = \"%s\"\n", c->string,
		    ph->valuestring);
	} else {
		*why = "client names no known file";
		return -1;
	}
	if (bad) {
		*why = "files full";
		return -1;
	}
	return 0;
}

static void
files_init(struct files *f)
{
	memset(f, 0, sizeof(*f));
	buf_init(&f->npmrc, CREDFILES_MAX / 4);
	buf_init(&f->pip, CREDFILES_MAX / 8);
	buf_init(&f->pip_extra, CREDFILES_MAX / 8);
	buf_init(&f->maven, CREDFILES_MAX / 4);
	buf_init(&f->aws_creds, CREDFILES_MAX / 8);
	buf_init(&f->aws_conf, CREDFILES_MAX / 16);
	buf_init(&f->cargo_conf, CREDFILES_MAX / 16);
	buf_init(&f->cargo_creds, CREDFILES_MAX / 16);
	f->auths = cJSON_CreateObject();
}

static void
files_free(struct files *f)
{
	cJSON_Delete(f->auths);
	f->auths = NULL;
	buf_free(&f->npmrc);
	buf_free(&f->pip);
	buf_free(&f->pip_extra);
	buf_free(&f->maven);
	buf_free(&f->aws_creds);
	buf_free(&f->aws_conf);
	buf_free(&f->cargo_conf);
	buf_free(&f->cargo_creds);
}

/* Adds the file path with b's text to o, when there is any. */
static void
put(cJSON *o, const char *path, const struct buf *b)
{
	char *s;

	if (b->len == 0)
		return;
	s = xmalloc(b->len + 1);
	memcpy(s, b->p, b->len);
	s[b->len] = '\0';
	cJSON_AddStringToObject(o, path, s);
	free(s);
}

cJSON *
credfiles_build(const char *id, const cJSON *creds)
{
	struct files f;
	const cJSON *c;
	cJSON *o = NULL, *dk;
	const char *why;
	char *s;
	int any = 0, bad = 0;

	files_init(&f);
	cJSON_ArrayForEach(c, creds) {
		if (cJSON_GetObjectItemCaseSensitive(c, "client") == NULL)
			continue;
		any = 1;
		if (one(&f, c, &why) == -1)
			log_warnx("sandbox=%s credential=%s client file left out: %s", id,
			    c->string != NULL ? c->string : "?", why);
	}
	if (!any)
		goto out;
	o = cJSON_CreateObject();
	put(o, F_NPMRC, &f.npmrc);
	if (f.pip.len > 0) {
		struct buf pc;

		buf_init(&pc, CREDFILES_MAX / 4);
		bad |= buf_addstr(&pc, "[global]\n");
		bad |= buf_add(&pc, f.pip.p, f.pip.len);
		if (f.pip_extra.len > 0) {
			bad |= buf_addstr(&pc, "extra-index-url =");
			bad |= buf_add(&pc, f.pip_extra.p, f.pip_extra.len);
			bad |= buf_addstr(&pc, "\n");
		}
		if (!bad)
			put(o, F_PIP, &pc);
		buf_free(&pc);
	}
	if (f.maven.len > 0) {
		struct buf m;

		buf_init(&m, CREDFILES_MAX / 4 + 512);
		bad |= buf_addstr(&m, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		    "<settings xmlns=\"http://maven.apache.org/SETTINGS/1.0.0\">\n  <servers>\n");
		bad |= buf_add(&m, f.maven.p, f.maven.len);
		bad |= buf_addstr(&m, "  </servers>\n</settings>\n");
		if (!bad)
			put(o, F_MAVEN, &m);
		buf_free(&m);
	}
	if (cJSON_GetArraySize(f.auths) > 0) {
		dk = cJSON_CreateObject();
		cJSON_AddItemToObject(dk, "auths", f.auths);
		f.auths = NULL;
		if ((s = cJSON_Print(dk)) != NULL) {
			struct buf d;

			buf_init(&d, CREDFILES_MAX / 4);
			if (buf_addstr(&d, s) == 0 && buf_addstr(&d, "\n") == 0)
				put(o, F_DOCKER, &d);	/* a text file: it ends in a newline */
			buf_free(&d);
		}
		free(s);
		cJSON_Delete(dk);
	}
	put(o, F_AWS_CREDS, &f.aws_creds);
	put(o, F_AWS_CONF, &f.aws_conf);
	put(o, F_CARGO_CONF, &f.cargo_conf);
	put(o, F_CARGO_CREDS, &f.cargo_creds);
out:
	files_free(&f);
	return o;
}

size_t
credfiles_paths(const cJSON *c, const char **out, size_t max)
{
	const cJSON *cl = cJSON_GetObjectItemCaseSensitive(c, "client");
	struct files f;
	const char *why;
	size_t n = 0;
	int rc;

	if (cl == NULL)
		return 0;
	files_init(&f);
	rc = one(&f, c, &why);
	files_free(&f);
	if (rc == -1)
		return 0;
	if (str_of(cl, "npm") != NULL && n < max)
		out[n++] = F_NPMRC;
	else if (str_of(cl, "pip") != NULL && n < max)
		out[n++] = F_PIP;
	else if (str_of(cl, "maven") != NULL && n < max)
		out[n++] = F_MAVEN;
	else if (str_of(cl, "docker") != NULL && n < max)
		out[n++] = F_DOCKER;
	else if (str_of(cl, "aws") != NULL) {
		if (n < max)
			out[n++] = F_AWS_CREDS;
		if (str_of(cl, "region") != NULL && n < max)
			out[n++] = F_AWS_CONF;
	} else if (str_of(cl, "cargo") != NULL) {
		if (n < max)
			out[n++] = F_CARGO_CONF;
		if (n < max)
			out[n++] = F_CARGO_CREDS;
	}
	return n;
}
