/*
 * unid.c: unidentified connections, their share, per source and in total.
 * A connection on the main listener is unidentified until its first head
 * names a registered sandbox (identify). Unidentified connections have
 * their own caps, so that a client holding many idle ones cannot take the
 * connections of registered sandboxes: limits.unidentified_per_source per
 * client address (counted over all workers in srctab, common/addrcount.c) and
 * limits.unidentified in total (at most a quarter of limits.max_conns). A
 * new connection beyond the per-address cap closes its address's oldest
 * unidentified one that is at least UNID_GRACE_MS old, idle ones (no byte
 * received) first; beyond the total cap, one of the address holding the
 * most (unid_heaviest), whatever its age, or the new one's own address's
 * as before when that is the one. When there is none to close, it is
 * admitted up to UNID_BURST times the cap and closed beyond, except at the
 * total cap when the address holding the most (over all workers, srctab)
 * holds more than the new one's and none of it is on this worker: the new
 * one is admitted and the other workers are asked to close one of that
 * address's (proxy_evict_src), so a flood whose connections all sit on one
 * worker cannot lock out a lighter client dispatched to another.
 * They have timeouts.identify from accept to identify. When descriptors
 * run short, lguard.c asks the workers to shed the oldest (conn_shed).
 *
 * This file counts and chooses; conn.c closes what it chooses (conn_new,
 * conn_shed) and calls unid_leave when a connection is identified or dies.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "addrcount.h"
#include "log.h"
#include "proxy_int.h"
#include "util.h"
#include "xmalloc.h"

/*
 * A connection younger than this is never closed to make room: a client's
 * burst of new connections (npm, git) arrives before any of them has sent
 * its head. Beyond a cap, young connections are admitted up to UNID_BURST
 * times the cap; an attacker's held connections age past it and go first.
 */
#define UNID_GRACE_MS	1000
#define UNID_BURST	2

/* Unidentified connections per client address, over all workers. */
static struct addrcount *srctab;
static pthread_once_t srctab_once = PTHREAD_ONCE_INIT;
/* Evictions and refusals at the caps: a flood causes them at will. */
static struct log_rate unid_rl;
static void
srctab_init(void)
{
	srctab = addrcount_new(ADDRCOUNT_LOCKED);
}

/* Adds d to the count of c's client address; returns the new count. */
static long
src_adj(const struct conn *c, long d)
{
	pthread_once(&srctab_once, srctab_init);
	return addrcount_adj(srctab, c->peer_family, c->peer, d);
}

/* c is unidentified: listed and counted. Returns its address's count. */
long
unid_enter(struct conn *c)
{
	c->unid = 1;
	TAILQ_INSERT_TAIL(&c->w->unid, c, unid_link);
	atomic_fetch_add(&the_proxy.st.conns_unid, 1);
	return src_adj(c, 1);
}

/* c is identified or closing: no longer counted. Idempotent. */
void
unid_leave(struct conn *c)
{
	if (!c->unid)
		return;
	c->unid = 0;
	TAILQ_REMOVE(&c->w->unid, c, unid_link);
	atomic_fetch_sub(&the_proxy.st.conns_unid, 1);
	src_adj(c, -1);
}

/* No byte received yet: nothing is lost by closing it. */
int
unid_idle(struct conn *c)
{
	return c->st == CS_HEAD && c->head_start == 0 &&
	    (c->cl == NULL || evbuffer_get_length(bufferevent_get_input(c->cl)) == 0);
}

/*
 * The oldest unidentified connection of w other than c and at least
 * UNID_GRACE_MS old, idle ones first; with same_src, of c's address only.
 * NULL: none.
 */
static struct conn *
unid_victim(struct worker *w, struct conn *c, int same_src)
{
	struct conn *v, *busy = NULL;
	long long now = util_mono_coarse_ms();

	TAILQ_FOREACH(v, &w->unid, unid_link) {
		if (now - v->accepted < UNID_GRACE_MS)
			break;	/* oldest first: the rest are younger */
		if (v == c || (same_src && (v->peer_family != c->peer_family ||
		    memcmp(v->peer, c->peer, 16) != 0)))
			continue;
		if (unid_idle(v))
			return v;
		if (busy == NULL)
			busy = v;
	}
	return busy;
}

/*
 * For the total cap: the unidentified connection of w, other than c and not
 * of c's address, whose address holds the most unidentified connections
 * (over all workers), idle ones first, then the oldest; its address's
 * count in *nv. NULL: none.
 */
static struct conn *
unid_heaviest(struct worker *w, struct conn *c, long *nv)
{
	struct conn *v, *best = NULL;
	long n, bn = 0;
	int bidle = 0, idle;

	pthread_once(&srctab_once, srctab_init);
	TAILQ_FOREACH(v, &w->unid, unid_link) {
		if (v == c || (v->peer_family == c->peer_family &&
		    memcmp(v->peer, c->peer, 16) == 0))
			continue;
		n = addrcount_count(srctab, v->peer_family, v->peer);
		idle = unid_idle(v);
		if (best == NULL || n > bn || (n == bn && idle && !bidle)) {
			best = v;
			bn = n;
			bidle = idle;
		}
	}
	*nv = bn;
	return best;
}

/*
 * The client address other than c's holding the most unidentified
 * connections over all workers: its count (0: none), its family and
 * address in *fam and a.
 */
static long
src_heaviest(const struct conn *c, int *fam, unsigned char a[16])
{
	pthread_once(&srctab_once, srctab_init);
	return addrcount_heaviest(srctab, c->peer_family, c->peer, fam, a);
}

struct conn *
unid_src_victim(struct worker *w, int fam, const unsigned char peer[16])
{
	struct conn *v, *busy = NULL;

	TAILQ_FOREACH(v, &w->unid, unid_link) {
		if (v->peer_family != fam || memcmp(v->peer, peer, 16) != 0)
			continue;
		if (unid_idle(v))
			return v;
		if (busy == NULL)
			busy = v;
	}
	return busy;
}

/*
 * The total cap in force: limits.unidentified, at most a quarter of
 * max_conns, so that with its burst allowance (UNID_BURST times) half of
 * max_conns is always left to identified connections.
 */
static long
unid_cap(void)
{
	long long q = the_proxy.conf->max_conns / (2 * UNID_BURST);

	if (q < 1)
		q = 1;
	return (long)(the_proxy.conf->unid_max < q ? the_proxy.conf->unid_max : q);
}

/*
 * Applies the caps to c, just accepted unidentified with nsrc connections
 * of its address counted. Returns the connection the caller closes: NULL
 * (none, c goes on), another one (evicted, c goes on) or c (refused).
 */
struct conn *
unid_admit(struct conn *c, long nsrc)
{
	struct conn *v, *other = NULL;
	const char *which = NULL;
	long dropped, n, cap, nv = 0;
	int total = 0;

	if (nsrc > the_proxy.conf->unid_per_source) {
		/* this address's own: its oldest aged one, else a young burst */
		which = "per-address";
		n = nsrc;
		cap = (long)the_proxy.conf->unid_per_source;
		v = unid_victim(c->w, c, 1);
	} else if ((n = atomic_load(&the_proxy.st.conns_unid)) > unid_cap()) {
		/*
		 * In total: the address holding the most pays, whatever the
		 * age of its connections (a flood renews them to keep them
		 * young); this address's own aged ones when it is the one.
		 */
		which = "total";
		total = 1;
		cap = unid_cap();
		other = unid_heaviest(c->w, c, &nv);
		v = other != NULL && nv >= nsrc ? other : unid_victim(c->w, c, 1);
	} else
		return NULL;
	if (v == NULL && n <= cap * UNID_BURST &&
	    atomic_load(&the_proxy.st.conns_unid) <= unid_cap() * UNID_BURST)
		return NULL;	/* a burst of young ones: admitted */
	if (v == NULL)
		v = other;
	if (v == NULL && total) {
		/* the heaviest address is all on other workers: they close one */
		unsigned char a[16];
		int fam = 0;

		if (src_heaviest(c, &fam, a) > nsrc) {
			proxy_evict_src(c->w, fam, a);
			return NULL;
		}
	}
	if (v != NULL) {
		atomic_fetch_add(&the_proxy.st.unid_evicted, 1);
		if (log_rate_ok(&unid_rl, 1, 10000, &dropped))
			log_info("conn=%llx unidentified connections at their %s cap: closed the oldest, conn=%llx (%ld similar suppressed)",
			    (unsigned long long)c->id, which, (unsigned long long)v->id, dropped);
		return v;
	}
	atomic_fetch_add(&the_proxy.st.unid_refused, 1);
	atomic_fetch_add(&the_proxy.st.ref_limit, 1);
	if (log_rate_ok(&unid_rl, 1, 10000, &dropped))
		log_info("conn=%llx unidentified connections at their %s cap: refused (%ld similar suppressed)",
		    (unsigned long long)c->id, which, dropped);
	return c;
}
