/*
 * creddecl.h: the named credentials an addon declares (issue 30;
 * creddecl.c), read from the table the addon returns by the validating
 * load of addon_src_load (addon.c), never by a worker's VM. Secrets are
 * read here, in C: no Lua code ever holds a value. The fields and their
 * rules are docs/addons.md's "Named credentials".
 */
#ifndef PROXY_CREDDECL_H
#define PROXY_CREDDECL_H

#include <lua.h>

struct credset;

#define CREDDECL_REFRESH_S	300	/* a cmd: secret runs again every (secret_refresh) */

/*
 * Reads the "credentials" list of addon's table (at the top of L) into
 * cs. 0; a bad declaration raises a Lua error naming the addon, the entry
 * and what is wrong (the load then fails with it).
 */
int	creddecl_read(lua_State *L, const char *addon, struct credset *cs);

#endif
