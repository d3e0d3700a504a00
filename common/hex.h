/*
 * hex.h: bytes as lower-case hexadecimal, the one encoder of digests,
 * MACs and random ids in every part. No library: the static agent links
 * it too (common/module.mk, COMMON_MIN_OBJS). Percent-escapes (%XX, upper
 * case) and escapes of single bytes in logs and JSON are their own thing
 * and stay with their encoders.
 */
#ifndef COMMON_HEX_H
#define COMMON_HEX_H

#include <stddef.h>

/* Characters hex_encode writes for n bytes (the NUL not counted). */
#define HEX_LEN(n)	((n) * 2)

/* Writes the lower-case hex of in[0..n) to out: HEX_LEN(n) digits, then a
 * NUL (out holds HEX_LEN(n) + 1 bytes). */
void	hex_encode(const void *in, size_t n, char *out);

#endif
