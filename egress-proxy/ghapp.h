/*
 * ghapp.h: GitHub App installation tokens. A JWT (RS256, signed with the
 * app's private key) is exchanged at POST {api}/app/installations/{id}/
 * access_tokens through libcurl multi on the worker's event loop; tokens
 * are cached process-wide until five minutes before expires_at. Redirects
 * are never followed, TLS is verified (system store + upstream.ca_bundle),
 * resolve overrides apply, and every failure is reported (fail closed).
 */
#ifndef PROXY_GHAPP_H
#define PROXY_GHAPP_H

#include <stdatomic.h>
#include <stddef.h>

struct event_base;
struct pconf;
struct ghapp;

struct ghapp_opts {
	const char	*api;		/* "https://api.github.com" */
	const char	*app_id;
	const char	*installation_id;
	const char	*key_file;	/* PEM private key of the app */
	const char	*body;		/* JSON body (repositories/permissions) or NULL;
					   with globs: permissions only */
	const char *const *globs;	/* owner/name globs (pglob.h, matched case-
					   insensitively with the installation's full
					   names): the token gets exactly the matching
					   repositories; NULL: none */
	size_t		 nglobs;
	const char	*owner;		/* sandbox id the token is for (cached for it alone,
					   revoked with it: ghapp_revoke_owner); NULL: shared */
};

/*
 * Token requests sent (by result) and refused while backing off, process
 * wide (metrics.c shows them).
 */
extern atomic_long ghapp_requests_ok, ghapp_requests_failed, ghapp_backoff_refused;
/* Revocations done (204, or the token already invalid) and given up. */
extern atomic_long ghapp_revoked_ok, ghapp_revoked_failed;

/*
 * After a failed token request, an installation (api, app_id,
 * installation_id) is not asked again for GHAPP_BACKOFF_MIN_S seconds,
 * doubling per consecutive failure up to GHAPP_BACKOFF_MAX_S; meanwhile
 * ghapp_token fails at once (closed) with the last error. Shared by all
 * workers; a success clears it.
 */
#define GHAPP_BACKOFF_MIN_S	1
#define GHAPP_BACKOFF_MAX_S	300

/*
 * Globbed repositories (ghapp_opts.globs): a metadata-only token lists
 * {api}/installation/repositories (GHAPP_LIST_PER_PAGE a page, at most
 * GHAPP_LIST_PAGES_MAX pages: an installation beyond that is refused
 * rather than half read) and is revoked when the listing ends; the token
 * is then asked for exactly the matching names. No match, or more than
 * GHAPP_REPOS_MAX (what GitHub takes in one request), fails closed, and
 * that refusal is kept GHAPP_NEGATIVE_S so a sandbox's requests do not
 * list the installation each time. GHAPP_GLOBS_MAX bounds a list.
 */
#define GHAPP_LIST_PER_PAGE	100
#define GHAPP_LIST_PAGES_MAX	50
#define GHAPP_REPOS_MAX		500
#define GHAPP_NEGATIVE_S	30
#define GHAPP_GLOBS_MAX		256

typedef void (*ghapp_cb)(void *arg, const char *token, const char *err);

struct ghapp	*ghapp_new(struct event_base *, const struct pconf *);
void		 ghapp_free(struct ghapp *);

/*
 * The access_tokens request body of a scope into out: {"repositories":
 * [names (at most 500)]} when with_names, {"permissions":{name:level}}
 * from the n pairs of perms when with_perms. The pairs are put in name
 * order first (perms is sorted in place): the body is part of the token
 * cache's key, so one scope must always read the same, whatever order the
 * caller's table gave. The caller checked the strings (no '"' or '\').
 * 0, or -1 when out is full.
 */
struct buf;
int	ghapp_scope_body(const char **names, size_t n, int with_names, const char **perms,
	    size_t nperm, int with_perms, struct buf *out);

/*
 * 0: tok holds a cached token. 1: a request is under way and cb(arg, ...)
 * will be called from the event loop. -1: err says why.
 */
int	ghapp_token(struct ghapp *, const struct ghapp_opts *, char *tok,
	    size_t toklen, char *err, size_t errlen, ghapp_cb cb, void *arg);
/* Forgets cb for arg (the waiter went away). */
void	ghapp_forget(struct ghapp *, void *arg);

/*
 * The revoker: DELETE {api}/installation/token requests on base's loop
 * (the main thread's), each tried GH_REVOKE_TRIES times (backing off 1, 2,
 * 4 s), every outcome logged. Start once; stop frees what is pending.
 */
int	ghapp_revoker_start(struct event_base *base, const struct pconf *conf);
void	ghapp_revoker_stop(void);
/*
 * Forgets every cached token minted for owner and queues its revocation
 * (never waits; any thread). A mint for owner still under way is revoked
 * when it finishes instead of being cached. Returns how many were queued.
 */
int	ghapp_revoke_owner(const char *owner);

/* Builds the RS256 JWT for app_id with the key in key_file. 0 or -1. */
int	ghapp_jwt(const char *app_id, const char *key_file, long now, char *out,
	    size_t outlen, char *err, size_t errlen);

#endif
