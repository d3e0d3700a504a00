/*
 * sandboxctl: operator and test tool for the local runtime. Drives sandboxes
 * through the library API (runtime/local/local.h) and their agents through
 * agentc (docs/local-runtime.md, "Quick start").
 *
 *   sandboxctl [-v] [-s STATE_DIR] [-f CONFIG.yaml] COMMAND ...
 *     create [--image NAME] [--label K=V]... [--env K=V]... [--mem SIZE]
 *            [--cpu MILLIS] [--pids N] [--disk SIZE] [--no-root]
 *            [--read-only] ID
 *     exec [--timeout MS] ID -- COMMAND...
 *     list [--json]
 *     get ID
 *     stop ID | start ID | destroy ID
 *     labels ID [K=V]...
 *     attach ID [--org O] [--user U] [--session S]
 *     agent ID                     (prints the agent socket path)
 *     image add NAME DIR
 *     health                       (the health checks as JSON; exit 1 if
 *                                   one fails)
 *     keys                         (the config keys)
 *
 * -f (or -c, the older spelling) names a config file: one holding the
 * `local:` section of the orchestrator's config (the same keys, see
 * `keys`), or the orchestrator's whole config file, of which it reads
 * local: and homes.dir (the local runtime's key in homes:) and ignores
 * the rest; environment overrides apply. -v (repeatable) logs at debug
 * level, which includes the step timings of create and start. --help
 * prints this usage and exits 0; a usage error exits 2, a failed command 1.
 *
 * Rules: one row of cmds[] per command (its name, how many words it takes,
 * whether it needs the runtime, its function); each command parses its own
 * options with getopt_long.
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <yaml.h>

#include "lib/agentc.h"
#include "buf.h"
#include "cfg.h"
#include "jsonmem.h"
#include "log.h"
#include "local.h"
#include "strnum.h"
#include "util.h"
#include "xmalloc.h"

/* The orchestrator's keys for the local runtime (orchestrator/conf.c):
 * local: and homes.dir (homes.keep_mounted keeps a home mounted in a
 * long-lived process; a sandboxctl command has none). */
static const struct cfg_key keys[] = {
	RUNTIME_LOCAL_CFG_KEYS("local.", 0)
	{ "homes.dir", CFG_PATH, offsetof(struct rt_local_conf, homes_dir), 0, 0,
	  NULL, NULL, "local runtime: directory of the homes (one ext4 image "
	  "per user); empty: homes beside local.state_dir" },
};

/* --label, --env and labels K=V words per call: far above any real use;
 * the runtime caps them again (RL_MAX_LABELS, RL_MAX_ENV). */
#define MAX_KV	128

static const char usage_text[] =
    "usage: sandboxctl [-v] [-s STATE_DIR] [-f CONFIG.yaml] COMMAND ...\n"
    "  create [--image NAME] [--label K=V]... [--env K=V]... [--mem SIZE]\n"
    "         [--cpu MILLIS] [--pids N] [--disk SIZE] [--no-root]\n"
    "         [--read-only] ID\n"
    "  exec [--timeout MS] ID -- COMMAND...\n"
    "  list [--json] | get ID | stop ID | start ID | destroy ID\n"
    "  labels ID [K=V]... | attach ID [--org O] [--user U] [--session S]\n"
    "  agent ID | image add NAME DIR | health | keys\n"
    "  -f FILE (or -c FILE): the orchestrator's config (local:, homes.dir)\n"
    "  or its local: section alone; -v: debug log; --help\n";

/* The usage to f, then exit(code): 0 for --help, 2 for a usage error. */
static NORETURN void
usage(FILE *f, int code)
{
	fputs(usage_text, f);
	exit(code);
}

/*
 * The commands' options, in one table: exec takes --timeout (t); create
 * the rest up to --read-only; attach --org, --user, --session. Each
 * command's switch refuses the others' with a usage error.
 */
static const struct option cmd_opts[] = {
	{ "timeout", required_argument, NULL, 't' },
	{ "image", required_argument, NULL, 'i' },
	{ "label", required_argument, NULL, 'l' },
	{ "env", required_argument, NULL, 'e' },
	{ "mem", required_argument, NULL, 'm' },
	{ "cpu", required_argument, NULL, 'c' },
	{ "pids", required_argument, NULL, 'p' },
	{ "disk", required_argument, NULL, 'd' },
	{ "no-root", no_argument, NULL, 'R' },
	{ "read-only", no_argument, NULL, 'r' },
	{ "org", required_argument, NULL, 'o' },
	{ "user", required_argument, NULL, 'u' },
	{ "session", required_argument, NULL, 's' },
	{ NULL, 0, NULL, 0 },
};

/* A "K=V" word into kv, split in place; usage error if it is not one. */
static void
kv_arg(char *s, struct rt_kv *kv)
{
	char *k, *v;

	if (util_kv_split(s, &k, &v) == -1)
		usage(stderr, 2);
	kv->k = k;
	kv->v = v;
}

/* What a command gets: the runtime (NULL for those that do not open it),
 * the configuration, and its words, its name first. */
struct ctl {
	struct runtime			*rt;
	const struct rt_local_conf	*conf;
	int				 argc;
	char				**argv;
};

static void
print_info(const struct rt_info *ri, cJSON *arr)
{
	size_t i;

	if (arr != NULL) {
		cJSON_AddItemToArray(arr, rt_info_json(ri));
		return;
	}
	printf("%s\t%s\t%s\t%s", ri->id, rt_state_name(ri->state),
	    ri->image[0] ? ri->image : "-",
	    ri->reason[0] ? ri->reason : "-");
	for (i = 0; i < ri->nlabels; i++)
		printf("%s%s=%s", i ? "," : "\t", ri->labels[i].k,
		    ri->labels[i].v);
	printf("\n");
}

/* exec [--timeout MS] ID -- COMMAND...: runs COMMAND through the agent's
 * /v1/shell; exits with its code (124: timed out). */
static int
cmd_exec(const struct ctl *x)
{
	struct rt_agent_addr a;
	struct agentc *ac;
	struct buf cmd, resp;
	long long tmo = 120000;
	const char *errstr, *id;
	char err[512];
	cJSON *req, *o, *v;
	char *body;
	int i, ch, st, rc = 1;

	optind = 0;
	while ((ch = getopt_long(x->argc, x->argv, "+", cmd_opts, NULL)) != -1) {
		if (ch != 't')
			usage(stderr, 2);
		if (strnum_ll(optarg, 1, 86400000, &tmo, &errstr) == -1) {
			fprintf(stderr, "sandboxctl: --timeout: %s\n", errstr);
			return 2;
		}
	}
	i = optind;
	if (i >= x->argc)
		usage(stderr, 2);
	id = x->argv[i++];
	if (i < x->argc && strcmp(x->argv[i], "--") == 0)
		i++;
	if (i >= x->argc)
		usage(stderr, 2);
	buf_init(&cmd, 1 << 20);
	for (; i < x->argc; i++)
		if ((cmd.len && buf_addstr(&cmd, " ") == -1) ||
		    buf_addstr(&cmd, x->argv[i]) == -1) {
			fprintf(stderr, "sandboxctl: command too long\n");
			return 2;
		}
	if (x->rt->ops->agent_addr(x->rt, id, &a, err, sizeof(err)) == -1) {
		fprintf(stderr, "sandboxctl: %s: %s\n", id, err);
		buf_free(&cmd);
		return 1;
	}
	if ((ac = agentc_open(&a, 5000, err, sizeof(err))) == NULL) {
		fprintf(stderr, "sandboxctl: %s\n", err);
		buf_free(&cmd);
		return 1;
	}
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "command", cmd.p);
	cJSON_AddNumberToObject(req, "timeout_ms", (double)tmo);
	body = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	buf_init(&resp, (size_t)AGENTC_MAX_RESP);
	if (agentc_request(ac, "POST", "/v1/shell", "application/json", body,
	    strlen(body), (int)(tmo + 30000), &st, &resp, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "sandboxctl: %s\n", err);
		goto out;
	}
	o = cJSON_ParseWithLength(resp.p != NULL ? resp.p : "", resp.len);
	if (st != 200 || o == NULL) {
		fprintf(stderr, "sandboxctl: agent answered %d: %.*s\n", st,
		    (int)(resp.len > 2000 ? 2000 : resp.len),
		    resp.p != NULL ? resp.p : "");
		cJSON_Delete(o);
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "output");
	if (cJSON_IsString(v)) {
		fputs(v->valuestring, stdout);
		fflush(stdout);
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "timed_out"))) {
		fprintf(stderr, "sandboxctl: command timed out\n");
		rc = 124;
	} else {
		v = cJSON_GetObjectItemCaseSensitive(o, "exit_code");
		rc = cJSON_IsNumber(v) ? (int)v->valuedouble : 1;
		if (rc < 0 || rc > 255)
			rc = 125;
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "oom_killed")))
		fprintf(stderr, "sandboxctl: command was OOM-killed\n");
	cJSON_Delete(o);
out:
	free(body);
	buf_free(&cmd);
	buf_free(&resp);
	agentc_close(ac);
	return rc;
}

/* create [options] ID: prints the new sandbox's line. */
static int
cmd_create(const struct ctl *x)
{
	struct rt_kv labels[MAX_KV], env[MAX_KV];
	struct rt_spec sp;
	struct rt_info ri;
	const char *errstr;
	char err[1024];
	int ch, bad = 0;

	memset(&sp, 0, sizeof(sp));
	sp.run_as_root = 1;
	sp.writable_root = 1;
	sp.labels = labels;
	sp.env = env;
	optind = 0;
	while ((ch = getopt_long(x->argc, x->argv, "", cmd_opts, NULL)) != -1) {
		switch (ch) {
		case 'i':
			sp.image = optarg;
			break;
		case 'l':
			if (sp.nlabels == MAX_KV)
				usage(stderr, 2);
			kv_arg(optarg, &labels[sp.nlabels++]);
			break;
		case 'e':
			if (sp.nenv == MAX_KV)
				usage(stderr, 2);
			kv_arg(optarg, &env[sp.nenv++]);
			break;
		case 'm':
			bad |= strnum_size(optarg, &sp.mem_bytes, &errstr);
			break;
		case 'c':
			bad |= strnum_ll(optarg, 1, 1000000, &sp.cpu_millis,
			    &errstr);
			break;
		case 'p':
			bad |= strnum_ll(optarg, 1, 10000000, &sp.pids_max,
			    &errstr);
			break;
		case 'd':
			bad |= strnum_size(optarg, &sp.disk_bytes, &errstr);
			break;
		case 'R':
			sp.run_as_root = 0;
			break;
		case 'r':
			sp.writable_root = 0;
			break;
		default:
			usage(stderr, 2);
		}
	}
	if (bad || optind != x->argc - 1)
		usage(stderr, 2);
	sp.id = x->argv[optind];
	if (x->rt->ops->create(x->rt, &sp, NULL, &ri, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "sandboxctl: create %s: %s\n", sp.id, err);
		return 1;
	}
	print_info(&ri, NULL);
	rt_info_clear(&ri);
	return 0;
}

/* list [--json]: one line per sandbox, or a JSON array. */
static int
cmd_list(const struct ctl *x)
{
	struct rt_info *a;
	size_t n, i;
	int json = x->argc > 1 && strcmp(x->argv[1], "--json") == 0;
	cJSON *arr = json ? cJSON_CreateArray() : NULL;
	char err[1024], *s;

	if (x->rt->ops->list(x->rt, &a, &n, err, sizeof(err)) == -1) {
		fprintf(stderr, "sandboxctl: list: %s\n", err);
		cJSON_Delete(arr);
		return 1;
	}
	for (i = 0; i < n; i++)
		print_info(&a[i], arr);
	if (json) {
		s = cJSON_Print(arr);
		printf("%s\n", s);
		free(s);
		cJSON_Delete(arr);
	}
	rt_info_free_array(a, n);
	return 0;
}

/* get ID: the sandbox as a JSON object. */
static int
cmd_get(const struct ctl *x)
{
	struct rt_info ri;
	cJSON *arr = cJSON_CreateArray();
	char err[1024], *s;

	if (x->rt->ops->get(x->rt, x->argv[1], &ri, err, sizeof(err)) != 0) {
		fprintf(stderr, "sandboxctl: %s: %s\n", x->argv[1], err);
		cJSON_Delete(arr);
		return 1;
	}
	print_info(&ri, arr);
	s = cJSON_Print(cJSON_GetArrayItem(arr, 0));
	printf("%s\n", s);
	free(s);
	cJSON_Delete(arr);
	rt_info_clear(&ri);
	return 0;
}

/* stop ID, start ID, destroy ID. */
static int
cmd_lifecycle(const struct ctl *x)
{
	char err[1024];
	int r;

	if (strcmp(x->argv[0], "stop") == 0)
		r = x->rt->ops->stop(x->rt, x->argv[1], err, sizeof(err));
	else if (strcmp(x->argv[0], "start") == 0)
		r = x->rt->ops->start(x->rt, x->argv[1], NULL, err,
		    sizeof(err));
	else
		r = x->rt->ops->destroy(x->rt, x->argv[1], err, sizeof(err));
	if (r == -1) {
		fprintf(stderr, "sandboxctl: %s %s: %s\n", x->argv[0],
		    x->argv[1], err);
		return 1;
	}
	return 0;
}

/* labels ID [K=V]...: replaces the sandbox's labels. */
static int
cmd_labels(const struct ctl *x)
{
	struct rt_kv kv[MAX_KV];
	char err[1024];
	size_t n = 0;
	int i;

	for (i = 2; i < x->argc; i++) {
		if (n == MAX_KV)
			usage(stderr, 2);
		kv_arg(x->argv[i], &kv[n++]);
	}
	if (x->rt->ops->set_labels(x->rt, x->argv[1], kv, n, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "sandboxctl: labels: %s\n", err);
		return 1;
	}
	return 0;
}

/*
 * attach ID [--org O] [--user U] [--session S]: --org/--user/--session
 * become the labels the identity is read from (orchestrator/lib/egress.h);
 * prints the proxy environment.
 */
static int
cmd_attach(const struct ctl *x)
{
	struct rt_kv kv[3];
	struct rt_egress eg = { .labels = kv };
	char env[4096], err[1024];
	int ch;

	optind = 0;
	while ((ch = getopt_long(x->argc, x->argv, "", cmd_opts, NULL)) != -1) {
		if (eg.nlabels == NELEM(kv))
			usage(stderr, 2);
		if (ch == 'o')
			kv[eg.nlabels].k = LBL_ORG;
		else if (ch == 'u')
			kv[eg.nlabels].k = LBL_USER;
		else if (ch == 's')
			kv[eg.nlabels].k = LBL_SESSION;
		else
			usage(stderr, 2);
		kv[eg.nlabels++].v = optarg;
	}
	if (optind != x->argc - 1)
		usage(stderr, 2);
	if (x->rt->ops->attach_egress(x->rt, x->argv[optind], &eg, env,
	    sizeof(env), err, sizeof(err)) == -1) {
		fprintf(stderr, "sandboxctl: attach: %s\n", err);
		return 1;
	}
	fputs(env, stdout);
	return 0;
}

/* agent ID: prints the agent's socket path. */
static int
cmd_agent(const struct ctl *x)
{
	struct rt_agent_addr a;
	char err[1024];

	if (x->rt->ops->agent_addr(x->rt, x->argv[1], &a, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "sandboxctl: %s: %s\n", x->argv[1], err);
		return 1;
	}
	printf("%s\n", a.unix_path);
	return 0;
}

/* image add NAME DIR. */
static int
cmd_image(const struct ctl *x)
{
	char err[1024];

	if (strcmp(x->argv[1], "add") != 0)
		usage(stderr, 2);
	if (runtime_local_image_add(x->conf, x->argv[2], x->argv[3], err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "sandboxctl: %s\n", err);
		return 1;
	}
	return 0;
}

/* health: the runtime's checks (docs/local-runtime.md, "Health checks"). */
static int
cmd_health(const struct ctl *x)
{
	cJSON *h = x->rt->ops->health(x->rt), *c;
	char *txt;
	int rc = 0;

	cJSON_ArrayForEach(c, h)
		if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c, "ok")))
			rc = 1;
	txt = cJSON_Print(h);
	printf("%s\n", txt);
	free(txt);
	cJSON_Delete(h);
	return rc;
}

/* keys: the config keys with their defaults and help. */
static int
cmd_keys(const struct ctl *x UNUSED)
{
	cfg_print_help(keys, NELEM(keys), stdout);
	return 0;
}

/*
 * One row a command: words is how many it takes with its name (a minimum
 * when more is set: the command checks the rest); rt: it needs the
 * runtime opened (root), else it gets NULL and the config only.
 */
static const struct cmd {
	const char	*name;
	int		 words;
	int		 more;
	int		 rt;
	int		(*run)(const struct ctl *);
} cmds[] = {
	{ "create", 1, 1, 1, cmd_create },
	{ "exec", 1, 1, 1, cmd_exec },
	{ "list", 1, 1, 1, cmd_list },
	{ "get", 2, 0, 1, cmd_get },
	{ "stop", 2, 0, 1, cmd_lifecycle },
	{ "start", 2, 0, 1, cmd_lifecycle },
	{ "destroy", 2, 0, 1, cmd_lifecycle },
	{ "labels", 2, 1, 1, cmd_labels },
	{ "attach", 2, 1, 1, cmd_attach },
	{ "agent", 2, 0, 1, cmd_agent },
	{ "image", 4, 0, 0, cmd_image },
	{ "health", 1, 0, 1, cmd_health },
	{ "keys", 1, 1, 0, cmd_keys },
};

/*
 * The orchestrator's whole config file as sandboxctl's: cfg reads its text
 * with every entry that is neither one of keys[] nor a section holding one
 * (listen:, http:, homes.size, ...) blanked to spaces, line ends kept, so
 * cfg's messages still name the file's own lines. local: is kept whole: an
 * unknown key there stays an error.
 */
struct blank {
	const char	*in;		/* the file's text */
	char		*out;		/* the same, blanked */
	size_t		 len;
	size_t		 ci;		/* a character index of libyaml's ... */
	size_t		 bi;		/* ... and its byte offset in the text */
	int		 blanked;	/* entries blanked */
	const char	*path;
};

/* Where libyaml's character 0 is: after a UTF-8 BOM. */
static size_t
blank_start(const struct blank *b)
{
	return b->len >= 3 && memcmp(b->in, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

/* The byte offset of libyaml's mark index ci, which counts characters (a
 * UTF-8 sequence is one); forward from the last answer when it can. */
static size_t
blank_byte(struct blank *b, size_t ci)
{
	if (ci < b->ci) {
		b->ci = 0;
		b->bi = blank_start(b);
	}
	while (b->ci < ci && b->bi < b->len) {
		b->bi++;
		while (b->bi < b->len &&
		    ((unsigned char)b->in[b->bi] & 0xc0) == 0x80)
			b->bi++;
		b->ci++;
	}
	return b->bi;
}

/* Characters from up to to (libyaml indices) become spaces, but line ends. */
static void
blank_range(struct blank *b, size_t from, size_t to)
{
	size_t i = blank_byte(b, from), e = blank_byte(b, to);

	b->blanked++;
	for (; i < e; i++)
		if (b->out[i] != '\n' && b->out[i] != '\r')
			b->out[i] = ' ';
}

/* 1: name is one of keys[]; 2: a section holding some; 0: neither. */
static int
key_kind(const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < NELEM(keys); i++) {
		if (strcmp(keys[i].name, name) == 0)
			return 1;
		if (strncmp(keys[i].name, name, n) == 0 && keys[i].name[n] == '.')
			return 2;
	}
	return 0;
}

/*
 * Blanks mapping n's entries that are not sandboxctl's (prefix: its dotted
 * path, "" at the top). An entry runs from its key to the next entry's key
 * (in a flow mapping that takes its comma along), the last one to its
 * value's end. What cfg refuses anyway (a key that is no plain name) is
 * left for cfg to name.
 */
static void
blank_walk(struct blank *b, yaml_document_t *doc, yaml_node_t *n,
    const char *prefix)
{
	yaml_node_pair_t *p, *top;
	yaml_node_t *kn, *vn, *next;
	char name[256];
	int kind;

	if (n == NULL || n->type != YAML_MAPPING_NODE)
		return;
	top = n->data.mapping.pairs.top;
	for (p = n->data.mapping.pairs.start; p < top; p++) {
		kn = yaml_document_get_node(doc, p->key);
		vn = yaml_document_get_node(doc, p->value);
		if (kn == NULL || vn == NULL || kn->type != YAML_SCALAR_NODE ||
		    strlen((char *)kn->data.scalar.value) != kn->data.scalar.length ||
		    (size_t)snprintf(name, sizeof(name), "%s%s%s", prefix,
		    *prefix ? "." : "", kn->data.scalar.value) >= sizeof(name))
			continue;
		kind = key_kind(name);
		if (kind == 1 || strcmp(name, "local") == 0)
			continue;
		if (kind == 2) {
			blank_walk(b, doc, vn, name);
			continue;
		}
		log_debug("%s: %s: not a local runtime key, ignored", b->path, name);
		next = p + 1 < top ? yaml_document_get_node(doc, p[1].key) : NULL;
		blank_range(b, kn->start_mark.index, next != NULL ?
		    next->start_mark.index : vn->end_mark.index);
	}
}

/* 0 if libyaml loads text's first document, else -1 with the line and
 * its problem in err. */
static int
yaml_check(const char *text, size_t len, const char *path, char *err,
    size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	int rc = -1;

	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, errlen, "%s: yaml parser init failed", path);
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (yaml_parser_load(&parser, &doc)) {
		yaml_document_delete(&doc);
		rc = 0;
	} else
		snprintf(err, errlen, "%s:%zu: %s", path,
		    (size_t)parser.problem_mark.line + 1,
		    parser.problem ? parser.problem : "YAML syntax error");
	yaml_parser_delete(&parser);
	return rc;
}

/*
 * cfg_load of keys[] from path (NULL: defaults and environment), the
 * entries that are not the local runtime's blanked (blank_walk). A text
 * libyaml refuses goes to cfg as it is: cfg names the fault. A text that
 * no longer parses once blanked gets its own message.
 */
static int
load_conf(struct rt_local_conf *conf, const char *path, char *err,
    size_t errlen)
{
	struct blank b;
	struct buf text;
	yaml_parser_t parser;
	yaml_document_t doc;
	char e[512];
	int rc;

	if (path == NULL)
		return cfg_load(keys, NELEM(keys), conf, NULL, err, errlen);
	buf_init(&text, CFG_MAX_FILE);
	if (util_read_file(path, &text, err, errlen) == -1) {
		buf_free(&text);
		return -1;
	}
	memset(&b, 0, sizeof(b));
	b.in = text.p != NULL ? text.p : "";
	b.len = text.len;
	b.out = xmalloc(b.len + 1);
	memcpy(b.out, b.in, b.len + 1);
	b.path = path;
	b.bi = blank_start(&b);
	if (yaml_parser_initialize(&parser)) {
		yaml_parser_set_input_string(&parser,
		    (const unsigned char *)b.in, b.len);
		if (yaml_parser_load(&parser, &doc)) {
			blank_walk(&b, &doc, yaml_document_get_root_node(&doc), "");
			/* cfg reads the first document: keep it the first
			 * when it is blanked whole */
			b.len = blank_byte(&b, doc.end_mark.index);
			yaml_document_delete(&doc);
		}
		yaml_parser_delete(&parser);
	}
	if (b.blanked > 0 && yaml_check(b.out, b.len, path, e, sizeof(e)) == -1) {
		/* what is kept no longer parses: an alias to an anchor gone */
		snprintf(err, errlen, "%s (sandboxctl reads local: and "
		    "homes.dir only: does an alias there name an anchor "
		    "outside them?)", e);
		rc = -1;
	} else
		rc = cfg_load_string(keys, NELEM(keys), conf, path, b.out,
		    b.len, err, errlen);
	free(b.out);
	buf_free(&text);
	return rc;
}

static const struct option main_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int
main(int argc, char **argv)
{
	struct rt_local_conf conf;
	struct runtime *rt = NULL;
	const struct cmd *c = NULL;
	struct ctl x;
	const char *cfgpath = NULL, *statedir = NULL;
	char err[1024];
	int ch, rc = 1, verbose = 0;
	size_t i;

	jsonmem_init();
	while ((ch = getopt_long(argc, argv, "+vs:f:c:h", main_opts,
	    NULL)) != -1) {
		switch (ch) {
		case 'v':
			verbose++;
			break;
		case 's':
			statedir = optarg;
			break;
		case 'f':
		case 'c':	/* the older spelling of -f */
			cfgpath = optarg;
			break;
		case 'h':
			usage(stdout, 0);
		default:
			usage(stderr, 2);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(stderr, 2);
	for (i = 0; i < NELEM(cmds) && c == NULL; i++)
		if (strcmp(argv[0], cmds[i].name) == 0)
			c = &cmds[i];
	if (c == NULL || argc < c->words || (!c->more && argc > c->words))
		usage(stderr, 2);
	log_init("sandboxctl", verbose ? LOG_LVL_DEBUG : LOG_LVL_WARN, NULL);
	memset(&conf, 0, sizeof(conf));
	if (load_conf(&conf, cfgpath, err, sizeof(err)) == -1) {
		fprintf(stderr, "sandboxctl: %s\n", err);
		cfg_free(keys, NELEM(keys), &conf);
		return 2;
	}
	if (statedir != NULL) {
		free(conf.state_dir);
		conf.state_dir = xstrdup(statedir);
	}
	if (c->rt && (rt = runtime_local_new(&conf, err, sizeof(err))) == NULL)
		fprintf(stderr, "sandboxctl: %s\n", err);
	else {
		x.rt = rt;
		x.conf = &conf;
		x.argc = argc;
		x.argv = argv;
		rc = c->run(&x);
	}
	if (rt != NULL)
		rt->ops->free(rt);
	cfg_free(keys, NELEM(keys), &conf);
	return rc;
}
