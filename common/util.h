/* util.h: small helpers every part needs: clocks and whole-file I/O. */
#ifndef UTIL_H
#define UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "attrib.h"
#include "buf.h"

/* The project's one set of clocks; nothing else calls clock_gettime. */
long long	util_unix_ms(void);	/* wall clock, ms since the epoch */
/* ms (since the epoch) as ISO 8601 in UTC with milliseconds,
 * "2026-12-06T09:05:51.123Z" (24 characters; len at least 25). */
void		util_iso_ms(char *out, size_t len, long long ms);
long long	util_mono_ms(void);	/* monotonic, ms */
long long	util_mono_us(void);	/* monotonic, us (latency figures) */
/* Monotonic ms at the kernel tick's resolution (a few ms): for hot paths
 * that stamp every event, where a vDSO fine clock read would show up. */
long long	util_mono_coarse_ms(void);
/* Wall-clock deadline ms from now, for pthread_cond_timedwait. */
struct timespec;
void		util_deadline(struct timespec *ts, long long ms);
/* FNV-1a of a NUL-terminated string (hash tables; not for secrets). */
uint32_t	util_hash_str(const char *s);

/*
 * Reads the whole file at path into b (appended; b->max bounds it).
 * 0, or -1 with err: the open/read error, or "larger than N bytes".
 */
int	util_read_file(const char *path, struct buf *b, char *err,
	    size_t errlen) WUNRES;
/*
 * Reads fd from where it is to its end into b (appended; b->max bounds it),
 * for a caller that opens the file itself (other open flags, an fstat
 * check first); the fd stays open. 0, or -1 with errno: EFBIG when the
 * data would pass b->max, else read's error (b then holds a prefix).
 */
int	util_read_fd(int fd, struct buf *b) WUNRES;
/*
 * util_read_file with extra open(2) flags: O_NOFOLLOW refuses a symlink
 * as the last component (a file in a tree someone else may plant links
 * in). The same messages.
 */
int	util_read_file_flags(const char *path, int oflags, struct buf *b,
	    char *err, size_t errlen) WUNRES;

/*
 * Replaces path atomically: an O_EXCL temp file beside it, written,
 * fsync'd, renamed over path (and the directory fsync'd). 0 or -1 with err.
 */
int	util_write_file_atomic(const char *path, const void *data, size_t len,
	    mode_t mode, char *err, size_t errlen) WUNRES;
/*
 * The same without the fsyncs: atomic against a crash of the process
 * (readers see the old file or the new one, never a torn one), not of the
 * machine. For hot paths where an fsync (5-15 ms under load) costs more
 * than what it guards: state that is rebuilt after a reboot anyway.
 */
int	util_write_file_replace(const char *path, const void *data, size_t len,
	    mode_t mode, char *err, size_t errlen) WUNRES;

/*
 * Finds the '=' of "k=v" in s[0..n): the key length goes to *klen and the
 * value (s + *klen + 1) is returned; NULL if there is no '=' or the key is
 * empty. s need not be NUL-terminated; nothing is copied.
 */
const char	*util_kv_find(const char *s, size_t n, size_t *klen);
/*
 * Splits the NUL-terminated "k=v" in place at its first '=': *k and *v point
 * into s. -1 (s untouched) if there is no '=' or the key is empty.
 */
int	util_kv_split(char *s, char **k, char **v) WUNRES;

#endif
