/*
 * cgroup.c: kill domains for what the agent runs (cgroup.h; docs/agent.md,
 * "Process trees and the process limit").
 *
 * The local runtime hands the agent the sandbox's cgroup v2 directory
 * (its directory and cgroup.procs chowned to the agent's uid, at most one
 * level of children: orchestrator/runtime/local/cgroup.c rl_cg_delegate)
 * and binds it at the path --cgroup names. The agent keeps a descriptor of
 * it and unmounts the bind. Every shell, exec and job command then starts
 * in a child of its own (nest_fork_into: clone3 CLONE_INTO_CGROUP, so it
 * is inside before its first instruction):
 *   "shell"      the persistent shell and everything it starts;
 *   "x-<hex>"    one REST exec;
 *   "j-<hex>"    one job's command (its wrapper stays outside, to write
 *                the exit record).
 * A child's cgroup.kill ends its whole tree at once: the kernel signals
 * every member and kills what is being forked meanwhile, so no fork bomb
 * outruns it and no member escapes by setsid, double fork or reparenting
 * to the sandbox's init. cgroup.freeze holds a tree still while the shell's
 * command is told from earlier background processes (shell.c).
 *
 * The process limit: the runtime binds the sandbox's pids.current,
 * pids.max and pids.events at CGROUP_PIDS_DIR (v1 on a hybrid host, v2
 * elsewhere: same format). cgroup_at_limit reads them; the caller (shell.c
 * shell_make_room) kills the largest child.
 *
 * Rules: every call is a few reads or writes of cgroup files, never a fork
 * (it must work when the sandbox cannot fork); the directory descriptor is
 * close-on-exec and opened O_PATH for children, and callers close what
 * they pass to a child before it execs, so nothing in the sandbox ever
 * holds one (sandbox root has the agent's host uid: it could move its
 * processes out of a child and outlive the kill). Names are ours
 * ([a-z0-9-]), checked again here.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "log.h"
#include "strnum.h"
#include "util.h"

/* Children remembered for a later rmdir: a tree that outlived its call (a
 * daemon a job left) keeps its cgroup busy until it ends. Beyond this,
 * the oldest is forgotten (the runtime removes everything at stop). */
#define CGROUP_PENDING_MAX	256
/* One cgroup.threads read: 64 KiB is some 8000 tids, far above a
 * sandbox's pids limit; a longer list is counted as what fitted. */
#define CGROUP_READ_MAX		(64 * 1024)

static int cg_fd = -1;			/* the delegated directory */
/* pids.current, pids.max, pids.events, kept open: a look before every shell
 * command costs three preads (about 4 us) instead of three opens (33 us). */
static int pids_fd[3] = { -1, -1, -1 };
static const char *const pids_name[3] = {
	"pids.current", "pids.max", "pids.events",
};
static char pending[CGROUP_PENDING_MAX][CGROUP_NAME_MAX];
static int npending;
static long long events_seen;		/* pids.events "max" at the last look */

int
cgroup_on(void)
{
	return cg_fd != -1;
}

/* Our names only: [a-z0-9-], 1 to CGROUP_NAME_MAX-1 bytes, no dot. */
static int
name_ok(const char *name)
{
	size_t i, n = strlen(name);

	if (n == 0 || n >= CGROUP_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		    (name[i] >= '0' && name[i] <= '9') || name[i] == '-'))
			return 0;
	return 1;
}

/* Writes s into name/file. 0, or -1 with errno. */
static int
cg_write(const char *name, const char *file, const char *s)
{
	char p[CGROUP_NAME_MAX + 32];
	size_t n = strlen(s);
	int fd, rc = 0;

	if (cg_fd == -1 || !name_ok(name)) {
		errno = cg_fd == -1 ? ENOENT : EINVAL;
		return -1;
	}
	snprintf(p, sizeof(p), "%.*s/%s", CGROUP_NAME_MAX, name, file);
	if ((fd = openat(cg_fd, p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return -1;
	if (write(fd, s, n) != (ssize_t)n)
		rc = -1;
	close(fd);
	return rc;
}

/*
 * Reads the file at path (relative to dirfd) into buf (NUL-terminated, at
 * most size-1 bytes). Its length, or -1.
 */
static ssize_t
read_at(int dirfd, const char *path, char *buf, size_t size)
{
	ssize_t n, got = 0;
	int fd;

	if ((fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return -1;
	while ((size_t)got < size - 1 &&
	    (n = read(fd, buf + got, size - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got;
}

/* The value of the line "key V" in name/cgroup.events: 0 or 1, -1. */
static int
events_flag(const char *name, const char *key)
{
	char p[CGROUP_NAME_MAX + 32], b[512], *t;
	size_t kl = strlen(key);

	snprintf(p, sizeof(p), "%s/cgroup.events", name);
	if (!name_ok(name) || read_at(cg_fd, p, b, sizeof(b)) == -1)
		return -1;
	for (t = b; t != NULL && *t != '\0'; t = strchr(t, '\n'),
	    t = t != NULL ? t + 1 : NULL)
		if (strncmp(t, key, kl) == 0 && t[kl] == ' ')
			return t[kl + 1] == '1';
	return -1;
}

int
cgroup_init(const char *dir, int unmount, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "open %s: %s", dir, strerror(errno));
		return -1;
	}
	/* a cgroup v2 directory whose kernel has cgroup.kill (5.14) */
	if (fstatat(fd, "cgroup.procs", &st, 0) == -1 ||
	    faccessat(fd, "cgroup.procs", W_OK, AT_EACCESS) == -1 ||
	    fstatat(fd, "cgroup.max.depth", &st, 0) == -1) {
		snprintf(err, errlen, "%s is not a cgroup v2 directory "
		    "delegated to us: %s", dir, strerror(errno));
		close(fd);
		return -1;
	}
	cg_fd = fd;
	if (mkdirat(cg_fd, "probe", 0755) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "cannot make a child in %s: %s", dir,
		    strerror(errno));
		goto fail;
	}
	if (fstatat(cg_fd, "probe/cgroup.kill", &st, 0) == -1) {
		snprintf(err, errlen, "no cgroup.kill (Linux 5.14) in %s", dir);
		(void)unlinkat(cg_fd, "probe", AT_REMOVEDIR);
		goto fail;
	}
	(void)unlinkat(cg_fd, "probe", AT_REMOVEDIR);
	/* nothing reaches it by path from now on (the sandbox's mount
	 * namespace is copied from ours later, in nest_init) */
	if (unmount && umount2(dir, MNT_DETACH) == -1)
		log_debug("cgroup: umount %s: %s (kept)", dir, strerror(errno));
	(void)cgroup_at_limit();	/* the refusal count so far */
	log_info("cgroup: commands run in children of %s", dir);
	return 0;
fail:
	close(cg_fd);
	cg_fd = -1;
	return -1;
}

int
cgroup_open(const char *name)
{
	char p[CGROUP_NAME_MAX + 8];

	if (cg_fd == -1 || !name_ok(name)) {
		errno = cg_fd == -1 ? ENOENT : EINVAL;
		return -1;
	}
	cgroup_tidy();
	if (mkdirat(cg_fd, name, 0755) == -1 && errno != EEXIST)
		return -1;
	snprintf(p, sizeof(p), "%s", name);
	return openat(cg_fd, p, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
}

int
cgroup_kill(const char *name)
{
	return cg_write(name, "cgroup.kill", "1");
}

int
cgroup_freeze(const char *name, int on, int wait_ms)
{
	struct timespec ts = { 0, 500000L };
	long long t0;

	if (cg_write(name, "cgroup.freeze", on ? "1" : "0") == -1)
		return -1;
	if (!on)
		return 0;
	for (t0 = util_mono_ms(); events_flag(name, "frozen") != 1;
	    nanosleep(&ts, NULL)) {
		if (util_mono_ms() - t0 >= wait_ms) {
			(void)cg_write(name, "cgroup.freeze", "0");
			return -1;
		}
	}
	return 0;
}

int
cgroup_populated(const char *name)
{
	if (cg_fd == -1)
		return -1;
	return events_flag(name, "populated");
}

void
cgroup_release(const char *name)
{
	if (cg_fd == -1 || !name_ok(name))
		return;
	if (unlinkat(cg_fd, name, AT_REMOVEDIR) == 0 || errno != EBUSY)
		return;
	if (npending == CGROUP_PENDING_MAX) {
		memmove(pending[0], pending[1], sizeof(pending[0]) *
		    (CGROUP_PENDING_MAX - 1));
		npending--;
	}
	snprintf(pending[npending++], sizeof(pending[0]), "%s", name);
}

void
cgroup_tidy(void)
{
	int i, k;

	for (i = k = 0; i < npending; i++) {
		if (unlinkat(cg_fd, pending[i], AT_REMOVEDIR) == -1 &&
		    errno == EBUSY) {
			if (k != i)
				memcpy(pending[k], pending[i], sizeof(pending[0]));
			k++;
		}
	}
	npending = k;
}

/* Tasks (threads) in name: lines of its cgroup.threads; -1 unknown. */
static long
count_tasks(const char *name)
{
	static char b[CGROUP_READ_MAX];
	char p[CGROUP_NAME_MAX + 32];
	ssize_t n, i;
	long c = 0;

	snprintf(p, sizeof(p), "%.*s/cgroup.threads", CGROUP_NAME_MAX, name);
	if ((n = read_at(cg_fd, p, b, sizeof(b))) == -1)
		return -1;
	for (i = 0; i < n; i++)
		c += b[i] == '\n';
	return c;
}

int
cgroup_largest(char *name, size_t len, long *tasks)
{
	struct dirent *de;
	DIR *d;
	long n;
	int fd;

	*tasks = -1;
	if (cg_fd == -1 || (fd = dup(cg_fd)) == -1)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || !name_ok(de->d_name) ||
		    (n = count_tasks(de->d_name)) <= *tasks)
			continue;
		*tasks = n;
		snprintf(name, len, "%s", de->d_name);
	}
	closedir(d);
	return *tasks > 0 ? 0 : -1;
}

/* Pids file i (pids_name) into b, NUL-terminated: its length, or -1. */
static ssize_t
pids_file(int i, char *b, size_t size)
{
	char p[64];
	ssize_t n;

	if (pids_fd[i] == -1) {
		snprintf(p, sizeof(p), CGROUP_PIDS_DIR "/%s", pids_name[i]);
		if ((pids_fd[i] = open(p, O_RDONLY | O_CLOEXEC)) == -1)
			return -1;
	}
	if ((n = pread(pids_fd[i], b, size - 1, 0)) <= 0)
		return -1;
	b[n] = '\0';
	return n;
}

/* A pids file's number ("max": none, -1). */
static long long
pids_read(int i)
{
	char b[64];
	const char *es;
	long long v;

	if (pids_file(i, b, sizeof(b)) == -1)
		return -1;
	b[strcspn(b, "\n")] = '\0';
	if (strnum_ll(b, 0, 1LL << 40, &v, &es) == -1)
		return -1;
	return v;
}

int
cgroup_pids(long long *cur, long long *max)
{
	*cur = pids_read(0);
	*max = pids_read(1);
	return *cur >= 0 && *max > 0 ? 0 : -1;
}

/* pids.events' "max N": forks the limit refused so far; -1 unknown. */
static long long
pids_refused(void)
{
	char b[256], *t;
	const char *es;
	long long v;

	if (pids_file(2, b, sizeof(b)) == -1)
		return -1;
	for (t = b; t != NULL && *t != '\0'; t = strchr(t, '\n'),
	    t = t != NULL ? t + 1 : NULL) {
		if (strncmp(t, "max ", 4) != 0)
			continue;
		t[4 + strcspn(t + 4, "\n")] = '\0';
		return strnum_ll(t + 4, 0, 1LL << 62, &v, &es) == 0 ? v : -1;
	}
	return -1;
}

int
cgroup_at_limit(void)
{
	long long cur, max, ev;
	int rose;

	ev = pids_refused();
	rose = ev > events_seen;
	if (ev >= 0)
		events_seen = ev;
	if (cgroup_pids(&cur, &max) == -1)
		return 0;
	return cur + CGROUP_PIDS_RESERVE > max || (rose && cur * 2 >= max);
}

int
cgroup_wait_room(int ms)
{
	struct timespec ts = { 0, 2000000L };
	long long cur, max, ev, t0 = util_mono_ms();

	for (;;) {
		if (cgroup_pids(&cur, &max) == -1 ||
		    cur + CGROUP_PIDS_RESERVE <= max) {
			if ((ev = pids_refused()) >= 0)
				events_seen = ev;	/* the kill's own */
			return 0;
		}
		if (util_mono_ms() - t0 >= ms)
			return -1;
		nanosleep(&ts, NULL);
	}
}
