/*
 * runtime/local/admit.c: memory admission (docs/local-runtime.md, "Memory:
 * reservations and limits"). A sandbox has a memory limit (its ceiling,
 * the cgroup's memory.max) and a reservation (what it is admitted with,
 * protected from reclaim as memory.low on v2). A create or start is
 * refused when the reservations of the sandboxes that hold memory, plus
 * its own, plus the host's protected share would not fit in MemTotal, or
 * when MemAvailable is below the protected share (plus its reservation)
 * right now.
 *
 * Rules:
 * - A sandbox holds its reservation while its record's phase is "creating"
 *   or "running" (alive or not: a sandbox that died holds it until it is
 *   stopped or destroyed), plus, in memory, while a start is in progress.
 * - The tally (struct rl_adm) is a sum kept under rl->mu and the state
 *   dir's .lock (rl_adm_lock). Whoever writes a record whose phase enters
 *   or leaves those two does it under that lock and moves the tally with
 *   it (rl_adm_move), so the sum stays equal to the records. Admission is
 *   then O(1); the sum is rebuilt from every record (O(n)) only on the
 *   first admission after the runtime opens, and when another process
 *   (sandboxctl) changed the set: every move bumps the number in
 *   <state_dir>/.admit-gen, and a process that finds a number there other
 *   than the last it wrote or read sums again.
 * - The arithmetic (rl_adm_decide, rl_adm_capacity) is pure: unit tests.
 * - Calls record.c and nothing above it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "local.h"
#include "local_int.h"

/* The protected share's floor and its share of MemTotal (percent) when
 * local.mem_protected is 0: room for the host's own daemons, the
 * orchestrator, the proxy and the page cache a build needs. */
#define RL_PROTECT_MIN	(1LL << 30)
#define RL_PROTECT_PCT	10
/* The default reservation where a configuration gives none (local.h). */
#define RL_RESERVE_DEF	(4LL << 20)
/* Largest /proc/meminfo read: its first lines are all we need. */
#define RL_MEMINFO_MAX	4096

long long
rl_adm_protect(long long total, long long conf)
{
	long long p;

	if (conf > 0)
		return conf;
	p = total > 0 ? total / 100 * RL_PROTECT_PCT : 0;
	return p > RL_PROTECT_MIN ? p : RL_PROTECT_MIN;
}

int
rl_adm_decide(long long total, long long avail, long long protect,
    long long reserved, long long want)
{
	if (total <= 0)
		return RL_ADM_OK;	/* unknown: admission is off */
	if (protect > total || reserved + want > total - protect)
		return RL_ADM_FULL;
	if (avail >= 0 && avail - want < protect)
		return RL_ADM_LOW;
	return RL_ADM_OK;
}

long long
rl_adm_capacity(long long total, long long protect, long long reserve,
    long long uid_count)
{
	long long n;

	if (total <= 0 || reserve <= 0)
		return -1;
	n = total > protect ? (total - protect) / reserve : 0;
	return uid_count > 0 && n > uid_count ? uid_count : n;
}

int
rl_adm_meminfo(const char *text, long long *total, long long *avail)
{
	const char *p;
	long long kb;

	*total = *avail = -1;
	for (p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'),
	    p = p != NULL ? p + 1 : NULL) {
		if (sscanf(p, "MemTotal: %lld kB", &kb) == 1 && kb > 0)
			*total = kb * 1024;
		else if (sscanf(p, "MemAvailable: %lld kB", &kb) == 1 && kb >= 0)
			*avail = kb * 1024;
	}
	return *total > 0 ? 0 : -1;
}

/* MemTotal and MemAvailable now (-1 where unknown). */
static void
meminfo(long long *total, long long *avail)
{
	char buf[RL_MEMINFO_MAX];
	ssize_t n;
	int fd;

	*total = *avail = -1;
	if ((fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC)) == -1)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	(void)rl_adm_meminfo(buf, total, avail);
}

long long
rl_adm_reserve(const struct rl *rl, const struct rec *r)
{
	return r->lim.mem_low > 0 ? r->lim.mem_low : rl->c.mem_reserve_bytes;
}

int
rl_adm_counted(const struct rec *r)
{
	return strcmp(r->phase, "creating") == 0 ||
	    strcmp(r->phase, "running") == 0;
}

long long
runtime_local_capacity(const struct rt_local_conf *c, long long reserve)
{
	long long total, avail;

	meminfo(&total, &avail);
	if (reserve <= 0)
		reserve = c->mem_reserve_bytes > 0 ? c->mem_reserve_bytes :
		    RL_RESERVE_DEF;
	return rl_adm_capacity(total, rl_adm_protect(total,
	    c->mem_protect_bytes), reserve, c->uid_count > 0 ? c->uid_count :
	    10000);
}

/* The generation in .admit-gen (0 when absent or unreadable). */
static long long
gen_read(int fd)
{
	char b[32];
	ssize_t n;

	if ((n = pread(fd, b, sizeof(b) - 1, 0)) <= 0)
		return 0;
	b[n] = '\0';
	return strtoll(b, NULL, 10);
}

/* Writes g into .admit-gen (best effort: a lost write makes the others
 * sum once more, never less). */
static void
gen_write(int fd, long long g)
{
	char b[32];
	int n = snprintf(b, sizeof(b), "%lld\n", g);

	if (pwrite(fd, b, (size_t)n, 0) != n || ftruncate(fd, n) == -1)
		return;
}

int
rl_adm_lock(struct rl *rl, struct rl_adm_lk *lk, char *err, size_t errlen)
{
	char p[RL_PATH_MAX + 16];

	lk->gfd = lk->genfd = -1;
	pthread_mutex_lock(&rl->mu);
	snprintf(p, sizeof(p), "%s/.lock", rl->state_dir);
	lk->gfd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lk->gfd == -1 || flock(lk->gfd, LOCK_EX) == -1) {
		snprintf(err, errlen, "lock %s: %s", p, strerror(errno));
		goto fail;
	}
	snprintf(p, sizeof(p), "%s/.admit-gen", rl->state_dir);
	if ((lk->genfd = open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	    0600)) == -1) {
		snprintf(err, errlen, "open %s: %s", p, strerror(errno));
		goto fail;
	}
	/* another process moved the tally since we last looked: sum again */
	if (gen_read(lk->genfd) != rl->adm.gen)
		rl->adm.valid = 0;
	return 0;
fail:
	rl_adm_unlock(rl, lk);
	return -1;
}

void
rl_adm_unlock(struct rl *rl, struct rl_adm_lk *lk)
{
	if (lk->genfd != -1)
		close(lk->genfd);
	if (lk->gfd != -1)
		close(lk->gfd);	/* drops the flock */
	lk->gfd = lk->genfd = -1;
	pthread_mutex_unlock(&rl->mu);
}

/* The sum of the records (rl_adm_counted); rl->adm.valid after. */
struct admsum {
	const struct rl	*rl;
	long long	 sum, n;
};

static void
sum_id(const char *id, void *arg)
{
	struct admsum *s = arg;
	struct rec r;
	char e[256];

	if (rl_rec_load(s->rl, id, &r, e, sizeof(e)) == -1)
		return;
	if (rl_adm_counted(&r)) {
		s->sum += rl_adm_reserve(s->rl, &r);
		s->n++;
	}
	rl_rec_clear(&r);
}

static int
resum(struct rl *rl, struct rl_adm_lk *lk, char *err, size_t errlen)
{
	struct admsum s = { rl, 0, 0 };

	if (rl_each_id(rl, sum_id, &s, err, errlen) == -1)
		return -1;
	rl->adm.reserved = s.sum;
	rl->adm.n = s.n;
	rl->adm.gen = gen_read(lk->genfd);
	rl->adm.valid = 1;
	return 0;
}

void
rl_adm_move(struct rl *rl, struct rl_adm_lk *lk, long long bytes, int n)
{
	long long g = gen_read(lk->genfd);

	if (rl->adm.valid && g == rl->adm.gen) {
		rl->adm.reserved += bytes;
		rl->adm.n += n;
		if (rl->adm.reserved < 0 || rl->adm.n < 0)
			rl->adm.valid = 0;	/* cannot be: sum again */
	} else
		rl->adm.valid = 0;
	gen_write(lk->genfd, g + 1);
	rl->adm.gen = g + 1;
}

int
rl_adm_check(struct rl *rl, struct rl_adm_lk *lk, long long want, char *err,
    size_t errlen)
{
	long long total, avail, protect, held;
	char e[256];

	if (!rl->adm.valid && resum(rl, lk, e, sizeof(e)) == -1)
		return 0;	/* the state dir cannot be read: create says */
	meminfo(&total, &avail);
	protect = rl_adm_protect(total, rl->c.mem_protect_bytes);
	held = rl->adm.reserved + rl->adm.starting;
	switch (rl_adm_decide(total, avail, protect, held, want)) {
	case RL_ADM_OK:
		return 0;
	case RL_ADM_FULL:
		snprintf(err, errlen, "not enough memory on this host: %lld "
		    "sandboxes reserve %lld MiB, this one asks %lld MiB, %lld MiB "
		    "of the host's %lld MiB stay protected (local.mem_protected); "
		    "stop or delete a sandbox, or ask for a smaller "
		    "memory_reservation", rl->adm.n, held >> 20, want >> 20,
		    protect >> 20, total >> 20);
		return -1;
	default:
		snprintf(err, errlen, "not enough memory on this host right "
		    "now: %lld MiB available (MemAvailable), this one asks %lld "
		    "MiB, %lld MiB of the host's %lld MiB stay protected "
		    "(local.mem_protected); stop or delete a sandbox, or free "
		    "memory on the host", avail >> 20, want >> 20, protect >> 20,
		    total >> 20);
		return -1;
	}
}
