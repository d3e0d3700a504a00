/*
 * digest.c: SHA-256 and HMAC-SHA256 on libcrypto (digest.h).
 */
#include <limits.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "digest.h"
#include "hex.h"

int
digest_sha256(const void *p, size_t n, unsigned char md[DIGEST_SHA256_LEN])
{
	unsigned int ml = 0;

	if (EVP_Digest(n > 0 ? p : "", n, md, &ml, EVP_sha256(), NULL) != 1 ||
	    ml != DIGEST_SHA256_LEN)
		return -1;
	return 0;
}

int
digest_sha256_hex(const void *p, size_t n, char out[DIGEST_SHA256_HEX + 1])
{
	unsigned char md[DIGEST_SHA256_LEN];

	out[0] = '\0';
	if (digest_sha256(p, n, md) == -1)
		return -1;
	hex_encode(md, sizeof(md), out);
	return 0;
}

int
digest_hmac_sha256(const void *key, size_t kl, const void *msg, size_t ml,
    unsigned char out[DIGEST_SHA256_LEN])
{
	unsigned int ol = 0;

	if (kl > INT_MAX)
		return -1;
	if (HMAC(EVP_sha256(), kl > 0 ? key : "", (int)kl,
	    (const unsigned char *)(ml > 0 ? msg : ""), ml, out, &ol) == NULL ||
	    ol != DIGEST_SHA256_LEN)
		return -1;
	return 0;
}
