/*
 * runtime/local/record.c: the state directory, the truth about every
 * sandbox (docs/local-runtime.md, "State directory"). <state_dir>/<id>/
 * holds record.json (what the sandbox is), pid (its processes, with their
 * /proc start times), uid (its uid block, written before the record) and
 * lock. list() rebuilds everything from these, so the runtime keeps no
 * state of its own in memory.
 *
 * Rules:
 * - Whoever changes a sandbox holds its lock (rl_rec_open, or rl_id_lock in
 *   create and destroy); the kernel drops it if that process dies, so a
 *   held lock means "being changed now", a free one over a "creating"
 *   record means "interrupted".
 * - Records are replaced whole by a rename, never edited in place: a
 *   crash leaves the old record or the new one.
 * - What is read back is not trusted blindly: a record or pid file that
 *   does not parse, or is incomplete, is refused whole (never half-loaded),
 *   and a pid counts only while its /proc start time matches.
 * - Calls nothing else in the runtime but proc.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "local_int.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

#define RL_PIDFILE_MAX	512	/* five numbers: longer is not ours */

#define RL_UIDFILE_MAX	64	/* one number */

int
rl_sdir_path(const struct rl *rl, const char *id, const char *sub, char *out,
    size_t outlen)
{
	int n;

	if (sub == NULL)
		n = snprintf(out, outlen, "%s/%s", rl->state_dir, id);
	else
		n = snprintf(out, outlen, "%s/%s/%s", rl->state_dir, id, sub);
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

void
rl_rec_clear(struct rec *r)
{
	cJSON_Delete(r->labels);
	cJSON_Delete(r->env);
	memset(r, 0, sizeof(*r));
}

/*
 * record.json's scalar fields, one row each: rl_rec_load reads them and
 * rl_rec_save writes them, in this order, after "id" (written for the
 * reader's sake; loading takes the id from the directory's name). in: the
 * object holding the field (NULL: the top level).
 */
enum rec_ftype { RF_STR, RF_NUM, RF_FLAG };	/* char[], long long, int */

static const struct rec_field {
	const char	*in;
	const char	*name;
	enum rec_ftype	 type;
	size_t		 off;	/* in struct rec */
	size_t		 len;	/* RF_STR: the buffer's size */
} rec_fields[] = {
#define RF(in, name, type, m) \
	{ in, name, type, offsetof(struct rec, m), sizeof(((struct rec *)0)->m) }
	RF(NULL, "image", RF_STR, image),
	RF(NULL, "image_dir", RF_STR, image_dir),
	RF(NULL, "phase", RF_STR, phase),
	RF(NULL, "reason", RF_STR, reason),
	RF(NULL, "uid", RF_NUM, uid),
	RF(NULL, "uid_range", RF_NUM, uid_range),
	RF(NULL, "created_ms", RF_NUM, created_ms),
	RF(NULL, "disk_bytes", RF_NUM, disk_bytes),
	RF(NULL, "run_as_root", RF_FLAG, run_as_root),
	RF(NULL, "writable_root", RF_FLAG, writable_root),
	RF("limits", "mem_bytes", RF_NUM, lim.mem_bytes),
	RF("limits", "cpu_millis", RF_NUM, lim.cpu_millis),
	RF("limits", "pids_max", RF_NUM, lim.pids_max),
	RF("limits", "mem_reserve_bytes", RF_NUM, lim.mem_low),
#undef RF
};

/* Sets r's fields from o by rec_fields: absent or mistyped ones are ""
 * or 0. */
static void
rec_get(struct rec *r, const cJSON *o)
{
	const struct rec_field *f;
	const cJSON *v;
	char *m;

	for (f = rec_fields; f < rec_fields + NELEM(rec_fields); f++) {
		v = cJSON_GetObjectItemCaseSensitive(f->in == NULL ? o :
		    cJSON_GetObjectItemCaseSensitive(o, f->in), f->name);
		m = (char *)r + f->off;
		switch (f->type) {
		case RF_STR:
			m[0] = '\0';
			if (cJSON_IsString(v) && v->valuestring != NULL)
				snprintf(m, f->len, "%s", v->valuestring);
			break;
		case RF_NUM:
			*(long long *)(void *)m = cJSON_IsNumber(v) ?
			    (long long)v->valuedouble : 0;
			break;
		case RF_FLAG:
			*(int *)(void *)m = cJSON_IsNumber(v) &&
			    (long long)v->valuedouble != 0;
			break;
		}
	}
}

/* Adds r's fields to o by rec_fields. */
static void
rec_put(const struct rec *r, cJSON *o)
{
	const struct rec_field *f;
	const char *m;
	cJSON *in;

	for (f = rec_fields; f < rec_fields + NELEM(rec_fields); f++) {
		in = o;
		if (f->in != NULL &&
		    (in = cJSON_GetObjectItemCaseSensitive(o, f->in)) == NULL)
			in = cJSON_AddObjectToObject(o, f->in);
		m = (const char *)r + f->off;
		switch (f->type) {
		case RF_STR:
			cJSON_AddStringToObject(in, f->name, m);
			break;
		case RF_NUM:
			cJSON_AddNumberToObject(in, f->name,
			    (double)*(const long long *)(const void *)m);
			break;
		case RF_FLAG:
			cJSON_AddNumberToObject(in, f->name,
			    *(const int *)(const void *)m);
			break;
		}
	}
}

static cJSON *
take_obj(cJSON *o, const char *k)
{
	cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(o, k);

	if (v != NULL && !cJSON_IsObject(v)) {
		cJSON_Delete(v);
		v = NULL;
	}
	return v;
}

int
rl_rec_load(const struct rl *rl, const char *id, struct rec *r, char *err,
    size_t errlen)
{
	char p[RL_PATH_MAX], e[RL_PATH_MAX + 64];
	struct buf b;
	cJSON *o;

	memset(r, 0, sizeof(*r));
	buf_init(&b, RL_RECORD_MAX);
	if (rl_sdir_path(rl, id, "record.json", p, sizeof(p)) == -1 ||
	    util_read_file_flags(p, O_NOFOLLOW, &b, e, sizeof(e)) == -1) {
		buf_free(&b);
		snprintf(err, errlen, "%s: no record", id);
		return -1;
	}
	o = b.p != NULL ? cJSON_ParseWithLength(b.p, b.len) : NULL;
	buf_free(&b);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		snprintf(err, errlen, "%s: record is not valid JSON", id);
		return -1;
	}
	snprintf(r->id, sizeof(r->id), "%s", id);
	rec_get(r, o);
	if (r->uid_range <= 0 || r->uid_range > 65536)
		r->uid_range = 1;
	r->labels = take_obj(o, "labels");
	r->env = take_obj(o, "env");
	cJSON_Delete(o);
	if (r->labels == NULL)
		r->labels = cJSON_CreateObject();
	if (r->env == NULL)
		r->env = cJSON_CreateObject();
	if (r->uid <= 0 || r->image_dir[0] != '/') {
		rl_rec_clear(r);
		snprintf(err, errlen, "%s: record is incomplete", id);
		return -1;
	}
	return 0;
}

/*
 * Writes record.json, always atomically (a temp file renamed over it), so a
 * crash of the process — the orchestrator's or a sandboxctl — never leaves
 * a torn record: readers see the old one or the new one. durable: fsync the
 * temp file first too, which only adds safety against a crash of the whole
 * machine (power loss), where the sandboxes' processes are gone anyway and
 * the orchestrator reconciles from what it finds. Only stop and a failed
 * start ask for it; create, start, set_labels and attach_egress (the
 * warm-pool claim path, 5-15 ms per fsync under load) do not.
 */
int
rl_rec_save(const struct rl *rl, const struct rec *r, int durable, char *err,
    size_t errlen)
{
	char p[RL_PATH_MAX];
	cJSON *o;
	char *s;
	int rc;

	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", r->id);
	rec_put(r, o);
	cJSON_AddItemToObject(o, "labels", r->labels != NULL ?
	    cJSON_Duplicate(r->labels, 1) : cJSON_CreateObject());
	cJSON_AddItemToObject(o, "env", r->env != NULL ?
	    cJSON_Duplicate(r->env, 1) : cJSON_CreateObject());
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (strlen(s) > RL_RECORD_MAX) {
		free(s);
		snprintf(err, errlen, "record too large (labels/env)");
		return -1;
	}
	if (rl_sdir_path(rl, r->id, "record.json", p, sizeof(p)) == -1) {
		free(s);
		snprintf(err, errlen, "path too long");
		return -1;
	}
	rc = durable ? util_write_file_atomic(p, s, strlen(s), 0600, err,
	    errlen) : util_write_file_replace(p, s, strlen(s), 0600, err, errlen);
	free(s);
	return rc;
}

int
rl_pid_load(const struct rl *rl, const char *id, struct pidrec *pr)
{
	char p[RL_PATH_MAX], e[RL_PATH_MAX + 64];
	struct buf b;
	int n;

	memset(pr, 0, sizeof(*pr));
	buf_init(&b, RL_PIDFILE_MAX);
	if (rl_sdir_path(rl, id, "pid", p, sizeof(p)) == -1 ||
	    util_read_file_flags(p, O_NOFOLLOW, &b, e, sizeof(e)) == -1) {
		buf_free(&b);
		return -1;
	}
	n = b.p != NULL ? sscanf(b.p, "%lld %lld %lld %lld %lld",
	    &pr->bwrap_pid, &pr->bwrap_start, &pr->child_pid,
	    &pr->child_start, &pr->started_ms) : 0;
	buf_free(&b);
	if (n != 5 || pr->bwrap_pid <= 1 || pr->child_pid <= 1 ||
	    pr->bwrap_pid > INT_MAX || pr->child_pid > INT_MAX) {
		memset(pr, 0, sizeof(*pr));
		return -1;
	}
	return 0;
}

int
rl_pid_save(const struct rl *rl, const char *id, const struct pidrec *pr,
    char *err, size_t errlen)
{
	char p[RL_PATH_MAX], line[256];

	if (rl_sdir_path(rl, id, "pid", p, sizeof(p)) == -1) {
		snprintf(err, errlen, "state path too long");
		return -1;
	}
	snprintf(line, sizeof(line), "%lld %lld %lld %lld %lld\n",
	    pr->bwrap_pid, pr->bwrap_start, pr->child_pid, pr->child_start,
	    pr->started_ms);
	return util_write_file_replace(p, line, strlen(line), 0600, err,
	    errlen);
}

int
rl_pid_alive(const struct pidrec *pr)
{
	if (pr->child_pid > 1 &&
	    rl_proc_start((pid_t)pr->child_pid) == pr->child_start)
		return 1;
	return 0;
}

/* Per-sandbox lock: held by whoever changes the sandbox; released by
 * the kernel if that process dies. Returns the fd or -1. */
int
rl_id_lock(const struct rl *rl, const char *id, int nonblock)
{
	char p[RL_PATH_MAX];
	int fd;

	if (rl_sdir_path(rl, id, "lock", p, sizeof(p)) == -1)
		return -1;
	if ((fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) == -1)
		return -1;
	while (flock(fd, LOCK_EX | (nonblock ? LOCK_NB : 0)) == -1) {
		if (errno == EINTR)
			continue;
		close(fd);
		return -1;
	}
	return fd;
}

void
rl_id_unlock(int fd)
{
	if (fd != -1)
		close(fd);
}

/*
 * The opening of every operation that changes an existing sandbox: checks
 * the id, takes the sandbox's lock and loads its record. Returns the lock
 * (give it to rl_rec_close) or -1 with err.
 */
int
rl_rec_open(const struct rl *rl, const char *id, struct rec *r, char *err,
    size_t errlen)
{
	char sdir[RL_PATH_MAX];
	int lfd;

	memset(r, 0, sizeof(*r));
	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "invalid sandbox id");
		return -1;
	}
	if (rl_sdir_path(rl, id, NULL, sdir, sizeof(sdir)) == -1 ||
	    access(sdir, F_OK) == -1 || (lfd = rl_id_lock(rl, id, 0)) == -1) {
		snprintf(err, errlen, "sandbox %s not found", id);
		return -1;
	}
	if (rl_rec_load(rl, id, r, err, errlen) == -1) {
		rl_id_unlock(lfd);
		return -1;
	}
	return lfd;
}

void
rl_rec_close(struct rec *r, int lfd)
{
	rl_rec_clear(r);
	rl_id_unlock(lfd);
}

/* Calls fn for every sandbox directory (a valid id) in the state dir. */
int
rl_each_id(const struct rl *rl, void (*fn)(const char *, void *), void *arg,
    char *err, size_t errlen)
{
	struct dirent *de;
	DIR *d;

	if ((d = opendir(rl->state_dir)) == NULL) {
		snprintf(err, errlen, "opendir %s: %s", rl->state_dir,
		    strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL)
		if (id_sandbox_valid(de->d_name))
			fn(de->d_name, arg);
	closedir(d);
	return 0;
}

/*
 * uid allocation. <state_dir>/.slots/<n> is a symlink to the id of the
 * sandbox holding slot n (host ids uid_base + n * uid_range ...), made by
 * symlink(2) under the global allocation lock (create_alloc), so a create
 * reads nothing per sandbox: it tries the slot after the one it took last
 * (slot_hint: a hint per process, nothing more). A claim whose sandbox
 * directory is gone, or whose sandbox's block (its record, else its uid
 * file) no longer covers the slot, is stale and taken over; destroy does
 * not remove it. .slots is made once from a walk of every sandbox, for
 * state dirs from before it (docs/local-runtime.md "Scale").
 */
static struct {
	char		dir[RL_PATH_MAX];	/* the state dir it is for */
	long long	next;
} slot_hint;

/* The slots [*lo, *hi] sandbox id's uid block covers. 0, or -1 if it has
 * none (no record and no uid file: not past its uid allocation). */
static int
id_slots(const struct rl *rl, const char *id, long long *lo, long long *hi)
{
	long long uid = -1, range = 0, R = rl->c.uid_range > 0 ?
	    rl->c.uid_range : 1;
	char e[RL_PATH_MAX + 64], p[RL_PATH_MAX];
	struct rec r;
	struct buf b;

	if (rl_rec_load(rl, id, &r, e, sizeof(e)) == 0) {
		uid = r.uid;
		range = r.uid_range;
		rl_rec_clear(&r);
	} else if (rl_sdir_path(rl, id, "uid", p, sizeof(p)) == 0) {
		/* a create that died before its record was written */
		buf_init(&b, RL_UIDFILE_MAX);
		if (util_read_file_flags(p, O_NOFOLLOW, &b, e, sizeof(e)) == 0 &&
		    b.p != NULL) {
			uid = strtoll(b.p, NULL, 10);
			range = R;
		}
		buf_free(&b);
	}
	if (uid < rl->c.uid_base || range <= 0)
		return -1;
	*lo = (uid - rl->c.uid_base) / R;
	*hi = (uid - rl->c.uid_base + range - 1) / R;
	return 0;
}

static int
slot_path(const struct rl *rl, const char *dir, long long n, char *p,
    size_t plen)
{
	int k = snprintf(p, plen, "%s/%s/%lld", rl->state_dir, dir, n);

	return k < 0 || (size_t)k >= plen ? -1 : 0;
}

/* Builds .slots from every sandbox's block, if it is not there yet. */
static int
slots_init(const struct rl *rl, char *err, size_t errlen)
{
	char dir[RL_PATH_MAX], tmp[RL_PATH_MAX], p[RL_PATH_MAX];
	long long lo, hi, i;
	struct dirent *de;
	DIR *d;

	if (snprintf(dir, sizeof(dir), "%s/.slots", rl->state_dir) >=
	    (int)sizeof(dir) || snprintf(tmp, sizeof(tmp), "%s/.slots.new",
	    rl->state_dir) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "state path too long");
		return -1;
	}
	if (access(dir, F_OK) == 0)
		return 0;
	/* a walk a crash cut short: start it again */
	if ((d = opendir(tmp)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.')
				(void)unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
		(void)rmdir(tmp);
	}
	if (mkdir(tmp, 0700) == -1) {
		snprintf(err, errlen, "mkdir %s: %s", tmp, strerror(errno));
		return -1;
	}
	if ((d = opendir(rl->state_dir)) == NULL) {
		snprintf(err, errlen, "opendir %s: %s", rl->state_dir,
		    strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (!id_sandbox_valid(de->d_name) ||
		    id_slots(rl, de->d_name, &lo, &hi) == -1)
			continue;
		for (i = lo < 0 ? 0 : lo; i <= hi && i < rl->c.uid_count; i++)
			if (slot_path(rl, ".slots.new", i, p, sizeof(p)) == 0 &&
			    symlink(de->d_name, p) == -1 && errno != EEXIST)
				log_warnx("uid slots: symlink %s: %s", p,
				    strerror(errno));
	}
	closedir(d);
	if (rename(tmp, dir) == -1) {
		snprintf(err, errlen, "rename %s: %s", tmp, strerror(errno));
		return -1;
	}
	return 0;
}

/* Claims slot n for id: 1 if taken, 0 if another sandbox holds it, -1
 * with err. */
static int
slot_claim(const struct rl *rl, long long n, const char *id, char *err,
    size_t errlen)
{
	char p[RL_PATH_MAX], owner[256], sd[RL_PATH_MAX];
	long long lo, hi;
	ssize_t k;

	if (slot_path(rl, ".slots", n, p, sizeof(p)) == -1) {
		snprintf(err, errlen, "state path too long");
		return -1;
	}
	if (symlink(id, p) == 0)
		return 1;
	if (errno != EEXIST) {
		snprintf(err, errlen, "symlink %s: %s", p, strerror(errno));
		return -1;
	}
	if ((k = readlink(p, owner, sizeof(owner) - 1)) > 0) {
		owner[k] = '\0';
		if (id_sandbox_valid(owner) && strcmp(owner, id) != 0 &&
		    rl_sdir_path(rl, owner, NULL, sd, sizeof(sd)) == 0 &&
		    access(sd, F_OK) == 0 &&
		    id_slots(rl, owner, &lo, &hi) == 0 && lo <= n && n <= hi)
			return 0;
	}
	/* stale: its sandbox is gone or holds another block */
	if (unlink(p) == -1 || symlink(id, p) == -1) {
		snprintf(err, errlen, "slot %s: %s", p, strerror(errno));
		return -1;
	}
	return 1;
}

/* A free block of uid_range host ids for sandbox id: uid_base + slot *
 * uid_range. Caller holds the global allocation lock. */
int
rl_alloc_uid(struct rl *rl, const char *id, long long *uid, char *err,
    size_t errlen)
{
	long long n = rl->c.uid_count, R = rl->c.uid_range > 0 ?
	    rl->c.uid_range : 1, i, k;
	int c;

	if (n <= 0) {
		snprintf(err, errlen, "no sandbox uid (uid_count %lld)", n);
		return -1;
	}
	if (slots_init(rl, err, errlen) == -1)
		return -1;
	if (strcmp(slot_hint.dir, rl->state_dir) != 0) {
		snprintf(slot_hint.dir, sizeof(slot_hint.dir), "%s", rl->state_dir);
		slot_hint.next = 0;
	}
	for (k = 0; k < n; k++) {
		i = (slot_hint.next + k) % n;
		if ((c = slot_claim(rl, i, id, err, errlen)) == -1)
			return -1;
		if (c == 1) {
			slot_hint.next = i + 1;
			*uid = rl->c.uid_base + i * R;
			return 0;
		}
	}
	snprintf(err, errlen, "no free sandbox uid (uid_count %lld reached)",
	    n);
	return -1;
}
