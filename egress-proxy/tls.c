/*
 * tls.c: the proxy's TLS contexts (see tls.h): built once by tls_init on
 * the main thread, read-only afterwards; the SSL objects for each
 * connection are made from them on the workers. The upstream session
 * cache is the one piece of shared mutable state: a fixed table under
 * one mutex, a reference held per slot.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "canon.h"
#include "tls.h"
#include "util.h"

/* Upstream TLS read-ahead buffer (SSL_CTX_set_default_read_buffer_len). */
#define UP_READ_AHEAD	(64 * 1024)

static SSL_CTX *srv_ctx;	/* TLS towards clients */
static SSL_CTX *cli_ctx;	/* TLS towards upstreams */

/*
 * Upstream TLS session cache: the newest session per "host:port", shared by
 * the workers, so a new client connection resumes the upstream handshake
 * (no certificate chain to verify, no server signature). With TLS 1.3 the
 * ticket arrives after the handshake and is handed over by sess_new_cb. A
 * session is only ever offered to the exact name it was verified for.
 */
#define SESS_SLOTS	256
static struct {
	pthread_mutex_t	 mtx;
	struct {
		char		 key[CANON_HOST_MAX + 10];
		SSL_SESSION	*s;
	} e[SESS_SLOTS];
} sess = { .mtx = PTHREAD_MUTEX_INITIALIZER };
static int sess_exidx = -1;

static size_t
sess_slot(const char *key)
{
	return util_hash_str(key) % SESS_SLOTS;
}

/* The key travels with the SSL (ex_data, freed with it). */
static void
sess_key_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
    void *argp)
{
	(void)parent;
	(void)ad;
	(void)idx;
	(void)argl;
	(void)argp;
	free(ptr);
}

static int
sess_new_cb(SSL *ssl, SSL_SESSION *s)
{
	const char *key = SSL_get_ex_data(ssl, sess_exidx);
	size_t i, n;

	if (key == NULL || !SSL_SESSION_is_resumable(s))
		return 0;
	n = strlen(key);
	if (n >= sizeof(sess.e[0].key))
		return 0;
	i = sess_slot(key);
	pthread_mutex_lock(&sess.mtx);
	if (sess.e[i].s != NULL)
		SSL_SESSION_free(sess.e[i].s);
	memcpy(sess.e[i].key, key, n + 1);
	sess.e[i].s = s;
	pthread_mutex_unlock(&sess.mtx);
	return 1;	/* the cache keeps the reference */
}

/* Offers ssl the cached session for hostport, and tags ssl with the key. */
static void
sess_offer(SSL *ssl, const char *hostport)
{
	size_t i = sess_slot(hostport);
	SSL_SESSION *s = NULL;
	char *key = strdup(hostport);

	if (key == NULL || SSL_set_ex_data(ssl, sess_exidx, key) != 1) {
		free(key);
		return;		/* no resumption: a full handshake */
	}
	pthread_mutex_lock(&sess.mtx);
	if (sess.e[i].s != NULL && strcmp(sess.e[i].key, hostport) == 0 &&
	    SSL_SESSION_is_resumable(sess.e[i].s)) {
		s = sess.e[i].s;
		SSL_SESSION_up_ref(s);
	}
	pthread_mutex_unlock(&sess.mtx);
	if (s != NULL) {
		SSL_set_session(ssl, s);
		SSL_SESSION_free(s);
	}
}

static int
alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned int i;

	(void)ssl;
	(void)arg;
	for (i = 0; i < inlen; i += (unsigned)in[i] + 1) {
		if (in[i] == 8 && i + 9 <= inlen && memcmp(in + i + 1, "http/1.1", 8) == 0) {
			*out = in + i + 1;
			*outlen = 8;
			return SSL_TLSEXT_ERR_OK;
		}
	}
	return SSL_TLSEXT_ERR_NOACK;
}


static int
add_bundle(SSL_CTX *ctx, const char *path, char *err, size_t errlen)
{
	if (SSL_CTX_load_verify_locations(ctx, path, NULL) != 1) {
		char e[200];
		ERR_error_string_n(ERR_get_error(), e, sizeof(e));
		snprintf(err, errlen, "upstream.ca_bundle %s: %s", path, e);
		ERR_clear_error();
		return -1;
	}
	return 0;
}

int
tls_init(const char *ca_bundle, char *err, size_t errlen)
{
	static const unsigned char alpn[] = "\x08http/1.1";

	srv_ctx = SSL_CTX_new(TLS_server_method());
	cli_ctx = SSL_CTX_new(TLS_client_method());
	if (srv_ctx == NULL || cli_ctx == NULL) {
		snprintf(err, errlen, "SSL_CTX_new failed");
		return -1;
	}
	SSL_CTX_set_min_proto_version(srv_ctx, TLS1_2_VERSION);
	SSL_CTX_set_min_proto_version(cli_ctx, TLS1_2_VERSION);
	/*
	 * SSL_MODE_RELEASE_BUFFERS costs a malloc/free of the record buffers
	 * per record (perf: part of _int_malloc's 6-9%), but without it (the
	 * buffers freed by the tick after 250 ms idle instead) idle memory
	 * measured 26 KiB per intercepted connection instead of 18: the
	 * longer-lived buffers fragment the heap. Kept on.
	 */
	SSL_CTX_set_mode(srv_ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_mode(cli_ctx, SSL_MODE_RELEASE_BUFFERS);
	/*
	 * Upstream TLS reads ahead: one read() takes up to 64 KiB of records
	 * instead of two per record (header, then body). Records left inside
	 * OpenSSL are drained by upool_kick, as bufferevent_openssl looks only at
	 * SSL_pending().
	 */
	SSL_CTX_set_read_ahead(cli_ctx, 1);
	SSL_CTX_set_default_read_buffer_len(cli_ctx, UP_READ_AHEAD);
	SSL_CTX_set_options(srv_ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_options(cli_ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	/*
	 * No read_ahead: bufferevent_openssl does not look at SSL_pending(),
	 * so records buffered inside OpenSSL would stall the connection.
	 */
	SSL_CTX_set_alpn_select_cb(srv_ctx, alpn_select, NULL);
	/*
	 * No tickets to clients (they cost memory per connection); upstream
	 * sessions are cached (sess_new_cb) and resumed.
	 */
	SSL_CTX_set_num_tickets(srv_ctx, 0);
	SSL_CTX_set_session_id_context(srv_ctx, (const unsigned char *)"egress-proxy", 12);
	if (SSL_CTX_set_default_verify_paths(cli_ctx) != 1) {
		snprintf(err, errlen, "cannot load the system CA store");
		return -1;
	}
	if (ca_bundle != NULL && add_bundle(cli_ctx, ca_bundle, err, errlen) == -1)
		return -1;
	SSL_CTX_set_verify(cli_ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_alpn_protos(cli_ctx, alpn, sizeof(alpn) - 1);
	SSL_CTX_set_session_cache_mode(cli_ctx,
	    SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(cli_ctx, sess_new_cb);
	if (sess_exidx == -1 &&
	    (sess_exidx = SSL_get_ex_new_index(0, NULL, NULL, NULL, sess_key_free)) == -1) {
		snprintf(err, errlen, "SSL_get_ex_new_index failed");
		return -1;
	}
	return 0;
}

SSL *
tls_upstream_new(const struct target *t)
{
	SSL *ssl;

	if ((ssl = SSL_new(cli_ctx)) == NULL)
		return NULL;
	if (t->kind == CANON_NAME) {
		SSL_set_tlsext_host_name(ssl, t->host);
		SSL_set1_host(ssl, t->host);
	} else
		X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), t->host);
	SSL_set_verify(ssl, SSL_VERIFY_PEER, NULL);
	sess_offer(ssl, t->hostport);
	return ssl;
}

SSL *
tls_client_new(X509 *leaf, EVP_PKEY *key)
{
	SSL *ssl = SSL_new(srv_ctx);

	if (ssl == NULL || SSL_use_certificate(ssl, leaf) != 1 ||
	    SSL_use_PrivateKey(ssl, key) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

/* ---- direct writes on TLS bufferevents ---- */
/*
 * Direct TLS writes. libevent's bufferevent_openssl only writes once epoll
 * reports the socket writable: one extra loop round, an epoll_ctl to add the
 * write event and another to remove it, for every response. When nothing
 * is queued on bev, tls_direct() calls SSL_write itself and returns how
 * many of the n bytes went out; the caller queues the rest as usual (and
 * libevent takes over from there). Each SSL_write is at most one record
 * (TLS_DIRECT_MAX), so when OpenSSL asks for a retry, libevent's retry
 * starts at the same bytes with at least as many of them.
 */
#define TLS_DIRECT_MAX	16384

static size_t
tls_direct(struct bufferevent *bev, const char *p, size_t n)
{
	SSL *ssl;
	size_t done = 0;
	int r;

	if (n == 0 || evbuffer_get_length(bufferevent_get_output(bev)) != 0 ||
	    (ssl = bufferevent_openssl_get_ssl(bev)) == NULL || !SSL_is_init_finished(ssl))
		return 0;
	while (done < n) {
		r = SSL_write(ssl, p + done, (int)(n - done > TLS_DIRECT_MAX ?
		    TLS_DIRECT_MAX : n - done));
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	return done;
}

/* Moves n bytes from the front of src to bev (directly when possible). */
void
tls_move(struct bufferevent *bev, struct evbuffer *src, size_t n)
{
	struct evbuffer_iovec v;
	size_t k, w;

	while (n > 0 && evbuffer_peek(src, -1, NULL, &v, 1) == 1) {
		k = v.iov_len < n ? v.iov_len : n;
		w = tls_direct(bev, v.iov_base, k);
		if (w == 0)
			break;
		evbuffer_drain(src, w);
		n -= w;
		if (w < k)
			break;
	}
	if (n > 0)
		evbuffer_remove_buffer(src, bufferevent_get_output(bev), n);
}

/* Adds n bytes to bev (directly when possible). */
void
tls_add(struct bufferevent *bev, const char *p, size_t n)
{
	size_t w = tls_direct(bev, p, n);

	if (w < n)
		evbuffer_add(bufferevent_get_output(bev), p + w, n - w);
}

enum tls_up_fail
tls_upstream_error(struct bufferevent *bev, char *m, size_t len)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	unsigned long e;
	long vr;

	if (ssl != NULL && (vr = SSL_get_verify_result(ssl)) != X509_V_OK) {
		snprintf(m, len, "upstream certificate verification failed: %s",
		    X509_verify_cert_error_string(vr));
		return TLS_UP_VERIFY;
	}
	e = bufferevent_get_openssl_error(bev);
	if (e != 0) {
		char es[200];
		ERR_error_string_n(e, es, sizeof(es));
		snprintf(m, len, "upstream TLS failed: %s", es);
		return TLS_UP_OTHER;
	}
	snprintf(m, len, "upstream TLS failed");
	return TLS_UP_OTHER;
}
