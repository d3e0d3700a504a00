/*
 * fuzz_proxy_request.c: the proxy's request path without sockets: framing
 * (h1_head_end), strict parsing, the 421 target check (both as an
 * intercepted CONNECT and as plain proxying), CONNECT target
 * canonicalisation, addon-style header edits, re-framing, then the body
 * parser over the rest of the input. The first byte picks the mode.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/canon.h"
#include "../../egress-proxy/httpreq.h"
#include "buf.h"
#include "h1.h"

static int
sink(void *arg, const char *p, size_t n)
{
	size_t *total = arg;

	(void)p;
	*total += n;
	return *total > (1u << 20) ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hreq r;
	struct target t;
	struct buf out;
	char err[256];
	const char *p;
	size_t n, total = 0;
	long end, used;
	int mode, st;

	if (size < 1)
		return 0;
	mode = data[0];
	p = (const char *)data + 1;
	n = size - 1;
	hreq_init(&r, 4096, 32);
	buf_init(&out, 65536);
	r.hd.on_body = sink;
	r.hd.arg = &total;
	if (canon_authority("github.com:443", 14, &t, err, sizeof(err)) == -1)
		abort();
	end = h1_head_end(p, n, 4096);
	if (end <= 0)
		goto out;
	r.allow_connect = (mode & 1) != 0;
	st = hreq_parse(&r, p, (size_t)end, err, sizeof(err));
	if (st != 0)
		goto out;
	if (r.hd.method == HTTP_CONNECT) {
		struct target ct;
		(void)canon_authority(r.hd.data.p + r.hd.url_o, r.hd.url_l, &ct, err, sizeof(err));
		goto out;
	}
	st = hreq_check_target(&r, (mode & 2) == 0 ? &t : NULL, &t, err, sizeof(err));
	if (st != 0)
		goto out;
	h1head_del(&r.hd, "authorization");
	if (mode & 4)
		(void)hreq_set(&r, "X-Fuzz", "v");
	if (hreq_inject(&r, "Authorization", "Basic eC1hY2Nlc3MtdG9rZW46dA==", "fuzz") != 0)
		abort();
	if (hreq_build(&r, &t, &out) == 0) {
		/* The rebuilt head must itself be a valid, identical-target request. */
		struct hreq r2;
		struct target t2 = t;
		long e2;
		hreq_init(&r2, 1 << 20, 1000);
		e2 = h1_head_end(out.p, out.len, 1 << 20);
		if (e2 != (long)out.len)
			abort();
		if (hreq_parse(&r2, out.p, out.len, err, sizeof(err)) != 0)
			abort();
		if ((mode & 2) == 0) {
			if (hreq_check_target(&r2, &t2, NULL, err, sizeof(err)) != 0)
				abort();
		} else {
			size_t hl;
			const char *h = h1head_get(&r2.hd, "host", &hl);
			if (h == NULL || hl != strlen(t.hosthdr) || memcmp(h, t.hosthdr, hl) != 0)
				abort();
		}
		if (h1head_get(&r2.hd, "proxy-authorization", NULL) != NULL)
			abort();
		hreq_free(&r2);
	}
	p += end;
	n -= (size_t)end;
	while (n > 0 && !r.hd.msg_done) {
		size_t step = n > 7 ? 7 : n;
		used = h1head_body(&r.hd, p, step);
		if (used < 0)
			break;
		p += used;
		n -= (size_t)used;
		if ((size_t)used < step && !r.hd.msg_done)
			abort();
	}
out:
	buf_free(&out);
	hreq_free(&r);
	return 0;
}
