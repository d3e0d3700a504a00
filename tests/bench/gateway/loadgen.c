/*
 * loadgen.c: the load client of the gateway benchmark
 * (tests/bench/gateway/run.sh). Talks HTTP/1.1 to ADDR (the app itself, or
 * the gateway with the app's Host and a Bearer token):
 *
 *   loadgen MODE -a HOST:PORT [-H HOSTHDR] [-T TOKEN] [-c CONNS] [-d SECS]
 *           [-n COUNT] [-p PATH]
 *
 *   rps    CONNS keep-alive connections (a thread each) send GET PATH
 *          (default /) one after another for SECS: req/s, p50, p99
 *   big    the same with PATH /big (8 MiB bodies): MiB/s
 *   ws     one WebSocket (GET /ws + Upgrade), COUNT round trips of a
 *          32-byte text frame: p50, p99 of the echo round trip
 *   idle   COUNT WebSockets opened (each with one echo, so each is really
 *          through), prints "idle ready N" and holds them until stdin
 *          reaches EOF (the caller closes it), then exits
 * Prints one line: mode=... reqs= secs= rps= p50_us= p99_us= mibps= errors=
 * Exit status 1 when nothing succeeded.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "wsutil.h"

#define HEAD_MAX	(64 * 1024)
#define LAT_MAX		(4 * 1024 * 1024)	/* latency samples kept per thread */
#define IO_TIMEOUT_S	30

enum mode { M_RPS, M_BIG, M_WS, M_IDLE };

static struct {
	const char	*addr;
	const char	*host;
	const char	*token;
	const char	*path;
	enum mode	 mode;
	int		 conns;
	int		 secs;
	long		 count;
	struct sockaddr_storage sa;
	socklen_t	 salen;
	double		 deadline;
} cfg = { .conns = 1, .secs = 5, .count = 1000 };

struct worker {
	pthread_t	 th;
	long		 reqs, errors;
	uint64_t	 bytes;
	uint32_t	*lat;		/* microseconds */
	long		 nlat;
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
dial(void)
{
	int fd, one = 1;
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };

	if ((fd = socket(cfg.sa.ss_family, SOCK_STREAM, 0)) == -1)
		return -1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&cfg.sa, cfg.salen) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
send_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* A connection's read side: a buffer holding what came after the last head. */
struct rd {
	int	 fd;
	char	 buf[HEAD_MAX];
	size_t	 len;
};

static int
fill(struct rd *r)
{
	ssize_t n;

	if (r->len == sizeof(r->buf))
		return -1;
	do
		n = recv(r->fd, r->buf + r->len, sizeof(r->buf) - r->len, 0);
	while (n == -1 && errno == EINTR);
	if (n <= 0)
		return -1;
	r->len += (size_t)n;
	return 0;
}

static void
consume(struct rd *r, size_t n)
{
	memmove(r->buf, r->buf + n, r->len - n);
	r->len -= n;
}

/* Reads one response: its status; the body (Content-Length) read and
 * counted into *bytes. -1 on error or a body without a length. */
static int
response(struct rd *r, uint64_t *bytes)
{
	char *e, *p;
	size_t hl;
	unsigned long long cl = 0;
	int status, have_cl = 0;

	while ((e = memmem(r->buf, r->len, "\r\n\r\n", 4)) == NULL)
		if (fill(r) == -1)
			return -1;
	hl = (size_t)(e + 4 - r->buf);
	if (hl < 12 || strncmp(r->buf, "HTTP/1.", 7) != 0)
		return -1;
	status = (int)strtol(r->buf + 9, NULL, 10);
	for (p = r->buf; p < e; p++) {
		if (*p == '\n' && strncasecmp(p + 1, "content-length:", 15) == 0) {
			cl = strtoull(p + 16, NULL, 10);
			have_cl = 1;
		}
	}
	if (!have_cl && status != 101 && status != 304 && status != 204)
		return -1;
	consume(r, hl);
	while (cl > 0) {
		size_t k;
		if (r->len == 0) {
			/* large bodies: straight from the socket, not through buf */
			ssize_t n = recv(r->fd, r->buf, sizeof(r->buf), 0);
			if (n <= 0) {
				if (n == -1 && errno == EINTR)
					continue;
				return -1;
			}
			r->len = (size_t)n;
		}
		k = cl < r->len ? (size_t)cl : r->len;
		consume(r, k);
		cl -= k;
		*bytes += k;
	}
	return status;
}

static int
request_head(char *out, size_t cap, const char *path, const char *extra)
{
	int n = snprintf(out, cap, "GET %s HTTP/1.1\r\nHost: %s\r\n%s%s%s%s\r\n", path, cfg.host,
	    cfg.token ? "Authorization: Bearer " : "", cfg.token ? cfg.token : "",
	    cfg.token ? "\r\n" : "", extra);
	return n > 0 && (size_t)n < cap ? n : -1;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void *
http_worker(void *arg)
{
	struct worker *w = arg;
	char req[1024];
	int n = request_head(req, sizeof(req), cfg.path, "");
	struct rd *r = calloc(1, sizeof(*r));

	if (n == -1 || r == NULL) {
		free(r);
		return NULL;
	}
	r->fd = -1;
	while (now() < cfg.deadline) {
		double t0;
		if (r->fd == -1) {
			if ((r->fd = dial()) == -1) {
				w->errors++;
				usleep(10000);
				continue;
			}
			r->len = 0;
		}
		t0 = now();
		if (send_all(r->fd, req, (size_t)n) == -1 || response(r, &w->bytes) != 200) {
			w->errors++;
			close(r->fd);
			r->fd = -1;
			continue;
		}
		w->reqs++;
		if (w->nlat < LAT_MAX)
			w->lat[w->nlat++] = (uint32_t)((now() - t0) * 1e6);
	}
	if (r->fd != -1)
		close(r->fd);
	free(r);
	return NULL;
}

/* Opens a WebSocket on a new connection. The fd, or -1. */
static int
ws_open(struct rd *r)
{
	unsigned char key[16];
	char k64[32], extra[256], req[1024], acc[29];
	uint64_t b = 0;
	int n;

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)rand();
	ws_b64(key, sizeof(key), k64);
	snprintf(extra, sizeof(extra), "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n", k64);
	if ((n = request_head(req, sizeof(req), "/ws", extra)) == -1)
		return -1;
	r->len = 0;
	if ((r->fd = dial()) == -1)
		return -1;
	ws_accept(k64, strlen(k64), acc);
	if (send_all(r->fd, req, (size_t)n) == -1)
		goto bad;
	/* the head stays in buf until response() consumes it: check the accept */
	while (memmem(r->buf, r->len, "\r\n\r\n", 4) == NULL)
		if (fill(r) == -1)
			goto bad;
	if (memmem(r->buf, r->len, acc, strlen(acc)) == NULL)
		goto bad;
	if (response(r, &b) != 101)
		goto bad;
	return r->fd;
bad:
	close(r->fd);
	r->fd = -1;
	return -1;
}

/* One 32-byte masked text frame out, its echo back. 0 or -1. */
static int
ws_echo(struct rd *r)
{
	unsigned char f[2 + 4 + 32];
	size_t need = 2 + 32;

	f[0] = 0x81;
	f[1] = 0x80 | 32;
	memcpy(f + 2, "\x12\x34\x56\x78", 4);
	for (int i = 0; i < 32; i++)
		f[6 + i] = (unsigned char)('a' + i % 26) ^ f[2 + (i & 3)];
	if (send_all(r->fd, f, sizeof(f)) == -1)
		return -1;
	while (r->len < need)
		if (fill(r) == -1)
			return -1;
	if ((unsigned char)r->buf[0] != 0x81 || r->buf[1] != 32 || r->buf[2] != 'a')
		return -1;
	consume(r, need);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: loadgen rps|big|ws|idle -a HOST:PORT [-H HOSTHDR] [-T TOKEN] "
	    "[-c CONNS] [-d SECS] [-n COUNT] [-p PATH]\n");
	exit(2);
}

static void
resolve(void)
{
	char host[256], *port;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;

	if (snprintf(host, sizeof(host), "%s", cfg.addr) >= (int)sizeof(host))
		usage();
	if ((port = strrchr(host, ':')) == NULL)
		usage();
	*port++ = '\0';
	if (getaddrinfo(host, port, &hints, &ai) != 0) {
		fprintf(stderr, "loadgen: cannot resolve %s\n", cfg.addr);
		exit(1);
	}
	memcpy(&cfg.sa, ai->ai_addr, ai->ai_addrlen);
	cfg.salen = ai->ai_addrlen;
	freeaddrinfo(ai);
}

/* A number option: digits only, at most 10^9. */
static long
num(const char *s)
{
	char *e;
	long v;

	errno = 0;
	v = strtol(s, &e, 10);
	if (errno != 0 || e == s || *e != '\0' || v < 0 || v > 1000000000)
		usage();
	return v;
}

static uint32_t
pct(const uint32_t *v, long n, double p)
{
	long i = (long)(p * (double)(n - 1) + 0.5);

	return n > 0 ? v[i] : 0;
}

int
main(int argc, char **argv)
{
	struct rlimit rl;
	int o;

	if (argc < 2)
		usage();
	if (strcmp(argv[1], "rps") == 0) cfg.mode = M_RPS;
	else if (strcmp(argv[1], "big") == 0) cfg.mode = M_BIG;
	else if (strcmp(argv[1], "ws") == 0) cfg.mode = M_WS;
	else if (strcmp(argv[1], "idle") == 0) cfg.mode = M_IDLE;
	else usage();
	optind = 2;
	while ((o = getopt(argc, argv, "a:H:T:c:d:n:p:")) != -1) {
		switch (o) {
		case 'a': cfg.addr = optarg; break;
		case 'H': cfg.host = optarg; break;
		case 'T': cfg.token = optarg; break;
		case 'c': cfg.conns = (int)num(optarg); break;
		case 'd': cfg.secs = (int)num(optarg); break;
		case 'n': cfg.count = num(optarg); break;
		case 'p': cfg.path = optarg; break;
		default: usage();
		}
	}
	if (cfg.addr == NULL || cfg.conns < 1 || cfg.conns > 10000 || cfg.secs < 1 || cfg.count < 1)
		usage();
	if (cfg.host == NULL)
		cfg.host = cfg.addr;
	if (cfg.path == NULL)
		cfg.path = cfg.mode == M_BIG ? "/big" : "/";
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	srand((unsigned)getpid() ^ (unsigned)time(NULL));
	resolve();

	if (cfg.mode == M_RPS || cfg.mode == M_BIG) {
		struct worker *w = calloc((size_t)cfg.conns, sizeof(*w));
		long reqs = 0, errors = 0, nl = 0;
		uint64_t bytes = 0;
		uint32_t *all;
		double t0, secs;

		if (w == NULL)
			return 1;
		cfg.deadline = now() + cfg.secs;
		t0 = now();
		for (int i = 0; i < cfg.conns; i++) {
			if ((w[i].lat = malloc(LAT_MAX * sizeof(uint32_t))) == NULL)
				return 1;
			pthread_create(&w[i].th, NULL, http_worker, &w[i]);
		}
		for (int i = 0; i < cfg.conns; i++) {
			pthread_join(w[i].th, NULL);
			reqs += w[i].reqs;
			errors += w[i].errors;
			bytes += w[i].bytes;
			nl += w[i].nlat;
		}
		secs = now() - t0;
		if ((all = malloc((size_t)(nl ? nl : 1) * sizeof(uint32_t))) == NULL)
			return 1;
		nl = 0;
		for (int i = 0; i < cfg.conns; i++) {
			memcpy(all + nl, w[i].lat, (size_t)w[i].nlat * sizeof(uint32_t));
			nl += w[i].nlat;
		}
		qsort(all, (size_t)nl, sizeof(uint32_t), cmp_u32);
		printf("mode=%s reqs=%ld secs=%.2f rps=%.0f p50_us=%u p99_us=%u mibps=%.1f errors=%ld\n",
		    argv[1], reqs, secs, reqs / secs, pct(all, nl, 0.50), pct(all, nl, 0.99),
		    (double)bytes / secs / (1 << 20), errors);
		return reqs > 0 ? 0 : 1;
	}
	if (cfg.mode == M_WS) {
		struct rd *r = calloc(1, sizeof(*r));
		uint32_t *lat = malloc((size_t)cfg.count * sizeof(uint32_t));
		long n = 0, errors = 0;
		double t0, secs;

		if (r == NULL || lat == NULL || ws_open(r) == -1) {
			printf("mode=ws reqs=0 errors=1 (no WebSocket)\n");
			return 1;
		}
		for (long i = 0; i < 20 && ws_echo(r) == 0; i++)	/* warm-up */
			;
		t0 = now();
		while (n < cfg.count) {
			double s = now();
			if (ws_echo(r) == -1) {
				errors++;
				break;
			}
			lat[n++] = (uint32_t)((now() - s) * 1e6);
		}
		secs = now() - t0;
		qsort(lat, (size_t)n, sizeof(uint32_t), cmp_u32);
		printf("mode=ws reqs=%ld secs=%.2f rps=%.0f p50_us=%u p99_us=%u mibps=0 errors=%ld\n",
		    n, secs, n / secs, pct(lat, n, 0.50), pct(lat, n, 0.99), errors);
		return n > 0 ? 0 : 1;
	}
	/* idle */
	{
		struct rd *r = malloc(sizeof(*r));
		int *fds = calloc((size_t)cfg.count, sizeof(int));
		long ok = 0, errors = 0;
		char c;

		if (r == NULL || fds == NULL)
			return 1;
		for (long i = 0; i < cfg.count; i++) {
			int fd = ws_open(r);
			if (fd == -1 || ws_echo(r) == -1 || r->len != 0) {
				if (fd != -1)
					close(fd);
				errors++;
				continue;
			}
			fds[ok++] = fd;
		}
		printf("idle ready %ld errors=%ld\n", ok, errors);
		fflush(stdout);
		while (read(0, &c, 1) > 0)
			;
		for (long i = 0; i < ok; i++)
			close(fds[i]);
		return ok > 0 ? 0 : 1;
	}
}
