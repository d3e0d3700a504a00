/*
 * fileops.c: the /v1/files endpoints (see fileops.h). Paths are absolute
 * or relative to the workdir, cleaned lexically (resolve). Reads (load)
 * open without blocking and take regular files only, up to EDIT_MAX_FILE.
 * Writes go through fileops_write_atomic, not common/util's atomic write:
 * an edit keeps the file's mode (fchmod, so no umask applies) and owner
 * (when allowed), writes through a symlink to its target, and puts its
 * temporary file beside the target as a hidden .NAME.agent-RANDOM. Every
 * handler replies exactly once (conn.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "conn.h"
#include "edit.h"
#include "fileops.h"
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

/* Creates the missing parent directories of path. */
static int
mkparents(const char *path)
{
	char tmp[PATH_MAX], *p;

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -1;
	if ((p = strrchr(tmp, '/')) == NULL || p == tmp)
		return 0;
	*p = '\0';
	return fileops_mkdirs(tmp);
}

int
fileops_write_atomic(const char *path, const char *data, size_t len, int mode,
    int mkp, char *err, size_t errlen)
{
	char real[PATH_MAX], tmp[PATH_MAX + 64], rnd[17], *slash;
	const char *target = path;
	struct stat st;
	int fd = -1, have = 0, rc = -1;
	size_t off = 0;
	ssize_t n;

	if (path[0] != '\0' && path[1] != '\0' && path[strlen(path) - 1] == '/') {
		snprintf(err, errlen, "%s names a directory (trailing /): give a "
		    "file name", path);
		return -1;
	}
	/* Write through a symlink to its target, as an editor would. */
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) &&
	    realpath(path, real) != NULL)
		target = real;
	if (stat(target, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a regular file", path);
			return -1;
		}
		have = 1;
	} else if (errno != ENOENT) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!have && mkp && mkparents(target) == -1) {
		snprintf(err, errlen, "cannot create the parent directories of %s: %s",
		    path, strerror(errno));
		return -1;
	}
	agent_random_hex(rnd, 8);
	snprintf(tmp, sizeof(tmp), "%s", target);
	slash = strrchr(tmp, '/');
	if (slash == NULL || strlen(target) + 32 >= sizeof(tmp)) {
		snprintf(err, errlen, "bad path %s", path);
		return -1;
	}
	snprintf(slash + 1, sizeof(tmp) - (size_t)(slash + 1 - tmp), ".%s.agent-%s",
	    strrchr(target, '/') + 1, rnd);
	if (strlen(tmp) > PATH_MAX - 1 ||
	    (fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) == -1) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	while (off < len) {
		n = write(fd, data + off, len - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
			goto out;
		}
		off += (size_t)n;
	}
	if (mode < 0)
		mode = have ? (int)(st.st_mode & 07777) : 0644;
	if (fchmod(fd, (mode_t)mode) == -1) {
		snprintf(err, errlen, "chmod %s: %s", path, strerror(errno));
		goto out;
	}
	if (have && (st.st_uid != geteuid() || st.st_gid != getegid()))
		ign(fchown(fd, st.st_uid, st.st_gid));
	if (fsync(fd) == -1) {
		snprintf(err, errlen, "fsync %s: %s", path, strerror(errno));
		goto out;
	}
	if (close(fd) == -1) {
		fd = -1;
		snprintf(err, errlen, "close %s: %s", path, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, target) == -1) {
		snprintf(err, errlen, "rename to %s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	if (rc == -1)
		(void)unlink(tmp);
	return rc;
}

/*
 * Reads a regular file into b (max EDIT_MAX_FILE). Replies the error itself
 * and returns -1 on failure.
 */
static int
load(struct conn *c, const char *path, struct buf *b)
{
	struct stat st;
	int fd, e;

	buf_init(b, EDIT_MAX_FILE);
	/* O_NONBLOCK: opening a FIFO must not hang the agent. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) == -1 ||
	    fstat(fd, &st) == -1) {
		e = errno;
		if (fd != -1)
			close(fd);
		conn_reply_error(c, e == ENOENT ? 404 : 422, e == ENOENT ?
		    "not_found" : "edit_failed", "%s: %s", path, strerror(e));
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

static void
list_dir(const char *dir, int depth, struct ent **v, size_t *n, size_t *cap,
    int *more)
{
	DIR *d;
	struct dirent *de;
	struct stat st;
	char path[PATH_MAX];

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (*n >= FILEOPS_MAX_LIST) {
			*more = 1;
			break;
		}
		if (snprintf(path, sizeof(path), "%s/%s", strcmp(dir, "/") == 0 ?
		    "" : dir, de->d_name) >= (int)sizeof(path))
			continue;
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			*v = xreallocarray(*v, *cap, sizeof(**v));
		}
		(*v)[*n].path = xstrdup(path);
		(*v)[*n].dir = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
		(*n)++;
		if ((*v)[*n - 1].dir && depth < 2)
			list_dir(path, depth + 1, v, n, cap, more);
	}
	closedir(d);
}

static void
view_dir(struct conn *c, const char *path)
{
	struct ent *v = NULL;
	size_t n = 0, cap = 0, i;
	int more = 0;
	struct buf out;

	list_dir(path, 1, &v, &n, &cap, &more);
	if (n > 0)
		qsort(v, n, sizeof(*v), entcmp);
	buf_init(&out, AGENT_MAX_OUTPUT_CAP);
	ign(buf_addf(&out, "Files and directories up to 2 levels deep in %s, "
	    "excluding hidden items:\n%s/\n", path, path));
	for (i = 0; i < n; i++) {
		ign(buf_addf(&out, "%s%s\n", v[i].path, v[i].dir ? "/" : ""));
		free(v[i].path);
	}
	if (more)
		ign(buf_addf(&out, "[... listing stopped at %d entries ...]\n",
		    FILEOPS_MAX_LIST));
	free(v);
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
	if (stat(path, &st) == -1) {
		conn_reply_error(c, errno == ENOENT ? 404 : 422, errno == ENOENT ?
		    "not_found" : "edit_failed", "%s: %s", path, strerror(errno));
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
		conn_reply_error(c, 422, "edit_failed", "%s looks binary (%zu bytes, "
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
	existed = stat(path, &st) == 0;
	if (existed && S_ISDIR(st.st_mode)) {
		conn_reply_error(c, 422, "edit_failed", "%s is a directory", path);
		return;
	}
	if (fileops_write_atomic(path, text, tlen, -1, 1, err, sizeof(err)) == -1) {
		conn_reply_error(c, 422, "edit_failed", "%s", err);
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
		conn_reply_error(c, 422, "edit_failed", "%s looks binary; it cannot "
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
	else if (fileops_write_atomic(path, out.p ? out.p : "", out.len, -1, 0, err,
	    sizeof(err)) == -1)
		conn_reply_error(c, 422, "edit_failed", "%s", err);
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
fileops_http_raw_get(struct conn *c, const char *query)
{
	char path[PATH_MAX];
	struct buf data;

	if (query_path(c, query, path, sizeof(path)) == -1)
		return;
	if (load(c, path, &data) == -1)
		return;
	conn_reply(c, 200, "application/octet-stream", data.p, data.len);
	buf_free(&data);
}

void
fileops_http_raw_put(struct conn *c, const char *query, const char *body,
    size_t len)
{
	char path[PATH_MAX], err[512], mstr[16], *end;
	long mode = -1;
	int r;

	if (query_path(c, query, path, sizeof(path)) == -1)
		return;
	if ((r = http_query_get(query, "mode", mstr, sizeof(mstr))) == -1 ||
	    (r == 0 && ((mode = strtol(mstr, &end, 8)) < 0 || mode > 07777 ||
	    *end != '\0' || mstr[0] == '\0'))) {
		conn_reply_error(c, 400, "bad_request", "mode must be octal, e.g. 0644");
		return;
	}
	if (len > EDIT_MAX_FILE) {
		conn_reply_error(c, 413, "too_large", "at most %zu bytes", EDIT_MAX_FILE);
		return;
	}
	if (fileops_write_atomic(path, body, len, (int)mode, 1, err, sizeof(err)) == -1) {
		conn_reply_error(c, 422, "edit_failed", "%s", err);
		return;
	}
	agent_touch();
	{
		char resp[64];
		int n = snprintf(resp, sizeof(resp), "{\"ok\":true,\"bytes\":%zu}", len);
		conn_reply(c, 200, "application/json", resp, (size_t)n);
	}
}
