/*
 * runtime/local/netns.c: a sandbox's network. The sandbox has its own
 * network namespace with only a loopback; its one way out is a listener
 * on 127.0.0.1:3128 inside that namespace, which this file opens (setns on
 * a short-lived thread) and hands to the egress proxy with the sandbox's
 * labels (orchestrator/lib/egress.h builds every admin message), and the
 * proxy environment that points the sandbox's tools at it.
 *
 * Rules: with no proxy_admin_socket there is no listener and so no egress
 * at all. The caller's thread never changes namespace. Calls nothing else
 * in the runtime.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "lib/egress.h"
#include "local_int.h"

#define RL_PROXY_PORT	3128

/* The local proxy listener every sandbox reaches, and what bypasses it. */
#define RL_PROXY_HOSTPORT	"127.0.0.1:3128"
#define RL_NO_PROXY		"localhost,127.0.0.1"
#define RL_CA_BUNDLE		"/etc/ssl/certs/ca-certificates.crt"

/*
 * One socket made inside a sandbox's network namespace: setns on a
 * short-lived thread (the caller's namespace is untouched), then op.
 */
struct ns_arg {
	int	nsfd;
	int	port;
	int	fd;
	int	refused;	/* connect: ECONNREFUSED */
	char	err[200];
	int	(*op)(struct ns_arg *, int s);	/* 0, or -1 with err */
};

static void *
ns_thread(void *p)
{
	struct ns_arg *a = p;
	int s;

	a->fd = -1;
	if (setns(a->nsfd, CLONE_NEWNET) == -1) {
		snprintf(a->err, sizeof(a->err), "setns: %s", strerror(errno));
		return NULL;
	}
	if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(a->err, sizeof(a->err), "socket: %s", strerror(errno));
		return NULL;
	}
	if (a->op(a, s) == -1) {
		close(s);
		return NULL;
	}
	a->fd = s;
	return NULL;
}

static void
loopback(struct sockaddr_in *sin, int port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static int
op_listen(struct ns_arg *a, int s)
{
	struct sockaddr_in sin;
	int one = 1;

	(void)setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* a re-registration binds a new listener while the proxy still
	 * holds the old one; it closes the old one on replace */
	(void)setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	/* bwrap brings the namespace's loopback up (RTM_NEWADDR, then
	 * IFF_UP) in its child while we run here: bwrap reports the child's
	 * pid before that, and between the two messages 127.0.0.1 is neither
	 * unrouted nor local, so a plain bind fails with EADDRNOTAVAIL
	 * (tests/unit test_netns_listener_race shows the window). FREEBIND
	 * binds whatever state the address is in; the socket receives as
	 * soon as loopback is up, which is before the agent answers. */
	if (setsockopt(s, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) == -1) {
		snprintf(a->err, sizeof(a->err), "IP_FREEBIND: %s",
		    strerror(errno));
		return -1;
	}
	loopback(&sin, a->port);
	if (bind(s, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(s, 128) == -1) {
		snprintf(a->err, sizeof(a->err), "bind 127.0.0.1:%d: %s",
		    a->port, strerror(errno));
		return -1;
	}
	return 0;
}

static int
op_connect(struct ns_arg *a, int s)
{
	struct sockaddr_in sin;
	int one = 1;

	loopback(&sin, a->port);
	/* Loopback: the connect completes (or is refused) at once, unless
	 * the app's accept queue is full, where it waits for the SYN retry;
	 * the gateway's timeouts.connect bounds what the browser waits. */
	if (connect(s, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		a->refused = errno == ECONNREFUSED;
		snprintf(a->err, sizeof(a->err), "connect 127.0.0.1:%d: %s",
		    a->port, strerror(errno));
		return -1;
	}
	(void)setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/*
 * Runs a->op in pid's network namespace: the fd, or -1 (a->err says why;
 * *gone when the namespace could not be opened: the process is gone).
 */
static int
in_netns(pid_t pid, struct ns_arg *a, int *gone, char *err, size_t errlen)
{
	pthread_t th;
	char path[64];
	int e;

	*gone = 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if ((a->nsfd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		*gone = 1;
		snprintf(err, errlen, "open %s: %s", path, strerror(errno));
		return -1;
	}
	if ((e = pthread_create(&th, NULL, ns_thread, a)) != 0) {
		close(a->nsfd);
		snprintf(err, errlen, "pthread_create: %s", strerror(e));
		return -1;
	}
	pthread_join(th, NULL);
	close(a->nsfd);
	return a->fd;
}

/*
 * A listening TCP socket on 127.0.0.1:port inside pid's network
 * namespace: the fd, or -1 with err.
 */
int
rl_netns_listener(pid_t pid, int port, char *err, size_t errlen)
{
	struct ns_arg a = { .port = port, .op = op_listen };
	int gone, fd;

	if ((fd = in_netns(pid, &a, &gone, err, errlen)) == -1 && a.err[0] != '\0')
		snprintf(err, errlen, "listener in sandbox: %s", a.err);
	return fd;
}

/*
 * A TCP socket connected to 127.0.0.1:port inside pid's network namespace
 * (an exposed app, for the app gateway): the fd, or -1 with err, or
 * RT_ENOLISTEN when nothing accepts on the port, RT_STOPPED when the
 * process is gone (with err saying so).
 */
int
rl_netns_connect(pid_t pid, int port, char *err, size_t errlen)
{
	struct ns_arg a = { .port = port, .op = op_connect };
	int gone, fd;

	if ((fd = in_netns(pid, &a, &gone, err, errlen)) != -1)
		return fd;
	if (gone) {
		snprintf(err, errlen, "stopped");
		return RT_ESTOPPED;
	}
	if (a.refused) {
		snprintf(err, errlen, "not listening");
		return RT_ENOLISTEN;
	}
	if (a.err[0] != '\0')
		snprintf(err, errlen, "%s", a.err);
	return -1;
}

/*
 * Registers the sandbox's 127.0.0.1:3128 listener (opened inside its
 * network namespace through child) with the proxy, named by labels
 * (NULL: the record's own).
 */
int
rl_egress_register(const struct rl *rl, const struct rec *r, pid_t child,
    const struct rt_kv *labels, size_t nlabels, struct buf *cred_env, struct buf *files,
    struct buf *creds, char *err, size_t errlen)
{
	struct egress_admin a = { .unix_path = rl->c.proxy_admin_socket };
	struct rt_kv kv[RL_MAX_LABELS];
	struct egress_reg reg;
	const cJSON *it;
	size_t n = 0;
	int rc;

	if (!egress_admin_set(&a))
		return 0;
	if (labels == NULL) {
		cJSON_ArrayForEach(it, r->labels)
			if (cJSON_IsString(it) && n < NELEM(kv)) {
				kv[n].k = it->string;
				kv[n++].v = it->valuestring;
			}
		labels = kv;
		nlabels = n;
	}
	memset(&reg, 0, sizeof(reg));
	reg.id = r->id;
	reg.labels = labels;
	reg.nlabels = nlabels;
	reg.cred_env = cred_env;
	reg.client_files = files;
	reg.creds = creds;
	if ((reg.listen_fd = rl_netns_listener(child, RL_PROXY_PORT, err,
	    errlen)) == -1)
		return -1;
	rc = egress_register(&a, &reg, err, errlen);
	close(reg.listen_fd);	/* the proxy has its own copy */
	return rc;
}

void
rl_egress_deregister(const struct rl *rl, const char *id)
{
	struct egress_admin a = { .unix_path = rl->c.proxy_admin_socket };

	egress_deregister(&a, id);
}

/* The proxy and CA environment every sandbox gets, as "K=V\n" lines. */
int
rl_proxy_env(char *out, size_t outlen)
{
	return egress_proxy_env(NULL, NULL, RL_PROXY_HOSTPORT, RL_NO_PROXY,
	    RL_CA_BUNDLE, out, outlen);
}

void
rl_trace(struct runtime *rt, const char *id, const char *tp)
{
	const struct rl *rl = rt->impl;
	struct egress_admin a = { .unix_path = rl->c.proxy_admin_socket };

	egress_trace(&a, id, tp);
}
