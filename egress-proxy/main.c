/*
 * main.c: egress-proxy [-dnv] -f FILE (see usage_text, common/daemon.c and docs/proxy.md).
 * Loads the configuration, the CA and the addons, starts the workers, the
 * listeners and the admin socket, then runs the main loop (accept, admin,
 * signals, addon file watch) until SIGTERM/SIGINT. Everything here runs on
 * the main thread; a startup failure is fatal (the message says which key).
 * Exit status: 0 done, 1 a configuration or startup error, 2 a usage error.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <event2/thread.h>

#include "addon.h"
#include "admin.h"
#include "buf.h"
#include "certcache.h"
#include "config.h"
#include "credreq.h"
#include "credwatch.h"
#include "ghapp.h"
#include "jsonmem.h"
#include "daemon.h"
#include "lguard.h"
#include "log.h"
#include "metrics.h"
#include "netcheck.h"
#include "padmin.h"
#include "proxy.h"
#include "sandbox.h"
#include "secsrc.h"
#include "tls.h"
#include "util.h"

static struct event_base *mbase;
static char failed_sig[4096];	/* mtimes of an addon set that failed to load */

/*
 * An admin.token_file larger than this is refused at startup: a token is
 * a line of text, and the file is read whole into memory.
 */
#define ADMIN_TOKEN_FILE_MAX	4096

static const char usage_text[] =
    "usage: egress-proxy [-dnv] -f file\n"
    "       egress-proxy --help | --print-docs\n"
    "       egress-proxy --admin SOCKET JSON   (one admin request, prints the reply)\n"
    "  -f file  configuration (YAML)\n"
    "  -n       check the configuration and load the addons, print \"configuration OK\", exit\n"
    "  -d       debug: debug logs (the proxy always stays in the foreground)\n"
    "  -v       more verbose (repeatable)\n";

/* --admin SOCKET JSON: one admin request; exit 0 if the reply says ok. */
static int
admin_call(const char *path, int argc, char **argv)
{
	char reply[PADMIN_MAX_MSG + 1], err[512];

	if (argc != 1) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (padmin_call(path, argv[0], -1, reply, sizeof(reply), 10000, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "egress-proxy: %s\n", err);
		return 2;
	}
	printf("%s\n", reply);
	return strstr(reply, "\"ok\":true") != NULL ? 0 : 1;
}

/* Reloads the addons; keeps the old ones when the new ones fail. */
static int
reload_addons(char *err, size_t errlen)
{
	struct addon_src *s;

	if ((s = addon_src_load(&the_proxy.conf->addons, the_proxy.conf, err, errlen)) == NULL) {
		atomic_fetch_add(&the_proxy.st.reload_failed, 1);
		log_warnx("addons reload failed, keeping the previous addons: %s", err);
		return -1;
	}
	proxy_set_addons(s);
	atomic_fetch_add(&the_proxy.st.reload_ok, 1);
	log_info("addons reloaded (%zu files)", addon_src_count(s));
	return 0;
}

static void
mtime_sig(char *out, size_t len)
{
	struct stat st;
	size_t i, o = 0;

	out[0] = '\0';
	for (i = 0; i < the_proxy.conf->addons.n && o < len; i++) {
		if (stat(the_proxy.conf->addons.v[i], &st) == -1)
			continue;
		o += (size_t)snprintf(out + o, len - o, "%lld.%ld;",
		    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	}
}

static void
watch_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct addon_src *cur = proxy_addons();
	char sig[4096], err[1024];

	(void)fd;
	(void)ev;
	(void)arg;
	if (cur == NULL)
		return;
	if (addon_src_changed(cur)) {
		mtime_sig(sig, sizeof(sig));
		if (strcmp(sig, failed_sig) != 0 && reload_addons(err, sizeof(err)) == -1)
			snprintf(failed_sig, sizeof(failed_sig), "%s", sig);
	}
	addon_src_unref(cur);
}

/*
 * Hands freed heap pages back to the kernel. TLS handshakes allocate and
 * free large buffers between long-lived small objects, so without this
 * the resident size per idle connection stays far above what is in use.
 * Only when the proxy is quiet (few new connections and requests since the
 * last tick) or every 30 s: under load each trim madvises the pages the
 * next handshakes fault straight back in, and its TLB shootdowns interrupt
 * the workers (perf: 9% of the proxy's CPU and the p99 tail).
 */
static void
trim_cb(evutil_socket_t fd, short ev, void *arg)
{
	static long last_work;
	static int ticks;
	long work = atomic_load(&the_proxy.st.conns_total) + atomic_load(&the_proxy.st.req_injected) +
	    atomic_load(&the_proxy.st.req_plain) + atomic_load(&the_proxy.st.pool_dropped);
	int quiet = work - last_work < 200;

	(void)fd;
	(void)ev;
	(void)arg;
	last_work = work;
	if (quiet || ++ticks >= 15) {
		ticks = 0;
		malloc_trim(0);
	}
}

static void
sig_cb(evutil_socket_t sig, short ev, void *arg)
{
	char err[1024];

	(void)ev;
	(void)arg;
	if (sig == SIGHUP) {
		log_info("SIGHUP: reloading addons");
		ign(reload_addons(err, sizeof(err)));
		return;
	}
	log_info("signal %d: stopping", (int)sig);
	event_base_loopbreak(mbase);
}

static void
main_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	(void)l;
	(void)sa;
	(void)salen;
	(void)arg;
	if (proxy_open_conns() >= the_proxy.conf->max_conns) {
		atomic_fetch_add(&the_proxy.st.ref_limit, 1);
		evutil_closesocket(fd);
		return;
	}
	proxy_dispatch(fd, NULL);
}

static void
metrics_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer *out = evbuffer_new();
	struct buf b;

	(void)arg;
	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		evhttp_send_error(req, 405, NULL);
		evbuffer_free(out);
		return;
	}
	buf_init(&b, (size_t)1024 * 1024);
	metrics_text(&b);
	evbuffer_add(out, b.p != NULL ? b.p : "", b.len);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	    "text/plain; version=0.0.4");
	evhttp_send_reply(req, 200, "OK", out);
	evbuffer_free(out);
	buf_free(&b);
}

static void
notfound_cb(struct evhttp_request *req, void *arg)
{
	(void)arg;
	evhttp_send_error(req, 404, NULL);
}

static int
check_only(void)
{
	char err[1024];
	struct addon_src *s;
	struct certcache *cc;

	if ((s = addon_src_load(&the_proxy.conf->addons, the_proxy.conf, err, sizeof(err))) == NULL) {
		fprintf(stderr, "egress-proxy: addons: %s\n", err);
		return 1;
	}
	addon_src_unref(s);
	if (access(the_proxy.conf->ca_cert, F_OK) == 0 || access(the_proxy.conf->ca_key, F_OK) == 0) {
		if ((cc = certcache_new(the_proxy.conf->ca_cert, the_proxy.conf->ca_key, 3600, 1, err,
		    sizeof(err))) == NULL) {
			fprintf(stderr, "egress-proxy: CA: %s\n", err);
			return 1;
		}
		certcache_free(cc);
	}
	if (the_proxy.conf->upstream_ca_bundle != NULL && access(the_proxy.conf->upstream_ca_bundle, R_OK) == -1) {
		fprintf(stderr, "egress-proxy: upstream.ca_bundle %s: %s\n",
		    the_proxy.conf->upstream_ca_bundle, strerror(errno));
		return 1;
	}
	printf("configuration OK\n");
	return 0;
}

/* The host part of a "host:port" the config parsed (truncated to fit). */
static void
listen_host(const char *hostport, char *host, size_t len)
{
	const char *colon = strrchr(hostport, ':');
	size_t hl = (size_t)(colon - hostport);

	if (hl >= len)
		hl = len - 1;
	memcpy(host, hostport, hl);
	host[hl] = '\0';
}

/*
 * The key of the named credentials' placeholders (credreq.h): the file
 * credentials.placeholder_key (made at first start), or derived from the
 * CA key, which is as stable and as secret (a read-only Secret mount
 * needs no second file). Fatal when neither can be read: placeholders
 * that changed at a restart would break every sandbox holding them.
 */
static void
placeholder_key(const struct pconf *c)
{
	char err[512];

	if (c->placeholder_key != NULL) {
		if (credreq_key_load(c->placeholder_key, err, sizeof(err)) == -1)
			fatalx("credentials.placeholder_key: %s", err);
	} else if (credreq_key_derive(c->ca_key, err, sizeof(err)) == -1)
		fatalx("placeholder key from ca.key: %s", err);
}

/*
 * The CA, TLS, the audit log, the addons, the main event base and the
 * workers; fatal on failure. Returns the number of workers.
 */
static int
start_engine(void)
{
	struct pconf *c = the_proxy.conf;
	struct addon_src *src;
	char err[1024];
	int nw;

	if (netcheck_init() == -1)
		log_warn("getifaddrs");
	if ((the_proxy.cc = certcache_new(c->ca_cert, c->ca_key, c->leaf_validity_ms / 1000,
	    (size_t)c->leaf_cache, err, sizeof(err))) == NULL)
		fatalx("CA: %s", err);
	if (c->ca_export != NULL &&
	    certcache_export(the_proxy.cc, c->ca_export, err, sizeof(err)) == -1)
		fatalx("ca.export: %s", err);
	if (tls_init(c->upstream_ca_bundle, err, sizeof(err)) == -1)
		fatalx("TLS: %s", err);
	if (c->audit_log != NULL && (the_proxy.audit_fd = open(c->audit_log,
	    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) == -1)
		fatal("audit.log %s", c->audit_log);
	placeholder_key(c);
	if ((src = addon_src_load(&c->addons, c, err, sizeof(err))) == NULL)
		fatalx("addons: %s", err);
	proxy_set_addons(src);
	if ((mbase = event_base_new()) == NULL)
		fatalx("event_base_new");
	if (ghapp_revoker_start(mbase, c) == -1)
		fatalx("github app token revoker");
	nw = (int)c->workers;
	if (nw == 0)
		nw = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (nw < 1)
		nw = 1;
	if (proxy_workers_start(nw) == -1)
		fatalx("cannot start workers");
	return nw;
}

/*
 * The main listener, the admin socket, the HTTP admin and the metrics
 * listener, each only if configured; fatal on failure. Returns the main
 * listener (NULL: none).
 */
static struct evconnlistener *
start_listeners(void)
{
	struct pconf *c = the_proxy.conf;
	struct evconnlistener *lis = NULL;
	struct evhttp *http;
	char host[64], err[1024];
	char *tok;

	if (c->listen_sslen != 0) {
		lis = evconnlistener_new_bind(mbase, main_accept, NULL,
		    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 1024,
		    (struct sockaddr *)&c->listen_ss, (int)c->listen_sslen);
		if (lis == NULL)
			fatal("listen %s", c->listen);
		lguard_add(lis, admin_lguard_shed, NULL);
		netcheck_add_self((struct sockaddr *)&c->listen_ss, c->listen_sslen);
	}
	if (c->admin_socket != NULL &&
	    admin_start(mbase, c->admin_socket, reload_addons, err, sizeof(err)) == -1)
		fatalx("%s", err);
	if (c->admin_sslen != 0) {
		listen_host(c->admin_listen, host, sizeof(host));
		if ((tok = daemon_read_secret(c->admin_token_file, ADMIN_TOKEN_FILE_MAX,
		    err, sizeof(err))) == NULL)
			fatalx("admin.token_file %s", err);
		if (admin_http_start(mbase, host, ntohs(((struct sockaddr_in *)&c->admin_ss)->sin_port),
		    tok, reload_addons, err, sizeof(err)) == -1)
			fatalx("%s", err);
		explicit_bzero(tok, strlen(tok));
		free(tok);
		netcheck_add_self((struct sockaddr *)&c->admin_ss, c->admin_sslen);
	}
	if (c->metrics_sslen != 0) {
		listen_host(c->metrics_listen, host, sizeof(host));
		struct evhttp_bound_socket *bs = NULL;

		http = evhttp_new(mbase);
		if (http == NULL || (bs = evhttp_bind_socket_with_handle(http, host,
		    ntohs(((struct sockaddr_in *)&c->metrics_ss)->sin_port))) == NULL)
			fatalx("metrics.listen %s: cannot bind", c->metrics_listen);
		lguard_add(evhttp_bound_socket_get_listener(bs), admin_lguard_shed, NULL);
		evhttp_set_cb(http, "/metrics", metrics_cb, NULL);
		evhttp_set_gencb(http, notfound_cb, NULL);
		netcheck_add_self((struct sockaddr *)&c->metrics_ss, c->metrics_sslen);
	}
	return lis;
}

/* The signals, the heap trim and the addon file watch. */
static void
start_timers(void)
{
	struct timeval trim = { 2, 0 };
	struct event *ev;
	int sigs[] = { SIGHUP, SIGTERM, SIGINT };
	size_t i;

	for (i = 0; i < NELEM(sigs); i++) {
		ev = evsignal_new(mbase, sigs[i], sig_cb, NULL);
		event_add(ev, NULL);
	}
	ev = event_new(mbase, -1, EV_PERSIST, trim_cb, NULL);
	event_add(ev, &trim);
	if (the_proxy.conf->addon_watch_ms > 0 && the_proxy.conf->addons.n > 0) {
		struct timeval tv = { the_proxy.conf->addon_watch_ms / 1000,
		    (the_proxy.conf->addon_watch_ms % 1000) * 1000 };
		ev = event_new(mbase, -1, EV_PERSIST, watch_cb, NULL);
		event_add(ev, &tv);
	}
}

int
main(int argc, char **argv)
{
	static const struct daemon_desc desc = {
		usage_text, pconf_print_help, pconf_print_markdown, admin_call
	};
	struct daemon_args o;
	struct evconnlistener *lis;
	char err[1024];
	int nw, rc;

	jsonmem_init();
	/*
	 * glibc hands the top of a worker's arena back (madvise) whenever more
	 * than 128 KiB of it is free, and the next buffers fault every page in
	 * again: a bulk tunnel download made 1,000 madvise calls in 3 s.
	 * trim_cb gives free pages back instead, when the proxy is quiet.
	 */
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	if (daemon_parse_args(&desc, argc, argv, &o, &rc) == -1)
		return rc;
	pthread_mutex_init(&the_proxy.src_mtx, NULL);
	the_proxy.audit_fd = -1;
	if ((the_proxy.conf = pconf_load(o.file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "egress-proxy: %s\n", err);
		return 1;
	}
	secsrc_set_timeout(the_proxy.conf->secret_cmd_ms);
	if (o.check) {
		rc = check_only();
		pconf_free(the_proxy.conf);
		return rc;
	}
	if (log_init("egress-proxy", o.verbosity, the_proxy.conf->log_file) == -1) {
		fprintf(stderr, "egress-proxy: log.file %s: %s\n", the_proxy.conf->log_file,
		    strerror(errno));
		return 1;
	}
	log_set_json(the_proxy.conf->log_json);
	(void)lguard_raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	daemon_libevent_log();
	daemon_oom_protect();
	evthread_use_pthreads();
	nw = start_engine();
	lis = start_listeners();
	start_timers();
	if (credwatch_start(the_proxy.conf->secret_watch_ms) == -1)
		fatalx("the secret refresh thread");
	log_info("listening on %s with %d workers%s%s",
	    the_proxy.conf->listen ? the_proxy.conf->listen : "-", nw,
	    the_proxy.conf->admin_socket ? ", admin " : "",
	    the_proxy.conf->admin_socket ? the_proxy.conf->admin_socket : "");
	event_base_dispatch(mbase);
	admin_stop();
	credwatch_stop();
	ghapp_revoker_stop();
	if (lis != NULL) {
		lguard_del(lis);
		evconnlistener_free(lis);
	}
	proxy_workers_stop();
	log_info("stopped");
	return 0;
}
