/*
 * h1head.c: one HTTP/1.1 message head read strictly, held as offsets into
 * one buffer, edited by marking and appending, written again (h1head.h).
 * llhttp runs without any lenient flag; the rules it does not apply itself
 * (version, field grammar, framing) are h1.c's, applied here once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "h1.h"
#include "h1head.h"
#include "util.h"
#include "xmalloc.h"

#define H1HEAD(p) ((struct h1head *)((char *)(p) - offsetof(struct h1head, p)))

/* Appends to data; the offset of the bytes in *off (NULL: a continuation). */
static int
h1head_data(struct h1head *r, const char *at, size_t len, uint32_t *off)
{
	if (off != NULL)
		*off = (uint32_t)r->data.len;
	if (buf_add(&r->data, at, len) == -1) {
		r->full = 1;
		return -1;
	}
	return 0;
}

static int
h1head_on_url(llhttp_t *p, const char *at, size_t len)
{
	struct h1head *r = H1HEAD(p);

	if (h1head_data(r, at, len, r->url_l == 0 ? &r->url_o : NULL) == -1)
		return HPE_USER;
	r->url_l += (uint32_t)len;
	return 0;
}

/* Ends what was read last (target, reason, name, value) with a NUL. */
static int
h1head_nul(struct h1head *r)
{
	return h1head_data(r, "", 1, NULL) == -1 ? HPE_USER : 0;
}

static int
h1head_on_url_complete(llhttp_t *p)
{
	return h1head_nul(H1HEAD(p));
}

static int
h1head_on_status(llhttp_t *p, const char *at, size_t len)
{
	struct h1head *r = H1HEAD(p);

	if (h1head_data(r, at, len, r->reason_l == 0 ? &r->reason_o : NULL) == -1)
		return HPE_USER;
	r->reason_l += (uint32_t)len;
	return 0;
}

static int
h1head_on_status_complete(llhttp_t *p)
{
	return h1head_nul(H1HEAD(p));
}

static void
h1head_grow(struct h1head *r)
{
	if (r->nh == r->caph) {
		r->caph = r->caph ? r->caph * 2 : 16;
		r->h = xreallocarray(r->h, r->caph, sizeof(*r->h));
	}
}

static int
h1head_on_field(llhttp_t *p, const char *at, size_t len)
{
	struct h1head *r = H1HEAD(p);
	struct h1field *h;

	if (r->in_body)
		return 0;	/* a trailer: dropped (RFC 9110 6.5.1) */
	if (r->nh == 0 || r->in_value) {
		if (r->nh >= r->maxh) {
			r->too_many = 1;
			return HPE_USER;
		}
		h1head_grow(r);
		h = &r->h[r->nh++];
		memset(h, 0, sizeof(*h));
		r->in_value = 0;
		h->no = (uint32_t)r->data.len;
	} else
		h = &r->h[r->nh - 1];
	if (h1head_data(r, at, len, NULL) == -1)
		return HPE_USER;
	h->nl += (uint32_t)len;
	return 0;
}

static int
h1head_on_field_complete(llhttp_t *p)
{
	struct h1head *r = H1HEAD(p);
	int rc;

	if (r->in_body)
		return 0;
	if (r->nh == 0)
		return HPE_USER;
	rc = h1head_nul(r);
	r->h[r->nh - 1].vo = (uint32_t)r->data.len;	/* an empty value's place */
	return rc;
}

static int
h1head_on_value(llhttp_t *p, const char *at, size_t len)
{
	struct h1head *r = H1HEAD(p);
	struct h1field *h;

	if (r->in_body)
		return 0;
	if (r->nh == 0)
		return HPE_USER;
	h = &r->h[r->nh - 1];
	if (!r->in_value) {
		r->in_value = 1;
		h->vo = (uint32_t)r->data.len;
		h->vl = 0;
	}
	if (h1head_data(r, at, len, NULL) == -1)
		return HPE_USER;
	h->vl += (uint32_t)len;
	return 0;
}

static int
h1head_on_value_complete(llhttp_t *p)
{
	struct h1head *r = H1HEAD(p);

	if (r->in_body)
		return 0;
	if (r->nh == 0)
		return HPE_USER;
	r->in_value = 1;	/* the next name starts a new field */
	return h1head_nul(r);
}

static int
h1head_on_headers_complete(llhttp_t *p)
{
	struct h1head *r = H1HEAD(p);

	r->in_body = 1;
	/* A response to HEAD ends with its head, whatever it declares. */
	return r->skip_body ? 1 : HPE_PAUSED;
}

static int
h1head_on_body(llhttp_t *p, const char *at, size_t len)
{
	struct h1head *r = H1HEAD(p);

	/* llhttp flushes an open body span at each feed's end, even an empty one */
	if (len == 0)
		return 0;
	if (r->on_body != NULL && r->on_body(r->arg, at, len) == -1)
		return HPE_USER;
	return 0;
}

static int
h1head_on_message_complete(llhttp_t *p)
{
	H1HEAD(p)->msg_done = 1;
	return HPE_PAUSED;
}

static const llhttp_settings_t h1head_settings = {
	.on_url = h1head_on_url,
	.on_url_complete = h1head_on_url_complete,
	.on_status = h1head_on_status,
	.on_status_complete = h1head_on_status_complete,
	.on_header_field = h1head_on_field,
	.on_header_field_complete = h1head_on_field_complete,
	.on_header_value = h1head_on_value,
	.on_header_value_complete = h1head_on_value_complete,
	.on_headers_complete = h1head_on_headers_complete,
	.on_body = h1head_on_body,
	.on_message_complete = h1head_on_message_complete,
};

void
h1head_init(struct h1head *r, size_t maxdata)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->data, maxdata);
}

void
h1head_free(struct h1head *r)
{
	buf_free(&r->data);
	free(r->h);
	r->h = NULL;
	r->nh = r->caph = 0;
}

int
h1head_parse(struct h1head *r, int type, const char *head, size_t len, size_t maxh,
    char *err, size_t errlen)
{
	llhttp_errno_t e;
	size_t i = 0;
	int nte, st;

	buf_reset(&r->data);
	r->nh = 0;
	r->maxh = maxh;
	r->url_o = r->url_l = r->reason_o = r->reason_l = 0;
	r->in_value = r->in_body = r->too_many = r->full = r->msg_done = 0;
	r->status = 0;
	r->type = (uint8_t)type;
	r->method = 0;
	r->keepalive = r->upgrade = r->chunked = r->has_cl = 0;
	r->content_length = 0;
	llhttp_init(&r->p, (llhttp_type_t)type, &h1head_settings);
	e = llhttp_execute(&r->p, head, len);
	if (e != HPE_PAUSED || llhttp_get_error_pos(&r->p) != head + len) {
		if (r->too_many) {
			snprintf(err, errlen, "more than %zu header lines", maxh);
			return 431;
		}
		if (r->full) {
			snprintf(err, errlen, "head too large");
			return 431;
		}
		if (e == HPE_INVALID_VERSION &&
		    h1_version_token(head, len, type == HTTP_REQUEST)) {
			snprintf(err, errlen, "HTTP version not supported");
			return 505;
		}
		snprintf(err, errlen, "malformed head: %s", e == HPE_PAUSED ?
		    "framing" : llhttp_errno_name(e));
		return 400;
	}
	r->major = r->p.http_major;
	r->minor = r->p.http_minor;
	if ((st = h1_version(r->major, r->minor, err, errlen)) != 0)
		return st;
	if (type == HTTP_REQUEST)
		r->method = (uint8_t)llhttp_get_method(&r->p);
	else
		r->status = llhttp_get_status_code(&r->p);
	for (i = 0; i < r->nh; i++) {
		struct h1field *h = &r->h[i];

		/* RFC 9112 5: the whitespace around a value is not part of it. */
		while (h->vl > 0 && (r->data.p[h->vo + h->vl - 1] == ' ' ||
		    r->data.p[h->vo + h->vl - 1] == '\t'))
			h->vl--;
		r->data.p[h->vo + h->vl] = '\0';
		if (!h1_token_ok(r->data.p + h->no, h->nl) ||
		    !h1_value_ok(r->data.p + h->vo, h->vl)) {
			snprintf(err, errlen, "bad header line");
			return 400;
		}
	}
	nte = h1head_count(r, "transfer-encoding", &i);
	if ((st = h1_framing(r->minor, h1head_count(r, "content-length", NULL), nte,
	    nte > 0 ? r->data.p + r->h[i].vo : NULL, nte > 0 ? r->h[i].vl : 0,
	    err, errlen)) != 0)
		return st;
	r->chunked = (r->p.flags & F_CHUNKED) != 0;
	r->has_cl = (r->p.flags & F_CONTENT_LENGTH) != 0;
	r->content_length = r->has_cl ? r->p.content_length : 0;
	r->keepalive = (uint8_t)llhttp_should_keep_alive(&r->p);
	r->upgrade = type == HTTP_REQUEST && llhttp_get_upgrade(&r->p);
	/* RFC 9112 6.3: which messages have no body to read. */
	if (type == HTTP_REQUEST ? !r->chunked && r->content_length == 0 :
	    r->skip_body || (r->status >= 100 && r->status < 200) || r->status == 204 ||
	    r->status == 304 || (!r->chunked && r->has_cl && r->content_length == 0))
		r->msg_done = 1;
	return 0;
}

int
h1head_is(const struct h1head *r, size_t i, const char *name)
{
	size_t nl = strlen(name);

	return r->h[i].nl == nl && strncasecmp(r->data.p + r->h[i].no, name, nl) == 0;
}

int
h1head_count(const struct h1head *r, const char *name, size_t *idx)
{
	size_t i;
	int n = 0;

	for (i = 0; i < r->nh; i++) {
		if (r->h[i].del || !h1head_is(r, i, name))
			continue;
		if (n++ == 0 && idx != NULL)
			*idx = i;
	}
	return n;
}

const char *
h1head_get(const struct h1head *r, const char *name, size_t *len)
{
	size_t i;

	if (h1head_count(r, name, &i) == 0)
		return NULL;
	if (len != NULL)
		*len = r->h[i].vl;
	return r->data.p + r->h[i].vo;
}

int
h1head_del(struct h1head *r, const char *name)
{
	size_t i;
	int n = 0;

	for (i = 0; i < r->nh; i++)
		if (!r->h[i].del && h1head_is(r, i, name)) {
			r->h[i].del = 1;
			n++;
		}
	return n;
}

int
h1head_add(struct h1head *r, const char *name, const char *value, size_t vl)
{
	struct h1field h;
	size_t nl = strlen(name), old = r->data.len;

	memset(&h, 0, sizeof(h));
	if (h1head_data(r, name, nl, &h.no) == -1 || h1head_data(r, "", 1, NULL) == -1 ||
	    h1head_data(r, value, vl, &h.vo) == -1 || h1head_data(r, "", 1, NULL) == -1) {
		r->data.len = old;
		return -1;
	}
	h.nl = (uint32_t)nl;
	h.vl = (uint32_t)vl;
	h.set = 1;
	h1head_grow(r);
	r->h[r->nh++] = h;
	return 0;
}

/* Whether a Connection field of the peer's names field h. */
static int
h1head_conn_names(const struct h1head *r, const struct h1field *h)
{
	size_t j;

	for (j = 0; j < r->nh; j++)
		if (!r->h[j].del && !r->h[j].set && h1head_is(r, j, "connection") &&
		    h1_list_has(r->data.p + r->h[j].vo, r->h[j].vl, r->data.p + h->no, h->nl))
			return 1;
	return 0;
}

void
h1head_strip_hop(struct h1head *r)
{
	static const char *const keep[] = { "host", "content-length", "transfer-encoding" };
	size_t i, k;
	uint8_t *drop;

	/* Decided first, removed after: a Connection field names others. */
	drop = xcalloc(r->nh + 1, 1);
	for (i = 0; i < r->nh; i++) {
		const struct h1field *h = &r->h[i];

		if (h->del || h->set)
			continue;
		for (k = 0; k < NELEM(keep) && !h1head_is(r, i, keep[k]); k++)
			;
		if (k < NELEM(keep))
			continue;
		/* every Connection field's tokens, not only the first's */
		drop[i] = (uint8_t)(h1_hop_name(r->data.p + h->no, h->nl) ||
		    h1head_conn_names(r, h));
	}
	for (i = 0; i < r->nh; i++)
		if (drop[i])
			r->h[i].del = 1;
	free(drop);
}

int
h1head_write_fields(const struct h1head *r, int (*skip)(const struct h1head *,
    const struct h1field *, void *), void *arg, struct buf *out)
{
	size_t i;

	for (i = 0; i < r->nh; i++) {
		const struct h1field *h = &r->h[i];

		if (h->del || (skip != NULL && skip(r, h, arg)))
			continue;
		if (buf_add(out, r->data.p + h->no, h->nl) == -1 || buf_add(out, ": ", 2) == -1 ||
		    buf_add(out, r->data.p + h->vo, h->vl) == -1 || buf_add(out, "\r\n", 2) == -1)
			return -1;
	}
	return 0;
}

int
h1head_write(const struct h1head *r, const char *target, size_t tl, struct buf *out)
{
	if (r->type == HTTP_REQUEST) {
		if (target == NULL) {
			target = r->data.p + r->url_o;
			tl = r->url_l;
		}
		if (buf_addf(out, "%s ", h1head_method(r)) == -1 ||
		    buf_add(out, target, tl) == -1 ||
		    buf_addf(out, " HTTP/1.%d\r\n", r->minor) == -1)
			return -1;
	} else {
		if (buf_addf(out, "HTTP/1.%d %03d ", r->minor, r->status) == -1 ||
		    (r->reason_l > 0 ? buf_add(out, r->data.p + r->reason_o, r->reason_l) :
		    buf_addstr(out, h1_reason(r->status))) == -1 || buf_add(out, "\r\n", 2) == -1)
			return -1;
	}
	if (h1head_write_fields(r, NULL, NULL, out) == -1)
		return -1;
	return buf_add(out, "\r\n", 2);
}

long
h1head_body(struct h1head *r, const char *p, size_t n)
{
	llhttp_errno_t e;

	if (r->msg_done)
		return 0;
	if (llhttp_get_errno(&r->p) == HPE_PAUSED)
		llhttp_resume(&r->p);
	e = llhttp_execute(&r->p, p, n);
	if (e == HPE_OK)
		return (long)n;
	if ((e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) && r->msg_done)
		return (long)(llhttp_get_error_pos(&r->p) - p);
	return -1;
}

int
h1head_finish(struct h1head *r)
{
	if (r->msg_done)
		return 0;
	/*
	 * Still paused where the head ended (no body byte came): llhttp picks
	 * the body's framing, and with it what the end of input means, only
	 * past that point, which an empty feed reaches; llhttp_finish does
	 * nothing on a paused parser.
	 */
	if (llhttp_get_errno(&r->p) == HPE_PAUSED && h1head_body(r, "", 0) == -1)
		return -1;
	/* A body ended by the close: on_message_complete sets msg_done. */
	if (!r->msg_done && llhttp_get_errno(&r->p) == HPE_OK)
		ign(llhttp_finish(&r->p));
	return r->msg_done ? 0 : -1;
}

const char *
h1head_method(const struct h1head *r)
{
	return llhttp_method_name((llhttp_method_t)r->method);
}
