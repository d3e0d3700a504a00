/*
 * pglob.c: policy globs (see pglob.h). The pattern becomes a list of
 * items (a literal byte, `?`, `*` or `**`); state i means "items before i
 * matched". A set of live states advances one subject byte at a time; a
 * star item keeps its state live on a matching byte and lets the next
 * state be live without consuming one. Each byte costs at most one pass
 * over the items.
 */
#include <string.h>

#include "pglob.h"

enum { GI_LIT, GI_ONE, GI_STAR, GI_DSTAR };

struct gitem {
	unsigned char	 kind;
	unsigned char	 c;	/* GI_LIT: the byte (lowered when ci) */
};

static unsigned char
low(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* Makes every state reachable from a live star state without a byte live too. */
static void
close_eps(const struct gitem *it, size_t k, unsigned char *st)
{
	size_t i;

	for (i = 0; i < k; i++)
		if (st[i] && (it[i].kind == GI_STAR || it[i].kind == GI_DSTAR))
			st[i + 1] = 1;
}

int
pglob_match(const char *p, size_t pn, const char *s, size_t n, int ci)
{
	struct gitem it[PGLOB_PATTERN_MAX];
	unsigned char a[PGLOB_PATTERN_MAX + 1], b[PGLOB_PATTERN_MAX + 1];
	unsigned char *cur = a, *nxt = b, *t;
	size_t i, j, k = 0;
	unsigned char c;
	int any;

	if (pn > PGLOB_PATTERN_MAX)
		return 0;
	for (i = 0; i < pn; i++) {
		if (p[i] == '*') {
			it[k].kind = GI_STAR;
			while (i + 1 < pn && p[i + 1] == '*') {
				it[k].kind = GI_DSTAR;	/* a run of two or more */
				i++;
			}
		} else if (p[i] == '?')
			it[k].kind = GI_ONE;
		else {
			it[k].kind = GI_LIT;
			it[k].c = ci ? low((unsigned char)p[i]) : (unsigned char)p[i];
		}
		k++;
	}
	memset(cur, 0, k + 1);
	cur[0] = 1;
	close_eps(it, k, cur);
	for (j = 0; j < n; j++) {
		c = ci ? low((unsigned char)s[j]) : (unsigned char)s[j];
		memset(nxt, 0, k + 1);
		any = 0;
		for (i = 0; i < k; i++) {
			if (!cur[i])
				continue;
			switch (it[i].kind) {
			case GI_LIT:
				if (c == it[i].c)
					nxt[i + 1] = any = 1;
				break;
			case GI_ONE:
				if (c != '/')
					nxt[i + 1] = any = 1;
				break;
			case GI_STAR:
				if (c != '/')
					nxt[i] = any = 1;
				break;
			default:	/* GI_DSTAR */
				nxt[i] = any = 1;
				break;
			}
		}
		if (!any)
			return 0;
		close_eps(it, k, nxt);
		t = cur;
		cur = nxt;
		nxt = t;
	}
	return cur[k];
}
