/*
 * fuzz_h1.c: the HTTP/1 head rules every daemon shares (common/h1.c) on
 * arbitrary bytes, seeded with the proxy's, the gateway's and the
 * orchestrator's HTTP corpora (tests/fuzz/corpus/h1/). Besides memory
 * safety it checks what the daemons rely on: a head h1_head_end accepts
 * ends in CRLF CRLF within the limit, holds no NUL and no bare CR or LF,
 * and is found again, whole, on its own; a Transfer-Encoding h1_framing
 * accepts names chunked.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h1.h"

static void
check_head(const char *p, size_t n, size_t max)
{
	long e = h1_head_end(p, n, max);
	size_t i, s, len;

	if (e == H1_HEAD_MORE && n >= max)
		abort();		/* n >= max bytes can never end within max */
	if (e <= 0)
		return;
	len = (size_t)e;
	if (len > n || len > max || len < 4 || memcmp(p + len - 4, "\r\n\r\n", 4) != 0)
		abort();
	for (i = 0; i < len; i++) {
		if (p[i] == '\0')
			abort();
		if (p[i] == '\r' && p[i + 1] != '\n')
			abort();
		if (p[i] == '\n' && (i == 0 || p[i - 1] != '\r'))
			abort();
	}
	if (h1_head_end(p, len, max) != e)
		abort();
	/* each field line after the request line, as a daemon would split it */
	for (s = 0; s < len && p[s] != '\n'; s++)
		;
	for (s++; s + 2 < len; ) {
		const char *line = p + s, *colon, *v;
		size_t ll, nl, vl;

		for (ll = 0; s + ll < len && p[s + ll] != '\r'; ll++)
			;
		if (ll == 0)
			break;
		colon = memchr(line, ':', ll);
		if (colon != NULL) {
			nl = (size_t)(colon - line);
			v = colon + 1;
			vl = ll - nl - 1;
			while (vl > 0 && (*v == ' ' || *v == '\t')) {
				v++;
				vl--;
			}
			(void)h1_token_ok(line, nl);
			(void)h1_value_ok(v, vl);
			(void)h1_hop_name(line, nl);
			(void)h1_list_has(v, vl, line, nl);
		}
		s += ll + 2;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	char err[128];
	int st, ncl, nte;

	check_head(p, size, size + 1);
	check_head(p, size, size / 2 + 1);
	check_head(p, size, 4096);
	/* the framing rule on the input as a Transfer-Encoding value */
	ncl = size > 0 ? data[0] % 3 : 0;
	nte = size > 1 ? data[1] % 3 : 1;
	st = h1_framing(ncl, nte, p, size, err, sizeof(err));
	if (st != 0 && st != 400 && st != 501)
		abort();
	if (st == 0 && nte == 1 && !h1_list_has(p, size, "chunked", 7))
		abort();
	if (st == 0 && (ncl > 1 || (nte > 0 && ncl > 0) || nte > 1))
		abort();
	if (h1_reason(size > 3 ? (int)(data[2] | data[3] << 8) : 0) == NULL)
		abort();
	st = h1_version(size > 0 ? data[0] % 4 : 1, 1, err, sizeof(err));
	if (st != 0 && st != 505)
		abort();
	return 0;
}
