/*
 * test_proxy_hop.c: hop-by-hop removal happens before the addon and never
 * removes what the proxy injects; what the audit calls "injected" is what
 * hreq_build wrote (issue 13).
 */
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/httpreq.h"
#include "attrib.h"
#include "h1.h"
#include "unit.h"

static struct target gh;

static int
parse(struct hreq *r, const char *head)
{
	char err[256];
	long end = h1_head_end(head, strlen(head), 8192);

	if (end <= 0)
		return -1;
	r->allow_connect = 0;
	if (hreq_parse(r, head, (size_t)end, err, sizeof(err)) != 0)
		return -1;
	return hreq_check_target(r, &gh, NULL, err, sizeof(err));
}

/*
 * What the proxy does with an intercepted request: strip the client's
 * hop-by-hop headers, drop its credentials, inject (as an addon would),
 * build. Returns the head sent (free it) and *sent the audit's injected.
 */
static char *
forward(const char *head, const char *name, const char *value, int *sent, int *ok)
{
	struct hreq r;
	struct buf out;
	char *s = NULL;
	size_t n;

	hreq_init(&r, 8192, 100);
	buf_init(&out, 65536);
	*sent = -1;
	*ok = -1;
	if (parse(&r, head) == 0) {
		h1head_strip_hop(&r.hd);
		h1head_del(&r.hd, "authorization");
		h1head_del(&r.hd, "proxy-authorization");
		if (name == NULL || hreq_inject(&r, name, value, "rule-1") == 0) {
			*ok = hreq_cred_ok(&r);
			if (hreq_build(&r, &gh, &out) == 0) {
				s = buf_steal(&out, &n);
				*sent = r.sent_cred;
			}
		}
	}
	buf_free(&out);
	hreq_free(&r);
	return s;
}

TEST(test_connection_cannot_strip_injected)
{
	int sent, ok;
	char *s;

	/* the attack of issue 13: Connection names the injected header */
	s = forward("GET /o/r HTTP/1.1\r\nHost: github.com\r\nConnection: close, Authorization\r\n"
	    "X-A: 1\r\n\r\n", "Authorization", "Bearer tok123", &sent, &ok);
	CHECK(s != NULL);
	if (s != NULL) {
		CHECK_STR(s, "GET /o/r HTTP/1.1\r\nHost: github.com\r\nX-A: 1\r\n"
		    "Authorization: Bearer tok123\r\n\r\n");
		free(s);
	}
	CHECK_INT(sent, 1);
	CHECK_INT(ok, 1);
	/* other spellings, two Connection headers, a header set by the proxy */
	s = forward("GET / HTTP/1.1\r\nHost: github.com\r\nconnection: X-Hop\r\n"
	    "Connection: keep-alive ,  authorization ,PRIVATE-TOKEN\r\nX-Hop: 1\r\n"
	    "Private-Token: client\r\n\r\n", "PRIVATE-TOKEN", "glpat-1", &sent, &ok);
	CHECK(s != NULL);
	if (s != NULL) {
		CHECK(strstr(s, "X-Hop") == NULL);
		CHECK(strstr(s, "client") == NULL);
		CHECK(strstr(s, "\r\nPRIVATE-TOKEN: glpat-1\r\n") != NULL);
		CHECK(strstr(s, "onnection") == NULL);
		free(s);
	}
	CHECK_INT(sent, 1);
}

TEST(test_hop_stripped_before_addon)
{
	struct hreq r;

	hreq_init(&r, 8192, 100);
	CHECK_INT(parse(&r, "GET / HTTP/1.1\r\nHost: github.com\r\nConnection: X-Secret\r\n"
	    "X-Secret: s\r\nKeep-Alive: 5\r\nTE: trailers\r\nProxy-Foo: 1\r\nUpgrade-Insecure-Requests: 1\r\n"
	    "Content-Length: 0\r\n\r\n"), 0);
	h1head_strip_hop(&r.hd);
	/* what an addon's ctx would see: no hop-by-hop header is left */
	CHECK(h1head_get(&r.hd, "x-secret", NULL) == NULL);
	CHECK(h1head_get(&r.hd, "connection", NULL) == NULL);
	CHECK(h1head_get(&r.hd, "keep-alive", NULL) == NULL);
	CHECK(h1head_get(&r.hd, "te", NULL) == NULL);
	CHECK(h1head_get(&r.hd, "proxy-foo", NULL) == NULL);
	/* end-to-end headers and the proxy's own framing and target stay */
	CHECK(h1head_get(&r.hd, "upgrade-insecure-requests", NULL) != NULL);
	CHECK(h1head_get(&r.hd, "host", NULL) != NULL);
	CHECK(h1head_get(&r.hd, "content-length", NULL) != NULL);
	/* the addon may set a header the client had named in Connection */
	CHECK_INT(hreq_set(&r, "X-Secret", "from-addon"), 0);
	{
		struct buf out;
		buf_init(&out, 65536);
		CHECK_INT(hreq_build(&r, &gh, &out), 0);
		CHECK(out.p != NULL && strstr(out.p, "\r\nX-Secret: from-addon\r\n") != NULL);
		buf_free(&out);
	}
	hreq_free(&r);
}

TEST(test_injected_is_what_was_sent)
{
	static const struct {
		const char	*name, *value;
		int		 ok;	/* hreq_cred_ok and sent_cred */
	} t[] = {
		{ "Authorization", "Bearer abc", 1 },
		{ "Authorization", "token abc", 1 },
		{ "Authorization", "Bearer ", 0 },	/* an empty token file */
		{ "Authorization", "Bearer", 0 },
		{ "Authorization", "   ", 0 },
		{ "Authorization", "", 0 },
		{ "Authorization", "Basic \t ", 0 },
		{ "PRIVATE-TOKEN", "glpat-x", 1 },
		{ "PRIVATE-TOKEN", "", 0 },
		{ "PRIVATE-TOKEN", " \t", 0 },
		/* a name the proxy never forwards: not sent, so not injected */
		{ "Proxy-Authorization", "Basic abc", 1 },
	};
	size_t i;
	int sent, ok;
	char *s;

	for (i = 0; i < NELEM(t); i++) {
		s = forward("GET / HTTP/1.1\r\nHost: github.com\r\n\r\n", t[i].name, t[i].value,
		    &sent, &ok);
		CHECK(s != NULL);
		if (ok != t[i].ok)
			fprintf(stderr, "  case %zu: %s: '%s' cred_ok %d\n", i, t[i].name, t[i].value, ok);
		CHECK_INT(ok, t[i].ok);
		if (strcasecmp(t[i].name, "proxy-authorization") == 0)
			CHECK_INT(sent, 0);
		else
			CHECK_INT(sent, t[i].ok);
		free(s);
	}
	/* nothing injected: nothing sent, whatever the client had */
	s = forward("GET / HTTP/1.1\r\nHost: github.com\r\nAuthorization: Bearer client\r\n\r\n",
	    NULL, NULL, &sent, &ok);
	CHECK(s != NULL && strstr(s, "client") == NULL);
	CHECK_INT(sent, 0);
	CHECK_INT(ok, 0);
	free(s);
	/* an injected header removed again after the injection is not sent */
	{
		struct hreq r;
		struct buf out;

		hreq_init(&r, 8192, 100);
		buf_init(&out, 65536);
		CHECK_INT(parse(&r, "GET / HTTP/1.1\r\nHost: github.com\r\n\r\n"), 0);
		CHECK_INT(hreq_inject(&r, "Authorization", "Bearer abc", "r"), 0);
		CHECK_INT(h1head_del(&r.hd, "authorization"), 1);
		CHECK_INT(hreq_cred_ok(&r), 0);
		CHECK_INT(hreq_build(&r, &gh, &out), 0);
		CHECK_INT(r.sent_cred, 0);
		CHECK(r.injected == 1);
		buf_free(&out);
		hreq_free(&r);
	}
}

int
main(void)
{
	char err[256];

	if (canon_authority("github.com:443", 14, &gh, err, sizeof(err)) == -1)
		return 1;
	RUN(test_connection_cannot_strip_injected);
	RUN(test_hop_stripped_before_addon);
	RUN(test_injected_is_what_was_sent);
	return unit_done();
}
