/*
 * creddecl.c: named credentials' declarations read from an addon's table
 * (creddecl.h has the rules).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>
#include <lua.h>

#include "cred.h"
#include "creddecl.h"
#include "credtok.h"
#include "h1.h"
#include "xmalloc.h"

/* A string field of the declaration at the top of L, or NULL; *bad when not a string. */
static const char *
decl_str(lua_State *L, const char *k, int *bad)
{
	const char *v = NULL;

	lua_getfield(L, -1, k);
	if (lua_type(L, -1) == LUA_TSTRING)
		v = lua_tostring(L, -1);
	else if (!lua_isnil(L, -1))
		*bad = 1;
	lua_pop(L, 1);	/* v stays valid: the declaration holds the string */
	return v;
}

/*
 * A list of names at field k of the declaration at the top of L into v
 * (room for max): lower-case letters, digits and '-'. 0, or -1 with err.
 */
static int
decl_names(lua_State *L, const char *name, const char *k, char **v, size_t *nv, size_t max,
    char *err, size_t errlen)
{
	lua_Integer n, i;
	const char *s;

	lua_getfield(L, -1, k);
	if (lua_isnil(L, -1)) {
		lua_pop(L, 1);
		return 0;
	}
	if (!lua_istable(L, -1) || (n = luaL_len(L, -1)) > (lua_Integer)max) {
		lua_pop(L, 1);
		snprintf(err, errlen, "%s: %s is a list of at most %zu names", name, k, max);
		return -1;
	}
	for (i = 1; i <= n; i++) {
		lua_geti(L, -1, i);
		s = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
		if (s == NULL || *s == '\0' || strlen(s) > 63 ||
		    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(s)) {
			lua_pop(L, 2);
			snprintf(err, errlen, "%s: %s[%lld] is not a name", name, k, (long long)i);
			return -1;
		}
		v[(*nv)++] = xstrdup(s);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	return 0;
}

/*
 * Whether url is "https://HOST[:PORT]/PATH" with HOST one of c's hosts
 * (lower case), PORT 1-65535 and PATH of [A-Za-z0-9._~/+-] ending in '/'
 * when slash is set: nothing a config file's syntax could read as its own
 * (no space, quote, '#', ';', '=', '<', '&', newline). 1 or 0.
 */
static int
decl_url_ok(const struct cred *c, const char *url, int slash)
{
	char host[254];
	const char *h, *p;
	size_t hl, pl;
	long port = 0;

	if (strncmp(url, "https://", 8) != 0 || strlen(url) > CRED_CLIENT_MAX)
		return 0;
	h = url + 8;
	hl = strspn(h, "abcdefghijklmnopqrstuvwxyz0123456789.-");
	if (hl == 0 || hl >= sizeof(host))
		return 0;
	p = h + hl;
	if (*p == ':') {
		for (p++; *p >= '0' && *p <= '9' && port <= 65535; p++)
			port = port * 10 + (*p - '0');
		if (port < 1 || port > 65535)
			return 0;
	}
	pl = strlen(p);
	if (*p != '/' || strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._~/+-") != pl || strstr(p, "//") != NULL ||
	    (slash && p[pl - 1] != '/'))
		return 0;
	memcpy(host, h, hl);
	host[hl] = '\0';
	return cred_host_ok(c, host);
}

/*
 * The declaration's "client" (the table at the top of L) into c, whose
 * form and hosts are read: one of npm = URL (with scope = "@scope"),
 * pip = URL, maven = server id, docker = "host[:port]", aws = profile,
 * cargo = a sparse index's URL (form header, field Authorization: cargo
 * sends its token as the whole field). 0, or -1 with err.
 */
static int
decl_client(lua_State *L, struct cred *c, char *err, size_t errlen)
{
	static const struct {
		const char	*key;
		enum cred_client k;
		enum cred_form	 form;
		const char	*what;
	} kinds[] = {
		{ "npm", CRED_CLIENT_NPM, CRED_BEARER, "a https URL on one of hosts, ending in '/'" },
		{ "pip", CRED_CLIENT_PIP, CRED_BASIC, "a https URL on one of hosts, ending in '/'" },
		{ "maven", CRED_CLIENT_MAVEN, CRED_BASIC, "a server id: 1-64 of A-Za-z0-9._-" },
		{ "docker", CRED_CLIENT_DOCKER, CRED_BASIC, "a registry, host[:port], one of hosts" },
		{ "aws", CRED_CLIENT_AWS, CRED_SIGV4, "a profile name: 1-64 of A-Za-z0-9_-" },
		{ "cargo", CRED_CLIENT_CARGO, CRED_HEADER,
		    "a sparse index's https URL on one of hosts, ending in '/'" },
	};
	const char *v = NULL, *scope = NULL, *key;
	size_t i, k = sizeof(kinds) / sizeof(kinds[0]), nset = 0;
	int ok = 0;

	lua_getfield(L, -1, "client");
	if (lua_isnil(L, -1)) {
		lua_pop(L, 1);
		return 0;
	}
	if (!lua_istable(L, -1)) {
		lua_pop(L, 1);
		snprintf(err, errlen, "%s: client is a table, e.g. { npm = \"https://npm.example/\" }",
		    c->name);
		return -1;
	}
	/* every key is one we know (a typo must not pass silently) */
	lua_pushnil(L);
	while (lua_next(L, -2) != 0) {
		key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
		for (i = 0; key != NULL && i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (strcmp(key, kinds[i].key) == 0)
				break;
		if (key == NULL || (i == sizeof(kinds) / sizeof(kinds[0]) &&
		    strcmp(key, "scope") != 0) || lua_type(L, -1) != LUA_TSTRING) {
			lua_pop(L, 3);
			snprintf(err, errlen, "%s: client keys are npm, pip, maven, docker, aws "
			    "and scope, or cargo; each a string", c->name);
			return -1;
		}
		if (strcmp(key, "scope") == 0)
			scope = lua_tostring(L, -1);
		else {
			k = i;
			v = lua_tostring(L, -1);
			nset++;
		}
		lua_pop(L, 1);
	}
	if (nset != 1) {
		lua_pop(L, 1);
		snprintf(err, errlen, "%s: client names one client (npm, pip, maven, docker, aws "
		    "or cargo)",
		    c->name);
		return -1;
	}
	if (c->form != kinds[k].form) {
		lua_pop(L, 1);
		snprintf(err, errlen, "%s: client %s needs form %s", c->name, kinds[k].key,
		    cred_form_name(kinds[k].form));
		return -1;
	}
	if (kinds[k].k == CRED_CLIENT_CARGO && strcasecmp(c->field, "authorization") != 0) {
		lua_pop(L, 1);
		snprintf(err, errlen, "%s: client cargo needs field Authorization (cargo sends "
		    "its token there)", c->name);
		return -1;
	}
	if (scope != NULL && (kinds[k].k != CRED_CLIENT_NPM || scope[0] != '@' ||
	    strlen(scope) < 2 || strlen(scope) > 64 ||
	    strspn(scope + 1, "abcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(scope) - 1)) {
		lua_pop(L, 1);
		snprintf(err, errlen, "%s: client scope is npm's \"@scope\" (lower case, "
		    "digits, '.', '_', '-')", c->name);
		return -1;
	}
	switch (kinds[k].k) {
	case CRED_CLIENT_NPM:
	case CRED_CLIENT_PIP:
	case CRED_CLIENT_CARGO:
		ok = decl_url_ok(c, v, 1);
		break;
	case CRED_CLIENT_MAVEN:
		ok = *v != '\0' && strlen(v) <= 64 &&
		    strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
		    strlen(v);
		break;
	case CRED_CLIENT_DOCKER: {
		char u[CRED_CLIENT_MAX + 16];

		snprintf(u, sizeof(u), "https://%s/", v);
		ok = strlen(v) <= 253 + 6 && strchr(v, '/') == NULL && decl_url_ok(c, u, 1);
		break;
	}
	case CRED_CLIENT_AWS:
		ok = *v != '\0' && strlen(v) <= 64 &&
		    strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") ==
		    strlen(v);
		break;
	default:
		break;
	}
	if (!ok) {
		lua_pop(L, 1);
		snprintf(err, errlen, "%s: client %s is %s", c->name, kinds[k].key, kinds[k].what);
		return -1;
	}
	c->client = kinds[k].k;
	c->client_ref = xstrdup(v);
	if (scope != NULL)
		c->client_scope = xstrdup(scope);
	lua_pop(L, 1);
	return 0;
}

/*
 * The oauth2 fields of declaration name (the table at the top of L) into
 * c: token_url, client_id, scope, refresh (env: or file:, read now) and
 * refresh_write (write a rotated refresh token back to refresh's file).
 * 0, or -1 with err (never a value).
 */
static int
decl_oauth2(lua_State *L, struct cred *c, const char *name, char *err, size_t errlen)
{
	const char *url, *client, *scope, *refresh;
	char why[300];
	int bad = 0, wb;

	url = decl_str(L, "token_url", &bad);
	client = decl_str(L, "client_id", &bad);
	scope = decl_str(L, "scope", &bad);
	refresh = decl_str(L, "refresh", &bad);
	lua_getfield(L, -1, "refresh_write");
	wb = lua_toboolean(L, -1);
	bad |= !lua_isnil(L, -1) && !lua_isboolean(L, -1);
	lua_pop(L, 1);
	if (bad) {
		snprintf(err, errlen, "%s: token_url, client_id, scope and refresh are strings, "
		    "refresh_write a boolean", name);
		return -1;
	}
	if (c->form != CRED_OAUTH2) {
		if (url != NULL || client != NULL || scope != NULL || refresh != NULL || wb) {
			snprintf(err, errlen, "%s: token_url, client_id, scope and refresh are "
			    "form oauth2's", name);
			return -1;
		}
		return 0;
	}
	if (*credtok_decl_check(url, client, scope, why, sizeof(why)) != '\0') {
		snprintf(err, errlen, "%s: %s", name, why);
		return -1;
	}
	if (wb && (refresh == NULL || strncmp(refresh, "file:", 5) != 0)) {
		snprintf(err, errlen, "%s: refresh_write needs refresh = \"file:PATH\"", name);
		return -1;
	}
	c->token_url = xstrdup(url);
	c->client_id = xstrdup(client);
	c->scope = scope != NULL ? xstrdup(scope) : NULL;
	if (refresh != NULL && ((c->refresh = cred_secret_read(refresh, why, sizeof(why))) == NULL ||
	    strlen(c->refresh) >= CREDTOK_TOKEN_MAX ||
	    strspn(c->refresh, "!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~") != strlen(c->refresh))) {
		snprintf(err, errlen, "%s: refresh: %s", name, c->refresh == NULL ? why :
		    "a refresh token is visible ASCII, shorter than 4096 bytes");
		return -1;
	}
	if (wb)
		c->refresh_path = xstrdup(refresh + 5);
	return 0;
}

/*
 * The registry fields of declaration name (the table at the top of L) into
 * c: realm (the token endpoint, token_url), service and user (the realm's
 * Basic user). 0, or -1 with err.
 */
static int
decl_registry(lua_State *L, struct cred *c, const char *name, char *err, size_t errlen)
{
	const char *realm, *service, *user;
	char why[300];
	int bad = 0;

	realm = decl_str(L, "realm", &bad);
	service = decl_str(L, "service", &bad);
	user = decl_str(L, "user", &bad);
	if (bad || (c->form != CRED_REGISTRY && (realm != NULL || service != NULL))) {
		snprintf(err, errlen, "%s: realm and service are strings, form registry's", name);
		return -1;
	}
	if (c->form != CRED_REGISTRY)
		return 0;
	if (*credtok_regdecl_check(realm, service, user, why, sizeof(why)) != '\0') {
		snprintf(err, errlen, "%s: %s", name, why);
		return -1;
	}
	c->token_url = xstrdup(realm);
	c->service = xstrdup(service);
	c->user = xstrdup(user);
	return 0;
}

/*
 * One credential declaration (the table at the top of L) of addon name:
 * a struct cred with its secret read, or NULL with err (never the value).
 */
static struct cred *
decl_cred(lua_State *L, const char *addon, char *err, size_t errlen)
{
	struct cred *c = xcalloc(1, sizeof(*c));
	const char *name, *secret, *form, *field, *user, *why, *key_id, *token;
	char why2[300];
	lua_Integer n, k;
	int bad = 0;

	name = decl_str(L, "name", &bad);
	secret = decl_str(L, "secret", &bad);
	form = decl_str(L, "form", &bad);
	field = decl_str(L, "field", &bad);
	user = decl_str(L, "user", &bad);
	key_id = decl_str(L, "key_id", &bad);
	token = decl_str(L, "token", &bad);
	if (bad || name == NULL || secret == NULL || form == NULL) {
		snprintf(err, errlen, "name, secret and form are strings (and field, user, key_id)");
		goto fail;
	}
	if (*(why = cred_name_check(name)) != '\0') {
		snprintf(err, errlen, "%s", why);
		goto fail;
	}
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->addon = xstrdup(addon);
	if (cred_form_parse(form, &c->form) == -1) {
		snprintf(err, errlen, "%s: form is bearer, header, basic, query, sigv4, oauth2 or "
		    "registry", name);
		goto fail;
	}
	if (decl_oauth2(L, c, name, err, errlen) == -1 ||
	    decl_registry(L, c, name, err, errlen) == -1)
		goto fail;
	if (c->form == CRED_SIGV4 && key_id == NULL) {
		snprintf(err, errlen, "%s: form sigv4 needs key_id, the access key id's env: or file:",
		    name);
		goto fail;
	}
	if (token != NULL && c->form != CRED_SIGV4) {
		snprintf(err, errlen, "%s: token (an AWS session token) is for form sigv4", name);
		goto fail;
	}
	if (token != NULL && ((c->token = cred_secret_read(token, why2, sizeof(why2))) == NULL ||
	    strlen(c->token) < 16 || strspn(c->token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
	    "qrstuvwxyz0123456789+/=") != strlen(c->token))) {
		snprintf(err, errlen, "%s: token: %s", name, c->token == NULL ? why2 :
		    "an AWS session token is 16 or more of A-Z a-z 0-9 + / =");
		goto fail;
	}
	if (c->form == CRED_SIGV4 && ((c->user = cred_secret_read(key_id, why2,
	    sizeof(why2))) == NULL || strlen(c->user) < 16 || strlen(c->user) > 128 ||
	    strspn(c->user, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != strlen(c->user))) {
		snprintf(err, errlen, "%s: key_id: %s", name, c->user == NULL ? why2 :
		    "an access key id is 16-128 of A-Z and 0-9");
		goto fail;
	}
	if (decl_names(L, name, "regions", c->regions, &c->nregions, CRED_SCOPE_MAX, err,
	    errlen) == -1 || decl_names(L, name, "services", c->services, &c->nservices,
	    CRED_SCOPE_MAX, err, errlen) == -1)
		goto fail;
	if ((c->form == CRED_HEADER || c->form == CRED_QUERY) && (field == NULL ||
	    strlen(field) > CRED_FIELD_MAX || !h1_token_ok(field, strlen(field)))) {
		snprintf(err, errlen, "%s: form %s needs field, a header or parameter name", name, form);
		goto fail;
	}
	if (c->form == CRED_HEADER && (h1_hop_name(field, strlen(field)) ||
	    strcasecmp(field, "host") == 0 || strcasecmp(field, "content-length") == 0 ||
	    strcasecmp(field, "transfer-encoding") == 0)) {
		snprintf(err, errlen, "%s: field %s is the proxy's own", name, field);
		goto fail;
	}
	if (c->form == CRED_BASIC && (user == NULL || strchr(user, ':') != NULL ||
	    *cred_value_check(user) != '\0')) {
		snprintf(err, errlen, "%s: form basic needs user, without ':'", name);
		goto fail;
	}
	if (field != NULL)
		c->field = xstrdup(field);
	if (user != NULL && c->form == CRED_BASIC)
		c->user = xstrdup(user);
	lua_getfield(L, -1, "default");
	c->dflt = lua_toboolean(L, -1);
	lua_pop(L, 1);
	lua_getfield(L, -1, "env");
	n = lua_istable(L, -1) ? luaL_len(L, -1) : 0;
	if (!lua_isnil(L, -1) && (!lua_istable(L, -1) || n > CRED_ENV_MAX)) {
		lua_pop(L, 1);
		snprintf(err, errlen, "%s: env is a list of at most %d variable names", name,
		    CRED_ENV_MAX);
		goto fail;
	}
	for (k = 1; lua_istable(L, -1) && k <= n; k++) {
		const char *e;

		lua_geti(L, -1, k);
		e = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
		/*
		 * "NAME", or for a sigv4 credential "NAME=key_id" (the access
		 * key id's placeholder) or "NAME=session_token" (the token's)
		 */
		if (e == NULL || strcspn(e, "=") == 0 || strcspn(e, "=") > 64 || (*e >= '0' && *e <= '9') ||
		    strspn(e, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
		    strcspn(e, "=") || (e[strcspn(e, "=")] == '=' && (c->form != CRED_SIGV4 ||
		    (strcmp(e + strcspn(e, "="), "=key_id") != 0 &&
		    (strcmp(e + strcspn(e, "="), "=session_token") != 0 || c->token == NULL))))) {
			lua_pop(L, 2);
			snprintf(err, errlen, "%s: env[%lld] is not a variable name", name, (long long)k);
			goto fail;
		}
		c->env[c->nenv++] = xstrdup(e);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	lua_getfield(L, -1, "hosts");
	if (!lua_istable(L, -1) || (n = luaL_len(L, -1)) < 1 || n > CRED_HOSTS_MAX) {
		lua_pop(L, 1);
		snprintf(err, errlen, "%s: hosts is a list of 1-%d host names or globs", name,
		    CRED_HOSTS_MAX);
		goto fail;
	}
	for (k = 1; k <= n; k++) {
		const char *h;
		char *lc;
		size_t i;

		lua_geti(L, -1, k);
		h = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
		if (h == NULL || *h == '\0' || strlen(h) > 253 ||
		    strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*?") !=
		    strlen(h) || h[strlen(h) - 1] == '.') {
			lua_pop(L, 2);
			snprintf(err, errlen, "%s: hosts[%lld] is not a host name or glob", name,
			    (long long)k);
			goto fail;
		}
		lc = xstrdup(h);
		for (i = 0; lc[i] != '\0'; i++)
			lc[i] = (char)tolower((unsigned char)lc[i]);
		c->hosts[c->nhosts++] = lc;
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	if (decl_client(L, c, err, errlen) == -1)
		goto fail;
	lua_getfield(L, -1, "secret_refresh");
	if (lua_isnil(L, -1))
		c->every_ms = strncmp(secret, "cmd:", 4) == 0 ? CREDDECL_REFRESH_S * 1000LL : 0;
	else if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0 ||
	    lua_tointeger(L, -1) > 86400 || strncmp(secret, "cmd:", 4) != 0) {
		lua_pop(L, 1);
		snprintf(err, errlen, "%s: secret_refresh is for a cmd: secret, 0-86400 seconds "
		    "(0: run at load only)", name);
		goto fail;
	} else
		c->every_ms = (long long)lua_tointeger(L, -1) * 1000;
	lua_pop(L, 1);
	c->spec = xstrdup(secret);
	if ((c->value = cred_secret_read(secret, why2, sizeof(why2))) == NULL) {
		snprintf(err, errlen, "%s: %s", name, why2);
		goto fail;
	}
	return c;
fail:
	cred_free(c);
	return NULL;
}

int
creddecl_read(lua_State *L, const char *addon, struct credset *cs)
{
	char err[512];
	lua_Integer n, k;
	struct cred *c;

	lua_getfield(L, -1, "credentials");
	if (lua_isnil(L, -1)) {
		lua_pop(L, 1);
		return 0;
	}
	if (!lua_istable(L, -1))
		return luaL_error(L, "addon %s: credentials is a list of declarations", addon);
	n = luaL_len(L, -1);
	for (k = 1; k <= n; k++) {
		lua_geti(L, -1, k);
		if (!lua_istable(L, -1))
			return luaL_error(L, "addon %s: credentials[%d] is not a table", addon, (int)k);
		if ((c = decl_cred(L, addon, err, sizeof(err))) == NULL ||
		    cred_set_add(cs, c, err, sizeof(err)) == -1)
			return luaL_error(L, "addon %s: credentials[%d]: %s", addon, (int)k, err);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	return 0;
}

