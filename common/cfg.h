/*
 * cfg.h: one table of keys per daemon feeds the YAML loader, --help,
 * --print-config, the docs and environment overrides.
 *
 * A key's name is its dotted path in the YAML file ("limits.max_conns"
 * is `limits: { max_conns: 10 }`). Loading applies, in order: every
 * default, the file, then each key's environment variable if set. Unknown
 * keys, duplicate keys, wrong types and out-of-bounds values are errors
 * that name the file, the line and the key.
 *
 * Storage at conf + offset, by type:
 *   CFG_STR, CFG_PATH  char * (NULL for an empty default; owned by conf)
 *   CFG_INT            long long, within [min, max]
 *   CFG_BOOL           int (0 or 1); true/false/yes/no/on/off/1/0
 *   CFG_DURATION       long long milliseconds ("30s", "10m", "250ms")
 *   CFG_SIZE           long long bytes ("64KiB", "16MiB")
 *   CFG_LIST           struct cfg_list: a YAML sequence of scalars
 *   CFG_MAP            struct cfg_map: a YAML mapping of scalars
 */
#ifndef CFG_H
#define CFG_H

#include <stddef.h>
#include <stdio.h>
#include "attrib.h"

enum cfg_type {
	CFG_STR, CFG_PATH, CFG_INT, CFG_BOOL, CFG_DURATION, CFG_SIZE,
	CFG_LIST, CFG_MAP
};

struct cfg_list {
	char	**v;
	size_t	  n;
};

struct cfg_map {
	char	**k;
	char	**v;
	size_t	  n;
};

struct cfg_key {
	const char	*name;	/* dotted path */
	enum cfg_type	 type;
	size_t		 off;	/* offsetof(struct conf, member) */
	long long	 min;	/* INT/DURATION/SIZE bounds (0,0: none) */
	long long	 max;
	const char	*def;	/* default as text; NULL: empty/0 */
	const char	*env;	/* environment override or NULL */
	const char	*help;	/* one line */
};

/* Hard limits on what a config file may hold. */
#define CFG_MAX_FILE	(1 << 20)	/* bytes */
#define CFG_MAX_ITEMS	4096		/* entries in one list or map */
#define CFG_MAX_DEPTH	8

/*
 * Fills conf (zeroed by the caller) from defaults, path (NULL: none) and
 * the environment. 0 on success; -1 with a message in err, and conf left
 * holding whatever was set (free it with cfg_free either way).
 */
int	cfg_load(const struct cfg_key *, size_t, void *conf, const char *path,
	    char *err, size_t errlen) WUNRES;
/* Same, from a string (tests, fuzzing); name is used in messages. */
int	cfg_load_string(const struct cfg_key *, size_t, void *conf,
	    const char *name, const char *text, size_t len, char *err,
	    size_t errlen) WUNRES;
void	cfg_free(const struct cfg_key *, size_t, void *conf);

/* Lookup in a loaded map; NULL if absent. */
const char *cfg_map_get(const struct cfg_map *, const char *key);

/* The key table as text (--help) or as a Markdown table (docs). */
void	cfg_print_help(const struct cfg_key *, size_t, FILE *);
void	cfg_print_markdown(const struct cfg_key *, size_t, FILE *);
/* Effective values, secrets' values are never printed (keys only). */
void	cfg_print_values(const struct cfg_key *, size_t, const void *conf, FILE *);

#endif
