/*
 * conn.h: the agent's HTTP connections (conn.c) and the reply API every
 * request handler uses. conn.c reads requests, hands each complete one to
 * the dispatch callback and writes the one reply; it knows no routes.
 *
 * Rule for handlers: a request handed to a handler gets exactly one reply,
 * now or later (from a timer, the shell's completion, a job's end), through
 * one of conn_reply*. Until then the connection is held for it: if the
 * peer goes away meanwhile, the late reply just frees the connection, so a
 * handler never needs to know whether its peer is still there.
 *
 * Two hooks stream what does not fit a buffer. A route the streams
 * callback of conn_serve names gets its request at the head (body NULL);
 * its handler takes the body as it arrives with conn_body (Content-Length
 * or chunked, decoded here), or replies at once (the body is then not
 * read and the connection closes after the reply). A handler may answer
 * with a streamed response instead of conn_reply*: conn_stream_begin,
 * conn_stream_write while conn_stream_pending is below CONN_STREAM_HIGH
 * (conn_on_drain says when to go on), then conn_stream_end (or
 * conn_stream_abort), which stands for the one reply.
 */
#ifndef AGENT_CONN_H
#define AGENT_CONN_H

#include <stddef.h>
#include "attrib.h"
#include "buf.h"

struct conn;
struct http_req;
struct jw;

/*
 * Called once per complete request, which must get one reply (above). r and
 * body[0..len) (NUL-terminated) live only until the callback returns.
 */
typedef void (*conn_dispatch_cb)(struct conn *, const struct http_req *r,
    const char *body, size_t len);
/* 1 if the request's route streams its body (conn_body), from its head. */
typedef int (*conn_streams_cb)(const struct http_req *r);

/*
 * Serves the connections accepted on listen_fd (listening, non-blocking),
 * handing requests to cb, and starts the once-a-second sweep of stalled,
 * idle and lingering connections. 0, or -1 with errno (epoll).
 */
int	conn_serve(int listen_fd, conn_dispatch_cb cb, conn_streams_cb streams);

/*
 * cb(arg) is called once if the peer goes away while the handler still
 * holds c (before its reply): for a handler whose work is useless without
 * its caller (a shell command). The reply is still owed; made then, it
 * frees c.
 */
void	conn_on_gone(struct conn *, void (*cb)(void *), void *arg);

/*
 * For a streamed-body request: its body's bytes go to data(arg, p, n) as
 * they arrive (n > 0, decoded when chunked), then end(arg) once it is
 * complete (err NULL), or end(arg, err) when the chunked framing is
 * malformed (the handler then replies 400). data returns 0 to go on, or -1
 * when it replied (an error: nothing more is read and the connection
 * closes after the reply). A peer
 * that goes away or stalls (--request-timeout without a byte) before the
 * end calls conn_on_gone's callback. Expect: 100-continue is answered
 * here.
 */
void	conn_body(struct conn *, int (*data)(void *, const char *, size_t),
	    void (*end)(void *, const char *err), void *arg);

/* A streamed response's writer stops at this many unsent bytes. */
#define CONN_STREAM_HIGH	((size_t)1024 * 1024)
/*
 * Starts a streamed response: the status line and headers (extra: more
 * header lines, each ending in CRLF, or NULL), then a body of length bytes,
 * or chunked when length is -1. -1 if the peer is gone (the handler still
 * ends the stream, which frees the connection).
 */
int	conn_stream_begin(struct conn *, int status, const char *ctype,
	    long long length, const char *extra);
/* Queues p[0..n) of the body (one chunk when chunked) and sends what the
 * socket takes. 0, or -1 when the peer is gone. */
int	conn_stream_write(struct conn *, const void *p, size_t n);
/* Body bytes queued and not yet sent. */
size_t	conn_stream_pending(const struct conn *);
/* cb(arg) once, when the queue is below CONN_STREAM_HIGH / 2 and the
 * socket writable (a one-shot: call again to wait again). */
void	conn_on_drain(struct conn *, void (*cb)(void *), void *arg);
/* The body is complete: the reply is done (frees a dead connection). */
void	conn_stream_end(struct conn *);
/* The body cannot be completed (a read error mid-file): close. */
void	conn_stream_abort(struct conn *);

/* Replies status with body[0..len) of type ctype. */
void	conn_reply(struct conn *, int status, const char *ctype,
	    const char *body, size_t len);
/* Replies status with the JSON in body (the caller keeps body). */
void	conn_reply_json(struct conn *, int status, const struct buf *body);
/* Finishes w (writing into body), replies 200 with it (500 when it did not
 * fit) and frees body. */
void	conn_reply_jw(struct conn *, struct jw *w, struct buf *body);
/* Replies status with {"error":{"code":code,"message":<fmt ...>}}. */
void	conn_reply_error(struct conn *, int status, const char *code,
	    const char *fmt, ...) PRINTF(4, 5);

#endif
