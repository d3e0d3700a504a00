/*
 * fuzz_agent_json.c: the agent's JSON reader and writer. Whatever parses
 * must re-serialise to JSON that parses to the same tree; any bytes written
 * as a string must read back as valid JSON. Also feeds the HTTP head parser.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/http.h"
#include "../../agent/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
dump(struct jw *w, const struct json *v)
{
	const struct json *c;

	switch (v->type) {
	case JSON_NULL: jw_null(w); break;
	case JSON_BOOL: jw_bool(w, v->b); break;
	case JSON_NUM:
		if (v->is_int)
			jw_int(w, v->i);
		else
			jw_int(w, 0);
		break;
	case JSON_STR: jw_str(w, v->s, v->slen); break;
	case JSON_ARR:
		jw_arr(w);
		for (c = v->child; c != NULL; c = c->next)
			dump(w, c);
		jw_arr_end(w);
		break;
	case JSON_OBJ:
		jw_obj(w);
		for (c = v->child; c != NULL; c = c->next) {
			/* keys may hold NUL: write them with the string writer */
			int comma = w->has[w->depth - 1];
			if (buf_add(w->b, ",", comma ? 1 : 0) == -1 ||
			    json_put_str(w->b, c->key, c->keylen) == -1 ||
			    buf_add(w->b, ":", 1) == -1)
				w->err = 1;
			w->has[w->depth - 1] = 1;
			w->after_key = 1;
			dump(w, c);
		}
		jw_obj_end(w);
		break;
	}
}

static int
same(const struct json *a, const struct json *b)
{
	const struct json *x, *y;

	if (a->type != b->type || a->n != b->n)
		return 0;
	if (a->type == JSON_STR)
		return a->slen == b->slen && memcmp(a->s, b->s, a->slen) == 0;
	if (a->type == JSON_BOOL)
		return a->b == b->b;
	for (x = a->child, y = b->child; x != NULL && y != NULL; x = x->next, y = y->next) {
		if (x->keylen != y->keylen || (x->keylen && memcmp(x->key, y->key, x->keylen)))
			return 0;
		if (!same(x, y))
			return 0;
	}
	return x == NULL && y == NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json *v, *v2;
	struct buf b;
	struct jw w;
	struct http_req r;
	char err[256], val[256];

	v = json_parse((const char *)data, size, err, sizeof(err));
	if (v != NULL && v->type != JSON_NUM) {
		buf_init(&b, 64 * 1024 * 1024);
		jw_init(&w, &b);
		dump(&w, v);
		if (jw_finish(&w) == 0 && w.depth == 0) {
			v2 = json_parse(b.p, b.len, err, sizeof(err));
			if (v2 == NULL || !same(v, v2))
				abort();
			json_free(v2);
		}
		buf_free(&b);
	}
	json_free(v);

	/* any bytes as a JSON string read back as one string */
	buf_init(&b, 16 * 1024 * 1024);
	if (json_put_str(&b, (const char *)data, size) == 0) {
		v = json_parse(b.p, b.len, err, sizeof(err));
		if (v == NULL || v->type != JSON_STR)
			abort();
		if (json_utf8_valid((const char *)data, size) &&
		    (v->slen != size || memcmp(v->s, data, size) != 0))
			abort();
		json_free(v);
	}
	buf_free(&b);
	(void)json_utf8_complete((const char *)data, size);

	/* the HTTP head parser and query decoding on the same bytes */
	if (http_parse_head((const char *)data, size, &r, err, sizeof(err)) == HTTP_DONE) {
		if (r.head_len > size || r.head_len > HTTP_MAX_HEAD)
			abort();
		(void)http_query_get(r.query, "path", val, sizeof(val));
		(void)http_query_get(r.query, "offset", val, sizeof(val));
	}
	return 0;
}
