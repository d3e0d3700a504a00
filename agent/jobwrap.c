/*
 * jobwrap.c: a job's wrapper (job.h), the process that runs it: a fork of
 * the agent that never returns to it, its own session, a child subreaper.
 * It forks the job's shell (its script read through a descriptor), copies
 * the job's output to <dir>/output up to the spool cap (bytes, or with
 * "streams":"split" records that keep stdout and stderr apart, jobx.h),
 * counts what it drops in <dir>/dropped, kills the job's whole tree at its
 * timeout (exit 124, as /v1/exec), and writes <dir>/exit.json when the
 * job's main process ends and its output is in the file. It then keeps
 * spooling and reaping the job's leftovers and exits. Only the files speak
 * to the agent, so a job outlives the agent and its callers.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "jobwrap.h"
#include "jobx.h"
#include "json.h"
#include "nest.h"
#include "proc.h"
#include "shell.h"
#include "util.h"

/* A job's files are replaced whole (util_write_file_atomic), mode 0644. */
#define JOB_FILE_MODE		0644

/* The spool cap of this wrapper's job (set once, at its start). */
static size_t spool_cap;

/* The wrapper's spool: the job's output copied to the file up to the cap. */
struct spool {
	int		 fd;		/* the output file */
	int		 pfd[2];	/* the job's output pipes (stdout, and
					 * stderr when split), -1 at EOF */
	int		 split;		/* records (jobx.h), else bytes */
	int		 noted;		/* split: the cap's record written */
	const char	*dir;
	unsigned long long written, dropped, dropped_saved;
	long long	 saved_at;	/* util_mono_ms */
};

static void
spool_write(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			return;		/* disk full: the rest is lost */
		}
		p += w;
		n -= (size_t)w;
	}
}

/* Records the dropped byte count (when it changed). */
static void
spool_save(struct spool *sp)
{
	char path[PATH_MAX + 256], num[32], err[256];
	int n;

	if (sp->dropped == sp->dropped_saved)
		return;
	n = snprintf(num, sizeof(num), "%llu\n", sp->dropped);
	snprintf(path, sizeof(path), "%s/dropped", sp->dir);
	ign(util_write_file_atomic(path, num, (size_t)n, JOB_FILE_MODE, err,
	    sizeof(err)));
	sp->dropped_saved = sp->dropped;
	sp->saved_at = util_mono_ms();
}

/* A split spool's record: one write, so a reader sees it whole or not. */
static void
spool_record(struct spool *sp, char tag, const char *p, size_t n)
{
	static char rec[JOBX_HDR + JOBX_REC_MAX];

	if (n > JOBX_REC_MAX)
		n = JOBX_REC_MAX;
	jobx_frame_hdr((unsigned char *)rec, tag, (uint32_t)n);
	memcpy(rec + JOBX_HDR, p, n);
	spool_write(sp->fd, rec, JOBX_HDR + n);
}

static void
spool_add(struct spool *sp, char tag, const char *p, size_t n)
{
	size_t cap = spool_cap, k;
	char marker[160];
	int m;

	if (sp->split) {
		k = cap == 0 ? n : sp->written < cap ? (size_t)(cap - sp->written) : 0;
		if (k > n)
			k = n;
		if (k > 0) {
			spool_record(sp, tag, p, k);
			sp->written += k;
		}
		if (k == n)
			return;
		if (!sp->noted) {
			sp->noted = 1;
			m = snprintf(marker, sizeof(marker), "output passed "
			    "max_output (%zu bytes): the rest is dropped", cap);
			spool_record(sp, 'n', marker, (size_t)m);
		}
		sp->dropped += n - k;
		if (sp->dropped_saved == 0)
			spool_save(sp);
		return;
	}
	if (cap == 0 || sp->written + n <= cap) {
		spool_write(sp->fd, p, n);
		sp->written += n;
		return;
	}
	if (sp->written < cap) {
		/* The last piece, cut before a partial UTF-8 character. */
		k = json_utf8_complete(p, (size_t)(cap - sp->written));
		spool_write(sp->fd, p, k);
		sp->written = cap;
		n -= k;
		m = snprintf(marker, sizeof(marker), "\n[... the job's output reached "
		    "the cap of %zu bytes: the rest is dropped and counted in "
		    "dropped_bytes ...]\n", cap);
		spool_write(sp->fd, marker, (size_t)m);
	}
	sp->dropped += n;
	if (sp->dropped_saved == 0 && sp->dropped > 0)
		spool_save(sp);		/* the first drop is told at once */
}

/* Reads what the job wrote on pipe i; all of it (to EAGAIN) when drain
 * is set. */
static void
spool_read1(struct spool *sp, int i, int drain)
{
	static char chunk[JOBX_REC_MAX];
	ssize_t n;
	int rounds = 0;

	while (sp->pfd[i] != -1) {
		n = read(sp->pfd[i], chunk, sizeof(chunk));
		if (n > 0) {
			spool_add(sp, i == 0 ? 'o' : 'e', chunk, (size_t)n);
			/* Bounded: a background writer may keep the pipe full. */
			if (++rounds >= (drain ? 1024 : 16))
				return;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == 0) {
			close(sp->pfd[i]);
			sp->pfd[i] = -1;
		}
		return;
	}
}

static void
spool_read(struct spool *sp, int drain)
{
	spool_read1(sp, 0, drain);
	spool_read1(sp, 1, drain);
}

static int
spool_open(const struct spool *sp)
{
	return sp->pfd[0] != -1 || sp->pfd[1] != -1;
}

/* At a job's timeout: its whole tree, SIGKILL (the wrapper stays). */
static void
wrapper_kill_tree(pid_t child)
{
	int fd;

	/* fd 5: the job's cgroup (or /dev/null: then openat fails) */
	if ((fd = openat(5, "cgroup.kill", O_WRONLY | O_CLOEXEC)) != -1) {
		ign((int)write(fd, "1", 1));
		close(fd);
	}
	(void)kill(-child, SIGKILL);
	(void)proc_kill_tree(getpid(), NULL, SIGKILL);
}

static void
wrapper_exit_record(const char *dir, int code, int sig, int oom, int timed_out)
{
	char path[PATH_MAX + 256], err[256];
	struct buf b;

	buf_init(&b, 512);
	if (code < 0)
		ign(buf_addf(&b, "{\"exit_code\":null,\"signal\":%d,", sig));
	else
		ign(buf_addf(&b, "{\"exit_code\":%d,\"signal\":null,", code));
	if (timed_out)
		ign(buf_addstr(&b, "\"timed_out\":true,"));
	ign(buf_addf(&b, "\"oom_killed\":%s,\"ended_ms\":%lld}\n",
	    oom ? "true" : "false", util_unix_ms()));
	snprintf(path, sizeof(path), "%s/exit.json", dir);
	ign(util_write_file_atomic(path, b.p, b.len, JOB_FILE_MODE, err,
	    sizeof(err)));
	buf_free(&b);
}

/* The job's script, open in its shell (it stays open in what the script
 * starts: a read-only copy of the script). */
#define JOB_SCRIPT_FD	63
#define JOB_SCRIPT_PATH	"/dev/fd/63"

void
jobwrap_main(const char *dir, int outfd, int pipefd, int cgfd, const char *cwd,
    const char *script, const struct jobx_opts *o, size_t cap)
{
	struct signalfd_siginfo si;
	struct pollfd pf[3];
	struct spool sp;
	long long oom0, oom1, deadline = 0, now;
	sigset_t none, chld;
	pid_t child, w;
	int st, i, code = -1, sig = -1, oom = 0, tmo, reaped = 0, timed_out = 0;
	int exit_due = 0;	/* kill_leftovers: the exit is still to record */
	int dnull, op[2], ep[2] = { -1, -1 }, sfd, infd = -1, np;
	char inpath[PATH_MAX + 128];

	spool_cap = cap;
	setsid();
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	for (i = 1; i < NSIG; i++)
		signal(i, SIG_DFL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	/* fds: 0-2 /dev/null, 3 output file, 4 pipe to the agent, 5 the
	 * job's cgroup (or /dev/null), then the job's output pipe (read end)
	 * and SIGCHLD. */
	outfd = fcntl(outfd, F_DUPFD, 100);
	pipefd = fcntl(pipefd, F_DUPFD, 100);
	if ((dnull = open("/dev/null", O_RDWR)) == -1)
		_exit(126);
	if (cgfd != -1 && (cgfd = fcntl(cgfd, F_DUPFD, 100)) == -1)
		_exit(126);
	if (dup2(dnull, 0) == -1 || dup2(dnull, 1) == -1 || dup2(dnull, 2) == -1 ||
	    dup2(outfd, 3) == -1 || dup2(pipefd, 4) == -1 ||
	    dup2(cgfd != -1 ? cgfd : dnull, 5) == -1)
		_exit(126);
	/* the job's command closes it (proc_closefrom below) */
	(void)fcntl(5, F_SETFD, FD_CLOEXEC);
	nest_closefrom(6);
	if (pipe2(op, O_CLOEXEC) == -1 ||
	    (o->split && pipe2(ep, O_CLOEXEC) == -1))
		_exit(126);
	(void)fcntl(op[0], F_SETPIPE_SZ, 1024 * 1024);
	if (o->split)
		(void)fcntl(ep[0], F_SETPIPE_SZ, 1024 * 1024);
	if (o->in != NULL) {
		snprintf(inpath, sizeof(inpath), "%s/stdin", dir);
		if ((infd = open(inpath, O_RDONLY | O_CLOEXEC)) == -1)
			_exit(126);
	}
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, NULL) == -1 ||
	    (sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC)) == -1)
		_exit(126);
	oom0 = proc_oom_kills();
	/* the script is read through a descriptor: under nest.c its path
	 * (in the agent's state) is not in the sandbox's view */
	if ((i = open(script, O_RDONLY)) == -1 ||
	    fcntl(i, F_DUPFD, JOB_SCRIPT_FD) != JOB_SCRIPT_FD ||
	    close(i) == -1 || (child = nest_fork_into(cgfd != -1 ? 5 : -1)) == -1)
		_exit(126);
	if (child == 0) {
		char *argv[3];
		nest_child_drop();
		setpgid(0, 0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(op[1], 1) == -1 || dup2(o->split ? ep[1] : op[1], 2) == -1 ||
		    (infd != -1 && dup2(infd, 0) == -1))
			_exit(127);
		proc_closefrom(3, JOB_SCRIPT_FD);
		proc_child_rlimits();
		if (chdir(cwd) == -1 && chdir(agent_conf.workdir) == -1)
			ign(chdir("/"));
		/* busybox picks the applet by argv[0] */
		argv[0] = (char *)(shell_is_bash() ? "bash" : "sh");
		argv[1] = (char *)JOB_SCRIPT_PATH;
		argv[2] = NULL;
		execv(shell_path(), argv);
		_exit(127);
	}
	setpgid(child, child);
	close(op[1]);
	if (ep[1] != -1)
		close(ep[1]);
	if (infd != -1)
		close(infd);
	if (o->timeout_ms > 0)
		deadline = util_mono_ms() + o->timeout_ms;
	if (o->timeout_ms <= 0 && !o->kill_leftovers)
		close(5);	/* else kept for a cgroup.kill */
	ign((int)write(4, &child, sizeof(child)));
	close(4);
	memset(&sp, 0, sizeof(sp));
	sp.fd = 3;
	sp.pfd[0] = op[0];
	sp.pfd[1] = ep[0];
	sp.split = o->split;
	sp.dir = dir;
	(void)fcntl(sp.pfd[0], F_SETFL, O_NONBLOCK);
	if (sp.pfd[1] != -1)
		(void)fcntl(sp.pfd[1], F_SETFL, O_NONBLOCK);
	for (;;) {
		/* Reap first: the main process's exit is recorded after the
		 * output it wrote is in the file. */
		while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
			if (w != child)
				continue;
			reaped = 1;
			if (timed_out) {
				code = 124;
				sig = -1;
			} else if (WIFEXITED(st))
				code = WEXITSTATUS(st);
			else if (WIFSIGNALED(st))
				sig = WTERMSIG(st);
			/* The OOM killer picks the biggest process: often a
			 * child of the job's shell, which then exits 137. */
			if (sig == SIGKILL || code == 128 + SIGKILL) {
				oom1 = proc_oom_kills();
				oom = oom0 >= 0 && oom1 > oom0;
			}
			spool_read(&sp, 1);
			spool_save(&sp);
			if (o->kill_leftovers) {
				/* as /v1/exec: the command's end ends its tree,
				 * the exit is recorded once the pipes are done */
				wrapper_kill_tree(child);
				exit_due = 1;
			} else
				wrapper_exit_record(dir, code, sig, oom, timed_out);
		}
		if (w == -1 && errno == ECHILD) {
			/* Nothing of the job is left: nothing can still write
			 * (short of an fd passed elsewhere: give up after 5 s). */
			for (i = 0; spool_open(&sp) && i < (exit_due ? 20 : 50); i++) {
				spool_read(&sp, 1);
				if (spool_open(&sp))
					(void)poll((struct pollfd[2]){
					    { sp.pfd[0], POLLIN, 0 },
					    { sp.pfd[1], POLLIN, 0 } }, 2, 100);
			}
			spool_save(&sp);
			if (exit_due)
				wrapper_exit_record(dir, code, sig, oom, timed_out);
			break;
		}
		tmo = -1;
		if (sp.dropped != sp.dropped_saved) {
			long long since = util_mono_ms() - sp.saved_at;
			if (since >= 1000)
				spool_save(&sp);
			else
				tmo = (int)(1000 - since);
		}
		if (deadline > 0 && !reaped && !timed_out) {
			now = util_mono_ms();
			if (now >= deadline) {
				/* exec's timeout: the whole tree, exit 124 */
				timed_out = 1;
				wrapper_kill_tree(child);
			} else if (tmo == -1 || deadline - now < tmo)
				tmo = (int)(deadline - now);
		}
		pf[0].fd = sfd;
		pf[0].events = POLLIN;
		pf[1].fd = sp.pfd[0];
		pf[1].events = POLLIN;
		pf[2].fd = sp.pfd[1];
		pf[2].events = POLLIN;
		np = 3;
		if (poll(pf, (nfds_t)np, tmo) == -1 && errno != EINTR)
			break;
		if (sp.pfd[0] != -1 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR)))
			spool_read1(&sp, 0, 0);
		if (sp.pfd[1] != -1 && (pf[2].revents & (POLLIN | POLLHUP | POLLERR)))
			spool_read1(&sp, 1, 0);
		while (read(sfd, &si, sizeof(si)) > 0)
			;
	}
	_exit(0);
}
