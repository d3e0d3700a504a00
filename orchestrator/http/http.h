/*
 * http.h: the orchestrator's HTTP/1.1 server (our own, on llhttp, on the
 * main event loop): the listener, the connection caps, one table of
 * routes, bearer auth and the Origin check, the reply helpers (whole and
 * streamed), the HTTP counters, and every error this layer answers (400,
 * 401, 403, 404, 405, 408, 413, 429, 431, 503) as JSON in the route's own
 * error shape: never HTML.
 *
 * Rules:
 * - Everything here runs on the event loop thread. A handler that needs
 *   blocking work submits it to work.h and counts it with
 *   http_inflight_add(), so drain knows when the last reply went out.
 * - A route's handler is called only after the Origin check and, when the
 *   route says so, the bearer key passed; failures are answered here, in
 *   the route's error shape (route->error_body: JSON-RPC for /mcp, the
 *   REST {"error":{"code","message"}} otherwise).
 * - Handlers are reached through the table only: this layer calls nothing
 *   of the surfaces (mcp.c, rest.c) by name.
 * - A request handed to a handler belongs to it until it sends the final
 *   reply (http_send_body/json/err or http_stream_end), which frees the
 *   request: the handler must send exactly one, however late. When the
 *   client went away, or this layer answered for the handler at the drain
 *   deadline, that reply is dropped, and the request is still freed by it.
 */
#ifndef HTTP_H
#define HTTP_H

#include <stddef.h>
#include <event2/event.h>
#include <cjson/cJSON.h>

#include "attrib.h"
#include "buf.h"
#include "conf.h"

struct http;
struct http_req;

enum http_endpoint {	/* the endpoint label of the request counters */
	HTTP_EP_MCP,
	HTTP_EP_REST,
	HTTP_EP_OTHER,
	HTTP_EP_MAX
};

enum http_method {
	HTTP_M_GET, HTTP_M_POST, HTTP_M_DELETE, HTTP_M_PUT, HTTP_M_PATCH,
	HTTP_M_OPTIONS, HTTP_M_HEAD, HTTP_M_OTHER
};

/* Why a request's abort callback runs (http_req_on_abort). */
enum http_abort {
	HTTP_ABORT_GONE,	/* the client disconnected: its reply is dropped */
	HTTP_ABORT_DEADLINE	/* the drain deadline: reply now, or this layer will */
};

struct http_route {
	const char	*path;		/* exact path, or prefix (below) */
	int		 prefix;	/* 1: path is a prefix ("/v1/sessions") */
	int		 auth;		/* 1: the bearer key is required */
	enum http_endpoint endpoint;
	/* The body of an error this layer answers in the route's shape
	 * (caller frees); NULL: http_err_json(code, msg). */
	cJSON		*(*error_body)(int status, const char *code,
			    const char *msg);
	void		(*handler)(struct http *, struct http_req *,
			    const char *path, void *arg);
	void		*arg;
	/* NULL, or: is this request's body streamed to the handler (which
	 * gets the head first, then http_req_body_stream's chunks) instead
	 * of read whole before dispatch? Such bodies are exempt from
	 * http.max_body: the handler bounds them. */
	int		(*body_streamed)(const char *path, enum http_method);
};

/*
 * Listens on conf->listen and serves routes[0..n) (the table is borrowed
 * and must outlive the server; the first match wins). key: the bearer key
 * (copied). max_fds: the descriptors this process may open (the soft
 * RLIMIT_NOFILE); the connection cap stays below it. NULL with err.
 */
struct http *http_new(struct event_base *, const struct conf *, const char *key,
	    const struct http_route *routes, size_t n, long long max_fds,
	    char *err, size_t errlen);
/*
 * Drain: the listener stays open; every reply from now on closes its
 * connection, idle connections are closed, handlers see http_draining().
 */
void	http_drain(struct http *);
int	http_draining(const struct http *);
/*
 * The drain deadline: every request still in flight gets its abort
 * callback (HTTP_ABORT_DEADLINE), which should reply; one without a
 * callback, or whose callback did not reply, is answered 503 in its
 * route's shape. Returns how many were answered.
 */
int	http_abort_inflight(struct http *);
/* Connections with reply bytes not yet written. */
int	http_output_pending(const struct http *);
void	http_inflight_add(struct http *, int delta);
int	http_inflight(const struct http *);
struct event_base *http_base(const struct http *);
void	http_free(struct http *);

/* ---- the request ---- */
/* A request header (first of that name, any case), or NULL. */
const char *http_hdr(const struct http_req *, const char *name);
enum http_method http_req_method(const struct http_req *);
/* The body (NUL-terminated; "" when none) and its length. */
const char *http_req_body(const struct http_req *, size_t *len);
/* The query string without '?', or NULL. */
const char *http_req_query(const struct http_req *);
/* The client's address as text ("127.0.0.1"), for logs. */
const char *http_req_peer(const struct http_req *);
/* Has the client gone (its reply will be dropped)? */
int	http_req_gone(const struct http_req *);
/*
 * cb runs once, on the loop thread, when the client disconnects before
 * the final reply, or at the drain deadline (enum http_abort). cb may
 * send the final reply (then the request is freed under it).
 */
void	http_req_on_abort(struct http_req *, void (*cb)(struct http_req *,
	    enum http_abort, void *), void *arg);
/*
 * Streamed request bodies (route->body_streamed). The handler is called
 * at the head; nothing of the body is read until it calls
 * http_req_body_stream (which answers Expect: 100-continue then): data
 * gets the body's bytes as they arrive (de-chunked), end runs once after
 * the last. Neither may send the final reply from inside (defer it); a
 * final reply before the end closes the connection after it. While
 * paused (http_req_body_pause 1) nothing more is read from the client:
 * at most one read's worth arrives after the pause.
 */
int	http_req_body_is_streamed(const struct http_req *);
long long http_req_content_length(const struct http_req *);	/* -1: none */
void	http_req_body_stream(struct http_req *, void (*data)(struct http_req *,
	    const char *p, size_t n, void *), void (*end)(struct http_req *,
	    void *), void *arg);
void	http_req_body_pause(struct http_req *, int paused);
/* Adds a reply header (name and value copied; CR and LF refused). */
void	http_add_header(struct http_req *, const char *name, const char *value);

/* Does the media-type list h allow type ("application/json")? q=0 refuses. */
int	http_accepts(const char *h, const char *type);
/* Is ct application/json (parameters allowed)? */
int	http_ctype_json(const char *ct);

/* {"error":{"code":code,"message":msg}} (caller frees). */
cJSON	*http_err_json(const char *code, const char *msg);
/*
 * Final replies (each frees req). Each counts the status; Connection:
 * close while draining; a 503 carries Retry-After.
 */
void	http_send_body(struct http *, struct http_req *, int code,
	    const char *ctype, const char *body, size_t len);
void	http_send_json(struct http *, struct http_req *, int code,
	    const cJSON *);
void	http_send_err(struct http *, struct http_req *, int code,
	    const char *ecode, const char *msg);
/*
 * A streamed reply (SSE): the head with the headers added so far, then
 * chunks, then the end (which frees req and counts the status).
 */
void	http_stream_start(struct http *, struct http_req *, int code);
void	http_stream_chunk(struct http_req *, const char *p, size_t n);
void	http_stream_end(struct http *, struct http_req *);
/*
 * A streamed reply of a known length (Content-Length: len, chunks written
 * as they are): http_stream_chunk sends the bytes, http_stream_end ends
 * it; ended short of len, the connection is closed (the client sees a
 * truncated body, never a wrong one).
 */
void	http_stream_start_len(struct http *, struct http_req *, int code,
	    long long len);
/* Ends a streamed reply as broken: the connection is closed without its
 * last chunk, so the client knows it is incomplete. Frees req. */
void	http_stream_abort(struct http *, struct http_req *);
/* Reply bytes queued for the client, not yet written. */
size_t	http_stream_pending(const struct http_req *);
/* cb runs (loop thread) each time the queued reply bytes drop below
 * HTTP_DRAIN_LOW after a write; for a handler pacing a streamed reply. */
#define HTTP_DRAIN_LOW	(256 * 1024)
void	http_req_on_drain(struct http_req *, void (*cb)(struct http_req *,
	    void *), void *arg);

/* The HTTP counters as Prometheus text, appended to b. 0 or -1 (full). */
int	http_metrics(const struct http *, struct buf *b) WUNRES;

#endif
