/*
 * main.c: app-gateway [-dnv] -f FILE (see usage_text, common/daemon.c and docs/gateway.md).
 * Loads the configuration, binds the listener, loads the TLS certificate
 * and the control token, drops to `user`, connects the control channel
 * and runs the event loop until SIGTERM/SIGINT. One thread.
 * Exit status: 0 done, 1 a configuration or startup error, 2 a usage error.
 */
#include <errno.h>
#include <grp.h>
#include <malloc.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "buf.h"
#include "gw.h"
#include "daemon.h"
#include "lguard.h"
#include "log.h"
#include "util.h"

#define TOKEN_FILE_MAX		4096


static struct evconnlistener *lis;

static const char usage_text[] =
    "usage: app-gateway [-dnv] -f file\n"
    "       app-gateway --help | --print-docs\n"
    "  -f file  configuration (YAML)\n"
    "  -n       check the configuration (and the TLS files), print \"configuration OK\", exit\n"
    "  -d       debug: debug logs (the gateway always stays in the foreground)\n"
    "  -v       more verbose (repeatable)\n";

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
	if (SSL_CTX_use_certificate_chain_file(ctx, gw_state.c->tls_cert) != 1) {
		snprintf(err, errlen, "tls.cert %s: %s", gw_state.c->tls_cert,
		    ERR_reason_error_string(ERR_get_error()));
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, gw_state.c->tls_key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		snprintf(err, errlen, "tls.key %s: %s", gw_state.c->tls_key,
		    ERR_reason_error_string(ERR_get_error()));
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static int
drop_privs(char *err, size_t errlen)
{
	struct passwd *pw;

	if (gw_state.c->user == NULL)
		return 0;
	if ((pw = getpwnam(gw_state.c->user)) == NULL) {
		snprintf(err, errlen, "user %s: no such user", gw_state.c->user);
		return -1;
	}
	if (setgroups(0, NULL) == -1 || setgid(pw->pw_gid) == -1 || setuid(pw->pw_uid) == -1) {
		snprintf(err, errlen, "user %s: cannot switch: %s", gw_state.c->user, strerror(errno));
		return -1;
	}
	if (setuid(0) == 0) {
		snprintf(err, errlen, "user %s: could regain root", gw_state.c->user);
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
	gw_state.shutting = 1;
	event_base_loopbreak(gw_state.base);
}

static void
accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
    void *arg)
{
	(void)l;
	(void)arg;
	lguard_accept_ok();	/* the shed idle one made room: next pause short */
	conn_accept(fd, sa, salen);
}

/*
 * lguard's shed callback when accept() is short of descriptors: a pooled
 * upstream connection (it costs nobody a page), else the oldest idle
 * keep-alive connection goes (one per pause, as before lguard).
 */
static long
shed_idle(void *arg, long n)
{
	(void)arg;
	(void)n;
	return upool_shed_one() || conn_shed_idle();
}

int
main(int argc, char **argv)
{
	static const struct daemon_desc desc = {
		usage_text, conf_print_help, conf_print_markdown, NULL
	};
	struct daemon_args o;
	char err[1024], *token = NULL;
	int rc, sigs[] = { SIGHUP, SIGTERM, SIGINT };
	size_t i;

	if (daemon_parse_args(&desc, argc, argv, &o, &rc) == -1)
		return rc;
	if ((gw_state.c = conf_load(o.file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "app-gateway: %s\n", err);
		return 1;
	}
	if (gw_state.c->tls && (gw_state.ssl = tls_load(err, sizeof(err))) == NULL) {
		fprintf(stderr, "app-gateway: %s\n", err);
		return 1;
	}
	if (gw_state.c->ctl_token_file != NULL && (token = daemon_read_secret(gw_state.c->ctl_token_file,
	    TOKEN_FILE_MAX, err, sizeof(err))) == NULL) {
		fprintf(stderr, "app-gateway: control.token_file: %s\n", err);
		return 1;
	}
	if (o.check) {
		printf("configuration OK\n");
		return 0;
	}
	if (log_init("app-gateway", o.verbosity, gw_state.c->log_file) == -1) {
		fprintf(stderr, "app-gateway: log.file %s: %s\n", gw_state.c->log_file, strerror(errno));
		return 1;
	}
	log_set_json(gw_state.c->log_json);
	/* small heap, given back: idle connections are most of the gateway's life */
	mallopt(M_TRIM_THRESHOLD, 1 << 20);
	(void)lguard_raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	daemon_libevent_log();
	daemon_oom_protect();
	LIST_INIT(&gw_state.routes);
	{
		/* As the proxy's workers: the changelist folds the enable and
		 * disable pairs of a request cycle (client read off while the
		 * app answers, a write event per reply) into fewer epoll_ctl
		 * calls; they were half of the gateway's syscalls. */
		struct event_config *ec = event_config_new();

		if (ec == NULL)
			fatalx("event_config_new");
		event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
		gw_state.base = event_base_new_with_config(ec);
		event_config_free(ec);
		if (gw_state.base == NULL)
			fatalx("event_base_new");
	}
	lis = evconnlistener_new_bind(gw_state.base, accept_cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 1024,
	    (struct sockaddr *)&gw_state.c->listen_ss, (int)gw_state.c->listen_sslen);
	if (lis == NULL)
		fatal("listen %s", gw_state.c->listen);
	lguard_add(lis, shed_idle, NULL);
	if (drop_privs(err, sizeof(err)) == -1)
		fatalx("%s", err);
	for (i = 0; i < NELEM(sigs); i++)
		event_add(evsignal_new(gw_state.base, sigs[i], sig_cb, NULL), NULL);
	ctl_start(token, conn_close_route, NULL);
	if (token != NULL) {
		memset(token, 0, strlen(token));
		free(token);
	}
	log_info("listening on %s (%s) for *.%s, control %s", gw_state.c->listen,
	    gw_state.ssl != NULL ? "https" : "http", gw_state.c->domain,
	    gw_state.c->ctl_socket != NULL ? gw_state.c->ctl_socket : gw_state.c->ctl_connect);
	event_base_dispatch(gw_state.base);
	lguard_del(lis);
	evconnlistener_free(lis);
	ctl_stop();
	conn_stop_all();
	log_info("stopped");
	return 0;
}
