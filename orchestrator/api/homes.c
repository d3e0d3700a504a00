/*
 * homes.c: per-user homes over REST (homes.h). The routes answer from a
 * worker (the runtime's home ops block). A user id in a path passes
 * id_session_valid or is refused (400) before anything else sees it.
 * DELETE refuses (409) while a session of that user runs or is being
 * made, or while the runtime says a sandbox holds the home.
 */
#include <stdlib.h>
#include <string.h>

#include "homes.h"
#include "ids.h"
#include "log.h"
#include "runtime/runtime.h"
#include "util.h"
#include "lib/work.h"
#include "xmalloc.h"

struct hjob {
	struct http		*ht;
	struct http_req		*req;
	struct sessmgr		*mgr;
	int			 del;
	char			 user[ID_SESSION_MAX + 1];
	int			 status;
	cJSON			*body;
};

static cJSON *
home_json(const struct rt_home *h, int sessions)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "user", h->user);
	cJSON_AddBoolToObject(o, "exists", h->exists);
	cJSON_AddNumberToObject(o, "size_bytes", (double)h->size_bytes);
	cJSON_AddNumberToObject(o, "used_bytes", (double)h->used_bytes);
	cJSON_AddNumberToObject(o, "last_used_ms", (double)h->last_used_ms);
	cJSON_AddBoolToObject(o, "in_use", h->in_use);
	cJSON_AddNumberToObject(o, "sessions", sessions);
	return o;
}

static void
hjob_err(struct hjob *j, int status, const char *code, const char *msg)
{
	j->status = status;
	j->body = http_err_json(code, msg);
}

static void
hjob_run(void *arg)
{
	struct hjob *j = arg;
	struct runtime *rt = sessmgr_runtime(j->mgr);
	struct rt_home h;
	char err[256], msg[512];
	int n;

	if (rt->ops->home_get == NULL) {
		hjob_err(j, 501, "not_supported", "this runtime has no homes");
		return;
	}
	if (rt->ops->home_get(rt, j->user, &h, err, sizeof(err)) == -1) {
		hjob_err(j, 500, "runtime_error", err);
		return;
	}
	n = sessmgr_user_active(j->mgr, j->user);
	if (!j->del) {
		j->status = 200;
		j->body = home_json(&h, n);
		return;
	}
	if (!h.exists) {
		snprintf(msg, sizeof(msg), "user %s has no home", j->user);
		hjob_err(j, 404, "not_found", msg);
		return;
	}
	if (n > 0) {
		snprintf(msg, sizeof(msg), "the home of user %s is in use by %d "
		    "running session%s: stop or delete %s first", j->user, n,
		    n == 1 ? "" : "s", n == 1 ? "it" : "them");
		hjob_err(j, 409, "in_use", msg);
		return;
	}
	if (rt->ops->home_delete(rt, j->user, err, sizeof(err)) == -1) {
		if (strcmp(err, "in use") == 0) {
			snprintf(msg, sizeof(msg), "the home of user %s is still "
			    "mounted in a sandbox; retry in a moment", j->user);
			hjob_err(j, 409, "in_use", msg);
		} else
			hjob_err(j, 500, "runtime_error", err);
		return;
	}
	log_info("home user=%s deleted over REST", j->user);
	j->status = 200;
	j->body = cJSON_CreateObject();
	cJSON_AddStringToObject(j->body, "user", j->user);
	cJSON_AddBoolToObject(j->body, "deleted", 1);
}

static void
hjob_done(void *arg)
{
	struct hjob *j = arg;

	http_send_json(j->ht, j->req, j->status, j->body);
	http_inflight_add(j->ht, -1);
	cJSON_Delete(j->body);
	free(j);
}

void
homes_handle(struct http *ht, struct http_req *req, const char *path,
    void *arg)
{
	struct homes_ctx *ctx = arg;
	enum http_method cmd = http_req_method(req);
	const char *rest = path + strlen("/v1/users/"), *slash;
	struct hjob *j;
	size_t n;

	if (strncmp(path, "/v1/users/", 10) != 0 ||
	    (slash = strchr(rest, '/')) == NULL || strcmp(slash, "/home") != 0) {
		http_send_err(ht, req, 404, "not_found", "no such endpoint");
		return;
	}
	n = (size_t)(slash - rest);
	j = xcalloc(1, sizeof(*j));
	if (n == 0 || n > ID_SESSION_MAX) {
		free(j);
		http_send_err(ht, req, 400, "bad_request", "user ids are 1-128 "
		    "characters from A-Z a-z 0-9 - _ . : @ + =");
		return;
	}
	memcpy(j->user, rest, n);
	j->user[n] = '\0';
	if (!id_session_valid(j->user)) {
		free(j);
		http_send_err(ht, req, 400, "bad_request", "user ids are 1-128 "
		    "characters from A-Z a-z 0-9 - _ . : @ + =");
		return;
	}
	if (cmd != HTTP_M_GET && cmd != HTTP_M_DELETE) {
		free(j);
		http_add_header(req, "Allow", "GET, DELETE");
		http_send_err(ht, req, 405, "method_not_allowed", "use GET or DELETE");
		return;
	}
	j->ht = ht;
	j->req = req;
	j->mgr = ctx->mgr;
	j->del = cmd == HTTP_M_DELETE;
	http_inflight_add(ht, 1);
	work_submit(hjob_run, hjob_done, j);
}

void
homes_sweep(struct sessmgr *m, const struct conf *c)
{
	static long long last;	/* mono ms; the tick runs one at a time */
	struct runtime *rt = sessmgr_runtime(m);
	struct rt_home *v = NULL;
	long long now = util_unix_ms(), every;
	char err[256];
	size_t n = 0, i;

	if (c->homes_ttl_ms <= 0 || rt->ops->home_list == NULL ||
	    rt->ops->home_delete == NULL)
		return;
	every = c->homes_ttl_ms / 4 < 60000 ? c->homes_ttl_ms / 4 : 60000;
	if (every < 1000)
		every = 1000;
	if (last != 0 && util_mono_ms() - last < every)
		return;
	last = util_mono_ms();
	if (rt->ops->home_list(rt, &v, &n, err, sizeof(err)) == -1) {
		log_warnx("homes: list failed err=\"%s\"", err);
		return;
	}
	for (i = 0; i < n; i++) {
		if (v[i].in_use || v[i].last_used_ms <= 0 ||
		    now - v[i].last_used_ms < c->homes_ttl_ms ||
		    sessmgr_user_active(m, v[i].user) > 0)
			continue;
		if (rt->ops->home_delete(rt, v[i].user, err, sizeof(err)) == -1)
			log_warnx("home user=%s purge failed err=\"%s\"", v[i].user,
			    err);
		else
			log_info("home user=%s purged unused_ms=%lld (homes.ttl)",
			    v[i].user, now - v[i].last_used_ms);
	}
	free(v);
}
