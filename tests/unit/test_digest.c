/*
 * test_digest.c: hex encoding (common/hex.c), SHA-256 and HMAC-SHA256
 * (common/digest.c) against published vectors: FIPS 180-2's "abc" and the
 * empty message, RFC 4231's HMAC-SHA256 test cases 1, 2 and 6 (6: a key
 * longer than the block, hashed first).
 */
#include <string.h>

#include "digest.h"
#include "hex.h"
#include "unit.h"

TEST(test_hex_encode)
{
	static const unsigned char b[] = { 0x00, 0x01, 0x7f, 0x80, 0xab, 0xff };
	char out[HEX_LEN(sizeof(b)) + 1];

	memset(out, 'x', sizeof(out));
	hex_encode(b, sizeof(b), out);
	CHECK_STR(out, "00017f80abff");
	hex_encode(b, 0, out);
	CHECK_STR(out, "");
	CHECK_INT(HEX_LEN(32), 64);
}

static const struct {
	const char	*msg;
	const char	*hex;
} sha_vec[] = {
	{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
	{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
};

TEST(test_sha256)
{
	unsigned char md[DIGEST_SHA256_LEN];
	char h[DIGEST_SHA256_HEX + 1], h2[DIGEST_SHA256_HEX + 1];
	size_t i;

	for (i = 0; i < NELEM(sha_vec); i++) {
		CHECK_INT(digest_sha256_hex(sha_vec[i].msg, strlen(sha_vec[i].msg), h), 0);
		CHECK_STR(h, sha_vec[i].hex);
		CHECK_INT(digest_sha256(sha_vec[i].msg, strlen(sha_vec[i].msg), md), 0);
		hex_encode(md, sizeof(md), h2);
		CHECK_STR(h2, sha_vec[i].hex);
	}
	/* no bytes at all: a NULL pointer is the empty message */
	CHECK_INT(digest_sha256_hex(NULL, 0, h), 0);
	CHECK_STR(h, sha_vec[0].hex);
}

/* RFC 4231 section 4: test cases 1, 2 and 6, HMAC-SHA-256. */
TEST(test_hmac_sha256_rfc4231)
{
	unsigned char k1[20], k6[131], md[DIGEST_SHA256_LEN];
	char h[DIGEST_SHA256_HEX + 1];
	const struct {
		const void	*key;
		size_t		 kl;
		const char	*msg, *hex;
	} vec[] = {
		{ k1, sizeof(k1), "Hi There",
		  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
		{ "Jefe", 4, "what do ya want for nothing?",
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
		{ k6, sizeof(k6), "Test Using Larger Than Block-Size Key - Hash Key First",
		  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
	};
	size_t i;

	memset(k1, 0x0b, sizeof(k1));
	memset(k6, 0xaa, sizeof(k6));
	for (i = 0; i < NELEM(vec); i++) {
		memset(md, 0, sizeof(md));
		CHECK_INT(digest_hmac_sha256(vec[i].key, vec[i].kl, vec[i].msg,
		    strlen(vec[i].msg), md), 0);
		hex_encode(md, sizeof(md), h);
		CHECK_STR(h, vec[i].hex);
	}
}

/* The output may be the key's own buffer (SigV4 folds its key chain so). */
TEST(test_hmac_sha256_in_place)
{
	unsigned char k[DIGEST_SHA256_LEN] = "Jefe";
	char h[DIGEST_SHA256_HEX + 1];

	CHECK_INT(digest_hmac_sha256(k, 4, "what do ya want for nothing?", 28, k), 0);
	hex_encode(k, sizeof(k), h);
	CHECK_STR(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	/* empty key and message (Python's hmac agrees) */
	CHECK_INT(digest_hmac_sha256(NULL, 0, NULL, 0, k), 0);
	hex_encode(k, sizeof(k), h);
	CHECK_STR(h, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

int
main(void)
{
	RUN(test_hex_encode);
	RUN(test_sha256);
	RUN(test_hmac_sha256_rfc4231);
	RUN(test_hmac_sha256_in_place);
	return unit_done();
}
