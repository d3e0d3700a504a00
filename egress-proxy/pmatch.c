/*
 * pmatch.c: an interruptible Lua 5.4 pattern matcher (see pmatch.h and
 * docs/addons.md). The matcher is the classic recursive backtracking one
 * that Lua's patterns are defined by; what is ours is that each step is
 * counted and charged, so a hostile pattern such as ("a*"):rep(30).."b"
 * against ("a"):rep(5e4) costs budget instead of seconds inside one C
 * call. Plain finds (no specials, or plain=true) are charged too.
 */
#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "pmatch.h"

#define PM_ESC		'%'
#define PM_SPECIALS	"^$*+?.([%-"
#define PM_MAXDEPTH	200	/* recursion of the matcher ("pattern too complex") */
#ifndef LUA_MAXCAPTURES
#define LUA_MAXCAPTURES	32
#endif
#define CAP_UNFINISHED	(-1)
#define CAP_POSITION	(-2)

struct pm_lim {
	pmatch_charge	 fn;
	void		*ud;
};

struct pm_state {
	const char	*src_init;	/* the subject */
	const char	*src_end;
	const char	*p_end;		/* end of the pattern */
	lua_State	*L;
	const struct pm_lim *lim;
	unsigned long	 steps;		/* not yet charged */
	int		 depth;		/* recursion left */
	int		 level;		/* captures in use */
	struct {
		const char	*init;
		ptrdiff_t	 len;	/* or CAP_UNFINISHED / CAP_POSITION */
	} cap[LUA_MAXCAPTURES];
};

static const char *pm_match(struct pm_state *, const char *s, const char *p);

static void
charge_flush(struct pm_state *ms)
{
	unsigned long n = ms->steps;

	ms->steps = 0;
	if (ms->lim->fn != NULL && n > 0)
		ms->lim->fn(ms->L, ms->lim->ud, n);
}

static inline void
step(struct pm_state *ms, unsigned long n)
{
	ms->steps += n;
	if (ms->steps >= PMATCH_CHUNK)
		charge_flush(ms);
}

/* The pattern byte at p, or '\0' at or past its end (Lua strings end in one). */
static inline int
pat(const struct pm_state *ms, const char *p)
{
	return p < ms->p_end ? (unsigned char)*p : '\0';
}

static int
check_capture(struct pm_state *ms, int l)
{
	l -= '1';
	if (l < 0 || l >= ms->level || ms->cap[l].len == CAP_UNFINISHED)
		return luaL_error(ms->L, "invalid capture index %%%d", l + 1);
	return l;
}

static int
capture_to_close(struct pm_state *ms)
{
	int level = ms->level;

	for (level--; level >= 0; level--)
		if (ms->cap[level].len == CAP_UNFINISHED)
			return level;
	return luaL_error(ms->L, "invalid pattern capture");
}

/* The end of the single-character class at p. */
static const char *
class_end(struct pm_state *ms, const char *p)
{
	int c = pat(ms, p);

	p++;
	if (c == PM_ESC) {
		if (p >= ms->p_end)
			luaL_error(ms->L, "malformed pattern (ends with '%%')");
		return p + 1;
	}
	if (c == '[') {
		if (pat(ms, p) == '^')
			p++;
		do {
			if (p >= ms->p_end)
				luaL_error(ms->L, "malformed pattern (missing ']')");
			c = (unsigned char)*p++;
			if (c == PM_ESC && p < ms->p_end)
				p++;
		} while (pat(ms, p) != ']');
		return p + 1;
	}
	return p;
}

static int
match_class(int c, int cl)
{
	int res;

	switch (tolower(cl)) {
	case 'a': res = isalpha(c); break;
	case 'c': res = iscntrl(c); break;
	case 'd': res = isdigit(c); break;
	case 'g': res = isgraph(c); break;
	case 'l': res = islower(c); break;
	case 'p': res = ispunct(c); break;
	case 's': res = isspace(c); break;
	case 'u': res = isupper(c); break;
	case 'w': res = isalnum(c); break;
	case 'x': res = isxdigit(c); break;
	case 'z': res = c == 0; break;	/* deprecated in Lua, still accepted */
	default: return cl == c;
	}
	if (isupper(cl))
		res = !res;
	return res != 0;
}

/* p is at '[', ec at the closing ']'. */
static int
match_set(struct pm_state *ms, int c, const char *p, const char *ec)
{
	int sig = 1;

	if (pat(ms, p + 1) == '^') {
		sig = 0;
		p++;
	}
	while (++p < ec) {
		step(ms, 1);
		if (*p == PM_ESC) {
			p++;
			if (match_class(c, (unsigned char)*p))
				return sig;
		} else if (pat(ms, p + 1) == '-' && p + 2 < ec) {
			p += 2;
			if ((unsigned char)*(p - 2) <= c && c <= (unsigned char)*p)
				return sig;
		} else if ((unsigned char)*p == c)
			return sig;
	}
	return !sig;
}

static int
single_match(struct pm_state *ms, const char *s, const char *p, const char *ep)
{
	int c;

	step(ms, 1);
	if (s >= ms->src_end)
		return 0;
	c = (unsigned char)*s;
	switch (pat(ms, p)) {
	case '.':
		return 1;
	case PM_ESC:
		return match_class(c, pat(ms, p + 1));
	case '[':
		return match_set(ms, c, p, ep - 1);
	default:
		return pat(ms, p) == c;
	}
}

static const char *
match_balance(struct pm_state *ms, const char *s, const char *p)
{
	int b, e, cont = 1;

	if (p >= ms->p_end - 1)
		luaL_error(ms->L, "malformed pattern (missing arguments to '%%b')");
	if (s >= ms->src_end || (unsigned char)*s != (unsigned char)*p)
		return NULL;
	b = (unsigned char)p[0];
	e = (unsigned char)p[1];
	while (++s < ms->src_end) {
		step(ms, 1);
		if ((unsigned char)*s == e) {
			if (--cont == 0)
				return s + 1;
		} else if ((unsigned char)*s == b)
			cont++;
	}
	return NULL;
}

static const char *
max_expand(struct pm_state *ms, const char *s, const char *p, const char *ep)
{
	ptrdiff_t i = 0;
	const char *res;

	while (single_match(ms, s + i, p, ep))
		i++;
	for (; i >= 0; i--) {
		if ((res = pm_match(ms, s + i, ep + 1)) != NULL)
			return res;
	}
	return NULL;
}

static const char *
min_expand(struct pm_state *ms, const char *s, const char *p, const char *ep)
{
	const char *res;

	for (;;) {
		if ((res = pm_match(ms, s, ep + 1)) != NULL)
			return res;
		if (!single_match(ms, s, p, ep))
			return NULL;
		s++;
	}
}

static const char *
start_capture(struct pm_state *ms, const char *s, const char *p, ptrdiff_t what)
{
	const char *res;
	int level = ms->level;

	if (level >= LUA_MAXCAPTURES)
		luaL_error(ms->L, "too many captures");
	ms->cap[level].init = s;
	ms->cap[level].len = what;
	ms->level = level + 1;
	if ((res = pm_match(ms, s, p)) == NULL)
		ms->level--;
	return res;
}

static const char *
end_capture(struct pm_state *ms, const char *s, const char *p)
{
	int l = capture_to_close(ms);
	const char *res;

	ms->cap[l].len = s - ms->cap[l].init;
	if ((res = pm_match(ms, s, p)) == NULL)
		ms->cap[l].len = CAP_UNFINISHED;
	return res;
}

static const char *
match_capture(struct pm_state *ms, const char *s, int l)
{
	size_t len;

	l = check_capture(ms, l);
	len = (size_t)ms->cap[l].len;
	step(ms, 1 + len / 64);
	if ((size_t)(ms->src_end - s) >= len && memcmp(ms->cap[l].init, s, len) == 0)
		return s + len;
	return NULL;
}

/* The frontier %f[set] at s (p at the '['); the end of the set, or NULL. */
static const char *
match_frontier(struct pm_state *ms, const char *s, const char *p)
{
	const char *ep;
	int prev, cur;

	if (pat(ms, p) != '[')
		luaL_error(ms->L, "missing '[' after '%%f' in pattern");
	ep = class_end(ms, p);
	prev = s == ms->src_init ? '\0' : (unsigned char)*(s - 1);
	cur = s < ms->src_end ? (unsigned char)*s : '\0';
	if (!match_set(ms, prev, p, ep - 1) && match_set(ms, cur, p, ep - 1))
		return ep;
	return NULL;
}

static const char *
pm_match(struct pm_state *ms, const char *s, const char *p)
{
	const char *ep, *res;

	if (ms->depth-- == 0)
		luaL_error(ms->L, "pattern too complex");
	for (;;) {
		step(ms, 1);
		if (p >= ms->p_end)
			break;
		switch (*p) {
		case '(':
			if (pat(ms, p + 1) == ')')
				s = start_capture(ms, s, p + 2, CAP_POSITION);
			else
				s = start_capture(ms, s, p + 1, CAP_UNFINISHED);
			goto out;
		case ')':
			s = end_capture(ms, s, p + 1);
			goto out;
		case '$':
			if (p + 1 != ms->p_end)
				goto dflt;
			s = s == ms->src_end ? s : NULL;
			goto out;
		case PM_ESC:
			switch (pat(ms, p + 1)) {
			case 'b':
				s = match_balance(ms, s, p + 2);
				if (s != NULL) {
					p += 4;
					continue;
				}
				goto out;
			case 'f':
				if ((ep = match_frontier(ms, s, p + 2)) != NULL) {
					p = ep;
					continue;
				}
				s = NULL;
				goto out;
			case '0': case '1': case '2': case '3': case '4':
			case '5': case '6': case '7': case '8': case '9':
				s = match_capture(ms, s, pat(ms, p + 1));
				if (s != NULL) {
					p += 2;
					continue;
				}
				goto out;
			default:
				goto dflt;
			}
		default:
		dflt:
			ep = class_end(ms, p);
			if (!single_match(ms, s, p, ep)) {
				int q = pat(ms, ep);
				if (q == '*' || q == '?' || q == '-') {
					p = ep + 1;
					continue;
				}
				s = NULL;
				goto out;
			}
			switch (pat(ms, ep)) {
			case '?':
				if ((res = pm_match(ms, s + 1, ep + 1)) != NULL) {
					s = res;
					goto out;
				}
				p = ep + 1;
				continue;
			case '+':
				s = max_expand(ms, s + 1, p, ep);
				goto out;
			case '*':
				s = max_expand(ms, s, p, ep);
				goto out;
			case '-':
				s = min_expand(ms, s, p, ep);
				goto out;
			default:
				s++;
				p = ep;
				continue;
			}
		}
	}
out:
	ms->depth++;
	return s;
}

/* ---- the library functions ---- */

static void
state_init(struct pm_state *ms, lua_State *L, const struct pm_lim *lim, const char *s,
    size_t ls, const char *p, size_t lp)
{
	ms->L = L;
	ms->lim = lim;
	ms->steps = 0;
	ms->src_init = s;
	ms->src_end = s + ls;
	ms->p_end = p + lp;
	ms->depth = PM_MAXDEPTH;
	ms->level = 0;
}

static void
state_reset(struct pm_state *ms)
{
	ms->level = 0;
	ms->depth = PM_MAXDEPTH;
}

static size_t
get_capture(struct pm_state *ms, int i, const char *s, const char *e, const char **cap)
{
	ptrdiff_t l;

	if (i >= ms->level) {
		if (i != 0)
			luaL_error(ms->L, "invalid capture index %%%d", i + 1);
		*cap = s;
		return (size_t)(e - s);
	}
	l = ms->cap[i].len;
	*cap = ms->cap[i].init;
	if (l == CAP_UNFINISHED)
		luaL_error(ms->L, "unfinished capture");
	else if (l == CAP_POSITION)
		lua_pushinteger(ms->L, (ms->cap[i].init - ms->src_init) + 1);
	return (size_t)l;
}

static void
push_capture(struct pm_state *ms, int i, const char *s, const char *e)
{
	const char *cap;
	size_t l = get_capture(ms, i, s, e, &cap);

	if (l != (size_t)CAP_POSITION)
		lua_pushlstring(ms->L, cap, l);
}

static int
push_captures(struct pm_state *ms, const char *s, const char *e)
{
	int i, n = (ms->level == 0 && s != NULL) ? 1 : ms->level;

	luaL_checkstack(ms->L, n, "too many captures");
	for (i = 0; i < n; i++)
		push_capture(ms, i, s, e);
	return n;
}

static size_t
pos_relative(lua_Integer pos, size_t len)
{
	if (pos > 0)
		return (size_t)pos;
	if (pos == 0)
		return 1;
	if (pos < -(lua_Integer)len)
		return 1;
	return len + (size_t)pos + 1;
}

static int
no_specials(const char *p, size_t l)
{
	size_t upto = 0;

	do {
		if (strpbrk(p + upto, PM_SPECIALS) != NULL)
			return 0;
		upto += strlen(p + upto) + 1;
	} while (upto <= l);
	return 1;
}

/* A plain search of p (lp bytes) in s (ls bytes), charged per candidate. */
static const char *
mem_find(struct pm_state *ms, const char *s, size_t ls, const char *p, size_t lp)
{
	const char *hit;

	if (lp == 0)
		return s;
	if (lp > ls)
		return NULL;
	lp--;
	ls -= lp;
	while (ls > 0 && (hit = memchr(s, *p, ls)) != NULL) {
		step(ms, 1 + lp / 64 + (size_t)(hit - s) / 256);
		hit++;
		if (memcmp(hit, p + 1, lp) == 0)
			return hit - 1;
		ls -= (size_t)(hit - s);
		s = hit;
	}
	return NULL;
}

static const struct pm_lim *
lim_of(lua_State *L, int up)
{
	return lua_touserdata(L, lua_upvalueindex(up));
}

static int
find_aux(lua_State *L, int find)
{
	size_t ls, lp;
	const char *s = luaL_checklstring(L, 1, &ls);
	const char *p = luaL_checklstring(L, 2, &lp);
	size_t init = pos_relative(luaL_optinteger(L, 3, 1), ls) - 1;
	struct pm_state ms;

	state_init(&ms, L, lim_of(L, 1), s, ls, p, lp);
	if (init > ls) {
		luaL_pushfail(L);
		return 1;
	}
	if (find && (lua_toboolean(L, 4) || no_specials(p, lp))) {
		const char *hit = mem_find(&ms, s + init, ls - init, p, lp);
		charge_flush(&ms);
		if (hit != NULL) {
			lua_pushinteger(L, (hit - s) + 1);
			lua_pushinteger(L, (lua_Integer)(hit - s) + (lua_Integer)lp);
			return 2;
		}
	} else {
		const char *s1 = s + init, *res;
		int anchor = *p == '^';

		if (anchor) {
			p++;
			lp--;
			ms.p_end = p + lp;
		}
		do {
			state_reset(&ms);
			if ((res = pm_match(&ms, s1, p)) != NULL) {
				charge_flush(&ms);
				if (find) {
					lua_pushinteger(L, (s1 - s) + 1);
					lua_pushinteger(L, res - s);
					return push_captures(&ms, NULL, NULL) + 2;
				}
				return push_captures(&ms, s1, res);
			}
		} while (s1++ < ms.src_end && !anchor);
		charge_flush(&ms);
	}
	luaL_pushfail(L);
	return 1;
}

static int
pm_find(lua_State *L)
{
	return find_aux(L, 1);
}

static int
pm_match_fn(lua_State *L)
{
	return find_aux(L, 0);
}

struct pm_gmatch {
	const char	*src;		/* where the next search starts */
	const char	*p;
	const char	*lastmatch;	/* end of the last match */
	struct pm_state	 ms;
};

static int
gmatch_aux(lua_State *L)
{
	struct pm_gmatch *gm = lua_touserdata(L, lua_upvalueindex(3));
	const char *src, *e;

	gm->ms.L = L;
	gm->ms.lim = lim_of(L, 4);
	for (src = gm->src; src <= gm->ms.src_end; src++) {
		state_reset(&gm->ms);
		if ((e = pm_match(&gm->ms, src, gm->p)) != NULL && e != gm->lastmatch) {
			gm->src = gm->lastmatch = e;
			charge_flush(&gm->ms);
			return push_captures(&gm->ms, src, e);
		}
	}
	gm->src = src;
	charge_flush(&gm->ms);
	return 0;
}

static int
pm_gmatch(lua_State *L)
{
	size_t ls, lp;
	const char *s = luaL_checklstring(L, 1, &ls);
	const char *p = luaL_checklstring(L, 2, &lp);
	size_t init = pos_relative(luaL_optinteger(L, 3, 1), ls) - 1;
	struct pm_gmatch *gm;

	lua_settop(L, 2);	/* the strings stay alive as upvalues */
	gm = lua_newuserdatauv(L, sizeof(*gm), 0);
	if (init > ls)
		init = ls + 1;
	state_init(&gm->ms, L, lim_of(L, 1), s, ls, p, lp);
	gm->src = s + init;
	gm->p = p;
	gm->lastmatch = NULL;
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_pushcclosure(L, gmatch_aux, 4);
	return 1;
}

static void
add_s(struct pm_state *ms, luaL_Buffer *b, const char *s, const char *e)
{
	lua_State *L = ms->L;
	size_t l;
	const char *news = lua_tolstring(L, 3, &l), *p, *cap;

	while ((p = memchr(news, PM_ESC, l)) != NULL) {
		luaL_addlstring(b, news, (size_t)(p - news));
		p++;
		step(ms, 1);
		if (p < news + l && *p == PM_ESC)
			luaL_addchar(b, *p);
		else if (p < news + l && *p == '0')
			luaL_addlstring(b, s, (size_t)(e - s));
		else if (p < news + l && isdigit((unsigned char)*p)) {
			size_t rl = get_capture(ms, *p - '1', s, e, &cap);
			if (rl == (size_t)CAP_POSITION)
				luaL_addvalue(b);
			else
				luaL_addlstring(b, cap, rl);
		} else
			luaL_error(L, "invalid use of '%c' in replacement string", PM_ESC);
		l -= (size_t)(p + 1 - news);
		news = p + 1;
	}
	luaL_addlstring(b, news, l);
}

static int
add_value(struct pm_state *ms, luaL_Buffer *b, const char *s, const char *e, int tr)
{
	lua_State *L = ms->L;

	switch (tr) {
	case LUA_TFUNCTION: {
		int n;
		lua_pushvalue(L, 3);
		n = push_captures(ms, s, e);
		charge_flush(ms);
		lua_call(L, n, 1);
		break;
	}
	case LUA_TTABLE:
		push_capture(ms, 0, s, e);
		lua_gettable(L, 3);
		break;
	default:
		add_s(ms, b, s, e);
		return 1;
	}
	if (!lua_toboolean(L, -1)) {
		lua_pop(L, 1);
		luaL_addlstring(b, s, (size_t)(e - s));
		return 0;
	}
	if (!lua_isstring(L, -1))
		return luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
	luaL_addvalue(b);
	return 1;
}

static int
pm_gsub(lua_State *L)
{
	size_t srcl, lp;
	const char *src = luaL_checklstring(L, 1, &srcl);
	const char *p = luaL_checklstring(L, 2, &lp);
	const char *lastmatch = NULL, *e;
	int tr = lua_type(L, 3), anchor, changed = 0;
	lua_Integer max_s = luaL_optinteger(L, 4, (lua_Integer)srcl + 1), n = 0;
	struct pm_state ms;
	luaL_Buffer b;

	luaL_argexpected(L, tr == LUA_TNUMBER || tr == LUA_TSTRING || tr == LUA_TFUNCTION ||
	    tr == LUA_TTABLE, 3, "string/function/table");
	luaL_buffinit(L, &b);
	anchor = *p == '^';
	if (anchor) {
		p++;
		lp--;
	}
	state_init(&ms, L, lim_of(L, 1), src, srcl, p, lp);
	while (n < max_s) {
		state_reset(&ms);
		if ((e = pm_match(&ms, src, p)) != NULL && e != lastmatch) {
			n++;
			changed = add_value(&ms, &b, src, e, tr) | changed;
			src = lastmatch = e;
		} else if (src < ms.src_end)
			luaL_addchar(&b, *src++);
		else
			break;
		if (anchor)
			break;
	}
	charge_flush(&ms);
	if (!changed)
		lua_pushvalue(L, 1);
	else {
		luaL_addlstring(&b, src, (size_t)(ms.src_end - src));
		luaL_pushresult(&b);
	}
	lua_pushinteger(L, n);
	return 2;
}

static const luaL_Reg pm_fns[] = {
	{ "find", pm_find },
	{ "match", pm_match_fn },
	{ "gmatch", pm_gmatch },
	{ "gsub", pm_gsub },
	{ NULL, NULL }
};

void
pmatch_pushlib(lua_State *L, pmatch_charge charge, void *ud)
{
	struct pm_lim *lim;

	lua_createtable(L, 0, 4);
	lim = lua_newuserdatauv(L, sizeof(*lim), 0);
	lim->fn = charge;
	lim->ud = ud;
	luaL_setfuncs(L, pm_fns, 1);
}

void
pmatch_install(lua_State *L, pmatch_charge charge, void *ud)
{
	static const char *const names[] = { "find", "match", "gmatch", "gsub" };
	size_t i;

	luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
	if (lua_getfield(L, -1, LUA_STRLIBNAME) != LUA_TTABLE)
		luaL_error(L, "pmatch_install: the string library is not loaded");
	pmatch_pushlib(L, charge, ud);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		lua_getfield(L, -1, names[i]);
		lua_setfield(L, -3, names[i]);
	}
	lua_pop(L, 3);
}
