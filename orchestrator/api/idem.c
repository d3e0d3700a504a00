/*
 * idem.c: the Idempotency-Key store (idem.h). In memory: a hash table of
 * records (scope, key, fingerprint, kind, job id or result, created time)
 * under one mutex; on disk: one file a record, <dir>/<sha256(scope NL
 * key)>.json, replaced whole with util_write_file_atomic (O_EXCL temp,
 * write, fsync, rename, directory fsync) before what it records starts,
 * so that a re-issue after a crash of the orchestrator finds it. The
 * store is loaded the first time it is used (expired files are removed
 * then). A record expires idempotency.ttl after it was made: lookups skip
 * it and the sweep (at most once a second, and whenever a bound is
 * reached) removes it, file and all. The bounds (per scope, in all) refuse
 * a new key rather than forget a live one.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "digest.h"
#include "hex.h"
#include "idem.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

#define IDEM_BUCKETS	4096
#define IDEM_FILE_MAX	(IDEM_BODY_MAX * 2 + 4096)	/* a record's file */
#define IDEM_SWEEP_MS	1000

struct rec {
	char		*scope, *key;
	char		 fp[IDEM_FP_HEX + 1];
	enum idem_kind	 kind;
	char		 job[IDEM_JOB_MAX];
	int		 started;
	int		 status;	/* create: 0 while pending */
	char		*body;		/* create: the result */
	int		 busy;		/* create: running in this process */
	long long	 created_ms;	/* wall clock */
	struct rec	*next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct rec *tab[IDEM_BUCKETS];
static long long nrec;
static int loaded;		/* 1: loaded, -1: no directory */
static char dir[PATH_MAX];
static long long last_sweep;

int
idem_key_valid(const char *key)
{
	size_t i, n = strlen(key);

	if (n == 0 || n > IDEM_KEY_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)key[i] < 0x20 || (unsigned char)key[i] > 0x7e)
			return 0;
	return 1;
}

/* A canonical copy of v: objects' members sorted by name (caller frees). */
static int
name_cmp(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;

	return strcmp(x->string, y->string);
}

static cJSON *
canon(const cJSON *v)
{
	const cJSON *it;
	cJSON *o, **kids;
	size_t n = 0, i;

	if (cJSON_IsArray(v)) {
		o = cJSON_CreateArray();
		cJSON_ArrayForEach(it, v)
			cJSON_AddItemToArray(o, canon(it));
		return o;
	}
	if (!cJSON_IsObject(v))
		return cJSON_Duplicate(v, 1);
	cJSON_ArrayForEach(it, v)
		n++;
	kids = xcalloc(n + 1, sizeof(*kids));
	i = 0;
	cJSON_ArrayForEach(it, v)
		kids[i++] = (cJSON *)it;
	qsort(kids, n, sizeof(*kids), name_cmp);
	o = cJSON_CreateObject();
	for (i = 0; i < n; i++)
		cJSON_AddItemToObject(o, kids[i]->string, canon(kids[i]));
	free(kids);
	return o;
}

int
idem_fingerprint(const char *method, const char *route, const cJSON *body,
    char out[IDEM_FP_HEX + 1])
{
	cJSON *c = canon(body);
	char *txt = cJSON_PrintUnformatted(c);
	struct buf b;
	int rc = -1;

	cJSON_Delete(c);
	out[0] = '\0';
	if (txt == NULL)
		return -1;
	buf_init(&b, strlen(txt) + strlen(method) + strlen(route) + 8);
	if (buf_addf(&b, "%s\n%s\n", method, route) == 0 &&
	    buf_addstr(&b, txt) == 0)
		rc = digest_sha256_hex(b.p, b.len, out);
	buf_free(&b);
	free(txt);
	return rc;
}

static unsigned
bucket(const char *scope, const char *key)
{
	return (util_hash_str(scope) * 31u + util_hash_str(key)) % IDEM_BUCKETS;
}

static void
rec_path(const struct rec *r, char *path, size_t len)
{
	char h[DIGEST_SHA256_HEX + 1];
	struct buf b;

	buf_init(&b, strlen(r->scope) + strlen(r->key) + 2);
	ign(buf_addf(&b, "%s\n%s", r->scope, r->key));
	if (digest_sha256_hex(b.p, b.len, h) == -1)
		h[0] = '\0';
	buf_free(&b);
	snprintf(path, len, "%s/%s.json", dir, h);
}

static void
rec_free(struct rec *r)
{
	free(r->scope);
	free(r->key);
	free(r->body);
	free(r);
}

/* Writes r's file. 0, or -1 with err. */
static int
rec_save(const struct rec *r, char *err, size_t errlen)
{
	char path[PATH_MAX + 80], *txt;
	cJSON *o = cJSON_CreateObject();
	int rc;

	cJSON_AddStringToObject(o, "scope", r->scope);
	cJSON_AddStringToObject(o, "key", r->key);
	cJSON_AddStringToObject(o, "fingerprint", r->fp);
	cJSON_AddStringToObject(o, "kind", r->kind == IDEM_EXEC ? "exec" : "create");
	cJSON_AddNumberToObject(o, "created_ms", (double)r->created_ms);
	if (r->kind == IDEM_EXEC) {
		cJSON_AddStringToObject(o, "job", r->job);
		cJSON_AddBoolToObject(o, "started", r->started);
	} else if (r->status != 0) {
		cJSON_AddNumberToObject(o, "status", r->status);
		cJSON_AddStringToObject(o, "body", r->body != NULL ? r->body : "");
	}
	txt = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	rec_path(r, path, sizeof(path));
	rc = util_write_file_atomic(path, txt, strlen(txt), 0600, err, errlen);
	free(txt);
	return rc;
}

static void
rec_unlink(const struct rec *r)
{
	char path[PATH_MAX + 80];

	rec_path(r, path, sizeof(path));
	if (unlink(path) == -1 && errno != ENOENT)
		log_warn("idempotency: unlink %s", path);
}

static int
expired(const struct conf *c, const struct rec *r, long long now)
{
	return now - r->created_ms >= c->idem_ttl_ms;
}

/* Removes expired records (file and all), never one running here. */
static void
sweep(const struct conf *c, long long now)
{
	struct rec **pp, *r;
	int i;

	last_sweep = now;
	for (i = 0; i < IDEM_BUCKETS; i++)
		for (pp = &tab[i]; (r = *pp) != NULL;) {
			if (expired(c, r, now) && !r->busy) {
				*pp = r->next;
				rec_unlink(r);
				rec_free(r);
				nrec--;
				continue;
			}
			pp = &r->next;
		}
}

static struct rec *
find(const char *scope, const char *key)
{
	struct rec *r;

	for (r = tab[bucket(scope, key)]; r != NULL; r = r->next)
		if (strcmp(r->scope, scope) == 0 && strcmp(r->key, key) == 0)
			return r;
	return NULL;
}

static void
insert(struct rec *r)
{
	unsigned b = bucket(r->scope, r->key);

	r->next = tab[b];
	tab[b] = r;
	nrec++;
}

/* The directory of the records ("" when there is none). */
static void
resolve_dir(const struct conf *c)
{
	char *p;

	dir[0] = '\0';
	if (c->idem_dir != NULL && c->idem_dir[0] != '\0')
		snprintf(dir, sizeof(dir), "%s", c->idem_dir);
#ifdef HAVE_RT_LOCAL
	else if (strcmp(c->runtime, "local") == 0 && c->local.state_dir != NULL) {
		snprintf(dir, sizeof(dir), "%s", c->local.state_dir);
		while (strlen(dir) > 1 && dir[strlen(dir) - 1] == '/')
			dir[strlen(dir) - 1] = '\0';
		if ((p = strrchr(dir, '/')) != NULL && p != dir)
			snprintf(p, sizeof(dir) - (size_t)(p - dir), "/idempotency");
		else
			dir[0] = '\0';
	}
#endif
	else if (strcmp(c->runtime, "fake") == 0 && c->fake_state_dir != NULL)
		snprintf(dir, sizeof(dir), "%s-idempotency", c->fake_state_dir);
	(void)p;
}

static void
load_one(const struct conf *c, const char *name, long long now)
{
	char path[PATH_MAX + 300], err[256];
	const cJSON *v;
	struct buf b;
	struct rec *r;
	cJSON *o = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	buf_init(&b, IDEM_FILE_MAX);
	if (util_read_file(path, &b, err, sizeof(err)) == -1 ||
	    (o = cJSON_ParseWithLength(b.p != NULL ? b.p : "", b.len)) == NULL) {
		log_warnx("idempotency: %s: unreadable, removed", path);
		(void)unlink(path);
		goto out;
	}
	r = xcalloc(1, sizeof(*r));
	v = cJSON_GetObjectItemCaseSensitive(o, "scope");
	r->scope = xstrdup(cJSON_IsString(v) ? v->valuestring : "");
	v = cJSON_GetObjectItemCaseSensitive(o, "key");
	r->key = xstrdup(cJSON_IsString(v) ? v->valuestring : "");
	v = cJSON_GetObjectItemCaseSensitive(o, "fingerprint");
	snprintf(r->fp, sizeof(r->fp), "%s", cJSON_IsString(v) ? v->valuestring : "");
	v = cJSON_GetObjectItemCaseSensitive(o, "kind");
	r->kind = cJSON_IsString(v) && strcmp(v->valuestring, "create") == 0 ?
	    IDEM_CREATE : IDEM_EXEC;
	v = cJSON_GetObjectItemCaseSensitive(o, "created_ms");
	r->created_ms = cJSON_IsNumber(v) ? (long long)v->valuedouble : 0;
	v = cJSON_GetObjectItemCaseSensitive(o, "job");
	snprintf(r->job, sizeof(r->job), "%s", cJSON_IsString(v) ? v->valuestring : "");
	r->started = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "started"));
	v = cJSON_GetObjectItemCaseSensitive(o, "status");
	r->status = cJSON_IsNumber(v) ? (int)v->valuedouble : 0;
	v = cJSON_GetObjectItemCaseSensitive(o, "body");
	if (cJSON_IsString(v))
		r->body = xstrdup(v->valuestring);
	if (!idem_key_valid(r->key) || strlen(r->fp) != IDEM_FP_HEX ||
	    (r->kind == IDEM_EXEC && r->job[0] == '\0') ||
	    expired(c, r, now) || find(r->scope, r->key) != NULL) {
		(void)unlink(path);
		rec_free(r);
		goto out;
	}
	insert(r);
out:
	cJSON_Delete(o);
	buf_free(&b);
}

/* The first use: the directory, and the records in it. */
static void
load(const struct conf *c)
{
	long long now = util_unix_ms();
	struct dirent *de;
	size_t n;
	DIR *d;

	resolve_dir(c);
	loaded = -1;
	if (dir[0] == '\0')
		return;
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		log_warn("idempotency: mkdir %s", dir);
		return;
	}
	if ((d = opendir(dir)) == NULL) {
		log_warn("idempotency: %s", dir);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (n > 5 && strcmp(de->d_name + n - 5, ".json") == 0)
			load_one(c, de->d_name, now);
		else if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			(void)unlinkat(dirfd(d), de->d_name, 0);	/* a temp file */
	}
	closedir(d);
	loaded = 1;
	log_info("idempotency: %lld records in %s", nrec, dir);
}

static long long
scope_count(const char *scope)
{
	struct rec *r;
	long long n = 0;
	int i;

	for (i = 0; i < IDEM_BUCKETS; i++)
		for (r = tab[i]; r != NULL; r = r->next)
			n += strcmp(r->scope, scope) == 0;
	return n;
}

/* Drops r from the table (and its file). */
static void
drop(struct rec *r)
{
	struct rec **pp;

	for (pp = &tab[bucket(r->scope, r->key)]; *pp != NULL; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			rec_unlink(r);
			rec_free(r);
			nrec--;
			return;
		}
}

enum idem_rc
idem_begin(const struct conf *c, enum idem_kind kind, const char *scope,
    const char *key, const char *fp, struct idem_view *v, char *err,
    size_t errlen)
{
	long long now = util_unix_ms();
	unsigned char rnd[6];
	enum idem_rc rc;
	struct rec *r;

	memset(v, 0, sizeof(*v));
	pthread_mutex_lock(&mu);
	if (loaded == 0)
		load(c);
	if (loaded == -1) {
		snprintf(err, errlen, "Idempotency-Key is not available: no "
		    "directory for its records (set idempotency.dir)");
		rc = IDEM_OFF;
		goto out;
	}
	if (now - last_sweep >= IDEM_SWEEP_MS)
		sweep(c, now);
	if ((r = find(scope, key)) != NULL && expired(c, r, now) && !r->busy) {
		drop(r);
		r = NULL;
	}
	if (r != NULL) {
		if (r->kind != kind || strcmp(r->fp, fp) != 0) {
			snprintf(err, errlen, "Idempotency-Key \"%s\" was used "
			    "with different arguments (another method, route or "
			    "body) in session %s; use a new key for a new request",
			    key, scope);
			rc = IDEM_MISMATCH;
			goto out;
		}
		if (r->kind == IDEM_CREATE && r->status == 0) {
			if (r->busy) {
				snprintf(err, errlen, "the request with "
				    "Idempotency-Key \"%s\" is still running; "
				    "retry when it has answered", key);
				rc = IDEM_BUSY;
				goto out;
			}
			/* pending from an orchestrator that died: run it
			 * again (a create of an id is get-or-create) */
			r->busy = 1;
			rc = IDEM_NEW;
			goto out;
		}
		snprintf(v->job, sizeof(v->job), "%s", r->job);
		v->started = r->started;
		v->status = r->status;
		v->body = r->body != NULL ? xstrdup(r->body) : NULL;
		rc = IDEM_SAME;
		goto out;
	}
	if (nrec >= c->idem_max_total)
		sweep(c, now);
	if (nrec >= c->idem_max_total) {
		snprintf(err, errlen, "the orchestrator keeps %lld "
		    "Idempotency-Key records (idempotency.max_total); retry "
		    "when older ones expire (idempotency.ttl)", nrec);
		rc = IDEM_FULL;
		goto out;
	}
	if (scope_count(scope) >= c->idem_max_session) {
		sweep(c, now);
		if (scope_count(scope) >= c->idem_max_session) {
			snprintf(err, errlen, "session %s has %lld "
			    "Idempotency-Key records (idempotency.max_per_session);"
			    " retry when older ones expire (idempotency.ttl)",
			    scope, c->idem_max_session);
			rc = IDEM_FULL_SCOPE;
			goto out;
		}
	}
	r = xcalloc(1, sizeof(*r));
	r->scope = xstrdup(scope);
	r->key = xstrdup(key);
	snprintf(r->fp, sizeof(r->fp), "%s", fp);
	r->kind = kind;
	r->created_ms = now;
	if (kind == IDEM_EXEC) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			fatal("getrandom");
		memcpy(r->job, "j-", 2);
		hex_encode(rnd, sizeof(rnd), r->job + 2);
	} else
		r->busy = 1;
	if (rec_save(r, err, errlen) == -1) {
		log_warnx("idempotency: cannot record key of session %s: %s",
		    scope, err);
		rec_free(r);
		rc = IDEM_ERR;
		goto out;
	}
	insert(r);
	snprintf(v->job, sizeof(v->job), "%s", r->job);
	rc = IDEM_NEW;
out:
	pthread_mutex_unlock(&mu);
	return rc;
}

void
idem_started(const struct conf *c, const char *scope, const char *key)
{
	char err[256];
	struct rec *r;

	(void)c;
	pthread_mutex_lock(&mu);
	if ((r = find(scope, key)) != NULL && !r->started) {
		r->started = 1;
		if (rec_save(r, err, sizeof(err)) == -1)
			log_warnx("idempotency: session %s: %s", scope, err);
	}
	pthread_mutex_unlock(&mu);
}

void
idem_done(const struct conf *c, const char *scope, const char *key,
    int status, const char *body)
{
	char err[256];
	struct rec *r;

	(void)c;
	pthread_mutex_lock(&mu);
	if ((r = find(scope, key)) != NULL) {
		r->busy = 0;
		r->status = status;
		free(r->body);
		r->body = xstrdup(body != NULL && strlen(body) <= IDEM_BODY_MAX ?
		    body : "{}");
		if (rec_save(r, err, sizeof(err)) == -1)
			log_warnx("idempotency: session %s: %s", scope, err);
	}
	pthread_mutex_unlock(&mu);
}

void
idem_forget(const struct conf *c, const char *scope, const char *key)
{
	struct rec *r;

	(void)c;
	pthread_mutex_lock(&mu);
	if ((r = find(scope, key)) != NULL)
		drop(r);
	pthread_mutex_unlock(&mu);
}
