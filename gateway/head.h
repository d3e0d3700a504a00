/*
 * head.h: one HTTP/1.x request or response head as the gateway sees it:
 * framed strictly by the rules every daemon shares (common/h1.h), parsed by
 * llhttp in one pass over the complete head, headers edited in place
 * (marked deleted, added) and written back out. No I/O: unit-tested and
 * fuzzed (tests/fuzz/fuzz_gw_http.c).
 */
#ifndef GW_HEAD_H
#define GW_HEAD_H

#include <stddef.h>
#include <stdint.h>
#include <llhttp.h>

#include "attrib.h"
#include "buf.h"

struct gwh {
	uint32_t	 no, nl;	/* name offset/length in data */
	uint32_t	 vo, vl;	/* value */
	uint8_t		 del;
};

struct gwhead {
	llhttp_t	 p;		/* keeps parsing the body (gwhead_body) */
	struct buf	 data;		/* url, names, values (copied) and added headers */
	struct gwh	*h;
	size_t		 nh, caph, maxh;
	uint32_t	 url_o, url_l;
	uint32_t	 reason_o, reason_l;	/* response: the status line's reason */
	int		 in_value, too_many;
	int		 skip_body;	/* response to HEAD: no body whatever it says */
	int		 msg_done;	/* the whole message (head and body) parsed */
	int		 status;	/* response */
	uint8_t		 method;	/* request: llhttp_method_t */
	uint8_t		 major, minor;
	uint8_t		 keepalive;	/* the peer lets the connection be kept */
	uint8_t		 upgrade;	/* request: Upgrade + Connection: upgrade */
	uint8_t		 chunked, has_cl;
	uint64_t	 content_length;
};

/*
 * Parses a complete head (from h1_head_end, common/h1.h; type HTTP_REQUEST
 * or HTTP_RESPONSE). 0 or the
 * status to answer: 400 malformed, 431 too many header lines, 414 target
 * longer than maxtarget, 501 unsupported Transfer-Encoding; err says why.
 * For a response, set skip_body before (HEAD request) .
 */
int	gwhead_parse(struct gwhead *, int type, const char *head, size_t len,
	    size_t maxh, size_t maxtarget, char *err, size_t errlen) WUNRES;
void	gwhead_free(struct gwhead *);

/* The first value of name (case-insensitive) or NULL; *len its length. */
const char *gwhead_get(const struct gwhead *, const char *name, size_t *len);
/* Number of headers called name; *idx the first one's index. */
int	gwhead_count(const struct gwhead *, const char *name, size_t *idx);
/* Marks every header called name deleted; returns how many. */
int	gwhead_del(struct gwhead *, const char *name);
/* Adds a header (after the others). -1 if data is full. */
int	gwhead_add(struct gwhead *, const char *name, const char *value, size_t vl) WUNRES;
/* Whether header i is called name (case-insensitive). */
int	gwhead_is(const struct gwhead *, size_t i, const char *name);
/*
 * Marks hop-by-hop headers deleted: Connection, Keep-Alive, TE, Trailer,
 * Upgrade, Proxy-* and every header a Connection header names (not Host,
 * Content-Length or Transfer-Encoding).
 */
void	gwhead_strip_hop(struct gwhead *);
/*
 * Marks deleted every header a client could use to tell the app its address,
 * scheme, host or URL (Forwarded, X-Forwarded-*, X-Real-IP, X-Client-IP and
 * the like, '_' spellings included); returns how many.
 */
int	gwhead_strip_forwarding(struct gwhead *);

/*
 * Writes the head out: request line with target (NULL: the parsed one) or
 * the status line, the headers not deleted, the empty line. -1 out full.
 */
int	gwhead_write(const struct gwhead *, const char *target, size_t tl,
	    struct buf *out) WUNRES;

/*
 * Feeds body bytes after the head: returns the bytes that belong to this
 * message (msg_done set when it ended), or -1 on bad framing.
 */
long	gwhead_body(struct gwhead *, const char *p, size_t n);

#endif
