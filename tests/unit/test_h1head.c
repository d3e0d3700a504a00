/*
 * test_h1head.c: the head store the proxy and the gateway share
 * (common/h1head.c): what a head's read decides, response bodies, field
 * editing and the peer/daemon line hop-by-hop stripping keeps, writing a
 * head back, the body read up to the message's end, every string of the
 * head NUL-terminated, a chunked body's trailers dropped and the end of
 * input (h1head_finish) ending only a body delimited by it.
 */
#include <stdio.h>
#include <string.h>

#include "attrib.h"
#include "buf.h"
#include "h1head.h"
#include "unit.h"

#define L(s)	s, sizeof(s) - 1

static int
parse(struct h1head *r, int type, const char *s, size_t n, size_t maxh)
{
	char err[128];

	return h1head_parse(r, type, s, n, maxh, err, sizeof(err));
}

TEST(test_parse_verdicts)
{
	static const struct { const char *in; size_t n; int want; } t[] = {
		{ L("GET /a HTTP/1.1\r\nHost: x\r\n\r\n"), 0 },
		{ L("GET /a HTTP/2.0\r\nHost: x\r\n\r\n"), 505 },
		{ L("GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n"), 400 },
		{ L("POST /a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501 },
		{ L("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"), 400 },
		{ L("GET /a HTTP/1.1\r\nX: a\x01" "b\r\n\r\n"), 400 },
		{ L("GET /a HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"), 431 },	/* maxh 3 */
		{ L("GET /a HTTP/1.1\r\nHost : x\r\n\r\n"), 400 },
	};
	struct h1head r;
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		h1head_init(&r, 4096);
		if (parse(&r, HTTP_REQUEST, t[i].in, t[i].n, 3) != t[i].want) {
			fprintf(stderr, "row %zu\n", i);
			CHECK(0);
		}
		h1head_free(&r);
	}
	/* data full while reading: 431, not a crash or a 400 */
	h1head_init(&r, 16);
	CHECK_INT(parse(&r, HTTP_REQUEST, L("GET /aaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\n\r\n"), 8), 431);
	h1head_free(&r);
}

TEST(test_response_bodies)
{
	struct h1head r;

	h1head_init(&r, 4096);
	CHECK_INT(parse(&r, HTTP_RESPONSE, L("HTTP/1.1 204 No Content\r\n\r\n"), 8), 0);
	CHECK(r.msg_done);
	CHECK_INT(r.status, 204);
	CHECK_INT(parse(&r, HTTP_RESPONSE, L("HTTP/1.1 200 Fine\r\nContent-Length: 5\r\n\r\n"), 8), 0);
	CHECK(!r.msg_done);
	CHECK_INT((long)r.content_length, 5);
	CHECK_INT(h1head_body(&r, L("helloHTTP/1.1")), 5);	/* stops at the message's end */
	CHECK(r.msg_done);
	/* a response to HEAD has no body whatever it declares */
	r.skip_body = 1;
	CHECK_INT(parse(&r, HTTP_RESPONSE, L("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"), 8), 0);
	CHECK(r.msg_done);
	CHECK_INT(h1head_body(&r, L("hello")), 0);
	h1head_free(&r);
}

TEST(test_edit_and_hop)
{
	static const char in[] = "GET /p HTTP/1.1\r\nHost: x\r\nConnection: close, X-Mine\r\n"
	    "X-Mine: peer\r\nKeep-Alive: 5\r\nProxy-Foo: 1\r\nTE: trailers\r\nA: 1\r\n\r\n";
	struct h1head r;
	struct buf out;
	size_t n;

	h1head_init(&r, 4096);
	CHECK_INT(parse(&r, HTTP_REQUEST, in, sizeof(in) - 1, 64), 0);
	/* the daemon's own X-Mine survives the peer's Connection naming it */
	CHECK_INT(h1head_add(&r, "X-Mine", "daemon", 6), 0);
	h1head_strip_hop(&r);
	CHECK_INT(h1head_count(&r, "x-mine", NULL), 1);
	CHECK_STR(h1head_get(&r, "x-mine", &n), "daemon");
	CHECK(h1head_get(&r, "connection", NULL) == NULL);
	CHECK(h1head_get(&r, "keep-alive", NULL) == NULL);
	CHECK(h1head_get(&r, "proxy-foo", NULL) == NULL);
	CHECK(h1head_get(&r, "te", NULL) == NULL);
	CHECK(h1head_get(&r, "host", NULL) != NULL);
	CHECK_INT(h1head_del(&r, "a"), 1);
	CHECK_INT(h1head_del(&r, "a"), 0);
	buf_init(&out, 4096);
	CHECK_INT(h1head_write(&r, "/q", 2, &out), 0);
	CHECK_STR(out.p, "GET /q HTTP/1.1\r\nHost: x\r\nX-Mine: daemon\r\n\r\n");
	buf_free(&out);
	/* adding beyond data's room fails and leaves the head as it was */
	CHECK_INT(h1head_add(&r, "Big", in, 4096), -1);
	CHECK(h1head_get(&r, "big", NULL) == NULL);
	CHECK_INT(h1head_add(&r, "Small", "1", 1), 0);
	h1head_free(&r);
}

TEST(test_write_response)
{
	struct h1head r;
	struct buf out;

	h1head_init(&r, 4096);
	CHECK_INT(parse(&r, HTTP_RESPONSE, L("HTTP/1.0 404\r\nX: y\r\n\r\n"), 8), 0);
	buf_init(&out, 4096);
	CHECK_INT(h1head_write(&r, NULL, 0, &out), 0);
	/* no reason read: the shared status text */
	CHECK_STR(out.p, "HTTP/1.0 404 Not Found\r\nX: y\r\n\r\n");
	buf_free(&out);
	h1head_free(&r);
}

/* Every value reads as a C string, its blanks cut; an empty one is "". */
TEST(test_c_strings)
{
	struct h1head r;
	const char *v;
	size_t n;

	h1head_init(&r, 4096);
	CHECK_INT(parse(&r, HTTP_REQUEST, L("GET /p?q=1 HTTP/1.1\r\nHost: x \t\r\nE:\r\n"
	    "F:   \r\nAccept: a/b\r\n\r\n"), 16), 0);
	CHECK_STR(r.data.p + r.url_o, "/p?q=1");
	CHECK_STR(h1head_get(&r, "host", &n), "x");
	CHECK_INT((long)n, 1);
	CHECK_STR(h1head_get(&r, "e", &n), "");
	CHECK_INT((long)n, 0);
	CHECK_STR(h1head_get(&r, "f", NULL), "");
	CHECK_STR(h1head_get(&r, "accept", NULL), "a/b");
	CHECK_STR(r.data.p + r.h[0].no, "Host");
	CHECK_INT(h1head_add(&r, "X-Added", "vv", 2), 0);
	CHECK_STR(h1head_get(&r, "x-added", NULL), "vv");
	CHECK_STR(r.data.p + r.h[r.nh - 1].no, "X-Added");
	/* a response's reason too */
	CHECK_INT(parse(&r, HTTP_RESPONSE, L("HTTP/1.1 200 Fine Here\r\nA: b\r\n\r\n"), 16), 0);
	CHECK_STR(r.data.p + r.reason_o, "Fine Here");
	CHECK_STR(v = h1head_get(&r, "a", NULL), "b");
	h1head_free(&r);
}

/* A chunked body's trailer fields are not the head's: data stays put. */
TEST(test_trailers_dropped)
{
	static const char body[] = "3\r\nabc\r\n0\r\nX-Trailer: t\r\nHost: evil\r\n\r\nGET";
	struct h1head r;
	const char *host, *data;
	size_t nh, len;

	h1head_init(&r, 4096);
	CHECK_INT(parse(&r, HTTP_REQUEST, L("POST /u HTTP/1.1\r\nHost: x\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"), 16), 0);
	host = h1head_get(&r, "host", NULL);
	data = r.data.p;
	nh = r.nh;
	len = r.data.len;
	CHECK_INT(h1head_body(&r, body, sizeof(body) - 1), (long)(sizeof(body) - 1 - 3));
	CHECK(r.msg_done);
	CHECK(r.nh == nh && r.data.len == len && r.data.p == data);
	CHECK(h1head_get(&r, "x-trailer", NULL) == NULL);
	CHECK_INT(h1head_count(&r, "host", NULL), 1);
	CHECK_STR(host, "x");
	h1head_free(&r);
}

static int
sink(void *arg, const char *p, size_t n)
{
	struct buf *b = arg;

	CHECK(n > 0);	/* never an empty call, even for the end of input */
	return buf_add(b, p, n);
}

/* The end of input (the peer's close) ends a body delimited by it, and only that. */
TEST(test_finish)
{
	static const struct {
		const char *head, *body;
		int want;
		const char *got;
	} t[] = {
		/* delimited by the close: bytes, or none at all (still paused at the head) */
		{ "HTTP/1.1 200 OK\r\n\r\n", "until-eof", 0, "until-eof" },
		{ "HTTP/1.1 200 OK\r\n\r\n", "", 0, "" },
		{ "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n", "a", 0, "a" },
		/* cut by the close */
		{ "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", "short", -1, "short" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", "", -1, "" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "3\r\nabc\r\n", -1, "abc" },
		/* whole before the close: the close changes nothing */
		{ "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", "ok", 0, "ok" },
		{ "HTTP/1.1 204 No Content\r\n\r\n", "", 0, "" },
		{ "HTTP/1.1 100 Continue\r\n\r\n", "", 0, "" },
	};
	struct h1head r;
	struct buf b;
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		h1head_init(&r, 4096);
		buf_init(&b, 1024);
		r.on_body = sink;
		r.arg = &b;
		CHECK_INT(parse(&r, HTTP_RESPONSE, t[i].head, strlen(t[i].head), 8), 0);
		if (*t[i].body != '\0')
			CHECK_INT(h1head_body(&r, t[i].body, strlen(t[i].body)), (long)strlen(t[i].body));
		if (!r.msg_done)	/* an empty feed mid-body is no empty body call */
			CHECK_INT(h1head_body(&r, "", 0), 0);
		if (h1head_finish(&r) != t[i].want || b.len != strlen(t[i].got) ||
		    (b.len > 0 && memcmp(b.p, t[i].got, b.len) != 0)) {
			fprintf(stderr, "row %zu\n", i);
			CHECK(0);
		}
		CHECK_INT(r.msg_done, t[i].want == 0);
		CHECK_INT(h1head_finish(&r), t[i].want);	/* again: the same answer */
		h1head_free(&r);
		buf_free(&b);
	}
	/* a body whose framing already failed is never whole */
	h1head_init(&r, 4096);
	CHECK_INT(parse(&r, HTTP_RESPONSE, L("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), 8), 0);
	CHECK_INT(h1head_body(&r, L("zz\r\n")), -1);
	CHECK_INT(h1head_finish(&r), -1);
	h1head_free(&r);
}

int
main(void)
{
	RUN(test_parse_verdicts);
	RUN(test_response_bodies);
	RUN(test_edit_and_hop);
	RUN(test_write_response);
	RUN(test_c_strings);
	RUN(test_trailers_dropped);
	RUN(test_finish);
	return unit_done();
}
