/*
 * httpstream.c: streamed request bodies and streamed replies of the HTTP
 * server (http.h): the body of a route->body_streamed request handed to
 * its handler as it arrives (http_req_body_stream, paused and resumed by
 * the handler), and replies written as they are produced, chunked (SSE,
 * NDJSON) or of a known length (a file), with the drain callback a
 * handler paces them by. The connection state machine that feeds and
 * writes them is http.c's: this file only queues bytes on c->out and
 * calls http.c's reply helpers (http_int.h), never the other way round.
 *
 * Rules (as http.h): everything runs on the event loop thread; a
 * streamed reply ends with exactly one http_stream_end or
 * http_stream_abort, which frees the request; once the client is gone
 * (r->c NULL) or this layer answered at the drain deadline (answered),
 * the bytes are dropped and the end still frees the request.
 */
#include <stdio.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "http.h"
#include "http_int.h"

/* ---- streamed replies ---- */

void
http_stream_start(struct http *ht, struct http_req *r, int code)
{
	struct hconn *c = r->c;

	r->streaming = 1;
	if (c == NULL || r->answered)
		return;
	(void)ht;
	http_put_head(ht, c, r, code, NULL, -1);
	http_conn_want_write(c);
}

void
http_stream_chunk(struct http_req *r, const char *p, size_t n)
{
	struct hconn *c = r->c;

	if (c == NULL || r->answered || !r->streaming || n == 0)
		return;
	if (r->sized) {
		if ((long long)n > r->sized_left)
			n = (size_t)r->sized_left;
		r->sized_left -= (long long)n;
		evbuffer_add(c->out, p, n);
		http_conn_want_write(c);
		return;
	}
	if (!r->http10)
		evbuffer_add_printf(c->out, "%zx\r\n", n);
	evbuffer_add(c->out, p, n);
	if (!r->http10)
		evbuffer_add(c->out, "\r\n", 2);
	http_conn_want_write(c);
}

void
http_stream_end(struct http *ht, struct http_req *r)
{
	struct hconn *c = r->c;
	int code = 200;

	if (!r->answered)
		http_count_status(ht, code);
	if (c == NULL || r->answered) {
		http_req_free(r);
		return;
	}
	if (r->sized && r->sized_left > 0) {
		c->close_after = 1;	/* short: the client must see it so */
		http_req_free(r);
		http_reply_done(c);
		return;
	}
	if (!r->http10 && !r->sized)
		evbuffer_add(c->out, "0\r\n\r\n", 5);
	http_req_free(r);
	http_reply_done(c);
}

void
http_stream_start_len(struct http *ht, struct http_req *r, int code,
    long long len)
{
	struct hconn *c = r->c;

	r->streaming = 1;
	r->sized = 1;
	r->sized_left = len;
	if (c == NULL || r->answered)
		return;
	http_put_head(ht, c, r, code, NULL, len);
	http_conn_want_write(c);
}

void
http_stream_abort(struct http *ht, struct http_req *r)
{
	struct hconn *c = r->c;

	if (!r->streaming) {
		http_send_err(ht, r, 502, "bad_gateway", "the agent's reply broke off");
		return;
	}
	if (c == NULL || r->answered) {
		http_req_free(r);
		return;
	}
	c->close_after = 1;
	http_req_free(r);
	http_reply_done(c);
}

size_t
http_stream_pending(const struct http_req *r)
{
	return r->c != NULL ? evbuffer_get_length(r->c->out) : 0;
}

void
http_req_on_drain(struct http_req *r, void (*cb)(struct http_req *, void *),
    void *arg)
{
	r->drain_cb = cb;
	r->drain_arg = arg;
}

/* ---- streamed request bodies ---- */

int
http_req_body_is_streamed(const struct http_req *r)
{
	return r->body_streamed;
}

long long
http_req_content_length(const struct http_req *r)
{
	return r->clen;
}

void
http_req_body_stream(struct http_req *r, void (*data)(struct http_req *,
    const char *, size_t, void *), void (*end)(struct http_req *, void *),
    void *arg)
{
	struct hconn *c = r->c;

	r->body_data = data;
	r->body_end = end;
	r->body_arg = arg;
	r->body_reading = 1;
	if (c == NULL)
		return;
	if (r->expect100 && !r->http10) {
		r->expect100 = 0;
		evbuffer_add_printf(c->out, "HTTP/1.1 100 Continue\r\n\r\n");
		http_conn_want_write(c);
	}
	http_body_kick(c);
}

void
http_req_body_pause(struct http_req *r, int paused)
{
	int was = r->body_paused;

	r->body_paused = paused != 0;
	if (was && !paused && r->c != NULL)
		http_body_kick(r->c);
}
