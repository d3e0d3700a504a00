/*
 * fuzz_policy.c: the credential policy (orchestrator/lib/policy.c) on arbitrary
 * text, and its invariants: a policy that parses reads back from its own
 * canonical text to the same text, of at most POLICY_MAX_JSON bytes; it is
 * within itself and within none; the input split at its first NUL byte is
 * read as two policies and narrowed and combined both ways (a combine's
 * result is within the first); the glob cover relation on the two halves
 * never crashes and a string covers itself.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
one(const char *txt, size_t len, struct policy **out)
{
	char err[512], *t, *t2;
	struct policy *p, *q;

	*out = NULL;
	if ((p = policy_parse(txt, len, "policy", err, sizeof(err))) == NULL)
		return;
	t = policy_text(p);
	if (strlen(t) > POLICY_MAX_JSON)
		abort();
	if ((q = policy_parse(t, strlen(t), "policy", err, sizeof(err))) == NULL)
		abort();
	t2 = policy_text(q);
	if (strcmp(t, t2) != 0)
		abort();
	if (!policy_narrower(p, p, err, sizeof(err)) ||
	    !policy_narrower(NULL, p, err, sizeof(err)))
		abort();
	free(t);
	free(t2);
	policy_free(q);
	*out = p;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const char *s = (const char *)data, *nul = memchr(data, '\0', len);
	struct policy *a, *b, *c;
	char err[512], *x, *y;
	size_t la = nul != NULL ? (size_t)(nul - s) : len;
	int widens;

	one(s, la, &a);
	b = NULL;
	if (nul != NULL)
		one(nul + 1, len - la - 1, &b);
	if (a != NULL && b != NULL) {
		(void)policy_narrower(a, b, err, sizeof(err));
		(void)policy_narrower(b, a, err, sizeof(err));
		if ((c = policy_combine(a, b, &widens, err, sizeof(err))) != NULL) {
			if (!policy_narrower(a, c, err, sizeof(err)))
				abort();
			policy_free(c);
		} else if (!widens)
			abort();
	}
	policy_free(a);
	policy_free(b);
	/* The cover relation on short halves (entries are at most 200). */
	if (nul != NULL && la <= 200 && len - la - 1 <= 200) {
		x = strndup(s, la);
		y = strndup(nul + 1, len - la - 1);
		(void)policy_glob_covers(x, y, data[0] & 1);
		if (!policy_glob_covers(x, x, 0) || !policy_glob_covers(y, y, 1))
			abort();
		free(x);
		free(y);
	}
	return 0;
}
