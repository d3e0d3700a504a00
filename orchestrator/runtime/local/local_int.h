/*
 * runtime/local/local_int.h: what the files of the local runtime share;
 * not for other modules (they use runtime/local/local.h). One file a
 * concern, and calls point one way, top to bottom:
 *
 *   local.c    the runtime_ops: create, start, stop, destroy, list, ...
 *   home.c     per-user homes: images, attaching them to running sandboxes
 *   health.c   the checks isolation needs (start and /readyz)
 *   start.c    starting and stopping a sandbox (the steps, bwrap's argv)
 *   spawn.c    the sandbox's processes (user namespaces, mounts, exec)
 *   cgroup.c   its cgroups          seccomp.c  its seccomp program
 *   netns.c    its network (the egress listener and registration)
 *   image.c    images and disk images
 *   admit.c    memory admission: reservations, the tally, the arithmetic
 *   record.c   the state directory: record, pid and uid files, locks
 *   files.c    files in trees the sandbox controls (never following links)
 *   proc.c     /proc, kernel knobs, sleeping: calls nothing above
 *
 * A file calls only files below it (checked with nm on the objects), so
 * no two files call each other. Every function here returns 0/-1 with a
 * message in the caller's err unless its comment says otherwise.
 */
#ifndef RUNTIME_LOCAL_INT_H
#define RUNTIME_LOCAL_INT_H

#include <limits.h>
#include <pthread.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "attrib.h"
#include "buf.h"
#include "ids.h"
#include "local.h"

/* Longest path the runtime builds (under state_dir, images_dir and the
 * cgroup parents); state_dir must be short anyway (the agent socket path
 * fits in 108 bytes). A longer path is refused, never truncated. */
#define RL_PATH_MAX	512
/* Largest record.json read or written: labels and env within their caps
 * fit with room to spare; a larger file is not one we wrote. */
#define RL_RECORD_MAX	((size_t)256 * 1024)
/* Labels per sandbox: the core sets a handful; the cap bounds a record
 * and a proxy registration. */
#define RL_MAX_LABELS	256
/* Images listed (rl_images): a tool's enum and description name them,
 * so the list stays short enough to read. */
#define RL_MAX_IMAGES	64
/* The agent's uid inside a sandbox with run_as_root false (host uid +
 * this, in a range): the first user of the usual image. */
#define RL_INNER_UID	1000

/* Every sandbox process's oom_score_adj (spawn.c), and its floor. */
#define RL_OOM_SCORE_ADJ	"500"

/* Cgroups: where limits go and how a sandbox's processes are killed. */
enum rl_cg_mode { RL_CG_NONE, RL_CG_V1, RL_CG_V2 };

struct rl_cg {
	enum rl_cg_mode	 mode;		/* where the limits live */
	char		 v2[RL_PATH_MAX];	/* v2 parent (limits in v2 mode;
					 * tracking + cgroup.kill in hybrid) */
	int		 v2_track;	/* v2 parent usable for tracking/kill */
	char		 v1_mem[RL_PATH_MAX];	/* v1 parents ("" if absent) */
	char		 v1_cpu[RL_PATH_MAX];
	char		 v1_pids[RL_PATH_MAX];
	char		 v1_freezer[RL_PATH_MAX];
};

/* Limits for one sandbox. */
struct rl_limits {
	long long	mem_bytes;	/* the ceiling: memory.max */
	long long	cpu_millis;
	long long	pids_max;
	long long	mem_low;	/* the reservation: memory.low (v2); 0 in
					 * records older than reservations */
};

/* Admission's tally (admit.c), under rl->mu and <state_dir>/.lock. */
struct rl_adm {
	long long	 reserved;	/* reservations of the sandboxes whose
					 * phase is creating or running */
	long long	 n;		/* how many they are */
	long long	 starting;	/* reservations of starts in progress
					 * (this process's, not in a record yet) */
	long long	 gen;		/* .admit-gen as we last read or wrote it */
	int		 valid;		/* 0: sum the records at next check */
};

/* The runtime: its configuration and what runtime_local_new derived. */
struct rl {
	struct rt_local_conf	 c;	/* strings owned */
	struct rl_cg		 cg;	/* where the cgroups go */
	pthread_mutex_t		 mu;	/* uid allocation and admission (with
					 * <state>/.lock for other processes) */
	int			 disk_fallback;	/* no loop devices: the default
					 * disk limit is off (warned) */
	struct rl_adm		 adm;	/* admission (admit.c; under mu) */
	char			 state_dir[RL_PATH_MAX];  /* real paths */
	char			 images_dir[RL_PATH_MAX];
	char			 homes_dir[RL_PATH_MAX];	/* made on first use */
	/* last: realpath() writes it (a last member has no fortify size) */
	char			 agent_bin[RL_PATH_MAX];
};

/* A sandbox record, as kept in record.json. */
struct rec {
	char		 id[ID_SANDBOX_MAX];
	char		 image[256];
	char		 image_dir[RL_PATH_MAX];
	char		 phase[16];	/* creating running stopped failed */
	char		 reason[256];
	long long	 uid;		/* host ids uid..uid+uid_range-1 */
	long long	 uid_range;	/* 1 in records older than ranges */
	long long	 created_ms;
	long long	 disk_bytes;	/* 0: no disk image (no limit) */
	struct rl_limits lim;
	int		 run_as_root;
	int		 writable_root;
	cJSON		*labels;	/* object of strings */
	cJSON		*env;		/* object of strings */
};

/* How a copied tree's owners move between two sandboxes' host ids: an
 * id inside from's block keeps its inner value (the agent's own user
 * becomes the new agent's); any other id, or one the new block lacks,
 * becomes the new agent's user. */
struct rl_idmap {
	long long	 from_base, from_range, from_agent;	/* agent: inner id */
	long long	 to_base, to_range, to_agent;
};

/* What the pid file says. */
struct pidrec {
	long long	bwrap_pid, bwrap_start;
	long long	child_pid, child_start;
	long long	started_ms;
};

/* Step timing of the create/start path, logged at debug level as one line:
 * "sandbox=ID start: cg=0.4 spawn=61.2 ... total=83.0" (ms per step). */
struct steps {
	long long	t0, last;	/* us */
	size_t		off;
	char		buf[384];
};

/* home.c (docs/local-runtime.md, "Homes"); user ids are checked here */
/* Makes user's home image (size bytes) unless it has one. */
int	rl_home_prepare(struct rl *, const char *user, long long size,
	    char *err, size_t errlen);
/* Mounts user's home at RT_HOME_PATH in running sandbox id (both its
 * mount namespaces); already attached: nothing to do. */
int	rl_home_attach(struct rl *, const char *id, const char *user, char *err,
	    size_t errlen);
int	rl_home_get(struct rl *, const char *user, struct rt_home *out,
	    char *err, size_t errlen);
/* -1 with err "in use" while a sandbox holds it. */
int	rl_home_delete(struct rl *, const char *user, char *err, size_t errlen);
/* Lets the kept mounts of homes unused for a while go (heal tick). */
void	rl_home_expire(struct rl *);
int	rl_home_list(struct rl *, struct rt_home **out, size_t *n, char *err,
	    size_t errlen);

/* health.c */
/* Runs the health checks (docs/local-runtime.md, "Health checks"): a JSON
 * array of {name, ok, isolation, error | warning} (cJSON_Delete). With
 * fatal non-NULL: *fatal is the first failing isolation check (NULL if
 * none) and ferr says what failed. Host paths appear in the messages:
 * for the operator only. */
cJSON	*rl_health(const struct rl *, const char **fatal, char *ferr,
	    size_t ferrlen);

/* start.c */
/* Starts step timing (s->t0 = now). */
void	rl_steps_init(struct steps *);
/* Records the step that ends now as name (s may be NULL). */
void	rl_step(struct steps *, const char *name);
/* Logs the steps at debug level: "sandbox=ID what: ... total=...". */
void	rl_steps_log(struct steps *, const char *id, const char *what);
/* 1 if k may be an environment variable name ([A-Za-z_][A-Za-z0-9_]*). */
int	rl_env_name_ok(const char *k);
/* Starts the sandbox of record r (lock held, phase written): the CA,
 * cgroups, bwrap, the pid file, the proxy listener, then waits for the
 * agent (start_timeout), timing each step into stp. 0, or -1 with err;
 * the caller then undoes with rl_do_stop. */
int	rl_do_start(struct rl *, struct rec *r, struct steps *stp, char *err,
	    size_t errlen);
/* Stops the sandbox's processes, releases its cgroups and its proxy
 * registration, removes the pid file. Idempotent. */
void	rl_do_stop(struct rl *, const char *id);

/* spawn.c */
/* What the spawned bwrap needs. All strings are prepared by the caller. */
struct rl_spawn {
	const char	*bwrap;
	char *const	*argv;		/* bwrap's argv */
	char *const	*envp;		/* bwrap's env (empty: bwrap --setenv) */
	uid_t		 uid;		/* host ids U..U+uid_range-1 */
	gid_t		 gid;
	unsigned	 uid_range;	/* ids mapped inside: 0..uid_range-1 */
	unsigned	 inner_uid;	/* uid_range 1 (older records): the one
					 * id inside (bwrap --uid) */
	const char	*image_dir;	/* mounted idmapped at lower */
	const char	*lower;		/* mount point */
	const char	*upper;		/* overlay upper/work; NULL: read-only */
	const char	*work;
	const char	*root;		/* overlay mount point */
	const char	*disk_img;	/* NULL, or an ext4 image mounted (on a
					 * loop device, in the sandbox's mount
					 * namespace) at disk_mnt first */
	const char	*disk_mnt;
	const char	*agent_state;	/* with disk_img: a directory made in
					 * it for the agent's state (owned by
					 * the agent's host uid); NULL: none */
	const char	*log_path;	/* stdout/stderr of bwrap and the agent */
	char		 (*cg_files)[RL_PATH_MAX];
	size_t		 ncg_files;
	int		 seccomp_fd;	/* -1: none; becomes fd 4 */
	/* the sandbox's user namespace becomes fd 5 (bwrap --userns 5) */
	/* out */
	pid_t		 pid;		/* bwrap (outer) */
	pid_t		 child_pid;	/* the sandbox's pid 1, host view */
	long long	 us_idmap;	/* time spent on the idmap namespace */
	long long	 us_detach;	/* forks until the sandbox's pid is known */
};

/* Forks, sets up mounts in a private mount namespace, joins cgroups, drops
 * to uid/gid and execs bwrap with --info-fd 3. Fills pid and child_pid. */
int	rl_spawn(struct rl_spawn *, int timeout_ms, char *err,
	    size_t errlen) WUNRES;

/* Attaches img to a free loop device that detaches itself once nothing
 * holds it (LO_FLAGS_AUTOCLEAR); the device's fd (keep it until a mount
 * holds the device) and its path in dev, or -1 with err. */
int	rl_loop_attach(const char *img, char *dev, size_t devlen, char *err,
	    size_t errlen);
/* Moves the detached mount mfd onto path (never through a symlink) in
 * the mount namespace of the process pidfd names. 0 moved, 1 path was
 * already on device dev (nothing done), -1 with err. */
int	rl_ns_move_mount(int pidfd, int mfd, const char *path, dev_t dev,
	    char *err, size_t errlen);

/* A user namespace can be made here now (a CLONE_VM child in a new one,
 * gone at once). 0, or -1 with err saying why not. */
int	rl_probe_userns(char *err, size_t errlen);

/* cgroup.c */
/* Finds where the cgroups go (mode: auto, v2, v1 or none) and makes the
 * parent name under each hierarchy; 0 or -1 with err. */
int	rl_cg_detect(const char *mode, const char *name, struct rl_cg *,
	    char *err, size_t errlen) WUNRES;
/* The same under another root than /sys/fs/cgroup (unit tests). */
int	rl_cg_detect_at(const char *root, const char *mode, const char *name,
	    struct rl_cg *, char *err, size_t errlen) WUNRES;
/* Creates (or reuses) the sandbox's cgroups and writes its limits. */
int	rl_cg_create(const struct rl_cg *, const char *id,
	    const struct rl_limits *, char *err, size_t errlen) WUNRES;
/* The cgroup.procs files a new sandbox process must join: *n of them
 * (at most max); -1 if a path does not fit RL_PATH_MAX. */
int	rl_cg_procs_files(const struct rl_cg *, const char *id,
	    char files[][RL_PATH_MAX], size_t max, size_t *n);
/*
 * Hands the sandbox's v2 cgroup to its agent (host uid/gid): bounds its
 * children (one level, RL_CG_DELEGATE_MAX), chowns the directory and its
 * cgroup.procs. dir: the cgroup's path for the agent's bind ("" without
 * v2). 0, or -1 with err (nothing is handed over then).
 */
int	rl_cg_delegate(const struct rl_cg *, const char *id, uid_t uid,
	    gid_t gid, char *dir, size_t dirlen, char *err, size_t errlen);
/* The cgroup directory with the sandbox's pids.current, pids.max and
 * pids.events ("" without a pids limit). */
void	rl_cg_pids_dir(const struct rl_cg *, const char *id, char *out,
	    size_t outlen);
/* Kills every process in the sandbox's cgroups and waits (<= timeout). */
int	rl_cg_kill(const struct rl_cg *, const char *id, int timeout_ms);
/* Processes in the sandbox's cgroups (-1 if unknown). */
int	rl_cg_nprocs(const struct rl_cg *, const char *id);
/* OOM kills so far (-1 if unknown). */
long long rl_cg_oom_kills(const struct rl_cg *, const char *id);
/* Memory charged to the sandbox's cgroup now, bytes (-1 if unknown). */
long long rl_cg_mem_current(const struct rl_cg *, const char *id);
/* The file whose "oom_kill N" line counts OOM kills ("" if none). */
void	rl_cg_oom_file(const struct rl_cg *, const char *id, char *out,
	    size_t outlen);
/* Removes the sandbox's cgroups (they must be empty). */
int	rl_cg_remove(const struct rl_cg *, const char *id);
/* Freezes (on = 1) or thaws sandbox id's processes. 0 or -1 with err. */
int	rl_cg_freeze(const struct rl_cg *, const char *id, int on, char *err,
	    size_t errlen);
/* 1 if sandbox id is frozen (or freezing), else 0. */
int	rl_cg_frozen(const struct rl_cg *, const char *id);
/* CPU time its processes used, in microseconds; -1 unknown. */
long long rl_cg_cpu_usec(const struct rl_cg *, const char *id);
/* Reclaims about bytes of its memory, killing nothing. 0, or -1 with
 * err. */
int	rl_cg_reclaim(const struct rl_cg *, const char *id, long long bytes,
	    char *err, size_t errlen);
/* Removes the empty cgroups under our parents for which keep() says 0
 * (sandboxes destroyed while their cgroup was still busy). */
void	rl_cg_sweep(const struct rl_cg *, int (*keep)(const char *, void *),
	    void *);

/* seccomp.c */
/* A memfd holding the seccomp BPF program bwrap --seccomp loads; -1 on
 * error. */
int	rl_seccomp_fd(char *err, size_t errlen);

/* netns.c */
/* A listening TCP socket on 127.0.0.1:port inside pid's network namespace
 * (bound whatever state its loopback is in): the fd, or -1 with err. */
int	rl_netns_listener(pid_t pid, int port, char *err, size_t errlen);
/* A socket connected to 127.0.0.1:port inside pid's network namespace;
 * RT_ENOLISTEN, RT_ESTOPPED or -1, each with err. */
int	rl_netns_connect(pid_t pid, int port, char *err, size_t errlen);
/* Opens the 127.0.0.1:3128 listener inside child's network namespace and
 * registers it with the egress proxy under r's id and labels (nothing
 * without a proxy_admin_socket); cred_env (NULL: not wanted) gets the
 * placeholders' variables, files (NULL: not wanted) their client files,
 * creds (NULL: not wanted) the credentials' names (egress.h). 0 or -1
 * with err. */
/* runtime op trace: the proxy's admin "trace" for sandbox id (netns.c). */
void	rl_trace(struct runtime *, const char *id, const char *tp);
int	rl_egress_register(const struct rl *, const struct rec *r, pid_t child,
	    const struct rt_kv *labels, size_t nlabels, struct buf *cred_env, struct buf *files,
	    struct buf *creds, char *err, size_t errlen);
/* Deregisters id at the proxy (best effort). */
void	rl_egress_deregister(const struct rl *, const char *id);
/* The proxy and CA environment every sandbox gets, as "K=V\n" lines;
 * -1 if outlen is too small. */
int	rl_proxy_env(char *out, size_t outlen);

/* image.c */
/* 1 if s may name an image: [a-z0-9][a-z0-9._-]*, at most 64 bytes. */
int	rl_image_name_valid(const char *s);
/* The real path of image name (which must exist, under images_dir) into
 * out; -1 with err if the name is invalid, the image absent or its path
 * unusable. */
int	rl_resolve_image(const struct rl *, const char *name, char *out,
	    size_t outlen, char *err, size_t errlen);
/*
 * Makes the sparse file img of size bytes (O_EXCL; what names it in
 * errors) and runs local.mkfs with av on it, its output appended to logp:
 * 0 with mke2fs's wait status in *status, or -1 with err (img may remain:
 * the caller removes it).
 */
int	rl_mkfs(const struct rl *, const char *what, const char *img,
	    long long size, char *const av[], const char *logp, int *status,
	    char *err, size_t errlen);
/* Makes <id>/disk.img (r->disk_bytes, ext4 by mkfs) holding upper/,
 * work/ and workspace/ (owned by wsuid; ws_src != -1: holding a copy of
 * that directory, rl_copy_tree with map), and the disk/ mount point.
 * 0 or -1 with err. */
int	rl_make_disk(const struct rl *, const struct rec *r, uid_t wsuid,
	    int ws_src, const struct rl_idmap *map, char *err, size_t errlen);
/* The image names in images_dir that resolve to a directory, sorted: a
 * JSON array of strings (cJSON_Delete). */
cJSON	*rl_images(const struct rl *);

/* record.c */
/* out = <state_dir>/<id>[/<sub>]; -1 if it does not fit outlen. */
int	rl_sdir_path(const struct rl *, const char *id, const char *sub,
	    char *out, size_t outlen);
/* Frees what a loaded record holds and zeroes it. */
void	rl_rec_clear(struct rec *);
/* Loads <id>/record.json into r (give it to rl_rec_clear). A record that
 * does not parse or lacks its uid or image is refused whole: -1 with err. */
int	rl_rec_load(const struct rl *, const char *id, struct rec *r, char *err,
	    size_t errlen);
/* Replaces <id>/record.json with r (atomic rename; durable: fsync'd
 * too). 0 or -1 with err (also when it would pass RL_RECORD_MAX). */
int	rl_rec_save(const struct rl *, const struct rec *r, int durable,
	    char *err, size_t errlen);
/* Loads <id>/pid; -1 if absent or not five sane numbers. */
int	rl_pid_load(const struct rl *, const char *id, struct pidrec *);
/* Replaces <id>/pid with pr (atomic rename, no fsync). 0 or -1 with err. */
int	rl_pid_save(const struct rl *, const char *id, const struct pidrec *pr,
	    char *err, size_t errlen);
/* 1 if the sandbox's pid 1 from the pid file still runs (that pid with
 * that start time: a reused pid does not count). */
int	rl_pid_alive(const struct pidrec *);
/* Takes <id>/lock (nonblock: fail at once if held); the fd, or -1. */
int	rl_id_lock(const struct rl *, const char *id, int nonblock);
/* Releases rl_id_lock's fd (-1: nothing). */
void	rl_id_unlock(int fd);
/* Checks id, locks the sandbox and loads its record: the lock fd (give
 * it and r to rl_rec_close), or -1 with err. */
int	rl_rec_open(const struct rl *, const char *id, struct rec *r, char *err,
	    size_t errlen);
void	rl_rec_close(struct rec *r, int lfd);
/* Calls fn(id, arg) for every sandbox directory in the state dir. */
int	rl_each_id(const struct rl *, void (*fn)(const char *, void *),
	    void *arg, char *err, size_t errlen);
/* A free block of uid_range host ids (uid_base + slot * uid_range) for
 * sandbox id, its slot claimed in <state_dir>/.slots; the caller holds the
 * global allocation lock. 0, or -1 with err. */
int	rl_alloc_uid(struct rl *, const char *id, long long *uid, char *err,
	    size_t errlen);

/* rel's place in the image (its symlinks followed with the image as
 * root): 0 with out, 1 if it does not exist (out: its longest existing
 * parent resolved, then the rest), -1 on error. */
int	rl_image_path(const char *image_dir, const char *rel, char *out,
	    size_t outlen);

/* admit.c (docs/local-runtime.md, "Memory: reservations and limits") */
/* The outcomes of rl_adm_decide. */
#define RL_ADM_OK	0
#define RL_ADM_FULL	1	/* reservations + protected share > MemTotal */
#define RL_ADM_LOW	2	/* MemAvailable - want < protected share */
/* The protected share: conf (local.mem_protected) when > 0, else the
 * larger of 1 GiB and 10% of total. */
long long rl_adm_protect(long long total, long long conf);
/* Admission's arithmetic, pure: may want more bytes be reserved when
 * reserved are (total, avail: MemTotal and MemAvailable, -1 unknown;
 * total unknown: RL_ADM_OK). An RL_ADM_* value. */
int	rl_adm_decide(long long total, long long avail, long long protect,
	    long long reserved, long long want);
/* floor((total - protect) / reserve), at most uid_count (> 0); -1 if
 * total or reserve is unknown. */
long long rl_adm_capacity(long long total, long long protect,
	    long long reserve, long long uid_count);
/* MemTotal and MemAvailable (bytes; -1 absent) from /proc/meminfo's text;
 * 0, or -1 without a MemTotal. */
int	rl_adm_meminfo(const char *text, long long *total, long long *avail);
/* The reservation r holds (its own, or the default for an older record). */
long long rl_adm_reserve(const struct rl *, const struct rec *r);
/* 1 if r's phase holds its reservation (creating, running). */
int	rl_adm_counted(const struct rec *r);
/* The admission lock: rl->mu, then <state_dir>/.lock (other processes). */
struct rl_adm_lk {
	int	gfd;		/* .lock, flock'd */
	int	genfd;		/* .admit-gen */
};
int	rl_adm_lock(struct rl *, struct rl_adm_lk *, char *err, size_t errlen);
void	rl_adm_unlock(struct rl *, struct rl_adm_lk *);
/* Lock held: 0 if want more bytes may be reserved now, else -1 with err
 * naming the numbers and what to do. Changes nothing. */
int	rl_adm_check(struct rl *, struct rl_adm_lk *, long long want, char *err,
	    size_t errlen);
/* Lock held: a record entered (bytes > 0, n 1) or left (bytes < 0, n -1)
 * the phases that hold memory; moves the tally and bumps .admit-gen. */
void	rl_adm_move(struct rl *, struct rl_adm_lk *, long long bytes, int n);

/* files.c */
/* mkdir p (an existing one is fine), then chown uid:gid and chmod mode;
 * 0 or -1 with err. */
int	rl_mkdir_owned(const char *p, int mode, uid_t uid, gid_t gid, char *err,
	    size_t errlen);
/* Writes data as upper/dir/name (dir made as needed, owned by uid:gid),
 * never through a link: a link in the way fails (dir) or is replaced
 * (name). 0 or -1 with err. */
int	rl_write_in_upper(const char *upper, const char *dir, const char *name,
	    const char *data, size_t len, uid_t uid, gid_t gid, char *err,
	    size_t errlen);
/* Removes a directory tree without following symlinks; 0 or -1 with err
 * (a path that does not exist is 0). */
int	rl_rmtree(const char *path, char *err, size_t errlen);
/* Bounds of a workspace copy: the sandbox made the tree, so its size in
 * entries and depth is capped (a create_sandbox that meets them fails
 * and changes nothing); files with several links stay linked up to half
 * of RL_COPY_LINK_SLOTS of them and RL_COPY_MAX_LINK_BYTES of their
 * paths kept in memory (beyond, each further link is a copy). */
#define RL_COPY_MAX_ENTRIES	10000000
#define RL_COPY_MAX_DEPTH	256
#define RL_COPY_LINK_SLOTS	131072
#define RL_COPY_MAX_LINK_BYTES	((size_t)16 << 20)
/* Copies what is under the directory fd src into the existing directory
 * dst (which keeps its own owner and mode), never following a link:
 * regular files (a reflink where the filesystem can, else their data
 * ranges, holes kept; up to the size they had when opened), directories,
 * symlinks and fifos, with owners moved by
 * map, modes (set-id bits too) and times kept; devices and sockets are
 * skipped. 0 or -1 with err (dst then holds a partial copy). */
int	rl_copy_tree(int src, const char *dst, const struct rl_idmap *map,
	    char *err, size_t errlen);
/* Allocated bytes under path (not following links), visiting at most
 * *left entries (decremented; 0 after: the sum is a lower bound). */
long long rl_tree_bytes(const char *path, long long *left);

/* proc.c */
/* /proc/<pid>/stat start time (clock ticks since boot), or -1 (also for a
 * zombie: it has exited). */
long long rl_proc_start(pid_t);
/* The same, a zombie included (it still holds its pid until reaped). */
long long rl_proc_start_any(pid_t);
/* Its parent's pid (a zombie included), or -1. */
pid_t	rl_proc_ppid(pid_t);
/* Writes s into the existing file path (a kernel knob) in one write(2);
 * 0 or -1 with errno. Only system calls. */
int	rl_write_str(const char *path, const char *s);
/* Sleeps us microseconds, resuming after signals. */
void	rl_sleep_us(long us);

/* ---- idle.c: runtime ops freeze, load, reclaim, pressure ---- */
int	rl_op_freeze(struct runtime *, const char *id, int on, char *err,
	    size_t errlen);
int	rl_op_load(struct runtime *, const char *id, struct rt_load *out,
	    char *err, size_t errlen);
int	rl_op_reclaim(struct runtime *, const char *id, long long bytes,
	    long long *freed, char *err, size_t errlen);
int	rl_op_pressure(struct runtime *, struct rt_pressure *out);

#endif
