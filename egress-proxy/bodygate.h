/*
 * bodygate.h: decisions an addon asks the proxy to take on the start of a
 * request body before anything of the request goes upstream
 * (docs/addons.md "Push rules" and "GraphQL mutations"). The proxy feeds
 * the decoded body to the gate until it decides; the bytes held meanwhile
 * are bounded (BGATE_HOLD_MAX) and then sent first, the rest of the body
 * streams through untouched.
 *   push rules: the git-receive-pack command list (pktline.c) against
 *     push / protect globs (pglob.c) and the delete flag; a refusal is
 *     git's report-status, so `git push` shows `! [remote rejected]`.
 *   graphql: the whole body (at most BGATE_GRAPHQL_MAX) is judged by
 *     gql.c under the addon's rules (no mutation, or only an allow-list's
 *     root fields); a refusal is 403 in the forge's JSON error shape
 *     naming the field, a body that cannot be judged 400 with the reason.
 *     Parameters in the URL are refused before the body is read: Rails
 *     (GitHub, GitLab) merges them over the body's, so a query there
 *     would run instead of the one judged.
 *   quick actions (GitLab): the whole body (at most BGATE_GRAPHQL_MAX)
 *     and the URL's query are read for text GitLab would run as a quick
 *     action (qaction.c); a refusal is 403 in GitLab's JSON shape naming
 *     it, a body that cannot be read (not JSON or a form) 415.
 *   sigv4 body (credreq.c): not a policy but a credential's need: the
 *     whole body (at most BGATE_HASH_MAX) is read and hashed (SHA-256),
 *     so a SigV4 request of a service other than S3, which signs its
 *     body's hash without sending it, can be signed again with the real
 *     key before its head goes; a larger body is refused 413.
 * No I/O here: the proxy (proxy.c) moves the bytes.
 */
#ifndef PROXY_BODYGATE_H
#define PROXY_BODYGATE_H

#include <stddef.h>

#include "buf.h"
#include "gql.h"
#include "qaction.h"

#define BGATE_RULES_MAX		256		/* push + protect patterns */
#define BGATE_GRAPHQL_MAX	GQL_BYTES_MAX	/* a gated GraphQL body, whole */
#define BGATE_HOLD_MAX		(BGATE_GRAPHQL_MAX + 8192)
#define BGATE_HASH_MAX		(8 << 20)	/* a body hashed for SigV4, whole */

enum bgate_verdict { BG_MORE, BG_ALLOW, BG_DENY };

struct bgate;

/* A push-rules gate: no rules yet (anything but a delete passes). */
struct bgate	*bgate_push_new(void);
/* Adds a pattern to the push list (protect 0; also: a push list exists) or the protect list. -1: too many. */
int		 bgate_push_add(struct bgate *, int protect, const char *pat, size_t n);
void		 bgate_push_delete(struct bgate *, int allowed);
/* Marks that a push list exists (an empty one refuses every update). */
void		 bgate_push_list(struct bgate *);
/* The JSON error shapes of the forges' APIs. */
enum bgate_forge { BGATE_GITHUB, BGATE_GITLAB };
/*
 * A GraphQL gate judging by rules (owned by the gate from now on);
 * url_params: the request's URL has a query string (refused).
 */
struct bgate	*bgate_graphql_new(struct gql_rules *rules, enum bgate_forge forge,
		    int url_params);
/*
 * A quick-action gate for a body of kind k, with the URL's query q (qn
 * bytes, without the '?'; qn 0: none).
 */
struct bgate	*bgate_text_new(enum qaction_body k, const char *q, size_t qn);
/* A gate that reads the whole body (at most max bytes) for its SHA-256. */
struct bgate	*bgate_hash_new(size_t max);
/* Whether g is a hash gate (no policy: any Content-Encoding is hashed as sent). */
int		 bgate_hashes(const struct bgate *);
/* BG_ALLOW of a hash gate: the body's SHA-256, lower-case hex. */
const char	*bgate_hash(const struct bgate *);
void		 bgate_free(struct bgate *);
/* "push_rules", "graphql", "quick_action" or "sigv4_body": the audit's reason code for a refusal. */
const char	*bgate_kind(const struct bgate *);

/*
 * Feeds decoded body bytes (the proxy feeds at most BGATE_FEED at a
 * time and asks bgate_check after each), then decides. eof: the body is
 * complete. BG_MORE: feed more.
 */
#define BGATE_FEED	4096
void		 bgate_feed(struct bgate *, const char *p, size_t n);
enum bgate_verdict bgate_check(struct bgate *, int eof);

/* BG_ALLOW: the body bytes held, to send before the rest; then bgate_release. */
const char	*bgate_held(const struct bgate *, size_t *n);
void		 bgate_release(struct bgate *);

/*
 * BG_DENY: the answer (status, Content-Type, body) and one line for the
 * audit and the log naming the rule ("denied by policy: protected ref
 * refs/heads/main").
 */
int		 bgate_status(const struct bgate *);
const char	*bgate_ctype(const struct bgate *);
const char	*bgate_body(const struct bgate *, size_t *n);
const char	*bgate_detail(const struct bgate *);

#endif
