/*
 * test_proxy_qaction.c: GitLab quick actions in request text
 * (egress-proxy/qaction.c) and the gate that refuses them
 * (egress-proxy/bodygate.c): where a line reads as one, in JSON (escapes,
 * nesting, a key twice), form text and URL queries; what cannot be read.
 */
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/bodygate.h"
#include "../../egress-proxy/qaction.h"
#include "unit.h"

static const struct {
	const char	*s;
	int		 hit;
	const char	*cmd;
} lines[] = {
	{ "/merge", 1, "merge" },
	{ "looks good\n/merge", 1, "merge" },
	{ "looks good\r/merge", 1, "merge" },
	{ "looks good\r\n  \t/rebase now", 1, "rebase" },
	{ "/create_merge_request agent/x", 1, "create_merge_request" },
	{ "/tag v1.0 release", 1, "tag" },
	{ "/approve", 1, "approve" },
	{ "/MERGE", 1, "MERGE" },
	{ "see /usr/bin here", 0, NULL },
	{ "a/merge", 0, NULL },
	{ "//merge", 0, NULL },
	{ "/ merge", 0, NULL },
	{ "/1", 0, NULL },
	{ "", 0, NULL },
	{ "/", 0, NULL },
	{ "text\n", 0, NULL },
	{ "text\n/", 0, NULL },
	{ "x\n\n\n/spend 1h", 1, "spend" },
};

TEST(test_find)
{
	char cmd[64];
	size_t i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		int hit = qaction_find(lines[i].s, strlen(lines[i].s), cmd, sizeof(cmd));
		CHECK_INT(hit, lines[i].hit);
		if (hit && lines[i].cmd != NULL)
			CHECK_STR(cmd, lines[i].cmd);
	}
	/* a long name is cut to the buffer, still found */
	CHECK_INT(qaction_find("/abcdefghij", 11, cmd, 4), 1);
	CHECK_STR(cmd, "abc");
}

static enum gql_result
body(enum qaction_body k, const char *s)
{
	struct gql_verdict v;
	size_t n = strlen(s);
	char *copy = malloc(n + 1);	/* exactly its bytes, so ASan sees over-reads */
	enum gql_result r;

	memcpy(copy, s, n);
	qaction_judge_body(k, copy, n, &v);
	r = v.res;
	if (r != GQL_PASS)
		CHECK(v.why[0] != '\0');
	free(copy);
	return r;
}

TEST(test_json)
{
	CHECK_INT(body(QA_JSON, "{\"body\":\"looks good\"}"), GQL_PASS);
	CHECK_INT(body(QA_JSON, "{\"body\":\"looks good\\n/merge\"}"), GQL_DENY);
	CHECK_INT(body(QA_JSON, "{\"body\":\"\\u002fmerge\"}"), GQL_DENY);
	CHECK_INT(body(QA_JSON, "{\"body\":\"ok\\r\\/rebase\"}"), GQL_DENY);
	CHECK_INT(body(QA_JSON, "{\"a\":[1,{\"b\":[\"x\",\"/approve\"]}]}"), GQL_DENY);
	/* a key is not text GitLab runs; its value is */
	CHECK_INT(body(QA_JSON, "{\"/merge\":\"x\"}"), GQL_PASS);
	/* a key twice: Rails and the proxy could read different values */
	CHECK_INT(body(QA_JSON, "{\"body\":\"/merge\",\"body\":\"ok\"}"), GQL_DENY);
	CHECK_INT(body(QA_JSON, "{\"body\":\"ok\",\"body\":\"ok\"}"), GQL_BAD);
	CHECK_INT(body(QA_JSON, "{\"body\":\"ok\""), GQL_BAD);
	CHECK_INT(body(QA_JSON, "{\"body\":"), GQL_BAD);
	CHECK_INT(body(QA_JSON, "not json"), GQL_BAD);
	CHECK_INT(body(QA_JSON, "{\"body\":\"ok\"} x"), GQL_BAD);
	CHECK_INT(body(QA_JSON, "\"/merge\""), GQL_DENY);
}

TEST(test_form)
{
	CHECK_INT(body(QA_FORM, "body=looks+good"), GQL_PASS);
	CHECK_INT(body(QA_FORM, "body=%2Fmerge"), GQL_DENY);
	CHECK_INT(body(QA_FORM, "body=ok%0A%2fmerge"), GQL_DENY);
	CHECK_INT(body(QA_FORM, "a=1&body=ok%0D/rebase"), GQL_DENY);
	CHECK_INT(body(QA_FORM, "a=1;body=/merge"), GQL_DENY);
	CHECK_INT(body(QA_FORM, "note[body]=+/merge"), GQL_DENY);
	CHECK_INT(body(QA_FORM, "body=%zz"), GQL_BAD);
	CHECK_INT(body(QA_FORM, "body=%2"), GQL_BAD);
	CHECK_INT(body(QA_FORM, "body=/usr/bin/x+is+a+path+mid%20line"), GQL_DENY);
	CHECK_INT(body(QA_FORM, "body=see+/usr/bin"), GQL_PASS);
	CHECK_INT(body(QA_FORM, ""), GQL_PASS);
	CHECK_INT(body(QA_OTHER, "body=x"), GQL_BAD);
	CHECK_INT(body(QA_NONE, ""), GQL_PASS);
}

TEST(test_kind)
{
	CHECK_INT(qaction_body_kind(NULL, 0), QA_FORM);
	CHECK_INT(qaction_body_kind("application/json", 16), QA_JSON);
	CHECK_INT(qaction_body_kind("Application/JSON; charset=utf-8", 31), QA_JSON);
	CHECK_INT(qaction_body_kind("application/x-www-form-urlencoded", 33), QA_FORM);
	CHECK_INT(qaction_body_kind("multipart/form-data; boundary=x", 31), QA_OTHER);
	CHECK_INT(qaction_body_kind("application/jsonx", 17), QA_OTHER);
	CHECK_INT(qaction_body_kind("text/plain", 10), QA_OTHER);
}

/* The gate: status and reason for a body and a query. */
static int
gate(enum qaction_body k, const char *q, const char *b)
{
	struct bgate *g = bgate_text_new(k, q, strlen(q));
	enum bgate_verdict v;
	int st;

	bgate_feed(g, b, strlen(b));
	v = bgate_check(g, 1);
	st = v == BG_ALLOW ? 0 : bgate_status(g);
	if (v == BG_DENY) {
		size_t n;
		const char *a = bgate_body(g, &n);
		CHECK(n > 0 && strstr(a, "{\"message\":\"") == a);
		CHECK_STR(bgate_kind(g), "quick_action");
	}
	bgate_free(g);
	return st;
}

TEST(test_gate)
{
	CHECK_INT(gate(QA_JSON, "", "{\"body\":\"ok\"}"), 0);
	CHECK_INT(gate(QA_JSON, "", "{\"body\":\"/merge\"}"), 403);
	CHECK_INT(gate(QA_JSON, "body=%2Fmerge", "{\"body\":\"ok\"}"), 403);
	CHECK_INT(gate(QA_JSON, "x=%G0", "{}"), 400);
	CHECK_INT(gate(QA_JSON, "", "{\"body\":"), 400);
	CHECK_INT(gate(QA_OTHER, "", "--x\r\n"), 415);
	CHECK_INT(gate(QA_OTHER, "", ""), 0);
	CHECK_INT(gate(QA_FORM, "", "body=%2Fmerge"), 403);
	CHECK_INT(gate(QA_FORM, "private_token=x", "body=fine"), 0);
}

int
main(void)
{
	RUN(test_find);
	RUN(test_json);
	RUN(test_form);
	RUN(test_kind);
	RUN(test_gate);
	return unit_done();
}
