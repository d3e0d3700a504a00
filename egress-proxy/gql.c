/*
 * gql.c: the GraphQL request judge (see gql.h for what it reads and why
 * it refuses). Three layers, each reading one thing:
 *   JSON    a strict reader of the envelope (j_*): every object's keys
 *           are collected and sorted at its end to find a key twice; the
 *           envelope's members go to req_member, the rest is validated.
 *   lexer   lex(): one GraphQL token at a time over the decoded "query".
 *   parser  p_*(): recursive descent over executable definitions; the
 *           root selections of every operation and fragment (fields by
 *           their name, spreads by the fragment's) are kept as items, the
 *           rest is only checked.
 * Then judge_def() applies the rules to every mutation's root items,
 * following spreads. Recursion is bounded by GQL_DEPTH_MAX and
 * GQL_SPREAD_DEPTH_MAX, time by GQL_TOKENS_MAX and GQL_BYTES_MAX. A
 * function returns 0 or -1; -1 means the verdict is set (GQL_BAD with its
 * reason, or GQL_DENY with its field), and the first verdict stays.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attrib.h"
#include "buf.h"
#include "digest.h"
#include "gql.h"
#include "strnum.h"
#include "xmalloc.h"

struct gql_rules {
	int	 mutations;	/* 0: none; 1: allowed (only the allow-list's when has_allow) */
	int	 has_allow;
	char	**allow;
	size_t	 nallow;
};

/* A root selection of a definition: a field (by its name) or a fragment spread. */
struct item {
	size_t	 o, l;		/* the name, in the document */
	int	 spread;
};

enum dkind { DK_QUERY, DK_MUTATION, DK_SUBSCRIPTION, DK_FRAGMENT };

struct def {
	enum dkind	 kind;
	size_t		 name_o, name_l;	/* fragments: the name */
	size_t		 item0, nitem;		/* its root selections in items[] */
	int		 mark;			/* spreads: 0 new, 1 on the path, 2 judged */
};

/* Tokens: a punctuator is its own byte; the rest are these. */
enum { TK_EOF = 256, TK_NAME, TK_INT, TK_FLOAT, TK_STRING, TK_SPREAD };

/* A key of a JSON object being read (in struct judge keyb). */
struct jkey {
	size_t	 o, l;
};

/* One call of gql_judge: the input, the verdict and scratch space. */
struct judge {
	const struct gql_rules	*r;
	struct gql_verdict	*v;
	unsigned long		 tokens;	/* GraphQL tokens so far, over the whole body */
	const char		*s;		/* the JSON body */
	size_t			 n, i;
	struct buf		 keyb;		/* decoded keys of the objects open */
	struct jkey		*keys;
	size_t			 nkeys, capkeys;
	struct buf		 doc;		/* a decoded "query" */
	struct buf		 hash;		/* a decoded persistedQuery.sha256Hash */
	gql_str_fn		 strfn;		/* gql_json_strings: each string value */
	void			*strarg;
	struct buf		 str;		/* ... decoded */
};

/* One GraphQL document being read. */
struct doc {
	struct judge	*j;
	const char	*s;
	size_t		 n, i;
	int		 tk;		/* the current token */
	size_t		 to, tl;	/* its text */
	struct def	*defs;
	size_t		 ndefs, capdefs;
	struct item	*items;
	size_t		 nitems, capitems;
	size_t		*frags;		/* the fragments' indexes in defs, sorted by name */
	size_t		 nfrags;
};

/* The envelope members seen in one request object. */
struct reqst {
	int	 query;		/* a "query" string was read (into judge doc) */
	int	 persisted;	/* extensions.persistedQuery is an object */
	int	 hashed;	/* ... with a sha256Hash (in judge hash) */
};

static int PRINTF(2, 3)
bad(struct judge *j, const char *fmt, ...)
{
	va_list ap;

	if (j->v->res == GQL_PASS) {
		j->v->res = GQL_BAD;
		va_start(ap, fmt);
		vsnprintf(j->v->why, sizeof(j->v->why), fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Input bytes for a reason: printable ASCII but quotes and backslashes, at most 40. */
static const char *
show(const char *s, size_t n, char *out, size_t outlen)
{
	size_t i, o = 0;

	for (i = 0; i < n && o + 4 < outlen && i < 40; i++)
		out[o++] = (char)(s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\' ? s[i] : '?');
	if (i < n && o + 4 < outlen)
		o += (size_t)snprintf(out + o, outlen - o, "...");
	out[o] = '\0';
	return out;
}

/*
 * The UTF-8 sequence at s[i] (s holds n bytes): its length, with its code
 * point in *cp; 0 if malformed (cut, overlong, a surrogate, past U+10FFFF).
 */
static size_t
utf8_len(const unsigned char *s, size_t n, size_t i, uint32_t *cp)
{
	unsigned char c = s[i];
	uint32_t v, min;
	size_t k, len;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		v = c & 0x1fu;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		v = c & 0x0fu;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		v = c & 0x07u;
		min = 0x10000;
	} else
		return 0;
	if (n - i < len)
		return 0;
	for (k = 1; k < len; k++) {
		if ((s[i + k] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i + k] & 0x3fu);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* Writes code point cp (a scalar value) as UTF-8 into out (4 bytes); its length. */
static size_t
utf8_put(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}


/* The 4 hex digits at p (avail bytes there): their value, -1 if not. */
static long
hex4(const char *p, size_t avail)
{
	long v = 0;
	int k, h;

	if (avail < 4)
		return -1;
	for (k = 0; k < 4; k++) {
		if ((h = strnum_hexdigit((unsigned char)p[k])) == -1)
			return -1;
		v = v << 4 | h;
	}
	return v;
}

/* ---- JSON (RFC 8259, strict) ---- */

static void
j_ws(struct judge *j)
{
	while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' ||
	    j->s[j->i] == '\r'))
		j->i++;
}

/* The escape at s[i] ('\\'): its length with its code point in *cp, 0 if bad. */
static size_t
j_escape(struct judge *j, size_t i, uint32_t *cp)
{
	long h, l;

	if (i + 1 >= j->n) {
		bad(j, "JSON: unterminated string");
		return 0;
	}
	switch (j->s[i + 1]) {
	case '"':
	case '\\':
	case '/':
		*cp = (unsigned char)j->s[i + 1];
		return 2;
	case 'b':
		*cp = '\b';
		return 2;
	case 'f':
		*cp = '\f';
		return 2;
	case 'n':
		*cp = '\n';
		return 2;
	case 'r':
		*cp = '\r';
		return 2;
	case 't':
		*cp = '\t';
		return 2;
	case 'u':
		if ((h = hex4(j->s + i + 2, j->n - i - 2)) == -1)
			break;
		if (h >= 0xdc00 && h <= 0xdfff) {
			bad(j, "JSON: a lone surrogate escape (\\u%04lx)", h);
			return 0;
		}
		if (h < 0xd800 || h > 0xdbff) {
			*cp = (uint32_t)h;
			return 6;
		}
		if (j->n - i < 12 || j->s[i + 6] != '\\' || j->s[i + 7] != 'u' ||
		    (l = hex4(j->s + i + 8, 4)) < 0xdc00 || l > 0xdfff) {
			bad(j, "JSON: a lone surrogate escape (\\u%04lx)", h);
			return 0;
		}
		*cp = 0x10000 + (uint32_t)((h - 0xd800) << 10) + (uint32_t)(l - 0xdc00);
		return 12;
	default:
		break;
	}
	bad(j, "JSON: a bad escape in a string");
	return 0;
}

/*
 * Reads the string at s[i] ('"'), decoding it into out (NULL: checks it
 * only): raw bytes must be UTF-8 and no control characters.
 */
static int
j_string(struct judge *j, struct buf *out)
{
	const unsigned char *s = (const unsigned char *)j->s;
	size_t i = j->i + 1, run = i, len;
	uint32_t cp;
	char u[4];

	for (;;) {
		if (i >= j->n)
			return bad(j, "JSON: unterminated string");
		if (s[i] == '"' || s[i] == '\\') {
			if (out != NULL && i > run && buf_add(out, j->s + run, i - run) == -1)
				return bad(j, "JSON: a string too long");
			if (s[i] == '"')
				break;
			if ((len = j_escape(j, i, &cp)) == 0)
				return -1;
			if (out != NULL && buf_add(out, u, utf8_put(cp, u)) == -1)
				return bad(j, "JSON: a string too long");
			i += len;
			run = i;
		} else if (s[i] < 0x20)
			return bad(j, "JSON: a control character in a string");
		else if ((len = utf8_len(s, j->n, i, &cp)) == 0)
			return bad(j, "JSON: not UTF-8 at byte %zu", i);
		else
			i += len;
	}
	j->i = i + 1;
	return 0;
}

static int
j_word(struct judge *j, const char *w)
{
	size_t l = strlen(w);

	if (j->n - j->i < l || memcmp(j->s + j->i, w, l) != 0)
		return bad(j, "JSON: a bad value at byte %zu", j->i);
	j->i += l;
	return 0;
}

static int
digit(int c)
{
	return c >= '0' && c <= '9';
}

static int
j_number(struct judge *j)
{
	const char *s = j->s;
	size_t i = j->i, n = j->n;

	if (i < n && s[i] == '-')
		i++;
	if (i >= n || !digit(s[i]))
		return bad(j, "JSON: a bad value at byte %zu", j->i);
	if (s[i] == '0')
		i++;
	else
		while (i < n && digit(s[i]))
			i++;
	if (i < n && s[i] == '.') {
		if (++i >= n || !digit(s[i]))
			return bad(j, "JSON: a bad number at byte %zu", j->i);
		while (i < n && digit(s[i]))
			i++;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= n || !digit(s[i]))
			return bad(j, "JSON: a bad number at byte %zu", j->i);
		while (i < n && digit(s[i]))
			i++;
	}
	j->i = i;
	return 0;
}

static int
key_cmp(const void *a, const void *b, void *arg)
{
	const struct jkey *x = a, *y = b;
	const char *p = arg;
	int c = memcmp(p + x->o, p + y->o, x->l < y->l ? x->l : y->l);

	if (c != 0)
		return c;
	return x->l < y->l ? -1 : x->l > y->l;
}

/* The keys from k0 on (one object's): a key twice is unjudgeable. */
static int
j_dups(struct judge *j, size_t k0)
{
	size_t k;
	char sh[64];

	if (j->nkeys - k0 < 2)
		return 0;
	qsort_r(j->keys + k0, j->nkeys - k0, sizeof(*j->keys), key_cmp, j->keyb.p);
	for (k = k0 + 1; k < j->nkeys; k++)
		if (key_cmp(&j->keys[k - 1], &j->keys[k], j->keyb.p) == 0)
			return bad(j, "JSON: key \"%s\" twice in one object (parsers disagree on which "
			    "one counts)", show(j->keyb.p + j->keys[k].o, j->keys[k].l, sh, sizeof(sh)));
	return 0;
}

/*
 * What an object's member means to the reader of that object: 1 it read
 * the value itself, 0 the value is read generically, -1 refused.
 */
typedef int (*j_member_fn)(struct judge *, const char *key, size_t kl, int depth, void *arg);

static int j_value(struct judge *j, int depth);

/* Reads the object at s[i] ('{'); each member goes to fn (NULL: all generic). */
static int
j_object(struct judge *j, int depth, j_member_fn fn, void *arg)
{
	size_t k0 = j->nkeys, b0 = j->keyb.len, ko;
	int rc = -1, r;

	if (depth > GQL_DEPTH_MAX)
		return bad(j, "JSON nested deeper than %d levels", GQL_DEPTH_MAX);
	j->i++;
	j_ws(j);
	if (j->i < j->n && j->s[j->i] == '}') {
		j->i++;
		return 0;
	}
	for (;;) {
		j_ws(j);
		if (j->i >= j->n || j->s[j->i] != '"') {
			bad(j, "JSON: a key expected at byte %zu", j->i);
			goto out;
		}
		ko = j->keyb.len;
		if (j_string(j, &j->keyb) == -1)
			goto out;
		if (j->nkeys == j->capkeys) {
			j->capkeys = j->capkeys != 0 ? j->capkeys * 2 : 32;
			j->keys = xreallocarray(j->keys, j->capkeys, sizeof(*j->keys));
		}
		j->keys[j->nkeys].o = ko;
		j->keys[j->nkeys++].l = j->keyb.len - ko;
		j_ws(j);
		if (j->i >= j->n || j->s[j->i] != ':') {
			bad(j, "JSON: `:` expected at byte %zu", j->i);
			goto out;
		}
		j->i++;
		j_ws(j);
		if (j->i >= j->n) {
			bad(j, "JSON: a value expected at the end");	/* members may look at s[i] */
			goto out;
		}
		r = fn != NULL ? fn(j, j->keyb.p + ko, j->keyb.len - ko, depth, arg) : 0;
		if (r == -1 || (r == 0 && j_value(j, depth + 1) == -1))
			goto out;
		j_ws(j);
		if (j->i < j->n && j->s[j->i] == ',') {
			j->i++;
			continue;
		}
		if (j->i < j->n && j->s[j->i] == '}') {
			j->i++;
			break;
		}
		bad(j, "JSON: `,` or `}` expected at byte %zu", j->i);
		goto out;
	}
	rc = j_dups(j, k0);
out:
	j->nkeys = k0;
	j->keyb.len = b0;
	if (j->keyb.p != NULL)
		j->keyb.p[b0] = '\0';
	return rc;
}

static int
j_array(struct judge *j, int depth)
{
	if (depth > GQL_DEPTH_MAX)
		return bad(j, "JSON nested deeper than %d levels", GQL_DEPTH_MAX);
	j->i++;
	j_ws(j);
	if (j->i < j->n && j->s[j->i] == ']') {
		j->i++;
		return 0;
	}
	for (;;) {
		if (j_value(j, depth + 1) == -1)
			return -1;
		j_ws(j);
		if (j->i < j->n && j->s[j->i] == ',') {
			j->i++;
			continue;
		}
		if (j->i < j->n && j->s[j->i] == ']') {
			j->i++;
			return 0;
		}
		return bad(j, "JSON: `,` or `]` expected at byte %zu", j->i);
	}
}

static int
j_value(struct judge *j, int depth)
{
	j_ws(j);
	if (j->i >= j->n)
		return bad(j, "JSON: a value expected at the end");
	switch (j->s[j->i]) {
	case '{':
		return j_object(j, depth, NULL, NULL);
	case '[':
		return j_array(j, depth);
	case '"':
		if (j->strfn == NULL)
			return j_string(j, NULL);
		buf_reset(&j->str);
		if (j_string(j, &j->str) == -1)
			return -1;
		if (j->strfn(j->strarg, j->str.p != NULL ? j->str.p : "", j->str.len, j->v->why,
		    sizeof(j->v->why)) != 0) {
			j->v->res = GQL_DENY;
			return -1;
		}
		return 0;
	case 't':
		return j_word(j, "true");
	case 'f':
		return j_word(j, "false");
	case 'n':
		return j_word(j, "null");
	default:
		return j_number(j);
	}
}

static int
is_key(const char *k, size_t kl, const char *name)
{
	return kl == strlen(name) && memcmp(k, name, kl) == 0;
}

/* extensions.persistedQuery's members: its sha256Hash is kept. */
static int
pq_member(struct judge *j, const char *k, size_t kl, int depth, void *arg)
{
	struct reqst *rs = arg;

	(void)depth;
	if (!is_key(k, kl, "sha256Hash"))
		return 0;
	if (j->s[j->i] != '"')
		return bad(j, "extensions.persistedQuery.sha256Hash must be a string");
	buf_reset(&j->hash);
	if (j_string(j, &j->hash) == -1)
		return -1;
	rs->hashed = 1;
	return 1;
}

/* extensions' members: persistedQuery is looked at, the rest only checked. */
static int
ext_member(struct judge *j, const char *k, size_t kl, int depth, void *arg)
{
	struct reqst *rs = arg;

	if (!is_key(k, kl, "persistedQuery"))
		return 0;
	if (j->s[j->i] == 'n')
		return j_word(j, "null") == -1 ? -1 : 1;
	if (j->s[j->i] != '{')
		return bad(j, "extensions.persistedQuery must be an object");
	rs->persisted = 1;
	return j_object(j, depth + 1, pq_member, rs) == -1 ? -1 : 1;
}

/* Names under which servers take a stored document instead of "query". */
static const char *const persisted_ids[] = { "id", "documentId", "doc_id", "queryId",
	"query_id", "persistedQueryId", "hash" };

/* The envelope's members (an object of a request or of a batch). */
static int
req_member(struct judge *j, const char *k, size_t kl, int depth, void *arg)
{
	struct reqst *rs = arg;
	char sh[64];
	size_t i;

	if (is_key(k, kl, "query")) {
		if (j->s[j->i] == 'n')
			return j_word(j, "null") == -1 ? -1 : 1;
		if (j->s[j->i] != '"')
			return bad(j, "query must be a string");
		buf_reset(&j->doc);
		if (j_string(j, &j->doc) == -1)
			return -1;
		rs->query = 1;
		return 1;
	}
	if (is_key(k, kl, "operationName")) {
		if (j->s[j->i] == 'n')
			return j_word(j, "null") == -1 ? -1 : 1;
		if (j->s[j->i] != '"')
			return bad(j, "operationName must be a string or null");
		return j_string(j, NULL) == -1 ? -1 : 1;
	}
	if (is_key(k, kl, "variables"))
		return 0;
	if (is_key(k, kl, "extensions")) {
		if (j->s[j->i] == 'n')
			return j_word(j, "null") == -1 ? -1 : 1;
		if (j->s[j->i] != '{')
			return bad(j, "extensions must be an object or null");
		return j_object(j, depth + 1, ext_member, rs) == -1 ? -1 : 1;
	}
	for (i = 0; i < NELEM(persisted_ids); i++)
		if (is_key(k, kl, persisted_ids[i]))
			return bad(j, "a persisted query (\"%s\"): the proxy cannot see its document",
			    persisted_ids[i]);
	return bad(j, "unknown member \"%s\" in the GraphQL request (only query, operationName, "
	    "variables and extensions are judged)", show(k, kl, sh, sizeof(sh)));
}

static int doc_judge(struct judge *j, const char *s, size_t n);

/* 1 if hex (n bytes) is the SHA-256 of s (sl bytes), in hex of either case. */
static int
hash_matches(const char *hex, size_t n, const char *s, size_t sl)
{
	char want[DIGEST_SHA256_HEX + 1];

	return n == DIGEST_SHA256_HEX && digest_sha256_hex(s, sl, want) == 0 &&
	    strncasecmp(hex, want, DIGEST_SHA256_HEX) == 0;
}

/* Reads one request object at s[i] and judges its document. */
static int
j_request(struct judge *j, int depth)
{
	struct reqst rs;

	memset(&rs, 0, sizeof(rs));
	j_ws(j);
	if (j->i >= j->n || j->s[j->i] != '{')
		return bad(j, "a GraphQL request must be a JSON object");
	if (j_object(j, depth, req_member, &rs) == -1)
		return -1;
	if (!rs.query)
		return bad(j, rs.persisted ? "a persisted query without its query: the proxy cannot "
		    "see the document" : "no query in the GraphQL request");
	if (rs.persisted && (!rs.hashed || !hash_matches(j->hash.p != NULL ? j->hash.p : "",
	    j->hash.len, j->doc.p != NULL ? j->doc.p : "", j->doc.len)))
		return bad(j, "extensions.persistedQuery.sha256Hash is not the SHA-256 of the "
		    "query sent with it");
	return doc_judge(j, j->doc.p != NULL ? j->doc.p : "", j->doc.len);
}

static int
j_batch(struct judge *j)
{
	size_t k = 0;

	j->i++;
	j_ws(j);
	if (j->i < j->n && j->s[j->i] == ']')
		return bad(j, "an empty batch");
	for (;;) {
		if (++k > GQL_BATCH_MAX)
			return bad(j, "more than %d requests in one batch", GQL_BATCH_MAX);
		if (j_request(j, 2) == -1)
			return -1;
		j_ws(j);
		if (j->i < j->n && j->s[j->i] == ',') {
			j->i++;
			continue;
		}
		if (j->i < j->n && j->s[j->i] == ']') {
			j->i++;
			return 0;
		}
		return bad(j, "JSON: `,` or `]` expected at byte %zu", j->i);
	}
}

/* ---- the GraphQL lexer (spec, October 2021, section 2.1) ---- */

static int
name_start(int c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
name_cont(int c)
{
	return name_start(c) || digit(c);
}

/*
 * The source character at s[i] inside a comment or a string: its length,
 * 0 if refused. lt: line terminators allowed (block strings).
 */
static size_t
doc_char(struct doc *d, int lt)
{
	const unsigned char *s = (const unsigned char *)d->s;
	uint32_t cp;
	size_t len;

	if (s[d->i] < 0x20 && s[d->i] != '\t' && !(lt && (s[d->i] == '\n' || s[d->i] == '\r'))) {
		bad(d->j, "GraphQL: control character 0x%02x at byte %zu", s[d->i], d->i);
		return 0;
	}
	if ((len = utf8_len(s, d->n, d->i, &cp)) == 0) {
		bad(d->j, "GraphQL: not UTF-8 at byte %zu", d->i);
		return 0;
	}
	if (cp == 0x85 || cp == 0x2028 || cp == 0x2029) {
		bad(d->j, "GraphQL: U+%04X (a line end to some readers) at byte %zu", (unsigned)cp,
		    d->i);
		return 0;
	}
	return len;
}

static int
lex_number(struct doc *d)
{
	const char *s = d->s;
	size_t n = d->n;

	d->tk = TK_INT;
	if (s[d->i] == '-')
		d->i++;
	if (d->i >= n || !digit(s[d->i]))
		return bad(d->j, "GraphQL: a bad number at byte %zu", d->to);
	if (s[d->i] == '0')
		d->i++;
	else
		while (d->i < n && digit(s[d->i]))
			d->i++;
	if (d->i < n && s[d->i] == '.') {
		d->tk = TK_FLOAT;
		if (++d->i >= n || !digit(s[d->i]))
			return bad(d->j, "GraphQL: a bad number at byte %zu", d->to);
		while (d->i < n && digit(s[d->i]))
			d->i++;
	}
	if (d->i < n && (s[d->i] == 'e' || s[d->i] == 'E')) {
		d->tk = TK_FLOAT;
		if (++d->i < n && (s[d->i] == '+' || s[d->i] == '-'))
			d->i++;
		if (d->i >= n || !digit(s[d->i]))
			return bad(d->j, "GraphQL: a bad number at byte %zu", d->to);
		while (d->i < n && digit(s[d->i]))
			d->i++;
	}
	/* A number may not run into a digit, a `.` or a name. */
	if (d->i < n && (digit(s[d->i]) || s[d->i] == '.' || name_start(s[d->i])))
		return bad(d->j, "GraphQL: a bad number at byte %zu", d->to);
	return 0;
}

/* \u escape of a GraphQL string at s[i] ('\\'): its length, 0 if bad. */
static size_t
lex_unicode(struct doc *d, size_t i)
{
	const char *s = d->s;
	unsigned long v = 0;
	long h, l;
	size_t k;

	if (i + 2 < d->n && s[i + 2] == '{') {
		for (k = i + 3; k < d->n && strnum_hexdigit((unsigned char)s[k]) != -1; k++)
			if ((v = v << 4 | (unsigned long)strnum_hexdigit((unsigned char)s[k])) > 0x10ffff)
				break;
		if (k == i + 3 || k >= d->n || s[k] != '}' || v > 0x10ffff ||
		    (v >= 0xd800 && v <= 0xdfff))
			goto bad;
		return k + 1 - i;
	}
	if ((h = hex4(s + i + 2, d->n - i - 2)) == -1 || (h >= 0xdc00 && h <= 0xdfff))
		goto bad;
	if (h < 0xd800 || h > 0xdbff)
		return 6;
	if (d->n - i >= 12 && s[i + 6] == '\\' && s[i + 7] == 'u' &&
	    (l = hex4(s + i + 8, 4)) >= 0xdc00 && l <= 0xdfff)
		return 12;
bad:
	bad(d->j, "GraphQL: a bad \\u escape at byte %zu", i);
	return 0;
}

static int
lex_string(struct doc *d)
{
	const char *s = d->s;
	size_t len;

	d->tk = TK_STRING;
	if (d->n - d->i >= 3 && memcmp(s + d->i, "\"\"\"", 3) == 0) {
		/* A block string: only \""" is an escape. */
		for (d->i += 3;;) {
			if (d->i >= d->n)
				return bad(d->j, "GraphQL: unterminated block string at byte %zu", d->to);
			if (d->n - d->i >= 3 && memcmp(s + d->i, "\"\"\"", 3) == 0) {
				d->i += 3;
				return 0;
			}
			if (d->n - d->i >= 4 && memcmp(s + d->i, "\\\"\"\"", 4) == 0) {
				d->i += 4;
				continue;
			}
			if ((len = doc_char(d, 1)) == 0)
				return -1;
			d->i += len;
		}
	}
	for (d->i++;;) {
		if (d->i >= d->n || s[d->i] == '\n' || s[d->i] == '\r')
			return bad(d->j, "GraphQL: unterminated string at byte %zu", d->to);
		if (s[d->i] == '"') {
			d->i++;
			return 0;
		}
		if (s[d->i] == '\\') {
			if (d->i + 1 >= d->n)
				return bad(d->j, "GraphQL: unterminated string at byte %zu", d->to);
			if (s[d->i + 1] != '\0' && strchr("\"\\/bfnrt", s[d->i + 1]) != NULL)
				len = 2;
			else if (s[d->i + 1] == 'u')
				len = lex_unicode(d, d->i);
			else
				return bad(d->j, "GraphQL: a bad escape at byte %zu", d->i);
			if (len == 0)
				return -1;
			d->i += len;
			continue;
		}
		if ((len = doc_char(d, 0)) == 0)
			return -1;
		d->i += len;
	}
}

/* Moves to the next token (d->tk, d->to, d->tl); ignored tokens are skipped. */
static int
lex(struct doc *d)
{
	const unsigned char *s = (const unsigned char *)d->s;
	size_t len;
	int c;

	for (;;) {
		if (d->i >= d->n) {
			d->tk = TK_EOF;
			d->to = d->i;
			d->tl = 0;
			return 0;
		}
		c = s[d->i];
		if (c == ' ' || c == '\t' || c == ',' || c == '\n' || c == '\r')
			d->i++;
		else if (c == '#') {
			for (d->i++; d->i < d->n && s[d->i] != '\n' && s[d->i] != '\r'; d->i += len)
				if ((len = doc_char(d, 0)) == 0)
					return -1;
		} else if (c == 0xef && d->n - d->i >= 3 && s[d->i + 1] == 0xbb && s[d->i + 2] == 0xbf)
			d->i += 3;	/* U+FEFF, a BOM: ignored anywhere */
		else
			break;
	}
	if (++d->j->tokens > GQL_TOKENS_MAX)
		return bad(d->j, "more than %d GraphQL tokens", GQL_TOKENS_MAX);
	d->to = d->i;
	if (c != '\0' && strchr("!$&():=@[]{|}", c) != NULL) {
		d->tk = c;
		d->i++;
	} else if (c == '.') {
		if (d->n - d->i < 3 || s[d->i + 1] != '.' || s[d->i + 2] != '.')
			return bad(d->j, "GraphQL: `.` that is not `...` at byte %zu", d->i);
		d->tk = TK_SPREAD;
		d->i += 3;
	} else if (name_start(c)) {
		while (d->i < d->n && name_cont(s[d->i]))
			d->i++;
		d->tk = TK_NAME;
	} else if (c == '-' || digit(c)) {
		if (lex_number(d) == -1)
			return -1;
	} else if (c == '"') {
		if (lex_string(d) == -1)
			return -1;
	} else
		return bad(d->j, "GraphQL: unexpected %s 0x%02x at byte %zu", c < 0x20 ?
		    "control character" : "character", (unsigned)c, d->i);
	d->tl = d->i - d->to;
	return 0;
}

/* ---- the parser (spec section 2: executable definitions) ---- */

static int
syntax(struct doc *d, const char *what)
{
	return bad(d->j, "GraphQL syntax error at byte %zu: %s expected", d->to, what);
}

static int
deep(struct doc *d)
{
	return bad(d->j, "GraphQL nested deeper than %d levels", GQL_DEPTH_MAX);
}

/* Moves past the current token if it is tk. */
static int
want(struct doc *d, int tk, const char *what)
{
	if (d->tk != tk)
		return syntax(d, what);
	return lex(d);
}

static int
is_kw(const struct doc *d, const char *kw)
{
	size_t l = strlen(kw);

	return d->tk == TK_NAME && d->tl == l && memcmp(d->s + d->to, kw, l) == 0;
}

static void
add_item(struct doc *d, size_t o, size_t l, int spread)
{
	if (d->nitems == d->capitems) {
		d->capitems = d->capitems != 0 ? d->capitems * 2 : 32;
		d->items = xreallocarray(d->items, d->capitems, sizeof(*d->items));
	}
	d->items[d->nitems].o = o;
	d->items[d->nitems].l = l;
	d->items[d->nitems++].spread = spread;
}

/* A value; cnst: no variables (default values, variable directives). */
static int
p_value(struct doc *d, int cnst, int depth)
{
	if (depth > GQL_DEPTH_MAX)
		return deep(d);
	switch (d->tk) {
	case '$':
		if (cnst)
			return syntax(d, "a constant value");
		if (lex(d) == -1)
			return -1;
		return want(d, TK_NAME, "a variable name");
	case TK_INT:
	case TK_FLOAT:
	case TK_STRING:
	case TK_NAME:		/* true, false, null or an enum value */
		return lex(d);
	case '[':
		if (lex(d) == -1)
			return -1;
		while (d->tk != ']')
			if (p_value(d, cnst, depth + 1) == -1)
				return -1;
		return lex(d);
	case '{':
		if (lex(d) == -1)
			return -1;
		while (d->tk != '}')
			if (want(d, TK_NAME, "an input field name") == -1 || want(d, ':', "`:`") == -1 ||
			    p_value(d, cnst, depth + 1) == -1)
				return -1;
		return lex(d);
	default:
		return syntax(d, "a value");
	}
}

/* (name: value, ...): at least one. */
static int
p_args(struct doc *d, int cnst, int depth)
{
	if (depth > GQL_DEPTH_MAX)
		return deep(d);
	if (lex(d) == -1)
		return -1;
	if (d->tk == ')')
		return syntax(d, "an argument");
	while (d->tk != ')')
		if (want(d, TK_NAME, "an argument name") == -1 || want(d, ':', "`:`") == -1 ||
		    p_value(d, cnst, depth + 1) == -1)
			return -1;
	return lex(d);
}

/* @name(args) ...: read, never obeyed (a skipped field counts all the same). */
static int
p_directives(struct doc *d, int cnst, int depth)
{
	while (d->tk == '@') {
		if (lex(d) == -1 || want(d, TK_NAME, "a directive name") == -1)
			return -1;
		if (d->tk == '(' && p_args(d, cnst, depth + 1) == -1)
			return -1;
	}
	return 0;
}

static int
p_type(struct doc *d, int depth)
{
	if (depth > GQL_DEPTH_MAX)
		return deep(d);
	if (d->tk == '[') {
		if (lex(d) == -1 || p_type(d, depth + 1) == -1 || want(d, ']', "`]`") == -1)
			return -1;
	} else if (want(d, TK_NAME, "a type") == -1)
		return -1;
	return d->tk == '!' ? lex(d) : 0;
}

/* ($name: Type = default @directives, ...): at least one. */
static int
p_vardefs(struct doc *d)
{
	if (lex(d) == -1)
		return -1;
	if (d->tk == ')')
		return syntax(d, "a variable definition");
	while (d->tk != ')') {
		if (want(d, '$', "`$`") == -1 || want(d, TK_NAME, "a variable name") == -1 ||
		    want(d, ':', "`:`") == -1 || p_type(d, 2) == -1)
			return -1;
		if (d->tk == '=' && (lex(d) == -1 || p_value(d, 1, 2) == -1))
			return -1;
		if (p_directives(d, 1, 2) == -1)
			return -1;
	}
	return lex(d);
}

static int p_selection(struct doc *d, int root, int depth);

/* { selection ... }; root: its fields and spreads are the definition's root items. */
static int
p_selset(struct doc *d, int root, int depth)
{
	if (depth > GQL_DEPTH_MAX)
		return deep(d);
	if (d->tk != '{')
		return syntax(d, "`{`");
	if (lex(d) == -1)
		return -1;
	if (d->tk == '}')
		return syntax(d, "a selection");
	while (d->tk != '}')
		if (p_selection(d, root, depth) == -1)
			return -1;
	return lex(d);
}

static int
p_selection(struct doc *d, int root, int depth)
{
	size_t o, l;

	if (d->tk == TK_SPREAD) {
		if (lex(d) == -1)
			return -1;
		if (d->tk == TK_NAME && !is_kw(d, "on")) {
			/* ...Fragment */
			if (root)
				add_item(d, d->to, d->tl, 1);
			if (lex(d) == -1)
				return -1;
			return p_directives(d, 0, depth);
		}
		/* ... on Type @dir { }: its selections are at this level */
		if (is_kw(d, "on") && (lex(d) == -1 || want(d, TK_NAME, "a type condition") == -1))
			return -1;
		if (p_directives(d, 0, depth) == -1)
			return -1;
		return p_selset(d, root, depth + 1);
	}
	if (d->tk != TK_NAME)
		return syntax(d, "a field");
	o = d->to;
	l = d->tl;
	if (lex(d) == -1)
		return -1;
	if (d->tk == ':') {
		/* alias: name; the field is the name after the colon */
		if (lex(d) == -1)
			return -1;
		if (d->tk != TK_NAME)
			return syntax(d, "a field name after an alias");
		o = d->to;
		l = d->tl;
		if (lex(d) == -1)
			return -1;
	}
	if (root)
		add_item(d, o, l, 0);
	if (d->tk == '(' && p_args(d, 0, depth + 1) == -1)
		return -1;
	if (p_directives(d, 0, depth + 1) == -1)
		return -1;
	return d->tk == '{' ? p_selset(d, 0, depth + 1) : 0;
}

static int
p_definition(struct doc *d)
{
	enum dkind k;
	size_t di;

	if (d->tk == '{' || is_kw(d, "query"))
		k = DK_QUERY;
	else if (is_kw(d, "mutation"))
		k = DK_MUTATION;
	else if (is_kw(d, "subscription"))
		k = DK_SUBSCRIPTION;
	else if (is_kw(d, "fragment"))
		k = DK_FRAGMENT;
	else
		return syntax(d, "an operation or a fragment (only executable definitions)");
	if (d->ndefs == d->capdefs) {
		d->capdefs = d->capdefs != 0 ? d->capdefs * 2 : 16;
		d->defs = xreallocarray(d->defs, d->capdefs, sizeof(*d->defs));
	}
	di = d->ndefs++;
	memset(&d->defs[di], 0, sizeof(d->defs[di]));
	d->defs[di].kind = k;
	d->defs[di].item0 = d->nitems;
	if (d->tk != '{') {
		if (lex(d) == -1)
			return -1;
		if (k == DK_FRAGMENT) {
			if (d->tk != TK_NAME || is_kw(d, "on"))
				return syntax(d, "a fragment name");
			d->defs[di].name_o = d->to;
			d->defs[di].name_l = d->tl;
			if (lex(d) == -1)
				return -1;
			if (!is_kw(d, "on"))
				return syntax(d, "`on`");
			if (lex(d) == -1 || want(d, TK_NAME, "a type condition") == -1)
				return -1;
		} else {
			if (d->tk == TK_NAME && lex(d) == -1)
				return -1;
			if (d->tk == '(' && p_vardefs(d) == -1)
				return -1;
		}
		if (p_directives(d, 0, 1) == -1)
			return -1;
	}
	if (p_selset(d, 1, 1) == -1)
		return -1;
	d->defs[di].nitem = d->nitems - d->defs[di].item0;
	return 0;
}

/* ---- the rules ---- */

static int
frag_cmp(const void *a, const void *b, void *arg)
{
	const struct doc *d = arg;
	const struct def *x = &d->defs[*(const size_t *)a], *y = &d->defs[*(const size_t *)b];
	int c = memcmp(d->s + x->name_o, d->s + y->name_o, x->name_l < y->name_l ? x->name_l :
	    y->name_l);

	if (c != 0)
		return c;
	return x->name_l < y->name_l ? -1 : x->name_l > y->name_l;
}

/* The fragment named s[o..o+l) (its index in defs), or -1. */
static long
frag_find(const struct doc *d, size_t o, size_t l)
{
	size_t lo = 0, hi = d->nfrags, mid;
	const struct def *f;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		f = &d->defs[d->frags[mid]];
		c = memcmp(d->s + o, d->s + f->name_o, l < f->name_l ? l : f->name_l);
		if (c == 0)
			c = l < f->name_l ? -1 : l > f->name_l;
		if (c == 0)
			return (long)d->frags[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

/* 1 if a mutation may run root field name (l bytes) under r. */
static int
allowed(const struct gql_rules *r, const char *name, size_t l)
{
	size_t i;

	if (!r->mutations)
		return 0;
	if (!r->has_allow || (l == 10 && memcmp(name, "__typename", 10) == 0))
		return 1;
	for (i = 0; i < r->nallow; i++)
		if (strlen(r->allow[i]) == l && memcmp(r->allow[i], name, l) == 0)
			return 1;
	return 0;
}

/* Judges the root items of definition di (a mutation, or a fragment spread at its root). */
static int
judge_def(struct doc *d, size_t di, int depth)
{
	const struct item *it;
	char sh[64];
	size_t k;
	long f;

	if (depth > GQL_SPREAD_DEPTH_MAX)
		return bad(d->j, "fragment spreads nested deeper than %d levels", GQL_SPREAD_DEPTH_MAX);
	d->defs[di].mark = 1;
	for (k = 0; k < d->defs[di].nitem; k++) {
		it = &d->items[d->defs[di].item0 + k];
		if (!it->spread) {
			if (allowed(d->j->r, d->s + it->o, it->l))
				continue;
			d->j->v->res = GQL_DENY;
			snprintf(d->j->v->field, sizeof(d->j->v->field), "%.*s",
			    (int)(it->l < GQL_NAME_MAX ? it->l : GQL_NAME_MAX), d->s + it->o);
			return -1;
		}
		if ((f = frag_find(d, it->o, it->l)) == -1)
			return bad(d->j, "fragment %s is spread but not defined",
			    show(d->s + it->o, it->l, sh, sizeof(sh)));
		if (d->defs[f].mark == 1)
			return bad(d->j, "fragment %s spreads itself (a cycle)",
			    show(d->s + it->o, it->l, sh, sizeof(sh)));
		if (d->defs[f].mark == 0 && judge_def(d, (size_t)f, depth + 1) == -1)
			return -1;
	}
	d->defs[di].mark = 2;
	return 0;
}

static int
doc_rules(struct doc *d)
{
	const struct def *x, *y;
	char sh[64];
	size_t i;

	if (!gql_rules_restrict(d->j->r))
		return 0;	/* every mutation may run: nothing to resolve */
	d->frags = xreallocarray(NULL, d->ndefs + 1, sizeof(*d->frags));
	for (i = 0; i < d->ndefs; i++)
		if (d->defs[i].kind == DK_FRAGMENT)
			d->frags[d->nfrags++] = i;
	qsort_r(d->frags, d->nfrags, sizeof(*d->frags), frag_cmp, d);
	for (i = 1; i < d->nfrags; i++)
		if (frag_cmp(&d->frags[i - 1], &d->frags[i], d) == 0) {
			x = &d->defs[d->frags[i]];
			return bad(d->j, "fragment %s defined twice",
			    show(d->s + x->name_o, x->name_l, sh, sizeof(sh)));
		}
	for (i = 0; i < d->ndefs; i++) {
		y = &d->defs[i];
		if (y->kind == DK_MUTATION && judge_def(d, i, 0) == -1)
			return -1;
	}
	return 0;
}

/* Parses document s (n bytes) and judges its mutations. */
static int
doc_judge(struct judge *j, const char *s, size_t n)
{
	struct doc d;
	int rc = -1;

	memset(&d, 0, sizeof(d));
	d.j = j;
	d.s = s;
	d.n = n;
	if (lex(&d) == -1)
		goto out;
	if (d.tk == TK_EOF) {
		bad(j, "an empty GraphQL document");
		goto out;
	}
	while (d.tk != TK_EOF)
		if (p_definition(&d) == -1)
			goto out;
	rc = doc_rules(&d);
out:
	free(d.defs);
	free(d.items);
	free(d.frags);
	return rc;
}

/* ---- the interface ---- */

struct gql_rules *
gql_rules_new(int mutations)
{
	struct gql_rules *r = xcalloc(1, sizeof(*r));

	r->mutations = mutations != 0;
	return r;
}

int
gql_name_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > GQL_NAME_MAX || !name_start((unsigned char)s[0]))
		return 0;
	for (i = 1; i < n; i++)
		if (!name_cont((unsigned char)s[i]))
			return 0;
	return 1;
}

int
gql_rules_allow(struct gql_rules *r, const char *name, size_t n)
{
	if (r->nallow >= GQL_ALLOW_MAX || !gql_name_ok(name, n))
		return -1;
	r->allow = xreallocarray(r->allow, r->nallow + 1, sizeof(*r->allow));
	r->allow[r->nallow++] = xstrndup(name, n);
	r->has_allow = 1;
	return 0;
}

int
gql_rules_mutations(const struct gql_rules *r)
{
	return r->mutations;
}

int
gql_rules_restrict(const struct gql_rules *r)
{
	return !r->mutations || r->has_allow;
}

void
gql_rules_free(struct gql_rules *r)
{
	size_t i;

	if (r == NULL)
		return;
	for (i = 0; i < r->nallow; i++)
		free(r->allow[i]);
	free(r->allow);
	free(r);
}

static void
judge_init(struct judge *j, const struct gql_rules *r, struct gql_verdict *v, const char *s,
    size_t n)
{
	memset(j, 0, sizeof(*j));
	memset(v, 0, sizeof(*v));
	v->res = GQL_PASS;
	j->r = r;
	j->v = v;
	j->s = s;
	j->n = n;
	buf_init(&j->keyb, GQL_BYTES_MAX + 1);
	/* Keys are read at offsets past this byte, so keyb.p is never NULL. */
	ign(buf_add(&j->keyb, "", 1));
	buf_init(&j->doc, GQL_BYTES_MAX);
	buf_init(&j->hash, 256);
	buf_init(&j->str, GQL_BYTES_MAX);
}

static void
judge_free(struct judge *j)
{
	buf_free(&j->keyb);
	buf_free(&j->doc);
	buf_free(&j->hash);
	buf_free(&j->str);
	free(j->keys);
}

void
gql_judge(const struct gql_rules *r, const char *body, size_t n, struct gql_verdict *v)
{
	struct judge j;
	int rc;

	judge_init(&j, r, v, body, n);
	if (n > GQL_BYTES_MAX) {
		bad(&j, "a GraphQL body over %d bytes", GQL_BYTES_MAX);
		goto out;
	}
	j_ws(&j);
	if (j.i < n && body[j.i] == '[')
		rc = j_batch(&j);
	else if (j.i < n && body[j.i] == '{')
		rc = j_request(&j, 1);
	else
		rc = bad(&j, "the body is not JSON (a GraphQL request object or a batch)");
	if (rc == 0) {
		j_ws(&j);
		if (j.i != n)
			bad(&j, "JSON: bytes after the value at byte %zu", j.i);
	}
out:
	judge_free(&j);
}

void
gql_judge_document(const struct gql_rules *r, const char *doc, size_t n, struct gql_verdict *v)
{
	struct judge j;

	judge_init(&j, r, v, doc, n);
	if (n > GQL_BYTES_MAX)
		bad(&j, "a GraphQL document over %d bytes", GQL_BYTES_MAX);
	else
		doc_judge(&j, doc, n);
	judge_free(&j);
}

void
gql_json_strings(const char *body, size_t n, gql_str_fn fn, void *arg, struct gql_verdict *v)
{
	struct judge j;

	judge_init(&j, NULL, v, body, n);
	j.strfn = fn;
	j.strarg = arg;
	if (n > GQL_BYTES_MAX)
		bad(&j, "a JSON body over %d bytes", GQL_BYTES_MAX);
	else if (j_value(&j, 1) == 0) {
		j_ws(&j);
		if (j.i != n)
			bad(&j, "JSON: bytes after the value at byte %zu", j.i);
	}
	judge_free(&j);
}
