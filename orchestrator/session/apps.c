/*
 * apps.c: the apps a sandbox publishes (apps.h, docs/gateway.md).
 *
 * An app is "name:port:<sha256 of its token>" in the session's apps label
 * (s->apps, of the sandbox s->apps_of: apps of any other sandbox are gone,
 * so a re-provisioned or deleted sandbox's apps end with it without a
 * step of their own). The token itself is returned once, by expose, and
 * kept nowhere. Changes are serialised by apps_mu (expose and unexpose
 * read, change and write the label); s->apps is written under mgr->mu
 * too, which is what the gateways' snapshot (apps_routes) takes.
 *
 * The host of an app is "<name>-<sandbox id>.<apps.domain>": one host per
 * app, so apps never share cookies or an origin.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "apps.h"
#include "digest.h"
#include "log.h"
#include "sess_int.h"
#include "util.h"
#include "xmalloc.h"

#define APPS_LIMIT	32	/* apps.max_per_sandbox's ceiling (SM_APPS_MAX) */
#define UNEXPOSE_WAIT_MS 1000	/* how long unexpose waits for the gateways */

/* The ports a sandbox's own plumbing uses: the proxy listener (local) and
 * the agent (kubernetes). */
static const int fixed_reserved[] = { 3128, 7070 };

struct app {
	int	port;
	char	name[APP_NAME_MAX + 1];
	char	hash[APP_HASH_HEX + 1];
};

struct apps_watch {
	int			 fd;
	unsigned long long	 acked;
	struct apps_watch	*next;
};

static pthread_mutex_t apps_mu = PTHREAD_MUTEX_INITIALIZER;	/* changes */
static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cv = PTHREAD_COND_INITIALIZER;
static struct apps_watch *watches;
static unsigned long long gen;		/* under watch_mu */

/* Copies src into dst[len], cut at len - 1 bytes (callers' sizes hold). */
static void
scpy(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* ---- names, ports, tokens ---- */

static int
name_valid(const char *n)
{
	size_t i, len = strlen(n);

	if (len == 0 || len > APP_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		char ch = n[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    (ch == '-' && i > 0 && i + 1 < len)))
			return 0;
	}
	return 1;
}

static int
port_reserved(const struct conf *c, int port)
{
	size_t i;
	long long v;

	for (i = 0; i < NELEM(fixed_reserved); i++)
		if (port == fixed_reserved[i])
			return 1;
	for (i = 0; i < c->apps_reserved_ports.n; i++) {
		char *end;

		errno = 0;
		v = strtoll(c->apps_reserved_ports.v[i], &end, 10);
		if (errno == 0 && *end == '\0' && v == port)
			return 1;
	}
	return 0;
}

static void
token_hash(const char *tok, char out[APP_HASH_HEX + 1])
{
	if (digest_sha256_hex(tok, strlen(tok), out) == -1)
		fatalx("sha256 failed");
}

/* A new token: APP_TOKEN_BYTES random bytes in base64url, unpadded. */
static void
token_new(char *out, size_t len)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char r[APP_TOKEN_BYTES + 2];
	size_t i, o = 0;

	ASSERT(len >= 4 * (APP_TOKEN_BYTES + 2) / 3 + 1);
	memset(r, 0, sizeof(r));
	if (getrandom(r, APP_TOKEN_BYTES, 0) != APP_TOKEN_BYTES)
		fatal("getrandom");
	for (i = 0; i < APP_TOKEN_BYTES; i += 3) {
		unsigned v = (unsigned)r[i] << 16 | (unsigned)r[i + 1] << 8 | r[i + 2];
		size_t k, left = APP_TOKEN_BYTES - i;

		for (k = 0; k < 4 && (k == 0 || k <= left); k++)
			out[o++] = b64[(v >> (18 - 6 * k)) & 63];
	}
	out[o] = '\0';
}

/* ---- the label ---- */

/* Parses "name:port:hash,..." into a[0..max); entries that do not parse
 * are dropped (a hand-edited record cannot break the rest). */
static size_t
apps_parse(const char *label, struct app *a, size_t max)
{
	const char *p = label;
	size_t n = 0;

	while (*p != '\0' && n < max) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[APP_NAME_MAX + 8 + APP_HASH_HEX + 2], *c1, *c2, *e;
		long port;

		if (len < sizeof(item)) {
			memcpy(item, p, len);
			item[len] = '\0';
			if ((c1 = strchr(item, ':')) != NULL &&
			    (c2 = strchr(c1 + 1, ':')) != NULL) {
				*c1 = *c2 = '\0';
				errno = 0;
				port = strtol(c1 + 1, &e, 10);
				if (name_valid(item) && errno == 0 && *e == '\0' &&
				    port >= 1 && port <= 65535 &&
				    strlen(c2 + 1) == APP_HASH_HEX &&
				    strspn(c2 + 1, "0123456789abcdef") == APP_HASH_HEX) {
					scpy(a[n].name, sizeof(a[n].name), item);
					a[n].port = (int)port;
					scpy(a[n].hash, sizeof(a[n].hash), c2 + 1);
					n++;
				}
			}
		}
		p += len;
		if (*p == ',')
			p++;
	}
	return n;
}

static void
apps_format(const struct app *a, size_t n, char *out, size_t len)
{
	size_t i, o = 0;

	out[0] = '\0';
	for (i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%s%s:%d:%s",
		    i ? "," : "", a[i].name, a[i].port, a[i].hash);
	ASSERT(o < len);
}

/* s's apps now (of its current sandbox). Takes mgr->mu. */
static size_t
apps_of_sess(struct sess *s, struct app *a, size_t max, char *rtid,
    size_t rtidlen)
{
	char label[SM_APPS_MAX];

	pthread_mutex_lock(&s->mgr->mu);
	if (s->state != S_NONE && strcmp(s->apps_of, s->rtid) == 0)
		scpy(label, sizeof(label), s->apps);
	else
		label[0] = '\0';
	if (rtid != NULL)
		snprintf(rtid, rtidlen, "%s", s->rtid);
	pthread_mutex_unlock(&s->mgr->mu);
	return apps_parse(label, a, max);
}

static void
app_host(const struct conf *c, const char *name, const char *rtid, char *out,
    size_t len)
{
	if (snprintf(out, len, "%s-%s.%s", name, rtid, c->apps_domain) >=
	    (int)len)
		out[0] = '\0';	/* a domain that long matches no Host */
}

static void
app_url(const struct conf *c, const char *host, char *out, size_t len)
{
	const char *scheme = c->apps_scheme != NULL ? c->apps_scheme : "http";
	int def = strcmp(scheme, "https") == 0 ? 443 : 80;

	if (c->apps_port > 0 && c->apps_port != def)
		snprintf(out, len, "%s://%s:%lld/", scheme, host, c->apps_port);
	else
		snprintf(out, len, "%s://%s/", scheme, host);
}

/* ---- change notification ---- */

static unsigned long long
changed(void)
{
	struct apps_watch *w;
	unsigned long long g;
	char b = 1;

	pthread_mutex_lock(&watch_mu);
	g = ++gen;
	for (w = watches; w != NULL; w = w->next)
		if (write(w->fd, &b, 1) == -1 && errno != EAGAIN)
			log_debug("apps: wake failed: %s", strerror(errno));
	pthread_mutex_unlock(&watch_mu);
	return g;
}

/* Waits (bounded) until every connected gateway applied change g. */
static void
wait_applied(unsigned long long g)
{
	struct timespec ts;
	struct apps_watch *w;
	int behind;

	util_deadline(&ts, UNEXPOSE_WAIT_MS);
	pthread_mutex_lock(&watch_mu);
	for (;;) {
		behind = 0;
		for (w = watches; w != NULL; w = w->next)
			if (w->acked < g)
				behind = 1;
		if (!behind || pthread_cond_timedwait(&watch_cv, &watch_mu,
		    &ts) != 0)
			break;
	}
	pthread_mutex_unlock(&watch_mu);
}

struct apps_watch *
apps_watch_new(int fd)
{
	struct apps_watch *w = xcalloc(1, sizeof(*w));

	w->fd = fd;
	pthread_mutex_lock(&watch_mu);
	w->next = watches;
	watches = w;
	pthread_mutex_unlock(&watch_mu);
	return w;
}

void
apps_watch_free(struct apps_watch *w)
{
	struct apps_watch **pp;

	if (w == NULL)
		return;
	pthread_mutex_lock(&watch_mu);
	for (pp = &watches; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	pthread_cond_broadcast(&watch_cv);
	pthread_mutex_unlock(&watch_mu);
	free(w);
}

unsigned long long
apps_gen(void)
{
	unsigned long long g;

	pthread_mutex_lock(&watch_mu);
	g = gen;
	pthread_mutex_unlock(&watch_mu);
	return g;
}

void
apps_watch_acked(struct apps_watch *w, unsigned long long g)
{
	pthread_mutex_lock(&watch_mu);
	if (g > w->acked)
		w->acked = g;
	pthread_cond_broadcast(&watch_cv);
	pthread_mutex_unlock(&watch_mu);
}

/* ---- operations ---- */

int
apps_enabled(struct sessmgr *m, char *err, size_t errlen)
{
	if (m->conf->apps_domain == NULL || m->conf->apps_domain[0] == '\0') {
		snprintf(err, errlen, "publishing apps is off on this server (the "
		    "operator sets apps.domain to turn it on)");
		return 0;
	}
	if (m->rt->ops->app_connect == NULL) {
		snprintf(err, errlen, "the %s runtime cannot publish apps",
		    m->rt->ops->name);
		return 0;
	}
	return 1;
}

/*
 * Writes apps a[0..n) as s's (of sandbox rtid): the label first (the
 * record is the truth), then s, then the runtime's port set. Held: apps_mu
 * and s->lk shared. 0, or -1 with err (nothing changed).
 */
static int
apps_store(struct sess *s, const char *rtid, const struct app *a, size_t n,
    char *err, size_t errlen)
{
	struct sessmgr *m = s->mgr;
	char label[SM_APPS_MAX], old[SM_APPS_MAX], oldof[ID_SANDBOX_MAX];
	struct sm_rec rec;
	int ports[APPS_LIMIT];
	size_t i;

	apps_format(a, n, label, sizeof(label));
	pthread_mutex_lock(&m->mu);
	scpy(old, sizeof(old), s->apps);
	scpy(oldof, sizeof(oldof), s->apps_of);
	scpy(s->apps, sizeof(s->apps), label);
	scpy(s->apps_of, sizeof(s->apps_of), rtid);
	pthread_mutex_unlock(&m->mu);
	sm_record(s, rtid, s->state == S_STOPPED, &rec);
	if (m->rt->ops->set_labels(m->rt, rtid, rec.kv, rec.n, err,
	    errlen) == -1) {
		pthread_mutex_lock(&m->mu);
		scpy(s->apps, sizeof(s->apps), old);
		scpy(s->apps_of, sizeof(s->apps_of), oldof);
		pthread_mutex_unlock(&m->mu);
		return -1;
	}
	if (m->rt->ops->app_ports != NULL) {
		for (i = 0; i < n; i++)
			ports[i] = a[i].port;
		if (m->rt->ops->app_ports(m->rt, rtid, ports, n, err,
		    errlen) == -1)
			log_warnx("session=%s sandbox=%s app ports not applied: %s",
			    s->sid, rtid, err);
	}
	return 0;
}

static cJSON *
app_json(const struct conf *c, const struct app *a, const char *rtid)
{
	char host[APP_HOST_MAX], url[APP_HOST_MAX + 32];
	cJSON *o = cJSON_CreateObject();

	app_host(c, a->name, rtid, host, sizeof(host));
	app_url(c, host, url, sizeof(url));
	cJSON_AddStringToObject(o, "name", a->name);
	cJSON_AddNumberToObject(o, "port", a->port);
	cJSON_AddStringToObject(o, "url", url);
	return o;
}

cJSON *
apps_expose(struct sess *s, int port, const char *name, enum sess_err *e,
    char *err, size_t errlen, char *note, size_t notelen)
{
	struct sessmgr *m = s->mgr;
	const struct conf *c = m->conf;
	struct app a[APPS_LIMIT];
	char rtid[ID_SANDBOX_MAX], nm[APP_NAME_MAX + 1], tok[64], cerr[256];
	struct rt_app_conn ac;
	size_t n, i, max = (size_t)c->apps_max_per_sandbox;
	cJSON *o;
	int crc;

	note[0] = '\0';
	*e = SE_BAD;
	if (!apps_enabled(m, err, errlen))
		return NULL;
	if (port < 1 || port > 65535) {
		snprintf(err, errlen, "port %d is out of range: use 1-65535", port);
		return NULL;
	}
	if (port_reserved(c, port)) {
		snprintf(err, errlen, "port %d is reserved for the sandbox's own "
		    "plumbing (the egress proxy listener 3128, the agent 7070, or "
		    "apps.reserved_ports): run the app on another port", port);
		return NULL;
	}
	if (name == NULL)
		snprintf(nm, sizeof(nm), "p%d", port);
	else
		scpy(nm, sizeof(nm), name);
	if (name != NULL && (strlen(name) > APP_NAME_MAX || !name_valid(nm))) {
		snprintf(err, errlen, "name must be a DNS label: 1-%d characters "
		    "from a-z, 0-9 and '-', not starting or ending with '-'",
		    APP_NAME_MAX);
		return NULL;
	}
	if (max > APPS_LIMIT)
		max = APPS_LIMIT;
	pthread_mutex_lock(&apps_mu);
	n = apps_of_sess(s, a, NELEM(a), rtid, sizeof(rtid));
	for (i = 0; i < n; i++)
		if (strcmp(a[i].name, nm) == 0)
			break;
	if (i == n && n >= max) {
		pthread_mutex_unlock(&apps_mu);
		*e = SE_LIMIT;
		snprintf(err, errlen, "this sandbox already publishes %zu apps, the "
		    "most it may (apps.max_per_sandbox): unexpose_port one first", n);
		return NULL;
	}
	if (i == n)
		n++;
	scpy(a[i].name, sizeof(a[i].name), nm);
	a[i].port = port;
	token_new(tok, sizeof(tok));
	token_hash(tok, a[i].hash);
	if (apps_store(s, rtid, a, n, err, errlen) == -1) {
		pthread_mutex_unlock(&apps_mu);
		*e = SE_RUNTIME;
		return NULL;
	}
	pthread_mutex_unlock(&apps_mu);
	wait_applied(changed());
	log_info("session=%s sandbox=%s app=%s port=%d exposed", s->sid, rtid,
	    nm, port);
	/* Is anything there yet? Only a hint for the model. */
	if ((crc = m->rt->ops->app_connect(m->rt, rtid, port, &ac, cerr,
	    sizeof(cerr))) == 0) {
		if (ac.fd != -1)
			close(ac.fd);
	} else if (crc == RT_ENOLISTEN)
		snprintf(note, notelen, "Nothing listens on port %d in the sandbox "
		    "yet: the URL answers 502 until a server listens there (on "
		    "0.0.0.0 or 127.0.0.1).", port);
	o = app_json(c, &a[i], rtid);
	cJSON_AddStringToObject(o, "token", tok);
	explicit_bzero(tok, sizeof(tok));
	*e = SE_OK;
	return o;
}

cJSON *
apps_list(struct sess *s)
{
	struct app a[APPS_LIMIT];
	char rtid[ID_SANDBOX_MAX];
	size_t n, i;
	cJSON *o = cJSON_CreateObject(), *arr;

	n = apps_of_sess(s, a, NELEM(a), rtid, sizeof(rtid));
	arr = cJSON_AddArrayToObject(o, "apps");
	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, app_json(s->mgr->conf, &a[i], rtid));
	return o;
}

int
apps_unexpose(struct sess *s, const char *name, enum sess_err *e, char *err,
    size_t errlen)
{
	struct app a[APPS_LIMIT];
	char rtid[ID_SANDBOX_MAX];
	size_t n, i;

	pthread_mutex_lock(&apps_mu);
	n = apps_of_sess(s, a, NELEM(a), rtid, sizeof(rtid));
	for (i = 0; i < n; i++)
		if (strcmp(a[i].name, name) == 0)
			break;
	if (i == n) {
		pthread_mutex_unlock(&apps_mu);
		*e = SE_NOTFOUND;
		snprintf(err, errlen, "no app named '%s' is published by this "
		    "session's sandbox (list_apps shows them)", name);
		return -1;
	}
	memmove(&a[i], &a[i + 1], (n - i - 1) * sizeof(a[0]));
	n--;
	if (apps_store(s, rtid, a, n, err, errlen) == -1) {
		pthread_mutex_unlock(&apps_mu);
		*e = SE_RUNTIME;
		return -1;
	}
	pthread_mutex_unlock(&apps_mu);
	wait_applied(changed());
	log_info("session=%s sandbox=%s app=%s unexposed", s->sid, rtid, name);
	return 0;
}

/* ---- the gateways' view ---- */

static int
route_cmp(const void *x, const void *y)
{
	return strcmp(((const struct app_route *)x)->host,
	    ((const struct app_route *)y)->host);
}

size_t
apps_routes(struct sessmgr *m, struct app_route **out)
{
	struct app a[APPS_LIMIT];
	struct app_route *r = NULL;
	size_t n = 0, cap = 0, k, i;
	struct sess *s;

	pthread_mutex_lock(&m->mu);
	for (i = 0; i < HASH_SIZE; i++)
		for (s = m->tab[i]; s != NULL; s = s->hnext) {
			if (s->state == S_NONE || s->apps[0] == '\0' ||
			    strcmp(s->apps_of, s->rtid) != 0)
				continue;
			k = apps_parse(s->apps, a, NELEM(a));
			while (n + k > cap) {
				cap = cap ? 2 * cap : 16;
				r = xreallocarray(r, cap, sizeof(*r));
			}
			for (size_t j = 0; j < k; j++, n++) {
				app_host(m->conf, a[j].name, s->rtid, r[n].host,
				    sizeof(r[n].host));
				scpy(r[n].app, sizeof(r[n].app), a[j].name);
				r[n].port = a[j].port;
				scpy(r[n].sandbox, sizeof(r[n].sandbox), s->rtid);
				scpy(r[n].session, sizeof(r[n].session), s->sid);
				scpy(r[n].hash, sizeof(r[n].hash), a[j].hash);
			}
		}
	pthread_mutex_unlock(&m->mu);
	if (n > 1)
		qsort(r, n, sizeof(*r), route_cmp);
	*out = r;
	return n;
}

/* The session and app at host (under mgr->mu); NULL if none. */
static struct sess *
find_locked(struct sessmgr *m, const char *host, struct app *found)
{
	struct app a[APPS_LIMIT];
	char h[APP_HOST_MAX];
	struct sess *s;
	size_t i, k, j;

	for (i = 0; i < HASH_SIZE; i++)
		for (s = m->tab[i]; s != NULL; s = s->hnext) {
			if (s->state == S_NONE || s->apps[0] == '\0' ||
			    strcmp(s->apps_of, s->rtid) != 0)
				continue;
			k = apps_parse(s->apps, a, NELEM(a));
			for (j = 0; j < k; j++) {
				app_host(m->conf, a[j].name, s->rtid, h, sizeof(h));
				if (strcasecmp(h, host) == 0) {
					*found = a[j];
					return s;
				}
			}
		}
	return NULL;
}

int
apps_open(struct sessmgr *m, const char *host, const char *token,
    struct rt_app_conn *out, int *status, char *err, size_t errlen)
{
	char rtid[ID_SANDBOX_MAX], h[APP_HASH_HEX + 1], rerr[256];
	struct app a;
	struct sess *s;
	enum sess_err e;
	int rc, same, crc;

	out->fd = -1;
	out->addr[0] = '\0';
	pthread_mutex_lock(&m->mu);
	if ((s = find_locked(m, host, &a)) == NULL) {
		pthread_mutex_unlock(&m->mu);
		*status = 404;
		snprintf(err, errlen, "No app is published at this address.");
		return -1;
	}
	scpy(rtid, sizeof(rtid), s->rtid);
	s->refs++;
	pthread_mutex_unlock(&m->mu);
	if (!m->conf->apps_public) {
		if (token == NULL) {
			sess_put(s);
			*status = 401;
			snprintf(err, errlen, "This app needs its token.");
			return -1;
		}
		token_hash(token, h);
		if (CRYPTO_memcmp(h, a.hash, APP_HASH_HEX) != 0) {
			sess_put(s);
			*status = 401;
			snprintf(err, errlen, "The token is not this app's.");
			return -1;
		}
	}
	/* A request wakes the app's sandbox: a frozen one is thawed, a
	 * stopped one started (its workspace kept; seconds: the gateway
	 * holds the request meanwhile). Then it must still be the sandbox
	 * the route named. */
	rc = sess_wake(s, &e, rerr, sizeof(rerr));
	pthread_mutex_lock(&m->mu);
	same = strcmp(s->rtid, rtid) == 0;
	pthread_mutex_unlock(&m->mu);
	sess_put(s);
	if (rc == -1 || !same) {
		*status = 503;
		snprintf(err, errlen, "The sandbox of this app could not be "
		    "started%s%s", rc == -1 ? ": " : " (it was replaced)",
		    rc == -1 ? rerr : "");
		if (rc == -1)
			log_warnx("sandbox=%s app=%s wake failed: %s", rtid, a.name,
			    rerr);
		return -1;
	}
	if (m->rt->ops->app_connect == NULL)
		crc = -1;
	else
		crc = m->rt->ops->app_connect(m->rt, rtid, a.port, out, rerr,
		    sizeof(rerr));
	if (crc != 0) {
		if (crc == RT_ENOLISTEN) {
			*status = 502;
			snprintf(err, errlen, "Nothing listens on port %d in the "
			    "sandbox: start the app there (listening on 0.0.0.0 or "
			    "127.0.0.1), then reload", a.port);
		} else if (crc == RT_ESTOPPED || crc == RT_ENOTFOUND) {
			*status = 503;
			snprintf(err, errlen, "The sandbox of this app is not "
			    "running; the next tool call of its session starts it.");
		} else {
			*status = 502;
			snprintf(err, errlen, "The app could not be reached.");
			log_warnx("sandbox=%s app=%s port=%d connect failed: %s",
			    rtid, a.name, a.port, rerr);
		}
		return -1;
	}
	apps_activity(m, host);
	return 0;
}

void
apps_activity(struct sessmgr *m, const char *host)
{
	struct sess *s;
	struct app a;

	if (!m->conf->apps_activity)
		return;
	pthread_mutex_lock(&m->mu);
	if ((s = find_locked(m, host, &a)) != NULL)
		atomic_store(&s->last_used_ms, util_unix_ms());
	pthread_mutex_unlock(&m->mu);
}
