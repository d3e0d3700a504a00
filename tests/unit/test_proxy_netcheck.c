/*
 * test_proxy_netcheck.c: upstream.allow_cidrs with ports, and registered
 * listener addresses counted as the proxy's own (issue 13).
 */
#include <arpa/inet.h>
#include <string.h>

#include "../../egress-proxy/config.h"
#include "../../egress-proxy/netcheck.h"
#include "attrib.h"
#include "unit.h"

static struct sockaddr_storage
sa(const char *a, int port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, a, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, a, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
	}
	return ss;
}

TEST(test_cidr_parse)
{
	static const struct {
		const char	*in;
		int		 ok, family, bits, port;
	} t[] = {
		{ "10.0.0.0/8", 1, AF_INET, 8, 0 },
		{ "127.0.0.1", 1, AF_INET, 32, 0 },
		{ "127.0.0.1/32:8443", 1, AF_INET, 32, 8443 },
		{ "127.0.0.1:8443", 1, AF_INET, 32, 8443 },
		{ "127.0.0.0/8:1", 1, AF_INET, 8, 1 },
		{ "::1/128", 1, AF_INET6, 128, 0 },
		{ "::1", 1, AF_INET6, 128, 0 },
		{ "fe80::/10", 1, AF_INET6, 10, 0 },
		{ "[::1]/128:8443", 1, AF_INET6, 128, 8443 },
		{ "[::1]:8443", 1, AF_INET6, 128, 8443 },
		{ "[fd00::]/8", 1, AF_INET6, 8, 0 },
		{ "[::1]", 1, AF_INET6, 128, 0 },
		{ "127.0.0.1/32:0", 0, 0, 0, 0 },
		{ "127.0.0.1/32:65536", 0, 0, 0, 0 },
		{ "127.0.0.1/32:", 0, 0, 0, 0 },
		{ "127.0.0.1/33", 0, 0, 0, 0 },
		{ "127.0.0.1:8443/32", 0, 0, 0, 0 },
		{ "127.0.0.1/:80", 0, 0, 0, 0 },
		{ "[::1]/129:80", 0, 0, 0, 0 },
		{ "[::1]:x", 0, 0, 0, 0 },
		{ "[::1", 0, 0, 0, 0 },
		{ "[127.0.0.1]:80", 0, 0, 0, 0 },
		{ "::1:8443x", 0, 0, 0, 0 },
		{ "", 0, 0, 0, 0 },
		{ "host:80", 0, 0, 0, 0 },
	};
	struct cidr c;
	size_t i;
	int rc;

	for (i = 0; i < NELEM(t); i++) {
		rc = pconf_parse_cidr(t[i].in, &c);
		if ((rc == 0) != t[i].ok)
			fprintf(stderr, "  case '%s': rc %d\n", t[i].in, rc);
		CHECK_INT(rc == 0, t[i].ok);
		if (rc == 0 && t[i].ok) {
			CHECK_INT(c.family, t[i].family);
			CHECK_INT(c.bits, t[i].bits);
			CHECK_INT(c.port, t[i].port);
		}
	}
}

TEST(test_allow_port)
{
	struct cidr allow[2];
	struct sockaddr_storage a;

	CHECK_INT(pconf_parse_cidr("127.0.0.1/32:8443", &allow[0]), 0);
	CHECK_INT(pconf_parse_cidr("[::1]/128:9443", &allow[1]), 0);
	a = sa("127.0.0.1", 8443);
	CHECK(netcheck_addr((struct sockaddr *)&a, allow, 2) == NULL);
	/* allowing one loopback upstream no longer opens every port on it */
	a = sa("127.0.0.1", 22);
	CHECK_STR(netcheck_addr((struct sockaddr *)&a, allow, 2), "loopback");
	a = sa("127.0.0.2", 8443);
	CHECK_STR(netcheck_addr((struct sockaddr *)&a, allow, 2), "loopback");
	a = sa("::1", 9443);
	CHECK(netcheck_addr((struct sockaddr *)&a, allow, 2) == NULL);
	a = sa("::1", 8443);
	CHECK_STR(netcheck_addr((struct sockaddr *)&a, allow, 2), "loopback");
	/* without a port: every port, as before */
	CHECK_INT(pconf_parse_cidr("127.0.0.0/8", &allow[0]), 0);
	a = sa("127.0.0.9", 22);
	CHECK(netcheck_addr((struct sockaddr *)&a, allow, 1) == NULL);
}

TEST(test_sandbox_listener_is_own)
{
	struct cidr allow;
	struct sockaddr_storage l = sa("127.0.0.1", 3128), a;

	CHECK_INT(pconf_parse_cidr("127.0.0.0/8", &allow), 0);
	a = sa("127.0.0.1", 3128);
	CHECK(netcheck_addr((struct sockaddr *)&a, &allow, 1) == NULL);
	/* two sandboxes' listeners on the same address (own namespaces) */
	netcheck_add_self((struct sockaddr *)&l, sizeof(struct sockaddr_in));
	netcheck_add_self((struct sockaddr *)&l, sizeof(struct sockaddr_in));
	CHECK_STR(netcheck_addr((struct sockaddr *)&a, &allow, 1), "proxy-listener");
	netcheck_del_self((struct sockaddr *)&l, sizeof(struct sockaddr_in));
	CHECK_STR(netcheck_addr((struct sockaddr *)&a, &allow, 1), "proxy-listener");
	netcheck_del_self((struct sockaddr *)&l, sizeof(struct sockaddr_in));
	CHECK(netcheck_addr((struct sockaddr *)&a, &allow, 1) == NULL);
	/* a wildcard listener covers every address on its port */
	l = sa("0.0.0.0", 4000);
	netcheck_add_self((struct sockaddr *)&l, sizeof(struct sockaddr_in));
	a = sa("127.0.0.5", 4000);
	CHECK_STR(netcheck_addr((struct sockaddr *)&a, &allow, 1), "proxy-listener");
	a = sa("127.0.0.5", 4001);
	CHECK(netcheck_addr((struct sockaddr *)&a, &allow, 1) == NULL);
	netcheck_del_self((struct sockaddr *)&l, sizeof(struct sockaddr_in));
	a = sa("127.0.0.5", 4000);
	CHECK(netcheck_addr((struct sockaddr *)&a, &allow, 1) == NULL);
	/* deleting what was never added changes nothing */
	netcheck_del_self((struct sockaddr *)&l, sizeof(struct sockaddr_in));
}

int
main(void)
{
	RUN(test_cidr_parse);
	RUN(test_allow_port);
	RUN(test_sandbox_listener_is_own);
	return unit_done();
}
