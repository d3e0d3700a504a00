/*
 * http.c: the HTTP layer (http.h): listener, route table, auth and Origin,
 * reply helpers, counters, and the oversized-body guard.
 *
 * Oversized bodies. libevent answers a body over its limit with its own
 * HTML page. To answer with the route's JSON error instead, every
 * connection's input is watched as it arrives, before evhttp parses it (an
 * evbuffer callback on the input of the bufferevent we make for evhttp):
 * the request framing is tracked (request line, the Content-Length and
 * Transfer-Encoding headers, body length), and a head announcing a body
 * over http.max_body is answered at once with 413 and a JSON body, the
 * write side is shut and whatever else the client sends is discarded until
 * it closes, so evhttp never sees that request. Chunked bodies are left to
 * evhttp's own limit. State is per fd in the server (a generation tells
 * connections apart), so nothing needs freeing when evhttp frees a
 * connection.
 *
 * Origin and Host (DNS rebinding; every route, before the key). A request
 * without Origin is no browser's and passes; an Origin passes when it is
 * in allowed_origins, or, while the listener is a loopback address, when
 * it is http(s)://localhost, 127.0.0.1 or [::1] (or the listen host) with
 * any port: a page served from this machine. While the listener is a loopback address the
 * Host must name it too: localhost, 127.0.0.1, [::1] or the listen host,
 * any port (a request without Host, HTTP/1.0, passes: browsers always send
 * one). A rebinding page's requests carry its own name as Host, so they
 * get 403 even when they carry no Origin. On any other listener the
 * operator's names for it are unknown here: Host is not checked, and only
 * allowed_origins pass (docs/operator-guide.md).
 */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "http.h"
#include "jsonu.h"
#include "log.h"
#include "strnum.h"
#include "xmalloc.h"

enum hs_state { HS_HEAD, HS_BODY, HS_PASS, HS_SINK };

struct hstream {
	const void	*bev;		/* whose state this is */
	unsigned char	 st;
	unsigned char	 nlines;	/* lines of this head seen (capped) */
	unsigned char	 has_body;	/* POST, PUT, PATCH */
	unsigned char	 chunked;
	char		 target[48];	/* the request target (first bytes) */
	char		 line[48];	/* the line so far (first bytes) */
	size_t		 llen;
	long long	 clen;		/* -1: none */
	unsigned long long left;	/* HS_BODY: body bytes to skip */
};

struct http {
	struct event_base		*base;
	struct evhttp			*evh;
	struct evhttp_bound_socket	*bound;
	const struct conf		*conf;
	const struct http_route		*routes;
	size_t				 nroutes;
	char				*key;
	size_t				 keylen;
	int				 loopback;	/* the listener is */
	char				 listen_host[256];	/* as Host names it */
	int				 draining;
	int				 inflight;	/* async requests */
	struct hstream			*hs_tab;	/* by fd */
	size_t				 hs_n;
	/* counters (event loop thread only) */
	unsigned long long		 req[HTTP_EP_MAX];
	unsigned long long		 st_2xx, st_4xx, st_5xx, st_401, st_403;
	unsigned long long		 n_too_large;
};


static const char *
reason(int code)
{
	switch (code) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 406: return "Not Acceptable";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 415: return "Unsupported Media Type";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	}
	return "Status";
}

void
http_count_status(struct http *ht, int code)
{
	if (code < 300)
		ht->st_2xx++;
	else if (code < 500)
		ht->st_4xx++;
	else
		ht->st_5xx++;
	if (code == 401)
		ht->st_401++;
	if (code == 403)
		ht->st_403++;
}

void
http_send_body(struct http *ht, struct evhttp_request *req, int code,
    const char *ctype, const char *body, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	if (ctype != NULL)
		evhttp_add_header(h, "Content-Type", ctype);
	evhttp_add_header(h, "Cache-Control", "no-store");
	if (ht->draining)
		evhttp_add_header(h, "Connection", "close");
	if (body != NULL && len > 0)
		evbuffer_add(b, body, len);
	http_count_status(ht, code);
	evhttp_send_reply(req, code, reason(code), b);
	evbuffer_free(b);
}

void
http_send_json(struct http *ht, struct evhttp_request *req, int code, const cJSON *j)
{
	char *txt = cJSON_PrintUnformatted(j);

	http_send_body(ht, req, code, "application/json", txt, strlen(txt));
	free(txt);
}

cJSON *
http_err_json(const char *code, const char *msg)
{
	cJSON *o = cJSON_CreateObject(), *e;

	e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	return o;
}

void
http_send_err(struct http *ht, struct evhttp_request *req, int code,
    const char *ecode, const char *msg)
{
	cJSON *o = http_err_json(ecode, msg);

	http_send_json(ht, req, code, o);
	cJSON_Delete(o);
}

/* An error this layer answers, in route r's shape (r may be NULL). */
static cJSON *
route_error(const struct http_route *r, int status, const char *code,
    const char *msg)
{
	if (r != NULL && r->error_body != NULL)
		return r->error_body(status, code, msg);
	return http_err_json(code, msg);
}

static void
send_route_err(struct http *ht, struct evhttp_request *req,
    const struct http_route *r, int status, const char *code, const char *msg)
{
	cJSON *o = route_error(r, status, code, msg);

	http_send_json(ht, req, status, o);
	cJSON_Delete(o);
}

const char *
http_hdr(struct evhttp_request *req, const char *name)
{
	return evhttp_find_header(evhttp_request_get_input_headers(req), name);
}

/* ---- auth, Origin and Host (see the top of the file) ---- */

/* Is name (a host, IPv6 in brackets) one of the loopback names? */
static int
loopback_name(const struct http *ht, const char *name, size_t n)
{
	static const char *const names[] = { "localhost", "127.0.0.1", "[::1]" };
	size_t i;

	for (i = 0; i < NELEM(names); i++)
		if (n == strlen(names[i]) && strncasecmp(name, names[i], n) == 0)
			return 1;
	return n == strlen(ht->listen_host) && strncasecmp(name, ht->listen_host,
	    n) == 0;
}

/* Is a ("host", "host:port", "[v6]:port") a loopback name, any port? */
static int
loopback_authority(const struct http *ht, const char *a)
{
	const char *colon;
	size_t n;

	if (a[0] == '[') {
		if ((colon = strchr(a, ']')) == NULL)
			return 0;
		colon++;
	} else
		colon = a + strcspn(a, ":");
	n = (size_t)(colon - a);
	if (*colon == ':') {
		size_t d = strspn(colon + 1, "0123456789");
		if (d == 0 || d > 5 || colon[1 + d] != '\0')
			return 0;
	} else if (*colon != '\0')
		return 0;
	return n > 0 && loopback_name(ht, a, n);
}

static int
origin_ok(struct http *ht, struct evhttp_request *req)
{
	const char *o = http_hdr(req, "Origin");
	size_t i;

	if (o == NULL)
		return 1;	/* not a browser */
	for (i = 0; i < ht->conf->allowed_origins.n; i++)
		if (strcmp(o, ht->conf->allowed_origins.v[i]) == 0)
			return 1;
	if (!ht->loopback)
		return 0;
	if (strncasecmp(o, "http://", 7) == 0)
		return loopback_authority(ht, o + 7);
	if (strncasecmp(o, "https://", 8) == 0)
		return loopback_authority(ht, o + 8);
	return 0;
}

static int
host_ok(struct http *ht, struct evhttp_request *req)
{
	const char *h = http_hdr(req, "Host");

	return !ht->loopback || h == NULL || loopback_authority(ht, h);
}

static int
auth_ok(struct http *ht, struct evhttp_request *req)
{
	const char *a = http_hdr(req, "Authorization"), *tok;

	if (a == NULL || strncasecmp(a, "Bearer ", 7) != 0)
		return 0;
	for (tok = a + 7; *tok == ' '; tok++)
		;
	return jsonu_ct_equal(tok, strlen(tok), ht->key, ht->keylen);
}

/* ---- media types ---- */

int
http_accepts(const char *h, const char *type)
{
	const char *p = h, *slash = strchr(type, '/');
	size_t tl = strlen(type), ml = (size_t)(slash - type);

	while (*p != '\0') {
		const char *e = p, *semi;
		size_t n;

		while (*e != '\0' && *e != ',')
			e++;
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		semi = p;
		while (semi < e && *semi != ';')
			semi++;
		n = (size_t)(semi - p);
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		/* q=0 means "not acceptable" */
		if (semi < e) {
			const char *q = semi;
			while (q < e) {
				while (q < e && (*q == ';' || *q == ' '))
					q++;
				if ((size_t)(e - q) >= 3 && strncasecmp(q, "q=0", 3) == 0 &&
				    (q + 3 == e || q[3] == ';' || q[3] == ' ' ||
				    (q[3] == '.' && strspn(q + 4, "0") >= (size_t)(e - q - 4))))
					goto next;
				while (q < e && *q != ';')
					q++;
			}
		}
		if ((n == tl && strncasecmp(p, type, tl) == 0) ||
		    (n == 3 && strncmp(p, "*/*", 3) == 0) ||
		    (n == ml + 2 && strncasecmp(p, type, ml + 1) == 0 && p[ml + 1] == '*'))
			return 1;
next:
		p = *e == ',' ? e + 1 : e;
	}
	return 0;
}

int
http_ctype_json(const char *ct)
{
	size_t n;

	if (ct == NULL)
		return 0;
	while (*ct == ' ')
		ct++;
	n = strcspn(ct, "; ");
	return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

/* ---- oversized bodies (see the top of the file) ---- */

/*
 * The one server whose connections are watched: evhttp's bufferevent hook
 * passes no argument down to the input callback, so the callback finds the
 * server here (one orchestrator, one HTTP server).
 */
static struct http *hs_owner;

static struct hstream *
hs_get(struct http *ht, int fd, const void *bev)
{
	struct hstream *h;

	if (fd < 0 || fd > (1 << 22))
		return NULL;
	if ((size_t)fd >= ht->hs_n) {
		size_t n = (size_t)fd + 64;
		ht->hs_tab = xreallocarray(ht->hs_tab, n, sizeof(*ht->hs_tab));
		memset(ht->hs_tab + ht->hs_n, 0, (n - ht->hs_n) *
		    sizeof(*ht->hs_tab));
		ht->hs_n = n;
	}
	h = &ht->hs_tab[fd];
	if (h->bev != bev) {
		memset(h, 0, sizeof(*h));
		h->bev = bev;
		h->clen = -1;
	}
	return h;
}

static int
hs_prefix(const char *l, size_t n, const char *p)
{
	size_t pl = strlen(p);

	return n >= pl && strncasecmp(l, p, pl) == 0;
}

/* One complete line of a head (without CR LF); 1: the head ended. */
static int
hs_line(struct hstream *h, const char *l, size_t n)
{
	const char *v, *es, *t;
	long long cl;
	char num[32];
	size_t k;

	if (n == 0)
		return h->nlines > 0;	/* blank lines before a request: skip */
	if (h->nlines < 255)
		h->nlines++;
	if (h->nlines == 1) {
		h->has_body = hs_prefix(l, n, "POST ") || hs_prefix(l, n, "PUT ") ||
		    hs_prefix(l, n, "PATCH ");
		h->target[0] = '\0';
		if ((t = memchr(l, ' ', n)) != NULL) {
			t++;
			k = strcspn(t, " ?");
			if (k > (size_t)(l + n - t))
				k = (size_t)(l + n - t);
			if (k >= sizeof(h->target))
				k = sizeof(h->target) - 1;
			memcpy(h->target, t, k);
			h->target[k] = '\0';
		}
		return 0;
	}
	if (hs_prefix(l, n, "content-length:")) {
		v = l + 15;
		while (v < l + n && (*v == ' ' || *v == '\t'))
			v++;
		k = (size_t)(l + n - v);
		while (k > 0 && (v[k - 1] == ' ' || v[k - 1] == '\t'))
			k--;
		if (k > 0 && k < sizeof(num)) {
			memcpy(num, v, k);
			num[k] = '\0';
			if (strnum_ll(num, 0, LLONG_MAX, &cl, &es) == 0)
				h->clen = cl;
		}
	} else if (hs_prefix(l, n, "transfer-encoding:"))
		h->chunked = 1;
	return 0;
}

/* The route serving path, or NULL. */
static const struct http_route *
route_find(const struct http *ht, const char *path)
{
	size_t i, n;

	for (i = 0; i < ht->nroutes; i++) {
		n = strlen(ht->routes[i].path);
		if (ht->routes[i].prefix ? strncmp(path, ht->routes[i].path, n) == 0 :
		    strcmp(path, ht->routes[i].path) == 0)
			return &ht->routes[i];
	}
	return NULL;
}

static void
hs_too_large(struct http *ht, struct bufferevent *bev, struct evbuffer *in,
    struct hstream *h)
{
	char msg[200], head[256];
	cJSON *o;
	char *body;
	int fd = (int)bufferevent_getfd(bev), n;

	snprintf(msg, sizeof(msg), "Payload Too Large: the request body is %lld "
	    "bytes; the limit is %lld bytes (http.max_body)", h->clen,
	    ht->conf->max_body);
	o = route_error(route_find(ht, h->target), 413, "too_large", msg);
	body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	n = snprintf(head, sizeof(head), "HTTP/1.1 413 Payload Too Large\r\n"
	    "Content-Type: application/json\r\nCache-Control: no-store\r\n"
	    "Connection: close\r\nContent-Length: %zu\r\n\r\n", strlen(body));
	/* Nothing else is being written (checked by the caller). */
	if (send(fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n ||
	    send(fd, body, strlen(body), MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    (ssize_t)strlen(body))
		log_debug("413 reply not sent whole");
	(void)shutdown(fd, SHUT_WR);
	free(body);
	http_count_status(ht, 413);
	ht->n_too_large++;
	log_info("413: request body of %lld bytes refused (limit %lld)", h->clen,
	    ht->conf->max_body);
	h->st = HS_SINK;
	evbuffer_drain(in, evbuffer_get_length(in));
}

/*
 * Feeds take bytes at p through h's framing. 1: stop watching this input
 * (a pass, a sink or a refusal happened), else 0.
 */
static int
hs_feed(struct http *ht, struct bufferevent *bev, struct evbuffer *in,
    struct hstream *h, const char *p, size_t take)
{
	size_t j, n, skip;

	for (j = 0; j < take; j++) {
		if (h->st == HS_BODY) {
			skip = take - j;
			if ((unsigned long long)skip > h->left)
				skip = (size_t)h->left;
			h->left -= skip;
			j += skip - 1;
			if (h->left == 0)
				h->st = HS_HEAD;
			continue;
		}
		if (h->st != HS_HEAD)
			return 1;
		if (p[j] != '\n') {
			if (h->llen < sizeof(h->line))
				h->line[h->llen] = p[j];
			h->llen++;
			continue;
		}
		n = h->llen < sizeof(h->line) ? h->llen : sizeof(h->line);
		if (h->llen <= sizeof(h->line) && n > 0 && h->line[n - 1] == '\r')
			n--;
		h->llen = 0;
		if (!hs_line(h, h->line, n))
			continue;
		/* The head ended. */
		if (h->chunked && h->has_body) {
			h->st = HS_PASS;	/* evhttp's limit */
			return 1;
		}
		if (h->has_body && h->clen > ht->conf->max_body) {
			/* A reply still being written (pipelining): ours must
			 * not overtake it; evhttp's page. */
			if (evbuffer_get_length(bufferevent_get_output(bev)) > 0)
				h->st = HS_PASS;
			else
				hs_too_large(ht, bev, in, h);
			return 1;
		}
		if (h->has_body && h->clen > 0) {
			h->st = HS_BODY;
			h->left = (unsigned long long)h->clen;
		}
		h->nlines = 0;
		h->clen = -1;
		h->chunked = h->has_body = 0;
	}
	return 0;
}

static void
hs_input_cb(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
	struct bufferevent *bev = arg;
	struct http *ht = hs_owner;
	struct hstream *h;
	struct evbuffer_ptr pos;
	struct evbuffer_iovec vec[16];
	size_t total, i, take;
	int nvec, k;

	if (info->n_added == 0 || ht == NULL)
		return;
	if ((h = hs_get(ht, (int)bufferevent_getfd(bev), bev)) == NULL)
		return;
	if (h->st == HS_SINK) {
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	if (h->st == HS_PASS)
		return;
	total = evbuffer_get_length(in);
	if (info->n_added > total ||
	    evbuffer_ptr_set(in, &pos, total - info->n_added, EVBUFFER_PTR_SET) == -1)
		return;
	/* Walk the new bytes, 16 segments at a time. */
	for (i = total - info->n_added; i < total;) {
		if (evbuffer_ptr_set(in, &pos, i, EVBUFFER_PTR_SET) == -1)
			return;
		nvec = evbuffer_peek(in, (ev_ssize_t)(total - i), &pos, vec, 16);
		if (nvec <= 0)
			return;
		if (nvec > 16)
			nvec = 16;
		for (k = 0; k < nvec && i < total; k++) {
			take = vec[k].iov_len;
			if (take > total - i)
				take = total - i;
			if (hs_feed(ht, bev, in, h, vec[k].iov_base, take))
				return;
			i += take;
		}
	}
}

/* evhttp's bufferevent for each new connection, with the input watched. */
static struct bufferevent *
hs_bevcb(struct event_base *base, void *arg)
{
	struct http *ht = arg;
	struct bufferevent *bev;
	size_t i;

	if ((bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE)) == NULL)
		return NULL;
	/* A freed connection's bufferevent may have had this address. */
	for (i = 0; i < ht->hs_n; i++)
		if (ht->hs_tab[i].bev == bev)
			ht->hs_tab[i].bev = NULL;
	evbuffer_add_cb(bufferevent_get_input(bev), hs_input_cb, bev);
	return bev;
}

/* ---- dispatch ---- */

static void
http_cb(struct evhttp_request *req, void *arg)
{
	struct http *ht = arg;
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	const char *path = u ? evhttp_uri_get_path(u) : NULL;
	const struct http_route *r;

	if (path == NULL || *path == '\0')
		path = "/";
	r = route_find(ht, path);
	if (!host_ok(ht, req)) {
		char shown[80], msg[256];
		const char *h = http_hdr(req, "Host");

		log_escape(shown, sizeof(shown), h, strlen(h));
		snprintf(msg, sizeof(msg), "Host '%s' not allowed: this server "
		    "listens on a loopback address and answers only requests for "
		    "localhost, 127.0.0.1 or [::1] (DNS rebinding defence)", shown);
		send_route_err(ht, req, r, 403, "forbidden_host", msg);
		return;
	}
	if (!origin_ok(ht, req)) {
		send_route_err(ht, req, r, 403, "forbidden_origin", ht->loopback ?
		    "Origin not allowed: only pages from localhost, 127.0.0.1, "
		    "[::1] or an origin in allowed_origins may call this server" :
		    "Origin not allowed: only origins in allowed_origins may call "
		    "this server");
		return;
	}
	if (r != NULL && !r->auth) {
		ht->req[r->endpoint]++;
		r->handler(ht, req, path, r->arg);
		return;
	}
	if (!auth_ok(ht, req)) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "WWW-Authenticate", "Bearer realm=\"orchestrator\"");
		send_route_err(ht, req, r, 401, "unauthorized", "send "
		    "Authorization: Bearer <key> with the orchestrator's key");
		return;
	}
	if (r != NULL) {
		ht->req[r->endpoint]++;
		r->handler(ht, req, path, r->arg);
		return;
	}
	ht->req[HTTP_EP_OTHER]++;
	http_send_err(ht, req, 404, "not_found", "no such endpoint (try /mcp, "
	    "/v1/sessions, /healthz, /readyz, /metrics)");
}

/* ---- the server ---- */

/* Splits "host:port" or "[v6]:port". 0 or -1 with err. */
static int
split_listen(const char *listen, char *host, size_t hostlen, long long *port,
    char *err, size_t errlen)
{
	const char *colon, *es;

	if ((colon = strrchr(listen, ':')) == NULL ||
	    (size_t)(colon - listen) >= hostlen ||
	    strnum_ll(colon + 1, 1, 65535, port, &es) == -1) {
		snprintf(err, errlen, "listen: expected host:port, got '%s'", listen);
		return -1;
	}
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	return 0;
}

/* Is host (from split_listen) a loopback name or address? */
static int
listen_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (strcasecmp(host, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) &&
		    a6.s6_addr[12] == 127);
	return 0;
}

struct http *
http_new(struct event_base *base, const struct conf *conf, const char *key,
    const struct http_route *routes, size_t n, char *err, size_t errlen)
{
	struct http *ht = xcalloc(1, sizeof(*ht));
	char host[256];
	long long port;
	evutil_socket_t fd;
	int one = 1;

	ht->base = base;
	ht->conf = conf;
	ht->routes = routes;
	ht->nroutes = n;
	ht->key = xstrdup(key);
	ht->keylen = strlen(key);
	if ((ht->evh = evhttp_new(base)) == NULL) {
		snprintf(err, errlen, "evhttp_new failed");
		goto fail;
	}
	evhttp_set_max_body_size(ht->evh, (ev_ssize_t)conf->max_body);
	evhttp_set_max_headers_size(ht->evh, (ev_ssize_t)conf->max_headers);
	evhttp_set_timeout(ht->evh, (int)(conf->http_timeout_ms / 1000));
	evhttp_set_allowed_methods(ht->evh, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_DELETE | EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH |
	    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_HEAD);
	evhttp_set_gencb(ht->evh, http_cb, ht);
	hs_owner = ht;
	evhttp_set_bevcb(ht->evh, hs_bevcb, ht);
	if (split_listen(conf->listen, host, sizeof(host), &port, err,
	    errlen) == -1)
		goto fail;
	ht->loopback = listen_loopback(host);
	snprintf(ht->listen_host, sizeof(ht->listen_host), strchr(host, ':') ?
	    "[%s]" : "%s", host);
	if ((ht->bound = evhttp_bind_socket_with_handle(ht->evh, host,
	    (ev_uint16_t)port)) == NULL) {
		snprintf(err, errlen, "cannot listen on %s", conf->listen);
		goto fail;
	}
	/* Small replies on keep-alive connections must not wait for the
	 * client's delayed ACK (Nagle): accepted sockets inherit this. */
	fd = evhttp_bound_socket_get_fd(ht->bound);
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
		log_warn("listen: TCP_NODELAY");
	return ht;
fail:
	http_free(ht);
	return NULL;
}

void
http_drain(struct http *ht)
{
	ht->draining = 1;
	if (ht->bound != NULL) {
		evhttp_del_accept_socket(ht->evh, ht->bound);
		ht->bound = NULL;
	}
}

int
http_draining(const struct http *ht)
{
	return ht->draining;
}

void
http_inflight_add(struct http *ht, int delta)
{
	ht->inflight += delta;
}

int
http_inflight(const struct http *ht)
{
	return ht->inflight;
}

struct event_base *
http_base(const struct http *ht)
{
	return ht->base;
}

void
http_free(struct http *ht)
{
	if (ht == NULL)
		return;
	if (ht->evh != NULL)
		evhttp_free(ht->evh);
	if (hs_owner == ht)
		hs_owner = NULL;
	free(ht->hs_tab);
	if (ht->key != NULL) {
		explicit_bzero(ht->key, ht->keylen);
		free(ht->key);
	}
	free(ht);
}

int
http_metrics(const struct http *ht, struct buf *b)
{
	int r = 0;

	r |= buf_addf(b, "# HELP orch_http_requests_total HTTP requests by endpoint.\n"
	    "# TYPE orch_http_requests_total counter\n"
	    "orch_http_requests_total{endpoint=\"mcp\"} %llu\n"
	    "orch_http_requests_total{endpoint=\"rest\"} %llu\n"
	    "orch_http_requests_total{endpoint=\"other\"} %llu\n",
	    ht->req[HTTP_EP_MCP], ht->req[HTTP_EP_REST], ht->req[HTTP_EP_OTHER]);
	r |= buf_addf(b, "# HELP orch_http_responses_total HTTP responses by status class.\n"
	    "# TYPE orch_http_responses_total counter\n"
	    "orch_http_responses_total{class=\"2xx\"} %llu\n"
	    "orch_http_responses_total{class=\"4xx\"} %llu\n"
	    "orch_http_responses_total{class=\"5xx\"} %llu\n"
	    "# HELP orch_auth_failures_total Requests refused for a missing or wrong key.\n"
	    "# TYPE orch_auth_failures_total counter\norch_auth_failures_total %llu\n"
	    "# HELP orch_origin_rejected_total Requests refused for their Origin "
	    "or Host (403).\n"
	    "# TYPE orch_origin_rejected_total counter\norch_origin_rejected_total %llu\n",
	    ht->st_2xx, ht->st_4xx, ht->st_5xx, ht->st_401, ht->st_403);
	return r ? -1 : 0;
}
