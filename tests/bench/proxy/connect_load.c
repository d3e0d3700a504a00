/*
 * connect_load.c: HTTPS load generator for the proxy benchmark.
 *
 *   connect_load -t HOST:PORT -n NAME [-H HOSTHDR] [-x PROXY:PORT [-U BASE64]]
 *       [-A "NAME: VALUE"]
 *       [-m keepalive|newconn|body|idle] [-c CONNS] [-d SECONDS]
 *       [-p PATH] [-C CAFILE] [-k] [-N IDLE] [-w FILE]
 *
 * Each of CONNS threads opens a TCP connection (to the proxy, then sends
 * CONNECT HOST:PORT; or straight to HOST:PORT), does TLS with SNI and Host
 * NAME and then, until SECONDS have passed:
 *   keepalive  small GETs on one connection (req/s, p50, p99)
 *   newconn    one GET per connection, new TCP + CONNECT + TLS each time
 *   body       GETs of a large body on one connection (MB/s)
 *   idle       open IDLE connections (CONNECT + TLS + one GET), print
 *              "idle ready N", then hold them until FILE (-w) exists
 * Prints one line: mode=... reqs= secs= rps= p50_us= p99_us= mbps= errors=
 * (MB = 2^20 bytes). -U sends Proxy-Authorization: Basic BASE64 on the
 * CONNECT; -A (repeatable) adds a header field to every GET. -k skips the certificate check (blind tunnels to a
 * name the certificate does not carry are not used: keep it off).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define HEAD_MAX	(64 * 1024)
#define LAT_MAX		(8 * 1024 * 1024)	/* latency samples kept per thread */
#define IO_TIMEOUT_S	30

enum mode { M_KEEPALIVE, M_NEWCONN, M_BODY, M_IDLE };

static struct {
	const char	*target;	/* CONNECT target / direct address */
	const char	*name;		/* SNI and Host */
	const char	*host;		/* Host header, if not name */
	const char	*proxy;
	const char	*auth;		/* base64 of ID:SECRET */
	const char	*hdr;		/* one more header field of each GET */
	const char	*path;
	const char	*cafile;
	const char	*waitfile;
	enum mode	 mode;
	int		 conns;
	int		 seconds;
	int		 idle;
	int		 insecure;
	SSL_CTX		*ctx;
	double		 deadline;
} opt;

struct worker {
	pthread_t	 th;
	uint32_t	*lat;		/* microseconds */
	size_t		 nlat, caplat;
	uint64_t	 bytes;
	uint64_t	 reqs;
	uint64_t	 errors;
	int		 nidle;		/* idle mode: connections to open */
	int		*fds;
	SSL		**ssls;
	int		 nheld;
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static int
split_hostport(const char *s, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *c = strrchr(s, ':');
	size_t hl;

	if (c == NULL)
		return -1;
	hl = (size_t)(c - s);
	if (hl == 0 || hl >= hostlen || strlen(c + 1) >= portlen || c[1] == '\0')
		return -1;
	memcpy(host, s, hl);
	host[hl] = '\0';
	memcpy(port, c + 1, strlen(c + 1) + 1);
	return 0;
}

static int
tcp_connect(const char *hostport)
{
	struct addrinfo hints, *res = NULL, *ai;
	char host[256], port[16];
	struct timeval tv = { IO_TIMEOUT_S, 0 };
	int fd = -1, one = 1;

	if (split_hostport(hostport, host, sizeof(host), port, sizeof(port)) == -1)
		return -1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -1;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if ((fd = socket(ai->ai_family, ai->ai_socktype, 0)) == -1)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd == -1)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

static int
write_all_fd(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Sends CONNECT and reads the reply head byte by byte (so no TLS byte is eaten). */
static int
proxy_connect(int fd)
{
	char req[1024], head[4096];
	size_t n = 0;
	int len;

	len = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s%s%s\r\n",
	    opt.target, opt.target, opt.auth ? "Proxy-Authorization: Basic " : "",
	    opt.auth ? opt.auth : "", opt.auth ? "\r\n" : "");
	if (len < 0 || (size_t)len >= sizeof(req) || write_all_fd(fd, req, (size_t)len) == -1)
		return -1;
	while (n < sizeof(head) - 1) {
		ssize_t r = read(fd, head + n, 1);

		if (r <= 0)
			return -1;
		n++;
		if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	head[n] = '\0';
	if (strncmp(head, "HTTP/1.1 200", 12) != 0 && strncmp(head, "HTTP/1.0 200", 12) != 0)
		return -1;
	return 0;
}

/* Opens one connection (TCP, CONNECT, TLS). Returns the SSL or NULL. */
static SSL *
open_conn(int *fdp)
{
	SSL *ssl = NULL;
	int fd;

	*fdp = -1;
	if ((fd = tcp_connect(opt.proxy ? opt.proxy : opt.target)) == -1)
		return NULL;
	if (opt.proxy != NULL && proxy_connect(fd) == -1)
		goto fail;
	if ((ssl = SSL_new(opt.ctx)) == NULL)
		goto fail;
	SSL_set_fd(ssl, fd);
	SSL_set_tlsext_host_name(ssl, opt.name);
	if (!opt.insecure && SSL_set1_host(ssl, opt.name) != 1)
		goto fail;
	if (SSL_connect(ssl) != 1)
		goto fail;
	*fdp = fd;
	return ssl;
fail:
	SSL_free(ssl);
	close(fd);
	return NULL;
}

static void
close_conn(SSL *ssl, int fd)
{
	if (ssl != NULL) {
		SSL_shutdown(ssl);
		SSL_free(ssl);
	}
	if (fd != -1)
		close(fd);
}

static int
ssl_write_all(SSL *ssl, const char *p, size_t n)
{
	while (n > 0) {
		int w = SSL_write(ssl, p, (int)n);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* A buffered reader over one TLS connection (one response at a time). */
struct rd {
	SSL	*ssl;
	char	*buf;
	size_t	 sz, pos, have;
};

static int
rd_fill(struct rd *r)
{
	int n;

	if (r->pos > 0) {
		memmove(r->buf, r->buf + r->pos, r->have - r->pos);
		r->have -= r->pos;
		r->pos = 0;
	}
	if (r->have >= r->sz - 1)
		return -1;
	if ((n = SSL_read(r->ssl, r->buf + r->have, (int)(r->sz - 1 - r->have))) <= 0)
		return -1;
	r->have += (size_t)n;
	r->buf[r->have] = '\0';
	return 0;
}

/* Next line (up to LF) as a NUL-terminated string in the buffer. */
static char *
rd_line(struct rd *r)
{
	char *nl, *l;

	while ((nl = memchr(r->buf + r->pos, '\n', r->have - r->pos)) == NULL)
		if (rd_fill(r) == -1)
			return NULL;
	l = r->buf + r->pos;
	*nl = '\0';
	r->pos = (size_t)(nl + 1 - r->buf);
	return l;
}

static int
rd_skip(struct rd *r, long long n)
{
	while (n > 0) {
		size_t avail = r->have - r->pos;

		if (avail == 0) {
			r->pos = r->have = 0;
			if (rd_fill(r) == -1)
				return -1;
			continue;
		}
		if ((long long)avail > n)
			avail = (size_t)n;
		r->pos += avail;
		n -= (long long)avail;
	}
	return 0;
}

/* Reads one 200 response; returns body bytes or -1. Content-Length or chunked. */
static long long
read_response(SSL *ssl, char *buf, size_t bufsz, int *closed)
{
	struct rd r = { ssl, buf, bufsz, 0, 0 };
	long long clen = -1, body = 0;
	int chunked = 0, first = 1;
	char *l;

	*closed = 0;
	for (;;) {
		if ((l = rd_line(&r)) == NULL)
			return -1;
		if (first) {
			if (strncmp(l, "HTTP/1.", 7) != 0 || strncmp(l + 9, "200", 3) != 0)
				return -1;
			first = 0;
			continue;
		}
		if (l[0] == '\r' || l[0] == '\0')
			break;
		if (strncasecmp(l, "content-length:", 15) == 0)
			clen = strtoll(l + 15, NULL, 10);
		else if (strncasecmp(l, "transfer-encoding:", 18) == 0 && strstr(l, "chunked"))
			chunked = 1;
		else if (strncasecmp(l, "connection:", 11) == 0 && strstr(l, "close"))
			*closed = 1;
	}
	if (!chunked) {
		if (clen < 0 || rd_skip(&r, clen) == -1)
			return -1;
		return clen;
	}
	for (;;) {
		long long csz;

		if ((l = rd_line(&r)) == NULL)
			return -1;
		csz = strtoll(l, NULL, 16);
		if (csz < 0)
			return -1;
		if (csz == 0) {
			/* trailers until the empty line */
			while ((l = rd_line(&r)) != NULL && l[0] != '\r' && l[0] != '\0')
				;
			return l == NULL ? -1 : body;
		}
		if (rd_skip(&r, csz + 2) == -1)
			return -1;
		body += csz;
	}
}

static void
lat_add(struct worker *w, double us)
{
	if (w->nlat == w->caplat) {
		size_t nc = w->caplat ? w->caplat * 2 : 4096;
		uint32_t *n;

		if (nc > LAT_MAX)
			return;
		if ((n = realloc(w->lat, nc * sizeof(*n))) == NULL)
			return;
		w->lat = n;
		w->caplat = nc;
	}
	w->lat[w->nlat++] = us > 4e9 ? 4000000000u : (uint32_t)us;
}

static void *
run_worker(void *arg)
{
	struct worker *w = arg;
	char req[1024];
	char *buf;
	size_t bufsz = 256 * 1024;
	SSL *ssl = NULL;
	int fd = -1, len, closed;

	if ((buf = malloc(bufsz)) == NULL)
		return NULL;
	len = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: connect_load\r\n%s%s%s\r\n",
	    opt.path, opt.host ? opt.host : opt.name, opt.mode == M_NEWCONN ? "Connection: close\r\n" : "",
	    opt.hdr ? opt.hdr : "", opt.hdr ? "\r\n" : "");
	if (len < 0 || (size_t)len >= sizeof(req))
		goto out;
	if (opt.mode == M_IDLE) {
		int i;

		for (i = 0; i < w->nidle; i++) {
			if ((ssl = open_conn(&fd)) == NULL ||
			    ssl_write_all(ssl, req, (size_t)len) == -1 ||
			    read_response(ssl, buf, bufsz, &closed) < 0) {
				w->errors++;
				close_conn(ssl, fd);
				ssl = NULL;
				continue;
			}
			w->fds[w->nheld] = fd;
			w->ssls[w->nheld++] = ssl;
			ssl = NULL;
		}
		goto out;
	}
	while (now() < opt.deadline) {
		double t0 = now();
		long long n;

		if (ssl == NULL && (ssl = open_conn(&fd)) == NULL) {
			w->errors++;
			usleep(10000);
			continue;
		}
		if (ssl_write_all(ssl, req, (size_t)len) == -1 ||
		    (n = read_response(ssl, buf, bufsz, &closed)) < 0) {
			w->errors++;
			close_conn(ssl, fd);
			ssl = NULL;
			continue;
		}
		if (opt.mode == M_NEWCONN || closed) {
			close_conn(ssl, fd);
			ssl = NULL;
		}
		w->reqs++;
		w->bytes += (uint64_t)n;
		lat_add(w, (now() - t0) * 1e6);
	}
out:
	close_conn(ssl, ssl ? fd : -1);
	free(buf);
	return NULL;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void
usage(void)
{
	fprintf(stderr, "usage: connect_load -t HOST:PORT -n NAME [-H HOST] [-x PROXY:PORT [-U base64(ID:SECRET)]]\n"
	    "  [-m keepalive|newconn|body|idle] [-c CONNS] [-d SECONDS] [-p PATH] [-C CAFILE] [-k]\n"
	    "  [-N IDLE -w FILE] [-A 'NAME: VALUE']\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct worker *ws;
	uint32_t *all = NULL;
	size_t nall = 0, k;
	uint64_t reqs = 0, bytes = 0, errors = 0;
	double t0, secs, cpu;
	struct rusage ru;
	int ch, i;
	const char *mode = "keepalive";

	opt.conns = 8;
	opt.seconds = 5;
	opt.path = "/small";
	while ((ch = getopt(argc, argv, "t:n:H:x:U:A:m:c:d:p:C:kN:w:")) != -1) {
		switch (ch) {
		case 't': opt.target = optarg; break;
		case 'n': opt.name = optarg; break;
		case 'H': opt.host = optarg; break;
		case 'x': opt.proxy = optarg; break;
		case 'U': opt.auth = optarg; break;
		case 'A':	/* repeatable: the fields joined by CRLF */
			if (opt.hdr == NULL)
				opt.hdr = optarg;
			else {
				char *j;

				if (asprintf(&j, "%s\r\n%s", opt.hdr, optarg) == -1)
					usage();
				opt.hdr = j;	/* lives as long as the process */
			}
			break;
		case 'm': mode = optarg; break;
		case 'c': if (parse_int(optarg, 1, 4096, &opt.conns) == -1) usage(); break;
		case 'd': if (parse_int(optarg, 1, 3600, &opt.seconds) == -1) usage(); break;
		case 'p': opt.path = optarg; break;
		case 'C': opt.cafile = optarg; break;
		case 'k': opt.insecure = 1; break;
		case 'N': if (parse_int(optarg, 1, 1000000, &opt.idle) == -1) usage(); break;
		case 'w': opt.waitfile = optarg; break;
		default: usage();
		}
	}
	if (opt.target == NULL || opt.name == NULL)
		usage();
	if (strcmp(mode, "keepalive") == 0)
		opt.mode = M_KEEPALIVE;
	else if (strcmp(mode, "newconn") == 0)
		opt.mode = M_NEWCONN;
	else if (strcmp(mode, "body") == 0)
		opt.mode = M_BODY;
	else if (strcmp(mode, "idle") == 0 && opt.idle > 0 && opt.waitfile != NULL)
		opt.mode = M_IDLE;
	else
		usage();

	if ((opt.ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		return 1;
	SSL_CTX_set_session_cache_mode(opt.ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(opt.ctx, SSL_OP_NO_TICKET);
	if (opt.insecure)
		SSL_CTX_set_verify(opt.ctx, SSL_VERIFY_NONE, NULL);
	else {
		SSL_CTX_set_verify(opt.ctx, SSL_VERIFY_PEER, NULL);
		if (opt.cafile != NULL ? SSL_CTX_load_verify_locations(opt.ctx, opt.cafile, NULL) != 1 :
		    SSL_CTX_set_default_verify_paths(opt.ctx) != 1) {
			fprintf(stderr, "connect_load: cannot load CA\n");
			return 1;
		}
	}
	if (opt.mode == M_IDLE) {
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if ((ws = calloc((size_t)opt.conns, sizeof(*ws))) == NULL)
		return 1;
	t0 = now();
	opt.deadline = t0 + opt.seconds;
	for (i = 0; i < opt.conns; i++) {
		if (opt.mode == M_IDLE) {
			ws[i].nidle = opt.idle / opt.conns + (i < opt.idle % opt.conns);
			ws[i].fds = calloc((size_t)ws[i].nidle + 1, sizeof(int));
			ws[i].ssls = calloc((size_t)ws[i].nidle + 1, sizeof(SSL *));
			if (ws[i].fds == NULL || ws[i].ssls == NULL)
				return 1;
		}
		if (pthread_create(&ws[i].th, NULL, run_worker, &ws[i]) != 0)
			return 1;
	}
	for (i = 0; i < opt.conns; i++)
		pthread_join(ws[i].th, NULL);
	secs = now() - t0;
	if (opt.mode == M_IDLE) {
		int held = 0, j;
		struct stat st;

		for (i = 0; i < opt.conns; i++) {
			held += ws[i].nheld;
			errors += ws[i].errors;
		}
		printf("idle ready %d errors=%llu\n", held, (unsigned long long)errors);
		fflush(stdout);
		while (stat(opt.waitfile, &st) == -1)
			usleep(50000);
		for (i = 0; i < opt.conns; i++)
			for (j = 0; j < ws[i].nheld; j++)
				close_conn(ws[i].ssls[j], ws[i].fds[j]);
		return 0;
	}
	for (i = 0; i < opt.conns; i++) {
		reqs += ws[i].reqs;
		bytes += ws[i].bytes;
		errors += ws[i].errors;
		nall += ws[i].nlat;
	}
	if (nall > 0 && (all = malloc(nall * sizeof(*all))) == NULL)
		return 1;
	for (i = 0, k = 0; i < opt.conns; i++) {
		if (ws[i].nlat > 0)
			memcpy(all + k, ws[i].lat, ws[i].nlat * sizeof(*all));
		k += ws[i].nlat;
		free(ws[i].lat);
	}
	if (nall > 0)
		qsort(all, nall, sizeof(*all), cmp_u32);
	getrusage(RUSAGE_SELF, &ru);
	cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	printf("mode=%s reqs=%llu secs=%.2f rps=%.0f p50_us=%u p99_us=%u mbps=%.1f errors=%llu"
	    " client_cpu_us=%.0f\n",
	    mode, (unsigned long long)reqs, secs, (double)reqs / secs,
	    nall ? all[nall / 2] : 0, nall ? all[(size_t)((double)nall * 0.99)] : 0,
	    (double)bytes / secs / 1048576.0, (unsigned long long)errors,
	    reqs > 0 ? cpu / (double)reqs : 0.0);
	free(all);
	free(ws);
	SSL_CTX_free(opt.ctx);
	return 0;
}
