/*
 * http_int.h: the structs of the HTTP server shared by http.c (connections,
 * parsing, dispatch, whole replies), httpreq.c (the request side:
 * accessors, routes, Origin/Host/auth, counters), which calls nothing of
 * http.c, and httpstream.c (streamed request bodies and streamed replies),
 * which calls http.c's reply helpers below and is called by neither.
 * Nothing else includes it.
 */
#ifndef HTTP_INT_H
#define HTTP_INT_H

#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include "buf.h"
#include "addrcount.h"
#include "h1head.h"
#include "http.h"

#define HDR_MAX			100	/* header lines in one request (431 beyond) */

enum cstate { C_IDLE, C_READING, C_BODY, C_INFLIGHT, C_SINK };

struct http_req {
	struct http		*ht;
	struct hconn		*c;		/* NULL once the client is gone */
	enum http_method	 method;
	struct h1head		 hd;		/* the head read (common/h1head.c),
						 * which reads the body on */
	struct buf		 body;
	struct buf		 extra;		/* reply headers added */
	char			*path, *query;	/* split from url (owned) */
	const struct http_route	*route;
	int			 keepalive;	/* the client allows it */
	int			 http10;
	unsigned		 dispatched:1;	/* with its handler */
	unsigned		 streaming:1;	/* a streamed reply started */
	unsigned		 answered:1;	/* replied by this layer (deadline) */
	unsigned		 aborted:1;	/* abort cb ran */
	/* A streamed request body (route->body_streamed): the handler has
	 * the head while the body still arrives (http_req_body_stream). */
	unsigned		 body_streamed:1;
	unsigned		 body_done:1;	/* its end was parsed */
	unsigned		 body_paused:1;	/* the handler is behind */
	unsigned		 body_reading:1;	/* the handler takes it */
	unsigned		 expect100:1;	/* 100 Continue owed at start */
	unsigned		 sized:1;	/* a streamed reply with a length */
	long long		 clen;		/* Content-Length, -1: none */
	long long		 sized_left;	/* its bytes still owed */
	void			(*body_data)(struct http_req *, const char *,
				    size_t, void *);
	void			(*body_end)(struct http_req *, void *);
	void			*body_arg;
	void			(*drain_cb)(struct http_req *, void *);
	void			*drain_arg;
	void			(*abort_cb)(struct http_req *, enum http_abort,
				    void *);
	void			*abort_arg;
	TAILQ_ENTRY(http_req)	 link;		/* ht->reqs while dispatched */
};

struct hconn {
	struct http		*ht;
	int			 fd;
	enum cstate		 st;
	struct event		*rev, *wev, *tmo, *kick;
	struct buf		 in;		/* read, not yet parsed */
	struct evbuffer		*out;
	struct http_req		*req;		/* its head read: its body arriving,
						 * or in flight */
	struct addrcount_ent	*ac;
	char			 peer[64];
	const char		*refuse;	/* answer this instead (cap) */
	int			 refuse_code;
	long long		 t_state;	/* ms: when st last changed */
	long long		 t_wrote;	/* ms: last write progress */
	long long		 t_sink_read;	/* ms: C_SINK's last input */
	long long		 sink_bytes;	/* input C_SINK dropped */
	unsigned		 dead:1;	/* killed, free pending */
	unsigned		 close_after:1;	/* close once the reply is out */
	unsigned		 eof:1;		/* the client closed its side */
	unsigned		 reading_off:1;	/* PEND_MAX reached */
	unsigned		 wr_shut:1;
	unsigned		 body_full:1;	/* a whole body passed http.max_body */
	const struct http_route	*guess;		/* the route by the raw request
						 * line: an error's shape before
						 * the head is read */
	TAILQ_ENTRY(hconn)	 all;
	TAILQ_ENTRY(hconn)	 idle;		/* ht->idle while C_IDLE */
};

TAILQ_HEAD(hconnq, hconn);
TAILQ_HEAD(reqq, http_req);

struct http {
	struct event_base		*base;
	const struct conf		*conf;
	const struct http_route		*routes;
	size_t				 nroutes;
	char				*key;
	size_t				 keylen;
	int				 loopback;	/* the listener is */
	char				 listen_host[256];	/* as Host names it */
	int				 lfd;
	struct event			*lev, *lbackoff;
	int				 backoff_ms;
	long long			 t_acclog;	/* last EMFILE log line */
	unsigned long long		 n_accerr_unlogged;
	int				 draining;
	int				 inflight;	/* async requests */
	struct hconnq			 conns, idleq;
	struct reqq			 reqs;		/* dispatched */
	int				 nconns, nrefusing;
	long long			 max_conns;
	struct addrcount		*addrs;	/* per client address (common/addrcount.c) */
	/* counters (event loop thread only) */
	unsigned long long		 req[HTTP_EP_MAX];
	unsigned long long		 st_2xx, st_4xx, st_5xx, st_401, st_403;
	unsigned long long		 n_too_large, n_bad, n_accept_err;
	unsigned long long		 n_refused_total, n_refused_addr;
	unsigned long long		 n_evicted, n_idle_closed, n_gone;
	unsigned long long		 n_timeout;
};

/* httpreq.c, for http.c */
/* An error's body in r's shape (r may be NULL; caller frees). */
cJSON	*hreq_route_error(const struct http_route *r, int status,
	    const char *code, const char *msg);
/* The route serving path, or NULL. */
const struct http_route *hreq_route_find(const struct http *, const char *path);
/* c->guess from the raw first bytes of c->in (a new request). */
void	hreq_guess(struct hconn *);
/* req->path and req->query from its target; -1: no path there. */
int	hreq_split_target(struct http_req *);
/* The Origin and Host checks (httpreq.c's top) and the bearer key. */
int	hreq_origin_ok(struct http *, struct http_req *);
int	hreq_host_ok(struct http *, struct http_req *);
int	hreq_auth_ok(struct http *, struct http_req *);

/* http.c, for httpstream.c */
/* Counts a reply's status in the HTTP counters. */
void	http_count_status(struct http *, int code);
/* Frees a request (its final reply's job). */
void	http_req_free(struct http_req *);
/* The head of a reply to r on c; body_len -1: streamed (chunked). */
void	http_put_head(struct http *, struct hconn *c, struct http_req *r,
	    int code, const char *ctype, long long body_len);
/* r's reply is complete (r freed): c takes its next request, or closes. */
void	http_reply_done(struct hconn *c);
/* Writes c's queued reply bytes when the socket takes them. */
void	http_conn_want_write(struct hconn *c);
/* Takes c's streamed body again: parse what waits, read more. */
void	http_body_kick(struct hconn *c);

#endif
