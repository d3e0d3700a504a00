/*
 * runtime/local/cgroup.c: a sandbox's cgroups (docs/local-runtime.md,
 * "Cgroups"): where its limits go (v2, v1, or the v1/v2 hybrid with the
 * limits in v1 and a v2 cgroup for tracking and cgroup.kill), making them
 * and writing the limits, killing every process in them, the OOM counter,
 * and removing them.
 *
 * Rules: one cgroup per sandbox and hierarchy, named by its id, under a
 * parent (cgroup_name) detected once by rl_cg_detect; the sandbox's first
 * process joins them before it execs (spawn.c), so nothing of a sandbox
 * runs outside them. A cgroup outlives its processes only until the next
 * sweep. The v2 cgroup is delegated to the sandbox's agent (rl_cg_delegate:
 * its directory and cgroup.procs owned by the agent's host uid), which
 * makes one child per exec, job and shell below it (agent/cgroup.c): the
 * kill and the removal here take those children too. Calls proc.c only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "local_int.h"
#include "strnum.h"
#include "util.h"

/* A cgroup control file (cgroup.controllers, memory.events): a few lines. */
#define RL_CG_FILE_MAX	4096
/* cgroup.procs read at once: some 130k pids (8 bytes a line), far above
 * the default pids_max; a longer list is read again after the first batch
 * is killed. */
#define RL_PROCS_MAX	((size_t)1 << 20)
/*
 * Child cgroups the agent may make in its sandbox's v2 cgroup, one level
 * deep (cgroup.max.descendants, .max.depth: root-owned, so the agent
 * cannot raise them): the shell, each exec (at most 64 at once) and each
 * job whose processes live on. Each costs the kernel a few KiB.
 */
#define RL_CG_DELEGATE_MAX	"512"

static int
file_has_word(const char *path, const char *word)
{
	char e[RL_PATH_MAX + 64], *s, *t;
	size_t wl = strlen(word);
	struct buf b;
	int found = 0;

	buf_init(&b, RL_CG_FILE_MAX);
	if (util_read_file_flags(path, O_NOFOLLOW, &b, e, sizeof(e)) == -1 ||
	    (s = b.p) == NULL) {
		buf_free(&b);
		return 0;
	}
	for (t = s; (t = strstr(t, word)) != NULL; t += wl) {
		if ((t == s || t[-1] == ' ' || t[-1] == '\n') &&
		    (t[wl] == ' ' || t[wl] == '\n' || t[wl] == '\0')) {
			found = 1;
			break;
		}
	}
	buf_free(&b);
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

/*
 * The v1 hierarchies, each found by a file its controller makes: a
 * hierarchy's parent is root/sub/name. cpu may be mounted as "cpu" or
 * "cpu,cpuacct": the first row found fills the parent, the next is
 * skipped.
 */
static const struct cg_v1 {
	const char	*sub;
	const char	*file;
	size_t		 off;	/* the parent's path in struct rl_cg */
} cg_v1[] = {
	{ "memory", "memory.limit_in_bytes", offsetof(struct rl_cg, v1_mem) },
	{ "cpu", "cpu.cfs_quota_us", offsetof(struct rl_cg, v1_cpu) },
	{ "cpu,cpuacct", "cpu.cfs_quota_us", offsetof(struct rl_cg, v1_cpu) },
	{ "pids", "cgroup.procs", offsetof(struct rl_cg, v1_pids) },
	{ "freezer", "cgroup.procs", offsetof(struct rl_cg, v1_freezer) },
};

/* Fills cg's v1 parents (under root, named name) that exist. */
static void
cg_find_v1(struct rl_cg *cg, const char *root, const char *name)
{
	char p[RL_PATH_MAX + 64], *dst;
	size_t i;

	for (i = 0; i < NELEM(cg_v1); i++) {
		dst = (char *)cg + cg_v1[i].off;
		snprintf(p, sizeof(p), "%s/%s/%s", root, cg_v1[i].sub,
		    cg_v1[i].file);
		if (dst[0] == '\0' && access(p, F_OK) == 0)
			snprintf(dst, RL_PATH_MAX, "%s/%s/%s", root,
			    cg_v1[i].sub, name);
	}
}

int
rl_cg_detect(const char *mode, const char *name, struct rl_cg *cg,
    char *err, size_t errlen)
{
	return rl_cg_detect_at("/sys/fs/cgroup", mode, name, cg, err, errlen);
}

int
rl_cg_detect_at(const char *root, const char *mode, const char *name,
    struct rl_cg *cg, char *err, size_t errlen)
{
	char v2root[RL_PATH_MAX] = "";
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
	if (strcmp(mode, "v2") != 0 && strcmp(mode, "v1") != 0 &&
	    strcmp(mode, "auto") != 0) {
		snprintf(err, errlen, "cgroup_mode: expected auto, v2, v1 or none");
		return -1;
	}
	/* Pure v2 at root, or the hybrid's v2 at root/unified. */
	snprintf(p, sizeof(p), "%s/cgroup.controllers", root);
	if (access(p, F_OK) == 0)
		snprintf(v2root, sizeof(v2root), "%s", root);
	else {
		snprintf(p, sizeof(p), "%s/unified/cgroup.controllers", root);
		if (access(p, F_OK) == 0)
			snprintf(v2root, sizeof(v2root), "%s/unified", root);
	}
	if (v2root[0] != '\0' && getenv("SANDBOX_CG_NO_UNIFIED") != NULL &&
	    strcmp(v2root, root) != 0)
		v2root[0] = '\0';	/* tests: exercise the v1 freezer path */
	if (v2root[0] != '\0') {
		snprintf(p, sizeof(p), "%s/cgroup.controllers", v2root);
		v2ctl = file_has_word(p, "memory") && file_has_word(p, "pids") &&
		    file_has_word(p, "cpu");
		snprintf(cg->v2, sizeof(cg->v2), "%s/%s", v2root, name);
		if (mkdir_p1(cg->v2, err, errlen) == -1)
			return -1;
		cg->v2_track = 1;
	}
	cg_find_v1(cg, root, name);

	if (strcmp(mode, "v2") == 0 || (strcmp(mode, "auto") == 0 && v2ctl)) {
		if (!v2ctl) {
			snprintf(err, errlen, "cgroup v2 has no memory, pids and "
			    "cpu controllers here (cgroup_mode: v1 or auto)");
			return -1;
		}
		cg->mode = RL_CG_V2;
		snprintf(p, sizeof(p), "%s/cgroup.subtree_control", v2root);
		(void)rl_write_str(p, "+memory +pids +cpu");
		snprintf(p, sizeof(p), "%s/cgroup.subtree_control", cg->v2);
		if (rl_write_str(p, "+memory +pids +cpu") == -1) {
			snprintf(err, errlen, "enable controllers in %s: %s",
			    cg->v2, strerror(errno));
			return -1;
		}
		cg->v1_mem[0] = cg->v1_cpu[0] = cg->v1_pids[0] = '\0';
		cg->v1_freezer[0] = '\0';
		return 0;
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
	(void)rl_write_str(p, "1");
	return 0;
}

static int
cg_write(const char *dir, const char *id, const char *file, const char *val,
    char *err, size_t errlen)
{
	char p[RL_PATH_MAX + 128];

	snprintf(p, sizeof(p), "%s/%s/%s", dir, id, file);
	if (rl_write_str(p, val) == -1) {
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
		/* the reservation is protected from reclaim (v1 has no such
		 * knob: nothing there) */
		snprintf(v, sizeof(v), "%lld", l->mem_low);
		if (l->mem_low > 0 && cg_write(cg->v2, id, "memory.low", v, err,
		    errlen) == -1)
			return -1;
		(void)cg_write(cg->v2, id, "memory.swap.max", "0", err, errlen);
		(void)cg_write(cg->v2, id, "memory.oom.group", "0", err, errlen);
		snprintf(v, sizeof(v), "%lld", l->pids_max);
		if (cg_write(cg->v2, id, "pids.max", v, err, errlen) == -1)
			return -1;
		snprintf(v, sizeof(v), "%lld 100000", l->cpu_millis * 100);
		if (cg_write(cg->v2, id, "cpu.max", v, err, errlen) == -1)
			return -1;
		/* equal weights: under contention every sandbox gets the same
		 * share, whatever its quota or thread count */
		(void)cg_write(cg->v2, id, "cpu.weight", "100", err, errlen);
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
		(void)cg_write(cg->v1_cpu, id, "cpu.shares", "1024", err,
		    errlen);	/* equal weights, as cpu.weight above */
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

/*
 * Reads dir/id/cgroup.procs into b (empty: -1). A list longer than
 * RL_PROCS_MAX keeps what fitted: enough to count (non-zero) and to kill
 * a first batch, as the kill loop reads it again until it is empty.
 */
static int
read_procs(const char *dir, const char *id, struct buf *b)
{
	char p[RL_PATH_MAX + 128], e[RL_PATH_MAX + 192];

	buf_init(b, RL_PROCS_MAX);
	snprintf(p, sizeof(p), "%s/%s/cgroup.procs", dir, id);
	if (util_read_file_flags(p, O_NOFOLLOW, b, e, sizeof(e)) == -1 &&
	    b->len == 0) {
		buf_free(b);
		return -1;
	}
	return 0;
}

/* Counts pids listed in dir/id/cgroup.procs; -1 if unreadable. */
static int
count_procs(const char *dir, const char *id)
{
	struct buf b;
	size_t i;
	int n = 0;

	if (read_procs(dir, id, &b) == -1)
		return -1;
	for (i = 0; i < b.len; i++)
		if (b.p[i] == '\n')
			n++;
	buf_free(&b);
	return n;
}

/*
 * Whether dir/id or a child of it holds a process ("populated 1" in its
 * cgroup.events, v2 only: the children the agent makes count): 1, 0, or
 * -1 if unreadable.
 */
static int
v2_populated(const char *dir, const char *id)
{
	char p[RL_PATH_MAX + 128], e[RL_PATH_MAX + 192];
	struct buf b;
	const char *t;
	int r = -1;

	snprintf(p, sizeof(p), "%s/%s/cgroup.events", dir, id);
	buf_init(&b, RL_CG_FILE_MAX);
	if (util_read_file_flags(p, O_NOFOLLOW, &b, e, sizeof(e)) == 0 &&
	    b.p != NULL && (t = strstr(b.p, "populated ")) != NULL)
		r = t[10] == '1';
	buf_free(&b);
	return r;
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
	struct buf b;
	char *t, *e;
	long v;

	if (read_procs(dir, id, &b) == -1 || b.p == NULL) {
		buf_free(&b);
		return;
	}
	for (t = b.p; *t != '\0'; t = e) {
		errno = 0;
		v = strtol(t, &e, 10);
		if (e == t)
			break;
		/* only whole lines: a list cut at RL_PROCS_MAX may end in part
		 * of a number, another process's pid */
		if (errno == 0 && v > 1 && v <= INT_MAX && *e == '\n')
			(void)kill((pid_t)v, SIGKILL);
		while (*e == '\n')
			e++;
	}
	buf_free(&b);
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
		/* v2: the agent's children of the cgroup count too */
		n = dir == cg->v2 ? v2_populated(dir, id) : -1;
		if (n == 0 || (n == -1 && count_procs(dir, id) <= 0))
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
		rl_sleep_us(waited < 20 ? 1000 : 10000);
		waited += waited < 20 ? 1 : 10;
	}
	return 0;
}

int
rl_cg_delegate(const struct rl_cg *cg, const char *id, uid_t uid, gid_t gid,
    char *dir, size_t dirlen, char *err, size_t errlen)
{
	char p[RL_PATH_MAX + 128], q[RL_PATH_MAX + 160];

	dir[0] = '\0';
	if (!cg->v2_track)
		return 0;
	snprintf(p, sizeof(p), "%s/%s", cg->v2, id);
	snprintf(q, sizeof(q), "%s/cgroup.procs", p);
	/* the bounds first: root-owned, so they hold whatever the agent does */
	if (cg_write(cg->v2, id, "cgroup.max.depth", "1", err, errlen) == -1 ||
	    cg_write(cg->v2, id, "cgroup.max.descendants", RL_CG_DELEGATE_MAX,
	    err, errlen) == -1)
		return -1;
	/* what cgroup v2 delegation hands over (cgroup-v2.rst, "Delegation
	 * Containment"): the directory (to make children) and cgroup.procs
	 * (the common ancestor of a move into a child); not
	 * cgroup.subtree_control: no controller is enabled below */
	if (lchown(p, uid, gid) == -1 || lchown(q, uid, gid) == -1) {
		snprintf(err, errlen, "chown %s: %s", p, strerror(errno));
		return -1;
	}
	if (strlen(p) >= dirlen) {
		snprintf(err, errlen, "cgroup path too long");
		return -1;
	}
	memcpy(dir, p, strlen(p) + 1);
	return 0;
}

void
rl_cg_pids_dir(const struct rl_cg *cg, const char *id, char *out,
    size_t outlen)
{
	out[0] = '\0';
	if (cg->mode == RL_CG_V2)
		snprintf(out, outlen, "%s/%s", cg->v2, id);
	else if (cg->mode == RL_CG_V1 && cg->v1_pids[0] != '\0')
		snprintf(out, outlen, "%s/%s", cg->v1_pids, id);
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
	char p[RL_PATH_MAX + 128], e[RL_PATH_MAX + 192], *t;
	long long v = -1;
	struct buf b;

	rl_cg_oom_file(cg, id, p, sizeof(p));
	buf_init(&b, RL_CG_FILE_MAX);
	if (p[0] == '\0' || util_read_file_flags(p, O_NOFOLLOW, &b, e,
	    sizeof(e)) == -1 || b.p == NULL) {
		buf_free(&b);
		return -1;
	}
	for (t = b.p; t != NULL && *t != '\0'; ) {
		if (strncmp(t, "oom_kill ", 9) == 0) {
			v = strtoll(t + 9, NULL, 10);
			break;
		}
		t = strchr(t, '\n');
		if (t != NULL)
			t++;
	}
	buf_free(&b);
	return v;
}

long long
rl_cg_mem_current(const struct rl_cg *cg, const char *id)
{
	char p[RL_PATH_MAX + 128], e[RL_PATH_MAX + 192];
	const char *es;
	long long v = -1;
	struct buf b;

	if (cg->mode == RL_CG_V2)
		snprintf(p, sizeof(p), "%s/%s/memory.current", cg->v2, id);
	else if (cg->mode == RL_CG_V1)
		snprintf(p, sizeof(p), "%s/%s/memory.usage_in_bytes", cg->v1_mem,
		    id);
	else
		return -1;
	buf_init(&b, RL_CG_FILE_MAX);
	if (util_read_file_flags(p, O_NOFOLLOW, &b, e, sizeof(e)) == 0 &&
	    b.p != NULL) {
		b.p[strcspn(b.p, "\n")] = '\0';
		if (strnum_ll(b.p, 0, 1LL << 62, &v, &es) == -1)
			v = -1;
	}
	buf_free(&b);
	return v;
}

/*
 * Removes the (empty) child cgroups of path: the agent's, one level deep
 * (rl_cg_delegate), which keep their parent's rmdir busy. Names come from
 * the kernel's directory; "." and ".." are skipped.
 */
static void
rm_children(const char *path)
{
	char p[RL_PATH_MAX + 400];
	struct dirent *de;
	DIR *d;

	if ((d = opendir(path)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
		(void)rmdir(p);
	}
	closedir(d);
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
	for (i = 0; i < 300; i++) {
		rm_children(p);
		if (rmdir(p) == 0 || errno != EBUSY)
			break;
		rl_sleep_us(10000);
	}
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
			rm_children(p);
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

/*
 * Freezing (docs/local-runtime.md, "Idle sandboxes"): the v2 cgroup's
 * cgroup.freeze where there is one (v2 and the hybrid: the core freezer
 * needs no controller, and it takes the agent's child cgroups too), else
 * the v1 freezer. Root-owned files: a sandbox cannot thaw itself.
 */
static int
v2_has(const struct rl_cg *cg, const char *id, const char *file)
{
	char p[RL_PATH_MAX + 128];

	if (!cg->v2_track)
		return 0;
	snprintf(p, sizeof(p), "%s/%s/%s", cg->v2, id, file);
	return access(p, F_OK) == 0;
}

int
rl_cg_freeze(const struct rl_cg *cg, const char *id, int on, char *err,
    size_t errlen)
{
	if (v2_has(cg, id, "cgroup.freeze"))
		return cg_write(cg->v2, id, "cgroup.freeze", on ? "1" : "0",
		    err, errlen);
	if (cg->v1_freezer[0] != '\0')
		return cg_write(cg->v1_freezer, id, "freezer.state", on ?
		    "FROZEN" : "THAWED", err, errlen);
	snprintf(err, errlen, "no cgroup freezer on this host");
	return -1;
}

/* The first line of dir/id/file, in b (NUL-terminated). 0 or -1. */
static int
cg_read(const char *dir, const char *id, const char *file, struct buf *b)
{
	char p[RL_PATH_MAX + 128], e[RL_PATH_MAX + 192];

	buf_init(b, RL_CG_FILE_MAX);
	snprintf(p, sizeof(p), "%s/%s/%s", dir, id, file);
	if (util_read_file_flags(p, O_NOFOLLOW, b, e, sizeof(e)) == -1 ||
	    b->p == NULL) {
		buf_free(b);
		return -1;
	}
	return 0;
}

/* The value after "key " in a flat-keyed file's text; -1 if absent. */
static long long
keyed(const char *text, const char *key)
{
	size_t kl = strlen(key);
	const char *t;

	for (t = text; t != NULL && *t != '\0'; ) {
		if (strncmp(t, key, kl) == 0 && t[kl] == ' ')
			return strtoll(t + kl + 1, NULL, 10);
		if ((t = strchr(t, '\n')) != NULL)
			t++;
	}
	return -1;
}

int
rl_cg_frozen(const struct rl_cg *cg, const char *id)
{
	struct buf b;
	int r = 0;

	if (v2_has(cg, id, "cgroup.freeze")) {
		if (cg_read(cg->v2, id, "cgroup.freeze", &b) == 0) {
			r = b.p[0] == '1';
			buf_free(&b);
		}
		return r;
	}
	if (cg->v1_freezer[0] != '\0' &&
	    cg_read(cg->v1_freezer, id, "freezer.state", &b) == 0) {
		r = strncmp(b.p, "THAWED", 6) != 0;
		buf_free(&b);
	}
	return r;
}

long long
rl_cg_cpu_usec(const struct rl_cg *cg, const char *id)
{
	struct buf b;
	long long v = -1;

	if (cg->v2_track && cg_read(cg->v2, id, "cpu.stat", &b) == 0) {
		v = keyed(b.p, "usage_usec");
		buf_free(&b);
		if (v >= 0)
			return v;
	}
	if (cg->v1_cpu[0] != '\0' &&
	    cg_read(cg->v1_cpu, id, "cpuacct.usage", &b) == 0) {
		v = strtoll(b.p, NULL, 10);
		v = v >= 0 ? v / 1000 : -1;
		buf_free(&b);
	}
	return v;
}

/*
 * Reclaim. v2: memory.reclaim (the kernel takes back what it can, and
 * says EAGAIN when it could not take all: not an error here). v1 has no
 * such file: the limit is lowered to what the sandbox would hold after,
 * which makes the kernel reclaim (a write it cannot satisfy fails with
 * EBUSY; nothing is killed), and put back at once. The sandbox is frozen
 * meanwhile, so nothing of it can charge memory against the lowered
 * limit and meet the OOM killer.
 */
int
rl_cg_reclaim(const struct rl_cg *cg, const char *id, long long bytes,
    char *err, size_t errlen)
{
	char v[32], e[64];
	long long cur, lim;
	struct buf b;
	int was, rc;

	if (bytes <= 0)
		return 0;
	if (cg->mode == RL_CG_V2) {
		snprintf(v, sizeof(v), "%lld", bytes);
		if (cg_write(cg->v2, id, "memory.reclaim", v, err, errlen) == -1 &&
		    errno != EAGAIN)
			return -1;
		return 0;
	}
	if (cg->mode != RL_CG_V1 || cg->v1_mem[0] == '\0') {
		snprintf(err, errlen, "no memory cgroup to reclaim from");
		return -1;
	}
	if ((cur = rl_cg_mem_current(cg, id)) <= 0)
		return 0;
	if (cg_read(cg->v1_mem, id, "memory.limit_in_bytes", &b) == -1) {
		snprintf(err, errlen, "sandbox %s: no memory limit to read", id);
		return -1;
	}
	lim = strtoll(b.p, NULL, 10);
	buf_free(&b);
	if (lim <= 0) {
		snprintf(err, errlen, "sandbox %s: unreadable memory limit", id);
		return -1;
	}
	was = rl_cg_frozen(cg, id);
	if (!was && rl_cg_freeze(cg, id, 1, err, errlen) == -1)
		return -1;
	/* what it would hold after; at least 1 MiB, or the kernel refuses */
	snprintf(v, sizeof(v), "%lld", cur - bytes > (1LL << 20) ?
	    cur - bytes : 1LL << 20);
	rc = cg_write(cg->v1_mem, id, "memory.limit_in_bytes", v, e, sizeof(e));
	snprintf(v, sizeof(v), "%lld", lim);	/* as it was */
	if (cg_write(cg->v1_mem, id, "memory.limit_in_bytes", v, err,
	    errlen) == -1)
		log_warnx("sandbox=%s reclaim: limit not put back: %s", id, err);
	if (!was)
		(void)rl_cg_freeze(cg, id, 0, e, sizeof(e));
	(void)rc;	/* EBUSY: it holds no more it could give back */
	return 0;
}
