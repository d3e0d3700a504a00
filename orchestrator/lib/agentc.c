/*
 * agentc.c: blocking HTTP/1.1 client for the in-sandbox agent
 * (docs/internals/agent-protocol.md). One connection per struct agentc,
 * kept alive between requests; replies read by common/h1head.c (a head
 * framed by h1_head_end and read by llhttp strict with h1.c's rules, the
 * body through the same parser) like every other HTTP/1 peer's, since the
 * agent runs where the sandbox's code is root; bodies capped at
 * AGENTC_MAX_RESP, every exchange bounded by a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <strings.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/util.h>
#include <llhttp.h>

#include "agentc.h"
#include "h1.h"
#include "h1head.h"
#include "xmalloc.h"
#include "util.h"

#define AGENTC_MAX_HEAD	8192	/* request line + headers we send */
/*
 * The agent's reply head: at most this many bytes (h1_head_end), which is
 * also request_once's read buffer (the head is read into it, then each
 * piece of the body), and this many field lines.
 */
#define AGENTC_RESP_HEAD	16384
#define AGENTC_RESP_FIELDS	64

struct agentc {
	struct rt_agent_addr	 addr;
	int			 fd;
	int			 connect_ms;
	unsigned long		 nreq;	/* requests done on this fd */
	int			 delivered;	/* the last request was sent whole */
};

/* The body sink of one response (request_once). */
struct resp_ctx {
	struct buf	*body;
	int		 overflow;	/* body exceeded the cap */
};

static int
left_ms(long long deadline)
{
	long long l = deadline - util_mono_ms();

	if (l < 0)
		return 0;
	if (l > 0x7fffffff)
		return 0x7fffffff;
	return (int)l;
}

#define CANCEL_TICK_MS	50

/*
 * Waits for events on fd until deadline: 1 ready, 0 timeout, -1 error
 * (errno ECANCELED: the call's cancel flag, cx, was raised).
 */
static int
wait_fd(int fd, short ev, long long deadline, const struct agentc_cancel *cx)
{
	const atomic_int *cancel_flag = cx != NULL ? cx->flag : NULL;
	struct pollfd pfd;
	long long seen = 0;
	int r, ms;

	for (;;) {
		pfd.fd = fd;
		pfd.events = ev;
		pfd.revents = 0;
		ms = left_ms(deadline);
		if (cancel_flag != NULL) {
			if (atomic_load(cancel_flag)) {
				if (seen == 0)
					seen = util_mono_ms();
				if (util_mono_ms() - seen >= cx->grace_ms) {
					errno = ECANCELED;
					return -1;
				}
			}
			if (ms > CANCEL_TICK_MS)
				ms = CANCEL_TICK_MS;
		}
		r = poll(&pfd, 1, ms);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return -1;
		if (r == 0 && cancel_flag != NULL && left_ms(deadline) > 0)
			continue;
		return r > 0 ? 1 : 0;
	}
}

static int
connect_wait(int s, const struct sockaddr *sa, socklen_t salen,
    long long deadline, const struct agentc_cancel *cx, char *err,
    size_t errlen)
{
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	int r;

	if (connect(s, sa, salen) == 0)
		return 0;
	if (errno != EINPROGRESS && errno != EAGAIN) {
		snprintf(err, errlen, "connect: %s", strerror(errno));
		return -1;
	}
	r = wait_fd(s, POLLOUT, deadline, cx);
	if (r == 0) {
		snprintf(err, errlen, "connect: timed out");
		return -1;
	}
	if (r == -1 || getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1) {
		snprintf(err, errlen, "connect: %s", strerror(errno));
		return -1;
	}
	if (soerr != 0) {
		snprintf(err, errlen, "connect: %s", strerror(soerr));
		return -1;
	}
	return 0;
}

static int
dial(struct agentc *ac, const struct agentc_cancel *cx, char *err,
    size_t errlen)
{
	long long deadline = util_mono_ms() + ac->connect_ms;
	char e[200];
	int s = -1;

	if (ac->addr.unix_path[0] != '\0') {
		struct sockaddr_un sun;
		struct stat st;
		int pfd;
		size_t n = strnlen(ac->addr.unix_path, sizeof(ac->addr.unix_path));

		if (n >= sizeof(sun.sun_path)) {
			snprintf(err, errlen, "agent socket path too long");
			return -1;
		}
		/*
		 * The socket lives in a directory the sandbox can write: never
		 * follow a symlink it may have put there (it would point us at
		 * a host socket). Open the inode itself and connect through
		 * /proc/self/fd.
		 */
		pfd = open(ac->addr.unix_path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (pfd == -1) {
			snprintf(err, errlen, "agent %s: %s", ac->addr.unix_path,
			    strerror(errno));
			return -1;
		}
		if (fstat(pfd, &st) == -1 || !S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "agent %s: not a socket",
			    ac->addr.unix_path);
			close(pfd);
			return -1;
		}
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d",
		    pfd);
		s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (s == -1) {
			snprintf(err, errlen, "socket: %s", strerror(errno));
			close(pfd);
			return -1;
		}
		if (connect_wait(s, (struct sockaddr *)&sun, sizeof(sun),
		    deadline, cx, e, sizeof(e)) == -1) {
			snprintf(err, errlen, "agent %s: %s", ac->addr.unix_path, e);
			close(s);
			close(pfd);
			return -1;
		}
		close(pfd);
	} else {
		struct addrinfo hints, *res = NULL, *ai;
		char port[16];
		int one = 1, gr;

		if (ac->addr.host[0] == '\0' || ac->addr.port <= 0 ||
		    ac->addr.port > 65535) {
			snprintf(err, errlen, "agent address not set");
			return -1;
		}
		snprintf(port, sizeof(port), "%d", ac->addr.port);
		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_NUMERICSERV;
		if ((gr = getaddrinfo(ac->addr.host, port, &hints, &res)) != 0) {
			snprintf(err, errlen, "agent %s: %s", ac->addr.host,
			    gai_strerror(gr));
			return -1;
		}
		snprintf(e, sizeof(e), "no address");
		for (ai = res; ai != NULL; ai = ai->ai_next) {
			s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
			    SOCK_NONBLOCK, ai->ai_protocol);
			if (s == -1)
				continue;
			if (connect_wait(s, ai->ai_addr, ai->ai_addrlen, deadline,
			    cx, e, sizeof(e)) == 0)
				break;
			close(s);
			s = -1;
		}
		freeaddrinfo(res);
		if (s == -1) {
			snprintf(err, errlen, "agent %s:%d: %s", ac->addr.host,
			    ac->addr.port, e);
			return -1;
		}
		(void)setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	ac->fd = s;
	ac->nreq = 0;
	return 0;
}

struct agentc *
agentc_open(const struct rt_agent_addr *addr, int timeout_ms, char *err,
    size_t errlen)
{
	struct agentc *ac;

	ac = xcalloc(1, sizeof(*ac));
	ac->addr = *addr;
	ac->addr.unix_path[sizeof(ac->addr.unix_path) - 1] = '\0';
	ac->addr.host[sizeof(ac->addr.host) - 1] = '\0';
	ac->addr.token[sizeof(ac->addr.token) - 1] = '\0';
	ac->fd = -1;
	ac->connect_ms = timeout_ms > 0 ? timeout_ms : 5000;
	if (dial(ac, NULL, err, errlen) == -1) {
		free(ac);
		return NULL;
	}
	return ac;
}

void
agentc_close(struct agentc *ac)
{
	if (ac == NULL)
		return;
	if (ac->fd != -1)
		close(ac->fd);
	explicit_bzero(ac->addr.token, sizeof(ac->addr.token));
	free(ac);
}

static int
resp_body(void *arg, const char *at, size_t len)
{
	struct resp_ctx *rc = arg;

	if (buf_add(rc->body, at, len) == -1) {
		rc->overflow = 1;
		return -1;
	}
	return 0;
}

/* 1 if s is safe to put on the request line or in a header value. */
static int
token_ok(const char *s, int allow_space)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f || (!allow_space && c == ' '))
			return 0;
	}
	return 1;
}

/*
 * Sends the head and the body with one sendmsg() where the socket takes
 * it all (the usual case: one segment, one wake-up of the agent), looping
 * over partial sends until the deadline.
 */
static int
send_all(int fd, const char *head, size_t headlen, const char *body, size_t bodylen,
    long long deadline, const struct agentc_cancel *cx, int *sent_any)
{
	struct iovec iov[2];
	struct msghdr mh;
	size_t n, k;
	ssize_t w;
	int r, i = 0, cnt = bodylen > 0 ? 2 : 1;

	iov[0].iov_base = (void *)head;
	iov[0].iov_len = headlen;
	iov[1].iov_base = (void *)body;
	iov[1].iov_len = bodylen;
	while (i < cnt && iov[i].iov_len == 0)
		i++;
	while (i < cnt) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov[i];
		mh.msg_iovlen = (size_t)(cnt - i);
		w = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (w > 0) {
			*sent_any = 1;
			for (n = (size_t)w; n > 0 && i < cnt; n -= k) {
				k = n < iov[i].iov_len ? n : iov[i].iov_len;
				iov[i].iov_base = (char *)iov[i].iov_base + k;
				iov[i].iov_len -= k;
				if (iov[i].iov_len == 0)
					i++;
			}
			while (i < cnt && iov[i].iov_len == 0)
				i++;
			continue;
		}
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			r = wait_fd(fd, POLLOUT, deadline, cx);
			if (r == 0) {
				errno = ETIMEDOUT;
				return -1;
			}
			if (r == -1)
				return -1;
			continue;
		}
		return -1;
	}
	return 0;
}

/*
 * One attempt on the current connection. *retry is set when the peer closed
 * a reused keep-alive connection before answering a single byte, which is
 * the one case where sending again is safe. The reply is one message: a
 * 1xx is taken as the whole of it (the agent never sends one, since no
 * request says Expect), and bytes after its end in the same read are an
 * error.
 */
static int
request_once(struct agentc *ac, const char *head, size_t headlen,
    const char *body, size_t bodylen, long long deadline,
    const struct agentc_cancel *cx, int *status, struct buf *resp, int *retry,
    char *err, size_t errlen)
{
	struct h1head hd;
	struct resp_ctx rc;
	char in[AGENTC_RESP_HEAD], e[200];
	const char *p;
	size_t got = 0, have = 0, k;
	long end = H1_HEAD_MORE, used;
	ssize_t n;
	int sent_any = 0, r, en, ret = -1;

	*retry = 0;
	if (send_all(ac->fd, head, headlen, body, bodylen, deadline, cx,
	    &sent_any) == 0)
		ac->delivered = 1;
	else {
		en = errno;
		if (ac->nreq > 0 && (en == EPIPE || en == ECONNRESET))
			*retry = 1;
		snprintf(err, errlen, "agent: send: %s", en == ETIMEDOUT ?
		    "timed out" : strerror(en));
		return -1;
	}

	h1head_init(&hd, AGENTC_RESP_HEAD);
	memset(&rc, 0, sizeof(rc));
	rc.body = resp;
	hd.on_body = resp_body;
	hd.arg = &rc;
	for (;;) {
		/* the head gathers at the start of in; then each read of the body */
		n = recv(ac->fd, in + have, sizeof(in) - have, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			r = wait_fd(ac->fd, POLLIN, deadline, cx);
			if (r == 0) {
				snprintf(err, errlen, "agent: timed out waiting "
				    "for the response");
				goto out;
			}
			if (r == -1) {
				snprintf(err, errlen, "agent: poll: %s",
				    strerror(errno));
				goto out;
			}
			continue;
		}
		if (n == -1) {
			en = errno;
			if (got == 0 && ac->nreq > 0 && en == ECONNRESET)
				*retry = 1;
			snprintf(err, errlen, "agent: recv: %s", strerror(en));
			goto out;
		}
		if (n == 0) {
			if (got == 0) {
				if (ac->nreq > 0)
					*retry = 1;
				snprintf(err, errlen, "agent closed the "
				    "connection without a response");
				goto out;
			}
			if (end > 0 && h1head_finish(&hd) == 0)
				break;		/* a body delimited by the close */
			snprintf(err, errlen, "agent: truncated response");
			goto out;
		}
		got += (size_t)n;
		p = in;
		k = (size_t)n;
		if (end <= 0) {
			have += (size_t)n;
			if ((end = h1_head_end(in, have, sizeof(in))) == H1_HEAD_MORE)
				continue;
			if (end == H1_HEAD_LARGE) {
				snprintf(err, errlen, "agent: response head larger "
				    "than %zu bytes", sizeof(in));
				goto out;
			}
			if (end < 0 || h1head_parse(&hd, HTTP_RESPONSE, in,
			    (size_t)end, AGENTC_RESP_FIELDS, e, sizeof(e)) != 0) {
				snprintf(err, errlen, "agent: bad response: %s",
				    end < 0 ? "malformed head" : e);
				goto out;
			}
			p = in + end;
			k = have - (size_t)end;
			have = 0;
		}
		used = hd.msg_done || k == 0 ? 0 : h1head_body(&hd, p, k);
		if (used < 0) {
			if (rc.overflow)
				snprintf(err, errlen, "agent: response larger "
				    "than %zu bytes", resp->max);
			else
				snprintf(err, errlen, "agent: bad response: %s "
				    "(%s)", llhttp_errno_name(llhttp_get_errno(&hd.p)),
				    llhttp_get_error_reason(&hd.p) != NULL ?
				    llhttp_get_error_reason(&hd.p) : "");
			goto out;
		}
		if (hd.msg_done) {
			if ((size_t)used != k) {
				snprintf(err, errlen, "agent: unexpected bytes "
				    "after the response");
				goto out;
			}
			break;
		}
	}
	*status = hd.status;
	ac->nreq++;
	if (!hd.keepalive) {
		close(ac->fd);
		ac->fd = -1;
	}
	ret = 0;
out:
	h1head_free(&hd);
	return ret;
}

int
agentc_request(struct agentc *ac, const char *method, const char *path,
    const char *ctype, const char *body, size_t bodylen, int timeout_ms,
    int *status, struct buf *resp, char *err, size_t errlen)
{
	return agentc_request_cx(ac, method, path, ctype, body, bodylen,
	    timeout_ms, NULL, status, resp, err, errlen);
}

int
agentc_request_cx(struct agentc *ac, const char *method, const char *path,
    const char *ctype, const char *body, size_t bodylen, int timeout_ms,
    const struct agentc_cancel *cx, int *status, struct buf *resp, char *err,
    size_t errlen)
{
	char head[AGENTC_MAX_HEAD];
	long long deadline;
	int n, retry = 0, attempt, rc = -1;

	*status = 0;
	ac->delivered = 0;
	if (resp->max == 0 || resp->max > (size_t)AGENTC_MAX_RESP)
		resp->max = (size_t)AGENTC_MAX_RESP;
	if (method == NULL || path == NULL || *method == '\0' ||
	    path[0] != '/' || !token_ok(method, 0) || !token_ok(path, 0) ||
	    (ctype != NULL && !token_ok(ctype, 1)) ||
	    !token_ok(ac->addr.token, 0)) {
		snprintf(err, errlen, "agent: invalid request line or header");
		return -1;
	}
	if (body == NULL)
		bodylen = 0;
	n = snprintf(head, sizeof(head),
	    "%s %s HTTP/1.1\r\n"
	    "Host: sandbox-agent\r\n"
	    "User-Agent: agentc\r\n"
	    "Accept: application/json\r\n"
	    "%s%s%s"
	    "%s%s%s"
	    "Content-Length: %zu\r\n"
	    "\r\n",
	    method, path,
	    ctype != NULL ? "Content-Type: " : "", ctype != NULL ? ctype : "",
	    ctype != NULL ? "\r\n" : "",
	    ac->addr.token[0] != '\0' ? "Authorization: Bearer " : "",
	    ac->addr.token, ac->addr.token[0] != '\0' ? "\r\n" : "",
	    bodylen);
	if (n < 0 || (size_t)n >= sizeof(head)) {
		snprintf(err, errlen, "agent: request head too long");
		return -1;
	}
	deadline = util_mono_ms() + (timeout_ms > 0 ? timeout_ms : 30000);
	for (attempt = 0; attempt < 2; attempt++) {
		if (ac->fd == -1 && dial(ac, cx, err, errlen) == -1)
			break;
		buf_reset(resp);
		if (request_once(ac, head, (size_t)n, body, bodylen, deadline,
		    cx, status, resp, &retry, err, errlen) == 0) {
			rc = 0;
			break;
		}
		if (ac->fd != -1)
			close(ac->fd);
		ac->fd = -1;
		if (!retry)
			break;
	}
	explicit_bzero(head, sizeof(head));
	return rc;
}

int
agentc_delivered(const struct agentc *ac)
{
	return ac->delivered;
}

/* ---- the per-sandbox connection cache ---- */

void
agentc_cache_init(struct agentc_cache *cc)
{
	memset(cc, 0, sizeof(*cc));
	pthread_mutex_init(&cc->mu, NULL);
}

void
agentc_cache_clear(struct agentc_cache *cc)
{
	int i;

	pthread_mutex_lock(&cc->mu);
	for (i = 0; i < cc->n; i++)
		agentc_close(cc->v[i].c);
	cc->n = 0;
	pthread_mutex_unlock(&cc->mu);
}

void
agentc_cache_destroy(struct agentc_cache *cc)
{
	agentc_cache_clear(cc);
	pthread_mutex_destroy(&cc->mu);
}

struct agentc *
agentc_cache_get(struct agentc_cache *cc, const struct rt_agent_addr *addr,
    int connect_ms, int *cached, char *err, size_t errlen)
{
	struct agentc *c = NULL;
	long long now = util_mono_ms();

	pthread_mutex_lock(&cc->mu);
	while (cc->n > 0) {
		cc->n--;
		if (now - cc->v[cc->n].used_ms > AGENTC_CACHE_IDLE_MS) {
			agentc_close(cc->v[cc->n].c);
			continue;
		}
		c = cc->v[cc->n].c;
		break;
	}
	pthread_mutex_unlock(&cc->mu);
	*cached = c != NULL;
	if (c == NULL)
		c = agentc_open(addr, connect_ms, err, errlen);
	return c;
}

void
agentc_cache_put(struct agentc_cache *cc, struct agentc *c)
{
	pthread_mutex_lock(&cc->mu);
	if (cc->n < AGENTC_CACHE_MAX) {
		cc->v[cc->n].c = c;
		cc->v[cc->n].used_ms = util_mono_ms();
		cc->n++;
		c = NULL;
	}
	pthread_mutex_unlock(&cc->mu);
	if (c != NULL)
		agentc_close(c);
}

/* ---- the /v1/env body ---- */

cJSON *
agentc_env_body(const char *lines)
{
	cJSON *body = cJSON_CreateObject(), *set;
	const char *l, *v;
	size_t n, klen;
	char *k, *val;

	set = cJSON_AddObjectToObject(body, "set");
	for (l = lines; *l != '\0'; l += n + (l[n] == '\n')) {
		n = strcspn(l, "\n");
		if ((v = util_kv_find(l, n, &klen)) == NULL)
			continue;
		k = xstrndup(l, klen);
		val = xstrndup(v, n - klen - 1);
		cJSON_AddStringToObject(set, k, val);
		explicit_bzero(val, strlen(val));	/* may be a credential */
		free(val);
		free(k);
	}
	if (cJSON_GetArraySize(set) == 0) {
		cJSON_Delete(body);
		return NULL;
	}
	return body;
}

/* ---- streamed exchanges on the event loop (agentc.h, "agentx") ---- */

#define AGENTX_HDRS_MAX	(16 * 1024)	/* the response head, bytes (h1_head_end) */
#define AGENTX_HDRS_FIELDS	64		/* and its field lines */
#define AGENTX_OUT_LOW	(256 * 1024)	/* request bytes queued: drain below */
/*
 * One read of the agent's reply. Not a bufferevent: libevent 2.1's
 * evbuffer_read takes at most 4096 bytes a call, which made a download
 * 25600 loop turns (readv, ioctl, epoll_ctl, callbacks) per 100 MiB and
 * capped it near 250 MiB/s. A unix socket holds about 200 KiB: one read
 * takes what is there.
 */
#define AGENTX_READ	(256 * 1024)

struct agentx {
	int			 fd;
	struct event		*rev, *wev;
	struct evbuffer		*out;		/* request bytes not yet sent */
	char			*in;		/* one read (AGENTX_READ) */
	size_t			 have;		/* head bytes gathered at in's start */
	struct h1head		 hd;		/* the reply: head, then its body */
	struct agentx_cb	 cb;
	void			*arg;
	int			 chunked;	/* the request body is */
	int			 status;
	unsigned		 headed:1, finished:1, closed:1, busy:1,
				 paused:1;
};

static void
agentx_free(struct agentx *x)
{
	if (x->rev != NULL)
		event_free(x->rev);
	if (x->wev != NULL)
		event_free(x->wev);
	if (x->out != NULL)
		evbuffer_free(x->out);
	if (x->fd != -1)
		close(x->fd);
	h1head_free(&x->hd);
	free(x->in);
	free(x);
}

static void
agentx_finish(struct agentx *x, int ok, const char *why)
{
	if (x->finished || x->closed)
		return;
	x->finished = 1;
	event_del(x->rev);
	event_del(x->wev);
	x->cb.done(x, ok, why, x->arg);
}

static int
ax_body(void *arg, const char *at, size_t n)
{
	struct agentx *x = arg;

	x->cb.data(x, at, n, x->arg);
	return x->closed ? -1 : 0;
}

/*
 * The reply's head, gathered at the start of in: x->have bytes so far, n
 * more now. Where its body's bytes start in in (> 0) once it is whole
 * and read (cb.head told), 0 while it is not whole, -1 when the exchange
 * is over (a malformed head, or the head callback closed it).
 */
static long
ax_head(struct agentx *x, size_t n)
{
	char err[200];
	long end;

	x->have += n;
	if ((end = h1_head_end(x->in, x->have, AGENTX_HDRS_MAX)) == H1_HEAD_MORE)
		return 0;
	if (end < 0 || h1head_parse(&x->hd, HTTP_RESPONSE, x->in, (size_t)end,
	    AGENTX_HDRS_FIELDS, err, sizeof(err)) != 0) {
		agentx_finish(x, 0, "the agent's reply is malformed");
		return -1;
	}
	x->status = x->hd.status;
	x->headed = 1;
	x->cb.head(x, x->status, x->arg);
	return x->closed ? -1 : end;
}

/* The connection ended (eof 1) or failed: the reply is over, or broken. */
static void
ax_end(struct agentx *x, int eof)
{
	if (eof && x->headed && h1head_finish(&x->hd) == 0)
		agentx_finish(x, 1, NULL);	/* a body ended by the close */
	agentx_finish(x, 0, "the agent closed the connection mid-reply");
}

/*
 * One read, parsed whole (a pause takes effect at the next read: at most
 * AGENTX_READ arrives after it), then back to the loop so the client's
 * side writes what it got.
 */
static void
ax_read(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct agentx *x = arg;
	const char *p = x->in;
	ssize_t n;
	long off;
	size_t k;

	x->busy = 1;
	n = read(x->fd, x->in + x->have, AGENTX_READ - x->have);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		goto out;
	if (n <= 0) {
		ax_end(x, n == 0);
		goto out;
	}
	k = (size_t)n;
	if (!x->headed) {
		if ((off = ax_head(x, k)) <= 0)
			goto out;
		p = x->in + off;
		k = x->have - (size_t)off;
		x->have = 0;
	}
	/* bytes after the reply's end are left unread: it is over */
	if (!x->hd.msg_done && k > 0 && h1head_body(&x->hd, p, k) == -1) {
		agentx_finish(x, 0, "the agent's reply is malformed");
		goto out;
	}
	if (x->hd.msg_done)
		agentx_finish(x, 1, NULL);
out:
	x->busy = 0;
	if (x->closed)
		agentx_free(x);
}

static void
ax_write(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct agentx *x = arg;
	size_t left;

	if (evbuffer_write(x->out, x->fd) == -1 && errno != EAGAIN &&
	    errno != EINTR) {
		x->busy = 1;
		ax_end(x, 0);
		x->busy = 0;
		if (x->closed)
			agentx_free(x);
		return;
	}
	if ((left = evbuffer_get_length(x->out)) == 0)
		event_del(x->wev);
	if (x->cb.drain == NULL || x->finished || left > AGENTX_OUT_LOW)
		return;
	x->busy = 1;
	x->cb.drain(x, x->arg);
	x->busy = 0;
	if (x->closed)
		agentx_free(x);
}

struct agentx *
agentx_start(struct event_base *base, struct agentc *ac, const char *method,
    const char *target, const char *ctype, long long body_len,
    const struct agentx_cb *cb, void *arg, char *err, size_t errlen)
{
	struct agentx *x;
	int fd;

	if (!token_ok(method, 0) || !token_ok(target, 0) ||
	    (ctype != NULL && !token_ok(ctype, 1)) || target[0] != '/') {
		snprintf(err, errlen, "agent: invalid request line or header");
		agentc_close(ac);
		return NULL;
	}
	if (ac->fd == -1 && dial(ac, NULL, err, errlen) == -1) {
		agentc_close(ac);
		return NULL;
	}
	fd = ac->fd;
	ac->fd = -1;
	if (evutil_make_socket_nonblocking(fd) == -1) {
		snprintf(err, errlen, "agent: fcntl: %s", strerror(errno));
		close(fd);
		agentc_close(ac);
		return NULL;
	}
	x = xcalloc(1, sizeof(*x));
	x->fd = fd;
	x->cb = *cb;
	x->arg = arg;
	h1head_init(&x->hd, AGENTX_HDRS_MAX);
	x->hd.on_body = ax_body;
	x->hd.arg = x;
	x->in = xmalloc(AGENTX_READ);
	x->out = evbuffer_new();
	x->rev = event_new(base, fd, EV_READ | EV_PERSIST, ax_read, x);
	x->wev = event_new(base, fd, EV_WRITE | EV_PERSIST, ax_write, x);
	if (x->out == NULL || x->rev == NULL || x->wev == NULL) {
		agentx_free(x);
		agentc_close(ac);
		snprintf(err, errlen, "agent: out of memory for its events");
		return NULL;
	}
	x->chunked = body_len == -1;
	evbuffer_add_printf(x->out, "%s %s HTTP/1.1\r\nHost: sandbox-agent\r\n"
	    "User-Agent: agentc\r\nConnection: close\r\n", method, target);
	if (ctype != NULL)
		evbuffer_add_printf(x->out, "Content-Type: %s\r\n", ctype);
	if (ac->addr.token[0] != '\0' && token_ok(ac->addr.token, 0))
		evbuffer_add_printf(x->out, "Authorization: Bearer %s\r\n",
		    ac->addr.token);
	if (body_len == -1)
		evbuffer_add_printf(x->out, "Transfer-Encoding: chunked\r\n\r\n");
	else
		evbuffer_add_printf(x->out, "Content-Length: %lld\r\n\r\n",
		    body_len < 0 ? 0 : body_len);
	agentc_close(ac);
	event_add(x->rev, NULL);
	event_add(x->wev, NULL);
	return x;
}

void
agentx_body(struct agentx *x, const char *p, size_t n)
{
	ssize_t k;

	if (n == 0 || x->finished)
		return;
	if (!x->chunked && evbuffer_get_length(x->out) == 0) {
		/* Nothing queued: straight to the socket, only what it does
		 * not take is copied (an error shows at ax_write) */
		k = write(x->fd, p, n);
		if (k > 0) {
			p += k;
			n -= (size_t)k;
		}
		if (n == 0)
			return;
	}
	if (x->chunked)
		evbuffer_add_printf(x->out, "%zx\r\n", n);
	evbuffer_add(x->out, p, n);
	if (x->chunked)
		evbuffer_add(x->out, "\r\n", 2);
	event_add(x->wev, NULL);
}

void
agentx_body_end(struct agentx *x)
{
	if (x->chunked && !x->finished) {
		evbuffer_add(x->out, "0\r\n\r\n", 5);
		event_add(x->wev, NULL);
	}
}

size_t
agentx_body_pending(const struct agentx *x)
{
	return evbuffer_get_length(x->out);
}

int
agentx_body_full(const struct agentx *x)
{
	return agentx_body_pending(x) >= AGENTX_OUT_HIGH;
}

void
agentx_pause(struct agentx *x, int paused)
{
	if (x->finished || x->closed || x->paused == (paused != 0))
		return;
	x->paused = paused != 0;
	if (paused)
		event_del(x->rev);
	else
		event_add(x->rev, NULL);	/* nothing read waits: see ax_read */
}

int
agentx_status(const struct agentx *x)
{
	return x->status;
}

const char *
agentx_hdr(const struct agentx *x, const char *name)
{
	return x->headed ? h1head_get(&x->hd, name, NULL) : NULL;
}

void
agentx_close(struct agentx *x)
{
	if (x == NULL || x->closed)
		return;
	x->closed = 1;
	if (!x->busy)
		agentx_free(x);
}
