/* util.h: small helpers every part needs: clocks and whole-file I/O. */
#ifndef UTIL_H
#define UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "attrib.h"
#include "buf.h"

long long	util_unix_ms(void);	/* wall clock, ms since the epoch */
long long	util_mono_ms(void);	/* monotonic, ms */
/* FNV-1a of a NUL-terminated string (hash tables; not for secrets). */
uint32_t	util_hash_str(const char *s);

/*
 * Reads the whole file at path into b (appended; b->max bounds it).
 * 0, or -1 with err: the open/read error, or "larger than N bytes".
 */
int	util_read_file(const char *path, struct buf *b, char *err,
	    size_t errlen) WUNRES;

/*
 * Replaces path atomically: an O_EXCL temp file beside it, written,
 * fsync'd, renamed over path (and the directory fsync'd). 0 or -1 with err.
 */
int	util_write_file_atomic(const char *path, const void *data, size_t len,
	    mode_t mode, char *err, size_t errlen) WUNRES;

#endif
