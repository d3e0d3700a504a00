/*
 * addon_lib.c: what addons call that needs nothing of a running hook
 * (docs/addons.md): the proxy.* helpers (environment and file secrets, a
 * file secret re-read at most once a second per worker; base64, Basic
 * credentials, log lines) and the request object's methods. addon.c adds
 * the helper that makes a hook wait (github_app_token).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <math.h>

#include <cjson/cJSON.h>
#include <lauxlib.h>
#include <lua.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "addon_lib.h"
#include "bodygate.h"
#include "buf.h"
#include "canon.h"
#include "gql.h"
#include "httpreq.h"
#include "log.h"
#include "pglob.h"
#include "reqcanon.h"
#include "secsrc.h"
#include "util.h"
#include "xmalloc.h"

#define SECRET_MAX	((size_t)64 * 1024)
#define SECRET_TTL_MS	1000
#define GLOB_SUBJECT_MAX	65536	/* proxy.glob: O(subject x pattern) */

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

/* 1 if s (n bytes) is empty or only whitespace: never a credential. */
static int
blank(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strchr(" \t\r\n\v\f", s[i]) == NULL || s[i] == '\0')
			return 0;
	return 1;
}

int
addon_read_small(const char *path, struct buf *b, char *err, size_t errlen)
{
	/* O_NONBLOCK: a FIFO in a file's place must not hang a worker */
	if (util_read_file_flags(path, O_NONBLOCK | O_NOCTTY, b, err, errlen) == -1)
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
	if (addon_read_small(path, &b, err, sizeof(err)) == -1) {
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
secret_file(lua_State *L, struct addon_secrets *sc, const char *path)
{
	struct secret_ent *e;
	struct buf b;
	char err[300] = "";
	long long now = util_mono_coarse_ms();
	unsigned i;

	/* Outside a hook (an addon's load): read each time, no cache. */
	if (*(void **)lua_getextraspace(L) == NULL) {
		lua_settop(L, 0);
		lua_pushstring(L, path);
		if (l_read_file(L) == 1 && blank(lua_tostring(L, -1), lua_rawlen(L, -1))) {
			lua_pushnil(L);
			lua_pushliteral(L, "empty secret");
			return 2;
		}
		return lua_gettop(L) - 1;
	}
	for (i = 0; i < SECRET_CACHE; i++) {
		e = &sc->sc[i];
		if (e->path != NULL && strcmp(e->path, path) == 0 && now - e->at < SECRET_TTL_MS) {
			lua_pushlstring(L, e->val, e->len);
			return 1;
		}
	}
	buf_init(&b, SECRET_MAX);
	if (addon_read_small(path, &b, err, sizeof(err)) == -1 || blank(b.p, b.len)) {
		if (err[0] == '\0')
			snprintf(err, sizeof(err), "empty secret");
		if (b.p != NULL)
			OPENSSL_cleanse(b.p, b.len);
		buf_free(&b);
		lua_pushnil(L);
		lua_pushstring(L, err);
		return 2;
	}
	for (i = 0; i < SECRET_CACHE; i++)
		if (sc->sc[i].path != NULL && strcmp(sc->sc[i].path, path) == 0)
			break;
	if (i == SECRET_CACHE)
		i = sc->next++ % SECRET_CACHE;
	e = &sc->sc[i];
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

/*
 * proxy.secret("env:NAME" | "file:/path" | "cmd:/path arg...") -> value | nil, err.
 * A command runs only at an addon's load (secsrc.h: it blocks up to its
 * timeout), never in a hook, which a worker's event loop runs.
 */
static int
l_secret(lua_State *L)
{
	const char *spec = luaL_checkstring(L, 1), *v;

	if (strncmp(spec, "env:", 4) == 0) {
		if ((v = getenv(spec + 4)) == NULL) {
			lua_pushnil(L);
			lua_pushfstring(L, "environment variable %s is not set", spec + 4);
			return 2;
		}
		if (blank(v, strlen(v))) {
			lua_pushnil(L);
			lua_pushliteral(L, "empty secret");
			return 2;
		}
		lua_pushstring(L, v);
		return 1;
	}
	if (strncmp(spec, "file:", 5) == 0)
		return secret_file(L, lua_touserdata(L, lua_upvalueindex(1)),
		    spec + 5);
	if (strncmp(spec, "cmd:", 4) == 0) {
		char err[600], *out;

		if (*(void **)lua_getextraspace(L) != NULL) {
			lua_pushnil(L);
			lua_pushliteral(L, "cmd: secrets are read at an addon's load only (call "
			    "proxy.secret at the file's top level, or declare a named credential)");
			return 2;
		}
		if ((out = secsrc_cmd(spec, SECRET_MAX, err, sizeof(err))) == NULL) {
			lua_pushnil(L);
			lua_pushstring(L, err);
			return 2;
		}
		lua_pushstring(L, out);
		OPENSSL_cleanse(out, strlen(out));
		free(out);
		return 1;
	}
	lua_pushnil(L);
	lua_pushstring(L, "secret spec must be env:NAME, file:PATH or cmd:/PATH ARG...");
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

/* ---- the request object (egress.req) ---- */

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
	const char *v = h1head_get(&lr->r->hd, luaL_checkstring(L, 2), &n);

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

	lua_pushinteger(L, h1head_del(&lr->r->hd, luaL_checkstring(L, 2)));
	return 1;
}

static int
req_inject(lua_State *L)
{
	struct lreq *lr = check_req(L);
	const char *rule = luaL_optstring(L, 4, "addon");

	const char *name = luaL_checkstring(L, 2);

	if (hreq_inject(lr->r, name, luaL_checkstring(L, 3), rule) == -1)
		return luaL_error(L, "inject: bad header name or value");
	if (lr->ninj < LREQ_INJ && strlen(name) < sizeof(lr->inj[0]))
		snprintf(lr->inj[lr->ninj++], sizeof(lr->inj[0]), "%s", name);
	return 0;
}

static int
req_deny(lua_State *L)
{
	struct lreq *lr = check_req(L);
	lua_Integer st = luaL_optinteger(L, 2, 403);
	size_t bl = 0;
	const char *body = luaL_optlstring(L, 4, NULL, &bl);
	const char *ct = luaL_optstring(L, 5, "text/plain");

	if (st < 400 || st > 599)
		return luaL_error(L, "deny: status must be 400..599");
	if (body != NULL && bl > sizeof(lr->body))
		return luaL_error(L, "deny: body longer than %d bytes", (int)sizeof(lr->body));
	if (strlen(ct) >= sizeof(lr->ctype) || strpbrk(ct, "\r\n") != NULL)
		return luaL_error(L, "deny: bad content type");
	lr->denied = 1;
	lr->status = (int)st;
	snprintf(lr->reason, sizeof(lr->reason), "%s", luaL_optstring(L, 3, "denied by policy"));
	lr->body_len = 0;
	if (body != NULL) {
		memcpy(lr->body, body, bl);
		lr->body_len = bl;
		snprintf(lr->ctype, sizeof(lr->ctype), "%s", ct);
	}
	return 0;
}

/*
 * 1 if the request is method m to a path whose canonical form (reqcanon.h;
 * the query left out) ends in suffix, ASCII case ignored: an upstream that
 * decodes, normalises or folds case routes every spelling of it there.
 * Raises when the target has no canonical form (the hook fails closed).
 */
static int
req_is(lua_State *L, const struct lreq *lr, const char *m, const char *suffix)
{
	const struct hreq *r = lr->r;
	struct buf b;
	char err[128];
	size_t n, sl = strlen(suffix);
	int is;

	if (strcmp(h1head_method(&r->hd), m) != 0)
		return 0;
	if (r->canon) {
		n = r->cpath_l;
		return n >= sl && strncasecmp(r->hd.data.p + r->path_o + n - sl, suffix, sl) == 0;
	}
	buf_init(&b, REQCANON_MAX * 3 + 8);
	if (reqcanon_target(r->hd.data.p + r->path_o, r->path_l, &b, &n, err, sizeof(err)) == -1) {
		buf_free(&b);
		return luaL_error(L, "request target has no canonical form: %s", err);
	}
	is = n >= sl && strncasecmp(b.p + n - sl, suffix, sl) == 0;
	buf_free(&b);
	return is;
}

/* Adds the strings of list t[k] (nil: none) to g (owned by the request); raises on a bad value. */
static void
rules_list(lua_State *L, struct bgate *g, const char *k, int protect)
{
	lua_Integer i, n;
	size_t len;
	const char *s;

	if (lua_getfield(L, 2, k) == LUA_TNIL) {
		lua_pop(L, 1);
		return;
	}
	if (!lua_istable(L, -1))
		luaL_error(L, "push_rules: %s must be a list of strings", k);
	if (!protect)
		bgate_push_list(g);
	n = luaL_len(L, -1);
	for (i = 1; i <= n; i++) {
		lua_geti(L, -1, i);
		s = lua_tolstring(L, -1, &len);
		if (lua_type(L, -1) != LUA_TSTRING || bgate_push_add(g, protect, s, len) == -1)
			luaL_error(L, "push_rules: %s[%d] must be a string (at most %d patterns of "
			    "1024 bytes)", k, (int)i, BGATE_RULES_MAX);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
}

/*
 * req:push_rules{push=, protect=, delete=} -> true if armed (a POST to
 * .../git-receive-pack), false otherwise (nothing to check).
 */
static int
req_push_rules(lua_State *L)
{
	struct lreq *lr = check_req(L);
	struct bgate *g;
	int del;

	luaL_checktype(L, 2, LUA_TTABLE);
	lua_getfield(L, 2, "delete");
	if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
		return luaL_error(L, "push_rules: delete must be a boolean");
	del = lua_toboolean(L, -1);
	lua_pop(L, 1);
	if (!req_is(L, lr, "POST", "/git-receive-pack")) {
		lua_pushboolean(L, 0);
		return 1;
	}
	g = bgate_push_new();
	bgate_free(lr->r->gate);
	lr->r->gate = g;	/* the request frees it, also when a list below raises */
	bgate_push_delete(g, del);
	rules_list(L, g, "push", 0);
	rules_list(L, g, "protect", 1);
	lua_pushboolean(L, 1);
	return 1;
}

/*
 * Arms the GraphQL gate on a POST with rules r (owned by the request from
 * now on) and pushes true; on other methods frees r and pushes false.
 */
static int
graphql_arm(lua_State *L, struct lreq *lr, struct gql_rules *r, enum bgate_forge forge)
{
	const char *p = lr->r->hd.data.p + lr->r->path_o, *q;

	if (strcmp(h1head_method(&lr->r->hd), "POST") != 0 || !gql_rules_restrict(r)) {
		gql_rules_free(r);
		lua_pushboolean(L, 0);
		return 1;
	}
	q = memchr(p, '?', lr->r->path_l);
	bgate_free(lr->r->gate);
	lr->r->gate = bgate_graphql_new(r, forge, q != NULL && q + 1 < p + lr->r->path_l);
	lua_pushboolean(L, 1);
	return 1;
}

/*
 * req:canonicalize() -> the canonical path (no query) | nil, reason. From
 * then on req.path is the canonical target and that is what goes upstream.
 */
static int
req_canonicalize(lua_State *L)
{
	struct lreq *lr = check_req(L);
	char err[128];

	if (hreq_canonicalize(lr->r, err, sizeof(err)) == -1) {
		lua_pushnil(L);
		lua_pushstring(L, err);
		return 2;
	}
	lua_pushlstring(L, lr->r->hd.data.p + lr->r->path_o, lr->r->cpath_l);
	return 1;
}

/*
 * req:graphql_rules{mutations=, allow=, forge=} -> true if armed (a POST
 * whose mutations are restricted), false otherwise (nothing to check).
 * mutations: false/nil none, true all or the allow-list's root fields;
 * allow: a list of GraphQL names (needs mutations = true); forge:
 * "github" (default) or "gitlab", the shape of the JSON errors.
 */
static int
req_graphql_rules(lua_State *L)
{
	struct lreq *lr = check_req(L);
	struct gql_rules *r;
	enum bgate_forge forge = BGATE_GITHUB;
	const char *f, *name;
	lua_Integer i, n = 0;
	size_t len;
	int mut;

	luaL_checktype(L, 2, LUA_TTABLE);
	lua_getfield(L, 2, "mutations");
	if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
		return luaL_error(L, "graphql_rules: mutations must be a boolean");
	mut = lua_toboolean(L, -1);
	if (lua_getfield(L, 2, "forge") != LUA_TNIL) {
		f = lua_tostring(L, -1);
		if (lua_type(L, -1) != LUA_TSTRING || (strcmp(f, "github") != 0 &&
		    strcmp(f, "gitlab") != 0))
			return luaL_error(L, "graphql_rules: forge must be \"github\" or \"gitlab\"");
		forge = strcmp(f, "gitlab") == 0 ? BGATE_GITLAB : BGATE_GITHUB;
	}
	if (lua_getfield(L, 2, "allow") != LUA_TNIL) {
		if (!lua_istable(L, -1))
			return luaL_error(L, "graphql_rules: allow must be a list of field names");
		if (!mut)
			return luaL_error(L, "graphql_rules: allow needs mutations = true");
		if ((n = luaL_len(L, -1)) > GQL_ALLOW_MAX)
			return luaL_error(L, "graphql_rules: more than %d names in allow", GQL_ALLOW_MAX);
	}
	/* Checked before anything is allocated: a raise below would leak it. */
	for (i = 1; i <= n; i++) {
		lua_geti(L, -1, i);
		name = lua_tolstring(L, -1, &len);
		if (lua_type(L, -1) != LUA_TSTRING || !gql_name_ok(name, len))
			return luaL_error(L, "graphql_rules: allow[%d] must be a GraphQL name of at "
			    "most %d bytes", (int)i, GQL_NAME_MAX);
		lua_pop(L, 1);
	}
	r = gql_rules_new(mut);
	if (lua_istable(L, -1)) {
		/* allow = {} is a list: no mutation passes */
		if (n == 0)
			ign(gql_rules_allow(r, "__typename", 10));
		for (i = 1; i <= n; i++) {
			lua_geti(L, -1, i);
			name = lua_tolstring(L, -1, &len);
			ign(gql_rules_allow(r, name, len));
			lua_pop(L, 1);
		}
	}
	return graphql_arm(L, lr, r, forge);
}

/* req:refuse_graphql_mutations(): req:graphql_rules{mutations = false}. */
static int
req_refuse_graphql_mutations(lua_State *L)
{
	return graphql_arm(L, check_req(L), gql_rules_new(0), BGATE_GITHUB);
}

/*
 * req:refuse_quick_actions() -> true if armed (a request with any method
 * but GET or HEAD), false otherwise. The body (JSON or a form, at most
 * BGATE_GRAPHQL_MAX) and the URL's query are read for GitLab quick actions
 * (qaction.h) before anything goes upstream.
 */
static int
req_refuse_quick_actions(lua_State *L)
{
	struct lreq *lr = check_req(L);
	const char *m = h1head_method(&lr->r->hd), *p = lr->r->hd.data.p + lr->r->path_o, *q, *ct;
	size_t ctl = 0, qn = 0;

	if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0) {
		lua_pushboolean(L, 0);
		return 1;
	}
	if ((q = memchr(p, '?', lr->r->path_l)) != NULL) {
		q++;
		qn = (size_t)(p + lr->r->path_l - q);
	}
	ct = h1head_get(&lr->r->hd, "content-type", &ctl);
	bgate_free(lr->r->gate);
	lr->r->gate = bgate_text_new(qaction_body_kind(ct, ctl), q != NULL ? q : "", qn);
	lua_pushboolean(L, 1);
	return 1;
}

static int
req_index(lua_State *L)
{
	struct lreq *lr = check_req(L);
	const char *k = luaL_checkstring(L, 2);

	if (strcmp(k, "method") == 0)
		lua_pushstring(L, h1head_method(&lr->r->hd));
	else if (strcmp(k, "path") == 0)
		lua_pushlstring(L, lr->r->hd.data.p + lr->r->path_o, lr->r->path_l);
	else if (strcmp(k, "host") == 0)
		lua_pushstring(L, lr->t->host);
	else if (strcmp(k, "port") == 0)
		lua_pushinteger(L, lr->t->port);
	else if (strcmp(k, "injected") == 0)
		lua_pushboolean(L, lr->r->injected);
	else if (strcmp(k, "canon_path") == 0) {
		if (lr->r->canon)
			lua_pushlstring(L, lr->r->hd.data.p + lr->r->path_o, lr->r->cpath_l);
		else
			lua_pushnil(L);
	} else {
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
	{ "push_rules", req_push_rules },
	{ "refuse_graphql_mutations", req_refuse_graphql_mutations },
	{ "canonicalize", req_canonicalize },
	{ "graphql_rules", req_graphql_rules },
	{ "refuse_quick_actions", req_refuse_quick_actions },
	{ NULL, NULL }
};

void
addon_lib_req_metatable(lua_State *L)
{
	luaL_newmetatable(L, "egress.req");
	lua_pushcfunction(L, req_index);
	lua_setfield(L, -2, "__index");
	luaL_newlib(L, req_methods);
	lua_setfield(L, -2, "methods");
	lua_pop(L, 1);
}

/* proxy.glob(pattern, subject [, ci]) -> boolean (pglob.h). */
static int
l_glob(lua_State *L)
{
	size_t pn, n;
	const char *p = luaL_checklstring(L, 1, &pn);
	const char *s = luaL_checklstring(L, 2, &n);
	int ci = lua_toboolean(L, 3);

	if (pn > PGLOB_PATTERN_MAX)
		return luaL_error(L, "glob: pattern longer than %d bytes", PGLOB_PATTERN_MAX);
	if (n > GLOB_SUBJECT_MAX)
		return luaL_error(L, "glob: subject longer than %d bytes", GLOB_SUBJECT_MAX);
	lua_pushboolean(L, pglob_match(p, pn, s, n, ci));
	return 1;
}

/* ---- read-only tables from JSON (ctx.sandbox.policy) ---- */

static int
ro_newindex(lua_State *L)
{
	return luaL_error(L, "ctx.sandbox.policy is read-only");
}

/* The data table behind a read-only wrapper (its metatable's __index). */
static void
ro_data(lua_State *L)
{
	if (!lua_getmetatable(L, 1))
		luaL_error(L, "not a read-only table");
	lua_getfield(L, -1, "__index");
	lua_remove(L, -2);
}

static int
ro_len(lua_State *L)
{
	ro_data(L);
	lua_pushinteger(L, (lua_Integer)lua_rawlen(L, -1));
	return 1;
}

static int
ro_pairs(lua_State *L)
{
	lua_getglobal(L, "next");
	ro_data(L);
	lua_pushnil(L);
	return 3;
}

void
addon_lib_push_json_ro(lua_State *L, const cJSON *v, int depth)
{
	const cJSON *it;
	lua_Integer i = 0;

	luaL_checkstack(L, 8, "json");
	if (cJSON_IsString(v))
		lua_pushstring(L, v->valuestring);
	else if (cJSON_IsBool(v))
		lua_pushboolean(L, cJSON_IsTrue(v));
	else if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (d == floor(d) && fabs(d) < 9007199254740992.0)
			lua_pushinteger(L, (lua_Integer)d);
		else
			lua_pushnumber(L, d);
	} else if ((cJSON_IsArray(v) || cJSON_IsObject(v)) && depth > 0) {
		lua_newtable(L);		/* the wrapper */
		lua_createtable(L, 0, 5);	/* its metatable */
		lua_newtable(L);		/* the data */
		cJSON_ArrayForEach(it, v) {
			if (cJSON_IsNull(it))
				continue;
			addon_lib_push_json_ro(L, it, depth - 1);
			if (cJSON_IsArray(v))
				lua_rawseti(L, -2, ++i);
			else
				lua_setfield(L, -2, it->string);
		}
		lua_setfield(L, -2, "__index");
		lua_pushcfunction(L, ro_newindex);
		lua_setfield(L, -2, "__newindex");
		lua_pushcfunction(L, ro_len);
		lua_setfield(L, -2, "__len");
		lua_pushcfunction(L, ro_pairs);
		lua_setfield(L, -2, "__pairs");
		lua_pushboolean(L, 0);
		lua_setfield(L, -2, "__metatable");
		lua_setmetatable(L, -2);
	} else
		lua_pushnil(L);
}

static const luaL_Reg lib_fns[] = {
	{ "glob", l_glob },
	{ "env", l_env },
	{ "read_file", l_read_file },
	{ "secret", l_secret },
	{ "base64", l_base64 },
	{ "basic", l_basic },
	{ "github_basic", l_github_basic },
	{ "gitlab_basic", l_gitlab_basic },
	{ "log", l_log },
	{ "warn", l_warn },
	{ NULL, NULL }
};

void
addon_lib_push(lua_State *L, struct addon_secrets *sc)
{
	luaL_newlibtable(L, lib_fns);
	lua_pushlightuserdata(L, sc);
	luaL_setfuncs(L, lib_fns, 1);
}

void
addon_secrets_clear(struct addon_secrets *sc)
{
	unsigned i;

	for (i = 0; i < SECRET_CACHE; i++) {
		if (sc->sc[i].val != NULL)
			OPENSSL_cleanse(sc->sc[i].val, sc->sc[i].len);
		free(sc->sc[i].val);
		free(sc->sc[i].path);
		sc->sc[i].val = sc->sc[i].path = NULL;
	}
}
