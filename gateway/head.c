/*
 * head.c: strict head framing, parsing, editing and rewriting (head.h).
 */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "h1.h"
#include "head.h"
#include "xmalloc.h"

#define GWHEAD(p) ((struct gwhead *)((char *)(p) - offsetof(struct gwhead, p)))

static int
cb_url(llhttp_t *p, const char *at, size_t len)
{
	struct gwhead *r = GWHEAD(p);

	if (r->url_l == 0)
		r->url_o = (uint32_t)r->data.len;
	if (buf_add(&r->data, at, len) == -1)
		return HPE_USER;
	r->url_l += (uint32_t)len;
	return 0;
}

static int
cb_status(llhttp_t *p, const char *at, size_t len)
{
	struct gwhead *r = GWHEAD(p);

	if (r->reason_l == 0)
		r->reason_o = (uint32_t)r->data.len;
	if (buf_add(&r->data, at, len) == -1)
		return HPE_USER;
	r->reason_l += (uint32_t)len;
	return 0;
}

static int
cb_field(llhttp_t *p, const char *at, size_t len)
{
	struct gwhead *r = GWHEAD(p);
	struct gwh *h;

	if (r->nh == 0 || r->in_value) {
		if (r->nh >= r->maxh) {
			r->too_many = 1;
			return HPE_USER;
		}
		if (r->nh == r->caph) {
			r->caph = r->caph ? r->caph * 2 : 16;
			r->h = xreallocarray(r->h, r->caph, sizeof(*r->h));
		}
		h = &r->h[r->nh++];
		memset(h, 0, sizeof(*h));
		r->in_value = 0;
		h->no = (uint32_t)r->data.len;
	} else
		h = &r->h[r->nh - 1];
	if (buf_add(&r->data, at, len) == -1)
		return HPE_USER;
	h->nl += (uint32_t)len;
	h->vo = (uint32_t)r->data.len;
	return 0;
}

static int
cb_value(llhttp_t *p, const char *at, size_t len)
{
	struct gwhead *r = GWHEAD(p);
	struct gwh *h;

	if (r->nh == 0)
		return HPE_USER;
	h = &r->h[r->nh - 1];
	if (!r->in_value) {
		r->in_value = 1;
		h->vo = (uint32_t)r->data.len;
		h->vl = 0;
	}
	if (buf_add(&r->data, at, len) == -1)
		return HPE_USER;
	h->vl += (uint32_t)len;
	return 0;
}

static int
cb_headers_complete(llhttp_t *p)
{
	struct gwhead *r = GWHEAD(p);

	if (r->skip_body)
		return 1;	/* HEAD response: the message ends here */
	return HPE_PAUSED;
}

static int
cb_message_complete(llhttp_t *p)
{
	struct gwhead *r = GWHEAD(p);

	r->msg_done = 1;
	return HPE_PAUSED;
}

static const llhttp_settings_t settings = {
	.on_url = cb_url,
	.on_status = cb_status,
	.on_header_field = cb_field,
	.on_header_value = cb_value,
	.on_headers_complete = cb_headers_complete,
	.on_message_complete = cb_message_complete,
};

void
gwhead_free(struct gwhead *r)
{
	buf_free(&r->data);
	free(r->h);
	r->h = NULL;
	r->nh = r->caph = 0;
}

int
gwhead_parse(struct gwhead *r, int type, const char *head, size_t len,
    size_t maxh, size_t maxtarget, char *err, size_t errlen)
{
	llhttp_errno_t e;
	size_t i = 0;
	int nte, st, skip = r->skip_body;

	buf_init(&r->data, len + 1024);
	r->nh = 0;
	r->maxh = maxh;
	r->url_o = r->url_l = r->reason_o = r->reason_l = 0;
	r->in_value = r->too_many = r->msg_done = 0;
	r->status = 0;
	r->skip_body = skip;
	llhttp_init(&r->p, (llhttp_type_t)type, &settings);
	e = llhttp_execute(&r->p, head, len);
	if (e != HPE_PAUSED || llhttp_get_error_pos(&r->p) != head + len) {
		if (r->too_many) {
			snprintf(err, errlen, "more than %zu header lines", maxh);
			return 431;
		}
		snprintf(err, errlen, "malformed head: %s", e == HPE_PAUSED ?
		    "framing" : llhttp_errno_name(e));
		return 400;
	}
	r->major = r->p.http_major;
	r->minor = r->p.http_minor;
	if ((st = h1_version(r->major, r->minor, err, errlen)) != 0)
		return st;
	if (type == HTTP_REQUEST) {
		r->method = (uint8_t)llhttp_get_method(&r->p);
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
	} else
		r->status = llhttp_get_status_code(&r->p);
	for (i = 0; i < r->nh; i++) {
		struct gwh *h = &r->h[i];

		while (h->vl > 0 && (r->data.p[h->vo + h->vl - 1] == ' ' ||
		    r->data.p[h->vo + h->vl - 1] == '\t'))
			h->vl--;
		if (!h1_token_ok(r->data.p + h->no, h->nl) || !h1_value_ok(r->data.p + h->vo, h->vl)) {
			snprintf(err, errlen, "bad header line");
			return 400;
		}
	}
	nte = gwhead_count(r, "transfer-encoding", &i);
	if ((st = h1_framing(gwhead_count(r, "content-length", NULL), nte,
	    nte > 0 ? r->data.p + r->h[i].vo : NULL, nte > 0 ? r->h[i].vl : 0, err, errlen)) != 0)
		return st;
	r->chunked = (r->p.flags & F_CHUNKED) != 0;
	r->has_cl = (r->p.flags & F_CONTENT_LENGTH) != 0;
	r->content_length = r->has_cl ? r->p.content_length : 0;
	r->keepalive = (uint8_t)llhttp_should_keep_alive(&r->p);
	r->upgrade = type == HTTP_REQUEST && llhttp_get_upgrade(&r->p) &&
	    r->method != HTTP_CONNECT;
	if (type == HTTP_REQUEST && r->method == HTTP_CONNECT) {
		snprintf(err, errlen, "CONNECT is not served");
		return 400;
	}
	if (skip || (type == HTTP_REQUEST && !r->chunked && r->content_length == 0))
		r->msg_done = 1;
	if (type == HTTP_RESPONSE && ((r->status >= 100 && r->status < 200) ||
	    r->status == 204 || r->status == 304 ||
	    (!r->chunked && r->has_cl && r->content_length == 0)))
		r->msg_done = 1;
	return 0;
}

int
gwhead_is(const struct gwhead *r, size_t i, const char *name)
{
	size_t nl = strlen(name);

	return r->h[i].nl == nl && strncasecmp(r->data.p + r->h[i].no, name, nl) == 0;
}

int
gwhead_count(const struct gwhead *r, const char *name, size_t *idx)
{
	size_t i;
	int n = 0;

	for (i = 0; i < r->nh; i++) {
		if (r->h[i].del || !gwhead_is(r, i, name))
			continue;
		if (n++ == 0 && idx != NULL)
			*idx = i;
	}
	return n;
}

const char *
gwhead_get(const struct gwhead *r, const char *name, size_t *len)
{
	size_t i;

	if (gwhead_count(r, name, &i) == 0)
		return NULL;
	*len = r->h[i].vl;
	return r->data.p + r->h[i].vo;
}

int
gwhead_del(struct gwhead *r, const char *name)
{
	size_t i;
	int n = 0;

	for (i = 0; i < r->nh; i++)
		if (!r->h[i].del && gwhead_is(r, i, name)) {
			r->h[i].del = 1;
			n++;
		}
	return n;
}

int
gwhead_add(struct gwhead *r, const char *name, const char *value, size_t vl)
{
	struct gwh *h;
	size_t nl = strlen(name);

	if (r->nh == r->caph) {
		r->caph = r->caph ? r->caph * 2 : 16;
		r->h = xreallocarray(r->h, r->caph, sizeof(*r->h));
	}
	h = &r->h[r->nh];
	memset(h, 0, sizeof(*h));
	h->no = (uint32_t)r->data.len;
	h->nl = (uint32_t)nl;
	if (buf_add(&r->data, name, nl) == -1)
		return -1;
	h->vo = (uint32_t)r->data.len;
	h->vl = (uint32_t)vl;
	if (buf_add(&r->data, value, vl) == -1)
		return -1;
	r->nh++;
	return 0;
}

void
gwhead_strip_hop(struct gwhead *r)
{
	static const char *const keep[] = { "host", "content-length", "transfer-encoding" };
	uint8_t *drop = xcalloc(r->nh + 1, 1);
	size_t i, j, k;

	for (i = 0; i < r->nh; i++) {
		const struct gwh *h = &r->h[i];
		int listed;

		if (h->del)
			continue;
		for (k = 0; k < NELEM(keep) && !gwhead_is(r, i, keep[k]); k++)
			;
		if (k < NELEM(keep))
			continue;
		listed = h1_hop_name(r->data.p + h->no, h->nl);
		for (j = 0; j < r->nh && !listed; j++)
			listed = !r->h[j].del && gwhead_is(r, j, "connection") &&
			    h1_list_has(r->data.p + r->h[j].vo, r->h[j].vl, r->data.p + h->no, h->nl);
		drop[i] = (uint8_t)listed;
	}
	for (i = 0; i < r->nh; i++)
		if (drop[i])
			r->h[i].del = 1;
	free(drop);
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
gwhead_strip_forwarding(struct gwhead *r)
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

int
gwhead_write(const struct gwhead *r, const char *target, size_t tl, struct buf *out)
{
	size_t i;

	if (r->p.type == HTTP_REQUEST) {
		if (target == NULL) {
			target = r->data.p + r->url_o;
			tl = r->url_l;
		}
		if (buf_addf(out, "%s ", llhttp_method_name((llhttp_method_t)r->method)) == -1 ||
		    buf_add(out, target, tl) == -1 ||
		    buf_addf(out, " HTTP/1.%d\r\n", r->minor) == -1)
			return -1;
	} else {
		if (buf_addf(out, "HTTP/1.%d %03d ", r->minor, r->status) == -1 ||
		    (r->reason_l > 0 ? buf_add(out, r->data.p + r->reason_o, r->reason_l) :
		    buf_addstr(out, h1_reason(r->status))) == -1 || buf_add(out, "\r\n", 2) == -1)
			return -1;
	}
	for (i = 0; i < r->nh; i++) {
		const struct gwh *h = &r->h[i];

		if (h->del)
			continue;
		if (buf_add(out, r->data.p + h->no, h->nl) == -1 || buf_add(out, ": ", 2) == -1 ||
		    buf_add(out, r->data.p + h->vo, h->vl) == -1 || buf_add(out, "\r\n", 2) == -1)
			return -1;
	}
	return buf_add(out, "\r\n", 2);
}

long
gwhead_body(struct gwhead *r, const char *p, size_t n)
{
	llhttp_errno_t e;

	if (r->msg_done)
		return 0;
	if (llhttp_get_errno(&r->p) == HPE_PAUSED)
		llhttp_resume(&r->p);
	e = llhttp_execute(&r->p, p, n);
	if (e == HPE_OK)
		return (long)n;
	if (e == HPE_PAUSED && r->msg_done)
		return (long)(llhttp_get_error_pos(&r->p) - p);
	if (e == HPE_PAUSED_UPGRADE && r->msg_done)
		return (long)(llhttp_get_error_pos(&r->p) - p);
	return -1;
}
