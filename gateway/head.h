/*
 * head.h: what the gateway adds to the head store every daemon shares
 * (common/h1head.h: llhttp's strict read, the rules of common/h1.h, fields
 * found, removed, added and written, hop-by-hop stripping, the body's
 * parser): its request targets (origin form only, 414 beyond a limit),
 * no CONNECT, and the forwarding headers a client must not send. No I/O:
 * unit-tested and fuzzed (tests/fuzz/fuzz_gw_http.c).
 */
#ifndef GW_HEAD_H
#define GW_HEAD_H

#include <stddef.h>

#include "attrib.h"
#include "h1head.h"

/*
 * Parses a complete head (from h1_head_end, common/h1.h; type HTTP_REQUEST
 * or HTTP_RESPONSE) into r, zeroed or h1head_init'ed (a zeroed one gets
 * room for the head and 1024 bytes of added fields). 0 or the status to
 * answer: h1head_parse's (400, 431, 501, 505), then 400 a request target
 * not in origin form or CONNECT, 414 a target longer than maxtarget; err
 * says why. For a response, set skip_body before (HEAD request).
 */
int	gwhead_parse(struct h1head *r, int type, const char *head, size_t len,
	    size_t maxh, size_t maxtarget, char *err, size_t errlen) WUNRES;

/*
 * Marks deleted every header a client could use to tell the app its address,
 * scheme, host or URL (Forwarded, X-Forwarded-*, X-Real-IP, X-Client-IP and
 * the like, '_' spellings included); returns how many.
 */
int	gwhead_strip_forwarding(struct h1head *);

#endif
