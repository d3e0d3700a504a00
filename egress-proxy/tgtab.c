/*
 * tgtab.c: interned targets (see tgtab.h): a chained hash table on
 * "host:port", grown by doubling (load factor <= 1), each entry counted;
 * the last tgtab_put unlinks and frees it. One worker thread per table.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tgtab.h"
#include "util.h"
#include "xmalloc.h"

/*
 * A canonical target shared by the worker's connections to it: a struct
 * target is 788 bytes of fixed buffers, and thousands of connections to
 * the same host would each carry a copy.
 */
struct tgtref {
	struct tgtref		*next;
	unsigned		 refs;
	uint32_t		 hash;
	struct target		 t;
};

struct tgtab {
	struct tgtref		**tab;
	size_t			 cap, n;
};

struct tgtab *
tgtab_new(void)
{
	return xcalloc(1, sizeof(struct tgtab));
}

static struct tgtref *
tgt_ref(const struct target *t)
{
	return (struct tgtref *)(void *)((char *)(uintptr_t)t - offsetof(struct tgtref, t));
}

void
tgtab_put(struct tgtab *tt, const struct target *t)
{
	struct tgtref *r, **pp;

	r = tgt_ref(t);
	if (--r->refs > 0)
		return;
	for (pp = &tt->tab[r->hash & (tt->cap - 1)]; *pp != r; pp = &(*pp)->next)
		;
	*pp = r->next;
	tt->n--;
	free(r);
}

const struct target *
tgtab_get(struct tgtab *tt, const struct target *t)
{
	struct tgtref *r, **tab;
	uint32_t h = util_hash_str(t->hostport);
	size_t i, cap;

	if (tt->n >= tt->cap) {		/* grow: load factor <= 1 */
		cap = tt->cap != 0 ? tt->cap * 2 : 64;
		tab = xcalloc(cap, sizeof(*tab));
		for (i = 0; i < tt->cap; i++) {
			while ((r = tt->tab[i]) != NULL) {
				tt->tab[i] = r->next;
				r->next = tab[r->hash & (cap - 1)];
				tab[r->hash & (cap - 1)] = r;
			}
		}
		free(tt->tab);
		tt->tab = tab;
		tt->cap = cap;
	}
	for (r = tt->tab[h & (tt->cap - 1)]; r != NULL; r = r->next)
		if (r->hash == h && strcmp(r->t.hostport, t->hostport) == 0)
			break;
	if (r == NULL) {
		r = xmalloc(sizeof(*r));
		r->t = *t;
		r->refs = 0;
		r->hash = h;
		r->next = tt->tab[h & (tt->cap - 1)];
		tt->tab[h & (tt->cap - 1)] = r;
		tt->n++;
	}
	r->refs++;
	return &r->t;
}
