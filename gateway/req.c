/*
 * req.c: routing, authentication and head rewriting (req.h; the rules are
 * in docs/gateway.md "What happens to a request").
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "auth.h"
#include "conf.h"
#include "req.h"

const char *
req_cookie(int tls)
{
	return tls ? "__Host-sbx-app" : "sbx-app";
}

static int
answer(struct gwreq_out *o, struct buf *out, int status, const char *title,
    const char *text, const char *extra, int close)
{
	o->status = status;
	o->close = close;
	buf_reset(out);
	if (page_build(out, status, title, text, extra, close) == -1)
		return -1;
	return GWREQ_ANSWER;
}

struct ckctx {
	const char	*sha;
	int		 ok;
	char		*tok;		/* the matching value, GW_TOKEN_MAX + 1 */
};

static void
ck_cb(void *arg, const char *v, size_t vl)
{
	struct ckctx *k = arg;

	if (!k->ok && auth_token_ok(v, vl, k->sha)) {
		k->ok = 1;
		if (k->tok != NULL && vl <= GW_TOKEN_MAX) {
			memcpy(k->tok, v, vl);
			k->tok[vl] = '\0';
		}
	}
}

/*
 * Adds the RFC 7239 Forwarded header: for (an IPv6 address in brackets),
 * host and proto, for and host as quoted-strings. -1 if data is full.
 */
static int
add_forwarded(struct h1head *r, const char *ip, const char *scheme, const char *host,
    size_t hl)
{
	struct buf v;
	size_t i;
	int bad = 0, v6 = strchr(ip, ':') != NULL;

	buf_init(&v, 1024);
	bad |= buf_addf(&v, "for=\"%s%s%s\";host=\"", v6 ? "[" : "", ip, v6 ? "]" : "");
	for (i = 0; i < hl; i++) {
		if (host[i] == '"' || host[i] == '\\')
			bad |= buf_add(&v, "\\", 1);
		bad |= buf_add(&v, host + i, 1);
	}
	bad |= buf_addf(&v, "\";proto=%s", scheme);
	if (bad == 0)
		bad = h1head_add(r, "Forwarded", v.p, v.len);
	buf_free(&v);
	return bad == 0 ? 0 : -1;
}

/*
 * Removes every cookie called name from the Cookie headers (a header left
 * empty goes); sets *ok when one of them is the app's token. -1 out of room.
 */
static int
take_cookies(struct h1head *r, const char *name, const char *sha, int *ok,
    char *tok)
{
	struct ckctx k = { sha, 0, tok };
	struct buf rest;
	size_t i, nh = r->nh;
	int found = 0, rc = 0;

	buf_init(&rest, 65536);
	for (i = 0; i < nh; i++) {
		if (r->h[i].del || !h1head_is(r, i, "cookie"))
			continue;
		if (auth_cookie_take(r->data.p + r->h[i].vo, r->h[i].vl, name,
		    sha != NULL ? ck_cb : NULL, &k, &rest) > 0)
			found = 1;
	}
	if (found) {
		h1head_del(r, "cookie");
		/* What is left is still the client's: its Connection may name it. */
		if (rest.len > 0 && (rc = h1head_add(r, "Cookie", rest.p, rest.len)) == 0)
			r->h[r->nh - 1].set = 0;
	}
	buf_free(&rest);
	*ok = k.ok;
	return rc;
}

int
req_decide(const struct gwreq_in *in, struct h1head *r, struct buf *out,
    struct gwreq_out *o)
{
	const char *hv, *cookie = req_cookie(in->tls), *scheme = in->tls ? "https" : "http";
	const char *v, *upv = NULL;
	char host[GW_HOST_MAX + 1], tok[GW_TOKEN_MAX + 1], extra[1024], hsent[GW_HOST_MAX + 8];
	size_t hl, vl, upl = 0;
	struct buf rest;
	struct route *rt;
	int port, q, ok, close = !r->keepalive || !r->msg_done;

	memset(o, 0, sizeof(*o));
	if (h1head_count(r, "host", NULL) > 1)
		return answer(o, out, 400, "Bad request", "More than one Host header.", NULL, 1);
	if ((hv = h1head_get(r, "host", &hl)) == NULL ||
	    auth_host_norm(hv, hl, host, sizeof(host), &port) == -1 ||
	    hl >= sizeof(hsent) || (rt = in->find(host)) == NULL)
		return answer(o, out, 404, "No app here",
		    "No app at this address: it was never exposed, or it was unexposed.", NULL, close);
	if (in->bound != NULL && in->bound != rt)
		return answer(o, out, 421, "Misdirected request",
		    "This connection belongs to another app; open a new connection.", NULL, 1);
	o->rt = rt;
	memcpy(hsent, hv, hl);	/* r->data moves as headers are added */
	hsent[hl] = '\0';

	/* 1. ?token= */
	buf_init(&rest, GW_TARGET_MAX + 16);
	q = auth_query_token(r->data.p + r->url_o, r->url_l, tok, sizeof(tok), &rest);
	if (rt->public) {
		o->authed = 3;
		q = 0;
	}
	if (q != 0) {
		int rc;

		if (q == 1 && auth_token_ok(tok, strlen(tok), rt->sha) && rest.len < 8192) {
			/*
			 * "//evil.example/..." would be another host's URL:
			 * such a path goes out absolute, on this host.
			 */
			int abs = rest.len >= 2 && (rest.p[1] == '/' || rest.p[1] == '\\');

			snprintf(extra, sizeof(extra), "Location: %s%s%s%s\r\n"
			    "Set-Cookie: %s=%s; Path=/; HttpOnly; SameSite=Lax%s\r\n",
			    abs ? scheme : "", abs ? "://" : "", abs ? hsent : "", rest.p,
			    cookie, tok, in->tls ? "; Secure" : "");
			rc = answer(o, out, 302, "Found", "Authenticated: go on to the app.",
			    extra, close);
		} else
			rc = answer(o, out, 401, "Authentication required",
			    "This app needs its token: open the URL with ?token=<token>, or send "
			    "Authorization: Bearer <token>. The token in this URL is not this app's.",
			    "WWW-Authenticate: Bearer\r\n", close);
		memset(tok, 0, sizeof(tok));
		buf_free(&rest);
		return rc;
	}
	buf_free(&rest);
	memset(tok, 0, sizeof(tok));

	/* 2. Authorization: Bearer (any other Authorization is the app's) */
	if (!o->authed && (v = h1head_get(r, "authorization", &vl)) != NULL &&
	    h1head_count(r, "authorization", NULL) == 1) {
		const char *t;
		size_t tl;

		if (auth_bearer(v, vl, &t, &tl) && auth_token_ok(t, tl, rt->sha) &&
		    tl <= GW_TOKEN_MAX) {
			o->authed = 1;
			memcpy(o->token, t, tl);
			o->token[tl] = '\0';
			h1head_del(r, "authorization");
		}
	}
	/* 3. the cookie; every cookie of that name goes, authenticated or not */
	if (take_cookies(r, cookie, o->authed ? NULL : rt->sha, &ok, o->token) == -1)
		return -1;
	if (!o->authed && ok)
		o->authed = 2;
	if (!o->authed)
		return answer(o, out, 401, "Authentication required",
		    "This app needs its token: open the URL with ?token=<token>, or send "
		    "Authorization: Bearer <token>.", "WWW-Authenticate: Bearer\r\n", close);
	if (o->authed == 2 && (v = h1head_get(r, "origin", &vl)) != NULL &&
	    !auth_origin_same(v, vl, scheme, host, port))
		return answer(o, out, 403, "Forbidden",
		    "A page of another origin may not use this app with your cookie.", NULL, close);

	/* Forward: hop-by-hop out, the upgrade back in, X-Forwarded-* set. */
	if (r->upgrade) {
		upv = h1head_get(r, "upgrade", &upl);
		o->upgrade = upv != NULL;
	}
	{
		char up[256];

		if (o->upgrade && upv != NULL) {
			if (upl >= sizeof(up))
				return answer(o, out, 400, "Bad request", "Upgrade header too long.", NULL, 1);
			memcpy(up, upv, upl);
		}
		h1head_strip_hop(r);
		gwhead_strip_forwarding(r);
		if ((o->upgrade && upv != NULL && (h1head_add(r, "Connection", "upgrade", 7) == -1 ||
		    h1head_add(r, "Upgrade", up, upl) == -1)) ||
		    h1head_add(r, "X-Forwarded-For", in->client_ip, strlen(in->client_ip)) == -1 ||
		    h1head_add(r, "X-Forwarded-Proto", scheme, strlen(scheme)) == -1 ||
		    h1head_add(r, "X-Forwarded-Host", hsent, hl) == -1 ||
		    h1head_add(r, "X-Real-IP", in->client_ip, strlen(in->client_ip)) == -1 ||
		    add_forwarded(r, in->client_ip, scheme, hsent, hl) == -1)
			return -1;
	}
	buf_reset(out);
	if (h1head_write(r, NULL, 0, out) == -1)
		return -1;
	return GWREQ_FORWARD;
}

/* Whether a Set-Cookie value sets a cookie called name. */
static int
sets_cookie(const char *v, size_t vl, const char *name)
{
	size_t nl = strlen(name), i = 0, e;

	while (i < vl && (v[i] == ' ' || v[i] == '\t'))
		i++;
	for (e = i; e < vl && v[e] != '=' && v[e] != ';'; e++)
		;
	while (e > i && (v[e - 1] == ' ' || v[e - 1] == '\t'))
		e--;
	return e - i == nl && memcmp(v + i, name, nl) == 0;
}

int
req_response(struct h1head *resp, int tls, int keep, int client_minor, struct buf *out)
{
	size_t i;

	(void)tls;
	for (i = 0; i < resp->nh; i++) {
		if (resp->h[i].del || !h1head_is(resp, i, "set-cookie"))
			continue;
		if (sets_cookie(resp->data.p + resp->h[i].vo, resp->h[i].vl, req_cookie(0)) ||
		    sets_cookie(resp->data.p + resp->h[i].vo, resp->h[i].vl, req_cookie(1)))
			resp->h[i].del = 1;
	}
	if (resp->status != 101) {
		h1head_strip_hop(resp);
		if (!keep && resp->status >= 200 && h1head_add(resp, "Connection", "close", 5) == -1)
			return -1;
		if (keep && client_minor == 0 && resp->status >= 200 &&
		    h1head_add(resp, "Connection", "keep-alive", 10) == -1)
			return -1;
	}
	resp->minor = 1;
	if (client_minor == 0 && resp->status != 101)
		resp->minor = 0;
	return h1head_write(resp, NULL, 0, out);
}
