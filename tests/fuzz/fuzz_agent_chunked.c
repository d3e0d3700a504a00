/*
 * fuzz_agent_chunked.c: the agent's chunked body decoder. Fed the input in
 * pieces whose sizes come from its first byte, it must never write outside
 * the piece, never report more data than it was given, and decode the same
 * bytes, and stop at the same place, whatever the pieces.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Decodes in[0..n) in pieces of step; the data into out; -1 on error. */
static long
run(const uint8_t *in, size_t n, size_t step, char *out, size_t *outlen,
    size_t *consumed)
{
	struct http_chunked d;
	char err[128], *piece;
	size_t off = 0, k, dl;
	long used;

	memset(&d, 0, sizeof(d));
	*outlen = 0;
	piece = malloc(step);
	while (off < n && !http_chunked_done(&d)) {
		k = n - off < step ? n - off : step;
		memcpy(piece, in + off, k);
		used = http_chunked_decode(&d, piece, k, &dl, err, sizeof(err));
		if (used < 0) {
			free(piece);
			*consumed = off;
			return -1;
		}
		if ((size_t)used > k || dl > (size_t)used)
			abort();
		memcpy(out + *outlen, piece, dl);
		*outlen += dl;
		off += (size_t)used;
		if ((size_t)used < k && !http_chunked_done(&d))
			abort();	/* stops early only at the end */
	}
	free(piece);
	*consumed = off;
	return http_chunked_done(&d);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *a, *b;
	size_t la, lb, ca, cb, step;
	long ra, rb;

	if (size < 1)
		return 0;
	step = (size_t)data[0] % 32 + 1;
	data++;
	size--;
	a = malloc(size + 1);
	b = malloc(size + 1);
	ra = run(data, size, size + 1, a, &la, &ca);
	rb = run(data, size, step, b, &lb, &cb);
	if (ra != rb || (ra >= 0 && (la != lb || memcmp(a, b, la) != 0 || ca != cb)))
		abort();
	free(a);
	free(b);
	return 0;
}
