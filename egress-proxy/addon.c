/*
 * addon.c: the Lua 5.4 addon runtime (see addon.h and docs/addons.md).
 */
#include <errno.h>
#include <pthread.h>
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
#include "buf.h"
#include "config.h"
#include "ghapp.h"
#include "httpreq.h"
#include "log.h"
#include "sandbox.h"
#include "util.h"
#include "xmalloc.h"

#define ADDON_MAX	64
#define ADDON_SRC_MAX	((size_t)1024 * 1024)
#define SECRET_MAX	((size_t)64 * 1024)

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
};

struct addon_info {
	char		 name[64];
	int		 has_connect, has_request, has_response;
	char		**strip;
	size_t		 nstrip;
};

#define SECRET_CACHE	16
#define SECRET_TTL_MS	1000

struct secret_ent {
	char		*path;
	char		*val;
	size_t		 len;
	long long	 at;	/* ms, monotonic */
};

struct addon_vm {
	int			 refs;		/* worker thread only */
	struct secret_ent	 sc[SECRET_CACHE];	/* file: secrets, 1 s */
	unsigned		 sc_next;
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

struct lreq {
	struct hreq	*r;		/* NULL once the hook is over */
	const struct target *t;
	int		 denied, status;
	char		 reason[256];
};

struct hook {
	struct addon_vm		*vm;
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
	if (nsize > osize && vm->mem + (nsize - osize) > vm->memlimit)
		return NULL;
	ptr = realloc(ptr, nsize);
	if (ptr != NULL)
		vm->mem = vm->mem - osize + nsize;
	return ptr;
}

static void
budget_hook(lua_State *L, lua_Debug *ar)
{
	(void)ar;
	luaL_error(L, "instruction budget exceeded");
}

/* ---- helpers exposed as proxy.* ---- */

static struct hook *
cur_hook(lua_State *L)
{
	return *(struct hook **)lua_getextraspace(L);
}

static int
l_env(lua_State *L)
{
	const char *v = getenv(luaL_checkstring(L, 1));

	if (v == NULL)
		lua_pushnil(L);
	else
		lua_pushstring(L, v);
	return 1;
}

/* Reads a small file whole into b, trailing whitespace trimmed. 0 or -1 with err. */
static int
read_small(const char *path, struct buf *b, char *err, size_t errlen)
{
	if (util_read_file(path, b, err, errlen) == -1)
		return -1;
	while (b->len > 0 && strchr(" \t\r\n", b->p[b->len - 1]) != NULL)
		b->p[--b->len] = '\0';
	return 0;
}

static int
l_read_file(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	struct buf b;
	char err[300];

	buf_init(&b, SECRET_MAX);
	if (read_small(path, &b, err, sizeof(err)) == -1) {
		buf_free(&b);
		lua_pushnil(L);
		lua_pushstring(L, err);
		return 2;
	}
	lua_pushlstring(L, b.p != NULL ? b.p : "", b.len);
	if (b.p != NULL)
		memset(b.p, 0, b.len);
	buf_free(&b);
	return 1;
}

/*
 * A file secret, re-read at most once a second per worker (so a rotated
 * token is picked up quickly without a file read per request).
 */
static int
secret_file(lua_State *L, const char *path)
{
	struct hook *h = cur_hook(L);
	struct addon_vm *vm;
	struct secret_ent *e;
	struct buf b;
	char err[300];
	long long now = util_mono_coarse_ms();
	unsigned i;

	if (h == NULL) {
		lua_settop(L, 0);
		lua_pushstring(L, path);
		return l_read_file(L);
	}
	vm = h->vm;
	for (i = 0; i < SECRET_CACHE; i++) {
		e = &vm->sc[i];
		if (e->path != NULL && strcmp(e->path, path) == 0 && now - e->at < SECRET_TTL_MS) {
			lua_pushlstring(L, e->val, e->len);
			return 1;
		}
	}
	buf_init(&b, SECRET_MAX);
	if (read_small(path, &b, err, sizeof(err)) == -1) {
		buf_free(&b);
		lua_pushnil(L);
		lua_pushstring(L, err);
		return 2;
	}
	for (i = 0; i < SECRET_CACHE; i++)
		if (vm->sc[i].path != NULL && strcmp(vm->sc[i].path, path) == 0)
			break;
	if (i == SECRET_CACHE)
		i = vm->sc_next++ % SECRET_CACHE;
	e = &vm->sc[i];
	if (e->val != NULL)
		OPENSSL_cleanse(e->val, e->len);
	free(e->val);
	free(e->path);
	e->path = xstrdup(path);
	e->val = xmalloc(b.len + 1);
	memcpy(e->val, b.p != NULL ? b.p : "", b.len);
	e->val[b.len] = '\0';
	e->len = b.len;
	e->at = now;
	if (b.p != NULL)
		OPENSSL_cleanse(b.p, b.len);
	buf_free(&b);
	lua_pushlstring(L, e->val, e->len);
	return 1;
}

/* proxy.secret("env:NAME" | "file:/path") -> value | nil, err */
static int
l_secret(lua_State *L)
{
	const char *spec = luaL_checkstring(L, 1), *v;

	if (strncmp(spec, "env:", 4) == 0) {
		if ((v = getenv(spec + 4)) == NULL || *v == '\0') {
			lua_pushnil(L);
			lua_pushfstring(L, "environment variable %s is not set", spec + 4);
			return 2;
		}
		lua_pushstring(L, v);
		return 1;
	}
	if (strncmp(spec, "file:", 5) == 0)
		return secret_file(L, spec + 5);
	lua_pushnil(L);
	lua_pushstring(L, "secret spec must be env:NAME or file:PATH");
	return 2;
}

static void
push_b64(lua_State *L, const char *s, size_t n)
{
	luaL_Buffer lb;
	char *out;
	int len;

	if (n > (size_t)3 * 1024 * 1024)
		luaL_error(L, "base64 input too large");
	out = luaL_buffinitsize(L, &lb, (n + 2) / 3 * 4 + 1);
	len = EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
	luaL_pushresultsize(&lb, (size_t)len);
}

static int
l_base64(lua_State *L)
{
	size_t n;
	const char *s = luaL_checklstring(L, 1, &n);

	push_b64(L, s, n);
	return 1;
}

static void
push_basic(lua_State *L, const char *user, const char *pass)
{
	luaL_Buffer lb;
	size_t ul = strlen(user), pl = strlen(pass);
	char *tmp;

	if (ul + pl > 16384)
		luaL_error(L, "credential too long");
	tmp = xmalloc(ul + pl + 2);
	/* tmp is "user:pass" as bytes, not a C string */
	memcpy(tmp, user, ul);	/* NOLINT(bugprone-not-null-terminated-result) */
	tmp[ul] = ':';
	memcpy(tmp + ul + 1, pass, pl);	/* NOLINT(bugprone-not-null-terminated-result) */
	luaL_buffinit(L, &lb);
	luaL_addstring(&lb, "Basic ");
	push_b64(L, tmp, ul + pl + 1);
	luaL_addvalue(&lb);
	luaL_pushresult(&lb);
	memset(tmp, 0, ul + pl + 1);
	free(tmp);
}

static int
l_basic(lua_State *L)
{
	push_basic(L, luaL_checkstring(L, 1), luaL_checkstring(L, 2));
	return 1;
}

static int
l_github_basic(lua_State *L)
{
	push_basic(L, "x-access-token", luaL_checkstring(L, 1));
	return 1;
}

static int
l_gitlab_basic(lua_State *L)
{
	push_basic(L, "oauth2", luaL_checkstring(L, 1));
	return 1;
}

static int
l_log(lua_State *L)
{
	char esc[1024];
	size_t n;
	const char *s = luaL_checklstring(L, 1, &n);

	log_info("addon: %s", log_escape(esc, sizeof(esc), s, n));
	return 0;
}

static int
l_warn(lua_State *L)
{
	char esc[1024];
	size_t n;
	const char *s = luaL_checklstring(L, 1, &n);

	log_warnx("addon: %s", log_escape(esc, sizeof(esc), s, n));
	return 0;
}

static void
gh_done(void *arg, const char *token, const char *err);

static int hook_step(struct hook *h, int nargs);
static void hook_release(struct hook *h);

/*
 * proxy.github_app_token{app_id=, installation_id=, private_key_file=,
 * api=, repositories={...}, permissions={...}} -> token | nil, err
 */
static int
l_github_app_token(lua_State *L)
{
	struct hook *h = cur_hook(L);
	struct ghapp_opts o;
	struct buf body;
	char tok[512], err[512];
	int rc;

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
	buf_init(&body, 16384);
	lua_getfield(L, 1, "repositories");
	lua_getfield(L, 1, "permissions");
	if (lua_istable(L, -2) || lua_istable(L, -1)) {
		int rcb = buf_addstr(&body, "{");
		if (lua_istable(L, -2)) {
			lua_Integer i, n = luaL_len(L, -2);
			rcb |= buf_addstr(&body, "\"repositories\":[");
			for (i = 1; i <= n && i <= 500; i++) {
				lua_geti(L, -2, i);
				const char *r = luaL_checkstring(L, -1);
				if (strpbrk(r, "\"\\") != NULL)
					return luaL_error(L, "bad repository name");
				rcb |= buf_addf(&body, "%s\"%s\"", i > 1 ? "," : "", r);
				lua_pop(L, 1);
			}
			rcb |= buf_addstr(&body, "]");
		}
		if (lua_istable(L, -1)) {
			int first = 1;
			rcb |= buf_addf(&body, "%s\"permissions\":{", lua_istable(L, -2) ? "," : "");
			lua_pushnil(L);
			while (lua_next(L, -2) != 0) {
				const char *k = lua_tostring(L, -2), *v = lua_tostring(L, -1);
				if (k == NULL || v == NULL || strpbrk(k, "\"\\") != NULL ||
				    strpbrk(v, "\"\\") != NULL)
					return luaL_error(L, "bad permission entry");
				rcb |= buf_addf(&body, "%s\"%s\":\"%s\"", first ? "" : ",", k, v);
				first = 0;
				lua_pop(L, 1);
			}
			rcb |= buf_addstr(&body, "}");
		}
		rcb |= buf_addstr(&body, "}");
		if (rcb != 0) {
			buf_free(&body);
			return luaL_error(L, "token request body too large");
		}
		o.body = body.p;
	}
	rc = ghapp_token(h->vm->gh, &o, tok, sizeof(tok), err, sizeof(err), gh_done, h);
	buf_free(&body);
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

static const luaL_Reg proxy_fns[] = {
	{ "env", l_env },
	{ "read_file", l_read_file },
	{ "secret", l_secret },
	{ "base64", l_base64 },
	{ "basic", l_basic },
	{ "github_basic", l_github_basic },
	{ "gitlab_basic", l_gitlab_basic },
	{ "log", l_log },
	{ "warn", l_warn },
	{ "github_app_token", l_github_app_token },
	{ NULL, NULL }
};

/* ---- the request object ---- */

static struct lreq *
check_req(lua_State *L)
{
	struct lreq *lr = luaL_checkudata(L, 1, "egress.req");

	if (lr->r == NULL)
		luaL_error(L, "request object used after its hook returned");
	return lr;
}

static int
req_header(lua_State *L)
{
	struct lreq *lr = check_req(L);
	size_t n;
	const char *v = hreq_get(lr->r, luaL_checkstring(L, 2), &n);

	if (v == NULL)
		lua_pushnil(L);
	else
		lua_pushlstring(L, v, n);
	return 1;
}

static int
req_set_header(lua_State *L)
{
	struct lreq *lr = check_req(L);

	if (hreq_set(lr->r, luaL_checkstring(L, 2), luaL_checkstring(L, 3)) == -1)
		return luaL_error(L, "set_header: bad header name or value (CR/LF/control bytes, or a framing header)");
	return 0;
}

static int
req_remove_header(lua_State *L)
{
	struct lreq *lr = check_req(L);

	lua_pushinteger(L, hreq_remove(lr->r, luaL_checkstring(L, 2)));
	return 1;
}

static int
req_inject(lua_State *L)
{
	struct lreq *lr = check_req(L);
	const char *rule = luaL_optstring(L, 4, "addon");

	if (hreq_inject(lr->r, luaL_checkstring(L, 2), luaL_checkstring(L, 3), rule) == -1)
		return luaL_error(L, "inject: bad header name or value");
	return 0;
}

static int
req_deny(lua_State *L)
{
	struct lreq *lr = check_req(L);
	lua_Integer st = luaL_optinteger(L, 2, 403);

	if (st < 400 || st > 599)
		return luaL_error(L, "deny: status must be 400..599");
	lr->denied = 1;
	lr->status = (int)st;
	snprintf(lr->reason, sizeof(lr->reason), "%s", luaL_optstring(L, 3, "denied by policy"));
	return 0;
}

static int
req_index(lua_State *L)
{
	struct lreq *lr = check_req(L);
	const char *k = luaL_checkstring(L, 2);

	if (strcmp(k, "method") == 0)
		lua_pushstring(L, hreq_method(lr->r));
	else if (strcmp(k, "path") == 0)
		lua_pushlstring(L, lr->r->data.p + lr->r->path_o, lr->r->path_l);
	else if (strcmp(k, "host") == 0)
		lua_pushstring(L, lr->t->host);
	else if (strcmp(k, "port") == 0)
		lua_pushinteger(L, lr->t->port);
	else if (strcmp(k, "injected") == 0)
		lua_pushboolean(L, lr->r->injected);
	else {
		/* methods */
		luaL_getmetatable(L, "egress.req");
		lua_getfield(L, -1, "methods");
		lua_getfield(L, -1, k);
	}
	return 1;
}

static const luaL_Reg req_methods[] = {
	{ "header", req_header },
	{ "set_header", req_set_header },
	{ "remove_header", req_remove_header },
	{ "inject", req_inject },
	{ "deny", req_deny },
	{ NULL, NULL }
};

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

static int
msgh(lua_State *L)
{
	const char *m = lua_tostring(L, 1);

	luaL_traceback(L, L, m != NULL ? m : "(error object is not a string)", 1);
	return 1;
}

static void
vm_free(struct addon_vm *vm)
{
	size_t i, j;

	if (vm->L != NULL)
		lua_close(vm->L);
	for (i = 0; i < SECRET_CACHE; i++) {
		if (vm->sc[i].val != NULL)
			OPENSSL_cleanse(vm->sc[i].val, vm->sc[i].len);
		free(vm->sc[i].val);
		free(vm->sc[i].path);
	}
	for (i = 0; i < vm->n; i++) {
		for (j = 0; j < vm->a[i].nstrip; j++)
			free(vm->a[i].strip[j]);
		free(vm->a[i].strip);
	}
	free(vm);
}

struct addon_vm *
addon_vm_new(struct addon_src *src, const struct pconf *conf, struct ghapp *gh,
    char *err, size_t errlen)
{
	struct addon_vm *vm = xcalloc(1, sizeof(*vm));
	lua_State *L;
	size_t i, j;
	const char *base;

	vm->refs = 1;
	vm->gen = src->gen;
	vm->conf = conf;
	vm->gh = gh;
	vm->memlimit = (size_t)conf->lua_memory;
	vm->budget = conf->lua_instructions;
	if ((L = vm->L = lua_newstate(l_alloc, vm)) == NULL) {
		snprintf(err, errlen, "cannot create Lua state");
		goto fail;
	}
	*(struct hook **)lua_getextraspace(L) = NULL;
	luaL_openlibs(L);
	/* proxy.* */
	luaL_newlib(L, proxy_fns);
	lua_newtable(L);
	for (i = 0; i < conf->addon_config.n; i++) {
		lua_pushstring(L, conf->addon_config.v[i]);
		lua_setfield(L, -2, conf->addon_config.k[i]);
	}
	lua_setfield(L, -2, "config");
	lua_setglobal(L, "proxy");
	/* the request metatable */
	luaL_newmetatable(L, "egress.req");
	lua_pushcfunction(L, req_index);
	lua_setfield(L, -2, "__index");
	luaL_newlib(L, req_methods);
	lua_setfield(L, -2, "methods");
	lua_pop(L, 1);
	/* the addons */
	lua_newtable(L);	/* addons list, stays at index 1 */
	lua_sethook(L, budget_hook, LUA_MASKCOUNT, (int)(vm->budget > 0x7fffffff ?
	    0x7fffffff : vm->budget));
	for (i = 0; i < src->n; i++) {
		struct addon_info *ai = &vm->a[i];
		char chunk[300];

		snprintf(chunk, sizeof(chunk), "@%s", src->f[i].path);
		lua_pushcfunction(L, msgh);
		if (luaL_loadbufferx(L, src->f[i].text, src->f[i].len, chunk, "t") != LUA_OK ||
		    lua_pcall(L, 0, 1, -2) != LUA_OK) {
			snprintf(err, errlen, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) :
			    "load error");
			lua_sethook(L, NULL, 0, 0);
			goto fail;
		}
		if (!lua_istable(L, -1)) {
			snprintf(err, errlen, "%s: an addon must return a table", src->f[i].path);
			lua_sethook(L, NULL, 0, 0);
			goto fail;
		}
		lua_getfield(L, -1, "name");
		base = strrchr(src->f[i].path, '/');
		snprintf(ai->name, sizeof(ai->name), "%s", lua_isstring(L, -1) ?
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
			ai->strip = xcalloc((size_t)n + 1, sizeof(char *));
			for (k = 1; k <= n; k++) {
				lua_geti(L, -1, k);
				if (lua_type(L, -1) == LUA_TSTRING)
					ai->strip[ai->nstrip++] = xstrdup(lua_tostring(L, -1));
				lua_pop(L, 1);
			}
		}
		lua_pop(L, 1);
		lua_seti(L, -3, (lua_Integer)i + 1);	/* addons[i+1] = M */
		lua_pop(L, 1);				/* msgh */
		vm->n++;
	}
	if (luaL_loadbufferx(L, prelude, sizeof(prelude) - 1, "=prelude", "t") != LUA_OK) {
		snprintf(err, errlen, "prelude: %s", lua_tostring(L, -1));
		goto fail;
	}
	lua_pushvalue(L, -2);
	if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
		snprintf(err, errlen, "prelude: %s", lua_tostring(L, -1));
		goto fail;
	}
	lua_sethook(L, NULL, 0, 0);
	lua_settop(L, 0);
	(void)j;
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

unsigned
addon_vm_gen(const struct addon_vm *vm)
{
	return vm->gen;
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
		if (read_small(f->path, &b, err, errlen) == -1) {
			buf_free(&b);
			goto fail;
		}
		f->text = buf_steal(&b, &f->len);
		if (f->text == NULL)
			f->text = xstrdup("");
	}
	s->gen = atomic_fetch_add(&src_gen, 1) + 1;
	if ((vm = addon_vm_new(s, conf, NULL, err, errlen)) == NULL)
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

static struct hook *
hook_new(struct addon_vm *vm, enum hook_kind kind, hook_cb cb, void *arg)
{
	struct hook *h = xcalloc(1, sizeof(*h));
	lua_State *L = vm->L;

	h->vm = addon_vm_ref(vm);
	h->kind = kind;
	h->cb = cb;
	h->arg = arg;
	h->lr_ref = LUA_NOREF;
	h->res.addon = -1;
	h->co = lua_newthread(L);
	h->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	*(struct hook **)lua_getextraspace(h->co) = h;
	return h;
}

static void
hook_release(struct hook *h)
{
	lua_State *L = h->vm->L;

	if (h->lr != NULL)
		h->lr->r = NULL;
	if (h->co != NULL)
		*(struct hook **)lua_getextraspace(h->co) = NULL;
	luaL_unref(L, LUA_REGISTRYINDEX, h->co_ref);
	luaL_unref(L, LUA_REGISTRYINDEX, h->lr_ref);
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
hook_error(struct hook *h, const char *msg)
{
	char esc[2048];
	const char *name = h->res.addon >= 0 ? addon_vm_name(h->vm, h->res.addon) : "-";

	atomic_fetch_add(&addon_errors_total, 1);
	log_escape(esc, sizeof(esc), msg, strlen(msg));
	log_warnx("addon=%s hook=%s failed closed: %s", name,
	    h->kind == HOOK_CONNECT ? "on_connect" : "on_request", esc);
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
			hook_error(h, "on_connect must return \"intercept\", \"tunnel\", \"deny\" or nil");
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
			hook_error(h, "on_request must return nil, \"forward\" or \"deny\"");
			return;
		}
	}
	h->res.action = ACT_NONE;
}

/*
 * Resumes the hook's coroutine. Returns 1 if it is waiting again, 0 when it
 * finished (h->res filled; the caller delivers and releases).
 */
static int
hook_step(struct hook *h, int nargs)
{
	lua_State *co = h->co;
	int st, nres = 0;
	long long b = h->vm->budget;

	lua_sethook(co, budget_hook, LUA_MASKCOUNT, (int)(b > 0x7fffffff ? 0x7fffffff : b));
	st = lua_resume(co, h->vm->L, nargs, &nres);
	lua_sethook(co, NULL, 0, 0);
	if (st == LUA_YIELD) {
		if (h->waiting) {
			lua_pop(co, nres);
			return 1;
		}
		hook_error(h, "a hook may not yield (only proxy.github_app_token waits)");
		return 0;
	}
	if (st != LUA_OK) {
		const char *m = lua_tostring(co, -1);
		luaL_traceback(co, co, m != NULL ? m : "(error object is not a string)", 0);
		hook_error(h, lua_tostring(co, -1));
		return 0;
	}
	hook_results(h, nres);
	return 0;
}

static void
gh_done(void *arg, const char *token, const char *err)
{
	struct hook *h = arg;
	int nargs;

	h->waiting = 0;
	if (h->cancelled) {
		hook_release(h);
		return;
	}
	if (token != NULL) {
		lua_pushstring(h->co, token);
		nargs = 1;
	} else {
		lua_pushnil(h->co);
		lua_pushstring(h->co, err != NULL ? err : "token request failed");
		nargs = 2;
	}
	if (hook_step(h, nargs) == 1)
		return;
	{
		struct hook_result res = h->res;
		hook_cb cb = h->cb;
		void *carg = h->arg;
		hook_release(h);
		cb(carg, &res);
	}
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

int
addon_on_connect(struct addon_vm *vm, const struct hook_ctx *hc, int *ctx_ref,
    struct hook_result *res, hook_cb cb, void *arg, struct hook **hp)
{
	struct hook *h;
	lua_State *L = vm->L;

	*hp = NULL;
	push_ctx(L, hc);
	*ctx_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	h = hook_new(vm, HOOK_CONNECT, cb, arg);
	lua_getglobal(h->co, "__decide");
	lua_rawgeti(h->co, LUA_REGISTRYINDEX, *ctx_ref);
	if (hook_step(h, 1) == 1) {
		*hp = h;
		return 1;
	}
	return hook_finish_sync(h, res);
}

int
addon_on_request(struct addon_vm *vm, int addon, int ctx_ref, struct hreq *req,
    const struct target *t, struct hook_result *res, hook_cb cb, void *arg, struct hook **hp)
{
	struct hook *h;
	struct lreq *lr;
	lua_State *L = vm->L;

	*hp = NULL;
	if (addon < 0 || (size_t)addon >= vm->n || !vm->a[addon].has_request) {
		memset(res, 0, sizeof(*res));
		res->action = ACT_NONE;
		res->addon = addon;
		return 0;
	}
	h = hook_new(vm, HOOK_REQUEST, cb, arg);
	h->res.addon = addon;
	lr = lua_newuserdatauv(L, sizeof(*lr), 0);
	memset(lr, 0, sizeof(*lr));
	lr->r = req;
	lr->t = t;
	luaL_setmetatable(L, "egress.req");
	h->lr_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	h->lr = lr;
	lua_getglobal(h->co, "__request");
	lua_pushinteger(h->co, addon + 1);
	lua_rawgeti(h->co, LUA_REGISTRYINDEX, h->lr_ref);
	lua_rawgeti(h->co, LUA_REGISTRYINDEX, ctx_ref);
	if (hook_step(h, 3) == 1) {
		*hp = h;
		return 1;
	}
	return hook_finish_sync(h, res);
}

void
addon_on_response(struct addon_vm *vm, int addon, int ctx_ref, struct hreq *req,
    int status)
{
	lua_State *L = vm->L;
	long long b = vm->budget;

	lua_pushcfunction(L, msgh);
	lua_getglobal(L, "__response");
	lua_pushinteger(L, addon + 1);
	lua_createtable(L, 0, 5);
	lua_pushinteger(L, status);
	lua_setfield(L, -2, "status");
	lua_pushstring(L, hreq_method(req));
	lua_setfield(L, -2, "method");
	lua_pushlstring(L, req->data.p + req->path_o, req->path_l);
	lua_setfield(L, -2, "path");
	lua_pushboolean(L, req->injected);
	lua_setfield(L, -2, "injected");
	lua_rawgeti(L, LUA_REGISTRYINDEX, ctx_ref);
	lua_sethook(L, budget_hook, LUA_MASKCOUNT, (int)(b > 0x7fffffff ? 0x7fffffff : b));
	if (lua_pcall(L, 3, 0, -5) != LUA_OK) {
		char esc[2048];
		const char *m = lua_tostring(L, -1);
		atomic_fetch_add(&addon_errors_total, 1);
		log_warnx("addon=%s hook=on_response failed: %s", addon_vm_name(vm, addon),
		    log_escape(esc, sizeof(esc), m ? m : "?", m ? strlen(m) : 1));
		lua_pop(L, 1);
	}
	lua_sethook(L, NULL, 0, 0);
	lua_pop(L, 1);
}

void
addon_vm_gc(struct addon_vm *vm)
{
	lua_gc(vm->L, LUA_GCCOLLECT);
}

void
addon_ctx_release(struct addon_vm *vm, int ctx_ref)
{
	luaL_unref(vm->L, LUA_REGISTRYINDEX, ctx_ref);
}
