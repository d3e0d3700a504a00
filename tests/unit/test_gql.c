/*
 * test_gql.c: the GraphQL request judge (egress-proxy/gql.c), table
 * driven: the JSON envelope (duplicate keys at every level, unknown
 * members, persisted queries, batches, escapes that spell "mutation",
 * surrogates, UTF-8, trailing bytes), the lexer (comments, commas, BOM,
 * strings and block strings, numbers, control characters), the parser
 * (operations, shorthand, variables, directives, fragments, inline
 * fragments, aliases) and the rules (mutations refused, allow-lists,
 * operationName ignored, @skip ignored, fragments resolved, cycles), and
 * the bounds (depth, tokens, batch size, spread depth, bytes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/gql.h"
#include "unit.h"

enum rk { R_NONE, R_ALLOW, R_ALL };

struct tcase {
	enum rk		 rules;
	const char	*in;		/* a JSON body, or a bare document (doc) */
	enum gql_result	 want;
	const char	*what;		/* GQL_DENY: the field; GQL_BAD: a part of the reason */
};

static struct gql_rules *
rules(enum rk k)
{
	struct gql_rules *r = gql_rules_new(k != R_NONE);
	static const char *const allow[] = { "addComment", "createIssue", "addStar" };
	size_t i;

	if (k == R_ALLOW)
		for (i = 0; i < sizeof(allow) / sizeof(allow[0]); i++)
			if (gql_rules_allow(r, allow[i], strlen(allow[i])) == -1)
				abort();
	return r;
}

static int
check_one(const struct tcase *c, size_t n, int doc, size_t idx)
{
	struct gql_rules *r = rules(c->rules);
	struct gql_verdict v;
	char *in = malloc(n > 0 ? n : 1);	/* exactly n bytes: ASan sees a read past them */
	int ok;

	memcpy(in, c->in, n);
	if (doc)
		gql_judge_document(r, in, n, &v);
	else
		gql_judge(r, in, n, &v);
	gql_rules_free(r);
	free(in);
	ok = v.res == c->want;
	if (ok && c->want == GQL_DENY)
		ok = strcmp(v.field, c->what) == 0;
	if (ok && c->want == GQL_BAD && c->what != NULL)
		ok = strstr(v.why, c->what) != NULL;
	if (!ok)
		fprintf(stderr, "  case %zu [%.80s]: res %d field '%s' why '%s'; want %d '%s'\n", idx,
		    c->in, (int)v.res, v.field, v.why, (int)c->want, c->what ? c->what : "");
	return ok;
}

static void
run_table(const struct tcase *t, size_t n, int doc)
{
	size_t i;

	for (i = 0; i < n; i++)
		CHECK(check_one(&t[i], strlen(t[i].in), doc, i));
}

#define NT(t) (sizeof(t) / sizeof((t)[0]))

/* The envelope, judged as a server parses it. */
static const struct tcase envelope[] = {
	{ R_NONE, "{\"query\":\"{ viewer { login } }\"}", GQL_PASS, NULL },
	{ R_NONE, " \r\n\t{\"query\":\"query { viewer { login } }\",\"variables\":{},\"operationName\":null} \n",
	  GQL_PASS, NULL },
	{ R_NONE, "{\"query\":\"mutation { addStar(input:{starrableId:\\\"x\\\"}) { clientMutationId } }\"}",
	  GQL_DENY, "addStar" },
	/* duplicate keys: first or last, a parser picks one */
	{ R_NONE, "{\"query\":\"{ a }\",\"query\":\"mutation { b }\"}", GQL_BAD, "twice" },
	{ R_NONE, "{\"query\":\"mutation { b }\",\"query\":\"{ a }\"}", GQL_BAD, "twice" },
	{ R_NONE, "{\"query\":\"{ a }\",\"qu\\u0065ry\":\"mutation { b }\"}", GQL_BAD, "twice" },
	{ R_NONE, "{\"operationName\":\"A\",\"query\":\"{ a }\",\"operationName\":\"B\"}", GQL_BAD,
	  "twice" },
	{ R_NONE, "{\"query\":\"{ a }\",\"variables\":{\"x\":1,\"y\":{\"z\":1,\"z\":2}}}", GQL_BAD,
	  "key \"z\" twice" },
	{ R_NONE, "{\"query\":\"{ a }\",\"variables\":{\"x\":1,\"x\":2}}", GQL_BAD, "twice" },
	{ R_NONE, "{\"query\":\"{ a }\",\"extensions\":{\"a\":1,\"a\":1}}", GQL_BAD, "twice" },
	{ R_NONE, "{\"query\":\"{ a }\",\"variables\":{\"x\":{\"y\":1},\"y\":2,\"x2\":[{\"y\":1}]}}",
	  GQL_PASS, NULL },
	/* members a server might read that the judge does not */
	{ R_NONE, "{\"query\":\"{ a }\",\"Query\":\"mutation { b }\"}", GQL_BAD, "unknown member \"Query\"" },
	{ R_NONE, "{\"query\":\"{ a }\",\"mutation\":1}", GQL_BAD, "unknown member" },
	{ R_NONE, "{\"id\":\"abc\"}", GQL_BAD, "persisted query" },
	{ R_NONE, "{\"documentId\":\"abc\",\"query\":\"{ a }\"}", GQL_BAD, "persisted query" },
	{ R_NONE, "{\"extensions\":{\"persistedQuery\":{\"version\":1,\"sha256Hash\":"
	  "\"1120365fae92499c3380a103a07c2101518ed4cc60bbdbe28ad6f4ff174a32be\"}}}", GQL_BAD,
	  "without its query" },
	{ R_NONE, "{\"query\":\"{ a }\",\"extensions\":{\"persistedQuery\":{\"version\":1,\"sha256Hash\":"
	  "\"1c7e1e347f726166b5b1c55afd61f278cc9b45e00c108ec33d540a566379811b\"}}}", GQL_PASS, NULL },
	{ R_NONE, "{\"query\":\"{ a }\",\"extensions\":{\"persistedQuery\":{\"version\":1,\"sha256Hash\":"
	  "\"1C7E1E347F726166B5B1C55AFD61F278CC9B45E00C108EC33D540A566379811B\"}}}", GQL_PASS, NULL },
	{ R_NONE, "{\"query\":\"{ a }\",\"extensions\":{\"persistedQuery\":{\"version\":1,\"sha256Hash\":"
	  "\"1120365fae92499c3380a103a07c2101518ed4cc60bbdbe28ad6f4ff174a32be\"}}}", GQL_BAD,
	  "not the SHA-256" },
	{ R_NONE, "{\"query\":\"{ a }\",\"extensions\":{\"persistedQuery\":{\"version\":1}}}", GQL_BAD,
	  "not the SHA-256" },
	{ R_NONE, "{\"query\":\"{ a }\",\"extensions\":{\"persistedQuery\":null,\"tracing\":true}}",
	  GQL_PASS, NULL },
	{ R_NONE, "{\"query\":\"{ a }\",\"extensions\":[]}", GQL_BAD, "extensions must be" },
	{ R_NONE, "{\"query\":null}", GQL_BAD, "no query" },
	{ R_NONE, "{}", GQL_BAD, "no query" },
	{ R_NONE, "{\"query\":[\"mutation { b }\"]}", GQL_BAD, "query must be a string" },
	{ R_NONE, "{\"query\":\"{ a }\",\"operationName\":7}", GQL_BAD, "operationName" },
	{ R_NONE, "{\"query\":\"{ a }\",\"variables\":\"{\\\"x\\\":1}\"}", GQL_PASS, NULL },
	/* batches */
	{ R_NONE, "[{\"query\":\"{ a }\"},{\"query\":\"{ b }\"}]", GQL_PASS, NULL },
	{ R_NONE, "[{\"query\":\"{ a }\"},{\"query\":\"mutation { b }\"}]", GQL_DENY, "b" },
	{ R_NONE, "[{\"query\":\"{ a }\"},{\"query\":\"{ a }\",\"query\":\"mutation { b }\"}]", GQL_BAD,
	  "twice" },
	{ R_NONE, "[]", GQL_BAD, "empty batch" },
	{ R_NONE, "[{\"query\":\"{ a }\"},\"mutation { b }\"]", GQL_BAD, "must be a JSON object" },
	{ R_NONE, "[[{\"query\":\"mutation { b }\"}]]", GQL_BAD, "must be a JSON object" },
	/* JSON escapes decoded before the document is read */
	{ R_NONE, "{\"query\":\"\\u006dutation { b }\"}", GQL_DENY, "b" },
	{ R_NONE, "{\"query\":\"\\u006D\\u0075tation { \\u0062 }\"}", GQL_DENY, "b" },
	{ R_NONE, "{\"query\":\"{ a }\\nmutation { b }\"}", GQL_DENY, "b" },
	{ R_NONE, "{\"query\":\"# c\\u000dmutation { b }\"}", GQL_DENY, "b" },
	{ R_NONE, "{\"query\":\"{ a(x: \\\"\\ud83d\\ude00\\\") }\"}", GQL_PASS, NULL },
	{ R_NONE, "{\"query\":\"{ a(x: \\\"\\ud83d\\\") }\"}", GQL_BAD, "surrogate" },
	{ R_NONE, "{\"query\":\"{ a(x: \\\"\\ude00\\\") }\"}", GQL_BAD, "surrogate" },
	{ R_NONE, "{\"query\":\"{ a }\\u0000mutation { b }\"}", GQL_BAD, "control character" },
	{ R_NONE, "{\"query\":\"{ a(x: \\\"\xc3\xa9\\\") }\"}", GQL_PASS, NULL },
	{ R_NONE, "{\"query\":\"{ a(x: \\\"\xc3\\\") }\"}", GQL_BAD, "not UTF-8" },
	{ R_NONE, "{\"query\":\"{ a(x: \\\"\xc0\xaf\\\") }\"}", GQL_BAD, "not UTF-8" },
	{ R_NONE, "{\"query\":\"{ a(x: \\\"\xed\xa0\x80\\\") }\"}", GQL_BAD, "not UTF-8" },
	{ R_NONE, "{\"query\":\"{ a }\x01\"}", GQL_BAD, "control character" },
	{ R_NONE, "{\"query\":\"{ a }\\q\"}", GQL_BAD, "bad escape" },
	/* not JSON, or more than one value */
	{ R_NONE, "mutation { b }", GQL_BAD, "not JSON" },
	{ R_NONE, "", GQL_BAD, "not JSON" },
	{ R_NONE, "\xef\xbb\xbf{\"query\":\"{ a }\"}", GQL_BAD, "not JSON" },
	{ R_NONE, "{\"query\":\"{ a }\"} {\"query\":\"mutation { b }\"}", GQL_BAD, "bytes after" },
	{ R_NONE, "{\"query\":\"{ a }\"", GQL_BAD, "expected" },
	{ R_NONE, "{\"query\":", GQL_BAD, "value expected" },
	{ R_NONE, "{\"query\": ", GQL_BAD, "value expected" },
	{ R_NONE, "{\"extensions\":{\"persistedQuery\":", GQL_BAD, "value expected" },
	{ R_NONE, "{\"extensions\":{\"persistedQuery\":{\"sha256Hash\":", GQL_BAD, "value expected" },
	{ R_NONE, "{\"query\":\"{ a }\",}", GQL_BAD, "key expected" },
	{ R_NONE, "{'query':'{ a }'}", GQL_BAD, "key expected" },
	{ R_NONE, "{\"query\":\"{ a }\",\"variables\":{\"x\":01}}", GQL_BAD, NULL },
	{ R_NONE, "{\"query\":\"{ a }\",\"variables\":{\"x\":1.}}", GQL_BAD, "bad number" },
	{ R_NONE, "{\"query\":\"{ a }\",\"variables\":{\"x\":-1.5e+3,\"y\":[true,false,null]}}",
	  GQL_PASS, NULL },
	{ R_NONE, "{\"query\":\"{ a }\",\"variables\":{\"x\":tru}}", GQL_BAD, "bad value" },
	/* every operation counts, whatever operationName names */
	{ R_NONE, "{\"query\":\"query A { a } mutation B { b }\",\"operationName\":\"A\"}", GQL_DENY,
	  "b" },
	{ R_ALLOW, "{\"query\":\"mutation A { addComment { x } } mutation B { updateRef { x } }\","
	  "\"operationName\":\"A\"}", GQL_DENY, "updateRef" },
	{ R_ALL, "{\"query\":\"mutation { deleteRepository { x } }\"}", GQL_PASS, NULL },
};

/* Bare documents: the lexer, the parser and the rules. */
static const struct tcase docs[] = {
	/* operations */
	{ R_NONE, "{ a }", GQL_PASS, NULL },
	{ R_NONE, "query { a }", GQL_PASS, NULL },
	{ R_NONE, "query Q($a: [Int!]! = [1, 2], $b: String = \"x\" @d) @op(x: 1) { a(x: $a) @include(if: $c) }",
	  GQL_PASS, NULL },
	{ R_NONE, "subscription { s }", GQL_PASS, NULL },
	{ R_NONE, "mutation { b }", GQL_DENY, "b" },
	{ R_NONE, "mutation M($x: ID!) @d { first(x: $x) { y } second }", GQL_DENY, "first" },
	{ R_NONE, "mutation { __typename }", GQL_DENY, "__typename" },
	{ R_ALLOW, "mutation { __typename addComment { x } }", GQL_PASS, NULL },
	{ R_NONE, "Mutation { b }", GQL_BAD, "syntax error" },
	{ R_NONE, "MUTATION { b }", GQL_BAD, "syntax error" },
	{ R_NONE, "query mutation { mutation }", GQL_PASS, NULL },
	{ R_NONE, "query($mutation: Int) { a(x: $mutation) }", GQL_PASS, NULL },
	{ R_NONE, "fragment mutation on Query { a } { ...mutation }", GQL_PASS, NULL },
	/* ignored tokens */
	{ R_NONE, "# mutation { b }\n{ a }", GQL_PASS, NULL },
	{ R_NONE, "# c\r\n,,mutation,{,b,}", GQL_DENY, "b" },
	{ R_NONE, "{ a } # c\rmutation { b }", GQL_DENY, "b" },
	{ R_NONE, "\xef\xbb\xbfmutation { b }", GQL_DENY, "b" },
	{ R_NONE, "{ a }\xef\xbb\xbfmutation\xef\xbb\xbf{ b }", GQL_DENY, "b" },
	{ R_NONE, "\tmutation\t{\tb\t}", GQL_DENY, "b" },
	{ R_NONE, "# \x01\n{ a }", GQL_BAD, "control character" },
	{ R_NONE, "{ a }\x0bmutation { b }", GQL_BAD, "control character 0x0b" },
	{ R_NONE, "{ a }\x0cmutation { b }", GQL_BAD, "control character 0x0c" },
	{ R_NONE, "# \xe2\x80\xa8 mutation { b }\n{ a }", GQL_BAD, "U+2028" },
	{ R_NONE, "# \xc2\x85 mutation { b }\n{ a }", GQL_BAD, "U+0085" },
	{ R_NONE, "{ a }\xc2\xa0mutation { b }", GQL_BAD, "unexpected character" },
	/* strings and block strings */
	{ R_NONE, "{ search(q: \"mutation { b }\") { a } }", GQL_PASS, NULL },
	{ R_NONE, "{ search(q: \"a\\\"b mutation { b }\") { a } }", GQL_PASS, NULL },
	{ R_NONE, "{ search(q: \"\\\\\") } mutation { b }", GQL_DENY, "b" },
	{ R_NONE, "{ a(x: \"\"\"\n mutation { b } \\\"\"\" still \n\"\"\") }", GQL_PASS, NULL },
	{ R_NONE, "{ a(x: \"\"\" \\\"\"\"\"\"\") } mutation { b }", GQL_DENY, "b" },
	{ R_NONE, "{ a(x: \"\") } mutation { b }", GQL_DENY, "b" },
	{ R_NONE, "{ a(x: \"\"\"\"\"\") } mutation { b }", GQL_DENY, "b" },
	{ R_NONE, "{ a(x: \"\"\" mutation { b }", GQL_BAD, "unterminated block string" },
	{ R_NONE, "{ a(x: \"ab\nc\") }", GQL_BAD, "unterminated string" },
	{ R_NONE, "{ a(x: \"ab\rc\") }", GQL_BAD, "unterminated string" },
	{ R_NONE, "{ a(x: \"\\u{1F600} \\uD83D\\uDE00 \\u00e9\") }", GQL_PASS, NULL },
	{ R_NONE, "{ a(x: \"\\u{110000}\") }", GQL_BAD, "escape" },
	{ R_NONE, "{ a(x: \"\\u{D800}\") }", GQL_BAD, "escape" },
	{ R_NONE, "{ a(x: \"\\uDE00\") }", GQL_BAD, "escape" },
	{ R_NONE, "{ a(x: \"\\uD83D\") }", GQL_BAD, "escape" },
	{ R_NONE, "{ a(x: \"\\x41\") }", GQL_BAD, "bad escape" },
	{ R_NONE, "{ a(x: \"\x7f\xc3\xa9\") }", GQL_PASS, NULL },
	{ R_NONE, "{ a(x: \"\xff\") }", GQL_BAD, "not UTF-8" },
	/* numbers */
	{ R_NONE, "{ a(x: 1, y: -0, z: 1.5e3, w: -2E-7, v: 0.0) }", GQL_PASS, NULL },
	{ R_NONE, "{ a(x: 01) }", GQL_BAD, "bad number" },
	{ R_NONE, "{ a(x: 1.) }", GQL_BAD, "bad number" },
	{ R_NONE, "{ a(x: 1e) }", GQL_BAD, "bad number" },
	{ R_NONE, "{ a(x: 0x1) }", GQL_BAD, "bad number" },
	{ R_NONE, "{ a(x: 1.5.3) }", GQL_BAD, "bad number" },
	{ R_NONE, "{ a(x: -) }", GQL_BAD, "bad number" },
	{ R_NONE, "{ a(x: .5) }", GQL_BAD, "`.`" },
	/* syntax */
	{ R_NONE, "", GQL_BAD, "empty" },
	{ R_NONE, "  # only a comment\n", GQL_BAD, "empty" },
	{ R_NONE, "mutation { }", GQL_BAD, "a selection" },
	{ R_NONE, "{ a", GQL_BAD, "syntax error" },
	{ R_NONE, "mutation", GQL_BAD, "syntax error" },
	{ R_NONE, "{ a(x:) }", GQL_BAD, "a value" },
	{ R_NONE, "{ a() }", GQL_BAD, "an argument" },
	{ R_NONE, "query () { a }", GQL_BAD, "a variable definition" },
	{ R_NONE, "query ($a: Int = $b) { a }", GQL_BAD, "constant" },
	{ R_NONE, "type Query { a: Int }", GQL_BAD, "executable" },
	{ R_NONE, "schema { mutation: M } mutation { b }", GQL_BAD, "executable" },
	{ R_NONE, "fragment on on T { a } { ...on }", GQL_BAD, "fragment name" },
	{ R_NONE, "fragment F T { a }", GQL_BAD, "`on`" },
	{ R_NONE, "{ a: }", GQL_BAD, "after an alias" },
	{ R_NONE, "{ a } }", GQL_BAD, "syntax error" },
	{ R_NONE, "{ a ... }", GQL_BAD, "`{`" },
	{ R_NONE, "{ a | b }", GQL_BAD, "a field" },
	/* aliases: the field's name counts */
	{ R_ALLOW, "mutation { addComment: createCommitOnBranch(input: {}) { commit { oid } } }", GQL_DENY,
	  "createCommitOnBranch" },
	{ R_ALLOW, "mutation { x: addComment(input: {}) { y } z: createIssue { w } }", GQL_PASS, NULL },
	{ R_ALLOW, "mutation { addComment createIssue updateRef }", GQL_DENY, "updateRef" },
	{ R_ALLOW, "mutation { addComment(input: {body: \"updateRef\"}) { x { updateRef mergePullRequest } } }",
	  GQL_PASS, NULL },
	{ R_ALLOW, "query { updateRef } subscription { mergePullRequest }", GQL_PASS, NULL },
	/* inline fragments and directives: the field counts */
	{ R_ALLOW, "mutation { ... on Mutation { mergePullRequest(input: {}) { x } } }", GQL_DENY,
	  "mergePullRequest" },
	{ R_ALLOW, "mutation { ... @include(if: true) { ... { createIssue { x } } } }", GQL_PASS, NULL },
	{ R_ALLOW, "mutation { updateRef(input: {}) @skip(if: true) { x } }", GQL_DENY, "updateRef" },
	{ R_ALLOW, "mutation { ... @skip(if: true) { commitCreate { x } } }", GQL_DENY, "commitCreate" },
	/* fragment spreads at a mutation's root */
	{ R_ALLOW, "mutation { ...F } fragment F on Mutation { updateRef(input: {}) { x } }", GQL_DENY,
	  "updateRef" },
	{ R_ALLOW, "fragment F on Mutation { addComment { x } } mutation { ...F createIssue }", GQL_PASS,
	  NULL },
	{ R_ALLOW, "mutation { ...A } fragment A on M { addComment ...B } fragment B on M { ... on M { mergeBranch } }",
	  GQL_DENY, "mergeBranch" },
	{ R_ALLOW, "mutation { ...A } fragment A on M { ...B } fragment B on M { ...A }", GQL_BAD, "cycle" },
	{ R_ALLOW, "mutation { ...A } fragment A on M { addComment ...A }", GQL_BAD, "cycle" },
	{ R_ALLOW, "mutation { ...Missing }", GQL_BAD, "not defined" },
	{ R_ALLOW, "mutation { ...F } fragment F on M { addComment } fragment F on M { updateRef }", GQL_BAD,
	  "defined twice" },
	{ R_ALLOW, "{ ...F } fragment F on Query { a { ...G } } fragment G on X { updateRef }", GQL_PASS,
	  NULL },
	{ R_ALLOW, "mutation { addComment { ...G } } fragment G on X { updateRef }", GQL_PASS, NULL },
	{ R_ALLOW, "mutation { ...F @skip(if: true) } fragment F on M @d { deleteIssue }", GQL_DENY,
	  "deleteIssue" },
	{ R_NONE, "mutation { ...F } fragment F on M { ...F }", GQL_BAD, "cycle" },
	{ R_ALL, "mutation { ...F } fragment F on M { ...F }", GQL_PASS, NULL },
	/* several mutations: each counts */
	{ R_ALLOW, "query { a } mutation { addComment { x } } mutation M2 { updateRef { x } }", GQL_DENY,
	  "updateRef" },
};

TEST(test_envelope)
{
	run_table(envelope, NT(envelope), 0);
}

TEST(test_documents)
{
	run_table(docs, NT(docs), 1);
}

/* Builds a string by repeating pieces: pre, then mid n times, then post. */
static char *
build(const char *pre, const char *mid, size_t n, const char *post, size_t *len)
{
	size_t pl = strlen(pre), ml = strlen(mid), ql = strlen(post), i;
	char *s = malloc(pl + ml * n + ql + 1), *p = s;

	memcpy(p, pre, pl);
	p += pl;
	for (i = 0; i < n; i++, p += ml)
		memcpy(p, mid, ml);
	memcpy(p, post, ql + 1);
	*len = pl + ml * n + ql;
	return s;
}

static enum gql_result
judge_doc(enum rk k, const char *s, size_t n, struct gql_verdict *v)
{
	struct gql_rules *r = rules(k);

	gql_judge_document(r, s, n, v);
	gql_rules_free(r);
	return v->res;
}

static enum gql_result
judge_body(enum rk k, const char *s, size_t n, struct gql_verdict *v)
{
	struct gql_rules *r = rules(k);

	gql_judge(r, s, n, v);
	gql_rules_free(r);
	return v->res;
}

/* Selection sets d deep: { a { a ... } } */
static enum gql_result
nested_sets(size_t d, struct gql_verdict *v)
{
	char *open, *s;
	size_t n, i;
	enum gql_result res;

	open = build("", "{ a ", d, "", &n);
	s = malloc(n + 2 * d + 1);
	memcpy(s, open, n);
	for (i = 0; i < d; i++)
		memcpy(s + n + 2 * i, " }", 2);
	s[n + 2 * d] = '\0';
	res = judge_doc(R_NONE, s, n + 2 * d, v);
	free(open);
	free(s);
	return res;
}

/* Depth: nesting past GQL_DEPTH_MAX is refused, below it passes. */
TEST(test_depth)
{
	struct gql_verdict v;
	char *open, *s;
	size_t n, d;

	CHECK_INT(nested_sets(GQL_DEPTH_MAX, &v), GQL_PASS);
	CHECK_INT(nested_sets(GQL_DEPTH_MAX + 1, &v), GQL_BAD);
	CHECK(strstr(v.why, "deeper than 64") != NULL);
	for (d = GQL_DEPTH_MAX - 4; d <= GQL_DEPTH_MAX + 6; d += 10) {
		/* list values: { a(x: [[[...]]]) } */
		open = build("{ a(x: ", "[", d, "", &n);
		s = malloc(n + d + 5);
		memcpy(s, open, n);
		memset(s + n, ']', d);
		memcpy(s + n + d, ") }", 4);
		CHECK_INT(judge_doc(R_NONE, s, strlen(s), &v), d < GQL_DEPTH_MAX ? GQL_PASS : GQL_BAD);
		free(open);
		free(s);
		/* JSON variables */
		open = build("{\"query\":\"{ a }\",\"variables\":", "[", d, "", &n);
		s = malloc(n + d + 2);
		memcpy(s, open, n);
		memset(s + n, ']', d);
		memcpy(s + n + d, "}", 2);
		CHECK_INT(judge_body(R_NONE, s, strlen(s), &v), d < GQL_DEPTH_MAX ? GQL_PASS : GQL_BAD);
		if (d > GQL_DEPTH_MAX)
			CHECK(strstr(v.why, "deeper") != NULL);
		free(open);
		free(s);
	}
	/* 100,000 levels: refused at the bound, no stack overflow */
	CHECK_INT(nested_sets(100000, &v), GQL_BAD);
	s = build("{\"query\":\"{ a }\",\"variables\":", "{\"a\":", 60000, "", &n);
	CHECK_INT(judge_body(R_NONE, s, n, &v), GQL_BAD);
	free(s);
}

/* Tokens: GQL_TOKENS_MAX bounds a body, over all its documents. */
TEST(test_tokens)
{
	struct gql_verdict v;
	char *s, *elem;
	size_t n;

	s = build("{ ", "a ", GQL_TOKENS_MAX - 2, "}", &n);
	CHECK_INT(judge_doc(R_NONE, s, n, &v), GQL_PASS);
	free(s);
	s = build("{ ", "a ", GQL_TOKENS_MAX, "}", &n);
	CHECK_INT(judge_doc(R_NONE, s, n, &v), GQL_BAD);
	CHECK(strstr(v.why, "more than 65536 GraphQL tokens") != NULL);
	free(s);
	/* commas and comments are not tokens */
	s = build("{ a ", ",", 200000, "}", &n);
	CHECK_INT(judge_doc(R_NONE, s, n, &v), GQL_PASS);
	free(s);
	/* the bound is over the whole batch */
	elem = build("{\"query\":\"{ ", "a ", 1100, "}\"},", &n);
	s = build("[", elem, 60, "{\"query\":\"{ a }\"}]", &n);
	CHECK_INT(judge_body(R_NONE, s, n, &v), GQL_BAD);
	CHECK(strstr(v.why, "tokens") != NULL);
	free(s);
	free(elem);
	/* bytes */
	s = build("{ ", "a ", GQL_BYTES_MAX / 2, "}", &n);
	CHECK_INT(judge_doc(R_NONE, s, n, &v), GQL_BAD);
	CHECK(strstr(v.why, "over") != NULL);
	free(s);
}

/* Batches: at most GQL_BATCH_MAX requests. */
TEST(test_batch)
{
	struct gql_verdict v;
	char *s;
	size_t n;

	s = build("[", "{\"query\":\"{ a }\"},", GQL_BATCH_MAX - 1, "{\"query\":\"{ a }\"}]", &n);
	CHECK_INT(judge_body(R_NONE, s, n, &v), GQL_PASS);
	free(s);
	s = build("[", "{\"query\":\"{ a }\"},", GQL_BATCH_MAX, "{\"query\":\"{ a }\"}]", &n);
	CHECK_INT(judge_body(R_NONE, s, n, &v), GQL_BAD);
	CHECK(strstr(v.why, "batch") != NULL);
	free(s);
}

/* Spreads: chains up to GQL_SPREAD_DEPTH_MAX; a doubling fan-out stays linear. */
TEST(test_spreads)
{
	struct gql_verdict v;
	char s[32768];
	size_t o, i, depth;

	for (depth = GQL_SPREAD_DEPTH_MAX - 1; depth <= GQL_SPREAD_DEPTH_MAX + 1; depth++) {
		o = (size_t)snprintf(s, sizeof(s), "mutation { ...F0 }");
		for (i = 0; i < depth; i++)
			o += (size_t)snprintf(s + o, sizeof(s) - o, " fragment F%zu on M { ...F%zu }", i,
			    i + 1);
		o += (size_t)snprintf(s + o, sizeof(s) - o, " fragment F%zu on M { addComment }", depth);
		CHECK_INT(judge_doc(R_ALLOW, s, o, &v), depth < GQL_SPREAD_DEPTH_MAX ? GQL_PASS :
		    GQL_BAD);
	}
	/* F0 spreads F1 twice, F1 spreads F2 twice, ...: 2^30 paths, judged once each */
	o = (size_t)snprintf(s, sizeof(s), "mutation { ...F0 }");
	for (i = 0; i < 30; i++)
		o += (size_t)snprintf(s + o, sizeof(s) - o, " fragment F%zu on M { ...F%zu a: addComment ...F%zu }",
		    i, i + 1, i + 1);
	o += (size_t)snprintf(s + o, sizeof(s) - o, " fragment F30 on M { createIssue }");
	CHECK_INT(judge_doc(R_ALLOW, s, o, &v), GQL_PASS);
	memcpy(s + o - 13, "updateRef  ", 11);
	CHECK_INT(judge_doc(R_ALLOW, s, o, &v), GQL_DENY);
	CHECK_STR(v.field, "updateRef");
}

TEST(test_rules)
{
	struct gql_rules *r;
	struct gql_verdict v;
	char name[GQL_NAME_MAX + 2];
	int i;

	r = gql_rules_new(0);
	CHECK(gql_rules_restrict(r));
	gql_rules_free(r);
	r = gql_rules_new(1);
	CHECK(!gql_rules_restrict(r));
	CHECK_INT(gql_rules_allow(r, "1abc", 4), -1);
	CHECK_INT(gql_rules_allow(r, "a-b", 3), -1);
	CHECK_INT(gql_rules_allow(r, "", 0), -1);
	CHECK_INT(gql_rules_allow(r, "add Comment", 11), -1);
	memset(name, 'a', sizeof(name));
	CHECK_INT(gql_rules_allow(r, name, GQL_NAME_MAX + 1), -1);
	CHECK_INT(gql_rules_allow(r, name, GQL_NAME_MAX), 0);
	CHECK(gql_rules_restrict(r));
	/* the allow-list compares whole names, case-sensitively */
	gql_judge_document(r, "mutation { aaa }", 16, &v);
	CHECK_INT(v.res, GQL_DENY);
	CHECK(gql_rules_allow(r, "_add_Comment9", 13) == 0);
	gql_judge_document(r, "mutation { _add_comment9 }", 26, &v);
	CHECK_INT(v.res, GQL_DENY);
	gql_judge_document(r, "mutation { _add_Comment9 }", 26, &v);
	CHECK_INT(v.res, GQL_PASS);
	for (i = 2; i < GQL_ALLOW_MAX; i++)
		CHECK_INT(gql_rules_allow(r, "x", 1), 0);
	CHECK_INT(gql_rules_allow(r, "x", 1), -1);
	gql_rules_free(r);
	/* an empty allow-list refuses every mutation but __typename */
	r = gql_rules_new(1);
	CHECK_INT(gql_rules_allow(r, "x", 1), 0);
	gql_judge_document(r, "mutation { y }", 14, &v);
	CHECK_INT(v.res, GQL_DENY);
	gql_rules_free(r);
}

/* A refused name is reported whole up to GQL_NAME_MAX; reasons stay printable. */
TEST(test_reports)
{
	struct gql_verdict v;
	char s[600];
	size_t i, o;

	o = (size_t)snprintf(s, sizeof(s), "mutation { ");
	for (i = 0; i < 300; i++)
		s[o++] = 'm';
	o += (size_t)snprintf(s + o, sizeof(s) - o, " }");
	CHECK_INT(judge_doc(R_ALLOW, s, o, &v), GQL_DENY);
	CHECK_INT(strlen(v.field), GQL_NAME_MAX);
	snprintf(s, sizeof(s), "{\"query\":\"{a}\",\"\\\"\\u0001\\n\":1}");
	CHECK_INT(judge_body(R_NONE, s, strlen(s), &v), GQL_BAD);
	for (i = 0; v.why[i] != '\0'; i++)
		CHECK(v.why[i] >= 0x20 && v.why[i] < 0x7f);
	CHECK(strstr(v.why, "unknown member \"???\"") != NULL);
}

int
main(void)
{
	RUN(test_envelope);
	RUN(test_documents);
	RUN(test_depth);
	RUN(test_tokens);
	RUN(test_batch);
	RUN(test_spreads);
	RUN(test_rules);
	RUN(test_reports);
	return unit_done();
}
