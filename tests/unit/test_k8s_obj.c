/* test_k8s_obj.c: the kubernetes runtime's object builders and readers
 * (orchestrator/runtime/k8s/obj.c) and the policy renderer (netpol/netpol.c), with
 * good, bad and hostile input. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "runtime/k8s/obj.h"
#include "netpol.h"
#include "unit.h"

static const struct k8s_params P = {
	.ns = "sandboxes", .instance = "default", .agent_image = "agent:1",
	.pull_policy = "IfNotPresent", .runtime_class = "gvisor",
	.kata_runtime_class = "kata", .storage_class = "fast",
	.proxy_ca_configmap = "egress-proxy-ca", .cpu_request = 250,
	.run_as_user = 65532, .agent_port = 7070, .workspace_bytes = 1 << 30,
	.grace_s = 5,
};

static const char *
jpath(const cJSON *o, const char *path)
{
	/* '|'-separated path; numbers index arrays; returns a string value or a
	 * printed scalar in a static buffer */
	static char out[256];
	char buf[256], *p, *bar;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf; p != NULL && o != NULL; p = bar) {
		if ((bar = strchr(p, '|')) != NULL)
			*bar++ = '\0';
		if (cJSON_IsArray(o))
			o = cJSON_GetArrayItem(o, (int)strtol(p, NULL, 10));
		else
			o = cJSON_GetObjectItemCaseSensitive(o, p);
	}
	if (o == NULL)
		return NULL;
	if (cJSON_IsString(o))
		return o->valuestring;
	if (cJSON_IsBool(o))
		return cJSON_IsTrue(o) ? "true" : "false";
	if (cJSON_IsNumber(o)) {
		snprintf(out, sizeof(out), "%lld", (long long)o->valuedouble);
		return out;
	}
	return "?";
}

TEST(test_names)
{
	char b[128];

	k8s_name_pod("a1", b, sizeof(b));
	CHECK_STR(b, "sbx-a1");
	k8s_name_pvc("a1", b, sizeof(b));
	CHECK_STR(b, "sbx-a1-ws");
	k8s_name_secret("a1", b, sizeof(b));
	CHECK_STR(b, "sbx-a1-agent");
	k8s_name_netpol("a1", b, sizeof(b));
	CHECK_STR(b, "sbx-a1");
}

TEST(test_image_and_env_validation)
{
	static const struct { const char *img; int ok; } t[] = {
		{ "debian:12", 1 }, { "registry.example:5000/a/b@sha256:"
		  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 1 },
		{ "ghcr.io/org/img_x.y-z__w:v1.2-rc_3", 1 }, { "localhost:5000/x", 1 },
		{ "busybox", 1 }, { "a/b/c/d:latest", 1 },
		{ "", 0 }, { "a b", 0 }, { "a\nb", 0 }, { "-x", 0 }, { "/x", 0 },
		{ "a\x7f", 0 }, { "\xc3\xa9", 0 },
		{ "Debian:12", 0 }, { "a:b:c", 0 }, { "a@sha256:abc", 0 },
		{ "a//b", 0 }, { "a/", 0 }, { "a:", 0 }, { "a_-b", 0 }, { "x.y/A", 0 },
		{ "a:-tag", 0 },
	};
	static const struct { const char *n; int ok; } e[] = {
		{ "PATH", 1 }, { "_x1", 1 }, { "1X", 0 }, { "A-B", 0 }, { "", 0 },
		{ "A=B", 0 }, { "Ä", 0 },
	};
	char err[128], big[300];
	size_t i;

	for (i = 0; i < NELEM(t); i++)
		CHECK_INT(k8s_image_valid(t[i].img, err, sizeof(err)) == 0, t[i].ok);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(k8s_image_valid(big, err, sizeof(err)) == -1);
	for (i = 0; i < NELEM(e); i++)
		CHECK_INT(k8s_env_name_valid(e[i].n), e[i].ok);
}

TEST(test_sbx_spec_roundtrip)
{
	struct rt_kv env[] = { { "FOO", "bar" }, { "Q", "a \"quoted\" \n value" } };
	struct rt_spec sp = { .id = "s-1", .image = "img:1", .use_kata = 1,
	    .run_as_root = 0, .writable_root = 1, .mem_bytes = 1 << 20,
	    .cpu_millis = 1500, .pids_max = 64, .disk_bytes = 1 << 22,
	    .env = env, .nenv = 2 };
	struct k8s_sbx s, d;
	char err[128], *j;

	CHECK(k8s_sbx_from_spec(&s, &sp, "def:1", err, sizeof(err)) == 0);
	j = k8s_sbx_encode(&s);
	CHECK(k8s_sbx_decode(j, "s-1", &d, err, sizeof(err)) == 0);
	CHECK_STR(d.image, "img:1");
	CHECK_INT(d.use_kata, 1);
	CHECK_INT(d.run_as_root, 0);
	CHECK_INT(d.mem, 1 << 20);
	CHECK_INT(d.mem_req, 0);
	CHECK_INT(d.cpu, 1500);
	CHECK_INT(d.nenv, 2);
	CHECK_STR(d.env[1].v, "a \"quoted\" \n value");
	free(j);
	k8s_sbx_clear(&d);
	k8s_sbx_clear(&s);

	sp.image = NULL;
	CHECK(k8s_sbx_from_spec(&s, &sp, "def:1", err, sizeof(err)) == 0);
	CHECK_STR(s.image, "def:1");
	k8s_sbx_clear(&s);
	sp.id = "Bad";
	CHECK(k8s_sbx_from_spec(&s, &sp, "def:1", err, sizeof(err)) == -1);
	sp.id = "ok";
	sp.mem_bytes = -1;
	CHECK(k8s_sbx_from_spec(&s, &sp, "def:1", err, sizeof(err)) == -1);
	sp.mem_bytes = 0;
	env[0].k = "1BAD";
	CHECK(k8s_sbx_from_spec(&s, &sp, "def:1", err, sizeof(err)) == -1);
	CHECK(strstr(err, "environment") != NULL);
}

TEST(test_sbx_decode_hostile)
{
	static const char *bad[] = {
		NULL, "", "nope", "[]", "{}", "{\"image\":5}", "{\"image\":\"a b\"}",
		"{\"image\":\"\"}",
	};
	struct k8s_sbx d;
	char err[128];
	size_t i;

	for (i = 0; i < NELEM(bad); i++)
		CHECK(k8s_sbx_decode(bad[i], "x", &d, err, sizeof(err)) == -1);
	CHECK(k8s_sbx_decode("{\"image\":\"i\"}", "Bad ID", &d, err, sizeof(err)) == -1);
	/* Odd but survivable: wrong types ignored, negatives to 0. */
	CHECK(k8s_sbx_decode("{\"image\":\"i\",\"mem\":-5,\"cpu\":\"x\",\"env\":"
	    "{\"A\":1,\"1B\":\"x\",\"C\":\"ok\"},\"use_kata\":\"yes\"}", "x", &d,
	    err, sizeof(err)) == 0);
	CHECK_INT(d.mem, 0);
	CHECK_INT(d.cpu, 0);
	CHECK_INT(d.use_kata, 0);
	CHECK_INT(d.nenv, 1);
	CHECK_STR(d.env[0].k, "C");
	k8s_sbx_clear(&d);
	CHECK(k8s_sbx_decode("{\"image\":\"i\",\"mem\":1e300}", "x", &d, err,
	    sizeof(err)) == 0);
	CHECK_INT(d.mem, 0);
	k8s_sbx_clear(&d);
}

TEST(test_labels_codec)
{
	struct rt_kv kv[] = { { "a", "1" }, { "b", "x\"y" }, { "a", "2" } };
	struct rt_kv *out;
	size_t n, i;
	char *j = k8s_labels_encode(kv, 3), big[40000];

	CHECK(k8s_labels_decode(j, &out, &n) == 0);
	CHECK_INT(n, 2);
	for (i = 0; i < n; i++) {
		if (strcmp(out[i].k, "a") == 0)
			CHECK_STR(out[i].v, "2");
		free((char *)out[i].k);
		free((char *)out[i].v);
	}
	free(out);
	free(j);
	CHECK(k8s_labels_decode("{bad", &out, &n) == -1);
	CHECK(k8s_labels_decode("[1]", &out, &n) == -1);
	CHECK(k8s_labels_decode(NULL, &out, &n) == 0 && n == 0);
	CHECK(k8s_labels_decode("{\"a\":1,\"b\":\"s\"}", &out, &n) == 0);
	CHECK_INT(n, 1);
	free((char *)out[0].k);
	free((char *)out[0].v);
	free(out);
	/* More labels than allowed. */
	{
		size_t o = 0;
		o += (size_t)snprintf(big + o, sizeof(big) - o, "{");
		for (i = 0; i < K8S_MAX_LABELS + 1; i++)
			o += (size_t)snprintf(big + o, sizeof(big) - o, "%s\"k%zu\":\"v\"",
			    i ? "," : "", i);
		snprintf(big + o, sizeof(big) - o, "}");
		CHECK(k8s_labels_decode(big, &out, &n) == -1);
	}
}

TEST(test_build_pod)
{
	struct k8s_sbx s;
	struct rt_spec sp = { .id = "p1", .image = "img", .run_as_root = 0,
	    .writable_root = 0, .mem_bytes = 1000000, .cpu_millis = 100,
	    .disk_bytes = 4000000 };
	struct k8s_params p = P;
	char err[64];
	cJSON *o;

	CHECK(k8s_sbx_from_spec(&s, &sp, "d", err, sizeof(err)) == 0);
	o = k8s_build_pod(&P, &s, "{\"a\":\"b\"}", 1, 2);
	CHECK_STR(jpath(o, "spec|runtimeClassName"), "gvisor");
	CHECK_STR(jpath(o, "spec|automountServiceAccountToken"), "false");
	CHECK_STR(jpath(o, "spec|securityContext|runAsNonRoot"), "true");
	CHECK_STR(jpath(o, "spec|securityContext|runAsUser"), "65532");
	CHECK_STR(jpath(o, "spec|containers|0|securityContext|readOnlyRootFilesystem"), "true");
	CHECK_STR(jpath(o, "spec|containers|0|securityContext|capabilities|drop|0"), "ALL");
	CHECK(jpath(o, "spec|containers|0|securityContext|capabilities|add") == NULL);
	CHECK_STR(jpath(o, "spec|containers|0|securityContext|runAsNonRoot"), "true");
	CHECK_STR(jpath(o, "spec|containers|0|securityContext|seccompProfile|type"), "RuntimeDefault");
	/* request capped at the limit */
	CHECK_STR(jpath(o, "spec|containers|0|resources|requests|cpu"), "100m");
	CHECK_STR(jpath(o, "spec|containers|0|resources|limits|memory"), "1000000");
	/* no reservation asked: the request is the limit */
	CHECK_STR(jpath(o, "spec|containers|0|resources|requests|memory"), "1000000");
	CHECK_STR(jpath(o, "spec|dnsPolicy"), "None");
	CHECK_STR(jpath(o, "metadata|labels|sandbox.dev/id"), "p1");
	CHECK_STR(jpath(o, "metadata|annotations|sandbox.dev/labels"), "{\"a\":\"b\"}");
	CHECK_STR(jpath(o, "metadata|annotations"), "?");
	CHECK_STR(jpath(o, "spec|volumes|4|secret|secretName"), "sbx-p1-agent");
	CHECK_STR(jpath(o, "spec|initContainers|0|image"), "agent:1");
	cJSON_Delete(o);
	/* a reservation: requests.memory, the limit stays the ceiling, and
	 * the spec annotation keeps it */
	s.mem_req = 250000;
	o = k8s_build_pod(&P, &s, "{}", 1, 2);
	CHECK_STR(jpath(o, "spec|containers|0|resources|requests|memory"), "250000");
	CHECK_STR(jpath(o, "spec|containers|0|resources|limits|memory"), "1000000");
	cJSON_Delete(o);
	{
		char *j = k8s_sbx_encode(&s);
		struct k8s_sbx d;

		CHECK(k8s_sbx_decode(j, "p1", &d, err, sizeof(err)) == 0);
		CHECK_INT(d.mem_req, 250000);
		k8s_sbx_clear(&d);
		free(j);
	}
	s.mem_req = 0;

	s.use_kata = 1;
	s.run_as_root = 1;
	s.writable_root = 1;
	p.seccomp_localhost = "profiles/sandbox.json";
	p.cluster_dns = 1;
	o = k8s_build_pod(&p, &s, NULL, 1, 0);
	CHECK_STR(jpath(o, "spec|runtimeClassName"), "kata");
	CHECK_STR(jpath(o, "spec|securityContext|runAsUser"), "0");
	CHECK_STR(jpath(o, "spec|containers|0|securityContext|readOnlyRootFilesystem"), "false");
	CHECK_STR(jpath(o, "spec|containers|0|securityContext|seccompProfile|type"), "Localhost");
	CHECK_STR(jpath(o, "spec|containers|0|securityContext|seccompProfile|localhostProfile"),
	    "profiles/sandbox.json");
	CHECK(jpath(o, "spec|dnsPolicy") == NULL);

	/* run_as_root: ALL dropped, exactly the documented set back */
	CHECK_STR(jpath(o, "spec|containers|0|securityContext|capabilities|drop|0"), "ALL");
	CHECK_STR(jpath(o, "spec|containers|0|securityContext|capabilities|add|0"), "CHOWN");
	CHECK_STR(jpath(o, "spec|containers|0|securityContext|capabilities|add|11"), "SETFCAP");
	CHECK(jpath(o, "spec|containers|0|securityContext|capabilities|add|12") == NULL);
	CHECK_STR(jpath(o, "spec|containers|0|securityContext|allowPrivilegeEscalation"), "false");
	CHECK(jpath(o, "spec|initContainers|0|securityContext|capabilities|add") == NULL);
	cJSON_Delete(o);

	/* the claim takes the sandbox's disk; a clone names its source */
	o = k8s_build_pvc(&P, &s, NULL, 5);
	CHECK_STR(jpath(o, "spec|storageClassName"), "fast");
	CHECK_STR(jpath(o, "spec|resources|requests|storage"), "4000000");
	CHECK(jpath(o, "spec|dataSource") == NULL);
	cJSON_Delete(o);
	s.ws = 0;
	snprintf(s.ws_from, sizeof(s.ws_from), "sbx-old-ws");
	o = k8s_build_pvc(&P, &s, NULL, 5);
	CHECK_STR(jpath(o, "spec|resources|requests|storage"), "1073741824");
	CHECK_STR(jpath(o, "spec|dataSource|kind"), "PersistentVolumeClaim");
	CHECK_STR(jpath(o, "spec|dataSource|name"), "sbx-old-ws");
	cJSON_Delete(o);
	CHECK(k8s_qty_bytes("10Gi") == 10LL << 30);
	CHECK(k8s_qty_bytes("1073741824") == 1LL << 30);
	CHECK(k8s_qty_bytes("5G") == 5000000000LL);
	CHECK(k8s_qty_bytes("1.5Gi") == -1);
	CHECK(k8s_qty_bytes("") == -1);
	CHECK(k8s_qty_bytes("9999999999999999999Ki") == -1);
	o = k8s_build_secret(&P, "p1", "tok", "uid-1");
	CHECK_STR(jpath(o, "metadata|ownerReferences|0|uid"), "uid-1");
	CHECK_STR(jpath(o, "stringData|token"), "tok");
	cJSON_Delete(o);
	k8s_sbx_clear(&s);
}

static void
view(const char *json, struct k8s_podview *v, cJSON **keep)
{
	*keep = cJSON_Parse(json);
	k8s_pod_view(*keep, v);
}

TEST(test_pod_view)
{
	static const struct {
		const char *json;
		int ready, failed, deleting;
		const char *phase, *reason;	/* reason prefix */
	} t[] = {
		{ "{\"status\":{\"phase\":\"Pending\"}}", 0, 0, 0, "Pending", "" },
		{ "{\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.1\",\"conditions\":"
		  "[{\"type\":\"Ready\",\"status\":\"True\"}]}}", 1, 0, 0, "Running", "" },
		{ "{\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\",\"message\":\"low mem\"}}",
		  0, 1, 0, "Failed", "evicted: low mem" },
		{ "{\"status\":{\"phase\":\"Failed\",\"containerStatuses\":[{\"name\":\"sandbox\","
		  "\"state\":{\"terminated\":{\"reason\":\"OOMKilled\"}}}]}}", 0, 1, 0, "Failed", "oom" },
		{ "{\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"install-agent\","
		  "\"state\":{\"waiting\":{\"reason\":\"ImagePullBackOff\",\"message\":\"no\"}}}]}}",
		  0, 1, 0, "Pending", "install-agent: ImagePullBackOff: no" },
		{ "{\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
		  "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"0/3 nodes\"}]}}",
		  0, 0, 0, "Pending", "Unschedulable: 0/3 nodes" },
		{ "{\"metadata\":{\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"},\"status\":"
		  "{\"phase\":\"Running\"}}", 0, 0, 1, "Running", "" },
		{ "{\"status\":{\"phase\":\"Succeeded\"}}", 0, 1, 0, "Succeeded", "pod exited" },
		/* hostile shapes */
		{ "{\"status\":{\"phase\":5,\"conditions\":{\"a\":1},\"podIP\":[]}}", 0, 0, 0, "", "" },
		{ "{\"status\":\"x\"}", 0, 0, 0, "", "" },
		{ "[]", 0, 0, 0, "", "" },
		{ "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\"},"
		  "{\"status\":\"True\"},5]}}", 0, 0, 0, "Running", "" },
	};
	struct k8s_podview v;
	cJSON *o;
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		view(t[i].json, &v, &o);
		CHECK_INT(v.ready, t[i].ready);
		CHECK_INT(v.failed, t[i].failed);
		CHECK_INT(v.deleting, t[i].deleting);
		CHECK_STR(v.phase, t[i].phase);
		if (strncmp(v.reason, t[i].reason, strlen(t[i].reason)) != 0) {
			fprintf(stderr, "  case %zu: reason \"%s\"\n", i, v.reason);
			unit_cur_failed++;
		}
		cJSON_Delete(o);
	}
	k8s_pod_view(NULL, &v);
	CHECK_STR(v.phase, "");
}

TEST(test_netpol)
{
	struct netpol_kv pod[] = { { "sandbox.dev/id", "x" } };
	struct netpol_kv orch[] = { { "app", "orch" } };
	struct netpol_kv proxy[] = { { "app", "proxy" }, { "slot", "p1" } };
	struct netpol_sandbox s = { .name = "sbx-x", .ns = "sb", .pod = pod,
	    .npod = 1, .orch = orch, .norch = 1, .agent_port = 7070 };
	cJSON *o;

	o = netpol_render_sandbox(&s);
	CHECK(o != NULL);
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "spec"),
	    "egress")), 0);
	CHECK_STR(jpath(o, "spec|ingress|0|from|0|namespaceSelector|matchLabels|"
	    "kubernetes.io/metadata.name"), "sb");
	CHECK_STR(jpath(o, "spec|ingress|0|ports|0|port"), "7070");
	cJSON_Delete(o);
	s.proxy = proxy;
	s.nproxy = 2;
	s.proxy_port = 3128;
	s.proxy_ns = "sys";
	s.dns = 1;
	o = netpol_render_sandbox(&s);
	CHECK_STR(jpath(o, "spec|egress|0|ports|0|port"), "3128");
	CHECK_STR(jpath(o, "spec|egress|0|to|0|podSelector|matchLabels|slot"), "p1");
	CHECK_STR(jpath(o, "spec|egress|1|ports|0|protocol"), "UDP");
	CHECK_STR(jpath(o, "spec|egress|1|to|0|podSelector|matchLabels|k8s-app"), "kube-dns");
	cJSON_Delete(o);
	s.proxy_port = 70000;
	CHECK(netpol_render_sandbox(&s) == NULL);
	s.proxy_port = 3128;
	s.agent_port = 0;
	CHECK(netpol_render_sandbox(&s) == NULL);
	s.agent_port = 1;
	s.norch = 0;
	CHECK(netpol_render_sandbox(&s) == NULL);
	s.norch = 1;
	s.name = NULL;
	CHECK(netpol_render_sandbox(&s) == NULL);
}

/* The app-gateway rule: one rule from the gateway pods to exactly the
 * ports given; none without ports; refused when a port or the gateway
 * selector is missing or out of range. */
TEST(test_netpol_apps)
{
	struct netpol_kv pod[] = { { "sandbox.dev/id", "x" } };
	struct netpol_kv orch[] = { { "app", "orch" } };
	struct netpol_kv gw[] = { { "app", "gw" } };
	struct netpol_kv ann = { "sandbox.dev/app-ports", "3000,8080" };
	int ports[] = { 3000, 8080 };
	struct netpol_sandbox s = { .name = "sbx-x", .ns = "sb", .pod = pod,
	    .npod = 1, .orch = orch, .norch = 1, .agent_port = 7070,
	    .gw = gw, .ngw = 1, .gw_ns = "edge" };
	cJSON *o;

	o = netpol_render_sandbox(&s);
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "spec"),
	    "ingress")), 1);
	CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"),
	    "annotations") == NULL);
	cJSON_Delete(o);
	s.app_ports = ports;
	s.napp_ports = 2;
	s.annotations = &ann;
	s.nannotations = 1;
	o = netpol_render_sandbox(&s);
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "spec"),
	    "ingress")), 2);
	CHECK_STR(jpath(o, "spec|ingress|1|from|0|podSelector|matchLabels|app"), "gw");
	CHECK_STR(jpath(o, "spec|ingress|1|from|0|namespaceSelector|matchLabels|"
	    "kubernetes.io/metadata.name"), "edge");
	CHECK_STR(jpath(o, "spec|ingress|1|ports|0|port"), "3000");
	CHECK_STR(jpath(o, "spec|ingress|1|ports|1|port"), "8080");
	CHECK_STR(jpath(o, "spec|ingress|1|ports|1|protocol"), "TCP");
	CHECK(jpath(o, "spec|ingress|1|ports|2|port") == NULL);	/* exactly two */
	CHECK_STR(jpath(o, "spec|ingress|0|ports|0|port"), "7070");
	CHECK_STR(jpath(o, "metadata|annotations|sandbox.dev/app-ports"), "3000,8080");
	cJSON_Delete(o);
	s.gw_ns = NULL;		/* defaults to the sandbox namespace */
	o = netpol_render_sandbox(&s);
	CHECK_STR(jpath(o, "spec|ingress|1|from|0|namespaceSelector|matchLabels|"
	    "kubernetes.io/metadata.name"), "sb");
	cJSON_Delete(o);
	ports[1] = 0;
	CHECK(netpol_render_sandbox(&s) == NULL);
	ports[1] = 65536;
	CHECK(netpol_render_sandbox(&s) == NULL);
	ports[1] = 8080;
	s.ngw = 0;
	CHECK(netpol_render_sandbox(&s) == NULL);
	s.ngw = 1;
	s.app_ports = NULL;
	CHECK(netpol_render_sandbox(&s) == NULL);
}

int
main(void)
{
	RUN(test_names);
	RUN(test_image_and_env_validation);
	RUN(test_sbx_spec_roundtrip);
	RUN(test_sbx_decode_hostile);
	RUN(test_labels_codec);
	RUN(test_build_pod);
	RUN(test_pod_view);
	RUN(test_netpol);
	RUN(test_netpol_apps);
	return unit_done();
}
