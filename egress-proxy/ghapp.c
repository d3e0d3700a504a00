/*
 * ghapp.c: GitHub App installation tokens over libcurl multi driven by the
 * worker's libevent loop (the hiperfifo pattern). See ghapp.h.
 *
 * A token request (struct fetch) is one call to the token endpoint, or,
 * for owner/name globs, three steps on the same fetch (its waiters wait
 * for the last): FS_LISTTOKEN mints a metadata-only token, FS_LIST reads
 * {api}/installation/repositories with it page by page (the listing
 * token is queued for revocation as soon as the listing ends), FS_MINT
 * asks for exactly the matching names. Each step's curl handle is new.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <event2/event.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "buf.h"
#include "config.h"
#include "curlev.h"
#include "ghapp.h"
#include "hex.h"
#include "log.h"
#include "pglob.h"
#include "xmalloc.h"

#define GH_CACHE_MAX	256
#define GH_RESP_MAX	((size_t)64 * 1024)
/* A page of 100 full repository objects is about 600 KB on github.com. */
#define GH_LIST_RESP_MAX	((size_t)4 * 1024 * 1024)
#define GH_KEY_MAX	1024
#define GH_RETIRED	"~retired"	/* key of a replaced token kept for revocation */

struct cached {
	char	 key[GH_KEY_MAX];
	char	 token[512];	/* "": a refusal kept GHAPP_NEGATIVE_S (err) */
	char	 err[256];
	time_t	 until;		/* use while now < until */
	char	 owner[128];	/* the sandbox it was minted for ("": shared) */
	char	 api[512];	/* where to revoke it */
};

/*
 * Revocations (ghapp_revoke_owner): a process-wide queue, drained on the
 * main thread's loop by the revoker; a token whose mint finished after its
 * sandbox was revoked is queued too (recent[] remembers those owners).
 */
#define GH_REVOKE_QUEUE		1024
#define GH_REVOKE_TRIES		4	/* attempts per token: at 0, 1, 2, 4 s */
#define GH_RECENT		64

struct rvq {
	char	 api[512];
	char	 token[512];
	char	 owner[128];
	int	 listing;	/* a listing token (FS_LISTTOKEN), not the sandbox's */
};

static struct rvq rvqueue[GH_REVOKE_QUEUE];
static size_t nrvq;			/* under cache_mtx */
static struct {
	char		 owner[128];
	long long	 at_ms;
} recent[GH_RECENT];
static unsigned recent_next;		/* under cache_mtx */
static struct ghapp *revoker;		/* main thread */
static struct event *revoke_ev;		/* activated from any thread */

static pthread_mutex_t cache_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct cached cache[GH_CACHE_MAX];

atomic_long ghapp_requests_ok, ghapp_requests_failed, ghapp_backoff_refused;
atomic_long ghapp_revoked_ok, ghapp_revoked_failed;

/*
 * The back-off of one installation (see ghapp.h), under cache_mtx. At most
 * GH_CACHE_MAX installations are tracked; the one backing off the least
 * long is replaced beyond that.
 */
struct backoff {
	char		 inst[GH_KEY_MAX];	/* "api|app_id|installation_id"; "": free */
	unsigned	 fails;			/* consecutive failures */
	long long	 until_ms;		/* no request before this (monotonic ms) */
	char		 err[256];		/* the last failure */
};

static struct backoff backoffs[GH_CACHE_MAX];

static long long
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * 1 when inst is backing off (err gets why and how long), 0 when a
 * request may be sent.
 */
static int
backoff_check(const char *inst, char *err, size_t errlen)
{
	long long now = mono_ms();
	int i, wait = 0;

	pthread_mutex_lock(&cache_mtx);
	for (i = 0; i < GH_CACHE_MAX; i++)
		if (backoffs[i].inst[0] != '\0' && strcmp(backoffs[i].inst, inst) == 0) {
			if (now < backoffs[i].until_ms) {
				wait = 1;
				snprintf(err, errlen, "token endpoint failing, next request in %lld ms (after %u failures; last: %s)",
				    backoffs[i].until_ms - now, backoffs[i].fails, backoffs[i].err);
			}
			break;
		}
	pthread_mutex_unlock(&cache_mtx);
	return wait;
}

/* Records the outcome of a token request for inst (err NULL: success). */
static void
backoff_note(const char *inst, const char *err)
{
	long long now = mono_ms(), d;
	int i, slot = -1;
	unsigned k;

	pthread_mutex_lock(&cache_mtx);
	for (i = 0; i < GH_CACHE_MAX; i++) {
		if (strcmp(backoffs[i].inst, inst) == 0) {
			slot = i;
			break;
		}
		if (slot == -1 || backoffs[i].inst[0] == '\0' ||
		    (backoffs[slot].inst[0] != '\0' && backoffs[i].until_ms < backoffs[slot].until_ms))
			slot = i;
	}
	if (err == NULL) {
		if (strcmp(backoffs[slot].inst, inst) == 0)
			memset(&backoffs[slot], 0, sizeof(backoffs[slot]));
		pthread_mutex_unlock(&cache_mtx);
		return;
	}
	if (strcmp(backoffs[slot].inst, inst) != 0) {
		memset(&backoffs[slot], 0, sizeof(backoffs[slot]));
		snprintf(backoffs[slot].inst, sizeof(backoffs[slot].inst), "%s", inst);
	}
	backoffs[slot].fails++;
	d = (long long)GHAPP_BACKOFF_MIN_S * 1000;
	for (k = 1; k < backoffs[slot].fails && d < (long long)GHAPP_BACKOFF_MAX_S * 1000; k++)
		d *= 2;
	if (d > (long long)GHAPP_BACKOFF_MAX_S * 1000)
		d = (long long)GHAPP_BACKOFF_MAX_S * 1000;
	backoffs[slot].until_ms = now + d;
	snprintf(backoffs[slot].err, sizeof(backoffs[slot].err), "%s", err);
	pthread_mutex_unlock(&cache_mtx);
}

struct waiter {
	struct waiter	*next;
	ghapp_cb	 cb;
	void		*arg;
};

/* The steps of a fetch (see the top of this file). */
enum fstep { FS_MINT, FS_LISTTOKEN, FS_LIST };

struct fetch {
	struct fetch		*next;
	struct ghapp		*g;
	char			 key[GH_KEY_MAX];
	char			 inst[GH_KEY_MAX];	/* the back-off key */
	char			 owner[128];	/* ghapp_opts.owner */
	char			 api[512];
	char			 mint_url[1024];
	long long		 started;	/* ms, monotonic */
	enum fstep		 step;
	CURL			*easy;
	struct curl_slist	*hdrs;
	char			*body;		/* the token request's JSON (FS_MINT) */
	char			 jwt[4096];	/* the app's JWT, for both mints */
	struct buf		 resp;
	struct waiter		*waiters;
	char			 errbuf[CURL_ERROR_SIZE];
	/* globs (ghapp_opts.globs) */
	char			**globs;
	size_t			 nglobs;
	char			 list_token[512];	/* FS_LIST's token, revoked after it */
	unsigned		 page;		/* the page being read, from 1 */
	double			 total;		/* total_count of page 1 */
	size_t			 seen;		/* repositories listed so far */
	char			**names;	/* the matching names, at most GHAPP_REPOS_MAX */
	size_t			 nnames;	/* matches, also past GHAPP_REPOS_MAX */
};

/* One DELETE {api}/installation/token (the revoker's handles). */
struct revoke {
	struct revoke		*next;
	struct ghapp		*g;
	CURL			*easy;
	struct curl_slist	*hdrs;
	struct event		*retry;
	unsigned		 attempt;
	char			 url[600];
	char			 token[512];
	char			 owner[128];
	int			 listing;	/* rvq listing */
	char			 errbuf[CURL_ERROR_SIZE];
};

struct ghapp {
	struct event_base	*base;
	struct revoke		*revokes;	/* the revoker only */
	const struct pconf	*conf;
	struct curlev		*cv;		/* its transfers on the worker's loop */
	struct fetch		*fetches;
};

/* ---- JWT ---- */

static size_t
b64url(const unsigned char *in, size_t n, char *out, size_t outlen)
{
	unsigned char tmp[4096];
	size_t i, o = 0;
	int len;

	if ((n + 2) / 3 * 4 + 1 > sizeof(tmp))
		return 0;
	len = EVP_EncodeBlock(tmp, in, (int)n);
	for (i = 0; i < (size_t)len && o + 1 < outlen; i++) {
		if (tmp[i] == '=')
			break;
		out[o++] = (char)(tmp[i] == '+' ? '-' : tmp[i] == '/' ? '_' : tmp[i]);
	}
	out[o] = '\0';
	return o;
}

int
ghapp_jwt(const char *app_id, const char *key_file, long now, char *out,
    size_t outlen, char *err, size_t errlen)
{
	static const char hdr[] = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
	char payload[256], sig64[1024];
	unsigned char sig[1024];
	size_t n, o, siglen = sizeof(sig);
	EVP_PKEY *key = NULL;
	EVP_MD_CTX *md = NULL;
	FILE *fp;
	int rc = -1;
	const char *p;

	for (p = app_id; *p != '\0'; p++)
		if (!isdigit((unsigned char)*p) || p - app_id > 20) {
			snprintf(err, errlen, "app_id must be a number");
			return -1;
		}
	if (*app_id == '\0') {
		snprintf(err, errlen, "app_id must be a number");
		return -1;
	}
	if ((fp = fopen(key_file, "re")) == NULL) {
		snprintf(err, errlen, "cannot open the app private key %s", key_file);
		return -1;
	}
	key = PEM_read_PrivateKey(fp, NULL, NULL, NULL);
	fclose(fp);
	if (key == NULL || EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
		snprintf(err, errlen, "%s: not an RSA private key (PEM)", key_file);
		goto out;
	}
	o = b64url((const unsigned char *)hdr, sizeof(hdr) - 1, out, outlen);
	if (o == 0 || o + 2 >= outlen)
		goto toolong;
	out[o++] = '.';
	snprintf(payload, sizeof(payload), "{\"iat\":%ld,\"exp\":%ld,\"iss\":\"%s\"}",
	    now - 60, now + 540, app_id);
	n = b64url((const unsigned char *)payload, strlen(payload), out + o, outlen - o);
	if (n == 0)
		goto toolong;
	o += n;
	if ((md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(md, sig, &siglen, (const unsigned char *)out, o) != 1) {
		snprintf(err, errlen, "JWT signing failed");
		goto out;
	}
	n = b64url(sig, siglen, sig64, sizeof(sig64));
	if (n == 0 || o + 1 + n + 1 > outlen)
		goto toolong;
	out[o++] = '.';
	memcpy(out + o, sig64, n + 1);
	rc = 0;
	goto out;
toolong:
	snprintf(err, errlen, "JWT too long");
out:
	ERR_clear_error();
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	return rc;
}

/* ---- cache ---- */

/* 1: tok holds the cached token for key; -1: a cached refusal (err); 0: nothing. */
static int
cache_get(const char *key, char *tok, size_t toklen, char *err, size_t errlen)
{
	time_t now = time(NULL);
	int i, found = 0;

	pthread_mutex_lock(&cache_mtx);
	for (i = 0; i < GH_CACHE_MAX; i++)
		if (cache[i].key[0] != '\0' && strcmp(cache[i].key, key) == 0 &&
		    now < cache[i].until) {
			if (cache[i].token[0] == '\0') {
				snprintf(err, errlen, "%s", cache[i].err);
				found = -1;
			} else {
				snprintf(tok, toklen, "%s", cache[i].token);
				found = 1;
			}
			break;
		}
	pthread_mutex_unlock(&cache_mtx);
	return found;
}

static int rvq_push_locked(const char *, const char *, const char *, int);

/*
 * The slot to overwrite for key, under cache_mtx, never skip: key's own
 * slot wherever it is, else a free one, else the one expiring first.
 */
static int
cache_slot_locked(const char *key, int skip)
{
	int i, free_slot = -1, oldest = -1;

	for (i = 0; i < GH_CACHE_MAX; i++) {
		if (i == skip)
			continue;
		if (key != NULL && strcmp(cache[i].key, key) == 0)
			return i;
		if (cache[i].key[0] == '\0') {
			if (free_slot == -1)
				free_slot = i;
		} else if (oldest == -1 || cache[i].until < cache[oldest].until)
			oldest = i;
	}
	return free_slot != -1 ? free_slot : oldest;
}

/*
 * Empties slot i (under cache_mtx). A sandbox's token still held there is
 * queued for revocation: once out of the cache nothing would revoke it
 * when its sandbox goes. 1 when the revoker is to be woken.
 */
static int
cache_evict_locked(int i)
{
	int wake = 0;

	if (cache[i].owner[0] != '\0' && cache[i].token[0] != '\0') {
		if (rvq_push_locked(cache[i].api, cache[i].token, cache[i].owner, 0) == 0)
			wake = 1;
		else
			log_warnx("github app token for sandbox=%s dropped from a full cache; "
			    "revocation queue full", cache[i].owner);
	}
	OPENSSL_cleanse(&cache[i], sizeof(cache[i]));
	return wake;
}

static void
cache_put(const char *key, const char *tok, time_t until, const char *owner, const char *api)
{
	int slot, r, wake = 0;

	pthread_mutex_lock(&cache_mtx);
	slot = cache_slot_locked(key, -1);
	if (strcmp(cache[slot].key, key) == 0 && cache[slot].owner[0] != '\0' &&
	    cache[slot].token[0] != '\0' && strcmp(cache[slot].token, tok) != 0) {
		/*
		 * Two workers minted for the same sandbox and scope at once: the
		 * older token stays listed (under a key no lookup matches) so
		 * that it is revoked with the sandbox too.
		 */
		r = cache_slot_locked(NULL, slot);
		wake |= cache_evict_locked(r);
		cache[r] = cache[slot];
		snprintf(cache[r].key, sizeof(cache[r].key), "%s", GH_RETIRED);
	} else if (strcmp(cache[slot].key, key) != 0)
		wake |= cache_evict_locked(slot);
	snprintf(cache[slot].key, sizeof(cache[slot].key), "%s", key);
	snprintf(cache[slot].token, sizeof(cache[slot].token), "%s", tok);
	cache[slot].err[0] = '\0';
	cache[slot].until = until;
	snprintf(cache[slot].owner, sizeof(cache[slot].owner), "%s", owner);
	snprintf(cache[slot].api, sizeof(cache[slot].api), "%s", api);
	pthread_mutex_unlock(&cache_mtx);
	if (wake && revoke_ev != NULL)
		event_active(revoke_ev, EV_TIMEOUT, 0);
}

/*
 * Keeps a refusal for key (a glob scope that matched nothing or too much)
 * GHAPP_NEGATIVE_S seconds, so that a sandbox's requests do not list the
 * installation again and again. A token cached under key stays.
 */
static void
cache_put_refusal(const char *key, const char *err, const char *owner)
{
	time_t now = time(NULL);
	int i, slot = -1;

	pthread_mutex_lock(&cache_mtx);
	for (i = 0; i < GH_CACHE_MAX; i++) {
		if (cache[i].key[0] != '\0' && strcmp(cache[i].key, key) == 0 &&
		    cache[i].token[0] != '\0' && now < cache[i].until)
			break;		/* a token minted meanwhile: keep it */
		/*
		 * A free slot, another refusal, or an expired shared token; never
		 * a sandbox's token, which stays listed until it is revoked.
		 */
		if (slot == -1 && (cache[i].key[0] == '\0' || cache[i].token[0] == '\0' ||
		    (cache[i].owner[0] == '\0' && now >= cache[i].until)))
			slot = i;
	}
	if (i == GH_CACHE_MAX && slot != -1) {
		OPENSSL_cleanse(&cache[slot], sizeof(cache[slot]));
		snprintf(cache[slot].key, sizeof(cache[slot].key), "%s", key);
		snprintf(cache[slot].err, sizeof(cache[slot].err), "%s", err);
		snprintf(cache[slot].owner, sizeof(cache[slot].owner), "%s", owner);
		cache[slot].until = now + GHAPP_NEGATIVE_S;
	}
	pthread_mutex_unlock(&cache_mtx);
}

/* Queues token for revocation (under cache_mtx); 0, or -1 when the queue is full. */
static int
rvq_push_locked(const char *api, const char *tok, const char *owner, int listing)
{
	if (nrvq >= GH_REVOKE_QUEUE)
		return -1;
	snprintf(rvqueue[nrvq].api, sizeof(rvqueue[nrvq].api), "%s", api);
	snprintf(rvqueue[nrvq].token, sizeof(rvqueue[nrvq].token), "%s", tok);
	snprintf(rvqueue[nrvq].owner, sizeof(rvqueue[nrvq].owner), "%s", owner);
	rvqueue[nrvq].listing = listing;
	nrvq++;
	return 0;
}

/* 1 if owner was revoked at or after since_ms (under cache_mtx). */
static int
recent_revoked_locked(const char *owner, long long since_ms)
{
	int i;

	for (i = 0; i < GH_RECENT; i++)
		if (recent[i].owner[0] != '\0' && strcmp(recent[i].owner, owner) == 0 &&
		    recent[i].at_ms >= since_ms)
			return 1;
	return 0;
}

/* ---- curl on libevent ---- */

static size_t
write_discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static size_t
write_cb(char *p, size_t size, size_t n, void *arg)
{
	struct fetch *f = arg;

	if (buf_add(&f->resp, p, size * n) == -1)
		return 0;	/* too large: abort */
	return size * n;
}

static void ghapp_curl_done(void *owner, void *priv, CURLcode cc);

struct ghapp *
ghapp_new(struct event_base *base, const struct pconf *conf)
{
	struct ghapp *g = xcalloc(1, sizeof(*g));

	g->base = base;
	g->conf = conf;
	g->cv = curlev_new(base, conf, ghapp_curl_done, g);
	return g;
}

static void
fetch_free(struct fetch *f)
{
	struct waiter *w, *n;
	size_t i;

	for (w = f->waiters; w != NULL; w = n) {
		n = w->next;
		free(w);
	}
	if (f->easy != NULL) {
		curl_multi_remove_handle(curlev_multi(f->g->cv), f->easy);
		curl_easy_cleanup(f->easy);
	}
	curl_slist_free_all(f->hdrs);
	free(f->body);
	if (f->resp.p != NULL)
		OPENSSL_cleanse(f->resp.p, f->resp.len);
	buf_free(&f->resp);
	for (i = 0; i < f->nglobs; i++)
		free(f->globs[i]);
	free(f->globs);
	for (i = 0; i < f->nnames && i < GHAPP_REPOS_MAX; i++)
		free(f->names[i]);
	free(f->names);
	OPENSSL_cleanse(f->jwt, sizeof(f->jwt));
	OPENSSL_cleanse(f->list_token, sizeof(f->list_token));
	free(f);
}

void
ghapp_free(struct ghapp *g)
{
	struct fetch *f, *n;

	if (g == NULL)
		return;
	for (f = g->fetches; f != NULL; f = n) {
		n = f->next;
		fetch_free(f);
	}
	curlev_free(g->cv);
	free(g);
}

static time_t
parse_time(const char *s)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (s == NULL || strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm) == NULL)
		return (time_t)-1;
	return timegm(&tm);
}

/*
 * Starts the fetch's current step: a POST of body to its token endpoint
 * with the JWT (body non-NULL), or a GET of url with its listing token.
 * 0, or -1 with err.
 */
static int
fetch_send(struct ghapp *g, struct fetch *f, const char *url, const char *body, char *err,
    size_t errlen)
{
	char auth[4200];

	if (f->easy != NULL) {
		curl_multi_remove_handle(curlev_multi(g->cv), f->easy);
		curl_easy_cleanup(f->easy);
	}
	curl_slist_free_all(f->hdrs);
	f->hdrs = NULL;
	f->errbuf[0] = '\0';
	if (f->resp.p != NULL)
		OPENSSL_cleanse(f->resp.p, f->resp.len);
	buf_free(&f->resp);
	buf_init(&f->resp, f->step == FS_LIST ? GH_LIST_RESP_MAX : GH_RESP_MAX);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", body != NULL ? f->jwt :
	    f->list_token);
	f->hdrs = curl_slist_append(f->hdrs, auth);
	OPENSSL_cleanse(auth, sizeof(auth));
	f->hdrs = curl_slist_append(f->hdrs, "Accept: application/vnd.github+json");
	f->hdrs = curl_slist_append(f->hdrs, "X-GitHub-Api-Version: 2022-11-28");
	if (body != NULL)
		f->hdrs = curl_slist_append(f->hdrs, "Content-Type: application/json");
	if ((f->easy = curlev_easy(g->cv, url, f, f->hdrs, f->errbuf)) == NULL) {
		snprintf(err, errlen, "cannot start the token request");
		return -1;
	}
	if (body != NULL)
		curl_easy_setopt(f->easy, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(f->easy, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(f->easy, CURLOPT_WRITEDATA, f);
	if (curl_multi_add_handle(curlev_multi(g->cv), f->easy) != CURLM_OK) {
		snprintf(err, errlen, "cannot start the token request");
		return -1;
	}
	return 0;
}

/*
 * The token in a token endpoint's answer (code, f->resp): 0 with tok and
 * *exp, or -1 with err.
 */
static int
mint_result(struct fetch *f, CURLcode cc, long code, char *tok, size_t toklen, time_t *exp,
    char *err, size_t errlen)
{
	cJSON *j = NULL, *t, *e;
	time_t now = time(NULL);
	int rc = -1;

	if (cc != CURLE_OK)
		snprintf(err, errlen, "token request failed: %s",
		    f->errbuf[0] ? f->errbuf : curl_easy_strerror(cc));
	else if (code != 201 && code != 200)
		snprintf(err, errlen, "token endpoint answered HTTP %ld", code);
	else if ((j = cJSON_ParseWithLength(f->resp.p ? f->resp.p : "", f->resp.len)) == NULL ||
	    !cJSON_IsString(t = cJSON_GetObjectItemCaseSensitive(j, "token")) ||
	    strlen(t->valuestring) == 0 || strlen(t->valuestring) >= toklen ||
	    strpbrk(t->valuestring, "\r\n") != NULL)
		snprintf(err, errlen, "token endpoint returned no usable token");
	else {
		e = cJSON_GetObjectItemCaseSensitive(j, "expires_at");
		*exp = parse_time(cJSON_IsString(e) ? e->valuestring : NULL);
		if (*exp == (time_t)-1 || *exp <= now)
			snprintf(err, errlen, "token endpoint returned a bad expires_at");
		else {
			snprintf(tok, toklen, "%s", t->valuestring);
			rc = 0;
		}
	}
	if (j != NULL) {
		cJSON *tt = cJSON_GetObjectItemCaseSensitive(j, "token");
		if (cJSON_IsString(tt))
			OPENSSL_cleanse(tt->valuestring, strlen(tt->valuestring));
		cJSON_Delete(j);
	}
	return rc;
}

/* Asks for the next page of the installation's repositories. */
static int
list_send(struct ghapp *g, struct fetch *f, char *err, size_t errlen)
{
	char url[700];

	snprintf(url, sizeof(url), "%s/installation/repositories?per_page=%d&page=%u", f->api,
	    GHAPP_LIST_PER_PAGE, f->page);
	return fetch_send(g, f, url, NULL, err, errlen);
}

/* A GitHub repository name: what can go into a token request as is. */
static int
repo_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 100 && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._-") == n;
}

/*
 * Reads one page of {api}/installation/repositories (f->resp), keeping
 * the names whose owner/name matches a glob. 1: another page is asked
 * for; 0: the listing is complete; -1: err (*scope set when the failure
 * is the scope's, not the endpoint's).
 */
static int
list_page(struct ghapp *g, struct fetch *f, CURLcode cc, long code, char *err, size_t errlen,
    int *scope)
{
	cJSON *j = NULL, *arr, *tc, *it, *fn, *nm;
	size_t k, count = 0;
	int rc = -1;

	if (cc != CURLE_OK) {
		snprintf(err, errlen, "repository listing failed: %s",
		    f->errbuf[0] ? f->errbuf : curl_easy_strerror(cc));
		return -1;
	}
	if (code != 200) {
		snprintf(err, errlen, "repository listing answered HTTP %ld", code);
		return -1;
	}
	if ((j = cJSON_ParseWithLength(f->resp.p ? f->resp.p : "", f->resp.len)) == NULL ||
	    !cJSON_IsArray(arr = cJSON_GetObjectItemCaseSensitive(j, "repositories")) ||
	    !cJSON_IsNumber(tc = cJSON_GetObjectItemCaseSensitive(j, "total_count"))) {
		snprintf(err, errlen, "repository listing returned no repositories and total_count");
		goto out;
	}
	if (f->page == 1)
		f->total = tc->valuedouble;
	if (f->total > (double)GHAPP_LIST_PAGES_MAX * GHAPP_LIST_PER_PAGE) {
		snprintf(err, errlen, "the installation has %.0f repositories, more than the %d "
		    "the proxy lists to resolve globs: name the repositories exactly", f->total,
		    GHAPP_LIST_PAGES_MAX * GHAPP_LIST_PER_PAGE);
		*scope = 1;
		goto out;
	}
	cJSON_ArrayForEach(it, arr) {
		count++;
		fn = cJSON_GetObjectItemCaseSensitive(it, "full_name");
		nm = cJSON_GetObjectItemCaseSensitive(it, "name");
		if (!cJSON_IsString(fn) || !cJSON_IsString(nm) || !repo_name_ok(nm->valuestring))
			continue;	/* never a name that could not be sent: narrower */
		for (k = 0; k < f->nglobs; k++)
			if (pglob_match(f->globs[k], strlen(f->globs[k]), fn->valuestring,
			    strlen(fn->valuestring), 1))
				break;
		if (k == f->nglobs)
			continue;
		if (f->nnames < GHAPP_REPOS_MAX) {
			f->names = xreallocarray(f->names, f->nnames + 1, sizeof(*f->names));
			f->names[f->nnames] = xstrdup(nm->valuestring);
		}
		f->nnames++;
	}
	f->seen += count;
	if (count == GHAPP_LIST_PER_PAGE && (double)f->seen < f->total) {
		if (f->page >= GHAPP_LIST_PAGES_MAX) {
			snprintf(err, errlen, "the installation lists more than %d pages of repositories",
			    GHAPP_LIST_PAGES_MAX);
			*scope = 1;
			goto out;
		}
		f->page++;
		rc = list_send(g, f, err, errlen) == -1 ? -1 : 1;
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(j);
	return rc;
}

/*
 * The listing is complete: the final token request, for exactly the
 * matching names (with the caller's permissions). 0 (sent) or -1 with err.
 */
static int
glob_mint(struct ghapp *g, struct fetch *f, char *err, size_t errlen, int *scope)
{
	cJSON *b, *arr;
	size_t k;
	char *out;

	if (f->nnames == 0 || f->nnames > GHAPP_REPOS_MAX) {
		char gl[200];
		size_t o = 0;
		for (k = 0; k < f->nglobs && o < sizeof(gl); k++)
			o += (size_t)snprintf(gl + o, sizeof(gl) - o, "%s%s", k > 0 ? " " : "",
			    f->globs[k]);
		if (f->nnames == 0)
			snprintf(err, errlen, "no repository of the installation matches the "
			    "repositories [%s]", gl);
		else
			snprintf(err, errlen, "%zu repositories of the installation match [%s], more "
			    "than the %d a token can name (refused rather than widened)", f->nnames, gl,
			    GHAPP_REPOS_MAX);
		*scope = 1;
		return -1;
	}
	if ((b = cJSON_Parse(f->body != NULL ? f->body : "{}")) == NULL || !cJSON_IsObject(b)) {
		cJSON_Delete(b);
		snprintf(err, errlen, "bad token request body");
		return -1;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(b, "repositories");	/* only the matches */
	arr = cJSON_AddArrayToObject(b, "repositories");
	for (k = 0; k < f->nnames && arr != NULL; k++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(f->names[k]));
	out = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	if (out == NULL) {
		snprintf(err, errlen, "cannot build the token request");
		return -1;
	}
	free(f->body);
	f->body = xstrdup(out);
	cJSON_free(out);
	f->step = FS_MINT;
	return fetch_send(g, f, f->mint_url, f->body, err, errlen);
}

/* Queues the listing token's revocation (once). */
static void
list_token_revoke(struct fetch *f)
{
	int queued;

	if (f->list_token[0] == '\0')
		return;
	pthread_mutex_lock(&cache_mtx);
	queued = rvq_push_locked(f->api, f->list_token, f->owner, 1) == 0;
	pthread_mutex_unlock(&cache_mtx);
	OPENSSL_cleanse(f->list_token, sizeof(f->list_token));
	if (!queued)
		log_warnx("github app listing token: revocation queue full, it lapses at expires_at");
	else if (revoke_ev != NULL)
		event_active(revoke_ev, EV_TIMEOUT, 0);
}

/*
 * A step of f finished (cc, the answer in f->resp): starts the next one,
 * or completes f: caches the token (or a scope refusal), calls the
 * waiters, frees f.
 */
static void
fetch_done(struct ghapp *g, struct fetch *f, CURLcode cc)
{
	struct fetch **pp;
	struct waiter *w;
	char err[512], tok[512];
	const char *token = NULL;
	long code = 0;
	time_t exp, margin;
	int scope = 0, r;

	err[0] = '\0';
	curl_easy_getinfo(f->easy, CURLINFO_RESPONSE_CODE, &code);
	switch (f->step) {
	case FS_LISTTOKEN:
		if (mint_result(f, cc, code, f->list_token, sizeof(f->list_token), &exp, err,
		    sizeof(err)) == -1)
			break;
		atomic_fetch_add(&ghapp_requests_ok, 1);	/* the token request; the last counts below */
		f->step = FS_LIST;
		f->page = 1;
		if (list_send(g, f, err, sizeof(err)) == 0)
			return;
		break;
	case FS_LIST:
		if ((r = list_page(g, f, cc, code, err, sizeof(err), &scope)) == 1)
			return;
		list_token_revoke(f);
		if (r == 0 && glob_mint(g, f, err, sizeof(err), &scope) == 0)
			return;
		break;
	case FS_MINT:
		if (mint_result(f, cc, code, tok, sizeof(tok), &exp, err, sizeof(err)) == -1)
			break;
		margin = (exp - time(NULL)) / 2 < 300 ? (exp - time(NULL)) / 2 : 300;
		token = tok;
		if (f->owner[0] != '\0') {
			int late, queued = 0;
			pthread_mutex_lock(&cache_mtx);
			late = recent_revoked_locked(f->owner, f->started);
			if (late)
				queued = rvq_push_locked(f->api, tok, f->owner, 0) == 0;
			pthread_mutex_unlock(&cache_mtx);
			if (late) {
				/* Its sandbox went while it was minted: revoke, do not keep. */
				log_info("github app token for sandbox=%s minted after it deregistered: %s",
				    f->owner, queued ? "revoking" : "revocation queue full");
				if (queued && revoke_ev != NULL)
					event_active(revoke_ev, EV_TIMEOUT, 0);
			} else
				cache_put(f->key, tok, exp - margin, f->owner, f->api);
		} else
			cache_put(f->key, tok, exp - margin, "", f->api);
		break;
	}
	list_token_revoke(f);	/* a listing cut short */
	for (pp = &g->fetches; *pp != NULL; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	if (scope) {
		/* The endpoint works; the scope is refused: kept a while, no back-off. */
		cache_put_refusal(f->key, err, f->owner);
		backoff_note(f->inst, NULL);
		log_warnx("github app token for sandbox=%s not minted: %s", f->owner[0] != '\0' ?
		    f->owner : "-", err);
	} else {
		backoff_note(f->inst, err[0] != '\0' ? err : NULL);
		if (err[0] != '\0')
			log_warnx("github app token: %s (next request for this installation backs off)",
			    err);
		else
			log_info("github app token minted, valid until expires_at");
	}
	atomic_fetch_add(err[0] != '\0' ? &ghapp_requests_failed : &ghapp_requests_ok, 1);
	/* Waiters may add new fetches; detach the list first. */
	w = f->waiters;
	f->waiters = NULL;
	while (w != NULL) {
		struct waiter *n = w->next;
		if (w->cb != NULL)
			w->cb(w->arg, token, token == NULL ? err : NULL);
		free(w);
		w = n;
	}
	OPENSSL_cleanse(tok, sizeof(tok));
	fetch_free(f);
}

static void revoke_done(struct ghapp *g, struct revoke *r, CURLcode cc);

/* A transfer ended: a revocation's (the revoker's) or a fetch's. */
static void
ghapp_curl_done(void *owner, void *priv, CURLcode cc)
{
	struct ghapp *g = owner;

	if (g == revoker)
		revoke_done(g, priv, cc);
	else
		fetch_done(g, priv, cc);
}

/*
 * The hex SHA-256 of a token request's scope (its body and its globs), so
 * that a cache key stays short however long the lists are.
 */
static void
scope_hash(const struct ghapp_opts *o, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdl = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	size_t i;
	int ok;

	ok = c != NULL && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(c, o->body != NULL ? o->body : "", o->body != NULL ?
	    strlen(o->body) : 0) == 1;
	for (i = 0; ok && i < o->nglobs; i++)
		ok = EVP_DigestUpdate(c, "\x1e", 1) == 1 &&
		    EVP_DigestUpdate(c, o->globs[i], strlen(o->globs[i])) == 1;
	ok = ok && EVP_DigestFinal_ex(c, md, &mdl) == 1 && mdl == 32;
	EVP_MD_CTX_free(c);
	ASSERT(ok);	/* SHA-256 of memory does not fail */
	hex_encode(md, 32, out);
}

int
ghapp_token(struct ghapp *g, const struct ghapp_opts *o, char *tok, size_t toklen,
    char *err, size_t errlen, ghapp_cb cb, void *arg)
{
	char key[GH_KEY_MAX], inst[GH_KEY_MAX], hash[65];
	struct fetch *f;
	struct waiter *w;
	size_t al = strlen(o->api), i;
	int c;

	if (strncmp(o->api, "https://", 8) != 0) {
		snprintf(err, errlen, "api must be an https:// URL");
		return -1;
	}
	if (strlen(o->installation_id) == 0 || strlen(o->installation_id) > 20 ||
	    strspn(o->installation_id, "0123456789") != strlen(o->installation_id)) {
		snprintf(err, errlen, "installation_id must be a number");
		return -1;
	}
	if (o->owner != NULL && (strlen(o->owner) == 0 || strlen(o->owner) >= 128)) {
		snprintf(err, errlen, "sandbox must be 1-127 bytes");
		return -1;
	}
	if (strlen(o->api) >= 512) {
		snprintf(err, errlen, "api URL too long");
		return -1;
	}
	if (o->nglobs > GHAPP_GLOBS_MAX) {
		snprintf(err, errlen, "more than %d repository globs", GHAPP_GLOBS_MAX);
		return -1;
	}
	for (i = 0; i < o->nglobs; i++)
		if (strlen(o->globs[i]) == 0 || strlen(o->globs[i]) > PGLOB_PATTERN_MAX) {
			snprintf(err, errlen, "a repository glob must be 1-%d bytes", PGLOB_PATTERN_MAX);
			return -1;
		}
	scope_hash(o, hash);
	if ((size_t)snprintf(key, sizeof(key), "%s|%s|%s|%s|%s", o->api, o->app_id,
	    o->installation_id, o->owner != NULL ? o->owner : "", hash) >= sizeof(key)) {
		snprintf(err, errlen, "token request too large");
		return -1;
	}
	if ((c = cache_get(key, tok, toklen, err, errlen)) == 1)
		return 0;
	if (c == -1)
		return -1;
	for (f = g->fetches; f != NULL; f = f->next)
		if (strcmp(f->key, key) == 0)
			break;
	/* Fits: key holds the same fields and more. */
	snprintf(inst, sizeof(inst), "%s|%s|%s", o->api, o->app_id, o->installation_id);
	if (f == NULL && backoff_check(inst, err, errlen)) {
		atomic_fetch_add(&ghapp_backoff_refused, 1);
		return -1;
	}
	if (f == NULL) {
		f = xcalloc(1, sizeof(*f));
		f->g = g;
		if (ghapp_jwt(o->app_id, o->key_file, (long)time(NULL), f->jwt, sizeof(f->jwt),
		    err, errlen) == -1) {
			fetch_free(f);
			return -1;
		}
		snprintf(f->mint_url, sizeof(f->mint_url), "%.*s/app/installations/%s/access_tokens",
		    (int)(al > 0 && o->api[al - 1] == '/' ? al - 1 : al), o->api,
		    o->installation_id);
		snprintf(f->key, sizeof(f->key), "%s", key);
		snprintf(f->inst, sizeof(f->inst), "%s", inst);
		snprintf(f->owner, sizeof(f->owner), "%s", o->owner != NULL ? o->owner : "");
		snprintf(f->api, sizeof(f->api), "%.*s", (int)(al > 0 && o->api[al - 1] == '/' ?
		    al - 1 : al), o->api);
		f->started = mono_ms();
		f->body = xstrdup(o->body ? o->body : "{}");
		if (o->nglobs > 0) {
			f->globs = xreallocarray(NULL, o->nglobs, sizeof(*f->globs));
			for (i = 0; i < o->nglobs; i++)
				f->globs[i] = xstrdup(o->globs[i]);
			f->nglobs = o->nglobs;
			f->step = FS_LISTTOKEN;
		}
		f->next = g->fetches;
		g->fetches = f;
		/* The listing token may read the installation's repository list, nothing else. */
		if (fetch_send(g, f, f->mint_url, f->step == FS_LISTTOKEN ?
		    "{\"permissions\":{\"metadata\":\"read\"}}" : f->body, err, errlen) == -1) {
			g->fetches = f->next;
			fetch_free(f);
			backoff_note(inst, err);
			atomic_fetch_add(&ghapp_requests_failed, 1);
			return -1;
		}
	}
	w = xcalloc(1, sizeof(*w));
	w->cb = cb;
	w->arg = arg;
	w->next = f->waiters;
	f->waiters = w;
	return 1;
}

void
ghapp_forget(struct ghapp *g, void *arg)
{
	/*
	 * Nothing to do: a cancelled hook stays a waiter and is released from
	 * its callback, so the fetch never calls into freed memory.
	 */
	(void)g;
	(void)arg;
}

/* ---- revocation (the revoker, on the main thread) ---- */

static void
revoke_free(struct revoke *r)
{
	struct revoke **pp;

	for (pp = &r->g->revokes; *pp != NULL; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	if (r->easy != NULL) {
		curl_multi_remove_handle(curlev_multi(r->g->cv), r->easy);
		curl_easy_cleanup(r->easy);
	}
	curl_slist_free_all(r->hdrs);
	if (r->retry != NULL)
		event_free(r->retry);
	OPENSSL_cleanse(r->token, sizeof(r->token));
	free(r);
}

static void
revoke_send(struct revoke *r)
{
	struct ghapp *g = r->g;
	char auth[600];

	r->attempt++;
	r->errbuf[0] = '\0';
	if (r->easy != NULL) {
		curl_multi_remove_handle(curlev_multi(g->cv), r->easy);
		curl_easy_cleanup(r->easy);
	}
	curl_slist_free_all(r->hdrs);
	r->hdrs = NULL;
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", r->token);
	r->hdrs = curl_slist_append(r->hdrs, auth);
	OPENSSL_cleanse(auth, sizeof(auth));
	r->hdrs = curl_slist_append(r->hdrs, "Accept: application/vnd.github+json");
	r->hdrs = curl_slist_append(r->hdrs, "X-GitHub-Api-Version: 2022-11-28");
	if ((r->easy = curlev_easy(g->cv, r->url, r, r->hdrs, r->errbuf)) == NULL) {
		log_warnx("github app token revocation for sandbox=%s: cannot start the request",
		    r->owner);
		revoke_free(r);
		return;
	}
	curl_easy_setopt(r->easy, CURLOPT_CUSTOMREQUEST, "DELETE");
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, write_discard);
	if (curl_multi_add_handle(curlev_multi(g->cv), r->easy) != CURLM_OK) {
		log_warnx("github app token revocation for sandbox=%s: cannot start the request",
		    r->owner);
		revoke_free(r);
	}
}

static void
revoke_retry_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	revoke_send(arg);
}

static void
revoke_done(struct ghapp *g, struct revoke *r, CURLcode cc)
{
	long code = 0;
	struct timeval tv;
	const char *what = r->listing ? "github app listing token" : "github app token";
	const char *who = r->owner[0] != '\0' ? r->owner : "-";

	(void)g;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
	if (cc == CURLE_OK && code == 204) {
		atomic_fetch_add(&ghapp_revoked_ok, 1);
		log_info("%s for sandbox=%s revoked", what, who);
		revoke_free(r);
		return;
	}
	if (cc == CURLE_OK && (code == 401 || code == 404)) {
		/* Already invalid (expired, revoked): nothing left to do. */
		atomic_fetch_add(&ghapp_revoked_ok, 1);
		log_info("%s for sandbox=%s: revocation answered HTTP %ld (already invalid)",
		    what, who, code);
		revoke_free(r);
		return;
	}
	if (r->attempt >= GH_REVOKE_TRIES) {
		atomic_fetch_add(&ghapp_revoked_failed, 1);
		log_warnx("%s for sandbox=%s: revocation failed after %u attempts (%s); it lapses at its expires_at",
		    what, who, r->attempt, cc != CURLE_OK ? (r->errbuf[0] ? r->errbuf :
		    curl_easy_strerror(cc)) : "unexpected HTTP status");
		revoke_free(r);
		return;
	}
	log_info("%s for sandbox=%s: revocation attempt %u failed (%s%ld), retrying",
	    what, who, r->attempt, cc != CURLE_OK ? "transport error; " : "HTTP ", code);
	if (r->retry == NULL)
		r->retry = evtimer_new(r->g->base, revoke_retry_cb, r);
	tv.tv_sec = 1L << (r->attempt - 1);
	tv.tv_usec = 0;
	evtimer_add(r->retry, &tv);
}

/* Starts a DELETE for each queued token (the revoker's loop). */
static void
revoke_drain(evutil_socket_t fd, short ev, void *arg)
{
	struct ghapp *g = arg;
	struct rvq q[64];
	size_t n, i;

	(void)fd;
	(void)ev;
	for (;;) {
		pthread_mutex_lock(&cache_mtx);
		n = nrvq < 64 ? nrvq : 64;
		memcpy(q, rvqueue + nrvq - n, n * sizeof(q[0]));
		OPENSSL_cleanse(rvqueue + nrvq - n, n * sizeof(q[0]));
		nrvq -= n;
		pthread_mutex_unlock(&cache_mtx);
		if (n == 0)
			break;
		for (i = 0; i < n; i++) {
			struct revoke *r = xcalloc(1, sizeof(*r));
			r->g = g;
			snprintf(r->url, sizeof(r->url), "%.511s/installation/token", q[i].api);
			memcpy(r->token, q[i].token, sizeof(r->token));
			memcpy(r->owner, q[i].owner, sizeof(r->owner));
			r->listing = q[i].listing;
			r->next = g->revokes;
			g->revokes = r;
			revoke_send(r);
		}
		OPENSSL_cleanse(q, sizeof(q));
	}
}

int
ghapp_revoker_start(struct event_base *base, const struct pconf *conf)
{
	if (revoker != NULL)
		return 0;
	revoker = ghapp_new(base, conf);
	revoke_ev = event_new(base, -1, 0, revoke_drain, revoker);
	return revoke_ev != NULL ? 0 : -1;
}

void
ghapp_revoker_stop(void)
{
	struct revoke *r;

	if (revoker == NULL)
		return;
	while ((r = revoker->revokes) != NULL) {
		revoker->revokes = r->next;
		r->next = NULL;
		revoke_free(r);
	}
	event_free(revoke_ev);
	revoke_ev = NULL;
	ghapp_free(revoker);
	revoker = NULL;
}

int
ghapp_revoke_owner(const char *owner)
{
	int i, n = 0, full = 0;

	pthread_mutex_lock(&cache_mtx);
	snprintf(recent[recent_next].owner, sizeof(recent[0].owner), "%s", owner);
	recent[recent_next].at_ms = mono_ms();
	recent_next = (recent_next + 1) % GH_RECENT;
	for (i = 0; i < GH_CACHE_MAX; i++) {
		if (cache[i].key[0] == '\0' || cache[i].owner[0] == '\0' ||
		    strcmp(cache[i].owner, owner) != 0)
			continue;
		if (cache[i].token[0] == '\0')
			;	/* a refusal: nothing to revoke */
		else if (rvq_push_locked(cache[i].api, cache[i].token, owner, 0) == 0)
			n++;
		else
			full++;
		OPENSSL_cleanse(&cache[i], sizeof(cache[i]));
	}
	pthread_mutex_unlock(&cache_mtx);
	if (full > 0)
		log_warnx("github app tokens for sandbox=%s: revocation queue full, %d left to lapse",
		    owner, full);
	if (n > 0 && revoke_ev != NULL)
		event_active(revoke_ev, EV_TIMEOUT, 0);
	return n;
}

/* A permission pair (name, level) before another by name. */
static int
ghapp_perm_cmp(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;

	return strcmp(x[0], y[0]);
}

int
ghapp_scope_body(const char **names, size_t n, int with_names, const char **perms,
    size_t nperm, int with_perms, struct buf *out)
{
	size_t i;
	int rc = 0;

	if (with_perms)
		qsort(perms, nperm, 2 * sizeof(*perms), ghapp_perm_cmp);
	rc |= buf_addstr(out, "{");
	if (with_names) {
		rc |= buf_addstr(out, "\"repositories\":[");
		for (i = 0; i < n && i < 500; i++)
			rc |= buf_addf(out, "%s\"%s\"", i > 0 ? "," : "", names[i]);
		rc |= buf_addstr(out, "]");
	}
	if (with_perms) {
		rc |= buf_addf(out, "%s\"permissions\":{", with_names ? "," : "");
		for (i = 0; i < nperm; i++)
			rc |= buf_addf(out, "%s\"%s\":\"%s\"", i > 0 ? "," : "", perms[2 * i],
			    perms[2 * i + 1]);
		rc |= buf_addstr(out, "}");
	}
	rc |= buf_addstr(out, "}");
	return rc == 0 ? 0 : -1;
}
