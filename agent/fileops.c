/*
 * fileops.c: the /v1/files endpoints (see fileops.h). Paths are absolute
 * or relative to the workdir, cleaned lexically (resolve), then handed to
 * the file service (fsd.h), which resolves and opens them in the
 * sandbox's own view, with the sandbox's identity: nothing here opens,
 * stats or removes a path the caller named. What comes back is
 * descriptors, which this file only reads and writes (its own fstat
 * deciding what they are), and stats and names, which it words into
 * replies. Reads (load) take regular files only, up to EDIT_MAX_FILE.
 * Writes (write_atomic, a raw PUT) keep the file's mode (fchmod, so no
 * umask applies) and owner (when allowed), write through a symlink to its
 * target, and put their temporary file beside the target as a hidden
 * .NAME.agent-RANDOM that no failure leaves behind. Every handler replies
 * exactly once (conn.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "conn.h"
#include "edit.h"
#include "fileops.h"
#include "fsd.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "strnum.h"
#include "util.h"
#include "xmalloc.h"

/* Lexically cleans an absolute path in place: "//", "/./", "/x/.." go. */
static void
clean_path(char *p)
{
	char *src = p, *dst = p, *slash;

	while (*src != '\0') {
		if (src[0] == '/' && src[1] == '/') {
			src++;
			continue;
		}
		if (src[0] == '/' && src[1] == '.' && (src[2] == '/' || src[2] == '\0')) {
			src += 2;
			continue;
		}
		if (src[0] == '/' && src[1] == '.' && src[2] == '.' &&
		    (src[3] == '/' || src[3] == '\0')) {
			src += 3;
			*dst = '\0';
			slash = strrchr(p, '/');
			dst = slash != NULL ? slash : p;
			continue;
		}
		*dst++ = *src++;
	}
	*dst = '\0';
	if (p[0] == '\0') {
		p[0] = '/';
		p[1] = '\0';
	}
}

/* Absolute path for p (relative to the workdir). -1 if unusable. */
static int
resolve(const char *p, size_t plen, char *out, size_t outlen)
{
	int n;

	if (plen == 0 || memchr(p, '\0', plen) != NULL)
		return -1;
	if (p[0] == '/')
		n = snprintf(out, outlen, "%s", p);
	else
		n = snprintf(out, outlen, "%s/%s", agent_conf.workdir, p);
	if (n < 0 || (size_t)n >= outlen)
		return -1;
	clean_path(out);
	return 0;
}

int
fileops_mkdirs(const char *dir)
{
	char tmp[PATH_MAX], *p;

	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp))
		return -1;
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) == -1 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, 0755) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

/* 1 if errno means the filesystem (or a quota) is full. */
static int
is_nospace(int e)
{
	return e == ENOSPC || e == EDQUOT;
}

/* Words a failed write's opening (fsd_tmp_open: errno e, step) for path. */
static void
tmp_error(const char *path, int e, int step, char *err, size_t errlen)
{
	switch (step) {
	case FSW_S_PARENTS:
		snprintf(err, errlen, "cannot create the parent directories of "
		    "%s: %s", path, strerror(e));
		break;
	case FSW_S_NOTREG:
		snprintf(err, errlen, "%s exists and is not a regular file", path);
		break;
	case FSW_S_LOOP:
		snprintf(err, errlen, "%s: too many levels of symbolic links on "
		    "the way to the file", path);
		break;
	case FSW_S_CREATE:
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
		break;
	default:
		snprintf(err, errlen, "%s: %s", path, strerror(e));
	}
}

/*
 * Opens a write to path (old: with a descriptor of the existing file).
 * -1 with err (and errno) when path cannot be written.
 */
static int
atomic_open(struct fsd_tmp *t, const char *path, int mkp, int old, char *err,
    size_t errlen)
{
	int step, e;

	memset(t, 0, sizeof(*t));
	t->dir = t->fd = t->old = -1;
	if (path[0] != '\0' && path[1] != '\0' && path[strlen(path) - 1] == '/') {
		snprintf(err, errlen, "%s names a directory (trailing /): give a "
		    "file name", path);
		errno = EISDIR;
		return -1;
	}
	if (fsd_tmp_open(path, mkp, old, t, &step) == -1) {
		e = errno;
		tmp_error(path, e, step, err, errlen);
		errno = e;
		return -1;
	}
	return 0;
}

/* Writes p[0..n) to t's temporary file. 0, or -1 with errno. */
static int
atomic_write(struct fsd_tmp *t, const char *p, size_t n)
{
	ssize_t k;

	while (n > 0) {
		k = write(t->fd, p, n);
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/*
 * Puts t's temporary file in place (fsd_tmp_commit: mode -1 keeps the
 * target's, 0644 for a new file). 0 (t->fd still open), or -1 with err
 * and errno (the temporary file removed, t closed).
 */
static int
atomic_commit(struct fsd_tmp *t, const char *path, int mode, char *err,
    size_t errlen)
{
	int step, e;

	if (fsd_tmp_commit(t, mode, &step) == -1) {
		e = errno;
		snprintf(err, errlen, "%s %s: %s", step == FSW_S_CHMOD ? "chmod" :
		    step == FSW_S_RENAME ? "rename to" : "writing", path,
		    strerror(e));
		errno = e;
		return -1;
	}
	return 0;
}

/* Writes data to path atomically (mode -1 keeps an existing file's mode;
 * mkp creates missing directories). 0, or -1 with err. */
static int
write_atomic(const char *path, const char *data, size_t len, int mode,
    int mkp, char *err, size_t errlen)
{
	struct fsd_tmp t;
	int e;

	if (atomic_open(&t, path, mkp, 0, err, errlen) == -1)
		return -1;
	if (atomic_write(&t, data, len) == -1) {
		e = errno;
		snprintf(err, errlen, "writing %s: %s", path, strerror(e));
		fsd_tmp_cancel(&t);
		errno = e;
		return -1;
	}
	if (atomic_commit(&t, path, mode, err, errlen) == -1)
		return -1;
	fsd_tmp_close(&t);
	return 0;
}

/* Replies a failed write (errno e, worded in err): 507 when the
 * filesystem or a quota is full, as a raw PUT does. */
static void
reply_write_error(struct conn *c, const char *path, int e, const char *err)
{
	if (is_nospace(e))
		conn_reply_error(c, 507, "no_space", "%s: no space left: the "
		    "filesystem (or the home's quota) is full; the file is "
		    "unchanged", path);
	else
		conn_reply_error(c, 422, "edit_failed", "%s", err);
}

/* Replies the failure (errno e) of a lookup of path: 404 when missing. */
static void
reply_lookup(struct conn *c, const char *path, int e)
{
	conn_reply_error(c, e == ENOENT ? 404 : 422, e == ENOENT ? "not_found" :
	    "edit_failed", "%s: %s", path, strerror(e));
}

/*
 * Reads a regular file into b (max EDIT_MAX_FILE). Replies the error itself
 * and returns -1 on failure.
 */
static int
load(struct conn *c, const char *path, struct buf *b)
{
	struct stat st;
	int fd = -1, e;

	buf_init(b, EDIT_MAX_FILE);
	/* opened non-blocking: a FIFO must not hang the agent */
	if (fsd_open(path, &fd) == -1 || fstat(fd, &st) == -1) {
		e = errno;
		if (fd != -1)
			close(fd);
		reply_lookup(c, path, e);
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		conn_reply_error(c, 422, "edit_failed", "%s is a directory", path);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		conn_reply_error(c, 422, "edit_failed", "%s is not a regular file", path);
		return -1;
	}
	if ((unsigned long long)st.st_size > EDIT_MAX_FILE) {
		close(fd);
		conn_reply_error(c, 413, "too_large", "%s is %lld bytes; the limit "
		    "is %zu", path, (long long)st.st_size, EDIT_MAX_FILE);
		return -1;
	}
	if (util_read_fd(fd, b) == -1) {
		e = errno;
		close(fd);
		buf_free(b);
		if (e == EFBIG)
			conn_reply_error(c, 413, "too_large", "%s grew past %zu bytes",
			    path, EDIT_MAX_FILE);
		else
			conn_reply_error(c, 422, "edit_failed", "reading %s: %s", path,
			    strerror(e));
		return -1;
	}
	close(fd);
	if (b->p == NULL)
		ign(buf_add(b, "", 0));
	return 0;
}

static void
reply_content(struct conn *c, const char *key, const struct buf *content,
    const char *extra_key, int extra_bool)
{
	struct buf b;
	struct jw w;

	buf_init(&b, AGENT_MAX_RESP);
	jw_init(&w, &b);
	jw_obj(&w);
	if (extra_key != NULL) {
		jw_key(&w, extra_key);
		jw_bool(&w, extra_bool);
	}
	jw_key(&w, key);
	jw_str(&w, content->p ? content->p : "", content->len);
	jw_obj_end(&w);
	conn_reply_jw(c, &w, &b);
}

struct ent {
	char	*path;
	int	 dir;
};

static int
entcmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->path, ((const struct ent *)b)->path);
}

/* The entries of a view's directory listing, gathered. */
struct viewlist {
	const char	*dir;		/* the listed path */
	struct ent	*v;
	size_t		 n, cap;
};

static void
view_ent(void *arg, const struct fsw_ent *e)
{
	struct viewlist *l = arg;
	char path[PATH_MAX];

	if (e->nrel == 0 || snprintf(path, sizeof(path), "%s/%.*s",
	    strcmp(l->dir, "/") == 0 ? "" : l->dir, (int)e->nrel, e->rel) >=
	    (int)sizeof(path))
		return;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	l->v[l->n].path = xstrdup(path);
	l->v[l->n].dir = S_ISDIR((mode_t)e->st.mode);
	l->n++;
}

/* A directory's view: two levels, hidden entries left out, sorted. */
static void
view_dir(struct conn *c, const char *path)
{
	struct viewlist l = { path, NULL, 0, 0 };
	struct stat top;
	size_t i;
	int more = 0;
	struct buf out;

	if (fsd_list(path, FSW_F_RECURSIVE | FSW_F_NOHIDDEN, 1, FILEOPS_MAX_LIST,
	    view_ent, &l, &top, &more) == -1) {
		for (i = 0; i < l.n; i++)
			free(l.v[i].path);
		free(l.v);
		reply_lookup(c, path, errno);
		return;
	}
	if (l.n > 0)
		qsort(l.v, l.n, sizeof(*l.v), entcmp);
	buf_init(&out, AGENT_MAX_OUTPUT_CAP);
	ign(buf_addf(&out, "Files and directories up to 2 levels deep in %s, "
	    "excluding hidden items:\n%s/\n", path, path));
	for (i = 0; i < l.n; i++) {
		ign(buf_addf(&out, "%s%s\n", l.v[i].path, l.v[i].dir ? "/" : ""));
		free(l.v[i].path);
	}
	if (more)
		ign(buf_addf(&out, "[... listing stopped at %d entries ...]\n",
		    FILEOPS_MAX_LIST));
	free(l.v);
	reply_content(c, "content", &out, "is_directory", 1);
	buf_free(&out);
}

static int
get_path(struct conn *c, const struct json *body, char *path, size_t len)
{
	const char *p;
	size_t plen;

	if (json_get_str(body, "path", &p, &plen) != 0) {
		conn_reply_error(c, 400, "bad_request", "\"path\" (string) is required");
		return -1;
	}
	if (resolve(p, plen, path, len) == -1) {
		conn_reply_error(c, 400, "bad_request", "\"path\" must be a non-empty "
		    "path without NUL bytes, shorter than %d bytes", PATH_MAX);
		return -1;
	}
	return 0;
}

static void
op_view(struct conn *c, const struct json *body)
{
	char path[PATH_MAX], err[512];
	const struct json *vr = json_get(body, "view_range");
	long long start = 0, end = 0;
	struct stat st;
	struct buf data, out;

	if (get_path(c, body, path, sizeof(path)) == -1)
		return;
	if (vr != NULL && vr->type != JSON_NULL) {
		if (vr->type != JSON_ARR || vr->n != 2 || vr->child->type != JSON_NUM ||
		    !vr->child->is_int || vr->child->next->type != JSON_NUM ||
		    !vr->child->next->is_int) {
			conn_reply_error(c, 400, "bad_request",
			    "view_range must be [start, end] integers (end -1 = to the end)");
			return;
		}
		start = vr->child->i;
		end = vr->child->next->i;
		if (start == 0 && end == 0)
			start = -1;	/* [0,0] is not "no range" */
	}
	if (fsd_stat(path, 0, &st) == -1) {
		reply_lookup(c, path, errno);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		if (vr != NULL && vr->type != JSON_NULL) {
			conn_reply_error(c, 422, "edit_failed",
			    "view_range is not allowed for a directory");
			return;
		}
		view_dir(c, path);
		return;
	}
	if (load(c, path, &data) == -1)
		return;
	if (edit_is_binary(data.p, data.len)) {
		conn_reply_error(c, 422, "binary_file", "%s looks binary (%zu bytes, "
		    "NUL bytes or invalid UTF-8); view only shows text: use GET "
		    "/v1/files/raw or a shell command such as xxd", path, data.len);
		buf_free(&data);
		return;
	}
	buf_init(&out, AGENT_MAX_OUTPUT_CAP * 2);
	if (edit_view(data.p, data.len, start, end, &out, err, sizeof(err)) == -1) {
		conn_reply_error(c, 422, "edit_failed", "%s", err);
	} else
		reply_content(c, "content", &out, NULL, 0);
	buf_free(&out);
	buf_free(&data);
}

static void
op_create(struct conn *c, const struct json *body)
{
	char path[PATH_MAX], err[512];
	const char *text;
	size_t tlen;
	struct stat st;
	int existed;

	if (get_path(c, body, path, sizeof(path)) == -1)
		return;
	if (json_get_str(body, "file_text", &text, &tlen) != 0) {
		conn_reply_error(c, 400, "bad_request", "\"file_text\" (string) is required");
		return;
	}
	existed = fsd_stat(path, 0, &st) == 0;
	if (existed && S_ISDIR(st.st_mode)) {
		conn_reply_error(c, 422, "edit_failed", "%s is a directory", path);
		return;
	}
	if (write_atomic(path, text, tlen, -1, 1, err, sizeof(err)) == -1) {
		reply_write_error(c, path, errno, err);
		return;
	}
	agent_touch();
	if (existed)
		conn_reply(c, 200, "application/json",
		    "{\"ok\":true,\"created\":false}",
		    sizeof("{\"ok\":true,\"created\":false}") - 1);
	else
		conn_reply(c, 200, "application/json",
		    "{\"ok\":true,\"created\":true}",
		    sizeof("{\"ok\":true,\"created\":true}") - 1);
}

static void
op_edit(struct conn *c, const struct json *body, int is_insert)
{
	char path[PATH_MAX], err[1024];
	const char *a, *b2 = "";
	size_t alen, blen = 0;
	long long line = 0;
	struct buf data, out, snip;
	int r;

	if (get_path(c, body, path, sizeof(path)) == -1)
		return;
	if (is_insert) {
		if (json_get_int(body, "insert_line", &line) != 0 ||
		    json_get_str(body, "insert_text", &a, &alen) != 0) {
			conn_reply_error(c, 400, "bad_request", "\"insert_line\" "
			    "(integer) and \"insert_text\" (string) are required");
			return;
		}
	} else {
		if (json_get_str(body, "old_str", &a, &alen) != 0 ||
		    json_get_str(body, "new_str", &b2, &blen) == -1) {
			conn_reply_error(c, 400, "bad_request", "\"old_str\" (string) "
			    "is required; \"new_str\" must be a string");
			return;
		}
	}
	if (load(c, path, &data) == -1)
		return;
	if (edit_is_binary(data.p, data.len)) {
		conn_reply_error(c, 422, "binary_file", "%s looks binary; it cannot "
		    "be edited as text (use PUT /v1/files/raw)", path);
		buf_free(&data);
		return;
	}
	buf_init(&out, EDIT_MAX_FILE);
	buf_init(&snip, AGENT_MAX_OUTPUT_CAP);
	if (is_insert)
		r = edit_insert(data.p, data.len, line, a, alen, &out, &snip, err,
		    sizeof(err));
	else
		r = edit_str_replace(data.p, data.len, a, alen, b2, blen, &out, &snip,
		    err, sizeof(err));
	if (r == -1)
		conn_reply_error(c, 422, "edit_failed", "%s: %s", path, err);
	else if (write_atomic(path, out.p ? out.p : "", out.len, -1, 0, err,
	    sizeof(err)) == -1)
		reply_write_error(c, path, errno, err);
	else {
		agent_touch();
		{
			struct buf rb;
			struct jw w;

			buf_init(&rb, AGENT_MAX_RESP);
			jw_init(&w, &rb);
			jw_obj(&w);
			jw_key(&w, "ok"); jw_bool(&w, 1);
			jw_key(&w, "snippet"); jw_str(&w, snip.p ? snip.p : "", snip.len);
			jw_obj_end(&w);
			conn_reply_jw(c, &w, &rb);
		}
	}
	buf_free(&snip);
	buf_free(&out);
	buf_free(&data);
}

void
fileops_http(struct conn *c, const char *op, const struct json *body)
{
	if (strcmp(op, "view") == 0)
		op_view(c, body);
	else if (strcmp(op, "create") == 0)
		op_create(c, body);
	else if (strcmp(op, "str_replace") == 0)
		op_edit(c, body, 0);
	else if (strcmp(op, "insert") == 0)
		op_edit(c, body, 1);
	else
		conn_reply_error(c, 404, "not_found", "no file operation %s "
		    "(view, create, str_replace, insert, raw)", op);
}

static int
query_path(struct conn *c, const char *query, char *path, size_t len)
{
	char raw[PATH_MAX];

	if (http_query_get(query, "path", raw, sizeof(raw)) != 0 ||
	    resolve(raw, strlen(raw), path, len) == -1) {
		conn_reply_error(c, 400, "bad_request", "query parameter path= "
		    "(percent-encoded, non-empty) is required");
		return -1;
	}
	return 0;
}

void
fileops_version(const struct stat *st, char out[17])
{
	uint64_t v[7], h = 0xcbf29ce484222325ULL;	/* FNV-1a, 64 bits */
	size_t i, k;

	v[0] = (uint64_t)st->st_dev;
	v[1] = (uint64_t)st->st_ino;
	v[2] = (uint64_t)st->st_size;
	v[3] = (uint64_t)st->st_mtim.tv_sec;
	v[4] = (uint64_t)st->st_mtim.tv_nsec;
	v[5] = (uint64_t)st->st_ctim.tv_sec;
	v[6] = (uint64_t)st->st_ctim.tv_nsec;
	for (i = 0; i < NELEM(v); i++) {
		for (k = 0; k < 8; k++) {
			h ^= (v[i] >> (8 * k)) & 0xff;
			h *= 0x100000001b3ULL;
		}
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* Reads a non-negative integer query parameter; 1 when absent, -1 bad. */
static int
query_ull(const char *query, const char *key, unsigned long long *out)
{
	char v[32];
	const char *errstr;
	long long n;
	int r;

	if ((r = http_query_get(query, key, v, sizeof(v))) != 0)
		return r;
	if (strnum_ll(v, 0, LLONG_MAX, &n, &errstr) == -1)
		return -1;
	*out = (unsigned long long)n;
	return 0;
}

/* A raw GET being streamed: the file and what is left to send. */
struct download {
	struct conn		*c;
	int			 fd;
	off_t			 off;
	unsigned long long	 left;
};

#define DOWNLOAD_CHUNK	((size_t)256 * 1024)

static void
download_done(struct download *d, int ok)
{
	close(d->fd);
	if (ok)
		conn_stream_end(d->c);
	else
		conn_stream_abort(d->c);
	free(d);
}

static void
download_gone(void *arg)
{
	download_done(arg, 1);	/* frees the dead connection */
}

/* Sends file bytes while the connection takes them (conn_on_drain). */
static void
download_pump(void *arg)
{
	static char chunk[DOWNLOAD_CHUNK];
	struct download *d = arg;
	size_t want;
	ssize_t n;

	while (d->left > 0 && conn_stream_pending(d->c) < CONN_STREAM_HIGH) {
		want = d->left < DOWNLOAD_CHUNK ? (size_t)d->left : DOWNLOAD_CHUNK;
		n = pread(d->fd, chunk, want, d->off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Shrunk or unreadable after the length was sent: the
			 * peer sees a short body, never wrong bytes. */
			log_info("raw get: %s after %lld bytes; closing",
			    n == 0 ? "file shrank" : strerror(errno),
			    (long long)d->off);
			download_done(d, 0);
			return;
		}
		d->off += n;
		d->left -= (unsigned long long)n;
		if (conn_stream_write(d->c, chunk, (size_t)n) == -1) {
			download_done(d, 1);
			return;
		}
	}
	if (d->left == 0) {
		download_done(d, 1);
		return;
	}
	conn_on_drain(d->c, download_pump, d);
}

void
fileops_http_raw_get(struct conn *c, const char *query)
{
	char path[PATH_MAX], ver[17], extra[256];
	unsigned long long off = 0, len = ULLONG_MAX;
	struct download *d;
	struct stat st;
	int fd = -1, e;

	if (query_path(c, query, path, sizeof(path)) == -1)
		return;
	if (query_ull(query, "offset", &off) == -1 ||
	    query_ull(query, "length", &len) == -1) {
		conn_reply_error(c, 400, "bad_request",
		    "offset and length must be non-negative integers");
		return;
	}
	/* opened non-blocking: a FIFO must not hang the agent */
	if (fsd_open(path, &fd) == -1 || fstat(fd, &st) == -1) {
		e = errno;
		if (fd != -1)
			close(fd);
		reply_lookup(c, path, e);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		conn_reply_error(c, 422, "edit_failed", "%s is not a regular file%s",
		    path, S_ISDIR(st.st_mode) ? " (a directory: list it with "
		    "GET /v1/files/list)" : "");
		return;
	}
	fileops_version(&st, ver);
	snprintf(extra, sizeof(extra), "X-File-Size: %lld\r\nX-File-Version: "
	    "%s\r\nX-File-Mode: %04o\r\n", (long long)st.st_size, ver,
	    (unsigned)(st.st_mode & 07777));
	d = xcalloc(1, sizeof(*d));
	d->c = c;
	d->fd = fd;
	d->off = (off_t)(off < (unsigned long long)st.st_size ? off :
	    (unsigned long long)st.st_size);
	d->left = (unsigned long long)st.st_size - (unsigned long long)d->off;
	if (len < d->left)
		d->left = len;
	if (conn_stream_begin(c, 200, "application/octet-stream",
	    (long long)d->left, extra) == -1) {
		download_done(d, 1);
		return;
	}
	conn_on_gone(c, download_gone, d);
	download_pump(d);
}

/* A raw PUT being received. */
struct upload {
	struct conn		*c;
	char			 path[PATH_MAX];
	struct fsd_tmp		 a;
	int			 mode;		/* -1: keep */
	unsigned long long	 bytes;		/* body bytes written */
};

static void
upload_free(struct upload *u)
{
	fsd_tmp_cancel(&u->a);
	free(u);
}

/* Replies to a failed write of the body (errno e) and drops the upload. */
static void
upload_fail(struct upload *u, int e, const char *what)
{
	if (is_nospace(e))
		conn_reply_error(u->c, 507, "no_space", "%s: no space left: the "
		    "filesystem (or the home's quota) is full; nothing was "
		    "written", u->path);
	else
		conn_reply_error(u->c, 422, "edit_failed", "%s %s: %s", what,
		    u->path, strerror(e));
	upload_free(u);
}

static void
upload_gone(void *arg)
{
	struct upload *u = arg;

	conn_reply(u->c, 500, "application/json", "{}", 2);	/* frees c */
	upload_free(u);
}

static int
upload_data(void *arg, const char *p, size_t n)
{
	struct upload *u = arg;

	if (u->bytes + n > agent_conf.max_upload) {
		conn_reply_error(u->c, 413, "too_large", "the body passed "
		    "--max-upload (%zu bytes); nothing was written",
		    agent_conf.max_upload);
		upload_free(u);
		return -1;
	}
	if (atomic_write(&u->a, p, n) == -1) {
		upload_fail(u, errno, "writing");
		return -1;
	}
	u->bytes += n;
	return 0;
}

static void
upload_end(void *arg, const char *cerr)
{
	struct upload *u = arg;
	char err[PATH_MAX + 256], ver[17];
	struct stat st;
	struct buf b;
	struct jw w;
	int created = !u->a.have;

	if (cerr != NULL) {
		conn_reply_error(u->c, 400, "bad_request", "chunked body: %s", cerr);
		upload_free(u);
		return;
	}
	if (atomic_commit(&u->a, u->path, u->mode, err, sizeof(err)) == -1) {
		upload_fail(u, errno, "writing");
		return;
	}
	agent_touch();
	/* the file itself, renamed: its size and version now */
	if (fstat(u->a.fd, &st) == -1)
		memset(&st, 0, sizeof(st));
	fileops_version(&st, ver);
	buf_init(&b, 1024);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "ok"); jw_bool(&w, 1);
	jw_key(&w, "bytes"); jw_int(&w, (long long)u->bytes);
	jw_key(&w, "size"); jw_int(&w, (long long)st.st_size);
	jw_key(&w, "version"); jw_cstr(&w, ver);
	jw_key(&w, "created"); jw_bool(&w, created);
	jw_obj_end(&w);
	conn_reply_jw(u->c, &w, &b);
	upload_free(u);
}

/* Copies the target's current content into the temporary file (append). */
static int
upload_copy_old(struct upload *u)
{
	static char chunk[DOWNLOAD_CHUNK];
	ssize_t n;
	int fd = u->a.old;

	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (atomic_write(&u->a, chunk, (size_t)n) == -1) {
			n = -1;
			break;
		}
	}
	return n == -1 ? -1 : 0;
}

void
fileops_http_raw_put(struct conn *c, const char *query,
    const struct http_req *r)
{
	char path[PATH_MAX], err[PATH_MAX + 256], mstr[16], flag[8], *end;
	long mode = -1;
	int rc, append = 0;
	struct upload *u;

	if (query_path(c, query, path, sizeof(path)) == -1)
		return;
	if ((rc = http_query_get(query, "mode", mstr, sizeof(mstr))) == -1 ||
	    (rc == 0 && ((mode = strtol(mstr, &end, 8)) < 0 || mode > 07777 ||
	    *end != '\0' || mstr[0] == '\0'))) {
		conn_reply_error(c, 400, "bad_request", "mode must be octal, e.g. 0644");
		return;
	}
	if ((rc = http_query_get(query, "append", flag, sizeof(flag))) == -1 ||
	    (rc == 0 && strcmp(flag, "0") != 0 && strcmp(flag, "1") != 0 &&
	    strcmp(flag, "true") != 0 && strcmp(flag, "false") != 0)) {
		conn_reply_error(c, 400, "bad_request", "append must be 1 or 0");
		return;
	}
	append = rc == 0 && (strcmp(flag, "1") == 0 || strcmp(flag, "true") == 0);
	if (!r->chunked && r->content_length > agent_conf.max_upload) {
		conn_reply_error(c, 413, "too_large", "the body (%llu bytes) is over "
		    "--max-upload (%zu bytes)", r->content_length,
		    agent_conf.max_upload);
		return;
	}
	u = xcalloc(1, sizeof(*u));
	u->c = c;
	u->mode = (int)mode;
	snprintf(u->path, sizeof(u->path), "%s", path);
	if (atomic_open(&u->a, path, 1, append, err, sizeof(err)) == -1) {
		if (is_nospace(errno))
			upload_fail(u, errno, "creating");
		else {
			conn_reply_error(c, errno == ENOENT ? 404 : 422, errno ==
			    ENOENT ? "not_found" : "edit_failed", "%s", err);
			upload_free(u);
		}
		return;
	}
	if (append && u->a.have && upload_copy_old(u) == -1) {
		upload_fail(u, errno, "copying the old content of");
		return;
	}
	conn_on_gone(c, upload_gone, u);
	conn_body(c, upload_data, upload_end, u);
}

/* Listing (GET /v1/files/list). */

#define LIST_DEFAULT	10000
#define LIST_MAX	100000
#define LIST_MAX_DEPTH	256
/* Stop adding entries before the reply passes AGENT_MAX_RESP. */
#define LIST_MAX_BYTES	(AGENT_MAX_RESP - ((size_t)1024 * 1024))

struct lister {
	struct jw	 w;
	struct buf	 b;
	const char	*path;		/* the listed path, as asked */
	int		 truncated;
};

/* Writes one entry (the file service's): its path below the listed one
 * (e->rel, "" for the path itself) and its stat, not followed. */
static void
list_entry(void *arg, const struct fsw_ent *e)
{
	struct lister *l = arg;
	char ver[17], mode[8], path[PATH_MAX];
	const char *type = "other", *name;
	struct stat st;

	if (l->truncated)
		return;
	if (l->b.len > LIST_MAX_BYTES) {
		l->truncated = 1;
		return;
	}
	if (e->nrel == 0)
		snprintf(path, sizeof(path), "%s", l->path);
	else if (snprintf(path, sizeof(path), "%s/%.*s", strcmp(l->path, "/") ==
	    0 ? "" : l->path, (int)e->nrel, e->rel) >= (int)sizeof(path))
		return;
	name = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;
	fsw_st_to(&st, &e->st);
	if (S_ISREG(st.st_mode))
		type = "file";
	else if (S_ISDIR(st.st_mode))
		type = "dir";
	else if (S_ISLNK(st.st_mode))
		type = "symlink";
	snprintf(mode, sizeof(mode), "%04o", (unsigned)(st.st_mode & 07777));
	jw_obj(&l->w);
	jw_key(&l->w, "path"); jw_cstr(&l->w, path);
	jw_key(&l->w, "name"); jw_cstr(&l->w, name);
	jw_key(&l->w, "type"); jw_cstr(&l->w, type);
	jw_key(&l->w, "size"); jw_int(&l->w, (long long)st.st_size);
	jw_key(&l->w, "mtime_ms"); jw_int(&l->w, (long long)st.st_mtim.tv_sec *
	    1000 + st.st_mtim.tv_nsec / 1000000);
	jw_key(&l->w, "mode"); jw_cstr(&l->w, mode);
	if (S_ISREG(st.st_mode)) {
		fileops_version(&st, ver);
		jw_key(&l->w, "version"); jw_cstr(&l->w, ver);
	}
	if (S_ISLNK(st.st_mode) && e->ntarget > 0) {
		jw_key(&l->w, "target"); jw_str(&l->w, e->target, e->ntarget);
	}
	jw_obj_end(&l->w);
}

void
fileops_http_list(struct conn *c, const char *query)
{
	char path[PATH_MAX], flag[8];
	unsigned long long max = LIST_DEFAULT;
	struct lister l;
	struct stat top;
	int rc, trunc = 0, recursive;

	if (query_path(c, query, path, sizeof(path)) == -1)
		return;
	if (query_ull(query, "max_entries", &max) == -1 || max < 1 ||
	    max > LIST_MAX) {
		conn_reply_error(c, 400, "bad_request", "max_entries must be an "
		    "integer from 1 to %d", LIST_MAX);
		return;
	}
	if ((rc = http_query_get(query, "recursive", flag, sizeof(flag))) == -1) {
		conn_reply_error(c, 400, "bad_request", "recursive must be 1 or 0");
		return;
	}
	recursive = rc == 0 && (strcmp(flag, "1") == 0 ||
	    strcmp(flag, "true") == 0);
	memset(&l, 0, sizeof(l));
	l.path = path;
	buf_init(&l.b, AGENT_MAX_RESP);
	jw_init(&l.w, &l.b);
	jw_obj(&l.w);
	jw_key(&l.w, "path"); jw_cstr(&l.w, path);
	jw_key(&l.w, "entries");
	jw_arr(&l.w);
	if (fsd_list(path, recursive ? FSW_F_RECURSIVE : 0, LIST_MAX_DEPTH,
	    (long long)max, list_entry, &l, &top, &trunc) == -1) {
		buf_free(&l.b);
		reply_lookup(c, path, errno);
		return;
	}
	jw_arr_end(&l.w);
	jw_key(&l.w, "truncated"); jw_bool(&l.w, l.truncated || trunc);
	jw_obj_end(&l.w);
	conn_reply_jw(c, &l.w, &l.b);
}

/* Deletion (POST /v1/files/delete). */

/* 1 if a is b or an ancestor of b (both clean absolute paths). */
static int
path_covers(const char *a, const char *b)
{
	size_t n = strlen(a);

	if (strcmp(a, "/") == 0)
		return 1;
	return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '/');
}

void
fileops_http_delete(struct conn *c, const struct json *body)
{
	char path[PATH_MAX], ent[PATH_MAX];
	long long n = 0;
	int recursive = 0, step, e;

	if (get_path(c, body, path, sizeof(path)) == -1)
		return;
	if (json_get_bool(body, "recursive", &recursive) == -1) {
		conn_reply_error(c, 400, "bad_request", "\"recursive\" must be a boolean");
		return;
	}
	/* the agent's state is out of the file service's view when it runs in
	 * the sandbox's; in the agent's own view it is fenced by name */
	if (path_covers(path, agent_conf.workdir) || (fsd_in_agent_view() &&
	    (path_covers(path, agent_conf.statedir) ||
	    path_covers(agent_conf.statedir, path)))) {
		conn_reply_error(c, 422, "edit_failed", "%s is refused: it is (or "
		    "holds) the workdir %s, the agent's state or /", path,
		    agent_conf.workdir);
		return;
	}
	if (fsd_delete(path, recursive, &n, ent, sizeof(ent), &step) == 0) {
		char resp[64];
		int k;

		agent_touch();
		k = snprintf(resp, sizeof(resp), "{\"ok\":true,\"deleted\":%lld}", n);
		conn_reply(c, 200, "application/json", resp, (size_t)k);
		return;
	}
	e = errno;
	if (n > 0)
		agent_touch();
	if (step == FSW_S_RESOLVE)
		reply_lookup(c, path, e);
	else if (step == FSW_S_NOTEMPTY)
		conn_reply_error(c, 422, "edit_failed", "%s is a non-empty "
		    "directory: pass \"recursive\":true to delete it and "
		    "everything in it", path);
	else
		conn_reply_error(c, 422, "edit_failed", "deleting %s: %s%s%s: %s "
		    "(%lld entries were removed)", path, path, ent[0] != '\0' ?
		    "/" : "", ent, strerror(e), n);
}
