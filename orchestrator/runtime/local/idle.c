/*
 * runtime/local/idle.c: what the session manager's idle reaper and
 * pressure handler ask of the local runtime (runtime.h: freeze, load,
 * reclaim, pressure; docs/local-runtime.md, "Idle sandboxes: frozen, then
 * stopped" and "Memory pressure"). Each reads or writes a few cgroup or
 * /proc files: cheap enough to call for thousands of sandboxes a sweep.
 * No sandbox lock is taken: the session manager serialises these with a
 * sandbox's lifecycle (its session lock), and a sandbox that is gone
 * shows as a missing cgroup.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "local_int.h"
#include "ids.h"
#include "log.h"

/* The sandbox is running: its cgroup counts CPU time. */
static int
running(const struct rl *rl, const char *id, char *err, size_t errlen)
{
	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "not found");
		return 0;
	}
	if (rl_cg_cpu_usec(&rl->cg, id) < 0) {
		snprintf(err, errlen, "sandbox %s is not running", id);
		return 0;
	}
	return 1;
}

int
rl_op_freeze(struct runtime *rt, const char *id, int on, char *err,
    size_t errlen)
{
	struct rl *rl = rt->impl;

	if (!running(rl, id, err, errlen))
		return -1;
	return rl_cg_freeze(&rl->cg, id, on, err, errlen);
}

int
rl_op_load(struct runtime *rt, const char *id, struct rt_load *out,
    char *err, size_t errlen)
{
	struct rl *rl = rt->impl;

	out->cpu_usec = out->mem_bytes = -1;
	out->frozen = 0;
	if (!running(rl, id, err, errlen))
		return -1;
	out->cpu_usec = rl_cg_cpu_usec(&rl->cg, id);
	out->mem_bytes = rl_cg_mem_current(&rl->cg, id);
	out->frozen = rl_cg_frozen(&rl->cg, id);
	return 0;
}

int
rl_op_reclaim(struct runtime *rt, const char *id, long long bytes,
    long long *freed, char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	long long before, after;

	*freed = 0;
	if (!running(rl, id, err, errlen))
		return -1;
	before = rl_cg_mem_current(&rl->cg, id);
	if (rl_cg_reclaim(&rl->cg, id, bytes, err, errlen) == -1)
		return -1;
	after = rl_cg_mem_current(&rl->cg, id);
	if (before > 0 && after >= 0 && after < before)
		*freed = before - after;
	return 0;
}

/* "key: N kB" of /proc/meminfo's text, in bytes; -1 if absent. */
static long long
meminfo(const char *text, const char *key)
{
	const char *t = strstr(text, key);

	if (t == NULL)
		return -1;
	return strtoll(t + strlen(key), NULL, 10) * 1024;
}

/* "avg10=N" of the PSI line starting with what; -1 if absent. */
static double
psi_avg10(const char *text, const char *what)
{
	const char *t;

	for (t = text; t != NULL && *t != '\0'; ) {
		if (strncmp(t, what, strlen(what)) == 0 &&
		    (t = strstr(t, "avg10=")) != NULL)
			return strtod(t + 6, NULL);
		if ((t = strchr(t, '\n')) != NULL)
			t++;
	}
	return -1;
}

/* A small /proc file's text in buf (NUL-terminated). 0 or -1. */
static int
read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

int
rl_op_pressure(struct runtime *rt, struct rt_pressure *out)
{
	char buf[4096];

	(void)rt;
	out->mem_total = out->mem_available = -1;
	out->some_avg10 = out->full_avg10 = -1;
	if (read_small("/proc/meminfo", buf, sizeof(buf)) == 0) {
		out->mem_total = meminfo(buf, "MemTotal:");
		out->mem_available = meminfo(buf, "MemAvailable:");
	}
	if (read_small("/proc/pressure/memory", buf, sizeof(buf)) == 0) {
		out->some_avg10 = psi_avg10(buf, "some");
		out->full_avg10 = psi_avg10(buf, "full");
	}
	return out->mem_available >= 0 ? 0 : -1;
}
