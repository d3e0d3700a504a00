/*
 * fsview.c: the file service's operations (fsview.h), run against a root
 * directory with the caller's identity.
 *
 * Rules:
 * - every path a request names is opened with openat2(root, path,
 *   RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS): absolute symlinks and ".."
 *   stay inside root, and /proc's magic links (/proc/PID/root, cwd, exe,
 *   fd/N) are refused, so no link a sandbox plants leads out of its view;
 * - below a directory so opened, only single names are used (fstatat,
 *   openat with O_NOFOLLOW, unlinkat, renameat, mkdirat), never a path;
 * - a write's target is found by following its symlinks one at a time,
 *   each target resolved again inside root, as a shell's `> link` would;
 * - replies are built with fswire.h and carry errno values and a step,
 *   never text, so the agent words every message itself;
 * - nothing here logs: in the file helper, stderr is /dev/null.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <unistd.h>

#include "fsview.h"
#include "fswire.h"
#include "util.h"
#include "xmalloc.h"

/* Symlinks followed to a write's target: the kernel's own limit. */
#define FSV_HOPS	40
/* Levels a listing or a recursive delete descends: each holds an open
 * directory, so this bounds the service's descriptors. */
#define FSV_MAX_DEPTH	256
/* Names of one directory read for a sorted listing: a directory of
 * millions of entries costs at most this many names in memory. */
#define FSV_DIR_NAMES	(1 << 20)
/* Tries of an openat2 that raced a rename or a mount (EAGAIN). */
#define FSV_RETRIES	16

struct ctx {
	int		 root;
	uint32_t	 seq;
	fsview_emit_cb	 emit;
	void		*arg;
	int		 gone;		/* emit failed: stop */
};

/* The final reply. fds (nfds of them) go with it (taken). */
static void
reply(struct ctx *c, int rc, int err, int step, uint32_t flags, int64_t num,
    const struct stat *st, const char *s1, const char *s2, int *fds, int nfds)
{
	char msg[sizeof(struct fsw_rep) + 2 * FSW_STR_MAX];
	struct fsw_rep h;
	size_t n;
	int i;

	if (c->gone) {
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		return;
	}
	memset(&h, 0, sizeof(h));
	h.seq = c->seq;
	h.kind = FSW_K_END;
	h.rc = rc;
	h.err = rc == 0 ? 0 : (err > 0 && err < 4096 ? err : EIO);
	h.step = (uint32_t)step;
	h.flags = flags;
	h.num = num;
	if (st != NULL)
		fsw_st_from(&h.st, st);
	if ((n = fsw_rep_build(msg, &h, s1, s2)) == 0) {
		/* a name too long to send: the operation did run */
		n = fsw_rep_build(msg, &h, NULL, NULL);
	}
	if (c->emit(c->arg, msg, n, fds, nfds) == -1)
		c->gone = 1;
}

static void
reply_err(struct ctx *c, int err, int step)
{
	reply(c, -1, err, step, 0, 0, NULL, NULL, NULL, NULL, 0);
}

/* openat2(root, path) inside root; -1 with errno. */
static int
ropen(int root, const char *path, int flags, mode_t mode)
{
	struct open_how how;
	int fd = -1, i;

	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(flags | O_CLOEXEC);
	how.mode = (flags & O_CREAT) ? mode : 0;
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	for (i = 0; i < FSV_RETRIES; i++) {
		fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
		if (fd != -1 || errno != EAGAIN)
			break;
	}
	if (fd == -1 && errno == ENOSYS)
		/* a kernel before 5.6 (or a filter that hides openat2): the
		 * caller's own view, without the magic-link fence; the local
		 * runtime needs 5.12 or later, so this is never it */
		fd = openat(root, path, flags | O_CLOEXEC, mode);
	return fd;
}

/* 1 when s is one usable name: no '/', not "", "." or "..". */
static int
one_name(const char *s)
{
	return s[0] != '\0' && strchr(s, '/') == NULL && strcmp(s, ".") != 0 &&
	    strcmp(s, "..") != 0;
}

/*
 * Splits the absolute path p (changed in place) into its directory and
 * its last name: "/a/b" gives "/a" and "b", "/b" gives "/" and "b".
 */
static void
split(char *p, const char **dir, const char **name)
{
	char *slash = strrchr(p, '/');

	*name = slash + 1;
	if (slash == p)
		*dir = "/";
	else {
		*slash = '\0';
		*dir = p;
	}
}

/* mkdir -p dir (absolute) inside root, each level resolved again. */
static int
mkdirs(int root, const char *dir)
{
	char tmp[PATH_MAX], *p, *slash, save;
	int fd, pfd, r, e;

	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = tmp + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		save = *p;
		*p = '\0';
		if ((fd = ropen(root, tmp, O_PATH | O_DIRECTORY, 0)) == -1 &&
		    errno == ENOENT) {
			slash = strrchr(tmp, '/');
			*slash = '\0';
			pfd = ropen(root, tmp[0] != '\0' ? tmp : "/", O_PATH |
			    O_DIRECTORY, 0);
			*slash = '/';
			if (pfd == -1)
				return -1;
			r = mkdirat(pfd, slash + 1, 0755);
			e = errno;
			close(pfd);
			if (r == -1 && e != EEXIST) {
				errno = e;
				return -1;
			}
			fd = ropen(root, tmp, O_PATH | O_DIRECTORY, 0);
		}
		if (fd == -1)
			return -1;
		close(fd);
		*p = save;
		if (save == '\0' || p[1] == '\0')
			break;
	}
	return 0;
}

/*
 * TMP: the write's target (path's symlinks followed inside root), a new
 * temporary file beside it (.NAME.agent-RND, O_EXCL, 0600) and, with
 * FSW_F_OLD, the old file to read. Replies the directory (O_PATH), the
 * temporary file and the old one, the two names, and the target's stat.
 */
static void
op_tmp(struct ctx *c, const struct fsw_req *q, const char *path,
    const char *rnd)
{
	char cur[FSW_STR_MAX + 1], link[PATH_MAX], next[2 * PATH_MAX + 2];
	char tmp[NAME_MAX + 1];
	const char *dir, *name;
	struct stat st;
	int fds[3] = { -1, -1, -1 }, hops, have = 0, nf, e, i;
	ssize_t k;

	if (strlen(rnd) != 16 || strspn(rnd, "0123456789abcdef") != 16) {
		reply_err(c, EINVAL, FSW_S_PROTO);
		return;
	}
	snprintf(cur, sizeof(cur), "%s", path);
	for (hops = 0;; hops++) {
		if (hops > FSV_HOPS) {
			reply_err(c, ELOOP, FSW_S_LOOP);
			goto out;
		}
		split(cur, &dir, &name);
		if (!one_name(name)) {
			reply_err(c, EISDIR, FSW_S_NOTREG);
			goto out;
		}
		if ((fds[0] = ropen(c->root, dir, O_PATH | O_DIRECTORY, 0)) == -1 &&
		    errno == ENOENT && hops == 0 && (q->flags & FSW_F_MKPARENTS)) {
			if (mkdirs(c->root, dir) == -1) {
				reply_err(c, errno, FSW_S_PARENTS);
				goto out;
			}
			fds[0] = ropen(c->root, dir, O_PATH | O_DIRECTORY, 0);
		}
		if (fds[0] == -1) {
			reply_err(c, errno, FSW_S_RESOLVE);
			goto out;
		}
		if (fstatat(fds[0], name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
			if (errno != ENOENT) {
				reply_err(c, errno, FSW_S_RESOLVE);
				goto out;
			}
			break;			/* a new file */
		}
		if (S_ISREG(st.st_mode)) {
			have = 1;
			break;
		}
		if (!S_ISLNK(st.st_mode)) {
			reply_err(c, EEXIST, FSW_S_NOTREG);
			goto out;
		}
		/* a link: its target, resolved inside root again */
		if ((k = readlinkat(fds[0], name, link, sizeof(link) - 1)) <= 0) {
			reply_err(c, k == 0 ? ENOENT : errno, FSW_S_RESOLVE);
			goto out;
		}
		link[k] = '\0';
		if (link[0] == '/')
			snprintf(next, sizeof(next), "%s", link);
		else
			snprintf(next, sizeof(next), "%s/%s", strcmp(dir, "/") == 0 ?
			    "" : dir, link);
		if (strlen(next) >= sizeof(cur)) {
			reply_err(c, ENAMETOOLONG, FSW_S_RESOLVE);
			goto out;
		}
		memcpy(cur, next, strlen(next) + 1);
		close(fds[0]);
		fds[0] = -1;
	}
	if (snprintf(tmp, sizeof(tmp), ".%s.agent-%s", name, rnd) >=
	    (int)sizeof(tmp)) {
		reply_err(c, ENAMETOOLONG, FSW_S_CREATE);
		goto out;
	}
	if ((fds[1] = openat(fds[0], tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1) {
		reply_err(c, errno, FSW_S_CREATE);
		goto out;
	}
	nf = 2;
	if (have && (q->flags & FSW_F_OLD)) {
		if ((fds[2] = openat(fds[0], name, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) == -1) {
			e = errno;
			(void)unlinkat(fds[0], tmp, 0);
			reply_err(c, e, FSW_S_RESOLVE);
			goto out;
		}
		nf = 3;
	}
	reply(c, 0, 0, 0, have ? FSW_R_HAVE : 0, 0, have ? &st : NULL, tmp, name,
	    fds, nf);
	return;				/* the descriptors went with it */
out:
	for (i = 0; i < 3; i++)
		if (fds[i] != -1)
			close(fds[i]);
}

/* 1 when s is a temporary file's name (op_tmp's). */
static int
is_tmp_name(const char *s)
{
	return one_name(s) && s[0] == '.' && strstr(s, ".agent-") != NULL;
}

/* COMMIT (fds: directory, temporary file): the owner kept (when allowed),
 * the mode given, renamed over the target. */
static void
op_commit(struct ctx *c, const struct fsw_req *q, const char *tmp,
    const char *name, const int *fds)
{
	if (!is_tmp_name(tmp) || !one_name(name)) {
		reply_err(c, EINVAL, FSW_S_PROTO);
		return;
	}
	/* chown first: a chown clears set-id bits the mode then gives */
	if ((q->flags & FSW_F_HAVE) && (q->uid != (uint32_t)geteuid() ||
	    q->gid != (uint32_t)getegid()))
		ign(fchown(fds[1], (uid_t)q->uid, (gid_t)q->gid));
	if (fchmod(fds[1], (mode_t)(q->mode & 07777)) == -1) {
		reply_err(c, errno, FSW_S_CHMOD);
		return;
	}
	if (renameat(fds[0], tmp, fds[0], name) == -1) {
		reply_err(c, errno, FSW_S_RENAME);
		return;
	}
	reply(c, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, 0);
}

static void
op_cancel(struct ctx *c, const char *tmp, const int *fds)
{
	if (!is_tmp_name(tmp)) {
		reply_err(c, EINVAL, FSW_S_PROTO);
		return;
	}
	if (unlinkat(fds[0], tmp, 0) == -1 && errno != ENOENT) {
		reply_err(c, errno, FSW_S_REMOVE);
		return;
	}
	reply(c, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, 0);
}

/* OPEN: a descriptor to read path (non-blocking: a FIFO cannot hang). */
static void
op_open(struct ctx *c, const char *path)
{
	struct stat st;
	int fd;

	if ((fd = ropen(c->root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0)) ==
	    -1 || fstat(fd, &st) == -1) {
		reply_err(c, errno, FSW_S_RESOLVE);
		if (fd != -1)
			close(fd);
		return;
	}
	reply(c, 0, 0, 0, 0, 0, &st, NULL, NULL, &fd, 1);
}

static void
op_stat(struct ctx *c, const struct fsw_req *q, const char *path)
{
	struct stat st;
	int fd;

	if ((fd = ropen(c->root, path, O_PATH | ((q->flags & FSW_F_NOFOLLOW) ?
	    O_NOFOLLOW : 0), 0)) == -1 || fstat(fd, &st) == -1) {
		reply_err(c, errno, FSW_S_RESOLVE);
		if (fd != -1)
			close(fd);
		return;
	}
	close(fd);
	reply(c, 0, 0, 0, 0, 0, &st, NULL, NULL, NULL, 0);
}

/* A listing being sent: a batch of entries, sent when full. */
struct lister {
	struct ctx	*c;
	char		*batch;		/* FSW_MSG_MAX bytes */
	size_t		 len;		/* with its reply header */
	int64_t		 inbatch;
	int64_t		 n, max;
	uint32_t	 depth;		/* levels below the path at most */
	int		 recursive, nohidden, trunc;
};

static void
batch_start(struct lister *l)
{
	l->len = sizeof(struct fsw_rep);
	l->inbatch = 0;
}

static void
batch_send(struct lister *l)
{
	struct fsw_rep h;

	if (l->inbatch == 0 || l->c->gone)
		return;
	memset(&h, 0, sizeof(h));
	h.seq = l->c->seq;
	h.kind = FSW_K_ENTS;
	h.num = l->inbatch;
	memcpy(l->batch, &h, sizeof(h));
	if (l->c->emit(l->c->arg, l->batch, l->len, NULL, 0) == -1)
		l->c->gone = 1;
	batch_start(l);
}

static void
batch_add(struct lister *l, const struct stat *st, const char *rel,
    size_t nrel, const char *target, size_t ntarget)
{
	if (fsw_ent_add(l->batch, &l->len, st, rel, nrel, target,
	    ntarget) == -1) {
		batch_send(l);
		if (fsw_ent_add(l->batch, &l->len, st, rel, nrel, target,
		    ntarget) == -1)
			return;		/* cannot happen: an entry fits alone */
	}
	l->inbatch++;
	l->n++;
}

static int
namecmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the directory open as dfd (taken), rel its path below the listed
 * one (""): names sorted, depth first, never through a link. */
static void
list_tree(struct lister *l, int dfd, const char *rel, uint32_t depth)
{
	char **names = NULL, sub[PATH_MAX], link[PATH_MAX];
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	struct stat st;
	ssize_t k;
	DIR *d;
	int sfd;

	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return;
	}
	while ((de = readdir(d)) != NULL && n < FSV_DIR_NAMES) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    (l->nohidden && de->d_name[0] == '.'))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = xreallocarray(names, cap, sizeof(*names));
		}
		names[n++] = xstrdup(de->d_name);
	}
	if (n > 0)
		qsort(names, n, sizeof(*names), namecmp);
	for (i = 0; i < n && !l->c->gone; i++) {
		if (l->n >= l->max) {
			l->trunc = 1;
			break;
		}
		if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] != '\0' ?
		    "/" : "", names[i]) >= FSW_STR_MAX ||
		    fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		k = 0;
		if (S_ISLNK(st.st_mode) && (k = readlinkat(dirfd(d), names[i], link,
		    sizeof(link) - 1)) < 0)
			k = 0;
		batch_add(l, &st, sub, strlen(sub), link, (size_t)k);
		if (l->recursive && S_ISDIR(st.st_mode) && depth < l->depth &&
		    (sfd = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) != -1)
			list_tree(l, sfd, sub, depth + 1);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
}

/*
 * LIST: path followed; a directory lists its entries (FSW_F_RECURSIVE:
 * down to q->depth levels), anything else lists itself, not followed.
 */
static void
op_list(struct ctx *c, const struct fsw_req *q, const char *path)
{
	struct lister l;
	struct stat top, st;
	char link[PATH_MAX];
	ssize_t k = 0;
	int fd;

	if ((fd = ropen(c->root, path, O_PATH, 0)) == -1 ||
	    fstat(fd, &top) == -1) {
		reply_err(c, errno, FSW_S_RESOLVE);
		if (fd != -1)
			close(fd);
		return;
	}
	close(fd);
	memset(&l, 0, sizeof(l));
	l.c = c;
	l.batch = xmalloc(FSW_MSG_MAX);
	l.max = q->max > 0 ? q->max : 1;
	l.depth = q->depth < FSV_MAX_DEPTH ? q->depth : FSV_MAX_DEPTH;
	l.recursive = (q->flags & FSW_F_RECURSIVE) != 0;
	l.nohidden = (q->flags & FSW_F_NOHIDDEN) != 0;
	batch_start(&l);
	if (S_ISDIR(top.st_mode)) {
		if ((fd = ropen(c->root, path, O_RDONLY | O_DIRECTORY, 0)) == -1) {
			reply_err(c, errno, FSW_S_RESOLVE);
			free(l.batch);
			return;
		}
		list_tree(&l, fd, "", 0);
	} else if ((fd = ropen(c->root, path, O_PATH | O_NOFOLLOW, 0)) != -1) {
		if (fstat(fd, &st) == 0) {
			if (S_ISLNK(st.st_mode) && (k = readlinkat(fd, "", link,
			    sizeof(link) - 1)) < 0)
				k = 0;
			batch_add(&l, &st, "", 0, link, (size_t)k);
		}
		close(fd);
	}
	batch_send(&l);
	free(l.batch);
	reply(c, 0, 0, 0, (S_ISDIR(top.st_mode) ? FSW_R_DIR : 0) |
	    (l.trunc ? FSW_R_TRUNC : 0), l.n, &top, NULL, NULL, NULL, 0);
}

/*
 * Removes what is inside the directory open as dfd (taken), never
 * following a link; counts removals in *n. 0, or -1 with errno and the
 * failing entry's path below the deleted one in fail.
 */
static int
rm_tree(int dfd, const char *rel, int64_t *n, int depth, char *fail,
    size_t faillen)
{
	char sub[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int sfd, rc = 0, e;

	if ((d = fdopendir(dfd)) == NULL) {
		e = errno;
		close(dfd);
		errno = e;
		return -1;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;	/* gone meanwhile */
		snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] != '\0' ? "/" : "",
		    de->d_name);
		if (S_ISDIR(st.st_mode)) {
			sfd = -1;
			if (depth < FSV_MAX_DEPTH)
				sfd = openat(dirfd(d), de->d_name, O_RDONLY |
				    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			else
				errno = ELOOP;
			if (sfd == -1 || rm_tree(sfd, sub, n, depth + 1, fail,
			    faillen) == -1 || unlinkat(dirfd(d), de->d_name,
			    AT_REMOVEDIR) == -1)
				rc = -1;
		} else if (unlinkat(dirfd(d), de->d_name, 0) == -1)
			rc = -1;
		if (rc == 0)
			(*n)++;
		else if (fail[0] == '\0')
			snprintf(fail, faillen, "%s", sub);
	}
	e = errno;
	closedir(d);
	errno = e;
	return rc;
}

/* DELETE: path itself (a link is removed, never followed); a directory
 * only when empty, or with everything in it (FSW_F_RECURSIVE). */
static void
op_delete(struct ctx *c, const struct fsw_req *q, const char *path)
{
	char p[FSW_STR_MAX + 1], fail[PATH_MAX] = "";
	const char *dir, *name;
	struct stat st;
	int64_t n = 0;
	int fd, pfd = -1, dfd, e, step = FSW_S_REMOVE;

	if ((fd = ropen(c->root, path, O_PATH | O_NOFOLLOW, 0)) == -1 ||
	    fstat(fd, &st) == -1) {
		reply_err(c, errno, FSW_S_RESOLVE);
		if (fd != -1)
			close(fd);
		return;
	}
	close(fd);
	snprintf(p, sizeof(p), "%s", path);
	split(p, &dir, &name);
	if (!one_name(name)) {
		reply_err(c, EBUSY, FSW_S_REMOVE);
		return;
	}
	if ((pfd = ropen(c->root, dir, O_PATH | O_DIRECTORY, 0)) == -1) {
		reply_err(c, errno, FSW_S_RESOLVE);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(pfd, name, 0) == -1)
			goto fail;
		n = 1;
	} else if (!(q->flags & FSW_F_RECURSIVE)) {
		if (unlinkat(pfd, name, AT_REMOVEDIR) == -1) {
			if (errno == ENOTEMPTY || errno == EEXIST)
				step = FSW_S_NOTEMPTY;
			goto fail;
		}
		n = 1;
	} else {
		if ((dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC)) == -1 || rm_tree(dfd, "", &n, 0, fail,
		    sizeof(fail)) == -1 || unlinkat(pfd, name, AT_REMOVEDIR) == -1)
			goto fail;
		n++;
	}
	close(pfd);
	reply(c, 0, 0, 0, 0, n, NULL, NULL, NULL, NULL, 0);
	return;
fail:
	e = errno;
	close(pfd);
	reply(c, -1, e, step, 0, n, NULL, fail, NULL, NULL, 0);
}

/* The descriptors each operation takes. */
static int
op_nfds(uint32_t op)
{
	return op == FSW_COMMIT ? 2 : op == FSW_CANCEL ? 1 : 0;
}

void
fsview_serve(int root, const char *msg, size_t n, int *fds, int nfds,
    fsview_emit_cb emit, void *arg)
{
	char s1[FSW_STR_MAX + 1], s2[FSW_STR_MAX + 1];
	struct fsw_req q;
	struct fsw_msg m;
	struct ctx c;
	int i, pathop;

	memset(&c, 0, sizeof(c));
	c.root = root;
	c.emit = emit;
	c.arg = arg;
	if (fsw_req_parse(msg, n, &q, &m) == -1) {
		if (n >= sizeof(q))
			memcpy(&c.seq, msg, sizeof(c.seq));
		reply_err(&c, EINVAL, FSW_S_PROTO);
		goto out;
	}
	c.seq = q.seq;
	memcpy(s1, m.s1, m.n1);
	s1[m.n1] = '\0';
	memcpy(s2, m.s2, m.n2);
	s2[m.n2] = '\0';
	pathop = q.op != FSW_COMMIT && q.op != FSW_CANCEL;
	if (nfds != op_nfds(q.op) || (pathop && s1[0] != '/')) {
		reply_err(&c, EINVAL, FSW_S_PROTO);
		goto out;
	}
	switch (q.op) {
	case FSW_OPEN:
		op_open(&c, s1);
		break;
	case FSW_STAT:
		op_stat(&c, &q, s1);
		break;
	case FSW_TMP:
		op_tmp(&c, &q, s1, s2);
		break;
	case FSW_COMMIT:
		op_commit(&c, &q, s1, s2, fds);
		break;
	case FSW_CANCEL:
		op_cancel(&c, s1, fds);
		break;
	case FSW_LIST:
		op_list(&c, &q, s1);
		break;
	case FSW_DELETE:
		op_delete(&c, &q, s1);
		break;
	default:
		reply_err(&c, EINVAL, FSW_S_PROTO);
	}
out:
	for (i = 0; i < nfds; i++)
		if (fds[i] != -1)
			close(fds[i]);
}
