/*
 * reqcanon.h: the canonical form of a request target, the one a policy is
 * judged on and the one sent upstream (docs/proxy.md "Canonical request
 * targets"). Upstreams route on a decoded, normalised path (nginx decodes
 * %XX, resolves dot segments and merges slashes before it picks a
 * location; Rails ignores a trailing slash), so a rule matched on the raw
 * target can be walked around by spelling the same route another way. The
 * canonical form is one spelling per route:
 *
 *  - path segments are percent-decoded: an escape of an unreserved byte
 *    (ALPHA DIGIT - . _ ~) becomes the byte, every other escape is kept
 *    with upper-case hex (%2f -> %2F); raw bytes outside RFC 3986's pchar
 *    (and non-ASCII) are escaped;
 *  - "." and ".." segments are resolved (also when spelled %2e), empty
 *    segments dropped: no "//", no trailing "/" ("/" stays "/");
 *  - the query is kept byte for byte (its escapes checked).
 *
 * Refused (the upstream may read them another way than we would): a
 * malformed escape, a NUL or control byte raw or encoded, a backslash raw
 * or encoded, ';' in the path (path parameters, which some servers strip
 * before routing), double encoding ("%25" followed by two hex digits), a
 * decoded segment that is not UTF-8 (overlong forms included), an encoded
 * '/' that would make an empty or dot segment once decoded ("..%2F",
 * "a%2F"), ".." above the root, '#', a target that is not an absolute
 * path (or "*"), and targets longer than REQCANON_MAX. An encoded '/'
 * otherwise stays encoded as %2F (GitLab's API names projects so): the
 * caller decides where it may appear.
 *
 * No I/O and no state: unit-tested (tests/unit/test_proxy_reqcanon.c) and
 * fuzzed (tests/fuzz/fuzz_proxy_reqcanon.c).
 */
#ifndef PROXY_REQCANON_H
#define PROXY_REQCANON_H

#include <stddef.h>

#include "buf.h"

/*
 * Longest request target canonicalised, in bytes: GitHub and GitLab refuse
 * far shorter URLs, and the canonical form (at most three times as long)
 * is held per request.
 */
#define REQCANON_MAX	((size_t)64 * 1024)

/*
 * Appends the canonical form of the origin-form target t (n bytes: the
 * path and its query, no fragment) to out. 0 with *path_len the length of
 * the canonical path (a '?' and the query follow it when there is one), or
 * -1 with the reason in err (out is then as it was).
 */
int	reqcanon_target(const char *t, size_t n, struct buf *out, size_t *path_len,
	    char *err, size_t errlen);

#endif
