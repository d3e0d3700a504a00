/*
 * runtime/k8s/cache.c: the list-then-watch cache (cache.h): a thread per
 * set lists it (paged), watches it from the list's resourceVersion with
 * bookmarks, applies each event line to a name -> object map, resumes
 * from the last version seen, lists again on 410 Gone, backs off on
 * errors. Uses client.c only.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "attrib.h"
#include "buf.h"
#include "cache.h"
#include "client.h"
#include "log.h"
#include "strnum.h"
#include "util.h"
#include "xmalloc.h"

#define KC_PAGE		"500"		/* objects per list page */
#define KC_RV_MAX	128		/* bytes of a resourceVersion */
#define KC_MIN_WATCH_MS	1000		/* a quieter end counts as an error */

static const char *const set_name[KC_NSETS] = { "sandbox pods", "sandbox claims",
	"proxy pods", "sandbox network policies" };

struct kcache;

/* One watched set; objs, rv, synced, down_ms and st under kc->mtx, the
 * rest the set's thread's. */
struct kset {
	struct kcache	*kc;
	enum kcache_set	 which;
	char		*path, *q;
	void		(*on_event)(void *, const cJSON *, const cJSON *);
	void		*arg;
	pthread_t	 thr;
	int		 started;
	cJSON		*objs;		/* name -> object */
	char		 rv[KC_RV_MAX];	/* "" until listed */
	int		 synced;
	long long	 down_ms;	/* 0: watching; else since when not */
	struct kcache_stats st;
	/* the watch in progress (the set's thread only) */
	struct buf	 line;
	int		 expired, bad, nevents;
};

struct kcache {
	struct k8s_client *cl;
	pthread_mutex_t	 mtx;
	pthread_cond_t	 cv;
	int		 stopping;
	struct kset	 set[KC_NSETS];
};

static const char *
obj_str(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(o, a), b);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* 1 if resourceVersion a is numerically older than b; 0 if not or unknown. */
static int
rv_older(const char *a, const char *b)
{
	long long x, y;
	const char *e;

	if (a == NULL || b == NULL || strnum_ll(a, 0, LLONG_MAX, &x, &e) == -1 ||
	    strnum_ll(b, 0, LLONG_MAX, &y, &e) == -1)
		return 0;
	return x < y;
}

static int
stopping(struct kcache *kc)
{
	int s;

	pthread_mutex_lock(&kc->mtx);
	s = kc->stopping;
	pthread_mutex_unlock(&kc->mtx);
	return s;
}

static int
stop_cb(void *arg)
{
	struct kset *s = arg;

	return stopping(s->kc);
}

/* Waits ms (or until kcache_stop); 1 if stopping. */
static int
nap(struct kcache *kc, long long ms)
{
	struct timespec ts;
	int s;

	util_deadline(&ts, ms);
	pthread_mutex_lock(&kc->mtx);
	while (!kc->stopping &&
	    pthread_cond_timedwait(&kc->cv, &kc->mtx, &ts) != ETIMEDOUT)
		;
	s = kc->stopping;
	pthread_mutex_unlock(&kc->mtx);
	return s;
}

/* Caller holds kc->mtx. */
static void
set_upsert_locked(struct kset *s, cJSON *obj)
{
	const char *name = obj_str(obj, "metadata", "name");

	if (name == NULL) {
		cJSON_Delete(obj);
		return;
	}
	if (cJSON_GetObjectItemCaseSensitive(s->objs, name) != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(s->objs, name, obj);
	else
		cJSON_AddItemToObject(s->objs, name, obj);
}

static void
set_rv_locked(struct kset *s, const char *rv)
{
	if (rv != NULL && strlen(rv) < sizeof(s->rv))
		snprintf(s->rv, sizeof(s->rv), "%s", rv);
}

/* A full (paged) list replaces the set. 0, or -1 with err. */
static int
set_list(struct kset *s, char *err, size_t errlen)
{
	char *path = NULL, cont[1024] = "", rv[KC_RV_MAX] = "";
	const char *c, *v;
	cJSON *objs = cJSON_CreateObject(), *page, *items, *it;
	struct buf b;
	int st, pages = 0, rc = -1;

	buf_init(&b, K8S_MAX_RESP);
	do {
		free(path);
		if (xasprintf(&path, "%s?%s%slimit=" KC_PAGE "%s%s", s->path, s->q,
		    s->q[0] ? "&" : "", cont[0] ? "&continue=" : "", cont) == -1)
			abort();
		if (k8s_request(s->kc->cl, "GET", path, NULL, NULL, &st, &b, err,
		    errlen) == -1)
			goto out;
		if (st != 200) {
			k8s_status_error(st, b.p, b.len, err, errlen);
			goto out;
		}
		if ((page = cJSON_ParseWithLength(b.p ? b.p : "", b.len)) == NULL) {
			snprintf(err, errlen, "list %s: not JSON", s->path);
			goto out;
		}
		items = cJSON_DetachItemFromObjectCaseSensitive(page, "items");
		while (items != NULL &&
		    (it = cJSON_DetachItemFromArray(items, 0)) != NULL) {
			if ((v = obj_str(it, "metadata", "name")) == NULL ||
			    cJSON_GetObjectItemCaseSensitive(objs, v) != NULL)
				cJSON_Delete(it);
			else
				cJSON_AddItemToObject(objs, v, it);
		}
		cJSON_Delete(items);
		if ((v = obj_str(page, "metadata", "resourceVersion")) != NULL &&
		    strlen(v) < sizeof(rv))
			snprintf(rv, sizeof(rv), "%s", v);
		cont[0] = '\0';
		if ((c = obj_str(page, "metadata", "continue")) != NULL && c[0] != '\0' &&
		    k8s_urlencode(c, cont, sizeof(cont)) == -1) {
			snprintf(err, errlen, "list %s: continue token too long", s->path);
			cJSON_Delete(page);
			goto out;
		}
		cJSON_Delete(page);
	} while (cont[0] != '\0' && ++pages < 10000);
	if (rv[0] == '\0') {
		snprintf(err, errlen, "list %s: no resourceVersion", s->path);
		goto out;
	}
	pthread_mutex_lock(&s->kc->mtx);
	cJSON_Delete(s->objs);
	s->objs = objs;
	objs = NULL;
	snprintf(s->rv, sizeof(s->rv), "%s", rv);
	s->synced = 1;
	s->down_ms = 0;
	s->st.lists++;
	pthread_mutex_unlock(&s->kc->mtx);
	rc = 0;
out:
	cJSON_Delete(objs);
	free(path);
	buf_free(&b);
	return rc;
}

/* One event line; -1 ends the watch (410, an error event, garbage). */
static int
set_event(struct kset *s, const char *p, size_t n)
{
	cJSON *ev, *obj;
	const char *type, *rv, *name;
	const cJSON *t, *code;
	int rc = 0;

	if ((ev = cJSON_ParseWithLength(p, n)) == NULL) {
		s->bad = 1;
		return -1;
	}
	t = cJSON_GetObjectItemCaseSensitive(ev, "type");
	obj = cJSON_DetachItemFromObjectCaseSensitive(ev, "object");
	type = cJSON_IsString(t) ? t->valuestring : "";
	if (!cJSON_IsObject(obj)) {
		s->bad = 1;
		rc = -1;
		goto out;
	}
	if (strcmp(type, "ERROR") == 0) {
		code = cJSON_GetObjectItemCaseSensitive(obj, "code");
		if (cJSON_IsNumber(code) && code->valueint == 410)
			s->expired = 1;
		else
			s->bad = 1;
		rc = -1;
		goto out;
	}
	rv = obj_str(obj, "metadata", "resourceVersion");
	name = obj_str(obj, "metadata", "name");
	pthread_mutex_lock(&s->kc->mtx);
	if (strcmp(type, "BOOKMARK") == 0) {
		s->st.bookmarks++;
		set_rv_locked(s, rv);
	} else if ((strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) &&
	    name != NULL) {
		set_rv_locked(s, rv);
		if (s->on_event != NULL)
			s->on_event(s->arg, cJSON_GetObjectItemCaseSensitive(s->objs,
			    name), obj);
		set_upsert_locked(s, obj);
		obj = NULL;
		s->st.events++;
		s->nevents++;
	} else if (strcmp(type, "DELETED") == 0 && name != NULL) {
		set_rv_locked(s, rv);
		if (s->on_event != NULL)
			s->on_event(s->arg, cJSON_GetObjectItemCaseSensitive(s->objs,
			    name), NULL);
		cJSON_DeleteItemFromObjectCaseSensitive(s->objs, name);
		s->st.events++;
		s->nevents++;
	} else {
		s->bad = 1;
		rc = -1;
	}
	pthread_mutex_unlock(&s->kc->mtx);
out:
	cJSON_Delete(obj);
	cJSON_Delete(ev);
	return rc;
}

/* k8s_stream's fn: splits the body into lines. */
static int
set_data(void *arg, const char *p, size_t n)
{
	struct kset *s = arg;
	char *nl;
	size_t len;

	if (buf_add(&s->line, p, n) == -1) {
		log_warnx("k8s cache %s: an event over %zu bytes", set_name[s->which],
		    KCACHE_MAX_EVENT);
		s->bad = 1;
		return -1;
	}
	while (s->line.len > 0 && (nl = memchr(s->line.p, '\n', s->line.len)) != NULL) {
		len = (size_t)(nl - s->line.p);
		if (len > 0 && set_event(s, s->line.p, len) == -1)
			return -1;
		buf_consume(&s->line, len + 1);
	}
	return 0;
}

/* One watch from s->rv until it ends. 0: ended cleanly (resume from
 * s->rv); 1: 410, list again; -1: an error (err), back off. */
static int
set_watch(struct kset *s, char *err, size_t errlen)
{
	char *path, rv[KC_RV_MAX];
	long long t0 = util_mono_ms();
	int st, rc;

	pthread_mutex_lock(&s->kc->mtx);
	snprintf(rv, sizeof(rv), "%s", s->rv);
	s->down_ms = 0;
	s->st.watches++;
	pthread_mutex_unlock(&s->kc->mtx);
	if (xasprintf(&path, "%s?%s%swatch=1&resourceVersion=%s&"
	    "allowWatchBookmarks=true&timeoutSeconds=%d", s->path, s->q,
	    s->q[0] ? "&" : "", rv, KCACHE_WATCH_S) == -1)
		abort();
	buf_free(&s->line);
	s->expired = s->bad = s->nevents = 0;
	rc = k8s_stream(s->kc->cl, path, (KCACHE_WATCH_S + 30) * 1000LL, set_data,
	    stop_cb, s, &st, err, errlen);
	free(path);
	if (s->expired || st == 410)
		return 1;
	if (rc == -1)
		return -1;
	if (st != 200)
		return -1;	/* err has the Status */
	if (s->bad) {
		snprintf(err, errlen, "watch %s: an unreadable event", s->path);
		return -1;
	}
	if (s->nevents == 0 && util_mono_ms() - t0 < KC_MIN_WATCH_MS &&
	    !stopping(s->kc)) {
		snprintf(err, errlen, "watch %s: ended at once", s->path);
		return -1;
	}
	return 0;
}

static void
set_down(struct kset *s)
{
	pthread_mutex_lock(&s->kc->mtx);
	if (s->down_ms == 0)
		s->down_ms = util_mono_ms();
	pthread_mutex_unlock(&s->kc->mtx);
}

static void *
set_main(void *arg)
{
	struct kset *s = arg;
	long long backoff = KCACHE_BACKOFF_MS;
	char err[512];
	int listed = 0, w;

	while (!stopping(s->kc)) {
		if (!listed) {
			if (set_list(s, err, sizeof(err)) == -1) {
				set_down(s);
				pthread_mutex_lock(&s->kc->mtx);
				s->st.errors++;
				pthread_mutex_unlock(&s->kc->mtx);
				log_warnx("k8s cache %s: %s; again in %lld ms",
				    set_name[s->which], err, backoff);
				if (nap(s->kc, backoff))
					break;
				backoff = backoff * 2 > KCACHE_BACKOFF_MAX_MS ?
				    KCACHE_BACKOFF_MAX_MS : backoff * 2;
				continue;
			}
			listed = 1;
		}
		w = set_watch(s, err, sizeof(err));
		if (stopping(s->kc))
			break;
		if (w == 0) {
			backoff = KCACHE_BACKOFF_MS;
			continue;
		}
		set_down(s);
		if (w == 1) {
			pthread_mutex_lock(&s->kc->mtx);
			s->st.expired++;
			pthread_mutex_unlock(&s->kc->mtx);
			log_info("k8s cache %s: resourceVersion expired (410); "
			    "listing again", set_name[s->which]);
			listed = 0;
			continue;
		}
		pthread_mutex_lock(&s->kc->mtx);
		s->st.errors++;
		pthread_mutex_unlock(&s->kc->mtx);
		log_warnx("k8s cache %s: %s; watching again in %lld ms",
		    set_name[s->which], err, backoff);
		if (nap(s->kc, backoff))
			break;
		backoff = backoff * 2 > KCACHE_BACKOFF_MAX_MS ?
		    KCACHE_BACKOFF_MAX_MS : backoff * 2;
	}
	return NULL;
}

struct kcache *
kcache_start(struct k8s_client *cl, const struct kcache_src src[KC_NSETS],
    char *err, size_t errlen)
{
	struct kcache *kc = xcalloc(1, sizeof(*kc));
	struct kset *s;
	int i, e;

	kc->cl = cl;
	pthread_mutex_init(&kc->mtx, NULL);
	pthread_cond_init(&kc->cv, NULL);
	for (i = 0; i < KC_NSETS; i++) {
		s = &kc->set[i];
		s->kc = kc;
		s->which = (enum kcache_set)i;
		s->path = xstrdup(src[i].path);
		s->q = xstrdup(src[i].q ? src[i].q : "");
		s->on_event = src[i].on_event;
		s->arg = src[i].arg;
		s->objs = cJSON_CreateObject();
		buf_init(&s->line, KCACHE_MAX_EVENT);
	}
	for (i = 0; i < KC_NSETS; i++) {
		if ((e = pthread_create(&kc->set[i].thr, NULL, set_main,
		    &kc->set[i])) != 0) {
			snprintf(err, errlen, "k8s cache thread: %s", strerror(e));
			kcache_stop(kc);
			return NULL;
		}
		kc->set[i].started = 1;
	}
	return kc;
}

void
kcache_stop(struct kcache *kc)
{
	int i;

	if (kc == NULL)
		return;
	pthread_mutex_lock(&kc->mtx);
	kc->stopping = 1;
	pthread_cond_broadcast(&kc->cv);
	pthread_mutex_unlock(&kc->mtx);
	for (i = 0; i < KC_NSETS; i++) {
		if (kc->set[i].started)
			pthread_join(kc->set[i].thr, NULL);
		cJSON_Delete(kc->set[i].objs);
		buf_free(&kc->set[i].line);
		free(kc->set[i].path);
		free(kc->set[i].q);
	}
	pthread_cond_destroy(&kc->cv);
	pthread_mutex_destroy(&kc->mtx);
	free(kc);
}

/* Caller holds kc->mtx. */
static int
served_locked(const struct kset *s)
{
	return s->synced && (s->down_ms == 0 ||
	    util_mono_ms() - s->down_ms < KCACHE_STALE_MS);
}

int
kcache_items(struct kcache *kc, enum kcache_set which, cJSON **items)
{
	struct kset *s = &kc->set[which];
	const cJSON *it;

	*items = NULL;
	pthread_mutex_lock(&kc->mtx);
	if (served_locked(s)) {
		*items = cJSON_CreateArray();
		cJSON_ArrayForEach(it, s->objs) {
			cJSON_AddItemToArray(*items, cJSON_Duplicate(it, 1));
		}
	}
	pthread_mutex_unlock(&kc->mtx);
	return *items != NULL;
}

int
kcache_get(struct kcache *kc, enum kcache_set which, const char *name,
    cJSON **out)
{
	struct kset *s = &kc->set[which];
	const cJSON *it;

	*out = NULL;
	pthread_mutex_lock(&kc->mtx);
	if (served_locked(s) &&
	    (it = cJSON_GetObjectItemCaseSensitive(s->objs, name)) != NULL)
		*out = cJSON_Duplicate(it, 1);
	pthread_mutex_unlock(&kc->mtx);
	return *out != NULL;
}

void
kcache_put(struct kcache *kc, enum kcache_set which, const cJSON *obj)
{
	struct kset *s = &kc->set[which];
	const char *name = obj_str(obj, "metadata", "name");
	const cJSON *cur;

	if (name == NULL)
		return;
	pthread_mutex_lock(&kc->mtx);
	if (s->synced) {
		cur = cJSON_GetObjectItemCaseSensitive(s->objs, name);
		if (cur == NULL || rv_older(obj_str(cur, "metadata",
		    "resourceVersion"), obj_str(obj, "metadata", "resourceVersion")))
			set_upsert_locked(s, cJSON_Duplicate(obj, 1));
	}
	pthread_mutex_unlock(&kc->mtx);
}

void
kcache_stats(struct kcache *kc, enum kcache_set which, struct kcache_stats *out)
{
	struct kset *s = &kc->set[which];

	pthread_mutex_lock(&kc->mtx);
	*out = s->st;
	out->objects = cJSON_GetArraySize(s->objs);
	out->served = served_locked(s);
	pthread_mutex_unlock(&kc->mtx);
}
