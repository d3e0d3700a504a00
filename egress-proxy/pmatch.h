/*
 * pmatch.h: Lua 5.4 pattern matching (string.find, match, gmatch, gsub)
 * that can be interrupted. Same semantics and error messages as Lua 5.4's
 * string library (classes, sets, captures, position captures, back
 * references, %b, %f, anchors, gsub replacements), but every step of a
 * match (one subject byte tested against one pattern item, one backtrack)
 * is counted and handed to a charge function every PMATCH_CHUNK steps and
 * at the end of each call. The charge function may raise a Lua error
 * (luaL_error) to stop the match: nothing the matcher holds needs freeing.
 */
#ifndef PROXY_PMATCH_H
#define PROXY_PMATCH_H

#include <lua.h>

#define PMATCH_CHUNK	1024	/* steps between two calls of the charge function */

/* Called with the steps done since the last call; may raise a Lua error. */
typedef void (*pmatch_charge)(lua_State *L, void *ud, unsigned long steps);

/*
 * Pushes a table with find, match, gmatch and gsub bound to charge(ud)
 * (charge may be NULL: counting only). May raise (memory).
 */
void	pmatch_pushlib(lua_State *L, pmatch_charge charge, void *ud);

/*
 * Replaces find, match, gmatch and gsub in the loaded string library (the
 * table that is also the strings' metatable __index). May raise (memory).
 */
void	pmatch_install(lua_State *L, pmatch_charge charge, void *ud);

#endif
