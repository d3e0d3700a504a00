/*
 * conf.h: the orchestrator's configuration (one YAML file, one key table
 * in conf.c that feeds the loader, --help, --print-docs and environment
 * overrides).
 */
#ifndef CONF_H
#define CONF_H

#include "cfg.h"

struct policy_set;
#ifdef HAVE_RT_LOCAL
#include "runtime/local/local.h"
#endif
#ifdef HAVE_RT_K8S
#include "runtime/k8s/k8s.h"
#endif

struct conf {
	char		*listen;	/* host:port */
	char		*key_file;	/* bearer key file */
	char		*key_env;	/* key from the environment (ORCHESTRATOR_KEY) */
	struct cfg_list	 allowed_origins;
	long long	 max_body;
	long long	 max_headers;
	long long	 http_timeout_ms;	/* a reply stalled unread */
	long long	 http_request_timeout_ms;	/* head + body arrival */
	long long	 http_idle_timeout_ms;	/* keep-alive, nothing in flight */
	long long	 http_max_conns;
	long long	 http_max_conns_per_addr;
	long long	 drain_timeout_ms;
	char		*log_file;
	int		 log_json;
	char		*runtime;	/* local | kubernetes | fake */
	int		 runtime_serialize;

	long long	 workers_min;
	long long	 workers_max;

	/* sandboxes */
	char		*image;
	long long	 mem_bytes;
	long long	 mem_reserve_bytes;	/* 0: the runtime's default */
	long long	 cpu_millis;
	long long	 pids_max;
	long long	 disk_bytes;
	int		 run_as_root;
	int		 writable_root;
	int		 egress;
	/* what one create may ask for at most (sessopt.c) */
	long long	 max_mem_bytes;
	long long	 max_mem_reserve_bytes;
	long long	 max_cpu_millis;
	long long	 max_disk_bytes;
	long long	 max_lifetime_ms;
	long long	 max_idle_ms;

	/* limits */
	char		*max_running_s;	/* limits.max_running as written */
	long long	 max_running;	/* resolved by conf_load ("auto": what
					 * the host holds, conf_max_running) */
	long long	 max_stopped;
	long long	 max_creating;
	long long	 session_calls;	/* calls in flight per session */
	long long	 files_max_bytes;	/* REST PUT of a file */
	long long	 exec_max_output;	/* REST exec: out+err bytes */
	long long	 exec_max_concurrent;	/* REST execs per session */
	/* Idempotency-Key records (api/idem.c) */
	char		*idem_dir;		/* "": beside the runtime's state */
	long long	 idem_ttl_ms;		/* a record is kept this long */
	long long	 idem_max_session;	/* records per session */
	long long	 idem_max_total;		/* records in all */

	/* warm pool */
	long long	 pool_min_idle;
	long long	 pool_max_parallel;

	/* reaper and reconcile */
	long long	 reap_interval_ms;
	long long	 lifetime_ms;
	long long	 idle_ms;
	long long	 stopped_ttl_ms;
	long long	 reconcile_interval_ms;
	int		 freeze;		/* reap.freeze */
	long long	 frozen_ms;		/* reap.frozen */
	long long	 idle_cpu_millis;	/* reap.idle_cpu */
	/* memory pressure (session/pressure.c) */
	long long	 press_min_avail;
	long long	 press_stop_below;
	long long	 press_psi;
	long long	 press_idle_ms;

	/* tools */
	long long	 shell_timeout_ms;
	long long	 shell_max_timeout_ms;
	long long	 max_output;
	long long	 progress_interval_ms;
	long long	 task_after_ms;		/* tools.task_after: 0 no tasks */
	long long	 tool_max_bytes;	/* files.tool_max_bytes */

	/* apps published through the app gateway (apps.c) */
	char		*apps_domain;	/* NULL: expose_port is off */
	char		*apps_scheme;	/* http | https: the URLs handed out */
	long long	 apps_port;	/* 0: the scheme's default */
	char		*apps_control_socket;	/* unix: local gateways */
	char		*apps_control_listen;	/* host:port: remote gateways */
	char		*apps_control_token_file;
	long long	 apps_max_per_sandbox;
	struct cfg_list	 apps_reserved_ports;
	int		 apps_public;
	int		 apps_activity;

	/* per-user homes (homes.c, docs/operator-guide.md "Homes") */
	int		 homes_enabled;
	long long	 homes_size;	/* bytes, a new home's limit */
	struct cfg_map	 homes_users;	/* user -> size (text, checked at load) */
	long long	 homes_ttl_ms;	/* 0: never purged */

	/* credential policy (policy.h, docs/operator-guide.md) */
	char		*policy_file;	/* credentials.policy_file */
	struct policy_set *policies;	/* read from it at load; NULL: none */

	/* fake runtime (tests) */
	char		*fake_state_dir;
	char		*fake_agent;
	char		*fake_proxy_admin;
	char		*fake_proxy_addr;
	char		*fake_proxy_ca;
	long long	 fake_create_delay_ms;
	long long	 fake_list_delay_ms;

#ifdef HAVE_RT_LOCAL
	struct rt_local_conf	local;
#endif
#ifdef HAVE_RT_K8S
	struct rt_k8s_conf	k8s;
#endif
};

extern const struct cfg_key conf_keys[];
extern const size_t conf_nkeys;

/* The size limit of user's new home: homes.users' entry, else homes.size. */
long long conf_home_size(const struct conf *, const char *user);

int	conf_load(struct conf *, const char *path, char *err, size_t errlen) WUNRES;
void	conf_free(struct conf *);

#endif
