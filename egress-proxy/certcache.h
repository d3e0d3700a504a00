/*
 * certcache.h: the proxy CA and the leaf certificates it mints. One P-256
 * key pair serves every leaf; leaves are kept in a per-host LRU cache
 * (thread-safe) and re-minted when less than a quarter of their validity
 * is left.
 */
#ifndef PROXY_CERTCACHE_H
#define PROXY_CERTCACHE_H

#include <stddef.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "canon.h"

struct certcache;

/*
 * Loads the CA from cert_path/key_path; if neither exists, generates an EC
 * P-256 CA and writes them (key 0600). NULL with err set on failure.
 * validity_s: leaf validity in seconds; cap: LRU size.
 */
struct certcache *certcache_new(const char *cert_path, const char *key_path,
	    long long validity_s, size_t cap, char *err, size_t errlen);
void	certcache_free(struct certcache *);

/* Copies the CA certificate (PEM) to path, mode 0644. 0 or -1. */
int	certcache_export(struct certcache *, const char *path, char *err,
	    size_t errlen);

/*
 * The leaf for t (a new reference: caller X509_free()s it), or NULL.
 * *hit says whether it came from the cache.
 */
X509	*certcache_get(struct certcache *, const struct target *t, int *hit);
EVP_PKEY *certcache_leaf_key(struct certcache *);	/* borrowed */
X509	*certcache_ca(struct certcache *);		/* borrowed */
size_t	 certcache_size(struct certcache *);

#endif
