/* json.c: strict JSON reader and sanitising writer (see json.h). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "strnum.h"
#include "xmalloc.h"

struct jp {
	const unsigned char	*p;
	size_t			 n;
	size_t			 off;
	char			*err;
	size_t			 errlen;
	int			 failed;
};

static void
jp_fail(struct jp *j, const char *msg)
{
	if (j->failed)
		return;
	j->failed = 1;
	if (j->err != NULL && j->errlen > 0)
		snprintf(j->err, j->errlen, "offset %zu: %s", j->off, msg);
}

static void
jp_ws(struct jp *j)
{
	while (j->off < j->n) {
		unsigned char c = j->p[j->off];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		j->off++;
	}
}

/*
 * Length of the valid UTF-8 sequence at p[0..n), or 0 if invalid or
 * incomplete. *incomplete is set when the bytes so far are a valid prefix.
 */
static size_t
utf8_seq(const unsigned char *p, size_t n, int *incomplete)
{
	unsigned char c = p[0];
	size_t len, i;
	uint32_t cp;

	*incomplete = 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else
		return 0;
	for (i = 1; i < len; i++) {
		if (i >= n) {
			*incomplete = 1;
			return 0;
		}
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
		/* Reject overlongs and surrogates as early as possible. */
		if (i == 1 && len == 3 && c == 0xe0 && p[1] < 0xa0)
			return 0;
		if (i == 1 && len == 3 && c == 0xed && p[1] >= 0xa0)
			return 0;
		if (i == 1 && len == 4 && c == 0xf0 && p[1] < 0x90)
			return 0;
		if (i == 1 && len == 4 && c == 0xf4 && p[1] >= 0x90)
			return 0;
	}
	(void)cp;
	return len;
}

int
json_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, l;
	int inc;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if ((l = utf8_seq(p + i, n - i, &inc)) == 0)
			return 0;
		i += l;
	}
	return 1;
}

size_t
json_utf8_complete(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k, start;
	int inc;

	/* Look back at most 3 bytes for a lead byte of a cut sequence. */
	for (k = 1; k <= 3 && k <= n; k++) {
		start = n - k;
		if ((p[start] & 0xc0) == 0x80)
			continue;
		if (p[start] < 0x80)
			return n;
		if (utf8_seq(p + start, k, &inc) == 0 && inc)
			return start;
		return n;
	}
	return n;
}

static struct json *
jnew(enum json_type t)
{
	struct json *v = xcalloc(1, sizeof(*v));

	v->type = t;
	return v;
}

void
json_free(struct json *v)
{
	struct json *c, *nx;

	if (v == NULL)
		return;
	for (c = v->child; c != NULL; c = nx) {
		nx = c->next;
		json_free(c);
	}
	free(v->s);
	free(v->key);
	free(v);
}

static int
jp_hex4(struct jp *j, uint32_t *out)
{
	uint32_t v = 0;
	int i, h;

	if (j->n - j->off < 4) {
		jp_fail(j, "truncated \\u escape");
		return -1;
	}
	for (i = 0; i < 4; i++) {
		if ((h = strnum_hexdigit((unsigned char)j->p[j->off + (size_t)i])) < 0) {
			jp_fail(j, "bad hex digit in \\u escape");
			return -1;
		}
		v = (v << 4) | (uint32_t)h;
	}
	j->off += 4;
	*out = v;
	return 0;
}

static int
put_cp(struct buf *b, uint32_t cp)
{
	unsigned char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (unsigned char)(0xc0 | (cp >> 6));
		u[1] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (unsigned char)(0xe0 | (cp >> 12));
		u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (unsigned char)(0xf0 | (cp >> 18));
		u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return buf_add(b, u, n);
}

/* Parses a string at j->off (which is at '"'); result in *s, *slen. */
static int
jp_string(struct jp *j, char **s, size_t *slen)
{
	struct buf b;
	size_t start, l;
	uint32_t cp, lo;
	int inc;

	buf_init(&b, JSON_MAX_INPUT);
	j->off++;	/* opening quote */
	for (;;) {
		start = j->off;
		while (j->off < j->n) {
			unsigned char c = j->p[j->off];
			if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
				break;
			j->off++;
		}
		if (j->off > start && buf_add(&b, j->p + start, j->off - start) == -1)
			goto nomem;
		if (j->off >= j->n) {
			jp_fail(j, "unterminated string");
			goto bad;
		}
		unsigned char c = j->p[j->off];
		if (c == '"') {
			j->off++;
			break;
		}
		if (c < 0x20) {
			jp_fail(j, "control character in string");
			goto bad;
		}
		if (c >= 0x80) {
			if ((l = utf8_seq(j->p + j->off, j->n - j->off, &inc)) == 0) {
				jp_fail(j, "invalid UTF-8 in string");
				goto bad;
			}
			if (buf_add(&b, j->p + j->off, l) == -1)
				goto nomem;
			j->off += l;
			continue;
		}
		/* backslash */
		if (++j->off >= j->n) {
			jp_fail(j, "unterminated escape");
			goto bad;
		}
		c = j->p[j->off++];
		switch (c) {
		case '"': case '\\': case '/':
			if (buf_add(&b, &c, 1) == -1)
				goto nomem;
			break;
		case 'b': c = '\b'; goto one;
		case 'f': c = '\f'; goto one;
		case 'n': c = '\n'; goto one;
		case 'r': c = '\r'; goto one;
		case 't': c = '\t';
one:
			if (buf_add(&b, &c, 1) == -1)
				goto nomem;
			break;
		case 'u':
			if (jp_hex4(j, &cp) == -1)
				goto bad;
			if (cp >= 0xdc00 && cp <= 0xdfff) {
				jp_fail(j, "lone low surrogate");
				goto bad;
			}
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (j->n - j->off < 2 || j->p[j->off] != '\\' ||
				    j->p[j->off + 1] != 'u') {
					jp_fail(j, "lone high surrogate");
					goto bad;
				}
				j->off += 2;
				if (jp_hex4(j, &lo) == -1)
					goto bad;
				if (lo < 0xdc00 || lo > 0xdfff) {
					jp_fail(j, "bad surrogate pair");
					goto bad;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			if (put_cp(&b, cp) == -1)
				goto nomem;
			break;
		default:
			j->off--;
			jp_fail(j, "bad escape");
			goto bad;
		}
	}
	if (b.p == NULL && buf_add(&b, "", 0) == -1)
		goto nomem;
	*s = buf_steal(&b, slen);
	return 0;
nomem:
	jp_fail(j, "string too long");
bad:
	buf_free(&b);
	return -1;
}

static int
jp_number(struct jp *j, struct json *v)
{
	size_t start = j->off, len;
	char tmp[JSON_MAX_NUMLEN + 1], *end;
	int isint = 1;

	if (j->off < j->n && j->p[j->off] == '-')
		j->off++;
	if (j->off >= j->n) {
		jp_fail(j, "bad number");
		return -1;
	}
	if (j->p[j->off] == '0')
		j->off++;
	else if (j->p[j->off] >= '1' && j->p[j->off] <= '9') {
		while (j->off < j->n && j->p[j->off] >= '0' && j->p[j->off] <= '9')
			j->off++;
	} else {
		jp_fail(j, "bad number");
		return -1;
	}
	if (j->off < j->n && j->p[j->off] == '.') {
		isint = 0;
		j->off++;
		if (j->off >= j->n || j->p[j->off] < '0' || j->p[j->off] > '9') {
			jp_fail(j, "bad fraction");
			return -1;
		}
		while (j->off < j->n && j->p[j->off] >= '0' && j->p[j->off] <= '9')
			j->off++;
	}
	if (j->off < j->n && (j->p[j->off] == 'e' || j->p[j->off] == 'E')) {
		isint = 0;
		j->off++;
		if (j->off < j->n && (j->p[j->off] == '+' || j->p[j->off] == '-'))
			j->off++;
		if (j->off >= j->n || j->p[j->off] < '0' || j->p[j->off] > '9') {
			jp_fail(j, "bad exponent");
			return -1;
		}
		while (j->off < j->n && j->p[j->off] >= '0' && j->p[j->off] <= '9')
			j->off++;
	}
	len = j->off - start;
	if (len > JSON_MAX_NUMLEN) {
		jp_fail(j, "number too long");
		return -1;
	}
	memcpy(tmp, j->p + start, len);
	tmp[len] = '\0';
	errno = 0;
	v->num = strtod(tmp, &end);
	if (!isfinite(v->num)) {
		jp_fail(j, "number out of range");
		return -1;
	}
	if (isint) {
		errno = 0;
		v->i = strtoll(tmp, &end, 10);
		v->is_int = (errno == 0 && *end == '\0');
	}
	return 0;
}

static int
keycmp(const void *a, const void *b)
{
	const struct json *x = *(const struct json *const *)a;
	const struct json *y = *(const struct json *const *)b;
	size_t m = x->keylen < y->keylen ? x->keylen : y->keylen;
	int c = memcmp(x->key, y->key, m);

	if (c != 0)
		return c;
	return x->keylen < y->keylen ? -1 : x->keylen > y->keylen;
}

static int
dup_keys(struct json *obj)
{
	struct json **v, *c;
	size_t i = 0;
	int dup = 0;

	if (obj->n < 2)
		return 0;
	v = xreallocarray(NULL, obj->n, sizeof(struct json *));
	for (c = obj->child; c != NULL; c = c->next)
		v[i++] = c;
	qsort(v, obj->n, sizeof(struct json *), keycmp);
	for (i = 1; i < obj->n && !dup; i++)
		dup = keycmp(&v[i - 1], &v[i]) == 0;
	free(v);
	return dup;
}

static struct json *jp_value(struct jp *, int depth);

static int
jp_lit(struct jp *j, const char *lit)
{
	size_t l = strlen(lit);

	if (j->n - j->off < l || memcmp(j->p + j->off, lit, l) != 0) {
		jp_fail(j, "invalid literal");
		return -1;
	}
	j->off += l;
	return 0;
}

static struct json *
jp_container(struct jp *j, int depth, int isobj)
{
	struct json *v = jnew(isobj ? JSON_OBJ : JSON_ARR), *e, **tail;
	char *key = NULL;
	size_t keylen = 0;
	unsigned char close = isobj ? '}' : ']';

	tail = &v->child;
	j->off++;
	jp_ws(j);
	if (j->off < j->n && j->p[j->off] == close) {
		j->off++;
		return v;
	}
	for (;;) {
		jp_ws(j);
		if (isobj) {
			if (j->off >= j->n || j->p[j->off] != '"') {
				jp_fail(j, "expected member name");
				goto bad;
			}
			if (jp_string(j, &key, &keylen) == -1)
				goto bad;
			jp_ws(j);
			if (j->off >= j->n || j->p[j->off] != ':') {
				jp_fail(j, "expected ':'");
				goto bad;
			}
			j->off++;
		}
		if ((e = jp_value(j, depth + 1)) == NULL)
			goto bad;
		e->key = key;
		e->keylen = keylen;
		key = NULL;
		*tail = e;
		tail = &e->next;
		if (++v->n > JSON_MAX_MEMBERS) {
			jp_fail(j, "too many members");
			goto bad;
		}
		jp_ws(j);
		if (j->off >= j->n) {
			jp_fail(j, isobj ? "unterminated object" : "unterminated array");
			goto bad;
		}
		if (j->p[j->off] == ',') {
			j->off++;
			continue;
		}
		if (j->p[j->off] == close) {
			j->off++;
			break;
		}
		jp_fail(j, "expected ',' or closing bracket");
		goto bad;
	}
	if (isobj && dup_keys(v)) {
		jp_fail(j, "duplicate member name");
		goto bad;
	}
	return v;
bad:
	free(key);
	json_free(v);
	return NULL;
}

static struct json *
jp_value(struct jp *j, int depth)
{
	struct json *v;

	if (depth > JSON_MAX_DEPTH) {
		jp_fail(j, "nested too deeply");
		return NULL;
	}
	jp_ws(j);
	if (j->off >= j->n) {
		jp_fail(j, "unexpected end of input");
		return NULL;
	}
	switch (j->p[j->off]) {
	case '{':
		return jp_container(j, depth, 1);
	case '[':
		return jp_container(j, depth, 0);
	case '"':
		v = jnew(JSON_STR);
		if (jp_string(j, &v->s, &v->slen) == -1) {
			json_free(v);
			return NULL;
		}
		return v;
	case 't':
	case 'f':
		v = jnew(JSON_BOOL);
		v->b = j->p[j->off] == 't';
		if (jp_lit(j, v->b ? "true" : "false") == -1) {
			json_free(v);
			return NULL;
		}
		return v;
	case 'n':
		v = jnew(JSON_NULL);
		if (jp_lit(j, "null") == -1) {
			json_free(v);
			return NULL;
		}
		return v;
	default:
		v = jnew(JSON_NUM);
		if (jp_number(j, v) == -1) {
			json_free(v);
			return NULL;
		}
		return v;
	}
}

struct json *
json_parse(const char *p, size_t n, char *err, size_t errlen)
{
	struct jp j = { (const unsigned char *)p, n, 0, err, errlen, 0 };
	struct json *v;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (n > JSON_MAX_INPUT) {
		jp_fail(&j, "input too large");
		return NULL;
	}
	if ((v = jp_value(&j, 0)) == NULL)
		return NULL;
	jp_ws(&j);
	if (j.off != n) {
		jp_fail(&j, "trailing data after value");
		json_free(v);
		return NULL;
	}
	return v;
}

const struct json *
json_get(const struct json *obj, const char *key)
{
	const struct json *c;
	size_t l = strlen(key);

	if (obj == NULL || obj->type != JSON_OBJ)
		return NULL;
	for (c = obj->child; c != NULL; c = c->next)
		if (c->keylen == l && memcmp(c->key, key, l) == 0)
			return c;
	return NULL;
}

int
json_get_str(const struct json *obj, const char *key, const char **s,
    size_t *len)
{
	const struct json *v = json_get(obj, key);

	if (v == NULL || v->type == JSON_NULL)
		return 1;
	if (v->type != JSON_STR)
		return -1;
	*s = v->s;
	if (len != NULL)
		*len = v->slen;
	return 0;
}

int
json_get_int(const struct json *obj, const char *key, long long *out)
{
	const struct json *v = json_get(obj, key);

	if (v == NULL || v->type == JSON_NULL)
		return 1;
	if (v->type != JSON_NUM)
		return -1;
	if (v->is_int) {
		*out = v->i;
		return 0;
	}
	/* 1e3, 1000.0 (as some encoders print integers) are integers too. */
	if (v->num == floor(v->num) && fabs(v->num) <= 9007199254740992.0) {
		*out = (long long)v->num;
		return 0;
	}
	return -1;
}

int
json_get_bool(const struct json *obj, const char *key, int *out)
{
	const struct json *v = json_get(obj, key);

	if (v == NULL || v->type == JSON_NULL)
		return 1;
	if (v->type != JSON_BOOL)
		return -1;
	*out = v->b;
	return 0;
}

/* Writer. */

int
json_put_str(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, start, l;
	char esc[8];
	int inc;

	if (buf_add(b, "\"", 1) == -1)
		return -1;
	while (i < n) {
		start = i;
		while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' &&
		    p[i] != '\\')
			i++;
		if (i > start && buf_add(b, p + start, i - start) == -1)
			return -1;
		if (i >= n)
			break;
		unsigned char c = p[i];
		if (c >= 0x80) {
			if ((l = utf8_seq(p + i, n - i, &inc)) == 0) {
				if (buf_add(b, "\xef\xbf\xbd", 3) == -1)
					return -1;
				i++;
				continue;
			}
			if (buf_add(b, p + i, l) == -1)
				return -1;
			i += l;
			continue;
		}
		esc[0] = '\\';
		switch (c) {
		case '"': esc[1] = '"'; l = 2; break;
		case '\\': esc[1] = '\\'; l = 2; break;
		case '\n': esc[1] = 'n'; l = 2; break;
		case '\r': esc[1] = 'r'; l = 2; break;
		case '\t': esc[1] = 't'; l = 2; break;
		case '\b': esc[1] = 'b'; l = 2; break;
		case '\f': esc[1] = 'f'; l = 2; break;
		default:
			esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
			esc[4] = hex[c >> 4]; esc[5] = hex[c & 15];
			l = 6;
		}
		if (buf_add(b, esc, l) == -1)
			return -1;
		i++;
	}
	return buf_add(b, "\"", 1);
}

void
jw_init(struct jw *w, struct buf *b)
{
	memset(w, 0, sizeof(*w));
	w->b = b;
}

/* Separator before a value or key. */
static void
jw_sep(struct jw *w)
{
	if (w->after_key) {
		w->after_key = 0;
		return;
	}
	if (w->depth > 0 && w->has[w->depth - 1]) {
		if (buf_add(w->b, ",", 1) == -1)
			w->err = 1;
	}
	if (w->depth > 0)
		w->has[w->depth - 1] = 1;
}

static void
jw_raw(struct jw *w, const char *s)
{
	if (!w->err && buf_addstr(w->b, s) == -1)
		w->err = 1;
}

static void
jw_open(struct jw *w, const char *s)
{
	if (w->err)
		return;
	jw_sep(w);
	if (w->depth >= JW_MAX_DEPTH) {
		w->err = 1;
		return;
	}
	jw_raw(w, s);
	w->has[w->depth++] = 0;
}

static void
jw_close(struct jw *w, const char *s)
{
	if (w->err || w->depth == 0) {
		w->err = 1;
		return;
	}
	w->depth--;
	jw_raw(w, s);
}

void jw_obj(struct jw *w) { jw_open(w, "{"); }
void jw_obj_end(struct jw *w) { jw_close(w, "}"); }
void jw_arr(struct jw *w) { jw_open(w, "["); }
void jw_arr_end(struct jw *w) { jw_close(w, "]"); }

void
jw_key(struct jw *w, const char *k)
{
	if (w->err)
		return;
	jw_sep(w);
	if (json_put_str(w->b, k, strlen(k)) == -1 || buf_add(w->b, ":", 1) == -1)
		w->err = 1;
	w->after_key = 1;
}

void
jw_str(struct jw *w, const char *s, size_t n)
{
	if (w->err)
		return;
	jw_sep(w);
	if (json_put_str(w->b, s, n) == -1)
		w->err = 1;
}

void
jw_cstr(struct jw *w, const char *s)
{
	jw_str(w, s, strlen(s));
}

void
jw_int(struct jw *w, long long v)
{
	if (w->err)
		return;
	jw_sep(w);
	if (buf_addf(w->b, "%lld", v) == -1)
		w->err = 1;
}

void
jw_bool(struct jw *w, int v)
{
	if (w->err)
		return;
	jw_sep(w);
	jw_raw(w, v ? "true" : "false");
}

void
jw_null(struct jw *w)
{
	if (w->err)
		return;
	jw_sep(w);
	jw_raw(w, "null");
}

int
jw_finish(struct jw *w)
{
	return (w->err || w->depth != 0) ? -1 : 0;
}
