/*
 * test_orch_jsonu.c: UTF-8 validation/cleaning, the constant-time compare,
 * and the JSON text read beside cJSON's tree (NULs, member texts).
 */
#include <stdlib.h>
#include <string.h>

#include "lib/jsonu.h"
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
	CHECK_STR(c, "a\xe2\x90\x80" "b");	/* NUL shown as U+2400 */
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

/* Members and items with their own text, duplicates and all. */
TEST(test_iter)
{
	const char *txt = "\xef\xbb\xbf {\"a\" : [1, {\"x\":\"}\"}] ,\"b\":\"q\\\"\",\"a\":-2e3 }";
	struct jsonu_iter it;
	cJSON *root = cJSON_Parse(txt), *c;
	const char *nm, *v;
	size_t nl, vl;
	static const char *const names[] = { "\"a\"", "\"b\"", "\"a\"" };
	static const char *const vals[] = { "[1, {\"x\":\"}\"}]", "\"q\\\"\"", "-2e3" };
	int i = 0, r;

	CHECK(root != NULL);
	CHECK_INT(jsonu_iter_init(&it, txt, strlen(txt), root), 0);
	while ((r = jsonu_iter_next(&it, &c, &nm, &nl, &v, &vl)) == 1 && i < 3) {
		CHECK(nl == strlen(names[i]) && memcmp(nm, names[i], nl) == 0);
		CHECK(vl == strlen(vals[i]) && memcmp(v, vals[i], vl) == 0);
		i++;
	}
	CHECK_INT(r, 0);
	CHECK_INT(i, 3);
	/* a tree that is not this text's */
	CHECK_INT(jsonu_iter_init(&it, "[1]", 3, root), -1);
	cJSON_Delete(root);
}

TEST(test_nul)
{
	static const struct { const char *s; int nul; } t[] = {
		{ "\"a\"", 0 },
		{ "\"a\\u0000\"", 1 },
		{ "{\"k\\u0000\":1}", 1 },
		{ "\"a\\\\u0000\"", 0 },		/* an escaped backslash */
		{ "\"a\\\\\\u0000\"", 1 },
		{ "\"\\u00000\"", 1 },
		{ "\"\\u0001\"", 0 },
		{ "\"\\u000\"", 0 },
		{ "[\"\\\"\\u0000\"]", 1 },
		{ "\\u0000", 0 },			/* not in a string */
	};
	char buf[64];
	cJSON *j;
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		CHECK_INT(jsonu_has_nul(t[i].s, strlen(t[i].s)), t[i].nul);
		snprintf(buf, sizeof(buf), "%s", t[i].s);
		CHECK_INT(jsonu_nul_to_symbol(buf, strlen(buf)), t[i].nul);
		CHECK_INT(jsonu_has_nul(buf, strlen(buf)), 0);
	}
	snprintf(buf, sizeof(buf), "{\"o\":\"before\\u0000after\"}");
	jsonu_nul_to_symbol(buf, strlen(buf));
	j = cJSON_Parse(buf);
	CHECK_STR(cJSON_GetObjectItem(j, "o")->valuestring, "before\xe2\x90\x80" "after");
	cJSON_Delete(j);
}

/* Strings holding a NUL become Raws of their text, at any depth. */
TEST(test_mark_nul)
{
	const char *txt = "{\"a\":\"x\\u0000y\",\"b\":[\"ok\",\"\\u0000\",{\"c\":\"z\\u0000\"}],"
	    "\"d\\u0000e\":1,\"f\":\"fine\",\"g\":{\"h\":\"no nul\"}}";
	cJSON *j = cJSON_Parse(txt), *b;
	char *out;

	CHECK_INT(jsonu_mark_nul(txt, strlen(txt), j), 4);
	CHECK(cJSON_IsRaw(cJSON_GetObjectItem(j, "a")));
	CHECK_STR(cJSON_GetObjectItem(j, "a")->valuestring, "\"x\\u0000y\"");
	b = cJSON_GetObjectItem(j, "b");
	CHECK(cJSON_IsString(cJSON_GetArrayItem(b, 0)));
	CHECK(cJSON_IsRaw(cJSON_GetArrayItem(b, 1)));
	CHECK(cJSON_IsRaw(cJSON_GetObjectItem(cJSON_GetArrayItem(b, 2), "c")));
	CHECK(cJSON_IsRaw(cJSON_GetObjectItem(j, "d")));	/* its name held it */
	CHECK(cJSON_IsString(cJSON_GetObjectItem(j, "f")));
	CHECK(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "g"), "h")));
	out = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "b"));
	CHECK_STR(out, "[\"ok\",\"\\u0000\",{\"c\":\"z\\u0000\"}]");
	free(out);
	cJSON_Delete(j);
	j = cJSON_Parse("{\"a\":\"b\"}");
	CHECK_INT(jsonu_mark_nul("{\"a\":\"b\"}", 9, j), 0);
	cJSON_Delete(j);
}

int
main(void)
{
	RUN(test_utf8_valid);
	RUN(test_utf8_clean);
	RUN(test_ct_equal);
	RUN(test_iter);
	RUN(test_nul);
	RUN(test_mark_nul);
	return unit_done();
}
