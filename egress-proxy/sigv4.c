/*
 * sigv4.c: AWS Signature Version 4 for re-signing (sigv4.h has the rules).
 * Everything is bounded by the named limits in sigv4.h; peer bytes are
 * only ever read through lengths, never as C strings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "attrib.h"
#include "digest.h"
#include "hex.h"
#include "log.h"
#include "sigv4.h"
#include "util.h"

/* Upper-case digits of a percent-escape (enc). */
static const char hexu[] = "0123456789ABCDEF";

#define ALG		"AWS4-HMAC-SHA256"
#define CHUNK_ALG	"AWS4-HMAC-SHA256-PAYLOAD"
/* SHA-256 of nothing: the "previous-signature" line's fixed part of a chunk's string to sign. */
#define EMPTY_SHA256	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static int
ishex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int
hexval(int c)
{
	return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* RFC 3986 unreserved: what AWS leaves bare. */
static int
unreserved(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '_' || c == '.' || c == '~';
}

static int
lowhex64(const char *s, size_t n)
{
	size_t i;

	if (n != 64)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* ---- Authorization ---- */

/* Credential=AKID/YYYYMMDD/region/service/aws4_request */
static int
parse_credential(const char *v, size_t n, struct sigv4_auth *a)
{
	const char *part[5] = { NULL };
	size_t len[5] = { 0 }, i, k = 0, s = 0;

	for (i = 0; i <= n; i++)
		if (i == n || v[i] == '/') {
			if (k == 5)
				return -1;
			part[k] = v + s;
			len[k++] = i - s;
			s = i + 1;
		}
	if (k != 5 || len[0] == 0 || len[0] > SIGV4_AKID_MAX || len[1] != 8 ||
	    len[2] == 0 || len[2] > SIGV4_NAME_MAX || len[3] == 0 || len[3] > SIGV4_NAME_MAX ||
	    len[4] != 12 || memcmp(part[4], "aws4_request", 12) != 0)
		return -1;
	for (i = 0; i < len[0]; i++)
		if (!((part[0][i] >= 'A' && part[0][i] <= 'Z') ||
		    (part[0][i] >= 'a' && part[0][i] <= 'z') ||
		    (part[0][i] >= '0' && part[0][i] <= '9')))
			return -1;
	for (i = 0; i < 8; i++)
		if (part[1][i] < '0' || part[1][i] > '9')
			return -1;
	for (k = 2; k <= 3; k++)
		for (i = 0; i < len[k]; i++)
			if (!((part[k][i] >= 'a' && part[k][i] <= 'z') ||
			    (part[k][i] >= '0' && part[k][i] <= '9') || part[k][i] == '-'))
				return -1;
	memcpy(a->akid, part[0], len[0]);
	a->akid[len[0]] = '\0';
	memcpy(a->date, part[1], 8);
	a->date[8] = '\0';
	memcpy(a->region, part[2], len[2]);
	a->region[len[2]] = '\0';
	memcpy(a->service, part[3], len[3]);
	a->service[len[3]] = '\0';
	return 0;
}

/* name;name;...: lower-case tokens, strictly ascending (as the SDKs send them). */
static int
parse_signed(const char *v, size_t n, struct sigv4_auth *a)
{
	const char *prev = NULL;
	size_t i, s = 0, pl = 0, count = 0;
	int c;

	if (n == 0 || n >= sizeof(a->signed_headers))
		return -1;
	for (i = 0; i <= n; i++) {
		if (i < n && v[i] != ';') {
			c = (unsigned char)v[i];
			if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			    (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL)))
				return -1;
			continue;
		}
		if (i == s || ++count > SIGV4_SHN_MAX)
			return -1;
		if (prev != NULL) {
			size_t m = pl < i - s ? pl : i - s;
			int r = memcmp(prev, v + s, m);
			if (r > 0 || (r == 0 && pl >= i - s))
				return -1;
		}
		prev = v + s;
		pl = i - s;
		s = i + 1;
	}
	memcpy(a->signed_headers, v, n);
	a->signed_headers[n] = '\0';
	return 0;
}

int
sigv4_auth_parse(const char *v, size_t n, struct sigv4_auth *a, char *err, size_t errlen)
{
	size_t i = sizeof(ALG), s, e, eq;
	int seen = 0, bit;

	memset(a, 0, sizeof(*a));
	if (n < sizeof(ALG) || memcmp(v, ALG, sizeof(ALG) - 1) != 0 || v[sizeof(ALG) - 1] != ' ') {
		snprintf(err, errlen, "not an " ALG " Authorization");
		return -1;
	}
	while (i <= n) {
		while (i < n && v[i] == ' ')
			i++;
		for (s = i; i < n && v[i] != ','; i++)
			;
		for (e = i; e > s && v[e - 1] == ' '; e--)
			;
		i++;	/* past the comma (or the end) */
		for (eq = s; eq < e && v[eq] != '='; eq++)
			;
		if (eq == e) {
			snprintf(err, errlen, "a malformed Authorization component");
			return -1;
		}
		if (eq - s == 10 && memcmp(v + s, "Credential", 10) == 0) {
			bit = 1;
			if (parse_credential(v + eq + 1, e - eq - 1, a) == -1) {
				snprintf(err, errlen, "a malformed Credential");
				return -1;
			}
		} else if (eq - s == 13 && memcmp(v + s, "SignedHeaders", 13) == 0) {
			bit = 2;
			if (parse_signed(v + eq + 1, e - eq - 1, a) == -1) {
				snprintf(err, errlen, "a malformed SignedHeaders list");
				return -1;
			}
		} else if (eq - s == 9 && memcmp(v + s, "Signature", 9) == 0) {
			bit = 4;
			if (!lowhex64(v + eq + 1, e - eq - 1)) {
				snprintf(err, errlen, "a malformed Signature");
				return -1;
			}
			memcpy(a->sig, v + eq + 1, 64);
			a->sig[64] = '\0';
		} else {
			snprintf(err, errlen, "an unknown Authorization component");
			return -1;
		}
		if (seen & bit) {
			snprintf(err, errlen, "a repeated Authorization component");
			return -1;
		}
		seen |= bit;
	}
	if (seen != 7) {
		snprintf(err, errlen, "Credential, SignedHeaders and Signature are required");
		return -1;
	}
	return 0;
}

int
sigv4_signed_del(char *sh, const char *name)
{
	size_t nl = strlen(name), el;
	char *p = sh;

	for (;;) {
		el = strcspn(p, ";");
		if (el == nl && strncmp(p, name, nl) == 0) {
			if (p[el] == ';')
				memmove(p, p + el + 1, strlen(p + el + 1) + 1);
			else if (p > sh)
				p[-1] = '\0';	/* the last: its separator goes too */
			else
				*p = '\0';
			return 1;
		}
		if (p[el] == '\0')
			return 0;
		p += el + 1;
	}
}

int
sigv4_signed_add(char *sh, size_t cap, const char *name)
{
	size_t nl = strlen(name), len = strlen(sh), at = 0, el;
	const char *p = sh;

	/* the list is sorted (the client's SignedHeaders, checked when parsed) */
	while (at < len) {
		el = strcspn(p, ";");
		if (el == nl && strncmp(p, name, nl) == 0)
			return 0;	/* already signed */
		if (strncmp(p, name, el < nl ? el : nl) > 0 ||
		    (strncmp(p, name, el < nl ? el : nl) == 0 && el > nl))
			break;
		at += el + (p[el] == ';');
		p = sh + at;
	}
	if (len + nl + 2 > cap)
		return -1;
	if (at < len) {
		memmove(sh + at + nl + 1, sh + at, len - at + 1);
		memcpy(sh + at, name, nl);
		sh[at + nl] = ';';
	} else {
		if (len > 0)
			sh[len++] = ';';
		memcpy(sh + len, name, nl + 1);
	}
	return 0;
}

int
sigv4_auth_write(const struct sigv4_auth *a, const char *akid, const char *sig, char *out,
    size_t outlen)
{
	int r = snprintf(out, outlen, ALG " Credential=%s/%s/%s/%s/aws4_request, "
	    "SignedHeaders=%s, Signature=%s", akid, a->date, a->region, a->service,
	    a->signed_headers, sig);

	return r < 0 || (size_t)r >= outlen ? -1 : 0;
}

/* ---- the canonical request ---- */

/* Appends byte c percent-encoded unless unreserved (or '/' when slash). */
static int
enc(struct buf *b, int c, int slash)
{
	char e[3];

	if (unreserved(c) || (slash && c == '/'))
		return buf_add(b, (char[]){ (char)c }, 1);
	e[0] = '%';
	e[1] = hexu[(c >> 4) & 15];
	e[2] = hexu[c & 15];
	return buf_add(b, e, 3);
}

/*
 * The canonical URI of path p (n bytes, starting with '/'): as sent for
 * S3; else empty and dot segments removed (a trailing '/' kept) and every
 * byte but unreserved ones and '/' encoded again. -1 for a path of more
 * than SIGV4_SEGS_MAX segments (or a byte S3 would not take as sent).
 */
static int
canon_uri(const char *p, size_t n, int s3, struct buf *b)
{
	size_t seg[SIGV4_SEGS_MAX], segl[SIGV4_SEGS_MAX], nseg = 0, i, s, k;
	int r = 0;

	if (s3) {
		for (i = 0; i < n; i++)
			if ((unsigned char)p[i] <= 0x20 || (unsigned char)p[i] >= 0x7f)
				return -1;
		return buf_add(b, p, n);
	}
	for (i = 0; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		s = i;
		while (s > 0 && p[s - 1] != '/')
			s--;
		if (i == s || (i - s == 1 && p[s] == '.')) {
			/* empty or "." */
		} else if (i - s == 2 && p[s] == '.' && p[s + 1] == '.') {
			if (nseg > 0)
				nseg--;
		} else {
			if (nseg == SIGV4_SEGS_MAX)
				return -1;	/* refused: see SIGV4_SEGS_MAX */
			seg[nseg] = s;
			segl[nseg++] = i - s;
		}
	}
	r |= buf_add(b, "/", 1);
	for (k = 0; k < nseg; k++) {
		if (k > 0)
			r |= buf_add(b, "/", 1);
		for (i = 0; i < segl[k]; i++)
			r |= enc(b, (unsigned char)p[seg[k] + i], 0);
	}
	if (nseg > 0 && n > 1 && p[n - 1] == '/')
		r |= buf_add(b, "/", 1);
	return r;
}

struct qpair {
	char	*s;		/* "name=value", both encoded canonically */
	size_t	 nl;		/* length of the name */
};

static int
qpair_cmp(const void *a, const void *b)
{
	const struct qpair *x = a, *y = b;
	size_t m = x->nl < y->nl ? x->nl : y->nl;
	int r = memcmp(x->s, y->s, m);

	if (r != 0)
		return r;
	if (x->nl != y->nl)
		return x->nl < y->nl ? -1 : 1;
	return strcmp(x->s + x->nl, y->s + y->nl);
}

/* Decodes [s,e) and encodes it canonically into b; -1 on a malformed escape. */
static int
requote(const char *s, const char *e, struct buf *b)
{
	int c;

	for (; s < e; s++) {
		c = (unsigned char)*s;
		if (c == '%') {
			if (e - s < 3 || !ishex(s[1]) || !ishex(s[2]))
				return -1;
			c = hexval(s[1]) << 4 | hexval(s[2]);
			s += 2;
		} else if (c <= 0x20 || c >= 0x7f)
			return -1;
		if (enc(b, c, 0) != 0)
			return -1;
	}
	return 0;
}

/*
 * Percent-decodes s (n bytes) into out (room for outlen with its NUL);
 * the decoded length, or -1 (a malformed escape, a NUL or control byte,
 * no room).
 */
static int
qdecode(const char *s, size_t n, char *out, size_t outlen)
{
	size_t i, k = 0;
	int c, hi, lo;

	for (i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -1;
			if ((hi = hexval(s[i + 1])) < 0 || (lo = hexval(s[i + 2])) < 0)
				return -1;
			c = hi << 4 | lo;
			i += 2;
		}
		if (c < 0x20 || c == 0x7f || k + 1 >= outlen)
			return -1;
		out[k++] = (char)c;
	}
	out[k] = '\0';
	return (int)k;
}

/* The value of parameter name (nl bytes) in query q (n bytes): 0 with *v, *vl; 1 none; -1 twice. */
static int
qparam(const char *q, size_t n, const char *name, size_t nl, const char **v, size_t *vl)
{
	size_t i = 0, s;
	int found = 0;

	while (i <= n) {
		for (s = i; i < n && q[i] != '&'; i++)
			;
		if (i - s > nl && memcmp(q + s, name, nl) == 0 && q[s + nl] == '=') {
			if (found++)
				return -1;
			*v = q + s + nl + 1;
			*vl = i - s - nl - 1;
		}
		i++;
	}
	return found ? 0 : 1;
}

int
sigv4_presign_parse(const char *q, size_t n, struct sigv4_auth *a, char amzdate[17],
    char *err, size_t errlen)
{
	static const struct { const char *name; size_t room; } want[] = {
		{ "X-Amz-Algorithm", 64 }, { "X-Amz-Credential", SIGV4_AKID_MAX + 160 },
		{ "X-Amz-SignedHeaders", SIGV4_SH_MAX }, { "X-Amz-Signature", 65 },
		{ "X-Amz-Date", 17 },
	};
	char val[5][SIGV4_SH_MAX], auth[SIGV4_SH_MAX * 2];
	const char *v;
	size_t vl, i;
	int r;

	if ((r = qparam(q, n, "X-Amz-Signature", 15, &v, &vl)) == 1)
		return 1;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		r = qparam(q, n, want[i].name, strlen(want[i].name), &v, &vl);
		if (r != 0 || qdecode(v, vl, val[i], want[i].room) < 0) {
			snprintf(err, errlen, "a presigned URL needs one well-formed %s",
			    want[i].name);
			return -1;
		}
	}
	if (strcmp(val[0], ALG) != 0) {
		snprintf(err, errlen, "a presigned URL signed with %.40s (SigV4a) cannot be signed "
		    "again", val[0]);
		return -2;
	}
	/* The same rules as the header form's: one reader for both. */
	if ((size_t)snprintf(auth, sizeof(auth), ALG " Credential=%s, SignedHeaders=%s, "
	    "Signature=%s", val[1], val[2], val[3]) >= sizeof(auth) ||
	    sigv4_auth_parse(auth, strlen(auth), a, err, errlen) == -1)
		return -1;
	if (strlen(val[4]) != 16 || strncmp(val[4], a->date, 8) != 0) {
		snprintf(err, errlen, "a presigned URL needs X-Amz-Date of its scope's day");
		return -1;
	}
	memcpy(amzdate, val[4], 17);
	return 0;
}

/* Appends s percent-encoded (unreserved bytes as they are). */
static int
enc_str(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++)
		if (enc(b, (unsigned char)*s, 0) != 0)
			return -1;
	return 0;
}

int
sigv4_presign_target(const char *target, size_t tl, const char *akid, struct buf *out)
{
	const char *q = memchr(target, '?', tl), *p, *e;
	size_t i, s, rest;
	int first = 1;

	if (q == NULL)
		return -1;
	if (buf_add(out, target, (size_t)(q + 1 - target)) != 0)
		return -1;
	p = q + 1;
	e = target + tl;
	for (i = 0; p + i <= e;) {
		for (s = i; p + i < e && p[i] != '&'; i++)
			;
		if (i - s >= 16 && memcmp(p + s, "X-Amz-Signature=", 16) == 0) {
			/* left out: the signature comes last, of what goes */
		} else if (i - s >= 17 && memcmp(p + s, "X-Amz-Credential=", 17) == 0) {
			/* the key id (up to the first '/' or %2F) replaced */
			for (rest = s + 17; rest < i && p[rest] != '/' && !(p[rest] == '%' &&
			    rest + 2 < i && p[rest + 1] == '2' && (p[rest + 2] == 'F' ||
			    p[rest + 2] == 'f')); rest++)
				;
			if ((!first && buf_add(out, "&", 1) != 0) ||
			    buf_add(out, "X-Amz-Credential=", 17) != 0 ||
			    enc_str(out, akid) != 0 || buf_add(out, p + rest, i - rest) != 0)
				return -1;
			first = 0;
		} else if (i > s) {
			if ((!first && buf_add(out, "&", 1) != 0) || buf_add(out, p + s, i - s) != 0)
				return -1;
			first = 0;
		}
		i++;
	}
	return 0;
}

#define SIGV4_QPAIRS_MAX	1024	/* query parameters in one signed request */

static int
canon_query(const char *q, size_t n, struct buf *b)
{
	struct qpair *pv = NULL;
	struct buf t;
	size_t np = 0, i, s, eq, k;
	int rc = -1;

	if (n == 0)
		return 0;
	pv = calloc(SIGV4_QPAIRS_MAX, sizeof(*pv));
	if (pv == NULL)
		return -1;
	buf_init(&t, SIGV4_CREQ_MAX);
	for (i = 0, s = 0; i <= n; i++) {
		if (i < n && q[i] != '&')
			continue;
		if (i > s) {
			if (np == SIGV4_QPAIRS_MAX)
				goto out;
			for (eq = s; eq < i && q[eq] != '='; eq++)
				;
			buf_reset(&t);
			if (requote(q + s, q + eq, &t) == -1)
				goto out;
			pv[np].nl = t.len;
			if (buf_add(&t, "=", 1) != 0 ||
			    requote(eq < i ? q + eq + 1 : q + i, q + i, &t) == -1)
				goto out;
			pv[np++].s = buf_steal(&t, NULL);
		}
		s = i + 1;
	}
	qsort(pv, np, sizeof(*pv), qpair_cmp);
	for (k = 0; k < np; k++)
		if ((k > 0 && buf_add(b, "&", 1) != 0) || buf_addstr(b, pv[k].s) != 0)
			goto out;
	rc = 0;
out:
	for (k = 0; k < np; k++)
		free(pv[k].s);
	free(pv);
	buf_free(&t);
	return rc;
}

/* Appends the values of every field called name (nl bytes), joined with ','. */
static int
canon_values(const struct sigv4_req *r, const char *name, size_t nl, struct buf *b)
{
	size_t i, j, e;
	int found = 0, blank;

	for (i = 0; i < r->nf; i++) {
		const struct sigv4_field *f = &r->f[i];
		if (f->nl != nl || strncasecmp(f->name, name, nl) != 0)
			continue;
		if (found++ && buf_add(b, ",", 1) != 0)
			return -1;
		for (j = 0; j < f->vl && (f->value[j] == ' ' || f->value[j] == '\t'); j++)
			;
		for (e = f->vl; e > j && (f->value[e - 1] == ' ' || f->value[e - 1] == '\t'); e--)
			;
		for (blank = 0; j < e; j++) {
			if (f->value[j] == ' ' || f->value[j] == '\t') {
				blank = 1;
				continue;
			}
			if ((blank && buf_add(b, " ", 1) != 0) || buf_add(b, f->value + j, 1) != 0)
				return -1;
			blank = 0;
		}
	}
	return found ? 0 : 1;
}

int
sigv4_canonical(const struct sigv4_req *r, const char *signed_headers, struct buf *out,
    char *err, size_t errlen)
{
	const char *q, *sh = signed_headers, *e;
	size_t pl;
	int rc;

	buf_reset(out);
	if (r->tl == 0 || r->target[0] != '/') {
		snprintf(err, errlen, "the request target is not a path");
		return -1;
	}
	q = memchr(r->target, '?', r->tl);
	pl = q != NULL ? (size_t)(q - r->target) : r->tl;
	if (buf_addf(out, "%s\n", r->method) != 0 || canon_uri(r->target, pl, r->s3, out) != 0 ||
	    buf_add(out, "\n", 1) != 0) {
		snprintf(err, errlen, "the path cannot be signed");
		return -1;
	}
	if ((q != NULL && canon_query(q + 1, r->tl - pl - 1, out) != 0) ||
	    buf_add(out, "\n", 1) != 0) {
		snprintf(err, errlen, "the query cannot be signed (a malformed escape)");
		return -1;
	}
	while (*sh != '\0') {
		e = strchr(sh, ';');
		if (e == NULL)
			e = sh + strlen(sh);
		if (buf_add(out, sh, (size_t)(e - sh)) != 0 || buf_add(out, ":", 1) != 0 ||
		    (rc = canon_values(r, sh, (size_t)(e - sh), out)) == -1 ||
		    buf_add(out, "\n", 1) != 0) {
			snprintf(err, errlen, "the request is too large to sign");
			return -1;
		}
		if (rc == 1) {
			snprintf(err, errlen, "a signed header is not in the request: %.*s",
			    (int)(e - sh > 64 ? 64 : e - sh), sh);
			return -1;
		}
		sh = *e == ';' ? e + 1 : e;
	}
	if (buf_addf(out, "\n%s\n%s", signed_headers, r->payload_hash) != 0) {
		snprintf(err, errlen, "the request is too large to sign");
		return -1;
	}
	return 0;
}

/* ---- signing ---- */

void
sigv4_key(const char *secret, const char *date, const char *region, const char *service,
    unsigned char key[32])
{
	char k0[4 + 256 + 1];
	unsigned char k[32];
	/* AWS secrets are 40 characters: a longer one is cut at 256 (and fails to verify) */
	int kl = snprintf(k0, sizeof(k0), "AWS4%.256s", secret), bad = 0;

	bad |= digest_hmac_sha256(k0, (size_t)kl, date, strlen(date), k);
	bad |= digest_hmac_sha256(k, 32, region, strlen(region), k);
	bad |= digest_hmac_sha256(k, 32, service, strlen(service), k);
	bad |= digest_hmac_sha256(k, 32, "aws4_request", 12, key);
	ASSERT(bad == 0);	/* HMAC-SHA256 of memory does not fail */
	OPENSSL_cleanse(k0, sizeof(k0));
	OPENSSL_cleanse(k, sizeof(k));
}

void
sigv4_scope(const struct sigv4_auth *a, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s/%s/%s/aws4_request", a->date, a->region, a->service);
}

void
sigv4_sign(const unsigned char key[32], const char *amzdate, const char *scope,
    const char *creq, size_t creql, char out[65])
{
	char sts[512], h[65];
	unsigned char md[32];
	int n, bad;

	bad = digest_sha256_hex(creq, creql, h);
	n = snprintf(sts, sizeof(sts), ALG "\n%s\n%s\n%s", amzdate, scope, h);
	/* the date and scope are bounded (sigv4.h); digests of memory do not fail */
	ASSERT(bad == 0 && n > 0 && (size_t)n < sizeof(sts));
	bad = digest_hmac_sha256(key, 32, sts, (size_t)n, md);
	ASSERT(bad == 0);
	hex_encode(md, 32, out);
}

void
sigv4_chunk_sign(const unsigned char key[32], const char *amzdate, const char *scope,
    const char *prev, const unsigned char hash[32], char out[65])
{
	char sts[640], h[65];
	unsigned char md[32];
	int n, bad;

	hex_encode(hash, 32, h);
	n = snprintf(sts, sizeof(sts), CHUNK_ALG "\n%s\n%s\n%s\n" EMPTY_SHA256 "\n%s", amzdate,
	    scope, prev, h);
	ASSERT(n > 0 && (size_t)n < sizeof(sts));
	bad = digest_hmac_sha256(key, 32, sts, (size_t)n, md);
	ASSERT(bad == 0);
	hex_encode(md, 32, out);
}

/* ---- streaming bodies ---- */

enum { CH_HEAD, CH_DATA, CH_CRLF, CH_DONE };

void
sigv4_chunks_init(struct sigv4_chunks *c, const unsigned char ckey[32], const char *cseed,
    const unsigned char key[32], const char *seed, const char *amzdate, const char *scope)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->ckey, ckey, 32);
	memcpy(c->key, key, 32);
	snprintf(c->cprev, sizeof(c->cprev), "%s", cseed);
	snprintf(c->prev, sizeof(c->prev), "%s", seed);
	snprintf(c->amzdate, sizeof(c->amzdate), "%s", amzdate);
	snprintf(c->scope, sizeof(c->scope), "%s", scope);
	buf_init(&c->data, SIGV4_CHUNK_MAX);
	c->state = CH_HEAD;
}

void
sigv4_chunks_free(struct sigv4_chunks *c)
{
	buf_free(&c->data);
	OPENSSL_cleanse(c->ckey, sizeof(c->ckey));
	OPENSSL_cleanse(c->key, sizeof(c->key));
}

/* "hex-size;chunk-signature=SIG" (the line without CRLF) */
static int
chunk_head(struct sigv4_chunks *c, char *err, size_t errlen)
{
	static const char ext[] = ";chunk-signature=";
	size_t i;

	for (i = 0; i < c->linelen && ishex(c->line[i]); i++)
		;
	if (i == 0 || i > 15 || c->linelen != i + sizeof(ext) - 1 + 64 ||
	    memcmp(c->line + i, ext, sizeof(ext) - 1) != 0 ||
	    !lowhex64(c->line + i + sizeof(ext) - 1, 64)) {
		snprintf(err, errlen, "a malformed aws-chunked chunk header");
		return -1;
	}
	c->size = 0;
	for (size_t k = 0; k < i; k++)
		c->size = c->size << 4 | (uint64_t)hexval(c->line[k]);
	if (c->size > SIGV4_CHUNK_MAX) {
		snprintf(err, errlen, "an aws-chunked chunk over %zu bytes", SIGV4_CHUNK_MAX);
		return -1;
	}
	memcpy(c->csig, c->line + i + sizeof(ext) - 1, 64);
	c->csig[64] = '\0';
	c->linelen = i;		/* keep the size as sent */
	c->left = c->size;
	buf_reset(&c->data);
	return 0;
}

/* The chunk is whole: check the client's signature, sign it again, write it out. */
static int
chunk_done(struct sigv4_chunks *c, struct buf *out, char *err, size_t errlen)
{
	unsigned char md[DIGEST_SHA256_LEN];
	char want[65], sig[65];
	int bad = digest_sha256(c->data.p, c->data.len, md);

	ASSERT(bad == 0);	/* SHA-256 of memory does not fail */
	sigv4_chunk_sign(c->ckey, c->amzdate, c->scope, c->cprev, md, want);
	if (CRYPTO_memcmp(want, c->csig, 64) != 0) {
		snprintf(err, errlen, "an aws-chunked chunk signature does not verify");
		return -1;
	}
	snprintf(c->cprev, sizeof(c->cprev), "%s", c->csig);
	sigv4_chunk_sign(c->key, c->amzdate, c->scope, c->prev, md, sig);
	snprintf(c->prev, sizeof(c->prev), "%s", sig);
	if (buf_add(out, c->line, c->linelen) != 0 ||
	    buf_addf(out, ";chunk-signature=%s\r\n", sig) != 0 ||
	    buf_add(out, c->data.p, c->data.len) != 0 || buf_add(out, "\r\n", 2) != 0) {
		snprintf(err, errlen, "no room for the re-signed chunk");
		return -1;
	}
	return 0;
}

int
sigv4_chunks_feed(struct sigv4_chunks *c, const char *in, size_t n, struct buf *out,
    char *err, size_t errlen)
{
	size_t i = 0, take;

	while (i < n) {
		switch (c->state) {
		case CH_HEAD:
			if (in[i] == '\n') {
				if (c->linelen == 0 || c->line[c->linelen - 1] != '\r') {
					snprintf(err, errlen, "a bare LF in an aws-chunked chunk header");
					return -1;
				}
				c->linelen--;
				i++;
				if (chunk_head(c, err, errlen) == -1)
					return -1;
				c->state = c->size > 0 ? CH_DATA : CH_CRLF;
				c->left = c->size > 0 ? c->size : 0;
				if (c->state == CH_CRLF)
					c->left = 2;
				continue;
			}
			if (c->linelen == sizeof(c->line) - 1) {
				snprintf(err, errlen, "an aws-chunked chunk header too long");
				return -1;
			}
			c->line[c->linelen++] = in[i++];
			break;
		case CH_DATA:
			take = n - i < c->left ? n - i : (size_t)c->left;
			if (buf_add(&c->data, in + i, take) != 0) {
				snprintf(err, errlen, "an aws-chunked chunk too large");
				return -1;
			}
			i += take;
			c->left -= take;
			if (c->left == 0) {
				c->state = CH_CRLF;
				c->left = 2;
			}
			break;
		case CH_CRLF:
			if (in[i] != (c->left == 2 ? '\r' : '\n')) {
				snprintf(err, errlen, "an aws-chunked chunk not ended by CRLF");
				return -1;
			}
			i++;
			if (--c->left > 0)
				break;
			if (chunk_done(c, out, err, errlen) == -1)
				return -1;
			c->state = c->size == 0 ? CH_DONE : CH_HEAD;
			c->linelen = 0;
			break;
		default:
			snprintf(err, errlen, "bytes after the last aws-chunked chunk");
			return -1;
		}
	}
	return c->state == CH_DONE ? 1 : 0;
}
