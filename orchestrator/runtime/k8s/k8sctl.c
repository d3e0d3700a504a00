/*
 * runtime/k8s/k8sctl.c: k8sctl, a small driver for the kubernetes runtime. It loads
 * the same "kubernetes:" configuration section the orchestrator embeds and
 * calls the runtime only through runtime.h, as the orchestrator does; the
 * tests (tests/e2e/6*-k8s-*.sh) and operators use it to try a cluster.
 *
 *   k8sctl -c FILE create ID [--image I] [--kata] [--non-root] [--ro-root]
 *          [--mem BYTES] [--cpu MILLIS] [--pids N] [--disk BYTES]
 *          [--label K=V]... [--env K=V]...
 *   k8sctl -c FILE start|stop|destroy|get|addr ID
 *   k8sctl -c FILE list
 *   k8sctl -c FILE labels ID K=V...
 *   k8sctl -c FILE attach ID ORG USER SESSION [K=V...]
 *   k8sctl -c FILE fleet-sync
 *   k8sctl -c FILE reconcile [KEEP_ID...]   destroy what is not kept
 *   k8sctl -c FILE agent ID METHOD PATH [BODY]
 *   k8sctl -c FILE poll N MS                list N times, MS apart, in one
 *                                           process (token rotation tests)
 *   k8sctl -c FILE requests [--seq N] PATH...  raw GETs through the
 *                                           runtime's client: one thread per
 *                                           PATH at once (or N in a row),
 *                                           with timings and client stats
 *   k8sctl render-netpol [PROXY_POD]        the example policy (netpol/)
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "agentc.h"
#include "buf.h"
#include "cfg.h"
#include "client.h"
#include "log.h"
#include "netpol.h"
#include "k8s.h"
#include "strnum.h"
#include "util.h"
#include "xmalloc.h"

struct ctlconf {
	struct rt_k8s_conf	k8s;
};

/* One agent call: a shell command's own timeout plus a margin. */
#define AGENT_CALL_MS	120000

static const struct cfg_key keys[] = {
	RUNTIME_K8S_CFG_KEYS("kubernetes.", offsetof(struct ctlconf, k8s))
};

static void
usage(void)
{
	fprintf(stderr,
	    "usage: k8sctl [-v] -c config.yaml command [args]\n"
	    "commands: create ID [opts] | start ID | stop ID | destroy ID | get ID |\n"
	    "          addr ID | list | labels ID K=V... | attach ID ORG USER SESSION [K=V...] |\n"
	    "          fleet-sync | reconcile [KEEP...] | agent ID METHOD PATH [BODY] |\n"
	    "          requests [--seq N] PATH... | render-netpol [PROXY_POD] | keys\n");
	exit(2);
}

static cJSON *
info_json(const struct rt_info *ri)
{
	cJSON *o = cJSON_CreateObject(), *l;
	size_t i;

	cJSON_AddStringToObject(o, "id", ri->id);
	cJSON_AddStringToObject(o, "state", rt_state_name(ri->state));
	cJSON_AddStringToObject(o, "image", ri->image);
	cJSON_AddNumberToObject(o, "created_ms", (double)ri->created_ms);
	cJSON_AddNumberToObject(o, "started_ms", (double)ri->started_ms);
	cJSON_AddStringToObject(o, "reason", ri->reason);
	l = cJSON_AddObjectToObject(o, "labels");
	for (i = 0; i < ri->nlabels; i++)
		cJSON_AddStringToObject(l, ri->labels[i].k, ri->labels[i].v);
	return o;
}

static void
print_json(cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);

	printf("%s\n", s ? s : "null");
	free(s);
	cJSON_Delete(o);
}

/* A K=V argument as a label or env pair (split in place). */
static int
kv_arg(char *s, struct rt_kv *kv)
{
	char *k, *v;

	if (util_kv_split(s, &k, &v) == -1)
		return -1;
	kv->k = k;
	kv->v = v;
	return 0;
}

static long long
num(const char *s)
{
	long long v;
	const char *es;

	if (strnum_ll(s, 0, 1LL << 50, &v, &es) == -1) {
		fprintf(stderr, "k8sctl: %s: %s\n", s, es);
		exit(2);
	}
	return v;
}

static int
cmd_create(struct runtime *rt, int argc, char **argv, char *err, size_t errlen)
{
	struct rt_spec sp;
	struct rt_kv labels[64], env[64];
	struct rt_info ri;
	int i;

	memset(&sp, 0, sizeof(sp));
	sp.id = argv[0];
	sp.run_as_root = 1;
	sp.writable_root = 1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--kata") == 0)
			sp.use_kata = 1;
		else if (strcmp(a, "--non-root") == 0)
			sp.run_as_root = 0;
		else if (strcmp(a, "--ro-root") == 0)
			sp.writable_root = 0;
		else {
			/* every other option takes a value */
			const char *val = i + 1 < argc ? argv[++i] : NULL;

			if (val == NULL)
				usage();
			if (strcmp(a, "--image") == 0)
				sp.image = val;
			else if (strcmp(a, "--mem") == 0)
				sp.mem_bytes = num(val);
			else if (strcmp(a, "--cpu") == 0)
				sp.cpu_millis = num(val);
			else if (strcmp(a, "--pids") == 0)
				sp.pids_max = num(val);
			else if (strcmp(a, "--disk") == 0)
				sp.disk_bytes = num(val);
			else if (strcmp(a, "--label") == 0 && sp.nlabels < NELEM(labels) &&
			    kv_arg(argv[i], &labels[sp.nlabels]) == 0)
				sp.nlabels++;
			else if (strcmp(a, "--env") == 0 && sp.nenv < NELEM(env) &&
			    kv_arg(argv[i], &env[sp.nenv]) == 0)
				sp.nenv++;
			else
				usage();
		}
	}
	sp.labels = labels;
	sp.env = env;
	if (rt->ops->create(rt, &sp, &ri, err, errlen) == -1)
		return -1;
	print_json(info_json(&ri));
	rt_info_clear(&ri);
	return 0;
}

/* Talks to a sandbox's agent at the address the runtime gives. */
static int
cmd_agent(struct runtime *rt, int argc, char **argv, char *err, size_t errlen)
{
	struct rt_agent_addr a;
	struct agentc *c = NULL;
	struct buf b;
	const char *body = argc > 3 ? argv[3] : NULL;
	int st, rc = -1;

	if (argc < 3)
		usage();
	buf_init(&b, AGENTC_MAX_RESP);
	if (rt->ops->agent_addr(rt, argv[0], &a, err, errlen) == -1 ||
	    (c = agentc_open(&a, AGENT_CALL_MS, err, errlen)) == NULL ||
	    agentc_request(c, argv[1], argv[2], body != NULL ?
	    "application/json" : NULL, body, body != NULL ? strlen(body) : 0,
	    AGENT_CALL_MS, &st, &b, err, errlen) == -1)
		goto out;
	printf("%.*s\n", (int)b.len, b.p != NULL ? b.p : "");
	if (st != 200) {
		snprintf(err, errlen, "agent answered %d", st);
		goto out;
	}
	rc = 0;
out:
	agentc_close(c);
	explicit_bzero(&a, sizeof(a));
	buf_free(&b);
	return rc;
}

struct rawreq {
	struct k8s_client	*cl;
	const char		*path;
	pthread_t		 thr;
	int			 rc, status;
	long long		 ms;
	char			 err[512];
};

static void *
rawreq_main(void *arg)
{
	struct rawreq *q = arg;
	long long t0 = util_mono_ms();
	struct buf b;

	buf_init(&b, K8S_MAX_RESP);
	q->rc = k8s_request(q->cl, "GET", q->path, NULL, NULL, &q->status, &b,
	    q->err, sizeof(q->err));
	q->ms = util_mono_ms() - t0;
	buf_free(&b);
	return NULL;
}

/* requests [--seq N] PATH...: prints "req I status=S ms=M" or "req I
 * error=E ms=M" per request, then the client's counters. */
static int
cmd_requests(struct runtime *rt, int argc, char **argv, char *err,
    size_t errlen)
{
	struct k8s_client *cl = runtime_k8s_client(rt);
	struct rawreq *q;
	struct k8s_stats st;
	long long seq = 0, i, n;
	int rc = 0;

	if (argc >= 2 && strcmp(argv[0], "--seq") == 0) {
		seq = num(argv[1]);
		argc -= 2;
		argv += 2;
	}
	if (argc < 1 || (seq > 0 && argc != 1) || seq > 1000 || argc > 64)
		usage();
	n = seq > 0 ? seq : argc;
	q = xcalloc((size_t)n, sizeof(*q));
	for (i = 0; i < n; i++) {
		q[i].cl = cl;
		q[i].path = seq > 0 ? argv[0] : argv[i];
		if (seq > 0)
			rawreq_main(&q[i]);
		else if (pthread_create(&q[i].thr, NULL, rawreq_main, &q[i]) != 0)
			fatalx("pthread_create failed");
	}
	for (i = 0; i < n; i++) {
		if (seq == 0)
			pthread_join(q[i].thr, NULL);
		if (q[i].rc == 0)
			printf("req %lld status=%d ms=%lld\n", i, q[i].status, q[i].ms);
		else {
			printf("req %lld error=%s ms=%lld\n", i, q[i].err, q[i].ms);
			snprintf(err, errlen, "%s", q[i].err);
			rc = -1;
		}
	}
	k8s_client_stats(cl, &st);
	printf("stats requests=%lld attempts=%lld connects=%lld max_inflight=%lld\n",
	    st.requests, st.attempts, st.connects, st.max_inflight);
	free(q);
	return rc;
}

static int
cmd_render_netpol(int argc, char **argv)
{
	struct netpol_kv lbl[] = {
		{ "app.kubernetes.io/managed-by", "sandbox-orchestrator" },
		{ "sandbox.dev/instance", "default" },
		{ "sandbox.dev/id", "3f9c2a1e" },
	};
	struct netpol_kv pod[] = { { "sandbox.dev/id", "3f9c2a1e" },
	    { "sandbox.dev/role", "sandbox" } };
	struct netpol_kv proxy[] = { { "app.kubernetes.io/name", "egress-proxy" },
	    { "sandbox.dev/proxy-pod", argc > 0 ? argv[0] : "egress-proxy-7d9c5-x2k4q" } };
	struct netpol_kv orch[] = { { "app.kubernetes.io/name", "sandbox-orchestrator" } };
	struct netpol_sandbox np = {
		.name = "sbx-3f9c2a1e", .ns = "sandboxes",
		.labels = lbl, .nlabels = 3, .pod = pod, .npod = 2,
		.proxy_ns = "sandbox-system", .proxy = proxy, .nproxy = 2,
		.proxy_port = 3128, .orch_ns = "sandbox-system", .orch = orch,
		.norch = 1, .agent_port = 7070,
	};
	cJSON *o;
	char *s;

	if ((o = netpol_render_sandbox(&np)) == NULL)
		return 1;
	s = cJSON_Print(o);
	printf("%s\n", s);
	free(s);
	cJSON_Delete(o);
	return 0;
}

int
main(int argc, char **argv)
{
	struct ctlconf conf;
	struct runtime *rt = NULL;
	const char *cfgpath = NULL, *cmd;
	char err[1024] = "", env[4096];
	int ch, verbose = LOG_LVL_WARN, rc = 1;

	while ((ch = getopt(argc, argv, "+c:v")) != -1) {
		switch (ch) {
		case 'c':
			cfgpath = optarg;
			break;
		case 'v':
			verbose++;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	cmd = argv[0];
	argc--;
	argv++;
	log_init("k8sctl", verbose, NULL);
	if (strcmp(cmd, "render-netpol") == 0)
		return cmd_render_netpol(argc, argv);
	if (strcmp(cmd, "keys") == 0) {
		cfg_print_markdown(keys, NELEM(keys), stdout);
		return 0;
	}
	memset(&conf, 0, sizeof(conf));
	if (cfg_load(keys, NELEM(keys), &conf, cfgpath, err, sizeof(err)) == -1) {
		fprintf(stderr, "k8sctl: %s\n", err);
		goto out;
	}
	/* The fleet thread belongs to a long-running orchestrator. */
	conf.k8s.fleet_interval_ms = 0;
	if ((rt = runtime_k8s_new(&conf.k8s, err, sizeof(err))) == NULL) {
		fprintf(stderr, "k8sctl: %s\n", err);
		goto out;
	}
	if (strcmp(cmd, "create") == 0 && argc >= 1)
		rc = cmd_create(rt, argc, argv, err, sizeof(err));
	else if (strcmp(cmd, "start") == 0 && argc == 1)
		rc = rt->ops->start(rt, argv[0], err, sizeof(err));
	else if (strcmp(cmd, "stop") == 0 && argc == 1)
		rc = rt->ops->stop(rt, argv[0], err, sizeof(err));
	else if (strcmp(cmd, "destroy") == 0 && argc == 1)
		rc = rt->ops->destroy(rt, argv[0], err, sizeof(err));
	else if (strcmp(cmd, "get") == 0 && argc == 1) {
		struct rt_info ri;
		if ((rc = rt->ops->get(rt, argv[0], &ri, err, sizeof(err))) == 0) {
			print_json(info_json(&ri));
			rt_info_clear(&ri);
		}
	} else if (strcmp(cmd, "addr") == 0 && argc == 1) {
		struct rt_agent_addr a;
		if ((rc = rt->ops->agent_addr(rt, argv[0], &a, err, sizeof(err))) == 0)
			printf("%s %d\n", a.host, a.port);
	} else if (strcmp(cmd, "list") == 0 && argc == 0) {
		struct rt_info *ri;
		size_t n, i;
		cJSON *arr;
		if ((rc = rt->ops->list(rt, &ri, &n, err, sizeof(err))) == 0) {
			arr = cJSON_CreateArray();
			for (i = 0; i < n; i++)
				cJSON_AddItemToArray(arr, info_json(&ri[i]));
			print_json(arr);
			rt_info_free_array(ri, n);
		}
	} else if (strcmp(cmd, "labels") == 0 && argc >= 1) {
		struct rt_kv kv[64];
		int i;
		for (i = 1; i < argc && i <= 64; i++)
			if (kv_arg(argv[i], &kv[i - 1]) == -1)
				usage();
		rc = rt->ops->set_labels(rt, argv[0], kv, (size_t)(argc - 1), err,
		    sizeof(err));
	} else if (strcmp(cmd, "attach") == 0 && argc >= 4) {
		/* ID ORG USER SESSION [K=V...]: the identity is labels */
		struct rt_kv kv[64] = { { LBL_ORG, argv[1] }, { LBL_USER, argv[2] },
		    { LBL_SESSION, argv[3] } };
		struct rt_egress eg = { kv, 3 };
		int i;
		for (i = 4; i < argc && eg.nlabels < 64; i++, eg.nlabels++)
			if (kv_arg(argv[i], &kv[eg.nlabels]) == -1)
				usage();
		/* As the orchestrator does: the env goes to the agent too. */
		if ((rc = rt->ops->attach_egress(rt, argv[0], &eg, env, sizeof(env),
		    err, sizeof(err))) == 0 &&
		    (rc = runtime_k8s_push_env(rt, argv[0], env, err,
		    sizeof(err))) == 0)
			printf("%s", env);
		explicit_bzero(env, sizeof(env));
	} else if (strcmp(cmd, "poll") == 0 && argc == 2) {
		/* One long-lived client, as in the orchestrator. */
		struct rt_info *ri;
		size_t n;
		long long i, times = num(argv[0]), ms = num(argv[1]);
		for (rc = 0, i = 0; i < times && rc == 0; i++) {
			if (i > 0)
				usleep((useconds_t)(ms * 1000));
			if ((rc = rt->ops->list(rt, &ri, &n, err, sizeof(err))) == 0) {
				printf("poll %lld ok %zu\n", i, n);
				fflush(stdout);
				rt_info_free_array(ri, n);
			}
		}
	} else if (strcmp(cmd, "fleet-sync") == 0 && argc == 0)
		rc = runtime_k8s_fleet_sync(rt, err, sizeof(err));
	else if (strcmp(cmd, "reconcile") == 0) {
		/* What the orchestrator's reconcile sweep does: list, and
		 * destroy every sandbox that belongs to no known session. */
		struct rt_info *ri;
		size_t n, i;
		int j, keep;
		if ((rc = rt->ops->list(rt, &ri, &n, err, sizeof(err))) == 0) {
			for (i = 0; i < n && rc == 0; i++) {
				for (keep = 0, j = 0; j < argc; j++)
					if (strcmp(argv[j], ri[i].id) == 0)
						keep = 1;
				if (keep)
					continue;
				printf("destroy %s (%s%s%s)\n", ri[i].id,
				    rt_state_name(ri[i].state), ri[i].reason[0] ? ": " : "",
				    ri[i].reason);
				rc = rt->ops->destroy(rt, ri[i].id, err, sizeof(err));
			}
			rt_info_free_array(ri, n);
		}
	} else if (strcmp(cmd, "requests") == 0)
		rc = cmd_requests(rt, argc, argv, err, sizeof(err));
	else if (strcmp(cmd, "agent") == 0)
		rc = cmd_agent(rt, argc, argv, err, sizeof(err));
	else
		usage();
	if (rc != 0) {
		fprintf(stderr, "k8sctl: %s\n", err);
		rc = 1;
	}
out:
	if (rt != NULL)
		rt->ops->free(rt);
	cfg_free(keys, NELEM(keys), &conf);
	return rc;
}
