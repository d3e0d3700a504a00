/*
 * httpreq.c: the request side of the HTTP server (http.h): the request's
 * accessors, the route table, the Origin/Host check and the bearer key,
 * media types, and the counters page. Connections, parsing, the dispatch
 * to a route's handler and replies are http.c, which calls this file (and
 * never the reverse).
 *
 * Origin and Host (DNS rebinding; every route, before the key). A request
 * without Origin is no browser's and passes; an Origin passes when it is
 * in allowed_origins, or, while the listener is a loopback address, when
 * it is http(s)://localhost, 127.0.0.1 or [::1] (or the listen host) with
 * any port: a page served from this machine. While the listener is a
 * loopback address the Host must name it too: localhost, 127.0.0.1, [::1]
 * or the listen host, any port (a request without Host, HTTP/1.0, passes:
 * browsers always send one). A rebinding page's requests carry its own
 * name as Host, so they get 403 even when they carry no Origin. On any
 * other listener the operator's names for it are unknown here: Host is
 * not checked, and only allowed_origins pass (docs/operator-guide.md).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "http_int.h"
#include "lib/jsonu.h"
#include "log.h"
#include "xmalloc.h"

cJSON *
http_err_json(const char *code, const char *msg)
{
	cJSON *o = cJSON_CreateObject(), *e;

	e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	return o;
}

/* An error this layer answers, in r's shape (r may be NULL). */
cJSON *
hreq_route_error(const struct http_route *r, int status, const char *code,
    const char *msg)
{
	if (r != NULL && r->error_body != NULL)
		return r->error_body(status, code, msg);
	return http_err_json(code, msg);
}

const char *
http_hdr(const struct http_req *r, const char *name)
{
	return h1head_get(&r->hd, name, NULL);	/* NUL-terminated there */
}

enum http_method
http_req_method(const struct http_req *r)
{
	return r->method;
}

const char *
http_req_body(const struct http_req *r, size_t *len)
{
	*len = r->body.len;
	return r->body.p != NULL ? r->body.p : "";
}

const char *
http_req_query(const struct http_req *r)
{
	return r->query;
}

const char *
http_req_peer(const struct http_req *r)
{
	return r->c != NULL ? r->c->peer : "-";
}

int
http_req_gone(const struct http_req *r)
{
	return r->c == NULL;
}

void
http_req_on_abort(struct http_req *r, void (*cb)(struct http_req *,
    enum http_abort, void *), void *arg)
{
	r->abort_cb = cb;
	r->abort_arg = arg;
}

void
http_add_header(struct http_req *r, const char *name, const char *value)
{
	if (strpbrk(name, "\r\n:") != NULL || strpbrk(value, "\r\n") != NULL)
		return;
	if (buf_addf(&r->extra, "%s: %s\r\n", name, value) == -1)
		log_warnx("http: reply headers too large; %s dropped", name);
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

int
hreq_origin_ok(struct http *ht, struct http_req *req)
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

int
hreq_host_ok(struct http *ht, struct http_req *req)
{
	const char *h = http_hdr(req, "Host");

	return !ht->loopback || h == NULL || loopback_authority(ht, h);
}

int
hreq_auth_ok(struct http *ht, struct http_req *req)
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

/* ---- routes ---- */

/* The route serving path, or NULL. */
const struct http_route *
hreq_route_find(const struct http *ht, const char *path)
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

/*
 * The route a request's raw first bytes name ("METHOD /path..."), so that
 * a request line the head's reader refuses (a bad method) is still answered in its
 * route's shape. Best effort: NULL when the target is not in c->in.
 */
void
hreq_guess(struct hconn *c)
{
	char t[64];
	const char *p, *e, *end;
	size_t n;

	c->guess = NULL;
	if (c->in.len == 0)
		return;
	end = c->in.p + c->in.len;
	if ((p = memchr(c->in.p, ' ', c->in.len < 32 ? c->in.len : 32)) == NULL)
		return;
	p++;
	for (e = p; e < end && *e != ' ' && *e != '?' && *e != '\r' &&
	    *e != '\n'; e++)
		;
	n = (size_t)(e - p);
	if (e == end || n == 0 || n >= sizeof(t) || *p != '/')
		return;
	memcpy(t, p, n);
	t[n] = '\0';
	c->guess = hreq_route_find(c->ht, t);
}

/*
 * Splits the request target into path and query: origin-form
 * ("/p?q") or absolute-form ("http://host/p?q"). -1: neither.
 */
int
hreq_split_target(struct http_req *r)
{
	const char *u = r->hd.url_l > 0 ? r->hd.data.p + r->hd.url_o : "", *p, *q, *e;

	if (u[0] == '/')
		p = u;
	else if (strncasecmp(u, "http://", 7) == 0 || strncasecmp(u, "https://", 8) == 0) {
		p = strchr(u + (u[4] == ':' ? 7 : 8), '/');
		if (p == NULL)
			p = "/";
	} else
		return -1;
	e = p + strcspn(p, "#");
	q = memchr(p, '?', (size_t)(e - p));
	r->path = xstrndup(p, (size_t)((q != NULL ? q : e) - p));
	if (q != NULL)
		r->query = xstrndup(q + 1, (size_t)(e - q - 1));
	return 0;
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
	r |= buf_addf(b, "# HELP orch_http_connections Client connections open.\n"
	    "# TYPE orch_http_connections gauge\norch_http_connections %d\n"
	    "# HELP orch_http_connections_max The connection cap in force "
	    "(http.max_conns, below the descriptor limit).\n"
	    "# TYPE orch_http_connections_max gauge\norch_http_connections_max %lld\n"
	    "# HELP orch_http_conns_refused_total Connections refused at a cap.\n"
	    "# TYPE orch_http_conns_refused_total counter\n"
	    "orch_http_conns_refused_total{cap=\"total\"} %llu\n"
	    "orch_http_conns_refused_total{cap=\"per_addr\"} %llu\n"
	    "# HELP orch_http_conns_evicted_total Idle connections closed to make "
	    "room (a cap, or no descriptor).\n"
	    "# TYPE orch_http_conns_evicted_total counter\n"
	    "orch_http_conns_evicted_total %llu\n"
	    "# HELP orch_http_idle_closed_total Keep-alive connections closed "
	    "after http.idle_timeout.\n"
	    "# TYPE orch_http_idle_closed_total counter\norch_http_idle_closed_total %llu\n"
	    "# HELP orch_http_accept_errors_total accept() failures (EMFILE and "
	    "others).\n"
	    "# TYPE orch_http_accept_errors_total counter\n"
	    "orch_http_accept_errors_total %llu\n"
	    "# HELP orch_http_bad_requests_total Malformed requests (400).\n"
	    "# TYPE orch_http_bad_requests_total counter\norch_http_bad_requests_total %llu\n"
	    "# HELP orch_http_too_large_total Bodies refused (413).\n"
	    "# TYPE orch_http_too_large_total counter\norch_http_too_large_total %llu\n"
	    "# HELP orch_http_timeouts_total Connections timed out (408, or a "
	    "reply left unread).\n"
	    "# TYPE orch_http_timeouts_total counter\norch_http_timeouts_total %llu\n"
	    "# HELP orch_http_clients_gone_total Clients that left with a request "
	    "in flight (its call was cancelled).\n"
	    "# TYPE orch_http_clients_gone_total counter\norch_http_clients_gone_total %llu\n",
	    ht->nconns, ht->max_conns, ht->n_refused_total, ht->n_refused_addr,
	    ht->n_evicted, ht->n_idle_closed, ht->n_accept_err, ht->n_bad,
	    ht->n_too_large, ht->n_timeout, ht->n_gone);
	return r ? -1 : 0;
}

