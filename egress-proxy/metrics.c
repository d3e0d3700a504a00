/*
 * metrics.c: the Prometheus exposition text (see metrics.h). Reads the
 * counters with atomic loads from any thread; writes nothing but b.
 */
#include <stddef.h>

#include "addon.h"
#include "buf.h"
#include "certcache.h"
#include "metrics.h"
#include "proxy.h"
#include "sandbox.h"

static void
sb_metrics(struct sandbox *sb, void *arg)
{
	(void)sb;
	(void)arg;
}

void
metrics_text(struct buf *b)
{
	struct pstats *s = &the_proxy.st;
	int rc = 0;

	sandbox_foreach(sb_metrics, NULL);
#define METRIC_HEAD(name, type, help) rc |= buf_addf(b, "# HELP " name " " help "\n# TYPE " name " " type "\n")
	METRIC_HEAD("egress_proxy_connections", "gauge", "open client connections");
	rc |= buf_addf(b, "egress_proxy_connections %ld\n", atomic_load(&s->conns));
	METRIC_HEAD("egress_proxy_connections_total", "counter", "accepted client connections");
	rc |= buf_addf(b, "egress_proxy_connections_total %ld\n", atomic_load(&s->conns_total));
	METRIC_HEAD("egress_proxy_connections_asleep", "gauge",
	    "idle intercepted client connections waiting without a bufferevent");
	rc |= buf_addf(b, "egress_proxy_connections_asleep %ld\n", atomic_load(&s->conns_asleep));
	METRIC_HEAD("egress_proxy_tunnels", "gauge", "open tunnels");
	rc |= buf_addf(b, "egress_proxy_tunnels{mode=\"blind\"} %ld\n", atomic_load(&s->tunnels_blind));
	rc |= buf_addf(b, "egress_proxy_tunnels{mode=\"intercept\"} %ld\n", atomic_load(&s->tunnels_intercept));
	METRIC_HEAD("egress_proxy_connect_total", "counter", "CONNECT decisions");
	rc |= buf_addf(b, "egress_proxy_connect_total{decision=\"intercept\"} %ld\n", atomic_load(&s->connect_intercept));
	rc |= buf_addf(b, "egress_proxy_connect_total{decision=\"tunnel\"} %ld\n", atomic_load(&s->connect_tunnel));
	rc |= buf_addf(b, "egress_proxy_connect_total{decision=\"deny\"} %ld\n", atomic_load(&s->connect_deny));
	rc |= buf_addf(b, "egress_proxy_connect_total{decision=\"error\"} %ld\n", atomic_load(&s->connect_error));
	METRIC_HEAD("egress_proxy_requests_total", "counter", "intercepted and plain requests");
	rc |= buf_addf(b, "egress_proxy_requests_total{injected=\"true\"} %ld\n", atomic_load(&s->req_injected));
	rc |= buf_addf(b, "egress_proxy_requests_total{injected=\"false\"} %ld\n", atomic_load(&s->req_plain));
	METRIC_HEAD("egress_proxy_refused_total", "counter", "refusals by reason");
	rc |= buf_addf(b, "egress_proxy_refused_total{reason=\"auth\"} %ld\n", atomic_load(&s->ref_auth));
	rc |= buf_addf(b, "egress_proxy_refused_total{reason=\"limit\"} %ld\n", atomic_load(&s->ref_limit));
	rc |= buf_addf(b, "egress_proxy_refused_total{reason=\"ssrf\"} %ld\n", atomic_load(&s->ref_ssrf));
	rc |= buf_addf(b, "egress_proxy_refused_total{reason=\"misdirected\"} %ld\n", atomic_load(&s->ref_misdirected));
	rc |= buf_addf(b, "egress_proxy_refused_total{reason=\"badrequest\"} %ld\n", atomic_load(&s->ref_badrequest));
	rc |= buf_addf(b, "egress_proxy_refused_total{reason=\"addon\"} %ld\n", atomic_load(&s->ref_addon));
	rc |= buf_addf(b, "egress_proxy_refused_total{reason=\"upstream_tls\"} %ld\n", atomic_load(&s->ref_upstream_tls));
	METRIC_HEAD("egress_proxy_bytes_total", "counter", "bytes relayed");
	rc |= buf_addf(b, "egress_proxy_bytes_total{dir=\"up\"} %ld\n", atomic_load(&s->bytes_up));
	rc |= buf_addf(b, "egress_proxy_bytes_total{dir=\"down\"} %ld\n", atomic_load(&s->bytes_down));
	METRIC_HEAD("egress_proxy_addon_errors_total", "counter", "addon hook errors (failed closed)");
	rc |= buf_addf(b, "egress_proxy_addon_errors_total %ld\n", atomic_load(&addon_errors_total));
	METRIC_HEAD("egress_proxy_addon_reloads_total", "counter", "addon reloads");
	rc |= buf_addf(b, "egress_proxy_addon_reloads_total{result=\"ok\"} %ld\n", atomic_load(&s->reload_ok));
	rc |= buf_addf(b, "egress_proxy_addon_reloads_total{result=\"failed\"} %ld\n", atomic_load(&s->reload_failed));
	METRIC_HEAD("egress_proxy_upstream_pool", "gauge", "idle upstream TLS connections parked for reuse");
	rc |= buf_addf(b, "egress_proxy_upstream_pool %ld\n", atomic_load(&s->pool_idle));
	METRIC_HEAD("egress_proxy_upstream_pool_total", "counter", "upstream pool events");
	rc |= buf_addf(b, "egress_proxy_upstream_pool_total{event=\"parked\"} %ld\n", atomic_load(&s->pool_parked));
	rc |= buf_addf(b, "egress_proxy_upstream_pool_total{event=\"reused\"} %ld\n", atomic_load(&s->pool_reused));
	rc |= buf_addf(b, "egress_proxy_upstream_pool_total{event=\"lent\"} %ld\n", atomic_load(&s->pool_lent));
	rc |= buf_addf(b, "egress_proxy_upstream_pool_total{event=\"dropped\"} %ld\n", atomic_load(&s->pool_dropped));
	rc |= buf_addf(b, "egress_proxy_upstream_pool_total{event=\"retried\"} %ld\n", atomic_load(&s->pool_retried));
	METRIC_HEAD("egress_proxy_sandboxes", "gauge", "registered sandboxes");
	rc |= buf_addf(b, "egress_proxy_sandboxes %zu\n", sandbox_count());
	METRIC_HEAD("egress_proxy_leaf_cache", "gauge", "leaf certificates cached");
	rc |= buf_addf(b, "egress_proxy_leaf_cache %zu\n", the_proxy.cc != NULL ? certcache_size(the_proxy.cc) : (size_t)0);
#undef METRIC_HEAD
	(void)rc;
}
