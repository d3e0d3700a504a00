/*
 * fuzz_gw_http.c: the app gateway's request-head path without sockets:
 * framing (h1_head_end), strict parsing, the routing and authentication
 * decision against two routes (req_decide: Host, query token, Bearer,
 * cookies, Origin, the rewritten head), the body parser over the rest of
 * the input; then the same input as an app's response head through the
 * Set-Cookie / hop-by-hop filter. The first byte picks TLS, a bound route
 * and HEAD handling.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../gateway/auth.h"
#include "../../gateway/gw.h"
#include "../../gateway/head.h"
#include "../../gateway/req.h"
#include "h1.h"
#include "buf.h"

static struct route ra, rb;

static struct route *
find(const char *host)
{
	if (strcmp(host, ra.host) == 0)
		return &ra;
	if (strcmp(host, rb.host) == 0)
		return &rb;
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 1;
	struct gwreq_in in;
	struct gwreq_out o;
	struct h1head h;
	struct buf out;
	char err[256];
	size_t n;
	long end, used;
	int mode;

	if (size < 1)
		return 0;
	mode = data[0];
	n = size - 1;
	if (ra.host[0] == '\0') {
		snprintf(ra.host, sizeof(ra.host), "web-s-0123456789abcdef.apps.localhost");
		snprintf(rb.host, sizeof(rb.host), "pub-s-0123456789abcdef.apps.localhost");
		auth_token_sha256("tok", 3, ra.sha);
		auth_token_sha256("tok2", 4, rb.sha);
		rb.public = 1;
	}
	end = h1_head_end(p, n, 32768);
	if (end <= 0)
		return 0;
	memset(&h, 0, sizeof(h));
	buf_init(&out, 1 << 20);
	if (gwhead_parse(&h, HTTP_REQUEST, p, (size_t)end, 100, 8192, err, sizeof(err)) == 0) {
		memset(&in, 0, sizeof(in));
		in.tls = mode & 1;
		in.client_ip = "192.0.2.1";
		in.bound = (mode & 2) ? &ra : NULL;
		in.find = find;
		if (req_decide(&in, &h, &out, &o) == GWREQ_FORWARD && !h.msg_done) {
			used = h1head_body(&h, p + end, n - (size_t)end);
			(void)used;
		}
	}
	h1head_free(&h);
	memset(&h, 0, sizeof(h));
	h.skip_body = (mode & 4) != 0;
	buf_reset(&out);
	if (gwhead_parse(&h, HTTP_RESPONSE, p, (size_t)end, 100, 8192, err, sizeof(err)) == 0 &&
	    req_response(&h, mode & 1, (mode & 8) != 0, (mode & 16) ? 0 : 1, &out) == 0 &&
	    !h.msg_done)
		(void)h1head_body(&h, p + end, n - (size_t)end);
	h1head_free(&h);
	buf_free(&out);
	return 0;
}
