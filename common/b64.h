/*
 * b64.h: base64 (RFC 4648, the standard alphabet), encoded padded and
 * decoded strictly: no whitespace or other characters, '=' only at the
 * end, the unused bits of the last character zero (canonical). Used by the
 * agent (exec output, stdin) and the orchestrator (the file tools).
 */
#ifndef COMMON_B64_H
#define COMMON_B64_H

#include <stddef.h>

/* Bytes b64_encode writes for n bytes of input (no NUL). */
#define B64_ENC_LEN(n)	(((n) + 2) / 3 * 4)

/* Writes the padded base64 of in[0..n) to out (B64_ENC_LEN(n) bytes, no
 * NUL); returns that length. */
size_t	b64_encode(const void *in, size_t n, char *out);
/*
 * Decodes s[0..n) into out (room for n / 4 * 3 + 2 bytes). padded: the
 * padding is required (n a multiple of 4); else it may be left out.
 * Returns the decoded length, or -1 with *why (a phrase) and *at (the
 * offending character's index; n when it is the length).
 */
long	b64_decode(const char *s, size_t n, unsigned char *out, int padded,
	    const char **why, size_t *at);

#endif
