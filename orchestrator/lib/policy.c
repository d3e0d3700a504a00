/*
 * policy.c: a session's credential policy (policy.h). A policy is held as
 * a struct with one section per provider, each member remembering whether
 * it was given (an absent member has a meaning of its own: policy.h, and
 * docs/operator-guide.md "Credential policy"). Lists keep the order they
 * were given in, so an error can name the entry by the index its sender
 * used; only the JSON out is sorted (policy_to_json).
 *
 * One table row per provider names its section, its scope list and its
 * scoped api mode; one row per member names its kind, which decides its
 * check, its output and its narrowing rule.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ids.h"
#include "jsonu.h"
#include "log.h"
#include "policy.h"
#include "xmalloc.h"

#define POLICY_FILE_MAX	(1 << 20)	/* bytes of the operator's file */
#define POLICY_MAX_ORGS	4096		/* orgs in the operator's file */

enum { P_GITHUB, P_GITLAB, P_NPROV };
enum { LVL_READ = 1, LVL_WRITE, LVL_ADMIN };

struct plist {
	char	**v;
	size_t	  n;
	int	  set;		/* given (an empty list is given) */
};

struct perm {
	char	 name[POLICY_MAX_PERM_NAME + 1];
	int	 lvl;		/* LVL_* */
};

struct psec {
	int		 set;		/* the section is present */
	struct plist	 scope;		/* repositories | projects */
	struct plist	 push;
	struct plist	 protect;
	int		 perms_set;
	size_t		 nperm;
	struct perm	 perm[POLICY_MAX_PERMS];
	int		 del;		/* -1 absent, else 0/1 */
	int		 api;		/* -1 absent, 0 "all", 1 scoped */
	int		 gql;		/* -1 absent, else 0/1 */
};

struct policy {
	struct psec	 sec[P_NPROV];
	struct plist	 creds;		/* "credentials": the proxy's named ones */
};

static const struct prov {
	const char	*name;		/* the section */
	const char	*scope;		/* its scope list */
	const char	*scoped;	/* its api mode limited to the scope */
	const char	*what;		/* what a scope entry is, for errors */
	int		 perms;		/* has permissions */
	int		 gql;		/* has graphql_mutations */
	const char	*members;	/* for the unknown-member error */
} provs[P_NPROV] = {
	{ "github", "repositories", "repositories", "owner/name", 1, 1,
	  "repositories, permissions, push, protect, delete, api, "
	  "graphql_mutations" },
	{ "gitlab", "projects", "projects", "group[/subgroup...]/project", 0, 1,
	  "projects, push, protect, delete, api, graphql_mutations" },
};

enum mkind { M_SCOPE, M_PUSH, M_PROTECT, M_PERMS, M_DELETE, M_API, M_GQL };

static const char *const level_names[] = { NULL, "read", "write", "admin" };

/* ---- globs ---- */

/* Pattern tokens: a byte (lower-cased when ci), or one of these. */
#define T_STAR	(-1)	/* '*': a run without '/' */
#define T_DSTAR	(-2)	/* '**' (or more stars): any run */
#define T_QM	(-3)	/* '?': one character but '/' */

/* s as tokens into t (room for strlen(s)); the count. */
static size_t
tokens(const char *s, int ci, int *t)
{
	size_t n = 0;

	while (*s != '\0') {
		if (*s == '*') {
			t[n++] = s[1] == '*' ? T_DSTAR : T_STAR;
			while (*s == '*')
				s++;
			continue;
		}
		if (*s == '?')
			t[n++] = T_QM;
		else if (ci && *s >= 'A' && *s <= 'Z')
			t[n++] = *s - 'A' + 'a';
		else
			t[n++] = (unsigned char)*s;
		s++;
	}
	return n;
}

int
policy_glob_covers(const char *pat, const char *sub, int ci)
{
	size_t np = strlen(pat), ns = strlen(sub), i, j;
	int *p, *s, ok;
	unsigned char *cur, *nxt, *tmp;

	if ((ci ? strcasecmp(pat, sub) : strcmp(pat, sub)) == 0 &&
	    strpbrk(pat, "*?") == NULL)
		return 1;
	p = xcalloc(np + 1, sizeof(int));
	s = xcalloc(ns + 1, sizeof(int));
	np = tokens(pat, ci, p);
	ns = tokens(sub, ci, s);
	/* cur[j]: p[i..] covers s[j..]; rows from i = np down to 0. */
	cur = xcalloc(ns + 1, 1);
	nxt = xcalloc(ns + 1, 1);
	nxt[ns] = 1;		/* row np: only the empty rest */
	for (i = np; i-- > 0;) {
		for (j = ns + 1; j-- > 0;) {
			int a = p[i], b = j < ns ? s[j] : 0;

			cur[j] = 0;
			if (a == T_DSTAR)
				cur[j] = nxt[j] || (j < ns && cur[j + 1]);
			else if (a == T_STAR)
				cur[j] = nxt[j] || (j < ns && b != '/' &&
				    b != T_DSTAR && cur[j + 1]);
			else if (j == ns)
				cur[j] = 0;
			else if (a == T_QM)
				cur[j] = b >= 0 && b != '/' ? nxt[j + 1] :
				    b == T_QM ? nxt[j + 1] : 0;
			else
				cur[j] = a == b ? nxt[j + 1] : 0;
		}
		tmp = cur;
		cur = nxt;
		nxt = tmp;
	}
	ok = nxt[0];
	free(p);
	free(s);
	free(cur);
	free(nxt);
	return ok;
}

/* ---- building and freeing ---- */

static void
plist_free(struct plist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static void
plist_copy(struct plist *dst, const struct plist *src)
{
	size_t i;

	dst->set = src->set;
	dst->n = src->n;
	dst->v = src->n > 0 ? xcalloc(src->n, sizeof(char *)) : NULL;
	for (i = 0; i < src->n; i++)
		dst->v[i] = xstrdup(src->v[i]);
}

static void
psec_clear(struct psec *s)
{
	plist_free(&s->scope);
	plist_free(&s->push);
	plist_free(&s->protect);
	memset(s, 0, sizeof(*s));
	s->del = s->api = s->gql = -1;
}

static void
psec_copy(struct psec *dst, const struct psec *src)
{
	*dst = *src;
	plist_copy(&dst->scope, &src->scope);
	plist_copy(&dst->push, &src->push);
	plist_copy(&dst->protect, &src->protect);
}

static struct policy *
policy_new(void)
{
	struct policy *p = xcalloc(1, sizeof(*p));
	int k;

	for (k = 0; k < P_NPROV; k++)
		psec_clear(&p->sec[k]);
	return p;
}

void
policy_free(struct policy *p)
{
	int k;

	if (p == NULL)
		return;
	for (k = 0; k < P_NPROV; k++)
		psec_clear(&p->sec[k]);
	plist_free(&p->creds);
	free(p);
}

struct policy *
policy_dup(const struct policy *p)
{
	struct policy *d;
	int k;

	if (p == NULL)
		return NULL;
	d = xcalloc(1, sizeof(*d));
	for (k = 0; k < P_NPROV; k++)
		psec_copy(&d->sec[k], &p->sec[k]);
	plist_copy(&d->creds, &p->creds);
	return d;
}

/* ---- checking ---- */

/* A member name as an error may show it: at most 64 bytes, anything but
 * printable ASCII as '?'. */
static void
safe_name(char *dst, size_t len, const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0' && i + 1 < len && i < 64; i++)
		if (s[i] > 0x20 && s[i] < 0x7f)
			dst[i] = s[i];
		else
			dst[i] = '?';
	dst[i] = '\0';
}

/* 1 if s is 1..POLICY_MAX_ENTRY bytes of printable ASCII without spaces. */
static int
entry_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f || i >= POLICY_MAX_ENTRY)
			return 0;
	return i > 0;
}

/* A repository ("owner/name") or project ("group[/sub...]/project") path:
 * segments non-empty, exactly two for a repository, at least two else. */
static int
path_ok(const char *s, int repo)
{
	size_t segs = 1;
	const char *p;

	if (s[0] == '/' || s[strlen(s) - 1] == '/' || strstr(s, "//") != NULL)
		return 0;
	for (p = s; *p != '\0'; p++)
		segs += *p == '/';
	return repo ? segs == 2 : segs >= 2;
}

/* A list member: an array of at most POLICY_MAX_LIST entries, each
 * entry_ok (and path_ok for a scope list). 0, or -1 with err. */
static int
read_list(const cJSON *v, const char *path, enum mkind kind, int prov,
    struct plist *l, char *err, size_t errlen)
{
	const cJSON *it;
	size_t i = 0;

	if (!cJSON_IsArray(v)) {
		snprintf(err, errlen, "%s: must be a list of strings", path);
		return -1;
	}
	if (cJSON_GetArraySize(v) > POLICY_MAX_LIST) {
		snprintf(err, errlen, "%s: more than %d entries", path,
		    POLICY_MAX_LIST);
		return -1;
	}
	l->set = 1;
	l->v = xcalloc((size_t)cJSON_GetArraySize(v) + 1, sizeof(char *));
	cJSON_ArrayForEach(it, v) {
		if (!cJSON_IsString(it) || !entry_ok(it->valuestring)) {
			snprintf(err, errlen, "%s[%zu]: must be a string of 1-%d "
			    "printable ASCII characters without spaces", path, i,
			    POLICY_MAX_ENTRY);
			return -1;
		}
		if (kind == M_SCOPE && !path_ok(it->valuestring, prov == P_GITHUB)) {
			snprintf(err, errlen, "%s[%zu]: \"%s\" is not %s (either "
			    "part may hold * ** ?)", path, i, it->valuestring,
			    provs[prov].what);
			return -1;
		}
		l->v[l->n++] = xstrdup(it->valuestring);
		i++;
	}
	return 0;
}

static int
read_perms(const cJSON *v, const char *path, struct psec *s, char *err,
    size_t errlen)
{
	const cJSON *it;
	char nm[80];
	size_t i;
	int l;

	if (!cJSON_IsObject(v)) {
		snprintf(err, errlen, "%s: must be an object of name: \"read\" | "
		    "\"write\" | \"admin\"", path);
		return -1;
	}
	if (cJSON_GetArraySize(v) > POLICY_MAX_PERMS) {
		snprintf(err, errlen, "%s: more than %d permissions", path,
		    POLICY_MAX_PERMS);
		return -1;
	}
	s->perms_set = 1;
	cJSON_ArrayForEach(it, v) {
		safe_name(nm, sizeof(nm), it->string);
		for (i = 0; it->string[i] != '\0'; i++)
			if (!((it->string[i] >= 'a' && it->string[i] <= 'z') ||
			    it->string[i] == '_'))
				break;
		if (i == 0 || it->string[i] != '\0' || i > POLICY_MAX_PERM_NAME) {
			snprintf(err, errlen, "%s: '%s' is not a permission name "
			    "(1-%d of a-z and _)", path, nm, POLICY_MAX_PERM_NAME);
			return -1;
		}
		if (cJSON_GetObjectItemCaseSensitive(v, it->string) != it) {
			snprintf(err, errlen, "%s.%s: appears twice", path, nm);
			return -1;
		}
		for (l = LVL_READ; l <= LVL_ADMIN; l++)
			if (cJSON_IsString(it) &&
			    strcmp(it->valuestring, level_names[l]) == 0)
				break;
		if (l > LVL_ADMIN) {
			snprintf(err, errlen, "%s.%s: must be \"read\", \"write\" or "
			    "\"admin\"", path, nm);
			return -1;
		}
		snprintf(s->perm[s->nperm].name, sizeof(s->perm[0].name), "%s",
		    it->string);
		s->perm[s->nperm++].lvl = l;
	}
	return 0;
}

/* The member named name of provider prov's section: its kind, or -1. */
static int
member_kind(int prov, const char *name)
{
	if (strcmp(name, provs[prov].scope) == 0)
		return M_SCOPE;
	if (strcmp(name, "push") == 0)
		return M_PUSH;
	if (strcmp(name, "protect") == 0)
		return M_PROTECT;
	if (strcmp(name, "delete") == 0)
		return M_DELETE;
	if (strcmp(name, "api") == 0)
		return M_API;
	if (provs[prov].perms && strcmp(name, "permissions") == 0)
		return M_PERMS;
	if (provs[prov].gql && strcmp(name, "graphql_mutations") == 0)
		return M_GQL;
	return -1;
}

static int
read_section(const cJSON *j, const char *what, int prov, struct psec *s,
    char *err, size_t errlen)
{
	const cJSON *v;
	char path[160], nm[80];
	int kind;

	if (!cJSON_IsObject(j)) {
		snprintf(err, errlen, "%s.%s: must be an object", what,
		    provs[prov].name);
		return -1;
	}
	s->set = 1;
	cJSON_ArrayForEach(v, j) {
		safe_name(nm, sizeof(nm), v->string);
		snprintf(path, sizeof(path), "%s.%s.%s", what, provs[prov].name, nm);
		if ((kind = member_kind(prov, v->string)) == -1) {
			snprintf(err, errlen, "%s.%s: unknown member '%s' (the "
			    "members are %s)", what, provs[prov].name, nm,
			    provs[prov].members);
			return -1;
		}
		if (cJSON_GetObjectItemCaseSensitive(j, v->string) != v) {
			snprintf(err, errlen, "%s: appears twice", path);
			return -1;
		}
		switch (kind) {
		case M_SCOPE:
			if (read_list(v, path, M_SCOPE, prov, &s->scope, err,
			    errlen) == -1)
				return -1;
			break;
		case M_PUSH:
		case M_PROTECT:
			if (read_list(v, path, kind, prov, kind == M_PUSH ?
			    &s->push : &s->protect, err, errlen) == -1)
				return -1;
			break;
		case M_PERMS:
			if (read_perms(v, path, s, err, errlen) == -1)
				return -1;
			break;
		case M_DELETE:
		case M_GQL:
			if (!cJSON_IsBool(v)) {
				snprintf(err, errlen, "%s: must be true or false", path);
				return -1;
			}
			*(kind == M_DELETE ? &s->del : &s->gql) = cJSON_IsTrue(v);
			break;
		case M_API:
			if (cJSON_IsString(v) && strcmp(v->valuestring, "all") == 0)
				s->api = 0;
			else if (cJSON_IsString(v) &&
			    strcmp(v->valuestring, provs[prov].scoped) == 0)
				s->api = 1;
			else {
				snprintf(err, errlen, "%s: must be \"%s\" or \"all\"",
				    path, provs[prov].scoped);
				return -1;
			}
			break;
		}
	}
	return 0;
}

/*
 * "credentials": the names of the egress proxy's named credentials the
 * session may use (docs/addons.md, "Named credentials"); the proxy knows
 * which exist and refuses the register of a name none declares.
 */
static int
read_creds(const cJSON *v, const char *what, struct plist *l, char *err, size_t errlen)
{
	char path[96];
	size_t i;

	snprintf(path, sizeof(path), "%s.credentials", what);
	if (read_list(v, path, M_PUSH, P_GITHUB, l, err, errlen) == -1)
		return -1;
	for (i = 0; i < l->n; i++)
		if (strlen(l->v[i]) > 63 || strspn(l->v[i],
		    "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(l->v[i])) {
			snprintf(err, errlen, "%s[%zu]: a credential name is 1-63 of a-z 0-9 _ -",
			    path, i);
			return -1;
		}
	return 0;
}

struct policy *
policy_from_json(const cJSON *j, const char *what, char *err, size_t errlen)
{
	struct policy *p;
	const cJSON *v;
	char nm[80], *txt;
	size_t len;
	int k;

	if (!cJSON_IsObject(j)) {
		snprintf(err, errlen, "%s: must be an object with github, gitlab "
		    "and/or credentials", what);
		return NULL;
	}
	txt = cJSON_PrintUnformatted(j);
	len = txt != NULL ? strlen(txt) : 0;
	free(txt);
	if (len > POLICY_MAX_JSON) {
		snprintf(err, errlen, "%s: %zu bytes of compact JSON, more than "
		    "the %d a policy may have", what, len, POLICY_MAX_JSON);
		return NULL;
	}
	p = policy_new();
	cJSON_ArrayForEach(v, j) {
		for (k = 0; k < P_NPROV; k++)
			if (strcmp(v->string, provs[k].name) == 0)
				break;
		safe_name(nm, sizeof(nm), v->string);
		if (k == P_NPROV && strcmp(v->string, "credentials") != 0) {
			snprintf(err, errlen, "%s: unknown member '%s' (the members "
			    "are github, gitlab and credentials)", what, nm);
			goto fail;
		}
		if (cJSON_GetObjectItemCaseSensitive(j, v->string) != v) {
			snprintf(err, errlen, "%s.%s: appears twice", what, nm);
			goto fail;
		}
		if (k == P_NPROV) {
			if (read_creds(v, what, &p->creds, err, errlen) == -1)
				goto fail;
			continue;
		}
		if (read_section(v, what, k, &p->sec[k], err, errlen) == -1)
			goto fail;
	}
	return p;
fail:
	policy_free(p);
	return NULL;
}

struct policy *
policy_parse(const char *txt, size_t len, const char *what, char *err,
    size_t errlen)
{
	cJSON *j;
	struct policy *p;

	if (len > POLICY_MAX_JSON * 4) {	/* whitespace aside, too big */
		snprintf(err, errlen, "%s: more than the %d bytes a policy may "
		    "have", what, POLICY_MAX_JSON);
		return NULL;
	}
	if (jsonu_has_nul(txt, len)) {	/* cJSON would cut the string there */
		snprintf(err, errlen, "%s: holds a NUL character (\\u0000)", what);
		return NULL;
	}
	if ((j = cJSON_ParseWithLength(txt, len)) == NULL) {
		snprintf(err, errlen, "%s: not valid JSON", what);
		return NULL;
	}
	p = policy_from_json(j, what, err, errlen);
	cJSON_Delete(j);
	return p;
}

/* ---- output ---- */

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
cmp_perm(const void *a, const void *b)
{
	return strcmp(((const struct perm *)a)->name,
	    ((const struct perm *)b)->name);
}

/* l sorted, duplicates dropped, as a JSON array. */
static cJSON *
list_json(const struct plist *l)
{
	cJSON *a = cJSON_CreateArray();
	char **v;
	size_t i;

	if (l->n == 0)
		return a;
	v = xcalloc(l->n, sizeof(char *));
	memcpy(v, l->v, l->n * sizeof(char *));
	qsort(v, l->n, sizeof(char *), cmp_str);
	for (i = 0; i < l->n; i++)
		if (i == 0 || strcmp(v[i], v[i - 1]) != 0)
			cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
	free(v);
	return a;
}

cJSON *
policy_to_json(const struct policy *p)
{
	cJSON *o = cJSON_CreateObject(), *s, *pm;
	struct perm sorted[POLICY_MAX_PERMS];
	const struct psec *c;
	size_t i;
	int k;

	for (k = 0; p != NULL && k < P_NPROV; k++) {
		c = &p->sec[k];
		if (!c->set)
			continue;
		s = cJSON_AddObjectToObject(o, provs[k].name);
		if (c->scope.set)
			cJSON_AddItemToObject(s, provs[k].scope, list_json(&c->scope));
		if (c->perms_set) {
			pm = cJSON_AddObjectToObject(s, "permissions");
			memcpy(sorted, c->perm, c->nperm * sizeof(sorted[0]));
			qsort(sorted, c->nperm, sizeof(sorted[0]), cmp_perm);
			for (i = 0; i < c->nperm; i++)
				cJSON_AddStringToObject(pm, sorted[i].name,
				    level_names[sorted[i].lvl]);
		}
		if (c->push.set)
			cJSON_AddItemToObject(s, "push", list_json(&c->push));
		if (c->protect.set)
			cJSON_AddItemToObject(s, "protect", list_json(&c->protect));
		if (c->del >= 0)
			cJSON_AddBoolToObject(s, "delete", c->del);
		if (c->api >= 0)
			cJSON_AddStringToObject(s, "api", c->api ? provs[k].scoped :
			    "all");
		if (c->gql >= 0)
			cJSON_AddBoolToObject(s, "graphql_mutations", c->gql);
	}
	if (p != NULL && p->creds.set)
		cJSON_AddItemToObject(o, "credentials", list_json(&p->creds));
	return o;
}

char *
policy_text(const struct policy *p)
{
	cJSON *o = policy_to_json(p);
	char *t = cJSON_PrintUnformatted(o);

	cJSON_Delete(o);
	if (t == NULL)
		fatalx("policy_text: out of memory");
	return t;
}

/* ---- narrowing ---- */

/* Is every pattern of b covered by one of a's? The first that is not, or
 * -1. */
static long
list_within(const struct plist *a, const struct plist *b, int ci)
{
	size_t i, j;

	for (i = 0; i < b->n; i++) {
		for (j = 0; j < a->n; j++)
			if (policy_glob_covers(a->v[j], b->v[i], ci))
				break;
		if (j == a->n)
			return (long)i;
	}
	return -1;
}

static const struct perm *
perm_find(const struct psec *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nperm; i++)
		if (strcmp(s->perm[i].name, name) == 0)
			return &s->perm[i];
	return NULL;
}

/* One section: b's within a's (both present). whose names a in errors. */
static int
section_within(int k, const struct psec *a, const struct psec *b,
    const char *whose, char *err, size_t errlen)
{
	const char *sec = provs[k].name, *scope = provs[k].scope;
	const struct perm *ap;
	long bad;
	size_t i;

	if (a->scope.set && !b->scope.set) {
		snprintf(err, errlen, "policy.%s.%s: absent (any) is wider than the "
		    "%s of %s", sec, scope, scope, whose);
		return 0;
	}
	if (a->scope.set && (bad = list_within(&a->scope, &b->scope, 1)) != -1) {
		snprintf(err, errlen, "policy.%s.%s[%ld]: \"%s\" is not within the "
		    "%s of %s", sec, scope, bad, b->scope.v[bad], scope, whose);
		return 0;
	}
	if (a->perms_set && !b->perms_set) {
		snprintf(err, errlen, "policy.%s.permissions: absent (every "
		    "permission of the installation) is wider than the permissions "
		    "of %s", sec, whose);
		return 0;
	}
	for (i = 0; a->perms_set && i < b->nperm; i++) {
		if ((ap = perm_find(a, b->perm[i].name)) == NULL) {
			snprintf(err, errlen, "policy.%s.permissions.%s: not granted "
			    "by %s", sec, b->perm[i].name, whose);
			return 0;
		}
		if (b->perm[i].lvl > ap->lvl) {
			snprintf(err, errlen, "policy.%s.permissions.%s: \"%s\" is more "
			    "than the \"%s\" of %s", sec, b->perm[i].name,
			    level_names[b->perm[i].lvl], level_names[ap->lvl], whose);
			return 0;
		}
	}
	if (a->push.set && !b->push.set) {
		snprintf(err, errlen, "policy.%s.push: absent (any ref) is wider "
		    "than the push patterns of %s", sec, whose);
		return 0;
	}
	if (a->push.set && (bad = list_within(&a->push, &b->push, 0)) != -1) {
		snprintf(err, errlen, "policy.%s.push[%ld]: \"%s\" is not within the "
		    "push patterns of %s", sec, bad, b->push.v[bad], whose);
		return 0;
	}
	/* b must protect at least what a protects. */
	if (a->protect.n > 0 && !b->protect.set) {
		snprintf(err, errlen, "policy.%s.protect: absent (nothing "
		    "protected) drops \"%s\", which %s protects", sec,
		    a->protect.v[0], whose);
		return 0;
	}
	if ((bad = list_within(&b->protect, &a->protect, 0)) != -1) {
		snprintf(err, errlen, "policy.%s.protect: does not cover \"%s\", "
		    "which %s protects", sec, a->protect.v[bad], whose);
		return 0;
	}
	if (b->del == 1 && a->del != 1) {
		snprintf(err, errlen, "policy.%s.delete: true, but %s refuses "
		    "deletes", sec, whose);
		return 0;
	}
	if (a->api == 1 && b->api != 1) {
		snprintf(err, errlen, "policy.%s.api: %s is wider than the \"%s\" "
		    "of %s", sec, b->api == 0 ? "\"all\"" : "absent (\"all\")",
		    provs[k].scoped, whose);
		return 0;
	}
	if (b->gql == 1 && a->gql != 1) {
		snprintf(err, errlen, "policy.%s.graphql_mutations: true, but %s "
		    "refuses mutations", sec, whose);
		return 0;
	}
	return 1;
}

static int
within(const struct policy *a, const struct policy *b, const char *whose,
    char *err, size_t errlen)
{
	int k;

	if (a == NULL)
		return 1;
	if (b == NULL) {
		snprintf(err, errlen, "policy: none (no restriction) is wider than "
		    "%s", whose);
		return 0;
	}
	for (k = 0; k < P_NPROV; k++) {
		if (!a->sec[k].set || !b->sec[k].set)
			continue;	/* a: no limit; b: takes a's */
		if (!section_within(k, &a->sec[k], &b->sec[k], whose, err, errlen))
			return 0;
	}
	/* Named credentials: b may name only those a names (b without the
	 * member takes a's list). */
	if (a->creds.set && b->creds.set) {
		size_t i, j;

		for (i = 0; i < b->creds.n; i++) {
			for (j = 0; j < a->creds.n && strcmp(a->creds.v[j], b->creds.v[i]) != 0; j++)
				;
			if (j == a->creds.n) {
				snprintf(err, errlen, "policy.credentials[%zu]: \"%s\" is not "
				    "among the credentials of %s", i, b->creds.v[i], whose);
				return 0;
			}
		}
	}
	return 1;
}

int
policy_narrower(const struct policy *a, const struct policy *b, char *err,
    size_t errlen)
{
	return within(a, b, "the current policy", err, errlen);
}

static struct policy *
combine(const struct policy *a, const struct policy *b, const char *whose,
    int *widens, char *err, size_t errlen)
{
	struct policy *r;
	int k;

	*widens = 0;
	if (b == NULL)
		return policy_dup(a);
	if (!within(a, b, whose, err, errlen)) {
		*widens = 1;
		return NULL;
	}
	r = policy_dup(b);
	for (k = 0; a != NULL && k < P_NPROV; k++)
		if (!r->sec[k].set && a->sec[k].set) {
			psec_clear(&r->sec[k]);
			psec_copy(&r->sec[k], &a->sec[k]);
		}
	if (a != NULL && !r->creds.set && a->creds.set)
		plist_copy(&r->creds, &a->creds);
	return r;
}

struct policy *
policy_combine(const struct policy *op, const struct policy *client,
    int *widens, char *err, size_t errlen)
{
	return combine(op, client, "the operator's policy", widens, err, errlen);
}

struct policy *
policy_narrow(const struct policy *cur, const struct policy *b, int *widens,
    char *err, size_t errlen)
{
	return combine(cur, b, "the current policy", widens, err, errlen);
}

/* ---- the operator's policies ---- */

struct policy_set {
	struct policy	*def;		/* NULL: none */
	char		**org;
	struct policy	**pol;
	size_t		  n;
};

void
policy_set_free(struct policy_set *s)
{
	size_t i;

	if (s == NULL)
		return;
	policy_free(s->def);
	for (i = 0; i < s->n; i++) {
		free(s->org[i]);
		policy_free(s->pol[i]);
	}
	free(s->org);
	free(s->pol);
	free(s);
}

struct policy_set *
policy_set_parse(const char *txt, size_t len, const char *name, char *err,
    size_t errlen)
{
	struct policy_set *s = xcalloc(1, sizeof(*s));
	const cJSON *v, *o;
	cJSON *j = NULL;
	char what[256], nm[80], e[512];

	if (jsonu_has_nul(txt, len)) {
		snprintf(err, errlen, "%s: holds a NUL character (\\u0000)", name);
		goto fail;
	}
	if ((j = cJSON_ParseWithLength(txt, len)) == NULL || !cJSON_IsObject(j)) {
		snprintf(err, errlen, "%s: must be a JSON object {\"default\": {...}, "
		    "\"orgs\": {\"<org>\": {...}}}", name);
		goto fail;
	}
	cJSON_ArrayForEach(v, j) {
		safe_name(nm, sizeof(nm), v->string);
		if (cJSON_GetObjectItemCaseSensitive(j, v->string) != v) {
			snprintf(err, errlen, "%s: %s: appears twice", name, nm);
			goto fail;
		}
		if (strcmp(v->string, "default") == 0) {
			if ((s->def = policy_from_json(v, "default", e,
			    sizeof(e))) == NULL) {
				snprintf(err, errlen, "%s: %s", name, e);
				goto fail;
			}
		} else if (strcmp(v->string, "orgs") == 0) {
			if (!cJSON_IsObject(v) ||
			    cJSON_GetArraySize(v) > POLICY_MAX_ORGS) {
				snprintf(err, errlen, "%s: orgs: must be an object of at "
				    "most %d org: policy", name, POLICY_MAX_ORGS);
				goto fail;
			}
			s->org = xcalloc((size_t)cJSON_GetArraySize(v) + 1,
			    sizeof(char *));
			s->pol = xcalloc((size_t)cJSON_GetArraySize(v) + 1,
			    sizeof(struct policy *));
			cJSON_ArrayForEach(o, v) {
				safe_name(nm, sizeof(nm), o->string);
				if (!id_session_valid(o->string) ||
				    cJSON_GetObjectItemCaseSensitive(v, o->string) != o) {
					snprintf(err, errlen, "%s: orgs.%s: not an org id "
					    "(1-128 of A-Z a-z 0-9 - _ . : @ + =) or given "
					    "twice", name, nm);
					goto fail;
				}
				snprintf(what, sizeof(what), "orgs.%s", o->string);
				if ((s->pol[s->n] = policy_from_json(o, what, e,
				    sizeof(e))) == NULL) {
					snprintf(err, errlen, "%s: %s", name, e);
					goto fail;
				}
				s->org[s->n++] = xstrdup(o->string);
			}
		} else {
			snprintf(err, errlen, "%s: unknown member '%s' (the members are "
			    "default and orgs)", name, nm);
			goto fail;
		}
	}
	cJSON_Delete(j);
	return s;
fail:
	cJSON_Delete(j);
	policy_set_free(s);
	return NULL;
}

struct policy_set *
policy_set_load(const char *path, char *err, size_t errlen)
{
	struct policy_set *s = NULL;
	char *txt = xmalloc(POLICY_FILE_MAX + 1);
	size_t n;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	n = fread(txt, 1, POLICY_FILE_MAX + 1, f);
	if (ferror(f))
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	else if (n > POLICY_FILE_MAX)
		snprintf(err, errlen, "%s: larger than %d bytes", path,
		    POLICY_FILE_MAX);
	else
		s = policy_set_parse(txt, n, path, err, errlen);
	fclose(f);
out:
	free(txt);
	return s;
}

const struct policy *
policy_set_for(const struct policy_set *set, const char *org)
{
	size_t i;

	if (set == NULL)
		return NULL;
	for (i = 0; org != NULL && org[0] != '\0' && i < set->n; i++)
		if (strcmp(set->org[i], org) == 0)
			return set->pol[i];
	return set->def;
}

size_t
policy_set_norgs(const struct policy_set *set)
{
	return set != NULL ? set->n : 0;
}
