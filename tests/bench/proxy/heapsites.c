/*
 * heapsites.c: an LD_PRELOAD library that counts a process's live heap by
 * allocation call stack, to see where per-connection memory goes (how the
 * idle-memory figures in docs/proxy.md were taken apart).
 *
 *   HEAPSITES_OUT=/tmp/hs LD_PRELOAD=.../heapsites.so egress-proxy -f ...
 *   touch /tmp/hs.trigger          -> /tmp/hs.N: one line per call stack
 *
 * Counting starts HEAPSITES_DELAY seconds (0-3600, default 2) after the process
 * starts, so start-up allocations (CA store, addons) are left out; blocks
 * allocated before that are not counted when freed either. A watcher thread
 * looks for $HEAPSITES_OUT.trigger every 200 ms, removes it and writes
 * $HEAPSITES_OUT.N (N = 0, 1, ...): "live_bytes live_blocks frame..." per
 * call stack with live bytes, each frame "object+0xoffset" (addr2line -f -e
 * OBJECT 0xoffset names it). Bytes are malloc_usable_size, without the 8
 * byte chunk headers. tests/bench/proxy/run.sh uses it with
 * BENCH_HEAPSITES=1. A debugging tool: slow (a backtrace per allocation),
 * fixed tables (NSITES call stacks, NBLOCKS live blocks; past those, blocks
 * are not counted), never for production.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void	*__libc_malloc(size_t);
void	*__libc_calloc(size_t, size_t);
void	*__libc_realloc(void *, size_t);
void	 __libc_free(void *);

#define DEPTH	8		/* frames kept per call stack */
#define NSITES	(1 << 16)	/* call stacks (open addressing) */
#define NBLOCKS	(1 << 23)	/* live blocks (open addressing) */
#define GONE	((void *)1)	/* tombstone in the block table */

struct site {
	void		*f[DEPTH];
	int		 n;		/* 0: free slot */
	long long	 bytes, blocks;
};

struct block {
	void		*p;		/* NULL: free, GONE: removed */
	int		 site;
};

static struct site	 sites[NSITES];
static struct block	 blocks[NBLOCKS];
static pthread_mutex_t	 mtx = PTHREAD_MUTEX_INITIALIZER;
static volatile int	 counting;
static __thread int	 inside;	/* this thread is in the tracker */
static char		 out[512];

static size_t
block_slot(const void *p)
{
	return (size_t)((((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull) >> 40) % NBLOCKS;
}

static int
site_get(void *const *f, int n)
{
	uint64_t h = 0;
	size_t i, k;
	int j;

	for (j = 0; j < n; j++)
		h = h * 31 + (uintptr_t)f[j];
	for (i = h % NSITES, k = 0; k < NSITES; i = (i + 1) % NSITES, k++) {
		if (sites[i].n == 0) {
			memcpy(sites[i].f, f, (size_t)n * sizeof(*f));
			sites[i].n = n;
			return (int)i;
		}
		if (sites[i].n == n && memcmp(sites[i].f, f, (size_t)n * sizeof(*f)) == 0)
			return (int)i;
	}
	return -1;
}

static void
track(void *p)
{
	void *f[DEPTH + 2];
	size_t i, k;
	int n, s;

	if (!counting || p == NULL || inside)
		return;
	inside = 1;
	n = backtrace(f, DEPTH + 2);	/* skip track() and the wrapper */
	n = n > 2 ? n - 2 : 0;
	pthread_mutex_lock(&mtx);
	if ((s = site_get(f + 2, n)) != -1) {
		for (i = block_slot(p), k = 0; k < NBLOCKS; i = (i + 1) % NBLOCKS, k++)
			if (blocks[i].p == NULL || blocks[i].p == GONE)
				break;
		if (k < NBLOCKS) {
			blocks[i].p = p;
			blocks[i].site = s;
			sites[s].bytes += (long long)malloc_usable_size(p);
			sites[s].blocks++;
		}
	}
	pthread_mutex_unlock(&mtx);
	inside = 0;
}

static void
untrack(void *p)
{
	size_t i, k;

	if (!counting || p == NULL)
		return;
	pthread_mutex_lock(&mtx);
	for (i = block_slot(p), k = 0; k < NBLOCKS && blocks[i].p != NULL;
	    i = (i + 1) % NBLOCKS, k++) {
		if (blocks[i].p == p) {
			sites[blocks[i].site].bytes -= (long long)malloc_usable_size(p);
			sites[blocks[i].site].blocks--;
			blocks[i].p = GONE;
			break;
		}
	}
	pthread_mutex_unlock(&mtx);
}

void *
malloc(size_t n)
{
	void *p = __libc_malloc(n);

	track(p);
	return p;
}

void *
calloc(size_t m, size_t n)
{
	void *p = __libc_calloc(m, n);

	track(p);
	return p;
}

void *
realloc(void *o, size_t n)
{
	void *p;

	untrack(o);
	p = __libc_realloc(o, n);
	if (p != NULL)
		track(p);
	else if (n != 0)
		track(o);	/* failed: o is still allocated */
	return p;
}

void
free(void *p)
{
	untrack(p);
	__libc_free(p);
}

/* Writes the call stacks that hold live bytes to OUT.seq. */
static void
dump(int seq)
{
	char path[600];
	Dl_info d;
	FILE *fp;
	int i, j;

	snprintf(path, sizeof(path), "%s.%d", out, seq);
	if ((fp = fopen(path, "w")) == NULL)
		return;
	pthread_mutex_lock(&mtx);
	for (i = 0; i < NSITES; i++) {
		if (sites[i].n == 0 || sites[i].bytes <= 0)
			continue;
		fprintf(fp, "%lld %lld", sites[i].bytes, sites[i].blocks);
		for (j = 0; j < sites[i].n; j++) {
			if (dladdr(sites[i].f[j], &d) != 0 && d.dli_fname != NULL) {
				const char *b = strrchr(d.dli_fname, '/');

				fprintf(fp, " %s+0x%lx", b != NULL ? b + 1 : d.dli_fname,
				    (unsigned long)((char *)sites[i].f[j] - (char *)d.dli_fbase));
			} else
				fprintf(fp, " %p", sites[i].f[j]);
		}
		fputc('\n', fp);
	}
	pthread_mutex_unlock(&mtx);
	fclose(fp);
}

static void *
watch(void *arg)
{
	const char *e = getenv("HEAPSITES_DELAY");
	char trig[600], *end;
	unsigned delay = 2;
	long v;
	int seq = 0;

	(void)arg;
	inside = 1;		/* this thread's own allocations are not counted */
	snprintf(trig, sizeof(trig), "%s.trigger", out);
	if (e != NULL && *e != '\0') {
		errno = 0;
		v = strtol(e, &end, 10);
		if (errno == 0 && *end == '\0' && v >= 0 && v <= 3600)
			delay = (unsigned)v;
		else
			fprintf(stderr, "heapsites: HEAPSITES_DELAY must be 0-3600 seconds: 2 used\n");
	}
	sleep(delay);
	counting = 1;
	for (;;) {
		usleep(200000);
		if (access(trig, F_OK) == 0) {
			unlink(trig);
			dump(seq++);
		}
	}
	return NULL;
}

__attribute__((constructor)) static void
heapsites_init(void)
{
	const char *o = getenv("HEAPSITES_OUT");
	pthread_t t;
	void *f[4];

	if (o == NULL || *o == '\0')
		return;
	snprintf(out, sizeof(out), "%s", o);
	inside = 1;
	backtrace(f, 4);	/* loads libgcc_s now, not inside malloc */
	inside = 0;
	if (pthread_create(&t, NULL, watch, NULL) == 0)
		pthread_detach(t);
}
