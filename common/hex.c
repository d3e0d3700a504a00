/*
 * hex.c: lower-case hexadecimal encoding (hex.h).
 */
#include "hex.h"

void
hex_encode(const void *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p = in;
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}
