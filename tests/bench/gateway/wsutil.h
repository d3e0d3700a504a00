/*
 * wsutil.h: the bits of RFC 6455 both benchmark programs need (SHA-1 and
 * base64 for Sec-WebSocket-Accept), self-contained so appd links statically
 * with nothing but libc. Included by appd.c and loadgen.c only.
 */
#ifndef WSUTIL_H
#define WSUTIL_H

#include <stdint.h>
#include <string.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

static uint32_t
ws_rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

/* One 64-byte block into h[5]. */
static void
ws_sha1_block(uint32_t h[5], const unsigned char *q)
{
	uint32_t w[80], a, b, c, d, e, t, f, k;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)q[4 * i] << 24 | (uint32_t)q[4 * i + 1] << 16 |
		    (uint32_t)q[4 * i + 2] << 8 | q[4 * i + 3];
	for (i = 16; i < 80; i++)
		w[i] = ws_rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4];
	for (i = 0; i < 80; i++) {
		if (i < 20) { f = (b & c) | (~b & d); k = 0x5A827999; }
		else if (i < 40) { f = b ^ c ^ d; k = 0x6ED9EBA1; }
		else if (i < 60) { f = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDC; }
		else { f = b ^ c ^ d; k = 0xCA62C1D6; }
		t = ws_rol(a, 5) + f + e + k + w[i];
		e = d; d = c; c = ws_rol(b, 30); b = a; a = t;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e;
}

/* SHA-1 of p[0..n) into out[20] (FIPS 180-4). */
static void
ws_sha1(const unsigned char *p, size_t n, unsigned char out[20])
{
	uint32_t h[5] = { 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0 };
	unsigned char tail[128];
	uint64_t bits = (uint64_t)n * 8;
	size_t off, left, tl, i;

	for (off = 0; n - off >= 64; off += 64)
		ws_sha1_block(h, p + off);
	left = n - off;
	memset(tail, 0, sizeof(tail));
	memcpy(tail, p + off, left);
	tail[left] = 0x80;
	tl = left + 1 + 8 <= 64 ? 64 : 128;
	for (i = 0; i < 8; i++)
		tail[tl - 1 - i] = (unsigned char)(bits >> (8 * i));
	ws_sha1_block(h, tail);
	if (tl == 128)
		ws_sha1_block(h, tail + 64);
	for (i = 0; i < 5; i++) {
		out[4 * i] = (unsigned char)(h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(h[i] >> 8);
		out[4 * i + 3] = (unsigned char)h[i];
	}
}

/* Standard base64 of p[0..n) into out (NUL-terminated; 4*ceil(n/3)+1 bytes). */
static void
ws_b64(const unsigned char *p, size_t n, char *out)
{
	static const char a[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i, o = 0;

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[o++] = a[v >> 18]; out[o++] = a[(v >> 12) & 63];
		out[o++] = a[(v >> 6) & 63]; out[o++] = a[v & 63];
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;
		out[o++] = a[v >> 18]; out[o++] = a[(v >> 12) & 63];
		out[o++] = '='; out[o++] = '=';
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		out[o++] = a[v >> 18]; out[o++] = a[(v >> 12) & 63];
		out[o++] = a[(v >> 6) & 63]; out[o++] = '=';
	}
	out[o] = '\0';
}

/* Sec-WebSocket-Accept for KEY (klen bytes) into out[29]. */
static void
ws_accept(const char *key, size_t klen, char out[29])
{
	unsigned char buf[128 + sizeof(WS_GUID)], d[20];

	if (klen > 128)
		klen = 128;
	memcpy(buf, key, klen);
	memcpy(buf + klen, WS_GUID, sizeof(WS_GUID) - 1);
	ws_sha1(buf, klen + sizeof(WS_GUID) - 1, d);
	ws_b64(d, 20, out);
}

#endif
