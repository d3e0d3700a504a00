/*
 * curlev.h: libcurl's multi interface on a worker's libevent loop, for the
 * proxy's own HTTPS calls (ghapp.c: GitHub App tokens and their
 * revocation; credtok.c: oauth2 and registry tokens). The loop drives the
 * transfers' sockets and libcurl's timer; a finished transfer is handed to
 * the owner's done callback with its easy handle's CURLINFO_PRIVATE.
 * curlev_easy makes each transfer with one policy (https only, verified
 * against the system store and upstream.ca_bundle, no redirect, no proxy,
 * the resolve overrides, the proxy's timeouts, and only to the addresses
 * its own connections may reach: upstream.allow_cidrs, never its own
 * listeners), so a call goes where the proxy's own connections would and
 * trusts what they trust.
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
/*
 * A transfer of url with the proxy's policy for its own calls: https only,
 * the peer verified (the system store and upstream.ca_bundle), no redirect
 * followed, no proxy, the resolve overrides (CURLOPT_CONNECT_TO),
 * timeouts.connect and timeouts.hook, sockets only to addresses
 * netcheck_addr passes; priv is what done gets, hdrs the
 * request's fields (owned by the caller), errbuf CURL_ERROR_SIZE bytes.
 * The caller sets the method, body and write callback, then adds it to
 * curlev_multi. NULL when libcurl cannot make one.
 */
CURL		*curlev_easy(const struct curlev *, const char *url, void *priv,
		    struct curl_slist *hdrs, char *errbuf);

#endif
