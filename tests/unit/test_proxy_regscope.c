/*
 * test_proxy_regscope.c: the token scope egress-proxy/regscope.c derives
 * from a registry request (the distribution API's paths and methods, a
 * cross-repository mount) and every hostile or malformed one it refuses
 * (names out of the grammar: upper case, "..", encoded bytes, empty
 * components, too long; unknown /v2/ paths and methods).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/regscope.h"
#include "unit.h"

static int
derive(const char *method, const char *target, char *out, size_t outlen)
{
	char err[256];
	int r;

	err[0] = '\0';
	r = regscope_derive(method, target, strlen(target), out, outlen, err, sizeof(err));
	if (r == -1 && err[0] == '\0')
		return -2;	/* a refusal must say why */
	return r;
}

TEST(test_derive_ok)
{
	static const struct {
		const char *method, *target, *scope;
	} ok[] = {
		{ "GET", "/v2/", "" },
		{ "HEAD", "/v2", "" },
		{ "GET", "/v2/_catalog?n=10", "registry:catalog:*" },
		{ "GET", "/v2/acme/tiny/manifests/v1", "repository:acme/tiny:pull" },
		{ "HEAD", "/v2/acme/tiny/manifests/sha256:0123", "repository:acme/tiny:pull" },
		{ "PUT", "/v2/acme/tiny/manifests/v1", "repository:acme/tiny:pull,push" },
		{ "DELETE", "/v2/acme/tiny/manifests/sha256:ab", "repository:acme/tiny:delete" },
		{ "GET", "/v2/tiny/blobs/sha256:ab", "repository:tiny:pull" },
		{ "POST", "/v2/acme/tiny/blobs/uploads/", "repository:acme/tiny:pull,push" },
		{ "PATCH", "/v2/acme/tiny/blobs/uploads/0f-9a?_state=x%3D", "repository:acme/tiny:pull,push" },
		{ "PUT", "/v2/acme/tiny/blobs/uploads/0f?digest=sha256%3Aab", "repository:acme/tiny:pull,push" },
		{ "GET", "/v2/acme/tiny/tags/list?n=5", "repository:acme/tiny:pull" },
		{ "GET", "/v2/acme/tiny/referrers/sha256:ab", "repository:acme/tiny:pull" },
		/* a component that is a keyword: the first keyword with its shape ends the name */
		{ "GET", "/v2/foo/blobs/manifests/latest", "repository:foo/blobs:pull" },
		{ "POST", "/v2/foo/blobs/blobs/uploads/", "repository:foo/blobs:pull,push" },
		{ "GET", "/v2/a/tags/tags/list", "repository:a/tags:pull" },
		/* the grammar's separators */
		{ "GET", "/v2/a.b_c__d-e--f/g/manifests/x", "repository:a.b_c__d-e--f/g:pull" },
		/* a cross-repository mount reads the other one (from percent-encoded) */
		{ "POST", "/v2/acme/new/blobs/uploads/?mount=sha256%3Aab&from=acme%2Fold",
		    "repository:acme/new:pull,push repository:acme/old:pull" },
		{ "POST", "/v2/acme/new/blobs/uploads/?from=acme/old&mount=sha256:ab",
		    "repository:acme/new:pull,push repository:acme/old:pull" },
		/* a mount without from mounts nothing */
		{ "POST", "/v2/acme/new/blobs/uploads/?mount=sha256:ab", "repository:acme/new:pull,push" },
		/* from without mount is no mount */
		{ "POST", "/v2/acme/new/blobs/uploads/?from=ACME", "repository:acme/new:pull,push" },
	};
	char out[REGSCOPE_MAX];
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		CHECK_INT(derive(ok[i].method, ok[i].target, out, sizeof(out)), 0);
		CHECK_STR(out, ok[i].scope);
	}
}

TEST(test_derive_not_api)
{
	static const char *const other[] = {
		"/", "/v1/acme/manifests/x", "/v2x/acme/tiny/manifests/v1", "/token?scope=x",
		"/V2/acme/tiny/manifests/v1", "", "/v", "?/v2/",
	};
	char out[REGSCOPE_MAX];
	size_t i;

	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		CHECK_INT(derive("GET", other[i], out, sizeof(out)), 1);
		CHECK_STR(out, "");
	}
}

TEST(test_derive_hostile)
{
	static const struct {
		const char *method, *target;
	} bad[] = {
		{ "GET", "/v2/../admin/manifests/v1" },
		{ "GET", "/v2/acme/../tiny/manifests/v1" },
		{ "GET", "/v2/acme/..tiny/manifests/v1" },
		{ "GET", "/v2/Acme/tiny/manifests/v1" },
		{ "GET", "/v2/ACME/manifests/v1" },
		{ "GET", "/v2/acme%2e%2e/manifests/v1" },
		{ "GET", "/v2/acme%2ftiny/manifests/v1" },
		{ "GET", "/v2//acme/manifests/v1" },
		{ "GET", "/v2/acme//tiny/manifests/v1" },
		{ "GET", "/v2/acme/tiny//manifests/v1" },
		{ "GET", "/v2/acme/tiny/manifests/" },
		{ "GET", "/v2/acme/tiny/manifests" },
		{ "GET", "/v2/acme/tiny/manifests/v1/extra" },
		{ "GET", "/v2/acme/tiny" },
		{ "GET", "/v2/acme/tiny/" },
		{ "GET", "/v2/manifests/v1" },
		{ "GET", "/v2/acme/tiny/tags/all" },
		{ "GET", "/v2/acme/tiny/blobs/uploads/a/b" },
		{ "GET", "/v2/-acme/manifests/v1" },
		{ "GET", "/v2/acme-/manifests/v1" },
		{ "GET", "/v2/acme./manifests/v1" },
		{ "GET", "/v2/ac___me/manifests/v1" },
		{ "GET", "/v2/ac._me/manifests/v1" },
		{ "GET", "/v2/ac me/manifests/v1" },
		{ "GET", "/v2/ac\x01me/manifests/v1" },
		{ "GET", "/v2/acme:tiny/manifests/v1" },
		{ "GET", "/v2/acme/tiny/manifests/v1 repository:other:push/x" },
		{ "GET", "/v2/_catalog/x" },
		{ "POST", "/v2/_catalog" },
		{ "PUT", "/v2/" },
		{ "OPTIONS", "/v2/acme/tiny/manifests/v1" },
		{ "get", "/v2/acme/tiny/manifests/v1" },
		{ "CONNECT", "/v2/" },
		{ "POST", "/v2/acme/new/blobs/uploads/?mount=sha256:ab&from=Acme" },
		{ "POST", "/v2/acme/new/blobs/uploads/?mount=sha256:ab&from=acme/../x" },
		{ "POST", "/v2/acme/new/blobs/uploads/?mount=sha256:ab&from=acme%00x" },
		{ "POST", "/v2/acme/new/blobs/uploads/?mount=sha256:ab&from=acme%2" },
		{ "POST", "/v2/acme/new/blobs/uploads/?mount=sha256:ab&from=acme%zz" },
		{ "POST", "/v2/acme/new/blobs/uploads/?mount=sha256:ab&from=" },
		{ "POST", "/v2/acme/new/blobs/uploads/?mount=sha256:ab&from=a%20b:push" },
	};
	char out[REGSCOPE_MAX], longt[700];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (derive(bad[i].method, bad[i].target, out, sizeof(out)) != -1) {
			printf("  not refused: %s %s\n", bad[i].method, bad[i].target);
			CHECK(0);
		}
		CHECK_STR(out, "");
	}
	/* 256 bytes of name: one past distribution's maximum */
	memcpy(longt, "/v2/", 4);
	memset(longt + 4, 'a', 256);
	snprintf(longt + 260, sizeof(longt) - 260, "/manifests/v1");
	CHECK_INT(derive("GET", longt, out, sizeof(out)), -1);
	longt[4 + 255] = '/';	/* 255 bytes: "aaa.../a" is too, the slash a separator */
	snprintf(longt + 259, sizeof(longt) - 259, "/manifests/v1");
	CHECK_INT(derive("GET", longt, out, sizeof(out)), 0);
	/* many segments */
	memcpy(longt, "/v2/", 4);
	for (i = 4; i + 2 < sizeof(longt) - 20; i += 2)
		memcpy(longt + i, "a/", 2);
	snprintf(longt + i, sizeof(longt) - i, "manifests/v1");
	CHECK_INT(derive("GET", longt, out, sizeof(out)), -1);
	/* too little room: refused, never cut */
	CHECK_INT(derive("GET", "/v2/acme/tiny/manifests/v1", out, 10), -1);
	/* the catalog's scope too (it was cut and passed; found by fuzz_proxy_regscope) */
	CHECK_INT(derive("GET", "/v2/_catalog", out, 10), -1);
	CHECK_STR(out, "");
}

TEST(test_name)
{
	CHECK(regscope_name_ok("a", 1));
	CHECK(regscope_name_ok("a/b/c", 5));
	CHECK(regscope_name_ok("a__b", 4));
	CHECK(!regscope_name_ok("", 0));
	CHECK(!regscope_name_ok("a/", 2));
	CHECK(!regscope_name_ok("/a", 2));
	CHECK(!regscope_name_ok("a..b", 4));
	CHECK(!regscope_name_ok("a_.b", 4));
	CHECK(!regscope_name_ok("a.-b", 4));
	CHECK(!regscope_name_ok("aB", 2));
	/* only n bytes are read */
	CHECK(regscope_name_ok("ab/..", 2));
}

int
main(void)
{
	RUN(test_derive_ok);
	RUN(test_derive_not_api);
	RUN(test_derive_hostile);
	RUN(test_name);
	return unit_done();
}
