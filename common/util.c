/* util.c: clocks and whole-file I/O shared by every part. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* Clock c in units of 1/per seconds (1000: ms, 1000000: us). */
static long long
clock_in(clockid_t c, long long per)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (long long)ts.tv_sec * per + ts.tv_nsec / (1000000000 / per);
}

long long
util_unix_ms(void)
{
	return clock_in(CLOCK_REALTIME, 1000);
}

long long
util_mono_ms(void)
{
	return clock_in(CLOCK_MONOTONIC, 1000);
}

long long
util_mono_us(void)
{
	return clock_in(CLOCK_MONOTONIC, 1000000);
}

long long
util_mono_coarse_ms(void)
{
	return clock_in(CLOCK_MONOTONIC_COARSE, 1000);
}

void
util_deadline(struct timespec *ts, long long ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

int
util_read_fd(int fd, struct buf *b)
{
	char chunk[16384];
	ssize_t n;

	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			return 0;
		if (buf_add(b, chunk, (size_t)n) == -1) {
			errno = EFBIG;
			return -1;
		}
	}
}

int
util_read_file(const char *path, struct buf *b, char *err, size_t errlen)
{
	return util_read_file_flags(path, 0, b, err, errlen);
}

int
util_read_file_flags(const char *path, int oflags, struct buf *b, char *err,
    size_t errlen)
{
	int fd, rc;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | oflags)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	/* read(2) never fails with EFBIG: it means b->max. */
	if ((rc = util_read_fd(fd, b)) == -1 && errno == EFBIG)
		snprintf(err, errlen, "%s: larger than %zu bytes", path, b->max);
	else if (rc == -1)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	close(fd);
	return rc;
}

/* util_write_file_atomic, and util_write_file_replace without the fsyncs. */
static int
write_file(const char *path, const void *data, size_t len, mode_t mode,
    int durable, char *err, size_t errlen)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	const char *p = data, *slash;
	size_t off = 0;
	ssize_t n;
	int fd, dfd;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%lld", path,
	    (long)getpid(), util_mono_ms()) >= sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)) == -1) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	while (off < len) {
		n = write(fd, p + off, len - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			goto fail;
		off += (size_t)n;
	}
	if (durable && fsync(fd) == -1)
		goto fail;
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) == -1)
		goto fail;
	if (durable && (slash = strrchr(path, '/')) != NULL &&
	    (size_t)(slash - path) < sizeof(dir)) {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
		if ((dfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
			(void)fsync(dfd);
			close(dfd);
		}
	}
	return 0;
fail:
	snprintf(err, errlen, "%s: %s", path, strerror(errno));
	if (fd != -1)
		close(fd);
	unlink(tmp);
	return -1;
}

int
util_write_file_atomic(const char *path, const void *data, size_t len,
    mode_t mode, char *err, size_t errlen)
{
	return write_file(path, data, len, mode, 1, err, errlen);
}

int
util_write_file_replace(const char *path, const void *data, size_t len,
    mode_t mode, char *err, size_t errlen)
{
	return write_file(path, data, len, mode, 0, err, errlen);
}

uint32_t
util_hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

const char *
util_kv_find(const char *s, size_t n, size_t *klen)
{
	const char *eq = memchr(s, '=', n);

	if (eq == NULL || eq == s)
		return NULL;
	*klen = (size_t)(eq - s);
	return eq + 1;
}

int
util_kv_split(char *s, char **k, char **v)
{
	size_t kl;

	if (util_kv_find(s, strlen(s), &kl) == NULL)
		return -1;
	s[kl] = '\0';
	*k = s;
	*v = s + kl + 1;
	return 0;
}

void
util_iso_ms(char *out, size_t len, long long ms)
{
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	size_t n;

	gmtime_r(&sec, &tm);
	n = strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, len - n, ".%03dZ", (int)(ms % 1000));
}
