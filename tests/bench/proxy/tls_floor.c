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

struct setup {
	SSL_CTX		*sctx, *cctx;
	X509		*leaf;
	EVP_PKEY	*key;
};

/* Counts and times only the server side's work when measure is set. */
static void
server_on(int measure, double *t0)
{
	counting = measure;
	*t0 = cpu_us();
}

static void
server_off(int measure, double t0, double *hs)
{
	if (measure)
		*hs += cpu_us() - t0;
	counting = 0;
}

/*
 * One connection over a socketpair, as an intercepted client connection is
 * left: server SSL with the leaf set on it, full handshake, one request and
 * its response. fd[0] is the server's end.
 */
static void
open_pair(const struct setup *e, SSL **sp, SSL **cp, int fd[2], double *hs, int measure)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: github.com\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	char buf[256];
	double t0;
	SSL *s, *c;
	int r;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd) == -1)
		die("socketpair (raise ulimit -n)");
	server_on(measure, &t0);
	s = SSL_new(e->sctx);
	if (s == NULL || SSL_use_certificate(s, e->leaf) != 1 ||
	    SSL_use_PrivateKey(s, e->key) != 1 || SSL_set_fd(s, fd[0]) != 1)
		die("server SSL");
	SSL_set_accept_state(s);
	server_off(measure, t0, hs);
	c = SSL_new(e->cctx);
	if (c == NULL || SSL_set_fd(c, fd[1]) != 1)
		die("client SSL");
	SSL_set_connect_state(c);
	for (r = 0; r < 50; r++) {
		if (SSL_is_init_finished(s) && SSL_is_init_finished(c))
			break;
		SSL_do_handshake(c);
		server_on(measure, &t0);
		SSL_do_handshake(s);
		server_off(measure, t0, hs);
	}
	if (!SSL_is_init_finished(s) || !SSL_is_init_finished(c))
		die("handshake did not finish");
	SSL_write(c, req, sizeof(req) - 1);
	server_on(measure, &t0);
	SSL_read(s, buf, sizeof(buf));
	SSL_write(s, resp, sizeof(resp) - 1);
	server_off(measure, t0, hs);
	SSL_read(c, buf, sizeof(buf));
	*sp = s;
	*cp = c;
}

int
main(int argc, char **argv)
{
	struct setup e;
	SSL **srv, **cli, *ws, *wc;
	int *fds, n = 1000, i, wfd[2];
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
	make_leaf(&e.leaf, &e.key);
	e.sctx = SSL_CTX_new(TLS_server_method());
	e.cctx = SSL_CTX_new(TLS_client_method());
	if (e.sctx == NULL || e.cctx == NULL)
		die("SSL_CTX_new");
	/* the proxy's server-side settings (egress-proxy/tls.c, tls_init) */
	SSL_CTX_set_min_proto_version(e.sctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(e.sctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_mode(e.cctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(e.sctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_num_tickets(e.sctx, 0);
	srv = calloc((size_t)n, sizeof(*srv));
	cli = calloc((size_t)n, sizeof(*cli));
	fds = calloc((size_t)n * 2, sizeof(*fds));
	if (srv == NULL || cli == NULL || fds == NULL)
		die("calloc");

	/* warm-up: provider caches, method stores, error strings */
	for (i = 0; i < 20; i++) {
		open_pair(&e, &ws, &wc, wfd, &hs, 0);
		SSL_free(wc);
		SSL_free(ws);
		close(wfd[0]);
		close(wfd[1]);
	}
	for (i = 0; i < n; i++)
		open_pair(&e, &srv[i], &cli[i], &fds[2 * i], &hs, 1);
	printf("tls_floor conns=%d heap_bytes=%.0f allocs=%.1f", n,
	    (double)live_bytes / n, (double)live_allocs / n);
	for (i = 0; i < n; i++) {
		SSL_free(cli[i]);
		server_on(1, &t0);
		SSL_free(srv[i]);
		server_off(1, t0, &hs);
		close(fds[2 * i]);
		close(fds[2 * i + 1]);
	}
	printf(" hs_cpu_us=%.0f\n", hs / n);
	SSL_CTX_free(e.sctx);
	SSL_CTX_free(e.cctx);
	X509_free(e.leaf);
	EVP_PKEY_free(e.key);
	free(srv);
	free(cli);
	free(fds);
	return 0;
}
