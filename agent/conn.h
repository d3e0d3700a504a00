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

/*
 * Serves the connections accepted on listen_fd (listening, non-blocking),
 * handing requests to cb, and starts the once-a-second sweep of stalled,
 * idle and lingering connections. 0, or -1 with errno (epoll).
 */
int	conn_serve(int listen_fd, conn_dispatch_cb cb);

/*
 * cb(arg) is called once if the peer goes away while the handler still
 * holds c (before its reply): for a handler whose work is useless without
 * its caller (a shell command). The reply is still owed; made then, it
 * frees c.
 */
void	conn_on_gone(struct conn *, void (*cb)(void *), void *arg);

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
