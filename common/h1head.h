/*
 * h1head.h: one HTTP/1.1 message head held for a daemon to judge, edit and
 * write again (h1head.c), the store the proxy (egress-proxy/httpreq.c), the
 * gateway (gateway/head.c), the static agent (agent/http.c) and the
 * orchestrator (orchestrator/http/http.c; its client of the agent,
 * orchestrator/lib/agentc.c) share:
 * llhttp's strict read of a complete head (found by h1_head_end), the rules of h1.h applied to it once (version,
 * field grammar, body framing), its fields as offsets into one buffer, and
 * the body read through the same parser. Each daemon keeps only its own
 * checks (request targets, Host, CONNECT, upgrades) and rewrites on top.
 * Rules: a field is never moved or freed once read, only marked deleted, so
 * an index stays valid for the life of the head; the target, the reason,
 * every name and every value is followed by a NUL in data, so each also
 * reads as a C string (no peer byte is NUL: h1_head_end refuses it);
 * trailer fields of a chunked body are read and dropped, so data does not
 * move under a daemon holding a value while the body arrives (only
 * h1head_add appends after the parse); a field the daemon added
 * is marked set and is never taken for one of the peer's (hop-by-hop
 * stripping, Connection lists). No I/O here: unit-tested and fuzzed
 * through its callers.
 */
#ifndef COMMON_H1HEAD_H
#define COMMON_H1HEAD_H

#include <stddef.h>
#include <stdint.h>
#include <llhttp.h>

#include "buf.h"

struct h1field {
	uint32_t	 no, nl;	/* name offset/length in data */
	uint32_t	 vo, vl;	/* value offset/length (trailing blanks cut) */
	uint8_t		 del;		/* removed */
	uint8_t		 set;		/* added by the daemon (h1head_add), not the peer's */
};

struct h1head {
	llhttp_t	 p;		/* keeps reading the body (h1head_body) */
	struct buf	 data;		/* target, reason, names, values (copied), added fields */
	struct h1field	*h;
	size_t		 nh, caph, maxh;
	uint32_t	 url_o, url_l;		/* request target */
	uint32_t	 reason_o, reason_l;	/* response: the status line's reason */
	int		 in_value, in_body, too_many, full;	/* parser state */
	int		 status;	/* response */
	uint8_t		 type;		/* HTTP_REQUEST or HTTP_RESPONSE */
	uint8_t		 method;	/* request: llhttp_method_t */
	uint8_t		 major, minor;
	uint8_t		 keepalive;	/* the peer lets the connection be kept */
	uint8_t		 upgrade;	/* llhttp saw Upgrade with Connection: upgrade (or CONNECT) */
	uint8_t		 chunked, has_cl;
	uint64_t	 content_length;
	/* Kept across h1head_parse; set by the daemon. */
	uint8_t		 skip_body;	/* response to HEAD: no body whatever it says */
	int		 msg_done;	/* the whole message (head and body) read */
	/* Body sink, called with decoded body bytes; 0 or -1. NULL: dropped. */
	int		(*on_body)(void *, const char *, size_t);
	void		*arg;
};

/* An empty head whose data (copied fields and added ones) holds at most maxdata bytes. */
void	h1head_init(struct h1head *, size_t maxdata);
void	h1head_free(struct h1head *);

/*
 * Reads a complete head (type HTTP_REQUEST or HTTP_RESPONSE; from
 * h1_head_end) with at most maxh field lines, keeping its data's memory,
 * skip_body, on_body and arg. 0, or the status to answer with the reason
 * in err: 400 malformed (llhttp's strict read, a field's grammar, a
 * framing h1_framing refuses), 431 more than maxh lines or data full,
 * 501 a transfer coding other than chunked, 505 not HTTP/1.x. The
 * daemon's own checks (target, Host, CONNECT, upgrades) come after.
 */
int	h1head_parse(struct h1head *, int type, const char *head, size_t len,
	    size_t maxh, char *err, size_t errlen);

/* Whether field i is called name (case-insensitive). */
int	h1head_is(const struct h1head *, size_t i, const char *name);
/* The number of fields called name not deleted; *idx the first one's index. */
int	h1head_count(const struct h1head *, const char *name, size_t *idx);
/* The first value of name (case-insensitive) or NULL; *len its length. */
const char *h1head_get(const struct h1head *, const char *name, size_t *len);
/* Marks every field called name deleted; returns how many. */
int	h1head_del(struct h1head *, const char *name);
/*
 * Adds a field after the others, marked set. The caller vouches for the
 * name and value (a peer's bytes go through h1_token_ok/h1_value_ok
 * first). -1 when data is full (nothing added).
 */
int	h1head_add(struct h1head *, const char *name, const char *value, size_t vl);
/*
 * Marks the peer's hop-by-hop fields deleted (RFC 9110 7.6.1): Connection,
 * Keep-Alive, TE, Trailer, Upgrade, Proxy-* (h1_hop_name) and every field
 * a Connection field of the peer's names. Never Host, Content-Length or
 * Transfer-Encoding (each daemon frames and routes on those itself) and
 * never a field the daemon set.
 */
void	h1head_strip_hop(struct h1head *);
/*
 * Writes the fields not deleted ("name: value" CRLF each), skipping those
 * skip says to (NULL: none). -1 when out is full.
 */
int	h1head_write_fields(const struct h1head *, int (*skip)(const struct h1head *,
	    const struct h1field *, void *), void *arg, struct buf *out);
/*
 * Writes the whole head: the request line with target (NULL: the one
 * read) or the status line (the reason read, else h1_reason's), the
 * fields not deleted, the empty line. -1 when out is full.
 */
int	h1head_write(const struct h1head *, const char *target, size_t tl, struct buf *out);

/*
 * Feeds bytes after the head through the parser; decoded body goes to
 * on_body. Returns the bytes that belong to this message (stopping right
 * after its end, msg_done set), or -1 on bad framing or a sink's -1.
 */
long	h1head_body(struct h1head *, const char *p, size_t n);

/*
 * The peer closed the connection: the end of input, which alone ends a
 * response body delimited by the close (neither Content-Length nor
 * chunked, RFC 9112 6.3 item 8). Call it after the head was parsed and
 * every byte before the close went through h1head_body. 0 when the
 * message is whole (msg_done set, also when it already was), -1 when the
 * close cut it (a Content-Length or chunked body short) or its framing
 * had failed.
 */
int	h1head_finish(struct h1head *);

/* The method's name ("GET"). */
const char *h1head_method(const struct h1head *);

#endif
