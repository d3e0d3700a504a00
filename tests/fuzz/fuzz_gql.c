/*
 * fuzz_gql.c: the GraphQL request judge (egress-proxy/gql.c). The input is
 * judged as a request body and as a bare document, under three rule sets
 * (no mutation, an allow-list, every mutation). Besides memory safety and
 * the bounds it checks that:
 *   - verdicts are well formed (a refused field is a name, a reason is
 *     printable) and repeatable;
 *   - the rules are monotone: what passes with no mutation allowed passes
 *     with an allow-list, and with every mutation allowed nothing is
 *     refused for a field;
 *   - the JSON path agrees with the document path: a document judged
 *     PASS or DENY, wrapped as {"query": <it as a JSON string>} with
 *     escapes (\uXXXX for control characters, \" and \\), gets the same
 *     verdict and field.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/gql.h"

#define FZ_ASSERT(e) do { if (!(e)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gql_rules *rs[3];	/* no mutation, an allow-list, all */

static void
init_rules(void)
{
	static const char *const allow[] = { "addComment", "createIssue", "b", "a" };
	size_t i;

	if (rs[0] != NULL)
		return;
	rs[0] = gql_rules_new(0);
	rs[1] = gql_rules_new(1);
	rs[2] = gql_rules_new(1);
	for (i = 0; i < sizeof(allow) / sizeof(allow[0]); i++)
		FZ_ASSERT(gql_rules_allow(rs[1], allow[i], strlen(allow[i])) == 0);
}

static void
well_formed(const struct gql_verdict *v)
{
	size_t i;

	FZ_ASSERT(v->res == GQL_PASS || v->res == GQL_DENY || v->res == GQL_BAD);
	if (v->res == GQL_DENY) {
		FZ_ASSERT(v->field[0] == '_' || (v->field[0] | 0x20) >= 'a');
		for (i = 0; v->field[i] != '\0'; i++)
			FZ_ASSERT(v->field[i] == '_' || (v->field[i] >= '0' && v->field[i] <= '9') ||
			    ((v->field[i] | 0x20) >= 'a' && (v->field[i] | 0x20) <= 'z'));
	}
	if (v->res == GQL_BAD) {
		FZ_ASSERT(v->why[0] != '\0');
		for (i = 0; v->why[i] != '\0'; i++)
			FZ_ASSERT(v->why[i] >= 0x20 && v->why[i] < 0x7f);
	}
}

/* Judges s under the three rule sets (doc: as a bare document) and checks the relations. */
static void
judge3(const char *s, size_t n, int doc, struct gql_verdict v[3])
{
	struct gql_verdict again;
	int k;

	for (k = 0; k < 3; k++) {
		if (doc)
			gql_judge_document(rs[k], s, n, &v[k]);
		else
			gql_judge(rs[k], s, n, &v[k]);
		well_formed(&v[k]);
	}
	if (doc)
		gql_judge_document(rs[0], s, n, &again);
	else
		gql_judge(rs[0], s, n, &again);
	FZ_ASSERT(again.res == v[0].res && strcmp(again.field, v[0].field) == 0 &&
	    strcmp(again.why, v[0].why) == 0);
	if (v[0].res == GQL_PASS)
		FZ_ASSERT(v[1].res == GQL_PASS && v[2].res == GQL_PASS);
	FZ_ASSERT(v[2].res != GQL_DENY);
	if (v[1].res == GQL_DENY)
		FZ_ASSERT(v[0].res == GQL_DENY);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	struct gql_verdict vb[3], vd[3], vw[3];
	const char *s = (const char *)data;
	char *w;
	size_t i, o;
	int k;

	init_rules();
	if (size > GQL_BYTES_MAX + 16)
		return 0;
	judge3(s, size, 0, vb);
	judge3(s, size, 1, vd);
	if (vd[0].res == GQL_BAD || size > GQL_BYTES_MAX / 6 - 16)
		return 0;
	/* The same document through the envelope. */
	w = malloc(size * 6 + 16);
	o = (size_t)snprintf(w, 16, "{\"query\":\"");
	for (i = 0; i < size; i++) {
		unsigned char c = data[i];
		if (c == '"' || c == '\\') {
			w[o++] = '\\';
			w[o++] = (char)c;
		} else if (c < 0x20) {
			memcpy(w + o, "\\u00", 4);
			w[o + 4] = hex[c >> 4];
			w[o + 5] = hex[c & 15];
			o += 6;
		} else
			w[o++] = (char)c;
	}
	memcpy(w + o, "\"}", 2);
	o += 2;
	judge3(w, o, 0, vw);
	for (k = 0; k < 3; k++) {
		FZ_ASSERT(vw[k].res == vd[k].res);
		FZ_ASSERT(strcmp(vw[k].field, vd[k].field) == 0);
	}
	free(w);
	return 0;
}
