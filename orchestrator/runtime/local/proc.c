/*
 * runtime/local/proc.c: the bottom layer of the local runtime: small
 * helpers over kernel interfaces that several of its files share. A
 * process's start time from /proc/<pid>/stat (with the pid, it names a
 * process: a pid alone may have been reused), writing a short value into
 * a kernel file (cgroup knobs, /proc id maps), and sleeping through EINTR.
 *
 * Rules: calls nothing else in the runtime. rl_write_str makes only system
 * calls (no allocation, no stdio), so the CLONE_VM children of spawn.c
 * may use it too.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "local_int.h"

/* Field want (4: ppid, 22: starttime) of /proc/<pid>/stat, a
 * non-negative number; -1 (also for a zombie unless zombie_ok). */
static long long
proc_stat_field(pid_t pid, int zombie_ok, int want)
{
	char path[64], buf[1024], *p;
	long long v;
	int fd, field;
	ssize_t n;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* comm may hold spaces and parens: fields resume after the last ')' */
	if ((p = strrchr(buf, ')')) == NULL)
		return -1;
	p++;
	/* a zombie has exited: whatever reaps it (init, maybe late) changes
	 * nothing, and a sandbox whose pid 1 is one is not running */
	if (!zombie_ok && p[0] == ' ' && (p[1] == 'Z' || p[1] == 'X'))
		return -1;
	/* p points at " S ppid ...": state is field 3, ppid 4, starttime 22 */
	for (field = 2; field < want && *p != '\0'; p++)
		if (*p == ' ')
			field++;
	if (field != want || *p < '0' || *p > '9')
		return -1;
	v = 0;
	while (*p >= '0' && *p <= '9') {
		if (v > (LLONG_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
		p++;
	}
	return v;
}

long long
rl_proc_start(pid_t pid)
{
	return proc_stat_field(pid, 0, 22);
}

long long
rl_proc_start_any(pid_t pid)
{
	return proc_stat_field(pid, 1, 22);
}

pid_t
rl_proc_ppid(pid_t pid)
{
	long long v = proc_stat_field(pid, 1, 4);

	return v < 0 || v > INT_MAX ? -1 : (pid_t)v;
}

int
rl_write_str(const char *path, const char *s)
{
	int fd, rc = -1;
	size_t len = strlen(s);

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	if (write(fd, s, len) == (ssize_t)len)
		rc = 0;
	if (close(fd) == -1)
		rc = -1;
	return rc;
}

void
rl_sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}
