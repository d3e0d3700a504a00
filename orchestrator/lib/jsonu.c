/*
 * jsonu.c: UTF-8 validation and cleaning, constant-time compare, and the
 * JSON text read beside cJSON's tree (jsonu.h).
 *
 * The text readers below only ever see text cJSON has parsed (or, for
 * jsonu_has_nul and jsonu_nul_to_symbol, any bytes: they stop at the end
 * and never read past it), so they check its grammar only as far as
 * finding each value's end needs.
 */
#include <stddef.h>
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
		need += p[i] == 0 ? 3 : k ? k : 3;
	}
	out = xmalloc(need + 1);
	i = 0;
	while (i < n) {
		if (p[i] == 0) {
			memcpy(out + o, JSONU_NUL_SYMBOL, 3);
			o += 3;
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

/* ---- the text beside the tree ---- */

static const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* Past the string token at p (at its '"'), or NULL. */
static const char *
skip_string(const char *p, const char *end)
{
	if (p >= end || *p != '"')
		return NULL;
	for (p++; p < end; p++) {
		if (*p == '\\') {
			if (++p >= end)
				return NULL;
		} else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* Past the value at p (at its first byte), or NULL. */
static const char *
skip_value(const char *p, const char *end)
{
	size_t depth = 0;

	if (p >= end)
		return NULL;
	if (*p == '"')
		return skip_string(p, end);
	if (*p != '{' && *p != '[') {
		while (p < end && *p != ',' && *p != ']' && *p != '}' && *p != ' ' &&
		    *p != '\t' && *p != '\r' && *p != '\n')
			p++;
		return p;
	}
	while (p < end) {
		if (*p == '"') {
			if ((p = skip_string(p, end)) == NULL)
				return NULL;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p + 1;
		p++;
	}
	return NULL;
}

int
jsonu_iter_init(struct jsonu_iter *it, const char *s, size_t n, cJSON *c)
{
	const char *end = s + n, *p = s;

	memset(it, 0, sizeof(*it));
	if ((size_t)(end - p) >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
		p += 3;		/* cJSON skips a byte order mark too */
	p = skip_ws(p, end);
	if (p >= end || !(cJSON_IsObject(c) ? *p == '{' : cJSON_IsArray(c) &&
	    *p == '['))
		return -1;
	it->obj = *p == '{';
	it->p = p + 1;
	it->end = end;
	it->next = c->child;
	it->first = 1;
	return 0;
}

int
jsonu_iter_next(struct jsonu_iter *it, cJSON **child, const char **name,
    size_t *namelen, const char **val, size_t *vallen)
{
	const char *p, *q;

	*name = NULL;
	*namelen = 0;
	if (it->done)
		return 0;
	p = skip_ws(it->p, it->end);
	if (it->next == NULL) {
		it->done = 1;
		return p < it->end && *p == (it->obj ? '}' : ']') ? 0 : -1;
	}
	if (!it->first) {
		if (p >= it->end || *p != ',')
			return -1;
		p = skip_ws(p + 1, it->end);
	}
	if (it->obj) {
		if ((q = skip_string(p, it->end)) == NULL)
			return -1;
		*name = p;
		*namelen = (size_t)(q - p);
		p = skip_ws(q, it->end);
		if (p >= it->end || *p != ':')
			return -1;
		p = skip_ws(p + 1, it->end);
	}
	if ((q = skip_value(p, it->end)) == NULL || q == p)
		return -1;
	*child = it->next;
	*val = p;
	*vallen = (size_t)(q - p);
	it->next = it->next->next;
	it->p = q;
	it->first = 0;
	return 1;
}

/*
 * The next "\u0000" escape inside a string of the text from p: the offset
 * of its 'u' from p, or -1. *in: inside a string (0 at a value's start).
 */
static ptrdiff_t
find_nul(const char *p, const char *end, int *in)
{
	const char *q;

	for (q = p; q < end; q++) {
		if (!*in) {
			*in = *q == '"';
			continue;
		}
		if (*q == '"')
			*in = 0;
		else if (*q == '\\' && q + 1 < end) {
			q++;
			if (*q == 'u' && end - q >= 5 && memcmp(q + 1, "0000", 4) == 0)
				return q - p;
		}
	}
	return -1;
}

int
jsonu_has_nul(const char *s, size_t n)
{
	int in = 0;

	return find_nul(s, s + n, &in) != -1;
}

size_t
jsonu_nul_to_symbol(char *s, size_t n)
{
	size_t off = 0, k = 0;
	ptrdiff_t d;
	int in = 0;

	while ((d = find_nul(s + off, s + n, &in)) != -1) {
		off += (size_t)d;	/* at the 'u' of "u0000" */
		s[off + 1] = '2';
		s[off + 2] = '4';
		off += 5;
		k++;
	}
	return k;
}

/* jsonu_mark_nul's walk of container c, parsed from s[0..n). */
static int
mark_nul(const char *s, size_t n, cJSON *c)
{
	struct jsonu_iter it;
	const char *nm, *v;
	size_t nl, vl;
	cJSON *ch, *raw;
	char *txt;
	int k = 0;

	if (jsonu_iter_init(&it, s, n, c) == -1)
		return 0;
	while (jsonu_iter_next(&it, &ch, &nm, &nl, &v, &vl) == 1) {
		if (nm == NULL || !jsonu_has_nul(nm, nl)) {
			if (!jsonu_has_nul(v, vl))
				continue;
			if (cJSON_IsObject(ch) || cJSON_IsArray(ch)) {
				k += mark_nul(v, vl, ch);
				continue;
			}
		}
		/* A string holding a NUL, or a member whose name does. */
		txt = xmalloc(vl + 1);
		memcpy(txt, v, vl);
		txt[vl] = '\0';
		raw = cJSON_CreateRaw(txt);
		free(txt);
		if (raw == NULL)
			continue;
		/* ReplaceItemViaPointer keeps the links, not the name. */
		raw->string = ch->string;
		ch->string = NULL;
		if (!cJSON_ReplaceItemViaPointer(c, ch, raw)) {
			ch->string = raw->string;
			raw->string = NULL;
			cJSON_Delete(raw);
			continue;
		}
		k++;
	}
	return k;
}

int
jsonu_mark_nul(const char *s, size_t n, cJSON *tree)
{
	if (!jsonu_has_nul(s, n))
		return 0;	/* the usual case: one scan */
	return mark_nul(s, n, tree);	/* 0 for a bare string */
}
