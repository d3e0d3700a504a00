/*
 * reqcanon.c: canonical request targets (see reqcanon.h for the form and
 * what is refused). One pass over the path, a segment at a time: each
 * segment is decoded into a scratch copy (for the checks that need the
 * decoded bytes) while its canonical spelling is appended to the output
 * behind a '/'; a dot or empty segment then takes that back, ".." also the
 * segment before it. The output holds no raw '/' but separators (an
 * encoded one stays %2F), so going back one segment is going back to the
 * last '/'.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reqcanon.h"
#include "strnum.h"
#include "xmalloc.h"

static const char hexdig[] = "0123456789ABCDEF";


/* RFC 3986 unreserved: the bytes whose escapes mean the byte itself. */
static int
unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '.' || c == '_' || c == '~';
}

/* A raw byte kept as is in a canonical segment: pchar without ';' and '%'. */
static int
raw_keep(unsigned char c)
{
	return unreserved(c) || (c != '\0' && strchr("!$&'()*+,=:@", c) != NULL);
}

/* 1 if s[0..n) is UTF-8 (shortest forms, no surrogates, at most U+10FFFF). */
static int
utf8_ok(const unsigned char *s, size_t n)
{
	size_t i = 0, k, len;
	unsigned long cp;

	while (i < n) {
		unsigned char c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			len = 2;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			len = 3;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			len = 4;
			cp = c & 0x07;
		} else
			return 0;
		if (n - i < len)
			return 0;
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += len;
	}
	return 1;
}

/* Checks a decoded segment: 0, or -1 with err. */
static int
seg_check(const unsigned char *d, size_t n, char *err, size_t errlen)
{
	size_t i, s;

	if (!utf8_ok(d, n)) {
		snprintf(err, errlen, "path segment is not UTF-8 once decoded");
		return -1;
	}
	for (i = 0; i + 2 < n; i++)
		if (d[i] == '%' && strnum_hexdigit(d[i + 1]) >= 0 && strnum_hexdigit(d[i + 2]) >= 0) {
			snprintf(err, errlen, "double percent-encoding in the path");
			return -1;
		}
	if (memchr(d, '/', n) == NULL)
		return 0;
	/* An encoded '/': every piece it separates must be a plain name. */
	for (s = 0; s <= n; s = i + 1) {
		for (i = s; i < n && d[i] != '/'; i++)
			;
		if (i == s || (i - s == 1 && d[s] == '.') ||
		    (i - s == 2 && d[s] == '.' && d[s + 1] == '.')) {
			snprintf(err, errlen, "encoded / that makes an empty or dot segment");
			return -1;
		}
	}
	return 0;
}

/* Appends byte c to out as %XX. */
static int
add_esc(struct buf *out, unsigned char c)
{
	char e[3] = { '%', hexdig[c >> 4], hexdig[c & 15] };

	return buf_add(out, e, 3);
}

/* Checks the query q[0..n): well-formed escapes, no NUL, control byte or '#'. */
static int
query_check(const char *q, size_t n, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)q[i];
		if (c == '%') {
			if (n - i < 3 || strnum_hexdigit((unsigned char)q[i + 1]) < 0 ||
			    strnum_hexdigit((unsigned char)q[i + 2]) < 0) {
				snprintf(err, errlen, "malformed percent escape in the query");
				return -1;
			}
			if (strnum_hexdigit((unsigned char)q[i + 1]) == 0 && strnum_hexdigit((unsigned char)q[i + 2]) == 0) {
				snprintf(err, errlen, "encoded NUL in the query");
				return -1;
			}
			i += 2;
		} else if (c <= 0x20 || c == 0x7f || c == '#') {
			snprintf(err, errlen, "control byte or '#' in the query");
			return -1;
		}
	}
	return 0;
}

int
reqcanon_target(const char *t, size_t n, struct buf *out, size_t *path_len, char *err,
    size_t errlen)
{
	const unsigned char *u = (const unsigned char *)t;
	const char *q;
	unsigned char *dec = NULL;
	size_t base = out->len, pn, i, e, k, dl, seg;
	int rc = -1, bad = 0;

	if (n > REQCANON_MAX) {
		snprintf(err, errlen, "request target longer than %zu bytes", REQCANON_MAX);
		goto out;
	}
	if (n == 1 && t[0] == '*') {
		bad |= buf_add(out, "*", 1);
		*path_len = 1;
		goto done;
	}
	q = memchr(t, '?', n);
	pn = q != NULL ? (size_t)(q - t) : n;
	if (pn == 0 || t[0] != '/') {
		snprintf(err, errlen, "request target is not an absolute path");
		goto out;
	}
	dec = xmalloc(pn);
	for (i = 1;; i = e + 1) {
		seg = out->len;
		bad |= buf_add(out, "/", 1);
		dl = 0;
		for (e = i; e < pn && t[e] != '/'; e++) {
			unsigned char c = u[e];
			if (c == '%') {
				if (pn - e < 3 || strnum_hexdigit(u[e + 1]) < 0 || strnum_hexdigit(u[e + 2]) < 0) {
					snprintf(err, errlen, "malformed percent escape in the path");
					goto out;
				}
				c = (unsigned char)(strnum_hexdigit(u[e + 1]) << 4 | strnum_hexdigit(u[e + 2]));
				e += 2;
				if (c < 0x20 || c == 0x7f) {
					snprintf(err, errlen, "encoded NUL or control byte in the path");
					goto out;
				}
				if (c == '\\') {
					snprintf(err, errlen, "backslash in the path");
					goto out;
				}
				bad |= unreserved(c) ? buf_add(out, &c, 1) : add_esc(out, c);
			} else {
				if (c <= 0x20 || c == 0x7f) {
					snprintf(err, errlen, "control byte in the path");
					goto out;
				}
				if (c == '\\' || c == ';' || c == '#') {
					snprintf(err, errlen, "%s in the path", c == '\\' ? "backslash" :
					    c == ';' ? "path parameter (;)" : "fragment (#)");
					goto out;
				}
				bad |= raw_keep(c) ? buf_add(out, &c, 1) : add_esc(out, c);
			}
			dec[dl++] = c;
		}
		if (bad)
			break;
		if (seg_check(dec, dl, err, errlen) == -1)
			goto out;
		if (dl == 0 || (dl == 1 && dec[0] == '.')) {
			out->len = seg;		/* empty or "." segment: nothing */
		} else if (dl == 2 && dec[0] == '.' && dec[1] == '.') {
			/* ".." takes back itself and the segment before it */
			if (seg == base) {
				snprintf(err, errlen, "dot segment above the root");
				goto out;
			}
			for (k = seg; k > base && out->p[k - 1] != '/'; k--)
				;
			out->len = k - 1;
		}
		out->p[out->len] = '\0';
		if (e >= pn)
			break;
	}
	if (!bad && out->len == base)
		bad |= buf_add(out, "/", 1);
	*path_len = out->len - base;
	if (!bad && q != NULL && n - pn > 1) {
		if (query_check(q + 1, n - pn - 1, err, errlen) == -1)
			goto out;
		bad |= buf_add(out, q, n - pn);
	}
done:
	if (bad) {
		snprintf(err, errlen, "canonical request target too long");
		goto out;
	}
	rc = 0;
out:
	if (rc == -1 && out->p != NULL) {
		out->len = base;
		out->p[base] = '\0';
	}
	free(dec);
	return rc;
}
