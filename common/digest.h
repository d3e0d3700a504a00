/*
 * digest.h: SHA-256 and HMAC-SHA256 of memory, on OpenSSL's libcrypto,
 * for every daemon (the proxy's SigV4 and placeholders, the gateway's and
 * the orchestrator's token hashes, the k8s runtime's derived secrets).
 * Not linked into the static agent, which has no libcrypto.
 *
 * Each call answers 0, or -1 when libcrypto fails (in practice only when
 * it cannot allocate); none aborts. A caller for whom a digest of memory
 * cannot fail says so with ASSERT (attrib.h).
 */
#ifndef COMMON_DIGEST_H
#define COMMON_DIGEST_H

#include <stddef.h>

#include "attrib.h"

#define DIGEST_SHA256_LEN	32	/* bytes of a SHA-256 digest */
#define DIGEST_SHA256_HEX	64	/* its hex digits (hex.h) */

/* The SHA-256 of p[0..n) into md. 0 or -1. */
int	digest_sha256(const void *p, size_t n,
	    unsigned char md[DIGEST_SHA256_LEN]) WUNRES;
/* The SHA-256 of p[0..n) as DIGEST_SHA256_HEX lower-case hex digits and a
 * NUL into out. 0 or -1 (out is then an empty string). */
int	digest_sha256_hex(const void *p, size_t n,
	    char out[DIGEST_SHA256_HEX + 1]) WUNRES;
/*
 * HMAC-SHA256 (RFC 2104) of msg[0..ml) under key[0..kl) into out, which
 * may be the key's own buffer (the key is read before out is written: the
 * SigV4 key chain folds into one buffer). 0, or -1 (also for a key
 * longer than INT_MAX bytes); out is then unspecified.
 */
int	digest_hmac_sha256(const void *key, size_t kl, const void *msg, size_t ml,
	    unsigned char out[DIGEST_SHA256_LEN]) WUNRES;

#endif
