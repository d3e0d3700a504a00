/*
 * runtime/local/home.c: durable per-user homes (docs/local-runtime.md,
 * "Homes"). A home is <homes_dir>/u-<user>/home.img, an ext4 image of
 * the home's size (sparse) whose files carry canonical ids (the ids
 * inside a sandbox: 1000 is the image's user). home_attach mounts it at
 * /home/user in a running sandbox: one loop device per home, shared by
 * every sandbox of that user (a second device on the same file would be
 * a second filesystem on one disk), a detached mount of it (fsmount)
 * idmapped with the sandbox's user namespace, moved into the agent's and
 * the commands' mount namespaces. The host's mount table never holds a
 * home; the loop device detaches itself (LO_FLAGS_AUTOCLEAR) when the
 * last sandbox holding the home is gone.
 *
 * The first attach of a home in this process also keeps one more
 * detached, unidmapped mount of it (struct home_sb, at most HOME_SB_MAX,
 * each released homes.keep_mounted after its last use; 0: none kept): the next attach
 * clones it (open_tree) instead of mounting the filesystem again, which
 * is most of what an attach costs. It holds the loop device too, so
 * "in use" is "a live sandbox attached it" (a "home" file in the
 * sandbox's state directory names the user) while this process holds
 * the home's mount, and "a loop device is attached to the image" when
 * it does not (after a restart).
 *
 * Rules: a user id passes id_session_valid (no '/', no NUL) and becomes
 * the name u-<user> ("u-.." is an ordinary name); nothing else from a
 * client reaches a path. Every op holds homes_mu and <homes_dir>/.lock
 * (sandboxctl and a second orchestrator), so two loop devices are never
 * attached to one image. Calls spawn.c, record.c, files.c and proc.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/loop.h>
#include <unistd.h>

#include "ids.h"
#include "local_int.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

#ifndef FSCONFIG_SET_STRING
#define FSCONFIG_SET_STRING	1
#define FSCONFIG_CMD_CREATE	6
#endif
#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC		0x00000001
#define FSMOUNT_CLOEXEC		0x00000001
#endif

static pthread_mutex_t homes_mu = PTHREAD_MUTEX_INITIALIZER;

#define HOME_SB_MAX		64

/* A home's filesystem this process keeps mounted (detached); guarded by
 * homes_mu. Keyed by the image's identity (st_dev, st_ino). */
struct home_sb {
	dev_t		 dev;
	ino_t		 ino;
	long long	 used_ms;	/* mono: last attach or seen in use */
	int		 mfd;		/* the fsmount, not idmapped */
	char		 user[ID_SESSION_MAX + 1];
};
static struct home_sb	home_sbs[HOME_SB_MAX];
static size_t		nhome_sbs;
static int		home_clone_off;	/* open_tree of a detached mount refused */

/* The whole-homes lock: homes_mu, then <homes_dir>/.lock; the fd or -1. */
static int
homes_lock(const struct rl *rl, int create, char *err, size_t errlen)
{
	char p[RL_PATH_MAX + 16];
	int fd;

	if (create && mkdir(rl->homes_dir, 0711) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", rl->homes_dir,
		    strerror(errno));
		return -1;
	}
	snprintf(p, sizeof(p), "%s/.lock", rl->homes_dir);
	pthread_mutex_lock(&homes_mu);
	if ((fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) == -1 ||
	    flock(fd, LOCK_EX) == -1) {
		if (fd == -1 && errno == ENOENT && !create) {
			pthread_mutex_unlock(&homes_mu);
			return -2;	/* no homes at all */
		}
		snprintf(err, errlen, "lock %s: %s", p, strerror(errno));
		if (fd != -1)
			close(fd);
		pthread_mutex_unlock(&homes_mu);
		return -1;
	}
	return fd;
}

static void
homes_unlock(int fd)
{
	if (fd >= 0) {
		close(fd);
		pthread_mutex_unlock(&homes_mu);
	}
}

/* out = <homes_dir>/u-<user>[/<sub>]; -1 (err) for a bad user id. */
static int
home_path(const struct rl *rl, const char *user, const char *sub, char *out,
    size_t outlen, char *err, size_t errlen)
{
	if (user == NULL || !id_session_valid(user)) {
		snprintf(err, errlen, "invalid user id");
		return -1;
	}
	if (snprintf(out, outlen, "%s/u-%s%s%s", rl->homes_dir, user,
	    sub != NULL ? "/" : "", sub != NULL ? sub : "") >= (int)outlen) {
		snprintf(err, errlen, "homes path too long");
		return -1;
	}
	return 0;
}

/*
 * The loop device attached to the image whose identity is ist (a device
 * for a file of that dev and inode), opened: its fd, its path in dev; -1
 * if none.
 */
static int
home_loop_find(const struct stat *ist, char *dev, size_t devlen)
{
	struct loop_info64 li;
	struct dirent *de;
	char p[300];
	DIR *d;
	int fd = -1;

	if ((d = opendir("/sys/block")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (strncmp(de->d_name, "loop", 4) != 0 ||
		    strlen(de->d_name) > 32 || devlen < 40)
			continue;
		/* only attached devices have loop/backing_file */
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file",
		    de->d_name);
		if (stat(p, &st) == -1)
			continue;
		snprintf(dev, devlen, "/dev/%.32s", de->d_name);
		if ((fd = open(dev, O_RDONLY | O_CLOEXEC)) == -1)
			continue;
		if (ioctl(fd, LOOP_GET_STATUS64, &li) == 0 &&
		    li.lo_device == (unsigned long long)ist->st_dev &&
		    li.lo_inode == (unsigned long long)ist->st_ino)
			break;
		close(fd);
		fd = -1;
	}
	closedir(d);
	return fd;
}

static long long
mtime_ms(const char *p)
{
	struct stat st;

	if (stat(p, &st) == -1)
		return 0;
	return (long long)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
}

/* Marks the home used now (the mtime of its "used" file). */
static void
home_touch(const char *udir)
{
	char p[RL_PATH_MAX + 16];
	int fd;

	snprintf(p, sizeof(p), "%s/used", udir);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) != -1) {
		(void)futimens(fd, NULL);
		close(fd);
	}
}

/* Makes <udir>/home.img: ext4 of size bytes, its root owned by the
 * image's user (RL_INNER_UID) inside. Held: the homes lock. */
static int
home_mkfs(const struct rl *rl, const char *udir, long long size, char *err,
    size_t errlen)
{
	char img[RL_PATH_MAX + 16], tmp[RL_PATH_MAX + 16], logp[RL_PATH_MAX + 16];
	char opts[160];
	char *av[] = { "mke2fs", "-q", "-F", "-t", "ext4", "-m", "0", "-E",
	    opts, tmp, NULL };
	int st = -1;

	snprintf(img, sizeof(img), "%s/home.img", udir);
	snprintf(tmp, sizeof(tmp), "%s/home.img.new", udir);
	snprintf(logp, sizeof(logp), "%s/log", udir);
	snprintf(opts, sizeof(opts), "root_owner=%d:%d,lazy_itable_init=1,"
	    "lazy_journal_init=1", RL_INNER_UID, RL_INNER_UID);
	(void)unlink(tmp);	/* a make that died half way */
	if (rl_mkfs(rl, "home image", tmp, size, av, logp, &st, err,
	    errlen) == -1) {
		(void)unlink(tmp);
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(err, errlen, "%s failed for a home (status %d; see %s)",
		    rl->c.mkfs, st, logp);
		(void)unlink(tmp);
		return -1;
	}
	if (rename(tmp, img) == -1) {
		snprintf(err, errlen, "rename %s: %s", tmp, strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

int
rl_home_prepare(struct rl *rl, const char *user, long long size, char *err,
    size_t errlen)
{
	char udir[RL_PATH_MAX], img[RL_PATH_MAX + 16];
	struct stat st;
	int lfd, rc = -1;

	if (home_path(rl, user, NULL, udir, sizeof(udir), err, errlen) == -1)
		return -1;
	if (size < (16LL << 20) || size > (1LL << 44)) {
		snprintf(err, errlen, "home size %lld out of bounds (16MiB .. "
		    "16TiB)", size);
		return -1;
	}
	if ((lfd = homes_lock(rl, 1, err, errlen)) < 0)
		return -1;
	snprintf(img, sizeof(img), "%s/home.img", udir);
	if (lstat(img, &st) == 0) {
		rc = S_ISREG(st.st_mode) ? 0 : -1;
		if (rc == -1)
			snprintf(err, errlen, "%s is not a file", img);
		goto out;
	}
	if (mkdir(udir, 0700) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", udir, strerror(errno));
		goto out;
	}
	if (home_mkfs(rl, udir, size, err, errlen) == -1)
		goto out;
	home_touch(udir);
	log_info("home user=%s created size=%lld", user, size);
	rc = 0;
out:
	homes_unlock(lfd);
	return rc;
}

/* The pids of the children of pid (at most max), by /proc. */
static size_t
children_of(pid_t pid, pid_t *out, size_t max)
{
	char p[64], buf[4096];
	size_t n = 0;
	ssize_t len;
	char *s, *e;
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	for (s = buf; n < max; s = e) {
		long v = strtol(s, &e, 10);
		if (e == s)
			break;
		if (v > 1)
			out[n++] = (pid_t)v;
	}
	return n;
}

static int
ns_ino(pid_t pid, const char *ns, struct stat *st)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/ns/%s", (int)pid, ns);
	return stat(p, st);
}

/*
 * A pidfd for a child of the agent in the commands' mount namespace (not
 * the agent's: agent/nest.c's C0 or a shell), checked to be the agent's
 * child after it was opened (so a reused pid is never taken); -1.
 */
static int
nest_pidfd(pid_t top)
{
	struct stat ast, cst;
	pid_t q[64], par[64];
	size_t n = 0, i, k, j;
	int fd, depth;

	if (ns_ino(top, "mnt", &ast) == -1)
		return -1;
	/* bwrap's pid 1, the agent, then its children: three levels */
	q[n] = top;
	par[n++] = 0;
	for (i = 0, depth = 0; i < n && depth < 3; depth++) {
		size_t end = n;

		for (; i < end; i++) {
			pid_t kids[32];

			k = children_of(q[i], kids, NELEM(kids));
			for (j = 0; j < k && n < NELEM(q); j++) {
				q[n] = kids[j];
				par[n++] = q[i];
			}
		}
	}
	for (i = 1; i < n; i++) {
		if (ns_ino(q[i], "mnt", &cst) == -1 || cst.st_ino == ast.st_ino)
			continue;
		if ((fd = (int)syscall(SYS_pidfd_open, q[i], 0)) == -1)
			continue;
		/* still that parent's child once pinned: not a reused pid */
		if (rl_proc_ppid(q[i]) == par[i] && ns_ino(q[i], "mnt", &cst) == 0 &&
		    cst.st_ino != ast.st_ino)
			return fd;
		close(fd);
	}
	return -1;
}

static int
home_idmap(int m, int usernsfd, char *err, size_t errlen)
{
	struct mount_attr ma;

	memset(&ma, 0, sizeof(ma));
	ma.attr_set = MOUNT_ATTR_IDMAP;
	ma.userns_fd = (unsigned long long)usernsfd;
	if (syscall(SYS_mount_setattr, m, "", AT_EMPTY_PATH, &ma,
	    sizeof(ma)) == -1) {
		snprintf(err, errlen, "idmap the home: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* A detached mount of the ext4 on dev, idmapped by usernsfd (-1: not);
 * -1 (err). */
static int
home_fsmount(const char *dev, int usernsfd, char *err, size_t errlen)
{
	int fs, m;

	if ((fs = (int)syscall(SYS_fsopen, "ext4", FSOPEN_CLOEXEC)) == -1) {
		snprintf(err, errlen, "fsopen ext4: %s", strerror(errno));
		return -1;
	}
	if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", dev, 0) == -1 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == -1) {
		snprintf(err, errlen, "mount %s: %s", dev, strerror(errno));
		close(fs);
		return -1;
	}
	m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
	    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	close(fs);
	if (m == -1) {
		snprintf(err, errlen, "fsmount %s: %s", dev, strerror(errno));
		return -1;
	}
	if (usernsfd != -1 && home_idmap(m, usernsfd, err, errlen) == -1) {
		close(m);
		return -1;
	}
	return m;
}

/*
 * A clone of the detached mount base, idmapped by usernsfd; -1, with
 * home_clone_off set when the kernel cannot clone a detached mount (then
 * the caller mounts the filesystem again).
 */
static int
home_clone(int base, int usernsfd, char *err, size_t errlen)
{
	int m;

	if (home_clone_off)
		return -1;
	m = (int)syscall(SYS_open_tree, base, "", OPEN_TREE_CLONE |
	    OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (m == -1) {
		if (errno == EINVAL || errno == ENOSYS) {
			home_clone_off = 1;
			log_info("homes: this kernel cannot clone a detached "
			    "mount (%s): every attach mounts the home",
			    strerror(errno));
		}
		snprintf(err, errlen, "open_tree: %s", strerror(errno));
		return -1;
	}
	if (home_idmap(m, usernsfd, err, errlen) == -1) {
		close(m);
		return -1;
	}
	return m;
}

static int
sb_find(const struct stat *ist)
{
	size_t i;

	for (i = 0; i < nhome_sbs; i++)
		if (home_sbs[i].dev == ist->st_dev &&
		    home_sbs[i].ino == ist->st_ino)
			return (int)i;
	return -1;
}

static int
sb_find_user(const char *user)
{
	size_t i;

	for (i = 0; i < nhome_sbs; i++)
		if (strcmp(home_sbs[i].user, user) == 0)
			return (int)i;
	return -1;
}

/* Releases cached mount i (the device detaches once no sandbox holds it). */
static void
sb_drop(size_t i)
{
	close(home_sbs[i].mfd);
	home_sbs[i] = home_sbs[--nhome_sbs];
}

/* Keeps base (ours now) as the cached mount of image ist for user; the
 * least recently used goes when the table is full. */
static void
sb_keep(const struct stat *ist, const char *user, int base)
{
	size_t i, lru = 0;

	if (nhome_sbs == HOME_SB_MAX) {
		for (i = 1; i < nhome_sbs; i++)
			if (home_sbs[i].used_ms < home_sbs[lru].used_ms)
				lru = i;
		sb_drop(lru);
	}
	home_sbs[nhome_sbs].dev = ist->st_dev;
	home_sbs[nhome_sbs].ino = ist->st_ino;
	home_sbs[nhome_sbs].mfd = base;
	home_sbs[nhome_sbs].used_ms = util_mono_ms();
	snprintf(home_sbs[nhome_sbs].user, sizeof(home_sbs[nhome_sbs].user),
	    "%s", user);
	nhome_sbs++;
}

struct users_scan {
	const struct rl	*rl;
	const char	*user;
	int		 n;
};

static void
users_one(const char *id, void *arg)
{
	struct users_scan *u = arg;
	char p[RL_PATH_MAX], who[ID_SESSION_MAX + 2];
	struct pidrec pr;
	ssize_t len;
	int fd;

	if (rl_sdir_path(u->rl, id, "home", p, sizeof(p)) == -1 ||
	    (fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return;
	len = read(fd, who, sizeof(who) - 1);
	close(fd);
	if (len <= 0)
		return;
	who[len] = '\0';
	if (strcmp(who, u->user) == 0 && rl_pid_load(u->rl, id, &pr) == 0 &&
	    rl_pid_alive(&pr))
		u->n++;
}

/* How many live sandboxes attached user's home (by their "home" files). */
static int
home_sandboxes(const struct rl *rl, const char *user)
{
	struct users_scan u = { rl, user, 0 };
	char e[128];

	if (rl_each_id(rl, users_one, &u, e, sizeof(e)) == -1)
		return 1;	/* unknown: in use */
	return u.n;
}

/*
 * Releases the cached mounts unused for homes.keep_mounted whose homes no
 * live sandbox holds (so a home nobody uses lets its device go). Called
 * by the runtime's heal tick.
 */
void
rl_home_expire(struct rl *rl)
{
	long long now = util_mono_ms();
	size_t i;

	pthread_mutex_lock(&homes_mu);
	for (i = 0; i < nhome_sbs; ) {
		if (now - home_sbs[i].used_ms < rl->c.homes_keep_ms) {
			i++;
		} else if (home_sandboxes(rl, home_sbs[i].user) > 0) {
			home_sbs[i++].used_ms = now;
		} else {
			log_info("home user=%s released (unused %lld ms)",
			    home_sbs[i].user, now - home_sbs[i].used_ms);
			sb_drop(i);
		}
	}
	pthread_mutex_unlock(&homes_mu);
}

/*
 * Mounts the home in image img (identity ist) from its loop device (the
 * one attached, else a new one) for a first attach: *m1 and *m2, two
 * mounts idmapped by unsfd, and a third, not idmapped, kept in home_sbs
 * for the next attach (when this kernel can clone it). dev: the device;
 * *t_loop: when the device was there. 0, or -1 with err (nothing open).
 */
static int
home_mount(const struct rl *rl, const struct stat *ist, const char *img,
    const char *user, int unsfd, char *dev, size_t devlen, int *m1, int *m2,
    long long *t_loop, char *err, size_t errlen)
{
	int loopfd = -1, base = -1, tries;

	for (tries = 0; tries < 2 && base == -1; tries++) {
		/* a device being detached (its last sandbox just went) fails
		 * the mount: then a fresh one */
		if (tries == 0)
			loopfd = home_loop_find(ist, dev, devlen);
		if (loopfd == -1 && (loopfd = rl_loop_attach(img, dev, devlen,
		    err, errlen)) == -1)
			return -1;
		*t_loop = util_mono_us();
		base = home_fsmount(dev, -1, err, errlen);
		close(loopfd);	/* a mount holds the device now */
		loopfd = -1;
	}
	if (base == -1)
		return -1;
	if ((*m1 = home_clone(base, unsfd, err, errlen)) == -1)
		*m1 = home_fsmount(dev, unsfd, err, errlen);
	if (*m1 != -1 && (*m2 = home_clone(base, unsfd, err, errlen)) == -1)
		*m2 = home_fsmount(dev, unsfd, err, errlen);
	if (*m1 == -1 || *m2 == -1) {
		if (*m1 != -1)
			close(*m1);
		*m1 = -1;
		close(base);
		return -1;
	}
	if (home_clone_off || rl->c.homes_keep_ms <= 0)
		close(base);
	else
		sb_keep(ist, user, base);
	return 0;
}

/* Notes in sandbox id's state directory that it holds user's home. */
static void
home_mark(const struct rl *rl, const char *id, const char *user)
{
	char p[RL_PATH_MAX];
	int fd;

	if (rl_sdir_path(rl, id, "home", p, sizeof(p)) == -1 ||
	    (fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0600)) == -1) {
		log_warnx("home user=%s sandbox=%s: cannot note the attach: %s",
		    user, id, strerror(errno));
		return;
	}
	if (write(fd, user, strlen(user)) != (ssize_t)strlen(user))
		log_warnx("home user=%s sandbox=%s: cannot note the attach",
		    user, id);
	close(fd);
}

int
rl_home_attach(struct rl *rl, const char *id, const char *user, char *err,
    size_t errlen)
{
	char udir[RL_PATH_MAX], img[RL_PATH_MAX + 16], dev[64], p[64], e[256];
	struct pidrec pr;
	struct stat ist, mst;
	int lfd = -1, apid = -1, npid = -1, unsfd = -1;
	int m1 = -1, m2 = -1, rc = -1, r1, r2, k;
	long long t0 = util_mono_us(), t_ns = 0, t_loop = 0, t_mnt = 0, t_mv = 0;

	if (home_path(rl, user, NULL, udir, sizeof(udir), err, errlen) == -1)
		return -1;
	if (!id_sandbox_valid(id) || rl_pid_load(rl, id, &pr) == -1 ||
	    !rl_pid_alive(&pr)) {
		snprintf(err, errlen, "sandbox %s is not running", id);
		return -1;
	}
	/* the agent (pid 1 of bwrap's namespaces), pinned and checked */
	if ((apid = (int)syscall(SYS_pidfd_open, (pid_t)pr.child_pid, 0)) == -1 ||
	    !rl_pid_alive(&pr)) {
		snprintf(err, errlen, "sandbox %s is not running", id);
		goto out;
	}
	if ((npid = nest_pidfd((pid_t)pr.child_pid)) == -1) {
		snprintf(err, errlen, "sandbox %s: its commands' namespace was "
		    "not found", id);
		goto out;
	}
	snprintf(p, sizeof(p), "/proc/%lld/ns/user", pr.child_pid);
	if ((unsfd = open(p, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "sandbox %s user namespace: %s", id,
		    strerror(errno));
		goto out;
	}
	if ((lfd = homes_lock(rl, 1, err, errlen)) < 0)
		goto out;
	t_ns = util_mono_us();
	snprintf(img, sizeof(img), "%s/home.img", udir);
	if (lstat(img, &ist) == -1 || !S_ISREG(ist.st_mode)) {
		snprintf(err, errlen, "user %s has no home", user);
		goto out;
	}
	if ((k = sb_find(&ist)) != -1 &&
	    (m1 = home_clone(home_sbs[k].mfd, unsfd, err, errlen)) != -1 &&
	    (m2 = home_clone(home_sbs[k].mfd, unsfd, err, errlen)) != -1) {
		home_sbs[k].used_ms = util_mono_ms();
		snprintf(dev, sizeof(dev), "(kept)");
		t_loop = util_mono_us();
	} else {
		if (k != -1)
			sb_drop((size_t)k);	/* its device may be going */
		if (m1 != -1)
			close(m1);
		m1 = -1;
		if (home_mount(rl, &ist, img, user, unsfd, dev, sizeof(dev), &m1,
		    &m2, &t_loop, err, errlen) == -1)
			goto out;
	}
	t_mnt = util_mono_us();
	if (fstat(m1, &mst) == -1) {
		snprintf(err, errlen, "fstat: %s", strerror(errno));
		goto out;
	}
	/* the agent's namespace (its file endpoints), then the commands'
	 * (a propagated mount is there already) */
	if ((r1 = rl_ns_move_mount(apid, m1, RT_HOME_PATH, mst.st_dev, e,
	    sizeof(e))) == -1 || (r2 = rl_ns_move_mount(npid, m2, RT_HOME_PATH,
	    mst.st_dev, e, sizeof(e))) == -1) {
		snprintf(err, errlen, "sandbox %s: %s (the image needs a "
		    "%s directory)", id, e, RT_HOME_PATH);
		goto out;
	}
	t_mv = util_mono_us();
	home_mark(rl, id, user);
	home_touch(udir);
	log_info("home user=%s sandbox=%s %s dev=%s ns_us=%lld loop_us=%lld "
	    "mount_us=%lld move_us=%lld", user, id, r1 == 1 && r2 == 1 ?
	    "already attached" : "attached", dev, t_ns - t0, t_loop - t_ns,
	    t_mnt - t_loop, t_mv - t_mnt);
	rc = 0;
out:
	if (m1 != -1)
		close(m1);
	if (m2 != -1)
		close(m2);
	homes_unlock(lfd);
	if (unsfd != -1)
		close(unsfd);
	if (npid != -1)
		close(npid);
	if (apid != -1)
		close(apid);
	return rc;
}

/* Fills out for user's home. Held: the homes lock. */
static void
home_stat(const struct rl *rl, const char *user, struct rt_home *out)
{
	char udir[RL_PATH_MAX], p[RL_PATH_MAX + 16], dev[64], e[64];
	struct stat st;
	int fd;

	memset(out, 0, sizeof(*out));
	snprintf(out->user, sizeof(out->user), "%s", user);
	if (home_path(rl, user, NULL, udir, sizeof(udir), e, sizeof(e)) == -1)
		return;
	snprintf(p, sizeof(p), "%s/home.img", udir);
	if (lstat(p, &st) == -1 || !S_ISREG(st.st_mode))
		return;
	out->exists = 1;
	out->size_bytes = (long long)st.st_size;
	out->used_bytes = (long long)st.st_blocks * 512;
	if (sb_find(&st) != -1) {
		out->in_use = home_sandboxes(rl, user) > 0;
	} else if ((fd = home_loop_find(&st, dev, sizeof(dev))) != -1) {
		out->in_use = 1;
		close(fd);
	}
	snprintf(p, sizeof(p), "%s/used", udir);
	out->last_used_ms = mtime_ms(p);
}

int
rl_home_get(struct rl *rl, const char *user, struct rt_home *out, char *err,
    size_t errlen)
{
	int lfd;

	memset(out, 0, sizeof(*out));
	if (user == NULL || !id_session_valid(user)) {
		snprintf(err, errlen, "invalid user id");
		return -1;
	}
	snprintf(out->user, sizeof(out->user), "%s", user);
	if ((lfd = homes_lock(rl, 0, err, errlen)) == -2)
		return 0;
	if (lfd < 0)
		return -1;
	home_stat(rl, user, out);
	homes_unlock(lfd);
	return 0;
}

int
rl_home_delete(struct rl *rl, const char *user, char *err, size_t errlen)
{
	char udir[RL_PATH_MAX];
	struct rt_home h;
	int lfd, rc = -1, i, k;

	if (home_path(rl, user, NULL, udir, sizeof(udir), err, errlen) == -1)
		return -1;
	for (i = 0; ; i++) {
		if ((lfd = homes_lock(rl, 0, err, errlen)) == -2)
			return 0;
		if (lfd < 0)
			return -1;
		home_stat(rl, user, &h);
		if ((k = sb_find_user(user)) != -1) {
			if (h.in_use)
				break;	/* a live sandbox holds it */
			sb_drop((size_t)k);	/* ours: let the device go */
			home_stat(rl, user, &h);
		}
		/* the device of a sandbox that just went detaches a moment
		 * after its mounts: wait for it a little */
		if (!h.in_use || i >= 20)
			break;
		homes_unlock(lfd);
		rl_sleep_us(100000);
	}
	if (h.in_use) {
		snprintf(err, errlen, "in use");
		goto out;
	}
	if (rl_rmtree(udir, err, errlen) == -1)
		goto out;
	if (h.exists)
		log_info("home user=%s deleted", user);
	rc = 0;
out:
	homes_unlock(lfd);
	return rc;
}

int
rl_home_list(struct rl *rl, struct rt_home **out, size_t *n, char *err,
    size_t errlen)
{
	struct dirent *de;
	struct rt_home *v = NULL;
	size_t k = 0;
	DIR *d;
	int lfd;

	*out = NULL;
	*n = 0;
	if ((lfd = homes_lock(rl, 0, err, errlen)) == -2)
		return 0;
	if (lfd < 0)
		return -1;
	if ((d = opendir(rl->homes_dir)) == NULL) {
		snprintf(err, errlen, "%s: %s", rl->homes_dir, strerror(errno));
		homes_unlock(lfd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		char udir[RL_PATH_MAX];

		if (strncmp(de->d_name, "u-", 2) != 0 ||
		    !id_session_valid(de->d_name + 2))
			continue;
		v = xreallocarray(v, k + 1, sizeof(*v));
		home_stat(rl, de->d_name + 2, &v[k]);
		if (!v[k].exists)
			continue;
		/* in use now: used now (the ttl counts from its last use) */
		if (v[k].in_use && home_path(rl, v[k].user, NULL, udir,
		    sizeof(udir), err, errlen) == 0) {
			home_touch(udir);
			v[k].last_used_ms = util_unix_ms();
		}
		k++;
	}
	closedir(d);
	homes_unlock(lfd);
	*out = v;
	*n = k;
	return 0;
}
