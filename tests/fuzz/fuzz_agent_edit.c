/*
 * fuzz_agent_edit.c: the agent's edit logic (view ranges, str_replace,
 * insert). Input: one op byte, two range bytes, then file text, old and
 * new separated by NUL bytes. Checks the size invariants of every edit.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/edit.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 3, *end = (const char *)data + size;
	const char *f[3] = { "", "", "" };
	size_t fl[3] = { 0, 0, 0 }, i, lines;
	struct buf out, snip;
	char err[1024];
	long long a, b;
	int op;

	if (size < 3)
		return 0;
	op = data[0] % 4;
	a = (signed char)data[1];
	b = (signed char)data[2];
	for (i = 0; i < 3 && p <= end; i++) {
		const char *z = memchr(p, '\0', (size_t)(end - p));
		f[i] = p;
		fl[i] = (size_t)((z ? z : end) - p);
		p = (z ? z : end) + 1;
	}
	buf_init(&out, EDIT_MAX_FILE);
	buf_init(&snip, 1 << 22);
	lines = edit_count_lines(f[0], fl[0]);
	switch (op) {
	case 0:
		if (edit_view(f[0], fl[0], a, b, &out, err, sizeof(err)) == 0 &&
		    edit_count_lines(out.p ? out.p : "", out.len) > lines)
			abort();
		break;
	case 1:
		if (edit_str_replace(f[0], fl[0], f[1], fl[1], f[2], fl[2], &out, &snip,
		    err, sizeof(err)) == 0) {
			if (out.len != fl[0] - fl[1] + fl[2])
				abort();
			if (fl[2] > 0 && memmem(out.p, out.len, f[2], fl[2]) == NULL)
				abort();
		} else if (err[0] == '\0')
			abort();
		break;
	case 2:
		if (edit_insert(f[0], fl[0], a, f[1], fl[1], &out, &snip, err,
		    sizeof(err)) == 0) {
			if (out.len < fl[0] + fl[1] || out.len > fl[0] + fl[1] + 2)
				abort();
		} else if (a >= 0 && (size_t)a <= lines)
			abort();
		break;
	default:
		(void)edit_is_binary(f[0], fl[0]);
		break;
	}
	buf_free(&out);
	buf_free(&snip);
	return 0;
}
