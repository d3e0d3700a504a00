/*
 * test_credfiles.c: the client files of named credentials
 * (orchestrator/lib/credfiles.c): each client's file from a register
 * reply, several credentials merged into one file, and every hostile
 * reply value (a URL, scope, user, id, profile, region or placeholder
 * that could break a file's syntax) left out rather than written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/credfiles.h"
#include "attrib.h"
#include "unit.h"

#define PH	"PXCAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define KID	"PXCBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"

/* The files for the reply credentials object txt (NULL: none). */
static cJSON *
build(const char *txt)
{
	cJSON *c = cJSON_Parse(txt), *f;

	if (c == NULL) {
		fprintf(stderr, "  bad test JSON: %s\n", txt);
		return NULL;
	}
	f = credfiles_build("sbx-test", c);
	cJSON_Delete(c);
	return f;
}

static const char *
file(const cJSON *f, const char *path)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, path));
}

TEST(test_each_client)
{
	cJSON *f;

	f = build("{\"npm\":{\"form\":\"bearer\",\"placeholder\":\"" PH "\","
	    "\"client\":{\"npm\":\"https://npm.acme.test:8443/reg/\",\"scope\":\"@acme\"}},"
	    "\"npm2\":{\"form\":\"bearer\",\"placeholder\":\"" KID "\","
	    "\"client\":{\"npm\":\"https://registry.npmjs.test/\"}},"
	    "\"model\":{\"form\":\"bearer\",\"placeholder\":\"" PH "\"}}");
	CHECK(f != NULL);
	CHECK_STR(file(f, ".npmrc"), "@acme:registry=https://npm.acme.test:8443/reg/\n"
	    "//npm.acme.test:8443/reg/:_authToken=" PH "\n"
	    "registry=https://registry.npmjs.test/\n"
	    "//registry.npmjs.test/:_authToken=" KID "\n");
	CHECK_INT(cJSON_GetArraySize(f), 1);
	cJSON_Delete(f);

	f = build("{\"pypi\":{\"form\":\"basic\",\"user\":\"ci bot@acme\",\"placeholder\":\"" PH "\","
	    "\"client\":{\"pip\":\"https://pypi.acme.test/simple/\"}},"
	    "\"pypi2\":{\"form\":\"basic\",\"user\":\"u\",\"placeholder\":\"" KID "\","
	    "\"client\":{\"pip\":\"https://py2.acme.test/s/\"}},"
	    "\"pypi3\":{\"form\":\"basic\",\"user\":\"v\",\"placeholder\":\"" PH "\","
	    "\"client\":{\"pip\":\"https://py3.acme.test/\"}}}");
	/* one index-url; the rest on continuation lines (a repeated key is refused by pip) */
	CHECK_STR(file(f, ".config/pip/pip.conf"), "[global]\n"
	    "index-url = https://ci%20bot%40acme:" PH "@pypi.acme.test/simple/\n"
	    "extra-index-url =\n    https://u:" KID "@py2.acme.test/s/\n"
	    "    https://v:" PH "@py3.acme.test/\n");
	cJSON_Delete(f);

	f = build("{\"mvn\":{\"form\":\"basic\",\"user\":\"a<b&\\\"c\",\"placeholder\":\"" PH "\","
	    "\"client\":{\"maven\":\"acme-releases\"}}}");
	CHECK(file(f, ".m2/settings.xml") != NULL &&
	    strstr(file(f, ".m2/settings.xml"), "<id>acme-releases</id>\n"
	    "      <username>a&lt;b&amp;&quot;c</username>\n"
	    "      <password>" PH "</password>") != NULL);
	cJSON_Delete(f);

	f = build("{\"reg\":{\"form\":\"basic\",\"user\":\"bot\",\"placeholder\":\"" PH "\","
	    "\"client\":{\"docker\":\"registry.acme.test:5000\"}}}");
	CHECK(file(f, ".docker/config.json") != NULL);
	if (file(f, ".docker/config.json") != NULL) {
		cJSON *d = cJSON_Parse(file(f, ".docker/config.json"));
		const char *a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d,
		    "auths"), "registry.acme.test:5000"), "auth"));

		/* base64("bot:" PH) */
		CHECK_STR(a, "Ym90OlBYQ0FBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB");
		cJSON_Delete(d);
	}
	cJSON_Delete(f);

	f = build("{\"s3\":{\"form\":\"sigv4\",\"placeholder\":\"" PH "\",\"key_id\":\"" KID "\","
	    "\"client\":{\"aws\":\"default\",\"region\":\"eu-west-1\"}},"
	    "\"s3b\":{\"form\":\"sigv4\",\"placeholder\":\"" KID "\",\"key_id\":\"" PH "\","
	    "\"client\":{\"aws\":\"backup\",\"region\":\"us-east-2\"}}}");
	CHECK_STR(file(f, ".aws/credentials"), "[default]\naws_access_key_id = " KID "\n"
	    "aws_secret_access_key = " PH "\n[backup]\naws_access_key_id = " PH "\n"
	    "aws_secret_access_key = " KID "\n");
	CHECK_STR(file(f, ".aws/config"), "[default]\nregion = eu-west-1\n"
	    "[profile backup]\nregion = us-east-2\n");
	cJSON_Delete(f);

	/* a session's key: its token's placeholder too; a malformed one leaves it out */
	f = build("{\"sts\":{\"form\":\"sigv4\",\"placeholder\":\"" PH "\",\"key_id\":\"" KID "\","
	    "\"session_token\":\"" KID "\",\"client\":{\"aws\":\"default\"}}}");
	CHECK_STR(file(f, ".aws/credentials"), "[default]\naws_access_key_id = " KID "\n"
	    "aws_secret_access_key = " PH "\naws_session_token = " KID "\n");
	cJSON_Delete(f);
	f = build("{\"sts\":{\"form\":\"sigv4\",\"placeholder\":\"" PH "\",\"key_id\":\"" KID "\","
	    "\"session_token\":\"x\\n[evil]\",\"client\":{\"aws\":\"default\"}}}");
	CHECK(f != NULL && cJSON_GetArraySize(f) == 0);
	cJSON_Delete(f);

	/* cargo: a sparse registry named as the credential, its token the placeholder */
	f = build("{\"acme\":{\"form\":\"header\",\"field\":\"Authorization\","
	    "\"placeholder\":\"" PH "\",\"client\":{\"cargo\":\"https://crates.test/index/\"}}}");
	CHECK_STR(file(f, ".cargo/config.toml"), "[registries.acme]\n"
	    "index = \"sparse+https://crates.test/index/\"\n"
	    "credential-provider = [\"cargo:token\"]\n");
	CHECK_STR(file(f, ".cargo/credentials.toml"), "[registries.acme]\ntoken = \"" PH "\"\n");
	cJSON_Delete(f);
	/* a name that is no TOML bare key, another form or field: left out */
	f = build("{\"a.b\":{\"form\":\"header\",\"field\":\"Authorization\","
	    "\"placeholder\":\"" PH "\",\"client\":{\"cargo\":\"https://crates.test/\"}},"
	    "\"c\":{\"form\":\"bearer\",\"placeholder\":\"" PH "\","
	    "\"client\":{\"cargo\":\"https://crates.test/\"}},"
	    "\"d\":{\"form\":\"header\",\"field\":\"X-Token\",\"placeholder\":\"" PH "\","
	    "\"client\":{\"cargo\":\"https://crates.test/\"}},"
	    "\"e\":{\"form\":\"header\",\"field\":\"Authorization\",\"placeholder\":\"" PH "\","
	    "\"client\":{\"cargo\":\"https://crates.test/\\\"]\\n[x\"}}}");
	CHECK(f != NULL && cJSON_GetArraySize(f) == 0);
	cJSON_Delete(f);

	/* none names a client: no files at all */
	CHECK(build("{\"model\":{\"form\":\"bearer\",\"placeholder\":\"" PH "\"}}") == NULL);
	CHECK(credfiles_path_ok(".npmrc") && credfiles_path_ok(".aws/config"));
	CHECK(!credfiles_path_ok("../.npmrc") && !credfiles_path_ok(".bashrc") &&
	    !credfiles_path_ok(""));
}

/* Each reply is left out whole: nothing of it in any file. */
TEST(test_hostile)
{
	static const char *const bad[] = {
		"{\"npm\":\"https://npm.test/\\n//evil.test/:_authToken=x\"}",
		"{\"npm\":\"http://npm.test/\"}",
		"{\"npm\":\"https://npm.test/a b/\"}",
		"{\"npm\":\"https://npm.test\"}",
		"{\"npm\":\"https://npm.test/x;y/\"}",
		"{\"npm\":\"https://NPM.test/\"}",
		"{\"npm\":\"https://npm.test:99999/\"}",
		"{\"npm\":\"https://npm.test/\",\"scope\":\"@a\\nregistry=https://evil.test/\"}",
		"{\"npm\":\"https://npm.test/\",\"scope\":\"acme\"}",
		"{\"pip\":\"https://u:p@pypi.test/\"}",
		"{\"maven\":\"a</id><id>b\"}",
		"{\"docker\":\"reg.test/path\"}",
		"{\"docker\":\"reg.test\\\"\"}",
		"{\"aws\":\"default]\\n[x\"}",
		"{\"aws\":\"default\",\"region\":\"eu\\nx\"}",
		"{\"svn\":\"https://x.test/\"}",
		"\"https://npm.test/\"",
	};
	char txt[1024];
	cJSON *f;
	size_t i;

	for (i = 0; i < NELEM(bad); i++) {
		snprintf(txt, sizeof(txt), "{\"x\":{\"form\":\"basic\",\"user\":\"u\","
		    "\"placeholder\":\"" PH "\",\"key_id\":\"" KID "\",\"client\":%s}}", bad[i]);
		f = build(txt);
		if (f == NULL || cJSON_GetArraySize(f) != 0)
			fprintf(stderr, "  not left out: %s\n", bad[i]);
		CHECK(f != NULL && cJSON_GetArraySize(f) == 0);
		cJSON_Delete(f);
	}
	/* a user that would break the URL, the XML or the pair */
	f = build("{\"x\":{\"form\":\"basic\",\"user\":\"a:b\",\"placeholder\":\"" PH "\","
	    "\"client\":{\"pip\":\"https://pypi.test/\"}},"
	    "\"y\":{\"form\":\"basic\",\"user\":\"a\\nb\",\"placeholder\":\"" PH "\","
	    "\"client\":{\"maven\":\"m\"}},"
	    "\"z\":{\"form\":\"basic\",\"placeholder\":\"" PH "\","
	    "\"client\":{\"docker\":\"reg.test\"}}}");
	CHECK(f != NULL && cJSON_GetArraySize(f) == 0);
	cJSON_Delete(f);
	/* a placeholder of the wrong shape (a value, say) */
	f = build("{\"x\":{\"form\":\"bearer\",\"placeholder\":\"sk-real-secret\","
	    "\"client\":{\"npm\":\"https://npm.test/\"}},"
	    "\"y\":{\"form\":\"sigv4\",\"placeholder\":\"" PH "\",\"key_id\":\"AKIAREAL\","
	    "\"client\":{\"aws\":\"default\"}}}");
	CHECK(f != NULL && cJSON_GetArraySize(f) == 0);
	cJSON_Delete(f);
	/* a good one beside a bad one: the good one stands */
	f = build("{\"x\":{\"form\":\"bearer\",\"placeholder\":\"" PH "\","
	    "\"client\":{\"npm\":\"https://npm.test/\\n\"}},"
	    "\"y\":{\"form\":\"bearer\",\"placeholder\":\"" KID "\","
	    "\"client\":{\"npm\":\"https://npm.test/\"}}}");
	CHECK_STR(file(f, ".npmrc"), "registry=https://npm.test/\n//npm.test/:_authToken=" KID "\n");
	cJSON_Delete(f);
}

int
main(void)
{
	RUN(test_each_client);
	RUN(test_hostile);
	return unit_done();
}
