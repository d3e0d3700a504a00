/*
 * sandboxctl: operator and test tool for the local runtime. Drives sandboxes
 * through the library API (runtime/local/local.h) and their agents through agentc.
 *
 *   sandboxctl [-v] [-s STATE_DIR] [-c CONFIG.yaml] COMMAND ...
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
 *
 * The config file holds the `local:` section of the orchestrator's config
 * (the same keys, see --help); environment overrides apply.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "agentc.h"
#include "buf.h"
#include "cfg.h"
#include "log.h"
#include "local.h"
#include "strnum.h"
#include "xmalloc.h"

static const struct cfg_key keys[] = {
	RUNTIME_LOCAL_CFG_KEYS("local.", 0)
};

#define MAX_KV	128

static NORETURN void
usage(void)
{
	fprintf(stderr,
	    "usage: sandboxctl [-v] [-s STATE_DIR] [-c CONFIG.yaml] COMMAND ...\n"
	    "  create [--image NAME] [--label K=V]... [--env K=V]... [--mem SIZE]\n"
	    "         [--cpu MILLIS] [--pids N] [--disk SIZE] [--no-root]\n"
	    "         [--read-only] ID\n"
	    "  exec [--timeout MS] ID -- COMMAND...\n"
	    "  list [--json] | get ID | stop ID | start ID | destroy ID\n"
	    "  labels ID [K=V]... | attach ID [--org O] [--user U] [--session S]\n"
	    "  agent ID | image add NAME DIR | keys\n");
	exit(2);
}

static int
split_kv(char *s, struct rt_kv *kv)
{
	char *eq = strchr(s, '=');

	if (eq == NULL || eq == s)
		return -1;
	*eq = '\0';
	kv->k = s;
	kv->v = eq + 1;
	return 0;
}

static void
print_info(const struct rt_info *ri, cJSON *arr)
{
	size_t i;

	if (arr != NULL) {
		cJSON *o = cJSON_CreateObject(), *l;

		cJSON_AddStringToObject(o, "id", ri->id);
		cJSON_AddStringToObject(o, "state", rt_state_name(ri->state));
		cJSON_AddStringToObject(o, "image", ri->image);
		cJSON_AddNumberToObject(o, "created_ms", (double)ri->created_ms);
		cJSON_AddNumberToObject(o, "started_ms", (double)ri->started_ms);
		cJSON_AddStringToObject(o, "reason", ri->reason);
		l = cJSON_AddObjectToObject(o, "labels");
		for (i = 0; i < ri->nlabels; i++)
			cJSON_AddStringToObject(l, ri->labels[i].k,
			    ri->labels[i].v);
		cJSON_AddItemToArray(arr, o);
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

static int
cmd_exec(struct runtime *rt, int argc, char **argv)
{
	struct rt_agent_addr a;
	struct agentc *ac;
	struct buf cmd, resp;
	long long tmo = 120000;
	const char *errstr, *id;
	char err[512];
	cJSON *req, *o, *v;
	char *body;
	int i, st, rc = 1;

	i = 1;
	if (i + 1 < argc && strcmp(argv[i], "--timeout") == 0) {
		if (strnum_ll(argv[i + 1], 1, 86400000, &tmo, &errstr) == -1) {
			fprintf(stderr, "sandboxctl: --timeout: %s\n", errstr);
			return 2;
		}
		i += 2;
	}
	if (i >= argc)
		usage();
	id = argv[i++];
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc)
		usage();
	buf_init(&cmd, 1 << 20);
	for (; i < argc; i++)
		if ((cmd.len && buf_addstr(&cmd, " ") == -1) ||
		    buf_addstr(&cmd, argv[i]) == -1) {
			fprintf(stderr, "sandboxctl: command too long\n");
			return 2;
		}
	if (rt->ops->agent_addr(rt, id, &a, err, sizeof(err)) == -1) {
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

int
main(int argc, char **argv)
{
	struct rt_local_conf conf;
	struct runtime *rt = NULL;
	const char *cfgpath = NULL, *statedir = NULL, *cmd;
	char err[1024];
	int ch, rc = 1, verbose = 0;

	while ((ch = getopt(argc, argv, "+vs:c:h")) != -1) {
		switch (ch) {
		case 'v': verbose++; break;
		case 's': statedir = optarg; break;
		case 'c': cfgpath = optarg; break;
		default: usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	log_init("sandboxctl", verbose ? LOG_LVL_DEBUG : LOG_LVL_WARN, NULL);
	cmd = argv[0];
	memset(&conf, 0, sizeof(conf));
	if (cfg_load(keys, NELEM(keys), &conf, cfgpath, err, sizeof(err)) == -1) {
		fprintf(stderr, "sandboxctl: %s\n", err);
		cfg_free(keys, NELEM(keys), &conf);
		return 2;
	}
	if (statedir != NULL) {
		free(conf.state_dir);
		conf.state_dir = xstrdup(statedir);
	}
	if (strcmp(cmd, "keys") == 0) {
		cfg_print_help(keys, NELEM(keys), stdout);
		rc = 0;
		goto done;
	}
	if (strcmp(cmd, "image") == 0) {
		if (argc != 4 || strcmp(argv[1], "add") != 0)
			usage();
		if (runtime_local_image_add(&conf, argv[2], argv[3], err,
		    sizeof(err)) == -1) {
			fprintf(stderr, "sandboxctl: %s\n", err);
			goto done;
		}
		rc = 0;
		goto done;
	}
	if ((rt = runtime_local_new(&conf, err, sizeof(err))) == NULL) {
		fprintf(stderr, "sandboxctl: %s\n", err);
		goto done;
	}

	if (strcmp(cmd, "create") == 0) {
		struct rt_kv labels[MAX_KV], env[MAX_KV];
		struct rt_spec sp;
		struct rt_info ri;
		const char *errstr;
		int i;

		memset(&sp, 0, sizeof(sp));
		sp.run_as_root = 1;
		sp.writable_root = 1;
		sp.labels = labels;
		sp.env = env;
		for (i = 1; i < argc; i++) {
			if (strcmp(argv[i], "--image") == 0 && i + 1 < argc)
				sp.image = argv[++i];
			else if (strcmp(argv[i], "--label") == 0 && i + 1 < argc) {
				if (sp.nlabels == MAX_KV ||
				    split_kv(argv[++i], &labels[sp.nlabels]) == -1)
					usage();
				sp.nlabels++;
			} else if (strcmp(argv[i], "--env") == 0 && i + 1 < argc) {
				if (sp.nenv == MAX_KV ||
				    split_kv(argv[++i], &env[sp.nenv]) == -1)
					usage();
				sp.nenv++;
			} else if (strcmp(argv[i], "--mem") == 0 && i + 1 < argc) {
				if (strnum_size(argv[++i], &sp.mem_bytes,
				    &errstr) == -1)
					usage();
			} else if (strcmp(argv[i], "--cpu") == 0 && i + 1 < argc) {
				if (strnum_ll(argv[++i], 1, 1000000,
				    &sp.cpu_millis, &errstr) == -1)
					usage();
			} else if (strcmp(argv[i], "--pids") == 0 && i + 1 < argc) {
				if (strnum_ll(argv[++i], 1, 10000000,
				    &sp.pids_max, &errstr) == -1)
					usage();
			} else if (strcmp(argv[i], "--disk") == 0 && i + 1 < argc) {
				if (strnum_size(argv[++i], &sp.disk_bytes,
				    &errstr) == -1)
					usage();
			} else if (strcmp(argv[i], "--no-root") == 0)
				sp.run_as_root = 0;
			else if (strcmp(argv[i], "--read-only") == 0)
				sp.writable_root = 0;
			else if (argv[i][0] != '-' && sp.id == NULL)
				sp.id = argv[i];
			else
				usage();
		}
		if (sp.id == NULL)
			usage();
		if (rt->ops->create(rt, &sp, &ri, err, sizeof(err)) == -1) {
			fprintf(stderr, "sandboxctl: create %s: %s\n", sp.id, err);
			goto done;
		}
		print_info(&ri, NULL);
		rt_info_clear(&ri);
		rc = 0;
	} else if (strcmp(cmd, "exec") == 0) {
		rc = cmd_exec(rt, argc, argv);
	} else if (strcmp(cmd, "list") == 0) {
		struct rt_info *a;
		size_t n, i;
		int json = argc > 1 && strcmp(argv[1], "--json") == 0;
		cJSON *arr = json ? cJSON_CreateArray() : NULL;

		if (rt->ops->list(rt, &a, &n, err, sizeof(err)) == -1) {
			fprintf(stderr, "sandboxctl: list: %s\n", err);
			cJSON_Delete(arr);
			goto done;
		}
		for (i = 0; i < n; i++)
			print_info(&a[i], arr);
		if (json) {
			char *s = cJSON_Print(arr);
			printf("%s\n", s);
			free(s);
			cJSON_Delete(arr);
		}
		rt_info_free_array(a, n);
		rc = 0;
	} else if (strcmp(cmd, "get") == 0 && argc == 2) {
		struct rt_info ri;
		cJSON *arr = cJSON_CreateArray();
		char *s;

		if (rt->ops->get(rt, argv[1], &ri, err, sizeof(err)) == -1) {
			fprintf(stderr, "sandboxctl: %s: %s\n", argv[1], err);
			cJSON_Delete(arr);
			goto done;
		}
		print_info(&ri, arr);
		s = cJSON_Print(cJSON_GetArrayItem(arr, 0));
		printf("%s\n", s);
		free(s);
		cJSON_Delete(arr);
		rt_info_clear(&ri);
		rc = 0;
	} else if ((strcmp(cmd, "stop") == 0 || strcmp(cmd, "start") == 0 ||
	    strcmp(cmd, "destroy") == 0) && argc == 2) {
		int r;

		if (strcmp(cmd, "stop") == 0)
			r = rt->ops->stop(rt, argv[1], err, sizeof(err));
		else if (strcmp(cmd, "start") == 0)
			r = rt->ops->start(rt, argv[1], err, sizeof(err));
		else
			r = rt->ops->destroy(rt, argv[1], err, sizeof(err));
		if (r == -1) {
			fprintf(stderr, "sandboxctl: %s %s: %s\n", cmd, argv[1],
			    err);
			goto done;
		}
		rc = 0;
	} else if (strcmp(cmd, "labels") == 0 && argc >= 2) {
		struct rt_kv kv[MAX_KV];
		size_t n = 0;
		int i;

		for (i = 2; i < argc; i++) {
			if (n == MAX_KV || split_kv(argv[i], &kv[n]) == -1)
				usage();
			n++;
		}
		if (rt->ops->set_labels(rt, argv[1], kv, n, err,
		    sizeof(err)) == -1) {
			fprintf(stderr, "sandboxctl: labels: %s\n", err);
			goto done;
		}
		rc = 0;
	} else if (strcmp(cmd, "attach") == 0 && argc >= 2) {
		/* --org/--user/--session become the labels the identity is
		 * read from (orchestrator/egress.h) */
		struct rt_kv kv[3];
		struct rt_egress eg = { kv, 0 };
		char env[4096];
		int i;

		for (i = 2; i + 1 < argc; i += 2) {
			if (eg.nlabels == NELEM(kv))
				usage();
			if (strcmp(argv[i], "--org") == 0)
				kv[eg.nlabels].k = LBL_ORG;
			else if (strcmp(argv[i], "--user") == 0)
				kv[eg.nlabels].k = LBL_USER;
			else if (strcmp(argv[i], "--session") == 0)
				kv[eg.nlabels].k = LBL_SESSION;
			else
				usage();
			kv[eg.nlabels++].v = argv[i + 1];
		}
		if (i != argc)
			usage();
		if (rt->ops->attach_egress(rt, argv[1], &eg, env, sizeof(env),
		    err, sizeof(err)) == -1) {
			fprintf(stderr, "sandboxctl: attach: %s\n", err);
			goto done;
		}
		fputs(env, stdout);
		rc = 0;
	} else if (strcmp(cmd, "agent") == 0 && argc == 2) {
		struct rt_agent_addr a;

		if (rt->ops->agent_addr(rt, argv[1], &a, err, sizeof(err)) == -1) {
			fprintf(stderr, "sandboxctl: %s: %s\n", argv[1], err);
			goto done;
		}
		printf("%s\n", a.unix_path);
		rc = 0;
	} else
		usage();
done:
	if (rt != NULL)
		rt->ops->free(rt);
	cfg_free(keys, NELEM(keys), &conf);
	return rc;
}
