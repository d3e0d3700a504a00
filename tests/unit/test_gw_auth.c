/*
 * test_gw_auth.c: the app gateway's pure request rules (gateway/auth.c,
 * gateway/head.c, gateway/req.c): Host normalisation, the query token,
 * cookies, Bearer, Origin, the constant-time compare, head framing and the
 * forward decision.
 */
#include <stdio.h>
#include <string.h>

#include "../../gateway/auth.h"
#include "../../gateway/gw.h"
#include "../../gateway/head.h"
#include "../../gateway/req.h"
#include "h1.h"
#include "unit.h"

static int
norm(const char *in, char *out, int *port)
{
	return auth_host_norm(in, strlen(in), out, GW_HOST_MAX + 1, port);
}

TEST(test_host_norm)
{
	char h[GW_HOST_MAX + 1];
	int port;

	CHECK_INT(norm("Web-S-1.Apps.Localhost", h, &port), 0);
	CHECK_STR(h, "web-s-1.apps.localhost");
	CHECK_INT(port, 0);
	CHECK_INT(norm("a.apps.localhost.:8081", h, &port), 0);
	CHECK_STR(h, "a.apps.localhost");
	CHECK_INT(port, 8081);
	CHECK_INT(norm("a.b:", h, &port), -1);
	CHECK_INT(norm("a.b:0", h, &port), -1);
	CHECK_INT(norm("a.b:65536", h, &port), -1);
	CHECK_INT(norm("a.b:80x", h, &port), -1);
	CHECK_INT(norm("", h, &port), -1);
	CHECK_INT(norm(".", h, &port), -1);
	CHECK_INT(norm("[::1]:80", h, &port), -1);
	CHECK_INT(norm("a b", h, &port), -1);
	CHECK_INT(norm("a/b", h, &port), -1);
	CHECK_INT(norm("a@b", h, &port), -1);
	{
		char longh[300];

		memset(longh, 'a', sizeof(longh) - 1);
		longh[sizeof(longh) - 1] = '\0';
		CHECK_INT(norm(longh, h, &port), -1);
	}
}

static int
qt(const char *target, char *tok, struct buf *rest)
{
	return auth_query_token(target, strlen(target), tok, GW_TOKEN_MAX + 1, rest);
}

TEST(test_query_token)
{
	char tok[GW_TOKEN_MAX + 1];
	struct buf rest;

	buf_init(&rest, 65536);
	CHECK_INT(qt("/a?token=T1&b=2", tok, &rest), 1);
	CHECK_STR(tok, "T1");
	CHECK_STR(rest.p, "/a?b=2");
	CHECK_INT(qt("/a?x=1&token=T1", tok, &rest), 1);
	CHECK_STR(rest.p, "/a?x=1");
	CHECK_INT(qt("/a?x=1&token=T1&y=2", tok, &rest), 1);
	CHECK_STR(rest.p, "/a?x=1&y=2");
	CHECK_INT(qt("/?token=T1", tok, &rest), 1);
	CHECK_STR(rest.p, "/");
	CHECK_INT(qt("/p?token=T1#frag", tok, &rest), 1);
	CHECK_STR(rest.p, "/p#frag");
	/* encoded name and value */
	CHECK_INT(qt("/a?%74oken=a%2Db&z", tok, &rest), 1);
	CHECK_STR(tok, "a-b");
	CHECK_STR(rest.p, "/a?z");
	/* duplicates: the same value is fine (all removed), different ones are refused */
	CHECK_INT(qt("/a?token=T&q=1&token=T", tok, &rest), 1);
	CHECK_STR(rest.p, "/a?q=1");
	CHECK_INT(qt("/a?token=T&token=U", tok, &rest), -1);
	/* malformed escapes, NUL, too long */
	CHECK_INT(qt("/a?token=%zz", tok, &rest), -1);
	CHECK_INT(qt("/a?token=%4", tok, &rest), -1);
	CHECK_INT(qt("/a?token=%00", tok, &rest), -1);
	{
		char big[600] = "/a?token=";

		memset(big + 9, 'x', 500);
		big[509] = '\0';
		CHECK_INT(qt(big, tok, &rest), -1);
	}
	/* not a token parameter */
	CHECK_INT(qt("/a?tokens=T&xtoken=U", tok, &rest), 0);
	CHECK_STR(rest.p, "/a?tokens=T&xtoken=U");
	CHECK_INT(qt("/token=T", tok, &rest), 0);
	CHECK_INT(qt("/a", tok, &rest), 0);
	CHECK_STR(rest.p, "/a");
	/* empty value: present (and then wrong) */
	CHECK_INT(qt("/a?token=", tok, &rest), 1);
	CHECK_STR(tok, "");
	CHECK_INT(qt("/a?token", tok, &rest), 1);
	buf_free(&rest);
}

static char seen[4][64];
static int nseen;

static void
cb(void *arg, const char *v, size_t vl)
{
	(void)arg;
	if (nseen < 4 && vl < 64) {
		memcpy(seen[nseen], v, vl);
		seen[nseen][vl] = '\0';
	}
	nseen++;
}

TEST(test_cookies)
{
	struct buf rest;
	const char *h;

	buf_init(&rest, 65536);
	nseen = 0;
	h = "a=1; sbx-app=T1; b=2;sbx-app=\"T2\"";
	CHECK_INT(auth_cookie_take(h, strlen(h), "sbx-app", cb, NULL, &rest), 2);
	CHECK_STR(seen[0], "T1");
	CHECK_STR(seen[1], "T2");
	CHECK_STR(rest.p, "a=1; b=2");
	buf_reset(&rest);
	nseen = 0;
	h = "xsbx-app=1; sbx-apps=2; SBX-APP=3";
	CHECK_INT(auth_cookie_take(h, strlen(h), "sbx-app", cb, NULL, &rest), 0);
	CHECK_STR(rest.p, "xsbx-app=1; sbx-apps=2; SBX-APP=3");
	buf_reset(&rest);
	h = " ; ;sbx-app=; ";
	CHECK_INT(auth_cookie_take(h, strlen(h), "sbx-app", cb, NULL, &rest), 1);
	CHECK_INT(rest.len, 0);
	buf_free(&rest);
}

TEST(test_bearer)
{
	const char *t;
	size_t tl;

	CHECK_INT(auth_bearer("Bearer abc", 10, &t, &tl), 1);
	CHECK_INT(tl, 3);
	CHECK(memcmp(t, "abc", 3) == 0);
	CHECK_INT(auth_bearer("bearer   abc  ", 14, &t, &tl), 1);
	CHECK_INT(tl, 3);
	CHECK_INT(auth_bearer("Bearer ", 7, &t, &tl), 0);
	CHECK_INT(auth_bearer("Basic abc", 9, &t, &tl), 0);
	CHECK_INT(auth_bearer("Bearerabc", 9, &t, &tl), 0);
}

TEST(test_origin)
{
#define O(s, sch, h, p) auth_origin_same(s, strlen(s), sch, h, p)
	CHECK_INT(O("http://a.apps.localhost:8081", "http", "a.apps.localhost", 8081), 1);
	CHECK_INT(O("HTTP://A.apps.localhost:8081", "http", "a.apps.localhost", 8081), 1);
	CHECK_INT(O("http://a.apps.localhost", "http", "a.apps.localhost", 80), 1);
	CHECK_INT(O("http://a.apps.localhost:80", "http", "a.apps.localhost", 0), 1);
	CHECK_INT(O("https://a.apps.localhost", "https", "a.apps.localhost", 443), 1);
	CHECK_INT(O("https://a.apps.localhost", "http", "a.apps.localhost", 0), 0);
	CHECK_INT(O("http://b.apps.localhost:8081", "http", "a.apps.localhost", 8081), 0);
	CHECK_INT(O("http://a.apps.localhost:8082", "http", "a.apps.localhost", 8081), 0);
	CHECK_INT(O("http://a.apps.localhost.evil:8081", "http", "a.apps.localhost", 8081), 0);
	CHECK_INT(O("http://a.apps.localhost:8081/", "http", "a.apps.localhost", 8081), 0);
	CHECK_INT(O("null", "http", "a.apps.localhost", 8081), 0);
	CHECK_INT(O("", "http", "a.apps.localhost", 8081), 0);
	CHECK_INT(O("http://", "http", "a.apps.localhost", 8081), 0);
#undef O
}

TEST(test_token_compare)
{
	char hex[65];

	auth_token_sha256("abc", 3, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK_INT(auth_token_ok("abc", 3, hex), 1);
	CHECK_INT(auth_token_ok("abd", 3, hex), 0);
	CHECK_INT(auth_token_ok("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), 0);
	CHECK_INT(auth_token_ok("abc", 3, "short"), 0);
	CHECK_INT(auth_ct_eq("abcd", "abcd", 4), 1);
	CHECK_INT(auth_ct_eq("abcd", "abce", 4), 0);
	CHECK_INT(auth_ct_eq("xbcd", "abcd", 4), 0);
}

TEST(test_head_end)
{
	CHECK_INT(h1_head_end("GET / HTTP/1.1\r\nHost: a\r\n\r\nX", 28, 1000), 27);
	CHECK_INT(h1_head_end("GET / HTTP/1.1\r\nHost: a\r\n", 25, 1000), 0);
	CHECK_INT(h1_head_end("GET / HTTP/1.1\nHost: a\n\n", 24, 1000), -1);
	CHECK_INT(h1_head_end("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 36, 1000), -1);
	CHECK_INT(h1_head_end("GET / HTTP/1.1\r\nHost: a\r\n", 25, 10), -2);
	CHECK_INT(h1_head_end("\r\n\r\n", 4, 1000), 0);	/* empty lines before a request wait */
	CHECK_INT(h1_head_end("\r\n\r\n\r\n\r\n\r\n\r\n", 12, 1000), -1);	/* not forever */
	CHECK_INT(h1_head_end("\r\nGET / HTTP/1.1\r\n\r\n", 20, 1000), 20);
}

static struct route rt_a, rt_b;

static struct route *
find(const char *host)
{
	if (strcmp(host, rt_a.host) == 0)
		return &rt_a;
	if (strcmp(host, rt_b.host) == 0)
		return &rt_b;
	return NULL;
}

/* Parses and decides one request; returns GWREQ_* and the output in out. */
static int
decide(const char *req, struct buf *out, struct gwreq_out *o, int tls)
{
	struct h1head h;
	struct gwreq_in in = { tls, "10.0.0.9", NULL, find };
	char err[128];
	int rc;

	memset(&h, 0, sizeof(h));
	buf_reset(out);
	if (gwhead_parse(&h, HTTP_REQUEST, req, strlen(req), 100, 8192, err, sizeof(err)) != 0) {
		h1head_free(&h);
		return -2;
	}
	rc = req_decide(&in, &h, out, o);
	h1head_free(&h);
	return rc;
}

TEST(test_decide)
{
	struct buf out;
	struct gwreq_out o;

	memset(&rt_a, 0, sizeof(rt_a));
	memset(&rt_b, 0, sizeof(rt_b));
	snprintf(rt_a.host, sizeof(rt_a.host), "a.apps.localhost");
	snprintf(rt_b.host, sizeof(rt_b.host), "b.apps.localhost");
	auth_token_sha256("TA", 2, rt_a.sha);
	auth_token_sha256("TB", 2, rt_b.sha);
	buf_init(&out, 1 << 20);

	CHECK_INT(decide("GET /x?token=TA&y=1 HTTP/1.1\r\nHost: a.apps.localhost\r\n\r\n", &out, &o, 0),
	    GWREQ_ANSWER);
	CHECK_INT(o.status, 302);
	CHECK(strstr(out.p, "Location: /x?y=1\r\n") != NULL);
	CHECK(strstr(out.p, "Set-Cookie: sbx-app=TA; Path=/; HttpOnly; SameSite=Lax\r\n") != NULL);
	CHECK_INT(decide("GET /?token=TA HTTP/1.1\r\nHost: a.apps.localhost\r\n\r\n", &out, &o, 1),
	    GWREQ_ANSWER);
	CHECK(strstr(out.p, "Set-Cookie: __Host-sbx-app=TA; Path=/; HttpOnly; SameSite=Lax; Secure\r\n") != NULL);
	/* a path that would read as another host's URL goes out absolute, on this host */
	CHECK_INT(decide("GET //evil.example/x?token=TA HTTP/1.1\r\nHost: a.apps.localhost\r\n\r\n",
	    &out, &o, 0), GWREQ_ANSWER);
	CHECK(strstr(out.p, "Location: http://a.apps.localhost//evil.example/x\r\n") != NULL);
	CHECK_INT(decide("GET /\\evil.example?token=TA HTTP/1.1\r\nHost: a.apps.localhost\r\n\r\n",
	    &out, &o, 0), GWREQ_ANSWER);
	CHECK(strstr(out.p, "Location: http://a.apps.localhost/\\evil.example\r\n") != NULL);
	CHECK_INT(decide("GET /?token=TB HTTP/1.1\r\nHost: a.apps.localhost\r\n\r\n", &out, &o, 0),
	    GWREQ_ANSWER);
	CHECK_INT(o.status, 401);

	CHECK_INT(decide("GET / HTTP/1.1\r\nHost: a.apps.localhost\r\nAuthorization: Bearer TA\r\n"
	    "X-Forwarded-For: 1.2.3.4\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n\r\n", &out, &o, 0),
	    GWREQ_FORWARD);
	CHECK_INT(o.authed, 1);
	CHECK(strstr(out.p, "Authorization") == NULL);
	CHECK(strstr(out.p, "X-Hop") == NULL);
	CHECK(strstr(out.p, "1.2.3.4") == NULL);
	CHECK(strstr(out.p, "X-Forwarded-For: 10.0.0.9\r\n") != NULL);
	CHECK(strstr(out.p, "X-Forwarded-Host: a.apps.localhost\r\n") != NULL);
	CHECK(strstr(out.p, "Host: a.apps.localhost\r\n") != NULL);
	CHECK(strstr(out.p, "X-Real-IP: 10.0.0.9\r\n") != NULL);
	CHECK(strstr(out.p, "Forwarded: for=\"10.0.0.9\";host=\"a.apps.localhost\";proto=http\r\n") != NULL);

	/* every forwarding header the client sent goes, '_' spellings too */
	CHECK_INT(decide("GET / HTTP/1.1\r\nHost: a.apps.localhost\r\nAuthorization: Bearer TA\r\n"
	    "Forwarded: for=6.6.6.6;proto=https\r\nX-Real-IP: 6.6.6.6\r\nx-real-ip: 6.6.6.7\r\n"
	    "X-Client-IP: 6.6.6.6\r\nTrue-Client-IP: 6.6.6.6\r\nCF-Connecting-IP: 6.6.6.6\r\n"
	    "X-Forwarded-Port: 443\r\nX-Forwarded-Prefix: /evil\r\nX-Forwarded-Ssl: on\r\n"
	    "X_Forwarded_For: 6.6.6.6\r\nX_REAL_IP: 6.6.6.6\r\nX-Original-URL: /admin\r\n"
	    "Front-End-Https: on\r\nX-Forwarded: 6.6.6.6\r\nX-Forwardedx: keep\r\n\r\n", &out, &o, 0),
	    GWREQ_FORWARD);
	CHECK(strstr(out.p, "6.6.6") == NULL);
	CHECK(strstr(out.p, "/evil") == NULL);
	CHECK(strstr(out.p, "/admin") == NULL);
	CHECK(strstr(out.p, ": on\r\n") == NULL);
	CHECK(strstr(out.p, "443") == NULL);
	CHECK(strstr(out.p, "X-Forwardedx: keep\r\n") != NULL);
	CHECK(strstr(out.p, "X-Forwarded: ") == NULL);
	CHECK(strstr(out.p, "X-Real-IP: 10.0.0.9\r\n") != NULL);
	CHECK(strstr(out.p, "Forwarded: for=\"10.0.0.9\"") != NULL);

	CHECK_INT(decide("GET / HTTP/1.1\r\nHost: a.apps.localhost\r\nCookie: q=1; sbx-app=TA\r\n\r\n",
	    &out, &o, 0), GWREQ_FORWARD);
	CHECK_INT(o.authed, 2);
	CHECK(strstr(out.p, "Cookie: q=1\r\n") != NULL);
	CHECK(strstr(out.p, "TA") == NULL);
	CHECK_INT(decide("GET / HTTP/1.1\r\nHost: a.apps.localhost\r\nCookie: sbx-app=TA\r\n"
	    "Origin: http://b.apps.localhost\r\n\r\n", &out, &o, 0), GWREQ_ANSWER);
	CHECK_INT(o.status, 403);
	CHECK_INT(decide("GET / HTTP/1.1\r\nHost: a.apps.localhost\r\nCookie: sbx-app=TB\r\n\r\n",
	    &out, &o, 0), GWREQ_ANSWER);
	CHECK_INT(o.status, 401);
	CHECK(strstr(out.p, "WWW-Authenticate: Bearer\r\n") != NULL);
	CHECK_INT(decide("GET / HTTP/1.1\r\nHost: c.apps.localhost\r\n\r\n", &out, &o, 0), GWREQ_ANSWER);
	CHECK_INT(o.status, 404);
	CHECK_INT(decide("GET / HTTP/1.1\r\nHost: a.apps.localhost\r\nHost: b.apps.localhost\r\n\r\n",
	    &out, &o, 0), GWREQ_ANSWER);
	CHECK_INT(o.status, 400);
	CHECK_INT(decide("\r\nGET / HTTP/1.1\r\nHost: a.apps.localhost\r\n\r\n", &out, &o, 0), GWREQ_ANSWER);
	CHECK_INT(o.status, 401);
	/* upgrade passes with its Connection/Upgrade */
	CHECK_INT(decide("GET /ws HTTP/1.1\r\nHost: a.apps.localhost\r\nAuthorization: Bearer TA\r\n"
	    "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n", &out, &o, 0), GWREQ_FORWARD);
	CHECK_INT(o.upgrade, 1);
	CHECK(strstr(out.p, "Connection: upgrade\r\nUpgrade: websocket\r\n") != NULL);
	/* public */
	rt_a.public = 1;
	CHECK_INT(decide("GET /?token=zz HTTP/1.1\r\nHost: a.apps.localhost\r\nCookie: sbx-app=x\r\n\r\n",
	    &out, &o, 0), GWREQ_FORWARD);
	CHECK(strstr(out.p, "GET /?token=zz ") != NULL);
	CHECK(strstr(out.p, "Cookie") == NULL);
	rt_a.public = 0;
	buf_free(&out);
}

TEST(test_response_filter)
{
	struct h1head h;
	struct buf out;
	char err[128];
	const char *r = "HTTP/1.1 200 Fine\r\nSet-Cookie: sbx-app=evil\r\nSet-Cookie:  __Host-sbx-app=x; Secure\r\n"
	    "Set-Cookie: keep=1\r\nKeep-Alive: timeout=5\r\nContent-Length: 0\r\n\r\n";

	memset(&h, 0, sizeof(h));
	buf_init(&out, 65536);
	CHECK_INT(gwhead_parse(&h, HTTP_RESPONSE, r, strlen(r), 100, 8192, err, sizeof(err)), 0);
	CHECK_INT(req_response(&h, 0, 0, 1, &out), 0);
	CHECK(strstr(out.p, "HTTP/1.1 200 Fine\r\n") == out.p);
	CHECK(strstr(out.p, "evil") == NULL);
	CHECK(strstr(out.p, "__Host-sbx-app") == NULL);
	CHECK(strstr(out.p, "Set-Cookie: keep=1\r\n") != NULL);
	CHECK(strstr(out.p, "Keep-Alive") == NULL);
	CHECK(strstr(out.p, "Connection: close\r\n") != NULL);
	h1head_free(&h);
	buf_free(&out);
}

int
main(void)
{
	RUN(test_host_norm);
	RUN(test_query_token);
	RUN(test_cookies);
	RUN(test_bearer);
	RUN(test_origin);
	RUN(test_token_compare);
	RUN(test_head_end);
	RUN(test_decide);
	RUN(test_response_filter);
	return unit_done();
}
