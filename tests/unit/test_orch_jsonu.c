/* test_orch_jsonu.c: UTF-8 validation/cleaning and the constant-time compare. */
#include <stdlib.h>
#include <string.h>

#include "jsonu.h"
#include "unit.h"

TEST(test_utf8_valid)
{
	static const struct { const char *s; size_t n; int ok; } t[] = {
		{ "", 0, 1 },
		{ "hello", 5, 1 },
		{ "caf\xc3\xa9", 5, 1 },
		{ "\xe2\x82\xac", 3, 1 },
		{ "\xf0\x9f\x98\x80", 4, 1 },
		{ "\xc3", 1, 0 },			/* truncated */
		{ "\xc0\xaf", 2, 0 },			/* overlong */
		{ "\xe0\x80\xaf", 3, 0 },		/* overlong */
		{ "\xed\xa0\x80", 3, 0 },		/* surrogate */
		{ "\xf4\x90\x80\x80", 4, 0 },		/* > U+10FFFF */
		{ "\xff", 1, 0 },
		{ "a\x80z", 3, 0 },
	};
	size_t i;

	for (i = 0; i < NELEM(t); i++)
		CHECK_INT(jsonu_utf8_valid(t[i].s, t[i].n), t[i].ok);
}

TEST(test_utf8_clean)
{
	char *c;

	c = jsonu_utf8_clean("a\xffz", 3);
	CHECK_STR(c, "a\xef\xbf\xbdz");
	free(c);
	c = jsonu_utf8_clean("a\0b", 3);
	CHECK_STR(c, "ab");
	free(c);
	c = jsonu_utf8_clean("caf\xc3\xa9", 5);
	CHECK_STR(c, "caf\xc3\xa9");
	free(c);
	c = jsonu_utf8_clean("\xc3", 1);
	CHECK_STR(c, "\xef\xbf\xbd");
	free(c);
	c = jsonu_utf8_clean("", 0);
	CHECK_STR(c, "");
	free(c);
}

TEST(test_ct_equal)
{
	CHECK(jsonu_ct_equal("secretkey", 9, "secretkey", 9));
	CHECK(!jsonu_ct_equal("secretke", 8, "secretkey", 9));	/* prefix */
	CHECK(!jsonu_ct_equal("secretkeyy", 10, "secretkey", 9));
	CHECK(!jsonu_ct_equal("Secretkey", 9, "secretkey", 9));	/* case */
	CHECK(!jsonu_ct_equal("", 0, "secretkey", 9));
	CHECK(!jsonu_ct_equal("", 0, "", 0));			/* empty key never */
}

int
main(void)
{
	RUN(test_utf8_valid);
	RUN(test_utf8_clean);
	RUN(test_ct_equal);
	return unit_done();
}
