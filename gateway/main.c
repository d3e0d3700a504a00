/*
 * main.c: app-gateway [-dnv] -f FILE (see usage() and docs/gateway.md).
 * Loads the configuration, binds the listener, loads the TLS certificate
 * and the control token, drops to `user`, connects the control channel
 * and runs the event loop until SIGTERM/SIGINT. One thread.
 * Exit status: 0 done, 1 a configuration or startup error, 2 a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <malloc.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "buf.h"
#include "gw.h"
#include "log.h"
#include "util.h"

#define TOKEN_FILE_MAX		4096
#define BACKOFF_MIN_MS		100
#define BACKOFF_MAX_MS		2000


static struct evconnlistener *lis;
static struct event *resume_ev;
static long long accept_backoff = BACKOFF_MIN_MS;

struct opts {
	const char	*file;
	int		 check;
	int		 verbosity;
};

static void
usage(FILE *fp)
{
	fprintf(fp, "usage: app-gateway [-dnv] -f file\n"
	    "       app-gateway --help | --print-docs\n"
	    "  -f file  configuration (YAML)\n"
	    "  -n       check the configuration (and the TLS files), print \"configuration OK\", exit\n"
	    "  -d       debug: debug logs (the gateway always stays in the foreground)\n"
	    "  -v       more verbose (repeatable)\n");
}

static int
parse_args(int argc, char **argv, struct opts *o, int *status)
{
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "print-docs", no_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 }
	};
	int ch, debug = 0, verbose = 0;

	memset(o, 0, sizeof(*o));
	*status = 0;
	while ((ch = getopt_long(argc, argv, "df:nv", lopts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			debug = 1;
			break;
		case 'f':
			o->file = optarg;
			break;
		case 'n':
			o->check = 1;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			printf("\nconfiguration keys (YAML; dotted names are nested mappings):\n");
			gwconf_print_help(stdout);
			return -1;
		case 'D':
			gwconf_print_markdown(stdout);
			return -1;
		default:
			usage(stderr);
			*status = 2;
			return -1;
		}
	}
	if (o->file == NULL || optind != argc) {
		usage(stderr);
		*status = 2;
		return -1;
	}
	o->verbosity = (debug ? LOG_LVL_DEBUG : LOG_LVL_INFO) + verbose;
	return 0;
}

static SSL_CTX *
tls_load(char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL) {
		snprintf(err, errlen, "SSL_CTX_new failed");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	if (SSL_CTX_use_certificate_chain_file(ctx, G.c->tls_cert) != 1) {
		snprintf(err, errlen, "tls.cert %s: %s", G.c->tls_cert,
		    ERR_reason_error_string(ERR_get_error()));
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, G.c->tls_key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		snprintf(err, errlen, "tls.key %s: %s", G.c->tls_key,
		    ERR_reason_error_string(ERR_get_error()));
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static char *
read_token(char *err, size_t errlen)
{
	struct buf b;

	buf_init(&b, TOKEN_FILE_MAX);
	if (util_read_file(G.c->ctl_token_file, &b, err, errlen) == -1)
		return NULL;
	while (b.len > 0 && strchr(" \t\r\n", b.p[b.len - 1]) != NULL)
		b.p[--b.len] = '\0';
	if (b.len == 0) {
		snprintf(err, errlen, "control.token_file %s is empty", G.c->ctl_token_file);
		buf_free(&b);
		return NULL;
	}
	return b.p;
}

static int
drop_privs(char *err, size_t errlen)
{
	struct passwd *pw;

	if (G.c->user == NULL)
		return 0;
	if ((pw = getpwnam(G.c->user)) == NULL) {
		snprintf(err, errlen, "user %s: no such user", G.c->user);
		return -1;
	}
	if (setgroups(0, NULL) == -1 || setgid(pw->pw_gid) == -1 || setuid(pw->pw_uid) == -1) {
		snprintf(err, errlen, "user %s: cannot switch: %s", G.c->user, strerror(errno));
		return -1;
	}
	if (setuid(0) == 0) {
		snprintf(err, errlen, "user %s: could regain root", G.c->user);
		return -1;
	}
	return 0;
}

static void
sig_cb(evutil_socket_t sig, short ev, void *arg)
{
	(void)ev;
	(void)arg;
	if (sig == SIGHUP) {
		log_info("SIGHUP: nothing to reload (routes come from the orchestrator)");
		return;
	}
	log_info("signal %d: stopping", (int)sig);
	G.shutting = 1;
	event_base_loopbreak(G.base);
}

static void
accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
    void *arg)
{
	(void)l;
	(void)arg;
	accept_backoff = BACKOFF_MIN_MS;
	conn_accept(fd, sa, salen);
}

static void
resume_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	evconnlistener_enable(lis);
}

/*
 * accept() failed: out of descriptors or memory pauses accepting for a
 * back-off (100 ms doubling to 2 s) and closes the oldest idle keep-alive
 * connection; one log line per 10 s. Anything else is logged, rate-limited.
 */
static void
accept_err_cb(struct evconnlistener *l, void *arg)
{
	static struct log_rate rl;
	int e = EVUTIL_SOCKET_ERROR();
	long dropped;
	struct timeval tv;

	(void)arg;
	if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
		evconnlistener_disable(l);
		ign(conn_shed_idle());
		tv.tv_sec = accept_backoff / 1000;
		tv.tv_usec = (accept_backoff % 1000) * 1000;
		event_add(resume_ev, &tv);
		if (log_rate_ok(&rl, 1, 10000, &dropped))
			log_warnx("accept: %s: pausing %lld ms (%ld similar suppressed)",
			    strerror(e), accept_backoff, dropped);
		accept_backoff *= 2;
		if (accept_backoff > BACKOFF_MAX_MS)
			accept_backoff = BACKOFF_MAX_MS;
		return;
	}
	if (log_rate_ok(&rl, 1, 10000, &dropped))
		log_warnx("accept: %s (%ld similar suppressed)", strerror(e), dropped);
}

static void
libevent_log(int severity, const char *msg)
{
	static struct log_rate rl;
	long dropped;

	if (severity < EVENT_LOG_WARN)
		return;
	if (log_rate_ok(&rl, 10, 10000, &dropped))
		log_warnx("libevent: %s (%ld similar suppressed)", msg, dropped);
}

static void
raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		ign(setrlimit(RLIMIT_NOFILE, &rl));
	}
}

int
main(int argc, char **argv)
{
	struct opts o;
	char err[1024], *token = NULL;
	int rc, sigs[] = { SIGHUP, SIGTERM, SIGINT };
	size_t i;

	if (parse_args(argc, argv, &o, &rc) == -1)
		return rc;
	if ((G.c = gwconf_load(o.file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "app-gateway: %s\n", err);
		return 1;
	}
	if (G.c->tls && (G.ssl = tls_load(err, sizeof(err))) == NULL) {
		fprintf(stderr, "app-gateway: %s\n", err);
		return 1;
	}
	if (G.c->ctl_token_file != NULL && (token = read_token(err, sizeof(err))) == NULL) {
		fprintf(stderr, "app-gateway: control.token_file: %s\n", err);
		return 1;
	}
	if (o.check) {
		printf("configuration OK\n");
		return 0;
	}
	if (log_init("app-gateway", o.verbosity, G.c->log_file) == -1) {
		fprintf(stderr, "app-gateway: log.file %s: %s\n", G.c->log_file, strerror(errno));
		return 1;
	}
	log_set_json(G.c->log_json);
	/* small heap, given back: idle connections are most of the gateway's life */
	mallopt(M_TRIM_THRESHOLD, 1 << 20);
	raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	event_set_log_callback(libevent_log);
	LIST_INIT(&G.routes);
	{
		/* As the proxy's workers: the changelist folds the enable and
		 * disable pairs of a request cycle (client read off while the
		 * app answers, a write event per reply) into fewer epoll_ctl
		 * calls; they were half of the gateway's syscalls. */
		struct event_config *ec = event_config_new();

		if (ec == NULL)
			fatalx("event_config_new");
		event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
		G.base = event_base_new_with_config(ec);
		event_config_free(ec);
		if (G.base == NULL)
			fatalx("event_base_new");
	}
	lis = evconnlistener_new_bind(G.base, accept_cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 1024,
	    (struct sockaddr *)&G.c->listen_ss, (int)G.c->listen_sslen);
	if (lis == NULL)
		fatal("listen %s", G.c->listen);
	evconnlistener_set_error_cb(lis, accept_err_cb);
	resume_ev = evtimer_new(G.base, resume_cb, NULL);
	if (drop_privs(err, sizeof(err)) == -1)
		fatalx("%s", err);
	for (i = 0; i < NELEM(sigs); i++)
		event_add(evsignal_new(G.base, sigs[i], sig_cb, NULL), NULL);
	G.opened = conn_opened;
	G.route_gone = conn_close_route;
	ctl_start(token);
	if (token != NULL) {
		memset(token, 0, strlen(token));
		free(token);
	}
	log_info("listening on %s (%s) for *.%s, control %s", G.c->listen,
	    G.ssl != NULL ? "https" : "http", G.c->domain,
	    G.c->ctl_socket != NULL ? G.c->ctl_socket : G.c->ctl_connect);
	event_base_dispatch(G.base);
	evconnlistener_free(lis);
	ctl_stop();
	conn_stop_all();
	log_info("stopped");
	return 0;
}
