/*
 * json.h: a small, strict JSON reader and writer for the agent (no library:
 * the agent is linked statically). The reader builds a tree from a bounded
 * input; the writer appends to a struct buf and turns invalid UTF-8 into
 * U+FFFD so any bytes (command output) can be sent.
 *
 * Reader rules (RFC 8259, strict): one value, optional surrounding
 * whitespace; strings must be valid UTF-8 with no raw control characters;
 * escapes \uXXXX must pair surrogates; numbers follow the JSON grammar;
 * duplicate object keys are rejected; depth <= JSON_MAX_DEPTH, members per
 * container <= JSON_MAX_MEMBERS, input <= JSON_MAX_INPUT bytes.
 */
#ifndef AGENT_JSON_H
#define AGENT_JSON_H

#include <stddef.h>
#include "attrib.h"
#include "buf.h"

#define JSON_MAX_DEPTH		64
#define JSON_MAX_MEMBERS	65536
#define JSON_MAX_INPUT		((size_t)16 * 1024 * 1024)
#define JSON_MAX_NUMLEN		64

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUM, JSON_STR, JSON_ARR, JSON_OBJ };

struct json {
	enum json_type	 type;
	int		 b;		/* JSON_BOOL */
	double		 num;		/* JSON_NUM */
	int		 is_int;	/* JSON_NUM that fits a long long exactly */
	long long	 i;		/* its value when is_int */
	char		*s;		/* JSON_STR, NUL-terminated (may hold NULs) */
	size_t		 slen;		/* its length */
	char		*key;		/* member name when inside an object */
	size_t		 keylen;
	struct json	*child;		/* first element or member */
	struct json	*next;		/* next sibling */
	size_t		 n;		/* element or member count */
};

/*
 * Parses p[0..n). Returns a tree the caller frees with json_free(), or NULL
 * with a message in err ("offset 12: unterminated string").
 */
struct json	*json_parse(const char *p, size_t n, char *err, size_t errlen);
void		 json_free(struct json *);

/* Member of an object by name, or NULL (also when obj is not an object). */
const struct json *json_get(const struct json *obj, const char *key);
/* Typed getters: 0 on success, 1 when absent (or null), -1 on wrong type. */
int	json_get_str(const struct json *obj, const char *key, const char **s,
	    size_t *len);
int	json_get_int(const struct json *obj, const char *key, long long *v);
int	json_get_bool(const struct json *obj, const char *key, int *v);

/* 1 if p[0..n) is valid UTF-8 (no surrogates, no overlongs), else 0. */
int	json_utf8_valid(const char *p, size_t n);
/*
 * Length of the longest prefix of p[0..n) that does not end inside an
 * incomplete (but so far valid) UTF-8 sequence; at most 3 bytes shorter.
 */
size_t	json_utf8_complete(const char *p, size_t n);

/*
 * Writer. Calls chain; the first failed append (buffer max) sets err and
 * later calls do nothing. jw_finish() returns 0 or -1.
 */
#define JW_MAX_DEPTH 16
struct jw {
	struct buf	*b;
	int		 depth;
	int		 err;
	int		 after_key;
	unsigned char	 has[JW_MAX_DEPTH];	/* container has a member */
};
void	jw_init(struct jw *, struct buf *);
void	jw_obj(struct jw *);		/* { */
void	jw_obj_end(struct jw *);	/* } */
void	jw_arr(struct jw *);
void	jw_arr_end(struct jw *);
void	jw_key(struct jw *, const char *);
void	jw_str(struct jw *, const char *, size_t);	/* sanitised */
void	jw_cstr(struct jw *, const char *);
void	jw_int(struct jw *, long long);
void	jw_bool(struct jw *, int);
void	jw_null(struct jw *);
int	jw_finish(struct jw *) WUNRES;
/* Appends p[0..n) as a quoted JSON string, invalid UTF-8 -> U+FFFD. */
int	json_put_str(struct buf *, const char *p, size_t n) WUNRES;

#endif
