/* test_proxy_canon.c: CONNECT target canonicalisation (docs/threat-model.md). */
#include <string.h>

#include "../../egress-proxy/canon.h"
#include "attrib.h"
#include "unit.h"

static const struct {
	const char *in;
	const char *want;	/* canonical host:port, NULL: refused */
} cases[] = {
	/* names: case, trailing dot */
	{ "github.com:443", "github.com:443" },
	{ "GitHub.COM:443", "github.com:443" },
	{ "github.com.:443", "github.com:443" },
	{ "GITHUB.COM.:443", "github.com:443" },
	{ "github.com..:443", NULL },
	{ ".github.com:443", NULL },
	{ "a..b:443", NULL },
	{ "-api.github.com:443", NULL },
	{ "api-.github.com:443", NULL },
	{ "api.-github.com:443", NULL },
	{ "api.github-:443", NULL },
	{ "a-b.github.com:443", "a-b.github.com:443" },
	{ "api.github.com:8443", "api.github.com:8443" },
	{ "my_host.internal:80", "my_host.internal:80" },
	/* IDN */
	{ "b\xc3\xbc" "cher.example:443", "xn--bcher-kva.example:443" },
	{ "B\xc3\x9c" "CHER.example:443", "xn--bcher-kva.example:443" },
	{ "xn--bcher-kva.example:443", "xn--bcher-kva.example:443" },
	/* fullwidth digits map to an IP address */
	{ "\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1:443", "127.0.0.1:443" },
	{ "\xff\xfe:443", NULL },
	/* IPv4 in every inet_aton spelling */
	{ "127.0.0.1:443", "127.0.0.1:443" },
	{ "0x7f.1:443", "127.0.0.1:443" },
	{ "0x7F.0.0.1:443", "127.0.0.1:443" },
	{ "2130706433:443", "127.0.0.1:443" },
	{ "0x7f000001:443", "127.0.0.1:443" },
	{ "017700000001:443", "127.0.0.1:443" },
	{ "0177.0.0.1:443", "127.0.0.1:443" },
	{ "0177.0.0.01:443", "127.0.0.1:443" },
	{ "127.1:443", "127.0.0.1:443" },
	{ "127.0.1:443", "127.0.0.1:443" },
	{ "169.254.169.254:80", "169.254.169.254:80" },
	{ "0xa9.0xfe.0xa9.0xfe:80", "169.254.169.254:80" },
	{ "2852039166:80", "169.254.169.254:80" },
	{ "127.0.0.1.:443", "127.0.0.1:443" },
	{ "0:443", "0.0.0.0:443" },
	{ "256.0.0.1:443", NULL },
	{ "1.2.3.4.5:443", NULL },
	{ "4294967296:443", NULL },
	{ "08.0.0.1:443", NULL },
	{ "0x:443", NULL },
	{ "1.2.3.0x1g:443", "1.2.3.0x1g:443" },	/* not a number: a name */
	{ "example.123:443", NULL },
	{ "123.example:443", "123.example:443" },
	/* IPv6 */
	{ "[::1]:443", "[::1]:443" },
	{ "[0:0:0:0:0:0:0:1]:443", "[::1]:443" },
	{ "[::FFFF:127.0.0.1]:443", "[::ffff:127.0.0.1]:443" },
	{ "[2001:DB8::0001]:443", "[2001:db8::1]:443" },
	{ "[fe80::1%eth0]:443", NULL },
	{ "[::1:443", NULL },
	{ "::1:443", NULL },
	{ "[]:443", NULL },
	{ "[zz::1]:443", NULL },
	/* ports */
	{ "github.com", NULL },
	{ "github.com:", NULL },
	{ "github.com:0", NULL },
	{ "github.com:65536", NULL },
	{ "github.com:99999", NULL },
	{ "github.com:+443", NULL },
	{ "github.com:-1", NULL },
	{ "github.com:443a", NULL },
	{ "github.com:0443", "github.com:443" },
	{ "github.com:1", "github.com:1" },
	{ "github.com:65535", "github.com:65535" },
	/* junk */
	{ ":443", NULL },
	{ "user@github.com:443", NULL },
	{ "github.com/x:443", NULL },
	{ "git hub.com:443", NULL },
	{ "github.com\r\n:443", NULL },
	{ "github.com%00:443", NULL },
	{ "github.com\\@evil.com:443", NULL },
	{ "-:443", NULL },
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com:443", NULL },
};

TEST(test_canon_table)
{
	struct target t;
	char err[128];
	size_t i;
	int rc;

	for (i = 0; i < NELEM(cases); i++) {
		rc = canon_authority(cases[i].in, strlen(cases[i].in), &t, err, sizeof(err));
		if (cases[i].want == NULL) {
			if (rc != -1)
				fprintf(stderr, "  case %zu (%s) accepted as %s\n", i,
				    cases[i].in, t.hostport);
			CHECK(rc == -1);
		} else {
			if (rc != 0)
				fprintf(stderr, "  case %zu (%s): %s\n", i, cases[i].in, err);
			CHECK(rc == 0);
			if (rc == 0)
				CHECK_STR(t.hostport, cases[i].want);
		}
	}
}

TEST(test_canon_embedded_nul)
{
	struct target t;
	char err[128];

	CHECK(canon_authority("github.com\0.evil:443", 20, &t, err, sizeof(err)) == -1);
}

TEST(test_canon_kinds_and_hosthdr)
{
	struct target t;
	char err[128];

	CHECK(canon_authority("GitHub.com.:443", 15, &t, err, sizeof(err)) == 0);
	CHECK_INT(t.kind, CANON_NAME);
	CHECK_STR(t.host, "github.com");
	CHECK_STR(t.hosthdr, "github.com");
	CHECK(canon_authority("0x7f.1:8443", 11, &t, err, sizeof(err)) == 0);
	CHECK_INT(t.kind, CANON_IPV4);
	CHECK_STR(t.hosthdr, "127.0.0.1:8443");
	CHECK(canon_authority("[::1]:443", 9, &t, err, sizeof(err)) == 0);
	CHECK_INT(t.kind, CANON_IPV6);
	CHECK_STR(t.host, "::1");
	CHECK_STR(t.hosthdr, "[::1]");
	CHECK(canon_host("Example.ORG", 11, 80, &t, err, sizeof(err)) == 0);
	CHECK_STR(t.hostport, "example.org:80");
}

TEST(test_canon_ipv4_parser)
{
	uint32_t v;

	CHECK(canon_ipv4("1", 1, &v) == 0 && v == 1);
	CHECK(canon_ipv4("1.2", 3, &v) == 0 && v == 0x01000002);
	CHECK(canon_ipv4("1.2.3", 5, &v) == 0 && v == 0x01020003);
	CHECK(canon_ipv4("1.16777216", 10, &v) == -1);
	CHECK(canon_ipv4("1.2.65536", 9, &v) == -1);
	CHECK(canon_ipv4("", 0, &v) == -1);
	CHECK(canon_ipv4("1.", 2, &v) == -1);
}

int
main(void)
{
	RUN(test_canon_table);
	RUN(test_canon_embedded_nul);
	RUN(test_canon_kinds_and_hosthdr);
	RUN(test_canon_ipv4_parser);
	return unit_done();
}
