/*
 * main.c: the orchestrator daemon. Gives each coding-agent session an
 * isolated sandbox driven over MCP (Streamable HTTP at /mcp) and REST
 * (/v1/sessions). See docs/operator-guide.md.
 *
 *   orchestrator [-dnv] -f FILE | --help | --print-docs
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "buf.h"
#include "appctl.h"
#include "conf.h"
#include "jsonmem.h"
#include "api/homes.h"
#include "daemon.h"
#include "lguard.h"
#include "log.h"
#include "runtime/runtime.h"
#include "runtime/fake/fake.h"
#include "server.h"
#include "session/sess.h"
#include "mcp/tools.h"
#include "util.h"
#include "lib/work.h"
#include "xmalloc.h"

#define KEY_MIN	16
#define KEY_MAX	512

/* The daemon's one instance: what the signal and timer callbacks reach. */
static struct {
	struct event_base	*base;
	struct server		*sv;
	struct sessmgr		*mgr;
	struct runtime		*rt;
	const struct conf	*conf;
	struct event		*tick;
	struct event		*heal;	/* every HEAL_MS: sessmgr_heal */
	struct event		*drain_check;
	struct event		*drain_deadline;
	struct event		*drain_flush;
	long long		 flush_until;	/* ms: last replies' deadline */
	int			 draining;
} orch;

#define DRAIN_FLUSH_MS	2000	/* after the deadline: for the error replies
				 * to be written before the daemon exits */

static const char usage_text[] =
    "usage: orchestrator [-dnv] -f file\n"
    "       orchestrator --help | --print-docs\n"
    "  -f file  configuration (YAML)\n"
    "  -n       check the configuration and the key, print \"configuration OK\", exit\n"
    "  -d       debug: log to stderr, verbose\n"
    "  -v       more verbose (repeatable)\n";

static void
print_keys(FILE *fp)
{
	cfg_print_help(conf_keys, conf_nkeys, fp);
}

static void
print_docs(FILE *fp)
{
	cfg_print_markdown(conf_keys, conf_nkeys, fp);
}

/* Reads the key from key_file or the environment; clears the env copy. */
static int
load_key(const struct conf *c, char **key, char *err, size_t errlen)
{
	const char *v;
	char e[512];

	*key = NULL;
	if (c->key_file != NULL) {
		/* the key, a line ending and some slack for white space */
		if ((*key = daemon_read_secret(c->key_file, KEY_MAX + 64, e,
		    sizeof(e))) == NULL) {
			snprintf(err, errlen, "key_file %s", e);
			return -1;
		}
	} else if (c->key_env != NULL && (v = getenv(c->key_env)) != NULL) {
		*key = xstrdup(v);
	}
	/* Never hand the key to a child (agents, sandboxes). */
	if (c->key_env != NULL)
		unsetenv(c->key_env);
	if (*key == NULL) {
		snprintf(err, errlen, "no key: set key_file in the configuration or "
		    "the %s environment variable (refusing to serve without one)",
		    c->key_env ? c->key_env : "key");
		return -1;
	}
	if (strlen(*key) < KEY_MIN || strlen(*key) > KEY_MAX) {
		snprintf(err, errlen, "the key must be %d to %d characters", KEY_MIN,
		    KEY_MAX);
		free(*key);
		*key = NULL;
		return -1;
	}
	for (v = *key; *v != '\0'; v++)
		if (*v <= ' ' || *v > '~') {
			snprintf(err, errlen, "the key must be printable ASCII without spaces");
			free(*key);
			*key = NULL;
			return -1;
		}
	return 0;
}

static struct runtime *
make_runtime(struct conf *c, char *err, size_t errlen)
{
	if (strcmp(c->runtime, "fake") == 0)
		return runtime_fake_new(c->fake_state_dir, c->fake_agent,
		    c->fake_proxy_admin, c->fake_proxy_addr, c->fake_proxy_ca,
		    c->fake_create_delay_ms, c->fake_list_delay_ms,
		    err, errlen);
	if (strcmp(c->runtime, "local") == 0) {
#ifdef HAVE_RT_LOCAL
		return runtime_local_new(&c->local, err, errlen);
#else
		snprintf(err, errlen, "runtime local: not built into this binary");
		return NULL;
#endif
	}
#ifdef HAVE_RT_K8S
	c->k8s.base = orch.base;
	return runtime_k8s_new(&c->k8s, err, errlen);
#else
	snprintf(err, errlen, "runtime kubernetes: not built into this binary");
	return NULL;
#endif
}

/* The runtime's image names into create_sandbox's schema (tools.h):
 * every tick, the first at start, so an image added later shows up. */
static void
images_refresh(void)
{
	cJSON *im = orch.rt->ops->images(orch.rt);

	(void)tools_set_images(im);
	cJSON_Delete(im);
}

static void
tick_run(void *arg UNUSED)
{
	images_refresh();	/* the first tick runs at start */
	sessmgr_tick(orch.mgr);
	homes_sweep(orch.mgr, orch.conf);
}

/* How often the runtime repairs what a peer's restart lost (egress
 * registrations after the proxy restarted): the outage's upper bound. */
#define HEAL_MS 2000

static void
heal_run(void *arg UNUSED)
{
	sessmgr_heal(orch.mgr);
}

static void
heal_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg UNUSED)
{
	if (!orch.draining)
		work_submit(heal_run, NULL, NULL);
}

static void
tick_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg UNUSED)
{
	if (!orch.draining)
		work_submit(tick_run, NULL, NULL);
}

static void
drain_check_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg UNUSED)
{
	if (server_inflight(orch.sv) == 0 && server_output_pending(orch.sv) == 0) {
		log_info("drained: no call in flight; exiting (sandboxes keep running)");
		event_base_loopexit(orch.base, NULL);
	}
}

static void
drain_flush_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg UNUSED)
{
	if (server_output_pending(orch.sv) == 0 || util_mono_ms() >=
	    orch.flush_until) {
		log_info("drain: %d replies still unwritten; exiting",
		    server_output_pending(orch.sv));
		event_base_loopexit(orch.base, NULL);
	}
}

/* Every call still running gets an error reply; exit once written. */
static void
drain_deadline_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg UNUSED)
{
	struct timeval tv = { 0, 20000 };
	int n = server_inflight(orch.sv), answered;

	answered = server_abort_inflight(orch.sv);
	log_warnx("drain deadline passed with %d calls in flight: %d answered "
	    "with an error; exiting (sandboxes keep running)", n, answered);
	if (orch.drain_check != NULL)
		event_del(orch.drain_check);
	orch.flush_until = util_mono_ms() + DRAIN_FLUSH_MS;
	orch.drain_flush = event_new(orch.base, -1, EV_PERSIST, drain_flush_cb, NULL);
	event_add(orch.drain_flush, &tv);
}

static void
sig_cb(evutil_socket_t sig, short ev UNUSED, void *arg UNUSED)
{
	struct timeval tv;

	if (orch.draining) {
		log_info("signal %d again: exiting now", (int)sig);
		event_base_loopexit(orch.base, NULL);
		return;
	}
	orch.draining = 1;
	log_info("signal %d: draining (listener open; new calls and /readyz "
	    "get 503; %d calls in flight, deadline %lldms)", (int)sig,
	    server_inflight(orch.sv),
	    orch.conf->drain_timeout_ms);
	sessmgr_set_draining(orch.mgr);
	server_drain(orch.sv);
	orch.drain_check = event_new(orch.base, -1, EV_PERSIST, drain_check_cb, NULL);
	tv.tv_sec = 0;
	tv.tv_usec = 50000;
	event_add(orch.drain_check, &tv);
	orch.drain_deadline = evtimer_new(orch.base, drain_deadline_cb, NULL);
	tv.tv_sec = orch.conf->drain_timeout_ms / 1000;
	tv.tv_usec = (orch.conf->drain_timeout_ms % 1000) * 1000;
	event_add(orch.drain_deadline, &tv);
}

int
main(int argc, char **argv)
{
	static const struct daemon_desc desc = {
		usage_text, print_keys, print_docs, NULL
	};
	struct daemon_args o;
	int rc;
	struct conf conf;
	struct runtime *rt = NULL;
	struct event *sigterm = NULL, *sigint = NULL;
	struct timeval tv;
	char err[1024], *key = NULL;
	long long max_fds;

	jsonmem_init();
	if (daemon_parse_args(&desc, argc, argv, &o, &rc) == -1)
		return rc;
	rc = 1;
	if (conf_load(&conf, o.file, err, sizeof(err)) == -1) {
		fprintf(stderr, "orchestrator: %s\n", err);
		conf_free(&conf);
		return 1;
	}
	if (load_key(&conf, &key, err, sizeof(err)) == -1) {
		fprintf(stderr, "orchestrator: %s\n", err);
		conf_free(&conf);
		return 1;
	}
	if (o.check) {
		printf("configuration OK\n");
		explicit_bzero(key, strlen(key));
		free(key);
		conf_free(&conf);
		return 0;
	}
	if (log_init("orchestrator", o.debug ? LOG_LVL_DEBUG : LOG_LVL_INFO + o.verbose,
	    o.debug ? NULL : conf.log_file) == -1) {
		fprintf(stderr, "orchestrator: log file %s: %s\n", conf.log_file,
		    strerror(errno));
		goto out;
	}
	log_set_json(conf.log_json);
	daemon_libevent_log();
	daemon_oom_protect();
	signal(SIGPIPE, SIG_IGN);
	max_fds = lguard_raise_nofile();
	if (tools_init() == -1)
		fatalx("tool schemas do not parse");
	if (evthread_use_pthreads() == -1)
		fatalx("evthread_use_pthreads failed");
	if ((orch.base = event_base_new()) == NULL)
		fatalx("event_base_new failed");
	orch.conf = &conf;
	if ((rt = make_runtime(&conf, err, sizeof(err))) == NULL) {
		log_warnx("runtime %s: %s", conf.runtime, err);
		goto out;
	}
	orch.rt = rt;
	if (work_init(orch.base, (int)conf.workers_min, (int)conf.workers_max) == -1)
		fatalx("cannot start worker threads");
	orch.mgr = sessmgr_new(rt, &conf);
	/* The runtime is the truth: rebuild the sessions before serving. */
	if (sessmgr_reconcile(orch.mgr, 1, err, sizeof(err)) == -1)
		log_warnx("initial reconcile failed (will retry): %s", err);
	if ((orch.sv = server_new(orch.base, &conf, orch.mgr, key, max_fds, err,
	    sizeof(err))) == NULL) {
		log_warnx("%s", err);
		goto out;
	}
	explicit_bzero(key, strlen(key));
	if (appctl_start(orch.mgr, &conf, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		goto out;
	}
	orch.tick = event_new(orch.base, -1, EV_PERSIST, tick_cb, NULL);
	tv.tv_sec = conf.reap_interval_ms / 1000;
	tv.tv_usec = (conf.reap_interval_ms % 1000) * 1000;
	event_add(orch.tick, &tv);
	orch.heal = event_new(orch.base, -1, EV_PERSIST, heal_cb, NULL);
	tv.tv_sec = HEAL_MS / 1000;
	tv.tv_usec = (HEAL_MS % 1000) * 1000;
	event_add(orch.heal, &tv);
	/* First pool refill right away. */
	work_submit(tick_run, NULL, NULL);
	sigterm = evsignal_new(orch.base, SIGTERM, sig_cb, NULL);
	sigint = evsignal_new(orch.base, SIGINT, sig_cb, NULL);
	event_add(sigterm, NULL);
	event_add(sigint, NULL);
	log_info("listening on %s runtime=%s pool.min_idle=%lld idle=%lldms "
	    "lifetime=%lldms", conf.listen, conf.runtime, conf.pool_min_idle,
	    conf.idle_ms, conf.lifetime_ms);
	event_base_dispatch(orch.base);
	rc = 0;
	appctl_stop();
	/* Workers may still be inside runtime or agent calls: do not free what
	 * they use; the process exits and sandboxes keep running. */
	work_shutdown();
	if (orch.tick != NULL)
		event_free(orch.tick);
	if (orch.heal != NULL)
		event_free(orch.heal);
	if (orch.drain_check != NULL)
		event_free(orch.drain_check);
	if (orch.drain_deadline != NULL)
		event_free(orch.drain_deadline);
	if (orch.drain_flush != NULL)
		event_free(orch.drain_flush);
	if (sigterm != NULL)
		event_free(sigterm);
	if (sigint != NULL)
		event_free(sigint);
	log_info("exit");
	fflush(NULL);
	_exit(rc);
out:
	free(key);
	if (rt != NULL)
		rt->ops->free(rt);
	conf_free(&conf);
	return rc;
}
