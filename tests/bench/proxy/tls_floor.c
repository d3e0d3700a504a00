/*
 * tls_floor.c: what this machine's OpenSSL itself costs per intercepted
 * client connection, with the proxy's settings (TLS 1.3, P-256 leaf set per
 * SSL, no tickets, SSL_MODE_RELEASE_BUFFERS), measured in one process over
 * socketpairs so no proxy, libevent or network cost is included:
 *
 *   heap   bytes and allocations OpenSSL keeps per server-side connection
 *          once the handshake and one request/response are done (what an
 *          idle intercepted connection holds at least), counted through
 *          CRYPTO_set_mem_functions with malloc_usable_size
 *   cpu    server-side CPU per full handshake (SSL_new + handshake + free)
 *
 * Usage: tls_floor [-n CONNS]. Prints one line:
 *   tls_floor conns=N heap_bytes=B allocs=A hs_cpu_us=U
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

static long long live_bytes, live_allocs;
static int counting;

static void *
m_alloc(size_t n, const char *f, int l)
{
	void *p = malloc(n);

	(void)f;
	(void)l;
	if (p != NULL && counting) {
		live_bytes += (long long)malloc_usable_size(p);
		live_allocs++;
	}
	return p;
}

/*
 * Frees and reallocs of blocks allocated before counting started would skew
 * the counters; the measured phase only frees what it allocated, except
 * reference-counted shared objects, which OpenSSL does not free while the
 * SSL_CTX lives.
 */
static void
m_free(void *p, const char *f, int l)
{
	(void)f;
	(void)l;
	if (p != NULL && counting) {
		live_bytes -= (long long)malloc_usable_size(p);
		live_allocs--;
	}
	free(p);
}

static void *
m_realloc(void *p, size_t n, const char *f, int l)
{
	void *q;

	(void)f;
	(void)l;
	if (p != NULL && counting) {
		live_bytes -= (long long)malloc_usable_size(p);
		live_allocs--;
	}
	q = realloc(p, n);
	if (q != NULL && counting) {
		live_bytes += (long long)malloc_usable_size(q);
		live_allocs++;
	}
	return q;
}

static double
cpu_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void
die(const char *what)
{
	fprintf(stderr, "tls_floor: %s\n", what);
	ERR_print_errors_fp(stderr);
	exit(1);
}

/* A self-signed P-256 leaf for github.com, like the proxy's minted ones. */
static void
make_leaf(X509 **xp, EVP_PKEY **kp)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *n;

	if (k == NULL || x == NULL)
		die("key");
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, k);
	n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"github.com",
	    -1, -1, 0);
	X509_set_issuer_name(x, n);
	if (X509_sign(x, k, EVP_sha256()) == 0)
		die("sign");
	*xp = x;
	*kp = k;
}

/* Drives both ends of a socketpair until both finished the handshake. */
static void
handshake(SSL *srv, SSL *cli, double *srv_cpu)
{
	double t0;
	int i;

	for (i = 0; i < 50; i++) {
		if (SSL_is_init_finished(srv) && SSL_is_init_finished(cli))
			return;
		SSL_do_handshake(cli);
		t0 = cpu_us();
		SSL_do_handshake(srv);
		*srv_cpu += cpu_us() - t0;
	}
	die("handshake did not finish");
}

int
main(int argc, char **argv)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: github.com\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	SSL_CTX *sctx, *cctx;
	SSL **srv, **cli;
	X509 *leaf;
	EVP_PKEY *key;
	int *fds, n = 1000, i, sv[2];
	char buf[256];
	double hs = 0, t0;

	if (argc == 3 && strcmp(argv[1], "-n") == 0) {
		char *end;
		long v = strtol(argv[2], &end, 10);

		n = *end == '\0' && v >= 1 && v <= 100000 ? (int)v : 0;
	} else if (argc != 1)
		n = 0;
	if (n < 1) {
		fprintf(stderr, "usage: tls_floor [-n CONNS]\n");
		return 2;
	}
	if (!CRYPTO_set_mem_functions(m_alloc, m_realloc, m_free))
		die("CRYPTO_set_mem_functions");
	make_leaf(&leaf, &key);
	sctx = SSL_CTX_new(TLS_server_method());
	cctx = SSL_CTX_new(TLS_client_method());
	if (sctx == NULL || cctx == NULL)
		die("SSL_CTX_new");
	/* the proxy's server-side settings (egress-proxy/proxy.c) */
	SSL_CTX_set_min_proto_version(sctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(sctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_mode(cctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(sctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_num_tickets(sctx, 0);
	srv = calloc((size_t)n, sizeof(*srv));
	cli = calloc((size_t)n, sizeof(*cli));
	fds = calloc((size_t)n * 2, sizeof(*fds));
	if (srv == NULL || cli == NULL || fds == NULL)
		die("calloc");

	/* warm-up: provider caches, method stores, error strings */
	for (i = 0; i < 20; i++) {
		SSL *s = SSL_new(sctx), *c = SSL_new(cctx);
		double ignore = 0;

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == -1)
			die("socketpair");
		SSL_use_certificate(s, leaf);
		SSL_use_PrivateKey(s, key);
		SSL_set_fd(s, sv[0]);
		SSL_set_fd(c, sv[1]);
		SSL_set_accept_state(s);
		SSL_set_connect_state(c);
		handshake(s, c, &ignore);
		SSL_free(c);
		SSL_free(s);
		close(sv[0]);
		close(sv[1]);
	}

	for (i = 0; i < n; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == -1)
			die("socketpair (raise ulimit -n)");
		fds[2 * i] = sv[0];
		fds[2 * i + 1] = sv[1];
		counting = 1;
		t0 = cpu_us();
		srv[i] = SSL_new(sctx);
		if (srv[i] == NULL || SSL_use_certificate(srv[i], leaf) != 1 ||
		    SSL_use_PrivateKey(srv[i], key) != 1 || SSL_set_fd(srv[i], sv[0]) != 1)
			die("server SSL");
		SSL_set_accept_state(srv[i]);
		hs += cpu_us() - t0;
		counting = 0;
		cli[i] = SSL_new(cctx);
		if (cli[i] == NULL || SSL_set_fd(cli[i], sv[1]) != 1)
			die("client SSL");
		SSL_set_connect_state(cli[i]);
		/* only the server side's allocations are counted */
		for (int r = 0; r < 50; r++) {
			if (SSL_is_init_finished(srv[i]) && SSL_is_init_finished(cli[i]))
				break;
			SSL_do_handshake(cli[i]);
			counting = 1;
			t0 = cpu_us();
			SSL_do_handshake(srv[i]);
			hs += cpu_us() - t0;
			counting = 0;
		}
		if (!SSL_is_init_finished(srv[i]))
			die("handshake did not finish");
		SSL_write(cli[i], req, sizeof(req) - 1);
		counting = 1;
		SSL_read(srv[i], buf, sizeof(buf));
		SSL_write(srv[i], resp, sizeof(resp) - 1);
		counting = 0;
		SSL_read(cli[i], buf, sizeof(buf));
	}
	printf("tls_floor conns=%d heap_bytes=%.0f allocs=%.1f", n,
	    (double)live_bytes / n, (double)live_allocs / n);
	for (i = 0; i < n; i++) {
		SSL_free(cli[i]);
		counting = 1;
		t0 = cpu_us();
		SSL_free(srv[i]);
		hs += cpu_us() - t0;
		counting = 0;
		close(fds[2 * i]);
		close(fds[2 * i + 1]);
	}
	printf(" hs_cpu_us=%.0f\n", hs / n);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
	X509_free(leaf);
	EVP_PKEY_free(key);
	free(srv);
	free(cli);
	free(fds);
	return 0;
}
