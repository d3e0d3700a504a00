/*
 * addrcount.c: connections per client address (see addrcount.h).
 * A chained hash of ADDRCOUNT_BUCKETS on FNV-1a of the family and the 16
 * bytes; entries are freed when their count drops to zero, so the table
 * holds only addresses with connections open.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrcount.h"
#include "xmalloc.h"

/* Buckets: thousands of addresses at a few entries per chain. */
#define ADDRCOUNT_BUCKETS	1024

struct addrcount_ent {
	struct addrcount_ent	*next;
	int			 fam;
	unsigned char		 a[16];
	long			 n;
	char			 ip[INET6_ADDRSTRLEN];
};

struct addrcount {
	struct addrcount_ent	*tab[ADDRCOUNT_BUCKETS];
	int			 locked;
	pthread_mutex_t		 mtx;
};

struct addrcount *
addrcount_new(int flags)
{
	struct addrcount *t = xcalloc(1, sizeof(*t));

	t->locked = (flags & ADDRCOUNT_LOCKED) != 0;
	pthread_mutex_init(&t->mtx, NULL);
	return t;
}

void
addrcount_free(struct addrcount *t)
{
	struct addrcount_ent *e;
	size_t i;

	if (t == NULL)
		return;
	for (i = 0; i < ADDRCOUNT_BUCKETS; i++)
		while ((e = t->tab[i]) != NULL) {
			t->tab[i] = e->next;
			free(e);
		}
	pthread_mutex_destroy(&t->mtx);
	free(t);
}

void
addrcount_key(const struct sockaddr *sa, int *fam, unsigned char a[16])
{
	memset(a, 0, 16);
	*fam = sa->sa_family;
	if (sa->sa_family == AF_INET)
		memcpy(a + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(a, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
}

static uint32_t
bucket(int fam, const unsigned char a[16])
{
	uint32_t h = 2166136261U;
	int i;

	for (i = 0; i < 16; i++)
		h = (h ^ a[i]) * 16777619U;
	h = (h ^ (uint32_t)fam) * 16777619U;
	return h % ADDRCOUNT_BUCKETS;
}

static void
lock(struct addrcount *t)
{
	if (t->locked)
		pthread_mutex_lock(&t->mtx);
}

static void
unlock(struct addrcount *t)
{
	if (t->locked)
		pthread_mutex_unlock(&t->mtx);
}

/* The entry of (fam, a), created at 0 when create; the table locked. */
static struct addrcount_ent *
find(struct addrcount *t, int fam, const unsigned char a[16], int create)
{
	uint32_t h = bucket(fam, a);
	struct addrcount_ent *e;

	for (e = t->tab[h]; e != NULL; e = e->next)
		if (e->fam == fam && memcmp(e->a, a, 16) == 0)
			return e;
	if (!create)
		return NULL;
	e = xcalloc(1, sizeof(*e));
	e->fam = fam;
	memcpy(e->a, a, 16);
	if (fam == AF_INET)
		inet_ntop(AF_INET, a + 12, e->ip, sizeof(e->ip));
	else if (fam == AF_INET6)
		inet_ntop(AF_INET6, a, e->ip, sizeof(e->ip));
	else
		snprintf(e->ip, sizeof(e->ip), "?");
	e->next = t->tab[h];
	t->tab[h] = e;
	return e;
}

/* Unlinks and frees e when its count is 0 or below; the table locked. */
static void
drop_if_empty(struct addrcount *t, struct addrcount_ent *e)
{
	struct addrcount_ent **pp;

	if (e->n > 0)
		return;
	for (pp = &t->tab[bucket(e->fam, e->a)]; *pp != NULL; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			free(e);
			return;
		}
}

struct addrcount_ent *
addrcount_get(struct addrcount *t, const struct sockaddr *sa)
{
	unsigned char a[16];
	struct addrcount_ent *e;
	int fam;

	addrcount_key(sa, &fam, a);
	lock(t);
	e = find(t, fam, a, 1);
	unlock(t);
	return e;
}

void
addrcount_hold(struct addrcount *t, struct addrcount_ent *e)
{
	lock(t);
	e->n++;
	unlock(t);
}

void
addrcount_put(struct addrcount *t, struct addrcount_ent *e)
{
	if (e == NULL)
		return;
	lock(t);
	if (e->n > 0)
		e->n--;
	drop_if_empty(t, e);
	unlock(t);
}

long
addrcount_n(const struct addrcount_ent *e)
{
	return e->n;
}

const char *
addrcount_ip(const struct addrcount_ent *e)
{
	return e->ip;
}

int
addrcount_full(const struct addrcount_ent *e, long long cap)
{
	return e->n >= cap;
}

long
addrcount_adj(struct addrcount *t, int fam, const unsigned char a[16], long d)
{
	struct addrcount_ent *e;
	long n;

	lock(t);
	if ((e = find(t, fam, a, d > 0)) == NULL) {
		unlock(t);
		return 0;
	}
	n = (e->n += d);
	drop_if_empty(t, e);
	unlock(t);
	return n;
}

long
addrcount_count(struct addrcount *t, int fam, const unsigned char a[16])
{
	struct addrcount_ent *e;
	long n;

	lock(t);
	e = find(t, fam, a, 0);
	n = e != NULL ? e->n : 0;
	unlock(t);
	return n;
}

long
addrcount_heaviest(struct addrcount *t, int fam, const unsigned char a[16],
    int *bfam, unsigned char b[16])
{
	struct addrcount_ent *e;
	long bn = 0;
	size_t i;

	lock(t);
	for (i = 0; i < ADDRCOUNT_BUCKETS; i++)
		for (e = t->tab[i]; e != NULL; e = e->next) {
			if (e->fam == fam && memcmp(e->a, a, 16) == 0)
				continue;
			if (e->n > bn) {
				bn = e->n;
				*bfam = e->fam;
				memcpy(b, e->a, 16);
			}
		}
	unlock(t);
	return bn;
}
