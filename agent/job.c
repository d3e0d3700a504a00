/*
 * job.c: async jobs (see job.h). The truth about a job is its directory,
 * <state>/jobs/<id>/: the agent writes script and status.json (replaced
 * whole) and stopped, the job's wrapper (jobwrap.c, a fork that never
 * returns to the agent) writes output, dropped and exit.json; the agent
 * reads them back for every answer (jinfo_load), so a restarted agent
 * knows every job it finds there. In memory: the list of known ids in start
 * order (with the wrapper pid while it is our child) and the waiters.
 *
 * A waiter is a /wait or /stop call held until its job ends (for /stop:
 * until no process of it is left, SIGKILL after JOB_STOP_GRACE_MS) or its
 * deadline passes; each is answered once, from the JOB_TICK_MS timer or
 * when a wrapper exits, then freed. Retention (job_gc) removes finished
 * jobs, oldest first, never a running one nor one being waited on.
 *
 * With cgroups (cgroup.h) a job's command starts in the child cgroup
 * named by its id (the wrapper, outside it, forks it there): a stop's
 * SIGKILL is one write to its cgroup.kill, which also reaches what the job
 * setsid'd, double-forked or left behind after it ended (those are the
 * sandbox init's children, not the wrapper's); its cgroup goes with the
 * job's directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "cgroup.h"
#include "conn.h"
#include "ev.h"
#include "http.h"
#include "job.h"
#include "jobwrap.h"
#include "jobx.h"
#include "json.h"
#include "log.h"
#include "proc.h"
#include "shell.h"
#include "strnum.h"
#include "util.h"
#include "xmalloc.h"

#define JOB_MAX			4096		/* jobs remembered */
#define JOB_MAX_CMD		((size_t)1024 * 1024)
#define JOB_LIST_MAX_CMD	((size_t)4096)	/* command bytes per job in a list */
#define JOB_POLL_DEFAULT	((size_t)1024 * 1024)
#define JOB_POLL_MAX		AGENT_MAX_OUTPUT_CAP
#define JOB_TICK_MS		50
#define JOB_STOP_GRACE_MS	2000
#define JOB_STOP_GIVEUP_MS	8000
#define JOB_MAX_WAIT_MS		(3600LL * 1000)
/* The smallest cap a job gets when the spool total is used up by running
 * jobs: its first output is still seen, and 4096 of them stay bounded. */
#define JOB_MIN_CAP		((size_t)64 * 1024)

struct job {
	char		 id[32];
	pid_t		 wrapper;	/* our unreaped child, else 0 */
	size_t		 cap;		/* its spool cap (0: unknown, an older
					 * agent's: the per-job cap) */
	int		 finished;	/* cached: exit.json seen or lost */
	struct job	*next;
};

/* What the files say about a job. */
struct jinfo {
	char		*command;
	long long	 pid, wrapper, wstart, started_ms;
	int		 have_exit;
	long long	 exit_code, sig, ended_ms;	/* -1: null */
	int		 oom;
	int		 stopped;
	int		 running;
	int		 lost;
	long long	 out_bytes;
	long long	 dropped;	/* output bytes beyond the spool cap */
	int		 split;		/* stdout and stderr apart (jobx.h) */
	int		 timed_out;	/* killed at its timeout_ms: exit 124 */
	long long	 max_output;	/* its cap when started with one, else -1 */
};

struct waiter {
	struct conn	*c;
	char		 id[32];
	int		 is_stop;
	int		 killed;
	long long	 kill_at;	/* util_mono_ms */
	long long	 deadline;
	struct waiter	*next;
};

static struct job *jobs;
static int njobs;
static struct waiter *waiters;
static uint64_t tick_timer;
static char jobsdir[PATH_MAX];

static void tick_cb(void *);

static int
valid_id(const char *id)
{
	size_t i, n = strlen(id);

	if (n < 3 || n >= sizeof(((struct job *)0)->id) || strncmp(id, "j-", 2) != 0)
		return 0;
	for (i = 2; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return 0;
	return 1;
}

static struct job *
job_find(const char *id)
{
	struct job *j;

	for (j = jobs; j != NULL; j = j->next)
		if (strcmp(j->id, id) == 0)
			return j;
	return NULL;
}

static struct job *
job_remember(const char *id)
{
	struct job *j = xcalloc(1, sizeof(*j)), **pp;

	snprintf(j->id, sizeof(j->id), "%s", id);
	/* Keep the list in start order: append. */
	for (pp = &jobs; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = j;
	njobs++;
	/* Forget the oldest finished job's memory (its files stay). */
	if (njobs > JOB_MAX) {
		for (pp = &jobs; *pp != NULL; pp = &(*pp)->next) {
			if ((*pp)->finished && (*pp)->wrapper == 0 && *pp != j) {
				struct job *old = *pp;
				*pp = old->next;
				free(old);
				njobs--;
				break;
			}
		}
	}
	return j;
}

/*
 * Reads a job's file into b, initialised here with max. The open does not
 * block: a FIFO a command puts in the state directory cannot hang the
 * agent. 0, or -1 (missing, unreadable, larger than max).
 */
static int
read_file(const char *path, struct buf *b, size_t max)
{
	int fd, rc;

	buf_init(b, max);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) == -1)
		return -1;
	rc = util_read_fd(fd, b);
	close(fd);
	return rc;
}

/* A job's files are replaced whole (util_write_file_atomic), mode 0644. */
#define JOB_FILE_MODE		0644

static long long
jget_ll(const struct json *o, const char *k)
{
	long long v;

	return json_get_int(o, k, &v) == 0 ? v : -1;
}

/* 404 for a job id, saying what retention keeps. */
static void
reply_no_job(struct conn *c, const char *id)
{
	char age[64] = "";

	if (agent_conf.job_keep_ms > 0)
		snprintf(age, sizeof(age), ", for %lld s after they end",
		    agent_conf.job_keep_ms / 1000);
	conn_reply_error(c, 404, "not_found", "no job %s (never started here, "
	    "or finished and removed: the newest %d finished jobs are kept%s)",
	    id, agent_conf.job_keep, age);
}

static pid_t
our_wrapper(const char *id)
{
	struct job *j = job_find(id);

	return j != NULL ? j->wrapper : 0;
}

/* Loads a job's record. 0, or -1 if there is no such job. */
static int
jinfo_load(const char *id, struct jinfo *ji)
{
	char path[PATH_MAX + 256];
	struct buf b;
	struct json *v;
	struct stat st;
	const char *s;
	pid_t w;

	memset(ji, 0, sizeof(*ji));
	ji->exit_code = ji->sig = ji->ended_ms = -1;
	snprintf(path, sizeof(path), "%s/%s/status.json", jobsdir, id);
	/* The record holds the command JSON-escaped: up to 6 bytes a byte. */
	if (read_file(path, &b, JOB_MAX_CMD * 6 + 4096) == -1 ||
	    (v = json_parse(b.p ? b.p : "", b.len, NULL, 0)) == NULL) {
		buf_free(&b);
		return -1;
	}
	buf_free(&b);
	if (json_get_str(v, "command", &s, NULL) == 0)
		ji->command = xstrdup(s);
	else
		ji->command = xstrdup("");
	/* Records are ours, but never signal -1 (everything) or 1 from one. */
	ji->pid = jget_ll(v, "pid");
	ji->wrapper = jget_ll(v, "wrapper_pid");
	if (ji->pid > INT_MAX)
		ji->pid = -1;
	if (ji->wrapper > INT_MAX)
		ji->wrapper = -1;
	ji->wstart = jget_ll(v, "wrapper_start");
	ji->started_ms = jget_ll(v, "started_ms");
	ji->max_output = jget_ll(v, "max_output");
	if (json_get_str(v, "streams", &s, NULL) == 0)
		ji->split = strcmp(s, "split") == 0;
	json_free(v);

	snprintf(path, sizeof(path), "%s/%s/exit.json", jobsdir, id);
	if (read_file(path, &b, 4096) == 0 &&
	    (v = json_parse(b.p ? b.p : "", b.len, NULL, 0)) != NULL) {
		ji->have_exit = 1;
		ji->exit_code = jget_ll(v, "exit_code");
		ji->sig = jget_ll(v, "signal");
		ji->ended_ms = jget_ll(v, "ended_ms");
		(void)json_get_bool(v, "oom_killed", &ji->oom);
		(void)json_get_bool(v, "timed_out", &ji->timed_out);
		json_free(v);
	}
	buf_free(&b);
	snprintf(path, sizeof(path), "%s/%s/stopped", jobsdir, id);
	ji->stopped = access(path, F_OK) == 0;
	snprintf(path, sizeof(path), "%s/%s/output", jobsdir, id);
	ji->out_bytes = stat(path, &st) == 0 ? (long long)st.st_size : 0;
	snprintf(path, sizeof(path), "%s/%s/dropped", jobsdir, id);
	if (read_file(path, &b, 64) == 0 && b.len > 0) {
		const char *errstr;
		char num[32];
		size_t k = b.len < sizeof(num) - 1 ? b.len : sizeof(num) - 1;

		memcpy(num, b.p, k);
		num[k] = '\0';
		if (k > 0 && num[k - 1] == '\n')
			num[k - 1] = '\0';
		if (strnum_ll(num, 0, LLONG_MAX, &ji->dropped, &errstr) == -1)
			ji->dropped = 0;
	}
	buf_free(&b);

	if (!ji->have_exit) {
		w = our_wrapper(id);
		/* Ours, or the recorded wrapper still alive, or the wrapper
		 * gone but the job's process group alive. */
		ji->running = w > 0 || (ji->wrapper > 1 && ji->wstart >= 0 &&
		    proc_starttime((pid_t)ji->wrapper) == ji->wstart) ||
		    (ji->pid > 1 && kill(-(pid_t)ji->pid, 0) == 0);
		ji->lost = !ji->running;
	}
	return 0;
}

static const char *
jinfo_state(const struct jinfo *ji)
{
	if (ji->running)
		return "running";
	if (ji->stopped)
		return "stopped";
	if (ji->have_exit && ji->sig > 0)
		return "signaled";
	return "exited";
}

/* Writes {job}'s members; a command longer than maxcmd (0: any) is cut. */
static void
jinfo_write(struct jw *w, const char *id, const struct jinfo *ji, size_t maxcmd)
{
	const char *cmd = ji->command ? ji->command : "";
	size_t cl = strlen(cmd);

	jw_key(w, "id"); jw_cstr(w, id);
	if (maxcmd > 0 && cl > maxcmd) {
		jw_key(w, "command"); jw_str(w, cmd, json_utf8_complete(cmd, maxcmd));
		jw_key(w, "command_truncated"); jw_bool(w, 1);
	} else {
		jw_key(w, "command"); jw_str(w, cmd, cl);
	}
	jw_key(w, "state"); jw_cstr(w, jinfo_state(ji));
	jw_key(w, "pid"); jw_int(w, ji->pid);
	jw_key(w, "exit_code");
	if (ji->have_exit && ji->exit_code >= 0) jw_int(w, ji->exit_code); else jw_null(w);
	jw_key(w, "signal");
	if (ji->have_exit && ji->sig > 0) jw_int(w, ji->sig); else jw_null(w);
	jw_key(w, "oom_killed"); jw_bool(w, ji->oom);
	if (ji->split) {
		jw_key(w, "streams"); jw_cstr(w, "split");
	}
	if (ji->timed_out) {
		jw_key(w, "timed_out"); jw_bool(w, 1);
	}
	jw_key(w, "started_ms"); jw_int(w, ji->started_ms);
	jw_key(w, "ended_ms");
	if (ji->have_exit && ji->ended_ms >= 0) jw_int(w, ji->ended_ms); else jw_null(w);
	jw_key(w, "output_bytes"); jw_int(w, ji->out_bytes);
	jw_key(w, "truncated"); jw_bool(w, ji->dropped > 0);
	jw_key(w, "dropped_bytes"); jw_int(w, ji->dropped);
	if (ji->lost) {
		jw_key(w, "note");
		jw_cstr(w, "the job's process ended without recording its exit "
		    "status (its wrapper was killed); exit status unknown");
	} else if (ji->oom) {
		jw_key(w, "note"); jw_cstr(w, "killed by the kernel: out of memory");
	} else if (ji->timed_out) {
		jw_key(w, "note");
		jw_cstr(w, "timed out: its process tree was killed (exit 124)");
	} else if (ji->have_exit && ji->sig == SIGKILL && !ji->stopped) {
		jw_key(w, "note");
		jw_cstr(w, "killed by signal 9 (possibly out of memory; the "
		    "cgroup OOM counter was not available or did not change)");
	}
}

static void
jinfo_free(struct jinfo *ji)
{
	free(ji->command);
	ji->command = NULL;
}

/* Replies {job} for id. */
static void
reply_job(struct conn *c, const char *id)
{
	struct jinfo ji;
	struct buf b;
	struct jw w;

	if (jinfo_load(id, &ji) == -1) {
		reply_no_job(c, id);
		return;
	}
	buf_init(&b, AGENT_MAX_RESP);
	jw_init(&w, &b);
	jw_obj(&w);
	jinfo_write(&w, id, &ji, 0);
	jw_obj_end(&w);
	jinfo_free(&ji);
	conn_reply_jw(c, &w, &b);
}

static int
has_waiter(const char *id)
{
	struct waiter *wt;

	for (wt = waiters; wt != NULL; wt = wt->next)
		if (strcmp(wt->id, id) == 0)
			return 1;
	return 0;
}

/* Removes a job's directory (its files; a job writes no subdirectory). */
static int
remove_job_dir(const char *id)
{
	char dir[PATH_MAX + 64];
	struct dirent *de;
	DIR *d;
	int dfd, rc;

	snprintf(dir, sizeof(dir), "%s/%s", jobsdir, id);
	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : -1;
	dfd = dirfd(d);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dfd, de->d_name, 0) == -1 && errno != ENOENT)
			log_warn("job %s: unlink %s", id, de->d_name);
	}
	closedir(d);
	if ((rc = rmdir(dir)) == -1)
		log_warn("job %s: rmdir %s", id, dir);
	cgroup_release(id);
	return rc;
}

/*
 * Retention: finished jobs beyond the newest agent_conf.job_keep, and
 * those that ended more than job_keep_ms ago (0: no age limit), lose their
 * directory and are forgotten, oldest first. A running job, one whose
 * wrapper still lives (leftover processes) and one being waited on stay.
 */
static void
job_gc(void)
{
	struct job **pp, *j;
	struct jinfo ji;
	long long now = util_unix_ms(), ended;
	int nfin = 0, removable, expired, removed = 0;
	char *fin;
	size_t i;

	fin = xcalloc((size_t)njobs + 1, 1);
	for (j = jobs, i = 0; j != NULL; j = j->next, i++) {
		if (j->wrapper != 0 || has_waiter(j->id) ||
		    jinfo_load(j->id, &ji) == -1)
			continue;
		removable = !ji.running && !(ji.wrapper > 1 && ji.wstart >= 0 &&
		    proc_starttime((pid_t)ji.wrapper) == ji.wstart);
		ended = ji.have_exit && ji.ended_ms >= 0 ? ji.ended_ms : ji.started_ms;
		jinfo_free(&ji);
		if (!removable)
			continue;
		expired = agent_conf.job_keep_ms > 0 && now - ended > agent_conf.job_keep_ms;
		fin[i] = (char)(expired ? 2 : 1);
		nfin++;
	}
	/* Oldest first: the list is in start order. */
	for (pp = &jobs, i = 0; (j = *pp) != NULL; i++) {
		if (fin[i] != 0 && (fin[i] == 2 || nfin > agent_conf.job_keep) &&
		    remove_job_dir(j->id) == 0) {
			log_info("job=%s removed (retention)", j->id);
			*pp = j->next;
			free(j);
			njobs--;
			nfin--;
			removed++;
			continue;
		}
		pp = &j->next;
	}
	free(fin);
	(void)removed;
}

static uint64_t gc_timer;

static void
gc_cb(void *arg)
{
	uint64_t ms;

	(void)arg;
	job_gc();
	ms = agent_conf.job_keep_ms > 0 ? (uint64_t)agent_conf.job_keep_ms / 2 : 30000;
	if (ms > 30000)
		ms = 30000;
	if (ms < 200)
		ms = 200;
	gc_timer = ev_timer_add(ms, gc_cb, NULL);
}

int
job_init(void)
{
	DIR *d;
	struct dirent *de;
	struct jinfo ji;
	struct {
		char id[32];
		long long t;
	} *v = NULL;
	size_t n = 0, cap = 0, i, k;

	snprintf(jobsdir, sizeof(jobsdir), "%s/jobs", agent_conf.statedir);
	if (mkdir(jobsdir, 0700) == -1 && errno != EEXIST) {
		log_warn("mkdir %s", jobsdir);
		return -1;
	}
	if ((d = opendir(jobsdir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (!valid_id(de->d_name) || jinfo_load(de->d_name, &ji) == -1)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			v = xreallocarray(v, cap, sizeof(*v));
		}
		memcpy(v[n].id, de->d_name, strlen(de->d_name) + 1);	/* valid_id: short */
		v[n].t = ji.started_ms;
		n++;
		jinfo_free(&ji);
	}
	closedir(d);
	/* Insertion sort by start time (few jobs). */
	for (i = 1; i < n; i++)
		for (k = i; k > 0 && v[k].t < v[k - 1].t; k--) {
			char id[32];
			long long t = v[k].t;
			memcpy(id, v[k].id, sizeof(id));
			memcpy(v[k].id, v[k - 1].id, sizeof(id));
			v[k].t = v[k - 1].t;
			memcpy(v[k - 1].id, id, sizeof(id));
			v[k - 1].t = t;
		}
	for (i = 0; i < n; i++)
		job_remember(v[i].id);
	free(v);
	if (n > 0)
		log_info("jobs: %zu found in %s", n, jobsdir);
	gc_cb(NULL);
	return 0;
}

/* The cap of the job about to start (job_budget): the wrapper, a fork,
 * reads its copy. */
static size_t spool_cap;

/* Bytes job id's spool holds or may still take: its output file's size,
 * or, while it runs, its cap. */
static size_t
spool_bytes(const struct job *j, int running)
{
	char path[PATH_MAX + 64];
	struct stat st;
	size_t sz = 0;

	snprintf(path, sizeof(path), "%s/%s/output", jobsdir, j->id);
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
		sz = (size_t)st.st_blocks * 512;
	if (running) {
		size_t cap = j->cap != 0 ? j->cap : agent_conf.job_output_cap;

		if (cap > sz)
			sz = cap;
	}
	return sz;
}

/*
 * The cap of a new job under agent_conf.job_spool_total: what the kept
 * spools leave of it, after the oldest finished jobs are removed to make
 * room for a full per-job cap; at least JOB_MIN_CAP.
 */
static size_t
job_budget(void)
{
	size_t total = agent_conf.job_spool_total, want = agent_conf.job_output_cap;
	size_t used = 0, left;
	struct job **pp, *j;
	struct jinfo ji;
	int running;

	if (total == 0)
		return want;
	if (want == 0 || want > total)
		want = total;
	for (j = jobs; j != NULL; j = j->next) {
		running = j->wrapper != 0;
		if (!running && jinfo_load(j->id, &ji) == 0) {
			running = ji.running;
			jinfo_free(&ji);
		}
		used += spool_bytes(j, running);
	}
	/* oldest first: the list is in start order */
	for (pp = &jobs; used + want > total && (j = *pp) != NULL;) {
		if (j->wrapper != 0 || has_waiter(j->id) ||
		    jinfo_load(j->id, &ji) == -1) {
			pp = &j->next;
			continue;
		}
		running = ji.running || (ji.wrapper > 1 && ji.wstart >= 0 &&
		    proc_starttime((pid_t)ji.wrapper) == ji.wstart);
		jinfo_free(&ji);
		if (!running) {
			size_t b = spool_bytes(j, 0);

			if (remove_job_dir(j->id) == 0) {
				log_info("job=%s removed (spool total %zu bytes "
				    "reached)", j->id, total);
				used -= b < used ? b : used;
				*pp = j->next;
				free(j);
				njobs--;
				continue;
			}
		}
		pp = &j->next;
	}
	left = used < total ? total - used : 0;
	if (left > want)
		left = want;
	return left < JOB_MIN_CAP ? JOB_MIN_CAP : left;
}


struct start_ctx {
	struct conn	*c;
	char		*cmd;
	size_t		 cmdlen;
	struct jobx_opts opts;		/* run as an exec would (jobx.h) */
};

static void job_start_cont(void *);

void
job_http_start(struct conn *c, const struct json *body)
{
	struct start_ctx *ctx;
	const char *cmd;
	size_t cmdlen;

	if (json_get_str(body, "command", &cmd, &cmdlen) != 0) {
		conn_reply_error(c, 400, "bad_request", "\"command\" (string) is required");
		return;
	}
	if (cmdlen == 0 || cmdlen > JOB_MAX_CMD || memchr(cmd, '\0', cmdlen) != NULL) {
		conn_reply_error(c, 400, "bad_request",
		    "\"command\" must be 1 byte to 1 MiB with no NUL bytes");
		return;
	}
	ctx = xcalloc(1, sizeof(*ctx));
	if (jobx_opts_parse(c, body, valid_id, &ctx->opts) == -1) {
		free(ctx);
		return;
	}
	job_gc();
	ctx->c = c;
	ctx->cmd = xstrndup(cmd, cmdlen);
	ctx->cmdlen = cmdlen;
	/* The job gets the shell's current exported env: ask the shell if it
	 * is idle, else use what it said last time. */
	if (shell_snapshot(job_start_cont, ctx) == -1)
		job_start_cont(ctx);
}

static void
job_start_cont(void *arg)
{
	struct start_ctx *ctx = arg;
	struct conn *c = ctx->c;
	const char *cmd = ctx->cmd;
	size_t cmdlen = ctx->cmdlen;
	char id[32], dir[PATH_MAX + 64], path[PATH_MAX + 128], cwd[PATH_MAX];
	char spath[PATH_MAX + 128], err[PATH_MAX + 256];
	char note[512] = "", more[512];
	struct buf script, rec, resp;
	struct jw w;
	struct job *j;
	int outfd = -1, cgfd = -1, pp[2] = { -1, -1 };
	pid_t wpid, child = -1;
	ssize_t n;
	long long started;

	if (ctx->opts.id[0] != '\0')
		snprintf(id, sizeof(id), "%s", ctx->opts.id);
	else {
		id[0] = 'j';
		id[1] = '-';
		agent_random_hex(id + 2, 6);
	}
	snprintf(dir, sizeof(dir), "%s/%s", jobsdir, id);
	if (mkdir(jobsdir, 0700) == -1 && errno != EEXIST) {
		conn_reply_error(c, 500, "internal", "cannot create %s: %s", jobsdir,
		    strerror(errno));
		goto out;
	}
	if (mkdir(dir, 0700) == -1) {
		/* a caller's id names one job once (it started, or is kept) */
		if (errno == EEXIST && ctx->opts.id[0] != '\0')
			conn_reply_error(c, 409, "exists", "job %s exists", id);
		else
			conn_reply_error(c, 500, "internal", "cannot create %s: %s",
			    dir, strerror(errno));
		goto out;
	}
	if (ctx->opts.in != NULL) {
		snprintf(path, sizeof(path), "%s/stdin", dir);
		if (util_write_file_atomic(path, (const char *)ctx->opts.in,
		    ctx->opts.inlen, 0600, err, sizeof(err)) == -1) {
			conn_reply_error(c, 500, "internal", "cannot write %s", err);
			goto out;
		}
	}
	snprintf(path, sizeof(path), "%s/output", dir);
	if ((outfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) == -1 ||
	    pipe2(pp, O_CLOEXEC) == -1) {
		conn_reply_error(c, 500, "internal", "cannot create the job's "
		    "output: %s", strerror(errno));
		goto out;
	}
	/*
	 * The script: the shell's exported env, then the command (through
	 * eval, so a syntax error is reported as the shell's). It goes to a
	 * file, not an argument: one exec argument may not exceed 128 KiB.
	 */
	buf_init(&script, JOB_MAX_CMD * 4 + ((size_t)3 * 1024 * 1024));
	ign(buf_addstr(&script, "{ :\n"));
	shell_job_prelude(&script);
	if (buf_addstr(&script, "\n} >/dev/null 2>&1\n") == -1 ||
	    buf_add(&script, ctx->opts.env.p, ctx->opts.env.len) == -1 ||
	    buf_addstr(&script, "__agent_c=") == -1 ||
	    shell_quote(&script, cmd, cmdlen) == -1 ||
	    buf_addstr(&script, "\nunset __agent_s; eval \"$__agent_c\"\n") == -1) {
		buf_free(&script);
		conn_reply_error(c, 413, "too_large", "the command and the "
		    "environment are too large for a job script");
		goto out;
	}
	snprintf(spath, sizeof(spath), "%s/script", dir);
	if (util_write_file_atomic(spath, script.p, script.len, JOB_FILE_MODE,
	    err, sizeof(err)) == -1) {
		buf_free(&script);
		conn_reply_error(c, 500, "internal", "cannot write %s", err);
		goto out;
	}
	buf_free(&script);
	if (ctx->opts.cwd[0] != '\0')
		snprintf(cwd, sizeof(cwd), "%s", ctx->opts.cwd);
	else
		shell_cwd(cwd, sizeof(cwd));
	spool_cap = job_budget();
	if (ctx->opts.max_output > 0 && (size_t)ctx->opts.max_output < spool_cap)
		spool_cap = (size_t)ctx->opts.max_output;
	started = util_unix_ms();
	/* a sandbox at its process limit gets room first (the note says) */
	(void)shell_make_room(0, note, sizeof(note));
	if (cgroup_on() && (cgfd = cgroup_open(id)) == -1)
		log_warn("job=%s: cgroup", id);
	if ((wpid = fork()) == -1 && errno == EAGAIN && note[0] == '\0' &&
	    shell_make_room(1, more, sizeof(more)) == 1) {
		snprintf(note, sizeof(note), "%s", more);
		wpid = fork();	/* the limit: once more */
	}
	if (wpid == -1) {
		conn_reply_error(c, errno == EAGAIN ? 503 : 500, errno == EAGAIN ?
		    "process_limit" : "internal", "fork: %s", strerror(errno));
		goto out;
	}
	if (wpid == 0)
		jobwrap_main(dir, outfd, pp[1], cgfd, cwd, spath, &ctx->opts,
		    spool_cap);
	close(pp[1]);
	pp[1] = -1;
	do {
		n = read(pp[0], &child, sizeof(child));
	} while (n == -1 && errno == EINTR);
	if (n != (ssize_t)sizeof(child))
		child = -1;
	j = job_remember(id);
	j->wrapper = wpid;
	j->cap = spool_cap;
	buf_init(&rec, JOB_MAX_CMD * 6 + 4096);
	jw_init(&w, &rec);
	jw_obj(&w);
	jw_key(&w, "id"); jw_cstr(&w, id);
	jw_key(&w, "command"); jw_str(&w, cmd, cmdlen);
	jw_key(&w, "pid"); jw_int(&w, child);
	jw_key(&w, "wrapper_pid"); jw_int(&w, wpid);
	jw_key(&w, "wrapper_start"); jw_int(&w, proc_starttime(wpid));
	jw_key(&w, "started_ms"); jw_int(&w, started);
	jw_key(&w, "cwd"); jw_cstr(&w, cwd);
	if (ctx->opts.split) {
		jw_key(&w, "streams"); jw_cstr(&w, "split");
	}
	if (ctx->opts.timeout_ms > 0) {
		jw_key(&w, "timeout_ms"); jw_int(&w, ctx->opts.timeout_ms);
	}
	jw_key(&w, "max_output"); jw_int(&w, (long long)spool_cap);
	jw_obj_end(&w);
	snprintf(path, sizeof(path), "%s/status.json", dir);
	if (jw_finish(&w) == -1 || util_write_file_atomic(path, rec.p, rec.len,
	    JOB_FILE_MODE, err, sizeof(err)) == -1)
		log_warn("job %s: cannot write %s", id, path);
	buf_free(&rec);
	agent_touch();
	log_info("job=%s started pid=%d wrapper=%d", id, (int)child, (int)wpid);
	buf_init(&resp, 256);
	jw_init(&w, &resp);
	jw_obj(&w);
	jw_key(&w, "id"); jw_cstr(&w, id);
	jw_key(&w, "pid"); jw_int(&w, child);
	if (note[0] != '\0') {
		jw_key(&w, "note"); jw_cstr(&w, note);
	}
	jw_obj_end(&w);
	if (jw_finish(&w) == 0)
		conn_reply_json(c, 200, &resp);
	else
		conn_reply_error(c, 500, "internal", "response");
	buf_free(&resp);
out:
	if (cgfd != -1)
		close(cgfd);
	if (outfd != -1)
		close(outfd);
	if (pp[0] != -1)
		close(pp[0]);
	if (pp[1] != -1)
		close(pp[1]);
	jobx_opts_free(&ctx->opts);
	free(ctx->cmd);
	free(ctx);
}

void
job_http_list(struct conn *c)
{
	struct job *j;
	struct jinfo ji;
	struct buf b;
	struct jw w;

	buf_init(&b, AGENT_MAX_RESP);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "jobs");
	jw_arr(&w);
	for (j = jobs; j != NULL; j = j->next) {
		if (jinfo_load(j->id, &ji) == -1)
			continue;
		jw_obj(&w);
		jinfo_write(&w, j->id, &ji, JOB_LIST_MAX_CMD);
		jw_obj_end(&w);
		jinfo_free(&ji);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
	conn_reply_jw(c, &w, &b);
}

static int
check_id(struct conn *c, const char *id)
{
	if (!valid_id(id)) {
		conn_reply_error(c, 404, "not_found",
		    "no such job (ids look like j-0123456789ab)");
		return -1;
	}
	return 0;
}

void
job_http_get(struct conn *c, const char *id, const char *query)
{
	char val[64], path[PATH_MAX + 64];
	long long off = 0, max = JOB_POLL_DEFAULT;
	const char *errstr;
	struct jinfo ji;
	struct buf b, data;
	struct jw w;
	ssize_t n;
	size_t len;
	int fd, eof, r;

	if (check_id(c, id) == -1)
		return;
	if ((r = http_query_get(query, "offset", val, sizeof(val))) == -1 ||
	    (r == 0 && strnum_ll(val, 0, LLONG_MAX / 2, &off, &errstr) == -1)) {
		conn_reply_error(c, 400, "bad_request", "offset must be an integer >= 0");
		return;
	}
	if ((r = http_query_get(query, "max", val, sizeof(val))) == -1 ||
	    (r == 0 && strnum_ll(val, 0, LLONG_MAX / 2, &max, &errstr) == -1)) {
		conn_reply_error(c, 400, "bad_request", "max must be an integer >= 0");
		return;
	}
	if (max > (long long)JOB_POLL_MAX)
		max = (long long)JOB_POLL_MAX;
	/* Status first: if it had ended, the output file is complete. */
	if (jinfo_load(id, &ji) == -1) {
		reply_no_job(c, id);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s/output", jobsdir, id);
	if (ji.split) {
		/* stdout and stderr apart: whole records as {"s","b"} */
		struct stat st;
		long long next, size;

		buf_init(&b, AGENT_MAX_RESP);
		jw_init(&w, &b);
		jw_obj(&w);
		jinfo_write(&w, id, &ji, 0);
		jw_key(&w, "chunks");
		jw_arr(&w);
		next = max > 0 ? jobx_chunks(&w, path, off, (size_t)max) : off;
		jw_arr_end(&w);
		size = stat(path, &st) == 0 ? (long long)st.st_size : 0;
		jw_key(&w, "offset"); jw_int(&w, off);
		jw_key(&w, "next_offset"); jw_int(&w, next);
		jw_key(&w, "eof"); jw_bool(&w, !ji.running && next >= size);
		jw_obj_end(&w);
		jinfo_free(&ji);
		conn_reply_jw(c, &w, &b);
		return;
	}
	buf_init(&data, (size_t)max + 1);
	len = 0;
	if (max > 0 && (fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) != -1) {
		if (buf_add(&data, "", 0) == 0 && data.cap >= 1) {
			char *tmp = xmalloc((size_t)max);
			while (len < (size_t)max) {
				n = pread(fd, tmp + len, (size_t)max - len, off + (long long)len);
				if (n == -1 && errno == EINTR)
					continue;
				if (n <= 0)
					break;
				len += (size_t)n;
			}
			/* Do not cut a UTF-8 character of a job still writing. */
			if (len > 0 && (len == (size_t)max || ji.running))
				len = json_utf8_complete(tmp, len);
			ign(buf_add(&data, tmp, len));
			free(tmp);
		}
		close(fd);
	}
	{
		struct stat st;
		long long size = stat(path, &st) == 0 ? (long long)st.st_size : 0;
		eof = !ji.running && off + (long long)len >= size;
		ji.out_bytes = size > ji.out_bytes ? size : ji.out_bytes;
	}
	buf_init(&b, AGENT_MAX_RESP);
	jw_init(&w, &b);
	jw_obj(&w);
	jinfo_write(&w, id, &ji, 0);
	jw_key(&w, "output"); jw_str(&w, data.p ? data.p : "", len);
	jw_key(&w, "offset"); jw_int(&w, off);
	jw_key(&w, "next_offset"); jw_int(&w, off + (long long)len);
	jw_key(&w, "eof"); jw_bool(&w, eof);
	jw_obj_end(&w);
	jinfo_free(&ji);
	buf_free(&data);
	conn_reply_jw(c, &w, &b);
}

/* The stream's view of a job's end (jobx_state_fn). */
static int
stream_state(const char *id, struct jobx_end *e)
{
	struct jinfo ji;

	if (jinfo_load(id, &ji) == -1)
		return -1;
	e->running = ji.running;
	e->have_exit = ji.have_exit;
	e->exit_code = ji.exit_code;
	e->sig = ji.sig;
	e->oom = ji.oom;
	e->timed_out = ji.timed_out;
	e->started_ms = ji.started_ms;
	e->ended_ms = ji.ended_ms;
	e->dropped = ji.dropped;
	e->max_output = ji.max_output;
	jinfo_free(&ji);
	return 0;
}

void
job_http_stream(struct conn *c, const char *id, const char *query)
{
	char val[64], path[PATH_MAX + 64];
	long long off = 0;
	const char *errstr;
	struct jinfo ji;
	int r, split;

	if (check_id(c, id) == -1)
		return;
	if ((r = http_query_get(query, "offset", val, sizeof(val))) == -1 ||
	    (r == 0 && strnum_ll(val, 0, LLONG_MAX / 2, &off, &errstr) == -1)) {
		conn_reply_error(c, 400, "bad_request", "offset must be an integer >= 0");
		return;
	}
	if (jinfo_load(id, &ji) == -1) {
		reply_no_job(c, id);
		return;
	}
	split = ji.split;
	jinfo_free(&ji);
	snprintf(path, sizeof(path), "%s/%s/output", jobsdir, id);
	jobx_http_stream(c, id, path, split, off, stream_state);
}

/* Signals a job's whole tree: its process group and the wrapper's
 * descendants (setsid'd ones included). */
static void
signal_job(const char *id, const struct jinfo *ji, int sig)
{
	if (ji->pid > 1)
		(void)kill(-(pid_t)ji->pid, sig);
	if (ji->wrapper > 1 && proc_starttime((pid_t)ji->wrapper) == ji->wstart)
		(void)proc_kill_tree((pid_t)ji->wrapper, NULL, sig);
	/* and what the job left below the sandbox's init */
	if (sig == SIGKILL)
		(void)cgroup_kill(id);
}

/* Live members of a job's tree (0 when all gone). */
static int
tree_alive(const char *id, const struct jinfo *ji)
{
	int n = 0;

	if (ji->pid > 1 && kill(-(pid_t)ji->pid, 0) == 0)
		n++;
	if (ji->wrapper > 1 && proc_starttime((pid_t)ji->wrapper) == ji->wstart)
		n += proc_kill_tree((pid_t)ji->wrapper, NULL, 0);
	if (cgroup_populated(id) == 1)
		n++;
	return n;
}

static void
arm_tick(void)
{
	if (tick_timer == 0 && waiters != NULL)
		tick_timer = ev_timer_add(JOB_TICK_MS, tick_cb, NULL);
}

static void
check_waiters(void)
{
	struct waiter **pp = &waiters, *wt;
	struct jinfo ji;
	long long now = util_mono_ms();
	int done;

	while ((wt = *pp) != NULL) {
		if (jinfo_load(wt->id, &ji) == -1) {
			*pp = wt->next;
			reply_no_job(wt->c, wt->id);
			free(wt);
			continue;
		}
		if (wt->is_stop) {
			done = !ji.running && tree_alive(wt->id, &ji) == 0;
			if (!done && !wt->killed && now >= wt->kill_at) {
				log_info("job=%s still alive after SIGTERM; SIGKILL", wt->id);
				signal_job(wt->id, &ji, SIGKILL);
				wt->killed = 1;
			}
		} else
			done = !ji.running;
		jinfo_free(&ji);
		if (done || now >= wt->deadline) {
			*pp = wt->next;
			reply_job(wt->c, wt->id);
			free(wt);
			continue;
		}
		pp = &wt->next;
	}
}

static void
tick_cb(void *arg)
{
	(void)arg;
	tick_timer = 0;
	check_waiters();
	arm_tick();
}

void
job_http_wait(struct conn *c, const char *id, const struct json *body)
{
	struct waiter *wt;
	struct jinfo ji;
	long long tmo = 30000;

	if (check_id(c, id) == -1)
		return;
	if (body != NULL && json_get_int(body, "timeout_ms", &tmo) == -1) {
		conn_reply_error(c, 400, "bad_request", "timeout_ms must be an integer");
		return;
	}
	if (tmo < 0)
		tmo = 0;
	if (tmo > JOB_MAX_WAIT_MS)
		tmo = JOB_MAX_WAIT_MS;
	if (jinfo_load(id, &ji) == -1) {
		reply_no_job(c, id);
		return;
	}
	if (!ji.running || tmo == 0) {
		jinfo_free(&ji);
		reply_job(c, id);
		return;
	}
	jinfo_free(&ji);
	wt = xcalloc(1, sizeof(*wt));
	wt->c = c;
	snprintf(wt->id, sizeof(wt->id), "%s", id);
	wt->deadline = util_mono_ms() + tmo;
	wt->next = waiters;
	waiters = wt;
	arm_tick();
}

void
job_http_stop(struct conn *c, const char *id)
{
	char path[PATH_MAX + 256];
	struct waiter *wt;
	struct jinfo ji;
	int fd;

	if (check_id(c, id) == -1)
		return;
	if (jinfo_load(id, &ji) == -1) {
		reply_no_job(c, id);
		return;
	}
	if (!ji.running && tree_alive(id, &ji) == 0) {
		jinfo_free(&ji);
		reply_job(c, id);
		return;
	}
	if (ji.running) {
		snprintf(path, sizeof(path), "%s/%s/stopped", jobsdir, id);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) != -1)
			close(fd);
	}
	log_info("job=%s stop: SIGTERM to its tree", id);
	signal_job(id, &ji, SIGTERM);
	signal_job(id, &ji, SIGCONT);
	jinfo_free(&ji);
	wt = xcalloc(1, sizeof(*wt));
	wt->c = c;
	wt->is_stop = 1;
	snprintf(wt->id, sizeof(wt->id), "%s", id);
	wt->kill_at = util_mono_ms() + JOB_STOP_GRACE_MS;
	wt->deadline = util_mono_ms() + JOB_STOP_GIVEUP_MS;
	wt->next = waiters;
	waiters = wt;
	arm_tick();
}

int
job_child_exited(pid_t pid, int status)
{
	struct job *j;

	(void)status;
	for (j = jobs; j != NULL; j = j->next) {
		if (j->wrapper == pid && pid > 0) {
			j->wrapper = 0;
			/* gone now if nothing of the job lives on, else later */
			cgroup_release(j->id);
			shell_oom_refresh();	/* a job's OOM is not the shell's */
			agent_touch();
			if (waiters != NULL)
				check_waiters();
			return 1;
		}
	}
	return 0;
}

int
job_running_count(void)
{
	struct job *j;
	struct jinfo ji;
	int n = 0;

	for (j = jobs; j != NULL; j = j->next) {
		if (j->finished)
			continue;
		if (jinfo_load(j->id, &ji) == -1) {
			j->finished = 1;
			continue;
		}
		if (ji.running)
			n++;
		else if (j->wrapper == 0)
			j->finished = 1;
		jinfo_free(&ji);
	}
	return n;
}

void
job_terminate_all(void)
{
	struct job *j;
	struct jinfo ji;

	for (j = jobs; j != NULL; j = j->next) {
		if (j->finished || jinfo_load(j->id, &ji) == -1)
			continue;
		if (ji.running)
			signal_job(j->id, &ji, SIGKILL);
		jinfo_free(&ji);
	}
}
