/*
 * ctl.c: the control channel to the orchestrator (docs/internals/
 * gateway-control.md) and the route table it fills. The gateway connects
 * (unix socket or TCP), says hello, receives its routes, asks for a
 * connection per client connection that finds no idle upstream in its
 * route's pool (open) and reports which hosts carried traffic or hold an
 * open client connection (activity). A lost or misbehaving channel is
 * closed and reconnected with back-off (100 ms doubling to 5 s); routes
 * and open connections are kept meanwhile, new opens answer 503.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "gw.h"
#include "log.h"
#include "xmalloc.h"

#define CTL_LINE_MAX	65536
#define CTL_FDS_MAX	64		/* received fds waiting for their lines */
#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	5000

enum { CTL_DOWN, CTL_CONNECTING, CTL_HELLO, CTL_SYNCING, CTL_READY };

/* An open sent and not answered yet, with whom to tell. */
struct ctl_pending {
	TAILQ_ENTRY(ctl_pending) link;
	uint64_t	 id;
	ctl_open_cb	 cb;
	void		*arg;
};

static struct {
	int		 st;
	int		 fd;
	struct event	*rd, *wr, *retry, *act;
	struct evbuffer	*out;
	char		*in;		/* CTL_LINE_MAX + 1 */
	size_t		 inlen;
	int		 fds[CTL_FDS_MAX];
	size_t		 nfds;
	char		*token;
	long long	 backoff;
	uint64_t	 gen;		/* bumped at each welcome */
	uint64_t	 next_id;
	int		 tcp;
	TAILQ_HEAD(ctl_pendq, ctl_pending) pending;	/* opens sent, not answered */
	void		(*route_gone)(struct route *, void *);
	void		*route_gone_arg;
} K;

static struct log_rate ctl_rl;

static void ctl_connect(void);
static void ctl_drop(const char *why);

struct route *
ctl_route_find(const char *host)
{
	struct route *rt;

	for (rt = LIST_FIRST(&gw_state.routes); rt != NULL; rt = LIST_NEXT(rt, link))
		if (strcmp(rt->host, host) == 0)
			return rt;
	return NULL;
}

static void
route_remove(struct route *rt)
{
	K.route_gone(rt, K.route_gone_arg);
	upool_drain(rt);
	LIST_REMOVE(rt, link);
	free(rt);
}

int
ctl_ready(void)
{
	return K.st == CTL_READY;
}

static void
ctl_send(cJSON *j)
{
	char *s = cJSON_PrintUnformatted(j);

	if (s == NULL)
		return;
	evbuffer_add(K.out, s, strlen(s));
	evbuffer_add(K.out, "\n", 1);
	free(s);
	if (K.fd >= 0 && K.st != CTL_CONNECTING)
		event_add(K.wr, NULL);
}

uint64_t
ctl_open(const char *host, const char *token, ctl_open_cb cb, void *arg)
{
	struct ctl_pending *p;
	cJSON *j;

	if (K.st != CTL_READY)
		return 0;
	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "op", "open");
	cJSON_AddNumberToObject(j, "id", (double)++K.next_id);
	cJSON_AddStringToObject(j, "host", host);
	/* The orchestrator checks the token again (docs/internals/
	 * gateway-control.md): a gateway cannot open an app whose token it
	 * was not shown. */
	if (token != NULL && token[0] != '\0')
		cJSON_AddStringToObject(j, "token", token);
	ctl_send(j);
	cJSON_Delete(j);
	p = xcalloc(1, sizeof(*p));
	p->id = K.next_id;
	p->cb = cb;
	p->arg = arg;
	TAILQ_INSERT_TAIL(&K.pending, p, link);
	return K.next_id;
}

/* The pending open id, taken off the list (NULL: none, or cancelled). */
static struct ctl_pending *
pending_take(uint64_t id)
{
	struct ctl_pending *p;

	TAILQ_FOREACH(p, &K.pending, link)
		if (p->id == id) {
			TAILQ_REMOVE(&K.pending, p, link);
			return p;
		}
	return NULL;
}

void
ctl_cancel(uint64_t id)
{
	free(pending_take(id));	/* a late answer's fd is closed in on_open */
}

/* Every pending open answered with status and err (the channel went). */
static void
pending_fail_all(int status, const char *err)
{
	struct ctl_pending *p;

	while ((p = TAILQ_FIRST(&K.pending)) != NULL) {
		TAILQ_REMOVE(&K.pending, p, link);
		p->cb(p->arg, -1, NULL, status, 0, err);
		free(p);
	}
}

static void
close_fds(void)
{
	size_t i;

	for (i = 0; i < K.nfds; i++)
		close(K.fds[i]);
	K.nfds = 0;
}

/* The next queued fd, or -1. */
static int
take_fd(void)
{
	int fd;

	if (K.nfds == 0)
		return -1;
	fd = K.fds[0];
	memmove(K.fds, K.fds + 1, (K.nfds - 1) * sizeof(int));
	K.nfds--;
	return fd;
}

static const char *
jstr(const cJSON *j, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int
valid_sha(const char *s)
{
	size_t i;

	if (s == NULL || strlen(s) != 64)
		return 0;
	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* {"op":"route",...}: add or replace. -1 malformed. */
static int
on_route(const cJSON *j)
{
	const char *host = jstr(j, "host"), *sha = jstr(j, "token_sha256");
	const char *app = jstr(j, "app"), *sb = jstr(j, "sandbox"), *sess = jstr(j, "session");
	const cJSON *port = cJSON_GetObjectItemCaseSensitive(j, "port");
	const cJSON *pub = cJSON_GetObjectItemCaseSensitive(j, "public");
	char h[GW_HOST_MAX + 1];
	struct route *rt;
	int hp, p, ispub = cJSON_IsTrue(pub);

	if (host == NULL || auth_host_norm(host, strlen(host), h, sizeof(h), &hp) == -1 || hp != 0 ||
	    !cJSON_IsNumber(port) || port->valuedouble < 1 || port->valuedouble > 65535 ||
	    (!ispub && !valid_sha(sha)) || (sha != NULL && !valid_sha(sha)))
		return -1;
	p = (int)port->valuedouble;
	if ((rt = ctl_route_find(h)) != NULL) {
		/* A new token or another port: what was authenticated or connected goes. */
		if (strcmp(rt->sha, sha != NULL ? sha : "") != 0 || rt->port != p ||
		    rt->public != ispub)
			K.route_gone(rt, K.route_gone_arg);
		/* Any replacement: what was pooled under the old one goes. */
		upool_drain(rt);
		rt->epoch++;
	} else {
		rt = xcalloc(1, sizeof(*rt));
		LIST_INIT(&rt->conns);
		TAILQ_INIT(&rt->pool);
		snprintf(rt->host, sizeof(rt->host), "%s", h);
		LIST_INSERT_HEAD(&gw_state.routes, rt, link);
	}
	snprintf(rt->sha, sizeof(rt->sha), "%s", sha != NULL ? sha : "");
	snprintf(rt->app, sizeof(rt->app), "%s", app != NULL ? app : "");
	snprintf(rt->sandbox, sizeof(rt->sandbox), "%s", sb != NULL ? sb : "");
	snprintf(rt->session, sizeof(rt->session), "%s", sess != NULL ? sess : "");
	rt->port = p;
	rt->public = ispub;
	rt->gen = K.gen;
	log_debug("route host=%s port=%d%s", rt->host, rt->port, ispub ? " public" : "");
	return 0;
}

/* {"op":"open","id":N,...}: the answer to one of ours. -1 malformed. */
static int
on_open(const cJSON *j)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(j, "ok");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
	const cJSON *ra = cJSON_GetObjectItemCaseSensitive(j, "retry_after");
	const char *addr = jstr(j, "addr"), *err = jstr(j, "error");
	struct ctl_pending *p;
	int fd = -1, status, retry = 0;

	if (!cJSON_IsNumber(id) || id->valuedouble < 1)
		return -1;
	if (cJSON_IsTrue(ok)) {
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "fd"))) {
			if ((fd = take_fd()) == -1)
				return -1;	/* said fd, sent none */
		} else if (addr == NULL || strlen(addr) > 127)
			return -1;
		if ((p = pending_take((uint64_t)id->valuedouble)) == NULL) {
			if (fd >= 0)
				close(fd);	/* its connection went meanwhile */
			return 0;
		}
		p->cb(p->arg, fd, fd >= 0 ? NULL : addr, 0, 0, NULL);
		free(p);
		return 0;
	}
	status = cJSON_IsNumber(st) ? (int)st->valuedouble : 502;
	if (status != 401 && status != 404 && status != 502 && status != 503)
		status = 502;
	/* the sandbox is starting: come back in that many seconds (1-3600) */
	if (status == 503 && cJSON_IsNumber(ra))
		retry = ra->valuedouble < 1 ? 1 : ra->valuedouble > 3600 ? 3600 : (int)ra->valuedouble;
	if ((p = pending_take((uint64_t)id->valuedouble)) == NULL)
		return 0;
	p->cb(p->arg, -1, NULL, status, retry, err != NULL ? err : "the app cannot be reached");
	free(p);
	return 0;
}

/* One line from the orchestrator; -1: protocol error (the channel is dropped). */
static int
on_line(const char *line, size_t len)
{
	cJSON *j = cJSON_ParseWithLength(line, len);
	const char *op;
	struct route *rt, *nx;
	int rc = 0;
	char h[GW_HOST_MAX + 1];
	int hp;

	if (j == NULL || !cJSON_IsObject(j) || (op = jstr(j, "op")) == NULL) {
		cJSON_Delete(j);
		return -1;
	}
	if (K.st == CTL_HELLO) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "version");

		if (strcmp(op, "welcome") != 0 || !cJSON_IsNumber(v) || v->valuedouble != 1)
			rc = -1;
		else {
			K.st = CTL_SYNCING;
			K.gen++;
			K.backoff = BACKOFF_MIN_MS;
		}
	} else if (strcmp(op, "route") == 0)
		rc = on_route(j);
	else if (strcmp(op, "unroute") == 0) {
		const char *host = jstr(j, "host");

		if (host == NULL || auth_host_norm(host, strlen(host), h, sizeof(h), &hp) == -1)
			rc = -1;
		else if ((rt = ctl_route_find(h)) != NULL) {
			log_debug("unroute host=%s", rt->host);
			route_remove(rt);
		}
	} else if (strcmp(op, "synced") == 0 && K.st == CTL_SYNCING) {
		for (rt = LIST_FIRST(&gw_state.routes); rt != NULL; rt = nx) {
			nx = LIST_NEXT(rt, link);
			if (rt->gen != K.gen)
				route_remove(rt);
		}
		K.st = CTL_READY;
		log_info("control channel synced");
	} else if (strcmp(op, "open") == 0 && K.st == CTL_READY)
		rc = on_open(j);
	else if (strcmp(op, "ping") == 0) {
		/* Every message before it is applied: say so (unexpose_port
		 * waits for it, so the app answers 404 when the tool returns). */
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, "n");
		cJSON *p;

		if (!cJSON_IsNumber(n))
			rc = -1;
		else {
			p = cJSON_CreateObject();
			cJSON_AddStringToObject(p, "op", "pong");
			cJSON_AddNumberToObject(p, "n", n->valuedouble);
			ctl_send(p);
			cJSON_Delete(p);
		}
	}
	else if (strcmp(op, "open") == 0 || strcmp(op, "synced") == 0 ||
	    strcmp(op, "welcome") == 0)
		rc = -1;	/* out of order */
	else
		log_debug("control: op %.32s ignored", op);	/* a later version's */
	cJSON_Delete(j);
	return rc;
}

static void
rd_cb(evutil_socket_t fd, short ev, void *arg)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 16)];
	struct msghdr m;
	struct iovec iov;
	struct cmsghdr *cm;
	ssize_t r;
	char *nl;
	size_t off;

	(void)ev;
	(void)arg;
	memset(&m, 0, sizeof(m));
	iov.iov_base = K.in + K.inlen;
	iov.iov_len = CTL_LINE_MAX + 1 - K.inlen;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = K.tcp ? NULL : cbuf;
	m.msg_controllen = K.tcp ? 0 : sizeof(cbuf);
	r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	for (cm = K.tcp ? NULL : CMSG_FIRSTHDR(&m); cm != NULL; cm = CMSG_NXTHDR(&m, cm)) {
		size_t i, n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			int nfd;

			memcpy(&nfd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (K.nfds < CTL_FDS_MAX)
				K.fds[K.nfds++] = nfd;
			else
				close(nfd);
		}
	}
	if (r <= 0) {
		ctl_drop(r == 0 ? "closed by the orchestrator" : strerror(errno));
		return;
	}
	if (m.msg_flags & MSG_CTRUNC) {
		ctl_drop("descriptors truncated");
		return;
	}
	K.inlen += (size_t)r;
	off = 0;
	while ((nl = memchr(K.in + off, '\n', K.inlen - off)) != NULL) {
		size_t ll = (size_t)(nl - (K.in + off));

		if (ll > 0 && on_line(K.in + off, ll) == -1) {
			ctl_drop("protocol error");
			return;
		}
		off += ll + 1;
		if (K.fd < 0)
			return;
	}
	memmove(K.in, K.in + off, K.inlen - off);
	K.inlen -= off;
	if (K.inlen > CTL_LINE_MAX)
		ctl_drop("line longer than 64 KiB");
}

static void
send_hello(void)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "op", "hello");
	cJSON_AddNumberToObject(j, "version", 1);
	if (K.token != NULL)
		cJSON_AddStringToObject(j, "token", K.token);
	ctl_send(j);
	cJSON_Delete(j);
}

static void
wr_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)ev;
	(void)arg;
	if (K.st == CTL_CONNECTING) {
		int e = 0;
		socklen_t el = sizeof(e);

		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == -1 || e != 0) {
			errno = e;
			ctl_drop(strerror(e));
			return;
		}
		K.st = CTL_HELLO;
		event_add(K.rd, NULL);
		evbuffer_drain(K.out, evbuffer_get_length(K.out));
		send_hello();
		return;
	}
	if (evbuffer_write(K.out, fd) == -1 && errno != EAGAIN && errno != EINTR) {
		ctl_drop(strerror(errno));
		return;
	}
	if (evbuffer_get_length(K.out) > 0)
		event_add(K.wr, NULL);
}

static void
retry_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	ctl_connect();
}

/* Drops the channel: pending opens fail, a reconnect is scheduled. */
static void
ctl_drop(const char *why)
{
	struct timeval tv;
	long dropped;

	if (log_rate_ok(&ctl_rl, 3, 60000, &dropped))
		log_warnx("control channel to %s lost: %s (retrying in %lld ms; %ld similar suppressed)",
		    gw_state.c->ctl_socket != NULL ? gw_state.c->ctl_socket : gw_state.c->ctl_connect, why,
		    K.backoff, dropped);
	if (K.rd != NULL) {
		event_free(K.rd);
		event_free(K.wr);
		K.rd = K.wr = NULL;
	}
	if (K.fd >= 0)
		close(K.fd);
	K.fd = -1;
	K.st = CTL_DOWN;
	K.inlen = 0;
	close_fds();
	evbuffer_drain(K.out, evbuffer_get_length(K.out));
	pending_fail_all(503, "the orchestrator is unavailable");
	/* Unroutes cannot reach us now: no new client connection gets an app
	 * connection without the orchestrator (open ones are kept). */
	upool_drain_all();
	if (gw_state.shutting)
		return;
	tv.tv_sec = K.backoff / 1000;
	tv.tv_usec = (K.backoff % 1000) * 1000;
	event_add(K.retry, &tv);
	K.backoff *= 2;
	if (K.backoff > BACKOFF_MAX_MS)
		K.backoff = BACKOFF_MAX_MS;
}

static void
ctl_connect(void)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd;

	if (gw_state.c->ctl_socket != NULL) {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;

		memset(&ss, 0, sizeof(ss));
		un->sun_family = AF_UNIX;
		snprintf(un->sun_path, sizeof(un->sun_path), "%s", gw_state.c->ctl_socket);
		sl = sizeof(*un);
		K.tcp = 0;
	} else {
		if (conf_parse_addr(gw_state.c->ctl_connect, &ss, &sl) == -1) {
			/* a name: resolved (blocking, short) at each attempt */
			struct addrinfo hints, *ai;
			char host[256];
			const char *colon = strrchr(gw_state.c->ctl_connect, ':');
			size_t hl = (size_t)(colon - gw_state.c->ctl_connect);

			memset(&hints, 0, sizeof(hints));
			hints.ai_socktype = SOCK_STREAM;
			if (hl >= sizeof(host))
				hl = sizeof(host) - 1;
			memcpy(host, gw_state.c->ctl_connect, hl);
			host[hl] = '\0';
			if (getaddrinfo(host, colon + 1, &hints, &ai) != 0) {
				ctl_drop("cannot resolve control.connect");
				return;
			}
			memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
			sl = ai->ai_addrlen;
			freeaddrinfo(ai);
		}
		K.tcp = 1;
	}
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1) {
		ctl_drop(strerror(errno));
		return;
	}
	K.fd = fd;
	K.rd = event_new(gw_state.base, fd, EV_READ | EV_PERSIST, rd_cb, NULL);
	K.wr = event_new(gw_state.base, fd, EV_WRITE, wr_cb, NULL);
	K.st = CTL_CONNECTING;
	if (connect(fd, (struct sockaddr *)&ss, sl) == -1 && errno != EINPROGRESS) {
		ctl_drop(strerror(errno));
		return;
	}
	event_add(K.wr, NULL);
}

static void
act_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct route *rt;
	cJSON *j, *a;
	int n = 0;

	(void)fd;
	(void)ev;
	(void)arg;
	if (K.st != CTL_READY)
		return;
	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "op", "activity");
	a = cJSON_AddArrayToObject(j, "hosts");
	/* Traffic since the last message, or a client connection still open
	 * (an idle WebSocket, a keep-alive page): the sandbox is in use. So
	 * is one this gateway keeps idle app connections to: a request taken
	 * onto one of them makes no open, and no open wakes a frozen sandbox
	 * (docs/gateway.md, "Activity"): it stays awake until the pool
	 * empties (timeouts.upstream_idle). */
	for (rt = LIST_FIRST(&gw_state.routes); rt != NULL; rt = LIST_NEXT(rt, link)) {
		if (!rt->active && LIST_EMPTY(&rt->conns) && rt->npool == 0)
			continue;
		rt->active = 0;
		cJSON_AddItemToArray(a, cJSON_CreateString(rt->host));
		n++;
	}
	if (n > 0)
		ctl_send(j);
	cJSON_Delete(j);
}

void
ctl_start(const char *token, void (*route_gone)(struct route *, void *), void *arg)
{
	struct timeval tv = { gw_state.c->activity_ms / 1000, (gw_state.c->activity_ms % 1000) * 1000 };

	K.fd = -1;
	TAILQ_INIT(&K.pending);
	K.route_gone = route_gone;
	K.route_gone_arg = arg;
	K.in = xmalloc(CTL_LINE_MAX + 1);
	K.out = evbuffer_new();
	K.token = token != NULL ? xstrdup(token) : NULL;
	K.backoff = BACKOFF_MIN_MS;
	K.retry = evtimer_new(gw_state.base, retry_cb, NULL);
	K.act = event_new(gw_state.base, -1, EV_PERSIST, act_cb, NULL);
	event_add(K.act, &tv);
	ctl_connect();
}

void
ctl_stop(void)
{
	if (K.fd >= 0)
		close(K.fd);
	K.fd = -1;
	close_fds();
	while (!TAILQ_EMPTY(&K.pending))
		ctl_cancel(TAILQ_FIRST(&K.pending)->id);
}
