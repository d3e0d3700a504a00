/*
 * appctl.c: the control channel app gateways connect to
 * (docs/internals/gateway-control.md). The orchestrator listens, on a unix
 * socket (apps.control_socket: local gateways; connections to apps are
 * handed over as file descriptors) and/or TCP (apps.control_listen, with a
 * token: gateways in a cluster, which connect to the address they are
 * given). One thread per gateway connection reads its lines and sends its
 * route changes (gateways are few; a route diff is short). An open runs on
 * the orchestrator's work queue (lib/work.h), keyed by the gateway and at
 * most CTL_OPENS_MAX at once per gateway, because apps_open may block for
 * seconds while it wakes (thaws or starts) the sandbox: a slow open never
 * delays another, and replies go out in any order (the gateway matches
 * them on id). Lines are written whole under the gateway's send lock; the
 * struct gw is refcounted (its thread and each open in flight), and the
 * last holder closes the socket and frees it.
 *
 * What a gateway can do here is bounded on purpose: it learns the routes
 * (hosts, ports, token hashes) and can ask for a connection to an app whose
 * token it presents; it never gets the orchestrator's key, an agent socket
 * or a credential.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <cjson/cJSON.h>

#include "appctl.h"
#include "session/apps.h"
#include "buf.h"
#include "lib/work.h"
#include "lguard.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

#define CTL_MAX_LINE	(64 * 1024)	/* longer: the channel is closed */
#define CTL_HELLO_MS	5000
#define CTL_SEND_MS	5000		/* a gateway not reading: closed */
#define CTL_RESYNC_MS	1000		/* routes compared this often */
#define CTL_MAX_GATEWAYS 64
#define CTL_TOKEN_MAX	512
#define CTL_OPENS_MAX	256		/* opens of one gateway queued or running;
					 * beyond, 503 at once. A gateway asks
					 * once per client connection that finds
					 * no pooled upstream, and an open waits
					 * while its sandbox starts (seconds): room
					 * for a few dozen sandboxes starting with
					 * a browser's 6 connections each */

static struct {
	struct sessmgr	*m;
	const struct conf *c;
	int		 ufd, tfd;
	pthread_t	 uth, tth;
	int		 uth_on, tth_on;
	char		 token[CTL_TOKEN_MAX];
	size_t		 tokenlen;
	atomic_int	 stop;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	int		 nconn;
} ctl = { .ufd = -1, .tfd = -1, .mu = PTHREAD_MUTEX_INITIALIZER,
	  .cv = PTHREAD_COND_INITIALIZER };

struct gw {
	int			 fd;
	int			 is_unix;
	atomic_int		 refs;		/* its thread + each open in flight */
	atomic_int		 closed;	/* the channel is over: opens skip */
	pthread_mutex_t		 smu;		/* one line at a time on fd */
	char			 key[32];	/* work queue key: "appctl:<n>" */
	int			 wake[2];
	struct apps_watch	*w;
	char			 peer[64];
	char			*in;
	size_t			 inlen;
	struct app_route	*sent;
	size_t			 nsent;
	unsigned long long	 pinged;
};

/*
 * One line (o as JSON, then \n), fd attached when not -1, whole under the
 * send lock (the gateway's thread and its opens share the socket); waits
 * up to CTL_SEND_MS for room. 0 or -1.
 */
static int
send_line(struct gw *g, cJSON *o, int fd)
{
	char *txt = cJSON_PrintUnformatted(o);
	size_t len = strlen(txt), off = 0;
	ssize_t w;
	int rc = 0;

	txt = xreallocarray(txt, len + 2, 1);
	txt[len++] = '\n';
	txt[len] = '\0';
	pthread_mutex_lock(&g->smu);
	while (off < len) {
		if (fd != -1 && off == 0) {
			struct msghdr mh;
			struct iovec iov = { txt, len };
			union {
				char		buf[CMSG_SPACE(sizeof(int))];
				struct cmsghdr	align;
			} u;
			struct cmsghdr *cm;

			memset(&mh, 0, sizeof(mh));
			memset(&u, 0, sizeof(u));
			mh.msg_iov = &iov;
			mh.msg_iovlen = 1;
			mh.msg_control = u.buf;
			mh.msg_controllen = sizeof(u.buf);
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &fd, sizeof(int));
			w = sendmsg(g->fd, &mh, MSG_NOSIGNAL);
		} else
			w = send(g->fd, txt + off, len - off, MSG_NOSIGNAL);
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1 && errno == EAGAIN) {
			struct pollfd p = { g->fd, POLLOUT, 0 };

			if (poll(&p, 1, CTL_SEND_MS) == 1)
				continue;
		}
		if (w <= 0) {
			rc = -1;
			break;
		}
		off += (size_t)w;
	}
	pthread_mutex_unlock(&g->smu);
	free(txt);
	return rc;
}

/* Drops a reference; the last one closes the channel and frees g. */
static void
gw_unref(struct gw *g)
{
	if (atomic_fetch_sub(&g->refs, 1) != 1)
		return;
	close(g->fd);
	pthread_mutex_destroy(&g->smu);
	free(g);
	pthread_mutex_lock(&ctl.mu);
	ctl.nconn--;
	pthread_cond_broadcast(&ctl.cv);
	pthread_mutex_unlock(&ctl.mu);
}

static int
send_route(struct gw *g, const struct app_route *r)
{
	cJSON *o = cJSON_CreateObject();
	int rc;

	cJSON_AddStringToObject(o, "op", "route");
	cJSON_AddStringToObject(o, "host", r->host);
	cJSON_AddStringToObject(o, "app", r->app);
	cJSON_AddNumberToObject(o, "port", r->port);
	cJSON_AddStringToObject(o, "sandbox", r->sandbox);
	cJSON_AddStringToObject(o, "session", r->session);
	cJSON_AddStringToObject(o, "token_sha256", r->hash);
	cJSON_AddBoolToObject(o, "public", ctl.c->apps_public);
	rc = send_line(g, o, -1);
	cJSON_Delete(o);
	return rc;
}

static int
send_op(struct gw *g, const char *op, const char *k, const char *v,
    const char *nk, double n)
{
	cJSON *o = cJSON_CreateObject();
	int rc;

	cJSON_AddStringToObject(o, "op", op);
	if (k != NULL)
		cJSON_AddStringToObject(o, k, v);
	if (nk != NULL)
		cJSON_AddNumberToObject(o, nk, n);
	rc = send_line(g, o, -1);
	cJSON_Delete(o);
	return rc;
}

static int
route_same(const struct app_route *a, const struct app_route *b)
{
	return a->port == b->port && strcmp(a->hash, b->hash) == 0 &&
	    strcmp(a->sandbox, b->sandbox) == 0 &&
	    strcmp(a->session, b->session) == 0 && strcmp(a->app, b->app) == 0;
}

/*
 * Sends what changed since the last sync (both lists sorted by host), then
 * a ping with the change count the lists reflect, so apps_unexpose can wait
 * for the gateway's pong.
 */
static int
sync_routes(struct gw *g, int full)
{
	unsigned long long gnow = apps_gen();
	struct app_route *cur;
	size_t n = apps_routes(ctl.m, &cur), i = 0, j = 0;
	int rc = 0, c;

	if (full) {
		for (i = 0; i < n && rc == 0; i++)
			rc = send_route(g, &cur[i]);
		if (rc == 0)
			rc = send_op(g, "synced", NULL, NULL, NULL, 0);
	} else
		while (rc == 0 && (i < n || j < g->nsent)) {
			c = i == n ? 1 : j == g->nsent ? -1 :
			    strcmp(cur[i].host, g->sent[j].host);
			if (c < 0)
				rc = send_route(g, &cur[i++]);
			else if (c > 0)
				rc = send_op(g, "unroute", "host", g->sent[j++].host,
				    NULL, 0);
			else {
				if (!route_same(&cur[i], &g->sent[j]))
					rc = send_route(g, &cur[i]);
				i++;
				j++;
			}
		}
	free(g->sent);
	g->sent = cur;
	g->nsent = n;
	if (rc == 0 && gnow > g->pinged) {
		rc = send_op(g, "ping", NULL, NULL, "n", (double)gnow);
		g->pinged = gnow;
	}
	return rc;
}

static const char *
jstr(const cJSON *o, const char *k, size_t max)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));

	return v != NULL && strlen(v) <= max ? v : NULL;
}

/* One open of one gateway, in flight on the work queue. */
struct open_job {
	struct gw	*g;		/* a reference */
	double		 id;
	char		 host[APP_HOST_MAX];
	char		 token[257];
	int		 has_token;	/* 0: none sent (a public route) */
};

/* Answers id with a failure (status, text). -1: the channel failed. */
static int
send_open_fail(struct gw *g, double id, int status, const char *err)
{
	cJSON *r = cJSON_CreateObject();
	int rc;

	cJSON_AddStringToObject(r, "op", "open");
	cJSON_AddNumberToObject(r, "id", id);
	cJSON_AddFalseToObject(r, "ok");
	cJSON_AddNumberToObject(r, "status", status);
	cJSON_AddStringToObject(r, "error", err);
	rc = send_line(g, r, -1);
	cJSON_Delete(r);
	return rc;
}

/*
 * On a worker: apps_open (which may wake the sandbox, seconds), then the
 * reply. A reply that cannot be sent ends the channel (shutdown: the
 * gateway's thread sees it; the gateway reconnects and its waiting
 * requests get 503), since the gateway would otherwise wait for it until
 * its timeouts.wake.
 */
static void
open_run(void *arg)
{
	struct open_job *j = arg;
	struct gw *g = j->g;
	struct rt_app_conn ac;
	char err[512];
	int status = 0, rc;
	cJSON *r;

	if (atomic_load(&g->closed) || atomic_load(&ctl.stop))
		goto out;	/* nobody waits for the answer */
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "op", "open");
	cJSON_AddNumberToObject(r, "id", j->id);
	if (apps_open(ctl.m, j->host, j->has_token ? j->token : NULL, &ac, &status, err,
	    sizeof(err)) == -1) {
		cJSON_AddFalseToObject(r, "ok");
		cJSON_AddNumberToObject(r, "status", status);
		cJSON_AddStringToObject(r, "error", err);
		rc = send_line(g, r, -1);
	} else if (ac.fd != -1 && !g->is_unix) {
		close(ac.fd);
		cJSON_AddFalseToObject(r, "ok");
		cJSON_AddNumberToObject(r, "status", 502);
		cJSON_AddStringToObject(r, "error", "this gateway is connected over "
		    "TCP and this runtime hands out sockets: the gateway must use "
		    "control.socket");
		rc = send_line(g, r, -1);
	} else if (ac.fd != -1) {
		cJSON_AddTrueToObject(r, "ok");
		cJSON_AddTrueToObject(r, "fd");
		rc = send_line(g, r, ac.fd);
		close(ac.fd);
	} else {
		cJSON_AddTrueToObject(r, "ok");
		cJSON_AddStringToObject(r, "addr", ac.addr);
		rc = send_line(g, r, -1);
	}
	cJSON_Delete(r);
	if (rc == -1 && !atomic_load(&g->closed)) {
		log_warnx("gateway=%s: an open's reply could not be sent: channel closed", g->peer);
		(void)shutdown(g->fd, SHUT_RDWR);
	}
out:
	explicit_bzero(j->token, sizeof(j->token));
	gw_unref(g);
	free(j);
}

/* Queues the open on the work queue; a full queue answers 503 at once. */
static int
handle_open(struct gw *g, const cJSON *o)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
	const char *host = jstr(o, "host", APP_HOST_MAX - 1);
	const char *token = jstr(o, "token", 256);
	struct open_job *j;

	if (!cJSON_IsNumber(id) || host == NULL) {
		log_debug("gateway=%s open without id or host", g->peer);
		return 0;
	}
	j = xcalloc(1, sizeof(*j));
	j->g = g;
	j->id = id->valuedouble;
	snprintf(j->host, sizeof(j->host), "%s", host);
	if (token != NULL) {
		snprintf(j->token, sizeof(j->token), "%s", token);
		j->has_token = 1;
	}
	atomic_fetch_add(&g->refs, 1);
	if (work_submit_key(g->key, CTL_OPENS_MAX, open_run, NULL, j) == -1) {
		explicit_bzero(j->token, sizeof(j->token));
		free(j);
		atomic_fetch_sub(&g->refs, 1);	/* the thread still holds one */
		return send_open_fail(g, id->valuedouble, 503,
		    "too many connections being opened at once; try again");
	}
	return 0;
}

/* One line from the gateway. -1: close the channel. */
static int
handle_line(struct gw *g, const char *line, size_t len)
{
	cJSON *o = cJSON_ParseWithLength(line, len), *hs, *h;
	const char *op;
	int rc = 0, k = 0;

	if (!cJSON_IsObject(o) || (op = jstr(o, "op", 32)) == NULL) {
		static struct log_rate lr;
		long dropped;

		if (log_rate_ok(&lr, 1, 10000, &dropped))
			log_warnx("gateway=%s sent a line that is not a JSON "
			    "object with an op (%ld similar suppressed)", g->peer,
			    dropped);
		cJSON_Delete(o);
		return 0;
	}
	if (strcmp(op, "open") == 0)
		rc = handle_open(g, o);
	else if (strcmp(op, "activity") == 0) {
		hs = cJSON_GetObjectItemCaseSensitive(o, "hosts");
		cJSON_ArrayForEach(h, hs) {
			if (++k > 10000)
				break;
			if (cJSON_IsString(h) && strlen(h->valuestring) < APP_HOST_MAX)
				apps_activity(ctl.m, h->valuestring);
		}
	} else if (strcmp(op, "pong") == 0) {
		h = cJSON_GetObjectItemCaseSensitive(o, "n");
		if (cJSON_IsNumber(h) && h->valuedouble >= 0)
			apps_watch_acked(g->w, (unsigned long long)h->valuedouble);
	} else
		log_debug("gateway=%s unknown op %s", g->peer, op);
	cJSON_Delete(o);
	return rc;
}

/* Reads what the gateway sent; handles each whole line. -1: close. */
static int
read_lines(struct gw *g)
{
	ssize_t r;
	char *nl;
	size_t used;

	do
		r = recv(g->fd, g->in + g->inlen, CTL_MAX_LINE + 1 - g->inlen, 0);
	while (r == -1 && errno == EINTR);
	if (r == 0)
		return -1;
	if (r == -1)
		return errno == EAGAIN ? 0 : -1;
	g->inlen += (size_t)r;
	while ((nl = memchr(g->in, '\n', g->inlen)) != NULL) {
		used = (size_t)(nl - g->in) + 1;
		if (handle_line(g, g->in, used - 1) == -1)
			return -1;
		memmove(g->in, g->in + used, g->inlen - used);
		g->inlen -= used;
	}
	if (g->inlen > CTL_MAX_LINE) {
		log_warnx("gateway=%s sent a line over %d bytes: channel closed",
		    g->peer, CTL_MAX_LINE);
		return -1;
	}
	return 0;
}

/* The hello, within CTL_HELLO_MS: version 1 and, over TCP, the token. */
static int
hello(struct gw *g)
{
	long long deadline = util_mono_ms() + CTL_HELLO_MS;
	struct pollfd p = { g->fd, POLLIN, 0 };
	char *nl;
	cJSON *o;
	const char *op, *tok;
	int ok;

	while ((nl = memchr(g->in, '\n', g->inlen)) == NULL) {
		long long left = deadline - util_mono_ms();
		ssize_t r;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		r = recv(g->fd, g->in + g->inlen, CTL_MAX_LINE + 1 - g->inlen, 0);
		if (r <= 0)
			return -1;
		g->inlen += (size_t)r;
		if (g->inlen > CTL_MAX_LINE &&
		    memchr(g->in, '\n', g->inlen) == NULL)
			return -1;
	}
	o = cJSON_ParseWithLength(g->in, (size_t)(nl - g->in));
	op = jstr(o, "op", 32);
	tok = jstr(o, "token", CTL_TOKEN_MAX - 1);
	ok = op != NULL && strcmp(op, "hello") == 0;
	if (ok && !g->is_unix)
		ok = tok != NULL && strlen(tok) == ctl.tokenlen &&
		    CRYPTO_memcmp(tok, ctl.token, ctl.tokenlen) == 0;
	cJSON_Delete(o);
	g->inlen -= (size_t)(nl - g->in) + 1;
	memmove(g->in, nl + 1, g->inlen);
	return ok ? 0 : -1;
}

static void *
gw_thread(void *arg)
{
	struct gw *g = arg;
	struct timeval tv = { CTL_SEND_MS / 1000, 0 };
	long long next = 0;
	char junk[64];
	int rc = 0;

	(void)setsockopt(g->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	g->in = xmalloc(CTL_MAX_LINE + 1);
	g->wake[0] = g->wake[1] = -1;
	if (hello(g) == -1) {
		log_warnx("gateway=%s: no valid hello (version 1%s): closed",
		    g->peer, g->is_unix ? "" : " and the control token");
		goto out;
	}
	if (pipe2(g->wake, O_NONBLOCK | O_CLOEXEC) == -1)
		goto out;
	g->w = apps_watch_new(g->wake[1]);
	log_info("gateway=%s connected", g->peer);
	if (send_op(g, "welcome", NULL, NULL, "version", 1) == -1 ||
	    sync_routes(g, 1) == -1)
		goto out;
	(void)fcntl(g->fd, F_SETFL, fcntl(g->fd, F_GETFL) | O_NONBLOCK);
	/* lines already read with the hello */
	while (rc == 0 && memchr(g->in, '\n', g->inlen) != NULL) {
		char *nl = memchr(g->in, '\n', g->inlen);
		size_t used = (size_t)(nl - g->in) + 1;

		rc = handle_line(g, g->in, used - 1);
		memmove(g->in, g->in + used, g->inlen - used);
		g->inlen -= used;
	}
	next = util_mono_ms() + CTL_RESYNC_MS;
	while (rc == 0 && !atomic_load(&ctl.stop)) {
		struct pollfd p[2] = { { g->fd, POLLIN, 0 }, { g->wake[0], POLLIN, 0 } };
		long long left = next - util_mono_ms();
		int woke = 0;

		if (poll(p, 2, left < 0 ? 0 : (int)left) == -1 && errno != EINTR)
			break;
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			rc = read_lines(g);
		if (p[1].revents & POLLIN) {
			while (read(g->wake[0], junk, sizeof(junk)) > 0)
				;
			woke = 1;
		}
		if (rc == 0 && (woke || util_mono_ms() >= next)) {
			rc = sync_routes(g, 0);
			next = util_mono_ms() + CTL_RESYNC_MS;
		}
	}
	log_info("gateway=%s disconnected", g->peer);
out:
	atomic_store(&g->closed, 1);
	(void)shutdown(g->fd, SHUT_RDWR);	/* opens in flight: their sends fail */
	apps_watch_free(g->w);
	if (g->wake[0] != -1) {
		close(g->wake[0]);
		close(g->wake[1]);
	}
	free(g->sent);
	free(g->in);
	g->sent = NULL;
	g->in = NULL;
	gw_unref(g);	/* the fd closes with the last open in flight */
	return NULL;
}

static void *
accept_thread(void *arg)
{
	int lfd = *(int *)arg, is_unix = lfd == ctl.ufd, fd;
	struct sockaddr_storage ss;
	socklen_t sl;
	pthread_attr_t at;
	pthread_t th;
	struct gw *g;
	static _Atomic unsigned long long serial;	/* both accept threads */

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, (size_t)256 * 1024);
	while (!atomic_load(&ctl.stop)) {
		struct pollfd p = { lfd, POLLIN, 0 };

		if (poll(&p, 1, 500) <= 0)
			continue;
		sl = sizeof(ss);
		if ((fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC)) == -1) {
			/* its own thread, off the loop lguard guards: a nap */
			if (lguard_is_short(errno))
				usleep(100 * 1000);
			continue;
		}
		pthread_mutex_lock(&ctl.mu);
		if (ctl.nconn >= CTL_MAX_GATEWAYS) {
			pthread_mutex_unlock(&ctl.mu);
			log_warnx("apps: more than %d gateways: connection refused",
			    CTL_MAX_GATEWAYS);
			close(fd);
			continue;
		}
		ctl.nconn++;
		pthread_mutex_unlock(&ctl.mu);
		g = xcalloc(1, sizeof(*g));
		g->fd = fd;
		g->is_unix = is_unix;
		atomic_init(&g->refs, 1);
		pthread_mutex_init(&g->smu, NULL);
		snprintf(g->key, sizeof(g->key), "appctl:%llu", ++serial);
		if (is_unix)
			snprintf(g->peer, sizeof(g->peer), "unix:%d", fd);
		else if (getnameinfo((struct sockaddr *)&ss, sl, g->peer,
		    sizeof(g->peer), NULL, 0, NI_NUMERICHOST) != 0)
			snprintf(g->peer, sizeof(g->peer), "?");
		if (pthread_create(&th, &at, gw_thread, g) != 0) {
			close(fd);
			pthread_mutex_destroy(&g->smu);
			free(g);
			pthread_mutex_lock(&ctl.mu);
			ctl.nconn--;
			pthread_mutex_unlock(&ctl.mu);
		}
	}
	pthread_attr_destroy(&at);
	return NULL;
}

static int
listen_unix(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "apps.control_socket: path too long");
		return -1;
	}
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	(void)unlink(path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(path, 0660) == -1 || listen(fd, 16) == -1) {
		snprintf(err, errlen, "apps.control_socket %s: %s", path,
		    strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int
listen_tcp(const char *hostport, char *err, size_t errlen)
{
	struct addrinfo hints, *ai = NULL;
	char host[256], *colon;
	int fd, one = 1, e;

	snprintf(host, sizeof(host), "%s", hostport);
	if ((colon = strrchr(host, ':')) == NULL) {
		snprintf(err, errlen, "apps.control_listen: expected host:port");
		return -1;
	}
	*colon = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((e = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai)) != 0) {
		snprintf(err, errlen, "apps.control_listen %s: %s", hostport,
		    gai_strerror(e));
		return -1;
	}
	if ((fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) == -1 || listen(fd, 16) == -1) {
		snprintf(err, errlen, "apps.control_listen %s: %s", hostport,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	return fd;
}

static int
load_token(const char *path, char *err, size_t errlen)
{
	struct buf b;
	char rerr[256];
	size_t len;

	buf_init(&b, CTL_TOKEN_MAX);
	if (util_read_file(path, &b, rerr, sizeof(rerr)) == -1) {
		snprintf(err, errlen, "apps.control_token_file %s: %s", path, rerr);
		buf_free(&b);
		return -1;
	}
	len = b.len;
	while (len > 0 && (b.p[len - 1] == '\n' || b.p[len - 1] == '\r'))
		len--;
	if (len < 16 || len >= sizeof(ctl.token) || memchr(b.p, '\n', len)) {
		snprintf(err, errlen, "apps.control_token_file %s: the token must "
		    "be one line of at least 16 bytes", path);
		if (b.p != NULL)
			explicit_bzero(b.p, b.len);
		buf_free(&b);
		return -1;
	}
	memcpy(ctl.token, b.p, len);
	ctl.tokenlen = len;
	explicit_bzero(b.p, b.len);
	buf_free(&b);
	return 0;
}

int
appctl_start(struct sessmgr *m, const struct conf *c, char *err, size_t errlen)
{
	ctl.m = m;
	ctl.c = c;
	if (c->apps_control_listen != NULL && c->apps_control_listen[0] != '\0') {
		if (c->apps_control_token_file == NULL) {
			snprintf(err, errlen, "apps.control_listen needs "
			    "apps.control_token_file");
			return -1;
		}
		if (load_token(c->apps_control_token_file, err, errlen) == -1 ||
		    (ctl.tfd = listen_tcp(c->apps_control_listen, err, errlen)) == -1)
			return -1;
	}
	if (c->apps_control_socket != NULL && c->apps_control_socket[0] != '\0' &&
	    (ctl.ufd = listen_unix(c->apps_control_socket, err, errlen)) == -1)
		return -1;
	if (ctl.ufd != -1) {
		if (pthread_create(&ctl.uth, NULL, accept_thread, &ctl.ufd) != 0)
			fatalx("pthread_create");
		ctl.uth_on = 1;
		log_info("apps: gateways connect on %s", c->apps_control_socket);
	}
	if (ctl.tfd != -1) {
		if (pthread_create(&ctl.tth, NULL, accept_thread, &ctl.tfd) != 0)
			fatalx("pthread_create");
		ctl.tth_on = 1;
		log_info("apps: gateways connect on %s (token)",
		    c->apps_control_listen);
	}
	return 0;
}

void
appctl_stop(void)
{
	struct timespec ts;

	atomic_store(&ctl.stop, 1);
	if (ctl.uth_on)
		pthread_join(ctl.uth, NULL);
	if (ctl.tth_on)
		pthread_join(ctl.tth, NULL);
	ctl.uth_on = ctl.tth_on = 0;
	if (ctl.ufd != -1) {
		close(ctl.ufd);
		if (ctl.c->apps_control_socket != NULL)
			(void)unlink(ctl.c->apps_control_socket);
	}
	if (ctl.tfd != -1)
		close(ctl.tfd);
	ctl.ufd = ctl.tfd = -1;
	/* connection threads see the flag within one poll round */
	util_deadline(&ts, 3 * CTL_RESYNC_MS);
	pthread_mutex_lock(&ctl.mu);
	while (ctl.nconn > 0 && pthread_cond_timedwait(&ctl.cv, &ctl.mu, &ts) == 0)
		;
	pthread_mutex_unlock(&ctl.mu);
	explicit_bzero(ctl.token, sizeof(ctl.token));
}
