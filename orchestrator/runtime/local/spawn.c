/*
 * runtime/local/spawn.c: a sandbox's processes (docs/local-runtime.md,
 * "What a sandbox is", steps 2-4). rl_spawn makes its two user
 * namespaces, attaches its disk image to a loop device, and starts it
 * detached from us (a new session, adopted by init): the child joins the
 * cgroups, makes a private mount namespace with the idmapped image and
 * the overlay, drops to the sandbox's host uid and execs bwrap, which
 * reports the sandbox's pid 1 on its --info-fd.
 *
 * Rules (the reasons are beside RL_STACK and setid_mu below):
 * - Every child is a clone(CLONE_VM) of us: it makes only system calls
 *   (set*id through syscall()), never allocates or takes a lock, and
 *   reports through the memory it shares with us.
 * - The children that change ids run one at a time (setid_mu), and we
 *   set our dumpable flag back after each.
 * - Calls proc.c only; the caller prepares every path and the argv.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/loop.h>
#include <linux/openat2.h>
#include <unistd.h>

#include "local_int.h"
#include "util.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define STACK_CLEAN(p)	__asan_unpoison_memory_region((p), RL_STACK)
#else
#define STACK_CLEAN(p)	((void)(p))
#endif

/*
 * Processes are made with clone(CLONE_VM): no page tables are copied (a
 * fork of the orchestrator costs 5-20 ms on the build machines, most of the
 * create path before this). A CLONE_VM child shares our memory and our
 * thread's TLS, so it makes only raw system calls (set*id through
 * syscall(): glibc's wrappers would signal our threads), never allocates,
 * and reports through the memory it shares with us. All signals are
 * blocked around clone so that no handler runs on a child's stack.
 */
#define RL_STACK	((size_t)64 * 1024)

/*
 * A set*id in any CLONE_VM child clears the dumpable flag of the memory it
 * shares with us (and so with every other such child), which hands the
 * /proc files of processes using it to root. H1 needs H2's uid_map to
 * stay its own between its set*id and its write: the children that change
 * ids (H1, and the sandbox before its exec) run one at a time per process.
 */
static pthread_mutex_t setid_mu = PTHREAD_MUTEX_INITIALIZER;

/*
 * Under ASan a child's frames leave their redzones poisoned when it ends in
 * _exit or exec, and a new mapping may land where an old stack's shadow is
 * still poisoned: both ends clear the shadow (STACK_CLEAN), or a child's
 * first write is reported as an overflow.
 */
static void *
stack_new(void)
{
	void *p = mmap(NULL, RL_STACK, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	STACK_CLEAN(p);
	return p;
}

static void
stack_free(void *p)
{
	if (p != NULL) {
		STACK_CLEAN(p);
		munmap(p, RL_STACK);
	}
}

static pid_t
clone_vm(int (*fn)(void *), void *stack, int flags, void *arg)
{
	sigset_t all, old;
	pid_t pid;
	int e;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = clone(fn, (char *)stack + RL_STACK, CLONE_VM | flags | SIGCHLD,
	    arg);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return pid;
}

static void
reap(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, __WALL) == -1 && errno == EINTR)
		;
}

/*
 * The sandbox's user namespaces. N1, owned by the sandbox's host uid U,
 * maps ids 0..R-1 to U..U+R-1 (R = uid_range): the idmapped mount of the
 * image uses it, so an image file owned by uid k belongs to U+k. Its
 * max_user_namespaces is 2, taken by N2, a child of N1 with the identity
 * map 0..R-1, and N3, the agent's child of N2 where the sandbox's
 * commands run (agent/nest.c): bwrap joins N2 (--userns), so processes
 * inside see every id of their range, and once N3 exists no process in
 * N2 or N3 can make a user namespace (N1's limit, charged for every user
 * namespace below N1, is out of their reach). Made by
 * two short-lived CLONE_VM helpers: H1 (euid U, unshares N1; after we wrote
 * N1's maps it sets the limit and clones H2 into N2 and writes N2's maps,
 * which only a process in N1 may do). Talks over pipes with bytes.
 */
struct upair {
	uid_t		 uid;
	gid_t		 gid;
	char		 map[32];	/* "0 0 R\n", N2's maps */
	int		 to_h1[2];	/* parent -> H1: 'm' maps written, 'x' done */
	int		 to_p[2];	/* H1 -> parent: '1' in N1, '2' N2 ready,
					 * 'f' failed */
	int		 to_h2[2];	/* H1 -> H2: exit */
	void		*stack2;
	pid_t		 h2;
	int		 fail_step, fail_err;
};

static int
h2_child(void *arg)
{
	struct upair *u = arg;
	char c;

	(void)syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	ign((int)read(u->to_h2[0], &c, 1));
	return 0;
}

static int
h1_fail(struct upair *u, int step)
{
	int st;

	u->fail_err = errno;
	u->fail_step = step;
	if (u->h2 > 0) {	/* let H2 go before we do */
		ign((int)write(u->to_h2[1], "x", 1));
		while (syscall(SYS_wait4, u->h2, &st, __WALL, NULL) == -1 &&
		    errno == EINTR)
			;
	}
	ign((int)write(u->to_p[1], "f", 1));
	_exit(1);
}

/* "/proc/<pid>/<name>" without stdio (we share the parent's memory). */
static void
proc_path(char *out, pid_t pid, const char *name)
{
	char d[16];
	size_t n = 0, i;
	unsigned v = (unsigned)pid;

	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0 && n < sizeof(d));
	memcpy(out, "/proc/", 6);
	out += 6;
	for (i = 0; i < n; i++)
		*out++ = d[n - 1 - i];
	*out++ = '/';
	for (i = 0; name[i] != '\0'; i++)
		*out++ = name[i];
	*out = '\0';
}

static int
h1_child(void *arg)
{
	struct upair *u = arg;
	char c, path[64];
	int st;

	(void)syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (syscall(SYS_setgroups, 0, NULL) == -1 ||
	    syscall(SYS_setresgid, u->gid, u->gid, u->gid) == -1 ||
	    syscall(SYS_setresuid, u->uid, u->uid, u->uid) == -1)
		return h1_fail(u, 1);
	/* the uid change made our (shared) mm non-dumpable, which would give
	 * H2's /proc files to root, out of our reach */
	(void)syscall(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (unshare(CLONE_NEWUSER) == -1)
		return h1_fail(u, 2);
	if (write(u->to_p[1], "1", 1) != 1 || read(u->to_h1[0], &c, 1) != 1 ||
	    c != 'm')
		return h1_fail(u, 3);
	if (rl_write_str("/proc/sys/user/max_user_namespaces", "2") == -1)
		return h1_fail(u, 4);
	u->h2 = clone(h2_child, (char *)u->stack2 + RL_STACK,
	    CLONE_VM | CLONE_NEWUSER | SIGCHLD, u);
	if (u->h2 == -1) {
		u->h2 = 0;
		return h1_fail(u, 5);
	}
	proc_path(path, u->h2, "uid_map");
	if (rl_write_str(path, u->map) == -1)
		return h1_fail(u, 6);
	proc_path(path, u->h2, "gid_map");
	if (rl_write_str(path, u->map) == -1)
		return h1_fail(u, 6);
	ign((int)write(u->to_p[1], "2", 1));
	ign((int)read(u->to_h1[0], &c, 1));
	ign((int)write(u->to_h2[1], "x", 1));
	while (syscall(SYS_wait4, u->h2, &st, __WALL, NULL) == -1 &&
	    errno == EINTR)
		;
	return 0;
}

static const char *upair_steps[] = {
	"ok", "drop to the sandbox uid", "unshare(CLONE_NEWUSER)", "sync",
	"set max_user_namespaces", "clone the inner user namespace",
	"write the inner id maps",
};

/* Reads one byte from fd within 10 s; 0 on timeout or EOF. */
static char
get_byte(int fd)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	char c;
	int r;

	while ((r = poll(&pfd, 1, 10000)) == -1 && errno == EINTR)
		;
	if (r != 1 || read(fd, &c, 1) != 1)
		return 0;
	return c;
}

static int
userns_pair(uid_t uid, gid_t gid, unsigned range, unsigned inner, uid_t owner,
    int *n1fd, int *n2fd, char *err, size_t errlen)
{
	struct upair u;
	char path[64], map[64];
	void *stack = NULL;
	pid_t pid = -1;
	int rc = -1, i;

	*n1fd = *n2fd = -1;
	memset(&u, 0, sizeof(u));
	for (i = 0; i < 2; i++)
		u.to_h1[i] = u.to_p[i] = u.to_h2[i] = -1;
	u.uid = owner;	/* N1, N2 owner: bwrap runs as it */
	u.gid = owner - uid + gid;
	if (range > 1)
		snprintf(u.map, sizeof(u.map), "0 0 %u\n", range);
	else	/* a one-uid sandbox: that uid inside is its host uid */
		snprintf(u.map, sizeof(u.map), "%u 0 1\n", inner);
	if ((stack = stack_new()) == NULL || (u.stack2 = stack_new()) == NULL ||
	    pipe2(u.to_h1, O_CLOEXEC) == -1 || pipe2(u.to_p, O_CLOEXEC) == -1 ||
	    pipe2(u.to_h2, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "stack/pipe: %s", strerror(errno));
		goto out;
	}
	pthread_mutex_lock(&setid_mu);
	if ((pid = clone_vm(h1_child, stack, 0, &u)) == -1) {
		pthread_mutex_unlock(&setid_mu);
		snprintf(err, errlen, "clone: %s", strerror(errno));
		goto out;
	}
	/* NB: H1's set*id clears our shared mm's dumpable flag; it sets it
	 * back itself (and so does rl_spawn after the sandbox's exec) */
	if (get_byte(u.to_p[0]) != '1')
		goto fail;
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof(map), "0 %u %u\n", (unsigned)uid, range);
	if (rl_write_str(path, map) == -1) {
		snprintf(err, errlen, "write uid_map: %s", strerror(errno));
		goto out;
	}
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	snprintf(map, sizeof(map), "0 %u %u\n", (unsigned)gid, range);
	if (rl_write_str(path, map) == -1) {
		snprintf(err, errlen, "write gid_map: %s", strerror(errno));
		goto out;
	}
	if (write(u.to_h1[1], "m", 1) != 1 || get_byte(u.to_p[0]) != '2')
		goto fail;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	*n1fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)u.h2);
	*n2fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*n1fd == -1 || *n2fd == -1) {
		snprintf(err, errlen, "open %s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
	goto out;
fail:
	if (u.fail_step > 0 && (size_t)u.fail_step < NELEM(upair_steps))
		snprintf(err, errlen, "%s: %s", upair_steps[u.fail_step],
		    strerror(u.fail_err));
	else
		snprintf(err, errlen, "user namespace helper did not answer");
out:
	if (pid > 0) {
		ign((int)write(u.to_h1[1], "x", 1));
		reap(pid);
		(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
		pthread_mutex_unlock(&setid_mu);
	}
	if (rc == -1) {
		if (*n1fd != -1)
			close(*n1fd);
		if (*n2fd != -1)
			close(*n2fd);
		*n1fd = *n2fd = -1;
	}
	for (i = 0; i < 2; i++) {
		if (u.to_h1[i] != -1)
			close(u.to_h1[i]);
		if (u.to_p[i] != -1)
			close(u.to_p[i]);
		if (u.to_h2[i] != -1)
			close(u.to_h2[i]);
	}
	stack_free(stack);
	stack_free(u.stack2);
	return rc;
}

/* What the detaching child and the sandbox's first process share with us
 * (CLONE_VM). */
struct spawn_ctx {
	struct rl_spawn	*s;
	const char	*ovl_opts;
	int		 usernsfd, logfd, nullfd, infofd;
	int		 innerfd;	/* N2, bwrap --userns 5 */
	char		 loopdev[32];	/* disk_img attached here, or "" */
	uid_t		 run_uid;	/* bwrap's host uid/gid */
	gid_t		 run_gid;
	void		*stack2;
	/* out */
	pid_t		 gpid;		/* the sandbox's bwrap */
	int		 fail_step;	/* 0: exec'd */
	int		 fail_err;
};

static const char *spawn_steps[] = {
	"ok", "join cgroup", "unshare mount namespace", "make mounts private",
	"open_tree image", "idmap image (mount_setattr)", "attach image",
	"mount overlay", "drop privileges", "set up fds", "exec bwrap",
	"setsid", "clone", "mount the disk image",
	"make the agent's state in the disk image",
};

static int
child_fail(struct spawn_ctx *c, int step)
{
	c->fail_err = errno;
	c->fail_step = step;
	_exit(127);
}

/* The sandbox's bwrap, before exec: only system calls. */
static int
spawn_child(void *arg)
{
	struct spawn_ctx *c = arg;
	struct rl_spawn *s = c->s;
	struct mount_attr ma;
	sigset_t none;
	size_t i;
	int t, fds[6], sig;

	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)signal(sig, SIG_DFL);
	sigemptyset(&none);
	(void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL,
	    (size_t)(_NSIG / 8));
	for (i = 0; i < s->ncg_files; i++) {
		int fd = open(s->cg_files[i], O_WRONLY | O_CLOEXEC);
		if (fd == -1 || write(fd, "0", 1) != 1)
			return child_fail(c, 1);
		close(fd);
	}
	/* Should the host run out of memory, the kernel's OOM killer picks a
	 * sandbox's process before a daemon's (daemon_oom_protect). Written
	 * as root, it is also the floor (oom_score_adj_min): nothing inside
	 * can lower it. Best effort. */
	if ((t = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC)) != -1) {
		ign((int)write(t, RL_OOM_SCORE_ADJ, sizeof(RL_OOM_SCORE_ADJ) - 1));
		close(t);
	}
	if (unshare(CLONE_NEWNS) == -1)
		return child_fail(c, 2);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		return child_fail(c, 3);
	if (c->loopdev[0] != '\0' && mount(c->loopdev, s->disk_mnt, "ext4",
	    MS_NOSUID | MS_NODEV, NULL) == -1)
		return child_fail(c, 13);
	/* the agent's state (job spools, records) inside the disk limit; the
	 * image's top level is ours (the sandbox writes below upper/ and
	 * workspace/ only), so no link can be in the way */
	if (c->loopdev[0] != '\0' && s->agent_state != NULL &&
	    ((mkdir(s->agent_state, 0700) == -1 && errno != EEXIST) ||
	    lchown(s->agent_state, c->run_uid, c->run_gid) == -1))
		return child_fail(c, 14);
	t = (int)syscall(SYS_open_tree, AT_FDCWD, s->image_dir,
	    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (t == -1)
		return child_fail(c, 4);
	memset(&ma, 0, sizeof(ma));
	ma.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	if (s->upper == NULL)
		ma.attr_set |= MOUNT_ATTR_RDONLY;
	ma.userns_fd = (unsigned long long)c->usernsfd;
	if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH | AT_RECURSIVE,
	    &ma, sizeof(ma)) == -1)
		return child_fail(c, 5);
	if (syscall(SYS_move_mount, t, "", AT_FDCWD, s->lower,
	    MOVE_MOUNT_F_EMPTY_PATH) == -1)
		return child_fail(c, 6);
	close(t);
	if (s->upper != NULL && mount("overlay", s->root, "overlay",
	    MS_NOSUID | MS_NODEV, c->ovl_opts) == -1)
		return child_fail(c, 7);
	/* raw: glibc's set*id would try to change our parent's threads */
	if (syscall(SYS_setgroups, 0, NULL) == -1 ||
	    syscall(SYS_setresgid, c->run_gid, c->run_gid, c->run_gid) == -1 ||
	    syscall(SYS_setresuid, c->run_uid, c->run_uid, c->run_uid) == -1)
		return child_fail(c, 8);
	/* move fds out of the way of 0-4, then into place */
	fds[0] = fcntl(c->nullfd, F_DUPFD_CLOEXEC, 10);
	fds[1] = fcntl(c->logfd, F_DUPFD_CLOEXEC, 10);
	fds[2] = fds[1];
	fds[3] = fcntl(c->infofd, F_DUPFD_CLOEXEC, 10);
	fds[4] = s->seccomp_fd != -1 ?
	    fcntl(s->seccomp_fd, F_DUPFD_CLOEXEC, 10) : -1;
	fds[5] = fcntl(c->innerfd, F_DUPFD_CLOEXEC, 10);
	if (fds[0] == -1 || fds[1] == -1 || fds[3] == -1 || fds[5] == -1 ||
	    (s->seccomp_fd != -1 && fds[4] == -1))
		return child_fail(c, 9);
	for (i = 0; i < 6; i++) {
		if (fds[i] == -1)
			continue;
		if (dup2(fds[i], (int)i) == -1)
			return child_fail(c, 9);
	}
	/* nothing else crosses exec (the caller's fds may lack CLOEXEC) */
	(void)close_range(6, ~0U, CLOSE_RANGE_CLOEXEC);
	execve(s->bwrap, s->argv, s->envp);
	return child_fail(c, 10);
}

/* The detaching child: a new session; its child, the sandbox, is adopted
 * by init when it exits (after the sandbox's exec: CLONE_VFORK). */
static int
detach_child(void *arg)
{
	struct spawn_ctx *c = arg;
	pid_t g;

	if (setsid() == -1) {
		c->fail_err = errno;
		c->fail_step = 11;
		_exit(1);
	}
	g = clone(spawn_child, (char *)c->stack2 + RL_STACK,
	    CLONE_VM | CLONE_VFORK | SIGCHLD, c);
	if (g == -1) {
		c->fail_err = errno;
		c->fail_step = 12;
		_exit(1);
	}
	c->gpid = g;
	_exit(0);
}

/*
 * Attaches img to a free loop device that detaches itself once nothing
 * holds it (LO_FLAGS_AUTOCLEAR: the sandbox's mount, gone with its mount
 * namespace). Returns the device's fd (keep it until the mount is made)
 * and its path in dev, or -1.
 */
int
rl_loop_attach(const char *img, char *dev, size_t devlen, char *err,
    size_t errlen)
{
	struct loop_config lc;
	int cfd, lfd = -1, ifd, n, tries;

	if ((ifd = open(img, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		snprintf(err, errlen, "open %s: %s", img, strerror(errno));
		return -1;
	}
	if ((cfd = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "open /dev/loop-control: %s",
		    strerror(errno));
		close(ifd);
		return -1;
	}
	for (tries = 0; tries < 20; tries++) {
		if ((n = ioctl(cfd, LOOP_CTL_GET_FREE)) < 0) {
			snprintf(err, errlen, "no free loop device: %s",
			    strerror(errno));
			break;
		}
		snprintf(dev, devlen, "/dev/loop%d", n);
		if ((lfd = open(dev, O_RDWR | O_CLOEXEC)) == -1) {
			snprintf(err, errlen, "open %s: %s", dev,
			    strerror(errno));
			break;
		}
		memset(&lc, 0, sizeof(lc));
		lc.fd = (unsigned)ifd;
		lc.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (ioctl(lfd, LOOP_CONFIGURE, &lc) == 0)
			break;
		n = errno;
		snprintf(err, errlen, "attach %s: %s", dev, strerror(n));
		close(lfd);
		lfd = -1;
		if (n != EBUSY)		/* taken by someone else meanwhile */
			break;
	}
	close(cfd);
	close(ifd);
	return lfd;
}

/*
 * Reads bwrap --info-fd's {"child-pid": N, ...} from fd (within
 * timeout_ms) into *pid: the sandbox's pid 1, in our pid namespace.
 * 0, or -1 with err (bwrap's own error is in log_path).
 */
static int
read_child_pid(int fd, int timeout_ms, const char *log_path, pid_t *pid,
    char *err, size_t errlen)
{
	char info[1024], *cp, *end;
	struct pollfd pfd;
	size_t ilen = 0;
	ssize_t n;
	long long v;
	int r;

	for (;;) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		r = poll(&pfd, 1, timeout_ms);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(err, errlen, "bwrap did not report its child "
			    "in time");
			return -1;
		}
		n = read(fd, info + ilen, sizeof(info) - 1 - ilen);
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
		    "%s)", log_path);
		return -1;
	}
	cp++;
	while (*cp == ' ')
		cp++;
	errno = 0;
	v = strtoll(cp, &end, 10);
	if (end == cp || errno != 0 || v <= 1 || v > INT_MAX) {
		snprintf(err, errlen, "bwrap reported a bad child pid");
		return -1;
	}
	*pid = (pid_t)v;
	return 0;
}

int
rl_spawn(struct rl_spawn *s, int timeout_ms, char *err, size_t errlen)
{
	char ovl[4 * RL_PATH_MAX], e[256];
	int infop[2] = { -1, -1 }, rc = -1, loopfd = -1;
	struct spawn_ctx c;
	void *stack1 = NULL;
	pid_t mid;
	long long t0;

	memset(&c, 0, sizeof(c));
	c.s = s;
	c.ovl_opts = ovl;
	c.usernsfd = c.logfd = c.nullfd = c.innerfd = -1;
	s->pid = s->child_pid = -1;
	s->us_idmap = s->us_detach = 0;
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
	t0 = util_mono_us();
	/* bwrap runs as the host id of the agent's user inside: in a range,
	 * uid + inner_uid, so it joins N2 as inner_uid (no switch needed;
	 * the capabilities bwrap --cap-add keeps are the agent's, N2's) */
	c.run_uid = s->uid + (s->uid_range > 1 ? s->inner_uid : 0);
	c.run_gid = s->gid + (s->uid_range > 1 ? s->inner_uid : 0);
	if (userns_pair(s->uid, s->gid, s->uid_range, s->inner_uid, c.run_uid,
	    &c.usernsfd, &c.innerfd,
	    e, sizeof(e)) == -1) {
		snprintf(err, errlen, "sandbox user namespace: %s", e);
		goto out;
	}
	s->us_idmap = util_mono_us() - t0;
	t0 += s->us_idmap;
	c.logfd = open(s->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
	c.nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (c.logfd == -1 || c.nullfd == -1) {
		snprintf(err, errlen, "open %s: %s", s->log_path,
		    strerror(errno));
		goto out;
	}
	if (pipe2(infop, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto out;
	}
	c.infofd = infop[1];
	if (s->disk_img != NULL && (loopfd = rl_loop_attach(s->disk_img,
	    c.loopdev, sizeof(c.loopdev), e, sizeof(e))) == -1) {
		snprintf(err, errlen, "disk: %s", e);
		goto out;
	}
	if ((stack1 = stack_new()) == NULL || (c.stack2 = stack_new()) == NULL) {
		snprintf(err, errlen, "mmap: %s", strerror(errno));
		goto out;
	}
	/* returns once the sandbox exec'd bwrap (or failed) and mid exited */
	pthread_mutex_lock(&setid_mu);
	if ((mid = clone_vm(detach_child, stack1, CLONE_VFORK, &c)) == -1) {
		pthread_mutex_unlock(&setid_mu);
		snprintf(err, errlen, "clone: %s", strerror(errno));
		goto out;
	}
	reap(mid);
	/* the sandbox's set*id before its exec cleared our (shared) mm's
	 * dumpable flag: set it back */
	(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	pthread_mutex_unlock(&setid_mu);
	close(infop[1]);
	infop[1] = -1;
	s->us_detach = util_mono_us() - t0;
	if (c.gpid > 0)
		s->pid = c.gpid;
	if (c.fail_step != 0) {
		if (c.fail_step < 0 || (size_t)c.fail_step >= NELEM(spawn_steps))
			c.fail_step = 0;
		snprintf(err, errlen, "spawn: %s: %s", spawn_steps[c.fail_step],
		    strerror(c.fail_err));
		goto out;
	}
	if (c.gpid <= 0) {
		snprintf(err, errlen, "spawn: intermediate process failed");
		goto out;
	}
	if (read_child_pid(infop[0], timeout_ms, s->log_path, &s->child_pid,
	    err, errlen) == -1)
		goto out;
	rc = 0;
out:
	if (c.usernsfd != -1)
		close(c.usernsfd);
	if (c.innerfd != -1)
		close(c.innerfd);
	if (loopfd != -1)
		close(loopfd);	/* the sandbox's mount holds it now */
	if (c.logfd != -1)
		close(c.logfd);
	if (c.nullfd != -1)
		close(c.nullfd);
	if (infop[0] != -1)
		close(infop[0]);
	if (infop[1] != -1)
		close(infop[1]);
	stack_free(stack1);
	stack_free(c.stack2);
	return rc;
}

/*
 * Attaching a mount into a running sandbox: a CLONE_VM child (its own
 * fs_struct, which setns(CLONE_NEWNS) needs) joins the mount namespace of
 * the process pidfd names and moves the detached mount mfd onto path
 * there, resolved in that namespace without following any symlink
 * (the sandbox owns its tree). Skipped when path already is on device
 * dev (attached before).
 */
struct nsmove {
	int		 pidfd, mfd;
	const char	*path;
	const char	*mkparent;	/* path's parent, made if path is missing */
	dev_t		 dev;
	int		 done;		/* 1 moved, 2 already there */
	int		 fail_step, fail_err;
};

static int
nsmove_child(void *arg)
{
	struct nsmove *c = arg;
	struct open_how how;
	struct stat st;
	int t;

	if (syscall(SYS_setns, c->pidfd, CLONE_NEWNS) == -1) {
		c->fail_step = 1;
		c->fail_err = errno;
		return 1;
	}
	memset(&how, 0, sizeof(how));
	how.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	t = (int)syscall(SYS_openat2, AT_FDCWD, c->path, &how, sizeof(how));
	if (t == -1 && errno == ENOENT && c->mkparent != NULL) {
		/* an image without it: made (the mount covers it) */
		(void)mkdir(c->mkparent, 0755);
		(void)mkdir(c->path, 0755);
		t = (int)syscall(SYS_openat2, AT_FDCWD, c->path, &how,
		    sizeof(how));
	}
	if (t == -1) {
		c->fail_step = 2;
		c->fail_err = errno;
		return 1;
	}
	if (fstat(t, &st) == 0 && st.st_dev == c->dev) {
		c->done = 2;
		close(t);
		return 0;
	}
	if (syscall(SYS_move_mount, c->mfd, "", t, "",
	    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == -1) {
		c->fail_step = 3;
		c->fail_err = errno;
		close(t);
		return 1;
	}
	close(t);
	c->done = 1;
	return 0;
}

int
rl_ns_move_mount(int pidfd, int mfd, const char *path, dev_t dev, char *err,
    size_t errlen)
{
	static const char *steps[] = { "ok", "setns", "open", "move_mount" };
	char parent[256];
	const char *slash;
	struct nsmove c;
	void *stack;
	pid_t pid;

	memset(&c, 0, sizeof(c));
	c.pidfd = pidfd;
	c.mfd = mfd;
	c.path = path;
	c.dev = dev;
	if ((slash = strrchr(path, '/')) != NULL && slash != path &&
	    (size_t)(slash - path) < sizeof(parent)) {
		memcpy(parent, path, (size_t)(slash - path));
		parent[slash - path] = '\0';
		c.mkparent = parent;
	}
	if ((stack = stack_new()) == NULL) {
		snprintf(err, errlen, "mmap: %s", strerror(errno));
		return -1;
	}
	/* CLONE_VFORK: we resume once it is done; no CLONE_FS */
	pid = clone_vm(nsmove_child, stack, CLONE_VFORK, &c);
	if (pid == -1) {
		snprintf(err, errlen, "clone: %s", strerror(errno));
		stack_free(stack);
		return -1;
	}
	reap(pid);
	stack_free(stack);
	if (c.done == 0) {
		snprintf(err, errlen, "%s %s: %s", c.fail_step > 0 &&
		    c.fail_step < 4 ? steps[c.fail_step] : "attach", path,
		    strerror(c.fail_err));
		return -1;
	}
	return c.done == 2 ? 1 : 0;
}

static int
probe_child(void *arg)
{
	(void)arg;
	return 0;
}

int
rl_probe_userns(char *err, size_t errlen)
{
	void *stack;
	pid_t pid;
	int e;

	if ((stack = stack_new()) == NULL) {
		snprintf(err, errlen, "mmap: %s", strerror(errno));
		return -1;
	}
	pid = clone_vm(probe_child, stack, CLONE_NEWUSER | CLONE_VFORK, NULL);
	e = errno;
	if (pid != -1)
		reap(pid);
	stack_free(stack);
	if (pid == -1) {
		snprintf(err, errlen, "cannot make a user namespace: %s%s",
		    strerror(e), e == ENOSPC ? " (user.max_user_namespaces "
		    "is used up or 0)" : e == EPERM ? " (unprivileged or "
		    "seccomp-filtered: sandboxes need user namespaces)" : "");
		return -1;
	}
	return 0;
}
