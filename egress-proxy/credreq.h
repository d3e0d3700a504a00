/*
 * credreq.h: named credentials on the request path (issue 30; credreq.c).
 * The credentials and their placeholders are cred.h's; this is where a
 * sandbox's policy picks them and an intercepted request gets them.
 *
 * Rules:
 *  - a sandbox may use the credentials its policy's "credentials" list
 *    names, or, without that list, those declared default;
 *  - a CONNECT to a host one of them lists is intercepted (an addon's
 *    deny still wins), so the credential can go in;
 *  - only an intercepted (TLS) request gets a credential: a plain http://
 *    request never does;
 *  - the client's fields that carry one of the sandbox's placeholders for
 *    this host are held out before the client's credentials are stripped
 *    and before the addon's hook (which never sees them or a real value);
 *    after the hook they go back with the real values, unless the addon
 *    set a field of that name (the addon's wins);
 *  - a placeholder in the query is swapped too (percent-encoded);
 *  - a credential whose form's field the request still lacks is added
 *    (bearer and basic: Authorization; header: its field; query: its
 *    parameter; oauth2: Authorization: Bearer and the access token the
 *    proxy obtained, credtok.h; registry: the same with the token of the
 *    request's scope, replacing any Authorization the client sent, a
 *    placeholder included);
 *  - a sigv4 credential is never added: a request the client signed with
 *    the sandbox's key id placeholder (and its secret placeholder) is
 *    signed again with the real key over what goes upstream, when its
 *    region and service are the credential's;
 *  - the names applied, never a value, go to the request's audit line.
 */
#ifndef PROXY_CREDREQ_H
#define PROXY_CREDREQ_H

#include <stddef.h>

struct cJSON;
struct cred;
struct credset;
struct hreq;

#define CREDREQ_MAX	16	/* credentials one sandbox may use on one host */

/* The placeholder key (32 bytes): read from path, or made there (0600) at first start. */
int	credreq_key_load(const char *path, char *err, size_t errlen);
/* The placeholder key derived from the file at path (the CA key): HMAC-SHA256 of its bytes. */
int	credreq_key_derive(const char *path, char *err, size_t errlen);
const unsigned char *credreq_key(void);

/*
 * The credentials of cs a sandbox with policy may use (policy NULL: the
 * defaults), whose hosts match host when host is not NULL, into out (room
 * for max); returns how many.
 */
size_t	credreq_allowed(const struct credset *cs, const struct cJSON *policy, const char *host,
	    struct cred **out, size_t max);
/* "", or why policy's "credentials" list is not one cs can serve. */
const char *credreq_policy_check(const struct credset *cs, const struct cJSON *policy,
	    char *err, size_t errlen);

/*
 * Before the strip: marks deleted the fields of r that carry a
 * placeholder of sandbox for one of the credentials cs (n of them, from
 * credreq_allowed with the host), keeping their indices in r. 0, or -1
 * when more than HREQ_CRED_HELD fields carry one (refused: 400).
 */
int	credreq_hold(struct hreq *r, struct cred *const *cs, size_t n, const char *sandbox);
/*
 * After the hook: the held fields back with their placeholders swapped,
 * placeholders in the query swapped, a SigV4-signed request signed again
 * with the real key (its Host as hosthdr, what goes upstream), the missing
 * forms added; the names applied written to r->creds. 0, or the status to
 * refuse the request with and why: 400 (a signature that cannot be read or
 * signed again), 403 (a key id, region or service the credential does not
 * serve), 431 (no room in the head), 501 (a signing mode not served yet),
 * 502 (an oauth2 or registry credential without its token). A SigV4
 * request without x-amz-content-sha256 (a service other than S3) is left
 * for its body: r->s4_body is set, and credreq_resign_body signs it once
 * the body's hash is known. toks[i] is the
 * current access token of cs[i] when its form is oauth2 or registry
 * (credtok_get), else NULL;
 * toks may be NULL when none is.
 */
int	credreq_apply(struct hreq *r, struct cred *const *cs, size_t n, char *const *toks,
	    const char *sandbox, const char *hosthdr, char *why, size_t whylen);
/*
 * The SigV4 request credreq_apply left for its body (r->s4_body), signed
 * again with body_hash (lower-case hex SHA-256 of the body) as its
 * payload's hash. 0, or a status and why as credreq_apply's.
 */
int	credreq_resign_body(struct hreq *r, struct cred *const *cs, size_t n,
	    const char *sandbox, const char *hosthdr, const char *body_hash, char *why,
	    size_t whylen);

#endif
