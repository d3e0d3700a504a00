/*
 * runtime/k8s/obj.h: the JSON objects of the kubernetes runtime (pod, PVC,
 * Secret) built with cJSON, the session record kept in annotations, and
 * the reading of pods back into runtime state. No I/O here, so everything
 * is unit-tested (tests/unit/test_k8s_obj.c) and validated against the
 * real OpenAPI schemas by the e2e tests.
 */
#ifndef K8S_OBJ_H
#define K8S_OBJ_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "attrib.h"
#include "caps.h"
#include "cfg.h"
#include "runtime/runtime.h"

#define K8S_MANAGER		"sandbox-orchestrator"
#define K8S_LBL_MANAGED		"app.kubernetes.io/managed-by"
#define K8S_LBL_ID		"sandbox.dev/id"
#define K8S_LBL_INSTANCE	"sandbox.dev/instance"
#define K8S_LBL_ROLE		"sandbox.dev/role"
#define K8S_LBL_PROXY_POD	"sandbox.dev/proxy-pod"	/* on proxy pods */
#define K8S_ANN_SPEC		"sandbox.dev/spec"
#define K8S_ANN_LABELS		"sandbox.dev/labels"
#define K8S_ANN_CREATED		"sandbox.dev/created-ms"
#define K8S_ANN_STARTED		"sandbox.dev/started-ms"
#define K8S_ANN_PROXY		"sandbox.dev/proxy-pod"
#define K8S_ANN_PROXY_IP	"sandbox.dev/proxy-ip"
#define K8S_ANN_APP_PORTS	"sandbox.dev/app-ports"	/* on the policy */
/* Homes (docs/kubernetes.md, "Homes"): on the home claim and on the pods
 * that mount it, the label is the hash of the user id (ids are not label
 * values); the id itself is an annotation of the claim. */
#define K8S_LBL_HOME		"sandbox.dev/home"
#define K8S_ANN_HOME_USER	"sandbox.dev/home-user"
#define K8S_ANN_HOME_USED	"sandbox.dev/home-last-used"	/* unix ms */
#define K8S_HOME_HASH		32	/* hex digits of sha256(user) named */

#define K8S_AGENT_DIR		"/opt/agent"
#define K8S_AGENT_BIN		"/opt/agent/sandbox-agent"
#define K8S_TOKEN_DIR		"/run/agent-token"
#define K8S_PROXY_CA_DIR	"/etc/sandbox-proxy"
#define K8S_MAX_ENV		256	/* variables per sandbox */
#define K8S_MAX_LABELS		256	/* session labels per sandbox */
#define K8S_MAX_ANN		((size_t)128 * 1024)	/* bytes of our annotations */

/* What a sandbox was created with; stored on its PVC so start() can
 * recreate the pod after a stop, a failure or an orchestrator restart. */
struct k8s_sbx {
	char		 id[ID_SANDBOX_MAX];
	char		 image[256];
	int		 use_kata;
	int		 run_as_root;
	int		 writable_root;
	long long	 mem, cpu, pids, disk;	/* disk: ephemeral-storage */
	long long	 mem_req;	/* requests.memory (the reservation);
					 * 0: the limit, mem */
	long long	 ws;	/* the /workspace claim's size; 0: the default */
	struct rt_kv	*env;	/* owned */
	size_t		 nenv;
	/* create only, not stored: the claim a new claim is cloned from
	 * (spec.dataSource; "" for an empty /workspace) */
	char		 ws_from[128];
	/* the user whose home claim is mounted at RT_HOME_PATH ("": none),
	 * and that claim's size when the sandbox was made (start() makes
	 * the claim again with it if it was deleted meanwhile) */
	char		 home[ID_SESSION_MAX + 1];
	long long	 home_bytes;
};

/*
 * The capabilities a run_as_root sandbox container gets back after
 * dropping ALL (docs/kubernetes.md): the one list of both runtimes,
 * common/caps.h (Pod Security "baseline" allows all of them).
 */
#define K8S_CAP_NAME(name, nr)	#name,
#define K8S_ROOT_CAPS	{ SANDBOX_CAPS(K8S_CAP_NAME) }

/* Cluster-wide settings the builders need (from struct rt_k8s_conf). */
struct k8s_params {
	const char	*ns;
	const char	*instance;
	const char	*agent_image;
	const char	*pull_policy;
	const char	*runtime_class;
	const char	*kata_runtime_class;
	const char	*storage_class;
	const char	*proxy_ca_configmap;
	long long	 cpu_request;
	long long	 run_as_user;
	long long	 agent_port;
	long long	 workspace_bytes;
	long long	 grace_s;
	int		 cluster_dns;
	const char	*seccomp_localhost;	/* NULL: RuntimeDefault */
	const char	*home_storage_class;	/* NULL or "": the default */
	const char	*home_access_mode;	/* ReadWriteOnce, ...Pod, ...Many */
	/* extra scheduling (NULL or empty: none), checked by
	 * k8s_toleration_valid at setup */
	const struct cfg_map	*node_selector;
	const struct cfg_list	*tolerations;
};

/* A kubernetes.sandbox.tolerations entry, "key[=value][:Effect]"; -1 with
 * err if malformed. */
int	k8s_toleration_valid(const char *t, char *err, size_t errlen) WUNRES;
/* A label key and value the API accepts (a nodeSelector entry). */
int	k8s_label_ok(const char *key, const char *value);

/* Object names for a sandbox id (all DNS-1123 subdomains). */
void	k8s_name_pod(const char *id, char *dst, size_t len);
void	k8s_name_pvc(const char *id, char *dst, size_t len);
void	k8s_name_secret(const char *id, char *dst, size_t len);
void	k8s_name_netpol(const char *id, char *dst, size_t len);
/* The hash that names user's home (K8S_HOME_HASH hex digits of
 * sha256(user)), and the claim "home-<hash>"; any user string gives a
 * valid label value and name. */
void	k8s_home_hash(const char *user, char out[K8S_HOME_HASH + 1]);
void	k8s_name_home(const char *user, char *dst, size_t len);

/* Checks a user-supplied image reference ([registry[:port]/]name[:tag]
 * [@digest], the grammar of distribution/reference: a lower-case name)
 * and env names; -1 with err. */
int	k8s_image_valid(const char *img, char *err, size_t errlen) WUNRES;
int	k8s_env_name_valid(const char *name);

/* Fills sbx from spec (copying); -1 with err on bad input. */
int	k8s_sbx_from_spec(struct k8s_sbx *, const struct rt_spec *,
	    const char *default_image, char *err, size_t errlen) WUNRES;
void	k8s_sbx_clear(struct k8s_sbx *);
char	*k8s_sbx_encode(const struct k8s_sbx *);	/* JSON; caller frees */
int	k8s_sbx_decode(const char *json, const char *id, struct k8s_sbx *,
	    char *err, size_t errlen) WUNRES;

/* Session labels <-> annotation JSON ({"k":"v",...}). */
char	*k8s_labels_encode(const struct rt_kv *, size_t);	/* caller frees */
int	k8s_labels_decode(const char *json, struct rt_kv **, size_t *) WUNRES;

/* New objects (cJSON_Delete). labels_json may be NULL ("{}"); the session
 * labels are also the sandbox's identity at its proxy (egress.h). The
 * claim is s->ws bytes (0: the default), cloned from s->ws_from if set. */
cJSON	*k8s_build_pvc(const struct k8s_params *, const struct k8s_sbx *,
	    const char *labels_json, long long created_ms);
cJSON	*k8s_build_secret(const struct k8s_params *, const char *id,
	    const char *token, const char *pvc_uid);
/* User's home claim: size_bytes, the home access mode and storage class
 * of p, labelled with the hash, annotated with the user and last use. */
cJSON	*k8s_build_home_pvc(const struct k8s_params *, const char *user,
	    long long size_bytes, long long now_ms);
/* The pod mounts s->home's claim at RT_HOME_PATH when s->home is set. */
cJSON	*k8s_build_pod(const struct k8s_params *, const struct k8s_sbx *,
	    const char *labels_json, long long created_ms, long long started_ms);

/* A pod read back (borrowed pointers into the cJSON tree). */
struct k8s_podview {
	const char	*name;
	const char	*id;		/* label; NULL if absent */
	const char	*phase;		/* "" if absent */
	const char	*ip;		/* NULL until assigned */
	int		 ready;		/* Ready condition True */
	int		 deleting;	/* deletionTimestamp set */
	const char	*uid;		/* NULL if absent */
	int		 failed;	/* Failed/Succeeded or a fatal wait reason */
	int		 hard;		/* failed by a wait reason the kubelet
					 * retries (ErrImagePull, ...): a
					 * start gives it fail_after */
	int		 unschedulable;	/* PodScheduled False, Unschedulable */
	char		 reason[256];	/* why failed, or why still waiting */
	const cJSON	*annotations;
	const cJSON	*labels;
};
void	k8s_pod_view(const cJSON *pod, struct k8s_podview *);

/*
 * What the Events of one object (items of an Event list, of the pod or of
 * its claim) say of a start: a Warning that will not get better by waiting
 * (FailedCreatePodSandBox: the runtime handler is missing or broken;
 * ProvisioningFailed: the claim's volume cannot be made) into hard as
 * "Reason: message" (the latest, unless a pull began after it: the
 * kubelet's retry got past it); an image pull under way (Pulling with no
 * later Pulled) into pulling as the event's message. "" when none.
 */
void	k8s_events_scan(const cJSON *items, char *hard, size_t hardlen,
	    char *pulling, size_t pulllen);
const char *k8s_ann(const cJSON *annotations, const char *key);	/* NULL if absent */
/* A quantity in bytes ("1073741824", "10Gi", "5G"; no fractions), or -1. */
long long k8s_qty_bytes(const char *q);
long long k8s_ann_ll(const cJSON *annotations, const char *key);	/* 0 if absent */

#endif
