/*
 * addon.h: Lua 5.4 addons (docs/addons.md). The main thread loads the
 * addon files into a refcounted source set (validated by building a VM from
 * it); each worker builds its own VM (one lua_State) from the current set.
 * Every hook runs in its own coroutine with an instruction budget (VM
 * instructions plus pattern-matching steps: string.find/match/gmatch/gsub
 * are pmatch.c's), a heap budget per hook run, a bound of 100 ms of CPU per
 * run and the timeouts.hook deadline; a hook may yield while a GitHub App
 * token is minted. Any error, out of memory included, fails closed. Every
 * use of a worker's lua_State is a protected call; a Lua panic (a bug)
 * drops that VM and addon_vm_gen then tells the worker to build a new one.
 */
#ifndef PROXY_ADDON_H
#define PROXY_ADDON_H

#include <stddef.h>
#include <stdint.h>

#include "canon.h"
#include "cfg.h"

#define LREQ_BODY_MAX	2048	/* req:deny's body */

struct addon_src;
struct credset;
struct addon_vm;
struct hook;
struct hreq;
struct sandbox;
struct sbattrs;
struct pconf;
struct ghapp;

enum addon_action {
	ACT_NONE,	/* no decision / forward the request */
	ACT_INTERCEPT,
	ACT_TUNNEL,
	ACT_DENY,
	ACT_ERROR	/* addon failed: fail closed */
};

struct hook_ctx {
	const struct target	*t;
	struct sandbox		*sb;
	struct sbattrs		*attrs;
	int			 plain;		/* plain-HTTP request, not CONNECT */
	uint64_t		 conn_id;
};

struct hook_result {
	enum addon_action	 action;
	int			 status;	/* deny status (default 403) */
	int			 addon;		/* index of the deciding addon, -1 none */
	char			 reason[256];
	/* ACT_DENY from req:deny with a body: the answer's body and type (else text/plain reason). */
	char			 body[LREQ_BODY_MAX];
	size_t			 body_len;
	char			 ctype[64];
};

typedef void (*hook_cb)(void *arg, const struct hook_result *);

/*
 * Reads and validates the addon files (compiles and runs each in a scratch
 * VM). NULL with err on failure. The source set remembers the files'
 * mtimes (addon_src_changed).
 */
struct addon_src *addon_src_load(const struct cfg_list *files,
	    const struct pconf *conf, char *err, size_t errlen);
struct addon_src *addon_src_ref(struct addon_src *);
void	addon_src_unref(struct addon_src *);
int	addon_src_changed(const struct addon_src *);
unsigned addon_src_gen(const struct addon_src *);
size_t	addon_src_count(const struct addon_src *);
/* The credentials the addons declare (cred.h), a reference (cred_set_unref). */
struct credset *addon_src_creds(const struct addon_src *);
/*
 * Replaces src's credentials with cs (its reference taken): requests that
 * ask after this get cs; the old set is freed (secrets wiped) with its
 * last reference.
 */
void	addon_src_creds_set(struct addon_src *, struct credset *cs);

/* A worker's VM built from src; gh is the worker's token client (or NULL). */
struct addon_vm *addon_vm_new(struct addon_src *, const struct pconf *,
	    struct ghapp *gh, char *err, size_t errlen);
struct addon_vm *addon_vm_ref(struct addon_vm *);
void	addon_vm_unref(struct addon_vm *);
/*
 * The source generation the VM was built from; a different value once the
 * VM is unusable (Lua panic) or its heap is full of live data after running
 * out of memory (at most once per 10 s per worker), so the worker rebuilds.
 */
unsigned addon_vm_gen(const struct addon_vm *);
/* A full garbage collection of the VM (the worker is quiet). */
void	addon_vm_gc(struct addon_vm *);
/* Header names addon i asks the proxy to strip from client requests. */
const char *const *addon_vm_strip(const struct addon_vm *, int addon, size_t *n);
const char *addon_vm_name(const struct addon_vm *, int addon);

/*
 * Runs on_connect of each addon in order until one decides. Returns 0 with
 * res filled, or 1 if the hook is waiting (cb(arg, res) comes later; *hp
 * may be passed to addon_cancel). *ctx_ref receives a Lua reference to the
 * ctx table (reused by later hooks; release with addon_ctx_release), or
 * 0 when the decision needs no later hook (a CONNECT tunnelled, refused or
 * failed: no Lua state is kept for it).
 */
int	addon_on_connect(struct addon_vm *, const struct hook_ctx *, int *ctx_ref,
	    struct hook_result *res, hook_cb cb, void *arg, struct hook **hp);
/*
 * Runs addon's on_request(req, ctx). Same contract; ACT_NONE: forward. On
 * ACT_DENY or ACT_ERROR the headers the hook injected are removed from req
 * again and req->injected is cleared (the request is not sent). ctx.sandbox
 * is first set from hc (the sandbox's attributes as they are now), so a
 * re-registration reaches the next request of a connection already open.
 */
int	addon_on_request(struct addon_vm *, int addon, int ctx_ref,
	    const struct hook_ctx *hc, struct hreq *req, const struct target *t,
	    struct hook_result *res, hook_cb cb, void *arg, struct hook **hp);
/* Runs addon's optional on_response(resp, ctx) (may not yield). */
void	addon_on_response(struct addon_vm *, int addon, int ctx_ref,
	    struct hreq *req, int status);
int	addon_has_response(const struct addon_vm *, int addon);
void	addon_ctx_release(struct addon_vm *, int ctx_ref);
/* Abandons a waiting hook: its callback will not be called. */
void	addon_cancel(struct hook *);

/* Counters for metrics. */
extern _Atomic long addon_errors_total;

#endif
