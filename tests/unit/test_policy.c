/*
 * test_policy.c: the credential policy (orchestrator/lib/policy.c): valid and
 * invalid shapes with the member each error names, the limits (entries,
 * bytes, depth, non-ASCII), canonical output, the glob cover relation,
 * the narrowing truth table, combining with the operator's policy, the
 * operator's policy file, the policy in the proxy's register op, and the
 * named credentials' list (issue 30).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/egress.h"
#include "lib/policy.h"
#include "unit.h"
#include "xmalloc.h"

static struct policy *
P(const char *txt)
{
	char err[512];
	struct policy *p = policy_parse(txt, strlen(txt), "policy", err,
	    sizeof(err));

	if (p == NULL)
		fprintf(stderr, "  parse of %s failed: %s\n", txt, err);
	return p;
}

TEST(test_valid)
{
	static const char *const ok[] = {
		"{}",
		"{\"github\":{}}",
		"{\"gitlab\":{}}",
		"{\"github\":{\"repositories\":[\"acme/app\",\"acme/lib-*\"],"
		"\"permissions\":{\"contents\":\"write\",\"pull_requests\":\"write\"},"
		"\"push\":[\"refs/heads/agent/**\"],\"protect\":[\"refs/heads/main\","
		"\"refs/tags/**\"],\"delete\":false,\"api\":\"repositories\","
		"\"graphql_mutations\":false},\"gitlab\":{\"projects\":"
		"[\"group/project\",\"group/sub/*\"],\"push\":[],\"protect\":[],"
		"\"delete\":true,\"api\":\"projects\"}}",
		"{\"github\":{\"repositories\":[\"*/*\"],\"api\":\"all\"}}",
		"{\"github\":{\"repositories\":[]}}",
		"{\"gitlab\":{\"projects\":[\"a/b/c/d/e\"],\"api\":\"all\"}}",
		"{\"github\":{\"permissions\":{}}}",
		"{\"github\":{\"permissions\":{\"a_b\":\"admin\",\"x\":\"read\"}}}",
	};
	struct policy *p;
	size_t i;

	for (i = 0; i < NELEM(ok); i++) {
		p = P(ok[i]);
		CHECK(p != NULL);
		policy_free(p);
	}
}

/* Every error path, with the member it must name. */
TEST(test_invalid)
{
	static const struct { const char *txt, *want; } t[] = {
		{ "[]", "policy: must be an object" },
		{ "\"x\"", "policy: must be an object" },
		{ "null", "policy: must be an object" },
		{ "{", "policy: not valid JSON" },
		{ "{\"bitbucket\":{}}", "policy: unknown member 'bitbucket'" },
		{ "{\"github\":{},\"github\":{}}", "policy.github: appears twice" },
		{ "{\"github\":[]}", "policy.github: must be an object" },
		{ "{\"github\":null}", "policy.github: must be an object" },
		{ "{\"github\":{\"projects\":[]}}",
		  "policy.github: unknown member 'projects'" },
		{ "{\"gitlab\":{\"repositories\":[]}}",
		  "policy.gitlab: unknown member 'repositories'" },
		{ "{\"gitlab\":{\"permissions\":{}}}",
		  "policy.gitlab: unknown member 'permissions'" },
		{ "{\"gitlab\":{\"graphql_mutations\":1}}",
		  "policy.gitlab.graphql_mutations: must be true or false" },
		{ "{\"github\":{\"push\":[],\"push\":[]}}",
		  "policy.github.push: appears twice" },
		{ "{\"github\":{\"push\":\"refs/heads/x\"}}",
		  "policy.github.push: must be a list of strings" },
		{ "{\"github\":{\"push\":null}}",
		  "policy.github.push: must be a list of strings" },
		{ "{\"github\":{\"push\":[\"refs/heads/a\",\"refs/heads/b\",1]}}",
		  "policy.github.push[2]: must be a string of 1-200" },
		{ "{\"github\":{\"push\":[\"\"]}}", "policy.github.push[0]: must be" },
		{ "{\"github\":{\"push\":[\"refs/heads/a b\"]}}",
		  "policy.github.push[0]: must be" },
		{ "{\"github\":{\"protect\":[\"refs/heads/\\t\"]}}",
		  "policy.github.protect[0]: must be" },
		{ "{\"github\":{\"protect\":[[\"x\"]]}}",
		  "policy.github.protect[0]: must be" },
		{ "{\"github\":{\"push\":[\"refs/heads/caf\\u00e9\"]}}",
		  "policy.github.push[0]: must be" },
		{ "{\"github\":{\"push\":[\"refs/heads/\xc3\xa9\"]}}",
		  "policy.github.push[0]: must be" },
		{ "{\"github\":{\"push\":[\"a\\u0000b\"]}}",
		  "policy: holds a NUL character" },
		{ "{\"github\":{\"repositories\":[\"acme\"]}}",
		  "policy.github.repositories[0]: \"acme\" is not owner/name" },
		{ "{\"github\":{\"repositories\":[\"acme/app/x\"]}}",
		  "policy.github.repositories[0]: \"acme/app/x\" is not owner/name" },
		{ "{\"github\":{\"repositories\":[\"acme/app\",\"/app\"]}}",
		  "policy.github.repositories[1]: \"/app\" is not owner/name" },
		{ "{\"github\":{\"repositories\":[\"acme/\"]}}",
		  "policy.github.repositories[0]:" },
		{ "{\"gitlab\":{\"projects\":[\"group\"]}}",
		  "policy.gitlab.projects[0]: \"group\" is not group[/subgroup...]/project" },
		{ "{\"gitlab\":{\"projects\":[\"g//p\"]}}", "policy.gitlab.projects[0]:" },
		{ "{\"github\":{\"permissions\":[]}}",
		  "policy.github.permissions: must be an object" },
		{ "{\"github\":{\"permissions\":{\"Contents\":\"read\"}}}",
		  "policy.github.permissions: 'Contents' is not a permission name" },
		{ "{\"github\":{\"permissions\":{\"\":\"read\"}}}",
		  "policy.github.permissions: '' is not a permission name" },
		{ "{\"github\":{\"permissions\":{\"contents\":\"owner\"}}}",
		  "policy.github.permissions.contents: must be \"read\", \"write\" or \"admin\"" },
		{ "{\"github\":{\"permissions\":{\"contents\":1}}}",
		  "policy.github.permissions.contents: must be" },
		{ "{\"github\":{\"permissions\":{\"a\":\"read\",\"a\":\"read\"}}}",
		  "policy.github.permissions.a: appears twice" },
		{ "{\"github\":{\"delete\":\"no\"}}",
		  "policy.github.delete: must be true or false" },
		{ "{\"github\":{\"delete\":0}}",
		  "policy.github.delete: must be true or false" },
		{ "{\"github\":{\"graphql_mutations\":null}}",
		  "policy.github.graphql_mutations: must be true or false" },
		{ "{\"github\":{\"api\":\"projects\"}}",
		  "policy.github.api: must be \"repositories\" or \"all\"" },
		{ "{\"gitlab\":{\"api\":\"repositories\"}}",
		  "policy.gitlab.api: must be \"projects\" or \"all\"" },
		{ "{\"github\":{\"api\":true}}", "policy.github.api: must be" },
		{ "{\"github\":{\"pu\\nsh\":[]}}", "policy.github: unknown member 'pu?sh'" },
		{ "{\"github\":{\"\xc3\xa9\":[]}}", "policy.github: unknown member '?" "?'" },
		{ "{\"github\":{\"push\":[[[[[[[[[[[[[[[[[[[[[[[[[\"x\"]]]]]]]]]]]]]]]]]]]]]]]]]}}",
		  "policy.github.push[0]: must be" },
	};
	char err[512];
	struct policy *p;
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		err[0] = '\0';
		p = policy_parse(t[i].txt, strlen(t[i].txt), "policy", err,
		    sizeof(err));
		CHECK(p == NULL);
		if (strncmp(err, t[i].want, strlen(t[i].want)) != 0) {
			fprintf(stderr, "  %s: got \"%s\", want \"%s...\"\n",
			    t[i].txt, err, t[i].want);
			unit_cur_failed++;
		}
		policy_free(p);
	}
}

/* Limits: 64 entries, 200 bytes an entry, 32 permissions, 8 KiB, depth. */
TEST(test_limits)
{
	char err[512], *txt = xmalloc(1 << 20), ent[256];
	struct policy *p;
	size_t n;
	int i;

	/* 64 entries pass, 65 do not. */
	n = (size_t)snprintf(txt, 1 << 20, "{\"github\":{\"push\":[");
	for (i = 0; i < 64; i++)
		n += (size_t)snprintf(txt + n, (1 << 20) - n, "%s\"refs/heads/%d\"",
		    i ? "," : "", i);
	snprintf(txt + n, (1 << 20) - n, "]}}");
	p = policy_parse(txt, strlen(txt), "policy", err, sizeof(err));
	CHECK(p != NULL);
	policy_free(p);
	snprintf(txt + n, (1 << 20) - n, ",\"x\"]}}");
	p = policy_parse(txt, strlen(txt), "policy", err, sizeof(err));
	CHECK(p == NULL);
	CHECK_STR(err, "policy.github.push: more than 64 entries");

	/* 200 bytes pass, 201 do not. */
	memset(ent, 'a', sizeof(ent));
	ent[200] = '\0';
	snprintf(txt, 1 << 20, "{\"github\":{\"protect\":[\"%s\"]}}", ent);
	p = policy_parse(txt, strlen(txt), "policy", err, sizeof(err));
	CHECK(p != NULL);
	policy_free(p);
	ent[200] = 'a';
	ent[201] = '\0';
	snprintf(txt, 1 << 20, "{\"github\":{\"protect\":[\"%s\"]}}", ent);
	p = policy_parse(txt, strlen(txt), "policy", err, sizeof(err));
	CHECK(p == NULL);
	CHECK(strncmp(err, "policy.github.protect[0]: must be", 33) == 0);

	/* 32 permissions pass, 33 do not. */
	for (int k = 32; k <= 33; k++) {
		n = (size_t)snprintf(txt, 1 << 20, "{\"github\":{\"permissions\":{");
		for (i = 0; i < k; i++)
			n += (size_t)snprintf(txt + n, (1 << 20) - n,
			    "%s\"p%c%c\":\"read\"", i ? "," : "", 'a' + i / 26,
			    'a' + i % 26);
		snprintf(txt + n, (1 << 20) - n, "}}}");
		p = policy_parse(txt, strlen(txt), "policy", err, sizeof(err));
		CHECK((p != NULL) == (k == 32));
		if (k == 33)
			CHECK_STR(err, "policy.github.permissions: more than 32 "
			    "permissions");
		policy_free(p);
	}

	/* More than 8 KiB of compact JSON: 2 lists of 60 entries of 80. */
	memset(ent, 'r', 80);
	ent[80] = '\0';
	n = (size_t)snprintf(txt, 1 << 20, "{\"github\":{");
	for (int l = 0; l < 2; l++) {
		n += (size_t)snprintf(txt + n, (1 << 20) - n, "%s\"%s\":[",
		    l ? "," : "", l ? "push" : "protect");
		for (i = 0; i < 60; i++)
			n += (size_t)snprintf(txt + n, (1 << 20) - n, "%s\"%s%d\"",
			    i ? "," : "", ent, i);
		n += (size_t)snprintf(txt + n, (1 << 20) - n, "]");
	}
	snprintf(txt + n, (1 << 20) - n, "}}");
	p = policy_parse(txt, strlen(txt), "policy", err, sizeof(err));
	CHECK(p == NULL);
	CHECK(strstr(err, "more than the 8192 a policy may have") != NULL);

	/* Deep nesting: refused, no crash (cJSON's own nesting limit, or
	 * the shape). */
	n = 0;
	n += (size_t)snprintf(txt, 1 << 20, "{\"github\":{\"push\":");
	for (i = 0; i < 5000; i++)
		txt[n++] = '[';
	for (i = 0; i < 5000; i++)
		txt[n++] = ']';
	snprintf(txt + n, (1 << 20) - n, "}}");
	p = policy_parse(txt, strlen(txt), "policy", err, sizeof(err));
	CHECK(p == NULL);
	n = 0;
	for (i = 0; i < 500; i++)
		n += (size_t)snprintf(txt + n, (1 << 20) - n, "{\"github\":");
	n += (size_t)snprintf(txt + n, (1 << 20) - n, "{}");
	for (i = 0; i < 500; i++)
		txt[n++] = '}';
	txt[n] = '\0';
	p = policy_parse(txt, n, "policy", err, sizeof(err));
	CHECK(p == NULL);
	CHECK_STR(err, "policy.github: unknown member 'github' (the members are "
	    "repositories, permissions, push, protect, delete, api, "
	    "graphql_mutations)");
	/* Text far beyond the limit is refused before parsing. */
	memset(txt, ' ', 40000);
	memcpy(txt + 39998, "{}", 2);
	p = policy_parse(txt, 40000, "policy", err, sizeof(err));
	CHECK(p == NULL);
	free(txt);
}

/* Canonical output: fixed member order, sorted lists without duplicates,
 * permissions by name; equal policies give equal text. */
TEST(test_canonical)
{
	struct policy *p, *q;
	char *a, *b;

	p = P("{\"gitlab\":{\"api\":\"all\",\"projects\":[\"g/p\"]},"
	    "\"github\":{\"graphql_mutations\":true,\"api\":\"repositories\","
	    "\"delete\":false,\"protect\":[\"refs/tags/**\",\"refs/heads/main\"],"
	    "\"push\":[\"refs/heads/b\",\"refs/heads/a\",\"refs/heads/b\"],"
	    "\"permissions\":{\"pull_requests\":\"write\",\"contents\":\"read\"},"
	    "\"repositories\":[\"acme/lib-*\",\"acme/app\"]}}");
	a = policy_text(p);
	CHECK_STR(a, "{\"github\":{\"repositories\":[\"acme/app\",\"acme/lib-*\"],"
	    "\"permissions\":{\"contents\":\"read\",\"pull_requests\":\"write\"},"
	    "\"push\":[\"refs/heads/a\",\"refs/heads/b\"],\"protect\":"
	    "[\"refs/heads/main\",\"refs/tags/**\"],\"delete\":false,"
	    "\"api\":\"repositories\",\"graphql_mutations\":true},"
	    "\"gitlab\":{\"projects\":[\"g/p\"],\"api\":\"all\"}}");
	q = P(a);		/* the text reads back to itself */
	b = policy_text(q);
	CHECK_STR(b, a);
	free(a);
	free(b);
	policy_free(p);
	policy_free(q);
	p = P("{ \"github\" : { } }");
	a = policy_text(p);
	CHECK_STR(a, "{\"github\":{}}");
	free(a);
	q = policy_dup(p);
	a = policy_text(q);
	CHECK_STR(a, "{\"github\":{}}");
	free(a);
	policy_free(p);
	policy_free(q);
	CHECK(policy_dup(NULL) == NULL);
	a = policy_text(NULL);
	CHECK_STR(a, "{}");
	free(a);
}

TEST(test_glob_covers)
{
	static const struct { const char *pat, *sub; int ci, want; } t[] = {
		/* strings */
		{ "refs/heads/main", "refs/heads/main", 0, 1 },
		{ "refs/heads/main", "refs/heads/Main", 0, 0 },
		{ "acme/app", "ACME/App", 1, 1 },
		{ "refs/heads/*", "refs/heads/x", 0, 1 },
		{ "refs/heads/*", "refs/heads/", 0, 1 },
		{ "refs/heads/*", "refs/heads/a/b", 0, 0 },
		{ "refs/heads/**", "refs/heads/a/b", 0, 1 },
		{ "refs/heads/**", "refs/heads", 0, 0 },
		{ "refs/heads/?", "refs/heads/x", 0, 1 },
		{ "refs/heads/?", "refs/heads/xy", 0, 0 },
		{ "refs/heads/?", "refs/heads//", 0, 0 },
		{ "**", "anything/at/all", 0, 1 },
		{ "*", "a/b", 0, 0 },
		{ "a*b*c", "aXbYc", 0, 1 },
		{ "a*b*c", "aXbY/c", 0, 0 },
		{ "acme/lib-*", "acme/lib-x", 1, 1 },
		{ "acme/lib-*", "ACME/LIB-X", 1, 1 },
		{ "acme/lib-*", "acme/app", 1, 0 },
		/* patterns read as patterns */
		{ "refs/heads/*", "refs/heads/*", 0, 1 },
		{ "refs/heads/*", "refs/heads/agent-*", 0, 1 },
		{ "refs/heads/*", "refs/heads/?", 0, 1 },
		{ "refs/heads/*", "refs/heads/**", 0, 0 },	/* ** crosses / */
		{ "refs/heads/**", "refs/heads/**", 0, 1 },
		{ "refs/heads/**", "refs/heads/agent/*", 0, 1 },
		{ "refs/heads/agent/*", "refs/heads/*", 0, 0 },
		{ "refs/heads/a*", "refs/heads/*", 0, 0 },
		{ "refs/heads/?", "refs/heads/*", 0, 0 },
		{ "refs/heads/??", "refs/heads/?", 0, 0 },
		{ "refs/heads/x", "refs/heads/?", 0, 0 },
		{ "refs/heads/x", "refs/heads/*", 0, 0 },
		{ "*/*", "acme/*", 1, 1 },
		{ "acme/*", "*/*", 1, 0 },
		{ "refs/***", "refs/a/b", 0, 1 },		/* *** is ** */
		{ "refs/*", "refs/***", 0, 0 },
	};
	size_t i;

	for (i = 0; i < NELEM(t); i++)
		if (policy_glob_covers(t[i].pat, t[i].sub, t[i].ci) != t[i].want) {
			fprintf(stderr, "  covers(%s, %s) != %d\n", t[i].pat,
			    t[i].sub, t[i].want);
			unit_cur_failed++;
		}
}

/* Long hostile patterns: quadratic, no blowup. */
TEST(test_glob_hostile)
{
	char pat[201], sub[201];
	int i;

	for (i = 0; i < 200; i++)
		pat[i] = i % 3 == 2 ? 'a' : '*';
	pat[199] = 'a';
	pat[200] = '\0';
	memset(sub, 'a', 199);
	sub[199] = 'b';
	sub[200] = '\0';
	CHECK(policy_glob_covers(pat, sub, 0) == 0);
	sub[199] = 'a';
	CHECK(policy_glob_covers(pat, sub, 0) == 1);
}

/* policy_narrower(a, b): is b within a. */
TEST(test_narrower)
{
	static const struct { const char *a, *b; int want; const char *err; } t[] = {
		{ NULL, "{}", 1, NULL },
		{ NULL, NULL, 1, NULL },
		{ "{}", NULL, 0, "policy: none (no restriction) is wider" },
		{ "{}", "{}", 1, NULL },
		{ "{}", "{\"github\":{}}", 1, NULL },
		{ "{\"github\":{}}", "{}", 1, NULL },	/* takes a's section */
		{ "{\"github\":{}}", "{\"gitlab\":{}}", 1, NULL },
		/* repositories */
		{ "{\"github\":{\"repositories\":[\"acme/*\"]}}",
		  "{\"github\":{\"repositories\":[\"acme/app\",\"ACME/lib-*\"]}}", 1, NULL },
		{ "{\"github\":{\"repositories\":[\"acme/*\"]}}",
		  "{\"github\":{\"repositories\":[\"acme/app\",\"evil/app\"]}}", 0,
		  "policy.github.repositories[1]: \"evil/app\" is not within the "
		  "repositories of the current policy" },
		{ "{\"github\":{\"repositories\":[\"acme/app\"]}}",
		  "{\"github\":{}}", 0, "policy.github.repositories: absent (any)" },
		{ "{\"github\":{}}",
		  "{\"github\":{\"repositories\":[\"x/y\"]}}", 1, NULL },
		{ "{\"github\":{\"repositories\":[]}}",
		  "{\"github\":{\"repositories\":[]}}", 1, NULL },
		{ "{\"github\":{\"repositories\":[]}}",
		  "{\"github\":{\"repositories\":[\"a/b\"]}}", 0,
		  "policy.github.repositories[0]" },
		{ "{\"gitlab\":{\"projects\":[\"g/**\"]}}",
		  "{\"gitlab\":{\"projects\":[\"g/sub/p\",\"G/x\"]}}", 1, NULL },
		{ "{\"gitlab\":{\"projects\":[\"g/*\"]}}",
		  "{\"gitlab\":{\"projects\":[\"g/sub/p\"]}}", 0,
		  "policy.gitlab.projects[0]: \"g/sub/p\"" },
		/* push */
		{ "{\"github\":{\"push\":[\"refs/heads/agent/**\"]}}",
		  "{\"github\":{\"push\":[\"refs/heads/agent/x-*\"]}}", 1, NULL },
		{ "{\"github\":{\"push\":[\"refs/heads/agent/*\"]}}",
		  "{\"github\":{\"push\":[\"refs/heads/agent/**\"]}}", 0,
		  "policy.github.push[0]: \"refs/heads/agent/**\" is not within the "
		  "push patterns of the current policy" },
		{ "{\"github\":{\"push\":[\"refs/heads/agent/*\"]}}",
		  "{\"github\":{\"push\":[\"refs/heads/Agent/x\"]}}", 0,
		  "policy.github.push[0]" },	/* refs: case matters */
		{ "{\"github\":{\"push\":[]}}", "{\"github\":{}}", 0,
		  "policy.github.push: absent (any ref)" },
		/* protect */
		{ "{\"github\":{\"protect\":[\"refs/heads/main\"]}}",
		  "{\"github\":{\"protect\":[\"refs/heads/*\"]}}", 1, NULL },
		{ "{\"github\":{\"protect\":[\"refs/heads/*\"]}}",
		  "{\"github\":{\"protect\":[\"refs/heads/main\"]}}", 0,
		  "policy.github.protect: does not cover \"refs/heads/*\"" },
		{ "{\"github\":{\"protect\":[\"refs/heads/main\"]}}",
		  "{\"github\":{}}", 0, "policy.github.protect: absent (nothing "
		  "protected) drops \"refs/heads/main\"" },
		{ "{\"github\":{\"protect\":[]}}", "{\"github\":{}}", 1, NULL },
		{ "{\"github\":{}}", "{\"github\":{\"protect\":[\"x\"]}}", 1, NULL },
		/* permissions */
		{ "{\"github\":{\"permissions\":{\"contents\":\"write\"}}}",
		  "{\"github\":{\"permissions\":{\"contents\":\"read\"}}}", 1, NULL },
		{ "{\"github\":{\"permissions\":{\"contents\":\"write\"}}}",
		  "{\"github\":{\"permissions\":{\"contents\":\"write\"}}}", 1, NULL },
		{ "{\"github\":{\"permissions\":{\"contents\":\"write\"}}}",
		  "{\"github\":{\"permissions\":{\"contents\":\"admin\"}}}", 0,
		  "policy.github.permissions.contents: \"admin\" is more than the "
		  "\"write\" of the current policy" },
		{ "{\"github\":{\"permissions\":{\"contents\":\"write\"}}}",
		  "{\"github\":{\"permissions\":{\"issues\":\"read\"}}}", 0,
		  "policy.github.permissions.issues: not granted" },
		{ "{\"github\":{\"permissions\":{\"contents\":\"write\"}}}",
		  "{\"github\":{\"permissions\":{}}}", 1, NULL },
		{ "{\"github\":{\"permissions\":{\"contents\":\"write\"}}}",
		  "{\"github\":{}}", 0, "policy.github.permissions: absent" },
		{ "{\"github\":{}}",
		  "{\"github\":{\"permissions\":{\"x\":\"admin\"}}}", 1, NULL },
		/* delete */
		{ "{\"github\":{}}", "{\"github\":{\"delete\":true}}", 0,
		  "policy.github.delete: true, but the current policy refuses deletes" },
		{ "{\"github\":{\"delete\":false}}", "{\"github\":{\"delete\":true}}", 0,
		  "policy.github.delete" },
		{ "{\"github\":{\"delete\":true}}", "{\"github\":{\"delete\":true}}", 1, NULL },
		{ "{\"github\":{\"delete\":true}}", "{\"github\":{}}", 1, NULL },
		{ "{\"gitlab\":{}}", "{\"gitlab\":{\"delete\":true}}", 0,
		  "policy.gitlab.delete" },
		/* api */
		{ "{\"github\":{\"api\":\"repositories\"}}", "{\"github\":{}}", 0,
		  "policy.github.api: absent (\"all\") is wider than the "
		  "\"repositories\" of the current policy" },
		{ "{\"github\":{\"api\":\"repositories\"}}",
		  "{\"github\":{\"api\":\"all\"}}", 0, "policy.github.api: \"all\"" },
		{ "{\"github\":{}}", "{\"github\":{\"api\":\"repositories\"}}", 1, NULL },
		{ "{\"github\":{\"api\":\"all\"}}", "{\"github\":{\"api\":\"all\"}}", 1, NULL },
		{ "{\"gitlab\":{\"api\":\"projects\"}}", "{\"gitlab\":{\"api\":\"all\"}}", 0,
		  "policy.gitlab.api" },
		/* graphql */
		{ "{\"github\":{}}", "{\"github\":{\"graphql_mutations\":true}}", 0,
		  "policy.github.graphql_mutations: true" },
		{ "{\"github\":{\"graphql_mutations\":true}}", "{\"github\":{}}", 1, NULL },
		{ "{\"gitlab\":{}}", "{\"gitlab\":{\"graphql_mutations\":true}}", 0,
		  "policy.gitlab.graphql_mutations: true" },
		{ "{\"gitlab\":{\"graphql_mutations\":true}}", "{\"gitlab\":{}}", 1, NULL },
		{ "{\"github\":{\"graphql_mutations\":true}}",
		  "{\"github\":{\"graphql_mutations\":true}}", 1, NULL },
		/* the example against itself and a narrower one */
		{ "{\"github\":{\"repositories\":[\"acme/app\",\"acme/lib-*\"],"
		  "\"permissions\":{\"contents\":\"write\",\"pull_requests\":\"write\"},"
		  "\"push\":[\"refs/heads/agent/**\"],\"protect\":[\"refs/heads/main\","
		  "\"refs/tags/**\"],\"delete\":false,\"api\":\"repositories\"}}",
		  "{\"github\":{\"repositories\":[\"acme/app\"],"
		  "\"permissions\":{\"contents\":\"write\"},"
		  "\"push\":[\"refs/heads/agent/task-1\"],\"protect\":[\"refs/heads/main\","
		  "\"refs/tags/**\",\"refs/heads/release\"],\"api\":\"repositories\"}}",
		  1, NULL },
	};
	struct policy *a, *b;
	char err[512];
	size_t i;
	int got;

	for (i = 0; i < NELEM(t); i++) {
		a = t[i].a != NULL ? P(t[i].a) : NULL;
		b = t[i].b != NULL ? P(t[i].b) : NULL;
		err[0] = '\0';
		got = policy_narrower(a, b, err, sizeof(err));
		if (got != t[i].want || (t[i].err != NULL &&
		    strncmp(err, t[i].err, strlen(t[i].err)) != 0)) {
			fprintf(stderr, "  row %zu: narrower=%d err=\"%s\"\n", i, got,
			    err);
			unit_cur_failed++;
		}
		/* Every policy is within itself and within no policy. */
		if (b != NULL) {
			CHECK(policy_narrower(b, b, err, sizeof(err)) == 1);
			CHECK(policy_narrower(NULL, b, err, sizeof(err)) == 1);
		}
		policy_free(a);
		policy_free(b);
	}
}

TEST(test_combine)
{
	struct policy *op, *cl, *r;
	char err[512], *txt;
	int widens;

	op = P("{\"github\":{\"repositories\":[\"acme/*\"],\"push\":"
	    "[\"refs/heads/agent/**\"]},\"gitlab\":{\"projects\":[\"g/p\"]}}");
	/* No client policy: the operator's. */
	r = policy_combine(op, NULL, &widens, err, sizeof(err));
	txt = policy_text(r);
	CHECK_STR(txt, "{\"github\":{\"repositories\":[\"acme/*\"],\"push\":"
	    "[\"refs/heads/agent/**\"]},\"gitlab\":{\"projects\":[\"g/p\"]}}");
	CHECK_INT(widens, 0);
	free(txt);
	policy_free(r);
	/* A narrower client: its own, with the operator's gitlab section. */
	cl = P("{\"github\":{\"repositories\":[\"acme/app\"],\"push\":"
	    "[\"refs/heads/agent/t1\"]}}");
	r = policy_combine(op, cl, &widens, err, sizeof(err));
	txt = policy_text(r);
	CHECK_STR(txt, "{\"github\":{\"repositories\":[\"acme/app\"],\"push\":"
	    "[\"refs/heads/agent/t1\"]},\"gitlab\":{\"projects\":[\"g/p\"]}}");
	free(txt);
	policy_free(r);
	policy_free(cl);
	/* A wider client: refused, naming the member and whose. */
	cl = P("{\"github\":{\"repositories\":[\"acme/app\"],\"push\":"
	    "[\"refs/heads/main\"]}}");
	r = policy_combine(op, cl, &widens, err, sizeof(err));
	CHECK(r == NULL);
	CHECK_INT(widens, 1);
	CHECK_STR(err, "policy.github.push[0]: \"refs/heads/main\" is not within "
	    "the push patterns of the operator's policy");
	policy_free(cl);
	/* No operator policy: the client's as it is. */
	cl = P("{\"gitlab\":{\"projects\":[\"g/p\"],\"delete\":true}}");
	r = policy_combine(NULL, cl, &widens, err, sizeof(err));
	txt = policy_text(r);
	CHECK_STR(txt, "{\"gitlab\":{\"projects\":[\"g/p\"],\"delete\":true}}");
	free(txt);
	policy_free(r);
	/* Neither: none. */
	CHECK(policy_combine(NULL, NULL, &widens, err, sizeof(err)) == NULL);
	CHECK_INT(widens, 0);
	/* policy_narrow names the current policy. */
	r = policy_narrow(op, cl, &widens, err, sizeof(err));
	CHECK(r == NULL);
	CHECK_INT(widens, 1);
	CHECK_STR(err, "policy.gitlab.delete: true, but the current policy "
	    "refuses deletes");
	policy_free(cl);
	policy_free(op);
}

/* "credentials": names the proxy's named credentials; only ever narrowed. */
TEST(test_credentials)
{
	static const struct { const char *txt, *want; } bad[] = {
		{ "{\"credentials\":\"npm\"}", "policy.credentials: must be a list of strings" },
		{ "{\"credentials\":[\"NPM\"]}", "policy.credentials[0]: a credential name is 1-63" },
		{ "{\"credentials\":[\"ok\",\"a b\"]}", "policy.credentials[1]: must be a string" },
		{ "{\"credentials\":[\"a/b\"]}", "policy.credentials[0]: a credential name" },
		{ "{\"credentials\":[],\"credentials\":[]}", "policy.credentials: appears twice" },
		{ "{\"credential\":[]}", "unknown member 'credential' (the members are github, gitlab and credentials)" },
	};
	struct policy *op, *cl, *r;
	char err[512], *txt;
	size_t i;
	int widens;

	for (i = 0; i < NELEM(bad); i++) {
		CHECK(policy_parse(bad[i].txt, strlen(bad[i].txt), "policy", err, sizeof(err)) == NULL);
		if (strstr(err, bad[i].want) == NULL) {
			fprintf(stderr, "  %s: got \"%s\"\n", bad[i].txt, err);
			CHECK(0);
		}
	}
	/* canonical: sorted, duplicates dropped, after the sections */
	r = P("{\"credentials\":[\"npm\",\"aws-dev\",\"npm\"],\"github\":{\"delete\":false}}");
	txt = policy_text(r);
	CHECK_STR(txt, "{\"github\":{\"delete\":false},\"credentials\":[\"aws-dev\",\"npm\"]}");
	free(txt);
	policy_free(r);
	op = P("{\"credentials\":[\"npm\",\"model\"],\"github\":{\"repositories\":[\"acme/*\"]}}");
	/* a client naming fewer: its list */
	cl = P("{\"credentials\":[\"model\"]}");
	r = policy_combine(op, cl, &widens, err, sizeof(err));
	txt = policy_text(r);
	CHECK_STR(txt, "{\"github\":{\"repositories\":[\"acme/*\"]},\"credentials\":[\"model\"]}");
	free(txt);
	policy_free(r);
	policy_free(cl);
	/* none at all is narrower than any list */
	cl = P("{\"credentials\":[]}");
	CHECK(policy_narrower(op, cl, err, sizeof(err)));
	policy_free(cl);
	/* a client without the member takes the operator's list */
	cl = P("{\"github\":{\"repositories\":[\"acme/app\"]}}");
	r = policy_combine(op, cl, &widens, err, sizeof(err));
	txt = policy_text(r);
	CHECK_STR(txt, "{\"github\":{\"repositories\":[\"acme/app\"]},\"credentials\":[\"model\",\"npm\"]}");
	free(txt);
	policy_free(r);
	policy_free(cl);
	/* one more name widens */
	cl = P("{\"credentials\":[\"npm\",\"aws\"]}");
	CHECK(policy_combine(op, cl, &widens, err, sizeof(err)) == NULL);
	CHECK_INT(widens, 1);
	CHECK_STR(err, "policy.credentials[1]: \"aws\" is not among the credentials of the "
	    "operator's policy");
	CHECK(!policy_narrower(op, cl, err, sizeof(err)));
	policy_free(cl);
	/* an operator without a list: the client's as it is */
	cl = P("{\"credentials\":[\"aws\"]}");
	r = policy_combine(NULL, cl, &widens, err, sizeof(err));
	txt = policy_text(r);
	CHECK_STR(txt, "{\"credentials\":[\"aws\"]}");
	free(txt);
	policy_free(r);
	policy_free(cl);
	policy_free(op);
}

TEST(test_policy_set)
{
	static const struct { const char *txt, *want; } bad[] = {
		{ "[]", "ops.json: must be a JSON object" },
		{ "{", "ops.json: must be a JSON object" },
		{ "{\"defaults\":{}}", "ops.json: unknown member 'defaults'" },
		{ "{\"default\":{\"github\":{\"push\":[1]}}}",
		  "ops.json: default.github.push[0]: must be" },
		{ "{\"orgs\":[]}", "ops.json: orgs: must be an object" },
		{ "{\"orgs\":{\"acme\":{\"gitlab\":{\"api\":\"x\"}}}}",
		  "ops.json: orgs.acme.gitlab.api: must be" },
		{ "{\"orgs\":{\"a b\":{}}}", "ops.json: orgs.a?b: not an org id" },
		{ "{\"orgs\":{\"a\":{},\"a\":{}}}", "ops.json: orgs.a: not an org id" },
		{ "{\"default\":{},\"default\":{}}", "ops.json: default: appears twice" },
	};
	const char *good = "{\"default\":{\"github\":{\"api\":\"repositories\"}},"
	    "\"orgs\":{\"acme\":{\"github\":{\"repositories\":[\"acme/*\"]}}}}";
	struct policy_set *s;
	char err[512], *txt;
	size_t i;

	for (i = 0; i < NELEM(bad); i++) {
		err[0] = '\0';
		s = policy_set_parse(bad[i].txt, strlen(bad[i].txt), "ops.json", err,
		    sizeof(err));
		CHECK(s == NULL);
		if (strncmp(err, bad[i].want, strlen(bad[i].want)) != 0) {
			fprintf(stderr, "  %s: got \"%s\"\n", bad[i].txt, err);
			unit_cur_failed++;
		}
	}
	s = policy_set_parse(good, strlen(good), "ops.json", err, sizeof(err));
	CHECK(s != NULL);
	CHECK_INT(policy_set_norgs(s), 1);
	CHECK_INT(policy_set_norgs(NULL), 0);
	txt = policy_text(policy_set_for(s, "acme"));
	CHECK_STR(txt, "{\"github\":{\"repositories\":[\"acme/*\"]}}");
	free(txt);
	txt = policy_text(policy_set_for(s, "other"));
	CHECK_STR(txt, "{\"github\":{\"api\":\"repositories\"}}");
	free(txt);
	txt = policy_text(policy_set_for(s, ""));
	CHECK_STR(txt, "{\"github\":{\"api\":\"repositories\"}}");
	free(txt);
	policy_set_free(s);
	s = policy_set_parse("{}", 2, "ops.json", err, sizeof(err));
	CHECK(s != NULL);
	CHECK(policy_set_for(s, "acme") == NULL);
	policy_set_free(s);
	CHECK(policy_set_for(NULL, "acme") == NULL);
	s = policy_set_load("/nonexistent/policy.json", err, sizeof(err));
	CHECK(s == NULL);
	CHECK_STR(err, "/nonexistent/policy.json: No such file or directory");
}

/* The record's policy label is the register op's "policy" object, not a
 * label; one that does not parse goes as a string (the proxy refuses it:
 * no registration without the policy). */
TEST(test_register_msg)
{
	struct rt_kv kv[] = {
		{ "session", "s1" }, { "org", "acme" },
		{ "policy", "{\"github\":{\"push\":[\"refs/heads/agent/**\"]}}" },
		{ "apps", "web:8000:00" }, { "created-ms", "1" },
	};
	struct egress_reg r = { .id = "sb-1", .labels = kv, .nlabels = NELEM(kv),
	    .listen_fd = -1 };
	cJSON *m = egress_register_msg(&r), *p;
	char *txt;

	p = cJSON_GetObjectItemCaseSensitive(m, "policy");
	CHECK(cJSON_IsObject(p));
	txt = cJSON_PrintUnformatted(p);
	CHECK_STR(txt, "{\"github\":{\"push\":[\"refs/heads/agent/**\"]}}");
	free(txt);
	txt = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(m, "attrs"));
	CHECK_STR(txt, "{\"org\":\"acme\",\"session\":\"s1\",\"labels\":"
	    "{\"session\":\"s1\",\"org\":\"acme\",\"created-ms\":\"1\"}}");
	free(txt);
	cJSON_Delete(m);
	/* No label: no member. */
	r.nlabels = 2;
	m = egress_register_msg(&r);
	CHECK(cJSON_GetObjectItemCaseSensitive(m, "policy") == NULL);
	cJSON_Delete(m);
	/* A label that is not an object: sent as a string. */
	kv[2].v = "[1,2]";
	r.nlabels = 3;
	m = egress_register_msg(&r);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m,
	    "policy")), "[1,2]");
	cJSON_Delete(m);
	kv[2].v = "{nope";
	m = egress_register_msg(&r);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m,
	    "policy")), "{nope");
	cJSON_Delete(m);
}

int
main(void)
{
	RUN(test_valid);
	RUN(test_invalid);
	RUN(test_limits);
	RUN(test_canonical);
	RUN(test_glob_covers);
	RUN(test_glob_hostile);
	RUN(test_narrower);
	RUN(test_combine);
	RUN(test_credentials);
	RUN(test_policy_set);
	RUN(test_register_msg);
	return unit_done();
}
