/*
 * fuzz_pktline.c: the receive-pack command list reader (egress-proxy/
 * pktline.c). The input is a request body: it is fed whole and also in
 * growing prefixes (as the proxy sees it arrive), with and without eof;
 * both must agree, DONE must point inside the input, every command's ref
 * must be inside it and valid, and a refusal report must build.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/pktline.h"

#define FZ_ASSERT(e) do { if (!(e)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *b = (const char *)data;
	struct pktl whole, inc;
	struct buf out;
	const char **why;
	size_t i, step;
	int rw, ri = PKTL_MORE;

	pktl_init(&whole);
	rw = pktl_feed(&whole, b, size, 1);
	FZ_ASSERT(rw == PKTL_DONE || rw == PKTL_ERR);
	FZ_ASSERT(rw != PKTL_ERR || whole.err[0] != '\0');
	/* Incremental feeding in uneven steps reaches the same verdict. */
	pktl_init(&inc);
	step = size > 0 ? (size_t)data[0] % 61 + 1 : 1;
	for (i = 0; i <= size && ri == PKTL_MORE; i += step)
		ri = pktl_feed(&inc, b, i < size ? i : size, i >= size);
	if (ri == PKTL_MORE)
		ri = pktl_feed(&inc, b, size, 1);
	FZ_ASSERT(ri == rw);
	if (rw == PKTL_DONE) {
		FZ_ASSERT(whole.pos <= size && whole.pos == inc.pos && whole.ncmd == inc.ncmd);
		for (i = 0; i < whole.ncmd; i++) {
			FZ_ASSERT((size_t)whole.cmd[i].ref_o + whole.cmd[i].ref_l <= size);
			FZ_ASSERT(pktl_ref_ok(b + whole.cmd[i].ref_o, whole.cmd[i].ref_l));
		}
		why = calloc(whole.ncmd + 1, sizeof(*why));
		buf_init(&out, 4 << 20);
		FZ_ASSERT(pktl_report(&whole, b, why, &out) == 0);
		buf_free(&out);
		free(why);
	}
	pktl_free(&whole);
	pktl_free(&inc);
	return 0;
}
