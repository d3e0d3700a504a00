/*
 * fuzz_proxy_pattern.c: egress-proxy/pmatch.c against Lua 5.4's own string
 * library (differential, tests/fuzz/pmatch_diff.h). Input: one byte that
 * picks the function (find, match, gmatch, gsub) and the optional
 * arguments, then subject, pattern and replacement separated by 0xff.
 * Any difference in results or pattern error messages aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmatch_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct pmdiff_budget budget = { 0, 200000 };
static lua_State *L;

/* The next 0xff-separated field of [*p, end). */
static const char *
field(const uint8_t **p, const uint8_t *end, size_t *n)
{
	const uint8_t *s = *p, *q = memchr(s, 0xff, (size_t)(end - s));

	if (q == NULL)
		q = end;
	*n = (size_t)(q - s);
	*p = q < end ? q + 1 : end;
	return (const char *)s;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const fns[] = { "find", "match", "gmatch", "gsub" };
	static const char *const inits[] = { "1", "2", "-1", "-5", "0", "100" };
	const uint8_t *p = data + 1, *end = data + size;
	const char *s, *pat, *repl;
	size_t ls, lp, lr;
	char msg[4096];
	long long a4 = -2000000;
	int op, f;

	if (size < 1 || size > 600)
		return 0;
	if (L == NULL && (L = pmdiff_new(&budget)) == NULL)
		abort();
	op = data[0];
	f = op & 3;
	s = field(&p, end, &ls);
	pat = field(&p, end, &lp);
	repl = field(&p, end, &lr);
	if (f == 3) {
		if (op & 4)
			repl = (op & 8) ? "F" : "T", lr = 1;
		if (op & 16)
			a4 = (op >> 5) & 3;
	} else {
		if (op & 4) {
			repl = inits[((unsigned)op >> 5) % 6];
			lr = strlen(repl);
		} else
			repl = NULL, lr = 0;
		if (f == 0 && (op & 8))
			a4 = 1;
	}
	if (pmdiff_run(L, fns[f], s, ls, pat, lp, repl, lr, a4, msg, sizeof(msg)) == -1) {
		fprintf(stderr, "%s\n", msg);
		abort();
	}
	lua_settop(L, 0);
	if ((op & 0xc0) == 0xc0)
		lua_gc(L, LUA_GCCOLLECT);
	return 0;
}
