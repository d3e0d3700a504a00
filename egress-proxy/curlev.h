/*
 * curlev.h: libcurl's multi interface on a worker's libevent loop, for the
 * proxy's own HTTPS calls (ghapp.c: GitHub App tokens and their
 * revocation; credtok.c: oauth2 and registry tokens). The loop drives the
 * transfers' sockets and libcurl's timer; a finished transfer is handed to
 * the owner's done callback with its easy handle's CURLINFO_PRIVATE. The
 * proxy's resolve overrides come as a CURLOPT_CONNECT_TO list, and
 * curlev_sslctx adds upstream.ca_bundle to the system store, so a call
 * goes where the proxy's own connections would and trusts what they trust.
 */
#ifndef PROXY_CURLEV_H
#define PROXY_CURLEV_H

#include <curl/curl.h>

struct event_base;
struct pconf;
struct curlev;

/* A transfer of the owner's ended: priv is its CURLINFO_PRIVATE (never NULL). */
typedef void (*curlev_done_cb)(void *owner, void *priv, CURLcode);

struct curlev	*curlev_new(struct event_base *, const struct pconf *, curlev_done_cb,
		    void *owner);
/* Frees the multi handle, the timer and the list; the owner removed its handles first. */
void		 curlev_free(struct curlev *);
CURLM		*curlev_multi(const struct curlev *);
/* The resolve overrides, for CURLOPT_CONNECT_TO ("host:port:addr:port"); NULL when none. */
struct curl_slist *curlev_resolve(const struct curlev *);
/* CURLOPT_SSL_CTX_FUNCTION: adds the bundle (CURLOPT_SSL_CTX_DATA, a path or NULL). */
CURLcode	 curlev_sslctx(CURL *, void *sslctx, void *bundle);

#endif
