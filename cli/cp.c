/*
 * cp.c: orch cp, ls and rm (cp.h). One side of a cp is ID:/path in a
 * sandbox, the other a local path. Rules:
 *
 * - Streamed both ways: libcurl's read and write callbacks move a file
 *   through a fixed buffer; no file is ever held whole.
 * - Up: a file is one PUT (the server writes a temp file and renames it:
 *   a broken upload leaves the old file; a re-run replaces it whole), its
 *   mode as ?mode=. A tree is walked with lstat, never following a link:
 *   files are PUT, then one exec per CP_BATCH entries makes the
 *   directories (with their modes) and the symlinks (as links).
 * - Down: a file goes into ".<name>.orch-<version>.part" beside the
 *   target, then fsync, chmod and rename over it (nothing is half
 *   written). A broken download keeps that part; a re-run resumes it
 *   with ?offset= while the remote version is the same, else starts over.
 *   A tree comes from one recursive listing: every entry's path must be
 *   below the source and relative without "." or ".." parts, every local
 *   directory it goes through must be a directory made here (not a
 *   link), symlinks are recreated as links (never followed, so a link
 *   pointing out of the sandbox brings nothing of what it points at).
 * - A progress bar on stderr when stderr is a terminal (not with -q).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cp.h"
#include "strnum.h"
#include "xmalloc.h"

#define CP_BATCH	200	/* dirs and links made by one exec */
#define CP_MAX_ENTRIES	100000	/* a tree's listing (the API's maximum) */
#define CP_SMALL_MAX	(64 * 1024)	/* a PUT's reply, an error body */

struct cp {
	struct api	*a;
	const char	*id;
	int		 bar;		/* draw the progress bar */
	long long	 total;		/* bytes to move, for the bar */
	long long	 done;		/* bytes moved by finished files */
	long long	 cur;		/* bytes of the current file so far */
	long long	 files, dirs, links, bytes, resumed;
	double		 t0, tbar;
	long long	 rate;		/* --limit-rate: bytes/s, 0 none */
	char		 name[64];	/* the current file, for the bar */
	/* up: directories and links left for the batch exec */
	cJSON		*ops;
	char		 err[1400];
	char		 code[32];
};

struct rent {			/* what a remote path is */
	char		 type[16];	/* file, dir, symlink, other */
	long long	 size;
	unsigned	 mode;
	char		 version[40];
	char		*target;	/* symlink */
	char		*canon;		/* rstat: the path as the sandbox
					 * resolved it ("/a/../b" is "/b") */
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
fail(struct cp *c, const char *code, const char *fmt, ...) PRINTF(3, 4);

static int
fail(struct cp *c, const char *code, const char *fmt, ...)
{
	va_list ap;

	if (c->err[0] != '\0')
		return -1;	/* the first error is the one told */
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	snprintf(c->code, sizeof(c->code), "%s", code);
	return -1;
}

/* ---- the progress bar ---- */

static void
bar_draw(struct cp *c, int last)
{
	double t = now(), rate, pct;
	long long d = c->done + c->cur;
	char fill[31];
	int i, k;

	if (!c->bar || (!last && t - c->tbar < 0.1))
		return;
	c->tbar = t;
	pct = c->total > 0 ? (double)d * 100 / (double)c->total : 100;
	if (pct > 100)
		pct = 100;
	k = (int)(pct * 30 / 100);
	for (i = 0; i < 30; i++)
		fill[i] = i < k ? '#' : ' ';
	fill[30] = '\0';
	rate = t > c->t0 ? (double)d / (t - c->t0) : 0;
	fprintf(stderr, "\r[%s] %3.0f%% %7.1f/%.1f MiB %6.1f MiB/s %-24.24s",
	    fill, pct, (double)d / 1048576, (double)c->total / 1048576,
	    rate / 1048576, c->name);
	if (last)
		fputc('\n', stderr);
}

static int
xferinfo(void *arg, curl_off_t dlt UNUSED, curl_off_t dln, curl_off_t ult UNUSED,
    curl_off_t uln)
{
	struct cp *c = arg;

	c->cur = (long long)(dln > uln ? dln : uln);
	bar_draw(c, 0);
	return 0;
}

/* ---- paths ---- */

/* ID:/path: 1 with *id and *path (pointers into a copy the caller frees
 * as *buf), 0 for a local path. An argument starting with '/' or '.' is
 * local; a local path holding ":/" is written ./that. */
static int
remote_of(const char *arg, char **buf, const char **id, const char **path)
{
	const char *m = strstr(arg, ":/");

	if (m == NULL || m == arg || arg[0] == '/' || arg[0] == '.')
		return 0;
	*buf = xstrdup(arg);
	(*buf)[m - arg] = '\0';
	*id = *buf;
	*path = *buf + (m - arg) + 1;
	return 1;
}

/* "/v1/sessions/<id>/files<path><suffix>"; caller frees. */
static char *
fpath(const struct cp *c, const char *path, const char *suffix)
{
	char *e = api_path_enc(path), *rest, *p;

	xasprintf(&rest, "/files%s%s", e, suffix != NULL ? suffix : "");
	p = api_spath(c->id, rest);
	free(rest);
	free(e);
	return p;
}

static const char *
base_of(const char *p)
{
	const char *s = strrchr(p, '/');

	return s != NULL ? s + 1 : p;
}

/* A path without trailing slashes ("/" stays); caller frees. */
static char *
chomp(const char *p)
{
	char *s = xstrdup(p);
	size_t n = strlen(s);

	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}

/* rel is relative, its parts neither empty nor "." nor "..". */
static int
rel_ok(const char *rel)
{
	const char *p = rel, *s;
	size_t n;

	if (*rel == '\0' || *rel == '/')
		return 0;
	for (;;) {
		s = strchr(p, '/');
		n = s != NULL ? (size_t)(s - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		if (s == NULL)
			return 1;
		p = s + 1;
	}
}

/* Every directory between root and root/rel's last part is a directory
 * (not a link to one): what a tree download writes stays in root. */
static int
parents_ok(const char *root, const char *rel)
{
	char *p;
	struct stat st;
	size_t i, rl = strlen(root);
	int ok = 1;

	xasprintf(&p, "%s/%s", root, rel);
	for (i = rl + 1; p[i] != '\0' && ok; i++) {
		if (p[i] != '/')
			continue;
		p[i] = '\0';
		ok = lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
		p[i] = '/';
	}
	free(p);
	return ok;
}

/* ---- remote stat ---- */

static void
rent_free(struct rent *r)
{
	free(r->target); r->target = NULL;
	free(r->canon); r->canon = NULL;
}

static unsigned
rent_mode(const cJSON *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "mode");

	return cJSON_IsString(v) ? (unsigned)strtoul(v->valuestring, NULL, 8) &
	    07777 : 0644;
}

static void
rent_of(const cJSON *e, struct rent *r)
{
	const cJSON *v;

	memset(r, 0, sizeof(*r));
	v = cJSON_GetObjectItemCaseSensitive(e, "type");
	snprintf(r->type, sizeof(r->type), "%s", cJSON_IsString(v) ?
	    v->valuestring : "other");
	v = cJSON_GetObjectItemCaseSensitive(e, "size");
	r->size = cJSON_IsNumber(v) && v->valuedouble >= 0 ?
	    (long long)v->valuedouble : 0;
	r->mode = rent_mode(e);
	v = cJSON_GetObjectItemCaseSensitive(e, "version");
	if (cJSON_IsString(v) && strspn(v->valuestring,
	    "0123456789abcdefABCDEF") == strlen(v->valuestring))
		snprintf(r->version, sizeof(r->version), "%s", v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(e, "target");
	if (cJSON_IsString(v))
		r->target = xstrdup(v->valuestring);
}

/* A listing request: the parsed reply, or NULL (c->err; *missing set for
 * a 404). */
static cJSON *
rlist(struct cp *c, const char *path, const char *q, int *missing)
{
	cJSON *r = NULL;
	char *p = fpath(c, path, q), err[1400], code[64];
	int st;

	if (missing != NULL)
		*missing = 0;
	st = api_json(c->a, "GET", p, NULL, &r, err, sizeof(err));
	free(p);
	if (st == -1) {
		fail(c, "transport", "%s", err);
		return NULL;
	}
	if (st != 200) {
		if (st == 404 && missing != NULL)
			*missing = 1;
		api_err_of(st, r, code, sizeof(code), err, sizeof(err));
		fail(c, code, "%s", err);
		cJSON_Delete(r);
		return NULL;
	}
	if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r, "entries"))) {
		fail(c, "protocol", "%s: the listing has no entries", path);
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

/* What path is in the sandbox: 0 and *r (r->canon set), 1 missing, -1
 * error. */
static int
rstat(struct cp *c, const char *path, struct rent *r)
{
	cJSON *l, *pl;
	const cJSON *e, *pp, *lp;
	char *parent;
	int missing;

	memset(r, 0, sizeof(*r));
	if ((l = rlist(c, path, "?list=1&max_entries=1", &missing)) == NULL) {
		if (missing) {
			c->err[0] = '\0';
			return 1;
		}
		return -1;
	}
	lp = cJSON_GetObjectItemCaseSensitive(l, "path");
	if (!cJSON_IsString(lp) || lp->valuestring[0] != '/') {
		cJSON_Delete(l);
		return fail(c, "protocol", "%s: the listing names no path", path);
	}
	e = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(l, "entries"), 0);
	pp = cJSON_GetObjectItemCaseSensitive(e, "path");
	if (e != NULL && cJSON_IsString(pp) &&
	    strcmp(pp->valuestring, lp->valuestring) == 0) {
		rent_of(e, r);	/* a file or a link: the entry is itself */
		r->canon = xstrdup(lp->valuestring);
		cJSON_Delete(l);
		return 0;
	}
	snprintf(r->type, sizeof(r->type), "dir");
	r->mode = 0755;
	r->canon = xstrdup(lp->valuestring);
	cJSON_Delete(l);
	/* its mode: its entry in its parent's listing */
	if (strcmp(r->canon, "/") == 0)
		return 0;
	parent = xstrndup(r->canon, (size_t)(base_of(r->canon) - r->canon));
	if ((pl = rlist(c, parent, "?list=1&max_entries=100000", NULL)) != NULL) {
		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(pl, "entries")) {
			pp = cJSON_GetObjectItemCaseSensitive(e, "path");
			if (cJSON_IsString(pp) && strcmp(pp->valuestring, r->canon) == 0) {
				r->mode = rent_mode(e);
				break;
			}
		}
	}
	c->err[0] = '\0';	/* the mode is a nicety: 0755 without it */
	cJSON_Delete(pl);
	free(parent);
	return 0;
}

/* ---- down ---- */

struct dl {
	struct cp	*c;
	CURL		*h;
	int		 fd;
	long		 status;
	int		 checked;	/* the head was read */
	int		 changed;	/* the remote version is not the part's */
	const char	*want;		/* the version the part is of */
	struct buf	 errb;		/* a non-200 body */
	int		 werr;		/* errno of a failed write */
	long long	 left;		/* bytes the listing said are to come */
	int		 over;		/* more came: stopped */
};

static size_t
dl_write(char *p, size_t sz, size_t nm, void *arg)
{
	struct dl *d = arg;
	size_t n = sz * nm, o = 0;
	ssize_t w;
	struct curl_header *hv;

	if (!d->checked) {
		d->checked = 1;
		curl_easy_getinfo(d->h, CURLINFO_RESPONSE_CODE, &d->status);
		if (d->status == 200 && d->want[0] != '\0' &&
		    curl_easy_header(d->h, "X-File-Version", 0, CURLH_HEADER, -1,
		    &hv) == CURLHE_OK && strcmp(hv->value, d->want) != 0) {
			d->changed = 1;
			return 0;
		}
	}
	if (d->status != 200) {
		if (buf_add(&d->errb, p, n) == -1)
			return 0;
		return n;
	}
	if ((long long)n > d->left) {
		d->over = 1;	/* a server sending more than it said */
		return 0;
	}
	d->left -= (long long)n;
	while (o < n) {
		if ((w = write(d->fd, p + o, n - o)) == -1) {
			if (errno == EINTR)
				continue;
			d->werr = errno;
			return 0;
		}
		o += (size_t)w;
	}
	return n;
}

/* The part file of a download to lpath; caller frees. */
static char *
part_of(const char *lpath, const char *version)
{
	char *dir = xstrndup(lpath, (size_t)(base_of(lpath) - lpath)), *p;

	xasprintf(&p, "%s.%s.orch-%s.part", dir, base_of(lpath),
	    version[0] != '\0' ? version : "0");
	free(dir);
	return p;
}

/*
 * Removes the parts of older versions left in lpath's directory: of
 * lpath's file but keep, or (lpath a directory, keep NULL) of any file.
 */
static void
drop_parts(const char *lpath, const char *keep)
{
	char *dir, *pre, *p;
	DIR *d;
	struct dirent *de;
	size_t n, pl;

	if (keep != NULL) {
		dir = xstrndup(lpath, (size_t)(base_of(lpath) - lpath));
		xasprintf(&pre, ".%s.orch-", base_of(lpath));
	} else {
		xasprintf(&dir, "%s/", lpath);
		pre = xstrdup(".");
	}
	pl = strlen(pre);
	if ((d = opendir(*dir != '\0' ? dir : ".")) != NULL) {
		while ((de = readdir(d)) != NULL) {
			n = strlen(de->d_name);
			if (strncmp(de->d_name, pre, pl) != 0 || n < pl + 5 ||
			    strcmp(de->d_name + n - 5, ".part") != 0 ||
			    strstr(de->d_name, ".orch-") == NULL ||
			    (keep != NULL && strcmp(de->d_name, base_of(keep)) == 0))
				continue;
			xasprintf(&p, "%s%s", dir, de->d_name);
			unlink(p);
			free(p);
		}
		closedir(d);
	}
	free(pre);
	free(dir);
}

/* Downloads the file rpath (r: its listing entry) to lpath. */
static int
get_file(struct cp *c, const char *rpath, const struct rent *r,
    const char *lpath, int clean)
{
	struct dl d;
	struct curl_slist *h = NULL;
	struct stat st;
	char *part = part_of(lpath, r->version), *p = NULL, q[64];
	long long off = 0;
	CURLcode cc;
	int rc = -1;

	snprintf(c->name, sizeof(c->name), "%s", base_of(lpath));
	c->cur = 0;
	if (lstat(lpath, &st) == 0 && S_ISDIR(st.st_mode))
		return free(part), fail(c, "is_dir", "%s: is a directory", lpath);
	if (clean)
		drop_parts(lpath, part);	/* a tree does it once a directory */
	memset(&d, 0, sizeof(d));
	d.c = c;
	d.fd = -1;
	d.want = r->version;
	buf_init(&d.errb, CP_SMALL_MAX);
	off = 0;
	if (r->version[0] != '\0' && lstat(part, &st) == 0 &&
	    S_ISREG(st.st_mode) && st.st_size > 0 && st.st_size <= r->size)
		off = st.st_size;
	d.fd = open(part, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
	    (off > 0 ? O_APPEND : O_TRUNC), 0600);
	if (d.fd == -1) {
		fail(c, "local", "%s: %s", part, strerror(errno));
		goto out;
	}
	if (off == r->size) {
		/* complete already: the version in its name says the bytes
		 * are the remote file's */
		if (fstat(d.fd, &st) == -1)
			goto out;
		goto done;
	}
	snprintf(q, sizeof(q), "?offset=%lld", off);
	free(p);
	p = fpath(c, rpath, off > 0 ? q : NULL);
	if ((d.h = api_easy(c->a, "GET", p, &h)) == NULL) {
		fail(c, "transport", "libcurl could not start");
		goto out;
	}
	curl_easy_setopt(d.h, CURLOPT_WRITEFUNCTION, dl_write);
	if (c->rate > 0)
		curl_easy_setopt(d.h, CURLOPT_MAX_RECV_SPEED_LARGE,
		    (curl_off_t)c->rate);
	curl_easy_setopt(d.h, CURLOPT_WRITEDATA, &d);
	if (c->bar) {
		curl_easy_setopt(d.h, CURLOPT_XFERINFOFUNCTION, xferinfo);
		curl_easy_setopt(d.h, CURLOPT_XFERINFODATA, c);
		curl_easy_setopt(d.h, CURLOPT_NOPROGRESS, 0L);
	}
	d.left = r->size - off;
	c->done += off;
	cc = curl_easy_perform(d.h);
	c->done -= off;
	if (d.status == 0)
		curl_easy_getinfo(d.h, CURLINFO_RESPONSE_CODE, &d.status);
	if (d.over) {
		fail(c, "protocol", "%s: more bytes came than the listing's %lld "
		    "(changed while it was copied? run again)", rpath, r->size);
		unlink(part);
		goto out;
	}
	if (d.changed) {
		fail(c, "changed", "%s changed while it was copied: run again",
		    rpath);
		unlink(part);
		goto out;
	}
	if (d.status != 0 && d.status != 200) {
		char err[1400], code[64];

		api_err_raw(d.status, d.errb.p, d.errb.len, code, sizeof(code),
		    err, sizeof(err));
		fail(c, code, "%s: %s", rpath, err);
		if (off == 0)
			unlink(part);
		goto out;
	}
	if (cc != CURLE_OK) {
		if (d.werr != 0)
			fail(c, "local", "%s: %s", part, strerror(d.werr));
		else if (fstat(d.fd, &st) == 0 && st.st_size == 0) {
			fail(c, "transport", "%s: %s", rpath, api_strerror(d.h, cc));
			unlink(part);
		} else
			fail(c, "transport", "%s: %s; what came is kept in %s and a "
			    "re-run resumes from there", rpath,
			    api_strerror(d.h, cc), part);
		goto out;
	}
	if (fstat(d.fd, &st) == -1 || (long long)st.st_size != r->size) {
		/* curl checked Content-Length: this is a listing gone stale */
		fail(c, "protocol", "%s: %lld bytes came where the listing said "
		    "%lld (changed while it was copied? run again)", rpath,
		    (long long)st.st_size, r->size);
		unlink(part);
		goto out;
	}
done:
	if (fchmod(d.fd, r->mode & 07777) == -1 || fsync(d.fd) == -1) {
		fail(c, "local", "%s: %s", part, strerror(errno));
		goto out;
	}
	if (close(d.fd) == -1) {
		d.fd = -1;
		fail(c, "local", "%s: %s", part, strerror(errno));
		goto out;
	}
	d.fd = -1;
	if (rename(part, lpath) == -1) {
		fail(c, "local", "%s: %s", lpath, strerror(errno));
		goto out;
	}
	c->files++;
	c->bytes += (long long)st.st_size - off;
	c->resumed += off;
	c->done += (long long)st.st_size;
	c->cur = 0;
	rc = 0;
out:
	if (d.fd != -1)
		close(d.fd);
	api_easy_free(d.h);
	curl_slist_free_all(h);
	buf_free(&d.errb);
	free(part);
	free(p);
	return rc;
}

/* A symlink at lpath pointing at target, replacing what is there (but a
 * directory). */
static int
put_link(struct cp *c, const char *target, const char *lpath)
{
	char *tmp;
	struct stat st;
	int rc = 0;

	if (target == NULL || *target == '\0')
		return fail(c, "protocol", "%s: a symlink without its target", lpath);
	if (lstat(lpath, &st) == 0 && S_ISDIR(st.st_mode))
		return fail(c, "is_dir", "%s: is a directory", lpath);
	tmp = part_of(lpath, "link");
	unlink(tmp);
	if (symlink(target, tmp) == -1 || rename(tmp, lpath) == -1) {
		rc = fail(c, "local", "%s: %s", lpath, strerror(errno));
		unlink(tmp);
	} else
		c->links++;
	free(tmp);
	return rc;
}

struct dmode {
	char		*path;
	unsigned	 mode;
};

/* Downloads the tree at rpath (its entry r) into the new or existing
 * directory lroot. */
static int
get_tree(struct cp *c, const char *rpath, const struct rent *r,
    const char *lroot)
{
	cJSON *l;
	const cJSON *e, *pp, *tr;
	struct rent x;
	struct dmode *dm = NULL;
	size_t ndm = 0, i, pl = strlen(rpath);
	struct stat st;
	char *lp;
	const char *rel;
	int rc = -1;

	if ((l = rlist(c, rpath, "?list=1&recursive=1&max_entries=100000",
	    NULL)) == NULL)
		return -1;
	tr = cJSON_GetObjectItemCaseSensitive(l, "truncated");
	if (cJSON_IsTrue(tr)) {
		cJSON_Delete(l);
		return fail(c, "too_large", "%s: more than %d entries; copy its "
		    "subdirectories one by one", rpath, CP_MAX_ENTRIES);
	}
	/* every path checked before anything is written */
	c->total = 0;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(l, "entries")) {
		pp = cJSON_GetObjectItemCaseSensitive(e, "path");
		if (!cJSON_IsString(pp) || strncmp(pp->valuestring, rpath, pl) != 0 ||
		    (pl > 1 && pp->valuestring[pl] != '/')) {
			fail(c, "protocol", "the listing of %s names a path outside "
			    "it", rpath);
			goto out;
		}
		if (!rel_ok(pp->valuestring + pl + (pl > 1))) {
			fail(c, "protocol", "the listing of %s names a bad path "
			    "(empty, \".\" or \"..\" parts)", rpath);
			goto out;
		}
		pp = cJSON_GetObjectItemCaseSensitive(e, "size");
		if (cJSON_IsNumber(pp) && cJSON_IsString(
		    cJSON_GetObjectItemCaseSensitive(e, "version")))
			c->total += (long long)pp->valuedouble;
	}
	if (mkdir(lroot, 0700) == -1 && errno != EEXIST) {
		fail(c, "local", "%s: %s", lroot, strerror(errno));
		goto out;
	}
	if (lstat(lroot, &st) == -1 || !S_ISDIR(st.st_mode) ||
	    chmod(lroot, 0700) == -1) {
		fail(c, "local", "%s: not a directory", lroot);
		goto out;
	}
	dm = xreallocarray(dm, ndm + 1, sizeof(*dm));
	dm[ndm].path = xstrdup(lroot);
	dm[ndm++].mode = r->mode != 0 ? r->mode : 0755;
	c->dirs++;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(l, "entries")) {
		pp = cJSON_GetObjectItemCaseSensitive(e, "path");
		rel = pp->valuestring + pl + (pl > 1);
		if (!parents_ok(lroot, rel)) {
			fail(c, "protocol", "%s: a parent of it is not a directory "
			    "made here (a link?): not written through", rel);
			goto out;
		}
		rent_of(e, &x);
		xasprintf(&lp, "%s/%s", lroot, rel);
		if (strcmp(x.type, "dir") == 0) {
			/* an existing one is made writable until the end */
			if ((mkdir(lp, 0700) == -1 && (errno != EEXIST ||
			    lstat(lp, &st) == -1 || !S_ISDIR(st.st_mode))) ||
			    chmod(lp, 0700) == -1)
				fail(c, "local", "%s: %s", lp, errno == EEXIST ?
				    "exists and is not a directory" : strerror(errno));
			else {
				dm = xreallocarray(dm, ndm + 1, sizeof(*dm));
				dm[ndm].path = lp;
				dm[ndm++].mode = x.mode;
				lp = NULL;
				c->dirs++;
			}
		} else if (strcmp(x.type, "file") == 0)
			get_file(c, pp->valuestring, &x, lp, 0);
		else if (strcmp(x.type, "symlink") == 0)
			put_link(c, x.target, lp);
		else if (!c->a->quiet)
			fprintf(stderr, "orch: %s: skipped (not a file, directory "
			    "or link)\n", pp->valuestring);
		free(lp);
		rent_free(&x);
		if (c->err[0] != '\0')
			goto out;
	}
	rc = 0;
out:
	/* modes last, deepest first: a read-only directory is filled first;
	 * with the tree whole, parts of older versions go */
	for (i = ndm; i > 0; i--) {
		if (rc == 0)
			drop_parts(dm[i - 1].path, NULL);
		if (rc == 0 && chmod(dm[i - 1].path, dm[i - 1].mode) == -1)
			rc = fail(c, "local", "%s: %s", dm[i - 1].path,
			    strerror(errno));
		free(dm[i - 1].path);
	}
	free(dm);
	cJSON_Delete(l);
	return rc;
}

static int
download(struct cp *c, const char *rpath0, const char *ldst)
{
	struct rent r;
	struct stat st;
	char *rpath = chomp(rpath0), *lp;
	int rc = -1, s;

	if ((s = rstat(c, rpath, &r)) != 0 || r.canon == NULL) {
		if (s == 1)
			fail(c, "not_found", "%s:%s: no such file or directory",
			    c->id, rpath);
		else if (s == 0)
			fail(c, "protocol", "%s: the listing names no path", rpath);
		rent_free(&r);
		free(rpath);
		return -1;
	}
	if (stat(ldst, &st) == 0 && S_ISDIR(st.st_mode))
		xasprintf(&lp, "%s/%s", ldst, strcmp(r.canon, "/") == 0 ? "root" :
		    base_of(r.canon));
	else if (ldst[0] != '\0' && ldst[strlen(ldst) - 1] == '/') {
		fail(c, "local", "%s: no such directory", ldst);
		rent_free(&r);
		free(rpath);
		return -1;
	} else
		lp = chomp(ldst);
	c->total = r.size;
	if (strcmp(r.type, "file") == 0)
		rc = get_file(c, r.canon, &r, lp, 1);
	else if (strcmp(r.type, "dir") == 0)
		rc = get_tree(c, r.canon, &r, lp);
	else if (strcmp(r.type, "symlink") == 0)
		rc = put_link(c, r.target, lp);
	else
		rc = fail(c, "bad_type", "%s: not a file, directory or link", rpath);
	rent_free(&r);
	free(lp);
	free(rpath);
	return rc;
}

/* ---- up ---- */

struct ul {
	int		 fd;
	int		 rerr;
	struct buf	 reply;
};

static size_t
ul_read(char *p, size_t sz, size_t nm, void *arg)
{
	struct ul *u = arg;
	ssize_t n;

	while ((n = read(u->fd, p, sz * nm)) == -1 && errno == EINTR)
		;
	if (n == -1) {
		u->rerr = errno;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)n;
}

static size_t
ul_reply(char *p, size_t sz, size_t nm, void *arg)
{
	struct ul *u = arg;

	return buf_add(&u->reply, p, sz * nm) == -1 ? 0 : sz * nm;
}

/* Uploads the local file lpath (its stat st, opened as fd) to rpath. */
static int
put_file(struct cp *c, int fd, const struct stat *st, const char *lpath,
    const char *rpath)
{
	struct ul u = { .fd = fd };
	struct curl_slist *h = NULL;
	char *p, q[32], err[1400];
	CURL *e;
	CURLcode cc;
	long status = 0;
	int rc = -1;

	snprintf(c->name, sizeof(c->name), "%s", base_of(lpath));
	c->cur = 0;
	buf_init(&u.reply, CP_SMALL_MAX);
	snprintf(q, sizeof(q), "?mode=%04o", (unsigned)(st->st_mode & 07777));
	p = fpath(c, rpath, q);
	/* No Content-Type (the API takes any): with one, uploads through the
	 * orchestrator ran at half the speed in tests/bench/cli, curl's too
	 * (not explained yet; docs/cli.md) */
	h = curl_slist_append(h, "Content-Type:");
	h = curl_slist_append(h, "Expect:");
	if ((e = api_easy(c->a, "PUT", p, &h)) == NULL) {
		fail(c, "transport", "libcurl could not start");
		goto out;
	}
	curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
	/* libcurl's largest upload buffer (2 MiB; 64 KiB by default): a read
	 * and a send per buffer, so the default costs a third of the speed */
	curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 2L * 1024 * 1024);
	curl_easy_setopt(e, CURLOPT_READFUNCTION, ul_read);
	if (c->rate > 0)
		curl_easy_setopt(e, CURLOPT_MAX_SEND_SPEED_LARGE,
		    (curl_off_t)c->rate);
	curl_easy_setopt(e, CURLOPT_READDATA, &u);
	curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st->st_size);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, ul_reply);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &u);
	if (c->bar) {
		curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, xferinfo);
		curl_easy_setopt(e, CURLOPT_XFERINFODATA, c);
		curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	}
	cc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	if (u.rerr != 0) {
		fail(c, "local", "%s: %s", lpath, strerror(u.rerr));
		goto out;
	}
	if (status != 0 && (status < 200 || status >= 300)) {
		char code[64];

		api_err_raw(status, u.reply.p, u.reply.len, code, sizeof(code),
		    err, sizeof(err));
		fail(c, code, "%s: %s", rpath, err);
		goto out;
	}
	if (cc != CURLE_OK) {
		fail(c, "transport", "%s: %s (the remote file is unchanged; a "
		    "re-run sends it again)", rpath, api_strerror(e, cc));
		goto out;
	}
	c->files++;
	c->bytes += (long long)st->st_size;
	c->done += (long long)st->st_size;
	c->cur = 0;
	rc = 0;
out:
	api_easy_free(e);
	curl_slist_free_all(h);
	buf_free(&u.reply);
	free(p);
	return rc;
}

/* Runs the batch of directories and links left (c->ops) in one exec. */
static int
flush_ops(struct cp *c)
{
	static const char script[] =
	    "i=0; while [ $i -lt $N ]; do eval \"k=\\$K$i p=\\$P$i t=\\$T$i\"; "
	    "case $k in "
	    "d) mkdir -p -- \"$p\" && chmod \"$t\" -- \"$p\" || exit 1;; "
	    "l) mkdir -p -- \"${p%/*}/\" && if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then "
	    "echo \"$p: is a directory\" >&2; exit 1; fi; "
	    "rm -f -- \"$p\" && ln -s -- \"$t\" \"$p\" || exit 1;; "
	    "esac; i=$((i+1)); done";
	cJSON *b, *env, *r = NULL;
	struct curl_slist *h = NULL;
	struct ul u = { .fd = -1 };
	char *p, *js, n[16];
	CURL *e;
	int rc = -1, i = 0;
	const cJSON *o;
	long status = 0;
	CURLcode cc;

	if (c->ops == NULL || cJSON_GetArraySize(c->ops) == 0)
		return 0;
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "command", script);
	env = cJSON_AddObjectToObject(b, "env");
	cJSON_ArrayForEach(o, c->ops) {
		char k[16];

		snprintf(k, sizeof(k), "K%d", i);
		cJSON_AddStringToObject(env, k, cJSON_GetArrayItem(o, 0)->valuestring);
		snprintf(k, sizeof(k), "P%d", i);
		cJSON_AddStringToObject(env, k, cJSON_GetArrayItem(o, 1)->valuestring);
		snprintf(k, sizeof(k), "T%d", i);
		cJSON_AddStringToObject(env, k, cJSON_GetArrayItem(o, 2)->valuestring);
		i++;
	}
	snprintf(n, sizeof(n), "%d", i);
	cJSON_AddStringToObject(env, "N", n);
	js = cJSON_PrintUnformatted(b);
	p = api_spath(c->id, "/exec");
	buf_init(&u.reply, 4 << 20);
	h = curl_slist_append(h, "Content-Type: application/json");
	if ((e = api_easy(c->a, "POST", p, &h)) == NULL) {
		fail(c, "transport", "libcurl could not start");
		goto out;
	}
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, js);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, ul_reply);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &u);
	cc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK) {
		fail(c, "transport", "making directories and links: %s",
		    api_strerror(e, cc));
		goto out;
	}
	if (status != 200) {
		char err[1400], code[64];

		api_err_raw(status, u.reply.p, u.reply.len, code, sizeof(code),
		    err, sizeof(err));
		fail(c, code, "making directories and links: %s", err);
		goto out;
	}
	/* the last line is the exit line */
	while (u.reply.len > 0 && u.reply.p[u.reply.len - 1] == '\n')
		u.reply.len--;
	{
		const char *ls = u.reply.p;
		size_t k;

		for (k = u.reply.len; k > 0; k--)
			if (u.reply.p[k - 1] == '\n') {
				ls = u.reply.p + k;
				break;
			}
		r = cJSON_ParseWithLength(ls, u.reply.len - (size_t)(ls - u.reply.p));
	}
	o = cJSON_GetObjectItemCaseSensitive(r, "exit");
	if (!cJSON_IsNumber(o) || o->valueint != 0) {
		fail(c, "remote", "making directories and links in the sandbox "
		    "failed (exit %d)", cJSON_IsNumber(o) ? o->valueint : -1);
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(r);
	cJSON_Delete(c->ops);
	c->ops = NULL;
	api_easy_free(e);
	curl_slist_free_all(h);
	buf_free(&u.reply);
	free(js);
	free(p);
	cJSON_Delete(b);
	return rc;
}

static int
add_op(struct cp *c, const char *k, const char *path, const char *t)
{
	cJSON *o = cJSON_CreateArray();

	if (c->ops == NULL)
		c->ops = cJSON_CreateArray();
	cJSON_AddItemToArray(o, cJSON_CreateString(k));
	cJSON_AddItemToArray(o, cJSON_CreateString(path));
	cJSON_AddItemToArray(o, cJSON_CreateString(t));
	cJSON_AddItemToArray(c->ops, o);
	return cJSON_GetArraySize(c->ops) >= CP_BATCH ? flush_ops(c) : 0;
}

static long long
local_size(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	long long n = 0;
	char *p;

	if (lstat(path, &st) == -1)
		return 0;
	if (S_ISREG(st.st_mode))
		return (long long)st.st_size;
	if (!S_ISDIR(st.st_mode) || (d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		xasprintf(&p, "%s/%s", path, de->d_name);
		n += local_size(p);
		free(p);
	}
	closedir(d);
	return n;
}

/* Uploads lpath (never followed if a link) to rpath. */
static int
up(struct cp *c, const char *lpath, const char *rpath, int depth)
{
	struct stat st;
	char tgt[4096], mode[8], *lp, *rp;
	DIR *d;
	struct dirent *de;
	ssize_t n;
	int fd, rc = 0;

	if (depth > 256)
		return fail(c, "too_deep", "%s: more than 256 levels", lpath);
	if (lstat(lpath, &st) == -1)
		return fail(c, "local", "%s: %s", lpath, strerror(errno));
	if (S_ISLNK(st.st_mode)) {
		if ((n = readlink(lpath, tgt, sizeof(tgt) - 1)) == -1)
			return fail(c, "local", "%s: %s", lpath, strerror(errno));
		tgt[n] = '\0';
		c->links++;
		return add_op(c, "l", rpath, tgt);
	}
	if (S_ISREG(st.st_mode)) {
		if ((fd = open(lpath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
			return fail(c, "local", "%s: %s", lpath, strerror(errno));
		if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
			rc = fail(c, "local", "%s: changed under the copy", lpath);
		else
			rc = put_file(c, fd, &st, lpath, rpath);
		close(fd);
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (!c->a->quiet)
			fprintf(stderr, "orch: %s: skipped (not a file, directory or "
			    "link)\n", lpath);
		return 0;
	}
	if ((d = opendir(lpath)) == NULL)
		return fail(c, "local", "%s: %s", lpath, strerror(errno));
	c->dirs++;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		xasprintf(&lp, "%s/%s", lpath, de->d_name);
		xasprintf(&rp, "%s/%s", strcmp(rpath, "/") == 0 ? "" : rpath,
		    de->d_name);
		rc = up(c, lp, rp, depth + 1);
		free(lp);
		free(rp);
	}
	closedir(d);
	snprintf(mode, sizeof(mode), "%04o", (unsigned)(st.st_mode & 07777));
	/* after its contents: the batch makes it, then sets its mode */
	return rc == 0 ? add_op(c, "d", rpath, mode) : rc;
}

static int
upload(struct cp *c, const char *lsrc0, const char *rdst0)
{
	struct rent r;
	char *lsrc = chomp(lsrc0), *rdst = chomp(rdst0), *rp;
	int s, rc;

	if (rdst[0] != '/') {
		free(lsrc);
		free(rdst);
		return fail(c, "bad_request", "the sandbox path must be absolute");
	}
	if ((s = rstat(c, rdst, &r)) == -1) {
		free(lsrc);
		free(rdst);
		return -1;
	}
	if (s == 0 && r.canon != NULL && strcmp(r.type, "dir") == 0)
		xasprintf(&rp, "%s/%s", strcmp(r.canon, "/") == 0 ? "" : r.canon,
		    base_of(lsrc));
	else if (s == 1 && rdst0[strlen(rdst0) - 1] == '/')
		/* "into dir/": made (a PUT makes the parents) */
		xasprintf(&rp, "%s/%s", rdst, base_of(lsrc));
	else
		rp = xstrdup(rdst);
	rent_free(&r);
	c->total = local_size(lsrc);
	rc = up(c, lsrc, rp, 0);
	if (rc == 0)
		rc = flush_ops(c);
	cJSON_Delete(c->ops);
	c->ops = NULL;
	free(rp);
	free(lsrc);
	free(rdst);
	return rc;
}

/* ---- commands ---- */

int
cp_main(struct api *a, int argc, char **argv)
{
	struct cp c = { .a = a };
	char *b1 = NULL, *b2 = NULL;
	const char *id1, *p1, *id2, *p2;
	const char *why;
	int r1, r2, rc, ch;

	while ((ch = getopt(argc, argv, "+ql:")) != -1) {
		switch (ch) {
		case 'q': a->quiet = 1; break;
		case 'l':
			if (strnum_size(optarg, &c.rate, &why) == -1 || c.rate < 1024) {
				fprintf(stderr, "orch: -l is bytes a second, at least "
				    "1024 (64KiB, 10MiB)\n");
				return API_USAGE;
			}
			break;
		default: return API_USAGE;
		}
	}
	if (argc - optind != 2)
		return API_USAGE;
	r1 = remote_of(argv[optind], &b1, &id1, &p1);
	r2 = remote_of(argv[optind + 1], &b2, &id2, &p2);
	if (r1 == r2) {
		free(b1);
		free(b2);
		fprintf(stderr, "orch: one side of cp is ID:/path in a sandbox, the "
		    "other a local path\n");
		return API_USAGE;
	}
	c.bar = !a->quiet && !a->json && isatty(2);
	c.t0 = now();
	if (r1) {
		c.id = id1;
		rc = download(&c, p1, argv[optind + 1]);
	} else {
		c.id = id2;
		rc = upload(&c, argv[optind], p2);
	}
	if (c.bar && c.files > 0)
		bar_draw(&c, 1);
	if (rc == -1) {
		if (c.bar)
			fputc('\n', stderr);
		rc = api_fail(a, c.code, c.err);
	} else if (a->json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "files", (double)c.files);
		cJSON_AddNumberToObject(o, "dirs", (double)c.dirs);
		cJSON_AddNumberToObject(o, "links", (double)c.links);
		cJSON_AddNumberToObject(o, "bytes", (double)c.bytes);
		cJSON_AddNumberToObject(o, "resumed_bytes", (double)c.resumed);
		api_print_json(o, 1);
		cJSON_Delete(o);
	} else if (c.resumed > 0 && !a->quiet)
		fprintf(stderr, "orch: resumed: %lld bytes were already here\n",
		    c.resumed);
	free(b1);
	free(b2);
	return rc;
}

int
cp_ls(struct api *a, int argc, char **argv)
{
	struct cp c = { .a = a };
	char *b = NULL, *p;
	const char *path;
	cJSON *l;
	const cJSON *e;
	int ch, rec = 0;

	while ((ch = getopt(argc, argv, "r")) != -1) {
		if (ch != 'r')
			return API_USAGE;
		rec = 1;
	}
	if (argc - optind != 1 || !remote_of(argv[optind], &b, &c.id, &path))
		return API_USAGE;
	p = chomp(path);
	l = rlist(&c, p, rec ? "?list=1&recursive=1&max_entries=100000" :
	    "?list=1&max_entries=100000", NULL);
	free(p);
	if (l == NULL) {
		free(b);
		return api_fail(a, c.code, c.err);
	}
	if (a->json)
		api_print_json(l, 1);
	else
		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(l, "entries")) {
			struct rent r;
			const cJSON *pp = cJSON_GetObjectItemCaseSensitive(e, "path");

			rent_of(e, &r);
			printf("%04o %-7s %12lld %s%s%s\n", r.mode, r.type, r.size,
			    cJSON_IsString(pp) ? pp->valuestring : "?",
			    r.target != NULL ? " -> " : "",
			    r.target != NULL ? r.target : "");
			rent_free(&r);
		}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "truncated")))
		fprintf(stderr, "orch: the listing is truncated\n");
	cJSON_Delete(l);
	free(b);
	return 0;
}

int
cp_rm(struct api *a, int argc, char **argv)
{
	struct cp c = { .a = a };
	char *b = NULL, *p;
	const char *path;
	cJSON *r = NULL;
	const cJSON *n;
	int ch, rec = 0, st;

	while ((ch = getopt(argc, argv, "r")) != -1) {
		if (ch != 'r')
			return API_USAGE;
		rec = 1;
	}
	if (argc - optind != 1 || !remote_of(argv[optind], &b, &c.id, &path))
		return API_USAGE;
	p = fpath(&c, path, rec ? "?recursive=1" : NULL);
	st = api_call(a, "DELETE", p, NULL, &r);
	free(p);
	free(b);
	if (st != 0)
		return st;
	n = cJSON_GetObjectItemCaseSensitive(r, "deleted");
	if (a->json)
		api_print_json(r, 1);
	else
		printf("deleted %d\n", cJSON_IsNumber(n) ? n->valueint : 0);
	cJSON_Delete(r);
	return 0;
}
