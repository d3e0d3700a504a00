/*
 * httpreq.c: the proxy's side of a request head: its target checked and made
 * canonical, CONNECT and upgrades, credentials set and proved sent, the
 * head rebuilt for the upstream (httpreq.h); the head itself is common/h1head.c.
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
#include "sigv4.h"
#include "xmalloc.h"

void
hreq_init(struct hreq *r, size_t maxbytes, size_t maxheaders)
{
	memset(r, 0, sizeof(*r));
	h1head_init(&r->hd, maxbytes * 2 + 16384);
	r->hd.maxh = maxheaders;
	r->maxbytes = maxbytes;
	buf_init(&r->s4out, SIGV4_CHUNK_MAX + 512);
}

void
hreq_free(struct hreq *r)
{
	bgate_free(r->gate);
	r->gate = NULL;
	hreq_chunks_free(r);
	buf_free(&r->s4out);
	h1head_free(&r->hd);
}

void
hreq_chunks_free(struct hreq *r)
{
	if (r->s4c == NULL)
		return;
	sigv4_chunks_free(r->s4c);
	free(r->s4c);
	r->s4c = NULL;
}

int
hreq_parse(struct hreq *r, const char *head, size_t len, char *err, size_t errlen)
{
	struct h1head *hd = &r->hd;
	int st;

	bgate_free(r->gate);
	r->gate = NULL;
	hreq_chunks_free(r);
	r->path_o = r->path_l = 0;
	r->canon = 0;
	r->cpath_l = r->raw_o = r->raw_l = 0;
	r->injected = 0;
	r->rule[0] = '\0';
	r->inj_name[0] = '\0';
	r->sent_cred = 0;
	r->ncheld = 0;
	r->up_o = r->up_l = 0;
	r->creds[0] = '\0';
	r->sent_named = 0;
	if (len > r->maxbytes) {
		snprintf(err, errlen, "request head larger than %zu bytes", r->maxbytes);
		return 431;
	}
	if ((st = h1head_parse(hd, HTTP_REQUEST, head, len, hd->maxh, err, errlen)) != 0)
		return st;
	if (hd->method == HTTP_CONNECT && !r->allow_connect) {
		snprintf(err, errlen, "CONNECT not allowed here");
		return 400;
	}
	if (hd->url_l == 0) {
		snprintf(err, errlen, "empty request target");
		return 400;
	}
	if (!h1_value_ok(hd->data.p + hd->url_o, hd->url_l)) {
		snprintf(err, errlen, "bad request target");
		return 400;
	}
	if (h1head_count(hd, "upgrade", NULL) > 0 ||
	    (hd->method != HTTP_CONNECT && hd->upgrade)) {
		snprintf(err, errlen, "protocol upgrades are not supported");
		return 501;
	}
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
	const char *u = r->hd.data.p + r->hd.url_o, *auth, *end, *scheme;
	size_t ul = r->hd.url_l, sl, i, hidx = 0;
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
		r->path_o = r->hd.url_o;
		r->path_l = r->hd.url_l;
	} else if (ul == 1 && u[0] == '*') {
		if (r->hd.method != HTTP_OPTIONS || !tls) {
			snprintf(err, errlen, "bad request target");
			return 400;
		}
		r->path_o = r->hd.url_o;
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
			size_t rest = (size_t)(u + ul - end), off = (size_t)(end - r->hd.data.p);
			if (rest > 0 && *end == '#')
				rest = 0;
			char *tmp = xmalloc(rest + 2);
			int brc;

			/* Copy first: appending may move r->hd.data. */
			tmp[0] = '/';
			memcpy(tmp + 1, r->hd.data.p + off, rest);
			r->path_o = (uint32_t)r->hd.data.len;
			brc = buf_add(&r->hd.data, tmp, rest + 1);
			free(tmp);
			if (brc == -1) {
				snprintf(err, errlen, "request target too long");
				return 431;
			}
			r->path_l = (uint32_t)(rest + 1);
		} else {
			r->path_o = (uint32_t)(end - r->hd.data.p);
			r->path_l = (uint32_t)(u + ul - end);
		}
	}
	/* No fragments upstream; '#' is not valid in a request target. */
	for (i = 0; i < r->path_l; i++)
		if (r->hd.data.p[r->path_o + i] == '#') {
			snprintf(err, errlen, "fragment in request target");
			return 400;
		}
	nhost = h1head_count(&r->hd, "host", &hidx);
	if (nhost > 1) {
		snprintf(err, errlen, "more than one Host header");
		return 400;
	}
	if (nhost == 0) {
		if (r->hd.major == 1 && r->hd.minor >= 1 &&
		    r->hd.data.p[r->hd.url_o] == '/') {
			snprintf(err, errlen, "missing Host header");
			return 400;
		}
		return 0;
	}
	if (canon_default(r->hd.data.p + r->hd.h[hidx].vo, r->hd.h[hidx].vl, defport, &ht,
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
	if (reqcanon_target(r->hd.data.p + r->path_o, r->path_l, &b, &pl, err, errlen) == -1)
		goto out;
	off = r->hd.data.len;
	if (buf_add(&r->hd.data, b.p, b.len) == -1) {
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

int
hreq_set(struct hreq *r, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);

	if (!h1_token_ok(name, nl) || !h1_value_ok(value, vl) || nl > 256 || vl > 16384)
		return -1;
	if (strcasecmp(name, "host") == 0 || strcasecmp(name, "content-length") == 0 ||
	    strcasecmp(name, "transfer-encoding") == 0)
		return -1;	/* framing and target are the proxy's */
	if (r->hd.data.len + nl + vl > r->hd.data.max)
		return -1;	/* the old ones stay */
	h1head_del(&r->hd, name);
	return h1head_add(&r->hd, name, value, vl);
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
	const struct h1head *hd = &r->hd;
	size_t i;

	if (!r->injected || r->inj_name[0] == '\0')
		return 0;
	for (i = 0; i < hd->nh; i++)
		if (!hd->h[i].del && hd->h[i].set && h1head_is(hd, i, r->inj_name))
			return cred_value_ok(hd->data.p + hd->h[i].vo, hd->h[i].vl,
			    is_auth_name(r->inj_name, strlen(r->inj_name)));
	return 0;
}

/*
 * What hreq_build leaves out: hop-by-hop fields, the client's fields its
 * Connection names, and the framing and Host the proxy writes itself. It
 * also notes whether the injected credential goes out.
 */
struct hreq_out {
	struct hreq	*r;
	const char	*conn;
	size_t		 connl;
};

static int
hreq_skip(const struct h1head *hd, const struct h1field *h, void *arg)
{
	static const char *const own[] = { "host", "transfer-encoding", "content-length" };
	struct hreq_out *o = arg;
	struct hreq *r = o->r;
	const char *nm = hd->data.p + h->no;
	size_t i;

	if (h1_hop_name(nm, h->nl))
		return 1;
	for (i = 0; i < NELEM(own); i++)
		if (h->nl == strlen(own[i]) && strncasecmp(nm, own[i], h->nl) == 0)
			return 1;
	if (o->conn != NULL && !h->set && h1_list_has(o->conn, o->connl, nm, h->nl))
		return 1;
	if (r->injected && h->set && h->nl == strlen(r->inj_name) &&
	    strncasecmp(nm, r->inj_name, h->nl) == 0 &&
	    cred_value_ok(hd->data.p + h->vo, h->vl, is_auth_name(r->inj_name, h->nl)))
		r->sent_cred = 1;
	return 0;
}

int
hreq_build(struct hreq *r, const struct target *t, struct buf *out)
{
	struct hreq_out o = { r, NULL, 0 };
	int rc = 0;

	o.conn = h1head_get(&r->hd, "connection", &o.connl);
	r->sent_cred = 0;
	rc |= buf_addstr(out, h1head_method(&r->hd));
	rc |= buf_add(out, " ", 1);
	if (r->up_l > 0)	/* a placeholder swapped in the query */
		rc |= buf_add(out, r->hd.data.p + r->up_o, r->up_l);
	else
		rc |= buf_add(out, r->hd.data.p + r->path_o, r->path_l);
	rc |= buf_addstr(out, " HTTP/1.1\r\nHost: ");
	rc |= buf_addstr(out, t->hosthdr);
	rc |= buf_add(out, "\r\n", 2);
	if (rc == 0)
		rc |= h1head_write_fields(&r->hd, hreq_skip, &o, out);
	if (r->hd.chunked)
		rc |= buf_addstr(out, "Transfer-Encoding: chunked\r\n");
	else if (r->hd.has_cl)
		rc |= buf_addf(out, "Content-Length: %llu\r\n",
		    (unsigned long long)r->hd.content_length);
	rc |= buf_add(out, "\r\n", 2);
	if (rc != 0)
		r->sent_cred = 0;
	r->sent_named = rc == 0 && r->creds[0] != '\0';
	return rc == 0 ? 0 : -1;
}
