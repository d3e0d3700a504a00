/*
 * http.h: the agent's view of an HTTP/1.1 request head (read by the shared
 * common/h1head.c on llhttp, with common/h1.c's rules, then the agent's own
 * checks), the incremental decoder of chunked bodies and query-string
 * helpers. Bodies are Content-Length, or chunked where the route streams its
 * body (conn.c refuses chunked elsewhere); any other Transfer-Encoding is
 * refused (h1_framing: 400 or 501).
 */
#ifndef AGENT_HTTP_H
#define AGENT_HTTP_H

#include <stddef.h>
#include "attrib.h"

#define HTTP_MAX_HEAD		((size_t)16 * 1024)	/* request line + headers */
#define HTTP_MAX_HEADERS	64
#define HTTP_MAX_TARGET		4096
#define HTTP_MAX_BODY		((size_t)16 * 1024 * 1024)
#define HTTP_MAX_AUTH		512
/* A method name is shorter: llhttp's longest, UNSUBSCRIBE, has 11 bytes. */
#define HTTP_MAX_METHOD		16

struct http_req {
	char	 method[HTTP_MAX_METHOD];
	char	 path[HTTP_MAX_TARGET + 1];	/* target before '?' (raw) */
	char	 query[HTTP_MAX_TARGET + 1];	/* after '?' (raw), may be "" */
	size_t	 head_len;	/* bytes of the head incl. the blank line */
	unsigned long long content_length;
	int	 has_length;
	int	 chunked;	/* Transfer-Encoding: chunked */
	int	 keepalive;	/* connection may be reused */
	int	 expect_continue;
	int	 has_auth;
	char	 auth[HTTP_MAX_AUTH + 1];	/* Authorization value */
};

enum { HTTP_NEED_MORE = 0, HTTP_DONE = 1 };

/*
 * Parses the head at the start of p[0..n). Returns HTTP_DONE with r filled
 * in, HTTP_NEED_MORE, or the status to answer with the reason in err: 400
 * malformed (llhttp's strict read, the field grammar, a framing h1_framing
 * refuses, the agent's own target, Expect and Authorization rules), 431 a
 * head, field count, target or Content-Length over its limit, 501 a
 * transfer coding other than chunked, 505 not HTTP/1.x.
 */
int	http_parse_head(const char *p, size_t n, struct http_req *r, char *err,
	    size_t errlen);

/*
 * Finds key (non-empty) in a query string and percent-decodes its value
 * into out (NUL-terminated; values with %00 are refused). Returns 0, 1 when
 * absent, -1 when malformed or too long.
 */
int	http_query_get(const char *query, const char *key, char *out,
	    size_t outlen);

/*
 * The state of one chunked body being decoded (zero it to start). Chunk
 * sizes are hex, at most 15 digits; extensions and trailer fields are read
 * and dropped (at most HTTP_MAX_CHUNK_LINE bytes a line, HTTP_MAX_HEAD of
 * trailer in all); every line ends in CRLF.
 */
#define HTTP_MAX_CHUNK_LINE	1024
struct http_chunked {
	int		 st;
	unsigned long long left;	/* data bytes left in this chunk */
	size_t		 ndig;		/* digits of this size line */
	size_t		 line;		/* bytes of this extension/trailer line */
	size_t		 trailer;	/* trailer bytes so far */
};

/*
 * Decodes chunked body bytes p[0..n) in place: their data bytes are moved
 * to the front of p, *dlen of them. Returns the bytes of p consumed (fewer
 * than n only when the body ended: the rest belongs to the next request),
 * or -1 with a message in err when the framing is malformed.
 */
long	http_chunked_decode(struct http_chunked *, char *p, size_t n,
	    size_t *dlen, char *err, size_t errlen);
/* 1 once the last chunk and the trailer have been read. */
int	http_chunked_done(const struct http_chunked *);

#endif
