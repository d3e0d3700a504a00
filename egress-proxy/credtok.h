/*
 * credtok.h: access tokens of oauth2 and registry credentials (issue 30;
 * credtok.c).
 * An oauth2 credential (cred.h) names a token endpoint (token_url, https
 * only), a client (client_id and the secret) and optionally a refresh
 * token; the proxy exchanges them for an access token and puts it in
 * Authorization: Bearer on the requests to the credential's hosts
 * (credreq_apply). The sandbox never holds any of them.
 *
 * A registry credential (the OCI/Docker registry token flow) names the
 * realm (token_url, https only), its service, and the Basic pair (user and
 * the secret) the realm takes; the proxy asks the realm for a token of the
 * scope each request needs (regscope.h) with GET
 * realm?service=S&scope=..., and sends the request with it, so the client
 * never sees the registry's 401 and never talks to the realm. Its tokens
 * are cached per (credential, realm, user, service, scope); the rest below
 * holds for both forms (its audit line's grant is "registry" and it names
 * the scope).
 *
 * Rules:
 *  - a token is asked for with the client credentials grant, or the
 *    refresh token grant when the declaration has a refresh token; the
 *    client authenticates by HTTP Basic (RFC 6749 2.3.1);
 *  - a refresh token the endpoint rotates replaces the old one at once (in
 *    memory, process wide; written back to its file, atomically, when the
 *    declaration says refresh_write); only one request per credential is
 *    ever in flight in the whole process, so a refresh token is never
 *    presented twice (a reuse revokes the family, RFC 9700 4.14.2);
 *  - tokens are cached process wide per (credential, token_url, client,
 *    scope) until CREDTOK_MARGIN before expires_in runs out; a 401 from the
 *    API drops the cached token (credtok_invalidate) so the next request
 *    gets a new one, except a registry token the realm granted less than
 *    CREDTOK_REFUSED_MS ago: its grant lacks the access, so it is kept
 *    until then (one realm call per scope in that time, not one per
 *    refused request);
 *  - requests waiting for the same token share one exchange (coalesced);
 *    the exchange runs on libcurl multi on the worker's loop, bounded by
 *    timeouts.hook; redirects are never followed; TLS is verified (system
 *    store + upstream.ca_bundle); resolve overrides apply;
 *  - any failure fails the waiting requests closed (502 with the reason,
 *    never a value); a failed exchange backs the credential off
 *    (CREDTOK_BACKOFF_MIN_S doubling to CREDTOK_BACKOFF_MAX_S), meanwhile
 *    requests fail at once;
 *  - each exchange is one audit line (type "token": the credential's name,
 *    the endpoint's host, the grant, the status, the outcome), never a
 *    value; the counters below feed the metrics.
 */
#ifndef PROXY_CREDTOK_H
#define PROXY_CREDTOK_H

#include <stdatomic.h>
#include <stddef.h>

struct auditq;
struct cred;
struct event_base;
struct pconf;
struct credtok;

#define CREDTOK_TOKEN_MAX	4096	/* an access or refresh token (a JWT fits) */
#define CREDTOK_RESP_MAX	((size_t)64 * 1024)	/* a token endpoint's answer */
#define CREDTOK_URL_MAX		512
#define CREDTOK_SCOPE_MAX	512
#define CREDTOK_CLIENT_MAX	256
#define CREDTOK_TTL_MAX		(366L * 86400)	/* expires_in beyond: refused */
#define CREDTOK_TTL_DEFAULT	60	/* no expires_in: used this long (s) */
#define CREDTOK_MARGIN_MS	30000	/* refreshed this early, at most a quarter of the TTL */
#define CREDTOK_REFUSED_MS	10000	/* a fresh registry token the registry refuses stays this long */
#define CREDTOK_BACKOFF_MIN_S	1
#define CREDTOK_BACKOFF_MAX_S	300
#define CREDTOK_POLL_MS		50	/* another worker's exchange: checked this often */

/* Exchanges (by result) and requests refused while backing off, process wide. */
extern atomic_long credtok_requests_ok, credtok_requests_failed, credtok_backoff_refused;

/*
 * A worker's token fetcher on base's loop, auditing to aq (NULL: none).
 * Lives as long as the worker.
 */
struct credtok	*credtok_new(struct event_base *base, const struct pconf *conf,
		    struct auditq *aq);
void		 credtok_free(struct credtok *);

typedef void (*credtok_cb)(void *arg, const char *err);

/*
 * The access tokens of the oauth2 and registry credentials of cs (n of
 * them) into toks (room for n; toks[i] is NULL for another form, else the
 * caller frees it with credtok_toks_free); a registry credential's is for
 * regscope, the request's scope (regscope_derive; NULL: refused). 0: all
 * filled. 1: an exchange is under way and cb(arg, err) will be called from
 * the loop (err NULL: call again, the token is cached); nothing is filled.
 * -1: err says why (fail closed).
 */
int	credtok_get(struct credtok *, struct cred *const *cs, size_t n, const char *regscope,
	    char **toks, char *err, size_t errlen, credtok_cb cb, void *arg);
/* Forgets every waiter with arg (it went away); never calls it. */
void	credtok_forget(struct credtok *, void *arg);
/* Wipes and frees toks[0..n). */
void	credtok_toks_free(char **toks, size_t n);
/*
 * The API answered 401 to a request that carried c's token (a registry
 * credential's for regscope): its cached token is dropped, or for a
 * registry token younger than CREDTOK_REFUSED_MS kept until that age
 * (any thread). Returns 1 when it was kept, else 0.
 */
int	credtok_invalidate(const struct cred *c, const char *regscope);

/*
 * "", or why an oauth2 declaration cannot be served: token_url (https,
 * a host, no user info, no fragment, printable), client_id, scope.
 */
const char *credtok_decl_check(const char *token_url, const char *client_id,
	    const char *scope, char *err, size_t errlen);

/*
 * "", or why a registry declaration cannot be served: realm (https, a
 * host, no user info, no fragment, printable), service (visible ASCII),
 * user (printable, no ':').
 */
const char *credtok_regdecl_check(const char *realm, const char *service, const char *user,
	    char *err, size_t errlen);

/*
 * Reads a token endpoint's successful answer (body, n bytes): the
 * access_token (into tok, toklen), token_type bearer, expires_in (*ttl, s;
 * CREDTOK_TTL_DEFAULT when absent) and a rotated refresh_token (into rt,
 * "" when none). 0, or -1 with err (never a value from the body).
 */
int	credtok_parse(const char *body, size_t n, char *tok, size_t toklen, long *ttl,
	    char *rt, size_t rtlen, char *err, size_t errlen);
/*
 * Reads a registry realm's successful answer (the Docker token spec):
 * token (or access_token when token is absent; a JWT fits), expires_in
 * (*ttl, s; CREDTOK_TTL_DEFAULT when absent); no token_type asked for. 0,
 * or -1 with err (never a value from the body).
 */
int	credtok_parse_registry(const char *body, size_t n, char *tok, size_t toklen, long *ttl,
	    char *err, size_t errlen);
/*
 * Why an endpoint refused (body of a 4xx, RFC 6749 5.2): "invalid_grant"
 * when its error code is one, or a registry token server's first
 * errors[].code ("UNAUTHORIZED", [A-Z_]), else "" (the description is
 * never kept).
 */
void	credtok_error_code(const char *body, size_t n, char *out, size_t outlen);

#endif
