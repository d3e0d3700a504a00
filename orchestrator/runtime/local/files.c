/*
 * runtime/local/files.c: files in trees a sandbox controls (its upper
 * layer, workspace and agent directories, and so its whole state
 * directory once it is being removed): directories made owned by the
 * sandbox's ids, files written into the upper layer, and trees removed.
 *
 * Rules: a sandbox may have replaced any path in those trees with a
 * symlink to a host path, so nothing here follows a link: paths are
 * walked one component at a time with O_NOFOLLOW from a directory fd,
 * and removal unlinks links instead of entering them. Calls nothing else
 * in the runtime.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local_int.h"

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
