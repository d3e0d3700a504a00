/*
 * bodygate.c: push rules, the GraphQL mutation gate and the quick-action
 * gate (see bodygate.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bodygate.h"
#include "digest.h"
#include "pglob.h"
#include "pktline.h"
#include "xmalloc.h"

enum gkind { GK_PUSH, GK_GRAPHQL, GK_TEXT, GK_HASH };

struct bgate {
	enum gkind	 kind;
	/* push rules */
	char		**pat;		/* push patterns, then protect ones */
	unsigned char	*prot;		/* pat[i] is a protect pattern */
	size_t		 npat, npush;
	int		 has_push;	/* a push list was given (even empty) */
	int		 allow_delete;
	struct pktl	 pl;
	/* graphql */
	struct gql_rules *rules;
	enum bgate_forge forge;
	int		 url_params;	/* the URL has a query string */
	/* quick actions */
	enum qaction_body text;		/* the body's kind */
	struct gql_verdict qv;		/* the URL query's verdict */
	/* the body so far */
	struct buf	 held;
	int		 over;		/* more than the bound arrived */
	/* the verdict */
	enum bgate_verdict v;
	int		 status;
	char		 ctype[64];
	struct buf	 answer;
	char		 detail[400];
	char		 hash[65];	/* GK_HASH: the body's SHA-256 */
};

static struct bgate *
gate_new(enum gkind k)
{
	struct bgate *g = xcalloc(1, sizeof(*g));

	g->kind = k;
	pktl_init(&g->pl);
	buf_init(&g->held, k == GK_PUSH ? PKTL_MAX_BYTES + BGATE_FEED : BGATE_GRAPHQL_MAX);
	buf_init(&g->answer, 1 << 20);
	return g;
}

struct bgate *
bgate_push_new(void)
{
	return gate_new(GK_PUSH);
}

struct bgate *
bgate_graphql_new(struct gql_rules *rules, enum bgate_forge forge, int url_params)
{
	struct bgate *g = gate_new(GK_GRAPHQL);

	g->rules = rules;
	g->forge = forge;
	g->url_params = url_params;
	return g;
}

struct bgate *
bgate_text_new(enum qaction_body k, const char *q, size_t qn)
{
	struct bgate *g = gate_new(GK_TEXT);

	g->forge = BGATE_GITLAB;
	g->text = k;
	qaction_judge_form(q, qn, &g->qv);
	return g;
}

struct bgate *
bgate_hash_new(size_t max)
{
	struct bgate *g = gate_new(GK_HASH);

	buf_free(&g->held);
	buf_init(&g->held, max);
	return g;
}

int
bgate_hashes(const struct bgate *g)
{
	return g->kind == GK_HASH;
}

const char *
bgate_hash(const struct bgate *g)
{
	return g->hash;
}

int
bgate_push_add(struct bgate *g, int protect, const char *p, size_t n)
{
	if (g->npat >= BGATE_RULES_MAX || n > PGLOB_PATTERN_MAX)
		return -1;
	g->pat = xreallocarray(g->pat, g->npat + 1, sizeof(*g->pat));
	g->prot = xreallocarray(g->prot, g->npat + 1, 1);
	g->pat[g->npat] = xmalloc(n + 1);
	memcpy(g->pat[g->npat], p, n);
	g->pat[g->npat][n] = '\0';
	g->prot[g->npat++] = (unsigned char)protect;
	if (!protect) {
		g->npush++;
		g->has_push = 1;
	}
	return 0;
}

void
bgate_push_delete(struct bgate *g, int allowed)
{
	g->allow_delete = allowed;
}

void
bgate_push_list(struct bgate *g)
{
	g->has_push = 1;
}

void
bgate_free(struct bgate *g)
{
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->npat; i++)
		free(g->pat[i]);
	free(g->pat);
	free(g->prot);
	pktl_free(&g->pl);
	gql_rules_free(g->rules);
	buf_free(&g->held);
	buf_free(&g->answer);
	free(g);
}

const char *
bgate_kind(const struct bgate *g)
{
	return g->kind == GK_PUSH ? "push_rules" : g->kind == GK_GRAPHQL ? "graphql" :
	    g->kind == GK_HASH ? "sigv4_body" : "quick_action";
}

void
bgate_feed(struct bgate *g, const char *p, size_t n)
{
	if (g->over || buf_add(&g->held, p, n) == -1)
		g->over = 1;
}

/* Refuses with a text/plain answer (reason for the client and the audit). */
static enum bgate_verdict
deny_text(struct bgate *g, int status, const char *msg)
{
	g->v = BG_DENY;
	g->status = status;
	snprintf(g->ctype, sizeof(g->ctype), "text/plain");
	snprintf(g->detail, sizeof(g->detail), "%s", msg);
	buf_reset(&g->answer);
	if (buf_addf(&g->answer, "%s\n", msg) == -1)
		buf_reset(&g->answer);
	return g->v;
}

/* Which rule refuses the update of ref (n bytes); NULL: allowed. */
static const char *
push_rule(const struct bgate *g, const char *ref, size_t n, int del)
{
	size_t i;
	int in_push = 0;

	for (i = 0; i < g->npat; i++)
		if (g->prot[i] && pglob_match(g->pat[i], strlen(g->pat[i]), ref, n, 0))
			return "denied by policy: protected ref";
	if (del && !g->allow_delete)
		return "denied by policy: delete";
	if (!g->has_push && g->npush == 0)
		return NULL;
	for (i = 0; i < g->npat && !in_push; i++)
		if (!g->prot[i] && pglob_match(g->pat[i], strlen(g->pat[i]), ref, n, 0))
			in_push = 1;
	return in_push ? NULL : "denied by policy: ref outside push";
}

static enum bgate_verdict
check_push(struct bgate *g, int eof)
{
	const char **why, *first = NULL;
	size_t i, nref = 0, first_i = 0;
	int rc;

	rc = pktl_feed(&g->pl, g->held.p != NULL ? g->held.p : "", g->held.len, eof && !g->over);
	if (rc == PKTL_MORE && !g->over)
		return BG_MORE;
	if (rc != PKTL_DONE) {
		char m[220];
		snprintf(m, sizeof(m), "push refused by the proxy: %s", rc == PKTL_ERR ?
		    g->pl.err : "push command list too long");
		return deny_text(g, 400, m);
	}
	why = xcalloc(g->pl.ncmd + 1, sizeof(*why));
	for (i = 0; i < g->pl.ncmd; i++) {
		struct pktl_cmd *c = &g->pl.cmd[i];
		if ((why[i] = push_rule(g, g->held.p + c->ref_o, c->ref_l, c->del)) != NULL) {
			if (first == NULL) {
				first = why[i];
				first_i = i;
			}
			nref++;
		}
	}
	if (first == NULL) {
		free(why);
		g->v = BG_ALLOW;
		return g->v;
	}
	for (i = 0; i < g->pl.ncmd; i++)
		if (why[i] == NULL)
			why[i] = "not pushed: another ref of this push was denied by policy";
	snprintf(g->detail, sizeof(g->detail), "%s %.*s (%zu of %zu refs refused)", first,
	    (int)(g->pl.cmd[first_i].ref_l > 200 ? 200 : g->pl.cmd[first_i].ref_l),
	    g->held.p + g->pl.cmd[first_i].ref_o, nref, g->pl.ncmd);
	if (g->pl.report) {
		g->v = BG_DENY;
		g->status = 200;
		snprintf(g->ctype, sizeof(g->ctype), "application/x-git-receive-pack-result");
		buf_reset(&g->answer);
		if (pktl_report(&g->pl, g->held.p, why, &g->answer) == -1) {
			free(why);
			return deny_text(g, 403, g->detail);
		}
	} else {
		char m[420], d[sizeof(g->detail)];
		memcpy(d, g->detail, sizeof(d));
		snprintf(m, sizeof(m), "push %s", d);
		free(why);
		deny_text(g, 403, m);
		memcpy(g->detail, d, sizeof(d));
		return g->v;
	}
	free(why);
	return g->v;
}

/* ---- GraphQL ---- */

/* Appends s as the inside of a JSON string (its bytes are ASCII: ours or gql.c's). */
static int
json_str(struct buf *b, const char *s)
{
	int bad = 0;

	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			bad |= buf_addf(b, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			bad |= buf_addf(b, "\\u%04x", (unsigned char)*s);
		else
			bad |= buf_add(b, s, 1);
	}
	return bad;
}

/*
 * Refuses with status and message msg in the forge's JSON error shape
 * (GitHub: message and documentation_url; GitLab: "<status> <text> - msg").
 */
static enum bgate_verdict
deny_json(struct bgate *g, int status, const char *msg)
{
	int bad;

	g->v = BG_DENY;
	g->status = status;
	snprintf(g->ctype, sizeof(g->ctype), "application/json");
	snprintf(g->detail, sizeof(g->detail), "%s", msg);
	buf_reset(&g->answer);
	if (g->forge == BGATE_GITLAB) {
		bad = buf_addf(&g->answer, "{\"message\":\"%d %s - ", status, status == 403 ?
		    "Forbidden" : status == 413 ? "Payload Too Large" : status == 415 ?
		    "Unsupported Media Type" : "Bad request");
		bad |= json_str(&g->answer, msg);
		bad |= buf_addstr(&g->answer, "\"}");
	} else {
		bad = buf_addstr(&g->answer, "{\"message\":\"");
		bad |= json_str(&g->answer, msg);
		bad |= buf_addstr(&g->answer, "\",\"documentation_url\":\"https://docs.github.com/graphql\"}");
	}
	if (bad != 0)
		buf_reset(&g->answer);
	return g->v;
}

static enum bgate_verdict
check_graphql(struct bgate *g, int eof)
{
	struct gql_verdict v;
	char m[400];

	if (g->url_params)
		return deny_json(g, 400, "GraphQL request refused by the proxy: parameters in the URL "
		    "(the server may take the query from them); send the request in the body only");
	if (g->over) {
		snprintf(m, sizeof(m), "GraphQL request refused by the proxy: body larger than %d KiB "
		    "(the policy's GraphQL check reads it whole)", BGATE_GRAPHQL_MAX / 1024);
		return deny_json(g, 413, m);
	}
	if (!eof)
		return BG_MORE;
	gql_judge(g->rules, g->held.p != NULL ? g->held.p : "", g->held.len, &v);
	if (v.res == GQL_BAD) {
		snprintf(m, sizeof(m), "GraphQL request refused by the proxy: %s", v.why);
		return deny_json(g, 400, m);
	}
	if (v.res == GQL_DENY) {
		if (gql_rules_mutations(g->rules))
			snprintf(m, sizeof(m), "denied by policy: GraphQL mutation %s is not allowed "
			    "for this session", v.field);
		else
			snprintf(m, sizeof(m), "denied by policy: GraphQL mutations are not allowed "
			    "for this session (mutation %s)", v.field);
		return deny_json(g, 403, m);
	}
	g->v = BG_ALLOW;
	return g->v;
}

/* ---- quick actions ---- */

static enum bgate_verdict
text_verdict(struct bgate *g, const struct gql_verdict *v, const char *where)
{
	char m[400];

	if (v->res == GQL_DENY) {
		snprintf(m, sizeof(m), "denied by policy: %s: %s", where, v->why);
		return deny_json(g, 403, m);
	}
	snprintf(m, sizeof(m), "request refused by the proxy: the policy's quick-action check "
	    "cannot read the %s: %s", where, v->why);
	return deny_json(g, 400, m);
}

static enum bgate_verdict
check_text(struct bgate *g, int eof)
{
	struct gql_verdict v;
	char m[300];

	if (g->qv.res != GQL_PASS)
		return text_verdict(g, &g->qv, "URL query");
	if (g->over) {
		snprintf(m, sizeof(m), "request refused by the proxy: body larger than %d KiB (the "
		    "policy's quick-action check reads it whole)", BGATE_GRAPHQL_MAX / 1024);
		return deny_json(g, 413, m);
	}
	if (!eof)
		return BG_MORE;
	if (g->held.len == 0) {
		g->v = BG_ALLOW;
		return g->v;
	}
	if (g->text == QA_OTHER)
		return deny_json(g, 415, "request refused by the proxy: under push rules this "
		    "request's text is checked for quick actions: send it as JSON or a form");
	qaction_judge_body(g->text, g->held.p, g->held.len, &v);
	if (v.res != GQL_PASS)
		return text_verdict(g, &v, "body");
	g->v = BG_ALLOW;
	return g->v;
}

static enum bgate_verdict
check_hash(struct bgate *g, int eof)
{
	char m[300];

	if (g->over) {
		snprintf(m, sizeof(m), "request refused by the proxy: an AWS request without "
		    "x-amz-content-sha256 is signed again over its body's SHA-256, read whole, and "
		    "this body is larger than %zu MiB", g->held.max >> 20);
		return deny_text(g, 413, m);
	}
	if (!eof)
		return BG_MORE;
	if (digest_sha256_hex(g->held.p != NULL ? g->held.p : "", g->held.len, g->hash) == -1)
		return deny_text(g, 500, "request refused by the proxy: the body could not be "
		    "hashed");
	g->v = BG_ALLOW;
	return g->v;
}

enum bgate_verdict
bgate_check(struct bgate *g, int eof)
{
	if (g->v != BG_MORE)
		return g->v;
	switch (g->kind) {
	case GK_PUSH:
		return check_push(g, eof);
	case GK_GRAPHQL:
		return check_graphql(g, eof);
	case GK_HASH:
		return check_hash(g, eof);
	default:
		return check_text(g, eof);
	}
}

const char *
bgate_held(const struct bgate *g, size_t *n)
{
	*n = g->held.len;
	return g->held.p;
}

void
bgate_release(struct bgate *g)
{
	buf_free(&g->held);
	pktl_free(&g->pl);
}

int
bgate_status(const struct bgate *g)
{
	return g->status;
}

const char *
bgate_ctype(const struct bgate *g)
{
	return g->ctype;
}

const char *
bgate_body(const struct bgate *g, size_t *n)
{
	*n = g->answer.len;
	return g->answer.p != NULL ? g->answer.p : "";
}

const char *
bgate_detail(const struct bgate *g)
{
	return g->detail;
}
