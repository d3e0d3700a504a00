/*
 * addon.h: Lua 5.4 addons (docs/addons.md). The main thread loads the
 * addon files into a refcounted source set (validated by building a VM from
 * it); each worker builds its own VM (one lua_State) from the current set.
 * Every hook runs in its own coroutine with an instruction budget; a hook
 * may yield while a GitHub App token is minted. Any error fails closed.
 */
#ifndef PROXY_ADDON_H
#define PROXY_ADDON_H

#include <stddef.h>
#include <stdint.h>

#include "canon.h"
#include "cfg.h"

struct addon_src;
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

/* A worker's VM built from src; gh is the worker's token client (or NULL). */
struct addon_vm *addon_vm_new(struct addon_src *, const struct pconf *,
	    struct ghapp *gh, char *err, size_t errlen);
struct addon_vm *addon_vm_ref(struct addon_vm *);
void	addon_vm_unref(struct addon_vm *);
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
 * ctx table (reused by later hooks; release with addon_ctx_release).
 */
int	addon_on_connect(struct addon_vm *, const struct hook_ctx *, int *ctx_ref,
	    struct hook_result *res, hook_cb cb, void *arg, struct hook **hp);
/* Runs addon's on_request(req, ctx). Same contract; ACT_NONE: forward. */
int	addon_on_request(struct addon_vm *, int addon, int ctx_ref,
	    struct hreq *req, const struct target *t, struct hook_result *res, hook_cb cb, void *arg,
	    struct hook **hp);
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
