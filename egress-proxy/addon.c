/*
 * addon.c: the Lua 5.4 addon runtime (see addon.h and docs/addons.md).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <time.h>

#include "addon.h"
#include "addon_lib.h"
#include "buf.h"
#include "config.h"
#include "cred.h"
#include "creddecl.h"
#include "ghapp.h"
#include "httpreq.h"
#include "log.h"
#include "pmatch.h"
#include "sandbox.h"
#include "util.h"
#include "xmalloc.h"

#define ADDON_MAX	64
#define ADDON_SRC_MAX	((size_t)1024 * 1024)
#define RUN_TICK	1000	/* instructions between two budget checks */
#define RUN_CPU_MAX_MS	100	/* CPU time of one run of a hook between pauses */
#define ERRLOG_MS	10000	/* resource failures: one log line per kind per interval */
#define TRACE_HEADROOM	((size_t)64 * 1024)	/* free heap needed for a traceback */

_Atomic long addon_errors_total;
static atomic_uint src_gen;

struct addon_file {
	char	*path;
	char	*text;
	size_t	 len;
	struct timespec mtime;
};

struct addon_src {
	atomic_int		 refs;
	unsigned		 gen;
	size_t			 n;
	struct addon_file	 f[ADDON_MAX];
	/* The credentials the addons declare: read by the validation load
	 * (loading set) only, never by a worker's VM. */
	struct credset		*creds;
	int			 loading;
};

struct addon_info {
	char		 name[64];
	int		 has_connect, has_request, has_response;
	char		**strip;
	size_t		 nstrip;
};

/* Resource failures, logged at most once per ERRLOG_MS each. */
enum err_kind { EK_NONE, EK_MEM, EK_BUDGET, EK_TIME, EK_MAX };

/*
 * The Lua code running now (one run at a time per VM: a hook between its
 * start or resumption and its end or yield, an on_response call, a load).
 * Instructions (every RUN_TICK) and pattern-matching steps are charged to
 * it; past the budget, the deadline or RUN_CPU_MAX_MS of CPU it is over and
 * every further instruction or match step raises, so pcall cannot keep it
 * alive.
 */
struct run {
	int			 active;
	int			 over;
	enum err_kind		 kind;		/* why it is over */
	const char		*why;
	unsigned		 ticks;
	unsigned long long	 steps, budget;
	long long		 deadline;	/* coarse monotonic ms */
	long long		 cpu0;		/* thread CPU ns at the start */
};

struct addon_vm {
	int			 refs;		/* worker thread only */
	int			 broken;	/* a Lua panic: L is never used again */
	int			 stale;		/* heap full of live data: rebuild wanted */
	jmp_buf			*jb;		/* recovery point of the panic handler */
	char			 panicmsg[256];
	struct run		 run;
	size_t			 hook_mem;	/* heap growth allowed to one hook run */
	size_t			 hook_cap;	/* heap cap of the current run, 0 none */
	long long		 errlog_at[EK_MAX];
	unsigned		 errlog_n[EK_MAX];	/* suppressed since */
	struct addon_secrets	 secrets;	/* file: secrets, 1 s */
	unsigned		 gen;
	lua_State		*L;
	size_t			 mem, memlimit;
	long long		 budget;
	const struct pconf	*conf;
	struct ghapp		*gh;
	size_t			 n;
	struct addon_info	 a[ADDON_MAX];
};

enum hook_kind { HOOK_CONNECT, HOOK_REQUEST };

struct hook {
	struct addon_vm		*vm;
	const struct hook_ctx	*hc;		/* on_connect start only */
	int			*ctx_out;	/* on_connect start only */
	long long		 deadline;	/* timeouts.hook from the start */
	const char		*tok, *tokerr;	/* token wait result to resume with */
	int			 failed;	/* err holds why */
	enum err_kind		 errkind;
	char			 err[1024];
	lua_State		*co;
	int			 co_ref;
	int			 lr_ref;
	struct lreq		*lr;
	enum hook_kind		 kind;
	hook_cb			 cb;
	void			*arg;
	int			 async;		/* returned 1 to the caller */
	int			 waiting;	/* waiting for a token */
	int			 cancelled;
	struct hook_result	 res;
};

/* ---- allocator with a limit ---- */

static void *
l_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct addon_vm *vm = ud;

	if (ptr == NULL)
		osize = 0;
	if (nsize == 0) {
		free(ptr);
		vm->mem -= osize;
		return NULL;
	}
	if (nsize > osize && (vm->mem + (nsize - osize) > vm->memlimit ||
	    (vm->hook_cap != 0 && vm->mem + (nsize - osize) > vm->hook_cap)))
		return NULL;
	ptr = realloc(ptr, nsize);
	if (ptr != NULL)
		vm->mem = vm->mem - osize + nsize;
	return ptr;
}

static struct addon_vm *
vm_of(lua_State *L)
{
	void *ud;

	(void)lua_getallocf(L, &ud);
	return ud;
}

static long long
cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == -1)
		return 0;
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void count_hook(lua_State *L, lua_Debug *ar);

/*
 * Charges n steps to the current run; raises once it is over (and sets the
 * running thread's count hook to every instruction, so that an addon's
 * pcall cannot swallow it for long).
 */
static void
run_charge(lua_State *L, struct addon_vm *vm, unsigned long n)
{
	struct run *r = &vm->run;

	if (!r->active)
		return;
	r->steps += n;
	if (r->over)
		goto raise;
	if (r->steps > r->budget) {
		r->kind = EK_BUDGET;
		r->why = "instruction budget exceeded (limits.lua_instructions)";
		goto over;
	}
	if ((++r->ticks & 7) == 0 || n >= PMATCH_CHUNK) {
		if (r->deadline != 0 && util_mono_coarse_ms() > r->deadline) {
			r->kind = EK_TIME;
			r->why = "hook timed out (timeouts.hook)";
			goto over;
		}
		if (cpu_ns() - r->cpu0 > (long long)RUN_CPU_MAX_MS * 1000000) {
			r->kind = EK_TIME;
			r->why = "hook ran for more than 100 ms of CPU without pausing";
			goto over;
		}
	}
	return;
over:
	r->over = 1;
	lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
raise:
	luaL_error(L, "%s", r->why);
}

static void
count_hook(lua_State *L, lua_Debug *ar)
{
	(void)ar;
	run_charge(L, vm_of(L), RUN_TICK);
}

static void
pm_charge(lua_State *L, void *ud, unsigned long n)
{
	run_charge(L, ud, n);
}

/* Starts a run; per_hook caps its heap growth at limits.lua_hook_memory. */
static void
run_begin(struct addon_vm *vm, long long deadline, int per_hook)
{
	struct run *r = &vm->run;

	memset(r, 0, sizeof(*r));
	r->active = 1;
	r->budget = (unsigned long long)vm->budget;
	r->deadline = deadline;
	r->cpu0 = cpu_ns();
	vm->hook_cap = 0;
	if (per_hook && vm->hook_mem > 0 && vm->hook_mem < vm->memlimit - vm->mem)
		vm->hook_cap = vm->mem + vm->hook_mem;
}

static void
run_end(struct addon_vm *vm)
{
	vm->run.active = 0;
	vm->hook_cap = 0;
}

/*
 * The panic handler: reached only if Lua raises outside every protected
 * call (a bug). It never returns: it jumps back to vm_call, which marks
 * the VM broken (never touched again; the worker builds a new one).
 */
static int
on_panic(lua_State *L)
{
	struct addon_vm *vm = vm_of(L);
	const char *m = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";

	snprintf(vm->panicmsg, sizeof(vm->panicmsg), "%s", m);
	if (vm->jb != NULL)
		longjmp(*vm->jb, 1);
	log_warnx("addon: Lua panic outside a protected call: %s", vm->panicmsg);
	return 0;	/* Lua aborts */
}

/*
 * Runs f(L) with the light userdata ud as its argument on the VM's main
 * state inside lua_pcall (and with the panic handler's recovery point
 * set). Every use of the main state goes through here. LUA_OK, or the Lua
 * status with the message in err. A broken VM is not entered.
 */
static int
vm_call(struct addon_vm *vm, lua_CFunction f, void *ud, char *err, size_t errlen)
{
	jmp_buf jb;
	jmp_buf *volatile prev = vm->jb;
	lua_State *volatile L = vm->L;
	volatile int st = LUA_ERRERR, top;

	if (vm->broken) {
		snprintf(err, errlen, "addon VM unusable after a Lua panic");
		return LUA_ERRERR;
	}
	top = lua_gettop(L);
	vm->jb = &jb;
	if (setjmp(jb) == 0) {
		lua_pushcfunction(L, f);
		lua_pushlightuserdata(L, ud);
		st = lua_pcall(L, 1, 0, 0);
		if (st != LUA_OK) {
			snprintf(err, errlen, "%s", lua_type(L, -1) == LUA_TSTRING ?
			    lua_tostring(L, -1) : "(error object is not a string)");
			lua_settop(L, top);
		}
	} else {
		vm->broken = 1;
		st = LUA_ERRERR;
		snprintf(err, errlen, "Lua panic: %s", vm->panicmsg);
		log_warnx("addon: Lua panic (%s): this worker's addon VM is dropped and rebuilt",
		    vm->panicmsg);
	}
	run_end(vm);
	vm->jb = prev;
	return st;
}

static int
is_memerr(const char *m)
{
	return m != NULL && strstr(m, "not enough memory") != NULL;
}

/* Logs a resource failure at most once per ERRLOG_MS per kind and VM. */
static void
log_limited(struct addon_vm *vm, enum err_kind k, const char *msg)
{
	long long now = util_mono_coarse_ms();

	if (k != EK_NONE && vm->errlog_at[k] != 0 && now - vm->errlog_at[k] < ERRLOG_MS) {
		vm->errlog_n[k]++;
		return;
	}
	if (k != EK_NONE && vm->errlog_n[k] > 0)
		log_warnx("addon: %u similar failures not logged in the last %d s",
		    vm->errlog_n[k], ERRLOG_MS / 1000);
	if (k != EK_NONE) {
		vm->errlog_at[k] = now;
		vm->errlog_n[k] = 0;
	}
	log_warnx("%s", msg);
}

/* ---- helpers exposed as proxy.* (the rest: addon_lib.c) ---- */

static struct hook *
cur_hook(lua_State *L)
{
	return *(struct hook **)lua_getextraspace(L);
}

static void
gh_done(void *arg, const char *token, const char *err);

static void vm_check_heap(struct addon_vm *vm);
static void hook_release(struct hook *h);

/*
 * proxy.github_app_token{app_id=, installation_id=, private_key_file=,
 * api=, repositories={...}, permissions={...}, sandbox=} -> token | nil, err
 * repositories: names of the installation's repositories, or owner/name
 * globs (an entry holding '/', '*' or '?'; then every entry is one), which
 * the proxy resolves against the installation (ghapp.h).
 */
static int
l_github_app_token(lua_State *L)
{
	struct hook *h = cur_hook(L);
	struct ghapp_opts o;
	struct buf body;
	const char **names = NULL, **perms = NULL, *r;
	char tok[512], err[512];
	lua_Integer i, n = 0;
	size_t nglob = 0, nperm = 0, k;
	int rc, ri, pi;

	luaL_checktype(L, 1, LUA_TTABLE);
	if (h == NULL || h->vm->gh == NULL)
		return luaL_error(L, "github_app_token can only be called from a hook");
	memset(&o, 0, sizeof(o));
	lua_getfield(L, 1, "api");
	o.api = lua_isstring(L, -1) ? lua_tostring(L, -1) : "https://api.github.com";
	lua_getfield(L, 1, "app_id");
	o.app_id = luaL_checkstring(L, -1);
	lua_getfield(L, 1, "installation_id");
	o.installation_id = luaL_checkstring(L, -1);
	lua_getfield(L, 1, "private_key_file");
	o.key_file = luaL_checkstring(L, -1);
	lua_getfield(L, 1, "sandbox");
	o.owner = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL;	/* stays on the stack */
	lua_getfield(L, 1, "repositories");
	ri = lua_gettop(L);
	lua_getfield(L, 1, "permissions");
	pi = lua_gettop(L);
	/*
	 * The strings are collected first, into arrays Lua owns (they stay
	 * anchored by their tables): everything that can raise comes before
	 * the body is built.
	 */
	if (lua_istable(L, ri)) {
		n = luaL_len(L, ri);
		names = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof(*names), 0);
		for (i = 1; i <= n; i++) {
			lua_geti(L, ri, i);
			if (lua_type(L, -1) != LUA_TSTRING || strpbrk(r = lua_tostring(L, -1), "\"\\") !=
			    NULL)
				return luaL_error(L, "bad repository name");
			if (strpbrk(r, "/*?") != NULL)
				nglob++;
			names[i - 1] = r;
			lua_pop(L, 1);
		}
		if (nglob > 0 && (lua_Integer)nglob != n)
			return luaL_error(L, "repositories: names and owner/name globs cannot be mixed");
		if (nglob > GHAPP_GLOBS_MAX)
			return luaL_error(L, "repositories: more than %d globs", GHAPP_GLOBS_MAX);
		if (nglob > 0) {
			o.globs = names;
			o.nglobs = nglob;
		}
	}
	if (lua_istable(L, pi)) {
		lua_pushnil(L);
		while (lua_next(L, pi) != 0) {
			if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING ||
			    strpbrk(lua_tostring(L, -2), "\"\\") != NULL ||
			    strpbrk(lua_tostring(L, -1), "\"\\") != NULL)
				return luaL_error(L, "bad permission entry");
			nperm++;
			lua_pop(L, 1);
		}
		perms = lua_newuserdatauv(L, (nperm > 0 ? nperm : 1) * 2 * sizeof(*perms), 0);
		k = 0;
		lua_pushnil(L);
		while (lua_next(L, pi) != 0 && k < nperm) {
			perms[2 * k] = lua_tostring(L, -2);
			perms[2 * k++ + 1] = lua_tostring(L, -1);
			lua_pop(L, 1);
		}
		nperm = k;
	}
	buf_init(&body, 16384);
	if ((names != NULL && nglob == 0) || perms != NULL) {
		/* in name order there: one scope, one cache key, whichever worker asks */
		if (ghapp_scope_body(names, (size_t)n, names != NULL && nglob == 0, perms, nperm,
		    perms != NULL, &body) == -1) {
			buf_free(&body);
			return luaL_error(L, "token request body too large");
		}
		o.body = body.p;
	}
	rc = ghapp_token(h->vm->gh, &o, tok, sizeof(tok), err, sizeof(err), gh_done, h);
	buf_free(&body);
	if (rc == 0 && tok[0] == '\0') {
		lua_pushnil(L);
		lua_pushliteral(L, "empty token");
		return 2;
	}
	if (rc == 0) {
		lua_pushstring(L, tok);
		memset(tok, 0, sizeof(tok));
		return 1;
	}
	if (rc == -1) {
		lua_pushnil(L);
		lua_pushstring(L, err);
		return 2;
	}
	h->waiting = 1;
	return lua_yield(L, 0);
}


/* ---- sources ---- */

static const char prelude[] =
    "local addons = ...\n"
    "function __decide(ctx)\n"
    "  for i, a in ipairs(addons) do\n"
    "    local f = a.on_connect\n"
    "    if f then\n"
    "      local d, reason, status = f(ctx)\n"
    "      if d ~= nil then return i, d, reason, status end\n"
    "    end\n"
    "  end\n"
    "  return 0\n"
    "end\n"
    "function __request(i, req, ctx)\n"
    "  return addons[i].on_request(req, ctx)\n"
    "end\n"
    "function __response(i, resp, ctx)\n"
    "  return addons[i].on_response(resp, ctx)\n"
    "end\n";

/* Message handler: a traceback, unless memory is short (the message as is). */
static int
msgh(lua_State *L)
{
	struct addon_vm *vm = vm_of(L);
	const char *m = lua_type(L, 1) == LUA_TSTRING ? lua_tostring(L, 1) : NULL;
	size_t cap = vm->hook_cap != 0 ? vm->hook_cap : vm->memlimit;

	if (vm->run.over || vm->mem + TRACE_HEADROOM > cap || is_memerr(m))
		return 1;
	luaL_traceback(L, L, m != NULL ? m : "(error object is not a string)", 1);
	return 1;
}

static void
vm_free(struct addon_vm *vm)
{
	size_t i, j;

	/* A panicked state may be inconsistent: its memory is left, not walked. */
	if (vm->L != NULL && !vm->broken)
		lua_close(vm->L);
	addon_secrets_clear(&vm->secrets);
	for (i = 0; i < vm->n; i++) {
		for (j = 0; j < vm->a[i].nstrip; j++)
			free(vm->a[i].strip[j]);
		free(vm->a[i].strip);
	}
	free(vm);
}

/* The per-hook heap growth allowed: limits.lua_hook_memory, or (0) a quarter of the VM's. */
static size_t
hook_memory(const struct pconf *conf)
{
	return conf->lua_hook_memory > 0 ? (size_t)conf->lua_hook_memory :
	    (size_t)conf->lua_memory / 4;
}

struct vm_setup {
	struct addon_vm		*vm;
	struct addon_src	*src;
	const struct pconf	*conf;
};

/* Builds the VM's globals and loads the addons (protected: vm_call). */
static int
vm_setup(lua_State *L)
{
	struct vm_setup *a = lua_touserdata(L, 1);
	struct addon_vm *vm = a->vm;
	struct addon_src *src = a->src;
	const struct pconf *conf = a->conf;
	const char *base;
	size_t i;

	lua_settop(L, 0);
	luaL_openlibs(L);
	pmatch_install(L, pm_charge, vm);
	/* proxy.* */
	addon_lib_push(L, &vm->secrets);
	lua_pushcfunction(L, l_github_app_token);
	lua_setfield(L, -2, "github_app_token");
	lua_newtable(L);
	for (i = 0; i < conf->addon_config.n; i++) {
		lua_pushstring(L, conf->addon_config.v[i]);
		lua_setfield(L, -2, conf->addon_config.k[i]);
	}
	lua_setfield(L, -2, "config");
	lua_setglobal(L, "proxy");
	addon_lib_req_metatable(L);
	/* the addons */
	lua_newtable(L);	/* addons list, stays at index 1 */
	run_begin(vm, util_mono_coarse_ms() + conf->hook_ms, 0);
	lua_sethook(L, count_hook, LUA_MASKCOUNT, RUN_TICK);
	for (i = 0; i < src->n; i++) {
		struct addon_info *ai = &vm->a[i];
		char chunk[300];

		snprintf(chunk, sizeof(chunk), "@%s", src->f[i].path);
		lua_pushcfunction(L, msgh);
		if (luaL_loadbufferx(L, src->f[i].text, src->f[i].len, chunk, "t") != LUA_OK ||
		    lua_pcall(L, 0, 1, -2) != LUA_OK)
			return lua_error(L);
		if (!lua_istable(L, -1))
			return luaL_error(L, "%s: an addon must return a table", src->f[i].path);
		lua_getfield(L, -1, "name");
		base = strrchr(src->f[i].path, '/');
		snprintf(ai->name, sizeof(ai->name), "%s", lua_type(L, -1) == LUA_TSTRING ?
		    lua_tostring(L, -1) : (base != NULL ? base + 1 : src->f[i].path));
		lua_pop(L, 1);
		lua_getfield(L, -1, "on_connect");
		ai->has_connect = lua_isfunction(L, -1);
		lua_getfield(L, -2, "on_request");
		ai->has_request = lua_isfunction(L, -1);
		lua_getfield(L, -3, "on_response");
		ai->has_response = lua_isfunction(L, -1);
		lua_pop(L, 3);
		lua_getfield(L, -1, "strip_headers");
		if (lua_istable(L, -1)) {
			lua_Integer n = luaL_len(L, -1), k;
			if (n > 64)
				n = 64;
			if (n < 0)
				n = 0;
			ai->strip = xcalloc((size_t)n + 1, sizeof(char *));
			for (k = 1; k <= n; k++) {
				lua_geti(L, -1, k);
				if (lua_type(L, -1) == LUA_TSTRING)
					ai->strip[ai->nstrip++] = xstrdup(lua_tostring(L, -1));
				lua_pop(L, 1);
			}
		}
		lua_pop(L, 1);
		if (src->loading)
			creddecl_read(L, ai->name, src->creds);
		lua_seti(L, -3, (lua_Integer)i + 1);	/* addons[i+1] = M */
		lua_pop(L, 1);				/* msgh */
		vm->n++;
	}
	if (luaL_loadbufferx(L, prelude, sizeof(prelude) - 1, "=prelude", "t") != LUA_OK)
		return lua_error(L);
	lua_pushvalue(L, 1);
	lua_call(L, 1, 0);
	lua_sethook(L, NULL, 0, 0);
	run_end(vm);
	lua_settop(L, 0);
	return 0;
}

struct addon_vm *
addon_vm_new(struct addon_src *src, const struct pconf *conf, struct ghapp *gh,
    char *err, size_t errlen)
{
	struct addon_vm *vm = xcalloc(1, sizeof(*vm));
	struct vm_setup a;
	lua_State *L;

	vm->refs = 1;
	vm->gen = src->gen;
	vm->conf = conf;
	vm->gh = gh;
	vm->memlimit = (size_t)conf->lua_memory;
	vm->hook_mem = hook_memory(conf);
	vm->budget = conf->lua_instructions;
	if ((L = vm->L = lua_newstate(l_alloc, vm)) == NULL) {
		snprintf(err, errlen, "cannot create Lua state (limits.lua_memory)");
		goto fail;
	}
	lua_atpanic(L, on_panic);
	*(struct hook **)lua_getextraspace(L) = NULL;
	a.vm = vm;
	a.src = src;
	a.conf = conf;
	if (vm_call(vm, vm_setup, &a, err, errlen) != LUA_OK)
		goto fail;
	return vm;
fail:
	vm_free(vm);
	return NULL;
}

struct addon_vm *
addon_vm_ref(struct addon_vm *vm)
{
	vm->refs++;
	return vm;
}

void
addon_vm_unref(struct addon_vm *vm)
{
	if (vm != NULL && --vm->refs == 0)
		vm_free(vm);
}

/*
 * A broken (panicked) or stale (heap full of live data) VM reports a
 * generation no source set has, so the worker builds a fresh one.
 */
unsigned
addon_vm_gen(const struct addon_vm *vm)
{
	return vm->broken || vm->stale ? vm->gen + 0x80000000u : vm->gen;
}

const char *const *
addon_vm_strip(const struct addon_vm *vm, int addon, size_t *n)
{
	if (addon < 0 || (size_t)addon >= vm->n) {
		*n = 0;
		return NULL;
	}
	*n = vm->a[addon].nstrip;
	return (const char *const *)vm->a[addon].strip;
}

const char *
addon_vm_name(const struct addon_vm *vm, int addon)
{
	if (addon < 0 || (size_t)addon >= vm->n)
		return "-";
	return vm->a[addon].name;
}

int
addon_has_response(const struct addon_vm *vm, int addon)
{
	return addon >= 0 && (size_t)addon < vm->n && vm->a[addon].has_response;
}

static void
src_free(struct addon_src *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->f[i].path);
		free(s->f[i].text);
	}
	cred_set_unref(s->creds);
	free(s);
}

struct addon_src *
addon_src_load(const struct cfg_list *files, const struct pconf *conf, char *err,
    size_t errlen)
{
	struct addon_src *s = xcalloc(1, sizeof(*s));
	struct addon_vm *vm;
	struct stat st;
	struct buf b;
	size_t i;

	atomic_init(&s->refs, 1);
	if (files->n > ADDON_MAX) {
		snprintf(err, errlen, "more than %d addons", ADDON_MAX);
		goto fail;
	}
	for (i = 0; i < files->n; i++) {
		struct addon_file *f = &s->f[i];
		f->path = xstrdup(files->v[i]);
		s->n++;
		if (stat(f->path, &st) == -1) {
			snprintf(err, errlen, "%s: %s", f->path, strerror(errno));
			goto fail;
		}
		f->mtime = st.st_mtim;
		buf_init(&b, ADDON_SRC_MAX);
		if (addon_read_small(f->path, &b, err, errlen) == -1) {
			buf_free(&b);
			goto fail;
		}
		f->text = buf_steal(&b, &f->len);
		if (f->text == NULL)
			f->text = xstrdup("");
	}
	s->gen = atomic_fetch_add(&src_gen, 1) + 1;
	s->creds = cred_set_new();
	s->loading = 1;
	vm = addon_vm_new(s, conf, NULL, err, errlen);
	s->loading = 0;
	if (vm == NULL)
		goto fail;
	addon_vm_unref(vm);
	return s;
fail:
	src_free(s);
	return NULL;
}

struct addon_src *
addon_src_ref(struct addon_src *s)
{
	atomic_fetch_add(&s->refs, 1);
	return s;
}

void
addon_src_unref(struct addon_src *s)
{
	if (s != NULL && atomic_fetch_sub(&s->refs, 1) == 1)
		src_free(s);
}

int
addon_src_changed(const struct addon_src *s)
{
	struct stat st;
	size_t i;

	for (i = 0; i < s->n; i++) {
		if (stat(s->f[i].path, &st) == -1)
			return 1;
		if (st.st_mtim.tv_sec != s->f[i].mtime.tv_sec ||
		    st.st_mtim.tv_nsec != s->f[i].mtime.tv_nsec)
			return 1;
	}
	return 0;
}

unsigned
addon_src_gen(const struct addon_src *s)
{
	return s->gen;
}

/* guards every source's creds once loaded: a refresh swaps them (credwatch.c) */
static pthread_mutex_t creds_mtx = PTHREAD_MUTEX_INITIALIZER;

struct credset *
addon_src_creds(const struct addon_src *s)
{
	struct credset *cs;

	pthread_mutex_lock(&creds_mtx);
	cs = cred_set_ref(s->creds);
	pthread_mutex_unlock(&creds_mtx);
	return cs;
}

void
addon_src_creds_set(struct addon_src *s, struct credset *cs)
{
	struct credset *old;

	pthread_mutex_lock(&creds_mtx);
	old = s->creds;
	s->creds = cs;
	pthread_mutex_unlock(&creds_mtx);
	cred_set_unref(old);
}

size_t
addon_src_count(const struct addon_src *s)
{
	return s->n;
}

/* ---- hooks ---- */

/* ctx.sandbox: the sandbox's id and attributes. */
static void
push_sandbox(lua_State *L, const struct hook_ctx *hc)
{
	struct sbattrs *a = hc->attrs;
	size_t i;

	lua_createtable(L, 0, 2 + (a != NULL && a->org != NULL) + (a != NULL && a->user != NULL) +
	    (a != NULL && a->session != NULL));
	lua_pushstring(L, hc->sb->id);
	lua_setfield(L, -2, "id");
	if (a != NULL && a->org != NULL) {
		lua_pushstring(L, a->org);
		lua_setfield(L, -2, "org");
	}
	if (a != NULL && a->user != NULL) {
		lua_pushstring(L, a->user);
		lua_setfield(L, -2, "user");
	}
	if (a != NULL && a->session != NULL) {
		lua_pushstring(L, a->session);
		lua_setfield(L, -2, "session");
	}
	lua_createtable(L, 0, a != NULL ? (int)a->nl : 0);
	for (i = 0; a != NULL && i < a->nl; i++) {
		lua_pushstring(L, a->lv[i]);
		lua_setfield(L, -2, a->lk[i]);
	}
	lua_setfield(L, -2, "labels");
	if (a != NULL && a->policy != NULL) {
		addon_lib_push_json_ro(L, a->policy, SB_POLICY_MAX_DEPTH);
		lua_setfield(L, -2, "policy");
	}
}

/* Registry key of the VM's weak table: attribute snapshot serial -> ctx.sandbox. */
static const char sbcache_key;

/*
 * Pushes ctx.sandbox, shared by every connection with the same attribute
 * snapshot (one sandbox's registration): three tables each per connection
 * otherwise. The weak table forgets it when the last such ctx goes.
 */
static void
push_sandbox_shared(lua_State *L, const struct hook_ctx *hc)
{
	uint64_t serial = hc->attrs != NULL ? hc->attrs->serial : 0;

	if (serial == 0 || serial > (uint64_t)LUA_MAXINTEGER) {
		push_sandbox(L, hc);
		return;
	}
	if (lua_rawgetp(L, LUA_REGISTRYINDEX, &sbcache_key) != LUA_TTABLE) {
		lua_pop(L, 1);
		lua_newtable(L);
		lua_createtable(L, 0, 1);
		lua_pushliteral(L, "v");
		lua_setfield(L, -2, "__mode");
		lua_setmetatable(L, -2);
		lua_pushvalue(L, -1);
		lua_rawsetp(L, LUA_REGISTRYINDEX, &sbcache_key);
	}
	if (lua_rawgeti(L, -1, (lua_Integer)serial) != LUA_TTABLE) {
		lua_pop(L, 1);
		push_sandbox(L, hc);
		lua_pushvalue(L, -1);
		lua_rawseti(L, -3, (lua_Integer)serial);
	}
	lua_remove(L, -2);
}

static void
push_ctx(lua_State *L, const struct hook_ctx *hc)
{
	char id[24];

	lua_createtable(L, 0, 6);
	lua_pushstring(L, hc->t->host);
	lua_setfield(L, -2, "host");
	lua_pushinteger(L, hc->t->port);
	lua_setfield(L, -2, "port");
	lua_pushstring(L, hc->t->hostport);
	lua_setfield(L, -2, "target");
	lua_pushboolean(L, hc->plain);
	lua_setfield(L, -2, "plain");
	snprintf(id, sizeof(id), "%llx", (unsigned long long)hc->conn_id);
	lua_pushstring(L, id);
	lua_setfield(L, -2, "conn_id");
	push_sandbox_shared(L, hc);
	lua_setfield(L, -2, "sandbox");
}

/* A hook's C side; its Lua side (hook_thread) is made under vm_call. */
static struct hook *
hook_new(struct addon_vm *vm, enum hook_kind kind, hook_cb cb, void *arg)
{
	struct hook *h = xcalloc(1, sizeof(*h));

	h->vm = addon_vm_ref(vm);
	h->kind = kind;
	h->cb = cb;
	h->arg = arg;
	h->co_ref = LUA_NOREF;
	h->lr_ref = LUA_NOREF;
	h->res.addon = -1;
	h->deadline = util_mono_coarse_ms() + vm->conf->hook_ms;
	return h;
}

/* The hook's coroutine (protected). */
static void
hook_thread(lua_State *L, struct hook *h)
{
	h->co = lua_newthread(L);
	h->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	*(struct hook **)lua_getextraspace(h->co) = h;
}

static int
hook_unref(lua_State *L)
{
	struct hook *h = lua_touserdata(L, 1);

	if (h->lr != NULL)
		h->lr->r = NULL;
	if (h->co != NULL)
		*(struct hook **)lua_getextraspace(h->co) = NULL;
	luaL_unref(L, LUA_REGISTRYINDEX, h->co_ref);
	luaL_unref(L, LUA_REGISTRYINDEX, h->lr_ref);
	return 0;
}

static void
hook_release(struct hook *h)
{
	char err[256];

	(void)vm_call(h->vm, hook_unref, h, err, sizeof(err));
	addon_vm_unref(h->vm);
	free(h);
}

static enum addon_action
parse_action(const char *s)
{
	if (s == NULL)
		return ACT_ERROR;
	if (strcmp(s, "intercept") == 0)
		return ACT_INTERCEPT;
	if (strcmp(s, "tunnel") == 0)
		return ACT_TUNNEL;
	if (strcmp(s, "deny") == 0)
		return ACT_DENY;
	return ACT_ERROR;
}

static void
hook_error(struct hook *h, const char *msg, enum err_kind k)
{
	char esc[2048], line[2300];
	const char *name = h->res.addon >= 0 ? addon_vm_name(h->vm, h->res.addon) : "-";

	atomic_fetch_add(&addon_errors_total, 1);
	log_escape(esc, sizeof(esc), msg, strlen(msg));
	snprintf(line, sizeof(line), "addon=%s hook=%s failed closed: %s", name,
	    h->kind == HOOK_CONNECT ? "on_connect" : "on_request", esc);
	log_limited(h->vm, k, line);
	h->res.action = ACT_ERROR;
	h->res.status = 502;
	snprintf(h->res.reason, sizeof(h->res.reason), "addon error");
}

/* Interprets a finished hook's results (on the coroutine's stack). */
static void
hook_results(struct hook *h, int nres)
{
	lua_State *co = h->co;
	int base = lua_gettop(co) - nres + 1;

	if (h->kind == HOOK_CONNECT) {
		lua_Integer idx = nres >= 1 ? lua_tointeger(co, base) : 0;
		if (idx <= 0) {
			h->res.action = ACT_NONE;
			return;
		}
		h->res.addon = (int)idx - 1;
		h->res.action = parse_action(nres >= 2 ? lua_tostring(co, base + 1) : NULL);
		if (h->res.action == ACT_ERROR) {
			hook_error(h, "on_connect must return \"intercept\", \"tunnel\", \"deny\" or nil",
			    EK_NONE);
			return;
		}
		if (nres >= 3 && lua_isstring(co, base + 2))
			snprintf(h->res.reason, sizeof(h->res.reason), "%s", lua_tostring(co, base + 2));
		h->res.status = nres >= 4 && lua_isinteger(co, base + 3) ?
		    (int)lua_tointeger(co, base + 3) : 403;
		if (h->res.status < 400 || h->res.status > 599)
			h->res.status = 403;
		return;
	}
	/* on_request: nil (forward), or "deny", reason, status */
	if (h->lr->denied) {
		h->res.action = ACT_DENY;
		h->res.status = h->lr->status;
		snprintf(h->res.reason, sizeof(h->res.reason), "%s", h->lr->reason);
		h->res.body_len = h->lr->body_len;
		memcpy(h->res.body, h->lr->body, h->lr->body_len);
		snprintf(h->res.ctype, sizeof(h->res.ctype), "%s", h->lr->ctype);
		return;
	}
	if (nres >= 1 && !lua_isnil(co, base)) {
		const char *s = lua_tostring(co, base);
		if (s != NULL && strcmp(s, "deny") == 0) {
			h->res.action = ACT_DENY;
			if (nres >= 2 && lua_isstring(co, base + 1))
				snprintf(h->res.reason, sizeof(h->res.reason), "%s",
				    lua_tostring(co, base + 1));
			h->res.status = nres >= 3 && lua_isinteger(co, base + 2) ?
			    (int)lua_tointeger(co, base + 2) : 403;
			if (h->res.status < 400 || h->res.status > 599)
				h->res.status = 403;
			return;
		}
		if (s == NULL || (strcmp(s, "forward") != 0 && strcmp(s, "ok") != 0)) {
			hook_error(h, "on_request must return nil, \"forward\" or \"deny\"", EK_NONE);
			return;
		}
	}
	h->res.action = ACT_NONE;
}

/*
 * Resumes the hook's coroutine (protected: called from vm_call's function).
 * On return h->waiting says it yielded for a token; else h->res is filled
 * or h->failed is set with h->err.
 */
static void
hook_resume(lua_State *L, struct hook *h, int nargs)
{
	struct addon_vm *vm = h->vm;
	lua_State *co = h->co;
	const char *m;
	int st, nres = 0;

	run_begin(vm, h->deadline, 1);
	lua_sethook(co, count_hook, LUA_MASKCOUNT, RUN_TICK);
	st = lua_resume(co, L, nargs, &nres);
	lua_sethook(co, NULL, 0, 0);
	if (vm->run.over) {
		/* past its budget or deadline: fails whatever it returned */
		h->failed = 1;
		h->waiting = 0;
		h->errkind = vm->run.kind;
		snprintf(h->err, sizeof(h->err), "%s", vm->run.why);
		run_end(vm);
		return;
	}
	run_end(vm);
	if (st == LUA_YIELD) {
		if (h->waiting) {
			lua_pop(co, nres);
			return;
		}
		h->failed = 1;
		snprintf(h->err, sizeof(h->err), "a hook may not yield (only proxy.github_app_token waits)");
		return;
	}
	if (st != LUA_OK) {
		h->failed = 1;
		m = lua_type(co, -1) == LUA_TSTRING ? lua_tostring(co, -1) : NULL;
		if (st == LUA_ERRMEM || is_memerr(m))
			h->errkind = EK_MEM;
		if (h->errkind == EK_NONE || h->err[0] == '\0')
			snprintf(h->err, sizeof(h->err), "%s", m != NULL ? m :
			    "(error object is not a string)");
		/* the traceback, if memory allows (it is the only allocation here) */
		if (h->errkind != EK_MEM && vm->mem + TRACE_HEADROOM < vm->memlimit) {
			luaL_traceback(L, co, h->err, 0);
			snprintf(h->err, sizeof(h->err), "%s", lua_tostring(L, -1));
			lua_pop(L, 1);
		}
		return;
	}
	if (util_mono_coarse_ms() > h->deadline) {
		/* one long C call outlived timeouts.hook: its result is not used */
		h->failed = 1;
		h->errkind = EK_TIME;
		snprintf(h->err, sizeof(h->err), "hook timed out (timeouts.hook)");
		return;
	}
	hook_results(h, nres);
}

/*
 * A request refused by its hook (error, deny, budget, time) is not sent:
 * the headers it injected are taken out again and it no longer counts as
 * injected, so that the audit line says what was actually sent.
 */
static void
hook_uninject(struct hook *h)
{
	struct lreq *lr = h->lr;
	int i;

	if (h->kind != HOOK_REQUEST || lr == NULL || lr->r == NULL || !lr->r->injected)
		return;
	for (i = 0; i < lr->ninj; i++)
		(void)h1head_del(&lr->r->hd, lr->inj[i]);
	lr->r->injected = 0;
	lr->r->rule[0] = '\0';
}

/*
 * After a hook's start or resumption under vm_call (status st, message in
 * cerr): 1 if it waits for a token, else 0 with h->res final.
 */
static int
hook_settle(struct hook *h, int st, const char *cerr)
{
	struct addon_vm *vm = h->vm;

	if (st != LUA_OK) {
		h->failed = 1;
		if (is_memerr(cerr))
			h->errkind = EK_MEM;
		snprintf(h->err, sizeof(h->err), "%s", cerr);
	}
	if (h->failed) {
		h->waiting = 0;
		hook_error(h, h->err, h->errkind);
		hook_uninject(h);
		if (h->errkind == EK_MEM)
			vm_check_heap(vm);
		return 0;
	}
	if (h->waiting)
		return 1;
	if (h->res.action == ACT_DENY || h->res.action == ACT_ERROR)
		hook_uninject(h);
	return 0;
}

static int
resume_token(lua_State *L)
{
	struct hook *h = lua_touserdata(L, 1);
	int nargs;

	if (!lua_checkstack(h->co, 3))
		return luaL_error(L, "not enough memory");
	if (h->tok != NULL) {
		lua_pushstring(L, h->tok);
		nargs = 1;
	} else {
		lua_pushnil(L);
		lua_pushstring(L, h->tokerr != NULL ? h->tokerr : "token request failed");
		nargs = 2;
	}
	lua_xmove(L, h->co, nargs);
	hook_resume(L, h, nargs);
	return 0;
}

static void
gh_done(void *arg, const char *token, const char *err)
{
	struct hook *h = arg;
	struct hook_result res;
	hook_cb cb;
	void *carg;
	char cerr[512];
	int st;

	h->waiting = 0;
	if (h->cancelled) {
		hook_release(h);
		return;
	}
	h->tok = token != NULL && *token != '\0' ? token : NULL;
	h->tokerr = token != NULL && *token == '\0' ? "empty token" : err;
	st = vm_call(h->vm, resume_token, h, cerr, sizeof(cerr));
	h->tok = h->tokerr = NULL;
	if (hook_settle(h, st, cerr) == 1)
		return;
	res = h->res;
	cb = h->cb;
	carg = h->arg;
	hook_release(h);
	cb(carg, &res);
}

void
addon_cancel(struct hook *h)
{
	if (h == NULL)
		return;
	if (h->waiting) {
		h->cancelled = 1;
		if (h->vm->gh != NULL)
			ghapp_forget(h->vm->gh, h);
		return;
	}
	hook_release(h);
}

/* Finishes a hook that returned synchronously: copies res, releases. */
static int
hook_finish_sync(struct hook *h, struct hook_result *res)
{
	*res = h->res;
	hook_release(h);
	return 0;
}

static int
connect_start(lua_State *L)
{
	struct hook *h = lua_touserdata(L, 1);

	push_ctx(L, h->hc);
	*h->ctx_out = luaL_ref(L, LUA_REGISTRYINDEX);
	hook_thread(L, h);
	lua_getglobal(h->co, "__decide");
	lua_rawgeti(h->co, LUA_REGISTRYINDEX, *h->ctx_out);
	hook_resume(L, h, 1);
	return 0;
}

int
addon_on_connect(struct addon_vm *vm, const struct hook_ctx *hc, int *ctx_ref,
    struct hook_result *res, hook_cb cb, void *arg, struct hook **hp)
{
	struct hook *h;
	char cerr[512];
	int st;

	*hp = NULL;
	*ctx_ref = 0;
	h = hook_new(vm, HOOK_CONNECT, cb, arg);
	h->hc = hc;
	h->ctx_out = ctx_ref;
	st = vm_call(vm, connect_start, h, cerr, sizeof(cerr));
	h->hc = NULL;
	h->ctx_out = NULL;
	if (hook_settle(h, st, cerr) == 1) {
		*hp = h;
		return 1;
	}
	hook_finish_sync(h, res);
	/*
	 * Only intercepted and plain requests run more hooks: a blind tunnel,
	 * a refusal or an error keeps no Lua state for its connection.
	 */
	if (!hc->plain && res->action != ACT_INTERCEPT && *ctx_ref > 0) {
		addon_ctx_release(vm, *ctx_ref);
		*ctx_ref = 0;
	}
	return 0;
}

struct req_start {
	struct hook		*h;
	int			 addon, ctx_ref;
	const struct hook_ctx	*hc;
	struct hreq		*req;
	const struct target	*t;
};

static int
request_start(lua_State *L)
{
	struct req_start *a = lua_touserdata(L, 1);
	struct hook *h = a->h;
	struct lreq *lr;

	lr = lua_newuserdatauv(L, sizeof(*lr), 0);
	memset(lr, 0, sizeof(*lr));
	luaL_setmetatable(L, "egress.req");
	h->lr_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	lr->r = a->req;
	lr->t = a->t;
	h->lr = lr;
	/* ctx.sandbox: the sandbox's attributes now, not when the connection opened */
	lua_rawgeti(L, LUA_REGISTRYINDEX, a->ctx_ref);
	if (lua_type(L, -1) == LUA_TTABLE) {
		push_sandbox_shared(L, a->hc);
		lua_setfield(L, -2, "sandbox");
	}
	lua_pop(L, 1);
	hook_thread(L, h);
	lua_getglobal(h->co, "__request");
	lua_pushinteger(h->co, a->addon + 1);
	lua_rawgeti(h->co, LUA_REGISTRYINDEX, h->lr_ref);
	lua_rawgeti(h->co, LUA_REGISTRYINDEX, a->ctx_ref);
	hook_resume(L, h, 3);
	return 0;
}

int
addon_on_request(struct addon_vm *vm, int addon, int ctx_ref, const struct hook_ctx *hc,
    struct hreq *req, const struct target *t, struct hook_result *res, hook_cb cb, void *arg,
    struct hook **hp)
{
	struct req_start a;
	struct hook *h;
	char cerr[512];
	int st;

	*hp = NULL;
	if (addon < 0 || (size_t)addon >= vm->n || !vm->a[addon].has_request) {
		memset(res, 0, sizeof(*res));
		res->action = ACT_NONE;
		res->addon = addon;
		return 0;
	}
	h = hook_new(vm, HOOK_REQUEST, cb, arg);
	h->res.addon = addon;
	a.h = h;
	a.addon = addon;
	a.ctx_ref = ctx_ref;
	a.hc = hc;
	a.req = req;
	a.t = t;
	st = vm_call(vm, request_start, &a, cerr, sizeof(cerr));
	if (hook_settle(h, st, cerr) == 1) {
		*hp = h;
		return 1;
	}
	return hook_finish_sync(h, res);
}

struct resp_call {
	struct addon_vm	*vm;
	int		 addon, ctx_ref, status;
	struct hreq	*req;
	int		 failed;
	char		 err[1024];
};

static int
response_call(lua_State *L)
{
	struct resp_call *a = lua_touserdata(L, 1);
	struct addon_vm *vm = a->vm;
	struct hreq *req = a->req;
	int st;

	lua_pushcfunction(L, msgh);
	lua_getglobal(L, "__response");
	lua_pushinteger(L, a->addon + 1);
	lua_createtable(L, 0, 5);
	lua_pushinteger(L, a->status);
	lua_setfield(L, -2, "status");
	lua_pushstring(L, h1head_method(&req->hd));
	lua_setfield(L, -2, "method");
	lua_pushlstring(L, req->hd.data.p + req->path_o, req->path_l);
	lua_setfield(L, -2, "path");
	lua_pushboolean(L, req->injected);
	lua_setfield(L, -2, "injected");
	lua_rawgeti(L, LUA_REGISTRYINDEX, a->ctx_ref);
	run_begin(vm, util_mono_coarse_ms() + vm->conf->hook_ms, 1);
	lua_sethook(L, count_hook, LUA_MASKCOUNT, RUN_TICK);
	st = lua_pcall(L, 3, 0, -5);
	lua_sethook(L, NULL, 0, 0);
	run_end(vm);
	if (st != LUA_OK) {
		a->failed = 1;
		snprintf(a->err, sizeof(a->err), "%s", lua_type(L, -1) == LUA_TSTRING ?
		    lua_tostring(L, -1) : "?");
	}
	return 0;
}

void
addon_on_response(struct addon_vm *vm, int addon, int ctx_ref, struct hreq *req,
    int status)
{
	struct resp_call a;
	char esc[2048], line[2300];

	memset(&a, 0, sizeof(a));
	a.vm = vm;
	a.addon = addon;
	a.ctx_ref = ctx_ref;
	a.status = status;
	a.req = req;
	if (vm_call(vm, response_call, &a, a.err, sizeof(a.err)) != LUA_OK)
		a.failed = 1;
	if (!a.failed)
		return;
	atomic_fetch_add(&addon_errors_total, 1);
	snprintf(line, sizeof(line), "addon=%s hook=on_response failed: %s",
	    addon_vm_name(vm, addon), log_escape(esc, sizeof(esc), a.err, strlen(a.err)));
	log_limited(vm, is_memerr(a.err) ? EK_MEM : EK_NONE, line);
	if (is_memerr(a.err))
		vm_check_heap(vm);
}

static int
gc_call(lua_State *L)
{
	lua_gc(L, LUA_GCCOLLECT);
	return 0;
}

void
addon_vm_gc(struct addon_vm *vm)
{
	char err[256];

	(void)vm_call(vm, gc_call, NULL, err, sizeof(err));
}

/*
 * After a hook ran out of memory: a full collection, and if the heap is
 * still mostly live data (an addon keeping state per request) the VM is
 * marked stale so that the worker builds a fresh one for new connections
 * (at most once per ERRLOG_MS per worker).
 */
static void
vm_check_heap(struct addon_vm *vm)
{
	static _Thread_local long long stale_at;	/* this worker's last rebuild */
	long long now = util_mono_coarse_ms();
	char line[256];

	addon_vm_gc(vm);
	if (vm->stale || vm->mem < vm->memlimit / 4 * 3)
		return;
	/*
	 * At most one rebuild per ERRLOG_MS per worker: connections keep the
	 * old state alive until they close, so more often would multiply the
	 * worker's Lua memory (heap full of intercepted connections' ctx).
	 */
	if (stale_at != 0 && now - stale_at < ERRLOG_MS)
		return;
	stale_at = now;
	vm->stale = 1;
	snprintf(line, sizeof(line), "addon: %zu of %zu bytes of the Lua heap (limits.lua_memory) "
	    "still live after a full collection: rebuilding this worker's addon VM", vm->mem,
	    vm->memlimit);
	log_limited(vm, EK_NONE, line);	/* once per VM: it is stale now */
}

static int
unref_call(lua_State *L)
{
	int *ref = lua_touserdata(L, 1);

	luaL_unref(L, LUA_REGISTRYINDEX, *ref);
	return 0;
}

void
addon_ctx_release(struct addon_vm *vm, int ctx_ref)
{
	char err[256];

	if (ctx_ref > 0)
		(void)vm_call(vm, unref_call, &ctx_ref, err, sizeof(err));
}
