/*
 * test_orch_tools.c: the inputSchema validator (schema.c) and the tools'
 * argument checks built on it (tools_check): schemas it must refuse at
 * startup, then hostile arguments (wrong types, 1e400, huge and fractional
 * numbers, NUL inside strings, deep nesting, unknown and escaped keys,
 * non-objects) with the exact message each gets.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "mcp/schema.h"
#include "session/sessopt.h"
#include "mcp/tools.h"
#include "unit.h"

#define ROOT(props) "{\"type\":\"object\",\"properties\":{" props "}," \
	"\"additionalProperties\":false}"

/* Schemas a typo could produce: each must fail to compile. */
TEST(test_schema_compile_refuses)
{
	static const char *const bad[] = {
		"[]",
		"\"object\"",
		"{}",
		"{\"type\":\"object\",\"properties\":{}}",
		"{\"type\":\"object\",\"properties\":{},\"additionalProperties\":true}",
		"{\"type\":\"object\",\"additionalProperties\":false}",
		"{\"type\":\"array\",\"properties\":{},\"additionalProperties\":false}",
		"{\"properties\":{},\"additionalProperties\":false}",
		"{\"type\":\"object\",\"properties\":[],\"additionalProperties\":false}",
		"{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false,\"$schema\":\"x\"}",
		"{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false,\"type\":\"object\"}",
		/* required */
		"{\"type\":\"object\",\"properties\":{},\"required\":[\"a\"],\"additionalProperties\":false}",
		"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":\"a\",\"additionalProperties\":false}",
		"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[1],\"additionalProperties\":false}",
		/* property shapes and types */
		ROOT("\"a\":1"),
		ROOT("\"a\":{}"),
		ROOT("\"a\":{\"type\":5}"),
		ROOT("\"a\":{\"type\":\"number\",\"maxLength\":3}"),
		ROOT("\"a\":{\"type\":\"number\",\"minimum\":0.5}"),
		ROOT("\"a\":{\"type\":\"object\"}"),
		ROOT("\"a\":{\"type\":\"null\"}"),
		ROOT("\"a\":{\"type\":[\"string\",\"integer\"]}"),
		ROOT("\"a\":{\"type\":\"string\"},\"a\":{\"type\":\"string\"}"),
		/* unknown or misspelt keywords */
		ROOT("\"a\":{\"type\":\"string\",\"maxlength\":3}"),
		ROOT("\"a\":{\"type\":\"string\",\"format\":\"uri\"}"),
		ROOT("\"a\":{\"type\":\"string\",\"default\":\"x\"}"),
		ROOT("\"a\":{\"type\":\"string\",\"maxLength\":3,\"maxLength\":4}"),
		ROOT("\"a\":{\"type\":\"string\",\"description\":5}"),
		/* keywords of another type */
		ROOT("\"a\":{\"type\":\"integer\",\"maxLength\":3}"),
		ROOT("\"a\":{\"type\":\"integer\",\"enum\":[\"1\"]}"),
		ROOT("\"a\":{\"type\":\"string\",\"minimum\":0}"),
		ROOT("\"a\":{\"type\":\"boolean\",\"pattern\":\"x\"}"),
		ROOT("\"a\":{\"type\":\"string\",\"items\":{\"type\":\"integer\"}}"),
		/* bad bounds */
		ROOT("\"a\":{\"type\":\"string\",\"maxLength\":-1}"),
		ROOT("\"a\":{\"type\":\"string\",\"maxLength\":1.5}"),
		ROOT("\"a\":{\"type\":\"string\",\"maxLength\":\"10\"}"),
		ROOT("\"a\":{\"type\":\"string\",\"minLength\":3,\"maxLength\":2}"),
		ROOT("\"a\":{\"type\":\"integer\",\"minimum\":1e400}"),
		ROOT("\"a\":{\"type\":\"integer\",\"maximum\":1152921504606846976}"),
		ROOT("\"a\":{\"type\":\"integer\",\"minimum\":5,\"maximum\":4}"),
		/* enum and pattern */
		ROOT("\"a\":{\"type\":\"string\",\"enum\":[]}"),
		ROOT("\"a\":{\"type\":\"string\",\"enum\":\"x\"}"),
		ROOT("\"a\":{\"type\":\"string\",\"enum\":[\"x\",1]}"),
		ROOT("\"a\":{\"type\":\"string\",\"pattern\":\"(\"}"),
		ROOT("\"a\":{\"type\":\"string\",\"pattern\":5}"),
		/* arrays */
		ROOT("\"a\":{\"type\":\"array\"}"),
		ROOT("\"a\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}"),
		ROOT("\"a\":{\"type\":\"array\",\"items\":[{\"type\":\"integer\"}]}"),
		ROOT("\"a\":{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"x\":1}}"),
		ROOT("\"a\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":3,\"maxItems\":2}"),
		ROOT("\"a\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"uniqueItems\":true}"),
	};
	static const char *const good[] = {
		ROOT(""),
		"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},"
		    "\"required\":[\"a\"],\"additionalProperties\":false}",
		ROOT("\"a\":{\"type\":\"integer\",\"minimum\":-9007199254740992,"
		    "\"maximum\":9007199254740992}"),
		ROOT("\"a\":{\"type\":\"number\",\"minimum\":0,\"maximum\":256}"),
	};
	char err[256];
	size_t i;

	for (i = 0; i < NELEM(bad); i++) {
		cJSON *js = cJSON_Parse(bad[i]);
		struct schema *sc;

		CHECK(js != NULL);
		err[0] = '\0';
		sc = schema_compile(js, err, sizeof(err));
		if (sc != NULL)
			fprintf(stderr, "  bad schema %zu compiled: %s\n", i, bad[i]);
		CHECK(sc == NULL);
		CHECK(err[0] != '\0');
		schema_free(sc);
		cJSON_Delete(js);
	}
	CHECK(schema_compile(NULL, err, sizeof(err)) == NULL);
	for (i = 0; i < NELEM(good); i++) {
		cJSON *js = cJSON_Parse(good[i]);
		struct schema *sc = schema_compile(js, err, sizeof(err));

		if (sc == NULL)
			fprintf(stderr, "  good schema %zu: %s\n", i, err);
		CHECK(sc != NULL);
		schema_free(sc);
		cJSON_Delete(js);
	}
}

/*
 * Checks args (JSON text) against the tool named, or against sc when tool
 * is NULL; want NULL means accepted. big > 0: a string of that many 'a's
 * replaces each member whose value is "BIG".
 */
static void
check_args(const struct schema *sc, const char *tool, const char *args,
    size_t big, const char *want)
{
	cJSON *js = cJSON_Parse(args), *v;
	char err[512], *s = NULL;
	int rc;

	CHECK(js != NULL);
	if (big > 0 && (s = malloc(big + 1)) != NULL) {
		memset(s, 'a', big);
		s[big] = '\0';
	}
	cJSON_ArrayForEach(v, js)
		if (s != NULL && cJSON_IsString(v) && strcmp(v->valuestring, "BIG") == 0)
			cJSON_SetValuestring(v, s);
	free(s);
	err[0] = '\0';
	rc = tool != NULL ? tools_check(tool, js, err, sizeof(err)) :
	    schema_check(sc, js, err, sizeof(err));
	if (rc != (want == NULL ? 0 : -1))
		fprintf(stderr, "  %s %s: %s %s\n", tool ? tool : "schema", args,
		    rc == 0 ? "accepted" : "refused:", rc == 0 ? "" : err);
	CHECK_INT(rc, want == NULL ? 0 : -1);
	if (want != NULL)
		CHECK_STR(err, want);
	cJSON_Delete(js);
}

static const char test_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"s\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":8,\"description\":\"d\"},"
    "\"i\":{\"type\":\"integer\",\"minimum\":-5,\"maximum\":100},"
    "\"b\":{\"type\":\"boolean\"},"
    "\"e\":{\"type\":\"string\",\"maxLength\":16,\"enum\":[\"one\",\"two\",\"three\"]},"
    "\"p\":{\"type\":\"string\",\"pattern\":\"^[a-z]{1,4}$\"},"
    "\"a\":{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":-1},"
    "\"minItems\":2,\"maxItems\":2},"
    "\"u\":{\"type\":\"integer\"},"
    "\"t\":{\"type\":\"string\",\"minLength\":3},"
    "\"v\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},"
    "\"n\":{\"type\":\"number\",\"minimum\":0,\"maximum\":4}"
    "},\"required\":[\"s\"],\"additionalProperties\":false}";

TEST(test_schema_check_table)
{
	static const struct {
		const char	*args;
		const char	*want;	/* NULL: accepted */
	} t[] = {
		{ "{\"s\":\"x\"}", NULL },
		/* required, null = absent */
		{ "{}", "missing required argument 's' (a string)" },
		{ "{\"s\":null}", "missing required argument 's' (a string)" },
		{ "{\"s\":\"x\",\"i\":null,\"b\":null,\"a\":null}", NULL },
		/* unknown members come first, escaped and cut */
		{ "{\"zz\":1}", "unknown argument 'zz'" },
		{ "{\"s\":5,\"zz\":1}", "unknown argument 'zz'" },
		{ "{\"s\":\"x\",\"\":1}", "unknown argument ''" },
		{ "{\"s\":\"x\",\"S\":1}", "unknown argument 'S'" },
		{ "{\"s\":\"x\",\"a\\\"b\\u0001\\n\":1}", "unknown argument 'a\\x22b\\x01\\x0a'" },
		{ "{\"s\":\"x\",\"" "0123456789012345678901234567890123456789"
		  "0123456789012345678901234567890123456789\":1}",
		  "unknown argument '012345678901234567890123456789012345678901234567890123456789012'" },
		{ "{\"s\":\"x\",\"zz\":{\"a\":{\"b\":{\"c\":[[[[[]]]]]}}}}", "unknown argument 'zz'" },
		/* strings: type, bytes not characters, NUL ends the string */
		{ "{\"s\":5}", "argument 's' must be a string" },
		{ "{\"s\":true}", "argument 's' must be a string" },
		{ "{\"s\":[\"x\"]}", "argument 's' must be a string" },
		{ "{\"s\":{\"x\":1}}", "argument 's' must be a string" },
		{ "{\"s\":\"\"}", "argument 's' is empty" },
		{ "{\"s\":\"12345678\"}", NULL },
		{ "{\"s\":\"123456789\"}", "argument 's' is too long (more than 8 bytes)" },
		{ "{\"s\":\"\\u00e9\\u00e9\\u00e9\\u00e9\"}", NULL },
		{ "{\"s\":\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\"}", "argument 's' is too long (more than 8 bytes)" },
		{ "{\"s\":\"ab\\u0000cdefghijklmnop\"}", NULL },
		{ "{\"s\":\"\\u0000abc\"}", "argument 's' is empty" },
		{ "{\"s\":\"x\",\"t\":\"ab\"}", "argument 't' is too short (fewer than 3 bytes)" },
		/* schema order, not the order of the arguments; every shape
		 * (type, length, number) before any value (empty, enum, pattern) */
		{ "{\"i\":\"x\",\"s\":5}", "argument 's' must be a string" },
		{ "{\"s\":\"x\",\"b\":1,\"i\":1.5}", "argument 'i' must be a whole number" },
		{ "{\"s\":\"\",\"i\":\"x\"}", "argument 'i' must be an integer" },
		{ "{\"e\":\"four\",\"s\":\"x\",\"a\":[1]}", "argument 'a' must be an array of 2 integers between -1 and 9007199254740992" },
		{ "{\"p\":\"../x\",\"s\":\"\",\"e\":\"four\"}", "argument 's' is empty" },
		{ "{\"p\":\"../x\",\"s\":\"x\",\"e\":\"four\"}", "unknown e 'four': use one, two or three" },
		/* a repeated member: the first counts (as for every reader) */
		{ "{\"s\":\"x\",\"s\":5}", NULL },
		/* integers */
		{ "{\"s\":\"x\",\"i\":\"1\"}", "argument 'i' must be an integer" },
		{ "{\"s\":\"x\",\"i\":true}", "argument 'i' must be an integer" },
		{ "{\"s\":\"x\",\"i\":[1]}", "argument 'i' must be an integer" },
		{ "{\"s\":\"x\",\"i\":{}}", "argument 'i' must be an integer" },
		{ "{\"s\":\"x\",\"i\":1.5}", "argument 'i' must be a whole number" },
		{ "{\"s\":\"x\",\"i\":0.0000001}", "argument 'i' must be a whole number" },
		{ "{\"s\":\"x\",\"i\":1e400}", "argument 'i' must be a whole number" },
		{ "{\"s\":\"x\",\"i\":-1e400}", "argument 'i' must be a whole number" },
		{ "{\"s\":\"x\",\"i\":1e300}", "argument 'i' must be between -5 and 100" },
		{ "{\"s\":\"x\",\"i\":-1e300}", "argument 'i' must be between -5 and 100" },
		{ "{\"s\":\"x\",\"i\":9223372036854775808}", "argument 'i' must be between -5 and 100" },
		{ "{\"s\":\"x\",\"i\":101}", "argument 'i' must be between -5 and 100" },
		{ "{\"s\":\"x\",\"i\":-6}", "argument 'i' must be between -5 and 100" },
		{ "{\"s\":\"x\",\"i\":100}", NULL },
		{ "{\"s\":\"x\",\"i\":-5}", NULL },
		{ "{\"s\":\"x\",\"i\":1.0}", NULL },
		{ "{\"s\":\"x\",\"i\":1e2}", NULL },
		{ "{\"s\":\"x\",\"i\":-0}", NULL },
		{ "{\"s\":\"x\",\"u\":9007199254740992}", NULL },
		{ "{\"s\":\"x\",\"u\":-9007199254740992}", NULL },
		{ "{\"s\":\"x\",\"u\":9007199254740994}",
		  "argument 'u' must be between -9007199254740992 and 9007199254740992" },
		/* booleans */
		{ "{\"s\":\"x\",\"b\":true}", NULL },
		{ "{\"s\":\"x\",\"b\":false}", NULL },
		{ "{\"s\":\"x\",\"b\":\"true\"}", "argument 'b' must be true or false" },
		{ "{\"s\":\"x\",\"b\":1}", "argument 'b' must be true or false" },
		/* enum: checked after maxLength; the value is escaped */
		{ "{\"s\":\"x\",\"e\":\"two\"}", NULL },
		{ "{\"s\":\"x\",\"e\":\"four\"}", "unknown e 'four': use one, two or three" },
		{ "{\"s\":\"x\",\"e\":\"One\"}", "unknown e 'One': use one, two or three" },
		{ "{\"s\":\"x\",\"e\":\"\\u0001'x\"}", "unknown e '\\x01'x': use one, two or three" },
		{ "{\"s\":\"x\",\"e\":\"one\\u0000junk\"}", NULL },
		{ "{\"s\":\"x\",\"e\":\"twelve bytes and more\"}", "argument 'e' is too long (more than 16 bytes)" },
		{ "{\"s\":\"x\",\"e\":3}", "argument 'e' must be a string" },
		/* pattern: anchored to the whole string, newline included */
		{ "{\"s\":\"x\",\"p\":\"abcd\"}", NULL },
		{ "{\"s\":\"x\",\"p\":\"abcde\"}", "argument 'p' must match the pattern ^[a-z]{1,4}$" },
		{ "{\"s\":\"x\",\"p\":\"ab\\n\"}", "argument 'p' must match the pattern ^[a-z]{1,4}$" },
		{ "{\"s\":\"x\",\"p\":\"\\nab\"}", "argument 'p' must match the pattern ^[a-z]{1,4}$" },
		{ "{\"s\":\"x\",\"p\":\"../x\"}", "argument 'p' must match the pattern ^[a-z]{1,4}$" },
		{ "{\"s\":\"x\",\"p\":\"\"}", "argument 'p' must match the pattern ^[a-z]{1,4}$" },
		/* arrays of integers */
		{ "{\"s\":\"x\",\"a\":[1,-1]}", NULL },
		{ "{\"s\":\"x\",\"a\":[1]}", "argument 'a' must be an array of 2 integers between -1 and 9007199254740992" },
		{ "{\"s\":\"x\",\"a\":[1,2,3]}", "argument 'a' must be an array of 2 integers between -1 and 9007199254740992" },
		{ "{\"s\":\"x\",\"a\":[]}", "argument 'a' must be an array of 2 integers between -1 and 9007199254740992" },
		{ "{\"s\":\"x\",\"a\":\"1,2\"}", "argument 'a' must be an array of 2 integers between -1 and 9007199254740992" },
		{ "{\"s\":\"x\",\"a\":{\"0\":1,\"1\":2}}", "argument 'a' must be an array of 2 integers between -1 and 9007199254740992" },
		{ "{\"s\":\"x\",\"a\":[1,\"2\"]}", "argument 'a' must be an array of 2 integers between -1 and 9007199254740992" },
		{ "{\"s\":\"x\",\"a\":[1,1.5]}", "argument 'a' must be an array of 2 integers between -1 and 9007199254740992" },
		{ "{\"s\":\"x\",\"a\":[1e400,1]}", "argument 'a' must be an array of 2 integers between -1 and 9007199254740992" },
		{ "{\"s\":\"x\",\"a\":[-2,1]}", "argument 'a' must be an array of 2 integers between -1 and 9007199254740992" },
		{ "{\"s\":\"x\",\"a\":[[1],2]}", "argument 'a' must be an array of 2 integers between -1 and 9007199254740992" },
		{ "{\"s\":\"x\",\"a\":[null,2]}", "argument 'a' must be an array of 2 integers between -1 and 9007199254740992" },
		{ "{\"s\":\"x\",\"v\":[]}", NULL },
		{ "{\"s\":\"x\",\"v\":[1,2,3,4,5,6,7,8,9]}", NULL },
		{ "{\"s\":\"x\",\"v\":[1,true]}", "argument 'v' must be an array of integers" },
		/* numbers: fractions in bounds */
		{ "{\"s\":\"x\",\"n\":0.5}", NULL },
		{ "{\"s\":\"x\",\"n\":4}", NULL },
		{ "{\"s\":\"x\",\"n\":4.01}", "argument 'n' must be between 0 and 4" },
		{ "{\"s\":\"x\",\"n\":-0.1}", "argument 'n' must be between 0 and 4" },
		{ "{\"s\":\"x\",\"n\":1e400}", "argument 'n' must be a number" },
		{ "{\"s\":\"x\",\"n\":\"1\"}", "argument 'n' must be a number" },
	};
	char err[256];
	cJSON *js = cJSON_Parse(test_schema);
	struct schema *sc = schema_compile(js, err, sizeof(err));
	size_t i;

	if (sc == NULL)
		fprintf(stderr, "  test schema: %s\n", err);
	CHECK(sc != NULL);
	cJSON_Delete(js);	/* the compiled schema keeps nothing of it */
	if (sc == NULL)
		return;
	for (i = 0; i < NELEM(t); i++)
		check_args(sc, NULL, t[i].args, 0, t[i].want);
	schema_free(sc);
}

/* Nesting, non-objects and sizes no JSON text in a table shows well. */
TEST(test_schema_check_hostile)
{
	char err[256], *deep, *big;
	cJSON *js = cJSON_Parse(test_schema), *args;
	struct schema *sc = schema_compile(js, err, sizeof(err));
	size_t i, n = 900;	/* under cJSON's nesting limit of 1000 */
	static const char *const not_objects[] = { "[]", "[{\"s\":\"x\"}]",
	    "\"s\"", "1", "null", "true" };

	cJSON_Delete(js);
	CHECK(sc != NULL);
	if (sc == NULL)
		return;
	for (i = 0; i < NELEM(not_objects); i++) {
		args = cJSON_Parse(not_objects[i]);
		CHECK_INT(schema_check(sc, args, err, sizeof(err)), -1);
		CHECK_STR(err, "the arguments must be an object");
		cJSON_Delete(args);
	}
	CHECK_INT(schema_check(sc, NULL, err, sizeof(err)), -1);

	/* {"s":[[[...]]]} and {"s":"x","a":[[[...]]]} */
	deep = malloc(2 * n + 64);
	CHECK(deep != NULL);
	if (deep == NULL)
		goto out;
	for (i = 0; i < 2; i++) {
		size_t o = (size_t)snprintf(deep, 64, i == 0 ? "{\"s\":" :
		    "{\"s\":\"x\",\"a\":"), k;
		for (k = 0; k < n; k++)
			deep[o++] = '[';
		for (k = 0; k < n; k++)
			deep[o++] = ']';
		memcpy(deep + o, "}", 2);
		check_args(sc, NULL, deep, 0, i == 0 ? "argument 's' must be a string" :
		    "argument 'a' must be an array of 2 integers between -1 and "
		    "9007199254740992");
	}
	free(deep);

	/* A 16 MiB string where 8 bytes are allowed. */
	big = malloc((16u << 20) + 1);
	CHECK(big != NULL);
	if (big == NULL)
		goto out;
	memset(big, 'a', 16u << 20);
	big[16u << 20] = '\0';
	args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "s", big);
	CHECK_INT(schema_check(sc, args, err, sizeof(err)), -1);
	CHECK_STR(err, "argument 's' is too long (more than 8 bytes)");
	cJSON_Delete(args);
	args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "s", "x");
	cJSON_AddStringToObject(args, "p", big);
	CHECK_INT(schema_check(sc, args, err, sizeof(err)), -1);
	CHECK_STR(err, "argument 'p' must match the pattern ^[a-z]{1,4}$");
	cJSON_Delete(args);
	free(big);

	/* A small err buffer gets a cut, terminated message. */
	args = cJSON_Parse("{}");
	CHECK_INT(schema_check(sc, args, err, 10), -1);
	CHECK_STR(err, "missing r");
	cJSON_Delete(args);
out:
	schema_free(sc);
}

/* Result schemas: nested objects (open or closed), arrays of objects,
 * ["T","null"]. */
TEST(test_schema_nested)
{
	static const char *sch = "{\"type\":\"object\",\"properties\":{"
	    "\"l\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\"}},"
	    "\"required\":[\"n\"]},"
	    "\"c\":{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\"}},"
	    "\"additionalProperties\":false},"
	    "\"a\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
	    "{\"id\":{\"type\":\"string\"}},\"required\":[\"id\"]}},"
	    "\"u\":{\"type\":[\"integer\",\"null\"]}},"
	    "\"additionalProperties\":false}";
	static const struct { const char *in; int ok; } cases[] = {
		{ "{}", 1 },
		{ "{\"l\":{\"n\":1,\"extra\":true}}", 1 },	/* open */
		{ "{\"l\":{}}", 0 },				/* n required */
		{ "{\"l\":3}", 0 },
		{ "{\"c\":{\"s\":\"x\"}}", 1 },
		{ "{\"c\":{\"s\":\"x\",\"t\":1}}", 0 },		/* closed */
		{ "{\"a\":[{\"id\":\"j\"},{\"id\":\"k\",\"more\":1}]}", 1 },
		{ "{\"a\":[{\"id\":\"j\"},{}]}", 0 },
		{ "{\"a\":[1]}", 0 },
		{ "{\"u\":null}", 1 },
		{ "{\"u\":5}", 1 },
		{ "{\"u\":\"5\"}", 0 },
	};
	char err[256];
	struct schema *sc;
	cJSON *js, *v;
	size_t i;

	js = cJSON_Parse(sch);
	sc = schema_compile(js, err, sizeof(err));
	CHECK(sc != NULL);
	for (i = 0; sc != NULL && i < NELEM(cases); i++) {
		v = cJSON_Parse(cases[i].in);
		if ((schema_check(sc, v, err, sizeof(err)) == 0) != cases[i].ok) {
			fprintf(stderr, "  case %zu %s: %s\n", i, cases[i].in, err);
			CHECK(0);
		}
		cJSON_Delete(v);
	}
	schema_free(sc);
	cJSON_Delete(js);
	/* a nested object that is not one, or mixed types, are refused */
	js = cJSON_Parse("{\"type\":\"object\",\"properties\":{\"x\":{\"type\":"
	    "\"object\",\"properties\":{\"y\":{\"type\":\"what\"}}}},"
	    "\"additionalProperties\":false}");
	CHECK(schema_compile(js, err, sizeof(err)) == NULL);
	cJSON_Delete(js);
}

TEST(test_schema_getters)
{
	cJSON *a = cJSON_Parse("{\"s\":\"x\",\"i\":-5,\"b\":false,\"n\":null,"
	    "\"f\":1.5,\"h\":1e400,\"a\":[3,-1]}");

	CHECK_STR(schema_str(a, "s"), "x");
	CHECK(schema_str(a, "n") == NULL);
	CHECK(schema_str(a, "nope") == NULL);
	CHECK_INT(schema_int(a, "i", 7), -5);
	CHECK_INT(schema_int(a, "n", 7), 7);
	CHECK_INT(schema_int(a, "f", 7), 7);	/* unchecked args stay safe */
	CHECK_INT(schema_int(a, "h", 7), 7);
	CHECK_INT(schema_bool(a, "b"), 0);
	CHECK_INT(schema_bool(a, "n"), -1);
	CHECK_INT(schema_bool(a, "s"), -1);
	CHECK_INT(schema_int_item(a, "a", 0, 0), 3);
	CHECK_INT(schema_int_item(a, "a", 1, 0), -1);
	CHECK_INT(schema_int_item(a, "a", 2, 9), 9);
	CHECK_INT(schema_int_item(a, "s", 0, 9), 9);
	cJSON_Delete(a);
}

/* Calls every tool's schema accepts (the handler may still refuse some). */
TEST(test_tools_check_accepts)
{
	static const struct {
		const char	*tool;
		const char	*args;
	} t[] = {
		{ "shell", "{\"command\":\"true\"}" },
		{ "shell", "{\"command\":\"x\",\"timeout\":86400}" },
		{ "shell_poll", "{\"job_id\":\"j1\",\"offset\":0,\"max_bytes\":16777216}" },
		{ "shell_poll", "{\"job_id\":\"..\"}" },	/* the handler refuses it */
		{ "shell_wait", "{\"job_id\":\"j\",\"timeout\":0,\"offset\":5}" },
		{ "shell_stop", "{\"job_id\":\"j\"}" },
		{ "str_replace_based_edit_tool", "{\"command\":\"view\",\"path\":\"x\",\"view_range\":[1,-1]}" },
		{ "str_replace_based_edit_tool", "{\"command\":\"str_replace\",\"path\":\"x\",\"old_str\":\"\"}" },	/* the handler refuses it */
		{ "str_replace_based_edit_tool", "{\"command\":\"view\",\"path\":\"x\",\"old_str\":\"\",\"new_str\":\"\"}" },
		{ "create_sandbox", "{}" },
		{ "create_sandbox", "{\"image\":\"alpine\",\"use_kata\":false,\"run_as_root\":true,\"writable_root\":null}" },
		{ "create_sandbox", "{\"image\":\"\"}" },	/* the default image */
		{ "create_sandbox", "{\"cpu\":1.5,\"memory\":\"2GiB\",\"disk\":\"10G\","
		  "\"lifetime\":\"2h\",\"idle_timeout\":\"30m\",\"fresh_workspace\":true}" },
		{ "sandbox_status", "{}" },
		{ "clear_session", "{}" },
	};
	size_t i;

	CHECK_INT(tools_init(), 0);	/* compiles the tools' schemas */
	for (i = 0; i < NELEM(t); i++)
		check_args(NULL, t[i].tool, t[i].args, 0, NULL);
}

/* Calls they refuse, with the messages the tools always gave. */
TEST(test_tools_check_refuses)
{
	static const struct {
		const char	*tool;
		const char	*args;
		const char	*want;
	} t[] = {
		{ "shell", "{}", "missing required argument 'command' (a string)" },
		{ "shell", "{\"command\":\"true\",\"timeout\":\"soon\"}", "argument 'timeout' must be an integer" },
		{ "shell", "{\"command\":\"true\",\"sudo\":true}", "unknown argument 'sudo'" },
		{ "shell", "{\"command\":\"\"}", "argument 'command' is empty" },
		{ "shell", "{\"command\":\"x\",\"timeout\":0}", "argument 'timeout' must be between 1 and 86400" },
		{ "shell", "{\"command\":\"x\",\"timeout\":86401}", "argument 'timeout' must be between 1 and 86400" },
		{ "shell", "{\"command\":\"x\",\"timeout\":2.5}", "argument 'timeout' must be a whole number" },
		{ "shell", "{\"command\":\"x\",\"timeout\":1e400}", "argument 'timeout' must be a whole number" },
		{ "shell_async", "{\"command\":\"x\",\"timeout\":5}", "unknown argument 'timeout'" },
		{ "shell_poll", "{\"job_id\":\"../../x\"}", "argument 'job_id' must match the pattern ^[A-Za-z0-9_.-]{1,64}$" },
		{ "shell_poll", "{\"job_id\":\"\"}", "argument 'job_id' must match the pattern ^[A-Za-z0-9_.-]{1,64}$" },
		{ "shell_poll", "{\"job_id\":7}", "argument 'job_id' must be a string" },
		{ "shell_poll", "{\"job_id\":\"j\",\"offset\":-1}", "argument 'offset' must be between 0 and 1125899906842624" },
		{ "shell_poll", "{\"job_id\":\"j\",\"offset\":1125899906842625}", "argument 'offset' must be between 0 and 1125899906842624" },
		{ "shell_poll", "{\"job_id\":\"j\",\"max_bytes\":0}", "argument 'max_bytes' must be between 1 and 16777216" },
		{ "shell_poll", "{\"job_id\":\"j\",\"timeout\":1}", "unknown argument 'timeout'" },
		{ "shell_wait", "{\"job_id\":\"j\",\"timeout\":86401}", "argument 'timeout' must be between 0 and 86400" },
		{ "shell_wait", "{\"job_id\":\"j\",\"max_bytes\":1}", "unknown argument 'max_bytes'" },
		{ "shell_stop", "{\"job_id\":\"j\",\"offset\":0}", "unknown argument 'offset'" },
		{ "str_replace_based_edit_tool", "{\"command\":\"delete\",\"path\":\"x\"}", "unknown command 'delete': use view, create, str_replace or insert" },
		{ "str_replace_based_edit_tool", "{\"command\":\"delete\"}", "missing required argument 'path' (a string)" },
		{ "str_replace_based_edit_tool", "{\"command\":\"delete\",\"path\":\"\"}", "argument 'path' is empty" },
		{ "str_replace_based_edit_tool", "{\"command\":\"delete\",\"path\":\"x\",\"insert_line\":-1}", "argument 'insert_line' must be between 0 and 1099511627776" },
		{ "shell", "{\"command\":\"\",\"timeout\":\"soon\"}", "argument 'timeout' must be an integer" },
		{ "shell_poll", "{\"job_id\":\"../x\",\"offset\":1.5}", "argument 'offset' must be a whole number" },
		{ "str_replace_based_edit_tool", "{\"command\":\"view\"}", "missing required argument 'path' (a string)" },
		{ "str_replace_based_edit_tool", "{\"path\":\"x\"}", "missing required argument 'command' (a string)" },
		{ "str_replace_based_edit_tool", "{\"command\":\"view\",\"path\":\"\"}", "argument 'path' is empty" },
		{ "str_replace_based_edit_tool", "{\"command\":\"view\",\"path\":\"x\",\"view_range\":[1]}", "argument 'view_range' must be an array of 2 integers" },
		{ "str_replace_based_edit_tool", "{\"command\":\"view\",\"path\":\"x\",\"view_range\":[1.5,2]}", "argument 'view_range' must be an array of 2 integers" },
		{ "str_replace_based_edit_tool", "{\"command\":\"insert\",\"path\":\"x\",\"insert_line\":1099511627777,\"insert_text\":\"a\"}", "argument 'insert_line' must be between 0 and 1099511627776" },
		{ "create_sandbox", "{\"use_kata\":\"yes\"}", "argument 'use_kata' must be true or false" },
		{ "create_sandbox", "{\"cpu\":\"2\"}", "argument 'cpu' must be a number" },
		{ "create_sandbox", "{\"cpu\":257}", "argument 'cpu' must be between 0 and 256" },
		{ "create_sandbox", "{\"memory\":2147483648}", "argument 'memory' must be a string" },
		{ "create_sandbox", "{\"gpus\":1}", "unknown argument 'gpus'" },
		{ "sandbox_status", "{\"verbose\":true}", "unknown argument 'verbose'" },
		{ "clear_session", "{\"x\":1}", "unknown argument 'x'" },
		{ "rm_rf", "{}", "unknown tool" },
	};
	size_t i;

	for (i = 0; i < NELEM(t); i++)
		check_args(NULL, t[i].tool, t[i].args, 0, t[i].want);
}

/* Each size limit the schemas state: the limit passes, one byte more does
 * not ("BIG" in args stands for a string of that many bytes). */
TEST(test_tools_size_limits)
{
	static const struct {
		const char	*tool;
		const char	*args;
		size_t		 limit;
		const char	*over;
	} t[] = {
		{ "shell", "{\"command\":\"BIG\"}", 1048576, "argument 'command' is too long (more than 1048576 bytes)" },
		{ "shell_async", "{\"command\":\"BIG\"}", 1048576, "argument 'command' is too long (more than 1048576 bytes)" },
		{ "shell_poll", "{\"job_id\":\"BIG\"}", 64, "argument 'job_id' is too long (more than 64 bytes)" },
		{ "shell_wait", "{\"job_id\":\"BIG\"}", 64, "argument 'job_id' is too long (more than 64 bytes)" },
		{ "str_replace_based_edit_tool", "{\"command\":\"view\",\"path\":\"BIG\"}", 4096, "argument 'path' is too long (more than 4096 bytes)" },
		{ "str_replace_based_edit_tool", "{\"command\":\"create\",\"path\":\"x\",\"file_text\":\"BIG\"}", 8388608, "argument 'file_text' is too long (more than 8388608 bytes)" },
		{ "str_replace_based_edit_tool", "{\"command\":\"str_replace\",\"path\":\"x\",\"old_str\":\"BIG\"}", 8388608, "argument 'old_str' is too long (more than 8388608 bytes)" },
		{ "str_replace_based_edit_tool", "{\"command\":\"str_replace\",\"path\":\"x\",\"old_str\":\"a\",\"new_str\":\"BIG\"}", 8388608, "argument 'new_str' is too long (more than 8388608 bytes)" },
		{ "str_replace_based_edit_tool", "{\"command\":\"insert\",\"path\":\"x\",\"insert_line\":0,\"insert_text\":\"BIG\"}", 8388608, "argument 'insert_text' is too long (more than 8388608 bytes)" },
		{ "create_sandbox", "{\"image\":\"BIG\"}", 255, "argument 'image' is too long (more than 255 bytes)" },
	};
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		check_args(NULL, t[i].tool, t[i].args, t[i].limit, NULL);
		check_args(NULL, t[i].tool, t[i].args, t[i].limit + 1, t[i].over);
	}
	/* The edit command's 32 bytes: an enum, so the limit itself is refused
	 * as unknown, one more as too long. */
	check_args(NULL, "str_replace_based_edit_tool",
	    "{\"command\":\"BIG\",\"path\":\"x\"}", 33,
	    "argument 'command' is too long (more than 32 bytes)");
}

/* tools/list and tools_exists read the same table; init is repeatable. */
TEST(test_tools_list_matches)
{
	cJSON *l, *t;
	int n = 0;

	CHECK_INT(tools_init(), 0);	/* again (test_tools_check_accepts'): a no-op */
	l = tools_list();
	cJSON_ArrayForEach(t, l) {
		cJSON *nm = cJSON_GetObjectItem(t, "name");
		cJSON *in = cJSON_GetObjectItem(t, "inputSchema");
		char err[256];
		struct schema *sc = schema_compile(in, err, sizeof(err));

		CHECK(cJSON_IsString(nm) && tools_exists(nm->valuestring));
		CHECK(cJSON_IsString(cJSON_GetObjectItem(t, "title")));
		CHECK(cJSON_IsObject(cJSON_GetObjectItem(t, "annotations")));
		CHECK(sc != NULL);
		schema_free(sc);
		n++;
	}
	CHECK_INT(n, 16);
	CHECK(!tools_exists("nope"));
	CHECK(!tools_exists(""));
	cJSON_Delete(l);
	tools_cleanup();
	CHECK_INT(tools_init(), 0);
	l = tools_list();
	CHECK_INT(cJSON_GetArraySize(l), 16);
	cJSON_Delete(l);
	tools_cleanup();
}

/* The runtime's images become create_sandbox's enum and description. */
TEST(test_tools_images)
{
	cJSON *im = cJSON_CreateStringArray((const char *[]){ "busybox",
	    "default" }, 2), *l, *t, *cs = NULL;
	const char *d;

	CHECK_INT(tools_init(), 0);
	CHECK_INT(tools_set_images(im), 0);
	check_args(NULL, "create_sandbox", "{\"image\":\"busybox\"}", 0, NULL);
	check_args(NULL, "create_sandbox", "{\"image\":\"nope\"}", 0,
	    "unknown image 'nope': use busybox or default");
	l = tools_list();
	cJSON_ArrayForEach(t, l)
		if (strcmp(cJSON_GetObjectItem(t, "name")->valuestring,
		    "create_sandbox") == 0)
			cs = t;
	CHECK(cs != NULL);
	d = cJSON_GetStringValue(cJSON_GetObjectItem(cs, "description"));
	CHECK(d != NULL && strstr(d, "Images here: busybox, default.") != NULL);
	CHECK(cJSON_IsArray(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(cs, "inputSchema"), "properties"), "image"), "enum")));
	cJSON_Delete(l);
	CHECK_INT(tools_set_images(im), 0);	/* the same again: nothing */
	CHECK_INT(tools_set_images(NULL), 0);	/* any image again */
	check_args(NULL, "create_sandbox", "{\"image\":\"nope\"}", 0, NULL);
	cJSON_Delete(im);
	tools_cleanup();
}

/* create_sandbox's and POST /v1/sessions' options (sessopt.c). */
TEST(test_sessopt)
{
	static const struct {
		const char	*json;
		const char	*want;	/* NULL: parsed */
	} t[] = {
		{ "{\"cpu\":0.5,\"memory\":\"512MiB\",\"disk\":\"1073741824\"}", NULL },
		{ "{\"lifetime\":\"2h\",\"idle_timeout\":\"90s\",\"image\":null}", NULL },
		{ "{\"id\":\"s1\",\"org\":\"o\"}", NULL },
		{ "{\"cpu\":0.001}", "cpu must be a number of cores from 0.01 to 256 (e.g. 0.5 or 2)" },
		{ "{\"cpu\":\"1\"}", "cpu must be a number of cores from 0.01 to 256 (e.g. 0.5 or 2)" },
		{ "{\"memory\":\"lots\"}", "memory must be a size such as \"512MiB\" or \"2GiB\" (a string; a bare number is bytes)" },
		{ "{\"memory\":1024}", "memory must be a size such as \"512MiB\" or \"2GiB\" (a string; a bare number is bytes)" },
		{ "{\"lifetime\":\"3600000\"}", "lifetime must be a duration of at least 1m with its unit, such as \"90s\", \"30m\" or \"2h\"" },
		{ "{\"idle_timeout\":\"10s\"}", "idle_timeout must be a duration of at least 1m with its unit, such as \"90s\", \"30m\" or \"2h\"" },
		{ "{\"image\":\"\"}", "image must be a non-empty string of at most 255 bytes" },
		{ "{\"use_kata\":1}", "use_kata must be true or false" },
		{ "{\"gpus\":1}", "unknown field 'gpus' (the options are image, use_kata, run_as_root, writable_root, cpu, memory, memory_reservation, disk, lifetime, idle_timeout, fresh_workspace)" },
		{ "{\"cpu\":1,\"cpu\":2}", "field 'cpu' appears twice" },
	};
	static const char *const ids[] = { "id", "org", "user", NULL };
	struct conf c;
	struct sess_opts o;
	char err[512], b[64];
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		cJSON *js = cJSON_Parse(t[i].json);
		int rc;

		sessopt_init(&o);
		err[0] = '\0';
		rc = sessopt_parse(js, ids, &o, err, sizeof(err));
		CHECK_INT(rc, t[i].want == NULL ? 0 : -1);
		if (t[i].want != NULL)
			CHECK_STR(err, t[i].want);
		cJSON_Delete(js);
	}
	sessopt_init(&o);
	CHECK(!sessopt_sandbox_given(&o));
	o.lifetime_ms = 7200000;
	CHECK(!sessopt_sandbox_given(&o));
	o.cpu_millis = 500;
	CHECK(sessopt_sandbox_given(&o));
	memset(&c, 0, sizeof(c));
	c.max_cpu_millis = 4000;
	c.max_mem_bytes = 8LL << 30;
	c.max_disk_bytes = 64LL << 30;
	c.max_lifetime_ms = 86400000;
	c.max_idle_ms = 4 * 3600000;
	c.max_mem_reserve_bytes = 1LL << 30;
	CHECK_INT(sessopt_check(&c, &o, err, sizeof(err)), 0);
	/* a reservation: within its maximum and within the limit */
	o.mem_reserve_bytes = 2LL << 30;
	CHECK_INT(sessopt_check(&c, &o, err, sizeof(err)), -1);
	CHECK_STR(err, "memory_reservation 2GiB is above the maximum of 1GiB (sandbox.max_memory_reservation)");
	o.mem_reserve_bytes = 512LL << 20;
	o.mem_bytes = 256LL << 20;
	CHECK_INT(sessopt_check(&c, &o, err, sizeof(err)), -1);
	CHECK_STR(err, "memory_reservation 512MiB is above the sandbox's memory limit of 256MiB: ask for more memory or a smaller memory_reservation");
	o.mem_bytes = 512LL << 20;
	CHECK_INT(sessopt_check(&c, &o, err, sizeof(err)), 0);
	CHECK(sessopt_sandbox_given(&o));
	o.mem_reserve_bytes = 0;
	o.mem_bytes = 16LL << 30;
	CHECK_INT(sessopt_check(&c, &o, err, sizeof(err)), -1);
	CHECK_STR(err, "memory 16GiB is above the maximum of 8GiB (sandbox.max_memory)");
	o.mem_bytes = 0;
	o.cpu_millis = 4500;
	CHECK_INT(sessopt_check(&c, &o, err, sizeof(err)), -1);
	CHECK_STR(err, "cpu 4.5 cores is above the maximum of 4 cores (sandbox.max_cpu_millis)");
	o.cpu_millis = 0;
	o.lifetime_ms = 2 * 86400000LL;
	CHECK_INT(sessopt_check(&c, &o, err, sizeof(err)), -1);
	CHECK_STR(err, "lifetime 48h is above the maximum of 24h (reap.max_lifetime)");
	sessopt_fmt_size(b, sizeof(b), 1536);
	CHECK_STR(b, "1536 bytes");
	sessopt_fmt_size(b, sizeof(b), 3LL << 20);
	CHECK_STR(b, "3MiB");
	sessopt_fmt_duration(b, sizeof(b), 90000);
	CHECK_STR(b, "90s");
}

int
main(void)
{
	RUN(test_schema_compile_refuses);
	RUN(test_schema_check_table);
	RUN(test_schema_check_hostile);
	RUN(test_schema_nested);
	RUN(test_schema_getters);
	RUN(test_tools_check_accepts);
	RUN(test_tools_check_refuses);
	RUN(test_tools_size_limits);
	RUN(test_tools_list_matches);
	RUN(test_tools_images);
	RUN(test_sessopt);
	return unit_done();
}
