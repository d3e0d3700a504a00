/* test_k8s_home.c: the kubernetes runtime's home objects (orchestrator/
 * runtime/k8s/obj.c): the hash and claim names of any user id, the home
 * claim, the pod that mounts it, and the home in the spec annotation,
 * with good, bad and hostile input. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "runtime/k8s/obj.h"
#include "unit.h"

static struct k8s_params P = {
	.ns = "sandboxes", .instance = "default", .agent_image = "agent:1",
	.pull_policy = "IfNotPresent", .runtime_class = "gvisor",
	.kata_runtime_class = "kata", .storage_class = "fast",
	.proxy_ca_configmap = "egress-proxy-ca", .cpu_request = 250,
	.run_as_user = 65532, .agent_port = 7070, .workspace_bytes = 1 << 30,
	.grace_s = 5,
};

static const cJSON *
at(const cJSON *o, const char *path)
{
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
	return o;
}

static const char *
str(const cJSON *o, const char *path)
{
	const cJSON *v = at(o, path);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A DNS-1123 label: what a claim name and a label value must be here. */
static int
dns_label(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '-'))
			return 0;
	return 1;
}

TEST(test_home_names)
{
	char h[K8S_HOME_HASH + 1], n[128], long_id[ID_SESSION_MAX + 1];
	static const char *const ids[] = { "alice", "Alice", "..", ".", "a:b@c+d=e",
	    "-", "_", "x" };
	size_t i;

	/* sha256("alice") = 2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90 */
	k8s_home_hash("alice", h);
	CHECK_STR(h, "2bd806c97f0e00af1a1fc3328fa763a9");
	k8s_name_home("alice", n, sizeof(n));
	CHECK_STR(n, "home-2bd806c97f0e00af1a1fc3328fa763a9");
	memset(long_id, 'Z', ID_SESSION_MAX);
	long_id[ID_SESSION_MAX] = '\0';
	k8s_name_home(long_id, n, sizeof(n));
	CHECK(dns_label(n));
	CHECK_INT(strlen(n), 5 + K8S_HOME_HASH);
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		k8s_home_hash(ids[i], h);
		CHECK(dns_label(h));
		k8s_name_home(ids[i], n, sizeof(n));
		CHECK(dns_label(n));
	}
	/* case matters: two users */
	k8s_name_home("Alice", n, sizeof(n));
	CHECK(strcmp(n, "home-2bd806c97f0e00af1a1fc3328fa763a9") != 0);
}

TEST(test_home_claim)
{
	cJSON *o;

	P.home_storage_class = "homes-ssd";
	P.home_access_mode = "ReadWriteOncePod";
	o = k8s_build_home_pvc(&P, "alice", 64LL << 20, 1700000000123LL);
	CHECK_STR(str(o, "kind"), "PersistentVolumeClaim");
	CHECK_STR(str(o, "metadata|name"), "home-2bd806c97f0e00af1a1fc3328fa763a9");
	CHECK_STR(str(o, "metadata|namespace"), "sandboxes");
	CHECK_STR(str(o, "metadata|labels|" K8S_LBL_MANAGED), K8S_MANAGER);
	CHECK_STR(str(o, "metadata|labels|" K8S_LBL_INSTANCE), "default");
	CHECK_STR(str(o, "metadata|labels|" K8S_LBL_HOME),
	    "2bd806c97f0e00af1a1fc3328fa763a9");
	CHECK(at(o, "metadata|labels|" K8S_LBL_ID) == NULL);	/* no sandbox's */
	CHECK_STR(str(o, "metadata|annotations|" K8S_ANN_HOME_USER), "alice");
	CHECK_STR(str(o, "metadata|annotations|" K8S_ANN_HOME_USED), "1700000000123");
	CHECK_STR(str(o, "spec|accessModes|0"), "ReadWriteOncePod");
	CHECK_INT(cJSON_GetArraySize(at(o, "spec|accessModes")), 1);
	CHECK_STR(str(o, "spec|resources|requests|storage"), "67108864");
	CHECK_STR(str(o, "spec|storageClassName"), "homes-ssd");
	CHECK(at(o, "spec|dataSource") == NULL);
	cJSON_Delete(o);

	/* empty class: the field is left out (cluster default); no mode:
	 * ReadWriteOnce */
	P.home_storage_class = "";
	P.home_access_mode = NULL;
	o = k8s_build_home_pvc(&P, "a:b@c", 1LL << 30, 1);
	CHECK(at(o, "spec|storageClassName") == NULL);
	CHECK_STR(str(o, "spec|accessModes|0"), "ReadWriteOnce");
	CHECK_STR(str(o, "metadata|annotations|" K8S_ANN_HOME_USER), "a:b@c");
	cJSON_Delete(o);
}

static cJSON *
pod_for(const char *home, int root, const char *mode)
{
	struct rt_spec sp;
	struct k8s_sbx s;
	char err[256];
	cJSON *o;

	memset(&sp, 0, sizeof(sp));
	sp.id = "s-1";
	sp.run_as_root = root;
	sp.home_user = home;
	if (k8s_sbx_from_spec(&s, &sp, "debian:12", err, sizeof(err)) == -1)
		return NULL;
	P.home_access_mode = mode;
	o = k8s_build_pod(&P, &s, NULL, 1, 2);
	k8s_sbx_clear(&s);
	return o;
}

/* The volume or mount named name in arr, or NULL. */
static const cJSON *
named(const cJSON *arr, const char *name)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, arr)
		if (str(e, "name") != NULL && strcmp(str(e, "name"), name) == 0)
			return e;
	return NULL;
}

TEST(test_home_pod)
{
	cJSON *o;
	const cJSON *v, *c;

	o = pod_for("alice", 0, "ReadWriteOnce");
	CHECK(o != NULL);
	CHECK_STR(str(o, "metadata|labels|" K8S_LBL_HOME),
	    "2bd806c97f0e00af1a1fc3328fa763a9");
	v = named(at(o, "spec|volumes"), "home");
	CHECK_STR(str(v, "persistentVolumeClaim|claimName"),
	    "home-2bd806c97f0e00af1a1fc3328fa763a9");
	c = at(o, "spec|containers|0");
	CHECK_STR(str(named(at(c, "volumeMounts"), "home"), "mountPath"), RT_HOME_PATH);
	CHECK(at(named(at(c, "volumeMounts"), "home"), "readOnly") == NULL);
	CHECK_STR(str(named(at(c, "env"), "HOME"), "value"), RT_HOME_PATH);
	/* the /workspace rules: the pod's fsGroup (non-root), chown on mismatch */
	CHECK_INT(at(o, "spec|securityContext|fsGroup")->valuedouble, 65532);
	CHECK_STR(str(o, "spec|securityContext|fsGroupChangePolicy"), "OnRootMismatch");
	/* ReadWriteOnce: with the pods that mount it */
	CHECK_STR(str(o, "spec|affinity|podAffinity|requiredDuringSchedulingIgnoredDuringExecution|0|labelSelector|matchLabels|" K8S_LBL_HOME),
	    "2bd806c97f0e00af1a1fc3328fa763a9");
	CHECK_STR(str(o, "spec|affinity|podAffinity|requiredDuringSchedulingIgnoredDuringExecution|0|topologyKey"),
	    "kubernetes.io/hostname");
	cJSON_Delete(o);

	/* root: no fsGroup (as for /workspace); ReadWriteMany: no affinity */
	o = pod_for("alice", 1, "ReadWriteMany");
	CHECK(at(o, "spec|securityContext|fsGroup") == NULL);
	CHECK(at(o, "spec|securityContext|fsGroupChangePolicy") == NULL);
	CHECK(at(o, "spec|affinity") == NULL);
	CHECK(named(at(o, "spec|volumes"), "home") != NULL);
	cJSON_Delete(o);
	o = pod_for("alice", 1, "ReadWriteOncePod");
	CHECK(at(o, "spec|affinity") == NULL);
	cJSON_Delete(o);

	/* no home: nothing of it */
	o = pod_for(NULL, 0, "ReadWriteOnce");
	CHECK(named(at(o, "spec|volumes"), "home") == NULL);
	CHECK(named(at(o, "spec|containers|0|volumeMounts"), "home") == NULL);
	CHECK(at(o, "metadata|labels|" K8S_LBL_HOME) == NULL);
	CHECK(at(o, "spec|affinity") == NULL);
	CHECK(at(o, "spec|securityContext|fsGroupChangePolicy") == NULL);
	CHECK_STR(str(named(at(o, "spec|containers|0|env"), "HOME"), "value"),
	    "/workspace");
	cJSON_Delete(o);

	/* a user id that is not one never reaches a name */
	CHECK(pod_for("a/b", 0, NULL) == NULL);
	CHECK(pod_for("", 0, NULL) == NULL);
}

TEST(test_home_spec)
{
	struct rt_spec sp;
	struct k8s_sbx s, d;
	char err[256], *j;

	memset(&sp, 0, sizeof(sp));
	sp.id = "s-1";
	sp.home_user = "a:b@c";
	CHECK(k8s_sbx_from_spec(&s, &sp, "debian:12", err, sizeof(err)) == 0);
	s.home_bytes = 1LL << 30;
	j = k8s_sbx_encode(&s);
	CHECK(k8s_sbx_decode(j, "s-1", &d, err, sizeof(err)) == 0);
	CHECK_STR(d.home, "a:b@c");
	CHECK_INT(d.home_bytes, 1LL << 30);
	free(j);
	k8s_sbx_clear(&d);
	k8s_sbx_clear(&s);

	/* no home: none stored, none read back */
	sp.home_user = NULL;
	CHECK(k8s_sbx_from_spec(&s, &sp, "debian:12", err, sizeof(err)) == 0);
	j = k8s_sbx_encode(&s);
	CHECK(strstr(j, "home") == NULL);
	CHECK(k8s_sbx_decode(j, "s-1", &d, err, sizeof(err)) == 0);
	CHECK_STR(d.home, "");
	free(j);
	k8s_sbx_clear(&d);
	k8s_sbx_clear(&s);

	/* a hostile annotation: a home that is not a user id is refused */
	CHECK(k8s_sbx_decode("{\"image\":\"debian:12\",\"home\":\"../x\"}", "s-1",
	    &d, err, sizeof(err)) == -1);
	CHECK(strstr(err, "bad home") != NULL);
	CHECK(k8s_sbx_decode("{\"image\":\"debian:12\",\"home\":7}", "s-1", &d,
	    err, sizeof(err)) == -1);
	CHECK(k8s_sbx_decode("{\"image\":\"debian:12\",\"home\":\"a\",\"home_bytes\":-5}",
	    "s-1", &d, err, sizeof(err)) == 0);
	CHECK_INT(d.home_bytes, 0);
	k8s_sbx_clear(&d);
}

int
main(void)
{
	RUN(test_home_names);
	RUN(test_home_claim);
	RUN(test_home_pod);
	RUN(test_home_spec);
	return unit_done();
}
