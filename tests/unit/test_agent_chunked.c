/* test_agent_chunked.c: the agent's chunked body decoder (http.c) and its
 * base64 helpers (json.c). */
#include <stdlib.h>
#include <string.h>

#include "../../agent/http.h"
#include "../../agent/json.h"
#include "b64.h"
#include "unit.h"

/* Decodes in[0..n) fed step bytes at a time; 1 done, 0 more, -1 error. */
static int
decode(const char *in, size_t n, size_t step, char *out, size_t *outlen,
    size_t *rest)
{
	struct http_chunked d;
	char err[128], piece[4096];
	size_t off = 0, k, dl;
	long used;

	memset(&d, 0, sizeof(d));
	*outlen = 0;
	*rest = 0;
	while (off < n) {
		k = n - off < step ? n - off : step;
		memcpy(piece, in + off, k);
		if ((used = http_chunked_decode(&d, piece, k, &dl, err,
		    sizeof(err))) < 0)
			return -1;
		memcpy(out + *outlen, piece, dl);
		*outlen += dl;
		off += (size_t)used;
		if (http_chunked_done(&d)) {
			*rest = n - off;
			return 1;
		}
		if ((size_t)used != k)
			return -1;	/* stopped early without being done */
	}
	return http_chunked_done(&d);
}

struct ccase {
	const char	*in;
	int		 want;	/* 1 done, 0 incomplete, -1 malformed */
	const char	*data;
	size_t		 rest;
};

static const struct ccase cases[] = {
	{ "5\r\nhello\r\n0\r\n\r\n", 1, "hello", 0 },
	{ "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nGET /", 1, "hello world", 5 },
	{ "A;ext=1\r\n0123456789\r\n0\r\nX-T: y\r\n\r\n", 1, "0123456789", 0 },
	{ "0\r\n\r\n", 1, "", 0 },
	{ "5\r\nhel", 0, "hel", 0 },
	{ "5\r\nhello\r\n0\r\n", 0, "hello", 0 },
	{ "\r\n", -1, "", 0 },
	{ "g\r\n", -1, "", 0 },
	{ "5\nhello\r\n", -1, "", 0 },
	{ "5\r\nhelloX\r\n", -1, "hello", 0 },
	{ "1000000000000000\r\n", -1, "", 0 },	/* 16 digits */
	{ "-1\r\n", -1, "", 0 },
	{ " 5\r\n", -1, "", 0 },
	{ "0\r\nbad\x01trailer\r\n\r\n", -1, "", 0 },
	{ "0\r\n\n", -1, "", 0 },
};

TEST(test_chunked_table)
{
	char out[4096];
	size_t i, step, len, rest;
	int r;

	for (i = 0; i < NELEM(cases); i++) {
		for (step = 1; step <= strlen(cases[i].in); step++) {
			r = decode(cases[i].in, strlen(cases[i].in), step, out,
			    &len, &rest);
			if (r != cases[i].want)
				fprintf(stderr, "  case %zu step %zu: %d\n", i, step, r);
			CHECK_INT(r, cases[i].want);
			if (r == 1) {
				CHECK_INT(len, strlen(cases[i].data));
				CHECK(memcmp(out, cases[i].data, len) == 0);
				CHECK_INT(rest, cases[i].rest);
			}
		}
	}
}

TEST(test_chunked_limits)
{
	char in[4096], out[4096];
	size_t len, rest;
	int n;

	/* an extension over HTTP_MAX_CHUNK_LINE */
	n = snprintf(in, sizeof(in), "1;");
	memset(in + n, 'x', HTTP_MAX_CHUNK_LINE + 1);
	memcpy(in + n + HTTP_MAX_CHUNK_LINE + 1, "\r\n", 3);
	CHECK_INT(decode(in, strlen(in), 4096, out, &len, &rest), -1);
	/* 15 hex digits is the most */
	CHECK_INT(decode("00000000000000A\r\n0123456789\r\n0\r\n\r\n", 34, 7,
	    out, &len, &rest), 1);
	CHECK_INT(len, 10);
}

TEST(test_b64)
{
	static const struct { const char *raw, *enc; } v[] = {
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
	};
	static const char *bad[] = { "Zg=", "Z===", "Zg==Zg==", "Zm9v!", "=Zg=",
		"Zm 9", "Zg=a" };
	unsigned char dec[64], all[256];
	char enc[400];
	const char *why;
	size_t i, n, at;
	long k;

	for (i = 0; i < NELEM(v); i++) {
		n = b64_encode(v[i].raw, strlen(v[i].raw), enc);
		CHECK(n == strlen(v[i].enc) && memcmp(enc, v[i].enc, n) == 0);
		k = b64_decode(v[i].enc, strlen(v[i].enc), dec, 1, &why, &at);
		CHECK(k == (long)strlen(v[i].raw) && memcmp(dec, v[i].raw, (size_t)k) == 0);
	}
	for (i = 0; i < NELEM(bad); i++)
		CHECK_INT(b64_decode(bad[i], strlen(bad[i]), dec, 1, &why, &at), -1);
	for (i = 0; i < sizeof(all); i++)
		all[i] = (unsigned char)i;
	n = b64_encode(all, sizeof(all), enc);
	{
		unsigned char back[256];
		CHECK_INT(b64_decode(enc, n, back, 1, &why, &at), 256);
		CHECK(memcmp(back, all, 256) == 0);
	}
}

int
main(void)
{
	RUN(test_chunked_table);
	RUN(test_chunked_limits);
	RUN(test_b64);
	return unit_done();
}
