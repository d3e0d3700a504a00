/*
 * certcache.c: CA load/generate, leaf minting and the LRU cache.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "certcache.h"
#include "util.h"
#include "xmalloc.h"

struct leaf {
	char		 key[CANON_HOST_MAX + 10];	/* canonical host */
	X509		*crt;
	time_t		 expires;
	struct leaf	*prev, *next;	/* LRU list, most recent first */
	struct leaf	*hnext;		/* hash chain */
};

struct certcache {
	X509		*ca;
	EVP_PKEY	*ca_key;
	EVP_PKEY	*leaf_key;
	long long	 validity;	/* seconds */
	size_t		 cap, n;
	struct leaf	**tab;
	size_t		 tabsz;
	struct leaf	*head, *tail;
	pthread_mutex_t	 mtx;
};

static void
ssl_err(char *err, size_t errlen, const char *what)
{
	char e[256];

	ERR_error_string_n(ERR_get_error(), e, sizeof(e));
	snprintf(err, errlen, "%s: %s", what, e);
	ERR_clear_error();
}

static EVP_PKEY *
p256_new(void)
{
	return EVP_EC_gen("P-256");
}

static int
add_ext(X509 *crt, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ex;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, crt, NULL, NULL, 0);
	if ((ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)) == NULL)
		return -1;
	X509_add_ext(crt, ex, -1);
	X509_EXTENSION_free(ex);
	return 0;
}

static int
random_serial(X509 *crt)
{
	unsigned char r[16];
	BIGNUM *bn;
	int rc = -1;

	if (RAND_bytes(r, sizeof(r)) != 1)
		return -1;
	r[0] &= 0x7f;
	if ((bn = BN_bin2bn(r, sizeof(r), NULL)) == NULL)
		return -1;
	if (BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(crt)) != NULL)
		rc = 0;
	BN_free(bn);
	return rc;
}

static int
pem_write(const char *path, X509 *crt, EVP_PKEY *key, mode_t mode, char *err,
    size_t errlen)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p;
	long n;
	int rc = -1;

	if (b == NULL)
		return -1;
	if ((crt != NULL && PEM_write_bio_X509(b, crt) != 1) ||
	    (key != NULL && PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1)) {
		ssl_err(err, errlen, path);
		goto out;
	}
	n = BIO_get_mem_data(b, &p);
	if (util_write_file_atomic(path, p, (size_t)n, mode, err, errlen) == -1)
		goto out;
	/* The mode exactly, whatever the umask took away (a 0644 export). */
	if (chmod(path, mode) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	BIO_free(b);
	return rc;
}

static int
ca_generate(struct certcache *cc, const char *cert_path, const char *key_path,
    char *err, size_t errlen)
{
	X509 *crt = NULL;
	X509_NAME *name;
	unsigned char r[4];
	char cn[64];
	int rc = -1;

	if ((cc->ca_key = p256_new()) == NULL || (crt = X509_new()) == NULL) {
		ssl_err(err, errlen, "CA key generation");
		goto out;
	}
	RAND_bytes(r, sizeof(r));
	snprintf(cn, sizeof(cn), "egress-proxy CA %02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
	X509_set_version(crt, 2);
	if (random_serial(crt) == -1)
		goto out;
	X509_gmtime_adj(X509_getm_notBefore(crt), -3600);
	X509_gmtime_adj(X509_getm_notAfter(crt), 10L * 365 * 86400);
	name = X509_get_subject_name(crt);
	X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
	    (const unsigned char *)"egress-proxy", -1, -1, 0);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(crt, name);
	X509_set_pubkey(crt, cc->ca_key);
	if (add_ext(crt, crt, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") == -1 ||
	    add_ext(crt, crt, NID_key_usage, "critical,keyCertSign,cRLSign") == -1 ||
	    add_ext(crt, crt, NID_subject_key_identifier, "hash") == -1) {
		ssl_err(err, errlen, "CA extensions");
		goto out;
	}
	if (X509_sign(crt, cc->ca_key, EVP_sha256()) == 0) {
		ssl_err(err, errlen, "CA signing");
		goto out;
	}
	if (pem_write(key_path, NULL, cc->ca_key, 0600, err, errlen) == -1 ||
	    pem_write(cert_path, crt, NULL, 0644, err, errlen) == -1)
		goto out;
	cc->ca = crt;
	crt = NULL;
	rc = 0;
out:
	X509_free(crt);
	return rc;
}

static int
ca_load(struct certcache *cc, const char *cert_path, const char *key_path,
    char *err, size_t errlen)
{
	FILE *fp;

	if ((fp = fopen(cert_path, "re")) == NULL) {
		snprintf(err, errlen, "%s: %s", cert_path, strerror(errno));
		return -1;
	}
	cc->ca = PEM_read_X509(fp, NULL, NULL, NULL);
	fclose(fp);
	if (cc->ca == NULL) {
		ssl_err(err, errlen, cert_path);
		return -1;
	}
	if ((fp = fopen(key_path, "re")) == NULL) {
		snprintf(err, errlen, "%s: %s", key_path, strerror(errno));
		return -1;
	}
	cc->ca_key = PEM_read_PrivateKey(fp, NULL, NULL, NULL);
	fclose(fp);
	if (cc->ca_key == NULL) {
		ssl_err(err, errlen, key_path);
		return -1;
	}
	if (X509_check_private_key(cc->ca, cc->ca_key) != 1) {
		snprintf(err, errlen, "%s does not match %s", key_path, cert_path);
		ERR_clear_error();
		return -1;
	}
	if (X509_check_ca(cc->ca) == 0) {
		snprintf(err, errlen, "%s is not a CA certificate", cert_path);
		return -1;
	}
	return 0;
}

struct certcache *
certcache_new(const char *cert_path, const char *key_path, long long validity_s,
    size_t cap, char *err, size_t errlen)
{
	struct certcache *cc = xcalloc(1, sizeof(*cc));
	int have_c = access(cert_path, F_OK) == 0, have_k = access(key_path, F_OK) == 0;

	pthread_mutex_init(&cc->mtx, NULL);
	cc->validity = validity_s;
	cc->cap = cap;
	cc->tabsz = 64;
	while (cc->tabsz < cap * 2 && cc->tabsz < (1u << 20))
		cc->tabsz *= 2;
	cc->tab = xcalloc(cc->tabsz, sizeof(struct leaf *));
	if (!have_c && !have_k) {
		if (ca_generate(cc, cert_path, key_path, err, errlen) == -1)
			goto fail;
	} else if (!have_c || !have_k) {
		snprintf(err, errlen, "%s exists but %s does not", have_c ? cert_path :
		    key_path, have_c ? key_path : cert_path);
		goto fail;
	} else if (ca_load(cc, cert_path, key_path, err, errlen) == -1)
		goto fail;
	if ((cc->leaf_key = p256_new()) == NULL) {
		ssl_err(err, errlen, "leaf key generation");
		goto fail;
	}
	return cc;
fail:
	certcache_free(cc);
	return NULL;
}

void
certcache_free(struct certcache *cc)
{
	struct leaf *l, *n;

	if (cc == NULL)
		return;
	for (l = cc->head; l != NULL; l = n) {
		n = l->next;
		X509_free(l->crt);
		free(l);
	}
	free(cc->tab);
	X509_free(cc->ca);
	EVP_PKEY_free(cc->ca_key);
	EVP_PKEY_free(cc->leaf_key);
	pthread_mutex_destroy(&cc->mtx);
	free(cc);
}

int
certcache_export(struct certcache *cc, const char *path, char *err, size_t errlen)
{
	return pem_write(path, cc->ca, NULL, 0644, err, errlen);
}

static X509 *
leaf_mint(struct certcache *cc, const struct target *t)
{
	X509 *crt;
	X509_NAME *name;
	char san[CANON_HOST_MAX + 16], cn[65];

	if ((crt = X509_new()) == NULL)
		return NULL;
	X509_set_version(crt, 2);
	if (random_serial(crt) == -1)
		goto fail;
	X509_gmtime_adj(X509_getm_notBefore(crt), -3600);
	X509_gmtime_adj(X509_getm_notAfter(crt), (long)cc->validity);
	name = X509_get_subject_name(crt);
	snprintf(cn, sizeof(cn), "%.64s", t->host);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn,
	    -1, -1, 0);
	X509_set_issuer_name(crt, X509_get_subject_name(cc->ca));
	X509_set_pubkey(crt, cc->leaf_key);
	snprintf(san, sizeof(san), "%s:%s", t->kind == CANON_NAME ? "DNS" : "IP", t->host);
	if (add_ext(crt, cc->ca, NID_subject_alt_name, san) == -1 ||
	    add_ext(crt, cc->ca, NID_basic_constraints, "critical,CA:FALSE") == -1 ||
	    add_ext(crt, cc->ca, NID_key_usage, "critical,digitalSignature") == -1 ||
	    add_ext(crt, cc->ca, NID_ext_key_usage, "serverAuth") == -1 ||
	    add_ext(crt, cc->ca, NID_authority_key_identifier, "keyid:always") == -1)
		goto fail;
	if (X509_sign(crt, cc->ca_key, EVP_sha256()) == 0)
		goto fail;
	return crt;
fail:
	ERR_clear_error();
	X509_free(crt);
	return NULL;
}

static size_t
hash_str(const char *s)
{
	size_t h = 5381;

	while (*s != '\0')
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static void
lru_unlink(struct certcache *cc, struct leaf *l)
{
	if (l->prev != NULL)
		l->prev->next = l->next;
	else
		cc->head = l->next;
	if (l->next != NULL)
		l->next->prev = l->prev;
	else
		cc->tail = l->prev;
	l->prev = l->next = NULL;
}

static void
lru_push(struct certcache *cc, struct leaf *l)
{
	l->prev = NULL;
	l->next = cc->head;
	if (cc->head != NULL)
		cc->head->prev = l;
	cc->head = l;
	if (cc->tail == NULL)
		cc->tail = l;
}

static void
hash_remove(struct certcache *cc, struct leaf *l)
{
	struct leaf **pp = &cc->tab[hash_str(l->key) & (cc->tabsz - 1)];

	for (; *pp != NULL; pp = &(*pp)->hnext)
		if (*pp == l) {
			*pp = l->hnext;
			return;
		}
}

X509 *
certcache_get(struct certcache *cc, const struct target *t, int *hit)
{
	struct leaf *l;
	size_t h = hash_str(t->host) & (cc->tabsz - 1);
	time_t now = time(NULL);
	X509 *crt;

	*hit = 0;
	pthread_mutex_lock(&cc->mtx);
	for (l = cc->tab[h]; l != NULL; l = l->hnext)
		if (strcmp(l->key, t->host) == 0)
			break;
	if (l != NULL && l->expires - now > cc->validity / 4) {
		lru_unlink(cc, l);
		lru_push(cc, l);
		X509_up_ref(l->crt);
		crt = l->crt;
		pthread_mutex_unlock(&cc->mtx);
		*hit = 1;
		return crt;
	}
	pthread_mutex_unlock(&cc->mtx);

	/* Mint outside the lock; a concurrent mint for the same host is harmless. */
	if ((crt = leaf_mint(cc, t)) == NULL)
		return NULL;

	pthread_mutex_lock(&cc->mtx);
	for (l = cc->tab[h]; l != NULL; l = l->hnext)
		if (strcmp(l->key, t->host) == 0)
			break;
	if (l != NULL) {
		X509_free(l->crt);
		lru_unlink(cc, l);
	} else {
		if (cc->n >= cc->cap && cc->tail != NULL) {
			struct leaf *old = cc->tail;
			lru_unlink(cc, old);
			hash_remove(cc, old);
			X509_free(old->crt);
			free(old);
			cc->n--;
		}
		l = xcalloc(1, sizeof(*l));
		snprintf(l->key, sizeof(l->key), "%s", t->host);
		l->hnext = cc->tab[h];
		cc->tab[h] = l;
		cc->n++;
	}
	l->crt = crt;
	l->expires = now + cc->validity;
	X509_up_ref(crt);
	lru_push(cc, l);
	pthread_mutex_unlock(&cc->mtx);
	return crt;
}

EVP_PKEY *
certcache_leaf_key(struct certcache *cc)
{
	return cc->leaf_key;
}

X509 *
certcache_ca(struct certcache *cc)
{
	return cc->ca;
}

size_t
certcache_size(struct certcache *cc)
{
	size_t n;

	pthread_mutex_lock(&cc->mtx);
	n = cc->n;
	pthread_mutex_unlock(&cc->mtx);
	return n;
}
