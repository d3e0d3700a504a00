/* http.c: the agent's side of a request head and its chunked decoder. The
 * head itself is read by common/h1head.c (llhttp, strict) with the rules of
 * common/h1.c that every daemon applies: where it ends and its size,
 * leading empty lines, bare CR/LF, obs-fold, NUL, the method, the token and
 * field-value grammar, the body framing (h1_framing) and the version (505).
 * What stays here is the agent's own: its target form and limits, Expect,
 * Authorization, chunked only on HTTP/1.1, and the early refusal of bytes
 * that cannot start a request. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "h1.h"
#include "h1head.h"
#include "http.h"
#include "json.h"
#include "strnum.h"
#include "util.h"

#define FAIL(code, msg) do { snprintf(err, errlen, "%s", msg); return code; } while (0)

/* A Content-Length above this is refused (431) before any route sees it:
 * no body of the agent's, streamed ones included, comes near it. */
#define HTTP_MAX_CL	(1ULL << 40)

/*
 * No end of the head yet: past empty lines, the first bytes must look like
 * a method (A-Z and '-', as llhttp's names, shorter than HTTP_MAX_METHOD),
 * so that garbage (a TLS hello) is refused at once, not after a timeout.
 * HTTP_NEED_MORE or 400.
 */
static int
http_early(const char *p, size_t n, char *err, size_t errlen)
{
	size_t i, s0;

	for (s0 = 0; s0 + 1 < n && p[s0] == '\r' && p[s0 + 1] == '\n';)
		s0 += 2;
	for (i = s0; i < n && i < s0 + HTTP_MAX_METHOD; i++) {
		if (p[i] == ' ' && i > s0)
			return HTTP_NEED_MORE;
		if (p[i] == '\r' && i == s0 && i + 1 == n)
			return HTTP_NEED_MORE;	/* an empty line's CR, its LF to come */
		if (!((p[i] >= 'A' && p[i] <= 'Z') || (p[i] == '-' && i > s0)))
			FAIL(400, "malformed request line");
	}
	if (i == s0 + HTTP_MAX_METHOD)
		FAIL(400, "unknown method");
	return HTTP_NEED_MORE;
}

/* The agent's checks on a head h1head_parse took, filling r: 0 or a status. */
static int
http_fill(const struct h1head *hd, struct http_req *r, char *err, size_t errlen)
{
	const char *u = hd->data.p + hd->url_o, *q, *v;
	size_t ul = hd->url_l, len, i;
	const char *m = h1head_method(hd);

	if (strlen(m) >= sizeof(r->method))
		FAIL(400, "unknown method");
	memcpy(r->method, m, strlen(m) + 1);
	if (ul == 0 || u[0] != '/')
		FAIL(400, "request target must be an absolute path");
	if (ul > HTTP_MAX_TARGET)
		FAIL(431, "request target too long");
	for (i = 0; i < ul; i++)
		if ((unsigned char)u[i] <= 0x20 || (unsigned char)u[i] >= 0x7f)
			FAIL(400, "bad byte in request target");
	q = memchr(u, '?', ul);
	len = (size_t)((q != NULL ? q : u + ul) - u);
	memcpy(r->path, u, len);
	r->path[len] = '\0';
	if (q != NULL) {
		len = (size_t)(u + ul - q - 1);
		memcpy(r->query, q + 1, len);
		r->query[len] = '\0';
	}
	/* Framing was checked by h1_framing: none, one length or "chunked". */
	if (hd->has_cl && hd->content_length > HTTP_MAX_CL)
		FAIL(431, "Content-Length too large");
	r->has_length = hd->has_cl;
	r->content_length = hd->content_length;
	r->chunked = hd->chunked;	/* never on HTTP/1.0: h1_framing refused it */
	for (i = 0; i < hd->nh; i++) {
		v = hd->data.p + hd->h[i].vo;
		len = hd->h[i].vl;
		if (h1head_is(hd, i, "expect")) {
			if (len != 12 || strncasecmp(v, "100-continue", 12) != 0)
				FAIL(400, "unsupported Expect");
			r->expect_continue = 1;
		} else if (h1head_is(hd, i, "authorization")) {
			if (len > HTTP_MAX_AUTH)
				FAIL(400, "Authorization too long");
			if (r->has_auth)
				FAIL(400, "repeated Authorization");
			r->has_auth = 1;
			memcpy(r->auth, v, len);
			r->auth[len] = '\0';
		}
	}
	r->keepalive = hd->keepalive;
	return 0;
}

int
http_parse_head(const char *p, size_t n, struct http_req *r, char *err,
    size_t errlen)
{
	struct h1head hd;
	long hl;
	int st;

	hl = h1_head_end(p, n, HTTP_MAX_HEAD);
	if (hl == H1_HEAD_LARGE)
		FAIL(431, "request head too large");
	if (hl == H1_HEAD_BAD)
		FAIL(400, "malformed request head (bare CR or LF, "
		    "obs-fold, NUL or only empty lines)");
	if (hl == H1_HEAD_MORE)
		return http_early(p, n, err, errlen);
	memset(r, 0, sizeof(*r));
	r->head_len = (size_t)hl;
	/* A head of at most HTTP_MAX_HEAD bytes copies into as many. */
	h1head_init(&hd, HTTP_MAX_HEAD);
	st = h1head_parse(&hd, HTTP_REQUEST, p, (size_t)hl, HTTP_MAX_HEADERS,
	    err, errlen);
	if (st == 0)
		st = http_fill(&hd, r, err, errlen);
	h1head_free(&hd);
	return st == 0 ? HTTP_DONE : st;
}

int
http_query_get(const char *query, const char *key, char *out, size_t outlen)
{
	const char *s = query, *amp, *val;
	size_t klen = strlen(key), kl, o;
	int h, l;

	while (*s != '\0') {
		amp = strchr(s, '&');
		if (amp == NULL)
			amp = s + strlen(s);
		val = util_kv_find(s, (size_t)(amp - s), &kl);
		if (val != NULL && kl == klen && memcmp(s, key, klen) == 0) {
			o = 0;
			for (s = val; s < amp; s++) {
				char c = *s;
				if (c == '%') {
					if (amp - s < 3 || (h = strnum_hexdigit((unsigned char)s[1])) < 0 ||
					    (l = strnum_hexdigit((unsigned char)s[2])) < 0)
						return -1;
					c = (char)(h * 16 + l);
					if (c == '\0')
						return -1;
					s += 2;
				} else if (c == '+')
					c = ' ';
				if (o + 1 >= outlen)
					return -1;
				out[o++] = c;
			}
			out[o] = '\0';
			return 0;
		}
		s = *amp != '\0' ? amp + 1 : amp;
	}
	return 1;
}

enum { CK_SIZE, CK_EXT, CK_SIZE_LF, CK_DATA, CK_DATA_CR, CK_DATA_LF,
	CK_TRL, CK_TRL_LINE, CK_TRL_LF, CK_END_LF, CK_DONE };

#undef FAIL
#define FAIL(msg) do { snprintf(err, errlen, "%s", msg); return -1; } while (0)

long
http_chunked_decode(struct http_chunked *d, char *p, size_t n, size_t *dlen,
    char *err, size_t errlen)
{
	size_t i = 0, o = 0, k;
	int h;

	while (i < n && d->st != CK_DONE) {
		unsigned char ch = (unsigned char)p[i];

		switch (d->st) {
		case CK_SIZE:
			if ((h = strnum_hexdigit(ch)) >= 0) {
				if (++d->ndig > 15)
					FAIL("chunk size too large");
				d->left = d->left * 16 + (unsigned)h;
			} else if (d->ndig > 0 && ch == ';')
				d->st = CK_EXT;
			else if (d->ndig > 0 && ch == '\r')
				d->st = CK_SIZE_LF;
			else
				FAIL("malformed chunk size");
			i++;
			break;
		case CK_EXT:
			if (ch == '\r')
				d->st = CK_SIZE_LF;
			else if (++d->line > HTTP_MAX_CHUNK_LINE)
				FAIL("chunk extension too long");
			else if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
				FAIL("control character in chunk extension");
			i++;
			break;
		case CK_SIZE_LF:
			if (ch != '\n')
				FAIL("chunk size line must end in CRLF");
			i++;
			d->ndig = 0;
			d->line = 0;
			d->st = d->left == 0 ? CK_TRL : CK_DATA;
			break;
		case CK_DATA:
			k = n - i;
			if ((unsigned long long)k > d->left)
				k = (size_t)d->left;
			memmove(p + o, p + i, k);
			o += k;
			i += k;
			d->left -= k;
			if (d->left == 0)
				d->st = CK_DATA_CR;
			break;
		case CK_DATA_CR:
			if (ch != '\r')
				FAIL("chunk data must be followed by CRLF");
			d->st = CK_DATA_LF;
			i++;
			break;
		case CK_DATA_LF:
			if (ch != '\n')
				FAIL("chunk data must be followed by CRLF");
			d->st = CK_SIZE;
			i++;
			break;
		case CK_TRL:	/* the start of a trailer line, or the end */
			if (ch == '\r')
				d->st = CK_END_LF;
			else {
				d->line = 0;
				d->st = CK_TRL_LINE;
				continue;	/* the byte is the line's */
			}
			i++;
			break;
		case CK_TRL_LINE:
			if (++d->trailer > HTTP_MAX_HEAD)
				FAIL("chunked trailer too large");
			if (ch == '\r')
				d->st = CK_TRL_LF;
			else if (++d->line > HTTP_MAX_CHUNK_LINE)
				FAIL("trailer line too long");
			else if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
				FAIL("control character in trailer");
			i++;
			break;
		case CK_TRL_LF:
		case CK_END_LF:
			if (ch != '\n')
				FAIL("trailer line must end in CRLF");
			d->st = d->st == CK_END_LF ? CK_DONE : CK_TRL;
			i++;
			break;
		default:
			FAIL("chunked decoder state");
		}
	}
	*dlen = o;
	return (long)i;
}

int
http_chunked_done(const struct http_chunked *d)
{
	return d->st == CK_DONE;
}
