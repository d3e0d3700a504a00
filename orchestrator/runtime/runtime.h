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

struct buf;

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
#define LBL_LIFETIME	"lifetime-ms"	/* the session's own reaper limits, */
#define LBL_IDLE	"idle-ms"	/* when its create asked for them */
#define LBL_APPS	"apps"		/* its published apps (apps.c) */

struct rt_kv {
	const char	*k;
	const char	*v;
};

/*
 * What to create. Strings are borrowed for the duration of the call.
 * Limits of 0 take the runtime's defaults; check() and create() refuse a
 * limit outside the runtime's own bounds, naming them.
 */
struct rt_spec {
	const char		*id;		/* chosen by the orchestrator */
	const char		*image;		/* NULL: the runtime's default */
	int			 use_kata;	/* kubernetes only; local refuses */
	int			 run_as_root;	/* root inside (default 1 on local) */
	int			 writable_root;	/* overlay root writable (default 1) */
	long long		 mem_bytes;	/* 0: runtime default */
	long long		 mem_reserve_bytes; /* memory admitted against
					 * (local: counted and protected as
					 * memory.low; kubernetes: requests);
					 * <= mem_bytes; 0: runtime default */
	long long		 cpu_millis;	/* 1000 = one core; 0: default */
	long long		 pids_max;	/* 0: default */
	long long		 disk_bytes;	/* ephemeral/workspace; 0: default */
	const struct rt_kv	*labels;	/* session record, kept with the */
	size_t			 nlabels;	/* sandbox and returned by list() */
	const struct rt_kv	*env;		/* extra env for shell and jobs */
	size_t			 nenv;
	/* A sandbox this runtime holds whose /workspace the new one starts
	 * with: a copy (local, fake) or a clone of its volume (kubernetes),
	 * taken during create; the source is read, never changed, and a
	 * failed create leaves it as it was. NULL: an empty /workspace. */
	const char		*workspace_from;
	/* The user whose home (home_prepare'd) the sandbox mounts at
	 * RT_HOME_PATH from the start (kubernetes); NULL: none. Local
	 * ignores it (home_attach mounts homes into running sandboxes). */
	const char		*home_user;
};

/* The limits a sandbox got (its defaults filled in); 0: none or unknown. */
struct rt_limits {
	long long	 mem_bytes;	/* the ceiling */
	long long	 mem_reserve_bytes;	/* what it was admitted with */
	long long	 cpu_millis;
	long long	 pids_max;
	long long	 disk_bytes;	/* local: root + /workspace; kubernetes:
					 * the /workspace claim (and the
					 * ephemeral-storage limit) */
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
	/* what it was created with (0 where a runtime does not know) */
	struct rt_limits lim;
	int		 use_kata;
	int		 run_as_root;
	int		 writable_root;
	int		 frozen;	/* RT_RUNNING with its processes frozen
					 * (ops->freeze) */
};

/* What a sandbox uses now; -1 where the runtime cannot tell cheaply. */
struct rt_usage {
	long long	 mem_bytes;	/* memory charged to it (cgroup) */
	long long	 disk_bytes;	/* bytes its writable layers hold */
	int		 disk_partial;	/* 1: disk_bytes is a lower bound (the
					 * count stopped at its bound) */
	long long	 oom_kills;	/* OOM kills so far */
};

/*
 * The figures the idle reaper and the pressure handler read of a running
 * sandbox, often and for many sandboxes (ops->load): a few small cgroup
 * files, no walk. -1 where the runtime cannot tell.
 */
struct rt_load {
	long long	 cpu_usec;	/* CPU time used since it started */
	long long	 mem_bytes;	/* memory charged to it */
	int		 frozen;	/* 1: its processes are frozen */
};

/*
 * The host's memory as the pressure handler sees it (ops->pressure):
 * /proc/meminfo and PSI (/proc/pressure/memory). -1 where unknown.
 */
struct rt_pressure {
	long long	 mem_total;	/* bytes */
	long long	 mem_available;	/* bytes: MemAvailable */
	double		 some_avg10;	/* % of time some task stalled on memory */
	double		 full_avg10;	/* % of time all tasks stalled */
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
 * orchestrator/lib/egress.h). Runtimes keep no other copy: on a restart they
 * register again from the labels they hold.
 */
struct rt_egress {
	const struct rt_kv	*labels;
	size_t			 nlabels;
	/* Set: labels are the sandbox's record from now on, as set_labels
	 * would write them, written by the attach itself (kubernetes: in the
	 * one write of the sandbox's policy that also opens its egress). A
	 * warm-pool claim attaches so; on -1 nothing says the record was
	 * written, and the caller writes it with set_labels. */
	int			 record;
	/* Out, or NULL: the client files the sandbox's named credentials
	 * feed (orchestrator/lib/credfiles.h), as the JSON text
	 * {"path relative to the home":"content"}, for the caller to write
	 * into the sandbox; nothing when there are none. */
	struct buf		*files_out;
	/* Out, or NULL: the named credentials in force for the sandbox
	 * (its policy's, or the proxy's defaults), names and no value, as
	 * the JSON text egress_reg.creds describes (orchestrator/lib/egress.h). */
	struct buf		*creds_out;
};

/* How the gateway reaches an exposed app (app_connect). */
struct rt_app_conn {
	int	fd;		/* local, fake: a socket connected to 127.0.0.1:port
				 * inside the sandbox's network namespace; else -1 */
	char	addr[128];	/* kubernetes: "podIP:port" the gateway connects to */
};

/*
 * A user's durable home (docs/operator-guide.md, "Homes"): mounted at
 * RT_HOME_PATH in every sandbox of that user, kept when its sandboxes go.
 * user is a session id (id_session_valid); the runtime never builds a
 * path or a name from one that is not.
 */
#define RT_HOME_PATH	"/home/user"

struct rt_home {
	char		 user[ID_SESSION_MAX + 1];
	int		 exists;
	long long	 size_bytes;	/* its limit */
	long long	 used_bytes;	/* what it holds on the host (local: the
					 * image's allocated blocks) */
	long long	 last_used_ms;	/* unix ms: last attach, or last seen in
					 * use; 0 unknown */
	int		 in_use;	/* mounted in a sandbox now (local) or
					 * bound to a pod (kubernetes) */
};

/*
 * Progress of a slow lifecycle call (create, start) for whoever waits on
 * it: a caller that can show progress (an MCP call that asked for it)
 * passes a sink with the call (ops->create, ops->start), and the runtime
 * reports through rt_progress what it is waiting for ("Pulling image
 * \"x\""), each time that changes. A NULL sink, or one whose fn is NULL:
 * rt_progress does nothing. fn is called on the thread that made the call
 * and must not block; msg is borrowed.
 */
typedef void	(*rt_progress_fn)(void *arg, const char *msg);
struct rt_progress {
	rt_progress_fn	 fn;
	void		*arg;
};
void	rt_progress(const struct rt_progress *, const char *fmt, ...)
	    PRINTF(2, 3);

struct runtime;

/* The answers of ops->get and ops->app_connect besides 0 and -1 (a
 * failure said in err): statuses, so that no caller decides on the error
 * text. RT_ENOTFOUND: the runtime does not hold the sandbox; RT_ESTOPPED:
 * it is not running; RT_ENOLISTEN: nothing accepts on the port. */
#define RT_ENOTFOUND	(-2)
#define RT_ESTOPPED	(-3)
#define RT_ENOLISTEN	(-4)

struct runtime_ops {
	const char *name;	/* "local", "kubernetes", "fake" */
	/* Creates and starts; returns once the agent answers (or fails).
	 * pg: where to say what it waits for meanwhile (rt_progress; NULL:
	 * nowhere). */
	int	(*create)(struct runtime *, const struct rt_spec *,
		    const struct rt_progress *pg, struct rt_info *out, char *err,
		    size_t errlen);
	/* Starts a stopped sandbox again, same workspace; pg as for create. */
	int	(*start)(struct runtime *, const char *id,
		    const struct rt_progress *pg, char *err, size_t errlen);
	/* Stops every process; keeps the workspace and labels. Idempotent. */
	int	(*stop)(struct runtime *, const char *id, char *err, size_t errlen);
	/* Removes everything (processes, overlay, workspace, cgroups, proxy
	 * registration). Idempotent: destroying a missing id is not an error. */
	int	(*destroy)(struct runtime *, const char *id, char *err, size_t errlen);
	/* All sandboxes this runtime holds; *out freed with rt_info_free_array. */
	int	(*list)(struct runtime *, struct rt_info **out, size_t *n,
		    char *err, size_t errlen);
	/* One sandbox: 0; RT_ENOTFOUND with err "not found" when the runtime
	 * does not hold it; -1 with err when it could not tell. */
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
	/*
	 * Checks a spec as create would, creating nothing: the image exists
	 * (local: in images_dir) or is a valid reference (kubernetes), every
	 * option is supported here, the limits are within the runtime's
	 * bounds, workspace_from names a sandbox whose /workspace can be
	 * copied. 0, or -1 with err saying what to change. spec->id may be
	 * NULL. The orchestrator calls it before it touches a running
	 * sandbox, so a create that would fail for these reasons never
	 * costs the old one.
	 */
	int	(*check)(struct runtime *, const struct rt_spec *, char *err,
		    size_t errlen);
	/*
	 * The image names a create may use, where the runtime has a fixed set
	 * (local: the images in images_dir): a JSON array of strings, sorted
	 * (cJSON_Delete). NULL: any valid reference goes (kubernetes, fake).
	 */
	cJSON	*(*images)(struct runtime *);
	/* What sandbox id uses now (rt_usage; -1 fields: unknown). 0, or -1
	 * with err "not found". Cheap: no walk without a bound. */
	int	(*usage)(struct runtime *, const char *id, struct rt_usage *out,
		    char *err, size_t errlen);
	/*
	 * Can sandboxes be made now? A JSON array of checks, each
	 * {"name", "ok", "isolation", "error" | "warning"} (cJSON_Delete),
	 * for the operator (/readyz; messages may name host paths). NULL
	 * op: the runtime has no checks. May take a while (a connection to
	 * an API): call it from a worker thread.
	 */
	cJSON	*(*health)(struct runtime *);
	/*
	 * Repairs what a restart of a peer lost (local: registers again
	 * every running sandbox the egress proxy no longer knows). NULL op:
	 * nothing to repair. Blocks: call it from a worker thread, often
	 * (every 2 s); it must be cheap when nothing is wrong.
	 */
	void	(*heal)(struct runtime *);
	/*
	 * A connection to port inside sandbox id for the app gateway
	 * (docs/gateway.md). RT_ENOLISTEN (nothing accepts on that port),
	 * RT_ESTOPPED (the sandbox is not running) or RT_ENOTFOUND, each with
	 * err saying so; -1 with err on any other failure.
	 * NULL op: the runtime cannot publish apps.
	 */
	int	(*app_connect)(struct runtime *, const char *id, int port,
		    struct rt_app_conn *out, char *err, size_t errlen);
	/*
	 * The ports of sandbox id that are exposed now changed to ports[0..n)
	 * (kubernetes: its NetworkPolicy admits the gateway pods to exactly
	 * these). NULL op: nothing to do (local, fake).
	 */
	int	(*app_ports)(struct runtime *, const char *id, const int *ports,
		    size_t n, char *err, size_t errlen);
	/*
	 * The W3C traceparent of the call in flight in sandbox id (NULL:
	 * none now), for the egress proxy's audit lines of its requests.
	 * NULL op: not carried (kubernetes: a fleet of proxies).
	 */
	void	(*trace)(struct runtime *, const char *id, const char *tp);
	/*
	 * Homes; NULL ops: this runtime has none. home_prepare makes user's
	 * home if it has none (size_bytes, its limit; an existing one keeps
	 * its size), before a create whose spec names it (kubernetes: the
	 * claim the pod mounts). home_attach mounts it at RT_HOME_PATH in
	 * the running sandbox id (local: into its mount namespaces, no
	 * restart; idempotent); NULL where create mounts it (spec->home).
	 * home_delete refuses with err "in use" while a sandbox holds it;
	 * a missing home is not an error. home_list: every home, *out freed
	 * with free().
	 */
	int	(*home_prepare)(struct runtime *, const char *user,
		    long long size_bytes, char *err, size_t errlen);
	int	(*home_attach)(struct runtime *, const char *id, const char *user,
		    char *err, size_t errlen);
	int	(*home_get)(struct runtime *, const char *user, struct rt_home *out,
		    char *err, size_t errlen);
	int	(*home_delete)(struct runtime *, const char *user, char *err,
		    size_t errlen);
	int	(*home_list)(struct runtime *, struct rt_home **out, size_t *n,
		    char *err, size_t errlen);
	/*
	 * Freezing (docs/local-runtime.md, "Idle sandboxes: frozen, then
	 * stopped"); NULL ops: this runtime cannot freeze, and an idle
	 * sandbox is stopped instead. freeze with on = 1 stops every process
	 * of the running sandbox id where it is (no CPU, memory kept, its
	 * sockets open), on = 0 lets them run again; both idempotent, and
	 * fast (milliseconds). A frozen sandbox stays RT_RUNNING with
	 * rt_info.frozen set; stop and destroy take a frozen one as well.
	 */
	int	(*freeze)(struct runtime *, const char *id, int on, char *err,
		    size_t errlen);
	/* rt_load of running sandbox id: 0, or -1 with err. */
	int	(*load)(struct runtime *, const char *id, struct rt_load *out,
		    char *err, size_t errlen);
	/*
	 * Asks the kernel to take back about bytes of sandbox id's memory
	 * (its page cache; anonymous memory only where the host swaps),
	 * never below what it needs: nothing is killed. *freed: what its
	 * charge fell by. 0, or -1 with err. NULL op: not supported.
	 */
	int	(*reclaim)(struct runtime *, const char *id, long long bytes,
		    long long *freed, char *err, size_t errlen);
	/* The host's memory now (rt_pressure): 0, or -1 where the runtime
	 * has no host (kubernetes: NULL op). */
	int	(*pressure)(struct runtime *, struct rt_pressure *out);
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
 * {id,state,image,created_ms,started_ms,reason,limits{},run_as_root,
 * writable_root,use_kata,labels{}} (cJSON_Delete). */
cJSON	*rt_info_json(const struct rt_info *);

/*
 * One limit of a spec against runtime rt's bounds (v in bytes or units;
 * min and max in units of scale, named unit; a v that is not a whole
 * number of them is shown as it is). 0, or -1 with err naming the bounds.
 */
int	rt_limit_ok(const char *rt, const char *what, long long v, long long min,
	    long long max, long long scale, const char *unit, char *err,
	    size_t errlen);

/*
 * Replaces every occurrence of path in err (NUL-terminated, of errlen
 * bytes) by name, in place: what reaches a client or a model never names a
 * host path. 1 if something was replaced. A path shorter than 2 bytes is
 * left alone; a result that would not fit stops at the last whole name.
 */
int	rt_scrub(char *err, size_t errlen, const char *path, const char *name);

#endif
