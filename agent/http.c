/* http.c: strict HTTP/1.1 request-head parser and chunked decoder for the
 * agent. The token and field-value grammar come from common/h1.c (the
 * rules every daemon applies); where the head ends, framing and version
 * are still decided here (not yet on h1_head_end/h1_framing/llhttp). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "h1.h"
#include "http.h"
#include "json.h"
#include "strnum.h"
#include "util.h"

#define FAIL(code, msg) do { snprintf(err, errlen, "%s", msg); return code; } while (0)

int
http_parse_head(const char *p, size_t n, struct http_req *r, char *err,
    size_t errlen)
{
	const char *end = NULL, *line, *eol, *sp1, *sp2, *q, *colon, *v, *ve;
	size_t i, s0, len, nhdr = 0;
	long hl;
	int minor, conn_close = 0, conn_keep = 0;
	unsigned long long cl;

	/*
	 * Where the head ends, its size limit, leading empty lines, bare CR
	 * or LF, obs-fold and NUL: common/h1.c's rules (h1_head_end).
	 */
	hl = h1_head_end(p, n, HTTP_MAX_HEAD);
	if (hl == H1_HEAD_LARGE)
		FAIL(HTTP_TOO_LARGE, "request head too large");
	if (hl == H1_HEAD_BAD)
		FAIL(HTTP_BAD, "malformed request head (bare CR or LF, "
		    "obs-fold, NUL or only empty lines)");
	if (hl == H1_HEAD_MORE) {
		/* Early sanity: past empty lines, the first bytes must look
		 * like a method (the agent's own early refusal of garbage). */
		for (s0 = 0; s0 + 1 < n && p[s0] == '\r' && p[s0 + 1] == '\n';)
			s0 += 2;
		for (i = s0; i < n && i < s0 + 8; i++) {
			if (p[i] == ' ' && i > s0)
				break;
			if (p[i] == '\r' && i == s0 && i + 1 == n)
				break;	/* an empty line's CR, its LF to come */
			if (!(p[i] >= 'A' && p[i] <= 'Z'))
				FAIL(HTTP_BAD, "malformed request line");
		}
		if (i == s0 + 8)
			FAIL(HTTP_BAD, "unknown method");
		return HTTP_NEED_MORE;
	}
	end = p + hl;
	memset(r, 0, sizeof(*r));
	r->head_len = (size_t)hl;
	while (p[0] == '\r' && p[1] == '\n')
		p += 2;

	/* Request line: METHOD SP target SP HTTP/1.x CRLF */
	line = p;
	eol = memchr(line, '\r', (size_t)(end - line));
	if (eol == NULL || eol[1] != '\n')
		FAIL(HTTP_BAD, "malformed request line");
	sp1 = memchr(line, ' ', (size_t)(eol - line));
	if (sp1 == NULL || sp1 == line || (size_t)(sp1 - line) >= sizeof(r->method))
		FAIL(HTTP_BAD, "malformed request line");
	for (q = line; q < sp1; q++)
		if (*q < 'A' || *q > 'Z')
			FAIL(HTTP_BAD, "malformed method");
	memcpy(r->method, line, (size_t)(sp1 - line));
	sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (sp2 == NULL || sp2 == sp1 + 1)
		FAIL(HTTP_BAD, "malformed request line");
	if ((size_t)(eol - sp2 - 1) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		FAIL(HTTP_BAD, "unsupported protocol version");
	minor = sp2[8] - '0';
	if (sp1[1] != '/')
		FAIL(HTTP_BAD, "request target must be an absolute path");
	if ((size_t)(sp2 - sp1 - 1) > HTTP_MAX_TARGET)
		FAIL(HTTP_TOO_LARGE, "request target too long");
	for (q = sp1 + 1; q < sp2; q++)
		if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f)
			FAIL(HTTP_BAD, "bad byte in request target");
	q = memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1));
	len = (size_t)((q != NULL ? q : sp2) - (sp1 + 1));
	memcpy(r->path, sp1 + 1, len);
	r->path[len] = '\0';
	if (q != NULL) {
		len = (size_t)(sp2 - q - 1);
		memcpy(r->query, q + 1, len);
		r->query[len] = '\0';
	}

	/* Header fields. */
	for (line = eol + 2; line < end - 2; line = eol + 2) {
		eol = memchr(line, '\r', (size_t)(end - line));
		if (eol == NULL || eol[1] != '\n')
			FAIL(HTTP_BAD, "malformed header line");
		if (++nhdr > HTTP_MAX_HEADERS)
			FAIL(HTTP_TOO_LARGE, "too many header fields");
		if (*line == ' ' || *line == '\t')
			FAIL(HTTP_BAD, "obsolete line folding");
		colon = memchr(line, ':', (size_t)(eol - line));
		if (colon == NULL || colon == line)
			FAIL(HTTP_BAD, "malformed header line");
		if (!h1_token_ok(line, (size_t)(colon - line)))
			FAIL(HTTP_BAD, "bad header name");
		if (!h1_value_ok(line, (size_t)(eol - line)))
			FAIL(HTTP_BAD, "control character in header");
		v = colon + 1;
		while (v < eol && (*v == ' ' || *v == '\t'))
			v++;
		ve = eol;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		len = (size_t)(colon - line);
#define NAME_IS(s) (len == sizeof(s) - 1 && strncasecmp(line, s, len) == 0)
		if (NAME_IS("Content-Length")) {
			cl = 0;
			if (v == ve)
				FAIL(HTTP_BAD, "empty Content-Length");
			for (q = v; q < ve; q++) {
				if (*q < '0' || *q > '9')
					FAIL(HTTP_BAD, "bad Content-Length");
				if (cl > (1ULL << 40))
					FAIL(HTTP_TOO_LARGE, "Content-Length too large");
				cl = cl * 10 + (unsigned)(*q - '0');
			}
			/* Two Content-Length fields, even equal: 400, as
			 * h1_framing decides for every daemon (RFC 9112 6.3). */
			if (r->has_length)
				FAIL(HTTP_BAD, "repeated Content-Length");
			r->has_length = 1;
			r->content_length = cl;
		} else if (NAME_IS("Transfer-Encoding")) {
			if (r->chunked)
				FAIL(HTTP_BAD, "repeated Transfer-Encoding");
			if ((size_t)(ve - v) != 7 || strncasecmp(v, "chunked", 7) != 0)
				FAIL(HTTP_UNSUPPORTED, "Transfer-Encoding other than "
				    "chunked is not supported; send Content-Length");
			r->chunked = 1;
		} else if (NAME_IS("Connection")) {
			for (q = v; q < ve; q++) {
				if (ve - q >= 5 && strncasecmp(q, "close", 5) == 0)
					conn_close = 1;
				if (ve - q >= 10 && strncasecmp(q, "keep-alive", 10) == 0)
					conn_keep = 1;
			}
		} else if (NAME_IS("Expect")) {
			if ((size_t)(ve - v) == 12 && strncasecmp(v, "100-continue", 12) == 0)
				r->expect_continue = 1;
			else
				FAIL(HTTP_BAD, "unsupported Expect");
		} else if (NAME_IS("Authorization")) {
			if ((size_t)(ve - v) > HTTP_MAX_AUTH)
				FAIL(HTTP_BAD, "Authorization too long");
			if (r->has_auth)
				FAIL(HTTP_BAD, "repeated Authorization");
			r->has_auth = 1;
			memcpy(r->auth, v, (size_t)(ve - v));
			r->auth[ve - v] = '\0';
		}
#undef NAME_IS
	}
	if (r->chunked && r->has_length)
		FAIL(HTTP_BAD, "both Content-Length and Transfer-Encoding");
	if (r->chunked && minor == 0)
		FAIL(HTTP_BAD, "chunked encoding needs HTTP/1.1");
	r->keepalive = minor == 1 ? !conn_close : (conn_keep && !conn_close);
	return HTTP_DONE;
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
