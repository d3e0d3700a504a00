/*
 * runtime/fake/fake.c: a runtime for tests. Each "sandbox" is the real agent
 * binary run directly on the host (NO isolation) with its own directory
 * under fake.state_dir: meta.json (image, created, labels), the agent's
 * socket, state and workspace. Agents are started in their own session
 * (double fork), so they survive an orchestrator restart like real
 * sandboxes do; list() rebuilds everything from the directories and the
 * live processes. Every process of a sandbox carries FAKE_SANDBOX_ID=<id>
 * in its environment, which is how stop() finds them all. A create with
 * workspace_from copies that sandbox's workspace (cp -a); limits are
 * recorded and reported, never enforced.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lib/agentc.h"
#include "buf.h"
#include "lib/egress.h"
#include "fake.h"
#include "log.h"
#include "strnum.h"
#include "xmalloc.h"
#include "util.h"

extern char **environ;

struct fake {
	char		*dir;
	char		*agent;
	char		*admin;		/* proxy admin socket or NULL */
	char		*proxy_addr;
	char		*proxy_ca;	/* CA file sandboxes must trust, or NULL */
	long long	 create_delay_ms;	/* tests: widen the create window */
	long long	 list_delay_ms;		/* tests: a listing stale on arrival */
	pthread_mutex_t	 mu;
};

static int
path_of(struct fake *f, const char *id, const char *leaf, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%s%s%s", f->dir, id, leaf ? "/" : "",
	    leaf ? leaf : "");
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Whole-file helpers without an error message (the callers say what). */
static int
read_file(const char *path, struct buf *b)
{
	char e[128];

	return util_read_file(path, b, e, sizeof(e));
}

static int
write_atomic(const char *path, const char *data, size_t len)
{
	char e[128];

	return util_write_file_atomic(path, data, len, 0600, e, sizeof(e));
}

static cJSON *
meta_read(struct fake *f, const char *id)
{
	char p[512];
	struct buf b;
	cJSON *j = NULL;

	if (path_of(f, id, "meta.json", p, sizeof(p)) == -1)
		return NULL;
	buf_init(&b, 1 << 20);
	if (read_file(p, &b) == 0 && b.len > 0)
		j = cJSON_ParseWithLength(b.p, b.len);
	buf_free(&b);
	if (j != NULL && !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		j = NULL;
	}
	return j;
}

static int
meta_write(struct fake *f, const char *id, cJSON *j)
{
	char p[512], *txt;
	int rc;

	if (path_of(f, id, "meta.json", p, sizeof(p)) == -1)
		return -1;
	txt = cJSON_PrintUnformatted(j);
	rc = write_atomic(p, txt, strlen(txt));
	free(txt);
	return rc;
}

/* Does pid carry FAKE_SANDBOX_ID=id in its environment? */
static int
pid_has_id(pid_t pid, const char *id)
{
	char p[64], want[ID_SANDBOX_MAX + 32];
	struct buf b;
	size_t i, wl;
	int hit = 0;

	snprintf(p, sizeof(p), "/proc/%d/environ", (int)pid);
	wl = (size_t)snprintf(want, sizeof(want), "FAKE_SANDBOX_ID=%s", id) + 1;
	buf_init(&b, 1 << 20);
	if (read_file(p, &b) == 0 && b.p != NULL) {
		for (i = 0; i + wl <= b.len + 1; ) {
			size_t l = strnlen(b.p + i, b.len - i);
			if (l + 1 == wl && memcmp(b.p + i, want, wl - 1) == 0) {
				hit = 1;
				break;
			}
			i += l + 1;
		}
	}
	buf_free(&b);
	return hit;
}

static pid_t
agent_pid(struct fake *f, const char *id)
{
	char p[512];
	struct buf b;
	long long v;
	const char *es;
	pid_t pid = -1;

	if (path_of(f, id, "pid", p, sizeof(p)) == -1)
		return -1;
	buf_init(&b, 64);
	if (read_file(p, &b) == 0 && b.p != NULL) {
		b.p[strcspn(b.p, "\n")] = '\0';
		if (strnum_ll(b.p, 2, 1 << 30, &v, &es) == 0 &&
		    kill((pid_t)v, 0) == 0 && pid_has_id((pid_t)v, id))
			pid = (pid_t)v;
	}
	buf_free(&b);
	return pid;
}

/* Kills every process of the sandbox; waits until none is left. */
static void
kill_all(const char *id)
{
	int round;

	for (round = 0; round < 100; round++) {
		DIR *d = opendir("/proc");
		struct dirent *de;
		int found = 0;
		long long v;
		const char *es;

		if (d == NULL)
			return;
		while ((de = readdir(d)) != NULL) {
			if (strnum_ll(de->d_name, 1, 1 << 30, &v, &es) == -1 ||
			    (pid_t)v == getpid())
				continue;
			if (pid_has_id((pid_t)v, id)) {
				/* zombies keep their environ readable? no: skip them */
				char sp[64], st[256];
				int fd;
				ssize_t n;
				snprintf(sp, sizeof(sp), "/proc/%lld/stat", v);
				if ((fd = open(sp, O_RDONLY | O_CLOEXEC)) != -1) {
					n = read(fd, st, sizeof(st) - 1);
					close(fd);
					if (n > 0) {
						char *rp;
						st[n] = '\0';
						rp = strrchr(st, ')');
						if (rp != NULL && rp[1] == ' ' && rp[2] == 'Z')
							continue;
					}
				}
				kill((pid_t)v, SIGKILL);
				found++;
			}
		}
		closedir(d);
		if (found == 0)
			return;
		usleep(20000);
	}
}

static int
rm_rf(const char *path)
{
	DIR *d;
	struct dirent *de;
	char p[4096];
	struct stat st;

	if (lstat(path, &st) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", path, de->d_name) >= sizeof(p))
			continue;
		(void)rm_rf(p);
	}
	closedir(d);
	return rmdir(path);
}

/* Adds the allocated bytes under path (no links followed) to *n. */
static int
du_bytes(const char *path, long long *n, int depth)
{
	DIR *d;
	struct dirent *de;
	char p[4096];
	struct stat st;

	if (lstat(path, &st) == -1)
		return -1;
	*n += (long long)st.st_blocks * 512;
	if (!S_ISDIR(st.st_mode) || depth > 64 || (d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", path, de->d_name) <
		    sizeof(p))
			(void)du_bytes(p, n, depth + 1);
	}
	closedir(d);
	return 0;
}

/* Starts the agent for id; waits until it answers. */
static int
spawn_agent(struct fake *f, const char *id, cJSON *meta, char *err, size_t errlen)
{
	char dir[512], sock[512], state[512], ws[512], logp[512], pidp[512],
	    listen[600], idenv[ID_SANDBOX_MAX + 32], home[600], pidtxt[32];
	struct rt_agent_addr addr;
	cJSON *env = cJSON_GetObjectItem(meta, "env"), *e;
	char **envp;
	size_t ne = 0;
	int pfd[2], i;
	pid_t child, gpid = -1;
	long long deadline;

	if (path_of(f, id, NULL, dir, sizeof(dir)) == -1 ||
	    path_of(f, id, "agent.sock", sock, sizeof(sock)) == -1 ||
	    strlen(sock) >= sizeof(addr.unix_path) ||
	    path_of(f, id, "state", state, sizeof(state)) == -1 ||
	    path_of(f, id, "workspace", ws, sizeof(ws)) == -1 ||
	    path_of(f, id, "agent.log", logp, sizeof(logp)) == -1 ||
	    path_of(f, id, "pid", pidp, sizeof(pidp)) == -1) {
		snprintf(err, errlen, "fake: state path too long");
		return -1;
	}
	(void)mkdir(state, 0700);
	(void)mkdir(ws, 0755);
	unlink(sock);
	snprintf(listen, sizeof(listen), "unix:%s", sock);
	snprintf(idenv, sizeof(idenv), "FAKE_SANDBOX_ID=%s", id);
	snprintf(home, sizeof(home), "HOME=%s", ws);
	envp = xcalloc((size_t)cJSON_GetArraySize(env) + 8, sizeof(char *));
	envp[ne++] = xstrdup("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	envp[ne++] = xstrdup(idenv);
	envp[ne++] = xstrdup(home);
	envp[ne++] = xstrdup("LANG=C.UTF-8");
	cJSON_ArrayForEach(e, env) {
		if (cJSON_IsString(e) && e->string != NULL)
			(void)xasprintf(&envp[ne++], "%s=%s", e->string, e->valuestring);
	}
	if (pipe2(pfd, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "fake: pipe: %s", strerror(errno));
		goto fail;
	}
	if ((child = fork()) == -1) {
		snprintf(err, errlen, "fake: fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		goto fail;
	}
	if (child == 0) {
		pid_t g;
		sigset_t all;

		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setsid();
		if ((g = fork()) == 0) {
			int fd = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0600);
			int nul = open("/dev/null", O_RDONLY);
			if (fd == -1 || nul == -1)
				_exit(127);
			dup2(nul, 0);
			dup2(fd, 1);
			dup2(fd, 2);
			closefrom(3);
			signal(SIGPIPE, SIG_DFL);
			execle(f->agent, f->agent, "--listen", listen, "--state", state,
			    "--workdir", ws, (char *)NULL, envp);
			_exit(127);
		}
		if (write(pfd[1], &g, sizeof(g)) != (ssize_t)sizeof(g))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], &gpid, sizeof(gpid)) != (ssize_t)sizeof(gpid))
		gpid = -1;
	close(pfd[0]);
	while (waitpid(child, NULL, 0) == -1 && errno == EINTR)
		;
	if (gpid <= 0) {
		snprintf(err, errlen, "fake: could not start the agent");
		goto fail;
	}
	snprintf(pidtxt, sizeof(pidtxt), "%d\n", (int)gpid);
	if (write_atomic(pidp, pidtxt, strlen(pidtxt)) == -1) {
		snprintf(err, errlen, "fake: write pid: %s", strerror(errno));
		kill(gpid, SIGKILL);
		goto fail;
	}
	for (i = 0; i < (int)ne; i++)
		free(envp[i]);
	free(envp);
	/* Wait until the agent answers /v1/health. */
	memset(&addr, 0, sizeof(addr));
	snprintf(addr.unix_path, sizeof(addr.unix_path), "%s", sock);
	deadline = util_unix_ms() + 15000;
	while (util_unix_ms() < deadline) {
		struct agentc *c;
		struct buf b;
		int status = 0, ok = 0;
		char e2[128];

		if (kill(gpid, 0) == -1) {
			snprintf(err, errlen, "fake: the agent exited at start (see %s)", logp);
			return -1;
		}
		if ((c = agentc_open(&addr, 1000, e2, sizeof(e2))) != NULL) {
			buf_init(&b, 1 << 16);
			if (agentc_request(c, "GET", "/v1/health", NULL, NULL, 0, 2000,
			    &status, &b, e2, sizeof(e2)) == 0 && status == 200)
				ok = 1;
			buf_free(&b);
			agentc_close(c);
		}
		if (ok)
			return 0;
		usleep(10000);
	}
	snprintf(err, errlen, "fake: the agent did not answer within 15s");
	kill_all(id);
	return -1;
fail:
	for (i = 0; i < (int)ne; i++)
		free(envp[i]);
	free(envp);
	return -1;
}

static long long
meta_ll(const cJSON *meta, const char *k)
{
	const cJSON *x = cJSON_GetObjectItem(meta, k);

	return cJSON_IsNumber(x) && x->valuedouble > 0 &&
	    x->valuedouble < 9.0e15 ? (long long)x->valuedouble : 0;
}

static void
info_from(struct fake *f, const char *id, cJSON *meta, struct rt_info *out)
{
	cJSON *l, *x;
	size_t n;
	char p[512];

	memset(out, 0, sizeof(*out));
	snprintf(out->id, sizeof(out->id), "%s", id);
	x = cJSON_GetObjectItem(meta, "image");
	snprintf(out->image, sizeof(out->image), "%s",
	    cJSON_IsString(x) ? x->valuestring : "host");
	x = cJSON_GetObjectItem(meta, "created_ms");
	out->created_ms = cJSON_IsNumber(x) ? (long long)x->valuedouble : 0;
	out->lim.mem_bytes = meta_ll(meta, "mem_bytes");
	out->lim.mem_reserve_bytes = meta_ll(meta, "mem_reserve_bytes");
	out->lim.cpu_millis = meta_ll(meta, "cpu_millis");
	out->lim.pids_max = meta_ll(meta, "pids_max");
	out->lim.disk_bytes = meta_ll(meta, "disk_bytes");
	out->run_as_root = cJSON_IsTrue(cJSON_GetObjectItem(meta, "run_as_root"));
	out->writable_root = cJSON_IsTrue(cJSON_GetObjectItem(meta,
	    "writable_root"));
	if (agent_pid(f, id) > 0) {
		out->state = RT_RUNNING;
		x = cJSON_GetObjectItem(meta, "started_ms");
		out->started_ms = cJSON_IsNumber(x) ? (long long)x->valuedouble : 0;
	} else if (path_of(f, id, "creating", p, sizeof(p)) == 0 &&
	    access(p, F_OK) == 0) {
		out->state = RT_CREATING;
		snprintf(out->reason, sizeof(out->reason), "creation interrupted");
	} else
		out->state = RT_STOPPED;
	l = cJSON_GetObjectItem(meta, "labels");
	n = (size_t)cJSON_GetArraySize(l);
	out->labels = xcalloc(n ? n : 1, sizeof(struct rt_kv));
	cJSON_ArrayForEach(x, l) {
		if (!cJSON_IsString(x) || x->string == NULL)
			continue;
		out->labels[out->nlabels].k = xstrdup(x->string);
		out->labels[out->nlabels].v = xstrdup(x->valuestring);
		out->nlabels++;
	}
}

static int
f_get(struct runtime *rt, const char *id, struct rt_info *out, char *err,
    size_t errlen)
{
	struct fake *f = rt->impl;
	cJSON *meta;

	memset(out, 0, sizeof(*out));
	if (!id_sandbox_valid(id) || (meta = meta_read(f, id)) == NULL) {
		snprintf(err, errlen, "not found");
		return RT_ENOTFOUND;
	}
	info_from(f, id, meta, out);
	cJSON_Delete(meta);
	return 0;
}

/* What create and check refuse (fake: no VM isolation, images are names). */
static int
f_spec_ok(struct fake *f, const struct rt_spec *sp, char *err, size_t errlen)
{
	char p[512];
	size_t i, n = sp->image ? strlen(sp->image) : 0;

	if (sp->use_kata) {
		snprintf(err, errlen, "use_kata is not available on this runtime "
		    "(fake: no VM isolation)");
		return -1;
	}
	for (i = 0; i < n; i++)
		if ((unsigned char)sp->image[i] <= ' ' || sp->image[i] == '/') {
			snprintf(err, errlen, "invalid image name");
			return -1;
		}
	if (sp->mem_bytes < 0 || sp->cpu_millis < 0 || sp->disk_bytes < 0 ||
	    sp->pids_max < 0 || sp->mem_reserve_bytes < 0) {
		snprintf(err, errlen, "limits must not be negative");
		return -1;
	}
	if (sp->mem_bytes > 0 && sp->mem_reserve_bytes > sp->mem_bytes) {
		snprintf(err, errlen, "memory_reservation is above the memory "
		    "limit");
		return -1;
	}
	if (sp->workspace_from != NULL && (!id_sandbox_valid(sp->workspace_from) ||
	    path_of(f, sp->workspace_from, "workspace", p, sizeof(p)) == -1 ||
	    access(p, F_OK) == -1)) {
		snprintf(err, errlen, "sandbox %s has no workspace to copy",
		    sp->workspace_from);
		return -1;
	}
	return 0;
}

static int
f_check(struct runtime *rt, const struct rt_spec *sp, char *err, size_t errlen)
{
	return f_spec_ok(rt->impl, sp, err, errlen);
}

static cJSON *
f_images(struct runtime *rt)
{
	(void)rt;
	return NULL;	/* any name: the agent runs on the host */
}

/* cp -a from's workspace into id's (the fake runs as one user). */
static int
copy_ws(struct fake *f, const char *from, const char *id, char *err,
    size_t errlen)
{
	char src[520], dst[512];
	char *av[] = { "cp", "-a", "--", src, dst, NULL };
	pid_t pid;
	int st = -1;

	if (path_of(f, from, "workspace/.", src, sizeof(src)) == -1 ||
	    path_of(f, id, "workspace", dst, sizeof(dst)) == -1 ||
	    (mkdir(dst, 0755) == -1 && errno != EEXIST)) {
		snprintf(err, errlen, "fake: workspace path");
		return -1;
	}
	if (posix_spawnp(&pid, "cp", NULL, NULL, av, environ) != 0) {
		snprintf(err, errlen, "fake: cannot run cp");
		return -1;
	}
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(err, errlen, "fake: copying the workspace of %s failed",
		    from);
		return -1;
	}
	return 0;
}

/* Disk: the workspace's allocated bytes (du); memory is not known. */
static int
f_usage(struct runtime *rt, const char *id, struct rt_usage *out, char *err,
    size_t errlen)
{
	struct fake *f = rt->impl;
	char p[512];
	long long n = 0;

	out->mem_bytes = out->disk_bytes = out->oom_kills = -1;
	out->disk_partial = 0;
	if (!id_sandbox_valid(id) || path_of(f, id, "workspace", p,
	    sizeof(p)) == -1 || access(p, F_OK) == -1) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	if (du_bytes(p, &n, 0) == 0)
		out->disk_bytes = n;
	return 0;
}

static int
f_create(struct runtime *rt, const struct rt_spec *sp,
    const struct rt_progress *pg, struct rt_info *out, char *err, size_t errlen)
{
	struct fake *f = rt->impl;
	char dir[512], cr[512];
	cJSON *meta, *l, *e;
	size_t i;
	int fd;

	(void)pg;	/* nothing here is slow enough to tell */
	memset(out, 0, sizeof(*out));
	if (!id_sandbox_valid(sp->id)) {
		snprintf(err, errlen, "invalid id");
		return -1;
	}
	if (f_spec_ok(f, sp, err, errlen) == -1)
		return -1;
	if (path_of(f, sp->id, NULL, dir, sizeof(dir)) == -1 ||
	    path_of(f, sp->id, "creating", cr, sizeof(cr)) == -1) {
		snprintf(err, errlen, "path too long");
		return -1;
	}
	if (mkdir(dir, 0700) == -1) {
		snprintf(err, errlen, "mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	if ((fd = open(cr, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) != -1)
		close(fd);
	meta = cJSON_CreateObject();
	cJSON_AddStringToObject(meta, "image", sp->image ? sp->image : "host");
	cJSON_AddNumberToObject(meta, "created_ms", (double)util_unix_ms());
	cJSON_AddNumberToObject(meta, "started_ms", (double)util_unix_ms());
	cJSON_AddBoolToObject(meta, "run_as_root", sp->run_as_root);
	cJSON_AddBoolToObject(meta, "writable_root", sp->writable_root);
	cJSON_AddNumberToObject(meta, "mem_bytes", (double)sp->mem_bytes);
	cJSON_AddNumberToObject(meta, "mem_reserve_bytes",
	    (double)sp->mem_reserve_bytes);
	cJSON_AddNumberToObject(meta, "cpu_millis", (double)sp->cpu_millis);
	cJSON_AddNumberToObject(meta, "pids_max", (double)sp->pids_max);
	cJSON_AddNumberToObject(meta, "disk_bytes", (double)sp->disk_bytes);
	l = cJSON_AddObjectToObject(meta, "labels");
	for (i = 0; i < sp->nlabels; i++)
		cJSON_AddStringToObject(l, sp->labels[i].k, sp->labels[i].v);
	e = cJSON_AddObjectToObject(meta, "env");
	for (i = 0; i < sp->nenv; i++)
		cJSON_AddStringToObject(e, sp->env[i].k, sp->env[i].v);
	pthread_mutex_lock(&f->mu);
	if (meta_write(f, sp->id, meta) == -1) {
		pthread_mutex_unlock(&f->mu);
		snprintf(err, errlen, "write meta: %s", strerror(errno));
		cJSON_Delete(meta);
		return -1;
	}
	pthread_mutex_unlock(&f->mu);
	if (sp->workspace_from != NULL && copy_ws(f, sp->workspace_from, sp->id,
	    err, errlen) == -1) {
		cJSON_Delete(meta);
		return -1;
	}
	if (f->create_delay_ms > 0)
		usleep((useconds_t)(f->create_delay_ms * 1000));
	if (spawn_agent(f, sp->id, meta, err, errlen) == -1) {
		cJSON_Delete(meta);
		return -1;
	}
	unlink(cr);
	info_from(f, sp->id, meta, out);
	cJSON_Delete(meta);
	return 0;
}

static int
f_start(struct runtime *rt, const char *id, const struct rt_progress *pg,
    char *err, size_t errlen)
{
	struct fake *f = rt->impl;
	cJSON *meta;
	int rc;

	(void)pg;
	if (!id_sandbox_valid(id) || (meta = meta_read(f, id)) == NULL) {
		snprintf(err, errlen, "not found");
		return -1;
	}
	if (agent_pid(f, id) > 0) {
		cJSON_Delete(meta);
		return 0;
	}
	kill_all(id);
	pthread_mutex_lock(&f->mu);
	cJSON_DeleteItemFromObject(meta, "started_ms");
	cJSON_AddNumberToObject(meta, "started_ms", (double)util_unix_ms());
	(void)meta_write(f, id, meta);
	pthread_mutex_unlock(&f->mu);
	rc = spawn_agent(f, id, meta, err, errlen);
	cJSON_Delete(meta);
	return rc;
}

/* The fake's proxy admin endpoint (unset without a proxy). */
static struct egress_admin
admin_of(const struct fake *f)
{
	struct egress_admin a = { .unix_path = f->admin };

	return a;
}

static void
deregister(struct fake *f, const char *id)
{
	struct egress_admin a = admin_of(f);

	egress_deregister(&a, id);
}

static void
f_trace(struct runtime *rt, const char *id, const char *tp)
{
	struct egress_admin a = admin_of(rt->impl);

	egress_trace(&a, id, tp);
}

static int
f_stop(struct runtime *rt, const char *id, char *err, size_t errlen)
{
	struct fake *f = rt->impl;
	char p[512];

	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "invalid id");
		return -1;
	}
	kill_all(id);
	if (path_of(f, id, "pid", p, sizeof(p)) == 0)
		unlink(p);
	deregister(f, id);
	return 0;
}

static int
f_destroy(struct runtime *rt, const char *id, char *err, size_t errlen)
{
	struct fake *f = rt->impl;
	char dir[512];

	if (!id_sandbox_valid(id)) {
		snprintf(err, errlen, "invalid id");
		return -1;
	}
	kill_all(id);
	deregister(f, id);
	if (path_of(f, id, NULL, dir, sizeof(dir)) == -1 || rm_rf(dir) == -1) {
		snprintf(err, errlen, "remove %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

static int
f_list(struct runtime *rt, struct rt_info **out, size_t *n, char *err,
    size_t errlen)
{
	struct fake *f = rt->impl;
	struct rt_info *v = NULL;
	size_t nv = 0;
	struct dirent *de;
	cJSON *meta;
	DIR *d;

	*out = NULL;
	*n = 0;
	if ((d = opendir(f->dir)) == NULL) {
		snprintf(err, errlen, "%s: %s", f->dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (!id_sandbox_valid(de->d_name))
			continue;
		if ((meta = meta_read(f, de->d_name)) == NULL) {
			/* a directory without a record: report it unlabelled */
			v = xreallocarray(v, nv + 1, sizeof(*v));
			memset(&v[nv], 0, sizeof(v[nv]));
			snprintf(v[nv].id, sizeof(v[nv].id), "%.63s", de->d_name);
			v[nv].state = RT_FAILED;
			snprintf(v[nv].reason, sizeof(v[nv].reason), "no record");
			nv++;
			continue;
		}
		v = xreallocarray(v, nv + 1, sizeof(*v));
		info_from(f, de->d_name, meta, &v[nv++]);
		cJSON_Delete(meta);
	}
	closedir(d);
	if (f->list_delay_ms > 0) {
		log_info("fake: listing read (%zu sandboxes); answering in %lld ms",
		    nv, f->list_delay_ms);
		usleep((useconds_t)(f->list_delay_ms * 1000));
	}
	*out = v;
	*n = nv;
	return 0;
}

static int
f_set_labels(struct runtime *rt, const char *id, const struct rt_kv *kv,
    size_t n, char *err, size_t errlen)
{
	struct fake *f = rt->impl;
	cJSON *meta, *l;
	size_t i;
	int rc;

	pthread_mutex_lock(&f->mu);
	if (!id_sandbox_valid(id) || (meta = meta_read(f, id)) == NULL) {
		pthread_mutex_unlock(&f->mu);
		snprintf(err, errlen, "not found");
		return -1;
	}
	cJSON_DeleteItemFromObject(meta, "labels");
	l = cJSON_AddObjectToObject(meta, "labels");
	for (i = 0; i < n; i++)
		cJSON_AddStringToObject(l, kv[i].k, kv[i].v);
	rc = meta_write(f, id, meta);
	pthread_mutex_unlock(&f->mu);
	cJSON_Delete(meta);
	if (rc == -1)
		snprintf(err, errlen, "write meta: %s", strerror(errno));
	return rc;
}

static int
f_agent_addr(struct runtime *rt, const char *id, struct rt_agent_addr *out,
    char *err, size_t errlen)
{
	struct fake *f = rt->impl;

	memset(out, 0, sizeof(*out));
	if (!id_sandbox_valid(id) || path_of(f, id, "agent.sock", out->unix_path,
	    sizeof(out->unix_path)) == -1) {
		snprintf(err, errlen, "no address");
		return -1;
	}
	return 0;
}

/*
 * The fake runs agents on the host, so an app listens on the host's own
 * loopback: the connection goes there (tests only: no isolation).
 */
static int
f_app_connect(struct runtime *rt, const char *id, int port,
    struct rt_app_conn *out, char *err, size_t errlen)
{
	struct sockaddr_in sin;
	struct rt_info ri;
	int s, st, rc;

	out->fd = -1;
	out->addr[0] = '\0';
	memset(&ri, 0, sizeof(ri));
	if ((rc = f_get(rt, id, &ri, err, errlen)) != 0)
		return rc;
	st = ri.state;
	rt_info_clear(&ri);
	if (st != RT_RUNNING) {
		snprintf(err, errlen, "stopped");
		return RT_ESTOPPED;
	}
	if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		rc = errno == ECONNREFUSED ? RT_ENOLISTEN : -1;
		snprintf(err, errlen, rc == RT_ENOLISTEN ? "not listening" :
		    "connect 127.0.0.1:%d: %s", port, strerror(errno));
		close(s);
		return rc;
	}
	out->fd = s;
	return 0;
}

static int
f_attach_egress(struct runtime *rt, const char *id, const struct rt_egress *eg,
    char *env_out, size_t envlen, char *err, size_t errlen)
{
	struct fake *f = rt->impl;
	struct egress_admin a = admin_of(f);
	struct egress_reg reg;
	char secret[EGRESS_SECRET_LEN + 1];
	struct buf ce;
	int rc = -1;

	env_out[0] = '\0';
	buf_init(&ce, 4096);
	if (eg->record && rt->ops->set_labels(rt, id, eg->labels, eg->nlabels,
	    err, errlen) == -1)
		return -1;
	if (!egress_admin_set(&a))
		return 0;
	if (egress_secret(secret) == -1) {
		snprintf(err, errlen, "getrandom failed");
		return -1;
	}
	memset(&reg, 0, sizeof(reg));
	reg.id = id;
	reg.labels = eg->labels;
	reg.nlabels = eg->nlabels;
	reg.secret = secret;
	reg.listen_fd = -1;
	reg.cred_env = &ce;		/* named credentials' placeholders (issue 30) */
	reg.client_files = eg->files_out;
	reg.creds = eg->creds_out;
	if (egress_register(&a, &reg, err, errlen) == -1)
		goto out;
	/* No NO_PROXY: the fake's tests reach their fixtures on loopback
	 * through the proxy. */
	if (egress_proxy_env(id, secret, f->proxy_addr, NULL, f->proxy_ca,
	    env_out, envlen) == -1 || strlen(env_out) + ce.len >= envlen) {
		snprintf(err, errlen, "env too long");
		goto out;
	}
	if (ce.len > 0)
		memcpy(env_out + strlen(env_out), ce.p, ce.len + 1);
	rc = 0;
out:
	buf_free(&ce);
	explicit_bzero(secret, sizeof(secret));
	return rc;
}

static void
f_free(struct runtime *rt)
{
	struct fake *f;

	if (rt == NULL)
		return;
	f = rt->impl;
	free(f->dir);
	free(f->agent);
	free(f->admin);
	free(f->proxy_addr);
	free(f->proxy_ca);
	pthread_mutex_destroy(&f->mu);
	free(f);
	free(rt);
}

static const struct runtime_ops fake_ops = {
	.name = "fake",
	.create = f_create,
	.start = f_start,
	.stop = f_stop,
	.destroy = f_destroy,
	.list = f_list,
	.get = f_get,
	.set_labels = f_set_labels,
	.agent_addr = f_agent_addr,
	.attach_egress = f_attach_egress,
	.trace = f_trace,
	.check = f_check,
	.images = f_images,
	.usage = f_usage,
	.app_connect = f_app_connect,
	.free = f_free,
};

struct runtime *
runtime_fake_new(const char *state_dir, const char *agent, const char *admin,
    const char *proxy_addr, const char *proxy_ca, long long create_delay_ms,
    long long list_delay_ms, char *err, size_t errlen)
{
	struct runtime *rt;
	struct fake *f;
	char *abs;

	if (state_dir == NULL || agent == NULL) {
		snprintf(err, errlen, "fake runtime: fake.state_dir and fake.agent are required");
		return NULL;
	}
	if (mkdir(state_dir, 0700) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "fake runtime: mkdir %s: %s", state_dir, strerror(errno));
		return NULL;
	}
	if ((abs = realpath(agent, NULL)) == NULL || access(abs, X_OK) == -1) {
		snprintf(err, errlen, "fake runtime: agent %s: %s", agent, strerror(errno));
		free(abs);
		return NULL;
	}
	f = xcalloc(1, sizeof(*f));
	if ((f->dir = realpath(state_dir, NULL)) == NULL)
		f->dir = xstrdup(state_dir);
	f->agent = abs;
	f->admin = admin ? xstrdup(admin) : NULL;
	f->proxy_addr = xstrdup(proxy_addr ? proxy_addr : "127.0.0.1:3128");
	f->create_delay_ms = create_delay_ms;
	f->list_delay_ms = list_delay_ms;
	f->proxy_ca = proxy_ca ? xstrdup(proxy_ca) : NULL;
	pthread_mutex_init(&f->mu, NULL);
	rt = xcalloc(1, sizeof(*rt));
	rt->ops = &fake_ops;
	rt->impl = f;
	return rt;
}
