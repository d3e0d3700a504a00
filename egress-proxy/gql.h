/*
 * gql.h: judges a GraphQL request body the way a GraphQL server reads it,
 * for the body gate (bodygate.c; docs/proxy.md "GraphQL rules").
 *
 * The rules: no mutation at all, or only mutations whose root fields are
 * all on an allow-list (a server runs a mutation's root fields, and only
 * those change anything; `__typename` is always allowed there).
 *
 * How a body is read, and why each refusal:
 *   - the envelope is strict JSON (RFC 8259: UTF-8 only, no BOM, nothing
 *     after the value): an object {"query", "operationName", "variables",
 *     "extensions"} or a batched array of them. A key twice in any object
 *     is unjudgeable (JSON parsers keep the first or the last); so is an
 *     unknown member of the object (a server may read "Query" or "id") and
 *     a persisted query whose document the proxy cannot see (no "query"
 *     beside extensions.persistedQuery or an "id"/"documentId"), or whose
 *     sha256Hash is not the hash of the "query" sent with it.
 *   - "query" is decoded (escapes such as \u006d spell "mutation"; lone
 *     surrogates refused) and lexed and parsed per the GraphQL spec
 *     (October 2021): names, punctuators, `#` comments, commas, BOM and
 *     white space ignored, strings with escapes, block strings, numbers,
 *     variables, directives, operations (query, mutation, subscription,
 *     the `{...}` shorthand), fragments, spreads, inline fragments,
 *     aliases. Executable definitions only. Control characters other than
 *     tab, LF and CR, and U+0085/U+2028/U+2029 (line ends to some lexers),
 *     are refused anywhere, comments and strings included, so no server
 *     can end a comment or a string where this reader does not.
 *   - every mutation operation of the document counts, whatever
 *     "operationName" says; its root fields are judged by their field
 *     name (an alias is ignored), through inline fragments and fragment
 *     spreads (resolved to GQL_SPREAD_DEPTH_MAX, cycles and undefined or
 *     twice-defined fragments refused); @skip/@include are ignored (the
 *     field counts).
 * No I/O and no state between calls: one call, one verdict.
 */
#ifndef PROXY_GQL_H
#define PROXY_GQL_H

#include <stddef.h>

#define GQL_BYTES_MAX		(256 * 1024)	/* a body; the gate holds it whole */
#define GQL_TOKENS_MAX		65536	/* lexical tokens in one body: bounds the parse's time */
#define GQL_DEPTH_MAX		64	/* nesting of (, [, { in a document, of [ and { in JSON */
#define GQL_BATCH_MAX		64	/* requests in one batched array */
#define GQL_SPREAD_DEPTH_MAX	32	/* fragment spreads followed from a mutation's root */
#define GQL_ALLOW_MAX		256	/* names on an allow-list */
#define GQL_NAME_MAX		128	/* bytes of an allow-list name */

enum gql_result {
	GQL_PASS,	/* no mutation the rules refuse */
	GQL_DENY,	/* a mutation the rules refuse: field names it */
	GQL_BAD		/* cannot be judged: why says why */
};

struct gql_verdict {
	enum gql_result	 res;
	char		 field[GQL_NAME_MAX + 1];	/* GQL_DENY: the root field (its name) */
	char		 why[240];			/* GQL_BAD: the reason, printable ASCII */
};

struct gql_rules;

/* Rules: mutations 0 refuses every mutation; 1 allows them (all, or those on the allow-list once one is given). */
struct gql_rules *gql_rules_new(int mutations);
/* 1 if s (n bytes) is a GraphQL name of at most GQL_NAME_MAX bytes. */
int	gql_name_ok(const char *s, size_t n);
/* Adds a root field name to the allow-list (and makes the list exist). -1: not a GraphQL name, too long or too many. */
int	gql_rules_allow(struct gql_rules *, const char *name, size_t n);
/* 1 if mutations may run under r (all, or the allow-list's). */
int	gql_rules_mutations(const struct gql_rules *);
/* 1 if a body could be refused under r (mutations refused, or an allow-list). */
int	gql_rules_restrict(const struct gql_rules *);
void	gql_rules_free(struct gql_rules *);

/* Judges a request body (the JSON envelope) of n bytes: v->res and its field or why. */
void	gql_judge(const struct gql_rules *, const char *body, size_t n, struct gql_verdict *v);
/* Judges a bare GraphQL document of n bytes (UTF-8 expected): the same verdicts. */
void	gql_judge_document(const struct gql_rules *, const char *doc, size_t n,
	    struct gql_verdict *v);

/*
 * The strict JSON reader above, for other bodies a gate judges (bodygate.c's
 * quick-action check): fn gets every string value (not keys), decoded;
 * nonzero refuses the body, with its reason written to why (printable ASCII).
 */
typedef int (*gql_str_fn)(void *arg, const char *s, size_t n, char *why, size_t whylen);
/*
 * Reads body (n bytes) as one strict JSON value (UTF-8, no BOM, a key twice
 * in an object refused, nested at most GQL_DEPTH_MAX, at most GQL_BYTES_MAX)
 * and calls fn on each string value: v->res GQL_PASS; GQL_DENY when fn
 * refused (v->why its reason); GQL_BAD when the body is not strict JSON.
 */
void	gql_json_strings(const char *body, size_t n, gql_str_fn fn, void *arg,
	    struct gql_verdict *v);

#endif
