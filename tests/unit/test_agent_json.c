/* test_agent_json.c: the agent's strict JSON reader and sanitising writer. */
#include <stdlib.h>
#include <string.h>

#include "../../agent/json.h"
#include "unit.h"

struct pcase {
	const char	*in;
	size_t		 len;	/* 0: strlen */
	int		 ok;
};

#define S(x) x, sizeof(x) - 1

static const struct pcase parse_cases[] = {
	/* valid */
	{ S("{}"), 1 }, { S("[]"), 1 }, { S(" {\"a\" : [1, 2.5, -3e2, true, false, null]} "), 1 },
	{ S("\"\\u00e9\\ud83d\\ude00\\n\\t\\\"\\\\\\/\""), 1 }, { S("0"), 1 }, { S("-0.0e+1"), 1 },
	{ S("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""), 1 }, { S("{\"\":1}"), 1 },
	{ S("\"\\u0000\""), 1 }, { S("1E400"), 0 },
	/* invalid grammar */
	{ S(""), 0 }, { S(" "), 0 }, { S("{"), 0 }, { S("}"), 0 }, { S("[1,]"), 0 },
	{ S("{\"a\":1,}"), 0 }, { S("{\"a\" 1}"), 0 }, { S("{a:1}"), 0 }, { S("[1 2]"), 0 },
	{ S("01"), 0 }, { S("1."), 0 }, { S(".5"), 0 }, { S("+1"), 0 }, { S("1e"), 0 },
	{ S("-"), 0 }, { S("0x10"), 0 }, { S("NaN"), 0 }, { S("Infinity"), 0 },
	{ S("tru"), 0 }, { S("nul"), 0 }, { S("truex"), 0 }, { S("{} {}"), 0 },
	{ S("'a'"), 0 }, { S("\"a"), 0 }, { S("\"\\x\""), 0 }, { S("\"\\u12\""), 0 },
	{ S("\"\\u12g4\""), 0 },
	/* strings: control characters, surrogates, UTF-8 */
	{ S("\"a\nb\""), 0 }, { S("\"\x01\""), 0 }, { S("\"\\ud83d\""), 0 },
	{ S("\"\\ude00\""), 0 }, { S("\"\\ud83d\\u0041\""), 0 },
	{ S("\"\xff\""), 0 }, { S("\"\xc0\xaf\""), 0 }, { S("\"\xed\xa0\x80\""), 0 },
	{ S("\"\xe2\x82\""), 0 }, { S("\"\xf4\x90\x80\x80\""), 0 }, { S("\"\xe0\x80\xaf\""), 0 },
	{ S("\"\x80\""), 0 },
	/* NUL inside the document */
	{ "{\"a\":1}\0", 8, 0 }, { "\"a\0b\"", 5, 0 },
	/* duplicate keys */
	{ S("{\"a\":1,\"a\":2}"), 0 }, { S("{\"a\":1,\"b\":{\"a\":2}}"), 1 },
	{ S("{\"a\\u0000\":1,\"a\":2}"), 1 },
};

TEST(test_parse_table)
{
	size_t i;
	char err[128];
	struct json *v;

	for (i = 0; i < NELEM(parse_cases); i++) {
		const struct pcase *c = &parse_cases[i];
		v = json_parse(c->in, c->len, err, sizeof(err));
		if ((v != NULL) != c->ok)
			fprintf(stderr, "  case %zu (%.*s): got %s (%s)\n", i,
			    (int)c->len, c->in, v ? "ok" : "error", err);
		CHECK((v != NULL) == c->ok);
		if (v == NULL)
			CHECK(err[0] != '\0');
		json_free(v);
	}
}

TEST(test_values)
{
	const char *in = "{\"s\":\"a\\u0000b\\u00e9\",\"i\":-42,\"big\":9223372036854775808,"
	    "\"f\":1.5,\"t\":true,\"n\":null,\"arr\":[1,[2,[3]]]}";
	struct json *v = json_parse(in, strlen(in), NULL, 0);
	const struct json *a;
	const char *s;
	size_t len;
	long long i;
	int b;

	CHECK(v != NULL);
	if (v == NULL)
		return;
	CHECK_INT(json_get_str(v, "s", &s, &len), 0);
	CHECK_INT(len, 5);
	CHECK(memcmp(s, "a\0b\xc3\xa9", 5) == 0);
	CHECK_INT(json_get_int(v, "i", &i), 0);
	CHECK_INT(i, -42);
	CHECK_INT(json_get_int(v, "big", &i), -1);	/* does not fit */
	CHECK_INT(json_get_int(v, "f", &i), -1);
	json_free(v);
	in = "{\"e\":1e3,\"d\":2000.0,\"h\":1e300}";
	v = json_parse(in, strlen(in), NULL, 0);
	CHECK(v != NULL);
	if (v == NULL)
		return;
	CHECK_INT(json_get_int(v, "e", &i), 0);
	CHECK_INT(i, 1000);
	CHECK_INT(json_get_int(v, "d", &i), 0);
	CHECK_INT(i, 2000);
	CHECK_INT(json_get_int(v, "h", &i), -1);
	json_free(v);
	in = "{\"s\":\"a\\u0000b\\u00e9\",\"i\":-42,\"n\":null,\"t\":true,\"arr\":[1,[2,[3]]]}";
	v = json_parse(in, strlen(in), NULL, 0);
	CHECK(v != NULL);
	if (v == NULL)
		return;
	CHECK_INT(json_get_int(v, "missing", &i), 1);
	CHECK_INT(json_get_int(v, "n", &i), 1);
	CHECK_INT(json_get_bool(v, "t", &b), 0);
	CHECK(b == 1);
	CHECK_INT(json_get_str(v, "i", &s, &len), -1);
	a = json_get(v, "arr");
	CHECK(a != NULL && a->type == JSON_ARR && a->n == 2);
	CHECK(json_get(a, "x") == NULL);
	json_free(v);
}

TEST(test_depth_limit)
{
	char buf[4 * JSON_MAX_DEPTH];
	size_t i, n;
	struct json *v;

	/* exactly at the limit parses; one more does not */
	for (n = JSON_MAX_DEPTH; n <= JSON_MAX_DEPTH + 1; n++) {
		for (i = 0; i < n + 1; i++)
			buf[i] = '[';
		for (i = 0; i < n + 1; i++)
			buf[n + 1 + i] = ']';
		v = json_parse(buf, 2 * (n + 1), NULL, 0);
		CHECK((v != NULL) == (n + 1 <= JSON_MAX_DEPTH + 1));
		json_free(v);
	}
	/* a deep hostile input fails quickly without recursion blow-up */
	{
		size_t big = 1000000;
		char *p = malloc(big);
		memset(p, '[', big);
		v = json_parse(p, big, NULL, 0);
		CHECK(v == NULL);
		memset(p, '{', big);
		v = json_parse(p, big, NULL, 0);
		CHECK(v == NULL);
		free(p);
	}
}

TEST(test_many_members)
{
	/* many distinct keys (duplicate check is n log n) */
	struct buf b;
	struct json *v;
	int i;

	buf_init(&b, 8 * 1024 * 1024);
	CHECK(buf_add(&b, "{", 1) == 0);
	for (i = 0; i < 60000; i++)
		CHECK(buf_addf(&b, "%s\"k%d\":%d", i ? "," : "", i, i) == 0);
	CHECK(buf_add(&b, "}", 1) == 0);
	v = json_parse(b.p, b.len, NULL, 0);
	CHECK(v != NULL && v->n == 60000);
	json_free(v);
	buf_free(&b);
}

struct wcase {
	const char	*in;
	size_t		 len;
	const char	*out;
};

static const struct wcase write_cases[] = {
	{ S("plain"), "\"plain\"" },
	{ S("q\"b\\"), "\"q\\\"b\\\\\"" },
	{ S("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"" },
	{ "\0\x01\x1f", 3, "\"\\u0000\\u0001\\u001f\"" },
	{ S("\xc3\xa9"), "\"\xc3\xa9\"" },
	{ S("\xff" "a"), "\"\xef\xbf\xbd" "a\"" },
	{ S("\xe2\x82"), "\"\xef\xbf\xbd\xef\xbf\xbd\"" },
	{ S("\xed\xa0\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"" },
	{ S("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"" },
	{ S("\x7f"), "\"\x7f\"" },
};

TEST(test_write_table)
{
	struct buf b;
	size_t i;

	for (i = 0; i < NELEM(write_cases); i++) {
		buf_init(&b, 1024);
		CHECK(json_put_str(&b, write_cases[i].in, write_cases[i].len) == 0);
		CHECK_STR(b.p, write_cases[i].out);
		/* whatever we write must read back */
		{
			struct json *v = json_parse(b.p, b.len, NULL, 0);
			CHECK(v != NULL);
			json_free(v);
		}
		buf_free(&b);
	}
}

TEST(test_writer)
{
	struct buf b;
	struct jw w;

	buf_init(&b, 1024);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "a"); jw_int(&w, -1);
	jw_key(&w, "b"); jw_arr(&w); jw_bool(&w, 1); jw_null(&w); jw_cstr(&w, "x");
	jw_arr_end(&w);
	jw_key(&w, "c"); jw_obj(&w); jw_obj_end(&w);
	jw_obj_end(&w);
	CHECK(jw_finish(&w) == 0);
	CHECK_STR(b.p, "{\"a\":-1,\"b\":[true,null,\"x\"],\"c\":{}}");
	buf_free(&b);

	/* overflow of the buffer max is reported, not truncated silently */
	buf_init(&b, 8);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "long key"); jw_int(&w, 1);
	jw_obj_end(&w);
	CHECK(jw_finish(&w) == -1);
	buf_free(&b);

	/* unbalanced */
	buf_init(&b, 64);
	jw_init(&w, &b);
	jw_obj(&w);
	CHECK(jw_finish(&w) == -1);
	buf_free(&b);
}

TEST(test_utf8_helpers)
{
	CHECK(json_utf8_valid(S("abc\xc3\xa9")));
	CHECK(!json_utf8_valid(S("abc\xc3")));
	CHECK_INT(json_utf8_complete(S("ab\xc3\xa9")), 4);
	CHECK_INT(json_utf8_complete(S("ab\xc3")), 2);
	CHECK_INT(json_utf8_complete(S("ab\xf0\x9f\x98")), 2);
	CHECK_INT(json_utf8_complete(S("ab\xff")), 3);	/* invalid: not held back */
	CHECK_INT(json_utf8_complete(S("")), 0);
	CHECK_INT(json_utf8_complete(S("\x80\x80\x80\x80")), 4);
}

int
main(void)
{
	RUN(test_parse_table);
	RUN(test_values);
	RUN(test_depth_limit);
	RUN(test_many_members);
	RUN(test_write_table);
	RUN(test_writer);
	RUN(test_utf8_helpers);
	return unit_done();
}
