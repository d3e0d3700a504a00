/*
 * fuzz_proxy_sigv4.c: AWS Signature Version 4 (egress-proxy/sigv4.c). The
 * first byte picks what the rest is:
 *  0: an Authorization value; one that parses writes back to the same
 *     value and parses again to the same fields (bit 2 set: a presigned
 *     URL's target, written again with another key id);
 *  1: a request target, then header lines: a canonical request either is
 *     refused with a reason or has a canonical URI of unreserved bytes,
 *     escapes and '/' only, with no empty or dot segment (non-S3);
 *  2: an aws-chunked body fed in two pieces: the same verdict and output
 *     as fed whole;
 *  3: data cut into chunks by its own bytes and signed with a key chain:
 *     re-signed with the same key it comes out byte for byte, in pieces.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "../../egress-proxy/sigv4.h"

#define FZ_ASSERT(e) do { if (!(e)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char seed[] = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
static const char date[] = "20130524T000000Z";
static const char scope[] = "20130524/us-east-1/s3/aws4_request";

static void
fz_auth(const char *s, size_t n)
{
	struct sigv4_auth a, b;
	char err[128], out[4096];

	if (sigv4_auth_parse(s, n, &a, err, sizeof(err)) == -1) {
		FZ_ASSERT(err[0] != '\0');
		return;
	}
	FZ_ASSERT(sigv4_auth_write(&a, a.akid, a.sig, out, sizeof(out)) == 0);
	FZ_ASSERT(sigv4_auth_parse(out, strlen(out), &b, err, sizeof(err)) == 0);
	FZ_ASSERT(memcmp(&a, &b, sizeof(a)) == 0);
}

static void
fz_canon(const char *s, size_t n, int s3)
{
	struct sigv4_field f[32];
	struct sigv4_req r;
	struct buf b;
	const char *e = memchr(s, '\n', n), *p, *le, *c;
	char err[128];
	size_t nf = 0, i;

	memset(&r, 0, sizeof(r));
	r.method = "GET";
	r.target = s;
	r.tl = e != NULL ? (size_t)(e - s) : n;
	r.payload_hash = "UNSIGNED-PAYLOAD";
	r.s3 = s3;
	for (p = e != NULL ? e + 1 : s + n; p < s + n && nf < 32; p = le + 1) {
		le = memchr(p, '\n', (size_t)(s + n - p));
		if (le == NULL)
			le = s + n;
		c = memchr(p, ':', (size_t)(le - p));
		if (c == NULL)
			continue;
		f[nf].name = p;
		f[nf].nl = (size_t)(c - p);
		f[nf].value = c + 1;
		f[nf++].vl = (size_t)(le - c - 1);
	}
	r.f = f;
	r.nf = nf;
	buf_init(&b, SIGV4_CREQ_MAX);
	err[0] = '\0';
	if (sigv4_canonical(&r, "a;host;x-amz-date", &b, err, sizeof(err)) == -1) {
		FZ_ASSERT(err[0] != '\0');
		buf_free(&b);
		return;
	}
	FZ_ASSERT(b.len > 4 && memcmp(b.p, "GET\n/", 5) == 0);
	if (!s3) {
		const char *u = b.p + 4, *ue = strchr(u, '\n');
		for (i = 0; u + i < ue; i++) {
			unsigned char ch = (unsigned char)u[i];
			FZ_ASSERT((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			    (ch >= '0' && ch <= '9') || strchr("-_.~%/", ch) != NULL);
			if (ch == '/' && u + i + 1 < ue) {
				FZ_ASSERT(u[i + 1] != '/');
				FZ_ASSERT(!(u[i + 1] == '.' && (u + i + 2 == ue || u[i + 2] == '/')));
			}
		}
	}
	buf_free(&b);
}

static void
fz_chunks(const char *s, size_t n, size_t cut)
{
	unsigned char key[32];
	struct sigv4_chunks c;
	struct buf o1, o2;
	char err[128];
	int r1, r2;

	sigv4_key("secret", "20130524", "us-east-1", "s3", key);
	buf_init(&o1, (size_t)64 << 20);
	buf_init(&o2, (size_t)64 << 20);
	sigv4_chunks_init(&c, key, seed, key, seed, date, scope);
	r1 = sigv4_chunks_feed(&c, s, n, &o1, err, sizeof(err));
	sigv4_chunks_free(&c);
	sigv4_chunks_init(&c, key, seed, key, seed, date, scope);
	cut = n > 0 ? cut % (n + 1) : 0;
	r2 = sigv4_chunks_feed(&c, s, cut, &o2, err, sizeof(err));
	if (r2 == 0)
		r2 = sigv4_chunks_feed(&c, s + cut, n - cut, &o2, err, sizeof(err));
	else if (r2 == 1 && cut < n)
		r2 = sigv4_chunks_feed(&c, s + cut, n - cut, &o2, err, sizeof(err));
	sigv4_chunks_free(&c);
	FZ_ASSERT(r1 == r2);
	if (r1 != -1)
		FZ_ASSERT(o1.len == o2.len && (o1.len == 0 || memcmp(o1.p, o2.p, o1.len) == 0));
	buf_free(&o1);
	buf_free(&o2);
}

/* A valid stream of s cut into chunks (sizes from s's own bytes), re-signed with the same key. */
static void
fz_roundtrip(const char *s, size_t n)
{
	unsigned char key[32], md[32];
	unsigned int ml;
	struct sigv4_chunks c;
	struct buf in, out;
	char prev[65], sig[65], err[128];
	size_t off = 0, sz, i;
	int r = 0, last = 0;

	sigv4_key("secret", "20130524", "us-east-1", "s3", key);
	buf_init(&in, (size_t)64 << 20);
	buf_init(&out, (size_t)64 << 20);
	memcpy(prev, seed, 65);
	while (!last) {
		sz = off < n ? (size_t)(unsigned char)s[off] % 97 : 0;
		if (sz > n - off)
			sz = n - off;
		last = sz == 0;
		ml = 32;
		FZ_ASSERT(EVP_Digest(sz ? s + off : "", sz, md, &ml, EVP_sha256(), NULL) == 1);
		sigv4_chunk_sign(key, date, scope, prev, md, sig);
		memcpy(prev, sig, 65);
		FZ_ASSERT(buf_addf(&in, "%zx;chunk-signature=%s\r\n", sz, sig) == 0);
		FZ_ASSERT(buf_add(&in, s + off, sz) == 0 && buf_add(&in, "\r\n", 2) == 0);
		off += sz;
	}
	sigv4_chunks_init(&c, key, seed, key, seed, date, scope);
	for (i = 0; i < in.len && r == 0; i += 7)
		r = sigv4_chunks_feed(&c, in.p + i, in.len - i < 7 ? in.len - i : 7, &out, err,
		    sizeof(err));
	sigv4_chunks_free(&c);
	FZ_ASSERT(r == 1);
	FZ_ASSERT(out.len == in.len && memcmp(out.p, in.p, in.len) == 0);
	buf_free(&in);
	buf_free(&out);
}

/*
 * A presigned URL's target: one that parses is written again with another
 * key id, its signature left out, and parses again (with a signature put
 * back) to the same scope with the new key id.
 */
static void
fz_presign(const char *s, size_t n)
{
	struct sigv4_auth a, b;
	struct buf t;
	char amz[17], amz2[17], err[128];
	const char *q = memchr(s, '?', n);
	int rc;

	if (q == NULL)
		return;
	rc = sigv4_presign_parse(q + 1, n - (size_t)(q + 1 - s), &a, amz, err, sizeof(err));
	FZ_ASSERT(rc >= -2 && rc <= 1);
	if (rc < 0)
		FZ_ASSERT(err[0] != '\0');
	if (rc != 0)
		return;
	buf_init(&t, n + 256);
	FZ_ASSERT(sigv4_presign_target(s, n, "AKIAFUZZFUZZFUZZ0000", &t) == 0);
	/* the path as it was; no parameter X-Amz-Signature left in the query */
	q = memchr(t.p, '?', t.len);
	FZ_ASSERT(q != NULL && q - t.p == (const char *)memchr(s, '?', n) - s);
	for (const char *p = q + 1, *e = t.p + t.len; p < e; p++) {
		FZ_ASSERT((size_t)(e - p) < 16 || memcmp(p, "X-Amz-Signature=", 16) != 0);
		while (p < e && *p != '&')
			p++;
	}
	FZ_ASSERT(buf_addstr(&t, "&X-Amz-Signature=") == 0 && buf_addstr(&t, a.sig) == 0);
	q = memchr(t.p, '?', t.len);
	if (sigv4_presign_parse(q + 1, t.len - (size_t)(q + 1 - t.p), &b, amz2, err,
	    sizeof(err)) == 0) {
		FZ_ASSERT(strcmp(b.akid, "AKIAFUZZFUZZFUZZ0000") == 0);
		FZ_ASSERT(strcmp(a.date, b.date) == 0 && strcmp(a.region, b.region) == 0 &&
		    strcmp(a.service, b.service) == 0 && strcmp(amz, amz2) == 0 &&
		    strcmp(a.signed_headers, b.signed_headers) == 0);
	}
	buf_free(&t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data + 1;
	size_t n;

	if (size < 1)
		return 0;
	n = size - 1;
	switch (data[0] & 3) {
	case 0:
		if (data[0] & 4)
			fz_presign(s, n);
		else
			fz_auth(s, n);
		break;
	case 1:
		fz_canon(s, n, data[0] & 4);
		break;
	case 2:
		fz_chunks(s, n, data[0] >> 2);
		break;
	default:
		fz_roundtrip(s, n);
		break;
	}
	return 0;
}
