/*
 * jsonu.h: small JSON and text helpers shared by the MCP and REST code.
 *
 * cJSON strings end at their first NUL (a "\u0000" escape decodes to a
 * byte that strlen stops at), and cJSON keeps every number as a double.
 * Where that would silently change what a peer sent, the text the tree was
 * parsed from is read beside the tree (jsonu_iter): cJSON keeps every
 * member of an object, duplicates included, in text order, so the k-th
 * child is the k-th member of the text.
 */
#ifndef JSONU_H
#define JSONU_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "attrib.h"

/* U+2400 (SYMBOL FOR NULL) in UTF-8: how a NUL byte of a sandbox's
 * output is shown (U+FFFD stands for each byte that is not UTF-8). */
#define JSONU_NUL_SYMBOL	"\xe2\x90\x80"

/* 1 if s[0..n) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
int	jsonu_utf8_valid(const char *s, size_t n);
/* A NUL-terminated copy of s[0..n) with invalid sequences replaced by
 * U+FFFD (one per byte) and NUL bytes by U+2400. Caller frees. */
char	*jsonu_utf8_clean(const char *s, size_t n) MALLOC;
/* Constant-time comparison of the whole of a and b (lengths may differ). */
int	jsonu_ct_equal(const char *a, size_t alen, const char *b, size_t blen);

/*
 * The members of an object (or the items of an array) that cJSON parsed
 * from text, each with its own text. Both the tree and the text stay the
 * caller's; a child may be replaced (cJSON_ReplaceItemViaPointer) once
 * jsonu_iter_next has returned it.
 */
struct jsonu_iter {
	const char	*p, *end;	/* the text not read yet */
	cJSON		*next;		/* the child the text at p holds */
	int		 obj;		/* an object: members have names */
	int		 first;		/* no member read yet */
	int		 done;
};
/* s[0..n): the container's text (leading blanks allowed). 0 or -1. */
int	jsonu_iter_init(struct jsonu_iter *, const char *s, size_t n,
	    cJSON *container) WUNRES;
/*
 * The next child, its name's text (quotes included; objects only, else
 * NULL/0) and its value's text. 1, 0 at the end, -1 when the text is not
 * the tree's.
 */
int	jsonu_iter_next(struct jsonu_iter *, cJSON **child, const char **name,
	    size_t *namelen, const char **val, size_t *vallen) WUNRES;
/* Does the JSON text s[0..n) hold a string with a NUL ("\u0000")? */
int	jsonu_has_nul(const char *s, size_t n);
/*
 * Replaces each string of tree (parsed from s[0..n)) that cJSON cut at a
 * NUL with a cJSON_Raw holding the string's JSON text, quotes and escapes
 * as sent: not a string to any cJSON_IsString check, so no reader sees the
 * cut string, and echoed byte for byte. A member whose name holds a NUL
 * gets a Raw value the same way. Returns how many were replaced.
 */
int	jsonu_mark_nul(const char *s, size_t n, cJSON *tree);
/*
 * Rewrites, in place, every "\u0000" escape inside the strings of the JSON
 * text s[0..n) to "\u2400" (same length): a NUL byte then reads as U+2400
 * after parsing instead of ending the string. Returns how many.
 */
size_t	jsonu_nul_to_symbol(char *s, size_t n);

#endif
