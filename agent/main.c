/*
 * main.c: sandbox-agent, the first process of every sandbox. It owns the
 * command line, the listening socket, the bearer token, the route table
 * (method + path -> handler: every URL the agent answers is one row of
 * routes[]) with the small handlers (health, shell, env), and the process
 * around the event loop: signals through a signalfd, reaping every child
 * (the agent is the subreaper, often PID 1) and, on SIGTERM, SIGINT or
 * SIGHUP, killing what it started and exiting. The protocol is
 * docs/internals/agent-protocol.md; the connections are conn.c's.
 *
 * Layers: a file calls and includes only files below it (docs/agent.md).
 *   main.c
 *   shell.c job.c exec.c fileops.c	(job.c, exec.c also call shell.c)
 *   jobwrap.c jobx.c			(job.c's; they call shell.c)
 *   conn.c fsd.c			(fsd.c: fsview.c, fswire.c, nest.c)
 *   ev.c http.c edit.c proc.c cgroup.c nest.c
 *   json.c agent.c, then common/
 *
 *   sandbox-agent [-dv] --listen unix:PATH|tcp:HOST:PORT [--token-file FILE]
 *       [--state DIR] [--workdir DIR] [--shell PATH] [--max-output BYTES]
 *       [--max-upload BYTES] [--request-timeout MS] [--job-output-cap BYTES] [--job-keep N]
 *       [--job-keep-ms MS] [--job-spool-total BYTES] [--nest-caps HEX]
 *       [--cgroup DIR]
 *   sandbox-agent --help
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "cgroup.h"
#include "conn.h"
#include "ev.h"
#include "exec.h"
#include "fileops.h"
#include "fsd.h"
#include "http.h"
#include "job.h"
#include "json.h"
#include "log.h"
#include "nest.h"
#include "proc.h"
#include "shell.h"
#include "shellres.h"
#include "strnum.h"
#include "util.h"
#include "xmalloc.h"

static int listen_fd = -1;
static int sig_fd = -1;
/* The bearer token; an Authorization value holds at most HTTP_MAX_AUTH
 * bytes, so a longer token could never match. */
static char token[HTTP_MAX_AUTH];
static size_t token_len;
static int use_token;
static char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

/* Routes: the request a handler gets, then the handlers, then the table. */

/* What a handler gets: the request and what routing took from it. */
struct route_req {
	const struct http_req	*r;
	const struct json	*js;	/* a POST's body (a JSON object), else NULL */
	const char		*id;	/* what "{id}" matched, else NULL */
	const char		*rest;	/* what a final '*' matched, else NULL */
};


static void
h_health(struct conn *c, const struct route_req *q)
{
	struct buf b;
	struct jw w;

	(void)q;
	buf_init(&b, 4096);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "ok"); jw_bool(&w, 1);
	jw_key(&w, "version"); jw_cstr(&w, AGENT_VERSION);
	jw_key(&w, "pid"); jw_int(&w, getpid());
	jw_key(&w, "busy"); jw_bool(&w, shell_busy());
	jw_key(&w, "running_jobs"); jw_int(&w, job_running_count());
	jw_key(&w, "running_execs"); jw_int(&w, exec_running_count());
	jw_key(&w, "last_activity_ms"); jw_int(&w, agent_last_activity());
	jw_key(&w, "shell_pid"); jw_int(&w, shell_pid());
	jw_key(&w, "shell"); jw_cstr(&w, shell_path());
	jw_obj_end(&w);
	conn_reply_jw(c, &w, &b);
}

static void
shell_done(void *arg, const struct buf *body)
{
	conn_reply_json(arg, 200, body);
}

static void
h_shell(struct conn *c, const struct route_req *q)
{
	const struct json *body = q->js;
	const char *cmd, *rid, *fp;
	size_t len, ridlen, fplen;
	char ridbuf[SHELLRES_ID_MAX + 1], fpbuf[SHELLRES_FP_MAX + 1];
	long long t0;
	long long tmo = 120000, maxo = (long long)agent_conf.max_output;
	int r;

	if (json_get_str(body, "command", &cmd, &len) != 0) {
		conn_reply_error(c, 400, "bad_request", "\"command\" (string) is required");
		return;
	}
	if (json_get_int(body, "timeout_ms", &tmo) == -1 || tmo <= 0 ||
	    tmo > AGENT_MAX_TIMEOUT_MS) {
		conn_reply_error(c, 400, "bad_request",
		    "timeout_ms must be an integer from 1 to %lld", AGENT_MAX_TIMEOUT_MS);
		return;
	}
	if (json_get_int(body, "max_output", &maxo) == -1 || maxo < 0) {
		conn_reply_error(c, 400, "bad_request",
		    "max_output must be a non-negative integer");
		return;
	}
	if ((r = json_get_str(body, "result_id", &rid, &ridlen)) == -1 ||
	    (r == 0 && !shellres_id_ok(rid, ridlen))) {
		conn_reply_error(c, 400, "bad_request", "result_id must be 1-%d "
		    "characters from A-Z a-z 0-9 - _", SHELLRES_ID_MAX);
		return;
	}
	if (r == 0)
		memcpy(ridbuf, rid, ridlen);
	ridbuf[r == 0 ? ridlen : 0] = '\0';
	if ((r = json_get_str(body, "result_fp", &fp, &fplen)) == -1 ||
	    (r == 0 && (ridbuf[0] == '\0' || !shellres_fp_ok(fp, fplen)))) {
		conn_reply_error(c, 400, "bad_request", "result_fp must be at "
		    "most %d lower-case hex digits, with a result_id",
		    SHELLRES_FP_MAX);
		return;
	}
	if (r == 0)
		memcpy(fpbuf, fp, fplen);
	fpbuf[r == 0 ? fplen : 0] = '\0';
	/* a result id runs once: a re-issue reads GET /v1/shell/result */
	if (ridbuf[0] != '\0' && (shellres_known(ridbuf) ||
	    shell_result_running(ridbuf, &t0))) {
		conn_reply_error(c, 409, "result_exists", "a command with result "
		    "id %s ran or runs here: GET /v1/shell/result/%s", ridbuf,
		    ridbuf);
		return;
	}
	agent_log_trace("shell", body);
	r = shell_run(cmd, len, tmo, (size_t)maxo, ridbuf, shell_done, c);
	if (r == 0 && ridbuf[0] != '\0')	/* before it can end: the loop's */
		shellres_started(ridbuf, fpbuf);
	/* nobody to answer: stop it (and say so next time); one with a
	 * result id runs on and keeps its result (an MCP task's) */
	if (r == 0)
		conn_on_gone(c, ridbuf[0] != '\0' ? shell_detach : shell_abandon, c);
	if (r == -1) {
		conn_reply_error(c, 409, "busy", "the shell is running another "
		    "command; wait for it, or start this one as a job");
		return;
	}
	if (r == -2) {
		conn_reply_error(c, 400, "bad_request",
		    "command must not contain NUL bytes and be at most 4 MiB");
		return;
	}
	if (r == -3) {
		conn_reply_error(c, 500, "internal", "no shell could be started");
		return;
	}
}

static void
h_shell_interrupt(struct conn *c, const struct route_req *q)
{
	(void)q;
	if (shell_interrupt())
		conn_reply(c, 200, "application/json", "{\"interrupted\":true}", 20);
	else
		conn_reply(c, 200, "application/json", "{\"interrupted\":false}", 21);
}

/*
 * GET /v1/shell/result/{id}: {"state":"running","started_ms"} while the
 * command runs (or waits to), the kept record (shellres.c) with "state":
 * "done" once it ended, "lost" when it started and never ended (its
 * sandbox stopped under it), 404 when none (never started here, removed).
 */
#define DONE_HEAD	"{\"state\":\"done\","

static void
h_shell_result(struct conn *c, const struct route_req *q)
{
	struct buf b;
	long long t0;
	char head[192], fp[SHELLRES_FP_MAX + 1];

	if (!shellres_id_ok(q->id, strlen(q->id))) {
		conn_reply_error(c, 400, "bad_request", "bad result id");
		return;
	}
	if (shell_result_running(q->id, &t0)) {
		shellres_fp(q->id, fp);
		snprintf(head, sizeof(head), "{\"state\":\"running\","
		    "\"started_ms\":%lld,\"fp\":\"%s\"}", t0, fp);
		conn_reply(c, 200, "application/json", head, strlen(head));
		return;
	}
	buf_init(&b, AGENT_MAX_RESP + 4096);
	if (buf_addstr(&b, DONE_HEAD) == -1 ||
	    shellres_load(q->id, &b) == -1 || b.len < sizeof(DONE_HEAD) + 1 ||
	    b.p[sizeof(DONE_HEAD) - 1] != '{') {
		buf_free(&b);
		if (shellres_lost(q->id))
			conn_reply(c, 200, "application/json",
			    "{\"state\":\"lost\"}", 16);
		else
			conn_reply_error(c, 404, "not_found", "no shell command "
			    "with result id %s runs or was kept", q->id);
		return;
	}
	b.p[sizeof(DONE_HEAD) - 1] = ' ';	/* its '{' joins the head */
	conn_reply(c, 200, "application/json", b.p, b.len);
	buf_free(&b);
}

/* POST /v1/shell/result/{id}/cancel: stops that command (shell_interrupt),
 * its kept result marked cancelled; {"cancelled":false} when it ended. */
static void
h_shell_result_cancel(struct conn *c, const struct route_req *q)
{
	struct buf b;

	if (!shellres_id_ok(q->id, strlen(q->id))) {
		conn_reply_error(c, 400, "bad_request", "bad result id");
		return;
	}
	if (shell_result_cancel(q->id)) {
		conn_reply(c, 200, "application/json", "{\"cancelled\":true}", 18);
		return;
	}
	buf_init(&b, AGENT_MAX_RESP + 4096);
	if (shellres_load(q->id, &b) == 0) {
		buf_free(&b);
		conn_reply(c, 200, "application/json", "{\"cancelled\":false}", 19);
		return;
	}
	buf_free(&b);
	conn_reply_error(c, 404, "not_found", "no shell command with result "
	    "id %s runs or was kept", q->id);
}

#define SHELL_TAIL_DEFAULT	2048
#define SHELL_TAIL_MAX		65536

static void
h_shell_output(struct conn *c, const struct route_req *q)
{
	static char tail[SHELL_TAIL_MAX];
	char v[32];
	const char *errstr;
	unsigned long long total;
	long long max = SHELL_TAIL_DEFAULT;
	size_t len;
	struct buf b;
	struct jw w;
	int r, running;

	if ((r = http_query_get(q->r->query, "max", v, sizeof(v))) == -1 ||
	    (r == 0 && strnum_ll(v, 0, SHELL_TAIL_MAX, &max, &errstr) == -1)) {
		conn_reply_error(c, 400, "bad_request", "max must be an integer "
		    "from 0 to %d", SHELL_TAIL_MAX);
		return;
	}
	running = shell_output_tail(tail, (size_t)max, &len, &total);
	buf_init(&b, SHELL_TAIL_MAX * 6 + 256);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "running"); jw_bool(&w, running);
	jw_key(&w, "bytes"); jw_int(&w, (long long)total);
	jw_key(&w, "tail"); jw_str(&w, tail, len);
	jw_obj_end(&w);
	conn_reply_jw(c, &w, &b);
}

static void
h_env(struct conn *c, const struct route_req *q)
{
	const struct json *set = json_get(q->js, "set"), *unset = json_get(q->js, "unset");
	const struct json *e;
	size_t need = 0;

	if ((set != NULL && set->type != JSON_OBJ && set->type != JSON_NULL) ||
	    (unset != NULL && unset->type != JSON_ARR && unset->type != JSON_NULL)) {
		conn_reply_error(c, 400, "bad_request",
		    "expected {\"set\":{name:value}, \"unset\":[name]}");
		return;
	}
	/* Validate everything first: all or nothing. */
	for (e = set ? set->child : NULL; e != NULL; e = e->next) {
		if (e->type != JSON_STR || memchr(e->s, '\0', e->slen) ||
		    !shell_env_name_ok(e->key, e->keylen))
			goto bad;
		if (e->keylen + 1 + e->slen > SHELL_ENV_MAX_VAR) {
			conn_reply_error(c, 413, "too_large", "variable %.64s: "
			    "NAME=value must be shorter than 128 KiB (longer "
			    "ones make every program start fail)", e->key);
			return;
		}
		/* The script form: export NAME='value' (quotes may grow 4x). */
		need += e->keylen + 4 * e->slen + 16;
	}
	for (e = unset ? unset->child : NULL; e != NULL; e = e->next) {
		if (e->type != JSON_STR || !shell_env_name_ok(e->s, e->slen))
			goto bad;
		need += e->slen + 8;
	}
	if (!shell_env_room(need)) {
		conn_reply_error(c, 413, "too_large", "too much /v1/env data since "
		    "the agent started (1 MiB in all); nothing was applied");
		return;
	}
	for (e = set ? set->child : NULL; e != NULL; e = e->next)
		shell_env_op(e->key, e->s);
	for (e = unset ? unset->child : NULL; e != NULL; e = e->next)
		shell_env_op(e->s, NULL);
	conn_reply(c, 200, "application/json", "{\"ok\":true}", 11);
	return;
bad:
	conn_reply_error(c, 400, "bad_request", "variable names must match "
	    "[A-Za-z_][A-Za-z0-9_]* (at most %d bytes) and values be strings "
	    "without NUL bytes", SHELL_ENV_MAX_NAME);
}

static int
token_ok(const struct http_req *r)
{
	const char *v = r->auth;
	size_t n, i;
	unsigned char d = 0;

	if (!r->has_auth || strncasecmp(v, "Bearer ", 7) != 0)
		return 0;
	v += 7;
	while (*v == ' ')
		v++;
	n = strlen(v);
	/* Constant time over the token's length. */
	d = (unsigned char)(n != token_len);
	for (i = 0; i < token_len; i++)
		d |= (unsigned char)(token[i] ^ (i < n ? v[i] : 0));
	return d == 0;
}

/* The jobs' and files' handlers, as routes call them. */

static void
h_job_start(struct conn *c, const struct route_req *q)
{
	job_http_start(c, q->js);
}

static void
h_job_list(struct conn *c, const struct route_req *q)
{
	(void)q;
	job_http_list(c);
}

static void
h_job_get(struct conn *c, const struct route_req *q)
{
	job_http_get(c, q->id, q->r->query);
}

static void
h_job_wait(struct conn *c, const struct route_req *q)
{
	job_http_wait(c, q->id, q->js);
}

static void
h_job_stop(struct conn *c, const struct route_req *q)
{
	job_http_stop(c, q->id);
}

static void
h_job_stream(struct conn *c, const struct route_req *q)
{
	job_http_stream(c, q->id, q->r->query);
}

static void
h_raw_get(struct conn *c, const struct route_req *q)
{
	fileops_http_raw_get(c, q->r->query);
}

static void
h_raw_put(struct conn *c, const struct route_req *q)
{
	fileops_http_raw_put(c, q->r->query, q->r);
}

static void
h_exec(struct conn *c, const struct route_req *q)
{
	exec_http_start(c, q->js);
}

static void
h_list(struct conn *c, const struct route_req *q)
{
	fileops_http_list(c, q->r->query);
}

static void
h_delete(struct conn *c, const struct route_req *q)
{
	fileops_http_delete(c, q->js);
}

static void
h_file_op(struct conn *c, const struct route_req *q)
{
	fileops_http(c, q->rest, q->js);
}

/* The row's body is bytes, streamed to the handler as they arrive
 * (conn_body), not JSON; chunked is accepted. */
#define ROUTE_STREAM_BODY	0x1
/* Job ids are "j-" and 12 hex digits: an "{id}" segment this long or
 * longer cannot be one, and is 404 whatever follows it. */
#define ROUTE_MAX_ID	64

/*
 * One row a route; the first row whose method and path match runs. A path
 * is exact, or has one "{id}" segment (a job id: any bytes but '/',
 * possibly none, shorter than ROUTE_MAX_ID), or ends in '*' (any rest,
 * possibly none). A ROUTE_STREAM_BODY row's path is exact.
 */
struct route {
	const char	*method;
	const char	*path;
	int		 flags;
	void		(*fn)(struct conn *, const struct route_req *);
};

static const struct route routes[] = {
	{ "GET",  "/v1/health",		 0,		 h_health },
	{ "POST", "/v1/shell",		 0,		 h_shell },
	{ "POST", "/v1/shell/interrupt", 0,		 h_shell_interrupt },
	{ "GET",  "/v1/shell/output",	 0,		 h_shell_output },
	{ "GET",  "/v1/shell/result/{id}", 0,		 h_shell_result },
	{ "POST", "/v1/shell/result/{id}/cancel", 0,	 h_shell_result_cancel },
	{ "POST", "/v1/env",		 0,		 h_env },
	{ "POST", "/v1/jobs",		 0,		 h_job_start },
	{ "GET",  "/v1/jobs",		 0,		 h_job_list },
	{ "GET",  "/v1/jobs/{id}",	 0,		 h_job_get },
	{ "POST", "/v1/jobs/{id}/wait",	 0,		 h_job_wait },
	{ "POST", "/v1/jobs/{id}/stop",	 0,		 h_job_stop },
	{ "GET",  "/v1/jobs/{id}/stream", 0,		 h_job_stream },
	{ "POST", "/v1/exec",		 0,		 h_exec },
	{ "GET",  "/v1/files/raw",	 0,		 h_raw_get },
	{ "PUT",  "/v1/files/raw",	 ROUTE_STREAM_BODY, h_raw_put },
	{ "GET",  "/v1/files/list",	 0,		 h_list },
	{ "POST", "/v1/files/delete",	 0,		 h_delete },
	{ "POST", "/v1/files/*",	 0,		 h_file_op },
};

/*
 * Matches path against a row's pattern: 1 (id filled in for an "{id}"
 * pattern, *rest set for a '*' one), 0, or -1 when path has the part
 * before "{id}" but its segment there is ROUTE_MAX_ID bytes or more.
 */
static int
route_match(const char *pat, const char *path, char id[ROUTE_MAX_ID],
    const char **rest)
{
	const char *seg = strstr(pat, "{id}");
	size_t n = strlen(pat), k;

	if (n > 0 && pat[n - 1] == '*') {
		if (strncmp(path, pat, n - 1) != 0)
			return 0;
		*rest = path + n - 1;
		return 1;
	}
	if (seg == NULL)
		return strcmp(path, pat) == 0;
	n = (size_t)(seg - pat);
	if (strncmp(path, pat, n) != 0)
		return 0;
	path += n;
	if ((k = strcspn(path, "/")) >= ROUTE_MAX_ID)
		return -1;
	memcpy(id, path, k);
	id[k] = '\0';
	return strcmp(path + k, seg + 4) == 0;
}

/* 1 if some row answers method m. */
static int
route_method_known(const char *m)
{
	size_t i;

	for (i = 0; i < NELEM(routes); i++)
		if (strcmp(routes[i].method, m) == 0)
			return 1;
	return 0;
}

/* 1 if a ROUTE_STREAM_BODY row has path (with any method): its bodies
 * are bytes, never parsed as JSON (a POST there is 404, not 400). */
static int
route_stream_path(const char *path)
{
	size_t i;

	for (i = 0; i < NELEM(routes); i++)
		if ((routes[i].flags & ROUTE_STREAM_BODY) &&
		    strcmp(routes[i].path, path) == 0)
			return 1;
	return 0;
}

/* 1 if a ROUTE_STREAM_BODY row serves the request (a conn_streams_cb). */
static int
route_streams(const struct http_req *r)
{
	size_t i;

	for (i = 0; i < NELEM(routes); i++)
		if ((routes[i].flags & ROUTE_STREAM_BODY) &&
		    strcmp(routes[i].method, r->method) == 0 &&
		    strcmp(routes[i].path, r->path) == 0)
			return 1;
	return 0;
}

/*
 * The body of a POST as a JSON object into *js (an empty body is {}), on
 * any path but a raw-body one, before routing: a POST to an unknown path
 * with a bad body is 400 too. *js is NULL for other requests. 0, or -1
 * after replying 400. The caller frees *js.
 */
static int
route_body(struct conn *c, const struct http_req *r, const char *body,
    size_t blen, struct json **js)
{
	char err[256];

	*js = NULL;
	if (strcmp(r->method, "POST") != 0 || body == NULL ||
	    route_stream_path(r->path))
		return 0;
	if (blen == 0)
		*js = json_parse("{}", 2, err, sizeof(err));
	else
		*js = json_parse(body, blen, err, sizeof(err));
	if (*js == NULL) {
		conn_reply_error(c, 400, "bad_request", "invalid JSON body: %s", err);
		return -1;
	}
	if ((*js)->type != JSON_OBJ) {
		json_free(*js);
		*js = NULL;
		conn_reply_error(c, 400, "bad_request", "the body must be a JSON object");
		return -1;
	}
	return 0;
}

/*
 * Routes a complete request (a conn_dispatch_cb): the bearer token (401),
 * the body (route_body), the first matching row; else 405 for a /v1/ path
 * with a method no row has, and 404 for the rest.
 */
static void
conn_dispatch(struct conn *c, const struct http_req *r, const char *body,
    size_t blen)
{
	struct route_req q;
	struct json *js;
	char id[ROUTE_MAX_ID];
	size_t i;
	int m;

	if (use_token && !token_ok(r)) {
		conn_reply_error(c, 401, "unauthorized",
		    "missing or wrong bearer token");
		return;
	}
	log_debug("request %s %s len=%zu", r->method, r->path, blen);
	if (route_body(c, r, body, blen, &js) == -1)
		return;
	memset(&q, 0, sizeof(q));
	q.r = r;
	q.js = js;
	for (i = 0; i < NELEM(routes); i++) {
		if (strcmp(routes[i].method, r->method) != 0)
			continue;
		if ((m = route_match(routes[i].path, r->path, id, &q.rest)) == -1) {
			conn_reply_error(c, 404, "not_found", "no such job");
			goto out;
		}
		if (m == 1) {
			if (strstr(routes[i].path, "{id}") != NULL)
				q.id = id;
			routes[i].fn(c, &q);
			goto out;
		}
	}
	if (strncmp(r->path, "/v1/", 4) == 0 && !route_method_known(r->method))
		conn_reply_error(c, 405, "bad_request", "method %s not allowed",
		    r->method);
	else
		conn_reply_error(c, 404, "not_found", "no route %s %s", r->method,
		    r->path);
out:
	json_free(js);
}

static void
shutdown_agent(int sig)
{
	log_info("signal %d: stopping the shell and jobs, exiting", sig);
	shell_terminate();
	job_terminate_all();
	exec_terminate_all();
	if (getpid() == 1)
		kill(-1, SIGKILL);
	if (unix_path[0] != '\0')
		unlink(unix_path);
	exit(0);
}

static void
reap(void)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		if (shell_child_exited(pid, st))
			continue;
		if (job_child_exited(pid, st))
			continue;
		if (pid == nest_init_pid())
			fatalx("the sandbox's init exited (status 0x%x): stopping "
			    "the sandbox", st);
		log_debug("reaped pid=%d status=0x%x", (int)pid, st);
	}
}

static void
signal_cb(int fd, uint32_t events, void *arg)
{
	static long long ignored_ms = -100000;
	struct signalfd_siginfo si;

	(void)events; (void)arg;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			break;
		case SIGTERM:
		case SIGINT:
		case SIGHUP:
			/* as a pid namespace's init (Kubernetes), a stop comes
			 * from outside it (sender pid 0 here); the sandbox's own
			 * processes, root included, do not stop their agent */
			if (getpid() == 1 && si.ssi_pid != 0) {
				if (util_mono_coarse_ms() - ignored_ms > 10000) {
					log_warnx("signal %u from pid %u inside the "
					    "sandbox ignored", si.ssi_signo,
					    si.ssi_pid);
					ignored_ms = util_mono_coarse_ms();
				}
				break;
			}
			shutdown_agent((int)si.ssi_signo);
			break;
		}
	}
	reap();
}

/*
 * Under nest.c (the local runtime) the socket's directory is a directory
 * of the host, outside the sandbox's disk limit: once the socket is bound
 * nothing more is written there (not by us, not by a file operation led
 * there by a symlink), so its write bits go. The runtime gives them back
 * at the next start.
 */
static void
seal_listen_dir(void)
{
	char dir[sizeof(unix_path)], *sl;
	struct stat st;

	if (unix_path[0] == '\0')
		return;
	snprintf(dir, sizeof(dir), "%s", unix_path);
	if ((sl = strrchr(dir, '/')) == NULL || sl == dir)
		return;
	*sl = '\0';
	if (stat(dir, &st) == -1 || chmod(dir, st.st_mode & 07555) == -1)
		log_warn("seal %s", dir);
}

static int
listen_on(const char *spec)
{
	int fd = -1, one = 1;

	if (strncmp(spec, "unix:", 5) == 0) {
		struct sockaddr_un sun;
		const char *path = spec + 5;
		mode_t old;

		if (strlen(path) >= sizeof(sun.sun_path) || *path == '\0') {
			log_warnx("socket path too long: %s", path);
			return -1;
		}
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		memcpy(sun.sun_path, path, strlen(path));
		if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
			return -1;
		(void)unlink(path);
		old = umask(0077);
		if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
			umask(old);
			log_warn("bind %s", path);
			close(fd);
			return -1;
		}
		umask(old);
		snprintf(unix_path, sizeof(unix_path), "%s", path);
	} else if (strncmp(spec, "tcp:", 4) == 0) {
		struct sockaddr_in sin;
		char host[64];
		const char *colon = strrchr(spec + 4, ':'), *errstr;
		long long port;

		if (colon == NULL || (size_t)(colon - spec - 4) >= sizeof(host) ||
		    strnum_ll(colon + 1, 0, 65535, &port, &errstr) == -1) {
			log_warnx("bad --listen %s (tcp:HOST:PORT)", spec);
			return -1;
		}
		memcpy(host, spec + 4, (size_t)(colon - spec - 4));
		host[colon - spec - 4] = '\0';
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
			log_warnx("bad IPv4 address %s", host);
			return -1;
		}
		if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
			return -1;
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
			log_warn("bind %s", spec);
			close(fd);
			return -1;
		}
	} else {
		log_warnx("bad --listen %s (unix:PATH or tcp:HOST:PORT)", spec);
		return -1;
	}
	if (listen(fd, 1024) == -1) {
		log_warn("listen");
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Loads the token from path: one read into token (a longer file is cut to
 * sizeof(token) - 1 bytes), trailing newlines and spaces dropped, at least
 * 16 bytes. Not util_read_file: that would refuse a long file instead of
 * cutting it, and leave a copy of the secret in freed heap memory. 0, or -1
 * (logged).
 */
static int
read_token(const char *path)
{
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		log_warn("open %s", path);
		return -1;
	}
	n = read(fd, token, sizeof(token) - 1);
	close(fd);
	if (n <= 0) {
		log_warnx("token file %s is empty", path);
		return -1;
	}
	while (n > 0 && (token[n - 1] == '\n' || token[n - 1] == '\r' ||
	    token[n - 1] == ' '))
		n--;
	token[n] = '\0';
	token_len = (size_t)n;
	if (token_len < 16) {
		log_warnx("token in %s is shorter than 16 bytes", path);
		return -1;
	}
	return 0;
}

/* The synopsis (as in docs/agent.md); to out, then exit(status). */
static NORETURN void
usage(FILE *out, int status)
{
	fprintf(out, "usage: sandbox-agent [-dv] --listen unix:PATH|tcp:HOST:PORT "
	    "[--token-file FILE]\n\t[--state DIR] [--workdir DIR] [--shell PATH] "
	    "[--max-output BYTES]\n\t[--max-upload BYTES] [--request-timeout MS] [--job-output-cap BYTES] "
	    "[--job-keep N] [--job-keep-ms MS]\n\t[--job-spool-total BYTES] "
	    "[--nest-caps HEX] [--cgroup DIR]\n");
	exit(status);
}

/* What the command line sets besides agent_conf. */
struct args {
	const char	*listen;	/* --listen (required) */
	const char	*token_file;	/* --token-file */
	int		 verbose;	/* log level: info, one up a -v */
	int		 nest;		/* --nest-caps given (nest.h) */
	uint64_t	 nest_caps;	/* what root keeps in the sandbox */
	const char	*cgroup;	/* --cgroup: a delegated cgroup v2
					 * directory (cgroup.h) */
};

/* --nest-caps: a capability mask in hex ("0xa00405fb", "0"). */
static int
parse_caps(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 16);
	if (*s == '\0' || *s == '-' || *end != '\0' || errno != 0 ||
	    v >= (1ULL << 41))
		return -1;
	*out = v;
	return 0;
}

/*
 * Parses the command line (getopt_long) into a and agent_conf. --help
 * prints the synopsis to stdout and exits 0; a usage error (an unknown
 * option, a bad value, an operand, no --listen) prints it to stderr and
 * exits 2. -d is accepted and changes nothing: the agent always stays in
 * the foreground and logs to stderr, and debug logs come with -v.
 */
static void
parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "token-file", required_argument, NULL, 't' },
		{ "state", required_argument, NULL, 's' },
		{ "workdir", required_argument, NULL, 'w' },
		{ "shell", required_argument, NULL, 'S' },
		{ "max-output", required_argument, NULL, 'm' },
		{ "max-upload", required_argument, NULL, 'U' },
		{ "request-timeout", required_argument, NULL, 'r' },
		{ "job-output-cap", required_argument, NULL, 'C' },
		{ "job-keep", required_argument, NULL, 'K' },
		{ "job-keep-ms", required_argument, NULL, 'T' },
		{ "job-spool-total", required_argument, NULL, 'O' },
		{ "nest-caps", required_argument, NULL, 'N' },
		{ "cgroup", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *errstr;
	long long v;
	int ch;

	memset(a, 0, sizeof(*a));
	a->verbose = LOG_LVL_INFO;
	while ((ch = getopt_long(argc, argv, "dv", opts, NULL)) != -1) {
		switch (ch) {
		case 'd': break;
		case 'v': a->verbose++; break;
		case 'h': usage(stdout, 0);
		case 'l': a->listen = optarg; break;
		case 't': a->token_file = optarg; break;
		case 's': agent_conf.statedir = optarg; break;
		case 'w': agent_conf.workdir = optarg; break;
		case 'S': agent_conf.shell = optarg; break;
		case 'm':
			if (strnum_size(optarg, &v, &errstr) == -1 || v < 256 ||
			    v > (long long)AGENT_MAX_OUTPUT_CAP)
				usage(stderr, 2);
			agent_conf.max_output = (size_t)v;
			break;
		case 'U':
			if (strnum_size(optarg, &v, &errstr) == -1 || v < 1 ||
			    v > (1LL << 40))
				usage(stderr, 2);
			agent_conf.max_upload = (size_t)v;
			break;
		case 'r':
			if (strnum_ll(optarg, 100, 3600000, &v, &errstr) == -1)
				usage(stderr, 2);
			agent_conf.request_timeout_ms = v;
			break;
		case 'C':
			/* 0: no cap; else at least 4 KiB, at most 1 TiB. */
			if (strnum_size(optarg, &v, &errstr) == -1 ||
			    (v != 0 && v < 4096) || v > (1LL << 40))
				usage(stderr, 2);
			agent_conf.job_output_cap = (size_t)v;
			break;
		case 'O':
			/* 0: no total; else at least 64 KiB, at most 1 TiB. */
			if (strnum_size(optarg, &v, &errstr) == -1 ||
			    (v != 0 && v < 65536) || v > (1LL << 40))
				usage(stderr, 2);
			agent_conf.job_spool_total = (size_t)v;
			break;
		case 'K':
			if (strnum_ll(optarg, 1, 4096, &v, &errstr) == -1)
				usage(stderr, 2);
			agent_conf.job_keep = (int)v;
			break;
		case 'T':
			if (strnum_ll(optarg, 0, 3650LL * 24 * 3600 * 1000, &v,
			    &errstr) == -1)
				usage(stderr, 2);
			agent_conf.job_keep_ms = v;
			break;
		case 'N':
			if (parse_caps(optarg, &a->nest_caps) == -1)
				usage(stderr, 2);
			a->nest = 1;
			break;
		case 'G': a->cgroup = optarg; break;
		default:
			usage(stderr, 2);
		}
	}
	if (a->listen == NULL || optind != argc)
		usage(stderr, 2);
	if (a->verbose > LOG_LVL_DEBUG)
		a->verbose = LOG_LVL_DEBUG;
}

/* The bearer token: required on TCP, optional on a unix socket. */
static void
setup_token(const struct args *a)
{
	if (strncmp(a->listen, "tcp:", 4) == 0) {
		if (a->token_file == NULL)
			fatalx("--listen tcp: needs --token-file");
		if (read_token(a->token_file) == -1)
			exit(1);
		use_token = 1;
	} else if (a->token_file != NULL) {
		if (read_token(a->token_file) == -1)
			exit(1);
		use_token = 1;
	}
}

/* Creates the state and work directories and makes their paths absolute. */
static void
setup_dirs(void)
{
	char wd[PATH_MAX];

	if (fileops_mkdirs(agent_conf.statedir) == -1)
		fatal("cannot create state directory %s", agent_conf.statedir);
	if (fileops_mkdirs(agent_conf.workdir) == -1)
		log_warn("cannot create workdir %s", agent_conf.workdir);
	if (realpath(agent_conf.workdir, wd) != NULL)
		agent_conf.workdir = xstrdup(wd);
	if (realpath(agent_conf.statedir, wd) != NULL)
		agent_conf.statedir = xstrdup(wd);
}

/*
 * The process: malloc tuning, SIGPIPE ignored, child subreaper, the
 * signals the loop handles blocked and read from a signalfd.
 */
static void
setup_process(void)
{
	sigset_t mask;

	/* Big buffers (outputs, bodies) come from mmap and go back to the
	 * system when freed: a fixed threshold stops glibc from raising it. */
	(void)mallopt(M_MMAP_THRESHOLD, 64 * 1024);
	(void)mallopt(M_TRIM_THRESHOLD, 128 * 1024);
	signal(SIGPIPE, SIG_IGN);
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) == -1)
		fatal("sigprocmask");
	if ((sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) == -1)
		fatal("signalfd");
	if (ev_init() == -1)
		fatal("epoll");
	if (ev_add(sig_fd, EPOLLIN, signal_cb, NULL) == -1)
		fatal("epoll signalfd");
}

int
main(int argc, char **argv)
{
	struct args a;
	char err[256];

	parse_args(argc, argv, &a);
	log_init("sandbox-agent", a.verbose, NULL);
	setup_token(&a);
	setup_dirs();
	setup_process();
	proc_raise_nofile();
	if ((listen_fd = listen_on(a.listen)) == -1)
		exit(1);
	if (a.nest)
		seal_listen_dir();
	if (conn_serve(listen_fd, conn_dispatch, route_streams) == -1)
		fatal("epoll listen");
	agent_touch();
	/* before nest_init: with it, the unmount of the runtime's bind needs
	 * a capability nest_init drops */
	if (a.cgroup != NULL && cgroup_init(a.cgroup, a.nest, err,
	    sizeof(err)) == -1)
		log_warnx("cgroup: %s; commands are killed by walking /proc", err);
	if (a.nest && nest_init(a.nest_caps, NEST_RUN_BYTES, err,
	    sizeof(err)) == -1)
		fatalx("nest: %s", err);
	/* without nest.c (Kubernetes: the sandbox shares our pid namespace):
	 * no ptrace, /proc/PID/mem or pidfd_getfd of us without
	 * CAP_SYS_PTRACE, which sandboxes are never given */
	if (!a.nest && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		log_warn("PR_SET_DUMPABLE");
	/* after nest_init: the file helper forks into the sandbox's view */
	if (fsd_init(err, sizeof(err)) == -1)
		fatalx("files: %s", err);
	if (shellres_init() == -1)
		log_warnx("shell results: state directory %s unusable",
		    agent_conf.statedir);
	if (job_init() == -1)
		log_warnx("jobs: state directory %s unusable", agent_conf.statedir);
	if (shell_init() == -1)
		log_warnx("no shell yet; /v1/shell will retry");
	log_info("listening on %s state=%s workdir=%s shell=%s pid=%d",
	    a.listen, agent_conf.statedir, agent_conf.workdir, shell_path(),
	    (int)getpid());
	ev_run();
	return 0;
}
