/* jsonu.h: small JSON and text helpers shared by the MCP and REST code. */
#ifndef JSONU_H
#define JSONU_H

#include <stddef.h>
#include "attrib.h"

/* 1 if s[0..n) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
int	jsonu_utf8_valid(const char *s, size_t n);
/* A NUL-terminated copy of s[0..n) with invalid sequences replaced by
 * U+FFFD and NUL bytes dropped. Caller frees. */
char	*jsonu_utf8_clean(const char *s, size_t n) MALLOC;
/* Constant-time comparison of the whole of a and b (lengths may differ). */
int	jsonu_ct_equal(const char *a, size_t alen, const char *b, size_t blen);

#endif
