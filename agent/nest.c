/*
 * nest.c: the sandbox below the agent (nest.h; docs/local-runtime.md,
 * "Root inside a sandbox").
 *
 * The local runtime starts the agent (bwrap) in the sandbox's user
 * namespace N2, pid namespace P1 and mount namespace M2. nest_init makes
 * one level more: N3 (a child of N2 with N2's ids, so every file keeps its
 * owner), P2 (a child of P1) and M3 (a copy of M2), with the sandbox's init
 * as pid 1 of P2. Everything the sandbox runs enters them (nest_fork), so:
 * - it cannot name the agent, the job wrappers or bwrap: they are in P1,
 *   not in P2, and P2's /proc is its own;
 * - root's capabilities are N3's: they act on what N3 owns (its processes,
 *   M3's mounts, files of its ids), never on the agent, whose user
 *   namespace is N2; the agent and init are not dumpable, so ptrace and
 *   pidfd_getfd need CAP_SYS_PTRACE in N2, which nothing below has;
 * - M3 has a fresh /run: the agent's socket and state under /run/agent
 *   are not there.
 * N1's limit of two user namespaces (the runtime's spawn.c) is used up by
 * N2 and N3, so nothing in the sandbox can make another.
 *
 * A new proc is mounted only where a proc is fully visible (no locked
 * mount over a non-empty directory of it); bwrap's /proc has read-only
 * binds over /proc/sys and others, locked in the copy M3, so the agent
 * first mounts a plain proc at NEST_PROC_DIR, which M3 inherits, hidden
 * under its /run.
 *
 * Rules: nest_init runs once, before the shell or a job; what runs in the
 * children between fork and exec is system calls only.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <unistd.h>

#include "attrib.h"
#include "log.h"
#include "nest.h"
#include "proc.h"
#include "util.h"

/* Made by bwrap (--dir), in M2's /run, which M3 covers. */
#define NEST_PROC_DIR	"/run/nest/proc"

static struct {
	int		 on;
	uint64_t	 caps;		/* what root keeps in the sandbox */
	uid_t		 uid;		/* the sandbox's user: the agent's */
	gid_t		 gid;
	pid_t		 init;		/* pid 1 of P2, our numbering */
	int		 nsfd[3];	/* init's user, pid and mount namespaces */
	int		 lifeline;	/* init reads EOF when we are gone */
} nest = { 0, 0, 0, 0, -1, { -1, -1, -1 }, -1 };

/* setns(2) order: the user namespace first, for the rights to the rest */
static const struct {
	const char	*name;
	int		 type;
} ns_kinds[3] = {
	{ "user", CLONE_NEWUSER }, { "pid", CLONE_NEWPID }, { "mnt", CLONE_NEWNS },
};

int
nest_on(void)
{
	return nest.on;
}

pid_t
nest_init_pid(void)
{
	return nest.init;
}

static int
capset_all(uint64_t eff, uint64_t prm, uint64_t inh)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	d[0].effective = (uint32_t)eff;
	d[1].effective = (uint32_t)(eff >> 32);
	d[0].permitted = (uint32_t)prm;
	d[1].permitted = (uint32_t)(prm >> 32);
	d[0].inheritable = (uint32_t)inh;
	d[1].inheritable = (uint32_t)(inh >> 32);
	return (int)syscall(SYS_capset, &h, d);
}

/* Writes s to path (a /proc file that takes one write). */
static int
write_proc(const char *path, const char *s)
{
	size_t len = strlen(s);
	int fd, rc = 0;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	if (write(fd, s, len) != (ssize_t)len)
		rc = -1;
	close(fd);
	return rc;
}

/*
 * N3's maps: N2's inside ids, each to itself ("0 0 65536" for the usual
 * map), so an id means the same file owner on both levels.
 */
static int
write_maps(pid_t pid, char *err, size_t errlen)
{
	static const char *const kinds[] = { "uid_map", "gid_map" };
	char path[64], in[512], out[512];
	unsigned long a, b, n;
	size_t i, off;
	const char *p;
	int fd, k;
	ssize_t len;

	for (k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "/proc/self/%s", kinds[k]);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
		    (len = read(fd, in, sizeof(in) - 1)) <= 0) {
			if (fd != -1)
				close(fd);
			snprintf(err, errlen, "read %s: %s", path, strerror(errno));
			return -1;
		}
		close(fd);
		in[len] = '\0';
		off = 0;
		for (p = in, i = 0; *p != '\0' && i < 5; i++) {
			if (sscanf(p, "%lu %lu %lu", &a, &b, &n) != 3)
				break;
			off += (size_t)snprintf(out + off, sizeof(out) - off,
			    "%lu %lu %lu\n", a, a, n);
			if ((p = strchr(p, '\n')) == NULL)
				break;
			p++;
		}
		(void)b;
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, kinds[k]);
		if (off == 0 || write_proc(path, out) == -1) {
			snprintf(err, errlen, "write %s: %s", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Read-only binds over the parts of /proc that reach the kernel's
 * settings (as bwrap does for its own /proc). */
static const char *const proc_ro[] = {
	"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus",
};

/*
 * Sends init's namespaces to the agent with "r": the agent cannot open
 * /proc/INIT/ns/ (init is not dumpable, as it must not be: that open, and
 * setns(2) on a pidfd, need ptrace rights over init).
 */
static int
send_ns(int ctl)
{
	union {
		struct cmsghdr	 h;
		char		 b[CMSG_SPACE(sizeof(int) * 3)];
	} u;
	struct msghdr m;
	struct iovec io = { (void *)"r", 1 };
	char path[32];
	int fds[3], i;

	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "/proc/self/ns/%s", ns_kinds[i].name);
		if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			return -1;
	}
	memset(&m, 0, sizeof(m));
	memset(&u, 0, sizeof(u));
	m.msg_iov = &io;
	m.msg_iovlen = 1;
	m.msg_control = u.b;
	m.msg_controllen = sizeof(u.b);
	u.h.cmsg_level = SOL_SOCKET;
	u.h.cmsg_type = SCM_RIGHTS;
	u.h.cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(&u.h), fds, sizeof(fds));
	return sendmsg(ctl, &m, 0) == 1 ? 0 : -1;
}

/* Receives send_ns's "r" and descriptors into nest.nsfd, within 10 s. */
static int
recv_ns(int ctl)
{
	union {
		struct cmsghdr	 h;
		char		 b[CMSG_SPACE(sizeof(int) * 3)];
	} u;
	struct pollfd pf = { ctl, POLLIN, 0 };
	struct msghdr m;
	struct cmsghdr *h;
	char c = 0;
	struct iovec io = { &c, 1 };

	memset(&m, 0, sizeof(m));
	m.msg_iov = &io;
	m.msg_iovlen = 1;
	m.msg_control = u.b;
	m.msg_controllen = sizeof(u.b);
	if (poll(&pf, 1, 10000) != 1 ||
	    recvmsg(ctl, &m, MSG_CMSG_CLOEXEC) != 1 || c != 'r' ||
	    (h = CMSG_FIRSTHDR(&m)) == NULL || h->cmsg_level != SOL_SOCKET ||
	    h->cmsg_type != SCM_RIGHTS || h->cmsg_len != CMSG_LEN(sizeof(int) * 3))
		return -1;
	memcpy(nest.nsfd, CMSG_DATA(h), sizeof(nest.nsfd));
	return 0;
}

/* The sandbox's init, pid 1 of P2, in M3: its mounts, then reaping. */
static NORETURN void
init_main(int ctl, int lifeline, long long run_bytes)
{
	char opts[64];
	struct pollfd pf[2];
	sigset_t chld;
	size_t i;
	int sfd, nfd;

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	    NULL) == -1)
		_exit(120);
	for (i = 0; i < NELEM(proc_ro); i++) {
		if (access(proc_ro[i], F_OK) == -1)
			continue;
		if (mount(proc_ro[i], proc_ro[i], NULL, MS_BIND | MS_REC,
		    NULL) == -1 || mount(NULL, proc_ro[i], NULL, MS_REMOUNT |
		    MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		    NULL) == -1)
			_exit(121);
	}
	snprintf(opts, sizeof(opts), "mode=0755,size=%lld", run_bytes);
	if (mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, opts) == -1)
		_exit(122);
	if (chdir("/") == -1)
		_exit(123);
	(void)prctl(PR_SET_NAME, "init", 0, 0, 0);
	if (send_ns(ctl) == -1 || capset_all(0, 0, 0) == -1)
		_exit(125);
	/* nothing of the agent's stays open here but the lifeline; not its
	 * log either (stdio: the sandbox's /dev/null, not the host's file) */
	proc_closefrom(3, lifeline);
	if ((nfd = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1 ||
	    dup2(nfd, 0) == -1 || dup2(nfd, 1) == -1 || dup2(nfd, 2) == -1)
		_exit(127);
	if (nfd > 2)
		close(nfd);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, NULL) == -1 ||
	    (sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC)) == -1)
		_exit(124);
	pf[0].fd = sfd;
	pf[0].events = POLLIN;
	pf[1].fd = lifeline;
	pf[1].events = POLLIN;
	for (;;) {
		struct signalfd_siginfo si;

		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (poll(pf, 2, -1) == -1 && errno != EINTR)
			_exit(126);
		if (pf[1].revents != 0)
			_exit(0);	/* the agent is gone: so is the sandbox */
		while (read(sfd, &si, sizeof(si)) > 0)
			;
	}
}

/* A byte from fd within 10 s, or 0. */
static char
get_byte(int fd)
{
	struct pollfd pf = { fd, POLLIN, 0 };
	char c;
	int r;

	while ((r = poll(&pf, 1, 10000)) == -1 && errno == EINTR)
		;
	if (r != 1 || read(fd, &c, 1) != 1)
		return 0;
	return c;
}

/* What C0 says on its own pipe (init's "r" on the socket may come first). */
struct c0_msg {
	int	step;	/* 0: pid is init's; else what failed (c0_steps) */
	int	err;	/* its errno */
	pid_t	pid;
};

static const char *const c0_steps[] = {
	"ok", "unshare of the user and mount namespaces", "sync",
	"unshare of the pid namespace", "fork of init",
};

/*
 * C0, a fork of ours: unshares N3 and M3, waits for us to write N3's
 * maps, unshares P2 and forks init into it, tells us init's pid, exits.
 */
static NORETURN void
c0_main(int ctl, int rep, int life, long long run_bytes)
{
	struct c0_msg m = { 0, 0, -1 };
	char c;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) == -1)
		m.step = 1;
	else if (write(ctl, "u", 1) != 1 || read(ctl, &c, 1) != 1 || c != 'm')
		m.step = 2;
	else if (unshare(CLONE_NEWPID) == -1)
		m.step = 3;
	else if ((m.pid = fork()) == -1)
		m.step = 4;
	else if (m.pid == 0) {
		close(rep);
		init_main(ctl, life, run_bytes);
	}
	m.err = errno;
	ign((int)write(rep, &m, sizeof(m)));
	_exit(0);
}

/* Drops every capability of ours (after nest_init's setup). */
static int
drop_own_caps(void)
{
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1 &&
	    errno != EINVAL)
		return -1;
	return capset_all(0, 0, 0);
}

/* With NET_BIND_SERVICE, ports below 1024 are for any id in the sandbox's
 * network namespace: N3's capability does not reach N2's namespace. */
static void
low_ports(void)
{
	if ((nest.caps & (1ULL << CAP_NET_BIND_SERVICE)) &&
	    write_proc(NEST_PROC_DIR "/sys/net/ipv4/ip_unprivileged_port_start",
	    "0") == -1)
		log_warn("nest: ip_unprivileged_port_start");
}

/* What init's exit status says (init_main's _exit codes). */
static void
init_failed(pid_t pid, char *err, size_t errlen)
{
	static const char *const what[] = {
		"mount of the sandbox's /proc", "read-only binds over /proc",
		"tmpfs on /run", "chdir /", "signalfd", "sending its namespaces",
	};
	int st = 0, i;

	for (i = 0; i < 100; i++) {	/* it exits at once when it fails */
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		usleep(1000);
	}
	if (i < 100 && WIFEXITED(st) && WEXITSTATUS(st) >= 120 &&
	    WEXITSTATUS(st) < 120 + (int)NELEM(what))
		snprintf(err, errlen, "the sandbox's init failed: %s",
		    what[WEXITSTATUS(st) - 120]);
	else
		snprintf(err, errlen, "the sandbox's init did not start");
}

/* Starts C0 and through it init; fills nest.init. */
static int
start_init(long long run_bytes, char *err, size_t errlen)
{
	int ctl[2] = { -1, -1 }, life[2] = { -1, -1 }, rep[2] = { -1, -1 };
	int rc = -1, st;
	struct c0_msg m = { -1, 0, -1 };
	pid_t c0 = -1;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) == -1 ||
	    pipe2(life, O_CLOEXEC) == -1 || pipe2(rep, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		goto out;
	}
	if ((c0 = fork()) == -1) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto out;
	}
	if (c0 == 0) {
		close(ctl[0]);
		close(life[1]);
		close(rep[0]);
		c0_main(ctl[1], rep[1], life[0], run_bytes);
	}
	close(ctl[1]);
	ctl[1] = -1;
	close(rep[1]);
	rep[1] = -1;
	close(life[0]);
	life[0] = -1;
	if (get_byte(ctl[0]) == 'u' && write_maps(c0, err, errlen) == -1)
		goto out;
	ign((int)write(ctl[0], "m", 1));
	if (read(rep[0], &m, sizeof(m)) != (ssize_t)sizeof(m) || m.step != 0) {
		snprintf(err, errlen, "%s: %s", m.step > 0 &&
		    (size_t)m.step < NELEM(c0_steps) ? c0_steps[m.step] :
		    "C0 did not answer", m.step > 0 ? strerror(m.err) : "");
		goto out;
	}
	if (recv_ns(ctl[0]) == -1) {
		init_failed(m.pid, err, errlen);
		goto out;
	}
	rc = 0;
out:
	/* closed first: a C0 that waits for us gives up */
	if (ctl[0] != -1)
		close(ctl[0]);
	if (ctl[1] != -1)
		close(ctl[1]);
	if (rep[0] != -1)
		close(rep[0]);
	if (rep[1] != -1)
		close(rep[1]);
	if (c0 > 0)
		while (waitpid(c0, &st, 0) == -1 && errno == EINTR)
			;
	if (life[0] != -1)
		close(life[0]);
	if (rc == 0) {
		nest.init = m.pid;
		nest.lifeline = life[1];
	} else if (life[1] != -1)
		close(life[1]);
	return rc;
}

int
nest_init(uint64_t caps, long long run_bytes, char *err, size_t errlen)
{
	nest.caps = caps;
	nest.uid = geteuid();
	nest.gid = getegid();
	if (mount("proc", NEST_PROC_DIR, "proc", MS_NOSUID | MS_NODEV |
	    MS_NOEXEC, NULL) == -1) {
		snprintf(err, errlen, "mount proc on %s: %s", NEST_PROC_DIR,
		    strerror(errno));
		return -1;
	}
	low_ports();
	/* until N3's maps are written C0 stays dumpable: a sandbox user
	 * that is not root opens C0's uid_map only as its owner */
	if (start_init(run_bytes, err, errlen) == -1)
		return -1;
	/* no ptrace, /proc/PID/mem or pidfd_getfd of ours or of our forks
	 * without CAP_SYS_PTRACE here, which the sandbox never has */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1) {
		snprintf(err, errlen, "PR_SET_DUMPABLE: %s", strerror(errno));
		return -1;
	}
	if (drop_own_caps() == -1) {
		snprintf(err, errlen, "dropping the agent's capabilities: %s",
		    strerror(errno));
		return -1;
	}
	nest.on = 1;
	log_info("nest: sandbox init pid=%d caps=0x%llx", (int)nest.init,
	    (unsigned long long)caps);
	return 0;
}

void
nest_closefrom(int lowfd)
{
	int keep[3], i, j, t, from = lowfd;

	memcpy(keep, nest.nsfd, sizeof(keep));
	for (i = 0; i < 3; i++)
		for (j = i + 1; j < 3; j++)
			if (keep[j] < keep[i]) {
				t = keep[i];
				keep[i] = keep[j];
				keep[j] = t;
			}
	for (i = 0; i < 3; i++) {
		if (keep[i] < from)
			continue;
		if (keep[i] > from)
			ign((int)syscall(SYS_close_range, (unsigned)from,
			    (unsigned)keep[i] - 1, 0));
		from = keep[i] + 1;
	}
	ign((int)syscall(SYS_close_range, (unsigned)from, ~0U, 0));
}

/*
 * fork(2), or with cgfd >= 0 clone3(CLONE_INTO_CGROUP): the child starts
 * in that cgroup (agent/cgroup.c), before it can run or fork anything.
 * The raw system call leaves glibc's cached thread id the parent's in the
 * child: it makes system calls, forks (glibc's fork sets the next child's)
 * and execs, nothing that signals "itself" through pthread (raise, abort).
 */
static pid_t
fork_into(int cgfd)
{
	struct clone_args a;

	if (cgfd < 0)
		return fork();
	memset(&a, 0, sizeof(a));
	a.flags = CLONE_INTO_CGROUP;
	a.exit_signal = SIGCHLD;
	a.cgroup = (uint64_t)cgfd;
	return (pid_t)syscall(SYS_clone3, &a, sizeof(a));
}

pid_t
nest_fork(void)
{
	return nest_fork_into(-1);
}

pid_t
nest_fork_into(int cgfd)
{
	int p[2], st;
	pid_t c1, c2 = -1;
	ssize_t n;

	if (!nest.on)
		return fork_into(cgfd);
	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	if ((c1 = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (c1 == 0) {
		close(p[0]);
		/* N3 first: its owner (us) has every capability in it, and
		 * those let us join P2 and M3; the fds are closed at exec */
		if (setns(nest.nsfd[0], ns_kinds[0].type) == -1 ||
		    setns(nest.nsfd[1], ns_kinds[1].type) == -1 ||
		    setns(nest.nsfd[2], ns_kinds[2].type) == -1 ||
		    (c2 = fork_into(cgfd)) == -1) {
			c2 = -errno;	/* the parent's errno */
			ign((int)write(p[1], &c2, sizeof(c2)));
			_exit(1);
		}
		if (c2 == 0) {
			close(p[1]);
			return 0;
		}
		ign((int)write(p[1], &c2, sizeof(c2)));
		_exit(0);
	}
	close(p[1]);
	do
		n = read(p[0], &c2, sizeof(c2));
	while (n == -1 && errno == EINTR);
	close(p[0]);
	while (waitpid(c1, &st, 0) == -1 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(c2) || c2 <= 0) {
		errno = n == (ssize_t)sizeof(c2) && c2 < 0 ? -c2 : EAGAIN;
		return -1;
	}
	return c2;
}

void
nest_child_drop(void)
{
	int cap;

	if (!nest.on)
		return;
	/* with every capability of N3 still ours: the bounding set first
	 * (CAP_SETPCAP), then the ids, then what root keeps */
	for (cap = 0; cap < 64; cap++) {
		if (nest.uid == 0 && (nest.caps & (1ULL << cap)))
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 && errno == EINVAL)
			break;
	}
	if (setgroups(0, NULL) == -1 || setresgid(nest.gid, nest.gid,
	    nest.gid) == -1 || setresuid(nest.uid, nest.uid, nest.uid) == -1)
		_exit(126);
	if (nest.uid == 0 && capset_all(nest.caps, nest.caps, 0) == -1)
		_exit(126);
	if (nest.uid != 0 && capset_all(0, 0, 0) == -1)
		_exit(126);
}

int
nest_join_view(void)
{
	if (!nest.on) {
		errno = EINVAL;
		return -1;
	}
	/* N3 first, for the rights to M3; P2 is left alone: the caller stays
	 * where sandbox code cannot name it */
	if (setns(nest.nsfd[0], ns_kinds[0].type) == -1 ||
	    setns(nest.nsfd[2], ns_kinds[2].type) == -1)
		return -1;
	return 0;
}
