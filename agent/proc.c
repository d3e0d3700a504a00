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

#include "proc.h"
#include "xmalloc.h"

struct pent {
	pid_t	pid;
	pid_t	ppid;
	char	state;
	char	mark;
};

/* Reads "pid (comm) S ppid ... starttime" fields from /proc/<pid>/stat. */
static int
read_stat(pid_t pid, pid_t *ppid, char *state, long long *start)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
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
		if (read_stat((pid_t)pid, &v[n].ppid, &v[n].state, NULL) == -1)
			continue;
		n++;
	}
	closedir(d);
	*out = v;
	return n;
}

static int
in_list(pid_t p, const pid_t *v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (v[i] == p)
			return 1;
	return 0;
}

/* One pass: mark the victims and signal them. Returns how many. */
static int
kill_pass(const pid_t *roots, int nroots, int sig, pid_t orphans_of,
    const pid_t *keep, int nkeep)
{
	struct pent *v;
	size_t n, i;
	int changed, count = 0;

	n = scan(&v);
	for (i = 0; i < n; i++) {
		/* Children of a root; or our own children that are neither a
		 * root nor kept (orphans reparented to us, the subreaper). */
		v[i].mark = (char)(in_list(v[i].ppid, roots, nroots) ||
		    (orphans_of > 0 && v[i].ppid == orphans_of &&
		    !in_list(v[i].pid, keep, nkeep) &&
		    !in_list(v[i].pid, roots, nroots)));
	}
	do {
		changed = 0;
		for (i = 0; i < n; i++) {
			size_t k;
			if (v[i].mark)
				continue;
			for (k = 0; k < n; k++) {
				if (v[k].mark && v[k].pid == v[i].ppid) {
					v[i].mark = 1;
					changed = 1;
					break;
				}
			}
		}
	} while (changed);
	for (i = 0; i < n; i++) {
		if (!v[i].mark || v[i].state == 'Z' || v[i].state == 'X')
			continue;
		if (kill(v[i].pid, sig) == 0)
			count++;
	}
	free(v);
	return count;
}

int
proc_kill_tree(const pid_t *roots, int nroots, int sig, pid_t orphans_of,
    const pid_t *keep, int nkeep)
{
	struct timespec ts = { 0, 2000000L };
	int round, n, total = 0;

	for (round = 0; round < 200; round++) {
		n = kill_pass(roots, nroots, sig, orphans_of, keep, nkeep);
		total += n;
		if (n == 0 || sig != SIGKILL)
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
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
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
	ssize_t n;
	int fd;

	if ((fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC)) == -1)
		return read_counter("/sys/fs/cgroup/memory.events", "oom_kill");
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
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
