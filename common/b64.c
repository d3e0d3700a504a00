/*
 * b64.c: base64 encoding and strict decoding (b64.h).
 */
#include "b64.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
b64_encode(const void *in, size_t n, char *out)
{
	const unsigned char *p = in;
	size_t i, o = 0;
	unsigned v;

	for (i = 0; i + 2 < n; i += 3) {
		v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = alphabet[(v >> 6) & 63];
		out[o++] = alphabet[v & 63];
	}
	if (i < n) {
		v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0);
		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = '=';
		if (i + 1 < n)
			out[o - 1] = alphabet[(v >> 6) & 63];
		out[o++] = '=';
	}
	return o;
}

static int
b64_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

long
b64_decode(const char *s, size_t n, unsigned char *out, int padded,
    const char **why, size_t *at)
{
	size_t i, o = 0, pad = 0;
	unsigned v = 0;
	int k = 0, d;

	while (pad < 2 && n > pad && s[n - 1 - pad] == '=')
		pad++;
	if ((n - pad) % 4 == 1 || (pad > 0 && n % 4 != 0) ||
	    (padded && n % 4 != 0)) {
		*why = "its length is not that of base64";
		*at = n;
		return -1;
	}
	for (i = 0; i < n - pad; i++) {
		if ((d = b64_val((unsigned char)s[i])) == -1) {
			*why = "a character that is not base64 (A-Z a-z 0-9 + /, "
			    "'=' padding at the end, no spaces or newlines)";
			*at = i;
			return -1;
		}
		v = v << 6 | (unsigned)d;
		if (++k == 4) {
			out[o++] = (unsigned char)(v >> 16);
			out[o++] = (unsigned char)(v >> 8);
			out[o++] = (unsigned char)v;
			v = 0;
			k = 0;
		}
	}
	if (k > 0) {
		/* 2 or 3 characters: 1 or 2 bytes, the rest of the bits zero */
		v <<= 6 * (4 - k);
		if ((v & (k == 2 ? 0xffffu : 0xffu)) != 0) {
			*why = "its last character has bits set beyond the data "
			    "(not canonical base64)";
			*at = n - pad - 1;
			return -1;
		}
		out[o++] = (unsigned char)(v >> 16);
		if (k == 3)
			out[o++] = (unsigned char)(v >> 8);
	}
	return (long)o;
}
