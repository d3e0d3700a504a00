/*
 * test_agent_http.c: the agent's request heads (agent/http.c on
 * common/h1head.c): what it fills in, and the status of each refusal,
 * rows marked "was:" where its own parser decided otherwise.
 */
#include <string.h>

#include "../../agent/http.h"
#include "unit.h"

struct row {
	const char	*name;
	const char	*head;
	int		 want;	/* HTTP_DONE, HTTP_NEED_MORE or a status */
};

static const struct row rows[] = {
	{ "plain", "GET /v1/health HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_DONE },
	{ "leading CRLF", "\r\nGET /v1/health HTTP/1.1\r\n\r\n", HTTP_DONE },
	{ "partial", "GET /v1/he", HTTP_NEED_MORE },
	{ "partial, a CR of an empty line", "\r", HTTP_NEED_MORE },
	{ "garbage before the end: at once", "\x16\x03\x01", 400 },
	{ "a method too long: at once", "ABCDEFGHIJKLMNOPQRS", 400 },
	{ "M-SEARCH (was: 400)", "M-SEARCH /v1/x HTTP/1.1\r\n\r\n", HTTP_DONE },
	{ "PROPFIND (was: 400)", "PROPFIND /v1/x HTTP/1.1\r\n\r\n", HTTP_DONE },
	{ "method llhttp does not know (was: taken)", "FOO /v1/x HTTP/1.1\r\n\r\n", 400 },
	{ "lower-case method", "get /v1/x HTTP/1.1\r\n\r\n", 400 },
	{ "HTTP/2.0 (was: 400)", "GET /v1/x HTTP/2.0\r\n\r\n", 505 },
	{ "no version (was: 400)", "GET /v1/x\r\n\r\n", 505 },
	{ "HTTP/1.0", "GET /v1/x HTTP/1.0\r\n\r\n", HTTP_DONE },
	{ "bare LF", "GET /v1/x HTTP/1.1\nHost: a\n\n", 400 },
	{ "obs-fold", "GET /v1/x HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400 },
	{ "space before colon", "GET /v1/x HTTP/1.1\r\nX : a\r\n\r\n", 400 },
	{ "absolute-form target", "GET http://x/v1/x HTTP/1.1\r\n\r\n", 400 },
	{ "CONNECT", "CONNECT x:443 HTTP/1.1\r\n\r\n", 400 },
	{ "two equal Content-Length", "POST /v1/x HTTP/1.1\r\nContent-Length: 1\r\n"
	    "Content-Length: 1\r\n\r\n", 400 },
	{ "Content-Length list", "POST /v1/x HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\n", 400 },
	{ "Content-Length past 2^64 (was: 431)", "POST /v1/x HTTP/1.1\r\n"
	    "Content-Length: 99999999999999999999999\r\n\r\n", 400 },
	{ "Content-Length past 2^40", "POST /v1/x HTTP/1.1\r\n"
	    "Content-Length: 1099511627777\r\n\r\n", 431 },
	{ "chunked", "POST /v1/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_DONE },
	{ "chunked on HTTP/1.0", "POST /v1/x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400 },
	{ "gzip (was: 501)", "POST /v1/x HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400 },
	{ "chunked, gzip (was: 501)", "POST /v1/x HTTP/1.1\r\n"
	    "Transfer-Encoding: chunked, gzip\r\n\r\n", 400 },
	{ "gzip, chunked", "POST /v1/x HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501 },
	{ "Content-Length and chunked", "POST /v1/x HTTP/1.1\r\nContent-Length: 1\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", 400 },
	{ "unknown Expect", "POST /v1/x HTTP/1.1\r\nExpect: magic\r\n\r\n", 400 },
	{ "two Authorization", "GET /v1/x HTTP/1.1\r\nAuthorization: a\r\n"
	    "Authorization: b\r\n\r\n", 400 },
};

TEST(test_agent_http_rows)
{
	struct http_req r;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int got = http_parse_head(rows[i].head, strlen(rows[i].head), &r, err,
		    sizeof(err));

		if (got != rows[i].want)
			fprintf(stderr, "  %s: got %d (%s), want %d\n", rows[i].name, got,
			    got > 1 ? err : "", rows[i].want);
		CHECK_INT(got, rows[i].want);
	}
}

TEST(test_agent_http_fields)
{
	static const char h[] = "POST /v1/files/raw?path=a%20b&x=1 HTTP/1.1\r\n"
	    "Host: a\r\nContent-Length: 12\r\nExpect: 100-Continue\r\n"
	    "Authorization: Bearer t0k  \r\nConnection: close\r\n\r\nbody";
	struct http_req r;
	char err[256];

	CHECK_INT(http_parse_head(h, sizeof(h) - 1, &r, err, sizeof(err)), HTTP_DONE);
	CHECK_STR(r.method, "POST");
	CHECK_STR(r.path, "/v1/files/raw");
	CHECK_STR(r.query, "path=a%20b&x=1");
	CHECK_INT(r.head_len, sizeof(h) - 1 - 4);
	CHECK_INT(r.has_length, 1);
	CHECK_INT(r.content_length, 12);
	CHECK_INT(r.chunked, 0);
	CHECK_INT(r.expect_continue, 1);
	CHECK_INT(r.has_auth, 1);
	CHECK_STR(r.auth, "Bearer t0k");
	CHECK_INT(r.keepalive, 0);
}

TEST(test_agent_http_keepalive)
{
	struct http_req r;
	char err[256];

	CHECK_INT(http_parse_head("GET / HTTP/1.1\r\n\r\n", 18, &r, err, sizeof(err)), HTTP_DONE);
	CHECK_INT(r.keepalive, 1);
	CHECK_INT(http_parse_head("GET / HTTP/1.0\r\n\r\n", 18, &r, err, sizeof(err)), HTTP_DONE);
	CHECK_INT(r.keepalive, 0);
	CHECK_INT(http_parse_head("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 42, &r, err,
	    sizeof(err)), HTTP_DONE);
	CHECK_INT(r.keepalive, 1);
}

/* The limits: a head, its field count, its target. */
TEST(test_agent_http_limits)
{
	static char h[HTTP_MAX_HEAD + 256];
	struct http_req r;
	char err[256];
	size_t n, i;

	n = (size_t)snprintf(h, sizeof(h), "GET / HTTP/1.1\r\n");
	for (i = 0; i < HTTP_MAX_HEADERS + 1; i++)
		n += (size_t)snprintf(h + n, sizeof(h) - n, "X: 1\r\n");
	n += (size_t)snprintf(h + n, sizeof(h) - n, "\r\n");
	CHECK_INT(http_parse_head(h, n, &r, err, sizeof(err)), 431);
	memset(h, 'a', sizeof(h));
	memcpy(h, "GET /", 5);
	CHECK_INT(http_parse_head(h, HTTP_MAX_HEAD, &r, err, sizeof(err)), 431);
	n = 5 + HTTP_MAX_TARGET;
	n += (size_t)snprintf(h + n, sizeof(h) - n, " HTTP/1.1\r\n\r\n");
	CHECK_INT(http_parse_head(h, n, &r, err, sizeof(err)), 431);
	n = 4 + HTTP_MAX_TARGET;
	n += (size_t)snprintf(h + n, sizeof(h) - n, " HTTP/1.1\r\n\r\n");
	CHECK_INT(http_parse_head(h, n, &r, err, sizeof(err)), HTTP_DONE);
}

int
main(void)
{
	RUN(test_agent_http_rows);
	RUN(test_agent_http_fields);
	RUN(test_agent_http_keepalive);
	RUN(test_agent_http_limits);
	return unit_done();
}
