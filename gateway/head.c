/*
 * head.c: the gateway's request-target rules and forwarding-header strip on
 * the shared head store (head.h, common/h1head.c).
 */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "h1.h"
#include "head.h"

int
gwhead_parse(struct h1head *r, int type, const char *head, size_t len,
    size_t maxh, size_t maxtarget, char *err, size_t errlen)
{
	int st;

	if (r->data.max == 0)
		buf_init(&r->data, len + 1024);
	if ((st = h1head_parse(r, type, head, len, maxh, err, errlen)) != 0)
		return st;
	if (type != HTTP_REQUEST)
		return 0;
	if (r->url_l == 0 || r->data.p[r->url_o] != '/' ||
	    !h1_value_ok(r->data.p + r->url_o, r->url_l) ||
	    memchr(r->data.p + r->url_o, ' ', r->url_l) != NULL) {
		snprintf(err, errlen, "request target not in origin form");
		return r->url_l > maxtarget ? 414 : 400;
	}
	if (r->url_l > maxtarget) {
		snprintf(err, errlen, "request target longer than %zu bytes", maxtarget);
		return 414;
	}
	if (r->method == HTTP_CONNECT) {
		snprintf(err, errlen, "CONNECT is not served");
		return 400;
	}
	return 0;
}

/*
 * Headers through which a client could tell the app who or where it is
 * (address, scheme, host, port, original URL): the gateway alone says that,
 * so every one the client sent goes. Names compare case-insensitively with
 * '_' read as '-', since CGI, WSGI and PHP map both to one variable.
 */
static const char *const fwd_names[] = {
	"forwarded", "x-real-ip", "x-client-ip", "client-ip", "x-cluster-client-ip",
	"true-client-ip", "cf-connecting-ip", "fastly-client-ip", "x-originating-ip",
	"x-remote-ip", "x-remote-addr", "x-proxyuser-ip", "x-original-forwarded-for",
	"x-host", "x-original-host", "x-original-url", "x-rewrite-url", "x-url-scheme",
	"x-scheme", "front-end-https", "x-forwarded",
};
#define FWD_PREFIX	"x-forwarded-"	/* -for, -proto, -host, -port, -prefix, -ssl, ... */

/* Whether name (n bytes) equals lower-case want with '_' read as '-'. */
static int
fwd_name_eq(const char *name, size_t n, const char *want, size_t wl)
{
	size_t i;

	if (n != wl)
		return 0;
	for (i = 0; i < n; i++) {
		int c = name[i] == '_' ? '-' : tolower((unsigned char)name[i]);
		if (c != want[i])
			return 0;
	}
	return 1;
}

int
gwhead_strip_forwarding(struct h1head *r)
{
	size_t i, k, pl = strlen(FWD_PREFIX);
	int n = 0;

	for (i = 0; i < r->nh; i++) {
		const char *nm = r->data.p + r->h[i].no;
		size_t nl = r->h[i].nl;
		int hit;

		if (r->h[i].del)
			continue;
		hit = nl > pl && fwd_name_eq(nm, pl, FWD_PREFIX, pl);
		for (k = 0; k < NELEM(fwd_names) && !hit; k++)
			hit = fwd_name_eq(nm, nl, fwd_names[k], strlen(fwd_names[k]));
		if (hit) {
			r->h[i].del = 1;
			n++;
		}
	}
	return n;
}

