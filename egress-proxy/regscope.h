/*
 * regscope.h: the token scope an OCI/Docker registry request needs (issue
 * 30; regscope.c), for credentials of form registry (cred.h, credtok.h).
 * The proxy, not the client, answers the registry's Bearer challenge: it
 * derives the scope from the request itself, as the registry will check
 * it (distribution's registry/handlers/app.go appendAccessRecords), asks
 * the realm for a token of that scope, and sends the request with it.
 *
 * Rules:
 *  - only paths under /v2/ are the registry API; any other path gets no
 *    token (regscope_derive returns 1);
 *  - /v2/ (the ping): no scope; /v2/_catalog: registry:catalog:*;
 *  - /v2/NAME/manifests/REF, /v2/NAME/blobs/DIGEST,
 *    /v2/NAME/blobs/uploads/[UUID], /v2/NAME/tags/list and
 *    /v2/NAME/referrers/DIGEST: repository:NAME:ACTIONS, ACTIONS "pull" for
 *    GET and HEAD, "pull,push" for POST, PUT and PATCH, "delete" for DELETE
 *    (distribution asks delete, not push, of a DELETE);
 *  - a blob mount (POST .../blobs/uploads/?mount=D&from=OTHER) also needs
 *    repository:OTHER:pull (space-separated: one scope parameter each);
 *  - NAME (and OTHER) must follow distribution's grammar: path components
 *    of [a-z0-9]+ joined by one separator ([._], __ or -+), components
 *    joined by '/', at most REGSCOPE_NAME_MAX bytes in all; anything else
 *    (upper case, "..", "%2e", an empty component) is refused (400), as
 *    is any other /v2/ path or method.
 * No I/O: unit-tested (tests/unit/test_proxy_regscope.c).
 */
#ifndef PROXY_REGSCOPE_H
#define PROXY_REGSCOPE_H

#include <stddef.h>

#define REGSCOPE_NAME_MAX	255	/* distribution's NameTotalLengthMax */
#define REGSCOPE_MAX		(2 * (REGSCOPE_NAME_MAX + 32))	/* two scopes and their words */

/* Whether s (n bytes) is a repository name by distribution's grammar. */
int	regscope_name_ok(const char *s, size_t n);
/*
 * The scope the request method (NUL-terminated) target (origin form: path
 * and query, tl bytes) needs into out (room for outlen; "" for the ping).
 * 0: out filled. 1: not a registry API path, no token goes. -1: err says
 * why the request is refused (400).
 */
int	regscope_derive(const char *method, const char *target, size_t tl, char *out,
	    size_t outlen, char *err, size_t errlen);

#endif
