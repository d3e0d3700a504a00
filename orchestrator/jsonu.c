/* jsonu.c: UTF-8 validation and cleaning, constant-time compare. */
#include <stdlib.h>
#include <string.h>

#include "jsonu.h"
#include "xmalloc.h"

/* Length of the valid sequence at s (1..4), or 0 if invalid. */
static size_t
utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		if (n >= 2 && (s[1] & 0xc0) == 0x80)
			return 2;
		return 0;
	}
	if (c >= 0xe0 && c <= 0xef) {
		if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if (c == 0xe0 && s[1] < 0xa0)
			return 0;	/* overlong */
		if (c == 0xed && s[1] >= 0xa0)
			return 0;	/* surrogate */
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[3] & 0xc0) != 0x80)
			return 0;
		if (c == 0xf0 && s[1] < 0x90)
			return 0;
		if (c == 0xf4 && s[1] >= 0x90)
			return 0;
		return 4;
	}
	return 0;
}

int
jsonu_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n) {
		if ((k = utf8_seq(p + i, n - i)) == 0)
			return 0;
		i += k;
	}
	return 1;
}

char *
jsonu_utf8_clean(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	char *out;
	size_t i = 0, o = 0, k;

	size_t need = 0;

	for (i = 0; i < n; i += k ? k : 1) {
		k = p[i] == 0 ? 1 : utf8_seq(p + i, n - i);
		need += p[i] == 0 ? 0 : k ? k : 3;
	}
	out = xmalloc(need + 1);
	i = 0;
	while (i < n) {
		if (p[i] == 0) {
			i++;
			continue;
		}
		if ((k = utf8_seq(p + i, n - i)) == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, p + i, k);
		o += k;
		i += k;
	}
	out[o] = '\0';
	return out;
}

int
jsonu_ct_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	volatile unsigned char d = 0;
	size_t i;

	if (blen == 0)
		return 0;
	/* Walk b's length every time so timing does not depend on a. */
	for (i = 0; i < blen; i++)
		d |= (unsigned char)(b[i] ^ (i < alen ? a[i] : 0));
	d |= (unsigned char)(alen != blen);
	return d == 0;
}
