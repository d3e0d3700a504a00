/*
 * test_proxy_reqcanon.c: canonical request targets (egress-proxy/
 * reqcanon.c): every spelling of a git service path and of GitHub's and
 * GitLab's REST routes that an upstream decoding like nginx would route to
 * the same place gets one canonical form; what cannot be given one is
 * refused; the canonical form is a fixed point.
 */
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/reqcanon.h"
#include "unit.h"

/* The canonical form of t, or "ERR" (static storage). */
static const char *
canon(const char *t, size_t *plen)
{
	static char res[4096];
	struct buf b;
	char err[128];
	size_t pl = 0;

	buf_init(&b, REQCANON_MAX * 3 + 8);
	if (reqcanon_target(t, strlen(t), &b, &pl, err, sizeof(err)) == -1) {
		buf_free(&b);
		if (err[0] == '\0')
			return "ERR-without-reason";
		return "ERR";
	}
	snprintf(res, sizeof(res), "%s", b.p);
	if (plen != NULL)
		*plen = pl;
	buf_free(&b);
	return res;
}

static const struct {
	const char	*in, *want;
} cases[] = {
	/* the git service path, every spelling an nginx upstream routes alike */
	{ "/o/r.git/git-receive-pack", "/o/r.git/git-receive-pack" },
	{ "/o/r.git/git%2Dreceive-pack", "/o/r.git/git-receive-pack" },
	{ "/o/r.git/git%2dreceive-pack", "/o/r.git/git-receive-pack" },
	{ "/o/r.git/git-receive-pac%6b", "/o/r.git/git-receive-pack" },
	{ "/o/r.git/git-receive-pac%6B", "/o/r.git/git-receive-pack" },
	{ "/o/r.git//git-receive-pack", "/o/r.git/git-receive-pack" },
	{ "//o//r.git///git-receive-pack", "/o/r.git/git-receive-pack" },
	{ "/o/r.git/./git-receive-pack", "/o/r.git/git-receive-pack" },
	{ "/o/r.git/%2e/git-receive-pack", "/o/r.git/git-receive-pack" },
	{ "/o/r.git/x/../git-receive-pack", "/o/r.git/git-receive-pack" },
	{ "/o/r.git/x/%2E%2e/git-receive-pack", "/o/r.git/git-receive-pack" },
	{ "/o/r.git/git-receive-pack/", "/o/r.git/git-receive-pack" },
	{ "/o/r.git/git-receive-pack/.", "/o/r.git/git-receive-pack" },
	{ "/%6f/%72%2egit/git-receive-pack", "/o/r.git/git-receive-pack" },
	{ "/o/r/GIT-RECEIVE-PACK", "/o/r/GIT-RECEIVE-PACK" },	/* case: the caller's */
	{ "/o/r.git/info/refs?service=git-receive-pack",
	  "/o/r.git/info/refs?service=git-receive-pack" },
	{ "/o/r.git/info/refs?service=git%2Dreceive-pack",
	  "/o/r.git/info/refs?service=git%2Dreceive-pack" },	/* the query as sent */
	/* REST routes */
	{ "/repos/o/r/merges/", "/repos/o/r/merges" },
	{ "/repos/o/r/pulls/1/merge/", "/repos/o/r/pulls/1/merge" },
	{ "/graphql/", "/graphql" },
	{ "/repos/o/r/git/refs/heads/agent/../main", "/repos/o/r/git/refs/heads/main" },
	{ "/repos/o/r/git/refs/heads%2Fmain", "/repos/o/r/git/refs/heads%2Fmain" },
	{ "/api/v4/projects/g%2fp/issues", "/api/v4/projects/g%2Fp/issues" },
	{ "/api/v4/projects/g%2Fsub%2Fp", "/api/v4/projects/g%2Fsub%2Fp" },
	{ "/api/v4/projects/g%2Fp/repository/branches/feat%2Fx",
	  "/api/v4/projects/g%2Fp/repository/branches/feat%2Fx" },
	/* escapes: unreserved decoded, the rest upper-case hex; raw oddities escaped */
	{ "/a%7Eb%5fc", "/a~b_c" },
	{ "/a%3bb", "/a%3Bb" },
	{ "/a%3Fb", "/a%3Fb" },
	{ "/a%25b", "/a%25b" },			/* a literal '%' not followed by hex */
	{ "/a%2520", "ERR" },			/* double encoding */
	{ "/a%252D", "ERR" },
	{ "/a%25%32%44", "ERR" },		/* double encoding, spelled in escapes */
	{ "/caf%C3%A9", "/caf%C3%A9" },
	{ "/caf\xc3\xa9", "/caf%C3%A9" },
	{ "/a{b}|c", "/a%7Bb%7D%7Cc" },
	{ "/a!$&'()*+,=:@b", "/a!$&'()*+,=:@b" },
	{ "/", "/" },
	{ "/.", "/" },
	{ "//", "/" },
	{ "/a/..", "/" },
	{ "/a/b/../../c", "/c" },
	{ "/?", "/" },
	{ "/x?", "/x" },
	{ "/x?a=%2F&b=c+d", "/x?a=%2F&b=c+d" },
	{ "*", "*" },
	/* refused */
	{ "", "ERR" },
	{ "x/y", "ERR" },
	{ "?q", "ERR" },
	{ "/..", "ERR" },
	{ "/a/../..", "ERR" },
	{ "/%2e%2e/x", "ERR" },
	{ "/a%", "ERR" },
	{ "/a%2", "ERR" },
	{ "/a%zz", "ERR" },
	{ "/a%2/b", "ERR" },
	{ "/a%00b", "ERR" },
	{ "/a%0Ab", "ERR" },			/* nginx's regex $ matches before a final \n */
	{ "/git-receive-pack%0a", "ERR" },
	{ "/a%7fb", "ERR" },
	{ "/a\\b", "ERR" },
	{ "/a%5Cb", "ERR" },
	{ "/a%5cb", "ERR" },
	{ "/a;b", "ERR" },
	{ "/git-receive-pack;x", "ERR" },
	{ "/a#b", "ERR" },
	{ "/a%2F..%2Fb", "ERR" },		/* an encoded / making a dot segment */
	{ "/a%2F%2Fb", "ERR" },			/* ... or an empty one */
	{ "/a%2F", "ERR" },
	{ "/%2Fa", "ERR" },
	{ "/%2F", "ERR" },
	{ "/..%2Fa", "ERR" },
	{ "/a%2F.%2Fb", "ERR" },
	{ "/%C0%AE%C0%AE/x", "ERR" },		/* overlong '.' */
	{ "/%C0%AF", "ERR" },			/* overlong '/' */
	{ "/%ED%A0%80", "ERR" },		/* surrogate */
	{ "/%F4%90%80%80", "ERR" },		/* past U+10FFFF */
	{ "/\xff", "ERR" },
	{ "/a\x01", "ERR" },
	{ "/a b", "ERR" },
	{ "/x?a%", "ERR" },
	{ "/x?a%g0", "ERR" },
	{ "/x?a%00", "ERR" },
	{ "/x?a#b", "ERR" },
	{ "/x?a b", "ERR" },
};

TEST(test_reqcanon_cases)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = canon(cases[i].in, NULL);
		if (strcmp(got, cases[i].want) != 0) {
			fprintf(stderr, "  case %zu: %s -> %s, want %s\n", i, cases[i].in, got,
			    cases[i].want);
			unit_cur_failed++;
		}
	}
}

TEST(test_reqcanon_fixed_point)
{
	char once[4096];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(cases[i].want, "ERR") == 0)
			continue;
		snprintf(once, sizeof(once), "%s", canon(cases[i].in, NULL));
		CHECK_STR(canon(once, NULL), once);
	}
}

TEST(test_reqcanon_path_len)
{
	size_t pl = 0;

	CHECK_STR(canon("/a//b/?x=1", &pl), "/a/b?x=1");
	CHECK_INT(pl, 4);
	CHECK_STR(canon("/a/", &pl), "/a");
	CHECK_INT(pl, 2);
	CHECK_STR(canon("/", &pl), "/");
	CHECK_INT(pl, 1);
}

/* A refusal leaves the output as it was; a success appends. */
TEST(test_reqcanon_appends)
{
	struct buf b;
	char err[128];
	size_t pl;

	buf_init(&b, 1024);
	CHECK(buf_addstr(&b, "keep") == 0);
	CHECK(reqcanon_target("/a%", 3, &b, &pl, err, sizeof(err)) == -1);
	CHECK_STR(b.p, "keep");
	CHECK(strstr(err, "percent") != NULL);
	CHECK(reqcanon_target("/a/./b", 6, &b, &pl, err, sizeof(err)) == 0);
	CHECK_STR(b.p, "keep/a/b");
	CHECK_INT(pl, 4);
	buf_free(&b);
	/* an output too small is a refusal, not a cut */
	buf_init(&b, 4);
	CHECK(reqcanon_target("/abcdef", 7, &b, &pl, err, sizeof(err)) == -1);
	CHECK(b.p == NULL || b.len == 0);
	buf_free(&b);
}

TEST(test_reqcanon_bounds)
{
	struct buf b;
	char err[128];
	size_t pl, n = REQCANON_MAX + 1;
	char *big = malloc(n);

	memset(big, 'a', n);
	big[0] = '/';
	buf_init(&b, REQCANON_MAX * 3 + 8);
	CHECK(reqcanon_target(big, n, &b, &pl, err, sizeof(err)) == -1);
	CHECK(reqcanon_target(big, n - 1, &b, &pl, err, sizeof(err)) == 0);
	CHECK_INT(b.len, n - 1);
	buf_free(&b);
	/* many ".." and "//": linear, each taking back what was there */
	for (pl = 0; pl + 3 <= n - 1; pl += 3)
		memcpy(big + pl, "/a/", 3);
	buf_init(&b, REQCANON_MAX * 3 + 8);
	CHECK(reqcanon_target(big, n - 1, &b, &pl, err, sizeof(err)) == 0);
	buf_free(&b);
	free(big);
}

int
main(void)
{
	RUN(test_reqcanon_cases);
	RUN(test_reqcanon_fixed_point);
	RUN(test_reqcanon_path_len);
	RUN(test_reqcanon_appends);
	RUN(test_reqcanon_bounds);
	return unit_done();
}
