/*
 * test_proxy_glob.c: policy globs (egress-proxy/pglob.c): each kind of
 * item, case folding, whole-string matching, and hostile patterns that
 * would make a backtracking matcher take exponential time.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../egress-proxy/pglob.h"
#include "unit.h"

static int
m(const char *p, const char *s, int ci)
{
	return pglob_match(p, strlen(p), s, strlen(s), ci);
}

static const struct {
	const char	*p, *s;
	int		 ci, want;
} cases[] = {
	{ "refs/heads/main", "refs/heads/main", 0, 1 },
	{ "refs/heads/main", "refs/heads/mainx", 0, 0 },
	{ "refs/heads/main", "refs/heads/mai", 0, 0 },
	{ "refs/heads/main", "Refs/heads/main", 0, 0 },
	{ "refs/heads/main", "Refs/heads/MAIN", 1, 1 },
	{ "refs/heads/*", "refs/heads/x", 0, 1 },
	{ "refs/heads/*", "refs/heads/", 0, 1 },
	{ "refs/heads/*", "refs/heads/a/b", 0, 0 },
	{ "refs/heads/**", "refs/heads/a/b", 0, 1 },
	{ "refs/heads/**", "refs/heads/", 0, 1 },
	{ "refs/heads/**", "refs/heads", 0, 0 },
	{ "refs/heads/agent/**", "refs/heads/agent/x/y/z", 0, 1 },
	{ "refs/heads/agent/**", "refs/heads/agentx", 0, 0 },
	{ "refs/heads/agent/**", "refs/heads/main", 0, 0 },
	{ "refs/tags/**", "refs/tags/v1.0", 0, 1 },
	{ "**", "", 0, 1 },
	{ "**", "a/b/c", 0, 1 },
	{ "*", "", 0, 1 },
	{ "*", "abc", 0, 1 },
	{ "*", "a/c", 0, 0 },
	{ "", "", 0, 1 },
	{ "", "a", 0, 0 },
	{ "a?c", "abc", 0, 1 },
	{ "a?c", "a/c", 0, 0 },
	{ "a?c", "ac", 0, 0 },
	{ "acme/lib-*", "acme/lib-core", 0, 1 },
	{ "acme/lib-*", "ACME/Lib-Core", 1, 1 },
	{ "acme/lib-*", "ACME/Lib-Core", 0, 0 },
	{ "acme/lib-*", "acme/lib-a/b", 0, 0 },
	{ "acme/lib-*", "evil/lib-x", 0, 0 },
	{ "*/app", "acme/app", 0, 1 },
	{ "*/app", "acme/x/app", 0, 0 },
	{ "**/app", "acme/x/app", 0, 1 },
	{ "group/sub/*", "group/sub/p", 0, 1 },
	{ "group/sub/*", "group/sub/x/p", 0, 0 },
	{ "a*b*c", "aXbYc", 0, 1 },
	{ "a*b*c", "abc", 0, 1 },
	{ "a*b*c", "acb", 0, 0 },
	{ "a**b", "a/x/y/b", 0, 1 },
	{ "a***b", "a/x/b", 0, 1 },	/* a run of stars is ** */
	{ "[abc]", "[abc]", 0, 1 },	/* brackets are literal */
	{ "[abc]", "a", 0, 0 },
	{ "a\\*", "a\\xyz", 0, 1 },	/* backslash is literal, * still a glob */
	{ "%d+", "%d+", 0, 1 },
	{ "x.y", "xzy", 0, 0 },		/* . is literal */
	{ "*.lock", "a.lock", 0, 1 },
	{ "**a**a**a", "aaa", 0, 1 },
	{ "**a**a**a", "aa", 0, 0 },
};

TEST(test_table)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (m(cases[i].p, cases[i].s, cases[i].ci) != cases[i].want) {
			unit_cur_failed++;
			fprintf(stderr, "  glob(\"%s\", \"%s\", %d) != %d\n", cases[i].p,
			    cases[i].s, cases[i].ci, cases[i].want);
		}
}

TEST(test_bytes)
{
	/* NUL and high bytes are ordinary literal bytes; lengths are explicit. */
	CHECK(pglob_match("a\0b", 3, "a\0b", 3, 0) == 1);
	CHECK(pglob_match("a\0b", 3, "a\0c", 3, 0) == 0);
	CHECK(pglob_match("a*", 2, "a\0/", 3, 0) == 0);
	CHECK(pglob_match("\xc3\xa9*", 3, "\xc3\xa9t\xc3\xa9", 5, 1) == 1);
	CHECK(pglob_match("\xc3\x89", 2, "\xc3\xa9", 2, 1) == 0);	/* ASCII folding only */
}

TEST(test_too_long)
{
	char *p = malloc(PGLOB_PATTERN_MAX + 2);

	memset(p, 'a', PGLOB_PATTERN_MAX + 1);
	CHECK(pglob_match(p, PGLOB_PATTERN_MAX, p, PGLOB_PATTERN_MAX, 0) == 1);
	CHECK(pglob_match(p, PGLOB_PATTERN_MAX + 1, p, PGLOB_PATTERN_MAX + 1, 0) == 0);
	free(p);
}

/* **a**a**a...b against aaaa...: exponential for a backtracking matcher. */
TEST(test_hostile)
{
	char p[1024], *s;
	size_t pl = 0, n = 200000, i;
	clock_t t0;
	double secs;

	for (i = 0; i < 60; i++) {
		memcpy(p + pl, "**a", 3);
		pl += 3;
	}
	p[pl++] = 'b';
	s = malloc(n);
	memset(s, 'a', n);
	t0 = clock();
	CHECK(pglob_match(p, pl, s, n, 0) == 0);
	s[n - 1] = 'b';
	CHECK(pglob_match(p, pl, s, n, 0) == 1);
	for (i = 0; i < n; i++)
		s[i] = i % 7 == 0 ? '/' : 'a';
	CHECK(pglob_match("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", 44, s, n, 1) == 0);
	secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
	/* A few times 200000 x 181 steps; a backtracking matcher never finishes. */
	CHECK(secs < 5.0);
	free(s);
}

int
main(void)
{
	RUN(test_table);
	RUN(test_bytes);
	RUN(test_too_long);
	RUN(test_hostile);
	return unit_done();
}
