/*
 * runtime/local/local.h: the local runtime engine (bubblewrap sandboxes on this
 * machine). See docs/local-runtime.md for the layout of the state directory,
 * the namespaces, mounts, cgroups and the egress hand-off.
 *
 * Needs real root: each sandbox runs as its own block of unprivileged host
 * uids (uid_base + slot * uid_range, uid_range of them), root only inside
 * its user namespace.
 */
#ifndef RUNTIME_LOCAL_H
#define RUNTIME_LOCAL_H

#include <stddef.h>
#include "cfg.h"
#include "runtime/runtime.h"

struct rt_local_conf {
	char		*state_dir;	/* one directory per sandbox */
	char		*images_dir;	/* one directory (or symlink) per image */
	char		*default_image;	/* image name used when the spec has none */
	char		*agent_bin;	/* static sandbox-agent, bind-mounted ro */
	char		*bwrap;		/* bubblewrap binary */
	char		*proxy_admin_socket; /* egress proxy admin; empty: none */
	char		*proxy_ca_cert;	/* PEM added to the sandbox trust store */
	long long	 mem_bytes;	/* default memory limit */
	long long	 cpu_millis;	/* default CPU quota, 1000 = one core */
	long long	 pids_max;	/* default pids limit */
	long long	 tmp_bytes;	/* size of the per-sandbox /tmp tmpfs */
	long long	 disk_bytes;	/* default disk limit; 0: none */
	char		*mkfs;		/* mke2fs, for disk-limited sandboxes */
	long long	 uid_base;	/* first host uid/gid given to sandboxes */
	long long	 uid_count;	/* how many sandboxes may exist at once */
	long long	 uid_range;	/* host ids per sandbox (ids 0..N-1 inside) */
	char		*cgroup_name;	/* parent cgroup under every hierarchy */
	char		*cgroup_mode;	/* auto | v2 | v1 | none */
	int		 seccomp;	/* load the deny-list seccomp filter */
	long long	 start_timeout_ms; /* create/start: until the agent answers */
	long long	 mem_reserve_bytes; /* default memory reservation
					 * (what admission counts) */
	long long	 mem_protect_bytes; /* the host's protected share;
					 * 0: max(1 GiB, 10% of MemTotal) */
	long long	 mem_overcommit_pct; /* deprecated, ignored (warned) */
	int		 require_isolation; /* refuse to start when a check
					 * isolation needs fails */
	char		*homes_dir;	/* per-user homes; NULL: beside
					 * state_dir (<state_dir>/../homes) */
	long long	 homes_keep_ms;	/* an unused home's filesystem stays
					 * mounted (detached) this long; 0: not */
};

/* cfg_key initializers for every field, each followed by a comma. */
#define RUNTIME_LOCAL_CFG_KEYS(PFX, OFF)					\
	{ PFX "state_dir", CFG_PATH, (OFF) + offsetof(struct rt_local_conf,	\
	  state_dir), 0, 0, "/var/lib/sandbox/state", "SANDBOX_STATE_DIR",	\
	  "local runtime: directory holding one state directory per sandbox "	\
	  "(keep it short: the agent socket path must fit in 108 bytes)" },	\
	{ PFX "images_dir", CFG_PATH, (OFF) + offsetof(struct rt_local_conf,	\
	  images_dir), 0, 0, "/var/lib/sandbox/images", "SANDBOX_IMAGES_DIR",	\
	  "local runtime: directory of images, one directory (or symlink to "	\
	  "one) per image name; `make image` builds images_dir/default" },	\
	{ PFX "default_image", CFG_STR, (OFF) + offsetof(struct rt_local_conf,\
	  default_image), 0, 0, "default", "SANDBOX_DEFAULT_IMAGE",		\
	  "local runtime: image used when a create request names none" },	\
	{ PFX "agent_bin", CFG_PATH, (OFF) + offsetof(struct rt_local_conf,	\
	  agent_bin), 0, 0, "build/agent/sandbox-agent", "SANDBOX_AGENT_BIN",	\
	  "local runtime: the static sandbox-agent binary, bind-mounted "	\
	  "read-only into every sandbox as its first process" },		\
	{ PFX "bwrap", CFG_PATH, (OFF) + offsetof(struct rt_local_conf,	\
	  bwrap), 0, 0, "/usr/bin/bwrap", NULL,					\
	  "local runtime: bubblewrap binary" },					\
	{ PFX "proxy_admin_socket", CFG_PATH, (OFF) +				\
	  offsetof(struct rt_local_conf, proxy_admin_socket), 0, 0, NULL,	\
	  "SANDBOX_PROXY_ADMIN", "local runtime: egress proxy admin socket; "	\
	  "each sandbox's 127.0.0.1:3128 listener is handed to it (empty: no "	\
	  "proxy, sandboxes have no egress at all)" },				\
	{ PFX "proxy_ca_cert", CFG_PATH, (OFF) +				\
	  offsetof(struct rt_local_conf, proxy_ca_cert), 0, 0, NULL,		\
	  "SANDBOX_PROXY_CA", "local runtime: the egress proxy's CA "		\
	  "certificate (PEM), added to each sandbox's trust store" },		\
	{ PFX "mem_bytes", CFG_SIZE, (OFF) + offsetof(struct rt_local_conf,	\
	  mem_bytes), 16LL << 20, 1LL << 40, "2GiB", NULL,			\
	  "local runtime: default memory limit per sandbox" },			\
	{ PFX "cpu_millis", CFG_INT, (OFF) + offsetof(struct rt_local_conf,	\
	  cpu_millis), 0, 256000, "0", NULL,					\
	  "local runtime: default CPU quota per sandbox (1000 = one core); "	\
	  "0: half of the host's cores, at least one (never the whole "	\
	  "machine on two or more cores)" },					\
	{ PFX "pids_max", CFG_INT, (OFF) + offsetof(struct rt_local_conf,	\
	  pids_max), 16, 1000000, "1024", NULL,					\
	  "local runtime: default limit on processes and threads per sandbox" },\
	{ PFX "tmp_bytes", CFG_SIZE, (OFF) + offsetof(struct rt_local_conf,	\
	  tmp_bytes), 1LL << 20, 1LL << 40, "512MiB", NULL,			\
	  "local runtime: size of each sandbox's /tmp (tmpfs, counts against "\
	  "its memory)" },							\
	{ PFX "disk_bytes", CFG_SIZE, (OFF) + offsetof(struct rt_local_conf,	\
	  disk_bytes), 0, 1LL << 44, "10GiB", NULL,				\
	  "local runtime: default disk limit of a sandbox's writable root, "	\
	  "/workspace and the agent's job spools (a sparse ext4 image on a "	\
	  "loop device per sandbox, made at create); 0: no limit (a spec's "	\
	  "disk_bytes still sets one). Without loop devices the runtime "	\
	  "warns loudly and runs without the default" },			\
	{ PFX "mkfs", CFG_PATH, (OFF) + offsetof(struct rt_local_conf, mkfs),	\
	  0, 0, "/usr/sbin/mke2fs", NULL,					\
	  "local runtime: mke2fs, for disk-limited sandboxes" },		\
	{ PFX "uid_base", CFG_INT, (OFF) + offsetof(struct rt_local_conf,	\
	  uid_base), 1000, 4000000000LL, "2000000", NULL,			\
	  "local runtime: first host uid/gid given to sandboxes (each sandbox "\
	  "gets its own block; none of them may belong to a real user)" },	\
	{ PFX "uid_count", CFG_INT, (OFF) + offsetof(struct rt_local_conf,	\
	  uid_count), 1, 1000000, "10000", NULL,				\
	  "local runtime: number of uid blocks from uid_base (the most "	\
	  "sandboxes that may exist at once)" },				\
	{ PFX "uid_range", CFG_INT, (OFF) + offsetof(struct rt_local_conf,	\
	  uid_range), 1, 65536, "65536", NULL,					\
	  "local runtime: host uids/gids per sandbox: ids 0..uid_range-1 "	\
	  "inside map to uid_base + slot * uid_range onwards (image files "	\
	  "and files made inside keep their owners)" },			\
	{ PFX "cgroup_name", CFG_STR, (OFF) + offsetof(struct rt_local_conf,	\
	  cgroup_name), 0, 0, "sandbox", NULL,					\
	  "local runtime: parent cgroup (under each hierarchy) of the "	\
	  "per-sandbox cgroups" },						\
	{ PFX "cgroup_mode", CFG_STR, (OFF) + offsetof(struct rt_local_conf,	\
	  cgroup_mode), 0, 0, "auto", "SANDBOX_CGROUP_MODE",			\
	  "local runtime: auto (v2 when its controllers are usable, else v1), "\
	  "v2, v1 or none (no limits: tests only)" },				\
	{ PFX "seccomp", CFG_BOOL, (OFF) + offsetof(struct rt_local_conf,	\
	  seccomp), 0, 0, "true", NULL,						\
	  "local runtime: load a seccomp filter refusing dangerous system "	\
	  "calls (kexec, modules, bpf, perf, mount API on the host, ...)" },	\
	{ PFX "start_timeout", CFG_DURATION, (OFF) +				\
	  offsetof(struct rt_local_conf, start_timeout_ms), 100, 600000,	\
	  "20s", NULL, "local runtime: create/start fail if the agent does "	\
	  "not answer within this time" },					\
	{ PFX "mem_reservation", CFG_SIZE, (OFF) +				\
	  offsetof(struct rt_local_conf, mem_reserve_bytes), 1LL << 20,	\
	  1LL << 40, "4MiB", NULL, "local runtime: default memory "		\
	  "reservation per sandbox: what admission counts for it and what "	\
	  "its cgroup protects from reclaim (v2 memory.low); its memory "	\
	  "limit stays the ceiling (docs/local-runtime.md, \"Memory\")" },	\
	{ PFX "mem_protected", CFG_SIZE, (OFF) +				\
	  offsetof(struct rt_local_conf, mem_protect_bytes), 0, 1LL << 44,	\
	  "0", NULL, "local runtime: host memory no sandbox is admitted "	\
	  "into: a create or start is refused when the reservations of the "	\
	  "running sandboxes and its own would leave less than this of the "	\
	  "host's memory, or when MemAvailable is below it now; 0: the "	\
	  "larger of 1GiB and 10% of the host's memory" },			\
	{ PFX "mem_overcommit", CFG_INT, (OFF) +				\
	  offsetof(struct rt_local_conf, mem_overcommit_pct), 0, 100000,	\
	  "0", NULL, "local runtime: deprecated and ignored (a warning at "	\
	  "start): admission counts reservations now, not limits (see "	\
	  "local.mem_reservation, local.mem_protected)" },			\
	{ PFX "require_isolation", CFG_BOOL, (OFF) +				\
	  offsetof(struct rt_local_conf, require_isolation), 0, 0, "true",	\
	  NULL, "local runtime: refuse to start when a check isolation "	\
	  "needs fails (user namespaces, cgroups, bwrap, the agent binary); "	\
	  "false: start anyway and report the failing check in /readyz" },

struct runtime *runtime_local_new(const struct rt_local_conf *, char *err,
	    size_t errlen);

/*
 * How many sandboxes of reservation reserve (0: c's default) this host
 * holds by admission's arithmetic: floor((MemTotal - protected share) /
 * reserve), at most c's uid_count; -1 if MemTotal cannot be read. For
 * limits.max_running "auto" (conf.c), read once at start.
 */
long long runtime_local_capacity(const struct rt_local_conf *c,
	    long long reserve);

/*
 * Registers dir as image name (a symlink images_dir/name -> dir). name is
 * [a-z0-9][a-z0-9._-]*; dir must be an absolute path to a directory.
 */
int	runtime_local_image_add(const struct rt_local_conf *, const char *name,
	    const char *dir, char *err, size_t errlen) WUNRES;

#endif
