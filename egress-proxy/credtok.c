/*
 * credtok.c: access tokens for oauth2 and registry credentials (credtok.h
 * has the rules) over libcurl multi on the worker's libevent loop
 * (curlev.c, shared with ghapp.c). The two forms differ only in the
 * request (oauth2: a form POSTed with the client's Basic pair, RFC 6749;
 * registry: GET realm?service=S&scope=..., Basic user:secret, the Docker
 * token spec) and the answer's reading; the table, the coalescing, the
 * back-off, the audit and the metrics are one.
 *
 * State: one process-wide table (under mtx) holds, per token key (the
 * credential's name and a hash of what it asks with), the cached token,
 * whether an exchange is in flight somewhere (flying), the back-off, and
 * the current refresh token. A worker's fetch (struct fetch) is the one
 * exchange its waiting requests share: it either owns the flight (sends
 * the request) or polls every CREDTOK_POLL_MS until the owning worker's
 * flight lands, then serves its waiters from the table (or takes the
 * flight when the table has nothing). A fetch with no waiter left is
 * dropped (an owned exchange is still read to its end, so that a rotated
 * refresh token is never lost).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <event2/event.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "audit.h"
#include "b64.h"
#include "buf.h"
#include "config.h"
#include "cred.h"
#include "credtok.h"
#include "curlev.h"
#include "digest.h"
#include "log.h"
#include "regscope.h"
#include "xmalloc.h"

#define CT_KEY_MAX	(CRED_NAME_MAX + 2 + DIGEST_SHA256_HEX)
#define CT_STATE_MAX	256	/* token keys tracked (CREDSET_MAX and reloads) */

atomic_long credtok_requests_ok, credtok_requests_failed, credtok_backoff_refused;

/* One token key's state, under mtx. */
struct tstate {
	char		 key[CT_KEY_MAX];	/* "": free */
	char		 tok[CREDTOK_TOKEN_MAX];	/* "": none cached */
	long long	 until_ms;	/* use while now < until_ms (monotonic) */
	long long	 got_ms;	/* when tok came from the endpoint */
	char		 rt[CREDTOK_TOKEN_MAX];	/* the current refresh token ("": the declared) */
	int		 flying;	/* an exchange for it is under way (one worker) */
	unsigned	 fails;		/* consecutive failed exchanges */
	long long	 backoff_ms;	/* no exchange before this */
	char		 err[256];	/* the last failure */
	long long	 used_ms;	/* last looked up: the least recent goes first */
};

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static struct tstate states[CT_STATE_MAX];

struct waiter {
	struct waiter	*next;
	credtok_cb	 cb;
	void		*arg;
};

struct fetch {
	struct fetch		*next;
	struct credtok		*t;
	char			 key[CT_KEY_MAX];
	char			 name[CRED_NAME_MAX + 1];
	int			 registry;	/* form registry: GET, the Docker token answer */
	char			*url;		/* with the query a registry's realm gets */
	char			 host[CREDTOK_URL_MAX + 1];	/* for the audit line */
	char			*auth;		/* "Authorization: Basic ..." (wiped) */
	char			*scope;		/* oauth2: the declared; registry: the request's */
	char			*refresh0;	/* the declared refresh token, or NULL */
	char			*refresh_path;	/* write a rotated one back here, or NULL */
	char			 rt_sent[CREDTOK_TOKEN_MAX];	/* the refresh token presented */
	int			 owner;		/* holds the flight (easy is sending) */
	CURL			*easy;
	struct curl_slist	*hdrs;
	char			*body;		/* the form sent (wiped) */
	struct buf		 resp;
	char			 errbuf[CURL_ERROR_SIZE];
	struct event		*poll;
	struct waiter		*waiters;
};

struct credtok {
	struct event_base	*base;
	const struct pconf	*conf;
	struct auditq		*aq;
	struct curlev		*cv;		/* its transfers on the worker's loop */
	struct fetch		*fetches;
};

static long long
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the process-wide table (callers hold mtx) ---- */

/* key's state, made when make is set (evicting the least recently used idle one); NULL: none. */
static struct tstate *
state_locked(const char *key, int make)
{
	int i, victim = -1;

	for (i = 0; i < CT_STATE_MAX; i++) {
		if (states[i].key[0] != '\0' && strcmp(states[i].key, key) == 0)
			return &states[i];
		if (states[i].flying)
			continue;
		if (victim == -1 || states[i].key[0] == '\0' ||
		    (states[victim].key[0] != '\0' && states[i].used_ms < states[victim].used_ms))
			victim = i;
	}
	if (!make || victim == -1)
		return NULL;
	OPENSSL_cleanse(&states[victim], sizeof(states[victim]));
	snprintf(states[victim].key, sizeof(states[victim].key), "%s", key);
	return &states[victim];
}

/* 1 with the token copied when s holds a valid one. */
static int
state_token_locked(struct tstate *s, long long now, char *tok, size_t toklen)
{
	s->used_ms = now;
	if (s->tok[0] == '\0' || now >= s->until_ms)
		return 0;
	snprintf(tok, toklen, "%s", s->tok);
	return 1;
}

/* 1 (err set) when s is backing off and no exchange may start. */
static int
state_backoff_locked(const struct tstate *s, long long now, char *err, size_t errlen)
{
	if (now >= s->backoff_ms)
		return 0;
	snprintf(err, errlen, "token endpoint failing, next request in %lld ms (after %u "
	    "failures; last: %s)", s->backoff_ms - now, s->fails, s->err);
	return 1;
}

/* ---- the token key ---- */

/*
 * c's token key: its name and the SHA-256 of everything its exchange
 * depends on (a reload that changes any of it starts afresh; a refresh
 * token written back is a new declared one, so the rotated one read again);
 * a registry credential's, the request's scope regscope too (one token a
 * scope).
 */
static void
token_key(const struct cred *c, const char *regscope, char out[CT_KEY_MAX])
{
	struct buf b;
	char hx[DIGEST_SHA256_HEX + 1];
	int reg = c->form == CRED_REGISTRY;

	buf_init(&b, (size_t)4 * CREDTOK_TOKEN_MAX + 4 * CRED_VALUE_MAX);
	if (buf_addstr(&b, reg ? "registry\n" : "oauth2\n") == -1 ||
	    buf_addstr(&b, c->token_url) == -1 || buf_add(&b, "\n", 1) == -1 ||
	    buf_addstr(&b, reg ? c->user : c->client_id) == -1 || buf_add(&b, "\n", 1) == -1 ||
	    buf_addstr(&b, reg ? c->service : "") == -1 || buf_add(&b, "\n", 1) == -1 ||
	    buf_addstr(&b, reg ? regscope : c->scope != NULL ? c->scope : "") == -1 ||
	    buf_add(&b, "\n", 1) == -1 ||
	    buf_addstr(&b, c->value) == -1 || buf_add(&b, "\n", 1) == -1 ||
	    buf_addstr(&b, c->refresh != NULL ? c->refresh : "") == -1 ||
	    digest_sha256_hex(b.p, b.len, hx) == -1)
		snprintf(hx, sizeof(hx), "unhashable");	/* declarations are bounded: never */
	if (b.p != NULL)
		OPENSSL_cleanse(b.p, b.len);
	buf_free(&b);
	snprintf(out, CT_KEY_MAX, "%s|%s", c->name, hx);
}

/* ---- parsing (unit-tested) ---- */

/* RFC 6750 b64token characters (an access token as it goes in a header). */
static int
b64token_ok(const char *s)
{
	size_t n = strlen(s), k;

	k = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/");
	while (k < n && s[k] == '=')
		k++;
	return n > 0 && k == n;
}

/* RFC 6749 A.17 (refresh-token = 1*VSCHAR), a space excluded: it goes in a form. */
static int
vschar_ok(const char *s)
{
	const unsigned char *p;

	if (*s == '\0')
		return 0;
	for (p = (const unsigned char *)s; *p != '\0'; p++)
		if (*p < 0x21 || *p > 0x7e)
			return 0;
	return 1;
}

/*
 * A token endpoint's answer: oauth2 (access_token, token_type bearer, a
 * refresh_token) or, registry set, the Docker token spec's (token, or
 * access_token when token is absent; no token_type; a refresh_token is
 * ignored, never asked for).
 */
static int
parse_answer(const char *body, size_t n, int registry, char *tok, size_t toklen, long *ttl,
    char *rt, size_t rtlen, char *err, size_t errlen)
{
	cJSON *j, *at, *tt, *ei, *r, *dt;
	int rc = -1;

	*ttl = 0;
	tok[0] = '\0';
	rt[0] = '\0';
	/* cJSON cuts a string at an escaped NUL: such an answer is refused whole */
	if (n > CREDTOK_RESP_MAX || memmem(body, n, "\\u0000", 6) != NULL ||
	    (j = cJSON_ParseWithLength(body, n)) == NULL) {
		snprintf(err, errlen, "token endpoint answer is not JSON");
		return -1;
	}
	at = cJSON_GetObjectItemCaseSensitive(j, "access_token");
	tt = cJSON_GetObjectItemCaseSensitive(j, "token_type");
	ei = cJSON_GetObjectItemCaseSensitive(j, "expires_in");
	r = cJSON_GetObjectItemCaseSensitive(j, "refresh_token");
	dt = cJSON_GetObjectItemCaseSensitive(j, "token");
	if (registry) {
		if (dt != NULL)
			at = dt;	/* the spec's name; access_token for OAuth2's sake */
		tt = NULL;
		r = NULL;
	}
	if (!cJSON_IsObject(j))
		snprintf(err, errlen, "token endpoint answer is not a JSON object");
	else if (!cJSON_IsString(at) || strlen(at->valuestring) >= toklen ||
	    strlen(at->valuestring) >= CREDTOK_TOKEN_MAX || !b64token_ok(at->valuestring))
		snprintf(err, errlen, "token endpoint returned no usable access_token");
	else if (!registry && (!cJSON_IsString(tt) || strcasecmp(tt->valuestring, "bearer") != 0))
		snprintf(err, errlen, "token endpoint returned a token_type other than bearer");
	else if (ei != NULL && (!cJSON_IsNumber(ei) || ei->valuedouble < 1 ||
	    ei->valuedouble > (double)CREDTOK_TTL_MAX))
		snprintf(err, errlen, "token endpoint returned a bad expires_in");
	else if (r != NULL && (!cJSON_IsString(r) || strlen(r->valuestring) >= rtlen ||
	    strlen(r->valuestring) >= CREDTOK_TOKEN_MAX || !vschar_ok(r->valuestring)))
		snprintf(err, errlen, "token endpoint returned a bad refresh_token");
	else {
		snprintf(tok, toklen, "%s", at->valuestring);
		if (r != NULL)
			snprintf(rt, rtlen, "%s", r->valuestring);
		*ttl = ei != NULL ? (long)ei->valuedouble : CREDTOK_TTL_DEFAULT;
		rc = 0;
	}
	if (cJSON_IsString(at))
		OPENSSL_cleanse(at->valuestring, strlen(at->valuestring));
	if (cJSON_IsString(r))
		OPENSSL_cleanse(r->valuestring, strlen(r->valuestring));
	if (cJSON_IsString(dt))
		OPENSSL_cleanse(dt->valuestring, strlen(dt->valuestring));
	at = cJSON_GetObjectItemCaseSensitive(j, "access_token");
	if (cJSON_IsString(at))
		OPENSSL_cleanse(at->valuestring, strlen(at->valuestring));
	at = cJSON_GetObjectItemCaseSensitive(j, "refresh_token");
	if (cJSON_IsString(at))
		OPENSSL_cleanse(at->valuestring, strlen(at->valuestring));
	cJSON_Delete(j);
	return rc;
}

int
credtok_parse(const char *body, size_t n, char *tok, size_t toklen, long *ttl, char *rt,
    size_t rtlen, char *err, size_t errlen)
{
	return parse_answer(body, n, 0, tok, toklen, ttl, rt, rtlen, err, errlen);
}

int
credtok_parse_registry(const char *body, size_t n, char *tok, size_t toklen, long *ttl,
    char *err, size_t errlen)
{
	char rt[1];

	return parse_answer(body, n, 1, tok, toklen, ttl, rt, sizeof(rt), err, errlen);
}

void
credtok_error_code(const char *body, size_t n, char *out, size_t outlen)
{
	cJSON *j, *e;

	out[0] = '\0';
	if (n > CREDTOK_RESP_MAX || (j = cJSON_ParseWithLength(body, n)) == NULL)
		return;
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	/* RFC 6749 5.2: error is NQCHAR; kept only as a short code of [a-z_] */
	if (cJSON_IsString(e) && strlen(e->valuestring) > 0 && strlen(e->valuestring) < 64 &&
	    strspn(e->valuestring, "abcdefghijklmnopqrstuvwxyz_") == strlen(e->valuestring))
		snprintf(out, outlen, "%s", e->valuestring);
	/* a registry's token server: {"errors":[{"code":"UNAUTHORIZED",...}]}, code of [A-Z_] */
	e = cJSON_GetObjectItemCaseSensitive(j, "errors");
	e = cJSON_IsArray(e) ? cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(e, 0),
	    "code") : NULL;
	if (out[0] == '\0' && cJSON_IsString(e) && strlen(e->valuestring) > 0 &&
	    strlen(e->valuestring) < 64 &&
	    strspn(e->valuestring, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == strlen(e->valuestring))
		snprintf(out, outlen, "%s", e->valuestring);
	cJSON_Delete(j);
}

/* Whether url is an https:// URL with a host, no user info or fragment, printable, bounded. */
static int
url_ok(const char *url)
{
	const unsigned char *p;
	size_t hl;

	for (p = (const unsigned char *)url; *p != '\0'; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			break;
	hl = strncmp(url, "https://", 8) == 0 ? strcspn(url + 8, "/?#") : 0;
	return *p == '\0' && strlen(url) <= CREDTOK_URL_MAX && hl > 0 &&
	    memchr(url + 8, '@', hl) == NULL && strchr(url, '#') == NULL;
}

const char *
credtok_decl_check(const char *url, const char *client_id, const char *scope, char *err,
    size_t errlen)
{
	const unsigned char *p;

	if (url == NULL || client_id == NULL) {
		snprintf(err, errlen, "form oauth2 needs token_url and client_id");
		return err;
	}
	if (!url_ok(url)) {
		snprintf(err, errlen, "token_url must be an https:// URL with a host, no user "
		    "info or fragment, at most %d printable bytes", CREDTOK_URL_MAX);
		return err;
	}
	for (p = (const unsigned char *)client_id; *p != '\0'; p++)
		if (*p < 0x20 || *p >= 0x7f)
			break;
	if (*p != '\0' || *client_id == '\0' || strlen(client_id) > CREDTOK_CLIENT_MAX) {
		snprintf(err, errlen, "client_id must be 1-%d printable bytes", CREDTOK_CLIENT_MAX);
		return err;
	}
	/* RFC 6749 3.3: scope-tokens of NQCHAR separated by single spaces */
	if (scope != NULL) {
		for (p = (const unsigned char *)scope; *p != '\0'; p++)
			if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\' ||
			    (*p == ' ' && (p == (const unsigned char *)scope || p[1] == ' ' ||
			    p[1] == '\0')))
				break;
		if (*p != '\0' || *scope == '\0' || strlen(scope) > CREDTOK_SCOPE_MAX) {
			snprintf(err, errlen, "scope must be 1-%d bytes of space-separated scope "
			    "tokens", CREDTOK_SCOPE_MAX);
			return err;
		}
	}
	return "";
}

const char *
credtok_regdecl_check(const char *realm, const char *service, const char *user, char *err,
    size_t errlen)
{
	if (realm == NULL || service == NULL || user == NULL) {
		snprintf(err, errlen, "form registry needs realm, service and user");
		return err;
	}
	if (!url_ok(realm)) {
		snprintf(err, errlen, "realm must be an https:// URL with a host, no user info or "
		    "fragment, at most %d printable bytes", CREDTOK_URL_MAX);
		return err;
	}
	/* what goes into the realm's query, percent-encoded: visible ASCII, bounded */
	if (*service == '\0' || strlen(service) > CREDTOK_CLIENT_MAX ||
	    strspn(service, "!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~") != strlen(service)) {
		snprintf(err, errlen, "service must be 1-%d visible ASCII bytes", CREDTOK_CLIENT_MAX);
		return err;
	}
	/* RFC 7617: a user-id never holds ':' */
	if (*user == '\0' || strlen(user) > CREDTOK_CLIENT_MAX || strchr(user, ':') != NULL ||
	    strspn(user, " !\"#$%&'()*+,-./0123456789;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~") != strlen(user)) {
		snprintf(err, errlen, "user must be 1-%d printable bytes without ':'",
		    CREDTOK_CLIENT_MAX);
		return err;
	}
	return "";
}

/* ---- transfers (curlev.c) ---- */

static void fetch_done(struct fetch *f, CURLcode cc);

static void
curl_done(void *owner, void *priv, CURLcode cc)
{
	(void)owner;
	fetch_done(priv, cc);
}

static size_t
write_cb(char *p, size_t size, size_t n, void *arg)
{
	struct fetch *f = arg;

	if (buf_add(&f->resp, p, size * n) == -1)
		return 0;	/* larger than CREDTOK_RESP_MAX: abort */
	return size * n;
}

struct credtok *
credtok_new(struct event_base *base, const struct pconf *conf, struct auditq *aq)
{
	struct credtok *t = xcalloc(1, sizeof(*t));

	t->base = base;
	t->conf = conf;
	t->aq = aq;
	t->cv = curlev_new(base, conf, curl_done, t);
	return t;
}

static void
wipe_str(char *s)
{
	if (s == NULL)
		return;
	OPENSSL_cleanse(s, strlen(s));
	free(s);
}

/* Unlinks f from its worker's list and frees it; an owned flight is released. */
static void
fetch_free(struct fetch *f)
{
	struct fetch **pp;
	struct waiter *w, *n;

	for (pp = &f->t->fetches; *pp != NULL; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	if (f->owner) {
		struct tstate *s;

		pthread_mutex_lock(&mtx);
		if ((s = state_locked(f->key, 0)) != NULL)
			s->flying = 0;
		pthread_mutex_unlock(&mtx);
	}
	for (w = f->waiters; w != NULL; w = n) {
		n = w->next;
		free(w);
	}
	if (f->easy != NULL) {
		curl_multi_remove_handle(curlev_multi(f->t->cv), f->easy);
		curl_easy_cleanup(f->easy);
	}
	curl_slist_free_all(f->hdrs);
	if (f->poll != NULL)
		event_free(f->poll);
	wipe_str(f->auth);
	wipe_str(f->body);
	wipe_str(f->refresh0);
	free(f->scope);
	free(f->url);
	free(f->refresh_path);
	if (f->resp.p != NULL)
		OPENSSL_cleanse(f->resp.p, f->resp.len);
	buf_free(&f->resp);
	OPENSSL_cleanse(f->rt_sent, sizeof(f->rt_sent));
	free(f);
}

void
credtok_free(struct credtok *t)
{
	if (t == NULL)
		return;
	while (t->fetches != NULL)
		fetch_free(t->fetches);
	curlev_free(t->cv);
	free(t);
}

/* Calls f's waiters (err NULL: the token is in the table), then frees f. */
static void
fetch_complete(struct fetch *f, const char *err)
{
	struct waiter *w = f->waiters, *n;

	f->waiters = NULL;	/* a waiter may start a new fetch */
	fetch_free(f);
	for (; w != NULL; w = n) {
		n = w->next;
		w->cb(w->arg, err);
		free(w);
	}
}

/* The audit line of one exchange. */
static void
audit_exchange(struct fetch *f, const char *grant, long status, const char *err)
{
	struct audit_rec a;

	if (f->t->aq == NULL)
		return;
	memset(&a, 0, sizeof(a));
	a.host = f->host;
	a.type = "token";
	a.method = grant;
	a.status = (int)status;
	a.creds = f->name;
	if (f->registry) {	/* the scope asked for (names, never a value) */
		a.path = f->scope;
		a.path_len = strlen(f->scope);
	}
	a.reason = err != NULL ? "token_failed" : NULL;
	a.detail = err;
	audit_token(f->t->aq, &a);
}

/*
 * Writes rt to path atomically (a temporary file beside it, fsync,
 * rename), mode 0600. 0, or -1 (logged; the token stays in memory).
 */
static int
writeback(const char *path, const char *rt)
{
	char tmp[4200];
	size_t n = strlen(rt);
	int fd, rc = -1;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= sizeof(tmp))
		goto out;
	if ((fd = mkstemp(tmp)) == -1)
		goto out;
	if (write(fd, rt, n) != (ssize_t)n || write(fd, "\n", 1) != 1 || fsync(fd) == -1) {
		close(fd);
		unlink(tmp);
		goto out;
	}
	if (close(fd) == -1 || rename(tmp, path) == -1) {
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	if (rc == -1)
		log_warn("oauth2 refresh token: cannot write it back to %s (kept in memory)", path);
	return rc;
}

/* The exchange of f finished (cc, the answer in f->resp). */
static void
fetch_done(struct fetch *f, CURLcode cc)
{
	char err[384], code[64], tok[CREDTOK_TOKEN_MAX], rt[CREDTOK_TOKEN_MAX];
	const char *grant = f->registry ? "registry" : f->rt_sent[0] != '\0' ? "refresh_token" :
	    "client_credentials";
	const char *form = f->registry ? "registry" : "oauth2";
	long status = 0, ttl = 0;
	long long now = mono_ms(), margin, d;
	struct tstate *s;
	unsigned k;

	err[0] = '\0';
	curl_easy_getinfo(f->easy, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK)
		snprintf(err, sizeof(err), "token request failed: %s",
		    f->errbuf[0] != '\0' ? f->errbuf : curl_easy_strerror(cc));
	else if (status != 200) {
		credtok_error_code(f->resp.p != NULL ? f->resp.p : "", f->resp.len, code,
		    sizeof(code));
		snprintf(err, sizeof(err), "token endpoint answered HTTP %ld%s%s%s", status,
		    code[0] != '\0' ? " (" : "", code, code[0] != '\0' ? ")" : "");
	} else if (f->registry) {
		(void)credtok_parse_registry(f->resp.p != NULL ? f->resp.p : "", f->resp.len, tok,
		    sizeof(tok), &ttl, err, sizeof(err));
		rt[0] = '\0';
	} else
		(void)credtok_parse(f->resp.p != NULL ? f->resp.p : "", f->resp.len, tok,
		    sizeof(tok), &ttl, rt, sizeof(rt), err, sizeof(err));
	pthread_mutex_lock(&mtx);
	s = state_locked(f->key, 1);	/* flying: never evicted, found */
	if (s != NULL) {
		s->flying = 0;
		if (err[0] == '\0') {
			margin = ttl * 1000 / 4 < CREDTOK_MARGIN_MS ? ttl * 1000 / 4 : CREDTOK_MARGIN_MS;
			snprintf(s->tok, sizeof(s->tok), "%s", tok);
			s->until_ms = now + ttl * 1000 - margin;
			s->got_ms = now;
			s->fails = 0;
			s->backoff_ms = 0;
			s->err[0] = '\0';
			if (rt[0] != '\0' && f->rt_sent[0] != '\0' && strcmp(rt, f->rt_sent) != 0) {
				snprintf(s->rt, sizeof(s->rt), "%s", rt);
				/* Under mtx: two rotations are written in their order. */
				if (f->refresh_path != NULL)
					(void)writeback(f->refresh_path, rt);
			}
		} else {
			s->fails++;
			d = (long long)CREDTOK_BACKOFF_MIN_S * 1000;
			for (k = 1; k < s->fails && d < (long long)CREDTOK_BACKOFF_MAX_S * 1000; k++)
				d *= 2;
			if (d > (long long)CREDTOK_BACKOFF_MAX_S * 1000)
				d = (long long)CREDTOK_BACKOFF_MAX_S * 1000;
			s->backoff_ms = now + d;
			snprintf(s->err, sizeof(s->err), "%s", err);
		}
	}
	pthread_mutex_unlock(&mtx);
	f->owner = 0;
	OPENSSL_cleanse(tok, sizeof(tok));
	OPENSSL_cleanse(rt, sizeof(rt));
	atomic_fetch_add(err[0] != '\0' ? &credtok_requests_failed : &credtok_requests_ok, 1);
	audit_exchange(f, grant, status, err[0] != '\0' ? err : NULL);
	if (err[0] != '\0')
		log_warnx("%s token for credential=%s host=%s grant=%s%s%s: %s (backing off)",
		    form, f->name, f->host, grant, f->registry ? " scope=" : "",
		    f->registry ? f->scope : "", err);
	else
		log_info("%s token for credential=%s host=%s grant=%s%s%s obtained, expires_in=%ld",
		    form, f->name, f->host, grant, f->registry ? " scope=" : "",
		    f->registry ? f->scope : "", ttl);
	if (err[0] != '\0') {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s credential %s: %s", form, f->name, err);
		fetch_complete(f, msg);
	} else
		fetch_complete(f, NULL);
}

/* Sends f's exchange (f owns the flight; rt: the refresh token to present, or ""). 0 or -1. */
static int
fetch_send(struct fetch *f, const char *rt, char *err, size_t errlen)
{
	struct credtok *t = f->t;
	struct buf b;
	int bad = 0;

	if (f->registry)
		goto send;	/* a GET: everything is in the URL */
	snprintf(f->rt_sent, sizeof(f->rt_sent), "%s", rt);
	buf_init(&b, (size_t)3 * CREDTOK_TOKEN_MAX + 3 * CREDTOK_SCOPE_MAX + 128);
	if (rt[0] != '\0') {
		bad |= buf_addstr(&b, "grant_type=refresh_token&refresh_token=");
		bad |= cred_put(&b, rt, strlen(rt), 1);
	} else
		bad |= buf_addstr(&b, "grant_type=client_credentials");
	if (f->scope != NULL) {
		bad |= buf_addstr(&b, "&scope=");
		bad |= cred_put(&b, f->scope, strlen(f->scope), 1);
	}
	bad |= buf_add(&b, "", 1);
	if (bad != 0) {
		if (b.p != NULL)
			OPENSSL_cleanse(b.p, b.len);
		buf_free(&b);
		snprintf(err, errlen, "token request too large");
		return -1;
	}
	f->body = xstrdup(b.p);
	OPENSSL_cleanse(b.p, b.len);
	buf_free(&b);
	f->hdrs = curl_slist_append(f->hdrs, "Content-Type: application/x-www-form-urlencoded");
send:
	buf_init(&f->resp, CREDTOK_RESP_MAX);
	f->hdrs = curl_slist_append(f->hdrs, f->auth);
	f->hdrs = curl_slist_append(f->hdrs, "Accept: application/json");
	if ((f->easy = curlev_easy(t->cv, f->url, f, f->hdrs, f->errbuf)) == NULL) {
		snprintf(err, errlen, "cannot start the token request");
		return -1;
	}
	if (f->body != NULL)
		curl_easy_setopt(f->easy, CURLOPT_POSTFIELDS, f->body);
	else
		curl_easy_setopt(f->easy, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(f->easy, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(f->easy, CURLOPT_WRITEDATA, f);
	if (curl_multi_add_handle(curlev_multi(t->cv), f->easy) != CURLM_OK) {
		snprintf(err, errlen, "cannot start the token request");
		return -1;
	}
	return 0;
}

static void poll_cb(evutil_socket_t fd, short what, void *arg);

/*
 * Moves f on: serves its waiters from the table, takes the flight and
 * sends, or (another worker's flight) polls again. Calls the waiters on
 * the way out (f is then freed).
 */
static void
fetch_step(struct fetch *f)
{
	char tok[CREDTOK_TOKEN_MAX], rt[CREDTOK_TOKEN_MAX], err[512];
	struct timeval tv = { 0, CREDTOK_POLL_MS * 1000 };
	long long now = mono_ms();
	struct tstate *s;
	int st;		/* 0: send; 1: token there; 2: poll; -1: err */

	if (f->waiters == NULL) {
		fetch_free(f);	/* nobody waits any more */
		return;
	}
	pthread_mutex_lock(&mtx);
	if ((s = state_locked(f->key, 1)) == NULL) {
		snprintf(err, sizeof(err), "oauth2 credential %s: too many token exchanges at once",
		    f->name);
		st = -1;
	} else if (state_token_locked(s, now, tok, sizeof(tok)))
		st = 1;
	else if (s->flying)
		st = 2;
	else if (state_backoff_locked(s, now, err, sizeof(err))) {
		atomic_fetch_add(&credtok_backoff_refused, 1);
		st = -1;
	} else {
		s->flying = 1;
		f->owner = 1;
		snprintf(rt, sizeof(rt), "%s", s->rt[0] != '\0' ? s->rt :
		    f->refresh0 != NULL ? f->refresh0 : "");
		st = 0;
	}
	pthread_mutex_unlock(&mtx);
	OPENSSL_cleanse(tok, sizeof(tok));
	switch (st) {
	case 0:
		if (fetch_send(f, rt, err, sizeof(err)) == 0)
			break;
		OPENSSL_cleanse(rt, sizeof(rt));
		atomic_fetch_add(&credtok_requests_failed, 1);
		fetch_complete(f, err);	/* releases the flight */
		return;
	case 1:
		fetch_complete(f, NULL);
		return;
	case 2:
		if (f->poll == NULL)
			f->poll = evtimer_new(f->t->base, poll_cb, f);
		evtimer_add(f->poll, &tv);
		return;
	default:
		fetch_complete(f, err);
		return;
	}
	OPENSSL_cleanse(rt, sizeof(rt));
}

static void
poll_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	fetch_step(arg);
}

/* The host of an https:// URL (checked at declaration) into out. */
static void
url_host(const char *url, char *out, size_t outlen)
{
	const char *h = url + 8;

	snprintf(out, outlen, "%.*s", (int)strcspn(h, "/?#"), h);
}

/*
 * A registry's token URL: the realm, service and one scope parameter per
 * space-separated scope of regscope ("" for the ping: none), each
 * percent-encoded. The caller frees it.
 */
static char *
realm_url(const struct cred *c, const char *regscope)
{
	struct buf u;
	const char *p = regscope;
	size_t l;
	int bad = 0;
	char *out;

	buf_init(&u, CREDTOK_URL_MAX + (size_t)3 * (CREDTOK_CLIENT_MAX + REGSCOPE_MAX) + 64);
	bad |= buf_addstr(&u, c->token_url);
	bad |= buf_addstr(&u, strchr(c->token_url, '?') != NULL ? "&service=" : "?service=");
	bad |= cred_put(&u, c->service, strlen(c->service), 1);
	while (*p != '\0') {
		l = strcspn(p, " ");
		if (l > 0) {
			bad |= buf_addstr(&u, "&scope=");
			bad |= cred_put(&u, p, l, 1);
		}
		p += l + (p[l] == ' ');
	}
	bad |= buf_add(&u, "", 1);
	ASSERT(bad == 0);	/* sized for the declared and derived maxima */
	out = xstrdup(u.p);
	buf_free(&u);
	return out;
}

/*
 * A new fetch of c's token key on t (a registry credential's for
 * regscope), with what its exchange needs copied (a reload may free c
 * meanwhile).
 */
static struct fetch *
fetch_new(struct credtok *t, const struct cred *c, const char *regscope, const char *key)
{
	struct fetch *f = xcalloc(1, sizeof(*f));
	struct buf pair;
	char *enc;
	int bad = 0;

	f->t = t;
	snprintf(f->key, sizeof(f->key), "%s", key);
	snprintf(f->name, sizeof(f->name), "%s", c->name);
	f->registry = c->form == CRED_REGISTRY;
	url_host(c->token_url, f->host, sizeof(f->host));
	buf_init(&pair, (size_t)3 * (CREDTOK_CLIENT_MAX + CRED_VALUE_MAX) + 2);
	if (f->registry) {
		f->url = realm_url(c, regscope);
		f->scope = xstrdup(regscope);
		/* the Docker token spec: plain Basic (RFC 7617) */
		bad |= buf_addstr(&pair, c->user);
		bad |= buf_add(&pair, ":", 1);
		bad |= buf_addstr(&pair, c->value);
	} else {
		f->url = xstrdup(c->token_url);
		f->scope = c->scope != NULL ? xstrdup(c->scope) : NULL;
		f->refresh0 = c->refresh != NULL ? xstrdup(c->refresh) : NULL;
		f->refresh_path = c->refresh_path != NULL ? xstrdup(c->refresh_path) : NULL;
		/* RFC 6749 2.3.1: each part form-urlencoded, then Basic */
		bad |= cred_put(&pair, c->client_id, strlen(c->client_id), 1);
		bad |= buf_add(&pair, ":", 1);
		bad |= cred_put(&pair, c->value, strlen(c->value), 1);
	}
	ASSERT(bad == 0);	/* sized for the declared maxima */
	enc = xmalloc(B64_ENC_LEN(pair.len) + 1);
	enc[b64_encode(pair.p, pair.len, enc)] = '\0';
	f->auth = xmalloc(strlen(enc) + 32);
	snprintf(f->auth, strlen(enc) + 32, "Authorization: Basic %s", enc);
	OPENSSL_cleanse(enc, strlen(enc));
	free(enc);
	OPENSSL_cleanse(pair.p, pair.len);
	buf_free(&pair);
	f->next = t->fetches;
	t->fetches = f;
	return f;
}

int
credtok_get(struct credtok *t, struct cred *const *cs, size_t n, const char *regscope,
    char **toks, char *err, size_t errlen, credtok_cb cb, void *arg)
{
	char key[CT_KEY_MAX], tok[CREDTOK_TOKEN_MAX];
	long long now = mono_ms();
	struct tstate *s;
	struct fetch *f;
	struct waiter *w;
	size_t i;
	int have, busy;

	for (i = 0; i < n; i++)
		toks[i] = NULL;
	for (i = 0; i < n; i++) {
		if (cs[i]->form != CRED_OAUTH2 && cs[i]->form != CRED_REGISTRY)
			continue;
		if (cs[i]->form == CRED_REGISTRY && regscope == NULL) {
			snprintf(err, errlen, "registry credential %s: no scope for the request",
			    cs[i]->name);
			credtok_toks_free(toks, n);
			return -1;	/* the caller's to derive: never a token of another */
		}
		token_key(cs[i], regscope, key);
		have = busy = 0;
		pthread_mutex_lock(&mtx);
		if ((s = state_locked(key, 0)) != NULL) {
			have = state_token_locked(s, now, tok, sizeof(tok));
			busy = s->flying;
			if (!have && !busy && state_backoff_locked(s, now, err, errlen))
				have = -1;
		}
		pthread_mutex_unlock(&mtx);
		if (have == 1) {
			toks[i] = xstrdup(tok);
			OPENSSL_cleanse(tok, sizeof(tok));
			continue;
		}
		for (f = t->fetches; f != NULL; f = f->next)
			if (strcmp(f->key, key) == 0)
				break;
		if (have == -1 && f == NULL) {
			atomic_fetch_add(&credtok_backoff_refused, 1);
			credtok_toks_free(toks, n);
			return -1;
		}
		w = xcalloc(1, sizeof(*w));
		w->cb = cb;
		w->arg = arg;
		if (f != NULL) {
			w->next = f->waiters;
			f->waiters = w;
		} else {
			f = fetch_new(t, cs[i], regscope, key);
			f->waiters = w;
			/* Never calls back from here: a waiter sees its result from the loop. */
			if (f->poll == NULL)
				f->poll = evtimer_new(t->base, poll_cb, f);
			event_active(f->poll, EV_TIMEOUT, 0);
		}
		credtok_toks_free(toks, n);
		return 1;
	}
	return 0;
}

void
credtok_forget(struct credtok *t, void *arg)
{
	struct fetch *f;
	struct waiter **pp, *w;

	if (t == NULL)
		return;
	for (f = t->fetches; f != NULL; f = f->next)
		for (pp = &f->waiters; *pp != NULL;) {
			if ((*pp)->arg == arg) {
				w = *pp;
				*pp = w->next;
				free(w);
			} else
				pp = &(*pp)->next;
		}
}

void
credtok_toks_free(char **toks, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		wipe_str(toks[i]);
		toks[i] = NULL;
	}
}

int
credtok_invalidate(const struct cred *c, const char *regscope)
{
	char key[CT_KEY_MAX];
	struct tstate *s;
	long long now;
	int kept = 0;

	if (c->form != CRED_OAUTH2 && (c->form != CRED_REGISTRY || regscope == NULL))
		return 0;
	token_key(c, regscope, key);
	now = mono_ms();
	pthread_mutex_lock(&mtx);
	if ((s = state_locked(key, 0)) != NULL && s->tok[0] != '\0') {
		if (c->form == CRED_REGISTRY && now - s->got_ms < CREDTOK_REFUSED_MS) {
			/*
			 * The realm has just granted this token and the
			 * registry refuses it: the grant lacks the access
			 * (a push the user may not make). Another fetch now
			 * would get the same; the token stays (its requests
			 * get the registry's 401 at once) until
			 * CREDTOK_REFUSED_MS after it came.
			 */
			if (s->until_ms > s->got_ms + CREDTOK_REFUSED_MS)
				s->until_ms = s->got_ms + CREDTOK_REFUSED_MS;
			kept = 1;
		} else {
			OPENSSL_cleanse(s->tok, sizeof(s->tok));
			s->until_ms = 0;
		}
	}
	pthread_mutex_unlock(&mtx);
	return kept;
}
