/*
 * runtime/k8s/k8s.h: the kubernetes runtime (docs/kubernetes.md; the
 * interface it implements is orchestrator/runtime/runtime.h). A sandbox is
 * a hardened pod plus a PVC for /workspace, a Secret holding the agent's
 * bearer token and a per-sandbox NetworkPolicy; the PVC carries the
 * session record in its annotations so that list() rebuilds everything
 * from the cluster. The egress-proxy Deployment is scaled and sandboxes
 * are assigned to its pods by the runtime too (fleet.c).
 *
 * The orchestrator embeds struct rt_k8s_conf in its own configuration and
 * its keys under "kubernetes." with RUNTIME_K8S_CFG_KEYS; the conf must
 * outlive the runtime.
 */
#ifndef RUNTIME_K8S_H
#define RUNTIME_K8S_H

#include <stddef.h>
#include "attrib.h"
#include "cfg.h"
#include "runtime/runtime.h"

struct event_base;
struct k8s_client;

struct rt_k8s_conf {
	/* connection */
	char		*api_server;
	char		*kubeconfig;
	char		*context;
	char		*incluster_dir;
	char		*ca_file;
	char		*token_file;
	char		*namespace;
	long long	 request_timeout_ms;
	long long	 retries;
	long long	 retry_backoff_ms;
	long long	 token_check_ms;
	/* sandbox pods */
	char		*instance;
	char		*image;
	char		*agent_image;
	char		*image_pull_policy;
	char		*runtime_class;
	char		*kata_runtime_class;
	char		*storage_class;
	long long	 workspace_bytes;
	int		 workspace_clone;
	long long	 cpu_millis;
	long long	 cpu_request_millis;
	long long	 mem_bytes;
	long long	 disk_bytes;
	long long	 run_as_user;
	char		*seccomp_profile;
	long long	 agent_port;
	char		*agent_key_file;
	long long	 ready_timeout_ms;
	long long	 stop_grace_s;
	/* a starting pod (docs/kubernetes.md, "Failing fast") */
	long long	 fail_after_ms;		/* a hard failure, seen this long */
	long long	 unsched_grace_ms;	/* Unschedulable this long */
	/* extra scheduling of sandbox pods ("Scheduling") */
	struct cfg_map	 node_selector;
	struct cfg_list	 tolerations;	/* "key[=value][:Effect]" */
	char		*orch_namespace;
	char		*orch_labels;
	int		 netpol_dns;
	/* published apps (docs/gateway.md) */
	char		*gateway_namespace;
	char		*gateway_labels;
	/* the egress-proxy fleet */
	char		*proxy_namespace;
	char		*proxy_deployment;
	char		*proxy_selector;
	long long	 proxy_port;
	long long	 proxy_admin_port;
	char		*proxy_admin_token_file;
	char		*proxy_ca_configmap;
	long long	 proxy_wait_ms;
	long long	 sandboxes_per_proxy;
	long long	 proxy_min_replicas;
	long long	 fleet_interval_ms;
	/* homes (the orchestrator's keys homes.k8s.*, not under
	 * "kubernetes."): the claims' storage class (NULL or "": the
	 * cluster default) and access mode (NULL: ReadWriteOnce) */
	char		*homes_storage_class;
	char		*homes_access_mode;
	/* not a config key: the orchestrator's event loop, set by main() */
	struct event_base *base;
};

#define RT_K8S_O_(OFF, m) ((OFF) + offsetof(struct rt_k8s_conf, m))

/* cfg_key entries for struct rt_k8s_conf at offset OFF, names under PFX. */
#define RUNTIME_K8S_CFG_KEYS(PFX, OFF) \
	{ PFX "api_server", CFG_STR, RT_K8S_O_(OFF, api_server), 0, 0, NULL, "K8S_API_SERVER", \
	    "API server URL (https://host:port); empty: kubeconfig, else in-cluster" }, \
	{ PFX "kubeconfig", CFG_PATH, RT_K8S_O_(OFF, kubeconfig), 0, 0, NULL, "KUBECONFIG", \
	    "kubeconfig file (token, tokenFile or client certificate; CA)" }, \
	{ PFX "context", CFG_STR, RT_K8S_O_(OFF, context), 0, 0, NULL, NULL, \
	    "kubeconfig context; empty: current-context" }, \
	{ PFX "incluster_dir", CFG_PATH, RT_K8S_O_(OFF, incluster_dir), 0, 0, \
	    "/var/run/secrets/kubernetes.io/serviceaccount", NULL, \
	    "service-account directory (token, ca.crt, namespace); the token is re-read as it rotates" }, \
	{ PFX "ca_file", CFG_PATH, RT_K8S_O_(OFF, ca_file), 0, 0, NULL, NULL, \
	    "CA bundle for the API server (overrides in-cluster/kubeconfig)" }, \
	{ PFX "token_file", CFG_PATH, RT_K8S_O_(OFF, token_file), 0, 0, NULL, NULL, \
	    "bearer token file (overrides in-cluster/kubeconfig)" }, \
	{ PFX "namespace", CFG_STR, RT_K8S_O_(OFF, namespace), 0, 0, NULL, NULL, \
	    "namespace of the sandboxes; empty: kubeconfig/POD_NAMESPACE/service account" }, \
	{ PFX "request_timeout", CFG_DURATION, RT_K8S_O_(OFF, request_timeout_ms), 100, 600000, \
	    "30s", NULL, "timeout of one API request attempt" }, \
	{ PFX "retries", CFG_INT, RT_K8S_O_(OFF, retries), 0, 20, "4", NULL, \
	    "extra attempts on 429, 5xx and connection failures" }, \
	{ PFX "retry_backoff", CFG_DURATION, RT_K8S_O_(OFF, retry_backoff_ms), 10, 60000, \
	    "200ms", NULL, "first retry delay (doubles, at most 8s; Retry-After wins)" }, \
	{ PFX "token_check", CFG_DURATION, RT_K8S_O_(OFF, token_check_ms), 1, 3600000, "60s", \
	    NULL, "how often the token file is checked for rotation (and after any 401)" }, \
	{ PFX "instance", CFG_STR, RT_K8S_O_(OFF, instance), 0, 0, "default", NULL, \
	    "label value separating orchestrators that share a namespace" }, \
	{ PFX "image", CFG_STR, RT_K8S_O_(OFF, image), 0, 0, "sandbox-default:latest", NULL, \
	    "sandbox image when the agent asks for none" }, \
	{ PFX "agent_image", CFG_STR, RT_K8S_O_(OFF, agent_image), 0, 0, "sandbox-agent:latest", \
	    NULL, "image holding /sandbox-agent and /agent-install (images/agent)" }, \
	{ PFX "image_pull_policy", CFG_STR, RT_K8S_O_(OFF, image_pull_policy), 0, 0, \
	    "IfNotPresent", NULL, "Always, IfNotPresent or Never" }, \
	{ PFX "runtime_class", CFG_STR, RT_K8S_O_(OFF, runtime_class), 0, 0, "gvisor", NULL, \
	    "RuntimeClass of sandbox pods; empty: the cluster default (not recommended)" }, \
	{ PFX "kata_runtime_class", CFG_STR, RT_K8S_O_(OFF, kata_runtime_class), 0, 0, "kata", \
	    NULL, "RuntimeClass when create_sandbox asks for use_kata" }, \
	{ PFX "storage_class", CFG_STR, RT_K8S_O_(OFF, storage_class), 0, 0, NULL, NULL, \
	    "StorageClass of workspace PVCs; empty: the cluster default" }, \
	{ PFX "workspace_size", CFG_SIZE, RT_K8S_O_(OFF, workspace_bytes), 1048576, \
	    1LL << 44, "10GiB", NULL, "size of each /workspace PVC (a create's disk limit sets its own)" }, \
	{ PFX "workspace_clone", CFG_BOOL, RT_K8S_O_(OFF, workspace_clone), 0, 0, "true", \
	    NULL, "create_sandbox carries /workspace over by cloning the old PVC (dataSource: " \
	    "the StorageClass's CSI driver must support volume cloning); false: carrying is " \
	    "refused and only fresh_workspace works" }, \
	{ PFX "cpu_millis", CFG_INT, RT_K8S_O_(OFF, cpu_millis), 10, 256000, "2000", NULL, \
	    "default CPU limit (1000 = one core)" }, \
	{ PFX "cpu_request_millis", CFG_INT, RT_K8S_O_(OFF, cpu_request_millis), 1, 256000, \
	    "250", NULL, "CPU request (capped at the limit)" }, \
	{ PFX "memory", CFG_SIZE, RT_K8S_O_(OFF, mem_bytes), 16777216, 1LL << 40, "2GiB", NULL, \
	    "default memory limit (also the request)" }, \
	{ PFX "ephemeral_storage", CFG_SIZE, RT_K8S_O_(OFF, disk_bytes), 16777216, 1LL << 42, \
	    "4GiB", NULL, "default ephemeral-storage limit (root overlay, /tmp, logs)" }, \
	{ PFX "run_as_user", CFG_INT, RT_K8S_O_(OFF, run_as_user), 1, 2147483647, "65532", NULL, \
	    "uid (and gid, fsGroup) when run_as_root is false" }, \
	{ PFX "seccomp_profile", CFG_STR, RT_K8S_O_(OFF, seccomp_profile), 0, 0, NULL, NULL, \
	    "Localhost seccomp profile for sandbox containers (e.g. profiles/sandbox.json, " \
	    "deploy/seccomp); empty: RuntimeDefault" }, \
	{ PFX "agent_port", CFG_INT, RT_K8S_O_(OFF, agent_port), 1, 65535, "7070", NULL, \
	    "TCP port of the agent in each pod" }, \
	{ PFX "agent_key_file", CFG_PATH, RT_K8S_O_(OFF, agent_key_file), 0, 0, NULL, \
	    "K8S_AGENT_KEY_FILE", "secret key (>= 32 bytes) from which per-sandbox agent tokens " \
	    "and proxy credentials are derived; empty: random per process (a restarted " \
	    "orchestrator then cannot reach existing sandboxes)" }, \
	{ PFX "ready_timeout", CFG_DURATION, RT_K8S_O_(OFF, ready_timeout_ms), 1000, 3600000, \
	    "300s", NULL, "how long create/start wait for the pod and agent to be ready" }, \
	{ PFX "sandbox.fail_after", CFG_DURATION, RT_K8S_O_(OFF, fail_after_ms), 0, 600000, \
	    "5s", NULL, "a starting pod whose image cannot be pulled, whose config or sandbox " \
	    "cannot be made, or whose claim cannot be provisioned fails the create once " \
	    "that has lasted this long (0: at once)" }, \
	{ PFX "sandbox.unschedulable_grace", CFG_DURATION, RT_K8S_O_(OFF, unsched_grace_ms), 0, \
	    3600000, "30s", NULL, "a starting pod the scheduler calls Unschedulable fails the " \
	    "create after this long (a node may be added or freed meanwhile)" }, \
	{ PFX "sandbox.node_selector", CFG_MAP, RT_K8S_O_(OFF, node_selector), 0, 0, NULL, NULL, \
	    "node labels sandbox pods must match, on top of their RuntimeClass's" }, \
	{ PFX "sandbox.tolerations", CFG_LIST, RT_K8S_O_(OFF, tolerations), 0, 0, NULL, NULL, \
	    "taints sandbox pods tolerate, on top of their RuntimeClass's: key[=value][:effect] " \
	    "(no value: any; no effect: every effect)" }, \
	{ PFX "stop_grace", CFG_INT, RT_K8S_O_(OFF, stop_grace_s), 0, 300, "5", NULL, \
	    "terminationGracePeriodSeconds used when stopping a pod" }, \
	{ PFX "orchestrator_namespace", CFG_STR, RT_K8S_O_(OFF, orch_namespace), 0, 0, NULL, \
	    NULL, "namespace of the orchestrator pods; empty: the sandbox namespace" }, \
	{ PFX "orchestrator_labels", CFG_STR, RT_K8S_O_(OFF, orch_labels), 0, 0, \
	    "app.kubernetes.io/name=sandbox-orchestrator", NULL, \
	    "labels (k=v,k=v) of the orchestrator pods, the only ingress to agents" }, \
	{ PFX "netpol_dns", CFG_BOOL, RT_K8S_O_(OFF, netpol_dns), 0, 0, "false", NULL, \
	    "allow sandboxes DNS to kube-dns (only needed if the proxy is reached by name)" }, \
	{ PFX "gateway_namespace", CFG_STR, RT_K8S_O_(OFF, gateway_namespace), 0, 0, NULL, \
	    NULL, "namespace of the app-gateway pods; empty: the orchestrator's namespace" }, \
	{ PFX "gateway_labels", CFG_STR, RT_K8S_O_(OFF, gateway_labels), 0, 0, \
	    "app.kubernetes.io/name=app-gateway", NULL, \
	    "labels (k=v,k=v) of the app-gateway pods, the only ingress to a sandbox's exposed ports" }, \
	{ PFX "proxy.namespace", CFG_STR, RT_K8S_O_(OFF, proxy_namespace), 0, 0, NULL, NULL, \
	    "namespace of the egress-proxy Deployment; empty: the sandbox namespace" }, \
	{ PFX "proxy.deployment", CFG_STR, RT_K8S_O_(OFF, proxy_deployment), 0, 0, \
	    "egress-proxy", NULL, "the egress-proxy Deployment scaled by the orchestrator" }, \
	{ PFX "proxy.selector", CFG_STR, RT_K8S_O_(OFF, proxy_selector), 0, 0, \
	    "app.kubernetes.io/name=egress-proxy", NULL, "labels (k=v,k=v) of the proxy pods" }, \
	{ PFX "proxy.port", CFG_INT, RT_K8S_O_(OFF, proxy_port), 1, 65535, "3128", NULL, \
	    "proxy port sandboxes connect to" }, \
	{ PFX "proxy.admin_port", CFG_INT, RT_K8S_O_(OFF, proxy_admin_port), 1, 65535, "9091", \
	    NULL, "the proxy's authenticated TCP admin port" }, \
	{ PFX "proxy.admin_token_file", CFG_PATH, RT_K8S_O_(OFF, proxy_admin_token_file), 0, 0, \
	    NULL, "K8S_PROXY_ADMIN_TOKEN_FILE", "bearer token for the proxy admin port" }, \
	{ PFX "proxy.ca_configmap", CFG_STR, RT_K8S_O_(OFF, proxy_ca_configmap), 0, 0, \
	    "egress-proxy-ca", NULL, "ConfigMap (key ca.crt) with the proxy CA certificate, " \
	    "mounted in sandboxes at /etc/sandbox-proxy" }, \
	{ PFX "proxy.wait", CFG_DURATION, RT_K8S_O_(OFF, proxy_wait_ms), 100, 3600000, "120s", \
	    NULL, "how long attach waits for a ready proxy pod after scaling up" }, \
	{ PFX "sandboxes_per_proxy", CFG_INT, RT_K8S_O_(OFF, sandboxes_per_proxy), 1, 100000, \
	    "100", NULL, "running sandboxes per proxy replica" }, \
	{ PFX "proxy.min_replicas", CFG_INT, RT_K8S_O_(OFF, proxy_min_replicas), 0, 1000, "0", \
	    NULL, "replicas kept when no sandbox runs" }, \
	{ PFX "fleet_interval", CFG_DURATION, RT_K8S_O_(OFF, fleet_interval_ms), 0, 3600000, \
	    "10s", NULL, "period of the proxy-fleet sweep (scale, re-assign); 0: none" },

/* A new kubernetes runtime, or NULL with err. Starts the fleet thread. */
struct runtime *runtime_k8s_new(const struct rt_k8s_conf *, char *err,
	    size_t errlen);

/* One proxy-fleet sweep now: scale the Deployment to the running
 * sandboxes, label new proxy pods, re-assign sandboxes whose proxy pod is
 * gone or not ready. The fleet thread calls it every fleet_interval. */
int	runtime_k8s_fleet_sync(struct runtime *, char *err, size_t errlen);

/*
 * Pushes env ("K=V\n" lines, as attach_egress returns them) to the agent of
 * running sandbox id (POST /v1/env): what the orchestrator core does after
 * attach_egress, for k8sctl. The runtime itself pushes only after a fleet
 * move, which no core call follows. 0, or -1 with err.
 */
int	runtime_k8s_push_env(struct runtime *, const char *id, const char *env,
	    char *err, size_t errlen) WUNRES;

/* The runtime's API client (k8sctl's raw requests, tests). */
struct k8s_client *runtime_k8s_client(struct runtime *);

#endif
