/* strnum.c: strict number parsing with bounds and units. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "strnum.h"

int
strnum_ll(const char *s, long long min, long long max, long long *out,
    const char **errstr)
{
	char *end;
	long long v;

	*errstr = "invalid";
	if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end != '\0')
		return -1;
	if (errno == ERANGE || v < min || v > max) {
		*errstr = (v < min || (errno == ERANGE && v == LLONG_MIN)) ?
		    "too small" : "too large";
		return -1;
	}
	*errstr = NULL;
	*out = v;
	return 0;
}

/* Splits "<digits><unit>" and multiplies, checking overflow. */
static int
unit_parse(const char *s, const char *const *units, const long long *mult,
    long long *out, const char **errstr)
{
	char num[32];
	size_t i = 0, k;
	long long v;

	*errstr = "invalid";
	if (s == NULL)
		return -1;
	while (i < sizeof(num) - 1 && isdigit((unsigned char)s[i])) {
		num[i] = s[i];
		i++;
	}
	if (i == 0 || i == sizeof(num) - 1)
		return -1;
	num[i] = '\0';
	if (strnum_ll(num, 0, LLONG_MAX, &v, errstr) == -1)
		return -1;
	*errstr = "invalid";
	for (k = 0; units[k] != NULL; k++) {
		if (strcmp(s + i, units[k]) != 0)
			continue;
		if (mult[k] != 0 && v > LLONG_MAX / mult[k]) {
			*errstr = "too large";
			return -1;
		}
		*out = v * mult[k];
		*errstr = NULL;
		return 0;
	}
	return -1;
}

int
strnum_duration_ms(const char *s, long long *out, const char **errstr)
{
	static const char *const u[] = { "", "ms", "s", "m", "h", "d", NULL };
	static const long long m[] = { 1, 1, 1000, 60000, 3600000, 86400000 };

	return unit_parse(s, u, m, out, errstr);
}

int
strnum_size(const char *s, long long *out, const char **errstr)
{
	static const char *const u[] = { "", "B", "k", "K", "KiB", "KB", "M",
	    "MiB", "MB", "G", "GiB", "GB", NULL };
	static const long long m[] = { 1, 1, 1024, 1024, 1024, 1000, 1 << 20,
	    1 << 20, 1000000, 1 << 30, 1 << 30, 1000000000 };

	return unit_parse(s, u, m, out, errstr);
}

int
strnum_hexdigit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
