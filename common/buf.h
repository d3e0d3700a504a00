/*
 * buf.h: a growable byte buffer with a hard maximum. Peer-sized data goes
 * through it; appending past max fails with -1 and leaves the buffer as it
 * was. The contents are always NUL-terminated (not counted in len).
 */
#ifndef BUF_H
#define BUF_H

#include <stddef.h>
#include "attrib.h"

struct buf {
	char	*p;	/* contents, NUL-terminated; NULL until first append */
	size_t	 len;	/* bytes used */
	size_t	 cap;	/* bytes allocated */
	size_t	 max;	/* hard limit on len */
};

void	buf_init(struct buf *, size_t max);
void	buf_free(struct buf *);		/* back to empty; keeps max */
void	buf_reset(struct buf *);	/* len = 0, keeps memory */
int	buf_add(struct buf *, const void *, size_t) WUNRES;
int	buf_addstr(struct buf *, const char *) WUNRES;
int	buf_addf(struct buf *, const char *, ...) PRINTF(2, 3) WUNRES;
void	buf_consume(struct buf *, size_t n);	/* drop n bytes from the front */
char	*buf_steal(struct buf *, size_t *lenp);	/* caller frees; buf emptied */

#endif
