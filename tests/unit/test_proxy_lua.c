/*
 * test_proxy_lua.c: the addon runtime's own pattern matcher
 * (egress-proxy/pmatch.c) against Lua 5.4's string library: hand-picked
 * patterns (every feature, every error, the shipped addons' uses), then
 * many random ones; and its step counting on hostile patterns.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../fuzz/pmatch_diff.h"
#include "unit.h"

#define NOA4	(-2000000LL)

static struct pmdiff_budget budget = { 0, 5000000 };
static lua_State *L;

static const struct {
	const char *f, *s, *p, *a3;
	long long a4;
} cases[] = {
	/* the shipped addons */
	{ "gmatch", "uploads.github.com,codeload.github.com, raw.githubusercontent.com",
	  "[^,%s]+", NULL, NOA4 },
	{ "gmatch", "a, b ,c,,", "[^,%s]+", NULL, NOA4 },
	{ "find", "/group/proj.git/info/refs", "%.git/", NULL, NOA4 },
	{ "find", "/group/proj.git", "%.git$", NULL, NOA4 },
	{ "find", "/x/info/refs?service=git-upload-pack", "/info/refs", "1", 1 },
	{ "find", "/x/git-upload-pack", "/git%-upload%-pack", NULL, NOA4 },
	{ "find", "/x/git-receive-pack", "/git%-receive%-pack", NULL, NOA4 },
	{ "find", "/x/info/lfs/objects", "/info/lfs/", "1", 1 },
	/* classes, sets, ranges, negation */
	{ "match", "Hello, World 42!", "%a+", NULL, NOA4 },
	{ "match", "Hello, World 42!", "%d+", NULL, NOA4 },
	{ "match", "  \t x", "^%s*(.-)$", NULL, NOA4 },
	{ "match", "abc_DEF-09", "[%w_]+", NULL, NOA4 },
	{ "match", "abc]def", "[]]", NULL, NOA4 },
	{ "match", "a-b", "[a%-]+", NULL, NOA4 },
	{ "match", "a-b", "[a-]+", NULL, NOA4 },
	{ "match", "xyz", "[^x]+", NULL, NOA4 },
	{ "match", "0x1F", "%x+", "3", NOA4 },
	{ "match", "AbC", "%u%l%U", NULL, NOA4 },
	{ "match", "a.b", "%p", NULL, NOA4 },
	{ "match", "\x01\x7f", "%c+", NULL, NOA4 },
	{ "match", "a b", "%S+%s%G*", NULL, NOA4 },
	/* quantifiers */
	{ "match", "aaab", "a-b", NULL, NOA4 },
	{ "match", "aaab", "a*", NULL, NOA4 },
	{ "match", "aaab", "a+?", NULL, NOA4 },
	{ "match", "b", "a?b", NULL, NOA4 },
	{ "match", "<<a>>", "<(.-)>", NULL, NOA4 },
	{ "match", "<<a>>", "<(.*)>", NULL, NOA4 },
	/* captures, position captures, back references */
	{ "match", "hello world", "(h)(e)(l)(l)(o)", NULL, NOA4 },
	{ "match", "hello", "()ll()", NULL, NOA4 },
	{ "find", "hello", "()ll()", NULL, NOA4 },
	{ "match", "say \"hi\" 'x'", "([\"'])(.-)%1", NULL, NOA4 },
	{ "match", "abab", "(ab)%1", NULL, NOA4 },
	{ "match", "key = value", "(%w+)%s*=%s*(%w+)", NULL, NOA4 },
	{ "match", "aaa", "((a)(a))", NULL, NOA4 },
	/* %b and %f */
	{ "match", "f(a(b)c) d", "%b()", NULL, NOA4 },
	{ "match", "[[x]", "%b[]", NULL, NOA4 },
	{ "gmatch", "THE (quick) fox", "%f[%a]%a+", NULL, NOA4 },
	{ "gmatch", "hello world", "%f[%w]%w+%f[%W]", NULL, NOA4 },
	{ "find", "abc", "%f[%z]", NULL, NOA4 },
	{ "find", "abc", "%f[^%z]", NULL, NOA4 },
	/* anchors, init, plain */
	{ "find", "abc", "^b", NULL, NOA4 },
	{ "find", "abc", "^b", "2", NOA4 },
	{ "find", "abc", "b", "-1", NOA4 },
	{ "find", "abc", "c", "-10", NOA4 },
	{ "find", "abc", "", "10", NOA4 },
	{ "find", "abc", "", "4", NOA4 },
	{ "find", "a.c", ".", "1", 1 },
	{ "find", "a$c", "$c", NULL, NOA4 },
	{ "find", "a^c", "a^", NULL, NOA4 },
	{ "match", "abc", "b$", NULL, NOA4 },
	{ "match", "abc", "c$", NULL, NOA4 },
	{ "gmatch", "abc", "^a", NULL, NOA4 },
	{ "gmatch", "abc", "", NULL, NOA4 },
	{ "gmatch", "abc", "()", "2", NOA4 },
	{ "gmatch", "abc", ".", "10", NOA4 },
	{ "find", "a\0b", "\0", NULL, NOA4 },
	{ "find", "a\0b", "%z", NULL, NOA4 },
	/* gsub */
	{ "gsub", "hello world", "o", "0", NOA4 },
	{ "gsub", "hello world", "(o)", "[%1%1]", NOA4 },
	{ "gsub", "hello world", "%w+", "%0 %0", 1 },
	{ "gsub", "hello", "", "-", NOA4 },
	{ "gsub", "abc", "%w", "%%", NOA4 },
	{ "gsub", "abc", "()", "%1", NOA4 },
	{ "gsub", "abc", "^a", "x", NOA4 },
	{ "gsub", "hello world from lua", "(%w+) (%w+)", "%2 %1", NOA4 },
	{ "gsub", "hello world", "%w+", "F", NOA4 },
	{ "gsub", "hello big world", "(%w)(%w*)", "F", NOA4 },
	{ "gsub", "hello big world x", "%w+", "T", NOA4 },
	{ "gsub", "abc", "()b", "T", NOA4 },
	{ "gsub", "abc", ".", "x", 0 },
	{ "gsub", "abc", ".", "x", -1 },
	{ "gsub", "abc", "b*", "-", NOA4 },
	/* errors */
	{ "find", "abc", "%", NULL, NOA4 },
	{ "find", "abc", "[a", NULL, NOA4 },
	{ "find", "abc", "[a%", NULL, NOA4 },
	{ "find", "abc", "[", NULL, NOA4 },
	{ "find", "abc", "[^", NULL, NOA4 },
	{ "find", "abc", "(a", NULL, NOA4 },
	{ "find", "abc", "a)", NULL, NOA4 },
	{ "find", "abc", "%1", NULL, NOA4 },
	{ "find", "abc", "(a)%2", NULL, NOA4 },
	{ "find", "abc", "(a%1)", NULL, NOA4 },
	{ "find", "abc", "%b", NULL, NOA4 },
	{ "find", "abc", "%ba", NULL, NOA4 },
	{ "find", "abc", "%f", NULL, NOA4 },
	{ "find", "abc", "%fa", NULL, NOA4 },
	{ "gsub", "abc", "b", "%2", NOA4 },
	{ "gsub", "abc", "b", "%x", NOA4 },
	{ "gsub", "abc", "b", "%", NOA4 },
	{ "match", "abc", "((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))))",
	  NULL, NOA4 },
	{ "match", "x", "x()()()()()()()()()()()()()()()()()()()()()()()()()()()()()()()()()",
	  NULL, NOA4 },
};

TEST(test_cases)
{
	char msg[2048];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = pmdiff_run(L, cases[i].f, cases[i].s, strlen(cases[i].s),
		    cases[i].p, strlen(cases[i].p), cases[i].a3,
		    cases[i].a3 != NULL ? strlen(cases[i].a3) : 0, cases[i].a4, msg, sizeof(msg));
		if (rc == -1)
			fprintf(stderr, "  case %zu: %s\n", i, msg);
		CHECK(rc == 0);
	}
	/* embedded zeros in subject and pattern */
	CHECK(pmdiff_run(L, "find", "a\0b\0c", 5, "\0c", 2, NULL, 0, NOA4, msg,
	    sizeof(msg)) == 0);
	CHECK(pmdiff_run(L, "find", "a\0b\0c", 5, "b\0", 2, "1", 1, 1, msg, sizeof(msg)) == 0);
	CHECK(pmdiff_run(L, "match", "a\0b\0c", 5, "[\0b]+", 5, NULL, 0, NOA4, msg,
	    sizeof(msg)) == 0);
	CHECK(pmdiff_run(L, "match", "a(\0)", 4, "%b\0)", 4, NULL, 0, NOA4, msg,
	    sizeof(msg)) == 0);
}

/* xorshift, fixed seed: the same cases on every run. */
static unsigned long long rng = 0x9e3779b97f4a7c15ULL;

static unsigned
rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

TEST(test_random)
{
	static const char *const pieces[] = {
		"a", "b", "c", ".", "%a", "%d", "%s", "%w", "%A", "%", "(", ")", "()", "[",
		"]", "[ab]", "[^a]", "[a-c]", "[%a_]", "*", "+", "-", "?", "^", "$",
		"%b()", "%bab", "%f[%w]", "%f[^a]", "%1", "%2", "%0", "%z", "x", "%]", "[]",
	};
	static const char subj_chars[] = "aabbc (x)1_ ]";
	static const char *const fns[] = { "find", "match", "gmatch", "gsub" };
	static const char *const repls[] = { "<%0>", "%1", "x%%", "F", "T", "%2", "" };
	char p[64], s[40], msg[2048];
	int i, k, fails = 0, skips = 0;

	for (i = 0; i < 30000 && fails < 10; i++) {
		size_t lp = 0, ls = 0;
		int n = 1 + (int)rnd(7), f = (int)rnd(4), rc;
		const char *a3 = NULL;
		long long a4 = NOA4;

		for (k = 0; k < n; k++) {
			const char *pc = pieces[rnd(sizeof(pieces) / sizeof(pieces[0]))];
			if (lp + strlen(pc) >= sizeof(p))
				break;
			memcpy(p + lp, pc, strlen(pc));
			lp += strlen(pc);
		}
		n = (int)rnd(sizeof(s));
		for (k = 0; k < n; k++)
			s[ls++] = subj_chars[rnd(sizeof(subj_chars) - 1)];
		if (f == 3) {
			a3 = repls[rnd(sizeof(repls) / sizeof(repls[0]))];
			if (rnd(4) == 0)
				a4 = (long long)rnd(4);
		} else if (rnd(3) == 0) {
			a3 = (const char *[]){ "1", "2", "-1", "-3", "0", "40" }[rnd(6)];
			if (f == 0 && rnd(2) == 0)
				a4 = 1;
		}
		rc = pmdiff_run(L, fns[f], s, ls, p, lp, a3, a3 != NULL ? strlen(a3) : 0, a4,
		    msg, sizeof(msg));
		if (rc == -1) {
			fprintf(stderr, "  random %d: %s\n", i, msg);
			fails++;
		}
		skips += rc == 1;
	}
	CHECK(fails == 0);
	CHECK(skips < 100);
}

/* Steps are charged: a hostile pattern stops at the budget, quickly. */
TEST(test_hostile)
{
	struct pmdiff_budget b = { 0, 2000000 };
	lua_State *S = luaL_newstate();
	struct timespec t0, t1;
	double ms;

	luaL_openlibs(S);
	pmatch_pushlib(S, pmdiff_charge, &b);
	lua_setglobal(S, "pm");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(luaL_dostring(S, "return pm.find(('a'):rep(5e4), ('a*'):rep(30) .. 'b')") != LUA_OK);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(strstr(lua_tostring(S, -1), "step budget exceeded") != NULL);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	fprintf(stderr, "  hostile find stopped after %.1f ms\n", ms);
	CHECK(ms < 2000);
	lua_pop(S, 1);
	/* plain finds are charged too */
	b.used = 0;
	CHECK(luaL_dostring(S, "return pm.find(('a'):rep(2e5), ('a'):rep(1e5) .. 'b', 1, true)") !=
	    LUA_OK);
	lua_pop(S, 1);
	b.used = 0;
	CHECK(luaL_dostring(S, "local n = 0 for _ in pm.gmatch(('ab'):rep(5e4), '(a*)*b') do n = n + 1 end")
	    != LUA_OK || b.used > 0);
	lua_settop(S, 0);
	/* a normal match costs a few steps */
	b.used = 0;
	CHECK(luaL_dostring(S, "return pm.find('/group/proj.git/info/refs', '%.git/')") == LUA_OK);
	CHECK(b.used > 0 && b.used < 200);
	lua_close(S);
}

int
main(void)
{
	if ((L = pmdiff_new(&budget)) == NULL)
		return 1;
	RUN(test_cases);
	RUN(test_random);
	RUN(test_hostile);
	lua_close(L);
	return unit_done();
}
