/*
 * http.h: the orchestrator's HTTP layer (libevent evhttp on the main event
 * loop): the listener, one table of routes, bearer auth and the Origin
 * check, the reply helpers, the HTTP counters, and the answer to an
 * oversized body (413 with a JSON body in the route's own error shape).
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
 */
#ifndef HTTP_H
#define HTTP_H

#include <stddef.h>
#include <event2/event.h>
#include <event2/http.h>
#include <cjson/cJSON.h>

#include "attrib.h"
#include "buf.h"
#include "conf.h"

struct http;

enum http_endpoint {	/* the endpoint label of the request counters */
	HTTP_EP_MCP,
	HTTP_EP_REST,
	HTTP_EP_OTHER,
	HTTP_EP_MAX
};

struct http_route {
	const char	*path;		/* exact path, or prefix (below) */
	int		 prefix;	/* 1: path is a prefix ("/v1/sessions") */
	int		 auth;		/* 1: the bearer key is required */
	enum http_endpoint endpoint;
	/* The body of an error this layer answers (401, 403, 413) in the
	 * route's shape (caller frees); NULL: http_err_json(code, msg). */
	cJSON		*(*error_body)(int status, const char *code,
			    const char *msg);
	void		(*handler)(struct http *, struct evhttp_request *,
			    const char *path, void *arg);
	void		*arg;
};

/*
 * Listens on conf->listen and serves routes[0..n) (the table is borrowed
 * and must outlive the server; the first match wins). key: the bearer key
 * (copied). NULL with err on failure.
 */
struct http *http_new(struct event_base *, const struct conf *, const char *key,
	    const struct http_route *routes, size_t n, char *err, size_t errlen);
/* Stops accepting; requests in flight still get their replies. */
void	http_drain(struct http *);
int	http_draining(const struct http *);
void	http_inflight_add(struct http *, int delta);
int	http_inflight(const struct http *);
struct event_base *http_base(const struct http *);
void	http_free(struct http *);

/* A request header, or NULL. */
const char *http_hdr(struct evhttp_request *, const char *name);
/* Does the media-type list h allow type ("application/json")? q=0 refuses. */
int	http_accepts(const char *h, const char *type);
/* Is ct application/json (parameters allowed)? */
int	http_ctype_json(const char *ct);

/* {"error":{"code":code,"message":msg}} (caller frees). */
cJSON	*http_err_json(const char *code, const char *msg);
/* Replies. Each counts the status; Connection: close while draining. */
void	http_send_body(struct http *, struct evhttp_request *, int code,
	    const char *ctype, const char *body, size_t len);
void	http_send_json(struct http *, struct evhttp_request *, int code,
	    const cJSON *);
void	http_send_err(struct http *, struct evhttp_request *, int code,
	    const char *ecode, const char *msg);
/* The status of a streamed reply (SSE) that ended. */
void	http_count_status(struct http *, int code);

/* The HTTP counters as Prometheus text, appended to b. 0 or -1 (full). */
int	http_metrics(const struct http *, struct buf *b) WUNRES;

#endif
