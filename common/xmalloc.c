/* xmalloc.c: allocation helpers; out of memory is fatal (not peer input). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xmalloc.h"

void *
xmalloc(size_t n)
{
	void *p;

	if (n == 0)
		n = 1;
	if ((p = malloc(n)) == NULL)
		fatalx("xmalloc: out of memory (%zu bytes)", n);
	return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
	void *p;

	if (nmemb == 0 || size == 0)
		nmemb = size = 1;
	if ((p = calloc(nmemb, size)) == NULL)
		fatalx("xcalloc: out of memory (%zu x %zu)", nmemb, size);
	return p;
}

void *
xreallocarray(void *ptr, size_t nmemb, size_t size)
{
	void *p;

	if (size != 0 && nmemb > SIZE_MAX / size)
		fatalx("xreallocarray: %zu x %zu overflows", nmemb, size);
	if (nmemb * size == 0)
		nmemb = size = 1;
	if ((p = realloc(ptr, nmemb * size)) == NULL)
		fatalx("xreallocarray: out of memory");
	return p;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char *p;
	size_t len = strnlen(s, n);

	p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n == -1)
		fatalx("xasprintf: out of memory");
	return n;
}
