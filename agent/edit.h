/*
 * edit.h: the pure text logic behind the file endpoints (no I/O), so it can
 * be unit-tested and fuzzed: cat -n style views with ranges, str_replace
 * with exactly-one-match semantics and helpful errors, insert after a line.
 * Lines are separated by '\n'; a final '\n' does not start a new line.
 */
#ifndef AGENT_EDIT_H
#define AGENT_EDIT_H

#include <stddef.h>
#include "attrib.h"
#include "buf.h"

#define EDIT_MAX_FILE		((size_t)16 * 1024 * 1024)
#define EDIT_SNIPPET_CONTEXT	4	/* lines shown around an edit */
#define EDIT_MAX_LINES_LISTED	20	/* match line numbers in an error */

/* Number of lines in p[0..n). */
size_t	edit_count_lines(const char *p, size_t n);
/* 1 when the content looks binary (NUL byte or invalid UTF-8). */
int	edit_is_binary(const char *p, size_t n);
/*
 * Numbered lines start..end (1-based, end -1 = last; start 0 with end 0 or
 * no range = whole file) appended to out. -1 with err for a bad range.
 */
int	edit_view(const char *p, size_t n, long long start, long long end,
	    struct buf *out, char *err, size_t errlen) WUNRES;
/*
 * Replaces the single occurrence of old in p. On success the new content
 * is in out and a numbered snippet around the edit in snippet. -1 with a
 * message in err for zero matches (with a hint), several (count and line
 * numbers), an empty old, or a result over EDIT_MAX_FILE.
 */
int	edit_str_replace(const char *p, size_t n, const char *old, size_t oldn,
	    const char *new_, size_t newn, struct buf *out, struct buf *snippet,
	    char *err, size_t errlen) WUNRES;
/* Inserts text after line `line` (0 = top). Same conventions. */
int	edit_insert(const char *p, size_t n, long long line, const char *text,
	    size_t tn, struct buf *out, struct buf *snippet, char *err,
	    size_t errlen) WUNRES;

#endif
