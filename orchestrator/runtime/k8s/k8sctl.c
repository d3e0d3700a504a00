/*
 * runtime/k8s/k8sctl.c: k8sctl, a small driver for the kubernetes runtime. It loads
 * the same "kubernetes:" configuration section the orchestrator embeds and
 * calls the runtime only through runtime.h, as the orchestrator does; the
 * tests (tests/e2e/6*-k8s-*.sh) and operators use it to try a cluster.
 *
 *   k8sctl [-v] -f FILE create ID [--image I] [--kata] [--non-root] [--ro-root]
 *          [--mem BYTES] [--cpu MILLIS] [--pids N] [--disk BYTES]
 *          [--workspace-from ID] [--label K=V]... [--env K=V]...
 *   k8sctl -f FILE check ID [create's options]   what create would refuse
 *   k8sctl -f FILE start|stop|destroy|get|addr ID
 *   k8sctl -f FILE list
 *   k8sctl -f FILE labels ID K=V...
 *   k8sctl -f FILE attach ID ORG USER SESSION [K=V...]   and push the env
 *   k8sctl -f FILE fleet-sync [N MS]        one sweep, or N MS apart
 *   k8sctl -f FILE reconcile [KEEP_ID...]   destroy what is not kept
 *   k8sctl -f FILE agent ID METHOD PATH [BODY]
 *   k8sctl -f FILE app-connect ID PORT      where the gateway connects
 *   k8sctl -f FILE app-ports ID [PORT...]   the exposed ports (none: no
 *                                           gateway ingress)
 *   k8sctl -f FILE poll N MS                list N times, MS apart, in one
 *                                           process (token rotation tests)
 *   k8sctl -f FILE requests [--seq N] PATH...  raw GETs through the
 *                                           runtime's client: one thread per
 *                                           PATH at once (or N in a row),
 *                                           with timings and client stats
 *   k8sctl -f FILE homes | home USER | home-delete USER   the per-user
 *                                           home claims (home.c)
 *   k8sctl render-netpol [PROXY_POD [PORT...]]  the example policy
 *                                           (netpol/; with exposed ports)
 *   k8sctl keys                             the configuration keys (markdown)
 *
 * -c FILE is the same as -f FILE (older scripts); -v logs more, repeated;
 * --help prints the usage. Exit status: 0 done, 1 failed, 2 usage error.
 */
#include <getopt.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lib/agentc.h"
#include "buf.h"
#include "cfg.h"
#include "client.h"
#include "jsonmem.h"
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
/* Labels (or env pairs) one command line may give: more than a session
 * record holds (orchestrator/session/sess.c writes six). */
#define CTL_MAX_KV	64

static const struct cfg_key keys[] = {
	RUNTIME_K8S_CFG_KEYS("kubernetes.", offsetof(struct ctlconf, k8s))
};

static void
usage_to(FILE *fp)
{
	fprintf(fp,
	    "usage: k8sctl [-v] -f config.yaml command [args]\n"
	    "commands: create ID [opts] | check ID [opts] | start ID | stop ID |\n"
	    "          destroy ID | get ID |\n"
	    "          addr ID | list | labels ID K=V... | attach ID ORG USER SESSION [K=V...] |\n"
	    "          fleet-sync [N MS] | reconcile [KEEP...] | agent ID METHOD PATH [BODY] |\n"
	    "          app-connect ID PORT | app-ports ID [PORT...] |\n"
	    "          homes | home USER | home-delete USER |\n"
	    "          poll N MS | requests [--seq N] PATH... | render-netpol [PROXY_POD [PORT...]] | keys\n");
}

static void NORETURN
usage(void)
{
	usage_to(stderr);
	exit(2);
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

/* The options of create and check into sp (labels and env into the
 * arrays, which must outlive sp). */
static void
spec_args(struct rt_spec *sp, int argc, char **argv, struct rt_kv *labels,
    struct rt_kv *env, size_t max)
{
	int i;

	memset(sp, 0, sizeof(*sp));
	sp->id = argv[0];
	sp->run_as_root = 1;
	sp->writable_root = 1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--kata") == 0)
			sp->use_kata = 1;
		else if (strcmp(a, "--non-root") == 0)
			sp->run_as_root = 0;
		else if (strcmp(a, "--ro-root") == 0)
			sp->writable_root = 0;
		else {
			/* every other option takes a value */
			const char *val = i + 1 < argc ? argv[++i] : NULL;

			if (val == NULL)
				usage();
			if (strcmp(a, "--image") == 0)
				sp->image = val;
			else if (strcmp(a, "--mem") == 0)
				sp->mem_bytes = num(val);
			else if (strcmp(a, "--cpu") == 0)
				sp->cpu_millis = num(val);
			else if (strcmp(a, "--pids") == 0)
				sp->pids_max = num(val);
			else if (strcmp(a, "--disk") == 0)
				sp->disk_bytes = num(val);
			else if (strcmp(a, "--workspace-from") == 0)
				sp->workspace_from = val;
			else if (strcmp(a, "--label") == 0 && sp->nlabels < max &&
			    kv_arg(argv[i], &labels[sp->nlabels]) == 0)
				sp->nlabels++;
			else if (strcmp(a, "--env") == 0 && sp->nenv < max &&
			    kv_arg(argv[i], &env[sp->nenv]) == 0)
				sp->nenv++;
			else
				usage();
		}
	}
	sp->labels = labels;
	sp->env = env;
}

static int
cmd_create(struct runtime *rt, int argc, char **argv, char *err, size_t errlen)
{
	struct rt_spec sp;
	struct rt_kv labels[CTL_MAX_KV], env[CTL_MAX_KV];
	struct rt_info ri;

	spec_args(&sp, argc, argv, labels, env, CTL_MAX_KV);
	if (rt->ops->create(rt, &sp, NULL, &ri, err, errlen) == -1)
		return -1;
	print_json(rt_info_json(&ri));
	rt_info_clear(&ri);
	return 0;
}

/* What create would refuse, creating nothing (runtime.h check). */
static int
cmd_check(struct runtime *rt, int argc, char **argv, char *err, size_t errlen)
{
	struct rt_spec sp;
	struct rt_kv labels[CTL_MAX_KV], env[CTL_MAX_KV];

	spec_args(&sp, argc, argv, labels, env, CTL_MAX_KV);
	if (rt->ops->check(rt, &sp, err, errlen) == -1)
		return -1;
	printf("ok\n");
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

/* A port argument as the op gets it: any integer (the op says what is out
 * of range), else a usage error. */
static int
port_arg(const char *s)
{
	long long v;
	const char *es;

	if (strnum_ll(s, -1000000, 1000000, &v, &es) == -1) {
		fprintf(stderr, "k8sctl: port %s: %s\n", s, es);
		exit(2);
	}
	return (int)v;
}

/* render-netpol [PROXY_POD [PORT...]]: the example policy; with ports,
 * the one of a sandbox that exposes them (netpol/README.md). */
static int
cmd_render_netpol(struct runtime *rt UNUSED, int argc, char **argv, char *err,
    size_t errlen)
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
	struct netpol_kv gw[] = { { "app.kubernetes.io/name", "app-gateway" } };
	struct netpol_kv ann = { "sandbox.dev/app-ports", NULL };
	struct netpol_sandbox np = {
		.name = "sbx-3f9c2a1e", .ns = "sandboxes",
		.labels = lbl, .nlabels = 3, .pod = pod, .npod = 2,
		.proxy_ns = "sandbox-system", .proxy = proxy, .nproxy = 2,
		.proxy_port = 3128, .orch_ns = "sandbox-system", .orch = orch,
		.norch = 1, .agent_port = 7070,
	};
	int ports[64];
	char pbuf[64 * 7] = "";
	size_t off = 0;
	cJSON *o;
	char *s;
	int i;

	if (argc - 1 > (int)NELEM(ports))
		usage();
	for (i = 1; i < argc; i++) {
		ports[i - 1] = port_arg(argv[i]);
		off += (size_t)snprintf(pbuf + off, sizeof(pbuf) - off, "%s%d",
		    i > 1 ? "," : "", ports[i - 1]);
	}
	if (argc > 1) {
		ann.v = pbuf;
		np.annotations = &ann;
		np.nannotations = 1;
		np.gw_ns = "sandbox-system";
		np.gw = gw;
		np.ngw = 1;
		np.app_ports = ports;
		np.napp_ports = (size_t)(argc - 1);
	}
	if ((o = netpol_render_sandbox(&np)) == NULL) {
		snprintf(err, errlen, "cannot render the example policy");
		return -1;
	}
	s = cJSON_Print(o);
	printf("%s\n", s);
	free(s);
	cJSON_Delete(o);
	return 0;
}

/* The lifecycle ops on one ID (start, stop, destroy), by table row. */
enum idop { OP_NONE, OP_START, OP_STOP, OP_DESTROY };

static int
run_idop(struct runtime *rt, enum idop op, const char *id, char *err,
    size_t errlen)
{
	switch (op) {
	case OP_START:
		return rt->ops->start(rt, id, NULL, err, errlen);
	case OP_STOP:
		return rt->ops->stop(rt, id, err, errlen);
	case OP_DESTROY:
		return rt->ops->destroy(rt, id, err, errlen);
	case OP_NONE:
		break;
	}
	snprintf(err, errlen, "no such operation");
	return -1;
}

static int
cmd_get(struct runtime *rt, int argc UNUSED, char **argv, char *err,
    size_t errlen)
{
	struct rt_info ri;
	int rc;

	if ((rc = rt->ops->get(rt, argv[0], &ri, err, errlen)) == 0) {
		print_json(rt_info_json(&ri));
		rt_info_clear(&ri);
	}
	return rc == 0 ? 0 : -1;
}

static int
cmd_addr(struct runtime *rt, int argc UNUSED, char **argv, char *err,
    size_t errlen)
{
	struct rt_agent_addr a;

	if (rt->ops->agent_addr(rt, argv[0], &a, err, errlen) == -1)
		return -1;
	printf("%s %d\n", a.host, a.port);
	explicit_bzero(&a, sizeof(a));
	return 0;
}

static cJSON *
home_json(const struct rt_home *h)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "user", h->user);
	cJSON_AddBoolToObject(o, "exists", h->exists);
	cJSON_AddNumberToObject(o, "size_bytes", (double)h->size_bytes);
	cJSON_AddNumberToObject(o, "last_used_ms", (double)h->last_used_ms);
	cJSON_AddBoolToObject(o, "in_use", h->in_use);
	return o;
}

static int
cmd_homes(struct runtime *rt, int argc UNUSED, char **argv UNUSED, char *err,
    size_t errlen)
{
	struct rt_home *v;
	size_t n, i;
	cJSON *arr;

	if (rt->ops->home_list(rt, &v, &n, err, errlen) == -1)
		return -1;
	arr = cJSON_CreateArray();
	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, home_json(&v[i]));
	print_json(arr);
	free(v);
	return 0;
}

static int
cmd_home(struct runtime *rt, int argc UNUSED, char **argv, char *err,
    size_t errlen)
{
	struct rt_home h;

	if (rt->ops->home_get(rt, argv[0], &h, err, errlen) == -1)
		return -1;
	print_json(home_json(&h));
	return 0;
}

static int
cmd_home_delete(struct runtime *rt, int argc UNUSED, char **argv, char *err,
    size_t errlen)
{
	return rt->ops->home_delete(rt, argv[0], err, errlen);
}

static int
cmd_list(struct runtime *rt, int argc UNUSED, char **argv UNUSED, char *err,
    size_t errlen)
{
	struct rt_info *ri;
	size_t n, i;
	cJSON *arr;

	if (rt->ops->list(rt, &ri, &n, err, errlen) == -1)
		return -1;
	arr = cJSON_CreateArray();
	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, rt_info_json(&ri[i]));
	print_json(arr);
	rt_info_free_array(ri, n);
	return 0;
}

/* labels ID K=V...: replaces the labels kept with the sandbox. */
static int
cmd_labels(struct runtime *rt, int argc, char **argv, char *err,
    size_t errlen)
{
	struct rt_kv kv[CTL_MAX_KV];
	int i;

	if (argc - 1 > CTL_MAX_KV)
		usage();
	for (i = 1; i < argc; i++)
		if (kv_arg(argv[i], &kv[i - 1]) == -1)
			usage();
	return rt->ops->set_labels(rt, argv[0], kv, (size_t)(argc - 1), err,
	    errlen);
}

/* attach ID ORG USER SESSION [K=V...]: the identity is labels; the env
 * goes to the agent as the orchestrator sends it, and to stdout. */
static int
cmd_attach(struct runtime *rt, int argc, char **argv, char *err,
    size_t errlen)
{
	struct rt_kv kv[CTL_MAX_KV] = { { LBL_ORG, argv[1] },
	    { LBL_USER, argv[2] }, { LBL_SESSION, argv[3] } };
	struct rt_egress eg = { .labels = kv, .nlabels = 3 };
	char env[4096];
	int i, rc;

	for (i = 4; i < argc && eg.nlabels < CTL_MAX_KV; i++, eg.nlabels++)
		if (kv_arg(argv[i], &kv[eg.nlabels]) == -1)
			usage();
	if ((rc = rt->ops->attach_egress(rt, argv[0], &eg, env, sizeof(env),
	    err, errlen)) == 0 &&
	    (rc = runtime_k8s_push_env(rt, argv[0], env, err, errlen)) == 0)
		printf("%s", env);
	explicit_bzero(env, sizeof(env));
	return rc;
}

/* app-connect ID PORT: prints the address ("podIP:port") the gateway
 * would connect to. */
static int
cmd_app_connect(struct runtime *rt, int argc UNUSED, char **argv, char *err,
    size_t errlen)
{
	struct rt_app_conn c;

	if (rt->ops->app_connect(rt, argv[0], port_arg(argv[1]), &c, err,
	    errlen) != 0)
		return -1;
	printf("%s\n", c.addr);
	return 0;
}

/* app-ports ID [PORT...]: the ports exposed now, as the core sets them. */
static int
cmd_app_ports(struct runtime *rt, int argc, char **argv, char *err,
    size_t errlen)
{
	int *ports = xcalloc((size_t)argc, sizeof(*ports));
	int i, rc;

	for (i = 1; i < argc; i++)
		ports[i - 1] = port_arg(argv[i]);
	rc = rt->ops->app_ports(rt, argv[0], ports, (size_t)(argc - 1), err,
	    errlen);
	free(ports);
	return rc;
}

/* poll N MS: one long-lived client, as in the orchestrator. */
static int
cmd_poll(struct runtime *rt, int argc UNUSED, char **argv, char *err,
    size_t errlen)
{
	struct rt_info *ri;
	size_t n;
	long long i, times = num(argv[0]), ms = num(argv[1]);

	for (i = 0; i < times; i++) {
		if (i > 0)
			usleep((useconds_t)(ms * 1000));
		if (rt->ops->list(rt, &ri, &n, err, errlen) == -1)
			return -1;
		printf("poll %lld ok %zu\n", i, n);
		fflush(stdout);
		rt_info_free_array(ri, n);
	}
	return 0;
}

/* fleet-sync [N MS]: one sweep, or N sweeps MS apart in one process (as
 * the fleet thread: what it remembers, e.g. boot ids, carries over). */
static int
cmd_fleet_sync(struct runtime *rt, int argc, char **argv, char *err,
    size_t errlen)
{
	long long i, times = argc >= 2 ? num(argv[0]) : 1;
	long long ms = argc >= 2 ? num(argv[1]) : 0;

	for (i = 0; i < times; i++) {
		if (i > 0)
			usleep((useconds_t)(ms * 1000));
		if (runtime_k8s_fleet_sync(rt, err, errlen) == -1)
			return -1;
		if (argc >= 2) {
			printf("sweep %lld ok\n", i);
			fflush(stdout);
		}
	}
	return 0;
}

/* reconcile [KEEP...]: what the orchestrator's reconcile sweep does: list,
 * and destroy every sandbox that belongs to no known session. */
static int
cmd_reconcile(struct runtime *rt, int argc, char **argv, char *err,
    size_t errlen)
{
	struct rt_info *ri;
	size_t n, i;
	int j, keep, rc;

	if ((rc = rt->ops->list(rt, &ri, &n, err, errlen)) == -1)
		return -1;
	for (i = 0; i < n && rc == 0; i++) {
		for (keep = 0, j = 0; j < argc; j++)
			if (strcmp(argv[j], ri[i].id) == 0)
				keep = 1;
		if (keep)
			continue;
		printf("destroy %s (%s%s%s)\n", ri[i].id, rt_state_name(ri[i].state),
		    ri[i].reason[0] ? ": " : "", ri[i].reason);
		rc = rt->ops->destroy(rt, ri[i].id, err, errlen);
	}
	rt_info_free_array(ri, n);
	return rc;
}

static int
cmd_keys(struct runtime *rt UNUSED, int argc UNUSED, char **argv UNUSED,
    char *err UNUSED, size_t errlen UNUSED)
{
	cfg_print_markdown(keys, NELEM(keys), stdout);
	return 0;
}

/* One row a command: its name, how many arguments it takes, whether it
 * needs the configuration and the runtime, and what runs it. */
static const struct cmd {
	const char	*name;
	int		(*run)(struct runtime *, int, char **, char *, size_t);
	enum idop	 op;		/* run NULL: this op on the ID */
	int		 min, max;	/* arguments; max -1: any */
	int		 runtime;	/* loads the config, opens the runtime */
} cmds[] = {
	{ .name = "create", .run = cmd_create, .min = 1, .max = -1, .runtime = 1 },
	{ .name = "check", .run = cmd_check, .min = 1, .max = -1, .runtime = 1 },
	{ .name = "start", .op = OP_START, .min = 1, .max = 1, .runtime = 1 },
	{ .name = "stop", .op = OP_STOP, .min = 1, .max = 1, .runtime = 1 },
	{ .name = "destroy", .op = OP_DESTROY, .min = 1, .max = 1, .runtime = 1 },
	{ .name = "get", .run = cmd_get, .min = 1, .max = 1, .runtime = 1 },
	{ .name = "addr", .run = cmd_addr, .min = 1, .max = 1, .runtime = 1 },
	{ .name = "list", .run = cmd_list, .min = 0, .max = 0, .runtime = 1 },
	{ .name = "labels", .run = cmd_labels, .min = 1, .max = -1, .runtime = 1 },
	{ .name = "attach", .run = cmd_attach, .min = 4, .max = -1, .runtime = 1 },
	{ .name = "poll", .run = cmd_poll, .min = 2, .max = 2, .runtime = 1 },
	{ .name = "fleet-sync", .run = cmd_fleet_sync, .min = 0, .max = 2, .runtime = 1 },
	{ .name = "reconcile", .run = cmd_reconcile, .min = 0, .max = -1, .runtime = 1 },
	{ .name = "requests", .run = cmd_requests, .min = 0, .max = -1, .runtime = 1 },
	{ .name = "agent", .run = cmd_agent, .min = 3, .max = -1, .runtime = 1 },
	{ .name = "app-connect", .run = cmd_app_connect, .min = 2, .max = 2,
	    .runtime = 1 },
	{ .name = "app-ports", .run = cmd_app_ports, .min = 1, .max = -1,
	    .runtime = 1 },
	{ .name = "homes", .run = cmd_homes, .min = 0, .max = 0, .runtime = 1 },
	{ .name = "home", .run = cmd_home, .min = 1, .max = 1, .runtime = 1 },
	{ .name = "home-delete", .run = cmd_home_delete, .min = 1, .max = 1,
	    .runtime = 1 },
	{ .name = "render-netpol", .run = cmd_render_netpol, .min = 0, .max = -1 },
	{ .name = "keys", .run = cmd_keys, .min = 0, .max = -1 },
};

/* Runs c with the runtime the configuration at cfgpath describes. */
static int
run_with_runtime(const struct cmd *c, const char *cfgpath, int argc,
    char **argv, char *err, size_t errlen)
{
	struct ctlconf conf;
	struct runtime *rt = NULL;
	int rc = -1;

	memset(&conf, 0, sizeof(conf));
	if (cfg_load(keys, NELEM(keys), &conf, cfgpath, err, errlen) == -1)
		goto out;
	/* The fleet thread belongs to a long-running orchestrator. */
	conf.k8s.fleet_interval_ms = 0;
	if ((rt = runtime_k8s_new(&conf.k8s, err, errlen)) == NULL)
		goto out;
	rc = c->run != NULL ? c->run(rt, argc, argv, err, errlen) :
	    run_idop(rt, c->op, argv[0], err, errlen);
out:
	if (rt != NULL)
		rt->ops->free(rt);
	cfg_free(keys, NELEM(keys), &conf);
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd *c = NULL;
	const char *cfgpath = NULL;
	char err[1024] = "";
	int ch, verbose = LOG_LVL_WARN, rc;
	size_t i;

	jsonmem_init();
	while ((ch = getopt_long(argc, argv, "+c:f:hv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
		case 'f':
			cfgpath = optarg;
			break;
		case 'h':
			usage_to(stdout);
			return 0;
		case 'v':
			verbose++;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	for (i = 0; argc >= 1 && i < NELEM(cmds); i++)
		if (strcmp(argv[0], cmds[i].name) == 0)
			c = &cmds[i];
	if (c == NULL || argc - 1 < c->min || (c->max != -1 && argc - 1 > c->max))
		usage();
	log_init("k8sctl", verbose, NULL);
	if (c->runtime)
		rc = run_with_runtime(c, cfgpath, argc - 1, argv + 1, err,
		    sizeof(err));
	else
		rc = c->run(NULL, argc - 1, argv + 1, err, sizeof(err));
	if (rc == -1) {
		fprintf(stderr, "k8sctl: %s\n", err);
		return 1;
	}
	return 0;
}
