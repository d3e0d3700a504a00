/* edit.c: view / str_replace / insert on in-memory text (see edit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edit.h"
#include "json.h"
#include "xmalloc.h"

size_t
edit_count_lines(const char *p, size_t n)
{
	size_t lines = 0, i;

	for (i = 0; i < n; i++)
		if (p[i] == '\n')
			lines++;
	if (n > 0 && p[n - 1] != '\n')
		lines++;
	return lines;
}

int
edit_is_binary(const char *p, size_t n)
{
	if (memchr(p, '\0', n) != NULL)
		return 1;
	return !json_utf8_valid(p, n);
}

/* Byte offset of the start of line `line` (1-based); n if past the end. */
static size_t
line_offset(const char *p, size_t n, size_t line)
{
	size_t cur = 1, i = 0;
	const char *nl;

	while (cur < line && i < n) {
		nl = memchr(p + i, '\n', n - i);
		if (nl == NULL)
			return n;
		i = (size_t)(nl - p) + 1;
		cur++;
	}
	return cur == line ? i : n;
}

/* 1-based line number of byte offset off. */
static size_t
line_of(const char *p, size_t off)
{
	size_t i, line = 1;

	for (i = 0; i < off; i++)
		if (p[i] == '\n')
			line++;
	return line;
}

/* Appends lines [from, to] (1-based, inclusive, clamped) numbered. */
static int
put_lines(const char *p, size_t n, size_t from, size_t to, struct buf *out)
{
	size_t off, line, len;
	const char *nl;

	if (from < 1)
		from = 1;
	off = line_offset(p, n, from);
	for (line = from; line <= to && off < n; line++) {
		nl = memchr(p + off, '\n', n - off);
		len = nl ? (size_t)(nl - (p + off)) : n - off;
		if (buf_addf(out, "%6zu\t", line) == -1 ||
		    buf_add(out, p + off, len) == -1 || buf_add(out, "\n", 1) == -1)
			return -1;
		off += len + (nl ? 1 : 0);
	}
	return 0;
}

int
edit_view(const char *p, size_t n, long long start, long long end,
    struct buf *out, char *err, size_t errlen)
{
	size_t lines = edit_count_lines(p, n);

	if (start == 0 && end == 0) {
		start = 1;
		end = (long long)lines;
	} else {
		if (start < 1 || (size_t)start > lines) {
			snprintf(err, errlen, "invalid view_range [%lld, %lld]: start "
			    "must be between 1 and %zu (the number of lines)", start,
			    end, lines);
			return -1;
		}
		if (end == -1)
			end = (long long)lines;
		if (end < start || (size_t)end > lines) {
			snprintf(err, errlen, "invalid view_range [%lld, %lld]: end "
			    "must be -1 or between %lld and %zu", start, end, start,
			    lines);
			return -1;
		}
	}
	if (put_lines(p, n, (size_t)start, (size_t)end, out) == -1) {
		snprintf(err, errlen, "view too large; use view_range");
		return -1;
	}
	return 0;
}

/* Snippet of the result around bytes [off, off+len). */
static int
snippet_around(const char *p, size_t n, size_t off, size_t len,
    struct buf *snippet)
{
	size_t l0 = line_of(p, off), l1 = line_of(p, off + len);

	if (len > 0 && off + len <= n && p[off + len - 1] == '\n' && l1 > l0)
		l1--;
	return put_lines(p, n, l0 > EDIT_SNIPPET_CONTEXT ? l0 - EDIT_SNIPPET_CONTEXT : 1,
	    l1 + EDIT_SNIPPET_CONTEXT, snippet);
}

/* Copies s without whitespace into dst (sized n); returns the length. */
static size_t
squeeze(const char *s, size_t n, char *dst)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			dst[o++] = s[i];
	return o;
}

int
edit_str_replace(const char *p, size_t n, const char *old, size_t oldn,
    const char *new_, size_t newn, struct buf *out, struct buf *snippet,
    char *err, size_t errlen)
{
	const char *m, *first = NULL;
	size_t count = 0, off = 0, lines[EDIT_MAX_LINES_LISTED], nl = 0, i;
	size_t last_line = 0, line = 1, scanned = 0;
	int o, more = 0;

	if (oldn == 0) {
		snprintf(err, errlen, "old_str must not be empty (to add text use "
		    "insert, or create to write a whole file)");
		return -1;
	}
	while (off < n && (m = memmem(p + off, n - off, old, oldn)) != NULL) {
		if (first == NULL)
			first = m;
		count++;
		/* Line numbers of the matches (incremental count). */
		for (i = scanned; i < (size_t)(m - p); i++)
			if (p[i] == '\n')
				line++;
		scanned = (size_t)(m - p);
		if (line != last_line) {
			if (nl < EDIT_MAX_LINES_LISTED)
				lines[nl++] = line;
			else
				more = 1;
		}
		last_line = line;
		off = (size_t)(m - p) + oldn;	/* non-overlapping, like str.count */
	}
	if (count == 0) {
		/* Hint: does it match once whitespace is ignored? */
		char *a, *b;
		size_t an, bn;
		int ws = 0, crlf = 0;

		if (n <= EDIT_MAX_FILE) {
			a = xmalloc(n + 1);
			b = xmalloc(oldn + 1);
			an = squeeze(p, n, a);
			bn = squeeze(old, oldn, b);
			ws = bn > 0 && memmem(a, an, b, bn) != NULL;
			free(a);
			free(b);
		}
		crlf = memmem(old, oldn, "\r\n", 2) != NULL && memmem(p, n, "\r\n", 2) == NULL;
		snprintf(err, errlen, "old_str was not found in the file (0 "
		    "matches). It must match exactly, including whitespace, "
		    "indentation and line breaks.%s%s View the file to copy the "
		    "exact text.",
		    ws ? " A match exists if whitespace is ignored: check "
		    "indentation (tabs vs spaces), trailing spaces and blank lines." : "",
		    crlf ? " old_str has CRLF line endings but the file uses LF." : "");
		return -1;
	}
	if (count > 1) {
		o = snprintf(err, errlen, "old_str occurs %zu times (lines", count);
		for (i = 0; i < nl && o > 0 && (size_t)o < errlen; i++)
			o += snprintf(err + o, errlen - (size_t)o, "%s %zu",
			    i ? "," : "", lines[i]);
		if (o > 0 && (size_t)o < errlen)
			snprintf(err + o, errlen - (size_t)o, "%s); it must occur exactly "
			    "once: include more surrounding lines to make it unique",
			    more ? ", ..." : "");
		return -1;
	}
	off = (size_t)(first - p);
	if (n - oldn + newn > EDIT_MAX_FILE) {
		snprintf(err, errlen, "the result would exceed %zu bytes", EDIT_MAX_FILE);
		return -1;
	}
	if (buf_add(out, p, off) == -1 || buf_add(out, new_, newn) == -1 ||
	    buf_add(out, p + off + oldn, n - off - oldn) == -1) {
		snprintf(err, errlen, "the result is too large");
		return -1;
	}
	if (snippet != NULL && out->p != NULL &&
	    snippet_around(out->p, out->len, off, newn, snippet) == -1)
		buf_reset(snippet);
	return 0;
}

int
edit_insert(const char *p, size_t n, long long line, const char *text,
    size_t tn, struct buf *out, struct buf *snippet, char *err, size_t errlen)
{
	size_t lines = edit_count_lines(p, n), off, start;
	int add_nl_before = 0, add_nl_after;

	if (line < 0 || (size_t)line > lines) {
		snprintf(err, errlen, "invalid insert_line %lld: it must be between 0 "
		    "(top of the file) and %zu (the number of lines)", line, lines);
		return -1;
	}
	off = line == 0 ? 0 : line_offset(p, n, (size_t)line + 1);
	if (line > 0 && (size_t)line == lines && n > 0 && p[n - 1] != '\n')
		add_nl_before = 1;
	add_nl_after = tn == 0 || text[tn - 1] != '\n';
	if (n + tn + 2 > EDIT_MAX_FILE) {
		snprintf(err, errlen, "the result would exceed %zu bytes", EDIT_MAX_FILE);
		return -1;
	}
	if (buf_add(out, p, off) == -1 ||
	    (add_nl_before && buf_add(out, "\n", 1) == -1))
		goto big;
	start = out->len;
	if (buf_add(out, text, tn) == -1 ||
	    (add_nl_after && buf_add(out, "\n", 1) == -1) ||
	    buf_add(out, p + off, n - off) == -1)
		goto big;
	if (snippet != NULL && out->p != NULL &&
	    snippet_around(out->p, out->len, start, tn + (size_t)add_nl_after,
	    snippet) == -1)
		buf_reset(snippet);
	return 0;
big:
	snprintf(err, errlen, "the result is too large");
	return -1;
}
