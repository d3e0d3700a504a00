/*
 * runtime/local/start.c: starting and stopping a sandbox whose record
 * and directories exist. A start is a row of steps, each timed for the
 * debug line "sandbox=ID start: files=... cgroup=... total=..."
 * (docs/local-runtime.md, "Create latency"): the root files (hostname,
 * the proxy CA) into the upper layer, the cgroups, the seccomp program, bwrap's command line (what
 * the sandbox sees: namespaces, mounts, environment), the processes
 * (spawn.c), the pid file, the egress listener, and the wait for the
 * agent. A stop deregisters, kills and removes the cgroups.
 *
 * Rules: the caller holds the sandbox's lock and has written the phase;
 * a failed start leaves what it made for rl_do_stop to undo (the caller
 * calls it). Nothing here is called from elsewhere in the runtime but
 * local.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lib/agentc.h"
#include "buf.h"
#include "caps.h"
#include "log.h"
#include "local_int.h"
#include "util.h"
#include "xmalloc.h"

/* Largest CA file or image bundle read: Debian's bundle is ~200 KiB; a
 * bundle is read once a start, so the cap only bounds a broken file. */
#define RL_CA_MAX	((size_t)4 * 1024 * 1024)

void
rl_steps_init(struct steps *s)
{
	s->t0 = s->last = util_mono_us();
	s->off = 0;
	s->buf[0] = '\0';
}

/* Records a step that took us microseconds (measured elsewhere). */
static void
step_dur(struct steps *s, const char *name, long long us)
{
	int n;

	if (s == NULL)
		return;
	n = snprintf(s->buf + s->off, sizeof(s->buf) - s->off, " %s=%.1f",
	    name, (double)us / 1000.0);
	if (n > 0 && (size_t)n < sizeof(s->buf) - s->off)
		s->off += (size_t)n;
	s->last += us;
}

/* Records the step that ends now. */
void
rl_step(struct steps *s, const char *name)
{
	if (s != NULL)
		step_dur(s, name, util_mono_us() - s->last);
}

void
rl_steps_log(struct steps *s, const char *id, const char *what)
{
	log_debug("sandbox=%s %s:%s total=%.1f", id, what, s->buf,
	    (double)(util_mono_us() - s->t0) / 1000.0);
}

/*
 * The files the runtime puts into a sandbox's root at each start
 * (docs/local-runtime.md, "Files the runtime writes"): /etc/hostname, and
 * with a proxy CA the trust store's bundle (the image's own bundle plus
 * the CA) and the CA alone where the image's update tools look. Each goes
 * to its path in the image with the image's symlinks followed inside the
 * image (rl_image_path), so a layout where /etc/ssl/certs links elsewhere
 * (RHEL) keeps its link and gets the bundle at the link's target. They go
 * into the upper layer, or with a disk image (mounted in the sandbox's
 * mount namespace only) into <id>/ca/, bind-mounted over the same paths.
 */
#define RL_ROOT_FILES	4

struct root_files {
	char	rel[RL_ROOT_FILES][RL_PATH_MAX];	/* resolved, in the image */
	size_t	n;
};

/* Where the image keeps its CA bundle, most common first. */
static const char *const image_bundles[] = {
	"etc/ssl/certs/ca-certificates.crt",	/* Debian, Alpine, Arch */
	"etc/pki/tls/certs/ca-bundle.crt",	/* RHEL, Fedora */
	"etc/ssl/ca-bundle.pem",		/* SUSE */
	"etc/ssl/cert.pem",			/* Alpine, BSD-style */
};

/* Reads the image's own CA bundle into b (empty if it has none). */
static void
read_image_bundle(const struct rec *r, struct buf *b)
{
	char rel[RL_PATH_MAX], p[RL_PATH_MAX * 2], e[RL_PATH_MAX + 128];
	size_t i;

	for (i = 0; i < NELEM(image_bundles); i++) {
		if (rl_image_path(r->image_dir, image_bundles[i], rel,
		    sizeof(rel)) != 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", r->image_dir, rel);
		/* O_NOFOLLOW: rel has its links resolved */
		if (util_read_file_flags(p, O_NOFOLLOW, b, e, sizeof(e)) == 0)
			return;
		buf_reset(b);
	}
}

/* Writes data at rel (a resolved path in the image) under top. */
static int
put_root_file(const char *top, const struct rec *r, const char *rel,
    const char *data, size_t len, struct root_files *rf, char *err,
    size_t errlen)
{
	char dir[RL_PATH_MAX], *slash;

	snprintf(dir, sizeof(dir), "%s", rel);
	if ((slash = strrchr(dir, '/')) == NULL || rf->n >= RL_ROOT_FILES) {
		snprintf(err, errlen, "bad root file path %s", rel);
		return -1;
	}
	*slash = '\0';
	if (rl_write_in_upper(top, dir, slash + 1, data, len, (uid_t)r->uid,
	    (gid_t)r->uid, err, errlen) == -1)
		return -1;
	snprintf(rf->rel[rf->n++], RL_PATH_MAX, "%s", rel);
	return 0;
}

/* rel resolved in the image (as itself if that fails). */
static void
image_rel(const struct rec *r, const char *rel, char *out, size_t outlen)
{
	if (rl_image_path(r->image_dir, rel, out, outlen) == -1)
		snprintf(out, outlen, "%s", rel);
}

/* The proxy CA: the bundle at the path the environment names (netns.c's
 * SSL_CERT_FILE and friends), the CA alone for update-ca-certificates. */
static int
put_ca(const struct rl *rl, const struct rec *r, const char *top,
    struct root_files *rf, char *err, size_t errlen)
{
	char rel[RL_PATH_MAX], e[RL_PATH_MAX + 128];
	struct buf ca, sys, b;
	int rc = -1;

	buf_init(&ca, RL_CA_MAX);
	buf_init(&sys, RL_CA_MAX);
	buf_init(&b, 2 * RL_CA_MAX + 16);
	/* O_NOFOLLOW: a linked CA path has always been refused */
	if (util_read_file_flags(rl->c.proxy_ca_cert, O_NOFOLLOW, &ca, e,
	    sizeof(e)) == -1) {
		snprintf(err, errlen, "proxy_ca_cert %s", e);
		goto out;
	}
	if (ca.p == NULL || strstr(ca.p, "-----BEGIN CERTIFICATE-----") == NULL) {
		snprintf(err, errlen, "proxy_ca_cert %s: no PEM certificate",
		    rl->c.proxy_ca_cert);
		goto out;
	}
	read_image_bundle(r, &sys);
	if ((sys.len > 0 && buf_add(&b, sys.p, sys.len) == -1) ||
	    (sys.len > 0 && sys.p[sys.len - 1] != '\n' &&
	    buf_addstr(&b, "\n") == -1) || buf_add(&b, ca.p, ca.len) == -1) {
		snprintf(err, errlen, "CA bundle too large");
		goto out;
	}
	image_rel(r, "etc/ssl/certs/ca-certificates.crt", rel, sizeof(rel));
	if (put_root_file(top, r, rel, b.p, b.len, rf, err, errlen) == -1)
		goto out;
	image_rel(r, "usr/local/share/ca-certificates/egress-proxy-ca.crt", rel,
	    sizeof(rel));
	if (put_root_file(top, r, rel, ca.p, ca.len, rf, err, errlen) == -1)
		goto out;
	rc = 0;
out:
	buf_free(&b);
	buf_free(&sys);
	buf_free(&ca);
	return rc;
}

/* Writes the root files under top (the upper layer or <id>/ca/). */
static int
put_root_files(const struct rl *rl, const struct rec *r, const char *top,
    struct root_files *rf, char *err, size_t errlen)
{
	char rel[RL_PATH_MAX], host[ID_SANDBOX_MAX + 2];

	rf->n = 0;
	snprintf(host, sizeof(host), "%s\n", r->id);
	image_rel(r, "etc/hostname", rel, sizeof(rel));
	if (put_root_file(top, r, rel, host, strlen(host), rf, err,
	    errlen) == -1)
		return -1;
	if (rl->c.proxy_ca_cert == NULL || rl->c.proxy_ca_cert[0] == '\0')
		return 0;
	return put_ca(rl, r, top, rf, err, errlen);
}

struct argv_b {
	char	**v;
	size_t	  n, cap;
};

static void
av_add(struct argv_b *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = xreallocarray(a->v, a->cap, sizeof(*a->v));
	}
	a->v[a->n++] = xstrdup(s);
	a->v[a->n] = NULL;
}

static void
av_free(struct argv_b *a)
{
	while (a->n > 0)
		free(a->v[--a->n]);
	free(a->v);
	a->v = NULL;
	a->cap = 0;
}

int
rl_env_name_ok(const char *k)
{
	size_t i;

	if (k[0] == '\0' || (k[0] >= '0' && k[0] <= '9'))
		return 0;
	for (i = 0; k[i] != '\0'; i++) {
		char c = k[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return i < 256;
}

/* --setenv K V for "K=V" (dropped without '=' or with a key too long). */
static void
av_setenv(struct argv_b *a, const char *kv)
{
	const char *v;
	char k[256];
	size_t kl;

	if ((v = util_kv_find(kv, strlen(kv), &kl)) == NULL || kl >= sizeof(k))
		return;
	memcpy(k, kv, kl);
	k[kl] = '\0';
	av_add(a, "--setenv");
	av_add(a, k);
	av_add(a, v);
}

/* av_setenv for each "K=V" line of lines. */
static void
av_setenv_lines(struct argv_b *a, const char *lines)
{
	char kv[1024];
	const char *nl;
	size_t n;

	for (; *lines != '\0'; lines = *nl != '\0' ? nl + 1 : nl) {
		if ((nl = strchr(lines, '\n')) == NULL)
			nl = lines + strlen(lines);
		if ((n = (size_t)(nl - lines)) < sizeof(kv)) {
			memcpy(kv, lines, n);
			kv[n] = '\0';
			av_setenv(a, kv);
		}
	}
}

/* How long a stop or destroy waits for the sandbox's last processes (its
 * two bwrap processes, adopted by init) to be reaped after they died:
 * init reaps them, at its own pace (up to a second was seen). */
#define RL_REAP_WAIT_MS	5000

/* Waits until pid (with start time start) is gone from /proc, zombie
 * included, or ms passed; reaps it if it is our child. 1 if gone. */
static int
wait_gone(pid_t pid, long long start, int ms)
{
	int waited = 0, st;

	if (pid <= 1)
		return 1;
	while (rl_proc_start(pid) == start) {
		(void)waitpid(pid, &st, WNOHANG);
		if (waited >= ms)
			return 0;
		rl_sleep_us(2000);
		waited += 2;
	}
	return 1;
}

/* Kills everything of a sandbox (pid namespace and cgroups) and returns
 * when its processes are gone (dead: a zombie waiting for init to reap it,
 * at init's pace, about once a second here, holds nothing but its pid), or
 * after RL_REAP_WAIT_MS with a warning. */
static void
kill_sandbox(const struct rl *rl, const char *id)
{
	struct pidrec pr;
	int have = 0;

	if (rl_pid_load(rl, id, &pr) == 0) {
		have = 1;
		/* SIGKILL to a pid namespace's init kills the namespace */
		if (rl_proc_start((pid_t)pr.child_pid) == pr.child_start)
			(void)kill((pid_t)pr.child_pid, SIGKILL);
		if (rl_proc_start((pid_t)pr.bwrap_pid) == pr.bwrap_start)
			(void)kill((pid_t)pr.bwrap_pid, SIGKILL);
	}
	if (rl->cg.mode != RL_CG_NONE || rl->cg.v2_track) {
		if (rl_cg_kill(&rl->cg, id, 5000) == -1)
			log_warnx("sandbox=%s processes survive the kill", id);
	}
	if (have && (!wait_gone((pid_t)pr.child_pid, pr.child_start,
	    RL_REAP_WAIT_MS) || !wait_gone((pid_t)pr.bwrap_pid,
	    pr.bwrap_start, RL_REAP_WAIT_MS)))
		log_warnx("sandbox=%s its bwrap processes were not reaped "
		    "within %d ms", id, RL_REAP_WAIT_MS);
}

/* The last line of the sandbox's log (bwrap's and the agent's stderr). */
static void
log_tail(const struct rl *rl, const char *id, char *out, size_t outlen)
{
	char p[RL_PATH_MAX], *s = NULL, *t;
	size_t len = 0;
	int fd;
	off_t sz;

	snprintf(out, outlen, "no log");
	if (rl_sdir_path(rl, id, "log", p, sizeof(p)) == -1 ||
	    (fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return;
	if ((sz = lseek(fd, 0, SEEK_END)) > 0 &&
	    lseek(fd, sz > 512 ? sz - 512 : 0, SEEK_SET) != -1) {
		s = xmalloc(513);
		ssize_t n = read(fd, s, 512);

		len = n > 0 ? (size_t)n : 0;
		s[len] = '\0';
	}
	close(fd);
	if (s == NULL)
		return;
	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r'))
		s[--len] = '\0';
	t = strrchr(s, '\n');
	snprintf(out, outlen, "%s", t != NULL ? t + 1 : s);
	free(s);
}

/*
 * Waits until the agent answers GET /v1/health or the deadline passes.
 * Event-driven: inotify on the agent directory says when the socket
 * appears (the agent binds, listens, then serves); retries in between are
 * short (the socket may exist a moment before listen()).
 */
static int
wait_agent(const struct rl *rl, const char *id, const struct pidrec *pr,
    long long deadline, char *err, size_t errlen)
{
	struct rt_agent_addr a;
	struct agentc *ac = NULL;
	struct pollfd pfd;
	struct buf b;
	char e[256] = "", dir[RL_PATH_MAX], evb[4096];
	long long left;
	int st, rc = -1, ifd;
	long us = 100;

	memset(&a, 0, sizeof(a));
	if (rl_sdir_path(rl, id, "agent/agent.sock", a.unix_path,
	    sizeof(a.unix_path)) == -1 ||
	    rl_sdir_path(rl, id, "agent", dir, sizeof(dir)) == -1) {
		snprintf(err, errlen, "agent socket path too long (state_dir)");
		return -1;
	}
	ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ifd != -1 && inotify_add_watch(ifd, dir, IN_CREATE |
	    IN_MOVED_TO) == -1) {
		close(ifd);
		ifd = -1;
	}
	buf_init(&b, (size_t)64 * 1024);
	for (;;) {
		if (ac == NULL)
			ac = agentc_open(&a, 1000, e, sizeof(e));
		if (ac != NULL) {
			if (agentc_request(ac, "GET", "/v1/health", NULL, NULL, 0,
			    2000, &st, &b, e, sizeof(e)) == 0 && st == 200) {
				rc = 0;
				break;
			}
			agentc_close(ac);
			ac = NULL;
		}
		if (!rl_pid_alive(pr)) {
			log_tail(rl, id, e, sizeof(e));
			snprintf(err, errlen, "sandbox exited during start: %s",
			    e);
			break;
		}
		if ((left = deadline - util_mono_ms()) <= 0) {
			snprintf(err, errlen, "agent did not answer in time: %s",
			    e);
			break;
		}
		if (ifd != -1 && access(a.unix_path, F_OK) == -1) {
			/* no socket yet: until it appears (or 50 ms, to
			 * notice a sandbox that died) */
			pfd.fd = ifd;
			pfd.events = POLLIN;
			if (poll(&pfd, 1, left < 50 ? (int)left : 50) > 0)
				while (read(ifd, evb, sizeof(evb)) > 0)
					;
			continue;
		}
		rl_sleep_us(us);
		if (us < 5000)
			us += us / 2;
	}
	if (ifd != -1)
		close(ifd);
	agentc_close(ac);
	buf_free(&b);
	return rc;
}

/* The host paths of one start (docs/local-runtime.md, "State directory"). */
struct start_paths {
	char	logp[RL_PATH_MAX];	/* bwrap's and the agent's stderr */
	char	upper[RL_PATH_MAX];	/* overlay upper and work dirs: in */
	char	work[RL_PATH_MAX];	/* disk/ with a disk image */
	char	lower[RL_PATH_MAX];	/* mount point of the image */
	char	root[RL_PATH_MAX];	/* mount point of the overlay */
	char	ws[RL_PATH_MAX];	/* /workspace */
	char	agent[RL_PATH_MAX];	/* /run/agent */
	char	img[RL_PATH_MAX];	/* disk.img and its mount point */
	char	disk[RL_PATH_MAX];
	char	astate[RL_PATH_MAX];	/* /run/agent/state in the disk image */
	char	cadir[RL_PATH_MAX];	/* root files, with a disk image */
	char	cgdir[RL_PATH_MAX];	/* the v2 cgroup handed to the agent
					 * ("": none; rl_cg_delegate) */
	struct root_files rf;		/* what put_root_files wrote */
};

static int
start_paths(const struct rl *rl, const struct rec *r, struct start_paths *p,
    char *err, size_t errlen)
{
	if (rl_sdir_path(rl, r->id, "upper", p->upper, sizeof(p->upper)) == -1 ||
	    rl_sdir_path(rl, r->id, "work", p->work, sizeof(p->work)) == -1 ||
	    rl_sdir_path(rl, r->id, "lower", p->lower, sizeof(p->lower)) == -1 ||
	    rl_sdir_path(rl, r->id, "root", p->root, sizeof(p->root)) == -1 ||
	    rl_sdir_path(rl, r->id, "workspace", p->ws, sizeof(p->ws)) == -1 ||
	    rl_sdir_path(rl, r->id, "agent", p->agent, sizeof(p->agent)) == -1 ||
	    rl_sdir_path(rl, r->id, "log", p->logp, sizeof(p->logp)) == -1 ||
	    rl_sdir_path(rl, r->id, "disk.img", p->img, sizeof(p->img)) == -1 ||
	    rl_sdir_path(rl, r->id, "disk", p->disk, sizeof(p->disk)) == -1 ||
	    rl_sdir_path(rl, r->id, "disk/agent-state", p->astate,
	    sizeof(p->astate)) == -1 ||
	    rl_sdir_path(rl, r->id, "ca", p->cadir, sizeof(p->cadir)) == -1) {
		snprintf(err, errlen, "state path too long");
		return -1;
	}
	p->cgdir[0] = '\0';
	/* the writable layers live in the disk image, mounted at disk in the
	 * sandbox's mount namespace only */
	if (r->disk_bytes > 0 && (rl_sdir_path(rl, r->id, "disk/upper", p->upper,
	    sizeof(p->upper)) == -1 || rl_sdir_path(rl, r->id, "disk/work",
	    p->work, sizeof(p->work)) == -1 || rl_sdir_path(rl, r->id,
	    "disk/workspace", p->ws, sizeof(p->ws)) == -1)) {
		snprintf(err, errlen, "state path too long");
		return -1;
	}
	return 0;
}

/* The root files (put_root_files) of a writable root. */
static int
start_root_files(const struct rl *rl, const struct rec *r,
    struct start_paths *p, char *err, size_t errlen)
{
	p->rf.n = 0;
	if (!r->writable_root)
		return 0;
	if (r->disk_bytes > 0 && mkdir(p->cadir, 0755) == -1 &&
	    errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", p->cadir, strerror(errno));
		return -1;
	}
	return put_root_files(rl, r, r->disk_bytes > 0 ? p->cadir : p->upper,
	    &p->rf, err, errlen);
}

/* bwrap's namespaces and ids. */
static void
argv_ns(struct argv_b *av, const struct rec *r)
{
	char num[64];

	av_add(av, "bwrap");
	av_add(av, "--userns");	/* N2 (rl_spawn): ids 0..uid_range-1 */
	av_add(av, "5");
	/* the agent's, for agent/nest.c, which drops them: a plain /proc
	 * (SYS_ADMIN), the maps of N3, the user namespace of the sandbox's
	 * commands (SETUID, SETGID; SETFCAP to map its root), and its low
	 * ports (NET_ADMIN: the sysctl ip_unprivileged_port_start) */
	av_add(av, "--cap-add");
	av_add(av, "CAP_SYS_ADMIN");
	av_add(av, "--cap-add");
	av_add(av, "CAP_SETUID");
	av_add(av, "--cap-add");
	av_add(av, "CAP_SETGID");
	av_add(av, "--cap-add");
	av_add(av, "CAP_SETFCAP");
	av_add(av, "--cap-add");
	av_add(av, "CAP_NET_ADMIN");
	av_add(av, "--unshare-pid");
	av_add(av, "--unshare-net");
	av_add(av, "--unshare-ipc");
	av_add(av, "--unshare-uts");
	av_add(av, "--unshare-cgroup-try");
	av_add(av, "--uid");
	snprintf(num, sizeof(num), "%d", r->run_as_root ? 0 : RL_INNER_UID);
	av_add(av, num);
	av_add(av, "--gid");
	av_add(av, num);
	av_add(av, "--hostname");
	av_add(av, r->id);
}

/* What the sandbox sees of the filesystem. */
static void
argv_mounts(struct argv_b *av, const struct rl *rl, const struct rec *r,
    const struct start_paths *p)
{
	static const char *const pids_files[] = {
		"pids.current", "pids.max", "pids.events",
	};
	char num[64], kv[RL_PATH_MAX * 2], oomf[RL_PATH_MAX + 64];
	char pidsd[RL_PATH_MAX + 64];
	size_t i;

	av_add(av, r->writable_root ? "--bind" : "--ro-bind");
	av_add(av, r->writable_root ? p->root : p->lower);
	av_add(av, "/");
	av_add(av, "--proc");
	av_add(av, "/proc");
	av_add(av, "--dev");
	av_add(av, "/dev");
	av_add(av, "--perms");
	av_add(av, "1777");
	av_add(av, "--size");
	snprintf(num, sizeof(num), "%lld", rl->c.tmp_bytes);
	av_add(av, num);
	av_add(av, "--tmpfs");
	av_add(av, "/tmp");
	av_add(av, "--tmpfs");
	av_add(av, "/run");
	av_add(av, "--perms");
	av_add(av, "0700");
	av_add(av, "--dir");
	av_add(av, "/run/nest");
	av_add(av, "--dir");
	av_add(av, "/run/nest/proc");
	av_add(av, "--bind");
	av_add(av, p->agent);
	av_add(av, "/run/agent");
	if (r->disk_bytes > 0) {
		/* the job spools and records inside the disk limit */
		av_add(av, "--bind");
		av_add(av, p->astate);
		av_add(av, "/run/agent/state");
	}
	av_add(av, "--ro-bind");
	av_add(av, rl->agent_bin);
	av_add(av, "/run/sandbox/sandbox-agent");
	if (p->cgdir[0] != '\0') {
		/* the sandbox's v2 cgroup, delegated: the agent makes a child
		 * per exec, job and shell in it (agent/cgroup.c), opens it and
		 * takes this mount away before any command runs */
		av_add(av, "--bind");
		av_add(av, p->cgdir);
		av_add(av, "/run/sandbox/cgroup");
	}
	rl_cg_pids_dir(&rl->cg, r->id, pidsd, sizeof(pidsd));
	for (i = 0; pidsd[0] != '\0' && i < NELEM(pids_files); i++) {
		/* the process count, limit and refusals: how the agent knows
		 * the sandbox is at its process limit (agent/cgroup.c) */
		snprintf(kv, sizeof(kv), "%s/%s", pidsd, pids_files[i]);
		av_add(av, "--ro-bind-try");
		av_add(av, kv);
		snprintf(kv, sizeof(kv), "/run/sandbox/%s", pids_files[i]);
		av_add(av, kv);
	}
	rl_cg_oom_file(&rl->cg, r->id, oomf, sizeof(oomf));
	if (oomf[0] != '\0') {
		/* the OOM counter (a line "oom_kill N"), read by the agent */
		av_add(av, "--ro-bind-try");
		av_add(av, oomf);
		av_add(av, "/run/sandbox/memory.events");
		snprintf(kv, sizeof(kv), "%s/sys", r->image_dir);
		if (access(kv, F_OK) == 0) {
			av_add(av, "--tmpfs");
			av_add(av, "/sys");
			av_add(av, "--ro-bind-try");
			av_add(av, oomf);
			av_add(av, "/sys/fs/cgroup/memory.events");
		}
	}
	/* with a disk image, the root files bound over their (resolved,
	 * so link-free) paths */
	for (i = 0; r->disk_bytes > 0 && i < p->rf.n; i++) {
		snprintf(kv, sizeof(kv), "%s/%s", p->cadir, p->rf.rel[i]);
		av_add(av, "--ro-bind");
		av_add(av, kv);
		snprintf(kv, sizeof(kv), "/%s", p->rf.rel[i]);
		av_add(av, kv);
	}
	av_add(av, "--bind");
	av_add(av, p->ws);
	av_add(av, "/workspace");
	av_add(av, "--chdir");
	av_add(av, "/workspace");
}

/* The agent's environment: a fixed base, the proxy's, then the spec's. */
static void
argv_env(struct argv_b *av, const struct rec *r)
{
	char kv[1024], penv[1024];
	const cJSON *it;

	av_add(av, "--clearenv");
	av_setenv(av, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
	    "/sbin:/bin");
	av_setenv(av, r->run_as_root ? "HOME=/root" : "HOME=/workspace");
	av_setenv(av, r->run_as_root ? "USER=root" : "USER=sandbox");
	av_setenv(av, "LANG=C.UTF-8");
	av_setenv(av, "TERM=dumb");
	snprintf(kv, sizeof(kv), "HOSTNAME=%s", r->id);
	av_setenv(av, kv);
	snprintf(kv, sizeof(kv), "SANDBOX_ID=%s", r->id);
	av_setenv(av, kv);
	if (rl_proxy_env(penv, sizeof(penv)) == -1)
		fatalx("local: the proxy env is over %zu bytes", sizeof(penv));
	av_setenv_lines(av, penv);
	cJSON_ArrayForEach(it, r->env) {
		if (!cJSON_IsString(it) || !rl_env_name_ok(it->string))
			continue;
		av_add(av, "--setenv");
		av_add(av, it->string);
		av_add(av, it->valuestring);
	}
}

/* bwrap's whole command line (bwrap(1)); seccomp: --seccomp 4. */
static void
bwrap_argv(struct argv_b *av, const struct rl *rl, const struct rec *r,
    const struct start_paths *p, int seccomp)
{
	char caps[32];

	argv_ns(av, r);
	argv_mounts(av, rl, r, p);
	av_add(av, "--new-session");
	av_add(av, "--info-fd");
	av_add(av, "3");
	if (seccomp) {
		av_add(av, "--seccomp");
		av_add(av, "4");
	}
	argv_env(av, r);
	av_add(av, "--");
	av_add(av, "/run/sandbox/sandbox-agent");
	av_add(av, "--listen");
	av_add(av, "unix:/run/agent/agent.sock");
	av_add(av, "--state");
	av_add(av, "/run/agent/state");
	av_add(av, "--workdir");
	av_add(av, "/workspace");
	/* the sandbox's commands one level below the agent (agent/nest.c),
	 * root with the capabilities of common/caps.h */
	snprintf(caps, sizeof(caps), "%#llx", r->run_as_root ?
	    (unsigned long long)SANDBOX_CAPS_MASK : 0ULL);
	av_add(av, "--nest-caps");
	av_add(av, caps);
	if (p->cgdir[0] != '\0') {
		av_add(av, "--cgroup");
		av_add(av, "/run/sandbox/cgroup");
	}
}

/* Spawns bwrap with argv as the sandbox's processes (spawn.c); fills sp.
 * On failure, kills what it started. */
static int
start_spawn(const struct rl *rl, const struct rec *r,
    const struct start_paths *p, char *const *argv,
    char (*cgf)[RL_PATH_MAX], size_t ncg, int secfd, struct rl_spawn *sp,
    char *err, size_t errlen)
{
	static char *const envp[] = { NULL };	/* bwrap --setenv sets it */

	memset(sp, 0, sizeof(*sp));
	sp->bwrap = rl->c.bwrap;
	sp->argv = argv;
	sp->envp = envp;
	sp->uid = (uid_t)r->uid;
	sp->gid = (gid_t)r->uid;
	sp->uid_range = (unsigned)r->uid_range;
	sp->inner_uid = r->run_as_root ? 0 : RL_INNER_UID;
	sp->image_dir = r->image_dir;
	sp->lower = p->lower;
	sp->upper = r->writable_root ? p->upper : NULL;
	sp->work = p->work;
	sp->root = p->root;
	sp->disk_img = r->disk_bytes > 0 ? p->img : NULL;
	sp->disk_mnt = p->disk;
	sp->agent_state = r->disk_bytes > 0 ? p->astate : NULL;
	sp->log_path = p->logp;
	sp->cg_files = cgf;
	sp->ncg_files = ncg;
	sp->seccomp_fd = secfd;
	if (rl_spawn(sp, (int)rl->c.start_timeout_ms, err, errlen) == -1) {
		if (sp->pid > 0)
			(void)kill(sp->pid, SIGKILL);
		return -1;
	}
	return 0;
}

/* Writes the pid file of what sp started (pr); on failure, kills it. */
static int
start_pidfile(const struct rl *rl, const struct rec *r,
    const struct start_paths *p, const struct rl_spawn *sp,
    struct pidrec *pr, char *err, size_t errlen)
{
	memset(pr, 0, sizeof(*pr));
	pr->bwrap_pid = sp->pid;
	pr->bwrap_start = rl_proc_start(sp->pid);
	pr->child_pid = sp->child_pid;
	pr->child_start = rl_proc_start(sp->child_pid);
	pr->started_ms = util_unix_ms();
	if (pr->child_start == -1 || rl_pid_save(rl, r->id, pr, err,
	    errlen) == -1) {
		if (pr->child_start == -1) {
			char e[512];

			/* as "exited during start": what it said last */
			log_tail(rl, r->id, e, sizeof(e));
			snprintf(err, errlen, "sandbox exited at once: %s (log: %s)",
			    e, p->logp);
		}
		(void)kill(sp->child_pid, SIGKILL);
		return -1;
	}
	return 0;
}

int
rl_do_start(struct rl *rl, struct rec *r, struct steps *stp, char *err,
    size_t errlen)
{
	struct start_paths p;
	char cgf[8][RL_PATH_MAX], sock[RL_PATH_MAX + 16], e[RL_PATH_MAX + 128];
	struct rl_spawn sp;
	struct argv_b av = { 0 };
	struct pidrec pr;
	long long deadline = util_mono_ms() + rl->c.start_timeout_ms;
	struct stat ast;
	size_t ncg = 0;
	long long ids;
	int secfd = -1, rc = -1;

	if (start_paths(rl, r, &p, err, errlen) == -1 ||
	    start_root_files(rl, r, &p, err, errlen) == -1)
		return -1;
	rl_step(stp, "files");
	if (rl_cg_create(&rl->cg, r->id, &r->lim, err, errlen) == -1)
		return -1;
	/* the agent's host ids, as rl_spawn drops to them */
	ids = r->uid + (r->uid_range > 1 ? (r->run_as_root ? 0 : RL_INNER_UID) :
	    0);
	if (rl_cg_delegate(&rl->cg, r->id, (uid_t)ids, (gid_t)ids, p.cgdir,
	    sizeof(p.cgdir), e, sizeof(e)) == -1)
		log_warnx("sandbox=%s its commands are killed by walking /proc: "
		    "cannot hand its cgroup to the agent: %s", r->id, e);
	rl_step(stp, "cgroup");
	if (rl_cg_procs_files(&rl->cg, r->id, cgf, NELEM(cgf), &ncg) == -1) {
		snprintf(err, errlen, "cgroup path too long");
		return -1;
	}
	if (rl->c.seccomp && (secfd = rl_seccomp_fd(err, errlen)) == -1)
		return -1;
	bwrap_argv(&av, rl, r, &p, secfd != -1);
	/* a stale socket from a previous run must not look like a new agent;
	 * the agent took the directory's write bit once its socket was bound
	 * (agent/main.c seal_listen_dir): back for the new one */
	snprintf(sock, sizeof(sock), "%s/agent.sock", p.agent);
	(void)unlink(sock);
	if (stat(p.agent, &ast) == 0 && S_ISDIR(ast.st_mode))
		(void)chmod(p.agent, (ast.st_mode & 07777) | S_IWUSR);
	rl_step(stp, "argv");
	if (start_spawn(rl, r, &p, av.v, cgf, ncg, secfd, &sp, err,
	    errlen) == -1)
		goto out;
	step_dur(stp, "idmap", sp.us_idmap);	/* rl_spawn's own steps */
	step_dur(stp, "detach", sp.us_detach);
	rl_step(stp, "bwrap");
	if (start_pidfile(rl, r, &p, &sp, &pr, err, errlen) == -1)
		goto out;
	rl_step(stp, "pidfile");
	if (rl_egress_register(rl, r, sp.child_pid, NULL, 0, NULL, NULL, NULL, err, errlen) == -1)
		goto out;
	rl_step(stp, "egress");
	if (wait_agent(rl, r->id, &pr, deadline, err, errlen) == -1)
		goto out;
	rl_step(stp, "agent");
	rc = 0;
out:
	if (secfd != -1)
		close(secfd);
	av_free(&av);
	return rc;
}

/* Stops processes and releases cgroups and the proxy registration. */
void
rl_do_stop(struct rl *rl, const char *id)
{
	char p[RL_PATH_MAX];

	rl_egress_deregister(rl, id);
	kill_sandbox(rl, id);
	(void)rl_cg_remove(&rl->cg, id);
	if (rl_sdir_path(rl, id, "pid", p, sizeof(p)) == 0)
		(void)unlink(p);
}
