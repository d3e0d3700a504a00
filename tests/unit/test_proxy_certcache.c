/*
 * test_proxy_certcache.c: CA generation and reload, leaf SAN and validity,
 * one key for all leaves, LRU eviction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/x509v3.h>

#include "../../egress-proxy/canon.h"
#include "../../egress-proxy/certcache.h"
#include "attrib.h"
#include "unit.h"

static char dir[] = "/tmp/test_certcache.XXXXXX";
static char crt[256], key[256];

static struct target
tg(const char *s)
{
	struct target t;
	char err[64];

	if (canon_authority(s, strlen(s), &t, err, sizeof(err)) == -1)
		abort();
	return t;
}

TEST(test_ca_generate_and_load)
{
	struct certcache *cc;
	struct stat st;
	char err[256];
	X509 *ca1;
	unsigned char md1[32], md2[32];
	unsigned int n;

	cc = certcache_new(crt, key, 3600, 4, err, sizeof(err));
	CHECK(cc != NULL);
	if (cc == NULL)
		return;
	CHECK(stat(key, &st) == 0 && (st.st_mode & 0777) == 0600);
	ca1 = certcache_ca(cc);
	CHECK(X509_check_ca(ca1) != 0);
	CHECK(EVP_PKEY_get_base_id(X509_get0_pubkey(ca1)) == EVP_PKEY_EC);
	X509_digest(ca1, EVP_sha256(), md1, &n);
	certcache_free(cc);
	/* second start loads the same CA */
	cc = certcache_new(crt, key, 3600, 4, err, sizeof(err));
	CHECK(cc != NULL);
	if (cc == NULL)
		return;
	X509_digest(certcache_ca(cc), EVP_sha256(), md2, &n);
	CHECK(memcmp(md1, md2, 32) == 0);
	certcache_free(cc);
}

TEST(test_ca_bad_files)
{
	char err[256], c2[300], k2[300];
	FILE *fp;

	snprintf(c2, sizeof(c2), "%s/only.crt", dir);
	snprintf(k2, sizeof(k2), "%s/missing.key", dir);
	fp = fopen(c2, "w");
	fputs("not a certificate\n", fp);
	fclose(fp);
	CHECK(certcache_new(c2, k2, 3600, 4, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "exists but") != NULL);
	fp = fopen(k2, "w");
	fputs("junk\n", fp);
	fclose(fp);
	CHECK(certcache_new(c2, k2, 3600, 4, err, sizeof(err)) == NULL);
	/* a key that does not match the certificate */
	snprintf(c2, sizeof(c2), "%s/other.crt", dir);
	snprintf(k2, sizeof(k2), "%s/other.key", dir);
	struct certcache *o = certcache_new(c2, k2, 3600, 4, err, sizeof(err));
	CHECK(o != NULL);
	certcache_free(o);
	CHECK(certcache_new(crt, k2, 3600, 4, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "does not match") != NULL);
}

static int
inet_pton_wrap(const char *s, unsigned char *a)
{
	return inet_pton(AF_INET, s, a) == 1;
}

static int
san_is(X509 *x, int type, const char *want)
{
	GENERAL_NAMES *g = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	int ok = 0;

	if (g == NULL)
		return 0;
	if (sk_GENERAL_NAME_num(g) == 1) {
		GENERAL_NAME *n = sk_GENERAL_NAME_value(g, 0);
		if (n->type == type && type == GEN_DNS)
			ok = strcmp((const char *)ASN1_STRING_get0_data(n->d.dNSName), want) == 0;
		else if (n->type == type && type == GEN_IPADD) {
			unsigned char a[16];
			int len = ASN1_STRING_length(n->d.iPAddress);
			ok = len == 4 && inet_pton_wrap(want, a) &&
			    memcmp(ASN1_STRING_get0_data(n->d.iPAddress), a, 4) == 0;
		}
	}
	GENERAL_NAMES_free(g);
	return ok;
}

TEST(test_leaf)
{
	struct certcache *cc;
	struct target t;
	char err[256];
	X509 *a, *b, *c;
	int hit;
	time_t now = time(NULL);

	cc = certcache_new(crt, key, 7200, 4, err, sizeof(err));
	CHECK(cc != NULL);
	if (cc == NULL)
		return;
	t = tg("GitHub.com.:443");
	a = certcache_get(cc, &t, &hit);
	CHECK(a != NULL && hit == 0);
	CHECK(san_is(a, GEN_DNS, "github.com"));
	CHECK(X509_check_host(a, "github.com", 0, 0, NULL) == 1);
	CHECK(X509_check_host(a, "evil.com", 0, 0, NULL) != 1);
	CHECK(X509_check_issued(certcache_ca(cc), a) == X509_V_OK);
	CHECK(X509_verify(a, X509_get0_pubkey(certcache_ca(cc))) == 1);
	/* short validity */
	CHECK(X509_cmp_time(X509_get0_notAfter(a), &(time_t){ now + 7300 }) < 0);
	CHECK(X509_cmp_time(X509_get0_notAfter(a), &(time_t){ now + 7000 }) > 0);
	CHECK(X509_cmp_time(X509_get0_notBefore(a), &(time_t){ now + 1 }) < 0);
	/* cache hit returns the same certificate */
	b = certcache_get(cc, &t, &hit);
	CHECK(b == a && hit == 1);
	X509_free(b);
	/* one key for all leaves */
	t = tg("0x7f.1:8443");
	c = certcache_get(cc, &t, &hit);
	CHECK(c != NULL);
	CHECK(X509_check_ip_asc(c, "127.0.0.1", 0) == 1);
	CHECK(EVP_PKEY_eq(X509_get0_pubkey(a), X509_get0_pubkey(c)) == 1);
	CHECK(EVP_PKEY_eq(X509_get0_pubkey(a), certcache_leaf_key(cc)) == 1);
	CHECK(EVP_PKEY_eq(X509_get0_pubkey(a), X509_get0_pubkey(certcache_ca(cc))) != 1);
	X509_free(a);
	X509_free(c);
	certcache_free(cc);
}

TEST(test_lru)
{
	struct certcache *cc;
	struct target t;
	char err[256], h[64];
	X509 *x, *first;
	int hit, i;

	cc = certcache_new(crt, key, 3600, 3, err, sizeof(err));
	CHECK(cc != NULL);
	if (cc == NULL)
		return;
	t = tg("h0.example:443");
	first = certcache_get(cc, &t, &hit);
	for (i = 1; i < 3; i++) {
		snprintf(h, sizeof(h), "h%d.example:443", i);
		t = tg(h);
		x = certcache_get(cc, &t, &hit);
		X509_free(x);
	}
	CHECK_INT(certcache_size(cc), 3);
	/* touch h0 so h1 is the least recently used */
	t = tg("h0.example:443");
	x = certcache_get(cc, &t, &hit);
	CHECK(hit == 1 && x == first);
	X509_free(x);
	t = tg("h3.example:443");
	x = certcache_get(cc, &t, &hit);
	X509_free(x);
	CHECK_INT(certcache_size(cc), 3);
	t = tg("h0.example:443");
	x = certcache_get(cc, &t, &hit);
	CHECK(hit == 1);
	X509_free(x);
	t = tg("h1.example:443");
	x = certcache_get(cc, &t, &hit);
	CHECK(hit == 0);		/* evicted */
	X509_free(x);
	X509_free(first);	/* still valid after eviction: we held a reference */
	certcache_free(cc);
}

int
main(void)
{
	char cmd[300];

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(crt, sizeof(crt), "%s/ca.crt", dir);
	snprintf(key, sizeof(key), "%s/ca.key", dir);
	RUN(test_ca_generate_and_load);
	RUN(test_ca_bad_files);
	RUN(test_leaf);
	RUN(test_lru);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return unit_done();
}
