/*
 * schema.h: a validator for the small subset of JSON Schema that MCP tool
 * inputSchemas use (schema.c says which). It knows nothing about tools: a
 * schema is compiled once (a keyword it does not support is an error, so a
 * typo is a startup bug rather than a check silently skipped), then checks
 * argument objects, and the getters read values it has checked.
 */
#ifndef SCHEMA_H
#define SCHEMA_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "attrib.h"

struct schema;

/*
 * Compiles an object schema. Returns it (free with schema_free), or NULL
 * with err saying what is wrong or unsupported. js is not kept.
 */
struct schema *schema_compile(const cJSON *js, char *err, size_t errlen) WUNRES;
void	schema_free(struct schema *);
/*
 * Checks args against sc: unknown members first, then each property in
 * the schema's order. A member whose value is null counts as absent.
 * 0, or -1 with err holding a message for the caller (the model).
 */
int	schema_check(const struct schema *sc, const cJSON *args, char *err,
	    size_t errlen) WUNRES;

/*
 * Getters for args that schema_check accepted; an absent (or null) member
 * gives NULL, def or -1. The strings belong to args.
 */
const char *schema_str(const cJSON *args, const char *name);
long long schema_int(const cJSON *args, const char *name, long long def);
int	schema_bool(const cJSON *args, const char *name);	/* 1, 0, -1 */
/* Item i of an array-of-integer member, or def. */
long long schema_int_item(const cJSON *args, const char *name, int i,
	    long long def);

#endif
