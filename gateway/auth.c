/*
 * auth.c: Host, query token, cookie, Bearer and Origin rules (auth.h).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "attrib.h"
#include "auth.h"
#include "digest.h"
#include "log.h"
#include "strnum.h"

int
auth_host_norm(const char *in, size_t len, char *out, size_t outlen, int *port)
{
	size_t i, hl = len, o = 0;
	const char *colon = memchr(in, ':', len);
	long p = 0;

	*port = 0;
	if (colon != NULL) {
		hl = (size_t)(colon - in);
		if (colon + 1 == in + len)
			return -1;
		for (i = hl + 1; i < len; i++) {
			if (in[i] < '0' || in[i] > '9' || p > 65535)
				return -1;
			p = p * 10 + (in[i] - '0');
		}
		if (p < 1 || p > 65535)
			return -1;
		*port = (int)p;
	}
	if (hl > 0 && in[hl - 1] == '.')
		hl--;
	if (hl == 0 || hl > GW_HOST_MAX || hl >= outlen)
		return -1;
	for (i = 0; i < hl; i++) {
		char ch = in[i];

		if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		else if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '.' || ch == '_'))
			return -1;
		out[o++] = ch;
	}
	out[o] = '\0';
	return 0;
}

/* Percent-decodes s[0..n) ('+' is a space) into out; -1 bad or too long. */
static int
qdecode(const char *s, size_t n, char *out, size_t outlen)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return -1;
			if ((hi = strnum_hexdigit((unsigned char)s[i + 1])) < 0 || (lo = strnum_hexdigit((unsigned char)s[i + 2])) < 0)
				return -1;
			ch = (char)(hi * 16 + lo);
			i += 2;
		} else if (ch == '+')
			ch = ' ';
		if (ch == '\0' || o + 1 >= outlen)
			return -1;
		out[o++] = ch;
	}
	out[o] = '\0';
	return 0;
}

/* Whether the parameter name s[0..n) decodes to "token". */
static int
is_token_name(const char *s, size_t n)
{
	char nm[16];

	if (n > 15 || qdecode(s, n, nm, sizeof(nm)) == -1)
		return 0;
	return strcmp(nm, "token") == 0;
}

int
auth_query_token(const char *target, size_t len, char *tok, size_t toklen,
    struct buf *rest)
{
	const char *q = memchr(target, '?', len), *end = target + len;
	const char *frag, *s, *e, *eq;
	char val[GW_TOKEN_MAX + 1];
	int found = 0, kept = 0;

	buf_reset(rest);
	if (q == NULL) {
		if (buf_add(rest, target, len) == -1)
			return -1;
		return 0;
	}
	if ((frag = memchr(q, '#', (size_t)(end - q))) != NULL)
		end = frag;
	if (buf_add(rest, target, (size_t)(q - target)) == -1)
		return -1;
	for (s = q + 1; s <= end; s = e + 1) {
		if ((e = memchr(s, '&', (size_t)(end - s))) == NULL)
			e = end;
		eq = memchr(s, '=', (size_t)(e - s));
		if (is_token_name(s, (size_t)((eq != NULL ? eq : e) - s))) {
			const char *v = eq != NULL ? eq + 1 : e;

			if (qdecode(v, (size_t)(e - v), val, sizeof(val)) == -1)
				return -1;
			if (found && strcmp(val, tok) != 0)
				return -1;
			if (!found && strlen(val) >= toklen)
				return -1;
			if (!found)
				memcpy(tok, val, strlen(val) + 1);
			found = 1;
			continue;
		}
		if (e == s && e == end)
			break;
		if (buf_add(rest, kept ? "&" : "?", 1) == -1 ||
		    buf_add(rest, s, (size_t)(e - s)) == -1)
			return -1;
		kept = 1;
	}
	if (frag != NULL && buf_add(rest, frag, (size_t)(target + len - frag)) == -1)
		return -1;
	if (!found)
		return 0;
	if (rest->len == 0 && buf_add(rest, "/", 1) == -1)
		return -1;
	return 1;
}

int
auth_cookie_take(const char *hdr, size_t len, const char *name,
    void (*cb)(void *, const char *, size_t), void *arg, struct buf *rest)
{
	size_t nl = strlen(name), s, e, ks, ke;
	const char *eq;
	int n = 0;

	for (s = 0; s < len; s = e + 1) {
		const char *semi = memchr(hdr + s, ';', len - s);

		e = semi != NULL ? (size_t)(semi - hdr) : len;
		ks = s;
		while (ks < e && (hdr[ks] == ' ' || hdr[ks] == '\t'))
			ks++;
		ke = e;
		while (ke > ks && (hdr[ke - 1] == ' ' || hdr[ke - 1] == '\t'))
			ke--;
		if (ke == ks)
			continue;
		eq = memchr(hdr + ks, '=', ke - ks);
		if (eq != NULL && (size_t)(eq - (hdr + ks)) == nl &&
		    memcmp(hdr + ks, name, nl) == 0) {
			const char *v = eq + 1;
			size_t vl = (size_t)(hdr + ke - v);

			if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
				v++;
				vl -= 2;
			}
			if (cb != NULL)
				cb(arg, v, vl);
			n++;
			continue;
		}
		if (rest != NULL) {
			if (rest->len > 0)
				ign(buf_add(rest, "; ", 2));
			ign(buf_add(rest, hdr + ks, ke - ks));
		}
	}
	return n;
}

int
auth_bearer(const char *v, size_t len, const char **tok, size_t *toklen)
{
	size_t i = 6;

	if (len < 7 || strncasecmp(v, "bearer", 6) != 0 || (v[6] != ' ' && v[6] != '\t'))
		return 0;
	while (i < len && (v[i] == ' ' || v[i] == '\t'))
		i++;
	while (len > i && (v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	if (i == len)
		return 0;
	*tok = v + i;
	*toklen = len - i;
	return 1;
}

int
auth_origin_same(const char *origin, size_t len, const char *scheme,
    const char *host, int port)
{
	char h[GW_HOST_MAX + 2];
	size_t sl = strlen(scheme);
	int defport = strcmp(scheme, "https") == 0 ? 443 : 80, op;

	while (len > 0 && (origin[len - 1] == ' ' || origin[len - 1] == '\t'))
		len--;
	if (len < sl + 4 || strncasecmp(origin, scheme, sl) != 0 ||
	    memcmp(origin + sl, "://", 3) != 0)
		return 0;
	origin += sl + 3;
	len -= sl + 3;
	if (len > 0 && origin[len - 1] == '/')
		return 0;	/* an Origin is scheme://host[:port], no path */
	if (auth_host_norm(origin, len, h, sizeof(h), &op) == -1)
		return 0;
	if (op == 0)
		op = defport;
	if (port == 0)
		port = defport;
	return strcmp(h, host) == 0 && op == port;
}

void
auth_token_sha256(const char *tok, size_t len, char hex[65])
{
	int bad = digest_sha256_hex(tok, len, hex);

	ASSERT(bad == 0);	/* SHA-256 of memory does not fail */
}

int
auth_ct_eq(const char *a, const char *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}

int
auth_token_ok(const char *tok, size_t len, const char *want)
{
	char hex[65];

	if (len == 0 || len > GW_TOKEN_MAX || strlen(want) != 64)
		return 0;
	auth_token_sha256(tok, len, hex);
	return auth_ct_eq(hex, want, 64);
}
