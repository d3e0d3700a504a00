/*
 * test_rl_admit.c: the local runtime's memory admission
 * (runtime/local/admit.c): the arithmetic (protected share, fit, the
 * capacity limits.max_running auto resolves to), /proc/meminfo parsing,
 * the tally against the records (summed once, moved by rl_adm_move,
 * summed again when another process bumped .admit-gen), and memory.low
 * on a fake v2 cgroup tree. Real sandboxes: tests/e2e/r31-orch-admission.sh.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "log.h"
#include "runtime/local/local_int.h"
#include "util.h"
#include "xmalloc.h"
#include "unit.h"

#define MiB	(1LL << 20)
#define GiB	(1LL << 30)

static char tdir[256];

TEST(test_protect_and_capacity)
{
	static const struct {
		long long total, conf, want;
	} pr[] = {
		{ 24 * GiB, 0, 24 * GiB / 100 * 10 },	/* 10%, above 1 GiB */
		{ 4 * GiB, 0, GiB },		/* the floor */
		{ -1, 0, GiB },			/* unknown total: the floor */
		{ 24 * GiB, 3 * GiB, 3 * GiB },	/* local.mem_protected */
	};
	size_t i;

	for (i = 0; i < NELEM(pr); i++)
		CHECK_INT(rl_adm_protect(pr[i].total, pr[i].conf), pr[i].want);
	/* the host: 24 GiB (MemTotal 24683744 kB), 4 MiB each */
	CHECK(rl_adm_capacity(24683744LL * 1024, rl_adm_protect(24683744LL *
	    1024, 0), 4 * MiB, 10000) >= 5000);
	CHECK_INT(rl_adm_capacity(24 * GiB, 24 * GiB / 10, 4 * MiB, 10000),
	    (24 * GiB - 24 * GiB / 10) / (4 * MiB));
	CHECK_INT(rl_adm_capacity(24 * GiB, 24 * GiB / 10, 4 * MiB, 100), 100);
	CHECK_INT(rl_adm_capacity(GiB, 2 * GiB, 4 * MiB, 10000), 0);
	CHECK_INT(rl_adm_capacity(-1, GiB, 4 * MiB, 10000), -1);
	CHECK_INT(rl_adm_capacity(24 * GiB, GiB, 0, 10000), -1);
}

TEST(test_decide)
{
	static const struct {
		long long total, avail, protect, reserved, want;
		int rc;
	} t[] = {
		/* fits with room */
		{ 24 * GiB, 20 * GiB, 2 * GiB, 0, 4 * MiB, RL_ADM_OK },
		/* exactly fits: reserved + want == total - protect */
		{ 24 * GiB, 20 * GiB, 2 * GiB, 22 * GiB - 4 * MiB, 4 * MiB,
		  RL_ADM_OK },
		/* one byte over */
		{ 24 * GiB, 20 * GiB, 2 * GiB, 22 * GiB - 4 * MiB + 1, 4 * MiB,
		  RL_ADM_FULL },
		/* the old refusal's case: 17 x 2 GiB limits, but 4 MiB
		 * reservations: fits */
		{ 24 * GiB, 20 * GiB, 24 * GiB / 10, 17 * 4 * MiB, 4 * MiB,
		  RL_ADM_OK },
		/* a huge reservation */
		{ 24 * GiB, 20 * GiB, 24 * GiB / 10, 0, 22 * GiB, RL_ADM_FULL },
		/* the protected share alone is more than the host */
		{ GiB, GiB, 2 * GiB, 0, MiB, RL_ADM_FULL },
		/* the books fit but MemAvailable is short now */
		{ 24 * GiB, 2 * GiB, 2 * GiB, 0, 4 * MiB, RL_ADM_LOW },
		{ 24 * GiB, 2 * GiB + 4 * MiB, 2 * GiB, 0, 4 * MiB, RL_ADM_OK },
		/* MemAvailable unknown: the books decide */
		{ 24 * GiB, -1, 2 * GiB, 0, 4 * MiB, RL_ADM_OK },
		/* MemTotal unknown: admission is off */
		{ -1, -1, GiB, 100 * GiB, 4 * MiB, RL_ADM_OK },
	};
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		if (rl_adm_decide(t[i].total, t[i].avail, t[i].protect,
		    t[i].reserved, t[i].want) != t[i].rc)
			fprintf(stderr, "  row %zu\n", i);
		CHECK_INT(rl_adm_decide(t[i].total, t[i].avail, t[i].protect,
		    t[i].reserved, t[i].want), t[i].rc);
	}
}

TEST(test_meminfo)
{
	long long total, avail;

	CHECK(rl_adm_meminfo("MemTotal:       24683744 kB\nMemFree:        "
	    "23619836 kB\nMemAvailable:   24225656 kB\n", &total, &avail) == 0);
	CHECK_INT(total, 24683744LL * 1024);
	CHECK_INT(avail, 24225656LL * 1024);
	/* an old kernel without MemAvailable */
	CHECK(rl_adm_meminfo("MemTotal: 1000 kB\nMemFree: 10 kB\n", &total,
	    &avail) == 0);
	CHECK_INT(total, 1024000);
	CHECK_INT(avail, -1);
	CHECK(rl_adm_meminfo("", &total, &avail) == -1);
	CHECK(rl_adm_meminfo("MemTotal: x kB\n", &total, &avail) == -1);
	CHECK(rl_adm_meminfo("MemTotal: 0 kB\n", &total, &avail) == -1);
}

static struct rl *
mk_rl(void)
{
	struct rl *rl = xcalloc(1, sizeof(*rl));

	snprintf(rl->state_dir, sizeof(rl->state_dir), "%s/state", tdir);
	mkdir(rl->state_dir, 0711);
	rl->c.uid_base = 5000000;
	rl->c.uid_count = 16;
	rl->c.mem_reserve_bytes = 4 * MiB;
	/* nothing protected: the checks below decide on the tally alone
	 * whatever this machine holds */
	rl->c.mem_protect_bytes = 1;
	pthread_mutex_init(&rl->mu, NULL);
	return rl;
}

/* A record id with phase and reservation (0: none, an older record). */
static void
put_rec(struct rl *rl, const char *id, const char *phase, long long low)
{
	struct rec r;
	char p[600], e[256];

	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "%s", id);
	snprintf(r.image_dir, sizeof(r.image_dir), "/x");
	snprintf(r.phase, sizeof(r.phase), "%s", phase);
	r.uid = 5000000;
	r.lim.mem_bytes = 2 * GiB;
	r.lim.mem_low = low;
	snprintf(p, sizeof(p), "%s/%s", rl->state_dir, id);
	mkdir(p, 0711);
	CHECK(rl_rec_save(rl, &r, 0, e, sizeof(e)) == 0);
}

TEST(test_tally)
{
	struct rl *rl = mk_rl();
	struct rl_adm_lk lk;
	struct rec r;
	char p[600], e[512];
	int fd;

	put_rec(rl, "a", "running", 8 * MiB);
	put_rec(rl, "b", "creating", 16 * MiB);
	put_rec(rl, "c", "stopped", 32 * MiB);	/* holds nothing */
	put_rec(rl, "d", "running", 0);		/* older: the default, 4 MiB */
	/* a record survives the round trip with its reservation */
	CHECK(rl_rec_load(rl, "a", &r, e, sizeof(e)) == 0);
	CHECK_INT(r.lim.mem_low, 8 * MiB);
	CHECK(rl_adm_counted(&r));
	CHECK_INT(rl_adm_reserve(rl, &r), 8 * MiB);
	rl_rec_clear(&r);
	CHECK(rl_rec_load(rl, "d", &r, e, sizeof(e)) == 0);
	CHECK_INT(rl_adm_reserve(rl, &r), 4 * MiB);
	rl_rec_clear(&r);

	/* the first check sums the records */
	CHECK(rl_adm_lock(rl, &lk, e, sizeof(e)) == 0);
	CHECK(rl_adm_check(rl, &lk, MiB, e, sizeof(e)) == 0);
	CHECK(rl->adm.valid);
	CHECK_INT(rl->adm.reserved, 28 * MiB);
	CHECK_INT(rl->adm.n, 3);
	/* moves are O(1) and bump the generation */
	rl_adm_move(rl, &lk, 32 * MiB, 1);	/* c started */
	CHECK_INT(rl->adm.reserved, 60 * MiB);
	CHECK_INT(rl->adm.gen, 1);
	rl_adm_unlock(rl, &lk);

	/* our own move is not taken for another process's */
	CHECK(rl_adm_lock(rl, &lk, e, sizeof(e)) == 0);
	CHECK(rl->adm.valid);
	rl_adm_move(rl, &lk, -8 * MiB, -1);	/* a stopped */
	CHECK_INT(rl->adm.reserved, 52 * MiB);
	CHECK_INT(rl->adm.n, 3);
	rl_adm_unlock(rl, &lk);

	/* another process (sandboxctl) made e and bumped the generation:
	 * the next lock sees it and the check sums again */
	put_rec(rl, "e", "running", 64 * MiB);
	snprintf(p, sizeof(p), "%s/.admit-gen", rl->state_dir);
	CHECK((fd = open(p, O_WRONLY | O_TRUNC)) != -1);
	CHECK(write(fd, "7\n", 2) == 2);
	close(fd);
	CHECK(rl_adm_lock(rl, &lk, e, sizeof(e)) == 0);
	CHECK(!rl->adm.valid);
	CHECK(rl_adm_check(rl, &lk, MiB, e, sizeof(e)) == 0);
	/* the records as they are: a 8 (running), b 16, d 4, e 64; c's
	 * record still says stopped (this test moved it by hand) */
	CHECK_INT(rl->adm.reserved, 92 * MiB);
	CHECK_INT(rl->adm.n, 4);
	CHECK_INT(rl->adm.gen, 7);

	/* a protected share larger than the host refuses, naming the
	 * numbers and the key */
	rl->c.mem_protect_bytes = 1LL << 50;
	CHECK(rl_adm_check(rl, &lk, MiB, e, sizeof(e)) == -1);
	CHECK(strstr(e, "not enough memory on this host") != NULL);
	CHECK(strstr(e, "4 sandboxes reserve 92 MiB") != NULL);
	CHECK(strstr(e, "this one asks 1 MiB") != NULL);
	CHECK(strstr(e, "local.mem_protected") != NULL);
	/* starts in progress count too */
	rl->c.mem_protect_bytes = 1;
	rl->adm.starting = 1LL << 50;
	CHECK(rl_adm_check(rl, &lk, MiB, e, sizeof(e)) == -1);
	rl->adm.starting = 0;
	rl_adm_unlock(rl, &lk);
	free(rl);
}

/* At thousands of sandboxes: one sum of every record, then O(1) checks
 * (figures printed; asserted: the sum, and that checks do not sum again). */
TEST(test_tally_scale)
{
	struct rl *rl = mk_rl();
	struct rl_adm_lk lk;
	char id[32], e[512];
	long long t0, t1, t2;
	int i, n = 5000, k = 1000;

	snprintf(rl->state_dir, sizeof(rl->state_dir), "%s/many", tdir);
	mkdir(rl->state_dir, 0711);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "m-%d", i);
		put_rec(rl, id, "running", 4 * MiB);
	}
	CHECK(rl_adm_lock(rl, &lk, e, sizeof(e)) == 0);
	t0 = util_mono_us();
	CHECK(rl_adm_check(rl, &lk, 4 * MiB, e, sizeof(e)) == 0);
	t1 = util_mono_us();
	CHECK_INT(rl->adm.reserved, n * 4 * MiB);
	for (i = 0; i < k; i++) {
		CHECK(rl_adm_check(rl, &lk, 4 * MiB, e, sizeof(e)) == 0);
		rl_adm_move(rl, &lk, 4 * MiB, 1);
	}
	t2 = util_mono_us();
	CHECK(rl->adm.valid);
	CHECK_INT(rl->adm.reserved, (long long)(n + k) * 4 * MiB);
	rl_adm_unlock(rl, &lk);
	printf("# %d records: the first check sums them in %lld ms; then %d "
	    "checks + moves in %lld ms (%.1f us each)\n", n, (t1 - t0) / 1000,
	    k, (t2 - t1) / 1000, (double)(t2 - t1) / k);
	free(rl);
}

/* memory.low carries the reservation on v2; nothing is written for 0. */
TEST(test_cgroup_memory_low)
{
	static const char *const files[] = {
		"cgroup.controllers", "cgroup.subtree_control", "t/",
		"t/cgroup.subtree_control", "t/sb/", "t/sb/memory.max",
		"t/sb/memory.low", "t/sb/memory.swap.max",
		"t/sb/memory.oom.group", "t/sb/pids.max", "t/sb/cpu.max",
	};
	struct rl_limits lim = { 512 * MiB, 1000, 100, 4 * MiB };
	struct rl_cg cg;
	char root[400], p[600], e[256];
	struct buf b;
	size_t i;
	int fd;

	snprintf(root, sizeof(root), "%s/cg", tdir);
	mkdir(root, 0755);
	for (i = 0; i < NELEM(files); i++) {
		snprintf(p, sizeof(p), "%s/%s", root, files[i]);
		if (p[strlen(p) - 1] == '/') {
			mkdir(p, 0755);
			continue;
		}
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd != -1 && strcmp(files[i], "cgroup.controllers") == 0)
			(void)!write(fd, "cpu memory pids\n", 16);
		if (fd != -1)
			close(fd);
	}
	CHECK(rl_cg_detect_at(root, "v2", "t", &cg, e, sizeof(e)) == 0);
	CHECK(rl_cg_create(&cg, "sb", &lim, e, sizeof(e)) == 0);
	buf_init(&b, 64);
	snprintf(p, sizeof(p), "%s/t/sb/memory.low", root);
	CHECK(util_read_file(p, &b, e, sizeof(e)) == 0);
	CHECK_STR(b.p, "4194304");
	buf_free(&b);
	buf_init(&b, 64);
	snprintf(p, sizeof(p), "%s/t/sb/memory.max", root);
	CHECK(util_read_file(p, &b, e, sizeof(e)) == 0);
	CHECK_STR(b.p, "536870912");
	buf_free(&b);
	/* no reservation (an older record): memory.low is left alone, and a
	 * tree without the file is no error then */
	snprintf(p, sizeof(p), "%s/t/sb/memory.low", root);
	unlink(p);
	lim.mem_low = 0;
	CHECK(rl_cg_create(&cg, "sb", &lim, e, sizeof(e)) == 0);
	CHECK(access(p, F_OK) == -1);
	/* with one, a v2 tree that cannot take it is an error */
	lim.mem_low = 4 * MiB;
	CHECK(rl_cg_create(&cg, "sb", &lim, e, sizeof(e)) == -1);
	CHECK(strstr(e, "memory.low") != NULL);
}

int
main(void)
{
	char e[256];

	snprintf(tdir, sizeof(tdir), "/tmp/test_rla.%d", (int)getpid());
	mkdir(tdir, 0755);
	log_init("test", LOG_LVL_ERROR, NULL);
	RUN(test_protect_and_capacity);
	RUN(test_decide);
	RUN(test_meminfo);
	RUN(test_tally);
	RUN(test_tally_scale);
	RUN(test_cgroup_memory_low);
	(void)rl_rmtree(tdir, e, sizeof(e));
	return unit_done();
}
