/*
 * server.c: the HTTP front end put together (server.h): the route table
 * (/healthz, /readyz, /mcp, /v1/sessions, /metrics, /v1/users,
 * /openapi.json) over http.c, the two surfaces (mcp_http.c, rest.c), the
 * /metrics page that joins every part's counters, and the REST API's
 * OpenAPI document (docs/openapi.json, built in). It owns no protocol of
 * its own. While draining, /readyz answers 503 with Retry-After (http.c
 * adds it to every 503).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "api/homes.h"
#include "http/http.h"
#include "mcp/mcp_http.h"
#include "api/rest.h"
#include "api/xfer.h"
#include "server.h"
#include "lib/work.h"
#include "xmalloc.h"

/* docs/openapi.json as bytes and its ETag, made by the Makefile (lint
 * tools do not build it: an empty document stands in for them). */
#ifndef __clang_analyzer__
#include "openapi_json.h"
#else
static const unsigned char openapi_json[] = "{}";
#define OPENAPI_ETAG "\"lint\""
#endif

/* Routes, in match order; ROUTE_* index the table's handler args. */
enum { ROUTE_HEALTHZ, ROUTE_READYZ, ROUTE_MCP, ROUTE_MCP_SLASH, ROUTE_REST,
    ROUTE_METRICS, ROUTE_HOMES, ROUTE_OPENAPI, ROUTE_MAX };

struct server {
	struct http		*ht;
	struct sessmgr		*mgr;
	struct mcp_front	*mcp;
	struct rest_ctx		 rest;
	struct homes_ctx	 homes;
	struct http_route	 routes[ROUTE_MAX];
};

static void
healthz(struct http *ht, struct http_req *req, const char *path UNUSED,
    void *arg UNUSED)
{
	http_send_body(ht, req, 200, "application/json", "{\"ok\":true}\n", 12);
}

static void
readyz(struct http *ht, struct http_req *req, const char *path UNUSED,
    void *arg)
{
	struct server *sv = arg;
	int ready;
	cJSON *o;

	if (http_draining(ht)) {
		http_send_err(ht, req, 503, "draining", "shutting down");
		return;
	}
	/* reconciled, and the runtime's checks (sessmgr_health) all pass */
	o = sessmgr_health(sv->mgr, &ready);
	http_send_json(ht, req, ready ? 200 : 503, o);
	cJSON_Delete(o);
}

static void
metrics(struct http *ht, struct http_req *req, const char *path UNUSED,
    void *arg)
{
	struct server *sv = arg;
	struct buf b;
	int r = 0, wt, wb, wq, wk;
	unsigned long long wr;

	work_stats(&wt, &wb, &wq);
	work_key_stats(&wk, &wr);
	buf_init(&b, 1 << 20);
	r |= http_metrics(ht, &b);
	r |= mcp_http_metrics(sv->mcp, &b);
	r |= buf_addf(&b, "# HELP orch_inflight_requests Requests waiting for a worker result.\n"
	    "# TYPE orch_inflight_requests gauge\norch_inflight_requests %d\n"
	    "# HELP orch_worker_threads Worker threads alive.\n"
	    "# TYPE orch_worker_threads gauge\norch_worker_threads %d\n"
	    "# HELP orch_worker_busy Worker threads running work.\n"
	    "# TYPE orch_worker_busy gauge\norch_worker_busy %d\n"
	    "# HELP orch_worker_queued Work items waiting for a thread.\n"
	    "# TYPE orch_worker_queued gauge\norch_worker_queued %d\n",
	    http_inflight(ht), wt, wb, wq);
	r |= buf_addf(&b, "# HELP orch_work_sessions Sessions with work queued or running.\n"
	    "# TYPE orch_work_sessions gauge\norch_work_sessions %d\n"
	    "# HELP orch_work_refused_total Calls refused at the per-session cap "
	    "(limits.session_calls).\n"
	    "# TYPE orch_work_refused_total counter\norch_work_refused_total %llu\n",
	    wk, wr);
	r |= sessmgr_metrics(sv->mgr, &b);
	if (r != 0) {
		buf_free(&b);
		http_send_err(ht, req, 500, "internal", "metrics too large");
		return;
	}
	http_send_body(ht, req, 200, "text/plain; version=0.0.4", b.p, b.len);
	buf_free(&b);
}

/* GET /openapi.json: the document this binary was built with, under the
 * bearer key like every route but the probes (docs/operator-guide.md §3). */
static void
openapi(struct http *ht, struct http_req *req, const char *path UNUSED,
    void *arg UNUSED)
{
	if (http_req_method(req) != HTTP_M_GET) {
		http_add_header(req, "Allow", "GET");
		http_send_err(ht, req, 405, "method_not_allowed", "use GET");
		return;
	}
	http_add_header(req, "ETag", OPENAPI_ETAG);
	http_send_body(ht, req, 200, "application/json",
	    (const char *)openapi_json, sizeof(openapi_json));
}

struct server *
server_new(struct event_base *base, const struct conf *conf,
    struct sessmgr *mgr, const char *key, long long max_fds, char *err,
    size_t errlen)
{
	struct server *sv = xcalloc(1, sizeof(*sv));
	struct http_route *r = sv->routes;

	sv->mgr = mgr;
	sv->mcp = mcp_http_new(mgr, conf);
	sv->rest.mgr = mgr;
	sv->rest.conf = conf;
	r[ROUTE_HEALTHZ] = (struct http_route){ "/healthz", 0, 0, HTTP_EP_OTHER,
	    NULL, healthz, sv, NULL };
	r[ROUTE_READYZ] = (struct http_route){ "/readyz", 0, 0, HTTP_EP_OTHER,
	    NULL, readyz, sv, NULL };
	r[ROUTE_MCP] = (struct http_route){ "/mcp", 0, 1, HTTP_EP_MCP,
	    mcp_http_error, mcp_http_handle, sv->mcp, NULL };
	r[ROUTE_MCP_SLASH] = r[ROUTE_MCP];
	r[ROUTE_MCP_SLASH].path = "/mcp/";
	r[ROUTE_REST] = (struct http_route){ "/v1/sessions", 1, 1, HTTP_EP_REST,
	    NULL, rest_handle, &sv->rest, xfer_body_streamed };
	r[ROUTE_METRICS] = (struct http_route){ "/metrics", 0, 1, HTTP_EP_OTHER,
	    NULL, metrics, sv, NULL };
	sv->homes = (struct homes_ctx){ mgr, conf };
	r[ROUTE_HOMES] = (struct http_route){ "/v1/users/", 1, 1, HTTP_EP_REST,
	    NULL, homes_handle, &sv->homes, NULL };
	r[ROUTE_OPENAPI] = (struct http_route){ "/openapi.json", 0, 1,
	    HTTP_EP_OTHER, NULL, openapi, sv, NULL };
	if ((sv->ht = http_new(base, conf, key, sv->routes, ROUTE_MAX, max_fds,
	    err, errlen)) == NULL) {
		server_free(sv);
		return NULL;
	}
	return sv;
}

void
server_drain(struct server *sv)
{
	http_drain(sv->ht);
}

int
server_abort_inflight(struct server *sv)
{
	return http_abort_inflight(sv->ht);
}

int
server_output_pending(struct server *sv)
{
	return http_output_pending(sv->ht);
}

int
server_inflight(struct server *sv)
{
	return http_inflight(sv->ht);
}

void
server_free(struct server *sv)
{
	if (sv == NULL)
		return;
	http_free(sv->ht);
	mcp_http_free(sv->mcp);
	free(sv);
}
