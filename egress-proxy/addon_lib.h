/*
 * addon_lib.h: the proxy.* helpers that need no running hook
 * (addon_lib.c); addon.c builds the proxy table from them.
 */
#ifndef ADDON_LIB_H
#define ADDON_LIB_H

#include <stddef.h>
#include <lua.h>

#define SECRET_CACHE	16

struct secret_ent {
	char		*path;
	char		*val;
	size_t		 len;
	long long	 at;	/* ms, monotonic */
};

/* A worker VM's file secrets, each kept a second (zero-initialise). */
struct addon_secrets {
	struct secret_ent	 sc[SECRET_CACHE];
	unsigned		 next;
};

/* Pushes a new table holding env, read_file, secret (cached in sc),
 * base64, basic, github_basic, gitlab_basic, glob, log and warn. */
void	addon_lib_push(lua_State *L, struct addon_secrets *sc);
/* The request object handed to a request hook (userdata "egress.req"). */
#define LREQ_INJ	8

struct hreq;
struct target;

struct lreq {
	struct hreq	*r;		/* NULL once the hook is over */
	const struct target *t;
	int		 denied, status;
	char		 reason[256];
	char		 body[2048];	/* req:deny's body (LREQ_BODY_MAX) */
	size_t		 body_len;
	char		 ctype[64];
	int		 ninj;		/* headers injected so far */
	char		 inj[LREQ_INJ][64];
};

/* Registers the egress.req metatable (its fields and methods). */
void	addon_lib_req_metatable(lua_State *L);

struct buf;
/* Reads a small file whole into b (b->max bounds it), trailing whitespace
 * trimmed. 0 or -1 with err. */
int	addon_read_small(const char *path, struct buf *b, char *err,
	    size_t errlen);
struct cJSON;
/*
 * Pushes the JSON value v as Lua values: objects and arrays become
 * read-only tables (writes raise; # and pairs work; null members are
 * left out), at most depth levels deep (deeper: nil). May raise (memory).
 */
void	addon_lib_push_json_ro(lua_State *L, const struct cJSON *v, int depth);
/* Wipes and frees the cached secrets. */
void	addon_secrets_clear(struct addon_secrets *sc);

#endif
