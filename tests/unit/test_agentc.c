/* test_agentc.c: the agent client against a scripted server on a unix socket. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/agentc.h"
#include "buf.h"
#include "unit.h"

/* What the server does for each accepted connection. */
struct script {
	const char	*resp[4];	/* responses sent, one per request read */
	size_t		 nresp;
	int		 close_after;	/* close after sending all responses */
	int		 sleep_ms;	/* before answering */
	size_t		 big;		/* >0: send a body of this many bytes */
	char		 got[8192];	/* first request seen */
};

static char sockpath[108];
static int lfd = -1;
static struct script *cur;

/*
 * Reads one whole request (head, then Content-Length bytes of body) into rb:
 * the client may send head and body in separate writes.
 */
static ssize_t
read_request(int c, char *rb, size_t size)
{
	size_t have = 0, want = 0;
	ssize_t n;
	char *eoh, *cl;

	for (;;) {
		n = recv(c, rb + have, size - 1 - have, 0);
		if (n <= 0)
			return have > 0 ? (ssize_t)have : n;
		have += (size_t)n;
		rb[have] = '\0';
		if ((eoh = strstr(rb, "\r\n\r\n")) == NULL) {
			if (have == size - 1)
				return (ssize_t)have;
			continue;
		}
		want = (size_t)(eoh + 4 - rb);
		if ((cl = strstr(rb, "Content-Length: ")) != NULL && cl < eoh)
			want += strtoul(cl + 16, NULL, 10);
		if (have >= want || have == size - 1)
			return (ssize_t)have;
	}
}

static void *
serve(void *arg)
{
	struct script *s = arg;
	char rb[8192];
	size_t i;
	int c;

	if ((c = accept(lfd, NULL, NULL)) == -1)
		return NULL;
	for (i = 0; i < s->nresp || (s->big && i == 0); i++) {
		ssize_t n = read_request(c, rb, sizeof(rb));
		if (n <= 0)
			break;
		if (i == 0)
			memcpy(s->got, rb, (size_t)n + 1);
		if (s->sleep_ms)
			usleep((useconds_t)s->sleep_ms * 1000);
		if (s->big) {
			char hdr[128], *chunk = calloc(1, 65536);
			size_t left = s->big;
			int hl = snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\n"
			    "Content-Length: %zu\r\n\r\n", s->big);
			memset(chunk, 'x', 65536);
			(void)send(c, hdr, (size_t)hl, MSG_NOSIGNAL);
			while (left > 0) {
				size_t k = left < 65536 ? left : 65536;
				if (send(c, chunk, k, MSG_NOSIGNAL) <= 0)
					break;
				left -= k;
			}
			free(chunk);
			break;
		}
		(void)send(c, s->resp[i], strlen(s->resp[i]), MSG_NOSIGNAL);
	}
	if (s->close_after || s->big)
		close(c);
	else {
		/* wait for the client to go away */
		while (recv(c, rb, sizeof(rb), 0) > 0)
			;
		close(c);
	}
	return NULL;
}

static pthread_t th;

static struct agentc *
start(struct script *s)
{
	struct rt_agent_addr a;
	char err[256];
	struct agentc *ac;

	cur = s;
	pthread_create(&th, NULL, serve, s);
	memset(&a, 0, sizeof(a));
	memcpy(a.unix_path, sockpath, strlen(sockpath) + 1);
	snprintf(a.token, sizeof(a.token), "tok123");
	ac = agentc_open(&a, 2000, err, sizeof(err));
	if (ac == NULL)
		fprintf(stderr, "open: %s\n", err);
	return ac;
}

static void
finish(struct agentc *ac)
{
	agentc_close(ac);
	pthread_join(th, NULL);
}

TEST(test_simple)
{
	struct script s = { .resp = { "HTTP/1.1 200 OK\r\nContent-Type: "
	    "application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}" },
	    .nresp = 1 };
	struct agentc *ac = start(&s);
	struct buf b;
	char err[256];
	int st;

	buf_init(&b, 1 << 20);
	CHECK(ac != NULL);
	CHECK(agentc_request(ac, "POST", "/v1/shell", "application/json",
	    "{\"command\":\"true\"}", 18, 2000, &st, &b, err, sizeof(err)) == 0);
	CHECK_INT(st, 200);
	CHECK_STR(b.p, "{\"ok\":true}");
	CHECK(strstr(s.got, "POST /v1/shell HTTP/1.1\r\n") == s.got);
	CHECK(strstr(s.got, "Authorization: Bearer tok123\r\n") != NULL);
	CHECK(strstr(s.got, "Content-Length: 18\r\n") != NULL);
	CHECK(strstr(s.got, "\r\n\r\n{\"command\":\"true\"}") != NULL);
	finish(ac);
	buf_free(&b);
}

TEST(test_keepalive_chunked)
{
	struct script s = { .resp = {
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
	    "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno" },
	    .nresp = 2 };
	struct agentc *ac = start(&s);
	struct buf b;
	char err[256];
	int st;

	buf_init(&b, 1 << 20);
	CHECK(agentc_request(ac, "GET", "/v1/health", NULL, NULL, 0, 2000, &st,
	    &b, err, sizeof(err)) == 0);
	CHECK_INT(st, 200);
	CHECK_STR(b.p, "abcde");
	CHECK(agentc_request(ac, "GET", "/v1/jobs/x", NULL, NULL, 0, 2000, &st,
	    &b, err, sizeof(err)) == 0);
	CHECK_INT(st, 404);
	CHECK_STR(b.p, "no");
	finish(ac);
	buf_free(&b);
}

TEST(test_close_delimited_and_reconnect)
{
	struct script s = { .resp = { "HTTP/1.1 200 OK\r\nConnection: close\r\n"
	    "\r\nuntil-eof" }, .nresp = 1, .close_after = 1 };
	struct script s2 = { .resp = { "HTTP/1.1 204 No Content\r\n\r\n" },
	    .nresp = 1 };
	struct agentc *ac = start(&s);
	struct buf b;
	char err[256];
	int st;

	buf_init(&b, 1 << 20);
	CHECK(agentc_request(ac, "GET", "/a", NULL, NULL, 0, 2000, &st, &b,
	    err, sizeof(err)) == 0);
	CHECK_INT(st, 200);
	CHECK_STR(b.p, "until-eof");
	pthread_join(th, NULL);
	/* the client reconnects by itself after Connection: close */
	pthread_create(&th, NULL, serve, &s2);
	CHECK(agentc_request(ac, "GET", "/b", NULL, NULL, 0, 2000, &st, &b,
	    err, sizeof(err)) == 0);
	CHECK_INT(st, 204);
	CHECK_INT(b.len, 0);
	finish(ac);
	buf_free(&b);
}

TEST(test_bad_responses)
{
	static const char *bad[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"garbage\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
		"",
	};
	size_t i;

	for (i = 0; i < NELEM(bad); i++) {
		struct script s = { .resp = { bad[i] }, .nresp = 1,
		    .close_after = 1 };
		struct agentc *ac = start(&s);
		struct buf b;
		char err[256] = "";
		int st;

		buf_init(&b, 1 << 20);
		CHECK(agentc_request(ac, "GET", "/x", NULL, NULL, 0, 2000, &st,
		    &b, err, sizeof(err)) == -1);
		CHECK(err[0] != '\0');
		finish(ac);
		buf_free(&b);
	}
}

TEST(test_cap_and_timeout)
{
	struct script s = { .big = 3 << 20 };
	struct script s2 = { .resp = { "HTTP/1.1 200 OK\r\nContent-Length: 0"
	    "\r\n\r\n" }, .nresp = 1, .sleep_ms = 600, .close_after = 1 };
	struct agentc *ac = start(&s);
	struct buf b;
	char err[256] = "";
	int st;

	buf_init(&b, 1 << 20);	/* caller's cap: 1 MiB */
	CHECK(agentc_request(ac, "GET", "/big", NULL, NULL, 0, 5000, &st, &b,
	    err, sizeof(err)) == -1);
	CHECK(strstr(err, "larger than") != NULL);
	finish(ac);
	ac = start(&s2);
	CHECK(agentc_request(ac, "GET", "/slow", NULL, NULL, 0, 200, &st, &b,
	    err, sizeof(err)) == -1);
	CHECK(strstr(err, "timed out") != NULL);
	finish(ac);
	buf_free(&b);
}

TEST(test_hostile_request_args)
{
	struct script s = { .resp = { "HTTP/1.1 200 OK\r\nContent-Length: 0"
	    "\r\n\r\n" }, .nresp = 1 };
	struct agentc *ac = start(&s);
	struct buf b;
	char err[256];
	int st;

	buf_init(&b, 1 << 20);
	CHECK(agentc_request(ac, "GET", "/x\r\nEvil: 1", NULL, NULL, 0, 1000,
	    &st, &b, err, sizeof(err)) == -1);
	CHECK(agentc_request(ac, "GET", "/x y", NULL, NULL, 0, 1000,
	    &st, &b, err, sizeof(err)) == -1);
	CHECK(agentc_request(ac, "GET", "x", NULL, NULL, 0, 1000,
	    &st, &b, err, sizeof(err)) == -1);
	CHECK(agentc_request(ac, "GET", "/x", "a\nb", NULL, 0, 1000,
	    &st, &b, err, sizeof(err)) == -1);
	/* still usable after refusals */
	CHECK(agentc_request(ac, "GET", "/ok", NULL, NULL, 0, 1000,
	    &st, &b, err, sizeof(err)) == 0);
	finish(ac);
	buf_free(&b);
}

TEST(test_connect_fail)
{
	struct rt_agent_addr a;
	char err[256];

	memset(&a, 0, sizeof(a));
	snprintf(a.unix_path, sizeof(a.unix_path), "/nonexistent/agent.sock");
	CHECK(agentc_open(&a, 500, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "agent") != NULL);
	memset(&a, 0, sizeof(a));
	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	a.port = 1;	/* nothing listens there */
	CHECK(agentc_open(&a, 500, err, sizeof(err)) == NULL);
	a.port = 0;
	CHECK(agentc_open(&a, 500, err, sizeof(err)) == NULL);
}

/* The socket's directory belongs to the sandbox: a symlink planted there
 * must never lead the client to another (host) socket. */
TEST(test_symlink_refused)
{
	struct rt_agent_addr a;
	char err[256], link[128], file[128];
	int fd;

	snprintf(link, sizeof(link), "%s.link", sockpath);
	snprintf(file, sizeof(file), "%s.file", sockpath);
	unlink(link);
	CHECK(symlink(sockpath, link) == 0);
	memset(&a, 0, sizeof(a));
	memcpy(a.unix_path, link, strlen(link) + 1);
	CHECK(agentc_open(&a, 500, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "not a socket") != NULL);
	fd = open(file, O_CREAT | O_WRONLY, 0600);
	close(fd);
	memcpy(a.unix_path, file, strlen(file) + 1);
	CHECK(agentc_open(&a, 500, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "not a socket") != NULL);
	unlink(link);
	unlink(file);
}

int
main(void)
{
	struct sockaddr_un sun;

	snprintf(sockpath, sizeof(sockpath), "/tmp/test_agentc.%d.sock",
	    (int)getpid());
	unlink(sockpath);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, sockpath, strlen(sockpath) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd == -1 || bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(lfd, 8) == -1) {
		perror("listen");
		return 1;
	}
	RUN(test_simple);
	RUN(test_keepalive_chunked);
	RUN(test_close_delimited_and_reconnect);
	RUN(test_bad_responses);
	RUN(test_cap_and_timeout);
	RUN(test_hostile_request_args);
	RUN(test_connect_fail);
	RUN(test_symlink_refused);
	close(lfd);
	unlink(sockpath);
	return unit_done();
}
