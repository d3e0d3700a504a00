/*
 * policy.h: a session's credential policy (docs/operator-guide.md,
 * "Credential policy"): what the egress proxy lets that session's sandbox
 * do with the operator's GitHub and GitLab credentials.
 *
 *   {"github": {"repositories": ["acme/app", "acme/lib-*"],
 *               "permissions": {"contents": "write"},
 *               "push": ["refs/heads/agent/<glob **>"],
 *               "protect": ["refs/heads/main"],
 *               "delete": false, "api": "repositories",
 *               "graphql_mutations": false},
 *    "gitlab": {"projects": ["group/project"], "push": [...], "protect": [...],
 *               "delete": false, "api": "projects"}}
 *
 * Every member is optional; an unknown member anywhere is refused. A
 * policy comes only from trusted parties (the operator's policy file, a
 * REST client) and only narrows later (policy_narrower). This module
 * parses, checks and compares policies; it knows nothing of sessions or
 * of the proxy, which reads the same JSON (the session's "policy" label,
 * sent as the register op's "policy" member: egress.c).
 *
 * Globs (repositories, projects, push, protect): '*' any run of characters
 * but '/', '**' any run including '/', '?' one character but '/';
 * everything else literal; the whole string must match. Repository and
 * project names compare case-insensitively, refs case-sensitively.
 */
#ifndef POLICY_H
#define POLICY_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "attrib.h"

#define POLICY_MAX_LIST		64	/* entries of one list */
#define POLICY_MAX_ENTRY	200	/* bytes of one list entry */
#define POLICY_MAX_PERMS	32	/* permissions of one section */
#define POLICY_MAX_PERM_NAME	64	/* bytes of a permission's name */
/* The compact JSON of a whole policy: it rides in the session record (a
 * label) and in every register message to the proxy (64 KiB datagrams). */
#define POLICY_MAX_JSON		8192

/* The session record label holding a session's policy (compact JSON). */
#define POLICY_LABEL		"policy"

struct policy;

/*
 * Checks j (a policy object) and returns it as a policy (free with
 * policy_free), or NULL with err naming the member and what is wrong:
 * "policy.github.push[2]: ...". what names the whole ("policy", or
 * "default" in the operator's file).
 */
struct policy *policy_from_json(const cJSON *j, const char *what, char *err,
	    size_t errlen) WUNRES;
/* Same, from text (the record label, the operator's file). */
struct policy *policy_parse(const char *txt, size_t len, const char *what,
	    char *err, size_t errlen) WUNRES;
void	policy_free(struct policy *);
/* A copy of p (NULL: NULL). */
struct policy *policy_dup(const struct policy *p);

/*
 * p as a JSON object (caller frees with cJSON_Delete): members in a fixed
 * order, lists sorted with duplicates dropped, permissions by name. Equal
 * policies give equal text.
 */
cJSON	*policy_to_json(const struct policy *p);
/* The same as compact text (caller frees); at most POLICY_MAX_JSON bytes. */
char	*policy_text(const struct policy *p) MALLOC;

/*
 * Is b within a: everything b allows a allows too? A NULL policy allows
 * everything. Per section of a (a section a has that b lacks counts as
 * a's, as policy_combine fills it in): each repository/project and push
 * pattern of b matched by a pattern of a (b's read as a pattern, so the
 * check is conservative: "acme/<*>" is not within "acme/a<*>" even
 * if the owner has no other repository), each permission of b at most a's, b's
 * protect covering a's, delete and graphql_mutations only if a allows
 * them, api at least as strict. 1 if so; 0 with err naming b's first
 * member that widens ("policy.github.push[0]: ... is not within ...").
 */
int	policy_narrower(const struct policy *a, const struct policy *b,
	    char *err, size_t errlen);

/*
 * The policy of a session that asks for client under an operator's
 * policy op (either may be NULL: none): client with op's sections it
 * lacks, when it is within op; NULL client gives a copy of op. Caller
 * frees. On a widening returns NULL with err (policy_narrower's) and
 * *widens 1; the result is NULL without error only when both are NULL.
 */
struct policy *policy_combine(const struct policy *op,
	    const struct policy *client, int *widens, char *err, size_t errlen);
/* The same for a trusted change of a session's policy cur to b (PUT
 * /v1/sessions/{id}/policy): b with cur's sections it lacks, or NULL
 * with *widens 1 and err when b is not within cur. */
struct policy *policy_narrow(const struct policy *cur, const struct policy *b,
	    int *widens, char *err, size_t errlen);

/*
 * Does glob pattern pat match every string that glob pattern sub matches
 * (sub read as a pattern: a string without '*' and '?' is itself)? ci:
 * ASCII letters compare case-insensitively. Sound, not complete.
 * O(len(pat) * len(sub)).
 */
int	policy_glob_covers(const char *pat, const char *sub, int ci);

/* The operator's policies: a default and one per org. */
struct policy_set;

/*
 * Reads the operator's policy file: {"default": {...}, "orgs": {"acme":
 * {...}}}, both members optional, nothing else. NULL with err ("<path>:
 * orgs.acme.github.push[1]: ...") on any fault.
 */
struct policy_set *policy_set_load(const char *path, char *err, size_t errlen)
	    WUNRES;
/* Same, from text (tests); name stands for the path in messages. */
struct policy_set *policy_set_parse(const char *txt, size_t len,
	    const char *name, char *err, size_t errlen) WUNRES;
void	policy_set_free(struct policy_set *);
/* The operator's policy for org (NULL/"": none): the org's, else the
 * default, else NULL. Borrowed from set (which may be NULL). */
const struct policy *policy_set_for(const struct policy_set *set,
	    const char *org);
/* How many orgs set has a policy for (NULL: 0). */
size_t	policy_set_norgs(const struct policy_set *set);

#endif
