/*
 * runtime/local/health.c: can sandboxes be made here now? The checks
 * isolation needs (docs/local-runtime.md, "Health checks"), run at start
 * by runtime_local_new (a failing isolation check refuses the start
 * unless require_isolation is false) and again by the health op, whose
 * result /readyz reports.
 *
 * Rules: every check is cheap (no sandbox is made: a user namespace is
 * made and dropped by one CLONE_VM child, a cgroup made and removed) and
 * leaves nothing behind. What a check says goes to the operator only (it
 * names host paths); nothing here reaches a sandbox or a model. Calls
 * spawn.c, record.c and proc.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <linux/loop.h>
#include <unistd.h>

#include "local_int.h"

/* The state directory's filesystem must keep this much free: below it a
 * create would fail half way (records, disk images). */
#define RL_HEALTH_MIN_FREE	((long long)64 << 20)

/* Adds one check to arr: {name, ok, isolation, error | warning}. */
static void
add_check(cJSON *arr, const char *name, int ok, int isolation,
    const char *msg, int warn)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddBoolToObject(o, "ok", ok);
	cJSON_AddBoolToObject(o, "isolation", isolation);
	if (msg != NULL && msg[0] != '\0')
		cJSON_AddStringToObject(o, ok && warn ? "warning" : "error",
		    msg);
	cJSON_AddItemToArray(arr, o);
}

/* mkdir + rmdir of a probe cgroup under parent; 0 or -1 with err. */
static int
cg_probe(const char *parent, const char *what, char *err, size_t errlen)
{
	char p[RL_PATH_MAX + 32];

	if (parent[0] == '\0')
		return 0;
	snprintf(p, sizeof(p), "%s/.health-%d", parent, (int)getpid());
	if (mkdir(p, 0755) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "%s cgroup %s not usable: %s", what,
		    parent, strerror(errno));
		return -1;
	}
	if (rmdir(p) == -1) {
		snprintf(err, errlen, "rmdir %s: %s", p, strerror(errno));
		return -1;
	}
	return 0;
}

/* The cgroup parents exist and take children; on v2 the controllers the
 * limits need are enabled (delegated) for them. */
static int
check_cgroups(const struct rl *rl, char *err, size_t errlen)
{
	char p[RL_PATH_MAX + 32], buf[512];
	const char *need[] = { "memory", "pids", "cpu" };
	ssize_t n;
	size_t i;
	int fd;

	if (rl->cg.mode == RL_CG_V2) {
		snprintf(p, sizeof(p), "%s/cgroup.subtree_control", rl->cg.v2);
		if ((fd = open(p, O_RDONLY | O_CLOEXEC)) == -1) {
			snprintf(err, errlen, "%s: %s", p, strerror(errno));
			return -1;
		}
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		for (i = 0; i < NELEM(need); i++)
			if (strstr(buf, need[i]) == NULL) {
				snprintf(err, errlen, "controller %s not "
				    "delegated to %s (cgroup.subtree_control: "
				    "%.100s)", need[i], rl->cg.v2, buf);
				return -1;
			}
	}
	if ((rl->cg.v2_track || rl->cg.mode == RL_CG_V2) &&
	    cg_probe(rl->cg.v2, "v2", err, errlen) == -1)
		return -1;
	if (rl->cg.mode == RL_CG_V1 &&
	    (cg_probe(rl->cg.v1_mem, "memory", err, errlen) == -1 ||
	    cg_probe(rl->cg.v1_pids, "pids", err, errlen) == -1 ||
	    cg_probe(rl->cg.v1_cpu, "cpu", err, errlen) == -1))
		return -1;
	return 0;
}

struct idcount {
	long long	n;
};

static void
count_id(const char *id, void *arg)
{
	(void)id;
	((struct idcount *)arg)->n++;
}

/* A loop device can be had (LOOP_CTL_GET_FREE: an existing free one, or
 * the kernel makes one) and mkfs runs. */
static int
check_loop(const struct rl *rl, char *err, size_t errlen)
{
	int fd, n;

	if ((fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "/dev/loop-control: %s", strerror(errno));
		return -1;
	}
	n = ioctl(fd, LOOP_CTL_GET_FREE);
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "no free loop device: %s", strerror(errno));
		return -1;
	}
	if (access(rl->c.mkfs, X_OK) == -1) {
		snprintf(err, errlen, "mkfs %s: %s", rl->c.mkfs, strerror(errno));
		return -1;
	}
	return 0;
}

/* The proxy's admin socket accepts a connection (closed at once). */
static int
check_proxy(const struct rl *rl, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	int fd, rc = -1;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(rl->c.proxy_admin_socket) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "proxy_admin_socket path too long");
		return -1;
	}
	memcpy(sa.sun_path, rl->c.proxy_admin_socket,
	    strlen(rl->c.proxy_admin_socket));
	if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		snprintf(err, errlen, "egress proxy admin socket %s: %s",
		    rl->c.proxy_admin_socket, strerror(errno));
	else
		rc = 0;
	close(fd);
	return rc;
}

cJSON *
rl_health(const struct rl *rl, const char **fatal, char *ferr, size_t ferrlen)
{
	cJSON *arr = cJSON_CreateArray();
	struct idcount ic = { 0 };
	struct statvfs sv;
	struct stat st;
	char e[2048];
	int ok;

	if (fatal != NULL)
		*fatal = NULL;
#define FAIL_ISO(name)	do {						\
	if (fatal != NULL && *fatal == NULL) {				\
		*fatal = name;						\
		snprintf(ferr, ferrlen, "isolation check %s failed: %s",	\
		    name, e);						\
	} } while (0)

	e[0] = '\0';
	ok = rl_probe_userns(e, sizeof(e)) == 0;
	add_check(arr, "user_namespaces", ok, 1, e, 0);
	if (!ok)
		FAIL_ISO("user_namespaces");

	e[0] = '\0';
	if (rl->cg.mode == RL_CG_NONE && !rl->cg.v2_track) {
		ok = 1;
		snprintf(e, sizeof(e), "cgroup_mode none: no memory, cpu or "
		    "pids limits (tests only)");
	} else
		ok = check_cgroups(rl, e, sizeof(e)) == 0;
	add_check(arr, "cgroups", ok, 1, e, 1);
	if (!ok)
		FAIL_ISO("cgroups");

	e[0] = '\0';
	ok = access(rl->c.bwrap, X_OK) == 0;
	if (!ok)
		snprintf(e, sizeof(e), "bwrap %s: %s", rl->c.bwrap,
		    strerror(errno));
	add_check(arr, "bwrap", ok, 1, e, 0);
	if (!ok)
		FAIL_ISO("bwrap");

	e[0] = '\0';
	errno = 0;
	ok = stat(rl->agent_bin, &st) == 0 && S_ISREG(st.st_mode) &&
	    access(rl->agent_bin, X_OK) == 0;
	if (!ok)
		snprintf(e, sizeof(e), "agent_bin %s: %s", rl->agent_bin,
		    errno != 0 ? strerror(errno) : "not a regular file");
	add_check(arr, "agent_bin", ok, 1, e, 0);
	if (!ok)
		FAIL_ISO("agent_bin");

	e[0] = '\0';
	if (rl->c.disk_bytes > 0) {
		ok = check_loop(rl, e, sizeof(e)) == 0;
		add_check(arr, "loop_devices", ok, 1, e, 0);
		if (!ok)
			FAIL_ISO("loop_devices");
	} else {
		add_check(arr, "loop_devices", 1, 0, rl->disk_fallback ?
		    "no loop devices: sandboxes have NO disk limit" :
		    "disk_bytes 0: no default disk limit", 1);
	}

	e[0] = '\0';
	ok = rl_each_id(rl, count_id, &ic, e, sizeof(e)) == 0;
	if (ok && ic.n >= rl->c.uid_count) {
		ok = 0;
		snprintf(e, sizeof(e), "no free uid block: %lld sandboxes hold "
		    "all %lld (local.uid_count)", ic.n, rl->c.uid_count);
	}
	add_check(arr, "uid_blocks", ok, 0, e, 0);

	e[0] = '\0';
	ok = statvfs(rl->state_dir, &sv) == 0;
	if (!ok)
		snprintf(e, sizeof(e), "statvfs %s: %s", rl->state_dir,
		    strerror(errno));
	else if ((long long)sv.f_bavail * (long long)sv.f_frsize <
	    RL_HEALTH_MIN_FREE || (sv.f_files > 0 && sv.f_favail < 1024)) {
		ok = 0;
		snprintf(e, sizeof(e), "state_dir %s: filesystem full (%lld "
		    "MiB, %llu inodes free)", rl->state_dir,
		    (long long)sv.f_bavail * (long long)sv.f_frsize >> 20,
		    (unsigned long long)sv.f_favail);
	}
	add_check(arr, "state_dir", ok, 0, e, 0);

	e[0] = '\0';
	if (rl->c.proxy_admin_socket[0] != '\0') {
		ok = check_proxy(rl, e, sizeof(e)) == 0;
		add_check(arr, "proxy_admin", ok, 0, e, 0);
	}
#undef FAIL_ISO
	return arr;
}
