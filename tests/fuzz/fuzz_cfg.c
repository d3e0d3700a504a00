/*
 * fuzz_cfg.c: the YAML configuration loader (common/cfg.c) on arbitrary
 * documents, with a key table that has one key of every type.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cfg.h"

struct fconf {
	char		*s;
	char		*p;
	long long	 i, d, z;
	int		 b;
	struct cfg_list	 l;
	struct cfg_map	 m;
};

#define O(m) offsetof(struct fconf, m)
static const struct cfg_key keys[] = {
	{ "name", CFG_STR, O(s), 0, 0, "x", NULL, "" },
	{ "a.path", CFG_PATH, O(p), 0, 0, NULL, NULL, "" },
	{ "a.b.int", CFG_INT, O(i), -5, 100000, "1", NULL, "" },
	{ "a.b.dur", CFG_DURATION, O(d), 0, 86400000, "1s", NULL, "" },
	{ "size", CFG_SIZE, O(z), 0, 1LL << 40, "1KiB", NULL, "" },
	{ "on", CFG_BOOL, O(b), 0, 0, "false", NULL, "" },
	{ "list", CFG_LIST, O(l), 0, 0, NULL, NULL, "" },
	{ "map", CFG_MAP, O(m), 0, 0, NULL, NULL, "" },
};
#undef O

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fconf c;
	char err[512];

	memset(&c, 0, sizeof(c));
	if (cfg_load_string(keys, NELEM(keys), &c, "fuzz", (const char *)data,
	    size, err, sizeof(err)) == -1 && err[0] == '\0')
		__builtin_trap();	/* every failure must say why */
	cfg_free(keys, NELEM(keys), &c);
	return 0;
}
