/*
 * schema.c: the JSON Schema subset of MCP tool inputSchemas (schema.h). No
 * tool knowledge lives here.
 *
 * Supported, and nothing else: schema_compile refuses any other keyword, so
 * what a client reads in tools/list is exactly what is checked.
 *   root:      "type":"object", "properties", "required" (names of
 *              properties), "additionalProperties":false (it must be there:
 *              members the schema does not name are always refused).
 *   property:  "type" (string, integer, number, boolean, array) and
 *              "description";
 *     string:  "minLength", "maxLength" (bytes, not characters), "enum" (of
 *              strings), "pattern" (POSIX extended, compiled once here);
 *     integer: "minimum", "maximum";
 *     number:  "minimum", "maximum" (whole numbers; the value may be any
 *              finite number between them);
 *     array:   "items" ({"type":"integer"}, optional "minimum"/"maximum";
 *              or an object schema), "minItems", "maxItems";
 *     object:  "properties", "required", "additionalProperties" (a nested
 *              object without additionalProperties:false may carry other
 *              members: tool results that grow).
 *   "type" may also be ["T","null"] (null counts as absent anyway).
 * A keyword or property named twice in one object is refused too.
 *
 * schema_check reports the first problem, in a fixed order (the order the
 * tools' hand-written checks had): an unknown member; then the shape of
 * each property in the schema's order (missing, wrong type, too long, not
 * whole, out of range, a bad array); then each string's length (too
 * short, empty); then each string's value (not in the enum, not matching
 * the pattern). The message texts are the ones the tools have always
 * given (e2e tests grep for them): keep them.
 *
 * cJSON strings end at the first NUL ("a\u0000b" reads as "a"). The
 * callers mark such strings (jsonu_mark_nul: a cJSON_Raw of the string's
 * JSON text in its place), and a string property refuses a Raw with a
 * message naming the NUL, so no command, path or id is ever run cut short.
 * This validator also checks the tools' own results (their outputSchema),
 * where the same keywords suffice.
 * A compiled schema is read-only: checks may run on many threads at once
 * (glibc's regexec locks the compiled pattern itself).
 */
#include <math.h>
#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "schema.h"
#include "xmalloc.h"

/* cJSON holds every number as a double, exact only up to 2^53: schema
 * bounds and accepted integers stay inside, so conversions are exact. */
#define SCHEMA_INT_LIMIT	(1LL << 53)
/* Most bytes (escaped) of a caller's member name or value quoted back in
 * a message: enough to recognise it, too few to flood the reply. */
#define SHOWN_MAX		64
/* Longest "a, b or c" an enum may spell out in its message (a runtime's
 * image names are one: tools.c). */
#define ENUM_TEXT_MAX		2048

enum ptype { P_STRING, P_INTEGER, P_BOOLEAN, P_ARRAY, P_NUMBER, P_OBJECT };

struct schema;

struct prop {
	char		*name;		/* owned */
	enum ptype	 type;
	int		 required;
	size_t		 min_len, max_len;	/* string, bytes */
	char		**enums;	/* string: NULL-terminated, or NULL */
	char		*enum_text;	/* "a, b or c", for the message */
	char		*pattern;	/* string: as written (set once re is) */
	regex_t		 re;
	long long	 min, max;	/* integer, number, or an array's items */
	size_t		 min_items, max_items;	/* array */
	struct schema	*sub;		/* object; array: its items' */
};

struct schema {
	struct prop	*props;
	size_t		 nprops;
	int		 open;		/* nested, no additionalProperties:false */
};

static struct schema *compile_object(const cJSON *, int nested, char *,
    size_t);

/*
 * 0: d is a whole number within SCHEMA_INT_LIMIT, in *out. 1: a finite
 * number beyond it (every double that large is whole). -1: fractional or
 * not finite (JSON has no NaN, but 1e400 parses as infinity).
 */
static int
int_value(double d, long long *out)
{
	if (!isfinite(d))
		return -1;
	if (d < -(double)SCHEMA_INT_LIMIT || d > (double)SCHEMA_INT_LIMIT)
		return 1;
	if (d != (double)(long long)d)
		return -1;
	*out = (long long)d;
	return 0;
}

/* ---- compiling ---- */

#define T_STR	(1u << P_STRING)
#define T_INT	(1u << P_INTEGER)
#define T_ARR	(1u << P_ARRAY)
#define T_NUM	(1u << P_NUMBER)
#define T_OBJ	(1u << P_OBJECT)
#define T_ANY	(T_STR | T_INT | (1u << P_BOOLEAN) | T_ARR | T_NUM | T_OBJ)

/* A property keyword: which types it applies to, and what reads it. */
struct kw {
	const char	*name;
	unsigned	 types;		/* T_* bits */
	int		(*apply)(struct prop *, const struct kw *, const cJSON *,
			    char *, size_t);
	size_t		 off;		/* kw_size, kw_bound: the member */
};

/* A keyword's whole-number value in [lo, hi]: 0, or -1 with err. */
static int
kw_int(const struct prop *p, const cJSON *k, long long lo, long long hi,
    long long *out, char *err, size_t errlen)
{
	long long n = 0;

	if (!cJSON_IsNumber(k) || int_value(k->valuedouble, &n) != 0 ||
	    n < lo || n > hi) {
		snprintf(err, errlen, "property '%s': '%s' must be a whole number "
		    "from %lld to %lld", p->name, k->string, lo, hi);
		return -1;
	}
	*out = n;
	return 0;
}

static int
kw_note(struct prop *p, const struct kw *w, const cJSON *k, char *err,
    size_t errlen)
{
	(void)w;
	if (!cJSON_IsString(k)) {
		snprintf(err, errlen, "property '%s': '%s' must be a string",
		    p->name, k->string);
		return -1;
	}
	return 0;
}

/* A keyword read elsewhere ("type" by type_name, an object's members by
 * compile_object). */
static int
kw_read_elsewhere(struct prop *p, const struct kw *w, const cJSON *k,
    char *err, size_t errlen)
{
	(void)p; (void)w; (void)k; (void)err; (void)errlen;
	return 0;
}

/* A size keyword (minLength ...): a whole number into the size_t at w->off. */
static int
kw_size(struct prop *p, const struct kw *w, const cJSON *k, char *err,
    size_t errlen)
{
	long long n;

	if (kw_int(p, k, 0, SCHEMA_INT_LIMIT, &n, err, errlen) == -1)
		return -1;
	*(size_t *)(void *)((char *)p + w->off) = (size_t)n;
	return 0;
}

/* A bound keyword (minimum, maximum): into the long long at w->off. */
static int
kw_bound(struct prop *p, const struct kw *w, const cJSON *k, char *err,
    size_t errlen)
{
	return kw_int(p, k, -SCHEMA_INT_LIMIT, SCHEMA_INT_LIMIT,
	    (long long *)(void *)((char *)p + w->off), err, errlen);
}

/* "enum": a non-empty array of strings, spelled "a, b or c" once here. */
static int
kw_enum(struct prop *p, const struct kw *w, const cJSON *k, char *err,
    size_t errlen)
{
	char text[ENUM_TEXT_MAX];
	const cJSON *e;
	size_t n, i = 0, off = 0;
	int r;

	(void)w;
	if (!cJSON_IsArray(k) || (n = (size_t)cJSON_GetArraySize(k)) == 0) {
		snprintf(err, errlen, "property '%s': 'enum' must be a non-empty "
		    "array", p->name);
		return -1;
	}
	p->enums = xcalloc(n + 1, sizeof(*p->enums));
	text[0] = '\0';
	cJSON_ArrayForEach(e, k) {
		if (!cJSON_IsString(e)) {
			snprintf(err, errlen, "property '%s': 'enum' may hold only "
			    "strings", p->name);
			return -1;
		}
		p->enums[i] = xstrdup(e->valuestring);
		r = snprintf(text + off, sizeof(text) - off, "%s%s", i == 0 ? "" :
		    i + 1 == n ? " or " : ", ", e->valuestring);
		if (r < 0 || (size_t)r >= sizeof(text) - off) {
			snprintf(err, errlen, "property '%s': 'enum' is too long to "
			    "spell out", p->name);
			return -1;
		}
		off += (size_t)r;
		i++;
	}
	p->enum_text = xstrdup(text);
	return 0;
}

static int
kw_pattern(struct prop *p, const struct kw *w, const cJSON *k, char *err,
    size_t errlen)
{
	char why[128];
	int rc;

	if (kw_note(p, w, k, err, errlen) == -1)
		return -1;
	if ((rc = regcomp(&p->re, k->valuestring, REG_EXTENDED | REG_NOSUB)) != 0) {
		regerror(rc, &p->re, why, sizeof(why));
		snprintf(err, errlen, "property '%s': 'pattern' does not compile: %s",
		    p->name, why);
		return -1;
	}
	p->pattern = xstrdup(k->valuestring);
	return 0;
}

/* "items": {"type":"integer"} with optional bounds (kept in p->min/max). */
static int
kw_items(struct prop *p, const struct kw *w, const cJSON *k, char *err,
    size_t errlen)
{
	const cJSON *m;

	(void)w;
	if (cJSON_IsObject(k) && cJSON_IsString(m =
	    cJSON_GetObjectItemCaseSensitive(k, "type")) &&
	    strcmp(m->valuestring, "object") == 0) {
		/* an array of objects (tool results) */
		return (p->sub = compile_object(k, 1, err, errlen)) == NULL ? -1 : 0;
	}
	if (!cJSON_IsObject(k) || !cJSON_IsString(m =
	    cJSON_GetObjectItemCaseSensitive(k, "type")) ||
	    strcmp(m->valuestring, "integer") != 0) {
		snprintf(err, errlen, "property '%s': only arrays of integers "
		    "(\"items\":{\"type\":\"integer\"}) or objects are "
		    "supported", p->name);
		return -1;
	}
	cJSON_ArrayForEach(m, k) {
		if (cJSON_GetObjectItemCaseSensitive(k, m->string) != m) {
			snprintf(err, errlen, "property '%s': items: '%s' appears "
			    "twice", p->name, m->string);
			return -1;
		}
		if (strcmp(m->string, "type") == 0)
			continue;
		if (strcmp(m->string, "minimum") == 0 || strcmp(m->string,
		    "maximum") == 0) {
			if (kw_int(p, m, -SCHEMA_INT_LIMIT, SCHEMA_INT_LIMIT,
			    strcmp(m->string, "minimum") == 0 ? &p->min : &p->max,
			    err, errlen) == -1)
				return -1;
		} else {
			snprintf(err, errlen, "property '%s': items: keyword '%s' is "
			    "not supported", p->name, m->string);
			return -1;
		}
	}
	return 0;
}

/* The property keywords. */
static const struct kw prop_kws[] = {
	{ "type",	 T_ANY,	kw_read_elsewhere, 0 },	/* first, by compile_prop */
	{ "description", T_ANY,	kw_note, 0 },
	{ "minLength",	 T_STR,	kw_size, offsetof(struct prop, min_len) },
	{ "maxLength",	 T_STR,	kw_size, offsetof(struct prop, max_len) },
	{ "enum",	 T_STR,	kw_enum, 0 },
	{ "pattern",	 T_STR,	kw_pattern, 0 },
	{ "minimum",	 T_INT | T_NUM, kw_bound, offsetof(struct prop, min) },
	{ "maximum",	 T_INT | T_NUM, kw_bound, offsetof(struct prop, max) },
	{ "items",	 T_ARR,	kw_items, 0 },
	{ "minItems",	 T_ARR,	kw_size, offsetof(struct prop, min_items) },
	{ "maxItems",	 T_ARR,	kw_size, offsetof(struct prop, max_items) },
	/* an object's: compile_prop reads them whole (compile_object) */
	{ "properties",	 T_OBJ,	kw_read_elsewhere, 0 },
	{ "required",	 T_OBJ,	kw_read_elsewhere, 0 },
	{ "additionalProperties", T_OBJ, kw_read_elsewhere, 0 },
};

static int check_string(const struct prop *, const cJSON *, char *, size_t);
static int check_string_value(const struct prop *, const cJSON *, int,
    char *, size_t);
static int check_integer(const struct prop *, const cJSON *, char *, size_t);
static int check_number(const struct prop *, const cJSON *, char *, size_t);
static int check_boolean(const struct prop *, const cJSON *, char *, size_t);
static int check_array(const struct prop *, const cJSON *, char *, size_t);
static int check_object(const struct prop *, const cJSON *, char *, size_t);

/* The property types: their "type" name, their noun in "missing required
 * argument", their shape check and their value check (passes 1 and 2;
 * NULL: none). */
static const struct ptype_def {
	const char	*name;
	const char	*noun;
	int		(*shape)(const struct prop *, const cJSON *, char *, size_t);
	int		(*value)(const struct prop *, const cJSON *, int, char *,
			    size_t);
} ptypes[] = {
	[P_STRING] =	{ "string",  "a string",      check_string, check_string_value },
	[P_INTEGER] =	{ "integer", "an integer",    check_integer, NULL },
	[P_BOOLEAN] =	{ "boolean", "true or false", check_boolean, NULL },
	[P_ARRAY] =	{ "array",   "an array",      check_array, NULL },
	[P_NUMBER] =	{ "number",  "a number",      check_number, NULL },
	[P_OBJECT] =	{ "object",  "an object",     check_object, NULL },
};

/*
 * The type's name: "type":"T", or "type":["T","null"] (null is what an
 * absent member means here, so it only documents that T may be null).
 */
static const char *
type_name(const cJSON *t)
{
	const cJSON *a, *b;

	if (cJSON_IsString(t))
		return t->valuestring;
	if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) != 2 ||
	    !cJSON_IsString(a = cJSON_GetArrayItem(t, 0)) ||
	    !cJSON_IsString(b = cJSON_GetArrayItem(t, 1)))
		return NULL;
	if (strcmp(b->valuestring, "null") == 0)
		return a->valuestring;
	return strcmp(a->valuestring, "null") == 0 ? b->valuestring : NULL;
}

static int
compile_prop(struct prop *p, const cJSON *js, char *err, size_t errlen)
{
	const cJSON *k;
	const char *tn;
	size_t i;

	p->max_len = SIZE_MAX;
	p->min = -SCHEMA_INT_LIMIT;
	p->max = SCHEMA_INT_LIMIT;
	p->max_items = SIZE_MAX;
	if (!cJSON_IsObject(js) || (tn = type_name(
	    cJSON_GetObjectItemCaseSensitive(js, "type"))) == NULL) {
		snprintf(err, errlen, "property '%s' needs an object with a type",
		    p->name);
		return -1;
	}
	for (i = 0; i < NELEM(ptypes); i++)
		if (strcmp(tn, ptypes[i].name) == 0)
			break;
	if (i == NELEM(ptypes)) {
		snprintf(err, errlen, "property '%s': type '%s' is not supported",
		    p->name, tn);
		return -1;
	}
	p->type = (enum ptype)i;
	cJSON_ArrayForEach(k, js) {
		for (i = 0; i < NELEM(prop_kws); i++)
			if (strcmp(k->string, prop_kws[i].name) == 0)
				break;
		if (i == NELEM(prop_kws)) {
			snprintf(err, errlen, "property '%s': keyword '%s' is not "
			    "supported", p->name, k->string);
			return -1;
		}
		if (cJSON_GetObjectItemCaseSensitive(js, k->string) != k) {
			snprintf(err, errlen, "property '%s': '%s' appears twice",
			    p->name, k->string);
			return -1;
		}
		if ((prop_kws[i].types & (1u << p->type)) == 0) {
			snprintf(err, errlen, "property '%s': '%s' does not apply to "
			    "type %s", p->name, k->string, ptypes[p->type].name);
			return -1;
		}
		if (prop_kws[i].apply(p, &prop_kws[i], k, err, errlen) == -1)
			return -1;
	}
	if (p->type == P_OBJECT &&
	    (p->sub = compile_object(js, 1, err, errlen)) == NULL)
		return -1;
	if (p->type == P_ARRAY &&
	    cJSON_GetObjectItemCaseSensitive(js, "items") == NULL) {
		snprintf(err, errlen, "property '%s': an array needs 'items'", p->name);
		return -1;
	}
	if (p->min_len > p->max_len || p->min > p->max ||
	    p->min_items > p->max_items) {
		snprintf(err, errlen, "property '%s': a lower bound is above its "
		    "upper bound", p->name);
		return -1;
	}
	return 0;
}

/* The root's members other than "properties": 0, or -1 with err. */
static int
compile_root(struct schema *sc, const cJSON *js, int nested, char *err,
    size_t errlen)
{
	const cJSON *k, *v;
	struct prop *p;
	size_t i;
	int closed = 0, typed = 0;

	cJSON_ArrayForEach(k, js) {
		if (cJSON_GetObjectItemCaseSensitive(js, k->string) != k) {
			snprintf(err, errlen, "'%s' appears twice", k->string);
			return -1;
		}
		if (strcmp(k->string, "type") == 0)
			typed = cJSON_IsString(k) && strcmp(k->valuestring, "object") == 0;
		else if (strcmp(k->string, "additionalProperties") == 0)
			closed = cJSON_IsFalse(k);
		else if (strcmp(k->string, "required") == 0) {
			if (!cJSON_IsArray(k)) {
				snprintf(err, errlen, "'required' must be an array");
				return -1;
			}
			cJSON_ArrayForEach(v, k) {
				for (i = 0, p = NULL; i < sc->nprops && p == NULL; i++)
					if (cJSON_IsString(v) &&
					    strcmp(sc->props[i].name, v->valuestring) == 0)
						p = &sc->props[i];
				if (p == NULL) {
					snprintf(err, errlen, "'required' names no property "
					    "of the schema");
					return -1;
				}
				p->required = 1;
			}
		} else if (strcmp(k->string, "properties") != 0 &&
		    (!nested || strcmp(k->string, "description") != 0))
			goto bad;
	}
	if (nested && typed && !closed &&
	    cJSON_GetObjectItemCaseSensitive(js, "additionalProperties") == NULL) {
		sc->open = 1;	/* a result's nested object may grow */
		return 0;
	}
	if (!typed || !closed) {
		snprintf(err, errlen, "the schema needs \"type\":\"object\" and "
		    "\"additionalProperties\":false");
		return -1;
	}
	return 0;
bad:
	snprintf(err, errlen, "keyword '%s' is not supported here", k->string);
	return -1;
}

struct schema *
schema_compile(const cJSON *js, char *err, size_t errlen)
{
	return compile_object(js, 0, err, errlen);
}

/* An object schema: the root (nested 0) or a property's or items'. */
static struct schema *
compile_object(const cJSON *js, int nested, char *err, size_t errlen)
{
	struct schema *sc = NULL, *ret = NULL;
	const cJSON *props, *v;
	struct prop *p;

	props = cJSON_GetObjectItemCaseSensitive(js, "properties");
	if (!cJSON_IsObject(js) || !cJSON_IsObject(props)) {
		snprintf(err, errlen, "the schema needs an object with properties");
		goto out;
	}
	sc = xcalloc(1, sizeof(*sc));
	sc->props = xcalloc((size_t)cJSON_GetArraySize(props) + 1,
	    sizeof(*sc->props));
	cJSON_ArrayForEach(v, props) {
		if (cJSON_GetObjectItemCaseSensitive(props, v->string) != v) {
			snprintf(err, errlen, "property '%s' appears twice", v->string);
			goto out;
		}
		p = &sc->props[sc->nprops++];
		p->name = xstrdup(v->string);
		if (compile_prop(p, v, err, errlen) == -1)
			goto out;
	}
	if (compile_root(sc, js, nested, err, errlen) == -1)
		goto out;
	ret = sc;
	sc = NULL;
out:
	schema_free(sc);
	return ret;
}

void
schema_free(struct schema *sc)
{
	size_t i, j;

	if (sc == NULL)
		return;
	for (i = 0; i < sc->nprops; i++) {
		struct prop *p = &sc->props[i];

		for (j = 0; p->enums != NULL && p->enums[j] != NULL; j++)
			free(p->enums[j]);
		free(p->enums);
		free(p->enum_text);
		if (p->pattern != NULL)
			regfree(&p->re);
		schema_free(p->sub);
		free(p->pattern);
		free(p->name);
	}
	free(sc->props);
	free(sc);
}

/* ---- checking ---- */

/* Shape: a string no longer than maxLength. */
static int
check_string(const struct prop *p, const cJSON *v, char *err, size_t errlen)
{
	if (cJSON_IsRaw(v)) {	/* jsonu_mark_nul: a string holding a NUL */
		snprintf(err, errlen, "argument '%s' contains a NUL character "
		    "(\\u0000), which cannot be passed on: commands, paths, ids and "
		    "file text would end at it. Remove it (a command can still "
		    "produce the byte, e.g. printf '\\0')", p->name);
		return -1;
	}
	if (!cJSON_IsString(v)) {
		snprintf(err, errlen, "argument '%s' must be a string", p->name);
		return -1;
	}
	if (strlen(v->valuestring) > p->max_len) {
		snprintf(err, errlen, "argument '%s' is too long (more than %zu "
		    "bytes)", p->name, p->max_len);
		return -1;
	}
	return 0;
}

/*
 * A string's value, after every member's shape passed: in pass 1 its
 * minLength, in pass 2 its enum and pattern.
 */
static int
check_string_value(const struct prop *p, const cJSON *v, int pass, char *err,
    size_t errlen)
{
	char shown[SHOWN_MAX];
	size_t n = strlen(v->valuestring), i;

	if (pass == 1 && n < p->min_len) {
		if (p->min_len == 1)
			snprintf(err, errlen, "argument '%s' is empty", p->name);
		else
			snprintf(err, errlen, "argument '%s' is too short (fewer than "
			    "%zu bytes)", p->name, p->min_len);
		return -1;
	}
	if (pass != 2)
		return 0;
	for (i = 0; p->enums != NULL && p->enums[i] != NULL; i++)
		if (strcmp(v->valuestring, p->enums[i]) == 0)
			break;
	if (p->enums != NULL && p->enums[i] == NULL) {
		log_escape(shown, sizeof(shown), v->valuestring, n);
		snprintf(err, errlen, "unknown %s '%s': use %s", p->name, shown,
		    p->enum_text);
		return -1;
	}
	if (p->pattern != NULL && regexec(&p->re, v->valuestring, 0, NULL, 0) != 0) {
		snprintf(err, errlen, "argument '%s' must match the pattern %s",
		    p->name, p->pattern);
		return -1;
	}
	return 0;
}

static int
check_integer(const struct prop *p, const cJSON *v, char *err, size_t errlen)
{
	long long n = 0;
	int r;

	if (!cJSON_IsNumber(v)) {
		snprintf(err, errlen, "argument '%s' must be an integer", p->name);
		return -1;
	}
	if ((r = int_value(v->valuedouble, &n)) == -1) {
		snprintf(err, errlen, "argument '%s' must be a whole number", p->name);
		return -1;
	}
	if (r == 1 || n < p->min || n > p->max) {
		snprintf(err, errlen, "argument '%s' must be between %lld and %lld",
		    p->name, p->min, p->max);
		return -1;
	}
	return 0;
}

static int
check_number(const struct prop *p, const cJSON *v, char *err, size_t errlen)
{
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
		snprintf(err, errlen, "argument '%s' must be a number", p->name);
		return -1;
	}
	if (v->valuedouble < (double)p->min || v->valuedouble > (double)p->max) {
		snprintf(err, errlen, "argument '%s' must be between %lld and %lld",
		    p->name, p->min, p->max);
		return -1;
	}
	return 0;
}

static int
check_boolean(const struct prop *p, const cJSON *v, char *err, size_t errlen)
{
	if (!cJSON_IsBool(v)) {
		snprintf(err, errlen, "argument '%s' must be true or false", p->name);
		return -1;
	}
	return 0;
}

static int
check_array(const struct prop *p, const cJSON *v, char *err, size_t errlen)
{
	const cJSON *e;
	size_t n = 0;
	long long x = 0;
	int bad = !cJSON_IsArray(v), w;

	if (!bad) {
		n = (size_t)cJSON_GetArraySize(v);
		bad = n < p->min_items || n > p->max_items;
	}
	for (e = bad ? NULL : v->child; e != NULL && !bad; e = e->next) {
		if (p->sub != NULL) {	/* objects */
			if (schema_check(p->sub, e, err, errlen) == -1)
				return -1;
			continue;
		}
		bad = !cJSON_IsNumber(e) || int_value(e->valuedouble, &x) != 0 ||
		    x < p->min || x > p->max;
	}
	if (!bad)
		return 0;
	if (p->sub != NULL) {
		snprintf(err, errlen, "argument '%s' must be an array of objects",
		    p->name);
		return -1;
	}
	if (p->min_items == 0 && p->max_items == SIZE_MAX)
		w = snprintf(err, errlen, "argument '%s' must be an array of "
		    "integers", p->name);
	else if (p->min_items == p->max_items)
		w = snprintf(err, errlen, "argument '%s' must be an array of %zu "
		    "integers", p->name, p->min_items);
	else if (p->max_items == SIZE_MAX)
		w = snprintf(err, errlen, "argument '%s' must be an array of at "
		    "least %zu integers", p->name, p->min_items);
	else
		w = snprintf(err, errlen, "argument '%s' must be an array of %zu to "
		    "%zu integers", p->name, p->min_items, p->max_items);
	if (w >= 0 && (size_t)w < errlen &&
	    (p->min != -SCHEMA_INT_LIMIT || p->max != SCHEMA_INT_LIMIT))
		snprintf(err + w, errlen - (size_t)w, " between %lld and %lld",
		    p->min, p->max);
	return -1;
}

/* An object member: the nested schema's checks. */
static int
check_object(const struct prop *p, const cJSON *v, char *err, size_t errlen)
{
	if (!cJSON_IsObject(v)) {
		snprintf(err, errlen, "argument '%s' must be an object", p->name);
		return -1;
	}
	return schema_check(p->sub, v, err, errlen);
}

int
schema_check(const struct schema *sc, const cJSON *args, char *err,
    size_t errlen)
{
	char shown[SHOWN_MAX];
	const struct prop *p;
	const cJSON *v;
	size_t i;
	int pass;

	if (!cJSON_IsObject(args)) {
		snprintf(err, errlen, "the arguments must be an object");
		return -1;
	}
	cJSON_ArrayForEach(v, args) {
		if (sc->open)
			break;
		for (i = 0; i < sc->nprops; i++)
			if (v->string != NULL && strcmp(v->string, sc->props[i].name) == 0)
				break;
		if (i == sc->nprops) {
			log_escape(shown, sizeof(shown), v->string ? v->string : "",
			    v->string ? strlen(v->string) : 0);
			snprintf(err, errlen, "unknown argument '%s'", shown);
			return -1;
		}
	}
	for (i = 0; i < sc->nprops; i++) {
		p = &sc->props[i];
		v = cJSON_GetObjectItemCaseSensitive(args, p->name);
		if (v == NULL || cJSON_IsNull(v)) {
			if (p->required) {
				snprintf(err, errlen, "missing required argument '%s' (%s)",
				    p->name, ptypes[p->type].noun);
				return -1;
			}
			continue;
		}
		if (ptypes[p->type].shape(p, v, err, errlen) == -1)
			return -1;
	}
	for (pass = 1; pass <= 2; pass++)
		for (i = 0; i < sc->nprops; i++) {
			p = &sc->props[i];
			v = cJSON_GetObjectItemCaseSensitive(args, p->name);
			if (v != NULL && !cJSON_IsNull(v) &&
			    ptypes[p->type].value != NULL &&
			    ptypes[p->type].value(p, v, pass, err, errlen) == -1)
				return -1;
		}
	return 0;
}

/* ---- getters ---- */

const char *
schema_str(const cJSON *args, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static long long
int_or(const cJSON *v, long long def)
{
	long long n;

	return v != NULL && cJSON_IsNumber(v) &&
	    int_value(v->valuedouble, &n) == 0 ? n : def;
}

long long
schema_int(const cJSON *args, const char *name, long long def)
{
	return int_or(cJSON_GetObjectItemCaseSensitive(args, name), def);
}

int
schema_bool(const cJSON *args, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
}

long long
schema_int_item(const cJSON *args, const char *name, int i, long long def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

	return int_or(cJSON_IsArray(v) ? cJSON_GetArrayItem(v, i) : NULL, def);
}
