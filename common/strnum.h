/*
 * strnum.h: bounded number parsing (strtonum-like) and the unit forms the
 * configuration uses: durations ("250ms", "30s", "10m", "1h", "2d"; a bare
 * number is milliseconds) and sizes ("512", "64KiB", "16MiB", "1GiB", "10k").
 */
#ifndef STRNUM_H
#define STRNUM_H

#include <stddef.h>
#include "attrib.h"

/* 0 and *out set, or -1 with *errstr ("invalid", "too small", "too large"). */
int	strnum_ll(const char *s, long long min, long long max, long long *out,
	    const char **errstr) WUNRES;
int	strnum_duration_ms(const char *s, long long *out, const char **errstr) WUNRES;
int	strnum_size(const char *s, long long *out, const char **errstr) WUNRES;

/* The value of the hexadecimal digit c (0-15), or -1. */
int	strnum_hexdigit(int c);

#endif
