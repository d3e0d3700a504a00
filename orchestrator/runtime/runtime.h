/*
 * runtime.h: the one interface through which the orchestrator drives
 * sandboxes (docs/architecture.md). Two engines implement it: local
 * (runtime/local/local.c, bubblewrap) and kubernetes (runtime/k8s/k8s.c); a fake
 * for tests (runtime/fake/fake.c).
 *
 * Every operation is synchronous and thread-safe: the orchestrator calls
 * them from worker threads, never from its event loop. Errors return -1
 * with a one-line message in err; 0 is success. What the runtime holds is
 * the truth: list() must rebuild every sandbox, with its labels, from the
 * runtime's own state (state directories and live processes, or the
 * cluster), so a restarted orchestrator can adopt what it finds.
 */
#ifndef RUNTIME_H
#define RUNTIME_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "attrib.h"
#include "ids.h"

/*
 * Label keys of the session record kept with each sandbox (the labels of
 * rt_spec and set_labels, returned by list()). The core writes them; a
 * runtime reads org, user and session only to name the sandbox at its
 * egress proxy (egress.h).
 */
#define LBL_SESSION	"session"
#define LBL_ORG		"org"
#define LBL_USER	"user"
#define LBL_CREATED	"created-ms"
#define LBL_STOPPED	"stopped-ms"
#define LBL_POOL	"pool"

struct rt_kv {
	const char	*k;
	const char	*v;
};

/* What to create. Strings are borrowed for the duration of the call. */
struct rt_spec {
	const char		*id;		/* chosen by the orchestrator */
	const char		*image;		/* NULL: the runtime's default */
	int			 use_kata;	/* kubernetes only; local refuses */
	int			 run_as_root;	/* root inside (default 1 on local) */
	int			 writable_root;	/* overlay root writable (default 1) */
	long long		 mem_bytes;	/* 0: runtime default */
	long long		 cpu_millis;	/* 1000 = one core; 0: default */
	long long		 pids_max;	/* 0: default */
	long long		 disk_bytes;	/* ephemeral/workspace; 0: default */
	const struct rt_kv	*labels;	/* session record, kept with the */
	size_t			 nlabels;	/* sandbox and returned by list() */
	const struct rt_kv	*env;		/* extra env for shell and jobs */
	size_t			 nenv;
};

enum rt_state {
	RT_CREATING,	/* exists, agent not ready yet */
	RT_RUNNING,	/* agent answers */
	RT_STOPPED,	/* processes gone, workspace kept */
	RT_FAILED,	/* died or could not start; reason says why */
};

/* A sandbox as the runtime sees it. Free with rt_info_clear(). */
struct rt_info {
	char		 id[ID_SANDBOX_MAX];
	enum rt_state	 state;
	char		 image[256];
	long long	 created_ms;	/* unix ms */
	long long	 started_ms;	/* last start, unix ms; 0 if stopped */
	struct rt_kv	*labels;	/* owned: k and v are heap strings */
	size_t		 nlabels;
	char		 reason[256];	/* for RT_FAILED (e.g. "oom", "evicted") */
};

/* How to reach a sandbox's agent (docs/internals/agent-protocol.md). */
struct rt_agent_addr {
	char	unix_path[108];	/* local: agent socket; "" otherwise */
	char	host[256];	/* kubernetes: pod IP */
	int	port;
	char	token[128];	/* bearer token for TCP */
};

/*
 * The sandbox's identity at its egress proxy: the session labels it is
 * handed to a session with (org, user and session are read from them;
 * orchestrator/egress.h). Runtimes keep no other copy: on a restart they
 * register again from the labels they hold.
 */
struct rt_egress {
	const struct rt_kv	*labels;
	size_t			 nlabels;
};

struct runtime;

struct runtime_ops {
	const char *name;	/* "local", "kubernetes", "fake" */
	/* Creates and starts; returns once the agent answers (or fails). */
	int	(*create)(struct runtime *, const struct rt_spec *,
		    struct rt_info *out, char *err, size_t errlen);
	/* Starts a stopped sandbox again, same workspace. */
	int	(*start)(struct runtime *, const char *id, char *err, size_t errlen);
	/* Stops every process; keeps the workspace and labels. Idempotent. */
	int	(*stop)(struct runtime *, const char *id, char *err, size_t errlen);
	/* Removes everything (processes, overlay, workspace, cgroups, proxy
	 * registration). Idempotent: destroying a missing id is not an error. */
	int	(*destroy)(struct runtime *, const char *id, char *err, size_t errlen);
	/* All sandboxes this runtime holds; *out freed with rt_info_free_array. */
	int	(*list)(struct runtime *, struct rt_info **out, size_t *n,
		    char *err, size_t errlen);
	/* One sandbox; -1 with err "not found" if absent. */
	int	(*get)(struct runtime *, const char *id, struct rt_info *out,
		    char *err, size_t errlen);
	/* Replaces the labels kept with the sandbox (warm-pool claim). */
	int	(*set_labels)(struct runtime *, const char *id,
		    const struct rt_kv *, size_t, char *err, size_t errlen);
	int	(*agent_addr)(struct runtime *, const char *id,
		    struct rt_agent_addr *out, char *err, size_t errlen);
	/* Registers the sandbox with its egress proxy (and, on kubernetes,
	 * its NetworkPolicy); detach on stop/destroy is the runtime's job.
	 * Env the shell must get for the proxy (HTTPS_PROXY with a per-sandbox
	 * credential, CA paths) is returned in env_out as "K=V\n" lines.
	 * The sandbox registers with the given labels; a runtime that
	 * registers again on its own (start) keeps those the sandbox lacks,
	 * and never changes one it has (that is set_labels'). */
	int	(*attach_egress)(struct runtime *, const char *id,
		    const struct rt_egress *, char *env_out, size_t envlen,
		    char *err, size_t errlen);
	void	(*free)(struct runtime *);
};

struct runtime {
	const struct runtime_ops	*ops;
	void				*impl;
};

void	rt_info_clear(struct rt_info *);
void	rt_info_free_array(struct rt_info *, size_t);
const char *rt_state_name(enum rt_state);
const char *rt_label(const struct rt_info *, const char *k);	/* NULL if absent */
/* The value of key k in kv[0..n), or NULL. */
const char *rt_kv_get(const struct rt_kv *kv, size_t n, const char *k);
/* The JSON view of a sandbox the operator tools print:
 * {id,state,image,created_ms,started_ms,reason,labels{}} (cJSON_Delete). */
cJSON	*rt_info_json(const struct rt_info *);

#endif
