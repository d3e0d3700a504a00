/*
 * appd.c: the app of the gateway benchmark (tests/bench/gateway/run.sh).
 * One thread, epoll, non-blocking sockets, built with `cc -O2 -static` so it
 * runs inside a sandbox of any image:
 *
 *   appd PORT [BIND]          (BIND default 127.0.0.1)
 *
 * HTTP/1.1 keep-alive (pipelined requests answered in order):
 *   GET /big   an 8 MiB body (Content-Length), written from one static buffer
 *   GET /ws    WebSocket (RFC 6455): frames echoed unmasked, ping -> pong,
 *              close -> close; frames over APPD_FRAME_MAX close the connection
 *   any other  a small fixed 200 response ("ok\n")
 * Request bodies (Content-Length) are read and dropped; chunked requests,
 * heads over APPD_HEAD_MAX and other garbage close the connection. Prints
 * "appd: listening on BIND:PORT" when ready.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "wsutil.h"

#define APPD_HEAD_MAX	(16 * 1024)	/* read buffer: a head or a frame */
#define APPD_FRAME_MAX	(APPD_HEAD_MAX - 14)
#define APPD_OUT_MAX	(1024 * 1024)	/* queued output before we stop reading */
#define APPD_BIG	(8u << 20)
#define APPD_EVENTS	256

static const char small_resp[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n";
static char big_head[128];
static size_t big_head_len;
static char *big_body;

struct conn {
	int		 fd;
	int		 ws;		/* upgraded */
	int		 closing;	/* close once the output is out */
	uint32_t	 armed;		/* the epoll events registered */
	size_t		 skip;		/* request body bytes still to drop */
	size_t		 rlen;
	char		 rbuf[APPD_HEAD_MAX];
	char		*out;		/* queued output (heads, echoes) */
	size_t		 outlen, outoff, outcap;
	size_t		 bigleft;	/* bytes of big_body still to send after out */
};

static int ep;

static void
conn_free(struct conn *c)
{
	close(c->fd);
	free(c->out);
	free(c);
}

static int
queue(struct conn *c, const void *p, size_t n)
{
	if (c->outoff > 0 && c->outoff == c->outlen)
		c->outoff = c->outlen = 0;
	if (c->outlen + n > c->outcap) {
		size_t cap = c->outcap ? c->outcap : 4096;
		char *np;
		while (cap < c->outlen + n)
			cap *= 2;
		if ((np = realloc(c->out, cap)) == NULL)
			return -1;
		c->out = np;
		c->outcap = cap;
	}
	memcpy(c->out + c->outlen, p, n);
	c->outlen += n;
	return 0;
}

static size_t
pending(const struct conn *c)
{
	return c->outlen - c->outoff + c->bigleft;
}

/* Finds header NAME (case-insensitive) in the head h[0..n); its value and length. */
static const char *
header(const char *h, size_t n, const char *name, size_t *vl)
{
	size_t nl = strlen(name);
	const char *p = memchr(h, '\n', n), *end = h + n;

	while (p != NULL && p + 1 < end) {
		const char *ln = p + 1, *eol = memchr(ln, '\n', (size_t)(end - ln));
		if (eol == NULL)
			eol = end;
		if ((size_t)(eol - ln) > nl && ln[nl] == ':' && strncasecmp(ln, name, nl) == 0) {
			const char *v = ln + nl + 1, *ve = eol;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			*vl = (size_t)(ve - v);
			return v;
		}
		p = eol < end ? eol : NULL;
	}
	return NULL;
}

/* One complete request head h[0..n) (n includes the blank line). 0 or -1 (close). */
static int
request(struct conn *c, const char *h, size_t n)
{
	const char *sp, *v;
	size_t vl;
	char acc[29];

	if ((sp = memchr(h, ' ', n)) == NULL)
		return -1;
	if (header(h, n, "Transfer-Encoding", &vl) != NULL)
		return -1;
	if ((v = header(h, n, "Content-Length", &vl)) != NULL) {
		char num[24];
		if (vl == 0 || vl >= sizeof(num))
			return -1;
		memcpy(num, v, vl);
		num[vl] = '\0';
		c->skip = strtoull(num, NULL, 10);
	}
	if ((v = header(h, n, "Connection", &vl)) != NULL && vl == 5 && strncasecmp(v, "close", 5) == 0)
		c->closing = 1;
	if (strncmp(sp + 1, "/ws ", 4) == 0 || strncmp(sp + 1, "/ws?", 4) == 0) {
		const char *k = header(h, n, "Sec-WebSocket-Key", &vl);
		char resp[160];
		if (k == NULL)
			return -1;
		ws_accept(k, vl, acc);
		snprintf(resp, sizeof(resp), "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		    "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", acc);
		c->ws = 1;
		return queue(c, resp, strlen(resp));
	}
	if (strncmp(sp + 1, "/big ", 5) == 0 || strncmp(sp + 1, "/big?", 5) == 0) {
		if (queue(c, big_head, big_head_len) == -1)
			return -1;
		c->bigleft = APPD_BIG;
		return 0;
	}
	return queue(c, small_resp, sizeof(small_resp) - 1);
}

/* Echoes the complete frames in rbuf. Consumed bytes, or -1 (close). */
static ssize_t
frames(struct conn *c)
{
	size_t off = 0;

	while (c->rlen - off >= 2) {
		unsigned char *f = (unsigned char *)c->rbuf + off;
		size_t avail = c->rlen - off, hl = 2, len = f[1] & 0x7f, i;
		unsigned char hdr[10], *mask, *pl;
		int op = f[0] & 0x0f;

		if (!(f[1] & 0x80))
			return -1;
		if (len == 126) {
			if (avail < 4)
				break;
			len = (size_t)f[2] << 8 | f[3];
			hl = 4;
		} else if (len == 127) {
			return -1;		/* never below APPD_FRAME_MAX */
		}
		if (len > APPD_FRAME_MAX)
			return -1;
		if (avail < hl + 4 + len)
			break;
		mask = f + hl;
		pl = mask + 4;
		for (i = 0; i < len; i++)
			pl[i] ^= mask[i & 3];
		hdr[0] = (unsigned char)(op == 0x9 ? 0x8A : f[0]);
		if (len < 126) {
			hdr[1] = (unsigned char)len;
			hl = 2;
		} else {
			hdr[1] = 126;
			hdr[2] = (unsigned char)(len >> 8);
			hdr[3] = (unsigned char)len;
			hl = 4;
		}
		if (op == 0xA) {		/* pong: nothing */
		} else if (queue(c, hdr, hl) == -1 || queue(c, pl, len) == -1) {
			return -1;
		}
		off += (size_t)(pl + len - f);
		if (op == 0x8) {
			c->closing = 1;
			break;
		}
	}
	return (ssize_t)off;
}

/* Handles what rbuf holds. 0, or -1 (close now). */
static int
process(struct conn *c)
{
	for (;;) {
		if (c->skip > 0) {
			size_t k = c->skip < c->rlen ? c->skip : c->rlen;
			memmove(c->rbuf, c->rbuf + k, c->rlen - k);
			c->rlen -= k;
			c->skip -= k;
			if (c->skip > 0)
				return 0;
		}
		if (c->closing || c->bigleft > 0 || pending(c) > APPD_OUT_MAX)
			return 0;	/* the rest once the output is out */
		if (c->ws) {
			ssize_t k = frames(c);
			if (k == -1)
				return -1;
			memmove(c->rbuf, c->rbuf + k, c->rlen - (size_t)k);
			c->rlen -= (size_t)k;
			return 0;
		}
		{
			char *e = memmem(c->rbuf, c->rlen, "\r\n\r\n", 4);
			size_t n;
			if (e == NULL)
				return c->rlen == sizeof(c->rbuf) ? -1 : 0;
			n = (size_t)(e + 4 - c->rbuf);
			if (request(c, c->rbuf, n) == -1)
				return -1;
			memmove(c->rbuf, c->rbuf + n, c->rlen - n);
			c->rlen -= n;
		}
	}
}

/* Writes what is queued. 0 (all out or EAGAIN), -1 (close). */
static int
flush_out(struct conn *c)
{
	while (pending(c) > 0) {
		struct iovec iv[2];
		int n = 0;
		ssize_t w;
		if (c->outlen > c->outoff) {
			iv[n].iov_base = c->out + c->outoff;
			iv[n++].iov_len = c->outlen - c->outoff;
		}
		if (c->bigleft > 0) {
			iv[n].iov_base = big_body + (APPD_BIG - c->bigleft);
			iv[n++].iov_len = c->bigleft;
		}
		w = writev(c->fd, iv, n);
		if (w == -1)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		if ((size_t)w <= c->outlen - c->outoff) {
			c->outoff += (size_t)w;
		} else {
			w -= (ssize_t)(c->outlen - c->outoff);
			c->outoff = c->outlen;
			c->bigleft -= (size_t)w;
		}
	}
	return 0;
}

/* Registers what the connection waits for: input while it has room and
 * its output is below APPD_OUT_MAX (else a level-triggered EPOLLIN would
 * spin), output while some is queued. */
static void
arm(struct conn *c)
{
	uint32_t want = 0;
	struct epoll_event ev;

	if (c->rlen < sizeof(c->rbuf) && pending(c) <= APPD_OUT_MAX && !c->closing)
		want |= EPOLLIN;
	if (pending(c) > 0)
		want |= EPOLLOUT;
	if (want != c->armed) {
		ev.events = want;
		ev.data.ptr = c;
		c->armed = want;
		(void)epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
	}
}

static void
on_event(struct conn *c, uint32_t evs)
{
	if (evs & EPOLLERR)
		goto dead;
	if (evs & (EPOLLIN | EPOLLHUP)) {
		for (;;) {
			ssize_t r;
			if (c->rlen == sizeof(c->rbuf) || pending(c) > APPD_OUT_MAX)
				break;
			r = read(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen);
			if (r == 0)
				goto dead;
			if (r == -1) {
				if (errno == EAGAIN || errno == EINTR)
					break;
				goto dead;
			}
			c->rlen += (size_t)r;
			if (process(c) == -1)
				goto dead;
		}
	}
	for (;;) {
		if (flush_out(c) == -1)
			goto dead;
		if (pending(c) > 0)
			break;
		if (c->closing)
			goto dead;
		{
			size_t before = c->rlen;
			if (process(c) == -1)
				goto dead;
			if (pending(c) == 0 || c->rlen == before)
				break;
		}
	}
	arm(c);
	return;
dead:
	conn_free(c);
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct epoll_event evs[APPD_EVENTS], ev;
	struct rlimit rl;
	int lfd, one = 1;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: appd PORT [BIND]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	if ((big_body = malloc(APPD_BIG)) == NULL)
		return 1;
	for (size_t i = 0; i < APPD_BIG; i++)
		big_body[i] = (char)('a' + i % 26);
	big_head_len = (size_t)snprintf(big_head, sizeof(big_head), "HTTP/1.1 200 OK\r\n"
	    "Content-Type: application/octet-stream\r\nContent-Length: %u\r\n\r\n", APPD_BIG);
	{
		char *e;
		long port = strtol(argv[1], &e, 10);
		if (*argv[1] == '\0' || *e != '\0' || port < 1 || port > 65535) {
			fprintf(stderr, "appd: bad port\n");
			return 2;
		}
		sa.sin_port = htons((uint16_t)port);
	}
	if (inet_pton(AF_INET, argc == 3 ? argv[2] : "127.0.0.1", &sa.sin_addr) != 1) {
		fprintf(stderr, "appd: bad address\n");
		return 2;
	}
	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == -1 || listen(lfd, 4096) == -1) {
		perror("appd: listen");
		return 1;
	}
	if ((ep = epoll_create1(0)) == -1)
		return 1;
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) == -1)
		return 1;
	printf("appd: listening on %s:%s\n", argc == 3 ? argv[2] : "127.0.0.1", argv[1]);
	fflush(stdout);
	for (;;) {
		int n = epoll_wait(ep, evs, APPD_EVENTS, -1);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr != NULL) {
				on_event(evs[i].data.ptr, evs[i].events);
				continue;
			}
			for (;;) {
				int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
				struct conn *c;
				if (fd == -1) {
					if (errno == EMFILE || errno == ENFILE)
						usleep(10000);	/* no spin while out of fds */
					break;
				}
				(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				if ((c = calloc(1, sizeof(*c))) == NULL) {
					close(fd);
					continue;
				}
				c->fd = fd;
				c->armed = EPOLLIN;
				ev.events = EPOLLIN;
				ev.data.ptr = c;
				if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1) {
					conn_free(c);
					continue;
				}
			}
		}
	}
}
