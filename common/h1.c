/*
 * h1.c: the HTTP/1.1 head rules shared by every daemon (h1.h).
 *
 * Rules of this file: every function takes bytes and lengths, never a
 * NUL-terminated head (a head may hold a NUL, which is refused, not
 * mistaken for its end); no allocation, no I/O, no library beyond libc;
 * where two daemons used to decide differently, the rule is written here
 * once with the RFC section and the reason beside it, and test_h1.c has a
 * row showing it.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "h1.h"
#include "attrib.h"

long
h1_head_end(const char *p, size_t n, size_t max)
{
	size_t i, line, start = 0;

	/*
	 * Leading empty lines: skipped (RFC 9112 2.2: a server SHOULD ignore
	 * at least one CRLF before a request-line), a few only. The proxy
	 * used to refuse them and the gateway to skip them; a client that
	 * pipelines after a body with a stray CRLF is no attacker, and
	 * llhttp skips them itself. A lone CR or LF there is bad framing as
	 * anywhere else.
	 */
	while (start + 1 < n && start < 2 * H1_LEADING_CRLF_MAX && p[start] == '\r' &&
	    p[start + 1] == '\n')
		start += 2;
	line = start;
	for (i = start; i < n; i++) {
		/*
		 * A head may be max bytes, leading empty lines and its own
		 * empty line included: byte max would be one too many. (The
		 * gateway and the proxy agreed here; they disagreed only on
		 * when to give up waiting, below.)
		 */
		if (i >= max)
			return H1_HEAD_LARGE;
		if (p[i] == '\0')
			return H1_HEAD_BAD;		/* RFC 9110 5.5: NUL is never a field byte */
		if (p[i] == '\r') {
			if (i + 1 < n && p[i + 1] != '\n')
				return H1_HEAD_BAD;	/* bare CR (RFC 9112 2.2) */
			continue;
		}
		if (p[i] != '\n')
			continue;
		/*
		 * Bare LF: RFC 9112 2.2 lets a recipient take LF alone as a line
		 * end; every daemon refuses it instead, since the upstream or app
		 * behind it may not, and two readings of one head is smuggling.
		 */
		if (i == 0 || p[i - 1] != '\r')
			return H1_HEAD_BAD;
		if (i - line == 1) {			/* the empty line */
			if (line == start)
				return H1_HEAD_BAD;	/* empty lines only, past the few skipped */
			return (long)(i + 1);
		}
		line = i + 1;
		/* obs-fold (RFC 9112 5.2): a server MAY reject it; all do (400). */
		if (line < n && (p[line] == ' ' || p[line] == '\t'))
			return H1_HEAD_BAD;
	}
	/*
	 * n >= max bytes with no end: no byte to come can make the head fit,
	 * so say so now. The proxy used to wait for one more byte (n > max).
	 */
	if (n >= max)
		return H1_HEAD_LARGE;
	return H1_HEAD_MORE;
}

/* tchar (RFC 9110 5.6.2): ALPHA, DIGIT and these. */
static int
tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

int
h1_token_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (!tchar((unsigned char)s[i]))
			return 0;
	return 1;
}

int
h1_value_ok(const char *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return 0;
	}
	return 1;
}

int
h1_list_has(const char *v, size_t len, const char *tok, size_t tl)
{
	size_t s, e, t;

	if (tl == 0)
		return 0;
	for (s = 0; s < len; s = e + 1) {
		while (s < len && (v[s] == ' ' || v[s] == '\t' || v[s] == ','))
			s++;
		for (e = s; e < len && v[e] != ','; e++)
			;
		t = e;
		while (t > s && (v[t - 1] == ' ' || v[t - 1] == '\t'))
			t--;
		if (t - s == tl && strncasecmp(v + s, tok, tl) == 0)
			return 1;
	}
	return 0;
}

int
h1_hop_name(const char *name, size_t nl)
{
	static const struct { const char *n; size_t l; } hop[] = {
		{ "connection", 10 }, { "keep-alive", 10 }, { "te", 2 }, { "trailer", 7 },
		{ "upgrade", 7 },
	};
	size_t i;

	/*
	 * Every Proxy-* field, found by its prefix: Proxy-Connection is not
	 * in RFC 9110's list but clients still send it, Proxy-Authorization
	 * is the proxy's own, and none is meant for an origin. (The gateway
	 * used to name Proxy-Connection in its list and test the prefix as
	 * well; the proxy only the prefix. One way now.)
	 */
	if (nl >= 6 && strncasecmp(name, "proxy-", 6) == 0)
		return 1;
	for (i = 0; i < NELEM(hop); i++)
		if (nl == hop[i].l && strncasecmp(name, hop[i].n, nl) == 0)
			return 1;
	return 0;
}

/* v[0..len) without whitespace and commas at either end: *o, *l. */
static void
list_trim(const char *v, size_t len, size_t *o, size_t *l)
{
	size_t s = 0, e = len;

	while (s < e && (v[s] == ' ' || v[s] == '\t' || v[s] == ','))
		s++;
	while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t' || v[e - 1] == ','))
		e--;
	*o = s;
	*l = e - s;
}

/* The last element of a comma-separated list, whitespace trimmed. */
static void
list_last(const char *v, size_t len, size_t *o, size_t *l)
{
	size_t s, e;

	list_trim(v, len, &s, &e);
	e += s;
	for (s = e; s > 0 && v[s - 1] != ','; s--)
		;
	while (s < e && (v[s] == ' ' || v[s] == '\t'))
		s++;
	*o = s;
	*l = e - s;
}

int
h1_version_token(const char *head, size_t len, int request)
{
	const char *e, *v;
	size_t i = 0, l;

	while (len - i >= 2 && head[i] == '\r' && head[i + 1] == '\n')
		i += 2;
	if ((e = memchr(head + i, '\n', len - i)) == NULL || e == head + i || e[-1] != '\r')
		return 0;
	l = (size_t)(e - 1 - (head + i));
	if (l < 9)
		return 0;
	v = request ? head + i + l - 8 : head + i;
	/*
	 * A request line is method SP target SP version: two spaces, the
	 * version after the second (a target holding a space, or bytes after
	 * the version, make a malformed line, not a version).
	 */
	if (request) {
		const char *sp1 = memchr(head + i, ' ', l), *sp2;
		sp2 = sp1 != NULL ? memchr(sp1 + 1, ' ', (size_t)(head + i + l - sp1 - 1)) : NULL;
		if (sp1 == NULL || sp1 == head + i || sp2 == NULL || sp2 != v - 1 || sp2 == sp1 + 1)
			return 0;
	}
	if (!request && v[8] != ' ')
		return 0;
	return memcmp(v, "HTTP/", 5) == 0 && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
	    v[7] >= '0' && v[7] <= '9';
}

int
h1_framing(int minor, int ncl, int nte, const char *te, size_t tel, char *err, size_t errlen)
{
	size_t o, l;

	/*
	 * Two Content-Length fields, even equal ones: RFC 9112 6.3 lets a
	 * recipient take equal values as one; every daemon refuses, since a
	 * peer behind it may read the first where we read the second.
	 */
	if (ncl > 1) {
		snprintf(err, errlen, "several Content-Length fields");
		return 400;
	}
	if (nte == 0)
		return 0;
	/*
	 * Transfer-Encoding in an HTTP/1.0 message: RFC 9112 6.1 says to treat
	 * the framing as faulty, even with a Content-Length, and close after
	 * it (HTTP/1.0 has no chunked coding; a peer of that version frames
	 * by the length or the close). Refused, as the agent alone did.
	 */
	if (minor == 0) {
		snprintf(err, errlen, "Transfer-Encoding in an HTTP/1.0 message");
		return 400;
	}
	/*
	 * A length and a coding (RFC 9112 6.1: a server MAY reject it): the
	 * classic request smuggling; refused.
	 */
	if (ncl > 0) {
		snprintf(err, errlen, "Content-Length with Transfer-Encoding");
		return 400;
	}
	/*
	 * Several Transfer-Encoding fields: one list by RFC 9110 5.3, but a
	 * peer that reads only one of them frames otherwise. Refused (both
	 * daemons did, the gateway as "ambiguous", the proxy as "repeated").
	 */
	if (nte > 1) {
		snprintf(err, errlen, "several Transfer-Encoding fields");
		return 400;
	}
	list_trim(te, tel, &o, &l);
	if (l == 7 && strncasecmp(te + o, "chunked", 7) == 0)
		return 0;
	list_last(te, tel, &o, &l);
	/*
	 * chunked not the final coding: the length cannot be known, RFC 9112
	 * 6.1 says 400 and close. chunked final after another coding: a
	 * coding the daemons do not decode, RFC 9112 6.1 says 501 ("chunked,
	 * chunked" is refused with 400 by RFC 9112 7 instead). (The proxy
	 * used to answer 400 and the gateway 501 to both.)
	 */
	if (l == 7 && strncasecmp(te + o, "chunked", 7) == 0 &&
	    !h1_list_has(te, o, "chunked", 7)) {
		snprintf(err, errlen, "unsupported Transfer-Encoding");
		return 501;
	}
	snprintf(err, errlen, "Transfer-Encoding without chunked last");
	return 400;
}

int
h1_version(int major, int minor, char *err, size_t errlen)
{
	/*
	 * Only HTTP/1.x, answered 505 (the orchestrator did; the gateway said
	 * 400 and the proxy took HTTP/2.0 and a line without a version,
	 * which llhttp reads as 0.9, for HTTP/1).
	 */
	if (major == 1)
		return 0;
	snprintf(err, errlen, "HTTP version %d.%d is not served", major, minor);
	return 505;
}

const char *
h1_reason(int status)
{
	/* RFC 9110 15's phrases, but 413 and 422 in their RFC 7231/4918 words, which clients and our tests know. */
	static const struct { int st; const char *r; } t[] = {
		{ 100, "Continue" }, { 101, "Switching Protocols" }, { 200, "OK" },
		{ 201, "Created" }, { 202, "Accepted" }, { 204, "No Content" },
		{ 206, "Partial Content" }, { 301, "Moved Permanently" }, { 302, "Found" },
		{ 304, "Not Modified" }, { 400, "Bad Request" }, { 401, "Unauthorized" },
		{ 403, "Forbidden" }, { 404, "Not Found" }, { 405, "Method Not Allowed" },
		{ 406, "Not Acceptable" }, { 407, "Proxy Authentication Required" },
		{ 408, "Request Timeout" }, { 409, "Conflict" }, { 411, "Length Required" },
		{ 413, "Payload Too Large" }, { 414, "URI Too Long" },
		{ 415, "Unsupported Media Type" }, { 421, "Misdirected Request" },
		{ 422, "Unprocessable Entity" }, { 429, "Too Many Requests" },
		{ 431, "Request Header Fields Too Large" }, { 500, "Internal Server Error" },
		{ 501, "Not Implemented" }, { 502, "Bad Gateway" }, { 503, "Service Unavailable" },
		{ 504, "Gateway Timeout" }, { 505, "HTTP Version Not Supported" },
		{ 507, "Insufficient Storage" },
	};
	size_t i;

	for (i = 0; i < NELEM(t); i++)
		if (t[i].st == status)
			return t[i].r;
	return "Unknown";
}
