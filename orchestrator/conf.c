/* conf.c: the orchestrator's key table and loader. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "ids.h"
#include "lib/policy.h"
#include "strnum.h"

#define O(m) offsetof(struct conf, m)
#define DAY (86400000LL)
const struct cfg_key conf_keys[] = {
	{ "listen", CFG_STR, O(listen), 0, 0, "127.0.0.1:8080", "ORCH_LISTEN",
	  "address:port the MCP and REST server listens on (keep it on 127.0.0.1 unless behind TLS); on a loopback address, requests whose Host is not localhost, 127.0.0.1 or [::1] get 403 (DNS rebinding)" },
	{ "key_file", CFG_PATH, O(key_file), 0, 0, NULL, "ORCH_KEY_FILE",
	  "file holding the bearer key clients must send (Authorization: Bearer <key>); first line, at least 16 characters" },
	{ "key_env", CFG_STR, O(key_env), 0, 0, "ORCHESTRATOR_KEY", NULL,
	  "name of the environment variable that may hold the key instead of key_file; the daemon refuses to start without a key" },
	{ "allowed_origins", CFG_LIST, O(allowed_origins), 0, 0, NULL, NULL,
	  "Origin header values accepted on browser requests, besides http(s)://localhost, 127.0.0.1 and [::1] (any port) while listen is a loopback address; a request with any other Origin gets 403 (requests without Origin are allowed)" },
	{ "http.max_body", CFG_SIZE, O(max_body), 1024, 64LL << 20, "4MiB", "ORCH_MAX_BODY",
	  "largest request body accepted (413 beyond)" },
	{ "http.max_headers", CFG_SIZE, O(max_headers), 1024, 1LL << 20, "64KiB", NULL,
	  "largest request header block accepted" },
	{ "http.timeout", CFG_DURATION, O(http_timeout_ms), 1000, DAY, "5m", NULL,
	  "how long a reply may stall unread (the client takes no bytes) before its connection is closed; a tool call itself may run longer" },
	{ "http.request_timeout", CFG_DURATION, O(http_request_timeout_ms), 100, DAY, "30s", NULL,
	  "how long a request's head and body may take to arrive once its first byte came (408 beyond: slow clients hold no connection)" },
	{ "http.idle_timeout", CFG_DURATION, O(http_idle_timeout_ms), 100, DAY, "60s", NULL,
	  "a keep-alive connection with no request in flight is closed after this long (a connection waiting for a long tool call keeps its time)" },
	{ "http.max_conns", CFG_INT, O(http_max_conns), 16, 1000000, "4096", NULL,
	  "most client connections open at once (kept below the descriptor limit); beyond, the oldest idle connection is closed, else the new one gets 503" },
	{ "http.max_conns_per_addr", CFG_INT, O(http_max_conns_per_addr), 1, 1000000, "1024", NULL,
	  "most client connections from one client address; beyond, that address's oldest idle connection is closed, else the new one gets 429" },
	{ "drain_timeout", CFG_DURATION, O(drain_timeout_ms), 0, DAY, "30s", "ORCH_DRAIN_TIMEOUT",
	  "on SIGTERM: how long in-flight calls may run before the daemon exits (sandboxes keep running)" },
	{ "log.file", CFG_PATH, O(log_file), 0, 0, NULL, "ORCH_LOG_FILE",
	  "log file (default: stderr)" },
	{ "log.json", CFG_BOOL, O(log_json), 0, 0, "false", "ORCH_LOG_JSON",
	  "one JSON object per log line instead of key=value" },
	{ "runtime", CFG_STR, O(runtime), 0, 0, "local", "ORCH_RUNTIME",
	  "sandbox runtime: local (bubblewrap on this machine), kubernetes, or fake (tests: agents on the host, no isolation)" },
	{ "runtime_serialize", CFG_BOOL, O(runtime_serialize), 0, 0, "false", NULL,
	  "call the runtime's create/start/stop/destroy one at a time instead of in parallel (a safety valve; parallel is tested)" },
	{ "workers.min", CFG_INT, O(workers_min), 1, 1024, "4", NULL,
	  "worker threads kept for runtime operations and agent calls" },
	{ "workers.max", CFG_INT, O(workers_max), 1, 4096, "512", "ORCH_WORKERS_MAX",
	  "most worker threads (each running call holds one; beyond this calls queue)" },
	{ "sandbox.image", CFG_STR, O(image), 0, 0, NULL, "ORCH_IMAGE",
	  "default image for new sandboxes (empty: the runtime's default)" },
	{ "sandbox.memory", CFG_SIZE, O(mem_bytes), 0, 1LL << 40, "0", NULL,
	  "memory limit per sandbox (0: runtime default)" },
	{ "sandbox.memory_reservation", CFG_SIZE, O(mem_reserve_bytes), 0, 1LL << 40, "0", NULL,
	  "memory reservation per sandbox: what admission counts it for (its memory limit stays the ceiling); 0: the runtime's default (local: local.mem_reservation; kubernetes: the memory limit, as the pod's requests.memory)" },
	{ "sandbox.cpu_millis", CFG_INT, O(cpu_millis), 0, 256000, "0", NULL,
	  "CPU limit per sandbox in thousandths of a core (0: runtime default)" },
	{ "sandbox.pids", CFG_INT, O(pids_max), 0, 1000000, "0", NULL,
	  "process limit per sandbox (0: runtime default)" },
	{ "sandbox.disk", CFG_SIZE, O(disk_bytes), 0, 1LL << 50, "0", NULL,
	  "disk limit per sandbox (0: runtime default)" },
	{ "sandbox.run_as_root", CFG_BOOL, O(run_as_root), 0, 0, "true", NULL,
	  "default for create_sandbox run_as_root (root inside the sandbox's user namespace)" },
	{ "sandbox.writable_root", CFG_BOOL, O(writable_root), 0, 0, "true", NULL,
	  "default for create_sandbox writable_root" },
	{ "sandbox.egress", CFG_BOOL, O(egress), 0, 0, "true", "ORCH_EGRESS",
	  "register each sandbox with the egress proxy when it is handed to a session" },
	{ "sandbox.max_memory", CFG_SIZE, O(max_mem_bytes), 16LL << 20, 1LL << 40, "8GiB", NULL,
	  "most memory a create_sandbox or REST create may ask for (its memory); beyond is refused, naming this maximum" },
	{ "sandbox.max_memory_reservation", CFG_SIZE, O(max_mem_reserve_bytes), 1LL << 20, 1LL << 40, "1GiB", NULL,
	  "most memory reservation a create may ask for (its memory_reservation; also at most its memory limit); beyond is refused, naming this maximum" },
	{ "sandbox.max_cpu_millis", CFG_INT, O(max_cpu_millis), 10, 256000, "4000", NULL,
	  "most CPU a create may ask for (its cpu, in cores), in thousandths of a core" },
	{ "sandbox.max_disk", CFG_SIZE, O(max_disk_bytes), 16LL << 20, 1LL << 44, "64GiB", NULL,
	  "most disk a create may ask for (its disk)" },
	{ "limits.max_running", CFG_STR, O(max_running_s), 0, 0, "auto", "ORCH_MAX_RUNNING",
	  "most running sandboxes, warm pool included; creating beyond fails with a clear error. auto (or 0): what the host holds, resolved once at start: on the local runtime floor((MemTotal - local.mem_protected share) / the default memory reservation), at most local.uid_count; on kubernetes and fake 100. Else a number, 1 to 1000000; /metrics shows the figure in force (orch_max_running)" },
	{ "limits.max_stopped", CFG_INT, O(max_stopped), 0, 1000000, "1000", NULL,
	  "most stopped sandboxes kept; the reaper deletes the oldest stopped ones beyond it" },
	{ "files.max_bytes", CFG_SIZE, O(files_max_bytes), 1, 1LL << 44, "1GiB", NULL,
	  "largest file a REST PUT /v1/sessions/{id}/files/<path> takes (streamed to the sandbox, never held whole; 413 beyond, nothing of it kept); http.max_body does not apply to it" },
	{ "exec.max_output", CFG_SIZE, O(exec_max_output), 1024, 1LL << 30, "16MiB", NULL,
	  "most output (stdout and stderr together) one REST exec streams; beyond, the stream says so and the rest is dropped (the command runs on)" },
	{ "exec.max_concurrent", CFG_INT, O(exec_max_concurrent), 1, 64, "8", NULL,
	  "REST execs of one session running at once (429 beyond)" },
	{ "idempotency.ttl", CFG_DURATION, O(idem_ttl_ms), 100, 365 * DAY, "24h", NULL,
	  "how long an Idempotency-Key of a REST exec or session create is kept (from its first request): a re-issue within it attaches to the first run or gets the first result; after it the key is new again" },
	{ "idempotency.max_per_session", CFG_INT, O(idem_max_session), 1, 1000000, "1000", NULL,
	  "most Idempotency-Key records kept for one session; a new key beyond is refused (429) until one expires" },
	{ "idempotency.max_total", CFG_INT, O(idem_max_total), 1, 10000000, "100000", NULL,
	  "most Idempotency-Key records kept in all (memory and one small file each); a new key beyond is refused (503) until one expires" },
	{ "idempotency.dir", CFG_PATH, O(idem_dir), 0, 0, NULL, NULL,
	  "directory of the Idempotency-Key records (one file each, written with fsync before the command starts); empty: beside the runtime's state (local: <local.state_dir>/../idempotency, fake: <fake.state_dir>-idempotency); kubernetes: set it to a persistent volume, else a request with the header is refused (501)" },
	{ "limits.session_calls", CFG_INT, O(session_calls), 1, 4096, "16", NULL,
	  "most calls one session may have in flight at once (tool calls and REST operations); beyond, a tool error (REST: 429). Keep sessions x this below workers.max so that no session waits for a thread" },
	{ "limits.max_creating", CFG_INT, O(max_creating), 1, 1000, "16", NULL,
	  "most sandbox creations in progress at once" },
	{ "pool.min_idle", CFG_INT, O(pool_min_idle), 0, 10000, "0", "ORCH_POOL_MIN_IDLE",
	  "warm pool: idle, ready sandboxes kept for new sessions (0: off)" },
	{ "pool.max_parallel", CFG_INT, O(pool_max_parallel), 1, 100, "2", NULL,
	  "warm pool: sandboxes created at once while refilling" },
	{ "reap.interval", CFG_DURATION, O(reap_interval_ms), 100, DAY, "15s", "ORCH_REAP_INTERVAL",
	  "how often the reaper and pool refill run" },
	{ "reap.lifetime", CFG_DURATION, O(lifetime_ms), 1000, 365 * DAY, "1h", "ORCH_LIFETIME",
	  "a running sandbox is stopped this long after it was started, unless a command or job is running (workspace kept)" },
	{ "reap.idle", CFG_DURATION, O(idle_ms), 1000, 365 * DAY, "10m", "ORCH_IDLE",
	  "a running sandbox with no call, command, app connection or CPU work for this long is frozen (reap.freeze), or stopped (workspace kept)" },
	{ "reap.max_lifetime", CFG_DURATION, O(max_lifetime_ms), 60000, 365 * DAY, "24h", NULL,
	  "longest lifetime a create may ask for (its lifetime; default reap.lifetime)" },
	{ "reap.max_idle", CFG_DURATION, O(max_idle_ms), 60000, 365 * DAY, "4h", NULL,
	  "longest idle timeout a create may ask for (its idle_timeout; default reap.idle)" },
	{ "reap.stopped_ttl", CFG_DURATION, O(stopped_ttl_ms), 1000, 3650 * DAY, "24h", "ORCH_STOPPED_TTL",
	  "a stopped sandbox is deleted, workspace included, this long after it stopped" },
	{ "reap.freeze", CFG_BOOL, O(freeze), 0, 0, "true", NULL,
	  "an idle sandbox is frozen (processes kept in memory, no CPU) instead of stopped, where the runtime can freeze (local); its next call, REST call or app request thaws it" },
	{ "reap.frozen", CFG_DURATION, O(frozen_ms), 1000, 365 * DAY, "1h", NULL,
	  "a frozen sandbox is stopped (workspace kept) after this long frozen" },
	{ "reap.idle_cpu", CFG_INT, O(idle_cpu_millis), 0, 100000, "50", NULL,
	  "CPU use (millicores, averaged between two sweeps) above which a sandbox with no call is not idle: a build or a busy job keeps it awake" },
	{ "pressure.min_available", CFG_SIZE, O(press_min_avail), 0, 1LL << 50, "0", NULL,
	  "host memory pressure: when MemAvailable falls below this, idle sandboxes are reclaimed, then frozen (0: 5% of the host's memory, at least 512MiB)" },
	{ "pressure.stop_below", CFG_SIZE, O(press_stop_below), 0, 1LL << 50, "0", NULL,
	  "when MemAvailable falls below this despite that, idle sandboxes are stopped, least recently used first (0: half of pressure.min_available)" },
	{ "pressure.psi", CFG_INT, O(press_psi), 0, 100, "20", NULL,
	  "memory pressure also when some task stalled on memory more than this % of the last 10 s (/proc/pressure/memory; 0: off)" },
	{ "pressure.idle", CFG_DURATION, O(press_idle_ms), 0, DAY, "60s", NULL,
	  "a sandbox with no call for this long may be reclaimed, frozen or stopped under pressure" },
	{ "reconcile.interval", CFG_DURATION, O(reconcile_interval_ms), 500, DAY, "60s", NULL,
	  "how often the runtime's sandboxes are compared with the sessions (also at start)" },
	{ "tools.shell_timeout", CFG_DURATION, O(shell_timeout_ms), 1000, DAY, "120s", NULL,
	  "default timeout of the shell tool" },
	{ "tools.shell_max_timeout", CFG_DURATION, O(shell_max_timeout_ms), 1000, 7 * DAY, "1h", NULL,
	  "largest timeout a shell or shell_wait call may ask for" },
	{ "tools.max_output", CFG_SIZE, O(max_output), 4096, 16LL << 20, "256KiB", NULL,
	  "most output bytes returned by one call (head and tail kept)" },
	{ "tools.task_after", CFG_DURATION, O(task_after_ms), 0, 3600000, "3s", NULL,
	  "MCP 2026-07-28 with the Tasks extension: a shell or shell_wait call still running after this is answered with a task (polled with tasks/get); 0: never" },
	{ "tools.progress_interval", CFG_DURATION, O(progress_interval_ms), 1000, 3600000, "10s", NULL,
	  "for calls that asked for progress over SSE: how often a progress notification is sent (a shell call's carries the command's latest output lines; a call waiting for its sandbox to start, what the start waits for, e.g. an image pull)" },
	{ "files.tool_max_bytes", CFG_SIZE, O(tool_max_bytes), 1024, 16LL << 20, "1MiB", NULL,
	  "most file bytes one read_file or write_file call moves (read: max_bytes, write: the decoded content); beyond, a tool error pointing at offset/max_bytes or the REST files routes. A write's base64 request must also fit http.max_body" },
	{ "apps.domain", CFG_STR, O(apps_domain), 0, 0, NULL, "ORCH_APPS_DOMAIN",
	  "domain under which expose_port publishes apps, each at <name>-<sandbox>.<domain> (empty: publishing is off)" },
	{ "apps.scheme", CFG_STR, O(apps_scheme), 0, 0, "http", NULL,
	  "scheme of the app URLs handed out: http, or https when the gateway (or an Ingress before it) has a wildcard certificate" },
	{ "apps.port", CFG_INT, O(apps_port), 0, 65535, "0", NULL,
	  "port of the app URLs handed out (0: the scheme's default, 80 or 443)" },
	{ "apps.control_socket", CFG_PATH, O(apps_control_socket), 0, 0, NULL, NULL,
	  "unix socket the app gateway connects to (mode 0660): its routes and its connections to apps" },
	{ "apps.control_listen", CFG_STR, O(apps_control_listen), 0, 0, NULL, NULL,
	  "host:port on which remote app gateways (Kubernetes) connect; needs apps.control_token_file" },
	{ "apps.control_token_file", CFG_PATH, O(apps_control_token_file), 0, 0, NULL, NULL,
	  "file holding the token a gateway must send on apps.control_listen (at least 16 bytes)" },
	{ "apps.max_per_sandbox", CFG_INT, O(apps_max_per_sandbox), 1, 32, "16", NULL,
	  "most apps one sandbox may publish at once" },
	{ "apps.reserved_ports", CFG_LIST, O(apps_reserved_ports), 0, 0, NULL, NULL,
	  "ports expose_port refuses besides the proxy listener 3128 and the Kubernetes agent's 7070" },
	{ "apps.public", CFG_BOOL, O(apps_public), 0, 0, "false", NULL,
	  "apps need no token: anyone who can reach the gateway and knows the URL opens them" },
	{ "apps.activity", CFG_BOOL, O(apps_activity), 0, 0, "true", NULL,
	  "traffic to a sandbox's apps counts as activity for the idle reaper" },
	{ "homes.enabled", CFG_BOOL, O(homes_enabled), 0, 0, "true", "ORCH_HOMES",
	  "a session with a user gets that user's durable home at /home/user (HOME=/home/user)" },
	{ "homes.size", CFG_SIZE, O(homes_size), 16LL << 20, 1LL << 44, "1GiB", NULL,
	  "size limit of a new home (writes beyond: No space left on device)" },
	{ "homes.users", CFG_MAP, O(homes_users), 0, 0, NULL, NULL,
	  "per-user home size limits, user: size (a new home's; an existing one keeps its size)" },
	{ "homes.ttl", CFG_DURATION, O(homes_ttl_ms), 0, 3650 * DAY, "0", NULL,
	  "homes unused this long (and not in use) are deleted; 0: never" },
#ifdef HAVE_RT_LOCAL
	{ "homes.dir", CFG_PATH, O(local.homes_dir), 0, 0, NULL, NULL,
	  "local runtime: directory of the homes (one ext4 image per user); empty: homes beside local.state_dir" },
	{ "homes.keep_mounted", CFG_DURATION, O(local.homes_keep_ms), 0, DAY, "10m", NULL,
	  "local runtime: how long a home's filesystem stays mounted (detached, in no mount table) after its last attach, so the next sandbox of that user needs no mount; 0: released with its last sandbox" },
#endif
#ifdef HAVE_RT_K8S
	{ "homes.k8s.storage_class", CFG_STR, O(k8s.homes_storage_class), 0, 0, NULL, NULL,
	  "kubernetes: storage class of the homes' PersistentVolumeClaims (empty: the cluster's default)" },
	{ "homes.k8s.access_mode", CFG_STR, O(k8s.homes_access_mode), 0, 0, "ReadWriteOnce", NULL,
	  "kubernetes: access mode of the homes' claims: ReadWriteOnce, ReadWriteOncePod or ReadWriteMany" },
#endif
	{ "credentials.policy_file", CFG_PATH, O(policy_file), 0, 0, NULL, "ORCH_POLICY_FILE",
	  "JSON file with the operator's credential policies, {\"default\": {...}, \"orgs\": {\"<org>\": {...}}}: a session gets its org's policy, else the default, and a REST create may only narrow it (docs/operator-guide.md, \"Credential policy\"); read and checked at start, a bad file stops start-up; empty: no operator policy" },
	{ "fake.state_dir", CFG_PATH, O(fake_state_dir), 0, 0, "/tmp/orch-fake", NULL,
	  "fake runtime: directory holding one directory per sandbox (keep it short: unix socket paths)" },
	{ "fake.agent", CFG_PATH, O(fake_agent), 0, 0, "build/agent/sandbox-agent", "ORCH_FAKE_AGENT",
	  "fake runtime: the agent binary run on the host for each sandbox" },
	{ "fake.proxy_admin", CFG_PATH, O(fake_proxy_admin), 0, 0, NULL, NULL,
	  "fake runtime: egress proxy admin socket to register sandboxes with (empty: no proxy)" },
	{ "fake.proxy_addr", CFG_STR, O(fake_proxy_addr), 0, 0, "127.0.0.1:3128", NULL,
	  "fake runtime: host:port of the egress proxy's main listener" },
	{ "fake.proxy_ca", CFG_PATH, O(fake_proxy_ca), 0, 0, NULL, NULL,
	  "fake runtime: the proxy's CA certificate, handed to sandboxes as GIT_SSL_CAINFO, CURL_CA_BUNDLE, SSL_CERT_FILE" },
	{ "fake.create_delay", CFG_DURATION, O(fake_create_delay_ms), 0, 600000, "0", NULL,
	  "fake runtime: sleep this long inside create (tests of a crash mid-creation)" },
	{ "fake.list_delay", CFG_DURATION, O(fake_list_delay_ms), 0, 600000, "0", NULL,
	  "fake runtime: answer a list this long after reading it (tests of a listing that is stale when it arrives)" },
#ifdef HAVE_RT_LOCAL
	RUNTIME_LOCAL_CFG_KEYS("local.", O(local))
#endif
#ifdef HAVE_RT_K8S
	RUNTIME_K8S_CFG_KEYS("kubernetes.", O(k8s))
#endif
};
#undef O
const size_t conf_nkeys = NELEM(conf_keys);

/* limits.max_running "auto" on a runtime that cannot tell what it holds
 * (kubernetes: the scheduler admits by requests; fake): the figure it had
 * before auto. */
#define MAX_RUNNING_OTHER	100
#define MAX_RUNNING_MAX		1000000

/*
 * limits.max_running into c->max_running: a number, or auto (0) resolved
 * here, once, at start: what the host holds by the local runtime's
 * admission arithmetic (runtime_local_capacity), at least 1. 0, or -1
 * with err.
 */
static int
max_running(struct conf *c, char *err, size_t errlen)
{
	const char *s = c->max_running_s != NULL ? c->max_running_s : "auto";
	const char *why;
	long long n = 0;

	if (strcmp(s, "auto") != 0 && (strnum_ll(s, 0, MAX_RUNNING_MAX, &n,
	    &why) == -1)) {
		snprintf(err, errlen, "limits.max_running: expected auto or a "
		    "number from 1 to %d, not '%.32s'", MAX_RUNNING_MAX, s);
		return -1;
	}
	if (n > 0) {
		c->max_running = n;
		return 0;
	}
	c->max_running = MAX_RUNNING_OTHER;
#ifdef HAVE_RT_LOCAL
	if (strcmp(c->runtime, "local") == 0) {
		n = runtime_local_capacity(&c->local, c->mem_reserve_bytes);
		if (n >= 0)
			c->max_running = n > 0 ? n : 1;
	}
#endif
	return 0;
}

int
conf_load(struct conf *c, const char *path, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	if (cfg_load(conf_keys, conf_nkeys, c, path, err, errlen) == -1)
		return -1;
	if (c->runtime == NULL || (strcmp(c->runtime, "local") != 0 &&
	    strcmp(c->runtime, "kubernetes") != 0 && strcmp(c->runtime, "fake") != 0)) {
		snprintf(err, errlen, "%s: runtime: expected local, kubernetes or fake",
		    path ? path : "(defaults)");
		return -1;
	}
	if (c->workers_max < c->workers_min) {
		snprintf(err, errlen, "%s: workers.max: smaller than workers.min",
		    path ? path : "(defaults)");
		return -1;
	}
	{
		/* Each default within the maximum a create may ask for. */
		const struct { const char *k, *max; long long v, m; } d[] = {
			{ "sandbox.memory", "sandbox.max_memory", c->mem_bytes,
			  c->max_mem_bytes },
			{ "sandbox.memory_reservation",
			  "sandbox.max_memory_reservation", c->mem_reserve_bytes,
			  c->max_mem_reserve_bytes },
			{ "sandbox.cpu_millis", "sandbox.max_cpu_millis",
			  c->cpu_millis, c->max_cpu_millis },
			{ "sandbox.disk", "sandbox.max_disk", c->disk_bytes,
			  c->max_disk_bytes },
			{ "reap.lifetime", "reap.max_lifetime", c->lifetime_ms,
			  c->max_lifetime_ms },
			{ "reap.idle", "reap.max_idle", c->idle_ms, c->max_idle_ms },
		};
		size_t i;

		for (i = 0; i < NELEM(d); i++)
			if (d[i].v > d[i].m) {
				snprintf(err, errlen, "%s: %s: larger than %s",
				    path ? path : "(defaults)", d[i].k, d[i].max);
				return -1;
			}
	}
	{
		size_t i;
		long long v;
		const char *why;

		for (i = 0; i < c->homes_users.n; i++)
			if (!id_session_valid(c->homes_users.k[i]) ||
			    strnum_size(c->homes_users.v[i], &v, &why) == -1 ||
			    v < (16LL << 20) || v > (1LL << 44)) {
				snprintf(err, errlen, "%s: homes.users: %.64s: "
				    "expected a user id and a size of 16MiB .. 16TiB",
				    path ? path : "(defaults)", c->homes_users.k[i]);
				return -1;
			}
#ifdef HAVE_RT_K8S
		if (c->k8s.homes_access_mode == NULL ||
		    (strcmp(c->k8s.homes_access_mode, "ReadWriteOnce") != 0 &&
		    strcmp(c->k8s.homes_access_mode, "ReadWriteMany") != 0 &&
		    strcmp(c->k8s.homes_access_mode, "ReadWriteOncePod") != 0)) {
			snprintf(err, errlen, "%s: homes.k8s.access_mode: expected "
			    "ReadWriteOnce, ReadWriteOncePod or ReadWriteMany",
			    path ? path : "(defaults)");
			return -1;
		}
#endif
	}
	if (c->policy_file != NULL && c->policy_file[0] != '\0') {
		char e[768];

		if ((c->policies = policy_set_load(c->policy_file, e,
		    sizeof(e))) == NULL) {
			snprintf(err, errlen, "%s: credentials.policy_file: %s",
			    path ? path : "(defaults)", e);
			return -1;
		}
	}
	if (c->mem_bytes > 0 && c->mem_reserve_bytes > c->mem_bytes) {
		snprintf(err, errlen, "%s: sandbox.memory_reservation: larger than "
		    "sandbox.memory (a reservation is within the limit)",
		    path ? path : "(defaults)");
		return -1;
	}
	if (max_running(c, err, errlen) == -1) {
		snprintf(err + strlen(err), errlen - strlen(err), " (%s)",
		    path ? path : "(defaults)");
		return -1;
	}
	if (c->pool_min_idle > c->max_running) {
		snprintf(err, errlen, "%s: pool.min_idle: larger than limits.max_running",
		    path ? path : "(defaults)");
		return -1;
	}
	return 0;
}

long long
conf_home_size(const struct conf *c, const char *user)
{
	const char *v = user != NULL ? cfg_map_get(&c->homes_users, user) : NULL;
	const char *why;
	long long n;

	if (v != NULL && strnum_size(v, &n, &why) == 0)
		return n;
	return c->homes_size;
}

void
conf_free(struct conf *c)
{
	policy_set_free(c->policies);
	c->policies = NULL;
	cfg_free(conf_keys, conf_nkeys, c);
}
