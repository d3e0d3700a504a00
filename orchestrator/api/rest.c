/*
 * rest.c: the REST surface for trusted clients (docs/operator-guide.md):
 * GET/POST /v1/sessions, GET/DELETE /v1/sessions/{id}, POST
 * /v1/sessions/{id}/{stop,start}, PUT /v1/sessions/{id}/policy (only
 * narrows: policy.h; the one path besides a create that changes a
 * session's credential policy, and MCP has none). Parsing and answering run on the event
 * loop; the session operations (and GET of one session, which asks the
 * runtime and the agent what it uses) run on a worker (rjob) and answer
 * from its completion. A create's body holds id, org, user, policy and
 * the options of sessopt.h; any other member is refused. Errors are
 * {"error":{"code","message"}}; a runtime or agent failure is 503 (its
 * text also goes to the log). The runtimes' error texts name no host path
 * (runtime.h); the sandbox's own paths stay in them. An operation on a
 * session counts against its limits.session_calls with its tool calls
 * (work.h): beyond, 429. A create with an Idempotency-Key header is
 * recorded (idem.h) on its worker before it runs; a re-issue gets the
 * first success's status and body, and a failure frees the key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <cjson/cJSON.h>

#include "session/apps.h"
#include "http/http.h"
#include "idem.h"
#include "lib/jsonu.h"
#include "log.h"
#include "lib/policy.h"
#include "rest.h"
#include "lib/work.h"
#include "xfer.h"
#include "xmalloc.h"

enum rop { R_CREATE, R_STOP, R_START, R_DELETE, R_GET, R_APPS, R_EXPOSE,
	R_APP, R_UNEXPOSE, R_POLICY };

struct rjob {
	struct http		*ht;
	struct sessmgr		*mgr;
	struct http_req		*req;
	enum rop		 op;
	char			 sid[ID_SESSION_MAX + 1];
	char			 org[ID_SESSION_MAX + 1];
	char			 user[ID_SESSION_MAX + 1];
	cJSON			*body_in;	/* a create's body (opts point into it) */
	struct sess_opts	 opts;
	struct policy		*policy;	/* R_CREATE (NULL: none given),
						 * R_POLICY */
	char			 app[APP_NAME_MAX + 1];	/* R_APP, R_UNEXPOSE, R_EXPOSE */
	int			 port;			/* R_EXPOSE */
	/* R_CREATE with an Idempotency-Key (idem.h) */
	const struct conf	*conf;
	char			*idem_key;	/* NULL: none */
	char			 idem_fp[IDEM_FP_HEX + 1];
	/* out */
	int			 status;
	cJSON			*body;
};

static const char *
rop_name(enum rop op)
{
	switch (op) {
	case R_CREATE: return "create";
	case R_STOP: return "stop";
	case R_START: return "start";
	case R_DELETE: return "delete";
	case R_GET: return "read";
	case R_APPS: return "list apps";
	case R_EXPOSE: return "expose";
	case R_APP: return "read app";
	case R_UNEXPOSE: return "unexpose";
	case R_POLICY: return "set policy";
	}
	return "handle";
}

/* The app ops: s is the session (held by the caller's reference). */
static int
rjob_apps(struct rjob *r, struct sess *s, enum sess_err *e, char *err,
    size_t errlen)
{
	char note[256];
	cJSON *l, *a;

	switch (r->op) {
	case R_EXPOSE:
		if (sess_enter(s, NULL, e, err, errlen) == -1)
			return -1;
		r->body = apps_expose(s, r->port, r->app[0] ? r->app : NULL, e, err,
		    errlen, note, sizeof(note));
		sess_leave(s);
		if (r->body == NULL)
			return -1;
		if (note[0] != '\0')
			cJSON_AddStringToObject(r->body, "note", note);
		r->status = 201;
		return 0;
	case R_APPS:
		r->body = apps_list(s);
		r->status = 200;
		return 0;
	case R_APP:
		l = apps_list(s);
		a = cJSON_GetObjectItemCaseSensitive(l, "apps");
		for (a = a != NULL ? a->child : NULL; a != NULL; a = a->next) {
			const char *nm = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(a, "name"));

			if (nm != NULL && strcmp(nm, r->app) == 0)
				break;
		}
		if (a != NULL)
			r->body = cJSON_Duplicate(a, 1);
		cJSON_Delete(l);
		if (a == NULL) {
			*e = SE_NOTFOUND;
			snprintf(err, errlen, "no app named '%s' in session %s",
			    r->app, r->sid);
			return -1;
		}
		r->status = 200;
		return 0;
	case R_UNEXPOSE:
		if (sess_hold(s, LIFECYCLE_HOLD_MS) == -1) {
			*e = SE_BUSY;
			snprintf(err, errlen, "the session's sandbox is being changed: "
			    "retry");
			return -1;
		}
		if (apps_unexpose(s, r->app, e, err, errlen) == -1) {
			sess_release(s);
			return -1;
		}
		sess_release(s);
		r->body = cJSON_CreateObject();
		cJSON_AddStringToObject(r->body, "unexposed", r->app);
		r->status = 200;
		return 0;
	default:
		return -1;
	}
}

/*
 * A keyed create, before it runs: 1 when r is answered (the first
 * result, or an error of the key), 0 to run it (the key is recorded as
 * pending; rjob_run records the result).
 */
static int
create_keyed(struct rjob *r)
{
	struct idem_view v;
	enum idem_rc rc;
	char err[768];
	const char *code = "idempotency_unavailable";

	rc = idem_begin(r->conf, IDEM_CREATE, r->sid, r->idem_key, r->idem_fp,
	    &v, err, sizeof(err));
	switch (rc) {
	case IDEM_NEW:
		return 0;
	case IDEM_SAME:
		r->status = v.status;
		r->body = v.body != NULL ? cJSON_Parse(v.body) : NULL;
		if (r->body == NULL)
			r->body = cJSON_CreateObject();
		free(v.body);
		return 1;
	case IDEM_MISMATCH: r->status = 422; code = "idempotency_mismatch"; break;
	case IDEM_BUSY: r->status = 409; code = "idempotency_in_progress"; break;
	case IDEM_FULL_SCOPE: r->status = 429; code = "idempotency_limit"; break;
	case IDEM_FULL: r->status = 503; code = "idempotency_limit"; break;
	case IDEM_OFF: r->status = 501; break;
	default: r->status = 503; break;
	}
	free(v.body);
	r->body = http_err_json(code, err);
	return 1;
}

/* A keyed create's end: a success is what re-issues get; a failure
 * frees the key (nothing was made: a retry runs it again). */
static void
create_keyed_done(struct rjob *r)
{
	char *txt;

	if (r->status < 200 || r->status > 299) {
		idem_forget(r->conf, r->sid, r->idem_key);
		return;
	}
	txt = cJSON_PrintUnformatted(r->body);
	idem_done(r->conf, r->sid, r->idem_key, r->status, txt);
	free(txt);
}

static void
rjob_run(void *arg)
{
	struct rjob *r = arg;
	struct sessmgr *m = r->mgr;
	enum sess_err e = SE_OK;
	const char *code;
	char err[1024];
	struct sess *s;
	int rc = 0, created = 0;

	if (r->op == R_CREATE && r->idem_key != NULL && create_keyed(r) == 1)
		return;
	switch (r->op) {
	case R_CREATE:
	case R_START:
		s = sess_get(m, r->sid, r->org, r->user, r->op == R_CREATE, &e, err,
		    sizeof(err));
		if (s == NULL) {
			rc = -1;
			break;
		}
		/* The policy first: the sandbox is made and registered with it. */
		if (r->op == R_CREATE && r->policy != NULL)
			rc = sess_set_policy(s, r->policy, 0, &e, err, sizeof(err));
		if (rc == -1)
			;
		else if (r->op == R_CREATE)
			rc = sess_create(s, &r->opts, &created, &e, err, sizeof(err));
		else if ((rc = sess_enter(s, NULL, &e, err, sizeof(err))) == 0)
			sess_leave(s);
		if (rc == 0) {
			r->status = created ? 201 : 200;
			r->body = sess_json(s);
		}
		sess_put(s);
		/* A create that made nothing keeps no record for its policy. */
		if (rc == -1 && created && r->policy != NULL)
			sess_policy_forget(m, r->sid);
		break;
	case R_GET:
		if ((s = sess_get(m, r->sid, NULL, NULL, 0, &e, err,
		    sizeof(err))) == NULL) {
			rc = -1;
			break;
		}
		r->status = 200;
		r->body = sess_status(s);
		sess_put(s);
		break;
	case R_APPS:
	case R_EXPOSE:
	case R_APP:
	case R_UNEXPOSE:
		if ((s = sess_get(m, r->sid, NULL, NULL, 0, &e, err,
		    sizeof(err))) == NULL) {
			rc = -1;
			break;
		}
		rc = rjob_apps(r, s, &e, err, sizeof(err));
		sess_put(s);
		break;
	case R_POLICY:
		if ((s = sess_get(m, r->sid, NULL, NULL, 0, &e, err,
		    sizeof(err))) == NULL) {
			rc = -1;
			break;
		}
		if ((rc = sess_set_policy(s, r->policy, 1, &e, err,
		    sizeof(err))) == 0) {
			r->status = 200;
			r->body = sess_json(s);
		}
		sess_put(s);
		break;
	case R_STOP:
		if ((rc = sess_stop(m, r->sid, "stopped by REST", &e, err,
		    sizeof(err))) == 0 &&
		    (s = sess_get(m, r->sid, NULL, NULL, 0, &e, err, sizeof(err))) != NULL) {
			r->status = 200;
			r->body = sess_json(s);
			sess_put(s);
		}
		break;
	case R_DELETE:
		rc = sess_delete(m, r->sid, "deleted by REST", &e, err,
		    sizeof(err));
		sess_policy_forget(m, r->sid);	/* the client ended it */
		if (rc == 0) {
			r->status = 200;
			r->body = cJSON_CreateObject();
			cJSON_AddStringToObject(r->body, "deleted", r->sid);
		}
		break;
	}
	if (rc == -1 || r->body == NULL) {
		r->status = sess_err_http(e, &code);
		if (r->status >= 500 && e != SE_DRAINING)
			log_warnx("session=%s rest %s failed: %s", r->sid,
			    rop_name(r->op), err);
		r->body = http_err_json(code, err);
	}
	if (r->op == R_CREATE && r->idem_key != NULL)
		create_keyed_done(r);
}

static void
rjob_done(void *arg)
{
	struct rjob *r = arg;

	http_send_json(r->ht, r->req, r->status, r->body);
	http_inflight_add(r->ht, -1);
	cJSON_Delete(r->body);
	cJSON_Delete(r->body_in);
	policy_free(r->policy);
	free(r->idem_key);
	free(r);
}

/* An id-like string field; NULL if fine, else why not. */
static const char *
rest_id_field(cJSON *j, const char *name, char *dst, size_t len, int required)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);

	if (v == NULL && !required)
		return NULL;
	if (v == NULL || !cJSON_IsString(v) || !id_session_valid(v->valuestring))
		return "id, org and user must be 1-128 characters from A-Z a-z 0-9 - _ . : @ + = (id is required)";
	snprintf(dst, len, "%s", v->valuestring);
	return NULL;
}

/* The members of a create body besides the options (sessopt.h). */
static const char *const create_ids[] = { "id", "org", "user", "policy",
	NULL };

/* Runs r on a worker, counted against its session's cap (429 beyond). */
static void
rjob_start(struct http *ht, const struct conf *conf, struct rjob *r)
{
	char msg[256];

	if (work_submit_key(r->sid, (int)conf->session_calls, rjob_run, rjob_done,
	    r) == 0) {
		http_inflight_add(ht, 1);
		return;
	}
	snprintf(msg, sizeof(msg), "too many calls in flight for session %s: at "
	    "most %lld at once (limits.session_calls); retry when one finished",
	    r->sid, conf->session_calls);
	http_send_err(ht, r->req, 429, "too_many_calls", msg);
	cJSON_Delete(r->body_in);
	policy_free(r->policy);
	free(r->idem_key);
	free(r);
}

static void
rest_create(struct http *ht, struct sessmgr *mgr, const struct conf *conf,
    struct http_req *req)
{
	size_t len;
	const char *body = http_req_body(req, &len);
	cJSON *j = NULL, *pv;
	struct rjob *r;
	const char *why = NULL, *key;
	char err[512];

	if (!http_ctype_json(http_hdr(req, "Content-Type"))) {
		http_send_err(ht, req, 415, "unsupported_media_type",
		    "Content-Type must be application/json");
		return;
	}
	if (body == NULL || !jsonu_utf8_valid(body, len) ||
	    (j = cJSON_ParseWithLength(body, len)) == NULL || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		http_send_err(ht, req, 400, "bad_json", "the body must be a JSON object");
		return;
	}
	(void)jsonu_mark_nul(body, len, j);	/* a NUL: no string, refused below */
	r = xcalloc(1, sizeof(*r));
	r->ht = ht;
	r->mgr = mgr;
	r->req = req;
	r->op = R_CREATE;
	sessopt_init(&r->opts);
	why = rest_id_field(j, "id", r->sid, sizeof(r->sid), 1);
	if (why == NULL)
		why = rest_id_field(j, "org", r->org, sizeof(r->org), 0);
	if (why == NULL)
		why = rest_id_field(j, "user", r->user, sizeof(r->user), 0);
	if (why == NULL && sessopt_parse(j, create_ids, &r->opts, err,
	    sizeof(err)) == -1)
		why = err;
	if (why == NULL && (pv = cJSON_GetObjectItemCaseSensitive(j,
	    "policy")) != NULL && !cJSON_IsNull(pv) &&
	    (r->policy = policy_from_json(pv, "policy", err, sizeof(err))) == NULL)
		why = err;
	if (why != NULL) {
		http_send_err(ht, req, 400, "bad_request", why);
		cJSON_Delete(j);
		policy_free(r->policy);
		free(r);
		return;
	}
	r->body_in = j;	/* the options' strings point into it */
	r->conf = conf;
	if ((key = http_hdr(req, "Idempotency-Key")) != NULL) {
		if (!idem_key_valid(key)) {
			http_send_err(ht, req, 400, "bad_idempotency_key",
			    "Idempotency-Key must be 1 to 255 printable ASCII "
			    "characters");
			goto bad;
		}
		if (idem_fingerprint("POST", "/v1/sessions", j, r->idem_fp) == -1) {
			http_send_err(ht, req, 500, "internal", "fingerprint");
			goto bad;
		}
		r->idem_key = xstrdup(key);
	}
	rjob_start(ht, conf, r);
	return;
bad:
	cJSON_Delete(r->body_in);
	policy_free(r->policy);
	free(r);
}

/* PUT /policy: the body is the policy itself (r->policy), or why not. */
static const char *
policy_body(struct http_req *req, struct rjob *r, char *err, size_t errlen)
{
	size_t len;
	const char *body = http_req_body(req, &len);
	cJSON *j;

	if (body == NULL || !jsonu_utf8_valid(body, len) ||
	    (j = cJSON_ParseWithLength(body, len)) == NULL) {
		return "the body must be a policy: a JSON object such as "
		    "{\"github\": {\"push\": [\"refs/heads/agent/x\"]}}";
	}
	(void)jsonu_mark_nul(body, len, j);	/* a NUL: no string, refused */
	r->policy = policy_from_json(j, "policy", err, errlen);
	cJSON_Delete(j);
	return r->policy == NULL ? err : NULL;
}

/* No body, or one that is an empty JSON object (whitespace around). */
static int
body_empty(struct http_req *req)
{
	size_t n;
	const char *p = http_req_body(req, &n);
	cJSON *j;
	int ok;

	if (n == 0)
		return 1;
	if (n > 256)
		return 0;
	j = cJSON_ParseWithLength(p, n);
	ok = cJSON_IsObject(j) && j->child == NULL;
	cJSON_Delete(j);
	return ok;
}

/* The app name in "apps/<name>" (a DNS label); -1 if it is not one. */
static int
app_name_of(const char *op, char *dst, size_t len)
{
	const char *n = op + 5;
	size_t k = strlen(n), i;

	if (k == 0 || k >= len)
		return -1;
	for (i = 0; i < k; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') ||
		    n[i] == '-'))
			return -1;
	memcpy(dst, n, k + 1);
	return 0;
}

/* POST /apps: {"port": N, "name": "x"?}, nothing else. */
static const char *
expose_body(struct http_req *req, struct rjob *r)
{
	size_t len;
	const char *body = http_req_body(req, &len);
	cJSON *j, *it;
	const char *why = NULL;

	if (!http_ctype_json(http_hdr(req, "Content-Type")))
		return "Content-Type must be application/json";
	if (body == NULL || !jsonu_utf8_valid(body, len) ||
	    (j = cJSON_ParseWithLength(body, len)) == NULL || !cJSON_IsObject(j)) {
		if (body != NULL && (j = cJSON_ParseWithLength(body, len)) != NULL)
			cJSON_Delete(j);
		return "the body must be a JSON object: {\"port\": 8000, \"name\": "
		    "\"web\"}";
	}
	cJSON_ArrayForEach(it, j) {
		if (strcmp(it->string, "port") == 0) {
			if (!cJSON_IsNumber(it) || it->valuedouble != (double)(int)it->valuedouble ||
			    it->valuedouble < 1 || it->valuedouble > 65535)
				why = "port must be an integer 1-65535";
			else
				r->port = (int)it->valuedouble;
		} else if (strcmp(it->string, "name") == 0) {
			if (!cJSON_IsString(it) || strlen(it->valuestring) > APP_NAME_MAX ||
			    it->valuestring[0] == '\0')
				why = "name must be a DNS label of 1-40 characters";
			else
				snprintf(r->app, sizeof(r->app), "%s", it->valuestring);
		} else
			why = "unknown member: the body takes port and name";
		if (why != NULL)
			break;
	}
	if (why == NULL && r->port == 0)
		why = "port is required";
	cJSON_Delete(j);
	return why;
}

static void
rest_apps(struct http *ht, struct rest_ctx *ctx, struct http_req *req,
    struct rjob *r, enum http_method cmd, const char *op)
{
	const char *why;

	if (strcmp(op, "apps") == 0 || strcmp(op, "apps/") == 0) {
		if (cmd == HTTP_M_GET)
			r->op = R_APPS;
		else if (cmd == HTTP_M_POST) {
			r->op = R_EXPOSE;
			if ((why = expose_body(req, r)) != NULL) {
				free(r);
				http_send_err(ht, req, 400, "bad_request", why);
				return;
			}
		} else {
			free(r);
			http_add_header(req, "Allow", "GET, POST");
			http_send_err(ht, req, 405, "method_not_allowed", "use GET or POST");
			return;
		}
	} else {
		if (app_name_of(op, r->app, sizeof(r->app)) == -1) {
			free(r);
			http_send_err(ht, req, 404, "not_found", "no such app: names are "
			    "DNS labels");
			return;
		}
		if (cmd == HTTP_M_GET)
			r->op = R_APP;
		else if (cmd == HTTP_M_DELETE)
			r->op = R_UNEXPOSE;
		else {
			free(r);
			http_add_header(req, "Allow", "GET, DELETE");
			http_send_err(ht, req, 405, "method_not_allowed",
			    "use GET or DELETE");
			return;
		}
	}
	rjob_start(ht, ctx->conf, r);
}

void
rest_handle(struct http *ht, struct http_req *req, const char *path,
    void *arg)
{
	struct rest_ctx *ctx = arg;
	struct sessmgr *mgr = ctx->mgr;
	enum http_method cmd = http_req_method(req);
	const char *rest = path + strlen("/v1/sessions");
	char *sid = NULL;
	struct rjob *r;
	const char *op = NULL;

	if (*rest == '\0' || strcmp(rest, "/") == 0) {
		if (cmd == HTTP_M_GET) {
			const char *q = http_req_query(req);
			struct evkeyvalq kv;
			const char *org = NULL, *user = NULL, *state = NULL;
			cJSON *o;

			TAILQ_INIT(&kv);
			if (q != NULL && evhttp_parse_query_str(q, &kv) == -1) {
				http_send_err(ht, req, 400, "bad_request", "malformed query string");
				return;
			}
			org = evhttp_find_header(&kv, "org");
			user = evhttp_find_header(&kv, "user");
			state = evhttp_find_header(&kv, "state");
			if (state != NULL && strcmp(state, "running") != 0 &&
			    strcmp(state, "stopped") != 0 &&
			    strcmp(state, "provisioning") != 0) {
				evhttp_clear_headers(&kv);
				http_send_err(ht, req, 400, "bad_request",
				    "state must be running, stopped or provisioning");
				return;
			}
			o = cJSON_CreateObject();
			cJSON_AddItemToObject(o, "sessions",
			    sessmgr_list_json(mgr, org, user, state));
			evhttp_clear_headers(&kv);
			http_send_json(ht, req, 200, o);
			cJSON_Delete(o);
			return;
		}
		if (cmd == HTTP_M_POST) {
			if (http_draining(ht)) {
				http_send_err(ht, req, 503, "draining", "shutting down");
				return;
			}
			rest_create(ht, mgr, ctx->conf, req);
			return;
		}
		http_add_header(req, "Allow", "GET, POST");
		http_send_err(ht, req, 405, "method_not_allowed", "use GET or POST");
		return;
	}
	if (*rest != '/') {
		http_send_err(ht, req, 404, "not_found", "no such endpoint");
		return;
	}
	rest++;
	{
		const char *slash = strchr(rest, '/');
		size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
		char raw[3 * ID_SESSION_MAX + 1];

		if (n == 0 || n >= sizeof(raw)) {
			http_send_err(ht, req, 400, "bad_request", "invalid session id");
			return;
		}
		memcpy(raw, rest, n);
		raw[n] = '\0';
		sid = evhttp_uridecode(raw, 0, NULL);
		if (sid == NULL || !id_session_valid(sid)) {
			free(sid);
			http_send_err(ht, req, 400, "bad_request", "invalid session id");
			return;
		}
		op = slash ? slash + 1 : NULL;
	}
	if (op != NULL && xfer_route(op)) {	/* files and exec: xfer.c */
		xfer_handle(ht, mgr, ctx->conf, req, sid, op);
		free(sid);
		return;
	}
	r = xcalloc(1, sizeof(*r));
	r->ht = ht;
	r->mgr = mgr;
	r->req = req;
	snprintf(r->sid, sizeof(r->sid), "%s", sid);
	free(sid);
	if (op == NULL && cmd == HTTP_M_GET)
		r->op = R_GET;	/* with what it uses now: runtime and agent */
	else if (op == NULL && cmd == HTTP_M_DELETE)
		r->op = R_DELETE;
	else if (op != NULL && strcmp(op, "stop") == 0 && cmd == HTTP_M_POST)
		r->op = R_STOP;
	else if (op != NULL && strcmp(op, "start") == 0 && cmd == HTTP_M_POST)
		r->op = R_START;
	else if (op != NULL && strcmp(op, "policy") == 0 && cmd == HTTP_M_PUT) {
		char perr[512];
		const char *why;

		r->op = R_POLICY;
		if (!http_ctype_json(http_hdr(req, "Content-Type"))) {
			free(r);
			http_send_err(ht, req, 415, "unsupported_media_type",
			    "Content-Type must be application/json");
			return;
		}
		if ((why = policy_body(req, r, perr, sizeof(perr))) != NULL) {
			free(r);
			http_send_err(ht, req, 400, "bad_request", why);
			return;
		}
	}
	else if (op != NULL && (strcmp(op, "apps") == 0 ||
	    strncmp(op, "apps/", 5) == 0)) {
		rest_apps(ht, ctx, req, r, cmd, op);
		return;
	} else {
		free(r);
		if (op != NULL && strcmp(op, "policy") == 0) {
			http_add_header(req, "Allow", "PUT");
			http_send_err(ht, req, 405, "method_not_allowed", "use PUT "
			    "with the narrower policy (GET the session to read it)");
		} else if (op == NULL || strcmp(op, "stop") == 0 ||
		    strcmp(op, "start") == 0) {
			http_add_header(req, "Allow",
			    op == NULL ? "GET, DELETE" : "POST");
			http_send_err(ht, req, 405, "method_not_allowed",
			    op == NULL ? "use GET or DELETE" : "use POST");
		} else
			http_send_err(ht, req, 404, "not_found", "no such endpoint");
		return;
	}
	if ((r->op == R_STOP || r->op == R_START) && !body_empty(req)) {
		free(r);
		http_send_err(ht, req, 400, "bad_request", "this endpoint takes "
		    "no fields: send no body or {}");
		return;
	}
	rjob_start(ht, ctx->conf, r);
}
