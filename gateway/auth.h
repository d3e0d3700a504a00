/*
 * auth.h: the gateway's request rules that need no I/O: Host
 * normalisation, the query token, the cookie, Bearer, Origin, token
 * hashing and comparison. Unit-tested (tests/unit/test_gw_auth.c) and
 * fuzzed through the request-head path.
 */
#ifndef GW_AUTH_H
#define GW_AUTH_H

#include <stddef.h>

#include "attrib.h"
#include "buf.h"

#define GW_HOST_MAX	253
#define GW_TOKEN_MAX	256	/* longer presented tokens are refused */

/*
 * The host part of a Host header value (or of an Origin's authority):
 * lower-cased, ":port" and one trailing dot removed, into out (NUL-
 * terminated). *port gets the port (0: none given). -1 if empty, too long,
 * or holding a byte that is not a letter, digit, '-', '.' or '_' (IPv6
 * literals are not app hosts and are refused too).
 */
int	auth_host_norm(const char *in, size_t len, char *out, size_t outlen,
	    int *port) WUNRES;

/*
 * The request target's `token` query parameters. Returns 0 when there is
 * none; 1 when there is, with the percent-decoded value in tok (NUL-
 * terminated) and the target without every `token` parameter in rest;
 * -1 when a token parameter is malformed (bad %-escape, too long) or
 * several are given with different values. rest is reset first.
 */
int	auth_query_token(const char *target, size_t len, char *tok, size_t toklen,
	    struct buf *rest) WUNRES;

/*
 * Walks one Cookie header value: for each cookie called name, cb(arg,
 * value, vlen) is called; every other cookie is appended to rest (joined
 * by "; "). Returns the number of cookies called name. rest is not reset.
 */
int	auth_cookie_take(const char *hdr, size_t len, const char *name,
	    void (*cb)(void *, const char *, size_t), void *arg,
	    struct buf *rest);

/*
 * An Authorization value "Bearer <token>" (scheme case-insensitive):
 * 1 with *tok and *toklen pointing at the token, 0 otherwise.
 */
int	auth_bearer(const char *v, size_t len, const char **tok, size_t *toklen);

/*
 * Whether an Origin value is this app's own origin: scheme (http or
 * https), host and port as the client used them (host: the normalised
 * Host; port: the Host's port or 0 for the scheme's default). 1 same,
 * 0 different (or "null", or malformed).
 */
int	auth_origin_same(const char *origin, size_t len, const char *scheme,
	    const char *host, int port);

/* sha256 of a token as 64 lower-case hex digits + NUL. */
void	auth_token_sha256(const char *tok, size_t len, char hex[65]);

/* Constant-time equality of two n-byte strings: 1 equal, 0 not. */
int	auth_ct_eq(const char *a, const char *b, size_t n);

/* sha256(tok) == want (64 hex), compared in constant time. */
int	auth_token_ok(const char *tok, size_t len, const char *want);

#endif
