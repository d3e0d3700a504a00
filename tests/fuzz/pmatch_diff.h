/*
 * pmatch_diff.h: differential check of egress-proxy/pmatch.c against Lua
 * 5.4's own string library, shared by tests/unit/test_proxy_lua.c and
 * tests/fuzz/fuzz_proxy_pattern.c. One call runs find, match, gmatch or
 * gsub (with a string, table or function replacement) through both and
 * compares every result (values, their types, integer vs float) and, for
 * pattern errors, the message. A case whose pmatch run goes over the step
 * budget is skipped (the real library would take as long or longer).
 */
#ifndef PMATCH_DIFF_H
#define PMATCH_DIFF_H

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <string.h>

#include "../../egress-proxy/pmatch.h"

struct pmdiff_budget {
	unsigned long	 used, max;
};

static void
pmdiff_charge(lua_State *L, void *ud, unsigned long n)
{
	struct pmdiff_budget *b = ud;

	b->used += n;
	if (b->used > b->max)
		luaL_error(L, "pmdiff: step budget exceeded");
}

static int
pmdiff_reset(lua_State *L)
{
	struct pmdiff_budget *b = lua_touserdata(L, lua_upvalueindex(1));

	b->used = 0;
	return 0;
}

static const char pmdiff_lua[] =
    "local pm, reset = ...\n"
    "local function ser(t)\n"
    "  local o = {}\n"
    "  for i = 1, t.n do\n"
    "    local v = t[i]\n"
    "    o[#o + 1] = type(v) == 'number' and (math.type(v) .. ':' .. tostring(v))\n"
    "        or (type(v) .. ':' .. tostring(v))\n"
    "  end\n"
    "  return table.concat(o, '\\1')\n"
    "end\n"
    "local function gm(lib, s, p, init)\n"
    "  local out, it = {}, lib.gmatch(s, p, init)\n"
    "  for k = 1, 300 do\n"
    "    local r = table.pack(it())\n"
    "    out[#out + 1] = ser(r)\n"
    "    if r[1] == nil then break end\n"
    "  end\n"
    "  return table.concat(out, '\\2')\n"
    "end\n"
    "local calls = 0\n"
    "local function frepl(...)\n"
    "  calls = calls + 1\n"
    "  local n, a = select('#', ...), ...\n"
    "  if calls % 3 == 0 then return false end\n"
    "  if calls % 5 == 0 then return nil end\n"
    "  if calls % 7 == 0 then return 42 end\n"
    "  return '<' .. n .. tostring(a) .. '>'\n"
    "end\n"
    "local trepl = setmetatable({}, { __index = function(_, k)\n"
    "  if type(k) == 'number' then return k * 2 end\n"
    "  if #k % 3 == 0 then return false end\n"
    "  return '[' .. k .. ']'\n"
    "end })\n"
    "local function run(lib, f, s, p, a3, a4)\n"
    "  calls = 0\n"
    "  reset()\n"
    "  if f == 'gmatch' then return table.pack(pcall(gm, lib, s, p, a3)) end\n"
    "  if f == 'gsub' then\n"
    "    if a3 == 'F' then a3 = frepl elseif a3 == 'T' then a3 = trepl end\n"
    "  end\n"
    "  return table.pack(pcall(lib[f], s, p, a3, a4))\n"
    "end\n"
    "return function(f, s, p, a3, a4)\n"
    "  local mine = run(pm, f, s, p, a3, a4)\n"
    "  if not mine[1] and tostring(mine[2]):find('pmdiff: step budget', 1, true) then\n"
    "    return nil, 'skip'\n"
    "  end\n"
    "  local real = run(string, f, s, p, a3, a4)\n"
    "  if mine[1] ~= real[1] then\n"
    "    return ('%s(%q, %q): pmatch %s, lstrlib %s'):format(f, s, p, ser(mine), ser(real))\n"
    "  end\n"
    "  if not mine[1] then\n"
    "    local em, er = tostring(mine[2]), tostring(real[2])\n"
    "    if er:find('bad argument', 1, true) then return nil end\n"
    "    if em ~= er then\n"
    "      return ('%s(%q, %q): pmatch error %q, lstrlib error %q'):format(f, s, p, em, er)\n"
    "    end\n"
    "    return nil\n"
    "  end\n"
    "  if ser(mine) ~= ser(real) then\n"
    "    return ('%s(%q, %q, %s, %s): pmatch %s, lstrlib %s'):format(f, s, p,\n"
    "        tostring(a3), tostring(a4), ser(mine), ser(real))\n"
    "  end\n"
    "  return nil\n"
    "end\n";

/* A state with the real string library and pmatch's as the global "pm". */
static lua_State *
pmdiff_new(struct pmdiff_budget *b)
{
	lua_State *L = luaL_newstate();

	if (L == NULL)
		return NULL;
	luaL_openlibs(L);
	if (luaL_loadbuffer(L, pmdiff_lua, sizeof(pmdiff_lua) - 1, "=pmdiff") != LUA_OK) {
		fprintf(stderr, "pmdiff: %s\n", lua_tostring(L, -1));
		lua_close(L);
		return NULL;
	}
	pmatch_pushlib(L, pmdiff_charge, b);
	lua_pushlightuserdata(L, b);
	lua_pushcclosure(L, pmdiff_reset, 1);
	if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
		fprintf(stderr, "pmdiff: %s\n", lua_tostring(L, -1));
		lua_close(L);
		return NULL;
	}
	lua_setglobal(L, "pmdiff");
	return L;
}

/*
 * Runs one case: f is "find", "match", "gmatch" or "gsub"; a3/a4 are
 * pushed as given (a3 "F"/"T" picks gsub's function/table replacement);
 * pass a4 < -1000000 for nil. Returns 0 (same), 1 (skipped) or -1 with
 * the difference in msg.
 */
static int
pmdiff_run(lua_State *L, const char *f, const char *s, size_t ls, const char *p,
    size_t lp, const char *a3, size_t l3, long long a4, char *msg, size_t msglen)
{
	int rc;

	lua_getglobal(L, "pmdiff");
	lua_pushstring(L, f);
	lua_pushlstring(L, s, ls);
	lua_pushlstring(L, p, lp);
	if (a3 != NULL)
		lua_pushlstring(L, a3, l3);
	else
		lua_pushnil(L);
	if (a4 < -1000000)
		lua_pushnil(L);
	else
		lua_pushinteger(L, a4);
	if (lua_pcall(L, 5, 2, 0) != LUA_OK) {
		snprintf(msg, msglen, "harness: %s", lua_tostring(L, -1));
		lua_pop(L, 1);
		return -1;
	}
	if (lua_isstring(L, -2)) {
		snprintf(msg, msglen, "%s", lua_tostring(L, -2));
		rc = -1;
	} else
		rc = lua_isstring(L, -1) ? 1 : 0;
	lua_pop(L, 2);
	return rc;
}

#endif
