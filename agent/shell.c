/*
 * shell.c: the persistent shell (see shell.h for the protocol with it).
 * It owns the one shell process (sh: its three pipes, its pid, its path)
 * and the one command running in it.
 *
 * A command is idle -> busy (shell_run; a second call is 409) -> finished,
 * when its nonce line arrives on the status fd (st_read) or the shell dies
 * (shell_child_exited, which starts a new shell). A timeout or an interrupt
 * only stops it (stop_command: USR1, then SIGKILL of its own tree until the
 * shell reports, the shell itself killed after SHELL_KILL_GRACE_MS); the
 * finish still comes from one of those two events. Every started command
 * gets exactly one answer: its callback with the result body, or
 * conn_reply_error on its argument when the result cannot be built.
 *
 * With cgroups (cgroup.h) the shell and all it starts live in the child
 * cgroup SHELL_CGROUP: the stop freezes it, kills the command's tree (what
 * is below the shell but was not at the command's start) while nothing in
 * it can fork, and thaws it, so a fork bomb in the command cannot outrun
 * the kill; without them the stop walks /proc as it can. shell_make_room
 * brings back a sandbox at its process limit for any call (shell, exec,
 * job): it kills the child cgroup holding the most processes.
 *
 * An env snapshot (for a job about to start) is an internal command; a
 * /v1/shell call that arrives during it is queued (one at most) and started
 * when it ends. /v1/env ops accumulate in envops (replayed into every new
 * shell and job) and pending (sent before the shell's next command).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "cgroup.h"
#include "conn.h"
#include "ev.h"
#include "json.h"
#include "log.h"
#include "nest.h"
#include "proc.h"
#include "shell.h"
#include "shellres.h"
#include "strnum.h"
#include "util.h"
#include "xmalloc.h"

#define SHELL_STATUS_FD_BASH	19	/* where the shell reports completion */
#define SHELL_STATUS_FD_SH	9	/* POSIX sh only has single-digit fds */
#define SHELL_READ_CHUNK	((size_t)256 * 1024)
#define SHELL_PIPE_SIZE		((size_t)1024 * 1024)
#define SHELL_KILL_GRACE_MS	5000	/* after killing the tree, wait for the shell */
#define SHELL_KILL_TICK_MS	20
#define SHELL_MAX_CMD		((size_t)4 * 1024 * 1024)
#define SHELL_MIN_OUTPUT	256
/* The shell's child cgroup (cgroup.h). */
#define SHELL_CGROUP		"shell"
/* How long a stop waits for the shell's cgroup to freeze: a member in
 * uninterruptible sleep (a disk, a vfork parent) delays it; past this the
 * tree is killed unfrozen, and the next tick tries again. */
#define SHELL_FREEZE_WAIT_MS	200
/* How long shell_make_room waits for the killed processes to be reaped
 * (the sandbox's init reaps them; a dead shell is reaped here) before the
 * call goes on anyway. */
#define SHELL_ROOM_WAIT_MS	3000
/* A note about a kill shell_make_room made, for a call's output. */
#define SHELL_NOTE_MAX		512

static struct {
	pid_t		 pid;		/* the shell, 0 when none */
	char		 path[PATH_MAX];
	int		 is_bash;
	int		 stfdnum;	/* 19 or 9 */
	int		 in_fd;		/* commands -> shell stdin */
	int		 out_fd;	/* shell stdout+stderr */
	int		 st_fd;		/* completion lines */
	int		 died_idle;	/* the shell died between commands */
	int		 died_status;
	int		 spawn_failures;

	/* The command in progress. */
	int		 busy;
	shell_done_cb	 cb;
	void		*arg;
	char		 nonce[33];
	struct buf	 tx;		/* bytes still to write to the shell */
	size_t		 tx_off;
	struct buf	 stline;	/* status fd data not yet consumed */
	int		 internal;	/* the running command is an env snapshot */
	void		(*snap_cb)(void *);
	void		*snap_arg;
	struct buf	 envcache;	/* `export -p` from the last snapshot */
	struct {			/* one /v1/shell call waiting on a snapshot
					 * or an abandoned command's end */
		int		 set;
		char		*cmd;
		size_t		 len;
		long long	 timeout_ms;
		size_t		 max_output;
		shell_done_cb	 cb;
		void		*arg;
		char		 result_id[SHELLRES_ID_MAX + 1];
	} queued;
	char		*head;
	size_t		 headcap, headlen;
	char		*tail;
	size_t		 tailcap, tailpos, taillen;
	unsigned long long total;
	long long	 t0;		/* command start, util_mono_ms */
	uint64_t	 timer;
	long long	 kill_t0;	/* when the timeout kill started */
	int		 timed_out;
	int		 interrupted;	/* POST /v1/shell/interrupt stopped it */
	int		 abandoned;	/* its caller went away (shell_abandon):
					 * stopped, its result dropped */
	int		 tell_abandoned; /* the next command's result says so */
	char		 result_id[SHELLRES_ID_MAX + 1];	/* kept result
					 * (shellres.c) of the running command */
	int		 res_cancelled;	/* its task was cancelled */
	long long	 started_unix;	/* its start, unix ms */
	int		 cur_told;	/* this command's result says so */
	char		*cur_cmd;	/* the running command (shown if it is
					 * abandoned) */
	size_t		 cur_cmd_len;
	char		 abandoned_cmd[SHELL_ABANDONED_SHOWN + 4];
	int		 flushing;	/* a ":" after a timeout, see st_read */
	long long	 oom0;
	struct proc_set	 before;	/* the shell's descendants at command start */

	struct buf	 envops;	/* cumulative /v1/env ops (script) */
	struct buf	 pending;	/* ops not yet sent to the shell */
	char		 room_note[SHELL_NOTE_MAX];	/* shell_make_room
					 * killed the shell: told with its death */
	char		 note_next[SHELL_NOTE_MAX];	/* for the next
					 * command's output (shell_make_room) */
} sh;

static char rbuf[SHELL_READ_CHUNK];

static void shell_finish(int exit_code, int restarted, int died_status);
static void run_queued(void);
static int add_cmd_script(struct buf *, const char *, size_t);
static void tx_flush(void);
static int shell_spawn(void);

int
shell_quote(struct buf *b, const char *s, size_t n)
{
	const char *p, *q, *end = s + n;

	if (buf_add(b, "'", 1) == -1)
		return -1;
	for (p = s; p < end; p = q + 1) {
		q = memchr(p, '\'', (size_t)(end - p));
		if (q == NULL) {
			if (buf_add(b, p, (size_t)(end - p)) == -1)
				return -1;
			break;
		}
		if (buf_add(b, p, (size_t)(q - p)) == -1 ||
		    buf_add(b, "'\\''", 4) == -1)
			return -1;
	}
	return buf_add(b, "'", 1);
}

static int
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		return -1;
	return 0;
}

/* Output collection: head kept, then a ring of the last bytes. */
static void
out_add(const char *p, size_t n)
{
	size_t k, first;

	sh.total += n;
	if (sh.head == NULL) {
		/* Allocated on the first output: most commands print little. */
		sh.head = xmalloc(sh.headcap);
		sh.tail = xmalloc(sh.tailcap);
	}
	if (sh.headlen < sh.headcap) {
		k = sh.headcap - sh.headlen < n ? sh.headcap - sh.headlen : n;
		memcpy(sh.head + sh.headlen, p, k);
		sh.headlen += k;
		p += k;
		n -= k;
	}
	if (n == 0 || sh.tailcap == 0)
		return;
	if (n >= sh.tailcap) {
		memcpy(sh.tail, p + n - sh.tailcap, sh.tailcap);
		sh.tailpos = 0;
		sh.taillen = sh.tailcap;
		return;
	}
	first = sh.tailcap - sh.tailpos < n ? sh.tailcap - sh.tailpos : n;
	memcpy(sh.tail + sh.tailpos, p, first);
	if (n > first)
		memcpy(sh.tail, p + first, n - first);
	sh.tailpos = (sh.tailpos + n) % sh.tailcap;
	sh.taillen = sh.taillen + n > sh.tailcap ? sh.tailcap : sh.taillen + n;
}

int
shell_output_tail(char *out, size_t max, size_t *len, unsigned long long *total)
{
	size_t n = 0, k, i, start;

	*len = 0;
	*total = 0;
	if (!sh.busy || sh.internal)
		return 0;
	*total = sh.total;
	/* The last bytes: from the ring, then (when nothing was dropped
	 * between them) from the end of the head. */
	k = sh.taillen < max ? sh.taillen : max;
	if (k < max && sh.headlen + sh.taillen == sh.total) {
		n = sh.headlen < max - k ? sh.headlen : max - k;
		memcpy(out, sh.head + sh.headlen - n, n);
	}
	for (i = 0; i < k; i++) {
		start = (sh.tailpos + sh.tailcap - k + i) % sh.tailcap;
		if (sh.taillen < sh.tailcap)
			start = sh.taillen - k + i;	/* not wrapped yet */
		out[n++] = sh.tail[start];
	}
	/* Never start or end inside a UTF-8 character. */
	for (i = 0; i < n && i < 3 && ((unsigned char)out[i] & 0xc0) == 0x80; i++)
		;
	memmove(out, out + i, n - i);
	n -= i;
	*len = json_utf8_complete(out, n);
	return 1;
}

/* Reads what the shell wrote; limit bounds the bytes per call (0: drain). */
static void
out_read(size_t limit)
{
	size_t got = 0;
	ssize_t n;

	if (sh.out_fd == -1)
		return;
	for (;;) {
		n = read(sh.out_fd, rbuf, sizeof(rbuf));
		if (n > 0) {
			if (sh.busy)
				out_add(rbuf, (size_t)n);
			got += (size_t)n;
			if (limit > 0 && got >= limit)
				return;
			/* Never loop forever on a background writer. */
			if (limit == 0 && got >= 64u * ((size_t)1024 * 1024))
				return;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == 0) {
			ev_del(sh.out_fd);
			close(sh.out_fd);
			sh.out_fd = -1;
		}
		return;
	}
}

static void
out_cb(int fd, uint32_t events, void *arg)
{
	(void)fd; (void)events; (void)arg;
	out_read(16u * ((size_t)1024 * 1024));
}

static void snap_finish(int ok);

/*
 * Completion line "<nonce> <status>\n" on the status fd. For an env
 * snapshot, the `export -p` text comes first, then the line.
 */
static void
st_read(void)
{
	char tmp[4096], pat[64], *hit, *nl;
	ssize_t n;
	long long code;
	const char *errstr;
	size_t pl;

	if (sh.st_fd == -1)
		return;
	for (;;) {
		n = read(sh.st_fd, tmp, sizeof(tmp));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == 0) {
			ev_del(sh.st_fd);
			close(sh.st_fd);
			sh.st_fd = -1;
			break;
		}
		if (n == -1)
			break;
		if (buf_add(&sh.stline, tmp, (size_t)n) == -1)
			buf_reset(&sh.stline);	/* junk: the real line comes last */
	}
	if (!sh.busy || sh.stline.len == 0) {
		buf_reset(&sh.stline);
		return;
	}
	pl = (size_t)snprintf(pat, sizeof(pat), "%s ", sh.nonce);
	for (hit = sh.stline.p; (hit = memmem(hit, sh.stline.len -
	    (size_t)(hit - sh.stline.p), pat, pl)) != NULL; hit++) {
		if (hit != sh.stline.p && hit[-1] != '\n')
			continue;
		if ((nl = memchr(hit, '\n', sh.stline.len - (size_t)(hit - sh.stline.p))) == NULL)
			return;	/* the rest of the line is still coming */
		*nl = '\0';
		if (strnum_ll(hit + pl, INT_MIN, INT_MAX, &code, &errstr) == -1)
			continue;
		if (sh.internal) {
			buf_reset(&sh.envcache);
			if (buf_add(&sh.envcache, sh.stline.p,
			    (size_t)(hit - sh.stline.p)) == -1)
				buf_reset(&sh.envcache);
			buf_reset(&sh.stline);
			snap_finish(1);
			return;
		}
		buf_reset(&sh.stline);
		out_read(0);
		if ((sh.timed_out || sh.interrupted) && !sh.flushing &&
		    sh.pid > 0) {
			/*
			 * bash reports the jobs we killed ("Killed ...") when
			 * it reaps them, maybe only before its next line: run
			 * one empty command line first so that those lines
			 * land in this command's output, not in the next
			 * command's. Empty, not ":": the command may have made
			 * ":" a function (the classic fork bomb does), and the
			 * flush would start it again.
			 */
			sh.flushing = 1;
			agent_random_hex(sh.nonce, 8);
			if (add_cmd_script(&sh.tx, "", 0) == 0) {
				tx_flush();
				return;
			}
		}
		shell_finish((int)code, 0, 0);
		return;
	}
}

static void
st_cb(int fd, uint32_t events, void *arg)
{
	(void)fd; (void)events; (void)arg;
	st_read();
}

static void
tx_flush(void)
{
	ssize_t n;

	while (sh.in_fd != -1 && sh.tx_off < sh.tx.len) {
		n = write(sh.in_fd, sh.tx.p + sh.tx_off, sh.tx.len - sh.tx_off);
		if (n > 0) {
			sh.tx_off += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			ev_mod(sh.in_fd, EPOLLOUT);
			return;
		}
		/* EPIPE: the shell is gone; SIGCHLD finishes the command. */
		break;
	}
	buf_reset(&sh.tx);
	sh.tx_off = 0;
	if (sh.in_fd != -1)
		ev_mod(sh.in_fd, 0);
}

static void
in_cb(int fd, uint32_t events, void *arg)
{
	(void)fd; (void)arg;
	if (events & (EPOLLERR | EPOLLHUP)) {
		ev_del(sh.in_fd);	/* the shell is gone; SIGCHLD follows */
		return;
	}
	tx_flush();
}

static void
close_fds(void)
{
	if (sh.in_fd != -1) {
		ev_del(sh.in_fd);
		close(sh.in_fd);
	}
	if (sh.out_fd != -1) {
		ev_del(sh.out_fd);
		close(sh.out_fd);
	}
	if (sh.st_fd != -1) {
		ev_del(sh.st_fd);
		close(sh.st_fd);
	}
	sh.in_fd = sh.out_fd = sh.st_fd = -1;
	buf_reset(&sh.stline);
}

static int
shell_spawn(void)
{
	int inp[2] = { -1, -1 }, outp[2] = { -1, -1 }, stp[2] = { -1, -1 };
	sigset_t all;
	pid_t pid;
	int i, k, cgfd;

	if (pipe2(inp, O_CLOEXEC) == -1 || pipe2(outp, O_CLOEXEC) == -1 ||
	    pipe2(stp, O_CLOEXEC) == -1) {
		log_warn("shell: pipe");
		goto fail;
	}
	(void)fcntl(outp[0], F_SETPIPE_SZ, SHELL_PIPE_SIZE);
	cgfd = cgroup_open(SHELL_CGROUP);
	if ((pid = nest_fork_into(cgfd)) == -1 && errno == EAGAIN &&
	    cgroup_on() && shell_make_room(1, sh.note_next,
	    sizeof(sh.note_next)) == 1)
		pid = nest_fork_into(cgfd);	/* the limit: once more */
	k = errno;
	if (cgfd != -1)
		close(cgfd);
	if (pid == -1) {
		errno = k;
		log_warn("shell: fork");
		goto fail;
	}
	if (pid == 0) {
		char *argv[4];
		nest_child_drop();
		/* a status pipe already at its number: dup2 would keep its
		 * close-on-exec flag and the shell would start without it */
		if (dup2(inp[0], 0) == -1 || dup2(outp[1], 1) == -1 ||
		    dup2(outp[1], 2) == -1 || (stp[1] == sh.stfdnum ?
		    fcntl(stp[1], F_SETFD, 0) : dup2(stp[1], sh.stfdnum)) == -1)
			_exit(127);
		proc_closefrom(3, sh.stfdnum);
		proc_child_rlimits();
		for (i = 1; i < NSIG; i++)
			signal(i, SIG_DFL);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setsid();
		/* Orphans of what the shell starts stay below the shell, so a
		 * timeout can tell a command's tree from earlier ones. */
		(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
		if (chdir(agent_conf.workdir) == -1)
			ign(chdir("/"));
		if (sh.is_bash) {
			argv[0] = (char *)"bash";
			argv[1] = (char *)"--noprofile";
			argv[2] = (char *)"--norc";
			argv[3] = NULL;
		} else {
			argv[0] = (char *)"sh";
			argv[1] = NULL;
		}
		execv(sh.path, argv);
		_exit(127);
	}
	close(inp[0]);
	close(outp[1]);
	close(stp[1]);
	sh.pid = pid;
	sh.in_fd = inp[1];
	sh.out_fd = outp[0];
	sh.st_fd = stp[0];
	set_nonblock(sh.in_fd);
	set_nonblock(sh.out_fd);
	set_nonblock(sh.st_fd);
	if (ev_add(sh.in_fd, 0, in_cb, NULL) == -1 ||
	    ev_add(sh.out_fd, EPOLLIN, out_cb, NULL) == -1 ||
	    ev_add(sh.st_fd, EPOLLIN, st_cb, NULL) == -1)
		fatal("shell: epoll");
	/* Setup that must not count as a command. */
	buf_reset(&sh.tx);
	sh.tx_off = 0;
	if (sh.is_bash && buf_addf(&sh.tx, "{ shopt -s expand_aliases; "
	    "trap 'break 1000000' USR1; } 2>/dev/null\n"
	    "__a_d() { \\builtin local __a_s=$?; \\builtin unset __a_c __a_i; "
	    "\\builtin printf '%%s %%d\\n' \"$1\" \"$__a_s\" >&%d; } 2>/dev/null; "
	    "__a_e() { \\builtin export -p >&%d; \\builtin printf '%%s 0\\n' "
	    "\"$1\" >&%d; } 2>/dev/null; \\builtin readonly -f __a_d __a_e\n",
	    sh.stfdnum, sh.stfdnum, sh.stfdnum) == -1)
		fatal("shell: setup");
	if (!sh.is_bash && buf_addstr(&sh.tx,
	    "trap 'break 1000000' USR1 2>/dev/null\n") == -1)
		fatal("shell: setup");
	tx_flush();
	/* The new shell inherits the agent's environment: ops are applied. */
	buf_reset(&sh.pending);
	log_debug("shell pid=%d started path=%s", (int)pid, sh.path);
	return 0;
fail:
	for (i = 0; i < 2; i++) {
		if (inp[i] != -1) close(inp[i]);
		if (outp[i] != -1) close(outp[i]);
		if (stp[i] != -1) close(stp[i]);
	}
	return -1;
}

static int
pick_shell(void)
{
	const char *cands[3] = { agent_conf.shell, "/bin/bash", "/bin/sh" };
	const char *base;
	int i;

	for (i = 0; i < 3; i++) {
		if (cands[i] == NULL || access(cands[i], X_OK) == -1)
			continue;
		snprintf(sh.path, sizeof(sh.path), "%s", cands[i]);
		base = strrchr(sh.path, '/');
		base = base ? base + 1 : sh.path;
		sh.is_bash = strstr(base, "bash") != NULL;
		sh.stfdnum = sh.is_bash ? SHELL_STATUS_FD_BASH : SHELL_STATUS_FD_SH;
		if (i > 0 && agent_conf.shell != NULL &&
		    strcmp(agent_conf.shell, cands[i]) != 0)
			log_warnx("shell %s not usable, using %s", agent_conf.shell,
			    sh.path);
		return 0;
	}
	return -1;
}

int
shell_init(void)
{
	sh.in_fd = sh.out_fd = sh.st_fd = -1;
	buf_init(&sh.tx, SHELL_MAX_CMD + (size_t)128 * 1024);
	buf_init(&sh.stline, ((size_t)1024 * 1024) + 4096);
	buf_init(&sh.envops, ((size_t)1024 * 1024));
	buf_init(&sh.pending, ((size_t)1024 * 1024));
	buf_init(&sh.envcache, (size_t)1024 * 1024);
	sh.oom0 = proc_oom_kills();
	if (pick_shell() == -1) {
		log_warnx("no usable shell (tried %s, /bin/bash, /bin/sh)",
		    agent_conf.shell ? agent_conf.shell : "(none)");
		return -1;
	}
	return shell_spawn();
}

int
shell_busy(void)
{
	return sh.busy && !sh.internal;
}

pid_t
shell_pid(void)
{
	return sh.pid;
}

const char *
shell_path(void)
{
	return sh.path;
}

void
shell_oom_refresh(void)
{
	sh.oom0 = proc_oom_kills();
}

int
shell_is_bash(void)
{
	return sh.is_bash;
}

/*
 * Kills what the running command started: the shell's descendants that
 * were not there when it began (nor below one that was), so background
 * processes of earlier commands live on. The shell is a child subreaper:
 * setsid'd and double-forked processes stay below it.
 */
static void
kill_commands(void)
{
	int n;

	if (sh.pid <= 0)
		return;
	/* frozen, the tree holds still: nothing forks while it is walked,
	 * and SIGKILL still ends a frozen process */
	if (cgroup_freeze(SHELL_CGROUP, 1, SHELL_FREEZE_WAIT_MS) == 0) {
		n = proc_kill_tree(sh.pid, &sh.before, SIGKILL);
		(void)cgroup_freeze(SHELL_CGROUP, 0, 0);
		log_debug("shell stop: %d killed, frozen", n);
		return;
	}
	n = proc_kill_tree(sh.pid, &sh.before, SIGKILL);
	log_debug("shell stop: %d killed", n);
}

static void
grace_cb(void *arg)
{
	(void)arg;
	sh.timer = 0;
	if (!sh.busy || sh.pid <= 0)
		return;
	if (util_mono_ms() - sh.kill_t0 < SHELL_KILL_GRACE_MS) {
		/* The shell may start the command's next process: kill again. */
		kill_commands();
		sh.timer = ev_timer_add(SHELL_KILL_TICK_MS, grace_cb, NULL);
		return;
	}
	/* The shell itself is stuck (a builtin loop, exec, a trap): kill it. */
	log_info("shell pid=%d did not come back after timeout; killing it",
	    (int)sh.pid);
	kill_commands();
	kill(sh.pid, SIGKILL);
}

/* Stops the running command: a timeout or an interrupt. */
static void
stop_command(void)
{
	if (sh.timer != 0) {
		ev_timer_del(sh.timer);
		sh.timer = 0;
	}
	/* First the trap that abandons the rest of the command, then the tree. */
	if (sh.pid > 0)
		kill(sh.pid, SIGUSR1);
	kill_commands();
	sh.kill_t0 = util_mono_ms();
	sh.timer = ev_timer_add(SHELL_KILL_TICK_MS, grace_cb, NULL);
}

static void
timeout_cb(void *arg)
{
	(void)arg;
	sh.timer = 0;
	if (!sh.busy)
		return;
	sh.timed_out = 1;
	log_info("shell command timed out after %lld ms; killing its tree",
	    util_mono_ms() - sh.t0);
	stop_command();
}

/* The result body of a shell call. */
static void
write_result(struct jw *w, int exit_code, const char *out, size_t outlen,
    int timed_out, int interrupted, long long duration_ms,
    unsigned long long dropped, int restarted, int oom, int prev_abandoned)
{
	jw_obj(w);
	jw_key(w, "previous_interrupted"); jw_bool(w, prev_abandoned);
	jw_key(w, "exit_code"); jw_int(w, exit_code);
	jw_key(w, "output"); jw_str(w, out, outlen);
	jw_key(w, "timed_out"); jw_bool(w, timed_out);
	jw_key(w, "interrupted"); jw_bool(w, interrupted);
	jw_key(w, "duration_ms"); jw_int(w, duration_ms);
	jw_key(w, "truncated"); jw_bool(w, dropped > 0);
	jw_key(w, "dropped_bytes"); jw_int(w, (long long)dropped);
	jw_key(w, "shell_restarted"); jw_bool(w, restarted);
	jw_key(w, "oom_killed"); jw_bool(w, oom);
	jw_obj_end(w);
}

/*
 * The answer to a call that never started (interrupted or abandoned while
 * queued): exit code -1, interrupted. Through cb, or straight to the
 * connection when cb is NULL.
 */
static void
reply_not_started(shell_done_cb cb, void *arg, const char *result_id,
    int cancelled)
{
	struct buf body;
	struct jw w;

	buf_init(&body, 4096);
	jw_init(&w, &body);
	write_result(&w, -1, "", 0, 0, 1, 0, 0, 0, 0, 0);
	if (jw_finish(&w) == -1) {
		if (arg != NULL)
			conn_reply_error(arg, 500, "internal", "response too large");
		buf_free(&body);
		return;
	}
	if (result_id[0] != '\0')
		shellres_save(result_id, util_unix_ms(), cancelled, &body);
	if (arg == NULL)
		;	/* detached: nobody to answer */
	else if (cb != NULL)
		cb(arg, &body);
	else
		conn_reply_json(arg, 200, &body);
	buf_free(&body);
}

int
shell_interrupt(void)
{
	shell_done_cb cb;
	void *arg;

	if (sh.busy && (sh.internal || sh.abandoned) && sh.queued.set) {
		/* The call waits on an env snapshot or an abandoned command's
		 * end: it never started. */
		cb = sh.queued.cb;
		arg = sh.queued.arg;
		sh.queued.set = 0;
		free(sh.queued.cmd);
		sh.queued.cmd = NULL;
		log_info("shell command interrupted before it started");
		reply_not_started(cb, arg, sh.queued.result_id, 0);
		return 1;
	}
	/* Idle, or already being stopped (a timeout, an earlier interrupt). */
	if (!sh.busy || sh.internal || sh.timed_out || sh.interrupted)
		return 0;
	sh.interrupted = 1;
	log_info("shell command interrupted after %lld ms; killing its tree",
	    util_mono_ms() - sh.t0);
	stop_command();
	return 1;
}

static void
free_output(void)
{
	free(sh.head);
	free(sh.tail);
	sh.head = sh.tail = NULL;
	sh.headcap = sh.headlen = sh.tailcap = sh.tailpos = sh.taillen = 0;
	sh.total = 0;
}

static void
shell_finish(int exit_code, int restarted, int died_status)
{
	struct buf body, out;
	struct jw w;
	unsigned long long dropped;
	long long oom1;
	int oom = 0;
	shell_done_cb cb = sh.cb;
	void *arg = sh.arg;

	if (!sh.busy)
		return;
	if (sh.timer != 0) {
		ev_timer_del(sh.timer);
		sh.timer = 0;
	}
	buf_init(&out, AGENT_MAX_OUTPUT_CAP + 4096);
	dropped = sh.total - sh.headlen - sh.taillen;
	if (buf_add(&out, sh.head, sh.headlen) == -1)
		goto nomem;
	if (dropped > 0 && buf_addf(&out, "\n[... %llu bytes dropped ...]\n",
	    dropped) == -1)
		goto nomem;
	if (sh.taillen < sh.tailcap || sh.taillen == 0) {
		if (buf_add(&out, sh.tail, sh.taillen) == -1)
			goto nomem;
	} else if (buf_add(&out, sh.tail + sh.tailpos, sh.tailcap - sh.tailpos) == -1 ||
	    buf_add(&out, sh.tail, sh.tailpos) == -1)
		goto nomem;
	if (exit_code == 128 + SIGKILL || (restarted && WIFSIGNALED(died_status) &&
	    WTERMSIG(died_status) == SIGKILL)) {
		oom1 = proc_oom_kills();
		oom = sh.oom0 >= 0 && oom1 > sh.oom0;
		sh.oom0 = oom1;
	}
	if (sh.timed_out)
		exit_code = 124;	/* as timeout(1) reports a timeout */
	else if (sh.interrupted)
		exit_code = -1;
	if (restarted) {
		if (WIFSIGNALED(died_status))
			ign(buf_addf(&out, "\n[the shell was killed by signal %d",
			    WTERMSIG(died_status)));
		else
			ign(buf_addf(&out, "\n[the shell exited with status %d",
			    WEXITSTATUS(died_status)));
		ign(buf_addf(&out, "; a new shell was started in %s: the "
		    "working directory, variables, functions and aliases were "
		    "reset]\n", agent_conf.workdir));
	}
	if (oom)
		ign(buf_addstr(&out, "\n[killed: out of memory]\n"));
	if (restarted && sh.room_note[0] != '\0') {
		ign(buf_addf(&out, "%s\n", sh.room_note));
		sh.room_note[0] = '\0';
	}
	buf_init(&body, AGENT_MAX_RESP);
	jw_init(&w, &body);
	write_result(&w, exit_code, out.p ? out.p : "", out.len, sh.timed_out,
	    sh.interrupted, util_mono_ms() - sh.t0, dropped,
	    restarted, oom, sh.cur_told);
	buf_free(&out);
	free_output();
	sh.busy = 0;
	sh.flushing = 0;
	sh.cb = NULL;
	sh.arg = NULL;
	if (sh.abandoned) {
		log_info("shell command abandoned by its caller ended after "
		    "%lld ms", util_mono_ms() - sh.t0);
		sh.abandoned = 0;
		sh.tell_abandoned = 1;
	}
	agent_touch();
	if (jw_finish(&w) == -1) {
		buf_free(&body);
		if (arg != NULL)
			conn_reply_error(arg, 500, "internal", "response too large");
	} else {
		if (sh.result_id[0] != '\0')
			shellres_save(sh.result_id, sh.started_unix,
			    sh.res_cancelled, &body);
		if (arg != NULL)	/* else detached: nobody to answer */
			cb(arg, &body);
	}
	buf_free(&body);
	sh.result_id[0] = '\0';
	sh.res_cancelled = 0;
	run_queued();
	return;
nomem:
	buf_free(&out);
	free_output();
	sh.busy = 0;
	sh.flushing = 0;
	if (sh.abandoned) {
		sh.abandoned = 0;
		sh.tell_abandoned = 1;
	}
	sh.result_id[0] = '\0';
	sh.res_cancelled = 0;
	agent_touch();
	if (arg != NULL)
		conn_reply_error(arg, 500, "internal", "output too large");
	run_queued();
}

/*
 * The caller of the command with arg (running, or queued behind a snapshot
 * or an abandoned command) went away: a queued call is dropped; a running
 * one is stopped as an interrupt stops it, its result goes nowhere, and the
 * next command's output and result (previous_interrupted) say so. A new
 * call meanwhile waits for the stop (queued) instead of failing busy.
 */
void
shell_abandon(void *arg)
{
	size_t n;

	if (sh.queued.set && sh.queued.arg == arg) {
		sh.queued.set = 0;
		free(sh.queued.cmd);
		sh.queued.cmd = NULL;
		reply_not_started(NULL, arg, sh.queued.result_id, 0);
		return;
	}
	if (!sh.busy || sh.internal || sh.arg != arg || sh.abandoned)
		return;
	sh.abandoned = 1;
	n = sh.cur_cmd_len;
	if (n > SHELL_ABANDONED_SHOWN)
		n = SHELL_ABANDONED_SHOWN;
	n = json_utf8_complete(sh.cur_cmd, n);
	memcpy(sh.abandoned_cmd, sh.cur_cmd, n);
	memcpy(sh.abandoned_cmd + n, sh.cur_cmd_len > n ? "..." : "",
	    sh.cur_cmd_len > n ? 4 : 1);
	if (sh.timed_out || sh.interrupted)
		return;		/* already being stopped */
	sh.interrupted = 1;
	log_info("shell command abandoned: its caller went away after %lld ms; "
	    "killing its tree", util_mono_ms() - sh.t0);
	stop_command();
}

void
shell_detach(void *arg)
{
	if (sh.queued.set && sh.queued.arg == arg) {
		sh.queued.cb = NULL;
		sh.queued.arg = NULL;
		log_info("shell command %s: its caller went away; it still runs "
		    "(queued)", sh.queued.result_id);
		return;
	}
	if (!sh.busy || sh.internal || sh.arg != arg)
		return;
	sh.cb = NULL;
	sh.arg = NULL;
	log_info("shell command %s: its caller went away after %lld ms; it "
	    "runs on, its result is kept", sh.result_id, util_mono_ms() - sh.t0);
}

int
shell_result_running(const char *id, long long *started_ms)
{
	if (sh.busy && !sh.internal && strcmp(sh.result_id, id) == 0) {
		*started_ms = sh.started_unix;
		return 1;
	}
	if (sh.queued.set && strcmp(sh.queued.result_id, id) == 0) {
		*started_ms = 0;
		return 1;
	}
	return 0;
}

int
shell_result_cancel(const char *id)
{
	shell_done_cb cb;
	void *arg;

	if (sh.queued.set && strcmp(sh.queued.result_id, id) == 0) {
		cb = sh.queued.cb;
		arg = sh.queued.arg;
		sh.queued.set = 0;
		free(sh.queued.cmd);
		sh.queued.cmd = NULL;
		log_info("shell command %s cancelled before it started", id);
		reply_not_started(cb, arg, id, 1);
		return 1;
	}
	if (!sh.busy || sh.internal || strcmp(sh.result_id, id) != 0)
		return 0;
	sh.res_cancelled = 1;
	log_info("shell command %s cancelled", id);
	(void)shell_interrupt();
	return 1;
}

/* Starts the call queued behind a snapshot or an abandoned command. */
static void
run_queued(void)
{
	char rid[SHELLRES_ID_MAX + 1];
	int r;

	if (!sh.queued.set || sh.busy)
		return;
	sh.queued.set = 0;
	memcpy(rid, sh.queued.result_id, sizeof(rid));
	r = shell_run(sh.queued.cmd, sh.queued.len, sh.queued.timeout_ms,
	    sh.queued.max_output, rid[0] != '\0' ? rid : NULL, sh.queued.cb,
	    sh.queued.arg);
	free(sh.queued.cmd);
	sh.queued.cmd = NULL;
	if (r != 0 && sh.queued.arg != NULL)
		conn_reply_error(sh.queued.arg, 500, "internal",
		    "the shell could not run the command");
}

int
shell_child_exited(pid_t pid, int status)
{
	if (pid != sh.pid || pid <= 0)
		return 0;
	/* A completion written just before dying still counts. */
	st_read();
	out_read(0);
	close_fds();
	sh.pid = 0;
	log_debug("shell exited status=0x%x busy=%d", status, sh.busy);
	if (sh.busy && sh.internal) {
		if (shell_spawn() == -1)
			sh.spawn_failures++;
		snap_finish(0);
		return 1;
	}
	if (sh.busy) {
		int code = WIFEXITED(status) ? WEXITSTATUS(status) :
		    128 + WTERMSIG(status);
		/* Kill what the dead shell left behind (it was the command). */
		shell_finish(code, 1, status);
	} else {
		sh.died_idle = 1;
		sh.died_status = status;
	}
	if (shell_spawn() == -1)
		sh.spawn_failures++;
	return 1;
}

/*
 * The script for one command. bash reads a pipe one byte per read(2), so
 * the text is kept short: the completion report is a readonly function
 * defined at start (__a_d). The command runs through eval inside a
 * one-iteration for loop so that the USR1 trap (break) can abandon the rest
 * of it at a timeout; the report is on the same line (bash misparses a line
 * starting with '{' after an eval syntax error) and a blank line first
 * resets the parser.
 */
static int
add_cmd_script(struct buf *b, const char *cmd, size_t len)
{
	int fd = sh.stfdnum;

	if (buf_addstr(b, "\n__a_c=") == -1 || shell_quote(b, cmd, len) == -1 ||
	    buf_addstr(b, "\n") == -1)
		return -1;
	if (sh.pending.len > 0) {
		if (buf_addstr(b, "{ ") == -1 ||
		    buf_add(b, sh.pending.p, sh.pending.len) == -1 ||
		    buf_addstr(b, "} 2>/dev/null\n") == -1)
			return -1;
		buf_reset(&sh.pending);
	}
	if (sh.is_bash)
		return buf_addf(b, "for __a_i in 1; do \\builtin eval \"$__a_c\" "
		    "</dev/null %d>&-; done; __a_d %s\n", fd, sh.nonce);
	/* POSIX sh: no readonly functions, spell it out. */
	/* `command eval`: a syntax error must not exit a POSIX shell. */
	if (buf_addf(b, "for __a_i in 1; do command eval \"$__a_c\" </dev/null %d>&-; "
	    "done; __a_s=$?; unset __a_c __a_i; printf '%%s %%d\\n' %s "
	    "\"$__a_s\" >&%d\n", fd, sh.nonce, fd) == -1)
		return -1;
	return 0;
}

int
shell_run(const char *cmd, size_t len, long long timeout_ms, size_t max_output,
    const char *result_id, shell_done_cb cb, void *arg)
{
	char room[SHELL_NOTE_MAX];

	if (memchr(cmd, '\0', len) != NULL || len > SHELL_MAX_CMD)
		return -2;
	if (result_id == NULL)
		result_id = "";
	if (sh.busy && (sh.internal || sh.abandoned) && !sh.queued.set) {
		/* An env snapshot takes a millisecond, an abandoned command is
		 * being stopped: run this right after. */
		sh.queued.set = 1;
		sh.queued.cmd = xmalloc(len + 1);
		memcpy(sh.queued.cmd, cmd, len);
		sh.queued.cmd[len] = '\0';
		sh.queued.len = len;
		sh.queued.timeout_ms = timeout_ms;
		sh.queued.max_output = max_output;
		sh.queued.cb = cb;
		sh.queued.arg = arg;
		snprintf(sh.queued.result_id, sizeof(sh.queued.result_id), "%s",
		    result_id);
		return 0;
	}
	if (sh.busy)
		return -1;
	/* a sandbox at its process limit first gets room (the note says
	 * what was killed; a killed shell is started again) */
	if (shell_make_room(0, room, sizeof(room)) != 0)
		snprintf(sh.note_next, sizeof(sh.note_next), "%s", room);
	if (sh.pid <= 0 && shell_spawn() == -1)
		return -3;
	if (max_output < SHELL_MIN_OUTPUT)
		max_output = SHELL_MIN_OUTPUT;
	if (max_output > AGENT_MAX_OUTPUT_CAP)
		max_output = AGENT_MAX_OUTPUT_CAP;
	/* Output a background process wrote since the last command is dropped. */
	out_read(0);
	proc_set_free(&sh.before);
	(void)proc_snapshot(sh.pid, &sh.before);
	free_output();
	sh.headcap = max_output / 2;
	sh.tailcap = max_output - sh.headcap;
	agent_random_hex(sh.nonce, 8);
	if (add_cmd_script(&sh.tx, cmd, len) == -1) {
		free_output();
		buf_reset(&sh.tx);
		return -2;
	}
	sh.busy = 1;
	sh.cb = cb;
	sh.arg = arg;
	sh.t0 = util_mono_ms();
	sh.started_unix = util_unix_ms();
	snprintf(sh.result_id, sizeof(sh.result_id), "%s", result_id);
	sh.res_cancelled = 0;
	sh.timed_out = 0;
	sh.interrupted = 0;
	sh.abandoned = 0;
	free(sh.cur_cmd);
	sh.cur_cmd = xmalloc(len + 1);
	memcpy(sh.cur_cmd, cmd, len);
	sh.cur_cmd[len] = '\0';
	sh.cur_cmd_len = len;
	sh.cur_told = sh.tell_abandoned;
	if (sh.tell_abandoned) {
		/* Say so in this command's output, as a dead shell is told. */
		char note[SHELL_ABANDONED_SHOWN + 256];
		int n = snprintf(note, sizeof(note), "[the previous command "
		    "(%s) was interrupted: the call that ran it went away (the "
		    "orchestrator restarted, or its client disconnected); its "
		    "output is lost]\n", sh.abandoned_cmd);
		if (n > 0)
			out_add(note, (size_t)n < sizeof(note) ? (size_t)n : sizeof(note) - 1);
		sh.tell_abandoned = 0;
	}
	/* sh.oom0 is the OOM count when the last command ended (or a job, or
	 * start): reading it here would cost every command a file read. */
	sh.timer = ev_timer_add((uint64_t)timeout_ms, timeout_cb, NULL);
	if (sh.died_idle) {
		/* Say so in this command's output. */
		char note[256];
		int n = snprintf(note, sizeof(note), "[the shell had %s %d since "
		    "the last command; a new shell was started in %s]\n",
		    WIFSIGNALED(sh.died_status) ? "been killed by signal" :
		    "exited with status", WIFSIGNALED(sh.died_status) ?
		    WTERMSIG(sh.died_status) : WEXITSTATUS(sh.died_status),
		    agent_conf.workdir);
		if (n > 0)
			out_add(note, (size_t)n < sizeof(note) ? (size_t)n : sizeof(note) - 1);
		sh.died_idle = 0;
	}
	if (sh.note_next[0] != '\0') {
		out_add(sh.note_next, strlen(sh.note_next));
		out_add("\n", 1);
		sh.note_next[0] = '\0';
	}
	tx_flush();
	return 0;
}

int
shell_env_name_ok(const char *k, size_t len)
{
	size_t i;

	if (len == 0 || len > SHELL_ENV_MAX_NAME)
		return 0;
	for (i = 0; i < len; i++)
		if (!((k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= 'a' && k[i] <= 'z') ||
		    k[i] == '_' || (i > 0 && k[i] >= '0' && k[i] <= '9')))
			return 0;
	return 1;
}

int
shell_env_room(size_t bytes)
{
	return sh.envops.len + bytes <= sh.envops.max &&
	    sh.pending.len + bytes <= sh.pending.max;
}

void
shell_env_op(const char *k, const char *v)
{
	struct buf *bs[2] = { &sh.pending, &sh.envops };
	int i;

	if (!shell_env_name_ok(k, strlen(k)))
		return;
	for (i = 0; i < 2; i++) {
		if (v != NULL) {
			if (buf_addf(bs[i], "export %s=", k) == -1 ||
			    shell_quote(bs[i], v, strlen(v)) == -1 ||
			    buf_addstr(bs[i], "\n") == -1)
				log_warnx("env: too many variables");
		} else if (buf_addf(bs[i], "unset %s\n", k) == -1)
			log_warnx("env: too many variables");
	}
	if (v != NULL)
		setenv(k, v, 1);
	else
		unsetenv(k);
}

void
shell_job_prelude(struct buf *out)
{
	/* The shell's exported env as of the last snapshot, then /v1/env. */
	if (sh.envcache.len > 0) {
		ign(buf_add(out, sh.envcache.p, sh.envcache.len));
		ign(buf_addstr(out, "\n"));
	}
	if (sh.envops.len > 0)
		ign(buf_add(out, sh.envops.p, sh.envops.len));
}

static void
snap_timeout_cb(void *arg)
{
	(void)arg;
	sh.timer = 0;
	if (sh.busy && sh.internal && sh.pid > 0) {
		log_warnx("shell pid=%d: env snapshot timed out; restarting it",
		    (int)sh.pid);
		kill(sh.pid, SIGKILL);
	}
}

/* Ends a snapshot (ok or not) and starts a queued shell call. */
static void
snap_finish(int ok)
{
	void (*cb)(void *) = sh.snap_cb;
	void *arg = sh.snap_arg;

	if (!sh.internal)
		return;
	if (sh.timer != 0) {
		ev_timer_del(sh.timer);
		sh.timer = 0;
	}
	if (!ok)
		log_debug("shell env snapshot failed; jobs use the previous one");
	sh.internal = 0;
	sh.busy = 0;
	sh.snap_cb = NULL;
	sh.snap_arg = NULL;
	cb(arg);
	run_queued();
}

int
shell_snapshot(void (*cb)(void *), void *arg)
{
	if (sh.busy || sh.pid <= 0)
		return -1;
	agent_random_hex(sh.nonce, 8);
	buf_reset(&sh.stline);
	if ((sh.is_bash ? buf_addf(&sh.tx, "\n__a_e %s\n", sh.nonce) :
	    buf_addf(&sh.tx, "\nexport -p >&%d; printf '%%s 0\\n' %s >&%d\n",
	    sh.stfdnum, sh.nonce, sh.stfdnum)) == -1)
		return -1;
	sh.busy = 1;
	sh.internal = 1;
	sh.snap_cb = cb;
	sh.snap_arg = arg;
	sh.timer = ev_timer_add(5000, snap_timeout_cb, NULL);
	tx_flush();
	return 0;
}

void
shell_cwd(char *out, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cwd", (int)sh.pid);
	if (sh.pid > 0 && (n = readlink(path, out, len - 1)) > 0) {
		out[n] = '\0';
		return;
	}
	snprintf(out, len, "%s", agent_conf.workdir);
}

void
shell_terminate(void)
{
	if (sh.pid <= 0)
		return;
	if (cgroup_kill(SHELL_CGROUP) == 0)
		return;
	proc_kill_tree(sh.pid, NULL, SIGKILL);
	kill(sh.pid, SIGKILL);
}

/* What a child cgroup's name says it holds, for a note. */
static void
describe(const char *name, char *out, size_t len)
{
	if (strcmp(name, SHELL_CGROUP) == 0)
		snprintf(out, len, "the shell and everything it started (its "
		    "working directory and variables are reset)");
	else if (strncmp(name, "x-", 2) == 0)
		snprintf(out, len, "a REST exec (%s) and its processes", name);
	else if (strncmp(name, "j-", 2) == 0)
		snprintf(out, len, "job %s and the processes it left", name);
	else
		snprintf(out, len, "%s", name);
}

int
shell_make_room(int force, char *note, size_t len)
{
	char name[CGROUP_NAME_MAX], what[CGROUP_NAME_MAX + 128];
	struct timespec ts = { 0, 1000000L };
	long long cur = -1, max = -1;
	long n;
	pid_t pid = -1;
	int st = 0, i, shell;

	note[0] = '\0';
	if (!cgroup_on() || (!force && !cgroup_at_limit()))
		return 0;
	(void)cgroup_pids(&cur, &max);
	if (cgroup_largest(name, sizeof(name), &n) == -1) {
		snprintf(note, len, "[the sandbox is at its process limit (%lld "
		    "of %lld) and nothing the agent started holds them]", cur,
		    max);
		log_warnx("process limit: %lld of %lld, nothing of ours to kill",
		    cur, max);
		return -1;
	}
	shell = strcmp(name, SHELL_CGROUP) == 0;
	describe(name, what, sizeof(what));
	log_warnx("process limit: %lld of %lld in use; killing %s (%ld "
	    "processes)", cur, max, name, n);
	(void)cgroup_kill(name);
	if (shell && sh.pid > 0) {
		/* ours to reap: its pid counts until then */
		for (i = 0; i < SHELL_ROOM_WAIT_MS; i++) {
			if ((pid = waitpid(sh.pid, &st, WNOHANG)) != 0)
				break;
			nanosleep(&ts, NULL);
		}
	}
	(void)cgroup_wait_room(SHELL_ROOM_WAIT_MS);
	snprintf(note, len, "[the sandbox was at its process limit (%lld of "
	    "%lld processes): the agent killed %s, %ld processes, to run this "
	    "call]", cur, max, what, n);
	if (shell && pid == sh.pid && pid > 0) {
		/* as the SIGCHLD loop would have: a running command is
		 * answered (restarted, with the note), a new shell starts */
		snprintf(sh.room_note, sizeof(sh.room_note), "[the sandbox was "
		    "at its process limit (%lld of %lld processes): the agent "
		    "killed %s, %ld processes, to run another call]", cur, max,
		    what, n);
		(void)shell_child_exited(pid, st);
		sh.room_note[0] = '\0';
	}
	return 1;
}
