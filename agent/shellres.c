/*
 * shellres.c: the kept results of /v1/shell commands started with a
 * "result_id" (an MCP task's command, orchestrator/mcp/tasks.c). Such a
 * command does not stop when its caller goes away (shell_detach), and its
 * result is written here when it ends, whether its caller is still there
 * or not, so a client polling the task gets it after the orchestrator was
 * killed and started again. <state>/shell-results/<id>.json, replaced
 * whole; <id>.run is made when such a command starts and removed when its
 * result is kept, so one that never ended (its sandbox stopped under it)
 * is told from one never started here. The newest SHELLRES_KEEP of each
 * are kept, none longer than --job-keep-ms (as finished jobs are).
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
#include "log.h"
#include "shellres.h"
#include "util.h"
#include "xmalloc.h"

#define SHELLRES_KEEP	100
#define SHELLRES_MODE	0600

static char resdir[PATH_MAX];

int
shellres_init(void)
{
	snprintf(resdir, sizeof(resdir), "%s/shell-results", agent_conf.statedir);
	if (mkdir(resdir, 0700) == -1 && errno != EEXIST) {
		log_warn("mkdir %s", resdir);
		return -1;
	}
	return 0;
}

static int
res_path(char *out, size_t len, const char *name, const char *ext)
{
	int n = snprintf(out, len, "%s/%s%s", resdir, name, ext);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
shellres_id_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > SHELLRES_ID_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_'))
			return 0;
	return 1;
}

struct ent {
	char		 name[SHELLRES_ID_MAX + 8];
	long long	 mtime;
};

static int
ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	return x->mtime < y->mtime ? 1 : x->mtime > y->mtime ? -1 : 0;
}

/* Removes the results past SHELLRES_KEEP (oldest first) or too old. */
static void
prune(void)
{
	DIR *d;
	struct dirent *de;
	struct stat st;
	struct ent *v = NULL;
	size_t n = 0, cap = 0, i, len;
	long long now = util_unix_ms();
	char path[PATH_MAX];

	if ((d = opendir(resdir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len < 5 || (strcmp(de->d_name + len - 5, ".json") != 0 &&
		    strcmp(de->d_name + len - 4, ".run") != 0) ||
		    len >= sizeof(v->name) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			v = xreallocarray(v, cap, sizeof(*v));
		}
		memcpy(v[n].name, de->d_name, len + 1);
		v[n].mtime = (long long)st.st_mtime * 1000;
		n++;
	}
	closedir(d);
	if (n == 0)
		return;
	qsort(v, n, sizeof(*v), ent_cmp);
	for (i = 0; i < n; i++)
		if ((i >= SHELLRES_KEEP || (agent_conf.job_keep_ms > 0 &&
		    now - v[i].mtime > agent_conf.job_keep_ms)) &&
		    res_path(path, sizeof(path), v[i].name, "") == 0 &&
		    unlink(path) == -1 && errno != ENOENT)
			log_warn("unlink %s", path);
	free(v);
}

void
shellres_save(const char *id, long long started_ms, int cancelled,
    const struct buf *body)
{
	struct buf b;
	char path[PATH_MAX], err[256], fp[SHELLRES_FP_MAX + 1];

	shellres_fp(id, fp);
	buf_init(&b, body->len + 256);
	if (buf_addf(&b, "{\"id\":\"%s\",\"fp\":\"%s\",\"started_ms\":%lld,"
	    "\"ended_ms\":%lld,\"cancelled\":%s,\"result\":", id, fp, started_ms,
	    util_unix_ms(), cancelled ? "true" : "false") == -1 ||
	    buf_add(&b, body->p, body->len) == -1 || buf_addstr(&b, "}") == -1) {
		log_warnx("shell result %s: too large to keep", id);
		buf_free(&b);
		return;
	}
	if (res_path(path, sizeof(path), id, ".json") == -1) {
		buf_free(&b);
		return;
	}
	if (util_write_file_atomic(path, b.p, b.len, SHELLRES_MODE, err,
	    sizeof(err)) == -1)
		log_warnx("shell result %s: %s", id, err);
	else
		log_info("shell result %s kept (%zu bytes)", id, b.len);
	buf_free(&b);
	if (res_path(path, sizeof(path), id, ".run") == 0 && unlink(path) == -1 &&
	    errno != ENOENT)
		log_warn("unlink %s", path);
	prune();
}

/*
 * The marker is one write, without fsync, on the command's start path: it
 * only tells a command lost with its sandbox from one never started (the
 * result itself is written durably, as a job's record is).
 */
void
shellres_started(const char *id, const char *fp)
{
	char path[PATH_MAX], err[256];

	if (res_path(path, sizeof(path), id, ".run") == -1 ||
	    util_write_file_replace(path, fp, strlen(fp), SHELLRES_MODE, err,
	    sizeof(err)) == -1)
		log_warnx("shell result %s: cannot mark it started", id);
}

int
shellres_fp_ok(const char *s, size_t n)
{
	size_t i;

	if (n > SHELLRES_FP_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

void
shellres_fp(const char *id, char out[SHELLRES_FP_MAX + 1])
{
	char path[PATH_MAX];
	FILE *f;
	size_t n = 0;

	out[0] = '\0';
	if (res_path(path, sizeof(path), id, ".run") == -1 ||
	    (f = fopen(path, "re")) == NULL)
		return;
	n = fread(out, 1, SHELLRES_FP_MAX, f);
	fclose(f);
	out[n] = '\0';
	if (!shellres_fp_ok(out, n))
		out[0] = '\0';
}

int
shellres_known(const char *id)
{
	char path[PATH_MAX];
	struct stat st;

	return (res_path(path, sizeof(path), id, ".json") == 0 &&
	    stat(path, &st) == 0) || shellres_lost(id);
}

int
shellres_lost(const char *id)
{
	char path[PATH_MAX];
	struct stat st;

	return res_path(path, sizeof(path), id, ".run") == 0 &&
	    stat(path, &st) == 0;
}

int
shellres_load(const char *id, struct buf *out)
{
	char path[PATH_MAX];
	FILE *f;
	char chunk[16384];
	size_t n;
	int rc = 0;

	if (res_path(path, sizeof(path), id, ".json") == -1 ||
	    (f = fopen(path, "re")) == NULL)
		return -1;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (buf_add(out, chunk, n) == -1) {
			rc = -1;
			break;
		}
	if (ferror(f))
		rc = -1;
	fclose(f);
	return rc;
}
