/*
 * netcheck.c: destination address policy (see netcheck.h).
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>

#include "netcheck.h"
#include "xmalloc.h"

#define SELF_MAX 256

static struct sockaddr_storage self_if[SELF_MAX];	/* interface addresses */
static size_t nself_if;
/* Our listeners, each with a count (sandbox listeners often share one). */
static struct self_listener {
	struct sockaddr_storage	 ss;
	long			 refs;
} *self_listen;
static size_t nself_listen, capself_listen;
static pthread_mutex_t self_mtx = PTHREAD_MUTEX_INITIALIZER;

int
netcheck_init(void)
{
	struct ifaddrs *ifa, *i;

	if (getifaddrs(&ifa) == -1)
		return -1;
	pthread_mutex_lock(&self_mtx);
	nself_if = 0;
	for (i = ifa; i != NULL && nself_if < SELF_MAX; i = i->ifa_next) {
		if (i->ifa_addr == NULL)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			memcpy(&self_if[nself_if++], i->ifa_addr, sizeof(struct sockaddr_in));
		else if (i->ifa_addr->sa_family == AF_INET6)
			memcpy(&self_if[nself_if++], i->ifa_addr, sizeof(struct sockaddr_in6));
	}
	pthread_mutex_unlock(&self_mtx);
	freeifaddrs(ifa);
	return 0;
}

static int same_addr(const struct sockaddr *, const struct sockaddr *, int);

/* The slot of exactly sa (address and port, no wildcard match), or -1. */
static long
self_find(const struct sockaddr *sa)
{
	size_t i;

	for (i = 0; i < nself_listen; i++) {
		const struct sockaddr *x = (const struct sockaddr *)&self_listen[i].ss;
		if (x->sa_family == sa->sa_family && same_addr(sa, x, 1) && same_addr(x, sa, 1))
			return (long)i;
	}
	return -1;
}

void
netcheck_add_self(const struct sockaddr *sa, socklen_t len)
{
	long i;

	if (len > sizeof(struct sockaddr_storage) ||
	    (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return;
	pthread_mutex_lock(&self_mtx);
	if ((i = self_find(sa)) != -1)
		self_listen[i].refs++;
	else {
		if (nself_listen == capself_listen) {
			capself_listen = capself_listen ? capself_listen * 2 : 16;
			self_listen = xreallocarray(self_listen, capself_listen,
			    sizeof(*self_listen));
		}
		memset(&self_listen[nself_listen], 0, sizeof(self_listen[0]));
		memcpy(&self_listen[nself_listen].ss, sa, len);
		self_listen[nself_listen++].refs = 1;
	}
	pthread_mutex_unlock(&self_mtx);
}

void
netcheck_del_self(const struct sockaddr *sa, socklen_t len)
{
	long i;

	(void)len;
	pthread_mutex_lock(&self_mtx);
	if ((i = self_find(sa)) != -1 && --self_listen[i].refs == 0)
		self_listen[i] = self_listen[--nself_listen];
	pthread_mutex_unlock(&self_mtx);
}

struct v4rule {
	uint32_t	 net;
	int		 bits;
	const char	*why;
};

static const struct v4rule v4rules[] = {
	{ 0x00000000, 8, "this-network" },
	{ 0x0a000000, 8, "private" },
	{ 0x64400000, 10, "cgnat" },
	{ 0x7f000000, 8, "loopback" },
	{ 0xa9fe0000, 16, "link-local" },
	{ 0xac100000, 12, "private" },
	{ 0xc0000000, 24, "ietf-reserved" },
	{ 0xc0000200, 24, "documentation" },
	{ 0xc0a80000, 16, "private" },
	{ 0xc6120000, 15, "benchmark" },
	{ 0xc6336400, 24, "documentation" },
	{ 0xcb007100, 24, "documentation" },
	{ 0xe0000000, 4, "multicast" },
	{ 0xf0000000, 4, "reserved" },
};

static const char *
v4_reason(uint32_t a)
{
	size_t i;

	for (i = 0; i < NELEM(v4rules); i++) {
		uint32_t m = v4rules[i].bits ? 0xffffffffU << (32 - v4rules[i].bits) : 0;
		if ((a & m) == v4rules[i].net)
			return v4rules[i].why;
	}
	return NULL;
}

static int
same_addr(const struct sockaddr *a, const struct sockaddr *b, int port)
{
	if (a->sa_family != b->sa_family)
		return 0;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		if (port && x->sin_port != y->sin_port)
			return 0;
		return x->sin_addr.s_addr == y->sin_addr.s_addr ||
		    (port && y->sin_addr.s_addr == htonl(INADDR_ANY));
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
		if (port && x->sin6_port != y->sin6_port)
			return 0;
		return memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0 ||
		    (port && IN6_IS_ADDR_UNSPECIFIED(&y->sin6_addr));
	}
	return 0;
}

const char *
netcheck_addr(const struct sockaddr *sa, const struct cidr *allow, size_t nallow)
{
	const char *why = NULL;
	size_t i;
	int allowed = 0;

	for (i = 0; i < nallow; i++)
		if (pconf_cidr_match(&allow[i], sa))
			allowed = 1;
	pthread_mutex_lock(&self_mtx);
	for (i = 0; i < nself_listen; i++)
		if (same_addr(sa, (struct sockaddr *)&self_listen[i].ss, 1)) {
			pthread_mutex_unlock(&self_mtx);
			return "proxy-listener";
		}
	for (i = 0; i < nself_if && why == NULL; i++)
		if (same_addr(sa, (struct sockaddr *)&self_if[i], 0))
			why = "proxy-address";
	pthread_mutex_unlock(&self_mtx);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)sa;
		uint32_t a = ntohl(s4->sin_addr.s_addr);
		if (why == NULL)
			why = v4_reason(a);
		if (why == NULL && a == 0xffffffffU)
			why = "broadcast";
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;
		const unsigned char *b = s6->sin6_addr.s6_addr;
		static const unsigned char mapped[12] =
		    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		static const unsigned char nat64[12] =
		    { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
		uint32_t a4;

		if (why != NULL)
			;
		else if (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
			why = "unspecified";
		else if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			why = "loopback";
		else if ((b[0] == 0xfe && (b[1] & 0xc0) == 0x80))
			why = "link-local";
		else if ((b[0] == 0xfe && (b[1] & 0xc0) == 0xc0))
			why = "site-local";
		else if ((b[0] & 0xfe) == 0xfc)
			why = "unique-local";
		else if (b[0] == 0xff)
			why = "multicast";
		else if (memcmp(b, mapped, 12) == 0 || memcmp(b, nat64, 12) == 0) {
			memcpy(&a4, b + 12, 4);
			if ((why = v4_reason(ntohl(a4))) == NULL &&
			    memcmp(b, mapped, 12) == 0)
				why = NULL;
			if (why == NULL && ntohl(a4) == 0xffffffffU)
				why = "broadcast";
		} else if (b[0] == 0x20 && b[1] == 0x02) {	/* 6to4 */
			memcpy(&a4, b + 2, 4);
			why = v4_reason(ntohl(a4));
		} else if (memcmp(b, mapped, 10) == 0 && b[10] == 0 && b[11] == 0)
			why = "ipv4-compatible";
		else if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8)
			why = "documentation";
	} else
		why = "address-family";
	if (why != NULL && allowed)
		return NULL;
	return why;
}
