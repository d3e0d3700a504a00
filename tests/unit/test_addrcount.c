/*
 * test_addrcount.c: the per-address connection counts (common/addrcount.c)
 * and the accept guard on real descriptor exhaustion (common/lguard.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "addrcount.h"
#include "lguard.h"
#include "unit.h"

static struct sockaddr_in
v4(const char *ip)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	inet_pton(AF_INET, ip, &sin.sin_addr);
	return sin;
}

TEST(test_addrcount_hold_put)
{
	struct addrcount *t = addrcount_new(0);
	struct sockaddr_in a = v4("192.0.2.1"), b = v4("192.0.2.2");
	struct sockaddr_in6 c;
	struct addrcount_ent *ea, *ea2, *eb, *ec;
	unsigned char key[16];
	int fam;

	memset(&c, 0, sizeof(c));
	c.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::1", &c.sin6_addr);
	ea = addrcount_get(t, (struct sockaddr *)&a);
	CHECK_INT(addrcount_n(ea), 0);
	CHECK_STR(addrcount_ip(ea), "192.0.2.1");
	addrcount_hold(t, ea);
	addrcount_hold(t, ea);
	ea2 = addrcount_get(t, (struct sockaddr *)&a);
	CHECK(ea2 == ea);
	/* full: one more would go beyond the cap (the rule every daemon uses) */
	CHECK(!addrcount_full(ea, 3));
	CHECK(addrcount_full(ea, 2));
	/* a refused connection: held, then given back; the count stays */
	addrcount_hold(t, ea2);
	addrcount_put(t, ea2);
	CHECK_INT(addrcount_n(ea), 2);
	eb = addrcount_get(t, (struct sockaddr *)&b);
	addrcount_hold(t, eb);
	addrcount_put(t, eb);	/* at 0: freed (ASan sees a leak else) */
	ec = addrcount_get(t, (struct sockaddr *)&c);
	CHECK_STR(addrcount_ip(ec), "2001:db8::1");
	addrcount_hold(t, ec);
	addrcount_key((struct sockaddr *)&a, &fam, key);
	CHECK_INT(addrcount_count(t, fam, key), 2);
	addrcount_put(t, ea);
	addrcount_put(t, ea);	/* at 0: freed */
	CHECK_INT(addrcount_count(t, fam, key), 0);
	addrcount_free(t);	/* frees ec with its count */
}

TEST(test_addrcount_adj_heaviest)
{
	struct addrcount *t = addrcount_new(ADDRCOUNT_LOCKED);
	unsigned char a[16] = { 0 }, b[16] = { 0 }, got[16];
	int fam = 0;

	a[15] = 1;
	b[15] = 2;
	CHECK_INT(addrcount_adj(t, AF_INET, a, -1), 0);	/* unknown: nothing made */
	CHECK_INT(addrcount_adj(t, AF_INET, a, 1), 1);
	CHECK_INT(addrcount_adj(t, AF_INET, a, 1), 2);
	CHECK_INT(addrcount_adj(t, AF_INET, b, 1), 1);
	CHECK_INT(addrcount_adj(t, AF_INET6, a, 5), 5);	/* another family, another address */
	CHECK_INT(addrcount_heaviest(t, AF_INET6, a, &fam, got), 2);
	CHECK_INT(fam, AF_INET);
	CHECK(memcmp(got, a, 16) == 0);
	CHECK_INT(addrcount_adj(t, AF_INET, a, -2), 0);
	CHECK_INT(addrcount_heaviest(t, AF_INET6, a, &fam, got), 1);
	CHECK(memcmp(got, b, 16) == 0);
	addrcount_free(t);
}

/* ---- lguard on a real EMFILE ---- */

#define HELD_MAX	64
static int held[HELD_MAX], nheld, nshed;

static void
acc_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
	(void)l;
	(void)sa;
	(void)len;
	(void)arg;
	lguard_accept_ok();
	if (nheld < HELD_MAX)
		held[nheld++] = fd;
	else
		close(fd);
}

static long
shed_cb(void *arg, long n)
{
	long k = 0;

	(void)arg;
	while (k < n && nheld > 0) {
		close(held[--nheld]);
		k++;
	}
	nshed += (int)k;
	return k;
}

static void
stop_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	event_base_loopbreak(arg);
}

TEST(test_lguard_emfile)
{
	struct event_base *base = event_base_new();
	struct sockaddr_in sin = v4("127.0.0.1");
	socklen_t sl = sizeof(sin);
	struct evconnlistener *l;
	struct rlimit was, rl;
	struct timeval tv = { 1, 0 };
	struct event *stop;
	int cl[24], i, spare;

	CHECK(lguard_is_short(EMFILE) && lguard_is_short(ENFILE) && !lguard_is_short(ECONNRESET));
	l = evconnlistener_new_bind(base, acc_cb, NULL, LEV_OPT_CLOSE_ON_FREE, 64,
	    (struct sockaddr *)&sin, sizeof(sin));
	CHECK(l != NULL);
	if (l == NULL)
		return;
	getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&sin, &sl);
	lguard_add(l, shed_cb, NULL);
	for (i = 0; i < 24; i++) {
		cl[i] = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(connect(cl[i], (struct sockaddr *)&sin, sizeof(sin)) == 0);
	}
	/* Only a few descriptors left: accept() runs into EMFILE. */
	spare = dup(0);
	close(spare);
	getrlimit(RLIMIT_NOFILE, &was);
	rl = was;
	rl.rlim_cur = (rlim_t)spare + 4;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	stop = evtimer_new(base, stop_cb, base);
	evtimer_add(stop, &tv);
	event_base_dispatch(base);
	/* paused (not spinning), shed held ones, and accepted again after */
	CHECK(lguard_pauses() >= 1);
	CHECK(nshed >= 1);
	CHECK(nheld + nshed >= 8);
	setrlimit(RLIMIT_NOFILE, &was);
	lguard_del(l);
	evconnlistener_free(l);
	event_free(stop);
	for (i = 0; i < 24; i++)
		close(cl[i]);
	shed_cb(NULL, HELD_MAX);
	event_base_free(base);
}

int
main(void)
{
	RUN(test_addrcount_hold_put);
	RUN(test_addrcount_adj_heaviest);
	RUN(test_lguard_emfile);
	return unit_done();
}
