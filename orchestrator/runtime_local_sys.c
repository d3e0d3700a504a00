/*
 * runtime_local_sys.c: the system side of the local runtime: cgroups (v2,
 * v1 and the v1/v2 hybrid), spawning bwrap as an unprivileged uid over an
 * idmapped overlay root, listeners inside a sandbox's network namespace,
 * the seccomp program, and symlink-safe tree removal.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "runtime_local_int.h"
#include "xmalloc.h"

/* ---- small file helpers ---- */

static int
write_str(const char *path, const char *s)
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

char *
rl_read_file(const char *path, size_t max, size_t *lenp)
{
	char *p;
	size_t len = 0;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return NULL;
	p = xmalloc(max + 1);
	while (len < max) {
		n = read(fd, p + len, max - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	p[len] = '\0';
	if (lenp != NULL)
		*lenp = len;
	return p;
}

int
rl_write_atomic(const char *path, const void *data, size_t len, int mode,
    char *err, size_t errlen)
{
	char tmp[RL_PATH_MAX + 32];
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path,
	    (long)syscall(SYS_gettid)) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "path too long: %s", path);
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    mode);
	if (fd == -1) {
		snprintf(err, errlen, "open %s: %s", tmp, strerror(errno));
		return -1;
	}
	if (write(fd, data, len) != (ssize_t)len || fsync(fd) == -1) {
		snprintf(err, errlen, "write %s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (close(fd) == -1 || rename(tmp, path) == -1) {
		snprintf(err, errlen, "rename %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

long long
rl_proc_start(pid_t pid)
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
	/* p points at " S ppid ...": state is field 3, starttime field 22 */
	for (field = 2; field < 22 && *p != '\0'; p++)
		if (*p == ' ')
			field++;
	if (field != 22)
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

/* ---- cgroups ---- */

static int
is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int
file_has_word(const char *path, const char *word)
{
	char *s, *t;
	size_t wl = strlen(word);
	int found = 0;

	if ((s = rl_read_file(path, 4096, NULL)) == NULL)
		return 0;
	for (t = s; (t = strstr(t, word)) != NULL; t += wl) {
		if ((t == s || t[-1] == ' ' || t[-1] == '\n') &&
		    (t[wl] == ' ' || t[wl] == '\n' || t[wl] == '\0')) {
			found = 1;
			break;
		}
	}
	free(s);
	return found;
}

static int
mkdir_p1(const char *p, char *err, size_t errlen)
{
	if (mkdir(p, 0755) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", p, strerror(errno));
		return -1;
	}
	return 0;
}

int
rl_cg_detect(const char *mode, const char *name, struct rl_cg *cg,
    char *err, size_t errlen)
{
	const char *v2root = NULL;
	int v2ctl = 0;
	char p[RL_PATH_MAX + 64];

	memset(cg, 0, sizeof(*cg));
	if (strchr(name, '/') != NULL || strcmp(name, "..") == 0 ||
	    name[0] == '\0' || name[0] == '.') {
		snprintf(err, errlen, "cgroup_name must be one path component");
		return -1;
	}
	if (strcmp(mode, "none") == 0) {
		cg->mode = RL_CG_NONE;
		return 0;
	}
	/* Pure v2 at /sys/fs/cgroup, or the hybrid's v2 at .../unified. */
	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
		v2root = "/sys/fs/cgroup";
	else if (access("/sys/fs/cgroup/unified/cgroup.controllers", F_OK) == 0)
		v2root = "/sys/fs/cgroup/unified";
	if (v2root != NULL && getenv("SANDBOX_CG_NO_UNIFIED") != NULL &&
	    strcmp(v2root, "/sys/fs/cgroup/unified") == 0)
		v2root = NULL;	/* tests: exercise the v1 freezer path */
	if (v2root != NULL) {
		snprintf(p, sizeof(p), "%s/cgroup.controllers", v2root);
		v2ctl = file_has_word(p, "memory") && file_has_word(p, "pids") &&
		    file_has_word(p, "cpu");
		snprintf(cg->v2, sizeof(cg->v2), "%s/%s", v2root, name);
		if (mkdir_p1(cg->v2, err, errlen) == -1)
			return -1;
		cg->v2_track = 1;
	}
	if (is_dir("/sys/fs/cgroup/memory") && access(
	    "/sys/fs/cgroup/memory/memory.limit_in_bytes", F_OK) == 0)
		snprintf(cg->v1_mem, sizeof(cg->v1_mem),
		    "/sys/fs/cgroup/memory/%s", name);
	if (access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", F_OK) == 0)
		snprintf(cg->v1_cpu, sizeof(cg->v1_cpu), "/sys/fs/cgroup/cpu/%s",
		    name);
	else if (access("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us",
	    F_OK) == 0)
		snprintf(cg->v1_cpu, sizeof(cg->v1_cpu),
		    "/sys/fs/cgroup/cpu,cpuacct/%s", name);
	if (is_dir("/sys/fs/cgroup/pids") &&
	    access("/sys/fs/cgroup/pids/cgroup.procs", F_OK) == 0)
		snprintf(cg->v1_pids, sizeof(cg->v1_pids),
		    "/sys/fs/cgroup/pids/%s", name);
	if (is_dir("/sys/fs/cgroup/freezer") &&
	    access("/sys/fs/cgroup/freezer/cgroup.procs", F_OK) == 0)
		snprintf(cg->v1_freezer, sizeof(cg->v1_freezer),
		    "/sys/fs/cgroup/freezer/%s", name);

	if (strcmp(mode, "v2") == 0 || (strcmp(mode, "auto") == 0 && v2ctl)) {
		if (!v2ctl) {
			snprintf(err, errlen, "cgroup v2 has no memory, pids and "
			    "cpu controllers here (cgroup_mode: v1 or auto)");
			return -1;
		}
		cg->mode = RL_CG_V2;
		snprintf(p, sizeof(p), "%s/cgroup.subtree_control", v2root);
		(void)write_str(p, "+memory +pids +cpu");
		snprintf(p, sizeof(p), "%s/cgroup.subtree_control", cg->v2);
		if (write_str(p, "+memory +pids +cpu") == -1) {
			snprintf(err, errlen, "enable controllers in %s: %s",
			    cg->v2, strerror(errno));
			return -1;
		}
		cg->v1_mem[0] = cg->v1_cpu[0] = cg->v1_pids[0] = '\0';
		cg->v1_freezer[0] = '\0';
		return 0;
	}
	if (strcmp(mode, "v1") != 0 && strcmp(mode, "auto") != 0) {
		snprintf(err, errlen, "cgroup_mode: expected auto, v2, v1 or none");
		return -1;
	}
	if (cg->v1_mem[0] == '\0' || cg->v1_pids[0] == '\0') {
		snprintf(err, errlen, "no usable cgroup v1 memory and pids "
		    "hierarchies (and no v2 controllers)");
		return -1;
	}
	cg->mode = RL_CG_V1;
	if (mkdir_p1(cg->v1_mem, err, errlen) == -1 ||
	    mkdir_p1(cg->v1_pids, err, errlen) == -1 ||
	    (cg->v1_cpu[0] && mkdir_p1(cg->v1_cpu, err, errlen) == -1) ||
	    (cg->v1_freezer[0] && mkdir_p1(cg->v1_freezer, err, errlen) == -1))
		return -1;
	snprintf(p, sizeof(p), "%s/memory.use_hierarchy", cg->v1_mem);
	(void)write_str(p, "1");
	return 0;
}

static int
cg_write(const char *dir, const char *id, const char *file, const char *val,
    char *err, size_t errlen)
{
	char p[RL_PATH_MAX + 128];

	snprintf(p, sizeof(p), "%s/%s/%s", dir, id, file);
	if (write_str(p, val) == -1) {
		snprintf(err, errlen, "write %s: %s", p, strerror(errno));
		return -1;
	}
	return 0;
}

static int
cg_mk(const char *dir, const char *id, char *err, size_t errlen)
{
	char p[RL_PATH_MAX + 128];

	snprintf(p, sizeof(p), "%s/%s", dir, id);
	return mkdir_p1(p, err, errlen);
}

int
rl_cg_create(const struct rl_cg *cg, const char *id,
    const struct rl_limits *l, char *err, size_t errlen)
{
	char v[64];

	if (cg->v2_track && cg_mk(cg->v2, id, err, errlen) == -1)
		return -1;
	if (cg->mode == RL_CG_V2) {
		snprintf(v, sizeof(v), "%lld", l->mem_bytes);
		if (cg_write(cg->v2, id, "memory.max", v, err, errlen) == -1)
			return -1;
		(void)cg_write(cg->v2, id, "memory.swap.max", "0", err, errlen);
		(void)cg_write(cg->v2, id, "memory.oom.group", "0", err, errlen);
		snprintf(v, sizeof(v), "%lld", l->pids_max);
		if (cg_write(cg->v2, id, "pids.max", v, err, errlen) == -1)
			return -1;
		snprintf(v, sizeof(v), "%lld 100000", l->cpu_millis * 100);
		if (cg_write(cg->v2, id, "cpu.max", v, err, errlen) == -1)
			return -1;
		return 0;
	}
	if (cg->mode != RL_CG_V1)
		return 0;
	if (cg_mk(cg->v1_mem, id, err, errlen) == -1 ||
	    cg_mk(cg->v1_pids, id, err, errlen) == -1 ||
	    (cg->v1_cpu[0] && cg_mk(cg->v1_cpu, id, err, errlen) == -1) ||
	    (cg->v1_freezer[0] && cg_mk(cg->v1_freezer, id, err, errlen) == -1))
		return -1;
	snprintf(v, sizeof(v), "%lld", l->mem_bytes);
	if (cg_write(cg->v1_mem, id, "memory.limit_in_bytes", v, err,
	    errlen) == -1)
		return -1;
	/* no swap beyond the limit where swap accounting exists */
	(void)cg_write(cg->v1_mem, id, "memory.memsw.limit_in_bytes", v, err,
	    errlen);
	(void)cg_write(cg->v1_mem, id, "memory.swappiness", "0", err, errlen);
	snprintf(v, sizeof(v), "%lld", l->pids_max);
	if (cg_write(cg->v1_pids, id, "pids.max", v, err, errlen) == -1)
		return -1;
	if (cg->v1_cpu[0]) {
		if (cg_write(cg->v1_cpu, id, "cpu.cfs_period_us", "100000", err,
		    errlen) == -1)
			return -1;
		snprintf(v, sizeof(v), "%lld", l->cpu_millis * 100);
		if (cg_write(cg->v1_cpu, id, "cpu.cfs_quota_us", v, err,
		    errlen) == -1)
			return -1;
	}
	return 0;
}

int
rl_cg_procs_files(const struct rl_cg *cg, const char *id,
    char files[][RL_PATH_MAX], size_t max, size_t *n)
{
	const char *dirs[6];
	size_t nd = 0, i;

	*n = 0;
	if (cg->v2_track)
		dirs[nd++] = cg->v2;
	if (cg->mode == RL_CG_V1) {
		dirs[nd++] = cg->v1_mem;
		dirs[nd++] = cg->v1_pids;
		if (cg->v1_cpu[0])
			dirs[nd++] = cg->v1_cpu;
		if (cg->v1_freezer[0])
			dirs[nd++] = cg->v1_freezer;
	}
	for (i = 0; i < nd && *n < max; i++) {
		if (snprintf(files[*n], RL_PATH_MAX, "%s/%s/cgroup.procs",
		    dirs[i], id) >= RL_PATH_MAX)
			return -1;
		(*n)++;
	}
	return 0;
}

/* Counts pids listed in dir/id/cgroup.procs; -1 if unreadable. */
static int
count_procs(const char *dir, const char *id)
{
	char p[RL_PATH_MAX + 128], *s, *t;
	int n = 0;

	snprintf(p, sizeof(p), "%s/%s/cgroup.procs", dir, id);
	if ((s = rl_read_file(p, 1 << 20, NULL)) == NULL)
		return -1;
	for (t = s; *t != '\0'; t++)
		if (*t == '\n')
			n++;
	free(s);
	return n;
}

int
rl_cg_nprocs(const struct rl_cg *cg, const char *id)
{
	int n = -1;

	if (cg->v2_track)
		n = count_procs(cg->v2, id);
	if (n == -1 && cg->v1_pids[0] != '\0')
		n = count_procs(cg->v1_pids, id);
	return n;
}

/* SIGKILLs every pid listed in dir/id/cgroup.procs. */
static void
kill_listed(const char *dir, const char *id)
{
	char p[RL_PATH_MAX + 128], *s, *t, *e;
	long v;

	snprintf(p, sizeof(p), "%s/%s/cgroup.procs", dir, id);
	if ((s = rl_read_file(p, 1 << 20, NULL)) == NULL)
		return;
	for (t = s; *t != '\0'; t = e) {
		errno = 0;
		v = strtol(t, &e, 10);
		if (e == t)
			break;
		if (errno == 0 && v > 1 && v <= INT_MAX)
			(void)kill((pid_t)v, SIGKILL);
		while (*e == '\n')
			e++;
	}
	free(s);
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

int
rl_cg_kill(const struct rl_cg *cg, const char *id, int timeout_ms)
{
	const char *dir = NULL;
	char p[RL_PATH_MAX + 128];
	int waited = 0, n, frozen = 0, use_kill = 0;

	snprintf(p, sizeof(p), "%s/%s", cg->v2, id);
	if (cg->v2_track && access(p, F_OK) == 0) {
		dir = cg->v2;
		snprintf(p, sizeof(p), "%s/%s/cgroup.kill", cg->v2, id);
		use_kill = access(p, F_OK) == 0;
	} else if (cg->v1_pids[0] != '\0')
		dir = cg->v1_pids;
	if (dir == NULL)
		return -1;
	for (;;) {
		n = count_procs(dir, id);
		if (n <= 0)
			break;
		if (use_kill) {
			(void)cg_write(cg->v2, id, "cgroup.kill", "1", p,
			    sizeof(p));
		} else if (cg->v1_freezer[0]) {
			/* freeze so nothing forks while we kill, then thaw
			 * so the kills are delivered */
			if (!frozen && cg_write(cg->v1_freezer, id,
			    "freezer.state", "FROZEN", p, sizeof(p)) == 0)
				frozen = 1;
			kill_listed(dir, id);
			if (frozen) {
				(void)cg_write(cg->v1_freezer, id,
				    "freezer.state", "THAWED", p, sizeof(p));
				frozen = 0;
			}
		} else
			kill_listed(dir, id);
		if (waited >= timeout_ms)
			return -1;
		sleep_ms(waited < 20 ? 1 : 10);
		waited += waited < 20 ? 1 : 10;
	}
	return 0;
}

void
rl_cg_oom_file(const struct rl_cg *cg, const char *id, char *out,
    size_t outlen)
{
	out[0] = '\0';
	if (cg->mode == RL_CG_V2)
		snprintf(out, outlen, "%s/%s/memory.events", cg->v2, id);
	else if (cg->mode == RL_CG_V1)
		snprintf(out, outlen, "%s/%s/memory.oom_control", cg->v1_mem, id);
}

long long
rl_cg_oom_kills(const struct rl_cg *cg, const char *id)
{
	char p[RL_PATH_MAX + 128], *s, *t;
	long long v = -1;

	rl_cg_oom_file(cg, id, p, sizeof(p));
	if (p[0] == '\0' || (s = rl_read_file(p, 4096, NULL)) == NULL)
		return -1;
	for (t = s; t != NULL && *t != '\0'; ) {
		if (strncmp(t, "oom_kill ", 9) == 0) {
			v = strtoll(t + 9, NULL, 10);
			break;
		}
		t = strchr(t, '\n');
		if (t != NULL)
			t++;
	}
	free(s);
	return v;
}

static void
cg_rm(const char *dir, const char *id)
{
	char p[RL_PATH_MAX + 128];
	int i;

	if (dir[0] == '\0')
		return;
	snprintf(p, sizeof(p), "%s/%s", dir, id);
	/* v1 keeps exiting tasks until they are reaped (by init, for the
	 * sandbox's outer bwrap), so a just-killed cgroup may stay busy */
	for (i = 0; rmdir(p) == -1 && errno == EBUSY && i < 300; i++)
		sleep_ms(10);
	if (access(p, F_OK) == 0)
		log_warnx("rmdir %s: still busy (removed by a later sweep)", p);
}

void
rl_cg_sweep(const struct rl_cg *cg, int (*keep)(const char *, void *),
    void *arg)
{
	const char *dirs[5];
	char p[RL_PATH_MAX + 300];
	struct dirent *de;
	size_t nd = 0, i;
	DIR *d;

	if (cg->v2_track)
		dirs[nd++] = cg->v2;
	dirs[nd++] = cg->v1_mem;
	dirs[nd++] = cg->v1_pids;
	dirs[nd++] = cg->v1_cpu;
	dirs[nd++] = cg->v1_freezer;
	for (i = 0; i < nd; i++) {
		if (dirs[i][0] == '\0' || (d = opendir(dirs[i])) == NULL)
			continue;
		while ((de = readdir(d)) != NULL) {
			if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
			    keep(de->d_name, arg))
				continue;
			snprintf(p, sizeof(p), "%s/%s", dirs[i], de->d_name);
			(void)rmdir(p);
		}
		closedir(d);
	}
}

int
rl_cg_remove(const struct rl_cg *cg, const char *id)
{
	if (cg->v2_track)
		cg_rm(cg->v2, id);
	cg_rm(cg->v1_mem, id);
	cg_rm(cg->v1_pids, id);
	cg_rm(cg->v1_cpu, id);
	cg_rm(cg->v1_freezer, id);
	return 0;
}

/* ---- spawning ---- */

/*
 * A user namespace whose map sends on-disk uid/gid 0 to the sandbox's host
 * uid/gid, for the idmapped mount of the image: image files owned by root
 * then belong to the sandbox's root. Returns an fd of the namespace.
 */
static int
idmap_userns(uid_t uid, gid_t gid, char *err, size_t errlen)
{
	int p1[2] = { -1, -1 }, p2[2] = { -1, -1 };
	char path[64], map[64], c;
	pid_t pid;
	int fd = -1, st;

	if (pipe2(p1, O_CLOEXEC) == -1 || pipe2(p2, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto out;
	}
	if ((pid = fork()) == -1) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		/*
		 * Keep only our two pipe ends: this child never execs, so
		 * O_CLOEXEC does not drop the fds other threads of the
		 * parent have open right now, and holding another creation's
		 * pipe would keep that creation waiting for EOF forever.
		 */
		int w = fcntl(p1[1], F_DUPFD, 1000), r = fcntl(p2[0], F_DUPFD, 1000);

		if (w == -1 || r == -1 || dup2(w, 3) == -1 || dup2(r, 4) == -1)
			_exit(1);
		(void)close_range(5, ~0U, 0);
		c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
		if (write(3, &c, 1) != 1)
			_exit(1);
		_exit(read(4, &c, 1) >= 0 ? 0 : 1);
	}
	close(p1[1]);
	p1[1] = -1;
	close(p2[0]);
	p2[0] = -1;
	if (read(p1[0], &c, 1) != 1 || c != 'y') {
		snprintf(err, errlen, "unshare(CLONE_NEWUSER) failed");
		goto reap;
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	if (write_str(path, map) == -1) {
		snprintf(err, errlen, "write uid_map: %s", strerror(errno));
		goto reap;
	}
	snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
	(void)write_str(path, "deny");
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	if (write_str(path, map) == -1) {
		snprintf(err, errlen, "write gid_map: %s", strerror(errno));
		goto reap;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		snprintf(err, errlen, "open %s: %s", path, strerror(errno));
reap:
	close(p2[1]);
	p2[1] = -1;
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
out:
	if (p1[0] != -1)
		close(p1[0]);
	if (p1[1] != -1)
		close(p1[1]);
	if (p2[0] != -1)
		close(p2[0]);
	if (p2[1] != -1)
		close(p2[1]);
	return fd;
}

/* Failure report from the grandchild: the step and errno. */
struct spawn_fail {
	int	step;
	int	err;
};

static const char *spawn_steps[] = {
	"ok", "join cgroup", "unshare mount namespace", "make mounts private",
	"open_tree image", "idmap image (mount_setattr)", "attach image",
	"mount overlay", "drop privileges", "set up fds", "exec bwrap",
};

static NORETURN void
child_fail(int fd, int step)
{
	struct spawn_fail f = { step, errno };

	if (write(fd, &f, sizeof(f)) != sizeof(f))
		_exit(126);
	_exit(127);
}

/* In the grandchild: only system calls from here to exec. */
static NORETURN void
spawn_child(struct rl_spawn *s, const char *ovl_opts, int usernsfd,
    int logfd, int nullfd, int infofd, int repfd)
{
	struct mount_attr ma;
	sigset_t all;
	size_t i;
	int t, fds[5], sig;

	sigemptyset(&all);
	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)signal(sig, SIG_DFL);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (i = 0; i < s->ncg_files; i++) {
		int fd = open(s->cg_files[i], O_WRONLY | O_CLOEXEC);
		if (fd == -1 || write(fd, "0", 1) != 1)
			child_fail(repfd, 1);
		close(fd);
	}
	if (unshare(CLONE_NEWNS) == -1)
		child_fail(repfd, 2);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		child_fail(repfd, 3);
	t = (int)syscall(SYS_open_tree, AT_FDCWD, s->image_dir,
	    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (t == -1)
		child_fail(repfd, 4);
	memset(&ma, 0, sizeof(ma));
	ma.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	if (s->upper == NULL)
		ma.attr_set |= MOUNT_ATTR_RDONLY;
	ma.userns_fd = (unsigned long long)usernsfd;
	if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH | AT_RECURSIVE,
	    &ma, sizeof(ma)) == -1)
		child_fail(repfd, 5);
	if (syscall(SYS_move_mount, t, "", AT_FDCWD, s->lower,
	    MOVE_MOUNT_F_EMPTY_PATH) == -1)
		child_fail(repfd, 6);
	close(t);
	if (s->upper != NULL && mount("overlay", s->root, "overlay",
	    MS_NOSUID | MS_NODEV, ovl_opts) == -1)
		child_fail(repfd, 7);
	if (setgroups(0, NULL) == -1 ||
	    setresgid(s->gid, s->gid, s->gid) == -1 ||
	    setresuid(s->uid, s->uid, s->uid) == -1)
		child_fail(repfd, 8);
	/* move fds out of the way of 0-4, then into place */
	fds[0] = fcntl(nullfd, F_DUPFD_CLOEXEC, 10);
	fds[1] = fcntl(logfd, F_DUPFD_CLOEXEC, 10);
	fds[2] = fds[1];
	fds[3] = fcntl(infofd, F_DUPFD_CLOEXEC, 10);
	fds[4] = s->seccomp_fd != -1 ?
	    fcntl(s->seccomp_fd, F_DUPFD_CLOEXEC, 10) : -1;
	if (fds[0] == -1 || fds[1] == -1 || fds[3] == -1 ||
	    (s->seccomp_fd != -1 && fds[4] == -1))
		child_fail(repfd, 9);
	for (i = 0; i < 5; i++) {
		if (fds[i] == -1)
			continue;
		if (dup2(fds[i], (int)i) == -1)
			child_fail(repfd, 9);
	}
	/* nothing else crosses exec (the caller's fds may lack CLOEXEC);
	 * repfd stays until exec to report an exec failure */
	(void)close_range(5, ~0U, CLOSE_RANGE_CLOEXEC);
	execve(s->bwrap, s->argv, s->envp);
	child_fail(repfd, 10);
}

int
rl_spawn(struct rl_spawn *s, int timeout_ms, char *err, size_t errlen)
{
	char ovl[4 * RL_PATH_MAX], info[1024], e[256];
	int usernsfd = -1, logfd = -1, nullfd = -1, infop[2] = { -1, -1 };
	int rep[2] = { -1, -1 }, st, rc = -1, r;
	struct spawn_fail f;
	struct pollfd pfd;
	size_t got = 0, ilen = 0;
	pid_t mid, gpid = -1;
	ssize_t n;
	char rb[sizeof(pid_t) + sizeof(f)];
	char *cp, *end;
	long long v;

	s->pid = s->child_pid = -1;
	if (s->upper != NULL && snprintf(ovl, sizeof(ovl),
	    "lowerdir=%s,upperdir=%s,workdir=%s", s->lower, s->upper,
	    s->work) >= (int)sizeof(ovl)) {
		snprintf(err, errlen, "overlay options too long");
		return -1;
	}
	if (strpbrk(s->lower, ",:") != NULL || (s->upper != NULL &&
	    (strpbrk(s->upper, ",:") != NULL || strpbrk(s->work, ",:") != NULL))) {
		snprintf(err, errlen, "state paths must not contain ',' or ':'");
		return -1;
	}
	if ((usernsfd = idmap_userns(s->uid, s->gid, e, sizeof(e))) == -1) {
		snprintf(err, errlen, "idmap user namespace: %s", e);
		goto out;
	}
	logfd = open(s->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
	nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (logfd == -1 || nullfd == -1) {
		snprintf(err, errlen, "open %s: %s", s->log_path,
		    strerror(errno));
		goto out;
	}
	if (pipe2(infop, O_CLOEXEC) == -1 || pipe2(rep, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto out;
	}
	if ((mid = fork()) == -1) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto out;
	}
	if (mid == 0) {
		/* detach: new session, and let init adopt the sandbox */
		pid_t g;

		close(infop[0]);
		close(rep[0]);
		(void)setsid();
		if ((g = fork()) == -1)
			_exit(1);
		if (g != 0) {
			_exit(write(rep[1], &g, sizeof(g)) == sizeof(g) ? 0 : 1);
		}
		spawn_child(s, ovl, usernsfd, logfd, nullfd, infop[1], rep[1]);
	}
	close(infop[1]);
	infop[1] = -1;
	close(rep[1]);
	rep[1] = -1;
	while (waitpid(mid, &st, 0) == -1 && errno == EINTR)
		;
	/* the grandchild's pid, then (only on failure) a spawn_fail */
	for (;;) {
		n = read(rep[0], rb + got, sizeof(rb) - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(rb))
			break;
	}
	if (got < sizeof(pid_t)) {
		snprintf(err, errlen, "spawn: intermediate process failed");
		goto out;
	}
	memcpy(&gpid, rb, sizeof(pid_t));
	s->pid = gpid;
	if (got == sizeof(rb)) {
		memcpy(&f, rb + sizeof(pid_t), sizeof(f));
		if (f.step < 0 || (size_t)f.step >= NELEM(spawn_steps))
			f.step = 0;
		snprintf(err, errlen, "spawn: %s: %s", spawn_steps[f.step],
		    strerror(f.err));
		goto out;
	}
	/* bwrap --info-fd: {"child-pid": N, ...} */
	for (;;) {
		pfd.fd = infop[0];
		pfd.events = POLLIN;
		r = poll(&pfd, 1, timeout_ms);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(err, errlen, "bwrap did not report its child "
			    "in time");
			goto out;
		}
		n = read(infop[0], info + ilen, sizeof(info) - 1 - ilen);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		ilen += (size_t)n;
		info[ilen] = '\0';
		if (strchr(info, '}') != NULL || ilen == sizeof(info) - 1)
			break;
	}
	info[ilen] = '\0';
	if ((cp = strstr(info, "\"child-pid\"")) == NULL ||
	    (cp = strchr(cp, ':')) == NULL) {
		snprintf(err, errlen, "bwrap failed to start the sandbox (see "
		    "%s)", s->log_path);
		goto out;
	}
	cp++;
	while (*cp == ' ')
		cp++;
	errno = 0;
	v = strtoll(cp, &end, 10);
	if (end == cp || errno != 0 || v <= 1 || v > INT_MAX) {
		snprintf(err, errlen, "bwrap reported a bad child pid");
		goto out;
	}
	s->child_pid = (pid_t)v;
	rc = 0;
out:
	if (usernsfd != -1)
		close(usernsfd);
	if (logfd != -1)
		close(logfd);
	if (nullfd != -1)
		close(nullfd);
	if (infop[0] != -1)
		close(infop[0]);
	if (infop[1] != -1)
		close(infop[1]);
	if (rep[0] != -1)
		close(rep[0]);
	if (rep[1] != -1)
		close(rep[1]);
	return rc;
}

/* ---- listener inside a network namespace ---- */

struct nsl_arg {
	int	nsfd;
	int	port;
	int	fd;
	char	err[200];
};

static void *
nsl_thread(void *p)
{
	struct nsl_arg *a = p;
	struct sockaddr_in sin;
	int s, one = 1;

	a->fd = -1;
	if (setns(a->nsfd, CLONE_NEWNET) == -1) {
		snprintf(a->err, sizeof(a->err), "setns: %s", strerror(errno));
		return NULL;
	}
	if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(a->err, sizeof(a->err), "socket: %s", strerror(errno));
		return NULL;
	}
	(void)setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* a re-registration binds a new listener while the proxy still
	 * holds the old one; it closes the old one on replace */
	(void)setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)a->port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(s, 128) == -1) {
		snprintf(a->err, sizeof(a->err), "bind 127.0.0.1:%d: %s",
		    a->port, strerror(errno));
		close(s);
		return NULL;
	}
	a->fd = s;
	return NULL;
}

int
rl_netns_listener(pid_t pid, int port, char *err, size_t errlen)
{
	struct nsl_arg a;
	pthread_t th;
	char path[64];
	int e;

	memset(&a, 0, sizeof(a));
	a.port = port;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if ((a.nsfd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "open %s: %s", path, strerror(errno));
		return -1;
	}
	/* setns on a short-lived thread: the caller's namespace is untouched */
	if ((e = pthread_create(&th, NULL, nsl_thread, &a)) != 0) {
		close(a.nsfd);
		snprintf(err, errlen, "pthread_create: %s", strerror(e));
		return -1;
	}
	pthread_join(th, NULL);
	close(a.nsfd);
	if (a.fd == -1)
		snprintf(err, errlen, "listener in sandbox: %s", a.err);
	return a.fd;
}

/* ---- seccomp ---- */

/*
 * System calls refused with EPERM inside a sandbox: kernel-wide state,
 * module and kexec loading, BPF and perf (large attack surface), the
 * keyring, io_uring, handle-based opens that bypass the mount tree,
 * accounting and swap. Mounts are already confined to the sandbox's own
 * user and mount namespaces; new user namespaces are refused by bwrap
 * --disable-userns.
 */
static const int deny_nrs[] = {
#ifdef SYS_kexec_load
	SYS_kexec_load,
#endif
#ifdef SYS_kexec_file_load
	SYS_kexec_file_load,
#endif
#ifdef SYS_init_module
	SYS_init_module,
#endif
#ifdef SYS_finit_module
	SYS_finit_module,
#endif
#ifdef SYS_delete_module
	SYS_delete_module,
#endif
#ifdef SYS_bpf
	SYS_bpf,
#endif
#ifdef SYS_perf_event_open
	SYS_perf_event_open,
#endif
#ifdef SYS_keyctl
	SYS_keyctl,
#endif
#ifdef SYS_add_key
	SYS_add_key,
#endif
#ifdef SYS_request_key
	SYS_request_key,
#endif
#ifdef SYS_io_uring_setup
	SYS_io_uring_setup,
#endif
#ifdef SYS_io_uring_enter
	SYS_io_uring_enter,
#endif
#ifdef SYS_io_uring_register
	SYS_io_uring_register,
#endif
#ifdef SYS_open_by_handle_at
	SYS_open_by_handle_at,
#endif
#ifdef SYS_acct
	SYS_acct,
#endif
#ifdef SYS_swapon
	SYS_swapon,
#endif
#ifdef SYS_swapoff
	SYS_swapoff,
#endif
#ifdef SYS_reboot
	SYS_reboot,
#endif
#ifdef SYS_lookup_dcookie
	SYS_lookup_dcookie,
#endif
#ifdef SYS_quotactl
	SYS_quotactl,
#endif
#ifdef SYS_uselib
	SYS_uselib,
#endif
#ifdef SYS_iopl
	SYS_iopl,
#endif
#ifdef SYS_ioperm
	SYS_ioperm,
#endif
#ifdef SYS_userfaultfd
	SYS_userfaultfd,
#endif
#ifdef SYS_fanotify_init
	SYS_fanotify_init,
#endif
#ifdef SYS_syslog
	SYS_syslog,
#endif
};

#if defined(__x86_64__)
#define RL_AUDIT_ARCH	AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define RL_AUDIT_ARCH	AUDIT_ARCH_AARCH64
#endif

int
rl_seccomp_fd(char *err, size_t errlen)
{
#ifdef RL_AUDIT_ARCH
	struct sock_filter prog[8 + NELEM(deny_nrs) * 2];
	size_t n = 0, i;
	int fd;

	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	    offsetof(struct seccomp_data, arch));
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	    RL_AUDIT_ARCH, 1, 0);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_KILL_PROCESS);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	    offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
	/* x32 system calls */
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K,
	    0x40000000, 0, 1);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_ERRNO | EPERM);
#endif
	for (i = 0; i < NELEM(deny_nrs); i++) {
		prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ |
		    BPF_K, (unsigned)deny_nrs[i], 0, 1);
		prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
		    SECCOMP_RET_ERRNO | EPERM);
	}
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_ALLOW);
	if ((fd = memfd_create("sandbox-seccomp", MFD_CLOEXEC)) == -1) {
		snprintf(err, errlen, "memfd_create: %s", strerror(errno));
		return -1;
	}
	if (write(fd, prog, n * sizeof(prog[0])) !=
	    (ssize_t)(n * sizeof(prog[0])) || lseek(fd, 0, SEEK_SET) == -1) {
		snprintf(err, errlen, "seccomp program: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
#else
	snprintf(err, errlen, "seccomp filter not built for this architecture");
	return -1;
#endif
}

/* ---- removal ---- */

static int
rm_at(int dfd, const char *name, int depth, char *err, size_t errlen)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	int fd, rc = 0;

	if (depth > 512) {
		snprintf(err, errlen, "directory tree too deep");
		return -1;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(dfd, name, 0) == -1 && errno != ENOENT) {
			snprintf(err, errlen, "unlink %s: %s", name,
			    strerror(errno));
			return -1;
		}
		return 0;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1) {
		/* a directory without permissions: make it readable */
		if (errno == EACCES && fchmodat(dfd, name, 0700, 0) == 0)
			fd = openat(dfd, name, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
		if (fd == -1) {
			snprintf(err, errlen, "open %s: %s", name,
			    strerror(errno));
			return -1;
		}
	}
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (rm_at(dirfd(d), de->d_name, depth + 1, err, errlen) == -1)
			rc = -1;
	}
	closedir(d);
	if (rc == 0 && unlinkat(dfd, name, AT_REMOVEDIR) == -1 &&
	    errno != ENOENT) {
		snprintf(err, errlen, "rmdir %s: %s", name, strerror(errno));
		rc = -1;
	}
	return rc;
}

int
rl_rmtree(const char *path, char *err, size_t errlen)
{
	return rm_at(AT_FDCWD, path, 0, err, errlen);
}
