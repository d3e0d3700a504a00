/*
 * test_proxy_cred.c: named credentials' placeholders and their swap
 * (egress-proxy/cred.c): a placeholder is the sandbox's own and the
 * credential's own, swapped only for the credential's hosts, wherever a
 * client puts it (a header, inside a Basic pair, a query), and nothing
 * else is touched; the declared set (names unique, bounded) and secrets
 * read from env: and file: with their refusals.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "../../egress-proxy/cred.h"
#include "b64.h"
#include "unit.h"

static const unsigned char key[32] = "0123456789abcdef0123456789abcdef";

static struct cred npm = {
	.name = "npm", .form = CRED_BEARER, .hosts = { "registry.npmjs.org", "*.npm.acme.dev" },
	.nhosts = 2, .value = "npm_REALTOKEN+/=",
};
static struct cred pypi = {
	.name = "pypi", .form = CRED_BASIC, .hosts = { "pypi.acme.dev" }, .nhosts = 1,
	.value = "s3cret:pass", .user = "ci",
};
static struct cred aws = {
	.name = "aws", .form = CRED_SIGV4, .hosts = { "*.amazonaws.com" }, .nhosts = 1,
	.value = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", .user = "AKIDEXAMPLE",
};

TEST(test_placeholder)
{
	char a[CRED_PH_LEN + 1], b[CRED_PH_LEN + 1];
	unsigned char k2[32];
	size_t i;

	cred_placeholder(key, "sb-1", "npm", CRED_PART_VALUE, a);
	CHECK_INT(strlen(a), CRED_PH_LEN);
	CHECK(strncmp(a, "PXC", 3) == 0);
	for (i = 0; i < CRED_PH_LEN; i++)
		CHECK((a[i] >= 'A' && a[i] <= 'Z') || (a[i] >= '2' && a[i] <= '7'));
	cred_placeholder(key, "sb-1", "npm", CRED_PART_VALUE, b);
	CHECK_STR(a, b);	/* derived, not stored: the same after a restart */
	cred_placeholder(key, "sb-2", "npm", CRED_PART_VALUE, b);
	CHECK(strcmp(a, b) != 0);	/* another sandbox's */
	cred_placeholder(key, "sb-1", "npm2", CRED_PART_VALUE, b);
	CHECK(strcmp(a, b) != 0);	/* another credential's */
	cred_placeholder(key, "sb-1", "npm", CRED_PART_ID, b);
	CHECK(strcmp(a, b) != 0);	/* another part */
	/* "sb-1" + "npm" and "sb-1n" + "pm" do not collide (NUL-separated) */
	cred_placeholder(key, "sb-1n", "pm", CRED_PART_VALUE, b);
	CHECK(strcmp(a, b) != 0);
	memcpy(k2, key, 32);
	k2[0] ^= 1;
	cred_placeholder(k2, "sb-1", "npm", CRED_PART_VALUE, b);
	CHECK(strcmp(a, b) != 0);	/* another proxy's key */
}

TEST(test_checks)
{
	CHECK_STR(cred_name_check("npm-acme_1"), "");
	CHECK(cred_name_check("")[0] != '\0');
	CHECK(cred_name_check("NPM")[0] != '\0');
	CHECK(cred_name_check("a/b")[0] != '\0');
	CHECK(cred_name_check("0123456789012345678901234567890123456789012345678901234567890123")[0] != '\0');
	CHECK_STR(cred_value_check("tok en+/="), "");
	CHECK(cred_value_check("")[0] != '\0');
	CHECK(cred_value_check("a\r\nX-Evil: 1")[0] != '\0');
	CHECK(cred_value_check("a\tb")[0] != '\0');
	CHECK(cred_value_check("a\x7f")[0] != '\0');
}

TEST(test_hosts)
{
	CHECK(cred_host_ok(&npm, "registry.npmjs.org"));
	CHECK(cred_host_ok(&npm, "a.npm.acme.dev"));
	CHECK(!cred_host_ok(&npm, "npm.acme.dev"));		/* "*." needs a label */
	CHECK(!cred_host_ok(&npm, "registry.npmjs.org.evil.com"));
	CHECK(!cred_host_ok(&npm, "evilregistry.npmjs.org"));
	CHECK(!cred_host_ok(&npm, "registry.npmjs.or"));
	CHECK(!cred_host_ok(&npm, "registry-npmjs.org"));
}

/* The swap of s (as a header value, Basic read when basic) or "=" when nothing changed. */
static const char *
swap(struct cred_swap *sw, size_t n, const char *s, int basic, int query)
{
	static char res[4096];
	struct buf b;
	int r;

	buf_init(&b, 4096);
	r = cred_swap_text(sw, n, s, strlen(s), basic, query, &b);
	if (r == -1)
		snprintf(res, sizeof(res), "ERR");
	else if (r == 0)
		snprintf(res, sizeof(res), "=");
	else
		snprintf(res, sizeof(res), "%s", b.p);
	buf_free(&b);
	return res;
}

TEST(test_swap)
{
	struct cred *all[] = { &npm, &pypi, &aws };
	struct cred_swap sw[8];
	char ph[CRED_PH_LEN + 1], other[CRED_PH_LEN + 1], pp[CRED_PH_LEN + 1], v[512], e[512];
	size_t n;

	cred_placeholder(key, "sb-1", "npm", CRED_PART_VALUE, ph);
	cred_placeholder(key, "sb-2", "npm", CRED_PART_VALUE, other);
	cred_placeholder(key, "sb-1", "pypi", CRED_PART_VALUE, pp);
	/* the credentials for a host: npm's hosts get npm's only; SigV4 is never swapped as text */
	n = cred_swaps(all, 3, key, "sb-1", "registry.npmjs.org", sw, 8);
	CHECK_INT(n, 1);
	CHECK(sw[0].c == &npm);
	CHECK_STR(sw[0].ph, ph);
	CHECK_INT(cred_swaps(all, 3, key, "sb-1", "s3.amazonaws.com", sw, 8), 0);
	CHECK_INT(cred_swaps(all, 3, key, "sb-1", "evil.example", sw, 8), 0);
	n = cred_swaps(all, 3, key, "sb-1", "registry.npmjs.org", sw, 8);
	/* a bearer header */
	snprintf(v, sizeof(v), "Bearer %s", ph);
	CHECK_STR(swap(sw, n, v, 1, 0), "Bearer npm_REALTOKEN+/=");
	CHECK_INT(sw[0].used, 1);
	/* twice, and inside other text */
	snprintf(v, sizeof(v), "x%sy%s", ph, ph);
	CHECK_STR(swap(sw, n, v, 0, 0), "xnpm_REALTOKEN+/=ynpm_REALTOKEN+/=");
	/* another sandbox's placeholder, pypi's placeholder for npm's host, a near miss: untouched */
	snprintf(v, sizeof(v), "Bearer %s", other);
	CHECK_STR(swap(sw, n, v, 1, 0), "=");
	snprintf(v, sizeof(v), "Bearer %s", pp);
	CHECK_STR(swap(sw, n, v, 1, 0), "=");
	snprintf(v, sizeof(v), "Bearer %.*s", CRED_PH_LEN - 1, ph);
	CHECK_STR(swap(sw, n, v, 1, 0), "=");
	CHECK_STR(swap(sw, n, "", 1, 0), "=");
	/* a query: the value percent-encoded */
	snprintf(v, sizeof(v), "a=1&token=%s&b", ph);
	CHECK_STR(swap(sw, n, v, 0, 1), "a=1&token=npm_REALTOKEN%2B%2F%3D&b");
	/* inside a Basic pair (npm's legacy _auth): decoded, swapped, encoded */
	{
		char pair[256];
		snprintf(pair, sizeof(pair), "user:%s", ph);
		memcpy(v, "Basic ", 6);
		v[6 + b64_encode(pair, strlen(pair), v + 6)] = '\0';
		memcpy(e, "Basic ", 6);
		e[6 + b64_encode("user:npm_REALTOKEN+/=", 21, e + 6)] = '\0';
		CHECK_STR(swap(sw, n, v, 1, 0), e);
		/* not read as Basic where the caller says it is not Authorization */
		CHECK_STR(swap(sw, n, v, 0, 0), "=");
	}
	/* Basic that is not base64: read as text */
	snprintf(v, sizeof(v), "Basic %s", ph);
	CHECK_STR(swap(sw, n, v, 1, 0), "Basic npm_REALTOKEN+/=");
	/* pypi's host: its placeholder inside a Basic pair of any user */
	n = cred_swaps(all, 3, key, "sb-1", "pypi.acme.dev", sw, 8);
	CHECK_INT(n, 1);
	{
		char pair[256];
		snprintf(pair, sizeof(pair), "anyone:%s", pp);
		memcpy(v, "Basic ", 6);
		v[6 + b64_encode(pair, strlen(pair), v + 6)] = '\0';
		memcpy(e, "Basic ", 6);
		e[6 + b64_encode("anyone:s3cret:pass", 18, e + 6)] = '\0';
		CHECK_STR(swap(sw, n, v, 1, 0), e);
	}
	/* a bound: the output may not exceed its buffer */
	{
		struct buf small;
		snprintf(v, sizeof(v), "Bearer %s", pp);
		buf_init(&small, 8);
		CHECK_INT(cred_swap_text(sw, n, v, strlen(v), 1, 0, &small), -1);
		buf_free(&small);
	}
}

static struct cred *
mk(const char *name)
{
	struct cred *c = calloc(1, sizeof(*c));

	snprintf(c->name, sizeof(c->name), "%s", name);
	c->value = strdup("v");
	c->hosts[0] = strdup("a.test");
	c->nhosts = 1;
	return c;
}

TEST(test_set)
{
	struct credset *cs = cred_set_new();
	char err[256], name[16];
	enum cred_form f;
	int i;

	CHECK_INT(cred_set_add(cs, mk("npm"), err, sizeof(err)), 0);
	CHECK_INT(cred_set_add(cs, mk("npm"), err, sizeof(err)), -1);
	CHECK(strstr(err, "declared twice") != NULL);
	CHECK(cred_set_find(cs, "npm") != NULL);
	CHECK(cred_set_find(cs, "np") == NULL);
	for (i = 1; i < CREDSET_MAX; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		CHECK_INT(cred_set_add(cs, mk(name), err, sizeof(err)), 0);
	}
	CHECK_INT(cred_set_add(cs, mk("one-more"), err, sizeof(err)), -1);
	CHECK(strstr(err, "more than") != NULL);
	cred_set_ref(cs);
	cred_set_unref(cs);
	CHECK(cred_set_find(cs, "c5") != NULL);	/* still held */
	cred_set_unref(cs);
	CHECK_INT(cred_form_parse("basic", &f), 0);
	CHECK_INT(f, CRED_BASIC);
	CHECK_INT(cred_form_parse("Basic", &f), -1);
	CHECK_STR(cred_form_name(CRED_QUERY), "query");
}

TEST(test_secret_read)
{
	char path[] = "/tmp/test_proxy_cred.XXXXXX", err[256], *v;
	int fd = mkstemp(path);

	CHECK(fd != -1);
	CHECK(write(fd, "tok-123\n", 8) == 8);
	close(fd);
	{
		char spec[64];

		snprintf(spec, sizeof(spec), "file:%s", path);
		v = cred_secret_read(spec, err, sizeof(err));
		CHECK_STR(v, "tok-123");	/* one trailing newline cut */
		free(v);
		fd = open(path, O_WRONLY | O_TRUNC);
		CHECK(write(fd, "a\001b", 3) == 3);
		close(fd);
		CHECK(cred_secret_read(spec, err, sizeof(err)) == NULL);
		CHECK(strstr(err, "control byte") != NULL && strstr(err, "a\001b") == NULL);
		fd = open(path, O_WRONLY | O_TRUNC);
		close(fd);
		CHECK(cred_secret_read(spec, err, sizeof(err)) == NULL);
		CHECK(strstr(err, "empty") != NULL);
	}
	unlink(path);
	CHECK(cred_secret_read("file:/nonexistent/x", err, sizeof(err)) == NULL);
	setenv("TEST_PROXY_CRED_V", "from-env", 1);
	v = cred_secret_read("env:TEST_PROXY_CRED_V", err, sizeof(err));
	CHECK_STR(v, "from-env");
	free(v);
	CHECK(cred_secret_read("env:TEST_PROXY_CRED_UNSET", err, sizeof(err)) == NULL);
	CHECK(strstr(err, "not set") != NULL);
	CHECK(cred_secret_read("vault:x", err, sizeof(err)) == NULL);
}

TEST(test_is_placeholder)
{
	char ph[CRED_PH_LEN + 1];

	cred_placeholder(key, "sb-1", "npm", CRED_PART_VALUE, ph);
	CHECK(cred_is_placeholder(ph, strlen(ph)));
	CHECK(!cred_is_placeholder(ph, strlen(ph) - 1));
	ph[5] = '1';	/* not base32 */
	CHECK(!cred_is_placeholder(ph, strlen(ph)));
	CHECK(!cred_is_placeholder("pxcAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", CRED_PH_LEN));
}

int
main(void)
{
	RUN(test_placeholder);
	RUN(test_checks);
	RUN(test_hosts);
	RUN(test_swap);
	RUN(test_set);
	RUN(test_secret_read);
	RUN(test_is_placeholder);
	return unit_done();
}
