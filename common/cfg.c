/*
 * cfg.c: table-driven YAML configuration (libyaml stays in this file).
 * The document is walked as a tree; nested mappings make dotted names that
 * are looked up in the key table.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "buf.h"
#include "cfg.h"
#include "strnum.h"
#include "util.h"
#include "xmalloc.h"

struct walk {
	const struct cfg_key	*tab;
	size_t			 ntab;
	void			*conf;
	const char		*file;
	yaml_document_t		*doc;
	char			*err;
	size_t			 errlen;
	size_t			 visited;	/* nodes seen; caps alias blowup */
};

static int
cfg_err(struct walk *w, const yaml_node_t *n, const char *key, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n != NULL)
		snprintf(w->err, w->errlen, "%s:%zu: %s%s%s", w->file,
		    (size_t)n->start_mark.line + 1, key ? key : "",
		    key ? ": " : "", msg);
	else
		snprintf(w->err, w->errlen, "%s: %s%s%s", w->file,
		    key ? key : "", key ? ": " : "", msg);
	return -1;
}

static const struct cfg_key *
key_find(const struct cfg_key *tab, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(tab[i].name, name) == 0)
			return &tab[i];
	return NULL;
}

/* Is name a strict prefix ("a.b") of some key ("a.b.c")? */
static int
key_is_section(const struct cfg_key *tab, size_t n, const char *name)
{
	size_t i, len = strlen(name);

	for (i = 0; i < n; i++)
		if (strncmp(tab[i].name, name, len) == 0 && tab[i].name[len] == '.')
			return 1;
	return 0;
}

static void
list_free(struct cfg_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static void
map_free(struct cfg_map *m)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		free(m->k[i]);
		free(m->v[i]);
	}
	free(m->k);
	free(m->v);
	m->k = m->v = NULL;
	m->n = 0;
}

static int
parse_bool(const char *s, int *out)
{
	static const char *const t[] = { "true", "yes", "on", "1" };
	static const char *const f[] = { "false", "no", "off", "0" };
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		if (strcasecmp(s, t[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, f[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

/*
 * Sets a scalar-typed key from text. Returns 0, or -1 with a reason in
 * *why (static string).
 */
static int
set_scalar(const struct cfg_key *k, void *conf, const char *s, const char **why)
{
	char *base = (char *)conf + k->off;
	long long v = 0, min = k->min, max = k->max;
	int b;

	*why = NULL;
	if (strlen(s) != strnlen(s, CFG_MAX_FILE)) {
		*why = "value too long";
		return -1;
	}
	switch (k->type) {
	case CFG_STR:
	case CFG_PATH:
		free(*(char **)base);
		*(char **)base = *s != '\0' ? xstrdup(s) : NULL;
		return 0;
	case CFG_BOOL:
		if (parse_bool(s, &b) == -1) {
			*why = "expected true or false";
			return -1;
		}
		*(int *)base = b;
		return 0;
	case CFG_INT:
		if (min == 0 && max == 0) {
			min = LLONG_MIN;
			max = LLONG_MAX;
		}
		if (strnum_ll(s, min, max, &v, why) == -1)
			return -1;
		break;
	case CFG_DURATION:
		if (strnum_duration_ms(s, &v, why) == -1) {
			if (*why != NULL && strcmp(*why, "invalid") == 0)
				*why = "expected a duration such as 250ms, 30s, 10m, 1h";
			return -1;
		}
		break;
	case CFG_SIZE:
		if (strnum_size(s, &v, why) == -1) {
			if (*why != NULL && strcmp(*why, "invalid") == 0)
				*why = "expected a size such as 4096, 64KiB, 16MiB";
			return -1;
		}
		break;
	default:
		*why = "expected a list or mapping, not a scalar";
		return -1;
	}
	if ((k->min != 0 || k->max != 0) && (v < k->min || v > k->max)) {
		*why = v < k->min ? "too small" : "too large";
		return -1;
	}
	*(long long *)base = v;
	return 0;
}

static int
walk_value(struct walk *w, const char *name, yaml_node_t *n, int depth);

static int
set_list(struct walk *w, const struct cfg_key *k, yaml_node_t *n)
{
	struct cfg_list *l = (struct cfg_list *)((char *)w->conf + k->off);
	yaml_node_item_t *it;
	size_t cnt;

	if (n->type == YAML_SCALAR_NODE && n->data.scalar.length == 0) {
		list_free(l);
		return 0;
	}
	if (n->type != YAML_SEQUENCE_NODE)
		return cfg_err(w, n, k->name, "expected a list");
	cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (cnt > CFG_MAX_ITEMS)
		return cfg_err(w, n, k->name, "more than %d items", CFG_MAX_ITEMS);
	list_free(l);
	l->v = xcalloc(cnt ? cnt : 1, sizeof(char *));
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *c = yaml_document_get_node(w->doc, *it);
		if (c == NULL || c->type != YAML_SCALAR_NODE)
			return cfg_err(w, c ? c : n, k->name, "list items must be scalars");
		l->v[l->n++] = xstrndup((char *)c->data.scalar.value, c->data.scalar.length);
	}
	return 0;
}

static int
set_map(struct walk *w, const struct cfg_key *k, yaml_node_t *n)
{
	struct cfg_map *m = (struct cfg_map *)((char *)w->conf + k->off);
	yaml_node_pair_t *p;
	size_t cnt, i;

	if (n->type == YAML_SCALAR_NODE && n->data.scalar.length == 0) {
		map_free(m);
		return 0;
	}
	if (n->type != YAML_MAPPING_NODE)
		return cfg_err(w, n, k->name, "expected a mapping");
	cnt = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	if (cnt > CFG_MAX_ITEMS)
		return cfg_err(w, n, k->name, "more than %d entries", CFG_MAX_ITEMS);
	map_free(m);
	m->k = xcalloc(cnt ? cnt : 1, sizeof(char *));
	m->v = xcalloc(cnt ? cnt : 1, sizeof(char *));
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = yaml_document_get_node(w->doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(w->doc, p->value);
		if (kn == NULL || vn == NULL || kn->type != YAML_SCALAR_NODE ||
		    vn->type != YAML_SCALAR_NODE)
			return cfg_err(w, kn ? kn : n, k->name,
			    "mapping keys and values must be scalars");
		for (i = 0; i < m->n; i++)
			if (strcmp(m->k[i], (char *)kn->data.scalar.value) == 0)
				return cfg_err(w, kn, k->name, "duplicate entry '%s'",
				    m->k[i]);
		m->k[m->n] = xstrndup((char *)kn->data.scalar.value, kn->data.scalar.length);
		m->v[m->n] = xstrndup((char *)vn->data.scalar.value, vn->data.scalar.length);
		m->n++;
	}
	return 0;
}

static int
walk_mapping(struct walk *w, const char *prefix, yaml_node_t *n, int depth)
{
	yaml_node_pair_t *p, *q;
	char name[256];

	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = yaml_document_get_node(w->doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(w->doc, p->value);

		if (kn == NULL || vn == NULL || kn->type != YAML_SCALAR_NODE)
			return cfg_err(w, kn ? kn : n, prefix, "keys must be plain names");
		if (kn->data.scalar.length == 0 || kn->data.scalar.length > 100 ||
		    strlen((char *)kn->data.scalar.value) != kn->data.scalar.length)
			return cfg_err(w, kn, prefix, "bad key name");
		for (q = n->data.mapping.pairs.start; q < p; q++) {
			yaml_node_t *qk = yaml_document_get_node(w->doc, q->key);
			if (qk != NULL && qk->type == YAML_SCALAR_NODE &&
			    strcmp((char *)qk->data.scalar.value,
			    (char *)kn->data.scalar.value) == 0)
				return cfg_err(w, kn, (char *)kn->data.scalar.value,
				    "duplicate key");
		}
		if ((size_t)snprintf(name, sizeof(name), "%s%s%s", prefix,
		    *prefix ? "." : "", kn->data.scalar.value) >= sizeof(name))
			return cfg_err(w, kn, prefix, "key path too long");
		if (walk_value(w, name, vn, depth + 1) == -1)
			return -1;
	}
	return 0;
}

static int
walk_value(struct walk *w, const char *name, yaml_node_t *n, int depth)
{
	const struct cfg_key *k;
	const char *why;

	if (depth > CFG_MAX_DEPTH)
		return cfg_err(w, n, name, "nested too deeply");
	if (++w->visited > CFG_MAX_ITEMS * 4)
		return cfg_err(w, n, name, "document too large");
	if ((k = key_find(w->tab, w->ntab, name)) != NULL) {
		if (k->type == CFG_LIST)
			return set_list(w, k, n);
		if (k->type == CFG_MAP)
			return set_map(w, k, n);
		if (n->type != YAML_SCALAR_NODE)
			return cfg_err(w, n, name, "expected a single value");
		if (set_scalar(k, w->conf, (char *)n->data.scalar.value, &why) == -1)
			return cfg_err(w, n, name, "%s: '%.64s'", why,
			    (char *)n->data.scalar.value);
		return 0;
	}
	if (*name == '\0' || key_is_section(w->tab, w->ntab, name)) {
		if (n->type == YAML_SCALAR_NODE && n->data.scalar.length == 0)
			return 0;	/* empty section */
		if (n->type != YAML_MAPPING_NODE)
			return cfg_err(w, n, *name ? name : NULL, "expected a mapping");
		return walk_mapping(w, name, n, depth);
	}
	return cfg_err(w, n, name, "unknown key");
}

static int
apply_defaults(const struct cfg_key *tab, size_t ntab, void *conf,
    char *err, size_t errlen)
{
	const char *why;
	size_t i;

	for (i = 0; i < ntab; i++) {
		const struct cfg_key *k = &tab[i];
		if (k->def == NULL || k->type == CFG_LIST || k->type == CFG_MAP)
			continue;
		if (set_scalar(k, conf, k->def, &why) == -1) {
			snprintf(err, errlen, "internal: default of %s: %s", k->name, why);
			return -1;
		}
	}
	return 0;
}

static int
apply_env(const struct cfg_key *tab, size_t ntab, void *conf, char *err,
    size_t errlen)
{
	const char *why, *s;
	size_t i;

	for (i = 0; i < ntab; i++) {
		const struct cfg_key *k = &tab[i];
		if (k->env == NULL || (s = getenv(k->env)) == NULL)
			continue;
		if (k->type == CFG_LIST || k->type == CFG_MAP) {
			snprintf(err, errlen, "environment %s: lists cannot be set from the environment", k->env);
			return -1;
		}
		if (set_scalar(k, conf, s, &why) == -1) {
			snprintf(err, errlen, "environment %s (%s): %s", k->env, k->name, why);
			return -1;
		}
	}
	return 0;
}

int
cfg_load_string(const struct cfg_key *tab, size_t ntab, void *conf,
    const char *name, const char *text, size_t len, char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	struct walk w;
	int rc = -1, have_doc = 0;

	if (apply_defaults(tab, ntab, conf, err, errlen) == -1)
		return -1;
	if (text != NULL) {
		if (len > CFG_MAX_FILE) {
			snprintf(err, errlen, "%s: larger than %d bytes", name, CFG_MAX_FILE);
			return -1;
		}
		if (!yaml_parser_initialize(&parser)) {
			snprintf(err, errlen, "%s: yaml parser init failed", name);
			return -1;
		}
		yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
		if (!yaml_parser_load(&parser, &doc)) {
			snprintf(err, errlen, "%s:%zu: %s", name,
			    (size_t)parser.problem_mark.line + 1,
			    parser.problem ? parser.problem : "YAML syntax error");
			yaml_parser_delete(&parser);
			return -1;
		}
		have_doc = 1;
		memset(&w, 0, sizeof(w));
		w.tab = tab;
		w.ntab = ntab;
		w.conf = conf;
		w.file = name;
		w.doc = &doc;
		w.err = err;
		w.errlen = errlen;
		root = yaml_document_get_root_node(&doc);
		if (root != NULL && walk_value(&w, "", root, 0) == -1)
			goto out;
	}
	if (apply_env(tab, ntab, conf, err, errlen) == -1)
		goto out;
	rc = 0;
out:
	if (have_doc) {
		yaml_document_delete(&doc);
		yaml_parser_delete(&parser);
	}
	return rc;
}

int
cfg_load(const struct cfg_key *tab, size_t ntab, void *conf, const char *path,
    char *err, size_t errlen)
{
	struct buf b;
	int rc;

	if (path == NULL)
		return cfg_load_string(tab, ntab, conf, "(defaults)", NULL, 0, err, errlen);
	buf_init(&b, CFG_MAX_FILE);
	if (util_read_file(path, &b, err, errlen) == -1) {
		buf_free(&b);
		return -1;
	}
	rc = cfg_load_string(tab, ntab, conf, path, b.p ? b.p : "", b.len, err, errlen);
	buf_free(&b);
	return rc;
}

void
cfg_free(const struct cfg_key *tab, size_t ntab, void *conf)
{
	size_t i;

	for (i = 0; i < ntab; i++) {
		char *base = (char *)conf + tab[i].off;
		switch (tab[i].type) {
		case CFG_STR:
		case CFG_PATH:
			free(*(char **)base);
			*(char **)base = NULL;
			break;
		case CFG_LIST:
			list_free((struct cfg_list *)base);
			break;
		case CFG_MAP:
			map_free((struct cfg_map *)base);
			break;
		default:
			break;
		}
	}
}

const char *
cfg_map_get(const struct cfg_map *m, const char *key)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (strcmp(m->k[i], key) == 0)
			return m->v[i];
	return NULL;
}

static const char *
type_name(enum cfg_type t)
{
	switch (t) {
	case CFG_STR: return "string";
	case CFG_PATH: return "path";
	case CFG_INT: return "integer";
	case CFG_BOOL: return "bool";
	case CFG_DURATION: return "duration";
	case CFG_SIZE: return "size";
	case CFG_LIST: return "list";
	case CFG_MAP: return "map";
	}
	return "?";
}

void
cfg_print_help(const struct cfg_key *tab, size_t ntab, FILE *fp)
{
	size_t i;

	for (i = 0; i < ntab; i++) {
		fprintf(fp, "  %-32s %-8s default %s%s%s\n      %s\n", tab[i].name,
		    type_name(tab[i].type), tab[i].def ? tab[i].def : "(none)",
		    tab[i].env ? ", env " : "", tab[i].env ? tab[i].env : "",
		    tab[i].help);
	}
}

void
cfg_print_markdown(const struct cfg_key *tab, size_t ntab, FILE *fp)
{
	size_t i;

	fprintf(fp, "| key | type | default | bounds | env | meaning |\n");
	fprintf(fp, "|---|---|---|---|---|---|\n");
	for (i = 0; i < ntab; i++) {
		const struct cfg_key *k = &tab[i];
		fprintf(fp, "| `%s` | %s | %s%s%s | ", k->name, type_name(k->type),
		    k->def ? "`" : "", k->def ? k->def : "—", k->def ? "`" : "");
		if (k->min != 0 || k->max != 0)
			fprintf(fp, "%lld–%lld", k->min, k->max);
		fprintf(fp, " | %s%s%s | %s |\n", k->env ? "`" : "",
		    k->env ? k->env : "", k->env ? "`" : "", k->help);
	}
}

void
cfg_print_values(const struct cfg_key *tab, size_t ntab, const void *conf, FILE *fp)
{
	size_t i, j;

	for (i = 0; i < ntab; i++) {
		const char *base = (const char *)conf + tab[i].off;
		fprintf(fp, "%s: ", tab[i].name);
		switch (tab[i].type) {
		case CFG_STR:
		case CFG_PATH:
			fprintf(fp, "%s\n", *(char *const *)base ? *(char *const *)base : "");
			break;
		case CFG_BOOL:
			fprintf(fp, "%s\n", *(const int *)base ? "true" : "false");
			break;
		case CFG_INT:
		case CFG_SIZE:
			fprintf(fp, "%lld\n", *(const long long *)base);
			break;
		case CFG_DURATION:
			fprintf(fp, "%lldms\n", *(const long long *)base);
			break;
		case CFG_LIST: {
			const struct cfg_list *l = (const struct cfg_list *)base;
			fprintf(fp, "[");
			for (j = 0; j < l->n; j++)
				fprintf(fp, "%s%s", j ? ", " : "", l->v[j]);
			fprintf(fp, "]\n");
			break;
		}
		case CFG_MAP: {
			const struct cfg_map *m = (const struct cfg_map *)base;
			fprintf(fp, "{");
			for (j = 0; j < m->n; j++)
				fprintf(fp, "%s%s", j ? ", " : "", m->k[j]);
			fprintf(fp, "}\n");
			break;
		}
		}
	}
}
