/*
 * test_pktline.c: the receive-pack command list reader and report-status
 * writer (egress-proxy/pktline.c): lengths, truncation at every byte,
 * flush, capabilities after NUL, shallow and push-cert, thousands of
 * commands, the bounds, ref names, hostile bytes, and the report in and
 * out of side-band-64k.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/pktline.h"
#include "unit.h"

#define Z40 "0000000000000000000000000000000000000000"
#define A40 "1111111111111111111111111111111111111111"
#define B40 "2222222222222222222222222222222222222222"
#define A64 A40 "111111111111111111111111"
#define B64 B40 "222222222222222222222222"

static char body[1 << 20];
static size_t blen;

static void
reset(void)
{
	blen = 0;
}

/* Appends one pkt-line with payload s (n bytes). */
static void
pk(const char *s, size_t n)
{
	blen += (size_t)snprintf(body + blen, sizeof(body) - blen, "%04zx", n + 4);
	memcpy(body + blen, s, n);
	blen += n;
}

static void
pks(const char *s)
{
	pk(s, strlen(s));
}

static void
raw(const char *s)
{
	memcpy(body + blen, s, strlen(s));
	blen += strlen(s);
}

static int
feed_all(struct pktl *p, int eof)
{
	return pktl_feed(p, body, blen, eof);
}

static const char *
ref(const struct pktl *p, size_t i, char *out, size_t outlen)
{
	snprintf(out, outlen, "%.*s", (int)p->cmd[i].ref_l, body + p->cmd[i].ref_o);
	return out;
}

TEST(test_basic)
{
	struct pktl p;
	char r[256];
	static const char first[] = A40 " " B40 " refs/heads/main\0report-status side-band-64k agent=git/2.39\n";

	reset();
	pk(first, sizeof(first) - 1);
	pks(Z40 " " B40 " refs/heads/agent/new\n");
	pks(A40 " " Z40 " refs/tags/v1");	/* no LF: allowed */
	raw("0000");
	raw("PACK\0\0\0\2rest of the pack");
	pktl_init(&p);
	CHECK_INT(feed_all(&p, 0), PKTL_DONE);
	CHECK_INT(p.ncmd, 3);
	CHECK_STR(ref(&p, 0, r, sizeof(r)), "refs/heads/main");
	CHECK_STR(ref(&p, 1, r, sizeof(r)), "refs/heads/agent/new");
	CHECK_STR(ref(&p, 2, r, sizeof(r)), "refs/tags/v1");
	CHECK(!p.cmd[0].create && !p.cmd[0].del);
	CHECK(p.cmd[1].create && !p.cmd[1].del);
	CHECK(!p.cmd[2].create && p.cmd[2].del);
	CHECK(p.sideband && p.report && !p.probe);
	CHECK(memcmp(body + p.pos, "PACK", 4) == 0);	/* the pack starts right after */
	snprintf(r, sizeof(r), "%.*s", (int)p.caps_l, body + p.caps_o);
	CHECK_STR(r, "report-status side-band-64k agent=git/2.39");
	pktl_free(&p);
}

TEST(test_sha256_and_caps)
{
	struct pktl p;
	static const char first[] = A64 " " B64 " refs/heads/x\0report-status-v2 object-format=sha256";

	reset();
	pk(first, sizeof(first) - 1);
	raw("0000");
	pktl_init(&p);
	CHECK_INT(feed_all(&p, 1), PKTL_DONE);
	CHECK(p.report && !p.sideband);
	pktl_free(&p);
	/* side-band (without -64k) and a cap that merely starts like one do not count */
	reset();
	{
		static const char f2[] = A40 " " B40 " refs/heads/x\0side-band report-statusx";
		pk(f2, sizeof(f2) - 1);
	}
	raw("0000");
	pktl_init(&p);
	CHECK_INT(feed_all(&p, 1), PKTL_DONE);
	CHECK(!p.report && !p.sideband);
	pktl_free(&p);
	/* mixed id lengths are refused */
	reset();
	pks(A40 " " B64 " refs/heads/x");
	raw("0000");
	pktl_init(&p);
	CHECK_INT(feed_all(&p, 1), PKTL_ERR);
	pktl_free(&p);
}

TEST(test_probe)
{
	struct pktl p;

	reset();
	raw("0000");
	pktl_init(&p);
	CHECK_INT(feed_all(&p, 1), PKTL_DONE);
	CHECK(p.probe && p.ncmd == 0 && p.pos == 4);
	pktl_free(&p);
}

/* Every prefix of a valid list is MORE (or ERR at eof), never DONE early. */
TEST(test_truncation)
{
	struct pktl p;
	static const char first[] = A40 " " B40 " refs/heads/main\0report-status\n";
	size_t full, i;

	reset();
	pk(first, sizeof(first) - 1);
	pks(A40 " " B40 " refs/heads/b\n");
	raw("0000");
	full = blen;
	for (i = 0; i < full; i++) {
		pktl_init(&p);
		if (pktl_feed(&p, body, i, 0) != PKTL_MORE) {
			unit_cur_failed++;
			fprintf(stderr, "  prefix %zu not MORE\n", i);
		}
		pktl_free(&p);
		pktl_init(&p);
		if (pktl_feed(&p, body, i, 1) != PKTL_ERR || p.err[0] == '\0') {
			unit_cur_failed++;
			fprintf(stderr, "  prefix %zu at eof not ERR\n", i);
		}
		pktl_free(&p);
	}
	/* Incremental: fed one byte more each time, same result as at once. */
	pktl_init(&p);
	for (i = 0; i <= full; i++)
		if (pktl_feed(&p, body, i, 0) == PKTL_DONE)
			break;
	CHECK_INT(i, full);
	CHECK_INT(p.ncmd, 2);
	CHECK_INT(p.pos, full);
	pktl_free(&p);
}

static void
expect_err(const char *name, int eof, const char *want)
{
	struct pktl p;

	pktl_init(&p);
	if (feed_all(&p, eof) != PKTL_ERR || strstr(p.err, want) == NULL) {
		unit_cur_failed++;
		fprintf(stderr, "  %s: err \"%s\", wanted \"%s\"\n", name, p.err, want);
	}
	/* once refused, always refused */
	if (pktl_feed(&p, body, blen, eof) != PKTL_ERR) {
		unit_cur_failed++;
		fprintf(stderr, "  %s: second feed not ERR\n", name);
	}
	pktl_free(&p);
}

TEST(test_lengths)
{
	reset(); raw("00zz"); expect_err("non-hex length", 0, "not hex");
	reset(); raw("0001"); expect_err("delim packet", 0, "special");
	reset(); raw("0002"); expect_err("response-end", 0, "special");
	reset(); raw("0003"); expect_err("length 3", 0, "special");
	reset(); raw("0004"); expect_err("empty packet", 0, "special");
	reset(); raw("fff1"); expect_err("over 65520", 0, "over 65520");
	reset(); raw("ffff"); expect_err("ffff", 0, "over 65520");
	reset(); raw("-001"); expect_err("sign", 0, "not hex");
	reset(); raw(" 0a0"); expect_err("space", 0, "not hex");
	reset(); raw("00"); expect_err("half a length at eof", 1, "truncated");
	reset(); raw("0040abc"); expect_err("short payload at eof", 1, "truncated");
	reset(); expect_err("empty body at eof", 1, "without its flush");
	/* Upper-case hex lengths are git's too. */
	{
		struct pktl p;
		static const char c[] = A40 " " B40 " refs/heads/x\n";
		reset();
		blen = (size_t)snprintf(body, sizeof(body), "%04zX", sizeof(c) - 1 + 4);
		raw(c);
		raw("0000");
		pktl_init(&p);
		CHECK_INT(feed_all(&p, 1), PKTL_DONE);
		pktl_free(&p);
	}
}

TEST(test_commands)
{
	reset(); pks("garbage"); raw("0000"); expect_err("garbage", 1, "malformed push command");
	reset(); pks(A40 " " B40); raw("0000"); expect_err("no ref", 1, "malformed");
	reset(); pks(A40 " " B40 " "); raw("0000"); expect_err("empty ref", 1, "bad ref");
	reset(); pks(A40 "  " B40 " refs/heads/x"); raw("0000"); expect_err("two spaces", 1, "malformed");
	reset(); pks("g111111111111111111111111111111111111111 " B40 " refs/heads/x"); raw("0000");
	expect_err("non-hex id", 1, "malformed");
	reset(); pks(A40 "1 " B40 " refs/heads/x"); raw("0000"); expect_err("41-digit id", 1, "malformed");
	reset(); pks(Z40 " " Z40 " refs/heads/x"); raw("0000"); expect_err("zero to zero", 1, "both ids zero");
	{
		static const char c[] = A40 " " B40 " refs/heads/x\0caps";
		static const char c2[] = A40 " " B40 " refs/heads/y\0more";
		reset(); pk(c, sizeof(c) - 1); pk(c2, sizeof(c2) - 1); raw("0000");
		expect_err("caps on a second command", 1, "first command only");
		static const char c3[] = A40 " " B40 " refs/heads/x\0caps\0x";
		reset(); pk(c3, sizeof(c3) - 1); raw("0000");
		expect_err("NUL in caps", 1, "NUL byte");
	}
	reset(); pks("push-cert\0report-status\n"); raw("0000"); expect_err("signed push", 1, "push-cert");
	reset(); pks("shallow " A40 "\n"); pks("shallow xyz"); raw("0000");
	expect_err("bad shallow", 1, "malformed shallow");
	{
		struct pktl p;
		reset(); pks("shallow " A40 "\n"); pks(A40 " " B40 " refs/heads/x\n"); raw("0000");
		pktl_init(&p);
		CHECK_INT(feed_all(&p, 1), PKTL_DONE);
		CHECK_INT(p.ncmd, 1);
		pktl_free(&p);
	}
}

TEST(test_refs)
{
	static const struct { const char *r; int ok; } t[] = {
		{ "refs/heads/main", 1 }, { "refs/heads/agent/a-b_c.d", 1 },
		{ "refs/tags/v1.0", 1 }, { "refs/heads/\xc3\xa9", 1 },
		{ "refs/", 0 }, { "refs", 0 }, { "heads/main", 0 }, { "HEAD", 0 },
		{ "refs/heads/", 0 }, { "refs/heads//x", 0 }, { "refs/heads/x/", 0 },
		{ "refs/heads/.x", 0 }, { "refs/heads/x.", 0 }, { "refs/heads/a..b", 0 },
		{ "refs/heads/x.lock", 0 }, { "refs/heads/x.lock/y", 0 },
		{ "refs/heads/a b", 0 }, { "refs/heads/a~1", 0 }, { "refs/heads/a^", 0 },
		{ "refs/heads/a:b", 0 }, { "refs/heads/a?", 0 }, { "refs/heads/a*", 0 },
		{ "refs/heads/[a", 0 }, { "refs/heads/a\\b", 0 }, { "refs/heads/a@{1}", 0 },
		{ "refs/heads/a\tb", 0 }, { "refs/heads/a\x7f", 0 }, { "refs/heads/a@b", 1 },
		{ "Refs/heads/main", 0 }, { "refs/heads/x.lockx", 1 },
	};
	size_t i;
	char big[PKTL_MAX_REF + 2];

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (pktl_ref_ok(t[i].r, strlen(t[i].r)) != t[i].ok) {
			unit_cur_failed++;
			fprintf(stderr, "  ref_ok(\"%s\") != %d\n", t[i].r, t[i].ok);
		}
	CHECK(pktl_ref_ok("refs/heads/a\0b", 14) == 0);
	memcpy(big, "refs/heads/", 11);
	memset(big + 11, 'x', sizeof(big) - 11);
	CHECK(pktl_ref_ok(big, PKTL_MAX_REF) == 1);
	CHECK(pktl_ref_ok(big, PKTL_MAX_REF + 1) == 0);
}

TEST(test_many)
{
	struct pktl p;
	char line[200];
	size_t i;

	/* 500 commands fit in 64 KiB */
	reset();
	for (i = 0; i < 500; i++) {
		snprintf(line, sizeof(line), A40 " " B40 " refs/heads/b%zu", i);
		pks(line);
	}
	raw("0000");
	pktl_init(&p);
	CHECK_INT(feed_all(&p, 1), PKTL_DONE);
	CHECK_INT(p.ncmd, 500);
	pktl_free(&p);
	/* more than 64 KiB of commands: refused, before the flush arrives */
	reset();
	for (i = 0; i < 2000; i++) {
		snprintf(line, sizeof(line), A40 " " B40 " refs/heads/b%zu", i);
		pks(line);
	}
	expect_err("over 64 KiB", 0, "longer than 64 KiB");
	/* a 65520-byte packet after a command crosses the 64 KiB bound too */
	reset();
	pks(A40 " " B40 " refs/heads/x");
	raw("fff0");
	memset(body + blen, 'a', 65520 - 4);
	blen += 65520 - 4;
	expect_err("one huge packet", 0, "longer than 64 KiB");
	/* the 64 KiB bound holds while waiting for more (not only at eof) */
	reset();
	for (i = 0; i < 1100; i++) {
		snprintf(line, sizeof(line), A40 " " B40 " refs/heads/b%zu", i);
		pks(line);
	}
	pktl_init(&p);
	CHECK_INT(pktl_feed(&p, body, blen, 0), PKTL_ERR);
	pktl_free(&p);
}

TEST(test_max_cmds)
{
	struct pktl p;

	/* Commands cannot be shorter than 91+4 bytes: 10000 of them exceed 64 KiB, which bites first. */
	reset();
	while (blen < PKTL_MAX_BYTES)
		pks(A40 " " B40 " refs/x/y");
	pktl_init(&p);
	CHECK_INT(pktl_feed(&p, body, blen, 0), PKTL_ERR);
	CHECK(p.ncmd < PKTL_MAX_CMDS);
	pktl_free(&p);
}

TEST(test_report)
{
	struct pktl p;
	struct buf out;
	static const char first[] = A40 " " B40 " refs/heads/main\0report-status\n";
	const char *why[2] = { "denied by policy: protected ref", NULL };
	static const char want[] = "000eunpack ok\n"
	    "0037ng refs/heads/main denied by policy: protected ref\n"
	    "001cng refs/heads/b refused\n" "0000";

	reset();
	pk(first, sizeof(first) - 1);
	pks(A40 " " B40 " refs/heads/b\n");
	raw("0000");
	pktl_init(&p);
	CHECK_INT(feed_all(&p, 1), PKTL_DONE);
	buf_init(&out, 1 << 20);
	CHECK_INT(pktl_report(&p, body, why, &out), 0);
	CHECK_INT(out.len, sizeof(want) - 1);
	CHECK(out.len == sizeof(want) - 1 && memcmp(out.p, want, out.len) == 0);
	/* side-band-64k: the same bytes inside one band-1 packet, then a flush */
	p.sideband = 1;
	buf_reset(&out);
	CHECK_INT(pktl_report(&p, body, why, &out), 0);
	CHECK_INT(out.len, 5 + sizeof(want) - 1 + 4);
	{
		char hdr[6];
		snprintf(hdr, sizeof(hdr), "%04zx", 5 + sizeof(want) - 1);
		CHECK(memcmp(out.p, hdr, 4) == 0 && out.p[4] == 1);
		CHECK(memcmp(out.p + 5, want, sizeof(want) - 1) == 0);
		CHECK(memcmp(out.p + out.len - 4, "0000", 4) == 0);
	}
	/* a reason with LF is refused (it would break the framing) */
	why[1] = "two\nlines";
	buf_reset(&out);
	CHECK_INT(pktl_report(&p, body, why, &out), -1);
	buf_free(&out);
	pktl_free(&p);
}

TEST(test_report_large)
{
	struct pktl p;
	struct buf out;
	const char **why;
	char line[200];
	size_t i, o, inner = 0;

	reset();
	for (i = 0; i < 600; i++) {
		snprintf(line, sizeof(line), A40 " " B40 " refs/heads/branch-%zu", i);
		pks(line);
	}
	raw("0000");
	pktl_init(&p);
	CHECK_INT(feed_all(&p, 1), PKTL_DONE);
	p.sideband = 1;
	why = calloc(p.ncmd, sizeof(*why));
	for (i = 0; i < p.ncmd; i++)
		why[i] = "denied by policy: ref not in push: a long reason to fill the packets up, "
		    "longer than any real one, so that the report needs several band-1 packets";
	buf_init(&out, 1 << 22);
	CHECK_INT(pktl_report(&p, body, why, &out), 0);
	/* several band-1 packets, each at most 65520 bytes, then a flush */
	for (o = 0, i = 0; o + 4 <= out.len; i++) {
		unsigned l;
		char h[5];
		memcpy(h, out.p + o, 4);
		h[4] = '\0';
		l = (unsigned)strtoul(h, NULL, 16);
		if (l == 0)
			break;
		CHECK(l <= PKTL_MAX_PKT && out.p[o + 4] == 1);
		inner += l - 5;
		o += l;
	}
	CHECK(i >= 2);
	CHECK_INT(o + 4, out.len);
	CHECK(inner > 65520);
	buf_free(&out);
	free(why);
	pktl_free(&p);
}

/* Random bytes and mutated valid lists: never a crash, DONE only with pos within the input. */
TEST(test_hostile)
{
	struct pktl p;
	unsigned seed = 12345;
	size_t i, j, n;
	int rc;

	for (i = 0; i < 20000; i++) {
		reset();
		pks(A40 " " B40 " refs/heads/main\0report-status side-band-64k");
		pks(Z40 " " B40 " refs/heads/x");
		raw("0000");
		n = blen;
		for (j = 0; j < 1 + i % 4; j++) {
			seed = seed * 1103515245 + 12345;
			body[(seed >> 8) % n] = (char)(seed >> 20);
		}
		seed = seed * 1103515245 + 12345;
		n = (seed >> 8) % (n + 1);
		pktl_init(&p);
		rc = pktl_feed(&p, body, n, (int)(i & 1));
		CHECK(rc == PKTL_DONE || rc == PKTL_MORE || rc == PKTL_ERR);
		if (rc == PKTL_DONE)
			CHECK(p.pos <= n);
		for (j = 0; rc == PKTL_DONE && j < p.ncmd; j++)
			CHECK(p.cmd[j].ref_o + p.cmd[j].ref_l <= n &&
			    pktl_ref_ok(body + p.cmd[j].ref_o, p.cmd[j].ref_l));
		pktl_free(&p);
	}
}

int
main(void)
{
	RUN(test_basic);
	RUN(test_sha256_and_caps);
	RUN(test_probe);
	RUN(test_truncation);
	RUN(test_lengths);
	RUN(test_commands);
	RUN(test_refs);
	RUN(test_many);
	RUN(test_max_cmds);
	RUN(test_report);
	RUN(test_report_large);
	RUN(test_hostile);
	return unit_done();
}
