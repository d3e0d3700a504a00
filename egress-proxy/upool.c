/*
 * upool.c: the upstream pool, parked and idle upstreams, per worker.
 * An upstream is reused only by the same sandbox for the same canonical
 * target and dialled address, and only when clean (upool_clean: handshake
 * done, last response complete, nothing buffered, not shut down). A parked
 * one is read: any byte, EOF or error drops it; it expires after
 * timeouts.pool_idle. Bounds: upstream.pool_per_target per key and
 * upstream.pool_max per worker. A connection idle between requests with
 * its upstream is on w->idleup, from which a new one may take it over.
 *
 * Below conn.c (conn_kill parks) and proxy.c (dialling takes, the request
 * cycle links idle connections and checks for read-ahead): it calls
 * neither. A connection whose idle upstream is taken over is put to rest
 * by the caller of upool_take.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/bufferevent_struct.h>	/* ev_read, for upool_kick */
#include <event2/event.h>
#include <openssl/err.h>

#include "evrelay.h"
#include "log.h"
#include "proxy_int.h"
#include "sandbox.h"
#include "util.h"
#include "xmalloc.h"

/* *a = sa, an AF_INET or AF_INET6 address; -1 for another family. */
int
upool_sa_set(union sa_any *a, const struct sockaddr *sa)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET)
		memcpy(&a->in, sa, sizeof(a->in));
	else if (sa->sa_family == AF_INET6)
		memcpy(&a->in6, sa, sizeof(a->in6));
	else
		return -1;
	return 0;
}

static int
sa_same(const union sa_any *a, const union sa_any *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return 0;
	if (a->sa.sa_family == AF_INET)
		return a->in.sin_port == b->in.sin_port &&
		    a->in.sin_addr.s_addr == b->in.sin_addr.s_addr;
	if (a->sa.sa_family == AF_INET6)
		return a->in6.sin6_port == b->in6.sin6_port &&
		    memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, 16) == 0;
	return 0;
}

/* The pool key: same sandbox (never shared), canonical target, address. */
static int
pool_key(const struct pooled *p, const struct sandbox *sb, const char *hostport,
    const union sa_any *a)
{
	return p->sb == sb && sa_same(&p->addr, a) && strcmp(p->hostport, hostport) == 0;
}

static void
pool_drop(struct pooled *p)
{
	struct worker *w = p->w;

	TAILQ_REMOVE(&w->pool, p, link);
	w->npool--;
	atomic_fetch_sub(&the_proxy.st.pool_idle, 1);
	atomic_fetch_add(&the_proxy.st.pool_dropped, 1);
	bufferevent_free(p->bev);
	sandbox_unref(p->sb);
	free(p);
}

/* A parked connection got a byte, EOF or an error: it is never reused. */
static void
pool_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	pool_drop(arg);
}

static void
pool_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	pool_drop(arg);
}

/*
 * With read-ahead, whole records can sit inside OpenSSL after
 * bufferevent_openssl's read loop stops (it checks SSL_pending(), the
 * decrypted bytes of the current record only), and the socket has nothing
 * more to wake it: run its read callback again while reading is enabled.
 */
void
upool_kick(struct conn *c)
{
	SSL *ssl;

	if (c->up == NULL || !c->up_tls || c->dead ||
	    !(bufferevent_get_enabled(c->up) & EV_READ))
		return;
	ssl = bufferevent_openssl_get_ssl(c->up);
	if (ssl != NULL && SSL_is_init_finished(ssl) && SSL_has_pending(ssl))
		event_active(&c->up->ev_read, EV_READ, 1);
}

/*
 * 1 when application bytes follow a complete response inside OpenSSL
 * (records read ahead with it): they must never be taken for the next
 * request's response. Records that carry no data (a session ticket) are
 * consumed by the peek and do not count; a close_notify drops the upstream.
 */
int
upool_junk(struct conn *c)
{
	SSL *ssl;
	char b;

	if (c->up == NULL || !c->up_tls)
		return 0;
	ssl = bufferevent_openssl_get_ssl(c->up);
	if (ssl == NULL || !SSL_has_pending(ssl))
		return 0;
	if (SSL_peek(ssl, &b, 1) > 0)
		return 1;
	ERR_clear_error();
	if (SSL_get_shutdown(ssl) != 0) {	/* closed behind the response */
		bufferevent_free(c->up);
		c->up = NULL;
	}
	return 0;
}

/*
 * 1 when c->up is a clean idle upstream TLS connection that another
 * connection of the same sandbox may use: handshake done, last response
 * complete, nothing buffered either way, not shut down.
 */
int
upool_clean(struct conn *c)
{
	struct bufferevent *bev = c->up;
	SSL *ssl;

	if (bev == NULL || !c->up_tls || c->mode != MODE_INTERCEPT || c->sb == NULL ||
	    atomic_load(&c->sb->dead) || c->up_addr.sa.sa_family == 0 ||
	    c->resp_active || c->st == CS_CONNECTING)
		return 0;
	if (evbuffer_get_length(bufferevent_get_input(bev)) != 0 ||
	    evbuffer_get_length(bufferevent_get_output(bev)) != 0)
		return 0;
	ssl = bufferevent_openssl_get_ssl(bev);
	return ssl != NULL && SSL_is_init_finished(ssl) && !SSL_has_pending(ssl) &&
	    SSL_get_shutdown(ssl) == 0;
}

/* c's upstream may no longer be lent. Idempotent. */
void
upool_idle_unlink(struct conn *c)
{
	if (c->idle_linked) {
		TAILQ_REMOVE(&c->w->idleup, c, upool_idle_link);
		c->idle_linked = 0;
	}
}

/* c is between requests and keeps its upstream: it may be lent (newest first). */
void
upool_idle_link(struct conn *c)
{
	upool_idle_unlink(c);
	if (c->up != NULL && c->mode == MODE_INTERCEPT && !c->dead) {
		TAILQ_INSERT_HEAD(&c->w->idleup, c, upool_idle_link);
		c->idle_linked = 1;
	}
}

/*
 * Takes over the idle upstream of another connection of c's sandbox to
 * c's target at a (the longest idle first), so a burst of new connections
 * of one sandbox shares a few upstream connections instead of holding one
 * each until timeouts.upstream_idle: the one it is taken from dials (or
 * takes another) at its next request. Returns the one it was taken from,
 * which the caller puts to rest (proxy_conn_rest), or NULL.
 */
static struct conn *
up_take_idle(struct conn *c, const union sa_any *a)
{
	struct conn *v, *prev;
	int n = 0;

	for (v = TAILQ_LAST(&c->w->idleup, connq); v != NULL && n < 64; v = prev, n++) {
		prev = TAILQ_PREV(v, connq, upool_idle_link);
		if (v == c)
			continue;
		if (v->dead || v->st != CS_REQ_HEAD || v->head_start != 0 || !upool_clean(v)) {
			upool_idle_unlink(v);
			continue;
		}
		if (v->sb != c->sb || !sa_same(&v->up_addr, a) ||
		    strcmp(v->tgt->hostport, c->tgt->hostport) != 0)
			continue;
		upool_idle_unlink(v);
		c->up = v->up;
		v->up = NULL;
		return v;
	}
	return NULL;
}

/*
 * Parks c->up if it is a clean idle upstream TLS connection (handshake
 * done, last response complete, nothing buffered either way, not shut
 * down); c->up is then NULL. Otherwise c->up is left for the caller.
 */
void
upool_park(struct conn *c)
{
	struct worker *w = c->w;
	struct bufferevent *bev = c->up;
	struct pooled *p, *oldest = NULL;
	long same = 0;

	upool_idle_unlink(c);
	if (the_proxy.conf->pool_max <= 0 || !upool_clean(c))
		return;
	TAILQ_FOREACH(p, &w->pool, link) {
		if (pool_key(p, c->sb, c->tgt->hostport, &c->up_addr)) {
			same++;
			oldest = p;
		}
	}
	if (same >= the_proxy.conf->pool_per_target && oldest != NULL) {
		pool_drop(oldest);
	} else if (w->npool >= the_proxy.conf->pool_max) {
		pool_drop(TAILQ_LAST(&w->pool, poolq));
	}
	p = xcalloc(1, sizeof(*p));
	p->w = w;
	p->sb = sandbox_ref(c->sb);
	p->bev = bev;
	p->addr = c->up_addr;
	p->expires = util_mono_coarse_ms() + the_proxy.conf->pool_idle_ms;
	memcpy(p->hostport, c->tgt->hostport, sizeof(p->hostport));
	c->up = NULL;
	bufferevent_setcb(bev, pool_read, NULL, pool_event, p);
	bufferevent_disable(bev, EV_WRITE);
	evrelay_bev_enable(bev, EV_READ);
	TAILQ_INSERT_HEAD(&w->pool, p, link);
	w->npool++;
	atomic_fetch_add(&the_proxy.st.pool_idle, 1);
	atomic_fetch_add(&the_proxy.st.pool_parked, 1);
	log_debug("conn=%llx sandbox=%s target=%s upstream parked",
	    (unsigned long long)c->id, c->sb->id, c->tgt->hostport);
}

/*
 * Takes a parked connection of c's sandbox to c's target at sa into c->up
 * (*lender NULL), or the idle upstream of another connection of c's
 * sandbox (*lender: that one, which the caller puts to rest and counts in
 * pool_lent). 1 when one was taken (it is connected and verified; the
 * caller sets its callbacks), 0 otherwise.
 */
int
upool_take(struct conn *c, const struct sockaddr *sa, struct conn **lender)
{
	struct worker *w = c->w;
	struct pooled *p, *hit = NULL;
	union sa_any a;
	long long now = util_mono_coarse_ms();

	*lender = NULL;
	if (the_proxy.conf->pool_max <= 0 || c->no_pool || c->mode != MODE_INTERCEPT ||
	    c->sb == NULL || upool_sa_set(&a, sa) == -1)
		return 0;
	TAILQ_FOREACH(p, &w->pool, link) {
		if (p->expires > now && pool_key(p, c->sb, c->tgt->hostport, &a)) {
			hit = p;
			break;
		}
	}
	if (hit != NULL) {
		TAILQ_REMOVE(&w->pool, hit, link);
		w->npool--;
		atomic_fetch_sub(&the_proxy.st.pool_idle, 1);
		atomic_fetch_add(&the_proxy.st.pool_reused, 1);
		c->up = hit->bev;
		sandbox_unref(hit->sb);
		free(hit);
	} else if ((*lender = up_take_idle(c, &a)) == NULL)
		return 0;
	c->up_tls = 1;
	c->up_addr = a;
	c->up_nreq = 1;		/* it served before: a request on it may be retried */
	return 1;
}

/* Drops w's parked upstreams that expired by now. */
void
upool_expire(struct worker *w, long long now)
{
	struct pooled *p, *prev;

	for (p = TAILQ_LAST(&w->pool, poolq); p != NULL && p->expires <= now; p = prev) {
		prev = TAILQ_PREV(p, poolq, link);
		pool_drop(p);
	}
}

/* Drops w's parked upstreams of sb (NULL: all of them). */
void
upool_kill_sb(struct worker *w, struct sandbox *sb)
{
	struct pooled *p, *pn;

	for (p = TAILQ_FIRST(&w->pool); p != NULL; p = pn) {
		pn = TAILQ_NEXT(p, link);
		if (sb == NULL || p->sb == sb)
			pool_drop(p);
	}
}
