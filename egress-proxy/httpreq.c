/*
 * httpreq.c: strict request head parsing, target check, header editing and
 * re-framing (see httpreq.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bodygate.h"
#include "h1.h"
#include "httpreq.h"
#include "reqcanon.h"
#include "xmalloc.h"

#define HREQ(p) ((struct hreq *)((char *)(p) - offsetof(struct hreq, p)))

static int
add_data(struct hreq *r, const char *at, size_t len, uint32_t *off)
{
	if (off != NULL)
		*off = (uint32_t)r->data.len;
	return buf_add(&r->data, at, len);
}

static int
cb_url(llhttp_t *p, const char *at, size_t len)
{
	struct hreq *r = HREQ(p);

	if (r->url_l == 0 && add_data(r, at, len, &r->url_o) == 0) {
		r->url_l = (uint32_t)len;
		return 0;
	}
	if (r->url_l != 0 && add_data(r, at, len, NULL) == 0) {
		r->url_l += (uint32_t)len;
		return 0;
	}
	return HPE_USER;
}

static int
cb_field(llhttp_t *p, const char *at, size_t len)
{
	struct hreq *r = HREQ(p);
	struct hhdr *h;

	if (r->nh == 0 || r->in_value) {
		if (r->nh >= r->maxh) {
			r->too_many = 1;
			return HPE_USER;
		}
		if (r->nh == r->caph) {
			r->caph = r->caph ? r->caph * 2 : 16;
			if (r->caph > r->maxh + 8)
				r->caph = r->maxh + 8;
			r->h = xreallocarray(r->h, r->caph, sizeof(*r->h));
		}
		h = &r->h[r->nh++];
		memset(h, 0, sizeof(*h));
		r->in_value = 0;
		if (add_data(r, at, len, &h->no) == -1)
			return HPE_USER;
		h->vo = (uint32_t)r->data.len;
		h->nl = (uint32_t)len;
		return 0;
	}
	h = &r->h[r->nh - 1];
	if (add_data(r, at, len, NULL) == -1)
		return HPE_USER;
	h->nl += (uint32_t)len;
	h->vo = (uint32_t)r->data.len;
	return 0;
}

static int
cb_value(llhttp_t *p, const char *at, size_t len)
{
	struct hreq *r = HREQ(p);
	struct hhdr *h;

	if (r->nh == 0)
		return HPE_USER;
	h = &r->h[r->nh - 1];
	if (!r->in_value) {
		r->in_value = 1;
		h->vo = (uint32_t)r->data.len;
		h->vl = 0;
	}
	if (add_data(r, at, len, NULL) == -1)
		return HPE_USER;
	h->vl += (uint32_t)len;
	return 0;
}

static int
cb_headers_complete(llhttp_t *p)
{
	(void)p;
	return HPE_PAUSED;
}

static int
cb_body(llhttp_t *p, const char *at, size_t len)
{
	struct hreq *r = HREQ(p);

	if (r->on_body != NULL && r->on_body(r->arg, at, len) == -1)
		return HPE_USER;
	return 0;
}

static int
cb_message_complete(llhttp_t *p)
{
	struct hreq *r = HREQ(p);

	r->body_done = 1;
	return HPE_PAUSED;
}

static const llhttp_settings_t req_settings = {
	.on_url = cb_url,
	.on_header_field = cb_field,
	.on_header_value = cb_value,
	.on_headers_complete = cb_headers_complete,
	.on_body = cb_body,
	.on_message_complete = cb_message_complete,
};

void
hreq_init(struct hreq *r, size_t maxbytes, size_t maxheaders)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->data, maxbytes * 2 + 16384);
	r->maxbytes = maxbytes;
	r->maxh = maxheaders;
}

void
hreq_free(struct hreq *r)
{
	bgate_free(r->gate);
	r->gate = NULL;
	buf_free(&r->data);
	free(r->h);
	r->h = NULL;
	r->nh = r->caph = 0;
}

static int
name_eq(const struct hreq *r, const struct hhdr *h, const char *name, size_t nl)
{
	return h->nl == nl && strncasecmp(r->data.p + h->no, name, nl) == 0;
}

static int
count_hdr(const struct hreq *r, const char *name, size_t *idx)
{
	size_t i, nl = strlen(name);
	int n = 0;

	for (i = 0; i < r->nh; i++)
		if (!r->h[i].del && name_eq(r, &r->h[i], name, nl)) {
			if (n++ == 0 && idx != NULL)
				*idx = i;
		}
	return n;
}

int
hreq_parse(struct hreq *r, const char *head, size_t len, char *err, size_t errlen)
{
	llhttp_errno_t e;
	size_t i = 0;
	int nte, st;
	int (*ob)(void *, const char *, size_t) = r->on_body;
	void *arg = r->arg;

	buf_reset(&r->data);
	bgate_free(r->gate);
	r->gate = NULL;
	r->nh = 0;
	r->url_o = r->url_l = r->path_o = r->path_l = 0;
	r->canon = 0;
	r->cpath_l = r->raw_o = r->raw_l = 0;
	r->in_value = r->too_many = 0;
	r->chunked = r->has_cl = r->keepalive = 0;
	r->content_length = 0;
	r->body_done = 0;
	r->injected = 0;
	r->rule[0] = '\0';
	r->inj_name[0] = '\0';
	r->sent_cred = 0;
	r->on_body = ob;
	r->arg = arg;
	llhttp_init(&r->p, HTTP_REQUEST, &req_settings);
	if (len > r->maxbytes) {
		snprintf(err, errlen, "request head larger than %zu bytes", r->maxbytes);
		return 431;
	}
	e = llhttp_execute(&r->p, head, len);
	if (e != HPE_PAUSED || llhttp_get_error_pos(&r->p) != head + len) {
		if (r->too_many) {
			snprintf(err, errlen, "more than %zu header lines", r->maxh);
			return 431;
		}
		if (e == HPE_PAUSED)
			snprintf(err, errlen, "bad request framing");
		else
			snprintf(err, errlen, "bad request: %s", llhttp_errno_name(e));
		return 400;
	}
	if ((st = h1_version(r->p.http_major, r->p.http_minor, err, errlen)) != 0)
		return st;
	r->method = (uint8_t)llhttp_get_method(&r->p);
	if (r->method == HTTP_CONNECT && !r->allow_connect) {
		snprintf(err, errlen, "CONNECT not allowed here");
		return 400;
	}
	if (r->url_l == 0) {
		snprintf(err, errlen, "empty request target");
		return 400;
	}
	for (i = 0; i < r->nh; i++) {
		struct hhdr *h = &r->h[i];
		while (h->vl > 0 && (r->data.p[h->vo + h->vl - 1] == ' ' ||
		    r->data.p[h->vo + h->vl - 1] == '\t'))
			h->vl--;
		if (!h1_token_ok(r->data.p + h->no, h->nl) ||
		    !h1_value_ok(r->data.p + h->vo, h->vl)) {
			snprintf(err, errlen, "bad header line");
			return 400;
		}
	}
	if (!h1_value_ok(r->data.p + r->url_o, r->url_l)) {
		snprintf(err, errlen, "bad request target");
		return 400;
	}
	if (count_hdr(r, "upgrade", NULL) > 0 ||
	    (r->method != HTTP_CONNECT && llhttp_get_upgrade(&r->p))) {
		snprintf(err, errlen, "protocol upgrades are not supported");
		return 501;
	}
	nte = count_hdr(r, "transfer-encoding", &i);
	if ((st = h1_framing(count_hdr(r, "content-length", NULL), nte,
	    nte > 0 ? r->data.p + r->h[i].vo : NULL, nte > 0 ? r->h[i].vl : 0, err, errlen)) != 0)
		return st;
	r->chunked = (r->p.flags & F_CHUNKED) != 0;
	r->has_cl = (r->p.flags & F_CONTENT_LENGTH) != 0;
	r->content_length = r->has_cl ? r->p.content_length : 0;
	r->keepalive = (uint8_t)llhttp_should_keep_alive(&r->p);
	if (!r->chunked && r->content_length == 0)
		r->body_done = 1;
	return 0;
}

/*
 * Canonicalises an authority with a default port (443/80). 0 or -1.
 */
static int
canon_default(const char *a, size_t n, uint16_t defport, struct target *t,
    char *err, size_t errlen)
{
	const char *colon = NULL;
	size_t i;

	if (n == 0) {
		snprintf(err, errlen, "empty host");
		return -1;
	}
	for (i = n; i > 0; i--) {
		if (a[i - 1] == ']')
			break;
		if (a[i - 1] == ':') {
			colon = a + i - 1;
			break;
		}
	}
	if (colon != NULL && a[0] != '[' && memchr(a, ':', (size_t)(colon - a)) != NULL) {
		snprintf(err, errlen, "unbracketed IPv6");
		return -1;
	}
	if (colon != NULL)
		return canon_authority(a, n, t, err, errlen);
	return canon_host(a, n, defport, t, err, errlen);
}

int
hreq_check_target(struct hreq *r, const struct target *tunnel, struct target *url,
    char *err, size_t errlen)
{
	int tls = tunnel != NULL;
	const char *u = r->data.p + r->url_o, *auth, *end, *scheme;
	size_t ul = r->url_l, sl, i, hidx = 0;
	uint16_t defport = tls ? 443 : 80;
	const struct target *want;
	struct target ut, ht;
	int nhost;
	char why[128];

	scheme = tls ? "https://" : "http://";
	sl = strlen(scheme);
	if (u[0] == '/') {
		if (!tls) {
			snprintf(err, errlen, "a proxy request needs an absolute http:// URL");
			return 400;
		}
		r->path_o = r->url_o;
		r->path_l = r->url_l;
	} else if (ul == 1 && u[0] == '*') {
		if (r->method != HTTP_OPTIONS || !tls) {
			snprintf(err, errlen, "bad request target");
			return 400;
		}
		r->path_o = r->url_o;
		r->path_l = 1;
	} else {
		if (ul < sl || strncasecmp(u, scheme, sl) != 0) {
			if (tls && (ul >= 7 && strncasecmp(u, "http://", 7) == 0)) {
				snprintf(err, errlen, "absolute URL names another origin");
				return 421;
			}
			snprintf(err, errlen, "bad request target");
			return 400;
		}
		auth = u + sl;
		for (end = auth; end < u + ul && *end != '/' && *end != '?' &&
		    *end != '#'; end++)
			;
		if (memchr(auth, '@', (size_t)(end - auth)) != NULL) {
			snprintf(err, errlen, "userinfo in URL");
			return 400;
		}
		if (canon_default(auth, (size_t)(end - auth), defport, &ut, why,
		    sizeof(why)) == -1) {
			snprintf(err, errlen, "bad URL host: %s", why);
			return 400;
		}
		if (tls && strcmp(ut.hostport, tunnel->hostport) != 0) {
			snprintf(err, errlen, "URL names %s, tunnel is to %s", ut.hostport,
			    tunnel->hostport);
			return 421;
		}
		if (!tls)
			*url = ut;
		if (end == u + ul || *end != '/') {
			/* "http://h" or "http://h?q": path becomes "/" + rest */
			size_t rest = (size_t)(u + ul - end), off = (size_t)(end - r->data.p);
			if (rest > 0 && *end == '#')
				rest = 0;
			char *tmp = xmalloc(rest + 2);
			int brc;

			/* Copy first: appending may move r->data. */
			tmp[0] = '/';
			memcpy(tmp + 1, r->data.p + off, rest);
			r->path_o = (uint32_t)r->data.len;
			brc = buf_add(&r->data, tmp, rest + 1);
			free(tmp);
			if (brc == -1) {
				snprintf(err, errlen, "request target too long");
				return 431;
			}
			r->path_l = (uint32_t)(rest + 1);
		} else {
			r->path_o = (uint32_t)(end - r->data.p);
			r->path_l = (uint32_t)(u + ul - end);
		}
	}
	/* No fragments upstream; '#' is not valid in a request target. */
	for (i = 0; i < r->path_l; i++)
		if (r->data.p[r->path_o + i] == '#') {
			snprintf(err, errlen, "fragment in request target");
			return 400;
		}
	nhost = count_hdr(r, "host", &hidx);
	if (nhost > 1) {
		snprintf(err, errlen, "more than one Host header");
		return 400;
	}
	if (nhost == 0) {
		if (llhttp_get_http_major(&r->p) == 1 && llhttp_get_http_minor(&r->p) >= 1 &&
		    r->data.p[r->url_o] == '/') {
			snprintf(err, errlen, "missing Host header");
			return 400;
		}
		return 0;
	}
	if (canon_default(r->data.p + r->h[hidx].vo, r->h[hidx].vl, defport, &ht,
	    why, sizeof(why)) == -1) {
		snprintf(err, errlen, "bad Host header: %s", why);
		return 400;
	}
	want = tls ? tunnel : url;
	if (strcmp(ht.hostport, want->hostport) != 0) {
		snprintf(err, errlen, "Host names %s, target is %s", ht.hostport, want->hostport);
		return 421;
	}
	return 0;
}

int
hreq_canonicalize(struct hreq *r, char *err, size_t errlen)
{
	struct buf b;
	size_t pl, off;
	int rc = -1;

	if (r->canon)
		return 0;
	buf_init(&b, REQCANON_MAX * 3 + 8);
	if (reqcanon_target(r->data.p + r->path_o, r->path_l, &b, &pl, err, errlen) == -1)
		goto out;
	off = r->data.len;
	if (buf_add(&r->data, b.p, b.len) == -1) {
		snprintf(err, errlen, "canonical request target too long");
		goto out;
	}
	r->raw_o = r->path_o;
	r->raw_l = r->path_l;
	r->path_o = (uint32_t)off;
	r->path_l = (uint32_t)b.len;
	r->cpath_l = (uint32_t)pl;
	r->canon = 1;
	rc = 0;
out:
	buf_free(&b);
	return rc;
}

const char *
hreq_get(struct hreq *r, const char *name, size_t *len)
{
	size_t i;

	if (count_hdr(r, name, &i) == 0)
		return NULL;
	if (len != NULL)
		*len = r->h[i].vl;
	return r->data.p + r->h[i].vo;
}

int
hreq_remove(struct hreq *r, const char *name)
{
	size_t i, nl = strlen(name);
	int n = 0;

	for (i = 0; i < r->nh; i++)
		if (!r->h[i].del && name_eq(r, &r->h[i], name, nl)) {
			r->h[i].del = 1;
			n++;
		}
	return n;
}

int
hreq_set(struct hreq *r, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value), old = r->data.len;
	struct hhdr h;

	if (!h1_token_ok(name, nl) || !h1_value_ok(value, vl) || nl > 256 || vl > 16384)
		return -1;
	if (strcasecmp(name, "host") == 0 || strcasecmp(name, "content-length") == 0 ||
	    strcasecmp(name, "transfer-encoding") == 0)
		return -1;	/* framing and target are the proxy's */
	memset(&h, 0, sizeof(h));
	if (add_data(r, name, nl, &h.no) == -1 || add_data(r, value, vl, &h.vo) == -1) {
		r->data.len = old;
		return -1;
	}
	h.nl = (uint32_t)nl;
	h.vl = (uint32_t)vl;
	h.set = 1;
	if (r->nh == r->caph) {
		r->caph = r->caph ? r->caph * 2 : 16;
		r->h = xreallocarray(r->h, r->caph, sizeof(*r->h));
	}
	hreq_remove(r, name);
	r->h[r->nh++] = h;
	return 0;
}

int
hreq_inject(struct hreq *r, const char *name, const char *value, const char *rule)
{
	if (hreq_set(r, name, value) == -1)
		return -1;
	r->injected = 1;
	snprintf(r->rule, sizeof(r->rule), "%s", rule != NULL ? rule : "");
	snprintf(r->inj_name, sizeof(r->inj_name), "%s", name);
	return 0;
}

/* A credential value: see hreq_cred_ok. auth: an Authorization-like header. */
static int
cred_value_ok(const char *v, size_t n, int auth)
{
	size_t i = 0;

	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	while (i < n && (v[i] == ' ' || v[i] == '\t'))
		i++;
	if (i == n)
		return 0;
	if (!auth)
		return 1;
	/* "scheme credentials": something must follow the scheme */
	while (i < n && v[i] != ' ' && v[i] != '\t')
		i++;
	while (i < n && (v[i] == ' ' || v[i] == '\t'))
		i++;
	return i < n;
}

static int
is_auth_name(const char *n, size_t nl)
{
	return (nl == 13 && strncasecmp(n, "authorization", 13) == 0) ||
	    (nl == 19 && strncasecmp(n, "proxy-authorization", 19) == 0);
}

int
hreq_cred_ok(const struct hreq *r)
{
	size_t i, nl = strlen(r->inj_name);

	if (!r->injected || nl == 0)
		return 0;
	for (i = 0; i < r->nh; i++)
		if (!r->h[i].del && r->h[i].set && name_eq(r, &r->h[i], r->inj_name, nl))
			return cred_value_ok(r->data.p + r->h[i].vo, r->h[i].vl,
			    is_auth_name(r->inj_name, nl));
	return 0;
}

/* Whether a Connection header of the client's names header h. */
static int
conn_names(const struct hreq *r, const struct hhdr *h)
{
	size_t j;

	for (j = 0; j < r->nh; j++)
		if (!r->h[j].del && !r->h[j].set && name_eq(r, &r->h[j], "connection", 10) &&
		    h1_list_has(r->data.p + r->h[j].vo, r->h[j].vl, r->data.p + h->no, h->nl))
			return 1;
	return 0;
}

void
hreq_strip_hop(struct hreq *r)
{
	static const char *const keep[] = { "host", "content-length", "transfer-encoding" };
	size_t i, k;
	uint8_t *drop;

	/* Decided first, removed after: a Connection header names others. */
	drop = xcalloc(r->nh + 1, 1);
	for (i = 0; i < r->nh; i++) {
		struct hhdr *h = &r->h[i];

		if (h->del || h->set)
			continue;
		for (k = 0; k < NELEM(keep); k++)
			if (name_eq(r, h, keep[k], strlen(keep[k])))
				break;
		if (k < NELEM(keep))
			continue;
		/* every Connection header's tokens, not only the first's */
		drop[i] = (uint8_t)(h1_hop_name(r->data.p + h->no, h->nl) || conn_names(r, h));
	}
	for (i = 0; i < r->nh; i++)
		if (drop[i])
			r->h[i].del = 1;
	free(drop);
}

/* Hop-by-hop, or framing the proxy writes itself, for hreq_build. */
static int
is_hop(const struct hreq *r, const struct hhdr *h, const char *conn, size_t connl)
{
	static const char *const own[] = { "host", "transfer-encoding", "content-length" };
	size_t i;

	if (h1_hop_name(r->data.p + h->no, h->nl))
		return 1;
	for (i = 0; i < NELEM(own); i++)
		if (name_eq(r, h, own[i], strlen(own[i])))
			return 1;
	/* The client's headers named in Connection are hop-by-hop too. */
	return conn != NULL && !h->set && h1_list_has(conn, connl, r->data.p + h->no, h->nl);
}

int
hreq_build(struct hreq *r, const struct target *t, struct buf *out)
{
	const char *m = hreq_method(r), *conn;
	size_t i, connl = 0;
	int rc = 0;

	conn = hreq_get(r, "connection", &connl);
	r->sent_cred = 0;
	rc |= buf_addstr(out, m);
	rc |= buf_add(out, " ", 1);
	rc |= buf_add(out, r->data.p + r->path_o, r->path_l);
	rc |= buf_addstr(out, " HTTP/1.1\r\nHost: ");
	rc |= buf_addstr(out, t->hosthdr);
	rc |= buf_add(out, "\r\n", 2);
	for (i = 0; i < r->nh && rc == 0; i++) {
		struct hhdr *h = &r->h[i];
		if (h->del || is_hop(r, h, conn, connl))
			continue;
		if (r->injected && h->set && h->nl == strlen(r->inj_name) &&
		    strncasecmp(r->data.p + h->no, r->inj_name, h->nl) == 0 &&
		    cred_value_ok(r->data.p + h->vo, h->vl, is_auth_name(r->inj_name, h->nl)))
			r->sent_cred = 1;
		rc |= buf_add(out, r->data.p + h->no, h->nl);
		rc |= buf_add(out, ": ", 2);
		rc |= buf_add(out, r->data.p + h->vo, h->vl);
		rc |= buf_add(out, "\r\n", 2);
	}
	if (r->chunked)
		rc |= buf_addstr(out, "Transfer-Encoding: chunked\r\n");
	else if (r->has_cl)
		rc |= buf_addf(out, "Content-Length: %llu\r\n",
		    (unsigned long long)r->content_length);
	rc |= buf_add(out, "\r\n", 2);
	if (rc != 0)
		r->sent_cred = 0;
	return rc == 0 ? 0 : -1;
}

long
hreq_body(struct hreq *r, const char *p, size_t n)
{
	llhttp_errno_t e;

	if (r->body_done)
		return 0;
	if (llhttp_get_errno(&r->p) == HPE_PAUSED)
		llhttp_resume(&r->p);
	e = llhttp_execute(&r->p, p, n);
	if (e == HPE_OK)
		return (long)n;
	if (e == HPE_PAUSED && r->body_done)
		return (long)(llhttp_get_error_pos(&r->p) - p);
	return -1;
}

const char *
hreq_method(const struct hreq *r)
{
	return llhttp_method_name((llhttp_method_t)r->method);
}
