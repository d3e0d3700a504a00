/* buf.c: bounded growable buffer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "xmalloc.h"

void
buf_init(struct buf *b, size_t max)
{
	b->p = NULL;
	b->len = b->cap = 0;
	b->max = max;
}

void
buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->p != NULL)
		b->p[0] = '\0';
}

static int
buf_grow(struct buf *b, size_t need)
{
	size_t ncap;

	if (need > b->max || need + 1 < need)
		return -1;
	if (need + 1 <= b->cap)
		return 0;
	ncap = b->cap < 64 ? 64 : b->cap;
	while (ncap < need + 1)
		ncap *= 2;
	if (ncap > b->max + 1)
		ncap = b->max + 1;
	b->p = xreallocarray(b->p, 1, ncap);
	b->cap = ncap;
	return 0;
}

int
buf_add(struct buf *b, const void *data, size_t n)
{
	if (n > b->max - b->len || buf_grow(b, b->len + n) == -1)
		return -1;
	if (n > 0)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int
buf_addstr(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int
buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n > b->max - b->len ||
	    buf_grow(b, b->len + (size_t)n) == -1)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void
buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
	b->p[b->len] = '\0';
}

char *
buf_steal(struct buf *b, size_t *lenp)
{
	char *p = b->p;

	if (p == NULL)
		p = xstrdup("");
	if (lenp != NULL)
		*lenp = b->len;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}
