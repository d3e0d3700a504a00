/*
 * main.c: sandbox-agent, the first process of every sandbox. Serves the
 * agent protocol (docs/internals/agent-protocol.md) over HTTP/1.1 on a unix
 * socket or TCP with a bearer token, from one single-threaded event loop;
 * reaps every child (it is the subreaper, often PID 1) and on SIGTERM kills
 * what it started and exits.
 *
 *   sandbox-agent [-dv] --listen unix:PATH|tcp:HOST:PORT [--token-file F]
 *       [--state DIR] [--workdir DIR] [--shell PATH] [--max-output BYTES]
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
#include "conn.h"
#include "ev.h"
#include "fileops.h"
#include "http.h"
#include "job.h"
#include "json.h"
#include "log.h"
#include "shell.h"
#include "strnum.h"
#include "xmalloc.h"

static int listen_fd = -1;
static int sig_fd = -1;
static char token[512];
static size_t token_len;
static int use_token;
static char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

/* Handlers. */

static void
h_health(struct conn *c)
{
	struct buf b;
	struct jw w;

	buf_init(&b, 4096);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "ok"); jw_bool(&w, 1);
	jw_key(&w, "version"); jw_cstr(&w, AGENT_VERSION);
	jw_key(&w, "pid"); jw_int(&w, getpid());
	jw_key(&w, "busy"); jw_bool(&w, shell_busy());
	jw_key(&w, "running_jobs"); jw_int(&w, job_running_count());
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
h_shell(struct conn *c, const struct json *body)
{
	const char *cmd;
	size_t len;
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
	r = shell_run(cmd, len, tmo, (size_t)maxo, shell_done, c);
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
h_shell_interrupt(struct conn *c)
{
	if (shell_interrupt())
		conn_reply(c, 200, "application/json", "{\"interrupted\":true}", 20);
	else
		conn_reply(c, 200, "application/json", "{\"interrupted\":false}", 21);
}

static void
h_env(struct conn *c, const struct json *body)
{
	const struct json *set = json_get(body, "set"), *unset = json_get(body, "unset");
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

/* Routes a complete request (conn_dispatch_cb, see conn.h). */
static void
conn_dispatch(struct conn *c, const struct http_req *r, const char *body,
    size_t blen)
{
	const char *p = r->path, *id_end;
	struct json *js = NULL;
	char err[256], id[64];
	int is_get = strcmp(r->method, "GET") == 0;
	int is_post = strcmp(r->method, "POST") == 0;
	int is_put = strcmp(r->method, "PUT") == 0;
	int wants_json;

	if (use_token && !token_ok(r)) {
		conn_reply_error(c, 401, "unauthorized",
		    "missing or wrong bearer token");
		return;
	}
	log_debug("request %s %s len=%zu", r->method, r->path, blen);
	wants_json = is_post && strcmp(p, "/v1/files/raw") != 0;
	if (wants_json) {
		if (blen == 0)
			js = json_parse("{}", 2, err, sizeof(err));
		else
			js = json_parse(body, blen, err, sizeof(err));
		if (js == NULL) {
			conn_reply_error(c, 400, "bad_request", "invalid JSON body: %s", err);
			return;
		}
		if (js->type != JSON_OBJ) {
			json_free(js);
			conn_reply_error(c, 400, "bad_request", "the body must be a JSON object");
			return;
		}
	}
	if (strcmp(p, "/v1/health") == 0 && is_get)
		h_health(c);
	else if (strcmp(p, "/v1/shell") == 0 && is_post)
		h_shell(c, js);
	else if (strcmp(p, "/v1/shell/interrupt") == 0 && is_post)
		h_shell_interrupt(c);
	else if (strcmp(p, "/v1/env") == 0 && is_post)
		h_env(c, js);
	else if (strcmp(p, "/v1/jobs") == 0 && is_post)
		job_http_start(c, js);
	else if (strcmp(p, "/v1/jobs") == 0 && is_get)
		job_http_list(c);
	else if (strncmp(p, "/v1/jobs/", 9) == 0 && (is_get || is_post)) {
		p += 9;
		id_end = strchr(p, '/');
		if ((size_t)((id_end ? id_end : p + strlen(p)) - p) >= sizeof(id)) {
			conn_reply_error(c, 404, "not_found", "no such job");
			goto out;
		}
		snprintf(id, sizeof(id), "%.*s", (int)((id_end ? id_end : p + strlen(p)) - p), p);
		if (id_end == NULL && is_get)
			job_http_get(c, id, r->query);
		else if (id_end != NULL && strcmp(id_end, "/wait") == 0 && is_post)
			job_http_wait(c, id, js);
		else if (id_end != NULL && strcmp(id_end, "/stop") == 0 && is_post)
			job_http_stop(c, id);
		else
			conn_reply_error(c, 404, "not_found", "no route %s %s",
			    r->method, r->path);
	} else if (strcmp(p, "/v1/files/raw") == 0 && is_get)
		fileops_http_raw_get(c, r->query);
	else if (strcmp(p, "/v1/files/raw") == 0 && is_put)
		fileops_http_raw_put(c, r->query, body, blen);
	else if (strncmp(p, "/v1/files/", 10) == 0 && is_post)
		fileops_http(c, p + 10, js);
	else if (strncmp(p, "/v1/", 4) == 0 && !is_get && !is_post && !is_put)
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
		log_debug("reaped pid=%d status=0x%x", (int)pid, st);
	}
}

static void
signal_cb(int fd, uint32_t events, void *arg)
{
	struct signalfd_siginfo si;

	(void)events; (void)arg;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			break;
		case SIGTERM:
		case SIGINT:
		case SIGHUP:
			shutdown_agent((int)si.ssi_signo);
			break;
		}
	}
	reap();
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

static void
usage(void)
{
	fprintf(stderr, "usage: sandbox-agent [-dv] --listen unix:PATH|tcp:HOST:PORT "
	    "[--token-file FILE]\n\t[--state DIR] [--workdir DIR] [--shell PATH] "
	    "[--max-output BYTES]\n\t[--request-timeout MS] [--job-output-cap BYTES] "
	    "[--job-keep N] [--job-keep-ms MS]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "token-file", required_argument, NULL, 't' },
		{ "state", required_argument, NULL, 's' },
		{ "workdir", required_argument, NULL, 'w' },
		{ "shell", required_argument, NULL, 'S' },
		{ "max-output", required_argument, NULL, 'm' },
		{ "request-timeout", required_argument, NULL, 'r' },
		{ "job-output-cap", required_argument, NULL, 'C' },
		{ "job-keep", required_argument, NULL, 'K' },
		{ "job-keep-ms", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	const char *listen_spec = NULL, *token_file = NULL, *errstr;
	char wd[PATH_MAX];
	long long v;
	int ch, debug = 0, verbose = LOG_LVL_INFO;
	sigset_t mask;

	while ((ch = getopt_long(argc, argv, "dv", opts, NULL)) != -1) {
		switch (ch) {
		case 'd': debug = 1; break;
		case 'v': verbose++; break;
		case 'l': listen_spec = optarg; break;
		case 't': token_file = optarg; break;
		case 's': agent_conf.statedir = optarg; break;
		case 'w': agent_conf.workdir = optarg; break;
		case 'S': agent_conf.shell = optarg; break;
		case 'm':
			if (strnum_size(optarg, &v, &errstr) == -1 || v < 256 ||
			    v > (long long)AGENT_MAX_OUTPUT_CAP)
				usage();
			agent_conf.max_output = (size_t)v;
			break;
		case 'r':
			if (strnum_ll(optarg, 100, 3600000, &v, &errstr) == -1)
				usage();
			agent_conf.request_timeout_ms = v;
			break;
		case 'C':
			/* 0: no cap; else at least 4 KiB, at most 1 TiB. */
			if (strnum_size(optarg, &v, &errstr) == -1 ||
			    (v != 0 && v < 4096) || v > (1LL << 40))
				usage();
			agent_conf.job_output_cap = (size_t)v;
			break;
		case 'K':
			if (strnum_ll(optarg, 1, 4096, &v, &errstr) == -1)
				usage();
			agent_conf.job_keep = (int)v;
			break;
		case 'T':
			if (strnum_ll(optarg, 0, 3650LL * 24 * 3600 * 1000, &v,
			    &errstr) == -1)
				usage();
			agent_conf.job_keep_ms = v;
			break;
		default:
			usage();
		}
	}
	if (listen_spec == NULL || optind != argc)
		usage();
	(void)debug;
	log_init("sandbox-agent", verbose > LOG_LVL_DEBUG ? LOG_LVL_DEBUG : verbose, NULL);
	if (strncmp(listen_spec, "tcp:", 4) == 0) {
		if (token_file == NULL)
			fatalx("--listen tcp: needs --token-file");
		if (read_token(token_file) == -1)
			exit(1);
		use_token = 1;
	} else if (token_file != NULL) {
		if (read_token(token_file) == -1)
			exit(1);
		use_token = 1;
	}
	if (fileops_mkdirs(agent_conf.statedir) == -1)
		fatal("cannot create state directory %s", agent_conf.statedir);
	if (fileops_mkdirs(agent_conf.workdir) == -1)
		log_warn("cannot create workdir %s", agent_conf.workdir);
	if (realpath(agent_conf.workdir, wd) != NULL)
		agent_conf.workdir = xstrdup(wd);
	if (realpath(agent_conf.statedir, wd) != NULL)
		agent_conf.statedir = xstrdup(wd);

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
	if ((listen_fd = listen_on(listen_spec)) == -1)
		exit(1);
	if (conn_serve(listen_fd, conn_dispatch) == -1)
		fatal("epoll listen");
	agent_touch();
	if (job_init() == -1)
		log_warnx("jobs: state directory %s unusable", agent_conf.statedir);
	if (shell_init() == -1)
		log_warnx("no shell yet; /v1/shell will retry");
	log_info("listening on %s state=%s workdir=%s shell=%s pid=%d",
	    listen_spec, agent_conf.statedir, agent_conf.workdir, shell_path(),
	    (int)getpid());
	ev_run();
	return 0;
}
