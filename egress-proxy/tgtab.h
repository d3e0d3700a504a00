/*
 * tgtab.h: a worker's interned canonical targets (tgtab.c). A struct
 * target is 788 bytes of fixed buffers, and thousands of connections to
 * the same host would each carry a copy: each connection points at the
 * table's one copy instead, counted. A table belongs to one worker
 * thread (no locking) and lives as long as it.
 */
#ifndef PROXY_TGTAB_H
#define PROXY_TGTAB_H

#include "canon.h"

struct tgtab;

struct tgtab	*tgtab_new(void);
/*
 * The table's copy of t (the same "host:port"), made if there is none,
 * with one more reference. Never NULL; valid until that reference is put.
 */
const struct target *tgtab_get(struct tgtab *, const struct target *t);
/* Puts a reference from tgtab_get; the last one frees the copy. */
void	tgtab_put(struct tgtab *, const struct target *t);

#endif
