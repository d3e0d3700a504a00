/*
 * runtime/local/local.c: the local runtime engine (DESIGN.md section 3). Each
 * sandbox is a bubblewrap process tree in its own user, pid, mount, ipc, uts
 * and network namespaces, running as its own unprivileged host uid, over an
 * overlay of an idmapped image, with cgroup limits. Everything about a
 * sandbox lives in <state_dir>/<id>/ so that list() can rebuild the truth
 * after a restart. Layout and reasoning: docs/local-runtime.md.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "agentc.h"
#include "buf.h"
#include "egress.h"
#include "log.h"
#include "local.h"
#include "local_int.h"
#include "xmalloc.h"
#include "util.h"

#define RL_MAX_ENV	256
#define RL_CA_MAX	((size_t)4 * 1024 * 1024)
#define RL_DISK_MIN	(16LL << 20)

static void
steps_init(struct steps *s)
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
static void
step(struct steps *s, const char *name)
{
	if (s != NULL)
		step_dur(s, name, util_mono_us() - s->last);
}

static void
steps_log(struct steps *s, const char *id, const char *what)
{
	log_debug("sandbox=%s %s:%s total=%.1f", id, what, s->buf,
	    (double)(util_mono_us() - s->t0) / 1000.0);
}

/*
 * Puts the proxy CA into the sandbox's trust store, in the overlay's upper
 * layer: the image's bundle plus the CA in /etc/ssl/certs/ca-certificates.crt,
 * and the CA alone in /usr/local/share/ca-certificates/.
 */
static int
install_ca(const struct rl *rl, const struct rec *r, const char *upper,
    char *err, size_t errlen)
{
	char p[RL_PATH_MAX + 64], e[RL_PATH_MAX + 128];
	struct buf ca, sys, b;
	int rc = -1;

	if (rl->c.proxy_ca_cert == NULL || rl->c.proxy_ca_cert[0] == '\0')
		return 0;
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
	/* the image's bundle, if any; O_NOFOLLOW: a link in an image means
	 * a path inside the sandbox, not on the host */
	snprintf(p, sizeof(p), "%s/etc/ssl/certs/ca-certificates.crt",
	    r->image_dir);
	if (util_read_file_flags(p, O_NOFOLLOW, &sys, e, sizeof(e)) == -1)
		buf_reset(&sys);
	if ((sys.len > 0 && buf_add(&b, sys.p, sys.len) == -1) ||
	    (sys.len > 0 && sys.p[sys.len - 1] != '\n' &&
	    buf_addstr(&b, "\n") == -1) || buf_add(&b, ca.p, ca.len) == -1) {
		snprintf(err, errlen, "CA bundle too large");
		goto out;
	}
	if (write_in_upper(upper, "etc/ssl/certs", "ca-certificates.crt",
	    b.p, b.len, (uid_t)r->uid, (gid_t)r->uid, err, errlen) == -1 ||
	    write_in_upper(upper, "usr/local/share/ca-certificates",
	    "egress-proxy-ca.crt", ca.p, ca.len, (uid_t)r->uid, (gid_t)r->uid,
	    err, errlen) == -1)
		goto out;
	rc = 0;
out:
	buf_free(&b);
	buf_free(&sys);
	buf_free(&ca);
	return rc;
}

/* ---- starting and stopping ---- */

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
	size_t i;

	for (i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

static int
env_name_ok(const char *k)
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

static void
av_setenv(struct argv_b *a, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char k[256];

	if (eq == NULL || (size_t)(eq - kv) >= sizeof(k))
		return;
	memcpy(k, kv, (size_t)(eq - kv));
	k[eq - kv] = '\0';
	av_add(a, "--setenv");
	av_add(a, k);
	av_add(a, eq + 1);
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

/* Kills everything of a sandbox (pid namespace and cgroups). */
static void
kill_sandbox(const struct rl *rl, const char *id)
{
	struct pidrec pr;

	if (pid_load(rl, id, &pr) == 0) {
		/* SIGKILL to a pid namespace's init kills the namespace */
		if (rl_proc_start((pid_t)pr.child_pid) == pr.child_start)
			(void)kill((pid_t)pr.child_pid, SIGKILL);
		if (rl_proc_start((pid_t)pr.bwrap_pid) == pr.bwrap_start)
			(void)kill((pid_t)pr.bwrap_pid, SIGKILL);
	}
	if (rl->cg.mode != RL_CG_NONE || rl->cg.v2_track) {
		if (rl_cg_kill(&rl->cg, id, 5000) == -1)
			log_warnx("sandbox=%s processes survive the kill", id);
	} else if (pr.child_pid > 1) {
		int i;

		for (i = 0; i < 500 && rl_proc_start((pid_t)pr.child_pid) ==
		    pr.child_start; i++)
			sleep_us(1000);
	}
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
	if (sdir_path(rl, id, "log", p, sizeof(p)) == -1 ||
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
	if (sdir_path(rl, id, "agent/agent.sock", a.unix_path,
	    sizeof(a.unix_path)) == -1 ||
	    sdir_path(rl, id, "agent", dir, sizeof(dir)) == -1) {
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
		if (!pid_alive(pr)) {
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
		sleep_us(us);
		if (us < 5000)
			us += us / 2;
	}
	if (ifd != -1)
		close(ifd);
	agentc_close(ac);
	buf_free(&b);
	return rc;
}

/*
 * Starts the sandbox described by r (phase already written by the caller):
 * cgroups, bwrap, the proxy listener, then waits for the agent.
 */
static int
do_start(struct rl *rl, struct rec *r, const struct rt_kv *xenv, size_t nxenv,
    struct steps *stp, char *err, size_t errlen)
{
	char sdir[RL_PATH_MAX], upper[RL_PATH_MAX], work[RL_PATH_MAX];
	char lower[RL_PATH_MAX], root[RL_PATH_MAX], ws[RL_PATH_MAX];
	char agent[RL_PATH_MAX], logp[RL_PATH_MAX], oomf[RL_PATH_MAX + 64];
	char cgf[8][RL_PATH_MAX], num[64], kv[1024], pidline[256];
	char img[RL_PATH_MAX], disk[RL_PATH_MAX], cadir[RL_PATH_MAX];
	char penv[1024];
	struct rl_spawn sp;
	struct argv_b av = { 0 }, ev = { 0 };
	struct pidrec pr;
	long long t0 = util_mono_ms(), deadline = t0 + rl->c.start_timeout_ms;
	size_t ncg = 0, i;
	int secfd = -1, rc = -1;
	cJSON *it;

	if (sdir_path(rl, r->id, NULL, sdir, sizeof(sdir)) == -1 ||
	    sdir_path(rl, r->id, "upper", upper, sizeof(upper)) == -1 ||
	    sdir_path(rl, r->id, "work", work, sizeof(work)) == -1 ||
	    sdir_path(rl, r->id, "lower", lower, sizeof(lower)) == -1 ||
	    sdir_path(rl, r->id, "root", root, sizeof(root)) == -1 ||
	    sdir_path(rl, r->id, "workspace", ws, sizeof(ws)) == -1 ||
	    sdir_path(rl, r->id, "agent", agent, sizeof(agent)) == -1 ||
	    sdir_path(rl, r->id, "log", logp, sizeof(logp)) == -1 ||
	    sdir_path(rl, r->id, "disk.img", img, sizeof(img)) == -1 ||
	    sdir_path(rl, r->id, "disk", disk, sizeof(disk)) == -1) {
		snprintf(err, errlen, "state path too long");
		return -1;
	}
	if (r->disk_bytes > 0) {
		/* the writable layers live in the disk image, mounted at disk
		 * in the sandbox's mount namespace only */
		if (sdir_path(rl, r->id, "disk/upper", upper,
		    sizeof(upper)) == -1 || sdir_path(rl, r->id, "disk/work",
		    work, sizeof(work)) == -1 || sdir_path(rl, r->id,
		    "disk/workspace", ws, sizeof(ws)) == -1) {
			snprintf(err, errlen, "state path too long");
			return -1;
		}
	}
	/* the CA goes into the upper layer; a disk image is not mounted here,
	 * so it goes to <id>/ca/ and is bind-mounted over the same paths */
	if (sdir_path(rl, r->id, "ca", cadir, sizeof(cadir)) == -1) {
		snprintf(err, errlen, "state path too long");
		return -1;
	}
	if (r->disk_bytes > 0 && r->writable_root && rl->c.proxy_ca_cert[0] &&
	    mkdir(cadir, 0755) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", cadir, strerror(errno));
		return -1;
	}
	if (r->writable_root && install_ca(rl, r, r->disk_bytes > 0 ? cadir :
	    upper, err, errlen) == -1)
		return -1;
	step(stp, "ca");
	if (rl_cg_create(&rl->cg, r->id, &r->lim, err, errlen) == -1)
		return -1;
	step(stp, "cgroup");
	if (rl_cg_procs_files(&rl->cg, r->id, cgf, NELEM(cgf), &ncg) == -1) {
		snprintf(err, errlen, "cgroup path too long");
		return -1;
	}
	if (rl->c.seccomp && (secfd = rl_seccomp_fd(err, errlen)) == -1)
		return -1;

	av_add(&av, "bwrap");
	av_add(&av, "--userns");	/* N2 (rl_spawn): ids 0..uid_range-1 */
	av_add(&av, "5");
	av_add(&av, "--assert-userns-disabled");
	av_add(&av, "--unshare-pid");
	av_add(&av, "--unshare-net");
	av_add(&av, "--unshare-ipc");
	av_add(&av, "--unshare-uts");
	av_add(&av, "--unshare-cgroup-try");
	av_add(&av, "--uid");
	snprintf(num, sizeof(num), "%d", r->run_as_root ? 0 : RL_INNER_UID);
	av_add(&av, num);
	av_add(&av, "--gid");
	av_add(&av, num);
	av_add(&av, "--hostname");
	av_add(&av, r->id);
	av_add(&av, r->writable_root ? "--bind" : "--ro-bind");
	av_add(&av, r->writable_root ? root : lower);
	av_add(&av, "/");
	av_add(&av, "--proc");
	av_add(&av, "/proc");
	av_add(&av, "--dev");
	av_add(&av, "/dev");
	av_add(&av, "--perms");
	av_add(&av, "1777");
	av_add(&av, "--size");
	snprintf(num, sizeof(num), "%lld", rl->c.tmp_bytes);
	av_add(&av, num);
	av_add(&av, "--tmpfs");
	av_add(&av, "/tmp");
	av_add(&av, "--tmpfs");
	av_add(&av, "/run");
	av_add(&av, "--bind");
	av_add(&av, agent);
	av_add(&av, "/run/agent");
	av_add(&av, "--ro-bind");
	av_add(&av, rl->agent_bin);
	av_add(&av, "/run/sandbox/sandbox-agent");
	rl_cg_oom_file(&rl->cg, r->id, oomf, sizeof(oomf));
	if (oomf[0] != '\0') {
		/* the OOM counter (a line "oom_kill N"), read by the agent */
		av_add(&av, "--ro-bind-try");
		av_add(&av, oomf);
		av_add(&av, "/run/sandbox/memory.events");
		snprintf(kv, sizeof(kv), "%s/sys", r->image_dir);
		if (access(kv, F_OK) == 0) {
			av_add(&av, "--tmpfs");
			av_add(&av, "/sys");
			av_add(&av, "--ro-bind-try");
			av_add(&av, oomf);
			av_add(&av, "/sys/fs/cgroup/memory.events");
		}
	}
	if (r->writable_root && r->disk_bytes > 0 && rl->c.proxy_ca_cert[0]) {
		snprintf(kv, sizeof(kv), "%s/etc/ssl/certs/ca-certificates.crt",
		    cadir);
		av_add(&av, "--ro-bind");
		av_add(&av, kv);
		av_add(&av, "/etc/ssl/certs/ca-certificates.crt");
		snprintf(kv, sizeof(kv), "%s/usr/local/share/ca-certificates/"
		    "egress-proxy-ca.crt", cadir);
		av_add(&av, "--ro-bind");
		av_add(&av, kv);
		av_add(&av, "/usr/local/share/ca-certificates/egress-proxy-ca.crt");
	}
	av_add(&av, "--bind");
	av_add(&av, ws);
	av_add(&av, "/workspace");
	av_add(&av, "--chdir");
	av_add(&av, "/workspace");
	av_add(&av, "--new-session");
	av_add(&av, "--info-fd");
	av_add(&av, "3");
	if (secfd != -1) {
		av_add(&av, "--seccomp");
		av_add(&av, "4");
	}
	av_add(&av, "--clearenv");
	av_setenv(&av, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
	    "/sbin:/bin");
	av_setenv(&av, r->run_as_root ? "HOME=/root" : "HOME=/workspace");
	av_setenv(&av, r->run_as_root ? "USER=root" : "USER=sandbox");
	av_setenv(&av, "LANG=C.UTF-8");
	av_setenv(&av, "TERM=dumb");
	snprintf(kv, sizeof(kv), "HOSTNAME=%s", r->id);
	av_setenv(&av, kv);
	snprintf(kv, sizeof(kv), "SANDBOX_ID=%s", r->id);
	av_setenv(&av, kv);
	if (rl_proxy_env(penv, sizeof(penv)) == -1)
		fatalx("local: the proxy env is over %zu bytes", sizeof(penv));
	av_setenv_lines(&av, penv);
	cJSON_ArrayForEach(it, r->env) {
		if (!cJSON_IsString(it) || !env_name_ok(it->string))
			continue;
		av_add(&av, "--setenv");
		av_add(&av, it->string);
		av_add(&av, it->valuestring);
	}
	for (i = 0; i < nxenv; i++) {
		if (!env_name_ok(xenv[i].k))
			continue;
		av_add(&av, "--setenv");
		av_add(&av, xenv[i].k);
		av_add(&av, xenv[i].v);
	}
	av_add(&av, "--");
	av_add(&av, "/run/sandbox/sandbox-agent");
	av_add(&av, "--listen");
	av_add(&av, "unix:/run/agent/agent.sock");
	av_add(&av, "--state");
	av_add(&av, "/run/agent/state");
	av_add(&av, "--workdir");
	av_add(&av, "/workspace");
	ev.v = xcalloc(1, sizeof(char *));

	/* a stale socket from a previous run must not look like a new agent */
	snprintf(kv, sizeof(kv), "%s/agent.sock", agent);
	(void)unlink(kv);

	memset(&sp, 0, sizeof(sp));
	sp.bwrap = rl->c.bwrap;
	sp.argv = av.v;
	sp.envp = ev.v;
	sp.uid = (uid_t)r->uid;
	sp.gid = (gid_t)r->uid;
	sp.uid_range = (unsigned)r->uid_range;
	sp.inner_uid = r->run_as_root ? 0 : RL_INNER_UID;
	sp.image_dir = r->image_dir;
	sp.lower = lower;
	sp.upper = r->writable_root ? upper : NULL;
	sp.work = work;
	sp.root = root;
	sp.disk_img = r->disk_bytes > 0 ? img : NULL;
	sp.disk_mnt = disk;
	sp.log_path = logp;
	sp.cg_files = cgf;
	sp.ncg_files = ncg;
	sp.seccomp_fd = secfd;
	step(stp, "argv");
	if (rl_spawn(&sp, (int)rl->c.start_timeout_ms, err, errlen) == -1) {
		if (sp.pid > 0)
			(void)kill(sp.pid, SIGKILL);
		goto out;
	}
	step_dur(stp, "idmap", sp.us_idmap);	/* rl_spawn's own steps */
	step_dur(stp, "detach", sp.us_detach);
	step(stp, "bwrap");
	memset(&pr, 0, sizeof(pr));
	pr.bwrap_pid = sp.pid;
	pr.bwrap_start = rl_proc_start(sp.pid);
	pr.child_pid = sp.child_pid;
	pr.child_start = rl_proc_start(sp.child_pid);
	pr.started_ms = util_unix_ms();
	snprintf(pidline, sizeof(pidline), "%lld %lld %lld %lld %lld\n",
	    pr.bwrap_pid, pr.bwrap_start, pr.child_pid, pr.child_start,
	    pr.started_ms);
	snprintf(kv, sizeof(kv), "%s/pid", sdir);
	if (pr.child_start == -1 ||
	    util_write_file_replace(kv, pidline, strlen(pidline), 0600, err,
	    errlen) == -1) {
		if (pr.child_start == -1)
			snprintf(err, errlen, "sandbox exited at once (see %s)",
			    logp);
		(void)kill(sp.child_pid, SIGKILL);
		goto out;
	}
	step(stp, "pidfile");
	if (rl_egress_register(rl, r, sp.child_pid, err, errlen) == -1)
		goto out;
	step(stp, "egress");
	if (wait_agent(rl, r->id, &pr, deadline, err, errlen) == -1)
		goto out;
	step(stp, "agent");
	rc = 0;
out:
	if (secfd != -1)
		close(secfd);
	av_free(&av);
	free(ev.v);
	return rc;
}

/* Stops processes and releases cgroups and the proxy registration. */
static void
do_stop(struct rl *rl, const char *id)
{
	char p[RL_PATH_MAX];

	rl_egress_deregister(rl, id);
	kill_sandbox(rl, id);
	(void)rl_cg_remove(&rl->cg, id);
	if (sdir_path(rl, id, "pid", p, sizeof(p)) == 0)
		(void)unlink(p);
}

/* ---- the runtime_ops ---- */

static void rl_fill_info(struct rl *, const char *, struct rt_info *);

static int rl_destroy(struct runtime *, const char *, char *, size_t);

static int
rl_create(struct runtime *rt, const struct rt_spec *spec, struct rt_info *out,
    char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	struct rec r;
	struct steps stp;
	char sdir[RL_PATH_MAX], p[RL_PATH_MAX + 16], e[256];
	int lfd = -1, gfd = -1, made = 0, rc = -1;
	size_t i;
	uid_t uid;

	steps_init(&stp);
	memset(&r, 0, sizeof(r));
	if (out != NULL)
		memset(out, 0, sizeof(*out));
	if (spec->id == NULL || !id_sandbox_valid(spec->id)) {
		snprintf(err, errlen, "invalid sandbox id (expected "
		    "[a-z0-9][a-z0-9-]{0,62})");
		return -1;
	}
	if (spec->use_kata) {
		snprintf(err, errlen, "use_kata is not available on the local "
		    "runtime");
		return -1;
	}
	if (spec->nlabels > RL_MAX_LABELS || spec->nenv > RL_MAX_ENV) {
		snprintf(err, errlen, "too many labels or env entries");
		return -1;
	}
	for (i = 0; i < spec->nenv; i++)
		if (spec->env[i].k == NULL || spec->env[i].v == NULL ||
		    !env_name_ok(spec->env[i].k)) {
			snprintf(err, errlen, "invalid env name");
			return -1;
		}
	snprintf(r.id, sizeof(r.id), "%s", spec->id);
	snprintf(r.image, sizeof(r.image), "%s", spec->image != NULL &&
	    spec->image[0] != '\0' ? spec->image : rl->c.default_image);
	if (resolve_image(rl, r.image, r.image_dir, sizeof(r.image_dir), err,
	    errlen) == -1)
		return -1;
	if (sdir_path(rl, r.id, NULL, sdir, sizeof(sdir)) == -1 ||
	    strlen(sdir) + sizeof("/agent/agent.sock") > 108) {
		snprintf(err, errlen, "state_dir too long for the agent socket "
		    "path");
		return -1;
	}
	r.created_ms = util_unix_ms();
	r.run_as_root = spec->run_as_root;
	r.writable_root = spec->writable_root;
	r.lim.mem_bytes = spec->mem_bytes > 0 ? spec->mem_bytes :
	    rl->c.mem_bytes;
	r.lim.cpu_millis = spec->cpu_millis > 0 ? spec->cpu_millis :
	    rl->c.cpu_millis;
	r.lim.pids_max = spec->pids_max > 0 ? spec->pids_max : rl->c.pids_max;
	r.disk_bytes = spec->disk_bytes > 0 ? spec->disk_bytes :
	    rl->c.disk_bytes;
	if (r.lim.mem_bytes < (8LL << 20) || r.lim.pids_max < 8 ||
	    r.lim.cpu_millis < 10 || (r.disk_bytes > 0 &&
	    r.disk_bytes < RL_DISK_MIN) || r.disk_bytes > (1LL << 44)) {
		snprintf(err, errlen, "limits too small (memory >= 8MiB, "
		    "pids >= 8, cpu >= 10 millis, disk 0 or 16MiB..16TiB)");
		return -1;
	}
	r.labels = cJSON_CreateObject();
	for (i = 0; i < spec->nlabels; i++) {
		if (spec->labels[i].k == NULL || spec->labels[i].v == NULL)
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(r.labels,
		    spec->labels[i].k);
		cJSON_AddStringToObject(r.labels, spec->labels[i].k,
		    spec->labels[i].v);
	}
	r.env = cJSON_CreateObject();
	for (i = 0; i < spec->nenv; i++)
		cJSON_AddStringToObject(r.env, spec->env[i].k, spec->env[i].v);
	snprintf(r.phase, sizeof(r.phase), "creating");
	step(&stp, "check");

	/* the directory and the uid, under the global allocation lock */
	pthread_mutex_lock(&rl->mu);
	snprintf(p, sizeof(p), "%s/.lock", rl->state_dir);
	gfd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (gfd == -1 || flock(gfd, LOCK_EX) == -1) {
		snprintf(err, errlen, "lock %s: %s", p, strerror(errno));
		goto unlock;
	}
	if (mkdir(sdir, 0711) == -1) {
		snprintf(err, errlen, errno == EEXIST ? "sandbox %s already "
		    "exists" : "mkdir %s: %s", errno == EEXIST ? r.id : sdir,
		    strerror(errno));
		goto unlock;
	}
	made = 1;
	if ((lfd = id_lock(rl, r.id, 0)) == -1) {
		snprintf(err, errlen, "lock %s: %s", r.id, strerror(errno));
		goto unlock;
	}
	if (alloc_uid(rl, &r.uid, err, errlen) == -1)
		goto unlock;
	r.uid_range = rl->c.uid_range;
	snprintf(e, sizeof(e), "%lld\n", r.uid);
	if (sdir_path(rl, r.id, "uid", p, sizeof(p)) == -1 ||
	    util_write_file_replace(p, e, strlen(e), 0600, err, errlen) == -1 ||
	    rec_save(rl, &r, 0, err, errlen) == -1)
		goto unlock;
	rc = 0;
unlock:
	if (gfd != -1)
		close(gfd);
	pthread_mutex_unlock(&rl->mu);
	if (rc == -1)
		goto fail;
	rc = -1;
	step(&stp, "alloc");

	uid = (uid_t)r.uid;
#define SUB(name, mode, u) do {						\
	if (sdir_path(rl, r.id, name, p, sizeof(p)) == -1 ||		\
	    mkdir_owned(p, mode, u, u, err, errlen) == -1)		\
		goto fail;						\
} while (0)
	SUB("upper", 0755, uid);
	SUB("work", 0700, 0);
	SUB("lower", 0755, 0);
	SUB("root", 0755, 0);
	/* the agent's user owns /workspace and /run/agent: inside uid 0 or
	 * RL_INNER_UID (host uid + that, in a range; the same uid in the
	 * one-uid mapping of older records) */
	if (!r.run_as_root && r.uid_range > RL_INNER_UID)
		uid += RL_INNER_UID;
	SUB("workspace", 0755, uid);
	/* 0711: bwrap, as the sandbox's uid 0, must reach it to bind it */
	SUB("agent", uid == (uid_t)r.uid ? 0700 : 0711, uid);
	SUB("agent/state", 0700, uid);
#undef SUB
	if (r.disk_bytes > 0 && make_disk(rl, &r, uid, err, errlen) == -1)
		goto fail;
	step(&stp, "dirs");
	if (do_start(rl, &r, NULL, 0, &stp, err, errlen) == -1)
		goto fail;
	snprintf(r.phase, sizeof(r.phase), "running");
	if (rec_save(rl, &r, 0, err, errlen) == -1)
		goto fail;
	step(&stp, "record");
	steps_log(&stp, r.id, "create");
	if (out != NULL)
		rl_fill_info(rl, r.id, out);
	if (out != NULL && out->state == RT_CREATING)
		out->state = RT_RUNNING;	/* we still hold the lock */
	rc = 0;
	log_info("sandbox=%s created image=%s uid=%lld", r.id, r.image, r.uid);
fail:
	if (rc == -1 && made) {
		char e2[256];

		log_warnx("sandbox=%s create failed: %s", r.id, err);
		id_unlock(lfd);
		lfd = -1;
		(void)rl_destroy(rt, r.id, e2, sizeof(e2));
	}
	id_unlock(lfd);
	rec_clear(&r);
	return rc;
}

static int
rl_start(struct runtime *rt, const char *id, char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	struct rec r;
	struct pidrec pr;
	struct steps stp;
	int lfd, rc = -1;

	if ((lfd = rec_open(rl, id, &r, err, errlen)) == -1)
		return -1;
	if (pid_load(rl, id, &pr) == 0 && pid_alive(&pr)) {
		rc = 0;		/* already running */
		goto out;
	}
	do_stop(rl, id);	/* leftovers of a crash */
	snprintf(r.phase, sizeof(r.phase), "running");
	r.reason[0] = '\0';
	steps_init(&stp);
	if (do_start(rl, &r, NULL, 0, &stp, err, errlen) == -1) {
		do_stop(rl, id);
		snprintf(r.phase, sizeof(r.phase), "stopped");
		(void)rec_save(rl, &r, 1, err + strlen(err), 0);
		goto out;
	}
	if (rec_save(rl, &r, 0, err, errlen) == -1)
		goto out;
	step(&stp, "record");
	steps_log(&stp, id, "start");
	rc = 0;
out:
	rec_close(&r, lfd);
	return rc;
}

static int
rl_stop(struct runtime *rt, const char *id, char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	struct rec r;
	int lfd, rc = -1;

	if ((lfd = rec_open(rl, id, &r, err, errlen)) == -1)
		return -1;
	do_stop(rl, id);
	snprintf(r.phase, sizeof(r.phase), "stopped");
	r.reason[0] = '\0';
	if (rec_save(rl, &r, 1, err, errlen) == 0) {
		rc = 0;
		log_info("sandbox=%s stopped", id);
	}
	rec_close(&r, lfd);
	return rc;
}

static int
rl_destroy(struct runtime *rt, const char *id, char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	char sdir[RL_PATH_MAX], gone[RL_PATH_MAX + 64];
	int lfd;

	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "invalid sandbox id");
		return -1;
	}
	if (sdir_path(rl, id, NULL, sdir, sizeof(sdir)) == -1)
		return 0;
	if (access(sdir, F_OK) == -1)
		return 0;
	if ((lfd = id_lock(rl, id, 0)) == -1) {
		if (access(sdir, F_OK) == -1)
			return 0;
		snprintf(err, errlen, "lock %s: %s", id, strerror(errno));
		return -1;
	}
	do_stop(rl, id);
	/* rename first: a crash mid-removal leaves no half sandbox listed */
	snprintf(gone, sizeof(gone), "%s/.gone-%s-%ld", rl->state_dir, id,
	    (long)getpid());
	if (rename(sdir, gone) == -1) {
		snprintf(err, errlen, "rename %s: %s", sdir, strerror(errno));
		id_unlock(lfd);
		return -1;
	}
	id_unlock(lfd);
	if (rl_rmtree(gone, err, errlen) == -1)
		return -1;
	log_info("sandbox=%s destroyed", id);
	return 0;
}

static void
labels_to_info(const cJSON *labels, struct rt_info *out)
{
	const cJSON *it;
	size_t n = 0;

	out->labels = NULL;
	out->nlabels = 0;
	cJSON_ArrayForEach(it, labels)
		if (cJSON_IsString(it))
			n++;
	if (n == 0)
		return;
	out->labels = xcalloc(n, sizeof(*out->labels));
	cJSON_ArrayForEach(it, labels) {
		if (!cJSON_IsString(it) || out->nlabels >= n)
			continue;
		out->labels[out->nlabels].k = xstrdup(it->string);
		out->labels[out->nlabels].v = xstrdup(it->valuestring);
		out->nlabels++;
	}
}

/* Rebuilds one sandbox's info from its state directory and processes. */
static void
rl_fill_info(struct rl *rl, const char *id, struct rt_info *out)
{
	struct rec r;
	struct pidrec pr;
	char e[256];
	int busy = 0, lfd, alive;
	long long oom;

	memset(out, 0, sizeof(*out));
	snprintf(out->id, sizeof(out->id), "%s", id);
	if ((lfd = id_lock(rl, id, 1)) == -1)
		busy = errno == EWOULDBLOCK;
	id_unlock(lfd);
	if (rec_load(rl, id, &r, e, sizeof(e)) == -1) {
		out->state = busy ? RT_CREATING : RT_FAILED;
		snprintf(out->reason, sizeof(out->reason), "%s", busy ?
		    "" : "incomplete state (interrupted create): destroy it");
		return;
	}
	snprintf(out->image, sizeof(out->image), "%s", r.image);
	out->created_ms = r.created_ms;
	labels_to_info(r.labels, out);
	alive = pid_load(rl, id, &pr) == 0 && pid_alive(&pr);
	if (alive)
		out->started_ms = pr.started_ms;
	if (strcmp(r.phase, "creating") == 0) {
		out->state = busy ? RT_CREATING : RT_FAILED;
		if (!busy)
			snprintf(out->reason, sizeof(out->reason),
			    "create interrupted: destroy it");
	} else if (strcmp(r.phase, "running") == 0) {
		if (alive)
			out->state = RT_RUNNING;
		else if (busy)
			out->state = RT_CREATING;
		else {
			out->state = RT_FAILED;
			oom = rl_cg_oom_kills(&rl->cg, id);
			snprintf(out->reason, sizeof(out->reason), "%s",
			    oom > 0 ? "oom" : "exited");
		}
	} else if (strcmp(r.phase, "stopped") == 0) {
		out->state = RT_STOPPED;
		out->started_ms = 0;
	} else {
		out->state = RT_FAILED;
		snprintf(out->reason, sizeof(out->reason), "%s",
		    r.reason[0] ? r.reason : "failed");
	}
	rec_clear(&r);
}

static int
rl_get(struct runtime *rt, const char *id, struct rt_info *out, char *err,
    size_t errlen)
{
	struct rl *rl = rt->impl;
	char sdir[RL_PATH_MAX];

	if (!id_sandbox_valid(id) || sdir_path(rl, id, NULL, sdir,
	    sizeof(sdir)) == -1 || access(sdir, F_OK) == -1) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	rl_fill_info(rl, id, out);
	return 0;
}

static int
id_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rt_info *)a)->id,
	    ((const struct rt_info *)b)->id);
}

struct infos {
	struct rl	*rl;
	struct rt_info	*a;
	size_t		 n, cap;
};

static void
add_info(const char *id, void *arg)
{
	struct infos *l = arg;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->a = xreallocarray(l->a, l->cap, sizeof(*l->a));
	}
	rl_fill_info(l->rl, id, &l->a[l->n++]);
}

static int
rl_list(struct runtime *rt, struct rt_info **out, size_t *n, char *err,
    size_t errlen)
{
	struct infos l = { rt->impl, NULL, 0, 0 };

	*out = NULL;
	*n = 0;
	if (each_id(l.rl, add_info, &l, err, errlen) == -1)
		return -1;
	if (l.n > 1)
		qsort(l.a, l.n, sizeof(*l.a), id_cmp);
	*out = l.a;
	*n = l.n;
	return 0;
}

static int
rl_set_labels(struct runtime *rt, const char *id, const struct rt_kv *kv,
    size_t nkv, char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	struct rec r;
	cJSON *labels;
	size_t i;
	int lfd, rc;

	if (nkv > RL_MAX_LABELS) {
		snprintf(err, errlen, "too many labels");
		return -1;
	}
	if ((lfd = rec_open(rl, id, &r, err, errlen)) == -1)
		return -1;
	labels = cJSON_CreateObject();
	for (i = 0; i < nkv; i++) {
		if (kv[i].k == NULL || kv[i].v == NULL)
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(labels, kv[i].k);
		cJSON_AddStringToObject(labels, kv[i].k, kv[i].v);
	}
	rc = 0;
	/* The same labels again: nothing to rewrite. */
	if (r.labels == NULL || !cJSON_Compare(r.labels, labels, 1)) {
		cJSON_Delete(r.labels);
		r.labels = labels;
		labels = NULL;
		rc = rec_save(rl, &r, 0, err, errlen);
	}
	cJSON_Delete(labels);
	rec_close(&r, lfd);
	return rc;
}

static int
rl_agent_addr(struct runtime *rt, const char *id, struct rt_agent_addr *out,
    char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	char sdir[RL_PATH_MAX];

	memset(out, 0, sizeof(*out));
	if (!id_sandbox_valid(id) || sdir_path(rl, id, NULL, sdir,
	    sizeof(sdir)) == -1 || access(sdir, F_OK) == -1) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	if (sdir_path(rl, id, "agent/agent.sock", out->unix_path,
	    sizeof(out->unix_path)) == -1) {
		snprintf(err, errlen, "agent socket path too long");
		return -1;
	}
	return 0;
}

/*
 * The identity is the labels: eg's labels are merged into the record (the
 * core passes the labels it has just set, so that is a no-op; sandboxctl
 * attach --org ... sets them here), then the sandbox registers again.
 */
static int
rl_attach_egress(struct runtime *rt, const char *id, const struct rt_egress *eg,
    char *env_out, size_t envlen, char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	struct rec r;
	struct pidrec pr;
	const cJSON *cur;
	size_t i;
	int lfd, changed = 0, rc = -1;

	if ((lfd = rec_open(rl, id, &r, err, errlen)) == -1)
		return -1;
	for (i = 0; i < eg->nlabels && i < RL_MAX_LABELS; i++) {
		if (eg->labels[i].k == NULL || eg->labels[i].v == NULL)
			continue;
		cur = cJSON_GetObjectItemCaseSensitive(r.labels, eg->labels[i].k);
		if (cJSON_IsString(cur) && strcmp(cur->valuestring,
		    eg->labels[i].v) == 0)
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(r.labels, eg->labels[i].k);
		cJSON_AddStringToObject(r.labels, eg->labels[i].k, eg->labels[i].v);
		changed = 1;
	}
	if (changed && rec_save(rl, &r, 0, err, errlen) == -1)
		goto out;
	if (pid_load(rl, id, &pr) == 0 && pid_alive(&pr) &&
	    rl_egress_register(rl, &r, (pid_t)pr.child_pid, err, errlen) == -1)
		goto out;
	if (env_out != NULL && envlen > 0 && rl_proxy_env(env_out, envlen) == -1) {
		snprintf(err, errlen, "env buffer too small");
		goto out;
	}
	rc = 0;
out:
	rec_close(&r, lfd);
	return rc;
}

static void
rl_free(struct runtime *rt)
{
	struct rl *rl;

	if (rt == NULL)
		return;
	rl = rt->impl;
	free(rl->c.state_dir);
	free(rl->c.images_dir);
	free(rl->c.default_image);
	free(rl->c.agent_bin);
	free(rl->c.bwrap);
	free(rl->c.proxy_admin_socket);
	free(rl->c.proxy_ca_cert);
	free(rl->c.cgroup_name);
	free(rl->c.cgroup_mode);
	free(rl->c.mkfs);
	pthread_mutex_destroy(&rl->mu);
	free(rl);
	free(rt);
}

static const struct runtime_ops rl_ops = {
	.name = "local",
	.create = rl_create,
	.start = rl_start,
	.stop = rl_stop,
	.destroy = rl_destroy,
	.list = rl_list,
	.get = rl_get,
	.set_labels = rl_set_labels,
	.agent_addr = rl_agent_addr,
	.attach_egress = rl_attach_egress,
	.free = rl_free,
};

static char *
dup_or(const char *s, const char *def)
{
	return xstrdup(s != NULL ? s : def);
}

static int
abs_dir(const char *in, char *out, size_t outlen, int create, char *err,
    size_t errlen)
{
	char rp[PATH_MAX];

	if (create && mkdir(in, 0711) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", in, strerror(errno));
		return -1;
	}
	if (realpath(in, rp) == NULL) {
		snprintf(err, errlen, "%s: %s", in, strerror(errno));
		return -1;
	}
	if (strlen(rp) >= outlen || strpbrk(rp, ",:") != NULL) {
		snprintf(err, errlen, "%s: path too long or holds ',' or ':'",
		    rp);
		return -1;
	}
	snprintf(out, outlen, "%s", rp);
	return 0;
}

/* A cgroup is kept while its sandbox's state directory exists. */
static int
cg_keep(const char *name, void *arg)
{
	struct rl *rl = arg;
	char p[RL_PATH_MAX];

	if (!id_sandbox_valid(name) || sdir_path(rl, name, NULL, p, sizeof(p)) == -1)
		return 1;
	return access(p, F_OK) == 0;
}

/* Finishes removals a crash interrupted (destroy renames first). */
static void
sweep_gone(struct rl *rl)
{
	char p[RL_PATH_MAX + 300], e[256];
	struct dirent *de;
	DIR *d;

	if ((d = opendir(rl->state_dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, ".gone-", 6) != 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", rl->state_dir, de->d_name);
		if (rl_rmtree(p, e, sizeof(e)) == -1)
			log_warnx("remove %s: %s", p, e);
	}
	closedir(d);
}

struct runtime *
runtime_local_new(const struct rt_local_conf *c, char *err, size_t errlen)
{
	struct runtime *rt;
	struct rl *rl;
	struct stat st;

	if (geteuid() != 0) {
		snprintf(err, errlen, "the local runtime needs root (it gives "
		    "each sandbox its own unprivileged uid)");
		return NULL;
	}
	rl = xcalloc(1, sizeof(*rl));
	rl->c = *c;
	rl->c.state_dir = dup_or(c->state_dir, "/var/lib/sandbox/state");
	rl->c.images_dir = dup_or(c->images_dir, "/var/lib/sandbox/images");
	rl->c.default_image = dup_or(c->default_image, "default");
	rl->c.agent_bin = dup_or(c->agent_bin, "build/agent/sandbox-agent");
	rl->c.bwrap = dup_or(c->bwrap, "/usr/bin/bwrap");
	rl->c.proxy_admin_socket = dup_or(c->proxy_admin_socket, "");
	rl->c.proxy_ca_cert = dup_or(c->proxy_ca_cert, "");
	rl->c.cgroup_name = dup_or(c->cgroup_name, "sandbox");
	rl->c.cgroup_mode = dup_or(c->cgroup_mode, "auto");
	rl->c.mkfs = dup_or(c->mkfs, "/usr/sbin/mke2fs");
	if (rl->c.mem_bytes <= 0)
		rl->c.mem_bytes = 2LL << 30;
	if (rl->c.cpu_millis <= 0)
		rl->c.cpu_millis = 2000;
	if (rl->c.pids_max <= 0)
		rl->c.pids_max = 1024;
	if (rl->c.tmp_bytes <= 0)
		rl->c.tmp_bytes = 512LL << 20;
	if (rl->c.uid_base <= 0)
		rl->c.uid_base = 2000000;
	if (rl->c.uid_count <= 0)
		rl->c.uid_count = 10000;
	if (rl->c.uid_range <= 0)
		rl->c.uid_range = 65536;
	if (rl->c.start_timeout_ms <= 0)
		rl->c.start_timeout_ms = 20000;
	pthread_mutex_init(&rl->mu, NULL);
	rt = xcalloc(1, sizeof(*rt));
	rt->ops = &rl_ops;
	rt->impl = rl;
	if (rl->c.uid_range > 65536 || rl->c.uid_base + rl->c.uid_count *
	    rl->c.uid_range > 4294967294LL) {
		snprintf(err, errlen, "uid_base + uid_count * uid_range out of "
		    "range");
		goto fail;
	}
	if (abs_dir(rl->c.state_dir, rl->state_dir, sizeof(rl->state_dir), 1,
	    err, errlen) == -1)
		goto fail;
	/* sandbox uids must reach their own directories below it */
	if (stat(rl->state_dir, &st) == -1 || st.st_uid != 0 ||
	    (st.st_mode & 0022) != 0) {
		snprintf(err, errlen, "state_dir %s must be owned by root and "
		    "not group/world writable", rl->state_dir);
		goto fail;
	}
	(void)chmod(rl->state_dir, 0711);
	if (mkdir(rl->c.images_dir, 0755) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", rl->c.images_dir,
		    strerror(errno));
		goto fail;
	}
	if (abs_dir(rl->c.images_dir, rl->images_dir, sizeof(rl->images_dir),
	    0, err, errlen) == -1)
		goto fail;
	if (realpath(rl->c.agent_bin, rl->agent_bin) == NULL ||
	    access(rl->agent_bin, X_OK) == -1) {
		snprintf(err, errlen, "agent_bin %s: %s (build it: make "
		    "build/agent/sandbox-agent)", rl->c.agent_bin,
		    strerror(errno));
		goto fail;
	}
	if (strpbrk(rl->agent_bin, ",:") != NULL) {
		snprintf(err, errlen, "agent_bin path holds ',' or ':'");
		goto fail;
	}
	if (access(rl->c.bwrap, X_OK) == -1) {
		snprintf(err, errlen, "bwrap %s: %s (apt-get install "
		    "bubblewrap)", rl->c.bwrap, strerror(errno));
		goto fail;
	}
	if (rl_cg_detect(rl->c.cgroup_mode, rl->c.cgroup_name, &rl->cg, err,
	    errlen) == -1)
		goto fail;
	sweep_gone(rl);
	rl_cg_sweep(&rl->cg, cg_keep, rl);
	return rt;
fail:
	rl_free(rt);
	return NULL;
}

