/*
 * runtime/local/image.c: the layers a sandbox's filesystem is made of.
 * Images: <images_dir>/<name>, a directory (or a symlink to one) that
 * every sandbox of that image mounts read-only and idmapped as its lower
 * layer; nothing writes into an image. The disk image of a disk-limited
 * sandbox: <id>/disk.img, an ext4 file made once at create that holds the
 * writable layers (upper, work, workspace); spawn.c attaches it to a loop
 * device at each start (docs/local-runtime.md, "Disk limit").
 *
 * Rules: an image path must be absolute and free of ',' and ':' (it goes
 * into overlay mount options); the images a create may name are the valid
 * names in images_dir that resolve to a directory (rl_images lists them,
 * at most RL_MAX_IMAGES). Calls record.c and files.c only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/openat2.h>
#include <unistd.h>

#include "log.h"
#include "local_int.h"
#include "xmalloc.h"

int
rl_image_name_valid(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 64 || s[0] == '.' || s[0] == '-')
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return 1;
}

int
rl_resolve_image(const struct rl *rl, const char *name, char *out,
    size_t outlen, char *err, size_t errlen)
{
	char p[RL_PATH_MAX + 256], rp[PATH_MAX];
	struct stat st;

	if (!rl_image_name_valid(name)) {
		snprintf(err, errlen, "invalid image name \"%.64s\"", name);
		return -1;
	}
	snprintf(p, sizeof(p), "%s/%s", rl->images_dir, name);
	if (realpath(p, rp) == NULL || stat(rp, &st) == -1 ||
	    !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "image \"%s\" not found in %s%s", name,
		    rl->images_dir, strcmp(name, "default") == 0 ?
		    " (build it with `make image`)" : "");
		return -1;
	}
	if (strlen(rp) >= outlen || strpbrk(rp, ",:") != NULL) {
		snprintf(err, errlen, "image path unusable: %s", rp);
		return -1;
	}
	snprintf(out, outlen, "%s", rp);
	return 0;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

cJSON *
rl_images(const struct rl *rl)
{
	char dir[RL_PATH_MAX], e[256], **v = NULL;
	struct dirent *de;
	cJSON *a = cJSON_CreateArray();
	size_t n = 0, i;
	DIR *d;

	if ((d = opendir(rl->images_dir)) == NULL)
		return a;
	while ((de = readdir(d)) != NULL && n < RL_MAX_IMAGES)
		if (rl_image_name_valid(de->d_name) && rl_resolve_image(rl,
		    de->d_name, dir, sizeof(dir), e, sizeof(e)) == 0) {
			v = xreallocarray(v, n + 1, sizeof(*v));
			v[n++] = xstrdup(de->d_name);
		}
	closedir(d);
	if (n > 1)
		qsort(v, n, sizeof(*v), name_cmp);
	for (i = 0; i < n; i++) {
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
		free(v[i]);
	}
	free(v);
	return a;
}

/*
 * The disk image of a disk-limited sandbox: <id>/disk.img, ext4 of
 * disk_bytes (sparse), made by mke2fs from a skeleton holding upper/ (the
 * sandbox's root), work/ and workspace/ (wsuid; with ws_src != -1 a copy
 * of that tree, owners moved by map: mke2fs -d keeps owners, modes, times
 * and hard links). No host mount: it is mounted inside the sandbox's
 * mount namespace at each start.
 */
int
rl_mkfs(const struct rl *rl, const char *what, const char *img,
    long long size, char *const av[], const char *logp, int *status,
    char *err, size_t errlen)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int fd, sr;

	if ((fd = open(img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0600)) == -1 || ftruncate(fd, size) == -1) {
		snprintf(err, errlen, "%s %s: %s", what, img, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, logp, O_WRONLY | O_CREAT |
	    O_APPEND, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	sr = posix_spawn(&pid, rl->c.mkfs, &fa, NULL, av, NULL);
	posix_spawn_file_actions_destroy(&fa);
	if (sr != 0) {
		snprintf(err, errlen, "%s: %s", rl->c.mkfs, strerror(sr));
		return -1;
	}
	while (waitpid(pid, status, 0) == -1 && errno == EINTR)
		;
	return 0;
}

int
rl_make_disk(const struct rl *rl, const struct rec *r, uid_t wsuid,
    int ws_src, const struct rl_idmap *map, char *err, size_t errlen)
{
	char img[RL_PATH_MAX], skel[RL_PATH_MAX], p[RL_PATH_MAX + 32];
	char logp[RL_PATH_MAX], e[256];
	/* -O ^resize_inode: no blocks reserved for growing it mounted (it
	 * never is): 248 KiB on the host for 10 GiB instead of 4.3 MiB, and
	 * 20 ms of mke2fs CPU instead of 33 (docs/local-runtime.md "Scale") */
	char *av[] = { "mke2fs", "-q", "-F", "-t", "ext4", "-m", "0", "-O",
	    "^resize_inode", "-E",
	    "root_owner=0:0,lazy_itable_init=1,lazy_journal_init=1", "-d",
	    skel, img, NULL };
	int st = -1, rc = -1;

	if (rl_sdir_path(rl, r->id, "disk.img", img, sizeof(img)) == -1 ||
	    rl_sdir_path(rl, r->id, "disk-skel", skel, sizeof(skel)) == -1 ||
	    rl_sdir_path(rl, r->id, "log", logp, sizeof(logp)) == -1) {
		snprintf(err, errlen, "state path too long");
		return -1;
	}
#define SK(name, mode, u) do {						\
	snprintf(p, sizeof(p), "%s%s", skel, name);			\
	if (rl_mkdir_owned(p, mode, u, u, err, errlen) == -1)		\
		goto out;						\
} while (0)
	SK("", 0755, 0);
	SK("/upper", 0755, (uid_t)r->uid);
	SK("/work", 0700, 0);
	SK("/workspace", 0755, wsuid);
#undef SK
	snprintf(p, sizeof(p), "%s/workspace", skel);
	if (ws_src != -1 && rl_copy_tree(ws_src, p, map, err, errlen) == -1)
		goto out;
	if (rl_mkfs(rl, "disk image", img, r->disk_bytes, av, logp, &st, err,
	    errlen) == -1)
		goto out;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		if (ws_src != -1)
			snprintf(err, errlen, "the copy of /workspace does not "
			    "fit a disk of %lld bytes (%s failed; see the log)",
			    r->disk_bytes, rl->c.mkfs);
		else
			snprintf(err, errlen, "%s failed (status %d; see the log)",
			    rl->c.mkfs, st);
		goto out;
	}
	if (rl_sdir_path(rl, r->id, "disk", p, sizeof(p)) == -1 ||
	    rl_mkdir_owned(p, 0755, 0, 0, err, errlen) == -1)	/* mount point */
		goto out;
	rc = 0;
out:
	if (rl_rmtree(skel, e, sizeof(e)) == -1)
		log_warnx("sandbox=%s remove %s: %s", r->id, skel, e);
	return rc;
}

int
runtime_local_image_add(const struct rt_local_conf *c, const char *name,
    const char *dir, char *err, size_t errlen)
{
	char link[RL_PATH_MAX], rp[PATH_MAX], tmp[RL_PATH_MAX + 32];
	const char *images = c->images_dir != NULL ? c->images_dir :
	    "/var/lib/sandbox/images";
	struct stat st;

	if (!rl_image_name_valid(name)) {
		snprintf(err, errlen, "invalid image name (expected "
		    "[a-z0-9][a-z0-9._-]*)");
		return -1;
	}
	if (dir[0] != '/' || realpath(dir, rp) == NULL ||
	    stat(rp, &st) == -1 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: not an absolute path to a directory",
		    dir);
		return -1;
	}
	if (access(rp, F_OK) == 0) {
		char sh[PATH_MAX + 16];

		snprintf(sh, sizeof(sh), "%s/bin/sh", rp);
		if (access(sh, F_OK) == -1)
			log_warnx("image %s has no /bin/sh", rp);
	}
	if (mkdir(images, 0755) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", images, strerror(errno));
		return -1;
	}
	snprintf(link, sizeof(link), "%s/%s", images, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", link, (long)getpid());
	(void)unlink(tmp);
	if (symlink(rp, tmp) == -1 || rename(tmp, link) == -1) {
		snprintf(err, errlen, "link %s: %s", link, strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

/*
 * rel's place in the image: symlinks resolved as the sandbox would, with
 * the image as root (openat2 RESOLVE_IN_ROOT: an absolute or ../ link
 * stays inside), "etc/ssl/certs/x" becoming "etc/pki/tls/certs/x" where
 * etc/ssl/certs links there. 0 with out; 1 if rel does not exist (out is
 * then rel with its longest existing parent resolved); -1 on error.
 */
int
rl_image_path(const char *image_dir, const char *rel, char *out, size_t outlen)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	char root[PATH_MAX], lnk[64], got[PATH_MAX], head[PATH_MAX];
	const char *tail = "";
	size_t rl;
	ssize_t n;
	int rfd, fd = -1, missing = 0;
	char *slash;

	if (realpath(image_dir, root) == NULL ||
	    snprintf(head, sizeof(head), "%s", rel) >= (int)sizeof(head) ||
	    (rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	/* the longest prefix of rel that resolves */
	for (;;) {
		fd = (int)syscall(SYS_openat2, rfd, head, &how, sizeof(how));
		if (fd != -1 || errno != ENOENT)
			break;
		missing = 1;
		if ((slash = strrchr(head, '/')) == NULL) {
			head[0] = '\0';
			break;
		}
		*slash = '\0';
		tail = rel + (slash - head) + 1;
	}
	close(rfd);
	if (fd == -1 && head[0] != '\0')
		return -1;
	if (fd == -1) {	/* nothing of rel exists */
		snprintf(out, outlen, "%s", rel);
		return 1;
	}
	snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", fd);
	n = readlink(lnk, got, sizeof(got) - 1);
	close(fd);
	rl = strlen(root);
	if (n < (ssize_t)rl || strncmp(got, root, rl) != 0 ||
	    (n > (ssize_t)rl && got[rl] != '/'))
		return -1;
	got[n] = '\0';
	if (snprintf(out, outlen, "%s%s%s", got[rl] == '/' ? got + rl + 1 : "",
	    missing && got[rl] == '/' ? "/" : "", missing ? tail : "") >=
	    (int)outlen)
		return -1;
	return missing;
}
