/*
 * fuzz_proxy_qaction.c: GitLab quick actions in request text (egress-proxy/
 * qaction.c) through the gate that refuses them (bodygate.c). The input is
 * a body, read as JSON and as a form, and a URL query. Every verdict must be
 * well formed (a reason when not passing); and the same text must get the
 * same answer however it is carried: the raw bytes as a JSON string (every
 * byte escaped \u00XX) and as a %-encoded form value are judged alike.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/bodygate.h"
#include "../../egress-proxy/qaction.h"

#define FZ_ASSERT(e) do { if (!(e)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
verdict_ok(const struct gql_verdict *v)
{
	FZ_ASSERT(v->res == GQL_PASS || v->res == GQL_DENY || v->res == GQL_BAD);
	if (v->res != GQL_PASS)
		FZ_ASSERT(v->why[0] != '\0' && memchr(v->why, '\0', sizeof(v->why)) != NULL);
}

static void
gate(enum qaction_body k, const char *q, size_t qn, const char *b, size_t bn)
{
	struct bgate *g = bgate_text_new(k, q, qn);
	enum bgate_verdict v;
	size_t off, n;

	for (off = 0; off < bn; off += n) {
		n = bn - off < BGATE_FEED ? bn - off : BGATE_FEED;
		bgate_feed(g, b + off, n);
		if (bgate_check(g, 0) != BG_MORE)
			break;
	}
	v = bgate_check(g, 1);
	FZ_ASSERT(v == BG_ALLOW || v == BG_DENY);
	if (v == BG_DENY) {
		int st = bgate_status(g);
		FZ_ASSERT(st == 400 || st == 403 || st == 413 || st == 415);
		bgate_body(g, &n);
		FZ_ASSERT(n > 0);
	}
	bgate_free(g);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct gql_verdict vj, vf, vt;
	char *json, *form, cmd[64];
	size_t i, jn = 0, fn = 0, split = size / 2;
	int hit;

	qaction_judge_body(QA_JSON, s, size, &vj);
	verdict_ok(&vj);
	qaction_judge_form(s, size, &vf);
	verdict_ok(&vf);
	gate(QA_JSON, s, split, s + split, size - split);
	gate(QA_FORM, s, split, s + split, size - split);
	gate(QA_OTHER, "", 0, s, size);

	/* the same text as a JSON string and as a form value */
	if (size > 4096)
		return 0;
	hit = qaction_find(s, size, cmd, sizeof(cmd));
	json = malloc(size * 6 + 3);
	form = malloc(size * 3 + 1);
	json[jn++] = '"';
	for (i = 0; i < size; i++) {
		jn += (size_t)snprintf(json + jn, 7, "\\u%04x", data[i]);
		fn += (size_t)snprintf(form + fn, 4, "%%%02X", data[i]);
	}
	json[jn++] = '"';
	qaction_judge_body(QA_JSON, json, jn, &vj);
	qaction_judge_form(form, fn, &vf);
	/* a JSON string must be UTF-8 once decoded; the form has no such rule */
	if (vj.res != GQL_BAD)
		FZ_ASSERT((vj.res == GQL_DENY) == hit);
	FZ_ASSERT((vf.res == GQL_DENY) == hit);
	qaction_judge_body(QA_FORM, form, fn, &vt);
	FZ_ASSERT(vt.res == vf.res);
	free(json);
	free(form);
	return 0;
}
