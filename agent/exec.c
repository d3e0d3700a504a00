/*
 * exec.c: POST /v1/exec (see exec.h and docs/internals/agent-protocol.md).
 *
 * Each exec gets a tree of its own: a small wrapper (a fork of the agent,
 * inside the sandbox through nest_fork, its own session, a child
 * subreaper, so nothing below it escapes: setsid'd and double-forked
 * descendants stay in its subtree) starts the command as a job's script
 * does (the shell's exported env and /v1/env, then the call's env, then
 * eval of the command, read from a memfd at /dev/fd/63) and writes the
 * command's wait status on a pipe when it ends. The agent reads the
 * command's stdout and stderr pipes and writes each read as one NDJSON
 * line on a chunked streamed response (conn.h); when the connection's
 * queue is full it stops reading the pipes (the command then blocks on a
 * full pipe: memory stays bounded). When the command ends, its timeout
 * passes or the client goes away, what is left of the tree is SIGKILLed:
 * with cgroups (cgroup.h) the wrapper starts in a child cgroup of its
 * own, "x-<hex>", and one write to its cgroup.kill ends the whole tree,
 * a fork bomb included; without, proc_kill_tree walks /proc, then the
 * wrapper goes. The exit line follows once both pipes are at EOF (or
 * EXEC_DRAIN_MS after the kill, for a descriptor passed outside the
 * tree). A sandbox at its process limit first gets room (shell.c
 * shell_make_room), and the stream's first line, a note, says what was
 * killed for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "b64.h"
#include "cgroup.h"
#include "conn.h"
#include "ev.h"
#include "exec.h"
#include "json.h"
#include "log.h"
#include "nest.h"
#include "proc.h"
#include "shell.h"
#include "util.h"
#include "xmalloc.h"

#define EXEC_MAX_CMD		((size_t)1024 * 1024)
#define EXEC_LINE_RAW		((size_t)64 * 1024)	/* output bytes a line */
#define EXEC_DEFAULT_TIMEOUT_MS	120000LL
#define EXEC_DEFAULT_OUTPUT	(16LL * 1024 * 1024)
#define EXEC_MIN_OUTPUT		1024LL
#define EXEC_MAX_OUTPUT		(1024LL * 1024 * 1024)
#define EXEC_DRAIN_MS		2000	/* pipes still open after the kill */
#define EXEC_SCRIPT_FD		63
#define EXEC_SCRIPT_PATH	"/dev/fd/63"

enum { PIPE_OUT, PIPE_ERR, PIPE_ST };

struct exec {
	struct conn	*c;
	int		 gone;		/* the client went away */
	pid_t		 wrapper;
	long long	 wrapper_start;	/* recognise it across pid reuse */
	int		 fd[3];		/* stdout, stderr, status (-1: closed) */
	int		 paused;	/* not reading: the connection is full */
	int		 have_status;
	int		 status;	/* the command's wait status */
	int		 killed;	/* the tree has been killed */
	int		 timed_out;
	uint64_t	 timer;		/* timeout, then the drain limit */
	long long	 t0;		/* util_mono_ms at start */
	long long	 oom0;
	unsigned long long max_output, used, dropped;
	int		 noted;
	char		 cg[CGROUP_NAME_MAX];	/* its child cgroup, "": none */
	struct exec	*prev, *next;
};

static struct exec *execs;
static int nexecs;
static char rbuf[EXEC_LINE_RAW];
static char line[EXEC_LINE_RAW / 3 * 4 + 64];

static void exec_maybe_done(struct exec *);
static void drain_limit_cb(void *);

int
exec_running_count(void)
{
	return nexecs;
}

/* SIGKILLs what is left of the tree, the wrapper last (once). */
static void
exec_kill(struct exec *e)
{
	if (e->killed)
		return;
	e->killed = 1;
	/* the timeout is moot; the pipes get this long to reach EOF */
	if (e->timer != 0)
		ev_timer_del(e->timer);
	e->timer = ev_timer_add(EXEC_DRAIN_MS, drain_limit_cb, e);
	/* the whole tree at once, whatever left the wrapper's subtree */
	if (e->cg[0] != '\0' && cgroup_kill(e->cg) == 0)
		return;
	if (e->wrapper <= 0 || proc_starttime(e->wrapper) != e->wrapper_start)
		return;	/* gone (and maybe its pid reused) */
	(void)proc_kill_tree(e->wrapper, NULL, SIGKILL);
	(void)kill(e->wrapper, SIGKILL);
}

static void
close_pipe(struct exec *e, int which)
{
	if (e->fd[which] == -1)
		return;
	ev_del(e->fd[which]);
	close(e->fd[which]);
	e->fd[which] = -1;
}

static void
exec_free(struct exec *e)
{
	int i;

	for (i = 0; i < 3; i++)
		close_pipe(e, i);
	if (e->timer != 0)
		ev_timer_del(e->timer);
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		execs = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	nexecs--;
	if (e->cg[0] != '\0')
		cgroup_release(e->cg);	/* now, or once its last process ends */
	free(e);
}

/* Writes one line (a JSON object and "\n") on the stream. */
static void
exec_line(struct exec *e, const char *p, size_t n)
{
	if (e->gone)
		return;
	if (conn_stream_write(e->c, p, n) == -1) {
		/* the peer is gone: as conn_on_gone would say */
		e->gone = 1;
		exec_kill(e);
	}
}

/* A line {"s":"note","m":text}. */
static void
exec_note(struct exec *e, const char *text)
{
	struct buf b;
	struct jw w;

	buf_init(&b, 4096);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "s"); jw_cstr(&w, "note");
	jw_key(&w, "m"); jw_cstr(&w, text);
	jw_obj_end(&w);
	if (jw_finish(&w) == 0 && buf_add(&b, "\n", 1) == 0)
		exec_line(e, b.p, b.len);
	buf_free(&b);
}

/* The last line, then the end of the stream; frees e. */
static void
exec_finish(struct exec *e)
{
	struct buf b;
	int code = -1, sig = -1, oom = 0;
	long long oom1;

	if (e->have_status) {
		if (WIFEXITED(e->status))
			code = WEXITSTATUS(e->status);
		else if (WIFSIGNALED(e->status)) {
			sig = WTERMSIG(e->status);
			code = 128 + sig;
		}
	}
	if (e->timed_out)
		code = 124;
	else if (!e->have_status) {
		sig = SIGKILL;	/* the wrapper was killed from inside */
		code = 128 + SIGKILL;
	}
	if (sig == SIGKILL || code == 128 + SIGKILL) {
		oom1 = proc_oom_kills();
		oom = e->oom0 >= 0 && oom1 > e->oom0;
	}
	buf_init(&b, 512);
	ign(buf_addf(&b, "{\"exit\":%d,\"timed_out\":%s,\"duration_ms\":%lld,"
	    "\"dropped_bytes\":%llu,\"signal\":", code, e->timed_out ? "true" :
	    "false", util_mono_ms() - e->t0, e->dropped));
	if (sig >= 0 && !e->timed_out)
		ign(buf_addf(&b, "%d", sig));
	else
		ign(buf_addstr(&b, "null"));
	ign(buf_addf(&b, ",\"oom_killed\":%s}\n", oom ? "true" : "false"));
	exec_line(e, b.p, b.len);
	buf_free(&b);
	agent_touch();
	log_debug("exec wrapper=%d exit=%d timed_out=%d gone=%d", (int)e->wrapper,
	    code, e->timed_out, e->gone);
	conn_stream_end(e->c);	/* frees a dead connection */
	exec_free(e);
}

static void
drain_limit_cb(void *arg)
{
	struct exec *e = arg;

	e->timer = 0;
	close_pipe(e, PIPE_OUT);
	close_pipe(e, PIPE_ERR);
	close_pipe(e, PIPE_ST);
	exec_maybe_done(e);
}

/* Finished once the tree is dead and both output pipes are at EOF. */
static void
exec_maybe_done(struct exec *e)
{
	if (e->have_status || e->fd[PIPE_ST] == -1)
		exec_kill(e);	/* the command ended: the rest goes */
	if (!e->killed || e->fd[PIPE_OUT] != -1 || e->fd[PIPE_ERR] != -1)
		return;
	exec_finish(e);
}

static void
timeout_cb(void *arg)
{
	struct exec *e = arg;

	e->timer = 0;
	if (e->have_status)
		return;
	e->timed_out = 1;
	exec_kill(e);
	exec_maybe_done(e);
}

static void
gone_cb(void *arg)
{
	struct exec *e = arg;

	e->gone = 1;
	exec_kill(e);
	/* reading goes on (to EOF) even if paused: nothing is written */
	if (e->paused) {
		e->paused = 0;
		if (e->fd[PIPE_OUT] != -1)
			(void)ev_mod(e->fd[PIPE_OUT], EPOLLIN);
		if (e->fd[PIPE_ERR] != -1)
			(void)ev_mod(e->fd[PIPE_ERR], EPOLLIN);
	}
	exec_maybe_done(e);
}

static void
resume_cb(void *arg)
{
	struct exec *e = arg;

	e->paused = 0;
	if (e->fd[PIPE_OUT] != -1)
		(void)ev_mod(e->fd[PIPE_OUT], EPOLLIN);
	if (e->fd[PIPE_ERR] != -1)
		(void)ev_mod(e->fd[PIPE_ERR], EPOLLIN);
}

/* Output bytes p[0..n) of stream which: lines, the cap, the note. */
static void
exec_output(struct exec *e, int which, const char *p, size_t n)
{
	unsigned long long room = e->max_output - e->used;
	size_t k = n, o;

	if (k > room) {
		e->dropped += k - room;
		k = (size_t)room;
	}
	e->used += k;
	if (k > 0) {
		o = (size_t)snprintf(line, sizeof(line), "{\"s\":\"%s\",\"b\":\"",
		    which == PIPE_OUT ? "out" : "err");
		o += b64_encode(p, k, line + o);
		line[o++] = '"';
		line[o++] = '}';
		line[o++] = '\n';
		exec_line(e, line, o);
	}
	if (e->dropped > 0 && !e->noted) {
		e->noted = 1;
		o = (size_t)snprintf(line, sizeof(line), "{\"s\":\"note\",\"m\":"
		    "\"output passed max_output (%llu bytes): the rest is "
		    "dropped\"}\n", e->max_output);
		exec_line(e, line, o);
	}
}

static void
exec_read(struct exec *e, int which)
{
	ssize_t n;
	int rounds;

	if (which == PIPE_ST) {
		n = read(e->fd[PIPE_ST], &e->status, sizeof(e->status));
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n == (ssize_t)sizeof(e->status))
			e->have_status = 1;
		close_pipe(e, PIPE_ST);
		return;
	}
	/* A few reads per wakeup, so that one busy exec does not starve
	 * the other connections. */
	for (rounds = 0; rounds < 16 && e->fd[which] != -1; rounds++) {
		if (!e->gone && conn_stream_pending(e->c) >= CONN_STREAM_HIGH &&
		    e->used < e->max_output) {
			/* the client reads slowly: stop reading the pipes */
			e->paused = 1;
			if (e->fd[PIPE_OUT] != -1)
				(void)ev_mod(e->fd[PIPE_OUT], 0);
			if (e->fd[PIPE_ERR] != -1)
				(void)ev_mod(e->fd[PIPE_ERR], 0);
			conn_on_drain(e->c, resume_cb, e);
			return;
		}
		n = read(e->fd[which], rbuf, sizeof(rbuf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close_pipe(e, which);
			return;
		}
		if (!e->gone)
			exec_output(e, which, rbuf, (size_t)n);
	}
}

static void
pipe_cb(int fd, uint32_t events, void *arg)
{
	struct exec *e = arg;
	int which;

	(void)events;
	if (fd == e->fd[PIPE_OUT])
		which = PIPE_OUT;
	else if (fd == e->fd[PIPE_ERR])
		which = PIPE_ERR;
	else
		which = PIPE_ST;
	exec_read(e, which);
	exec_maybe_done(e);
}

/* The wrapper: in the sandbox, its own session, a subreaper; runs the
 * command and reports its wait status on stfd, then reaps until killed. */
static void
wrapper_main(int script, int in, int out, int err, int stfd, const char *cwd)
{
	sigset_t none;
	pid_t child, w;
	int st, i;

	nest_child_drop();
	setsid();
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	for (i = 1; i < NSIG; i++)
		signal(i, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Only what the command needs stays open (not the agent's sockets):
	 * 0-2, the status pipe at 3, the script at EXEC_SCRIPT_FD. */
	in = fcntl(in, F_DUPFD, 100);
	out = fcntl(out, F_DUPFD, 100);
	err = fcntl(err, F_DUPFD, 100);
	script = fcntl(script, F_DUPFD, 100);
	stfd = fcntl(stfd, F_DUPFD, 100);
	if (in == -1 || out == -1 || err == -1 || script == -1 || stfd == -1 ||
	    dup2(in, 0) == -1 || dup2(out, 1) == -1 || dup2(err, 2) == -1 ||
	    dup2(stfd, 3) == -1 || dup2(script, EXEC_SCRIPT_FD) == -1)
		_exit(126);
	proc_closefrom(4, EXEC_SCRIPT_FD);
	if ((child = fork()) == -1)
		_exit(126);
	if (child == 0) {
		char *argv[3];

		close(3);
		proc_child_rlimits();
		if (chdir(cwd) == -1) {
			dprintf(2, "exec: cannot enter %s: %s\n", cwd, strerror(errno));
			_exit(126);
		}
		argv[0] = (char *)(shell_is_bash() ? "bash" : "sh");
		argv[1] = (char *)EXEC_SCRIPT_PATH;
		argv[2] = NULL;
		execv(shell_path(), argv);
		_exit(127);
	}
	for (i = 0; i < 3; i++)
		close(i);
	close(EXEC_SCRIPT_FD);
	for (;;) {
		w = waitpid(-1, &st, 0);
		if (w == child)
			ign((int)write(3, &st, sizeof(st)));
		else if (w == -1 && errno == ECHILD)
			pause();	/* nothing below: wait for the kill */
	}
}

/* A memfd holding p[0..n), at offset 0; -1 with errno. */
static int
memfd_with(const char *name, const void *p, size_t n)
{
	const char *q = p;
	ssize_t k;
	int fd;

	if ((fd = memfd_create(name, MFD_CLOEXEC)) == -1)
		return -1;
	while (n > 0) {
		k = write(fd, q, n);
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0) {
			close(fd);
			return -1;
		}
		q += k;
		n -= (size_t)k;
	}
	if (lseek(fd, 0, SEEK_SET) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/* What the call asked for, checked, until the env snapshot is in. */
struct exec_req {
	struct conn	*c;
	struct buf	 script;	/* env lines and the command */
	unsigned char	*in;		/* stdin bytes, or NULL: /dev/null */
	size_t		 inlen;
	char		 cwd[PATH_MAX];
	long long	 timeout_ms;
	long long	 max_output;
};

static void exec_start_cont(void *);

int
exec_parse_io(struct conn *c, const struct json *body, char cwd[PATH_MAX],
    int def_workdir, struct buf *env_out, unsigned char **in, size_t *inlen)
{
	const struct json *env = json_get(body, "env"), *v;
	const char *s, *why;
	size_t slen, at;
	struct stat st;
	long n;
	int r;

	cwd[0] = '\0';
	r = json_get_str(body, "cwd", &s, &slen);
	if (r == -1 || (r == 0 && (slen == 0 || memchr(s, '\0', slen) != NULL ||
	    slen >= PATH_MAX - strlen(agent_conf.workdir) - 2))) {
		conn_reply_error(c, 400, "bad_request", "\"cwd\" must be a "
		    "non-empty path without NUL bytes");
		return -1;
	}
	if (r == 0 && s[0] == '/')
		snprintf(cwd, PATH_MAX, "%.*s", (int)slen, s);
	else if (r == 0 && !(slen == 1 && s[0] == '.'))
		snprintf(cwd, PATH_MAX, "%s/%.*s", agent_conf.workdir, (int)slen, s);
	else if (r == 0 || def_workdir)
		snprintf(cwd, PATH_MAX, "%s", agent_conf.workdir);
	if (cwd[0] != '\0' && (stat(cwd, &st) == -1 || !S_ISDIR(st.st_mode))) {
		conn_reply_error(c, 400, "bad_request", "cwd %s is not a directory",
		    cwd);
		return -1;
	}
	if (env != NULL && env->type != JSON_NULL && env->type != JSON_OBJ) {
		conn_reply_error(c, 400, "bad_request", "\"env\" must be an object "
		    "of strings");
		return -1;
	}
	for (v = env != NULL && env->type == JSON_OBJ ? env->child : NULL; v != NULL;
	    v = v->next) {
		if (v->type != JSON_STR || memchr(v->s, '\0', v->slen) != NULL ||
		    !shell_env_name_ok(v->key, v->keylen) ||
		    v->keylen + 1 + v->slen > SHELL_ENV_MAX_VAR) {
			conn_reply_error(c, 400, "bad_request", "env: names must "
			    "match [A-Za-z_][A-Za-z0-9_]*, values be strings "
			    "without NUL bytes, NAME=value under 128 KiB");
			return -1;
		}
		if (buf_addstr(env_out, "export ") == -1 ||
		    buf_add(env_out, v->key, v->keylen) == -1 ||
		    buf_addstr(env_out, "=") == -1 ||
		    shell_quote(env_out, v->s, v->slen) == -1 ||
		    buf_addstr(env_out, "\n") == -1) {
			conn_reply_error(c, 413, "too_large", "env too large");
			return -1;
		}
	}
	r = json_get_str(body, "stdin", &s, &slen);
	if (r == -1) {
		conn_reply_error(c, 400, "bad_request", "\"stdin\" must be a base64 "
		    "string");
		return -1;
	}
	if (r == 0) {
		*in = xmalloc(slen / 4 * 3 + 2);
		if ((n = b64_decode(s, slen, *in, 1, &why, &at)) < 0) {
			conn_reply_error(c, 400, "bad_request", "\"stdin\" is not "
			    "valid base64 (RFC 4648, padded): %s, at character %zu",
			    why, at);
			return -1;	/* *in: the caller's to free */
		}
		*inlen = (size_t)n;
	}
	return 0;
}

/* Checks the body (400 on anything wrong) into a new exec_req. */
static struct exec_req *
exec_parse(struct conn *c, const struct json *body)
{
	const char *cmd;
	size_t cmdlen;
	struct exec_req *q;

	if (json_get_str(body, "command", &cmd, &cmdlen) != 0 || cmdlen == 0 ||
	    cmdlen > EXEC_MAX_CMD || memchr(cmd, '\0', cmdlen) != NULL) {
		conn_reply_error(c, 400, "bad_request", "\"command\" (a string of "
		    "1 byte to 1 MiB without NUL bytes) is required");
		return NULL;
	}
	q = xcalloc(1, sizeof(*q));
	q->c = c;
	q->timeout_ms = EXEC_DEFAULT_TIMEOUT_MS;
	q->max_output = EXEC_DEFAULT_OUTPUT;
	buf_init(&q->script, EXEC_MAX_CMD * 4 + ((size_t)8 * 1024 * 1024));
	if (json_get_int(body, "timeout_ms", &q->timeout_ms) == -1 ||
	    q->timeout_ms < 1 || q->timeout_ms > AGENT_MAX_TIMEOUT_MS) {
		conn_reply_error(c, 400, "bad_request", "timeout_ms must be an "
		    "integer from 1 to %lld", AGENT_MAX_TIMEOUT_MS);
		goto bad;
	}
	if (json_get_int(body, "max_output", &q->max_output) == -1 ||
	    q->max_output < EXEC_MIN_OUTPUT || q->max_output > EXEC_MAX_OUTPUT) {
		conn_reply_error(c, 400, "bad_request", "max_output must be an "
		    "integer from %lld to %lld", EXEC_MIN_OUTPUT, EXEC_MAX_OUTPUT);
		goto bad;
	}
	if (exec_parse_io(c, body, q->cwd, 1, &q->script, &q->in, &q->inlen) == -1)
		goto bad;
	if (buf_addstr(&q->script, "__agent_c=") == -1 ||
	    shell_quote(&q->script, cmd, cmdlen) == -1 ||
	    buf_addstr(&q->script, "\neval \"$__agent_c\"\n") == -1) {
		conn_reply_error(c, 413, "too_large", "the command is too large");
		goto bad;
	}
	return q;
bad:
	buf_free(&q->script);
	free(q->in);
	free(q);
	return NULL;
}

void
exec_http_start(struct conn *c, const struct json *body)
{
	struct exec_req *q;

	if (nexecs >= EXEC_MAX_RUNNING) {
		conn_reply_error(c, 429, "busy", "%d execs are running (the most "
		    "at once); wait for one to end", EXEC_MAX_RUNNING);
		return;
	}
	if ((q = exec_parse(c, body)) == NULL)
		return;
	agent_log_trace("exec", body);
	/* The command gets the shell's exported env: ask the shell if it is
	 * idle, else use what it said last time. */
	if (shell_snapshot(exec_start_cont, q) == -1)
		exec_start_cont(q);
}

static void
exec_start_cont(void *arg)
{
	struct exec_req *q = arg;
	struct conn *c = q->c;
	struct buf script;
	struct exec *e = NULL;
	char note[512] = "", more[512];
	int sfd = -1, ifd = -1, cgfd = -1, p[3][2], i, k;
	pid_t pid;

	for (i = 0; i < 3; i++)
		p[i][0] = p[i][1] = -1;
	buf_init(&script, EXEC_MAX_CMD * 4 + ((size_t)12 * 1024 * 1024));
	if (buf_addstr(&script, "{ :\n") == -1)
		goto fail;
	shell_job_prelude(&script);
	if (buf_addstr(&script, "\n} >/dev/null 2>&1\n") == -1 ||
	    buf_add(&script, q->script.p, q->script.len) == -1)
		goto fail;
	if ((sfd = memfd_with("exec-script", script.p, script.len)) == -1 ||
	    (ifd = q->in != NULL ? memfd_with("exec-stdin", q->in, q->inlen) :
	    open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		goto fail;
	for (i = 0; i < 3; i++)
		if (pipe2(p[i], O_CLOEXEC) == -1)
			goto fail;
	(void)fcntl(p[PIPE_OUT][0], F_SETPIPE_SZ, 1024 * 1024);
	(void)fcntl(p[PIPE_ERR][0], F_SETPIPE_SZ, 1024 * 1024);
	e = xcalloc(1, sizeof(*e));
	e->oom0 = proc_oom_kills();
	/* a sandbox at its process limit gets room first (the note says) */
	(void)shell_make_room(0, note, sizeof(note));
	if (cgroup_on()) {
		memcpy(e->cg, "x-", 3);
		agent_random_hex(e->cg + 2, 8);
		if ((cgfd = cgroup_open(e->cg)) == -1) {
			log_warn("exec: cgroup %s", e->cg);
			e->cg[0] = '\0';
		}
	}
	if ((pid = nest_fork_into(cgfd)) == -1 && errno == EAGAIN &&
	    note[0] == '\0' && shell_make_room(1, more, sizeof(more)) == 1) {
		snprintf(note, sizeof(note), "%s", more);
		pid = nest_fork_into(cgfd);	/* the limit: once more */
	}
	if (pid == -1)
		goto fail;
	if (pid == 0)
		wrapper_main(sfd, ifd, p[PIPE_OUT][1], p[PIPE_ERR][1],
		    p[PIPE_ST][1], q->cwd);
	close(cgfd);
	cgfd = -1;
	e->c = c;
	e->wrapper = pid;
	e->wrapper_start = proc_starttime(pid);
	e->t0 = util_mono_ms();
	e->max_output = (unsigned long long)q->max_output;
	for (i = 0; i < 3; i++) {
		close(p[i][1]);
		e->fd[i] = p[i][0];
		p[i][0] = p[i][1] = -1;
		(void)fcntl(e->fd[i], F_SETFL, O_NONBLOCK);
	}
	e->next = execs;
	if (execs != NULL)
		execs->prev = e;
	execs = e;
	nexecs++;
	for (i = 0; i < 3; i++)
		if (ev_add(e->fd[i], EPOLLIN, pipe_cb, e) == -1)
			fatal("exec: epoll");
	e->timer = ev_timer_add((uint64_t)q->timeout_ms, timeout_cb, e);
	agent_touch();
	log_debug("exec started wrapper=%d", (int)pid);
	if (conn_stream_begin(c, 200, "application/x-ndjson", -1, NULL) == -1)
		gone_cb(e);
	else {
		conn_on_gone(c, gone_cb, e);
		if (note[0] != '\0')
			exec_note(e, note);
	}
	e = NULL;
	goto out;
fail:
	k = errno;
	if (e != NULL && e->cg[0] != '\0')
		cgroup_release(e->cg);
	if (k == EAGAIN)
		conn_reply_error(c, 503, "process_limit", "cannot start the "
		    "command: the sandbox is at its process limit%s%s",
		    note[0] != '\0' ? " " : "", note);
	else
		conn_reply_error(c, 500, "internal", "cannot start the command: "
		    "%s", strerror(k));
	free(e);
out:
	if (cgfd != -1)
		close(cgfd);
	if (sfd != -1)
		close(sfd);
	if (ifd != -1)
		close(ifd);
	for (i = 0; i < 3; i++) {
		if (p[i][0] != -1)
			close(p[i][0]);
		if (p[i][1] != -1)
			close(p[i][1]);
	}
	buf_free(&script);
	buf_free(&q->script);
	free(q->in);
	free(q);
}

void
exec_terminate_all(void)
{
	struct exec *e;

	for (e = execs; e != NULL; e = e->next)
		exec_kill(e);
}
