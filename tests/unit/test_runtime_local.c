/*
 * test_runtime_local.c: the local runtime's pure helpers (records, pid
 * files, /proc parsing, uid allocation, seccomp program, tree removal,
 * upper-layer writes, cgroup selection, config keys), through its private
 * interface (runtime/local/local_int.h), linked with its objects. The
 * sandboxes themselves are tested end to end in tests/e2e/4x-*.sh (they
 * need root, bwrap and the agent).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/filter.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "cfg.h"
#include "ids.h"
#include "log.h"
#include "runtime/local/local_int.h"
#include "util.h"
#include "xmalloc.h"
#include "unit.h"

static char tdir[256];

static struct rl *
mk_rl(void)
{
	struct rl *rl = xcalloc(1, sizeof(*rl));

	snprintf(rl->state_dir, sizeof(rl->state_dir), "%s/state", tdir);
	mkdir(rl->state_dir, 0711);
	rl->c.uid_base = 5000000;
	rl->c.uid_count = 4;
	pthread_mutex_init(&rl->mu, NULL);
	return rl;
}

TEST(test_ids_and_names)
{
	CHECK(id_sandbox_valid("sb-1"));
	CHECK(!id_sandbox_valid("-sb"));
	CHECK(!id_sandbox_valid("Sb"));
	CHECK(!id_sandbox_valid("a/b"));
	CHECK(!id_sandbox_valid(".."));
	CHECK(!id_sandbox_valid(""));
	CHECK(rl_image_name_valid("default"));
	CHECK(rl_image_name_valid("busy-box_1.2"));
	CHECK(!rl_image_name_valid(".."));
	CHECK(!rl_image_name_valid("a/b"));
	CHECK(!rl_image_name_valid("-x"));
	CHECK(!rl_image_name_valid(""));
	CHECK(rl_env_name_ok("HTTP_PROXY"));
	CHECK(!rl_env_name_ok("1X"));
	CHECK(!rl_env_name_ok("A=B"));
	CHECK(!rl_env_name_ok(""));
	CHECK(!rl_env_name_ok("A B"));
}

TEST(test_record_roundtrip_and_hostile)
{
	struct rl *rl = mk_rl();
	struct rec r, r2;
	char p[600], e[256];
	static const char *bad[] = {
		"", "{", "[]", "null", "{\"uid\":\"x\"}",
		"{\"uid\":5000000,\"image_dir\":\"relative\"}",
		"{\"uid\":-1,\"image_dir\":\"/x\"}",
	};
	size_t i;

	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "sb-1");
	snprintf(r.image, sizeof(r.image), "busybox");
	snprintf(r.image_dir, sizeof(r.image_dir), "/images/busybox");
	snprintf(r.phase, sizeof(r.phase), "running");
	r.uid = 5000001;
	r.created_ms = 1700000000123LL;
	r.lim.mem_bytes = 1LL << 30;
	r.lim.cpu_millis = 500;
	r.lim.pids_max = 64;
	r.run_as_root = 1;
	r.writable_root = 1;
	r.labels = cJSON_CreateObject();
	cJSON_AddStringToObject(r.labels, "session", "s\"1\n");
	r.env = cJSON_CreateObject();
	snprintf(p, sizeof(p), "%s/sb-1", rl->state_dir);
	mkdir(p, 0711);
	CHECK(rl_rec_save(rl, &r, 1, e, sizeof(e)) == 0);
	CHECK(rl_rec_load(rl, "sb-1", &r2, e, sizeof(e)) == 0);
	CHECK_STR(r2.image, "busybox");
	CHECK_STR(r2.phase, "running");
	CHECK_INT(r2.uid, 5000001);
	CHECK_INT(r2.created_ms, 1700000000123LL);
	CHECK_INT(r2.lim.pids_max, 64);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(r2.labels,
	    "session")), "s\"1\n");
	rl_rec_clear(&r2);
	rl_rec_clear(&r);
	/* hostile or broken records are refused, never half-loaded */
	snprintf(p, sizeof(p), "%s/sb-1/record.json", rl->state_dir);
	for (i = 0; i < NELEM(bad); i++) {
		CHECK(util_write_file_atomic(p, bad[i], strlen(bad[i]), 0600, e,
		    sizeof(e)) == 0);
		CHECK(rl_rec_load(rl, "sb-1", &r2, e, sizeof(e)) == -1);
	}
	/* oversized record */
	{
		size_t n = RL_RECORD_MAX + 100;
		char *big = xmalloc(n);

		memset(big, ' ', n);
		big[0] = '{';
		big[n - 1] = '}';
		CHECK(util_write_file_atomic(p, big, n, 0600, e, sizeof(e)) == 0);
		CHECK(rl_rec_load(rl, "sb-1", &r2, e, sizeof(e)) == -1);
		free(big);
	}
	free(rl);
}

TEST(test_pidfile)
{
	struct rl *rl = mk_rl();
	struct pidrec pr;
	char p[600], line[200], e[256];
	static const char *bad[] = {
		"", "1 2 3", "x y z w v", "0 1 0 1 1", "99999999999 1 2 3 4",
		"-5 1 -5 1 1",
	};
	size_t i;

	snprintf(p, sizeof(p), "%s/sb-2", rl->state_dir);
	mkdir(p, 0711);
	snprintf(p, sizeof(p), "%s/sb-2/pid", rl->state_dir);
	snprintf(line, sizeof(line), "%d %lld %d %lld 123\n", (int)getpid(),
	    rl_proc_start(getpid()), (int)getpid(), rl_proc_start(getpid()));
	CHECK(util_write_file_atomic(p, line, strlen(line), 0600, e, sizeof(e)) == 0);
	CHECK(rl_pid_load(rl, "sb-2", &pr) == 0);
	CHECK(rl_pid_alive(&pr));
	/* a reused pid: same number, other start time */
	pr.child_start++;
	CHECK(!rl_pid_alive(&pr));
	for (i = 0; i < NELEM(bad); i++) {
		CHECK(util_write_file_atomic(p, bad[i], strlen(bad[i]), 0600, e,
		    sizeof(e)) == 0);
		CHECK(rl_pid_load(rl, "sb-2", &pr) == -1);
	}
	free(rl);
}

TEST(test_proc_start)
{
	pid_t c;
	long long a, b;
	int st;

	a = rl_proc_start(getpid());
	CHECK(a > 0);
	CHECK(rl_proc_start(getpid()) == a);
	CHECK(rl_proc_start(0) == -1);
	CHECK(rl_proc_start(-1) == -1);
	c = fork();
	if (c == 0) {
		/* a comm with spaces and parens must not confuse the parser */
		prctl(PR_SET_NAME, "a) b (c", 0, 0, 0);
		usleep(300000);
		_exit(0);
	}
	usleep(100000);
	b = rl_proc_start(c);
	CHECK(b >= a);
	waitpid(c, &st, 0);
	CHECK(rl_proc_start(c) == -1);
}

TEST(test_uid_alloc)
{
	struct rl *rl = mk_rl();
	struct rec r;
	char p[600], e[256];
	long long uid;
	int i;

	/* fill slots 0 and 2; 1 must be chosen */
	for (i = 0; i < 3; i += 2) {
		memset(&r, 0, sizeof(r));
		snprintf(r.id, sizeof(r.id), "u-%d", i);
		snprintf(r.image_dir, sizeof(r.image_dir), "/x");
		r.uid = rl->c.uid_base + i;
		snprintf(p, sizeof(p), "%s/u-%d", rl->state_dir, i);
		mkdir(p, 0711);
		CHECK(rl_rec_save(rl, &r, 0, e, sizeof(e)) == 0);
	}
	/* a create that died before its record: its uid file counts */
	snprintf(p, sizeof(p), "%s/u-7", rl->state_dir);
	mkdir(p, 0711);
	snprintf(p, sizeof(p), "%s/u-7/uid", rl->state_dir);
	CHECK(util_write_file_atomic(p, "5000003\n", 8, 0600, e, sizeof(e)) == 0);
	/* the first allocation builds .slots from them: 1 is the free one */
	CHECK(rl_alloc_uid(rl, "u-1", &uid, e, sizeof(e)) == 0);
	CHECK_INT(uid, rl->c.uid_base + 1);
	snprintf(p, sizeof(p), "%s/.slots/1", rl->state_dir);
	CHECK(readlink(p, e, sizeof(e)) == 3 && memcmp(e, "u-1", 3) == 0);
	snprintf(p, sizeof(p), "%s/u-1", rl->state_dir);
	mkdir(p, 0711);
	snprintf(p, sizeof(p), "%s/u-1/uid", rl->state_dir);
	CHECK(util_write_file_atomic(p, "5000001\n", 8, 0600, e, sizeof(e)) == 0);
	/* all 4 used now: a clear error */
	CHECK(rl_alloc_uid(rl, "u-8", &uid, e, sizeof(e)) == -1);
	CHECK(strstr(e, "uid_count") != NULL);
	/* u-2 destroyed (its claim stays): the stale claim is taken over */
	snprintf(p, sizeof(p), "%s/u-2", rl->state_dir);
	CHECK(rl_rmtree(p, e, sizeof(e)) == 0);
	CHECK(rl_alloc_uid(rl, "u-8", &uid, e, sizeof(e)) == 0);
	CHECK_INT(uid, rl->c.uid_base + 2);
	/* a claim whose sandbox now holds another block is stale too */
	snprintf(p, sizeof(p), "%s/u-8", rl->state_dir);
	mkdir(p, 0711);
	snprintf(p, sizeof(p), "%s/u-8/uid", rl->state_dir);
	CHECK(util_write_file_atomic(p, "5000000\n", 8, 0600, e, sizeof(e)) == 0);
	CHECK(rl_alloc_uid(rl, "u-5", &uid, e, sizeof(e)) == 0);
	CHECK_INT(uid, rl->c.uid_base + 2);
	free(rl);
}

TEST(test_rmtree_no_follow)
{
	char top[600], victim[600], p[700], e[256];
	int fd;

	snprintf(victim, sizeof(victim), "%s/victim", tdir);
	mkdir(victim, 0755);
	snprintf(p, sizeof(p), "%s/keep", victim);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	close(fd);
	snprintf(top, sizeof(top), "%s/tree", tdir);
	mkdir(top, 0755);
	snprintf(p, sizeof(p), "%s/a", top);
	mkdir(p, 0);
	snprintf(p, sizeof(p), "%s/a/link", top);
	CHECK(symlink(victim, p) == 0);
	snprintf(p, sizeof(p), "%s/file", top);
	fd = open(p, O_CREAT | O_WRONLY, 0);
	close(fd);
	CHECK(rl_rmtree(top, e, sizeof(e)) == 0);
	CHECK(access(top, F_OK) == -1);
	snprintf(p, sizeof(p), "%s/keep", victim);
	CHECK(access(p, F_OK) == 0);	/* the link's target survived */
	CHECK(rl_rmtree("/nonexistent/xyz", e, sizeof(e)) == 0);
}

/* rl_image_path: links followed with the image as root, never out of it. */
TEST(test_image_path)
{
	char img[600], p[700], out[1024];

	snprintf(img, sizeof(img), "%s/img", tdir);
	snprintf(p, sizeof(p), "%s/etc/pki/tls/certs", img);
	CHECK(mkdir(img, 0755) == 0);
	snprintf(p, sizeof(p), "%s/etc", img);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof(p), "%s/etc/ssl", img);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof(p), "%s/etc/pki", img);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof(p), "%s/etc/pki/certs", img);
	CHECK(mkdir(p, 0755) == 0);
	/* RHEL: a relative link; an absolute link is the image's, not ours */
	snprintf(p, sizeof(p), "%s/etc/ssl/certs", img);
	CHECK(symlink("../pki/certs", p) == 0);
	snprintf(p, sizeof(p), "%s/etc/pki/certs/bundle.crt", img);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	snprintf(p, sizeof(p), "%s/etc/pki/certs/ca-certificates.crt", img);
	CHECK(symlink("/etc/pki/certs/bundle.crt", p) == 0);
	snprintf(p, sizeof(p), "%s/tmp", img);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof(p), "%s/etc/escape", img);
	CHECK(symlink("../../../../../../tmp", p) == 0);
	snprintf(p, sizeof(p), "%s/etc/hostname", img);
	CHECK(symlink("/etc/../../../../var/hostname", p) == 0);
	snprintf(p, sizeof(p), "%s/etc/loop", img);
	CHECK(symlink("/etc/loop", p) == 0);
	CHECK(rl_image_path(img, "etc/ssl/certs/ca-certificates.crt", out,
	    sizeof(out)) == 0);
	CHECK_STR(out, "etc/pki/certs/bundle.crt");
	CHECK(rl_image_path(img, "etc/ssl/certs/missing.crt", out,
	    sizeof(out)) == 1);
	CHECK_STR(out, "etc/pki/certs/missing.crt");
	CHECK(rl_image_path(img, "usr/local/share/x.crt", out, sizeof(out)) == 1);
	CHECK_STR(out, "usr/local/share/x.crt");
	CHECK(rl_image_path(img, "etc/new/x", out, sizeof(out)) == 1);
	CHECK_STR(out, "etc/new/x");
	/* ../ past the image's root stays at its root */
	CHECK(rl_image_path(img, "etc/escape/x", out, sizeof(out)) == 1);
	CHECK_STR(out, "tmp/x");
	/* a dangling link: the link itself is what gets replaced */
	CHECK(rl_image_path(img, "etc/hostname", out, sizeof(out)) == 1);
	CHECK_STR(out, "etc/hostname");
	CHECK(rl_image_path(img, "etc/loop", out, sizeof(out)) == -1);
	CHECK(rl_image_path("/nonexistent/img", "etc", out, sizeof(out)) == -1);
}

TEST(test_upper_writes_refuse_symlinks)
{
	char upper[600], victim[600], p[700], e[700];

	snprintf(upper, sizeof(upper), "%s/upper", tdir);
	mkdir(upper, 0755);
	snprintf(victim, sizeof(victim), "%s/victim2", tdir);
	mkdir(victim, 0755);
	/* a sandbox replaced /etc/ssl with a link to a host directory */
	snprintf(p, sizeof(p), "%s/etc", upper);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/etc/ssl", upper);
	CHECK(symlink(victim, p) == 0);
	CHECK(rl_write_in_upper(upper, "etc/ssl/certs", "ca.crt", "x", 1, 0, 0,
	    e, sizeof(e)) == -1);
	snprintf(p, sizeof(p), "%s/certs", victim);
	CHECK(access(p, F_OK) == -1);
	/* a normal write works, and replaces a planted file link */
	CHECK(rl_write_in_upper(upper, "usr/local/share", "ca.crt", "pem", 3,
	    getuid(), getgid(), e, sizeof(e)) == 0);
	snprintf(p, sizeof(p), "%s/usr/local/share/ca.crt", upper);
	CHECK(access(p, F_OK) == 0);
	unlink(p);
	snprintf(e, sizeof(e), "%s/target", victim);
	CHECK(symlink(e, p) == 0);
	CHECK(rl_write_in_upper(upper, "usr/local/share", "ca.crt", "pem", 3,
	    getuid(), getgid(), e, sizeof(e)) == 0);
	snprintf(p, sizeof(p), "%s/target", victim);
	CHECK(access(p, F_OK) == -1);
}

/* A hostile workspace copied into another sandbox (rl_copy_tree). */
TEST(test_copy_tree)
{
	char src[600], dst[700], p[800], q[800], e[700];
	struct rl_idmap map = { .from_base = 2000000, .from_range = 65536,
	    .from_agent = 0, .to_base = 3000000, .to_range = 65536,
	    .to_agent = 1000 };
	struct stat st, st2;
	int fd, sfd, root = geteuid() == 0;

	snprintf(src, sizeof(src), "%s/cpsrc", tdir);
	snprintf(dst, sizeof(dst), "%s/cpdst", tdir);
	mkdir(src, 0755);
	mkdir(dst, 0755);
	snprintf(p, sizeof(p), "%s/sub", src);
	mkdir(p, 0750);
	snprintf(p, sizeof(p), "%s/sub/file", src);
	fd = open(p, O_CREAT | O_WRONLY, 04755);
	CHECK(write(fd, "data", 4) == 4);
	close(fd);
	if (root)
		CHECK(chown(p, 2000000 + 0, 2000000 + 5) == 0);	/* the agent, gid 5 */
	chmod(p, 04755);	/* after the chown, which clears set-id bits */
	snprintf(q, sizeof(q), "%s/sub/hard", src);
	CHECK(link(p, q) == 0);
	snprintf(p, sizeof(p), "%s/sparse", src);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	CHECK(pwrite(fd, "end", 3, 1LL << 33) == 3);	/* 8 GiB of hole first */
	close(fd);
	snprintf(p, sizeof(p), "%s/escape", src);
	CHECK(symlink("/etc", p) == 0);
	snprintf(p, sizeof(p), "%s/fifo", src);
	CHECK(mkfifo(p, 0600) == 0);
	CHECK((sfd = open(src, O_RDONLY | O_DIRECTORY)) != -1);
	CHECK(rl_copy_tree(sfd, dst, &map, e, sizeof(e)) == 0);
	close(sfd);
	snprintf(p, sizeof(p), "%s/sub/file", dst);
	CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 4);
	CHECK_INT((int)(st.st_mode & 07777), 04755);	/* set-id kept after chown */
	if (root) {
		CHECK_INT((int)st.st_uid, 3000000 + 1000);	/* agent -> agent */
		CHECK_INT((int)st.st_gid, 3000000 + 5);		/* inner id kept */
	}
	snprintf(q, sizeof(q), "%s/sub/hard", dst);
	CHECK(lstat(q, &st2) == 0 && st2.st_ino == st.st_ino);	/* still a link */
	snprintf(p, sizeof(p), "%s/sub", dst);
	CHECK(lstat(p, &st) == 0 && (st.st_mode & 07777) == 0750);
	snprintf(p, sizeof(p), "%s/sparse", dst);
	CHECK(lstat(p, &st) == 0 && st.st_size == (1LL << 33) + 3);
	CHECK(st.st_blocks < 1024);	/* the hole stayed a hole */
	fd = open(p, O_RDONLY);
	CHECK(pread(fd, e, 3, 1LL << 33) == 3 && memcmp(e, "end", 3) == 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/escape", dst);
	CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode));	/* a link, not /etc */
	CHECK(readlink(p, e, sizeof(e)) == 4 && memcmp(e, "/etc", 4) == 0);
	snprintf(p, sizeof(p), "%s/fifo", dst);
	CHECK(lstat(p, &st) == 0 && S_ISFIFO(st.st_mode));
	CHECK(rl_rmtree(src, e, sizeof(e)) == 0 && rl_rmtree(dst, e, sizeof(e)) == 0);
}

TEST(test_seccomp_program)
{
	char e[256];
	struct stat st;
	int fd = rl_seccomp_fd(e, sizeof(e));

	CHECK(fd != -1);
	CHECK(fstat(fd, &st) == 0);
	CHECK(st.st_size > 0 && st.st_size % sizeof(struct sock_filter) == 0);
	CHECK((size_t)st.st_size / sizeof(struct sock_filter) < 4096);
	close(fd);
}

TEST(test_cfg_keys)
{
	static const struct cfg_key k[] = { RUNTIME_LOCAL_CFG_KEYS("local.", 0) };
	struct rt_local_conf c;
	char e[512];
	static const char *bad[] = {
		"local: {mem_bytes: 1KiB}\n",
		"local: {pids_max: -1}\n",
		"local: {nosuch: 1}\n",
		"local: {seccomp: maybe}\n",
		"local: {cpu_millis: abc}\n",
	};
	size_t i;

	memset(&c, 0, sizeof(c));
	const char *good = "local:\n  state_dir: /s\n  mem_bytes: 1GiB\n"
	    "  start_timeout: 5s\n";

	CHECK(cfg_load_string(k, NELEM(k), &c, "t", good, strlen(good), e,
	    sizeof(e)) == 0);
	CHECK_STR(c.state_dir, "/s");
	CHECK_INT(c.mem_bytes, 1LL << 30);
	CHECK_INT(c.start_timeout_ms, 5000);
	CHECK_INT(c.pids_max, 1024);
	CHECK_INT(c.seccomp, 1);
	CHECK_STR(c.cgroup_mode, "auto");
	cfg_free(k, NELEM(k), &c);
	for (i = 0; i < NELEM(bad); i++) {
		memset(&c, 0, sizeof(c));
		CHECK(cfg_load_string(k, NELEM(k), &c, "t", bad[i],
		    strlen(bad[i]), e, sizeof(e)) == -1);
		cfg_free(k, NELEM(k), &c);
	}
}

/* A fake cgroup tree under tdir/name: dirs and (empty or given) files. */
static void
mkfake(const char *root, const char *const *paths, size_t n)
{
	char p[600];
	size_t i;
	int fd;

	mkdir(root, 0755);
	for (i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/%s", root, paths[i]);
		if (p[strlen(p) - 1] == '/') {
			mkdir(p, 0755);
			continue;
		}
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd != -1) {
			if (strstr(paths[i], "cgroup.controllers") != NULL &&
			    strstr(paths[i], "unified") == NULL)
				(void)!write(fd, "cpuset cpu io memory pids\n", 26);
			close(fd);
		}
	}
}

/* dir/f's contents (the caller frees), or NULL. */
static char *
slurp(const char *dir, const char *f)
{
	char p[700], e[800];
	struct buf b;

	snprintf(p, sizeof(p), "%s/%s", dir, f);
	buf_init(&b, 4096);
	if (util_read_file(p, &b, e, sizeof(e)) == -1) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b, NULL);
}

/* Path and controller selection on pure v2, hybrid and v1-only trees, and
 * the v2 limit files (this build machine is a hybrid: the v2 limits are
 * never written to a real kernel here). */
TEST(test_cgroup_selection)
{
	static const char *const v2[] = {
		"cgroup.controllers", "cgroup.subtree_control", "t/",
		"t/cgroup.subtree_control", "t/sb/", "t/sb/memory.max",
		"t/sb/memory.swap.max", "t/sb/memory.oom.group", "t/sb/pids.max",
		"t/sb/cpu.max",
	};
	static const char *const hyb[] = {
		"unified/", "unified/cgroup.controllers", "memory/",
		"memory/memory.limit_in_bytes", "cpu,cpuacct/",
		"cpu,cpuacct/cpu.cfs_quota_us", "pids/", "pids/cgroup.procs",
		"freezer/", "freezer/cgroup.procs",
	};
	static const char *const v1[] = {
		"memory/", "memory/memory.limit_in_bytes", "pids/",
		"pids/cgroup.procs",
	};
	struct rl_cg cg;
	struct rl_limits lim = { 512LL << 20, 1500, 300, 0 };
	char root[400], dir[500], files[8][RL_PATH_MAX], e[256], *s;
	size_t n;

	/* pure v2: limits in v2, no v1 */
	snprintf(root, sizeof(root), "%s/cg-v2", tdir);
	mkfake(root, v2, NELEM(v2));
	CHECK(rl_cg_detect_at(root, "auto", "t", &cg, e, sizeof(e)) == 0);
	CHECK_INT(cg.mode, RL_CG_V2);
	CHECK(cg.v2_track);
	snprintf(dir, sizeof(dir), "%s/t", root);
	CHECK_STR(cg.v2, dir);
	CHECK_STR(cg.v1_mem, "");
	s = slurp(dir, "cgroup.subtree_control");
	CHECK_STR(s, "+memory +pids +cpu");
	free(s);
	CHECK(rl_cg_create(&cg, "sb", &lim, e, sizeof(e)) == 0);
	snprintf(dir, sizeof(dir), "%s/t/sb", root);
	s = slurp(dir, "memory.max");
	CHECK_STR(s, "536870912");
	free(s);
	s = slurp(dir, "memory.swap.max");
	CHECK_STR(s, "0");
	free(s);
	s = slurp(dir, "pids.max");
	CHECK_STR(s, "300");
	free(s);
	s = slurp(dir, "cpu.max");
	CHECK_STR(s, "150000 100000");
	free(s);
	CHECK(rl_cg_procs_files(&cg, "sb", files, NELEM(files), &n) == 0);
	CHECK_INT(n, 1);
	snprintf(dir, sizeof(dir), "%s/t/sb/cgroup.procs", root);
	CHECK_STR(files[0], dir);
	rl_cg_oom_file(&cg, "sb", dir, sizeof(dir));
	CHECK(strstr(dir, "/t/sb/memory.events") != NULL);
	CHECK(rl_cg_detect_at(root, "v2", "t", &cg, e, sizeof(e)) == 0);
	CHECK(rl_cg_detect_at(root, "v1", "t", &cg, e, sizeof(e)) == -1);
	CHECK(strstr(e, "v1") != NULL);

	/* hybrid: limits in v1, v2 only tracks (and kills) */
	snprintf(root, sizeof(root), "%s/cg-hyb", tdir);
	mkfake(root, hyb, NELEM(hyb));
	CHECK(rl_cg_detect_at(root, "auto", "t", &cg, e, sizeof(e)) == 0);
	CHECK_INT(cg.mode, RL_CG_V1);
	CHECK(cg.v2_track);
	snprintf(dir, sizeof(dir), "%s/unified/t", root);
	CHECK_STR(cg.v2, dir);
	snprintf(dir, sizeof(dir), "%s/cpu,cpuacct/t", root);
	CHECK_STR(cg.v1_cpu, dir);
	snprintf(dir, sizeof(dir), "%s/freezer/t", root);
	CHECK_STR(cg.v1_freezer, dir);
	CHECK(rl_cg_procs_files(&cg, "sb", files, NELEM(files), &n) == 0);
	CHECK_INT(n, 5);	/* unified, memory, pids, cpu, freezer */
	CHECK(rl_cg_detect_at(root, "v2", "t", &cg, e, sizeof(e)) == -1);
	CHECK(strstr(e, "no memory, pids and cpu controllers") != NULL);

	/* v1 only: no v2 tracking */
	snprintf(root, sizeof(root), "%s/cg-v1", tdir);
	mkfake(root, v1, NELEM(v1));
	CHECK(rl_cg_detect_at(root, "auto", "t", &cg, e, sizeof(e)) == 0);
	CHECK_INT(cg.mode, RL_CG_V1);
	CHECK(!cg.v2_track);
	CHECK_STR(cg.v1_cpu, "");

	/* nothing usable, bad modes and names */
	snprintf(root, sizeof(root), "%s/cg-none", tdir);
	mkdir(root, 0755);
	CHECK(rl_cg_detect_at(root, "auto", "t", &cg, e, sizeof(e)) == -1);
	CHECK(rl_cg_detect_at(root, "none", "t", &cg, e, sizeof(e)) == 0);
	CHECK_INT(cg.mode, RL_CG_NONE);
	CHECK(rl_cg_detect_at(root, "v3", "t", &cg, e, sizeof(e)) == -1);
	CHECK(rl_cg_detect_at(root, "auto", "a/b", &cg, e, sizeof(e)) == -1);
	CHECK(rl_cg_detect_at(root, "auto", "..", &cg, e, sizeof(e)) == -1);
	CHECK(rl_cg_detect_at(root, "auto", "", &cg, e, sizeof(e)) == -1);
}

/* Blocks of uid_range ids; records older than ranges hold one id. */
TEST(test_uid_ranges)
{
	struct rl *rl = mk_rl();
	struct rec r;
	long long uid;
	char p[600], e[256];

	rl->c.uid_range = 65536;
	snprintf(rl->state_dir, sizeof(rl->state_dir), "%s/state-r", tdir);
	mkdir(rl->state_dir, 0711);
	memset(&r, 0, sizeof(r));
	snprintf(r.image_dir, sizeof(r.image_dir), "/x");
	snprintf(r.id, sizeof(r.id), "old");
	r.uid = 5000000 + 65536 + 7;	/* a one-id record inside slot 1 */
	r.uid_range = 1;
	snprintf(p, sizeof(p), "%s/old", rl->state_dir);
	mkdir(p, 0711);
	CHECK(rl_rec_save(rl, &r, 0, e, sizeof(e)) == 0);
	snprintf(r.id, sizeof(r.id), "new");
	r.uid = 5000000;
	r.uid_range = 65536;
	snprintf(p, sizeof(p), "%s/new", rl->state_dir);
	mkdir(p, 0711);
	CHECK(rl_rec_save(rl, &r, 0, e, sizeof(e)) == 0);
	/* .slots made from both: 0 (new) and 1 (old) are taken */
	CHECK(rl_alloc_uid(rl, "x", &uid, e, sizeof(e)) == 0);
	CHECK_INT(uid, 5000000 + 2 * 65536);
	CHECK(rl_rec_load(rl, "new", &r, e, sizeof(e)) == 0);
	CHECK_INT(r.uid_range, 65536);
	rl_rec_clear(&r);
	/* a record without uid_range (older) reads as one id */
	snprintf(p, sizeof(p), "%s/old/record.json", rl->state_dir);
	CHECK(util_write_file_atomic(p, "{\"uid\":5000001,\"image_dir\":\"/x\"}", 33,
	    0600, e, sizeof(e)) == 0);
	CHECK(rl_rec_load(rl, "old", &r, e, sizeof(e)) == 0);
	CHECK_INT(r.uid_range, 1);
	rl_rec_clear(&r);
	/* the next slot after the last one taken, then around: "old" now
	 * sits in slot 0 beside "new", so its claim on slot 1 is stale */
	CHECK(rl_alloc_uid(rl, "y", &uid, e, sizeof(e)) == 0);
	CHECK_INT(uid, 5000000 + 3 * 65536);
	CHECK(rl_alloc_uid(rl, "z", &uid, e, sizeof(e)) == 0);
	CHECK_INT(uid, 5000000 + 65536);
	pthread_mutex_destroy(&rl->mu);
	free(rl);
}

/*
 * The egress listener is bound while bwrap brings the sandbox's loopback up
 * (RTM_NEWADDR, then IFF_UP, as `ip addr add` and `ip link set up` do here
 * in a child's fresh network namespace). Every bind in that window must
 * succeed: a plain bind failed there with EADDRNOTAVAIL, about one create
 * in 500.
 */
TEST(test_netns_listener_race)
{
	char e[256], c;
	int round, bad = 0, good = 0, rounds = 0;

	for (round = 0; round < 60; round++) {
		int go[2], ev[2], fd, st;
		struct pollfd pf;
		pid_t pid;

		if (pipe(go) == -1 || pipe(ev) == -1)
			break;
		if ((pid = fork()) == 0) {
			close(go[1]);
			close(ev[0]);
			if (unshare(CLONE_NEWNET) == -1)
				_exit(2);
			(void)!write(ev[1], "r", 1);
			(void)!read(go[0], &c, 1);
			if (system("ip addr add 127.0.0.1/8 dev lo && "
			    "ip link set lo up") != 0)
				_exit(3);
			(void)!write(ev[1], "d", 1);
			(void)!read(go[0], &c, 1);	/* until the parent is done */
			_exit(0);
		}
		close(go[0]);
		close(ev[1]);
		if (read(ev[0], &c, 1) != 1) {	/* no netns here: skip */
			close(go[1]);
			close(ev[0]);
			waitpid(pid, &st, 0);
			break;
		}
		(void)!write(go[1], "g", 1);
		pf.fd = ev[0];
		pf.events = POLLIN;
		do {
			if ((fd = rl_netns_listener(pid, 3128, e, sizeof(e))) == -1) {
				if (bad++ == 0)
					fprintf(stderr, "  round %d: %s\n", round, e);
			} else {
				good++;
				close(fd);
			}
		} while (poll(&pf, 1, 0) == 0);
		/* and after: bound and listening */
		fd = rl_netns_listener(pid, 3128, e, sizeof(e));
		CHECK(fd != -1);
		if (fd != -1)
			close(fd);
		close(go[1]);
		close(ev[0]);
		waitpid(pid, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		rounds++;
	}
	fprintf(stderr, "  %d rounds, %d binds, %d failed\n", rounds,
	    good + bad, bad);
	if (rounds == 0)
		printf("skip test_netns_listener_race no network namespaces\n");
	CHECK_INT(bad, 0);
}

int
main(void)
{
	char e[256];

	snprintf(tdir, sizeof(tdir), "/tmp/test_rtl.%d", (int)getpid());
	mkdir(tdir, 0755);
	log_init("test", LOG_LVL_ERROR, NULL);
	RUN(test_ids_and_names);
	RUN(test_record_roundtrip_and_hostile);
	RUN(test_pidfile);
	RUN(test_proc_start);
	RUN(test_uid_alloc);
	RUN(test_rmtree_no_follow);
	RUN(test_image_path);
	RUN(test_upper_writes_refuse_symlinks);
	RUN(test_copy_tree);
	RUN(test_seccomp_program);
	RUN(test_cfg_keys);
	RUN(test_cgroup_selection);
	RUN(test_uid_ranges);
	RUN(test_netns_listener_race);
	(void)rl_rmtree(tdir, e, sizeof(e));
	return unit_done();
}
