/*
 * runtime/local/local.c: the local runtime (docs/local-runtime.md): its
 * runtime_ops table (orchestrator/runtime/runtime.h), the ops, and
 * runtime_local_new. Each sandbox is a bubblewrap process tree in its own
 * user, pid, mount, ipc, uts and network namespaces, running as its own
 * block of unprivileged host uids, over an overlay of an idmapped image,
 * with cgroup limits.
 *
 * Rules:
 * - What the state directory and /proc say is the truth (record.c): every
 *   op reads it and writes it back, nothing about a sandbox lives only in
 *   memory, so list() after a restart sees what was there before.
 * - Ops are synchronous and thread-safe. An op that changes a sandbox
 *   holds its lock throughout (rl_rec_open); create allocates the uid
 *   under rl->mu and <state_dir>/.lock (other processes: sandboxctl).
 * - A failed create leaves nothing behind: it destroys what it made. A
 *   destroy renames the directory first, so a crash mid-removal leaves
 *   no half sandbox listed; runtime_local_new finishes such removals.
 * - The top of the layers in local_int.h: called by nothing but the
 *   table.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lib/egress.h"
#include "log.h"
#include "local.h"
#include "local_int.h"
#include "util.h"
#include "xmalloc.h"

/* Env entries per spec: what an agent's spec may add to the base
 * environment; the cap bounds a record. */
#define RL_MAX_ENV	256
/* Smallest disk limit: ext4 with a journal and the skeleton needs some
 * room before the sandbox writes a byte. */
#define RL_DISK_MIN	(16LL << 20)
/* Entries a usage() walk of a sandbox without a disk image visits at most
 * (a status call must stay cheap; beyond, the figure is a lower bound). */
#define RL_USAGE_ENTRIES	200000

static void rl_fill_info(struct rl *, const char *, struct rt_info *);

static int rl_destroy(struct runtime *, const char *, char *, size_t);

#define RL_NAME	"local"	/* in messages */

/*
 * Checks spec and fills r from it and the defaults (phase "creating", no
 * uid yet); spec->id may be NULL (check() only). 0, or -1 with err; on -1,
 * r holds nothing to free.
 */
static int
create_rec(const struct rl *rl, const struct rt_spec *spec, struct rec *r,
    char *err, size_t errlen)
{
	char sdir[RL_PATH_MAX];
	size_t i;

	if (spec->id != NULL && !id_sandbox_valid(spec->id)) {
		snprintf(err, errlen, "invalid sandbox id (expected "
		    "[a-z0-9][a-z0-9-]{0,62})");
		return -1;
	}
	if (spec->use_kata) {
		snprintf(err, errlen, "use_kata is not available on the local "
		    "runtime (it has no VM isolation; leave use_kata out)");
		return -1;
	}
	if (spec->nlabels > RL_MAX_LABELS || spec->nenv > RL_MAX_ENV) {
		snprintf(err, errlen, "too many labels or env entries");
		return -1;
	}
	for (i = 0; i < spec->nenv; i++)
		if (spec->env[i].k == NULL || spec->env[i].v == NULL ||
		    !rl_env_name_ok(spec->env[i].k)) {
			snprintf(err, errlen, "invalid env name");
			return -1;
		}
	snprintf(r->id, sizeof(r->id), "%s", spec->id ? spec->id : "check");
	snprintf(r->image, sizeof(r->image), "%s", spec->image != NULL &&
	    spec->image[0] != '\0' ? spec->image : rl->c.default_image);
	if (rl_resolve_image(rl, r->image, r->image_dir, sizeof(r->image_dir),
	    err, errlen) == -1)
		return -1;
	if (rl_sdir_path(rl, r->id, NULL, sdir, sizeof(sdir)) == -1 ||
	    strlen(sdir) + sizeof("/agent/agent.sock") > 108) {
		snprintf(err, errlen, "state_dir too long for the agent socket "
		    "path");
		return -1;
	}
	r->created_ms = util_unix_ms();
	r->run_as_root = spec->run_as_root;
	r->writable_root = spec->writable_root;
	r->lim.mem_bytes = spec->mem_bytes > 0 ? spec->mem_bytes :
	    rl->c.mem_bytes;
	/* the default reservation stays within a small limit; one asked for
	 * above it is refused below */
	r->lim.mem_low = spec->mem_reserve_bytes > 0 ? spec->mem_reserve_bytes :
	    rl->c.mem_reserve_bytes < r->lim.mem_bytes ?
	    rl->c.mem_reserve_bytes : r->lim.mem_bytes;
	r->lim.cpu_millis = spec->cpu_millis > 0 ? spec->cpu_millis :
	    rl->c.cpu_millis;
	r->lim.pids_max = spec->pids_max > 0 ? spec->pids_max : rl->c.pids_max;
	r->disk_bytes = spec->disk_bytes > 0 ? spec->disk_bytes :
	    rl->c.disk_bytes;
	if (rt_limit_ok(RL_NAME, "memory", r->lim.mem_bytes, 8, 1LL << 20,
	    1LL << 20, "MiB", err, errlen) == -1 ||
	    rt_limit_ok(RL_NAME, "memory_reservation", r->lim.mem_low, 1,
	    1LL << 20, 1LL << 20, "MiB", err, errlen) == -1 ||
	    rt_limit_ok(RL_NAME, "pids", r->lim.pids_max, 8, 1000000, 1, "",
	    err, errlen) == -1 ||
	    rt_limit_ok(RL_NAME, "cpu", r->lim.cpu_millis, 10, 256000, 1,
	    " millicores", err, errlen) == -1 || (r->disk_bytes > 0 &&
	    rt_limit_ok(RL_NAME, "disk", r->disk_bytes, RL_DISK_MIN >> 20,
	    1LL << 24, 1LL << 20, "MiB", err, errlen) == -1))
		return -1;
	if (r->lim.mem_low > r->lim.mem_bytes) {
		snprintf(err, errlen, "memory_reservation %lld MiB is above the "
		    "sandbox's memory limit of %lld MiB (a reservation is what it "
		    "is admitted with, within its limit): ask for a larger memory "
		    "or a smaller memory_reservation", r->lim.mem_low >> 20,
		    r->lim.mem_bytes >> 20);
		return -1;
	}
	r->labels = cJSON_CreateObject();
	for (i = 0; i < spec->nlabels; i++) {
		if (spec->labels[i].k == NULL || spec->labels[i].v == NULL)
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(r->labels,
		    spec->labels[i].k);
		cJSON_AddStringToObject(r->labels, spec->labels[i].k,
		    spec->labels[i].v);
	}
	r->env = cJSON_CreateObject();
	for (i = 0; i < spec->nenv; i++)
		cJSON_AddStringToObject(r->env, spec->env[i].k, spec->env[i].v);
	snprintf(r->phase, sizeof(r->phase), "creating");
	return 0;
}

/* The inner id of a sandbox's agent user (create_dirs gives it
 * /workspace): 0, or RL_INNER_UID without run_as_root in a range. */
static long long
agent_inner(const struct rec *r)
{
	return !r->run_as_root && r->uid_range > RL_INNER_UID ? RL_INNER_UID : 0;
}

/*
 * Opens the /workspace of sandbox id for a copy (workspace_from), and
 * fills map's from side. Without a disk image it is <id>/workspace on the
 * host; in a disk image it is reached through the running sandbox's root
 * (/proc/<pid 1>/root, its mount namespace; the pid checked by start
 * time after the open, so a reused pid is refused). Never changes the
 * sandbox and takes no lock (records are replaced by rename). The fd, or
 * -1 with err.
 */
static int
ws_source_open(const struct rl *rl, const char *id, struct rl_idmap *map,
    char *err, size_t errlen)
{
	char p[RL_PATH_MAX];
	struct pidrec pr;
	struct rec r;
	int root, fd = -1;

	if (!id_sandbox_valid(id) || rl_rec_load(rl, id, &r, err, errlen) == -1) {
		snprintf(err, errlen, "sandbox %s not found (its /workspace cannot "
		    "be copied)", id);
		return -1;
	}
	map->from_base = r.uid;
	map->from_range = r.uid_range;
	map->from_agent = agent_inner(&r);
	if (r.disk_bytes == 0) {
		if (rl_sdir_path(rl, id, "workspace", p, sizeof(p)) == 0)
			fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	} else if (rl_pid_load(rl, id, &pr) == 0 && rl_pid_alive(&pr)) {
		snprintf(p, sizeof(p), "/proc/%lld/root", pr.child_pid);
		if ((root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC)) != -1) {
			fd = openat(root, "workspace", O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			close(root);
			if (fd != -1 && !rl_pid_alive(&pr)) {
				close(fd);
				fd = -1;
			}
		}
	} else {
		snprintf(err, errlen, "sandbox %s is not running and its /workspace "
		    "is on a disk image: start it, then copy", id);
		rl_rec_clear(&r);
		return -1;
	}
	if (fd == -1)
		snprintf(err, errlen, "sandbox %s: cannot open its /workspace: %s",
		    id, strerror(errno));
	rl_rec_clear(&r);
	return fd;
}

/*
 * The directory and the uid, under the admission lock (rl_adm_lock): the
 * memory admission (admit.c), then makes <id>/ (*made = 1: the caller
 * undoes with rl_destroy), takes its lock (*lfd), allocates the uid and
 * writes the uid file, then the first record, whose reservation the
 * tally counts from then on. 0, or -1 with err.
 */
static int
create_alloc(struct rl *rl, struct rec *r, int *lfd, int *made, char *err,
    size_t errlen)
{
	char sdir[RL_PATH_MAX], p[RL_PATH_MAX + 16], e[64];
	struct rl_adm_lk lk;
	int rc = -1;

	if (rl_sdir_path(rl, r->id, NULL, sdir, sizeof(sdir)) == -1) {
		snprintf(err, errlen, "state path too long");
		return -1;
	}
	if (rl_adm_lock(rl, &lk, err, errlen) == -1)
		return -1;
	if (access(sdir, F_OK) == -1 && rl_adm_check(rl, &lk, r->lim.mem_low,
	    err, errlen) == -1)
		goto out;
	if (mkdir(sdir, 0711) == -1) {
		snprintf(err, errlen, errno == EEXIST ? "sandbox %s already "
		    "exists" : "mkdir %s: %s", errno == EEXIST ? r->id : sdir,
		    strerror(errno));
		goto out;
	}
	*made = 1;
	if ((*lfd = rl_id_lock(rl, r->id, 0)) == -1) {
		snprintf(err, errlen, "lock %s: %s", r->id, strerror(errno));
		goto out;
	}
	if (rl_alloc_uid(rl, r->id, &r->uid, err, errlen) == -1)
		goto out;
	r->uid_range = rl->c.uid_range;
	snprintf(e, sizeof(e), "%lld\n", r->uid);
	if (rl_sdir_path(rl, r->id, "uid", p, sizeof(p)) == -1 ||
	    util_write_file_replace(p, e, strlen(e), 0600, err, errlen) == -1 ||
	    rl_rec_save(rl, r, 0, err, errlen) == -1)
		goto out;
	rl_adm_move(rl, &lk, r->lim.mem_low, 1);
	rc = 0;
out:
	rl_adm_unlock(rl, &lk);
	return rc;
}

/* <id>/name, made owned by uid:uid with mode. 0 or -1 with err. */
static int
mkdir_sub(const struct rl *rl, const char *id, const char *name, int mode,
    uid_t uid, char *err, size_t errlen)
{
	char p[RL_PATH_MAX];

	if (rl_sdir_path(rl, id, name, p, sizeof(p)) == -1) {
		snprintf(err, errlen, "state path too long");
		return -1;
	}
	return rl_mkdir_owned(p, mode, uid, uid, err, errlen);
}

/* The sandbox's directories (docs/local-runtime.md, "State directory")
 * and its disk image, if it has a disk limit; with ws_src != -1 its
 * /workspace holds a copy of that tree (map's from side filled). 0 or -1
 * with err. */
static int
create_dirs(const struct rl *rl, const struct rec *r, int ws_src,
    struct rl_idmap *map, char *err, size_t errlen)
{
	char p[RL_PATH_MAX];
	uid_t uid = (uid_t)r->uid;

	if (mkdir_sub(rl, r->id, "upper", 0755, uid, err, errlen) == -1 ||
	    mkdir_sub(rl, r->id, "work", 0700, 0, err, errlen) == -1 ||
	    mkdir_sub(rl, r->id, "lower", 0755, 0, err, errlen) == -1 ||
	    mkdir_sub(rl, r->id, "root", 0755, 0, err, errlen) == -1)
		return -1;
	/* the agent's user owns /workspace and /run/agent: inside uid 0 or
	 * RL_INNER_UID (host uid + that, in a range; the same uid in the
	 * one-uid mapping of older records) */
	if (!r->run_as_root && r->uid_range > RL_INNER_UID)
		uid += RL_INNER_UID;
	/* agent/ 0711: bwrap, as the sandbox's uid 0, must reach it to bind */
	if (mkdir_sub(rl, r->id, "workspace", 0755, uid, err, errlen) == -1 ||
	    mkdir_sub(rl, r->id, "agent", uid == (uid_t)r->uid ? 0700 : 0711,
	    uid, err, errlen) == -1 ||
	    mkdir_sub(rl, r->id, "agent/state", 0700, uid, err, errlen) == -1)
		return -1;
	map->to_base = r->uid;
	map->to_range = r->uid_range;
	map->to_agent = agent_inner(r);
	if (r->disk_bytes > 0)
		return rl_make_disk(rl, r, uid, ws_src, map, err, errlen);
	if (ws_src != -1 && (rl_sdir_path(rl, r->id, "workspace", p,
	    sizeof(p)) == -1 || rl_copy_tree(ws_src, p, map, err, errlen) == -1))
		return -1;
	return 0;
}

static int
rl_create(struct runtime *rt, const struct rt_spec *spec, struct rt_info *out,
    char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	struct rec r;
	struct steps stp;
	struct rl_idmap map;
	int lfd = -1, made = 0, rc = -1, ws = -1;

	rl_steps_init(&stp);
	memset(&r, 0, sizeof(r));
	memset(&map, 0, sizeof(map));
	if (out != NULL)
		memset(out, 0, sizeof(*out));
	if (spec->id == NULL) {
		snprintf(err, errlen, "invalid sandbox id");
		return -1;
	}
	if (create_rec(rl, spec, &r, err, errlen) == -1)
		return -1;
	if (spec->workspace_from != NULL && (ws = ws_source_open(rl,
	    spec->workspace_from, &map, err, errlen)) == -1) {
		rl_rec_clear(&r);
		return -1;
	}
	rl_step(&stp, "check");
	if (create_alloc(rl, &r, &lfd, &made, err, errlen) == -1)
		goto fail;
	rl_step(&stp, "alloc");
	if (create_dirs(rl, &r, ws, &map, err, errlen) == -1)
		goto fail;
	rl_step(&stp, ws != -1 ? "dirs+copy" : "dirs");
	if (rl_do_start(rl, &r, &stp, err, errlen) == -1)
		goto fail;
	snprintf(r.phase, sizeof(r.phase), "running");
	if (rl_rec_save(rl, &r, 0, err, errlen) == -1)
		goto fail;
	rl_step(&stp, "record");
	rl_steps_log(&stp, r.id, "create");
	if (out != NULL)
		rl_fill_info(rl, r.id, out);
	if (out != NULL && out->state == RT_CREATING)
		out->state = RT_RUNNING;	/* we still hold the lock */
	rc = 0;
	log_info("sandbox=%s created image=%s uid=%lld", r.id, r.image, r.uid);
fail:
	if (rc == -1 && made) {
		char e2[256];

		log_warnx("sandbox=%s create failed: %s", r.id, err);
		rl_id_unlock(lfd);
		lfd = -1;
		(void)rl_destroy(rt, r.id, e2, sizeof(e2));
	}
	rl_id_unlock(lfd);
	rl_rec_clear(&r);
	if (ws != -1)
		close(ws);
	return rc;
}

static int
rl_check(struct runtime *rt, const struct rt_spec *spec, char *err,
    size_t errlen)
{
	struct rl *rl = rt->impl;
	struct rl_idmap map;
	struct rec r;
	int ws;

	memset(&r, 0, sizeof(r));
	if (create_rec(rl, spec, &r, err, errlen) == -1)
		return -1;
	rl_rec_clear(&r);
	if (spec->workspace_from != NULL) {
		if ((ws = ws_source_open(rl, spec->workspace_from, &map, err,
		    errlen)) == -1)
			return -1;
		close(ws);
	}
	return 0;
}

static cJSON *
rl_images_op(struct runtime *rt)
{
	return rl_images(rt->impl);
}

/*
 * Memory from the cgroup; disk: a disk image's filesystem as the running
 * sandbox sees it (statvfs through its root), else the allocated bytes of
 * upper/ and workspace/ (a walk of at most RL_USAGE_ENTRIES entries).
 */
static int
rl_usage(struct runtime *rt, const char *id, struct rt_usage *out, char *err,
    size_t errlen)
{
	struct rl *rl = rt->impl;
	char p[RL_PATH_MAX];
	struct pidrec pr;
	struct statvfs sv;
	struct stat st;
	struct rec r;
	long long left = RL_USAGE_ENTRIES;
	int alive;

	out->mem_bytes = out->disk_bytes = out->oom_kills = -1;
	out->disk_partial = 0;
	if (!id_sandbox_valid(id) || rl_rec_load(rl, id, &r, err, errlen) == -1) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	out->mem_bytes = rl_cg_mem_current(&rl->cg, id);
	out->oom_kills = rl_cg_oom_kills(&rl->cg, id);
	if (r.disk_bytes > 0) {
		alive = rl_pid_load(rl, id, &pr) == 0 && rl_pid_alive(&pr);
		if (alive)
			snprintf(p, sizeof(p), "/proc/%lld/root/workspace",
			    pr.child_pid);
		if (alive && statvfs(p, &sv) == 0)
			out->disk_bytes = (long long)(sv.f_blocks - sv.f_bfree) *
			    (long long)sv.f_frsize;
		else if (rl_sdir_path(rl, id, "disk.img", p, sizeof(p)) == 0 &&
		    stat(p, &st) == 0)
			out->disk_bytes = (long long)st.st_blocks * 512;
	} else if (rl_sdir_path(rl, id, "upper", p, sizeof(p)) == 0) {
		out->disk_bytes = rl_tree_bytes(p, &left);
		if (rl_sdir_path(rl, id, "workspace", p, sizeof(p)) == 0)
			out->disk_bytes += rl_tree_bytes(p, &left);
		out->disk_partial = left <= 0;
	}
	rl_rec_clear(&r);
	return 0;
}

/*
 * Saves r with phase (fsync'd if durable), under the admission lock, and moves the
 * tally when the phase enters or leaves those that hold memory; starting:
 * the start in progress that held res until now (admit.c). 0, or -1 with
 * err (then nothing moved).
 */
static int
phase_save(struct rl *rl, struct rec *r, const char *phase, long long starting,
    int durable, char *err, size_t errlen)
{
	struct rl_adm_lk lk;
	long long res = rl_adm_reserve(rl, r);
	int was = rl_adm_counted(r), rc = -1;

	if (rl_adm_lock(rl, &lk, err, errlen) == -1)
		return -1;
	rl->adm.starting -= starting;
	snprintf(r->phase, sizeof(r->phase), "%s", phase);
	if (rl_rec_save(rl, r, durable, err, errlen) == 0) {
		rc = 0;
		if (was != rl_adm_counted(r))
			rl_adm_move(rl, &lk, was ? -res : res, was ? -1 : 1);
	}
	rl_adm_unlock(rl, &lk);
	return rc;
}

static int
rl_start(struct runtime *rt, const char *id, char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	struct rl_adm_lk lk;
	struct rec r;
	struct pidrec pr;
	struct steps stp;
	long long starting = 0;
	int lfd, rc = -1;

	if ((lfd = rl_rec_open(rl, id, &r, err, errlen)) == -1)
		return -1;
	if (rl_pid_load(rl, id, &pr) == 0 && rl_pid_alive(&pr)) {
		rc = 0;		/* already running */
		goto out;
	}
	rl_do_stop(rl, id);	/* leftovers of a crash */
	if (r.lim.mem_low <= 0)	/* a record older than reservations */
		r.lim.mem_low = rl_adm_reserve(rl, &r);
	/* a stopped sandbox is admitted again; one whose record says running
	 * (it died) still holds its reservation */
	if (!rl_adm_counted(&r)) {
		if (rl_adm_lock(rl, &lk, err, errlen) == -1)
			goto out;
		if (rl_adm_check(rl, &lk, rl_adm_reserve(rl, &r), err,
		    errlen) == -1) {
			rl_adm_unlock(rl, &lk);
			goto out;
		}
		starting = rl_adm_reserve(rl, &r);
		rl->adm.starting += starting;
		rl_adm_unlock(rl, &lk);
	}
	r.reason[0] = '\0';
	rl_steps_init(&stp);
	if (rl_do_start(rl, &r, &stp, err, errlen) == -1) {
		rl_do_stop(rl, id);
		(void)phase_save(rl, &r, "stopped", starting, 1,
		    err + strlen(err), 0);
		starting = 0;
		goto out;
	}
	rc = phase_save(rl, &r, "running", starting, 0, err, errlen);
	starting = 0;
	if (rc == -1)
		goto out;
	rl_step(&stp, "record");
	rl_steps_log(&stp, id, "start");
out:
	if (starting > 0) {
		pthread_mutex_lock(&rl->mu);
		rl->adm.starting -= starting;
		pthread_mutex_unlock(&rl->mu);
	}
	rl_rec_close(&r, lfd);
	return rc;
}

static int
rl_stop(struct runtime *rt, const char *id, char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	struct rec r;
	int lfd, rc = -1;

	if ((lfd = rl_rec_open(rl, id, &r, err, errlen)) == -1)
		return -1;
	rl_do_stop(rl, id);
	r.reason[0] = '\0';
	if (phase_save(rl, &r, "stopped", 0, 1, err, errlen) == 0) {
		rc = 0;
		log_info("sandbox=%s stopped", id);
	}
	rl_rec_close(&r, lfd);
	return rc;
}

static int
rl_destroy(struct runtime *rt, const char *id, char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	char sdir[RL_PATH_MAX], gone[RL_PATH_MAX + 64], e[256];
	struct rl_adm_lk lk;
	struct rec r;
	long long res = 0;
	int lfd;

	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "invalid sandbox id");
		return -1;
	}
	if (rl_sdir_path(rl, id, NULL, sdir, sizeof(sdir)) == -1)
		return 0;
	if (access(sdir, F_OK) == -1)
		return 0;
	if ((lfd = rl_id_lock(rl, id, 0)) == -1) {
		if (access(sdir, F_OK) == -1)
			return 0;
		snprintf(err, errlen, "lock %s: %s", id, strerror(errno));
		return -1;
	}
	rl_do_stop(rl, id);
	/* its reservation goes with its directory, under the admission lock */
	if (rl_rec_load(rl, id, &r, e, sizeof(e)) == 0) {
		if (rl_adm_counted(&r))
			res = rl_adm_reserve(rl, &r);
		rl_rec_clear(&r);
	}
	if (rl_adm_lock(rl, &lk, err, errlen) == -1) {
		rl_id_unlock(lfd);
		return -1;
	}
	/* rename first: a crash mid-removal leaves no half sandbox listed */
	snprintf(gone, sizeof(gone), "%s/.gone-%s-%ld", rl->state_dir, id,
	    (long)getpid());
	if (rename(sdir, gone) == -1) {
		snprintf(err, errlen, "rename %s: %s", sdir, strerror(errno));
		rl_adm_unlock(rl, &lk);
		rl_id_unlock(lfd);
		return -1;
	}
	if (res > 0)
		rl_adm_move(rl, &lk, -res, -1);
	rl_adm_unlock(rl, &lk);
	rl_id_unlock(lfd);
	if (rl_rmtree(gone, err, errlen) == -1)
		return -1;
	log_info("sandbox=%s destroyed", id);
	return 0;
}

static void
labels_to_info(const cJSON *labels, struct rt_info *out)
{
	const cJSON *it;
	size_t n = 0;

	out->labels = NULL;
	out->nlabels = 0;
	cJSON_ArrayForEach(it, labels)
		if (cJSON_IsString(it))
			n++;
	if (n == 0)
		return;
	out->labels = xcalloc(n, sizeof(*out->labels));
	cJSON_ArrayForEach(it, labels) {
		if (!cJSON_IsString(it) || out->nlabels >= n)
			continue;
		out->labels[out->nlabels].k = xstrdup(it->string);
		out->labels[out->nlabels].v = xstrdup(it->valuestring);
		out->nlabels++;
	}
}

/* Rebuilds one sandbox's info from its state directory and processes. */
static void
rl_fill_info(struct rl *rl, const char *id, struct rt_info *out)
{
	struct rec r;
	struct pidrec pr;
	char e[256];
	int busy = 0, lfd, alive;
	long long oom;

	memset(out, 0, sizeof(*out));
	snprintf(out->id, sizeof(out->id), "%s", id);
	if ((lfd = rl_id_lock(rl, id, 1)) == -1)
		busy = errno == EWOULDBLOCK;
	rl_id_unlock(lfd);
	if (rl_rec_load(rl, id, &r, e, sizeof(e)) == -1) {
		out->state = busy ? RT_CREATING : RT_FAILED;
		snprintf(out->reason, sizeof(out->reason), "%s", busy ?
		    "" : "incomplete state (interrupted create): destroy it");
		return;
	}
	snprintf(out->image, sizeof(out->image), "%s", r.image);
	out->created_ms = r.created_ms;
	out->lim.mem_bytes = r.lim.mem_bytes;
	out->lim.mem_reserve_bytes = rl_adm_reserve(rl, &r);
	out->lim.cpu_millis = r.lim.cpu_millis;
	out->lim.pids_max = r.lim.pids_max;
	out->lim.disk_bytes = r.disk_bytes;
	out->run_as_root = r.run_as_root;
	out->writable_root = r.writable_root;
	labels_to_info(r.labels, out);
	alive = rl_pid_load(rl, id, &pr) == 0 && rl_pid_alive(&pr);
	if (alive)
		out->started_ms = pr.started_ms;
	if (strcmp(r.phase, "creating") == 0) {
		out->state = busy ? RT_CREATING : RT_FAILED;
		if (!busy)
			snprintf(out->reason, sizeof(out->reason),
			    "create interrupted: destroy it");
	} else if (strcmp(r.phase, "running") == 0) {
		if (alive) {
			out->state = RT_RUNNING;
			out->frozen = rl_cg_frozen(&rl->cg, id);
		} else if (busy)
			out->state = RT_CREATING;
		else {
			out->state = RT_FAILED;
			oom = rl_cg_oom_kills(&rl->cg, id);
			snprintf(out->reason, sizeof(out->reason), "%s",
			    oom > 0 ? "oom" : "exited");
		}
	} else if (strcmp(r.phase, "stopped") == 0) {
		out->state = RT_STOPPED;
		out->started_ms = 0;
	} else {
		out->state = RT_FAILED;
		snprintf(out->reason, sizeof(out->reason), "%s",
		    r.reason[0] ? r.reason : "failed");
	}
	rl_rec_clear(&r);
}

static int
rl_get(struct runtime *rt, const char *id, struct rt_info *out, char *err,
    size_t errlen)
{
	struct rl *rl = rt->impl;
	char sdir[RL_PATH_MAX];

	if (!id_sandbox_valid(id) || rl_sdir_path(rl, id, NULL, sdir,
	    sizeof(sdir)) == -1 || access(sdir, F_OK) == -1) {
		snprintf(err, errlen, "not found");
		return RT_ENOTFOUND;
	}
	rl_fill_info(rl, id, out);
	return 0;
}

static int
id_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rt_info *)a)->id,
	    ((const struct rt_info *)b)->id);
}

struct infos {
	struct rl	*rl;
	struct rt_info	*a;
	size_t		 n, cap;
};

static void
add_info(const char *id, void *arg)
{
	struct infos *l = arg;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->a = xreallocarray(l->a, l->cap, sizeof(*l->a));
	}
	rl_fill_info(l->rl, id, &l->a[l->n++]);
}

static int
rl_list(struct runtime *rt, struct rt_info **out, size_t *n, char *err,
    size_t errlen)
{
	struct infos l = { rt->impl, NULL, 0, 0 };

	*out = NULL;
	*n = 0;
	if (rl_each_id(l.rl, add_info, &l, err, errlen) == -1)
		return -1;
	if (l.n > 1)
		qsort(l.a, l.n, sizeof(*l.a), id_cmp);
	*out = l.a;
	*n = l.n;
	return 0;
}

static int
rl_set_labels(struct runtime *rt, const char *id, const struct rt_kv *kv,
    size_t nkv, char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	struct rec r;
	cJSON *labels;
	size_t i;
	int lfd, rc;

	if (nkv > RL_MAX_LABELS) {
		snprintf(err, errlen, "too many labels");
		return -1;
	}
	if ((lfd = rl_rec_open(rl, id, &r, err, errlen)) == -1)
		return -1;
	labels = cJSON_CreateObject();
	for (i = 0; i < nkv; i++) {
		if (kv[i].k == NULL || kv[i].v == NULL)
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(labels, kv[i].k);
		cJSON_AddStringToObject(labels, kv[i].k, kv[i].v);
	}
	rc = 0;
	/* The same labels again: nothing to rewrite. */
	if (r.labels == NULL || !cJSON_Compare(r.labels, labels, 1)) {
		cJSON_Delete(r.labels);
		r.labels = labels;
		labels = NULL;
		rc = rl_rec_save(rl, &r, 0, err, errlen);
	}
	cJSON_Delete(labels);
	rl_rec_close(&r, lfd);
	return rc;
}

static int
rl_agent_addr(struct runtime *rt, const char *id, struct rt_agent_addr *out,
    char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	char sdir[RL_PATH_MAX];

	memset(out, 0, sizeof(*out));
	if (!id_sandbox_valid(id) || rl_sdir_path(rl, id, NULL, sdir,
	    sizeof(sdir)) == -1 || access(sdir, F_OK) == -1) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	if (rl_sdir_path(rl, id, "agent/agent.sock", out->unix_path,
	    sizeof(out->unix_path)) == -1) {
		snprintf(err, errlen, "agent socket path too long");
		return -1;
	}
	return 0;
}

/*
 * The identity is the labels (runtime.h): the sandbox registers with eg's,
 * and keeps those it lacks so a later start registers the same identity;
 * a label it has is never changed here (set_labels does that).
 */
static int
rl_attach_egress(struct runtime *rt, const char *id, const struct rt_egress *eg,
    char *env_out, size_t envlen, char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	struct rec r;
	struct pidrec pr;
	struct buf ce;
	size_t i;
	int lfd, changed = 0, rc = -1;

	buf_init(&ce, 4096);
	if (eg->record && rt->ops->set_labels(rt, id, eg->labels, eg->nlabels,
	    err, errlen) == -1)
		return -1;
	if ((lfd = rl_rec_open(rl, id, &r, err, errlen)) == -1)
		return -1;
	for (i = 0; i < eg->nlabels && i < RL_MAX_LABELS; i++) {
		if (eg->labels[i].k == NULL || eg->labels[i].v == NULL)
			continue;
		if (cJSON_GetObjectItemCaseSensitive(r.labels,
		    eg->labels[i].k) != NULL)
			continue;
		cJSON_AddStringToObject(r.labels, eg->labels[i].k, eg->labels[i].v);
		changed = 1;
	}
	if (changed && rl_rec_save(rl, &r, 0, err, errlen) == -1)
		goto out;
	/* The sandbox's placeholders of its named credentials (issue 30) ride
	 * with the proxy variables: per sandbox, so never applied ahead. */
	if (rl_pid_load(rl, id, &pr) == 0 && rl_pid_alive(&pr) &&
	    rl_egress_register(rl, &r, (pid_t)pr.child_pid, eg->labels,
	    eg->nlabels, &ce, eg->files_out, eg->creds_out, err, errlen) == -1)
		goto out;
	if (env_out != NULL && envlen > 0 && (rl_proxy_env(env_out, envlen) == -1 ||
	    strlen(env_out) + ce.len >= envlen)) {
		snprintf(err, errlen, "env buffer too small");
		goto out;
	}
	if (env_out != NULL && ce.len > 0)
		memcpy(env_out + strlen(env_out), ce.p, ce.len + 1);
	rc = 0;
out:
	buf_free(&ce);
	rl_rec_close(&r, lfd);
	return rc;
}

/*
 * A connection to an app in the sandbox (runtime.h): made inside its
 * network namespace, so the sandbox gets no new network path; the pid is
 * checked by its start time after the namespace is opened, so a reused
 * pid never gets another process's namespace. Takes no lock.
 */
static int
rl_app_connect(struct runtime *rt, const char *id, int port,
    struct rt_app_conn *out, char *err, size_t errlen)
{
	struct rl *rl = rt->impl;
	struct pidrec pr;
	char sdir[RL_PATH_MAX];
	int fd;

	out->fd = -1;
	out->addr[0] = '\0';
	if (!id_sandbox_valid(id) || rl_sdir_path(rl, id, NULL, sdir,
	    sizeof(sdir)) == -1 || access(sdir, F_OK) == -1) {
		snprintf(err, errlen, "not found");
		return RT_ENOTFOUND;
	}
	if (port < 1 || port > 65535) {
		snprintf(err, errlen, "port %d out of range", port);
		return -1;
	}
	if (rl_pid_load(rl, id, &pr) == -1 || !rl_pid_alive(&pr)) {
		snprintf(err, errlen, "stopped");
		return RT_ESTOPPED;
	}
	if ((fd = rl_netns_connect((pid_t)pr.child_pid, port, err, errlen)) < 0)
		return fd;
	if (!rl_pid_alive(&pr)) {
		close(fd);
		snprintf(err, errlen, "stopped");
		return RT_ESTOPPED;
	}
	out->fd = fd;
	return 0;
}

struct heal {
	struct rl		*rl;
	const struct egress_ids	*known;	/* the proxy's registered ids */
	int			 healed, failed;
};

static void
heal_one(const char *id, void *arg)
{
	struct heal *h = arg;
	static struct log_rate rl_fail;
	struct pidrec pr;
	struct rec r;
	char err[512];
	long dropped;
	int lfd;

	if (egress_ids_has(h->known, id))
		return;
	/* Not waiting: a sandbox being started, stopped or destroyed now is
	 * registered (or deregistered) by that operation itself. */
	if ((lfd = rl_id_lock(h->rl, id, 1)) == -1)
		return;
	memset(&r, 0, sizeof(r));
	if (rl_rec_load(h->rl, id, &r, err, sizeof(err)) == 0 &&
	    rl_pid_load(h->rl, id, &pr) == 0 && rl_pid_alive(&pr)) {
		if (rl_egress_register(h->rl, &r, (pid_t)pr.child_pid, NULL, 0, NULL, NULL, NULL,
		    err, sizeof(err)) == 0) {
			h->healed++;
			log_info("sandbox=%s egress registered again (the proxy "
			    "no longer knew it: restarted?)", id);
		} else {
			h->failed++;
			if (log_rate_ok(&rl_fail, 1, 10000, &dropped))
				log_warnx("sandbox=%s egress re-register failed: "
				    "%s (%ld similar not logged)", id, err,
				    dropped);
		}
	}
	rl_rec_clear(&r);
	rl_id_unlock(lfd);
}

/* The sandboxes with a pid file (started and not stopped): one fstatat
 * each, nothing read. -1 if the state dir cannot be listed. */
static long long
heal_count_started(const struct rl *rl)
{
	struct dirent *de;
	struct stat st;
	char p[NAME_MAX + 8];
	long long n = 0;
	DIR *d;

	if ((d = opendir(rl->state_dir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (!id_sandbox_valid(de->d_name))
			continue;
		snprintf(p, sizeof(p), "%s/pid", de->d_name);
		if (fstatat(dirfd(d), p, &st, AT_SYMLINK_NOFOLLOW) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/*
 * What the last full walk left (rl_heal; one heal runs at a time,
 * sessmgr_heal): the proxy's boot id if every re-registration worked
 * ("" makes the next sweep walk again), and the two counts it could not
 * reconcile (a started sandbox that is dead, or still being made, keeps
 * its pid file), so the same shortfall is not walked again every sweep.
 */
static struct {
	char		boot_id[64];
	long long	proxy_n, local_n;
} heal_seen = { "", -1, -1 };

/*
 * The proxy keeps registrations and listeners in memory only: after it
 * restarts it knows no sandbox, and each one's 127.0.0.1:3128 refuses.
 * Every sweep asks the proxy's stats summary (its boot id and how many
 * it knows) and counts the sandboxes started here (their pid files); only
 * when the boot id changed, or the proxy knows fewer than were started
 * (and not the same shortfall the last walk left), it walks: the proxy's
 * ids page by page, and every running sandbox not among them is
 * registered again (a new listener in its network namespace, its
 * record's labels). docs/local-runtime.md "Scale".
 */
static void
rl_heal(struct runtime *rt)
{
	struct rl *rl = rt->impl;
	struct egress_admin a = { .unix_path = rl->c.proxy_admin_socket };
	static struct log_rate rl_stats;
	struct egress_ids sum, ids;
	struct heal h = { rl, NULL, 0, 0 };
	long long started;
	char err[512];
	long dropped;

	rl_home_expire(rl);
	if (!egress_admin_set(&a))
		return;
	if (egress_stats_summary(&a, &sum, err, sizeof(err)) == -1) {
		if (log_rate_ok(&rl_stats, 1, 60000, &dropped))
			log_warnx("egress proxy stats failed: %s (%ld similar not "
			    "logged)", err, dropped);
		return;
	}
	started = heal_count_started(rl);
	if (sum.boot_id[0] != '\0' && strcmp(sum.boot_id, heal_seen.boot_id) == 0 &&
	    (started < 0 || sum.count >= started || (sum.count ==
	    heal_seen.proxy_n && started == heal_seen.local_n)))
		return;
	if (egress_stats_ids(&a, &ids, err, sizeof(err)) == -1) {
		egress_ids_free(&ids);
		if (log_rate_ok(&rl_stats, 1, 60000, &dropped))
			log_warnx("egress proxy stats failed: %s (%ld similar not "
			    "logged)", err, dropped);
		return;
	}
	h.known = &ids;
	if (rl_each_id(rl, heal_one, &h, err, sizeof(err)) == -1)
		h.failed++;
	if (h.healed > 0 || h.failed > 0)
		log_info("egress: %d sandboxes registered again, %d failed",
		    h.healed, h.failed);
	snprintf(heal_seen.boot_id, sizeof(heal_seen.boot_id), "%s",
	    h.failed == 0 ? ids.boot_id : "");
	heal_seen.proxy_n = ids.count + h.healed;
	heal_seen.local_n = started;
	egress_ids_free(&ids);
}

static cJSON *
rl_health_op(struct runtime *rt)
{
	return rl_health(rt->impl, NULL, NULL, 0);
}

static void
rl_free(struct runtime *rt)
{
	struct rl *rl;

	if (rt == NULL)
		return;
	rl = rt->impl;
	free(rl->c.state_dir);
	free(rl->c.images_dir);
	free(rl->c.default_image);
	free(rl->c.agent_bin);
	free(rl->c.bwrap);
	free(rl->c.proxy_admin_socket);
	free(rl->c.proxy_ca_cert);
	free(rl->c.cgroup_name);
	free(rl->c.cgroup_mode);
	free(rl->c.mkfs);
	free(rl->c.homes_dir);
	pthread_mutex_destroy(&rl->mu);
	free(rl);
	free(rt);
}

/*
 * What an op says goes to clients and models: host paths (the state and
 * images directories, the agent binary) are replaced by names, in place;
 * the host's view is logged here (at info), for the operator.
 */
static void
scrub_err(const struct rl *rl, char *err, size_t errlen)
{
	const struct { const char *path, *name; } sub[] = {
		{ rl->state_dir, "<state_dir>" },
		{ rl->c.state_dir, "<state_dir>" },
		{ rl->images_dir, "<images_dir>" },
		{ rl->c.images_dir, "<images_dir>" },
		{ rl->agent_bin, "<agent_bin>" },
		{ rl->c.agent_bin, "<agent_bin>" },
		{ rl->homes_dir, "<homes_dir>" },
	};
	char orig[1024];
	size_t i;
	int changed = 0;

	if (err == NULL || errlen == 0 || err[0] == '\0')
		return;
	snprintf(orig, sizeof(orig), "%s", err);
	for (i = 0; i < NELEM(sub); i++)
		changed |= rt_scrub(err, errlen, sub[i].path, sub[i].name);
	if (changed)
		log_info("runtime error (host view): %s", orig);
}

/* The ops as the table gives them: each error scrubbed (scrub_err). */
#define SCRUBBED(name, args, call)					\
static int								\
name args								\
{									\
	int rc = call;							\
									\
	if (rc == -1)							\
		scrub_err(rt->impl, err, errlen);			\
	return rc;							\
}
/* The local runtime tells no progress (rt_progress): pg goes unused. */
SCRUBBED(op_create, (struct runtime *rt, const struct rt_spec *spec,
    const struct rt_progress *pg, struct rt_info *out, char *err,
    size_t errlen), ((void)pg, rl_create(rt, spec, out, err, errlen)))
SCRUBBED(op_start, (struct runtime *rt, const char *id,
    const struct rt_progress *pg, char *err, size_t errlen),
    ((void)pg, rl_start(rt, id, err, errlen)))
SCRUBBED(op_stop, (struct runtime *rt, const char *id, char *err,
    size_t errlen), rl_stop(rt, id, err, errlen))
SCRUBBED(op_destroy, (struct runtime *rt, const char *id, char *err,
    size_t errlen), rl_destroy(rt, id, err, errlen))
SCRUBBED(op_list, (struct runtime *rt, struct rt_info **out, size_t *n,
    char *err, size_t errlen), rl_list(rt, out, n, err, errlen))
SCRUBBED(op_get, (struct runtime *rt, const char *id, struct rt_info *out,
    char *err, size_t errlen), rl_get(rt, id, out, err, errlen))
SCRUBBED(op_set_labels, (struct runtime *rt, const char *id,
    const struct rt_kv *kv, size_t nkv, char *err, size_t errlen),
    rl_set_labels(rt, id, kv, nkv, err, errlen))
SCRUBBED(op_agent_addr, (struct runtime *rt, const char *id,
    struct rt_agent_addr *out, char *err, size_t errlen),
    rl_agent_addr(rt, id, out, err, errlen))
SCRUBBED(op_attach_egress, (struct runtime *rt, const char *id,
    const struct rt_egress *eg, char *env_out, size_t envlen, char *err,
    size_t errlen), rl_attach_egress(rt, id, eg, env_out, envlen, err,
    errlen))
SCRUBBED(op_check, (struct runtime *rt, const struct rt_spec *spec,
    char *err, size_t errlen), rl_check(rt, spec, err, errlen))
SCRUBBED(op_usage, (struct runtime *rt, const char *id,
    struct rt_usage *out, char *err, size_t errlen),
    rl_usage(rt, id, out, err, errlen))
#undef SCRUBBED

static int
op_home_prepare(struct runtime *rt, const char *user, long long size,
    char *err, size_t errlen)
{
	int rc = rl_home_prepare(rt->impl, user, size, err, errlen);

	if (rc == -1)
		scrub_err(rt->impl, err, errlen);
	return rc;
}

static int
op_home_attach(struct runtime *rt, const char *id, const char *user,
    char *err, size_t errlen)
{
	int rc = rl_home_attach(rt->impl, id, user, err, errlen);

	if (rc == -1)
		scrub_err(rt->impl, err, errlen);
	return rc;
}

static int
op_home_get(struct runtime *rt, const char *user, struct rt_home *out,
    char *err, size_t errlen)
{
	int rc = rl_home_get(rt->impl, user, out, err, errlen);

	if (rc == -1)
		scrub_err(rt->impl, err, errlen);
	return rc;
}

static int
op_home_delete(struct runtime *rt, const char *user, char *err, size_t errlen)
{
	int rc = rl_home_delete(rt->impl, user, err, errlen);

	if (rc == -1)
		scrub_err(rt->impl, err, errlen);
	return rc;
}

static int
op_home_list(struct runtime *rt, struct rt_home **out, size_t *n, char *err,
    size_t errlen)
{
	int rc = rl_home_list(rt->impl, out, n, err, errlen);

	if (rc == -1)
		scrub_err(rt->impl, err, errlen);
	return rc;
}

static const struct runtime_ops rl_ops = {
	.name = "local",
	.create = op_create,
	.start = op_start,
	.stop = op_stop,
	.destroy = op_destroy,
	.list = op_list,
	.get = op_get,
	.set_labels = op_set_labels,
	.agent_addr = op_agent_addr,
	.attach_egress = op_attach_egress,
	.check = op_check,
	.images = rl_images_op,
	.usage = op_usage,
	.health = rl_health_op,
	.heal = rl_heal,
	.app_connect = rl_app_connect,
	.trace = rl_trace,
	.freeze = rl_op_freeze,
	.load = rl_op_load,
	.reclaim = rl_op_reclaim,
	.pressure = rl_op_pressure,
	.home_prepare = op_home_prepare,
	.home_attach = op_home_attach,
	.home_get = op_home_get,
	.home_delete = op_home_delete,
	.home_list = op_home_list,
	.free = rl_free,
};

static char *
dup_or(const char *s, const char *def)
{
	return xstrdup(s != NULL ? s : def);
}

static int
abs_dir(const char *in, char *out, size_t outlen, int create, char *err,
    size_t errlen)
{
	char rp[PATH_MAX];

	if (create && mkdir(in, 0711) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", in, strerror(errno));
		return -1;
	}
	if (realpath(in, rp) == NULL) {
		snprintf(err, errlen, "%s: %s", in, strerror(errno));
		return -1;
	}
	if (strlen(rp) >= outlen || strpbrk(rp, ",:") != NULL) {
		snprintf(err, errlen, "%s: path too long or holds ',' or ':'",
		    rp);
		return -1;
	}
	snprintf(out, outlen, "%s", rp);
	return 0;
}

/* Where homes go: homes_dir, or "homes" beside the state directory; an
 * absolute path free of ',' and ':' (not made until a home is). */
static int
homes_dir_set(struct rl *rl, char *err, size_t errlen)
{
	char *slash;

	if (rl->c.homes_dir != NULL) {
		if (rl->c.homes_dir[0] != '/' ||
		    strlen(rl->c.homes_dir) >= sizeof(rl->homes_dir) - 160 ||
		    strpbrk(rl->c.homes_dir, ",:") != NULL) {
			snprintf(err, errlen, "homes.dir %s: not an absolute "
			    "path, too long, or holds ',' or ':'", rl->c.homes_dir);
			return -1;
		}
		snprintf(rl->homes_dir, sizeof(rl->homes_dir), "%s",
		    rl->c.homes_dir);
		return 0;
	}
	snprintf(rl->homes_dir, sizeof(rl->homes_dir), "%s", rl->state_dir);
	if ((slash = strrchr(rl->homes_dir, '/')) == NULL ||
	    strlen(rl->homes_dir) >= sizeof(rl->homes_dir) - 170) {
		snprintf(err, errlen, "state_dir too long for homes");
		return -1;
	}
	snprintf(slash + 1, sizeof(rl->homes_dir) - (size_t)(slash + 1 -
	    rl->homes_dir), "homes");
	return 0;
}

/* A cgroup is kept while its sandbox's state directory exists. */
static int
cg_keep(const char *name, void *arg)
{
	struct rl *rl = arg;
	char p[RL_PATH_MAX];

	if (!id_sandbox_valid(name) ||
	    rl_sdir_path(rl, name, NULL, p, sizeof(p)) == -1)
		return 1;
	return access(p, F_OK) == 0;
}

/* Finishes removals a crash interrupted (destroy renames first). */
static void
sweep_gone(struct rl *rl)
{
	char p[RL_PATH_MAX + 300], e[256];
	struct dirent *de;
	DIR *d;

	if ((d = opendir(rl->state_dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, ".gone-", 6) != 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", rl->state_dir, de->d_name);
		if (rl_rmtree(p, e, sizeof(e)) == -1)
			log_warnx("remove %s: %s", p, e);
	}
	closedir(d);
}

/* The default CPU quota: half of the online cores, at least one core, so
 * that one sandbox never has the whole machine (on two cores or more). */
static long long
default_cpu_millis(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 2)
		return 1000;
	return (long long)n * 1000 / 2;
}

/*
 * The health checks at start: without loop devices the default disk
 * limit is dropped with a loud warning; a failing isolation check refuses
 * the start unless require_isolation is off (then it is logged and
 * /readyz reports it). 0, or -1 with err.
 */
static int
start_checks(struct rl *rl, char *err, size_t errlen)
{
	const char *fatal;
	char ferr[2200];
	cJSON *h;

	h = rl_health(rl, &fatal, ferr, sizeof(ferr));
	cJSON_Delete(h);
	if (fatal != NULL && strcmp(fatal, "loop_devices") == 0) {
		log_warnx("WARNING: %s; sandboxes get NO DISK LIMIT (local."
		    "disk_bytes %lld is dropped): a sandbox can fill the state "
		    "directory's filesystem. Load the loop module or run where "
		    "/dev/loop-control exists.", ferr, rl->c.disk_bytes);
		rl->c.disk_bytes = 0;
		rl->disk_fallback = 1;
		h = rl_health(rl, &fatal, ferr, sizeof(ferr));
		cJSON_Delete(h);
	}
	if (fatal == NULL)
		return 0;
	if (!rl->c.require_isolation) {
		log_warnx("%s; starting anyway (local.require_isolation false): "
		    "no sandbox can be made until it passes", ferr);
		return 0;
	}
	snprintf(err, errlen, "%s (set local.require_isolation: false to "
	    "start anyway)", ferr);
	return -1;
}

struct runtime *
runtime_local_new(const struct rt_local_conf *c, char *err, size_t errlen)
{
	struct runtime *rt;
	struct rl *rl;
	struct stat st;

	if (geteuid() != 0) {
		snprintf(err, errlen, "the local runtime needs root (it gives "
		    "each sandbox its own unprivileged uid)");
		return NULL;
	}
	rl = xcalloc(1, sizeof(*rl));
	rl->c = *c;
	rl->c.state_dir = dup_or(c->state_dir, "/var/lib/sandbox/state");
	rl->c.images_dir = dup_or(c->images_dir, "/var/lib/sandbox/images");
	rl->c.default_image = dup_or(c->default_image, "default");
	rl->c.agent_bin = dup_or(c->agent_bin, "build/agent/sandbox-agent");
	rl->c.bwrap = dup_or(c->bwrap, "/usr/bin/bwrap");
	rl->c.proxy_admin_socket = dup_or(c->proxy_admin_socket, "");
	rl->c.proxy_ca_cert = dup_or(c->proxy_ca_cert, "");
	rl->c.cgroup_name = dup_or(c->cgroup_name, "sandbox");
	rl->c.cgroup_mode = dup_or(c->cgroup_mode, "auto");
	rl->c.mkfs = dup_or(c->mkfs, "/usr/sbin/mke2fs");
	rl->c.homes_dir = c->homes_dir != NULL && c->homes_dir[0] != '\0' ?
	    xstrdup(c->homes_dir) : NULL;
	if (rl->c.mem_bytes <= 0)
		rl->c.mem_bytes = 2LL << 30;
	if (rl->c.cpu_millis <= 0)
		rl->c.cpu_millis = default_cpu_millis();
	if (rl->c.mem_reserve_bytes <= 0)
		rl->c.mem_reserve_bytes = 4LL << 20;
	if (rl->c.mem_overcommit_pct > 0)
		log_warnx("local.mem_overcommit is deprecated and ignored: "
		    "admission counts memory reservations now, not limits "
		    "(local.mem_reservation, local.mem_protected; "
		    "docs/local-runtime.md, \"Memory: reservations and limits\")");
	if (rl->c.pids_max <= 0)
		rl->c.pids_max = 1024;
	if (rl->c.tmp_bytes <= 0)
		rl->c.tmp_bytes = 512LL << 20;
	if (rl->c.uid_base <= 0)
		rl->c.uid_base = 2000000;
	if (rl->c.uid_count <= 0)
		rl->c.uid_count = 10000;
	if (rl->c.uid_range <= 0)
		rl->c.uid_range = 65536;
	if (rl->c.start_timeout_ms <= 0)
		rl->c.start_timeout_ms = 20000;
	pthread_mutex_init(&rl->mu, NULL);
	rt = xcalloc(1, sizeof(*rt));
	rt->ops = &rl_ops;
	rt->impl = rl;
	if (rl->c.uid_range > 65536 || rl->c.uid_base + rl->c.uid_count *
	    rl->c.uid_range > 4294967294LL) {
		snprintf(err, errlen, "uid_base + uid_count * uid_range out of "
		    "range");
		goto fail;
	}
	if (abs_dir(rl->c.state_dir, rl->state_dir, sizeof(rl->state_dir), 1,
	    err, errlen) == -1)
		goto fail;
	/* sandbox uids must reach their own directories below it */
	if (stat(rl->state_dir, &st) == -1 || st.st_uid != 0 ||
	    (st.st_mode & 0022) != 0) {
		snprintf(err, errlen, "state_dir %s must be owned by root and "
		    "not group/world writable", rl->state_dir);
		goto fail;
	}
	(void)chmod(rl->state_dir, 0711);
	if (homes_dir_set(rl, err, errlen) == -1)
		goto fail;
	if (mkdir(rl->c.images_dir, 0755) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", rl->c.images_dir,
		    strerror(errno));
		goto fail;
	}
	if (abs_dir(rl->c.images_dir, rl->images_dir, sizeof(rl->images_dir),
	    0, err, errlen) == -1)
		goto fail;
	if (realpath(rl->c.agent_bin, rl->agent_bin) == NULL ||
	    access(rl->agent_bin, X_OK) == -1) {
		snprintf(err, errlen, "agent_bin %s: %s (build it: make "
		    "build/agent/sandbox-agent)", rl->c.agent_bin,
		    strerror(errno));
		goto fail;
	}
	if (strpbrk(rl->agent_bin, ",:") != NULL) {
		snprintf(err, errlen, "agent_bin path holds ',' or ':'");
		goto fail;
	}
	if (access(rl->c.bwrap, X_OK) == -1) {
		snprintf(err, errlen, "bwrap %s: %s (apt-get install "
		    "bubblewrap)", rl->c.bwrap, strerror(errno));
		goto fail;
	}
	if (rl_cg_detect(rl->c.cgroup_mode, rl->c.cgroup_name, &rl->cg, err,
	    errlen) == -1)
		goto fail;
	if (start_checks(rl, err, errlen) == -1)
		goto fail;
	sweep_gone(rl);
	rl_cg_sweep(&rl->cg, cg_keep, rl);
	return rt;
fail:
	rl_free(rt);
	return NULL;
}

