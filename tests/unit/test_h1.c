/*
 * test_h1.c: the shared HTTP/1.1 head rules (common/h1.c), one table row
 * per rule. Rows marked "was:" are where the daemons' own copies used to
 * decide differently; the comment says who did what.
 */
#include <stdio.h>
#include <string.h>

#include "attrib.h"
#include "h1.h"
#include "unit.h"

#define L(s)	s, sizeof(s) - 1

TEST(test_head_end)
{
	static const struct { const char *in; size_t n, max; long want; } t[] = {
		{ L("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 8192, 27 },
		{ L("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET"), 8192, 27 },	/* pipelined rest */
		{ L("GET / HTTP/1.1\r\nHost: a\r\n"), 8192, H1_HEAD_MORE },
		{ L("GET / HTTP/1.1\r\nHost: a\r"), 8192, H1_HEAD_MORE },	/* CR at the end: wait */
		{ L("GET / HTTP/1.1\nHost: a\n\n"), 8192, H1_HEAD_BAD },	/* bare LF */
		{ L("GET / HTTP/1.1\r\nHost: a\n\r\n"), 8192, H1_HEAD_BAD },
		{ L("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n"), 8192, H1_HEAD_BAD },	/* bare CR */
		{ L("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n"), 8192, H1_HEAD_BAD },
		{ L("GET / HTTP/1.1\r\nHost: a\r\n\tfolded\r\n\r\n"), 8192, H1_HEAD_BAD },
		{ L("GET / HTTP/1.1\r\nX: \0\r\n\r\n"), 8192, H1_HEAD_BAD },	/* NUL */
		/* was: the proxy refused a leading empty line, the gateway skipped it */
		{ L("\r\nGET / HTTP/1.1\r\n\r\n"), 8192, 20 },
		{ L("\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n"), 8192, 26 },
		{ L("\r\n\r\n"), 8192, H1_HEAD_MORE },			/* may still come */
		{ L("\r\n\r\n\r\n\r\n\r\n\r\n"), 8192, H1_HEAD_BAD },	/* not forever */
		{ L("\nGET / HTTP/1.1\r\n\r\n"), 8192, H1_HEAD_BAD },	/* a lone LF first */
		{ L("\r\rGET / HTTP/1.1\r\n\r\n"), 8192, H1_HEAD_BAD },
		/* limits: a head of exactly max bytes passes, max + 1 does not */
		{ L("GET / HTTP/1.1\r\n\r\n"), 18, 18 },
		{ L("GET / HTTP/1.1\r\n\r\n"), 17, H1_HEAD_LARGE },
		{ L("\r\nGET / HTTP/1.1\r\n\r\n"), 19, H1_HEAD_LARGE },	/* leading lines count */
		/* was: the proxy waited for one more byte (n > max), the gateway did not */
		{ L("GET / HTTP/1.1\r\nX: aa"), 21, H1_HEAD_LARGE },
		{ L("GET / HTTP/1.1\r\nX: a"), 21, H1_HEAD_MORE },
	};
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		long got = h1_head_end(t[i].in, t[i].n, t[i].max);

		if (got != t[i].want)
			fprintf(stderr, "  head_end row %zu\n", i);
		CHECK_INT(got, t[i].want);
	}
}

TEST(test_grammar)
{
	CHECK(h1_token_ok(L("Content-Type")));
	CHECK(h1_token_ok(L("x!#$%&'*+-.^_`|~09")));
	CHECK(!h1_token_ok(L("")));
	CHECK(!h1_token_ok(L("a b")));
	CHECK(!h1_token_ok(L("a:b")));
	CHECK(!h1_token_ok(L("a\"b")));
	CHECK(!h1_token_ok(L("a\0b")));	/* was: strchr() took NUL for a tchar */
	CHECK(!h1_token_ok(L("a\x80")));
	CHECK(h1_value_ok(L("text/html; q=0.9\t, x")));
	CHECK(h1_value_ok(L("caf\xc3\xa9")));	/* obs-text passes */
	CHECK(h1_value_ok(L("")));
	CHECK(!h1_value_ok(L("a\rb")));
	CHECK(!h1_value_ok(L("a\nb")));
	CHECK(!h1_value_ok(L("a\0b")));
	CHECK(!h1_value_ok(L("a\x7f")));
	CHECK(!h1_value_ok(L("a\x01")));
}

TEST(test_lists_and_hops)
{
	CHECK(h1_list_has(L("keep-alive, Upgrade"), L("upgrade")));
	CHECK(h1_list_has(L(" ,, close ,"), L("close")));
	CHECK(h1_list_has(L("a,\tX-Secret\t"), L("x-secret")));
	CHECK(!h1_list_has(L("closed"), L("close")));
	CHECK(!h1_list_has(L("close"), L("")));
	CHECK(!h1_list_has(L(",,"), L("")));
	CHECK(h1_hop_name(L("Connection")));
	CHECK(h1_hop_name(L("keep-alive")));
	CHECK(h1_hop_name(L("TE")));
	CHECK(h1_hop_name(L("Trailer")));
	CHECK(h1_hop_name(L("Upgrade")));
	/* was: the gateway listed Proxy-Connection and tested the prefix, the proxy only the prefix */
	CHECK(h1_hop_name(L("Proxy-Connection")));
	CHECK(h1_hop_name(L("proxy-authorization")));
	CHECK(h1_hop_name(L("Proxy-")));
	CHECK(!h1_hop_name(L("Proxy")));
	CHECK(!h1_hop_name(L("Host")));
	CHECK(!h1_hop_name(L("Content-Length")));
	CHECK(!h1_hop_name(L("Transfer-Encoding")));
	CHECK(!h1_hop_name(L("Trailers")));
	CHECK(!h1_hop_name(L("TEE")));
}

TEST(test_framing)
{
	static const struct { int minor, ncl, nte; const char *te; int want; } t[] = {
		{ 1, 0, 0, NULL, 0 },
		{ 1, 1, 0, NULL, 0 },
		{ 1, 2, 0, NULL, 400 },		/* even equal values */
		{ 1, 0, 1, "chunked", 0 },
		{ 1, 0, 1, "Chunked", 0 },
		{ 1, 1, 1, "chunked", 400 },	/* a length and a coding */
		{ 1, 0, 2, "chunked", 400 },	/* several fields */
		/* was: the proxy answered 400 to both of these, the gateway 501 */
		{ 1, 0, 1, "gzip, chunked", 501 },	/* chunked last, a coding we do not decode */
		{ 1, 0, 1, "chunked, gzip", 400 },	/* chunked not last: length unknown */
		{ 1, 0, 1, "gzip", 400 },
		{ 1, 0, 1, " chunked , ", 0 },	/* whitespace and empty elements around it */
		{ 1, 0, 1, "chunked, chunked", 400 },	/* chunked twice: RFC 9112 7 */
		{ 1, 0, 1, "", 400 },
		{ 1, 0, 1, "xchunked", 400 },
		/* was: only the agent refused a coding on HTTP/1.0 (RFC 9112 6.1: faulty framing) */
		{ 0, 0, 1, "chunked", 400 },
		{ 0, 1, 1, "chunked", 400 },
		{ 0, 0, 1, "gzip, chunked", 400 },
		{ 0, 1, 0, NULL, 0 },		/* HTTP/1.0 with a length: fine */
		{ 0, 0, 0, NULL, 0 },
	};
	char err[128];
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		int got;

		err[0] = '\0';
		got = h1_framing(t[i].minor, t[i].ncl, t[i].nte, t[i].te, t[i].te ? strlen(t[i].te) : 0,
		    err, sizeof(err));
		if (got != t[i].want)
			fprintf(stderr, "  framing row %zu\n", i);
		CHECK_INT(got, t[i].want);
		CHECK(got == 0 || err[0] != '\0');
	}
}

TEST(test_version)
{
	char err[64];

	CHECK_INT(h1_version(1, 1, err, sizeof(err)), 0);
	CHECK_INT(h1_version(1, 0, err, sizeof(err)), 0);
	/* was: the proxy took these, the gateway answered 400, the orchestrator 505 */
	CHECK_INT(h1_version(2, 0, err, sizeof(err)), 505);
	CHECK_INT(h1_version(0, 9, err, sizeof(err)), 505);
	CHECK_STR(err, "HTTP version 0.9 is not served");
	/* the version's grammar (RFC 9112 2.3), for what llhttp cannot read */
	CHECK(h1_version_token("GET / HTTP/1.2\r\n", 16, 1));
	CHECK(h1_version_token("\r\n\r\nGET / HTTP/9.9\r\n", 20, 1));
	CHECK(h1_version_token("HTTP/3.0 200 OK\r\n", 17, 0));
	CHECK(!h1_version_token("GET / HTTP/1.2x\r\n", 17, 1));
	CHECK(!h1_version_token("GET / HTTP/12\r\n", 15, 1));
	CHECK(!h1_version_token("GET / http/1.1\r\n", 16, 1));
	CHECK(!h1_version_token("GET /HTTP/1.1\r\n", 15, 1));	/* no space before it */
	CHECK(!h1_version_token("GET / HTTP/1.2\n", 15, 1));	/* bare LF */
	CHECK(!h1_version_token("GET / HTTP/1.2", 14, 1));	/* no line end */
	CHECK(!h1_version_token("HTTP/3.0200 OK\r\n", 16, 0));
	CHECK(!h1_version_token("", 0, 1));
	/* a line with more than two spaces is malformed, whatever it ends with */
	CHECK(!h1_version_token("CONNECT a:443 HTTP/1.1\\r\\nX: y HTTP/1.1\r\n", 41, 1));
	CHECK(!h1_version_token("GET /a b HTTP/1.2\r\n", 19, 1));
	CHECK(!h1_version_token("GET  HTTP/1.2\r\n", 15, 1));
}

TEST(test_reason)
{
	CHECK_STR(h1_reason(200), "OK");
	CHECK_STR(h1_reason(404), "Not Found");
	CHECK_STR(h1_reason(431), "Request Header Fields Too Large");
	CHECK_STR(h1_reason(507), "Insufficient Storage");
	CHECK_STR(h1_reason(999), "Unknown");
	CHECK_STR(h1_reason(-1), "Unknown");
}

int
main(void)
{
	RUN(test_head_end);
	RUN(test_grammar);
	RUN(test_lists_and_hops);
	RUN(test_framing);
	RUN(test_version);
	RUN(test_reason);
	return unit_done();
}
