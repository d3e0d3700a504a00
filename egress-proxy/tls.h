/*
 * tls.h: the proxy's two TLS contexts (tls.c): towards clients (the leaf
 * minted for the canonical target, ALPN http/1.1 only, no tickets) and
 * towards upstreams (verified against the system store plus
 * upstream.ca_bundle, read-ahead, sessions cached per canonical
 * "host:port"). The contexts are built once, on the main thread before the
 * workers start; afterwards any worker makes SSL objects from them. See
 * docs/proxy.md "What the proxy does with a CONNECT". Also direct writes
 * on TLS bufferevents (tls_add, tls_move).
 */
#ifndef PROXY_TLS_H
#define PROXY_TLS_H

#include <stddef.h>
#include <openssl/ssl.h>

#include "canon.h"

/*
 * Builds both contexts; ca_bundle (NULL: none) is added to the system
 * store for upstream verification. 0, or -1 with err. Called once.
 */
int	tls_init(const char *ca_bundle, char *err, size_t errlen);

/*
 * A client-mode SSL for the upstream of t: SNI and the hostname (or IP)
 * check set to the canonical host, peer verification on, and the cached
 * session for t->hostport offered. NULL on failure. The caller owns it
 * (SSL_free, or hands it to a bufferevent that frees it).
 */
SSL	*tls_upstream_new(const struct target *t);

/*
 * A server-mode SSL towards a client presenting leaf with key (both
 * borrowed: the SSL takes its own references). NULL on failure. The caller
 * owns it (SSL_free).
 */
SSL	*tls_client_new(X509 *leaf, EVP_PKEY *key);

struct bufferevent;
struct evbuffer;
/*
 * Writes to a TLS bufferevent: with nothing queued on bev, SSL_write at
 * once (saving a loop round and two epoll_ctl per response), the rest
 * queued as usual. tls_add adds p[0..n); tls_move moves the first n bytes
 * of src.
 */
void	tls_add(struct bufferevent *bev, const char *p, size_t n);
void	tls_move(struct bufferevent *bev, struct evbuffer *src, size_t n);

/*
 * Why the TLS bufferevent bev towards an upstream failed, into m. Returns
 * TLS_UP_VERIFY when the upstream's certificate failed verification (a
 * refusal: no other address is tried), TLS_UP_OTHER for any other failure.
 */
enum tls_up_fail { TLS_UP_OTHER, TLS_UP_VERIFY };
enum tls_up_fail tls_upstream_error(struct bufferevent *bev, char *m, size_t len);

#endif
