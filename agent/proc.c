/* proc.c: process trees and cgroup counters from /proc and /sys. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "xmalloc.h"

struct pent {
	pid_t		pid;
	pid_t		ppid;
	long long	start;
	char		state;
	char		mark;
};

/*
 * Reads a small file into buf (NUL-terminated), in one read(2): a scan or
 * a command's snapshot reads /proc/<pid>/stat for every process it visits,
 * so this stays on the caller's stack rather than util_read_file's heap
 * buffer. Its length, or -1.
 */
static ssize_t
read_small(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* Reads "pid (comm) S ppid ... starttime" fields from /proc/<pid>/stat. */
static int
read_stat(pid_t pid, pid_t *ppid, char *state, long long *start)
{
	char path[64], buf[1024], *p;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_small(path, buf, sizeof(buf)) == -1)
		return -1;
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
		return -1;
	p += 2;
	if (state != NULL)
		*state = *p;
	if (ppid != NULL) {
		if ((p = strchr(p, ' ')) == NULL)
			return -1;
		*ppid = (pid_t)strtol(p + 1, NULL, 10);
	}
	if (start != NULL) {
		/* starttime is field 22; state is field 3. */
		p = strrchr(buf, ')') + 2;
		for (field = 3; field < 22; field++) {
			if ((p = strchr(p, ' ')) == NULL)
				return -1;
			p++;
		}
		*start = strtoll(p, NULL, 10);
	}
	return 0;
}

long long
proc_starttime(pid_t pid)
{
	long long st;
	char state;

	if (pid <= 0 || read_stat(pid, NULL, &state, &st) == -1)
		return -1;
	if (state == 'Z' || state == 'X')
		return -1;
	return st;
}

static size_t
scan(struct pent **out)
{
	DIR *d;
	struct dirent *de;
	struct pent *v = NULL;
	size_t n = 0, cap = 0;
	char *end;
	long pid;

	if ((d = opendir("/proc")) == NULL) {
		*out = NULL;
		return 0;
	}
	while ((de = readdir(d)) != NULL && n < PROC_MAX_SCAN) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = strtol(de->d_name, &end, 10);
		if (*end != '\0')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = xreallocarray(v, cap, sizeof(*v));
		}
		v[n].pid = (pid_t)pid;
		v[n].mark = 0;
		if (read_stat((pid_t)pid, &v[n].ppid, &v[n].state, &v[n].start) == -1)
			continue;
		n++;
	}
	closedir(d);
	*out = v;
	return n;
}

void
proc_set_free(struct proc_set *s)
{
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

static int
in_set(const struct proc_set *s, pid_t pid, long long start)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].pid == pid && s->v[i].start == start)
			return 1;
	return 0;
}

/*
 * Marks the descendants of root in v[0..n): 1 for a process whose chain of
 * parents reaches root without passing through a member of old (nor being
 * one), 2 for members of old and everything below them.
 */
static void
mark_below(struct pent *v, size_t n, pid_t root, const struct proc_set *old)
{
	size_t i, k;
	int changed;

	for (i = 0; i < n; i++) {
		v[i].mark = 0;
		if (old != NULL && old->n > 0 && in_set(old, v[i].pid, v[i].start))
			v[i].mark = 2;
		else if (v[i].ppid == root)
			v[i].mark = 1;
	}
	do {
		changed = 0;
		for (i = 0; i < n; i++) {
			if (v[i].mark != 0)
				continue;
			for (k = 0; k < n; k++) {
				if (v[k].mark != 0 && v[k].pid == v[i].ppid) {
					v[i].mark = v[k].mark;
					changed = 1;
					break;
				}
			}
		}
	} while (changed);
}

/*
 * Appends the children of pid (over all its threads) to out, from
 * /proc/<pid>/task/<tid>/children. -1 when that file does not exist.
 */
static int
children_of(pid_t pid, struct proc_set *out)
{
	char path[96], buf[4096], *p, *end;
	struct dirent *de;
	ssize_t n;
	DIR *d;
	long v;
	int fd, found = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return errno == ENOENT ? 0 : -1;	/* gone meanwhile */
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/children",
		    (int)pid, de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			continue;
		found = 1;
		/* "pid pid ... " (a long list may need several reads) */
		while ((n = read(fd, buf, sizeof(buf) - 1)) > 0) {
			buf[n] = '\0';
			for (p = buf; *p != '\0'; p = end) {
				v = strtol(p, &end, 10);
				if (end == p)
					break;
				if (v > 0 && out->n < PROC_MAX_SCAN) {
					out->v = xreallocarray(out->v, out->n + 1,
					    sizeof(*out->v));
					out->v[out->n].pid = (pid_t)v;
					out->v[out->n].start = -1;
					out->n++;
				}
			}
			/* A number cut at the buffer end: rare enough for a
			 * 4 KiB buffer (about 500 children); it is missed. */
		}
		close(fd);
	}
	closedir(d);
	return found ? 0 : -1;
}

int
proc_snapshot(pid_t root, struct proc_set *out)
{
	struct pent *v;
	size_t n, i;
	long long st;
	char state;

	out->v = NULL;
	out->n = 0;
	/* Walk the tree through the children files: a few reads per process
	 * below the shell, one when it has none. */
	if (children_of(root, out) == 0) {
		for (i = 0; i < out->n && out->n < PROC_MAX_SCAN; i++)
			if (children_of(out->v[i].pid, out) == -1)
				break;
		if (i == out->n) {
			for (i = 0; i < out->n; i++) {
				if (read_stat(out->v[i].pid, NULL, &state, &st) == 0 &&
				    state != 'Z' && state != 'X')
					out->v[i].start = st;
			}
			return 0;
		}
		proc_set_free(out);
	}
	/* No children files (CONFIG_PROC_CHILDREN off): scan /proc. */
	n = scan(&v);
	mark_below(v, n, root, NULL);
	for (i = 0; i < n; i++) {
		if (v[i].mark != 1 || v[i].state == 'Z' || v[i].state == 'X')
			continue;
		out->v = xreallocarray(out->v, out->n + 1, sizeof(*out->v));
		out->v[out->n].pid = v[i].pid;
		out->v[out->n].start = v[i].start;
		out->n++;
	}
	free(v);
	return 0;
}

int
proc_kill_tree(pid_t root, const struct proc_set *old, int sig)
{
	struct timespec ts = { 0, 2000000L };
	struct pent *v;
	size_t n, i;
	int round, count, total = 0;

	for (round = 0; round < 200; round++) {
		count = 0;
		n = scan(&v);
		mark_below(v, n, root, old);
		for (i = 0; i < n; i++) {
			if (v[i].mark != 1 || v[i].state == 'Z' || v[i].state == 'X')
				continue;
			if (kill(v[i].pid, sig) == 0)
				count++;
		}
		free(v);
		total += count;
		if (count == 0 || sig != SIGKILL)
			break;
		nanosleep(&ts, NULL);
	}
	return total;
}

static long long
read_counter(const char *path, const char *key)
{
	char buf[4096], *p;
	size_t kl = strlen(key);

	if (read_small(path, buf, sizeof(buf)) == -1)
		return -1;
	for (p = buf; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
			return strtoll(p + kl + 1, NULL, 10);
	}
	return -1;
}

static char oom_path[4200];	/* the counter file found last time */

static long long proc_oom_kills_find(void);

long long
proc_oom_kills(void)
{
	long long v;

	if (oom_path[0] != '\0' && (v = read_counter(oom_path, "oom_kill")) >= 0)
		return v;
	/* The local runtime binds the sandbox cgroup's counter here. */
	if ((v = read_counter(PROC_RUNTIME_OOM_FILE, "oom_kill")) >= 0) {
		snprintf(oom_path, sizeof(oom_path), "%s", PROC_RUNTIME_OOM_FILE);
		return v;
	}
	return proc_oom_kills_find();
}

static long long
proc_oom_kills_find(void)
{
	char buf[4096], path[4200], *line, *save = NULL, *cg;
	long long v;

	if (read_small("/proc/self/cgroup", buf, sizeof(buf)) == -1)
		return read_counter("/sys/fs/cgroup/memory.events", "oom_kill");
	for (line = strtok_r(buf, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::", 3) == 0) {
			cg = line + 3;
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.events", cg);
			if ((v = read_counter(path, "oom_kill")) >= 0) {
				memcpy(oom_path, path, sizeof(oom_path));
				return v;
			}
			snprintf(path, sizeof(path),
			    "/sys/fs/cgroup/unified%s/memory.events", cg);
			if ((v = read_counter(path, "oom_kill")) >= 0) {
				memcpy(oom_path, path, sizeof(oom_path));
				return v;
			}
		} else if ((cg = strstr(line, ":memory:")) != NULL) {
			cg += 8;
			snprintf(path, sizeof(path),
			    "/sys/fs/cgroup/memory%s/memory.oom_control", cg);
			if ((v = read_counter(path, "oom_kill")) >= 0) {
				memcpy(oom_path, path, sizeof(oom_path));
				return v;
			}
		}
	}
	return read_counter("/sys/fs/cgroup/memory.events", "oom_kill");
}

void
proc_closefrom(int lowfd, int keep)
{
	struct rlimit rl;
	long fd, max = 4096;

#ifdef SYS_close_range
	if (keep < lowfd) {
		if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0)
			return;
	} else {
		if ((keep <= lowfd ||
		    syscall(SYS_close_range, (unsigned)lowfd, (unsigned)keep - 1, 0) == 0) &&
		    syscall(SYS_close_range, (unsigned)keep + 1, ~0U, 0) == 0)
			return;
	}
#endif
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < 65536)
		max = (long)rl.rlim_cur;
	for (fd = lowfd; fd < max; fd++)
		if (fd != keep)
			close((int)fd);
}

/* The soft RLIMIT_NOFILE the agent was started with (0: not raised). */
static struct rlimit nofile_orig;
static int nofile_raised;

void
proc_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1) {
		log_warn("getrlimit NOFILE");
		return;
	}
	nofile_orig = rl;
	if (rl.rlim_cur == rl.rlim_max) {
		log_info("fd limit soft=%llu hard=%llu",
		    (unsigned long long)rl.rlim_cur,
		    (unsigned long long)rl.rlim_max);
		return;
	}
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1) {
		log_warn("setrlimit NOFILE %llu", (unsigned long long)rl.rlim_max);
		return;
	}
	nofile_raised = 1;
	log_info("fd limit soft=%llu raised to hard=%llu",
	    (unsigned long long)nofile_orig.rlim_cur,
	    (unsigned long long)rl.rlim_max);
}

void
proc_child_rlimits(void)
{
	if (nofile_raised)
		(void)setrlimit(RLIMIT_NOFILE, &nofile_orig);
}
