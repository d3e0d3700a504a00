/*
 * pglob.h: the glob patterns of credential policies (docs/addons.md
 * "Policy"): `*` matches any run of characters except `/`, `**` any run
 * including `/`, `?` one character except `/`; every other byte is
 * literal; the whole subject must match. Matched by simulating the
 * pattern's automaton over the subject: time O(subject x pattern), never
 * exponential, no recursion, no allocation beyond the pattern's size.
 */
#ifndef PROXY_PGLOB_H
#define PROXY_PGLOB_H

#include <stddef.h>

#define PGLOB_PATTERN_MAX	1024	/* bytes; longer patterns never match */

/*
 * 1 if subject s (n bytes) matches pattern p (pn bytes), 0 if not (or the
 * pattern is longer than PGLOB_PATTERN_MAX). ci: letters compare
 * case-insensitively (ASCII).
 */
int	pglob_match(const char *p, size_t pn, const char *s, size_t n, int ci);

#endif
