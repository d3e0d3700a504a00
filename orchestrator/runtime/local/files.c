/*
 * runtime/local/files.c: files in trees a sandbox controls (its upper
 * layer, workspace and agent directories, and so its whole state
 * directory once it is being removed): directories made owned by the
 * sandbox's ids, files written into the upper layer, trees removed, a
 * workspace copied into another sandbox, and the bytes a tree holds.
 *
 * Rules: a sandbox may have replaced any path in those trees with a
 * symlink to a host path, so nothing here follows a link: paths are
 * walked one component at a time with O_NOFOLLOW from a directory fd,
 * and removal unlinks links instead of entering them; a copy makes links
 * as links and reads a file only after checking the opened fd is one.
 * Calls nothing else in the runtime.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local_int.h"
#include "xmalloc.h"

int
rl_mkdir_owned(const char *p, int mode, uid_t uid, gid_t gid, char *err,
    size_t errlen)
{
	if (mkdir(p, (mode_t)mode) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", p, strerror(errno));
		return -1;
	}
	if (chown(p, uid, gid) == -1 || chmod(p, (mode_t)mode) == -1) {
		snprintf(err, errlen, "chown %s: %s", p, strerror(errno));
		return -1;
	}
	return 0;
}

/* Opens (creating as needed, owned by uid) the directory rel under the
 * directory fd top, one component at a time with O_NOFOLLOW. */
static int
open_dirs_nofollow(int top, const char *rel, uid_t uid, gid_t gid)
{
	char comp[256];
	const char *p = rel, *e;
	int fd, nfd;

	if ((fd = dup(top)) == -1)
		return -1;
	while (*p != '\0') {
		e = strchr(p, '/');
		if (e == NULL)
			e = p + strlen(p);
		if ((size_t)(e - p) >= sizeof(comp) || e == p) {
			close(fd);
			errno = EINVAL;
			return -1;
		}
		memcpy(comp, p, (size_t)(e - p));
		comp[e - p] = '\0';
		if (mkdirat(fd, comp, 0755) == 0 &&
		    fchownat(fd, comp, uid, gid, AT_SYMLINK_NOFOLLOW) == -1) {
			close(fd);
			return -1;
		}
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		close(fd);
		if (nfd == -1)
			return -1;
		fd = nfd;
		p = *e == '/' ? e + 1 : e;
	}
	return fd;
}

int
rl_write_in_upper(const char *upper, const char *dir, const char *name,
    const char *data, size_t len, uid_t uid, gid_t gid, char *err,
    size_t errlen)
{
	int top, d, fd, rc = -1;

	top = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (top == -1) {
		snprintf(err, errlen, "open %s: %s", upper, strerror(errno));
		return -1;
	}
	d = open_dirs_nofollow(top, dir, uid, gid);
	close(top);
	if (d == -1) {
		snprintf(err, errlen, "upper %s: %s", dir, strerror(errno));
		return -1;
	}
	(void)unlinkat(d, name, 0);
	fd = openat(d, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0644);
	if (fd == -1 || write(fd, data, len) != (ssize_t)len ||
	    fchown(fd, uid, gid) == -1) {
		snprintf(err, errlen, "write %s/%s: %s", dir, name,
		    strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	close(d);
	return rc;
}

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

/* ---- copying a workspace into another sandbox ---- */

/* One copy in progress. */
struct cp {
	const struct rl_idmap	*map;
	int			 droot;		/* the destination's top */
	long long		 entries;	/* copied so far */
	struct cp_link {
		dev_t	 dev;
		ino_t	 ino;
		char	*path;			/* first copy, under droot */
	}			*links;		/* files with more than one link: a
						 * hash of RL_COPY_LINK_SLOTS, made at
						 * the first */
	size_t			 nlinks;
	size_t			 link_bytes;	/* of the paths kept */
	char			 path[PATH_MAX];	/* the entry, under droot */
	char			*err;
	size_t			 errlen;
};

static long long
map_id(long long from_base, long long from_range, long long from_agent,
    const struct rl_idmap *m, long long h)
{
	long long in = m->to_agent;

	if (h >= from_base && h < from_base + from_range) {
		in = h - from_base;
		if (in == from_agent)
			in = m->to_agent;
	}
	if (in >= m->to_range)
		in = m->to_agent;
	return m->to_base + in;
}

/* Gives the entry name (in dfd) st's owners through the map, its mode
 * (after the chown, which clears set-id bits) and times. */
static int
cp_attrs(struct cp *c, int dfd, const char *name, const struct stat *st)
{
	const struct rl_idmap *m = c->map;
	struct timespec ts[2] = { st->st_atim, st->st_mtim };
	uid_t u = (uid_t)map_id(m->from_base, m->from_range, m->from_agent, m,
	    (long long)st->st_uid);
	gid_t g = (gid_t)map_id(m->from_base, m->from_range, m->from_agent, m,
	    (long long)st->st_gid);

	if (fchownat(dfd, name, u, g, AT_SYMLINK_NOFOLLOW) == -1 ||
	    (!S_ISLNK(st->st_mode) && fchmodat(dfd, name, st->st_mode & 07777,
	    0) == -1) ||
	    utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW) == -1) {
		snprintf(c->err, c->errlen, "copy %s: attributes: %s", c->path,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* Bytes [off, end) of in into out at the same offsets: copy_file_range
 * while the kernel can (*kernel), else pread/pwrite. 0, or -1. */
static int
cp_range(int in, int out, off_t off, off_t end, int *kernel)
{
	char b[65536];
	off_t oi = off, oo = off;
	ssize_t n, w, o;
	size_t want;

	while (off < end) {
		want = (size_t)(end - off);
		if (*kernel && (n = copy_file_range(in, &oi, out, &oo, want,
		    0)) == -1 && (errno == EXDEV || errno == EINVAL ||
		    errno == ENOSYS || errno == EOPNOTSUPP)) {
			*kernel = 0;
			continue;
		}
		if (!*kernel && (n = pread(in, b, want < sizeof(b) ? want :
		    sizeof(b), off)) > 0)
			for (o = 0; o < n; o += w)
				if ((w = pwrite(out, b + o, (size_t)(n - o),
				    off + o)) == -1)
					return -1;
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			break;		/* shrank under the copy */
		off += n;
		oi = oo = off;
	}
	return 0;
}

/*
 * The data of the open file in into out: a reflink where the filesystem
 * offers one, else its data ranges only (SEEK_DATA/SEEK_HOLE: a sparse
 * file stays sparse, so a sandbox cannot turn a terabyte of holes into a
 * terabyte of host disk), up to size (the size when it was opened: a
 * file growing under the copy is cut). 0, or -1.
 */
static int
cp_data(int in, int out, off_t size)
{
	off_t data = 0, hole;
	int kernel = 1;

	if (ioctl(out, FICLONE, in) == 0)
		return 0;
	while (data < size) {
		if ((data = lseek(in, data, SEEK_DATA)) == -1) {
			if (errno == ENXIO)
				break;		/* only a hole is left */
			data = 0;		/* no SEEK_DATA here: all of it */
			hole = size;
		} else if ((hole = lseek(in, data, SEEK_HOLE)) == -1 ||
		    hole > size)
			hole = size;
		if (data >= size)
			break;
		if (cp_range(in, out, data, hole, &kernel) == -1)
			return -1;
		data = hole;
	}
	return ftruncate(out, size);
}

/* A file with other links already copied: link to that copy. 1 if
 * linked, else 0 (the caller copies it; its first copy is recorded). */
static int
cp_hardlink(struct cp *c, int ddir, const char *name, const struct stat *st)
{
	size_t h, n;
	struct cp_link *l;

	if (st->st_nlink < 2)
		return 0;
	if (c->links == NULL)
		c->links = xcalloc(RL_COPY_LINK_SLOTS, sizeof(*c->links));
	h = ((size_t)st->st_ino * 31 + (size_t)st->st_dev) % RL_COPY_LINK_SLOTS;
	for (n = 0; n < RL_COPY_LINK_SLOTS; n++) {
		l = &c->links[(h + n) % RL_COPY_LINK_SLOTS];
		if (l->path == NULL)
			break;
		if (l->dev == st->st_dev && l->ino == st->st_ino)
			return linkat(c->droot, l->path, ddir, name, 0) == 0;
	}
	/* at most half the slots, so a search ends at an empty one */
	if (n < RL_COPY_LINK_SLOTS && c->nlinks < RL_COPY_LINK_SLOTS / 2 &&
	    c->link_bytes + strlen(c->path) < RL_COPY_MAX_LINK_BYTES) {
		l->dev = st->st_dev;
		l->ino = st->st_ino;
		l->path = xstrdup(c->path);
		c->link_bytes += strlen(c->path) + 1;
		c->nlinks++;
	}
	return 0;
}

static int
cp_file(struct cp *c, int sdir, int ddir, const char *name,
    const struct stat *st)
{
	struct stat fst;
	int in, out = -1, rc = -1;

	if (cp_hardlink(c, ddir, name, st) == 1)
		return 0;
	/* O_NONBLOCK: the sandbox may have swapped in a fifo since the stat */
	if ((in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1 || fstat(in, &fst) == -1 || !S_ISREG(fst.st_mode)) {
		if (in != -1)
			close(in);
		return 0;	/* gone or no longer a file: skipped */
	}
	if ((out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1 || cp_data(in, out, fst.st_size) == -1) {
		snprintf(c->err, c->errlen, "copy %s: %s", c->path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	close(in);
	if (out != -1 && close(out) == -1 && rc == 0) {
		snprintf(c->err, c->errlen, "copy %s: %s", c->path, strerror(errno));
		rc = -1;
	}
	return rc == 0 ? cp_attrs(c, ddir, name, &fst) : -1;
}

static int cp_dir(struct cp *, int, int, int);

/* One entry of the source directory sdir into ddir. */
static int
cp_entry(struct cp *c, int sdir, int ddir, const char *name, int depth)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;
	int s2, d2, rc;

	if (++c->entries > RL_COPY_MAX_ENTRIES) {
		snprintf(c->err, c->errlen, "more than %d files and directories "
		    "in /workspace", RL_COPY_MAX_ENTRIES);
		return -1;
	}
	if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return 0;	/* gone since readdir */
	if (S_ISREG(st.st_mode))
		return cp_file(c, sdir, ddir, name, &st);
	if (S_ISLNK(st.st_mode)) {
		if ((n = readlinkat(sdir, name, target, sizeof(target) - 1)) == -1)
			return 0;
		target[n] = '\0';
		if (symlinkat(target, ddir, name) == -1) {
			snprintf(c->err, c->errlen, "copy %s: %s", c->path,
			    strerror(errno));
			return -1;
		}
		return cp_attrs(c, ddir, name, &st);
	}
	if (S_ISFIFO(st.st_mode)) {
		if (mkfifoat(ddir, name, 0600) == -1) {
			snprintf(c->err, c->errlen, "copy %s: %s", c->path,
			    strerror(errno));
			return -1;
		}
		return cp_attrs(c, ddir, name, &st);
	}
	if (!S_ISDIR(st.st_mode))
		return 0;	/* devices and sockets are not copied */
	if (depth >= RL_COPY_MAX_DEPTH) {
		snprintf(c->err, c->errlen, "directories in /workspace nested "
		    "deeper than %d", RL_COPY_MAX_DEPTH);
		return -1;
	}
	if ((s2 = openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return 0;	/* replaced since the stat */
	if (mkdirat(ddir, name, 0700) == -1 || (d2 = openat(ddir, name,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		snprintf(c->err, c->errlen, "copy %s: %s", c->path,
		    strerror(errno));
		close(s2);
		return -1;
	}
	rc = cp_dir(c, s2, d2, depth + 1);
	close(s2);
	close(d2);
	return rc == 0 ? cp_attrs(c, ddir, name, &st) : -1;
}

/* The entries of sdir into ddir (both fds stay the caller's). */
static int
cp_dir(struct cp *c, int sdir, int ddir, int depth)
{
	size_t plen = strlen(c->path), nl;
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	if ((fd = dup(sdir)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		snprintf(c->err, c->errlen, "copy %s: %s", c->path,
		    strerror(errno));
		return -1;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		nl = strlen(de->d_name);
		if (plen + 1 + nl >= sizeof(c->path)) {
			snprintf(c->err, c->errlen, "a path in /workspace is "
			    "longer than %d bytes", PATH_MAX);
			rc = -1;
			break;
		}
		snprintf(c->path + plen, sizeof(c->path) - plen, "%s%s",
		    plen > 0 ? "/" : "", de->d_name);
		rc = cp_entry(c, sdir, ddir, de->d_name, depth);
		c->path[plen] = '\0';
	}
	closedir(d);
	return rc;
}

int
rl_copy_tree(int src, const char *dst, const struct rl_idmap *map, char *err,
    size_t errlen)
{
	struct cp c;
	size_t i;
	int rc;

	memset(&c, 0, sizeof(c));
	c.map = map;
	c.err = err;
	c.errlen = errlen;
	if ((c.droot = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "open %s: %s", dst, strerror(errno));
		return -1;
	}
	rc = cp_dir(&c, src, c.droot, 0);
	for (i = 0; c.links != NULL && i < RL_COPY_LINK_SLOTS; i++)
		free(c.links[i].path);
	free(c.links);
	close(c.droot);
	return rc;
}

/* Allocated bytes under dfd/name, counting at most *left more entries. */
static long long
du_at(int dfd, const char *name, long long *left, int depth)
{
	struct stat st;
	struct dirent *de;
	long long sum;
	DIR *d;
	int fd;

	if (*left <= 0 || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return 0;
	(*left)--;
	sum = (long long)st.st_blocks * 512;
	if (!S_ISDIR(st.st_mode) || depth >= RL_COPY_MAX_DEPTH)
		return sum;
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return sum;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return sum;
	}
	while ((de = readdir(d)) != NULL && *left > 0)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			sum += du_at(dirfd(d), de->d_name, left, depth + 1);
	closedir(d);
	return sum;
}

long long
rl_tree_bytes(const char *path, long long *left)
{
	return du_at(AT_FDCWD, path, left, 0);
}
