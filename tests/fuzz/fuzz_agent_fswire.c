/*
 * fuzz_agent_fswire.c: the agent's reading of its file service's messages
 * (fswire.c), which come from a process with the sandbox's identity.
 * Input: one byte choosing a request (even) or a reply (odd), then the
 * message. Every string and entry a parse hands back must lie inside the
 * message and hold no NUL; a reply's entries are walked to the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/fswire.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Aborts unless p[0..n) lies inside b[0..len) and holds no NUL. */
static void
inside(const char *b, size_t len, const char *p, size_t n)
{
	if (n > 0 && (p < b || p + n > b + len || memchr(p, '\0', n) != NULL))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *b = (const char *)data + 1, *p;
	size_t len, left;
	struct fsw_req q;
	struct fsw_rep h;
	struct fsw_msg m;
	struct fsw_ent e;
	int r;

	if (size < 1 || size - 1 > FSW_MSG_MAX)
		return 0;
	len = size - 1;
	if ((data[0] & 1) == 0) {
		if (fsw_req_parse(b, len, &q, &m) == 0) {
			inside(b, len, m.s1, m.n1);
			inside(b, len, m.s2, m.n2);
			if (q.op == 0 || q.op >= FSW_OP_MAX || m.nrest != 0)
				abort();
		}
		return 0;
	}
	if (fsw_rep_parse(b, len, &h, &m) == -1)
		return 0;
	inside(b, len, m.s1, m.n1);
	inside(b, len, m.s2, m.n2);
	if (h.kind == FSW_K_END && m.nrest != 0)
		abort();
	p = m.rest;
	left = m.nrest;
	while ((r = fsw_ent_next(&p, &left, &e)) == 1) {
		inside(b, len, e.rel, e.nrel);
		inside(b, len, e.target, e.ntarget);
		if (e.nrel > 0 && e.rel[0] == '/')
			abort();
	}
	if (r == 0 && left != 0)
		abort();
	return 0;
}
