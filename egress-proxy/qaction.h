/*
 * qaction.h: GitLab quick actions in the text of a request (docs/addons.md
 * "Writes under push rules"). GitLab runs a line of an issue's or merge
 * request's description, or of a note, that starts with "/" and a command
 * (`/merge`, `/rebase`, `/create_merge_request <branch>`, `/tag <name>` on
 * a commit, `/approve`, ...) as that command, with the token's rights, when
 * it saves the text: a comment can merge into a protected branch or make a
 * branch or tag the push rules forbid. Under push rules the proxy refuses
 * any text that GitLab could read as a quick action.
 *
 * What counts as one, read wider than GitLab does (it skips code blocks,
 * quotes and HTML; the proxy does not try to): a line (ended by LF or CR)
 * whose first byte after spaces and tabs is '/' followed by an ASCII
 * letter. Where the text is: every string value of a JSON body, every value
 * (and name) of a form body and of the URL's query (Rails merges the query's
 * parameters with the body's).
 *
 * No I/O and no state: unit-tested (tests/unit/test_proxy_qaction.c).
 */
#ifndef PROXY_QACTION_H
#define PROXY_QACTION_H

#include <stddef.h>

#include "gql.h"

/* The kinds of body the check reads. */
enum qaction_body {
	QA_NONE,	/* no body (Content-Length 0) */
	QA_JSON,	/* application/json (strict: gql_json_strings) */
	QA_FORM,	/* application/x-www-form-urlencoded */
	QA_OTHER	/* anything else: cannot be judged */
};

/* The kind of body a Content-Type value (n bytes; NULL: none) names. */
enum qaction_body qaction_body_kind(const char *ctype, size_t n);

/*
 * 1 if text s (n bytes) holds a line that reads as a quick action; the
 * command's name (at most cmdlen - 1 bytes of it) goes to cmd.
 */
int	qaction_find(const char *s, size_t n, char *cmd, size_t cmdlen);

/*
 * Judges a form-encoded string (a body or a URL's query; '&' or ';'
 * separate pairs, '+' is a space, %XX escapes): v->res GQL_PASS, GQL_DENY
 * with v->why naming the quick action, or GQL_BAD (a malformed escape).
 */
void	qaction_judge_form(const char *s, size_t n, struct gql_verdict *v);

/*
 * Judges a request body of kind k (QA_OTHER: GQL_BAD, it cannot be read),
 * as qaction_judge_form does.
 */
void	qaction_judge_body(enum qaction_body k, const char *body, size_t n,
	    struct gql_verdict *v);

#endif
