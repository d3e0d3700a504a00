/*
 * metrics.c: the Prometheus exposition text (see metrics.h). Every counter
 * family is one row of families[] (a new counter is a new row or sample);
 * the text reads them with atomic loads, from any thread, and writes
 * nothing but b.
 */
#include <stdatomic.h>
#include <stddef.h>

#include "addon.h"
#include "attrib.h"
#include "ghapp.h"
#include "buf.h"
#include "certcache.h"
#include "credtok.h"
#include "credwatch.h"
#include "metrics.h"
#include "proxy.h"
#include "sandbox.h"

static void
sb_metrics(struct sandbox *sb, void *arg)
{
	(void)sb;
	(void)arg;
}

/* The most samples (label sets) of one family: egress_proxy_refused_total's. */
#define METRIC_SAMPLES_MAX	9

/*
 * The counter families, in output order, one row each: name, type, help,
 * then its samples (labels, "" for none, and the counter; a NULL counter
 * ends the list).
 */
static const struct metric_family {
	const char		*name, *type, *help;
	struct {
		const char		*labels;
		const atomic_long	*v;
	}			 s[METRIC_SAMPLES_MAX];
} families[] = {
	{ "egress_proxy_connections", "gauge", "open client connections",
	    { { "", &the_proxy.st.conns } } },
	{ "egress_proxy_connections_total", "counter", "accepted client connections",
	    { { "", &the_proxy.st.conns_total } } },
	{ "egress_proxy_connections_asleep", "gauge",
	    "idle intercepted client connections waiting without a bufferevent",
	    { { "", &the_proxy.st.conns_asleep } } },
	{ "egress_proxy_connections_unidentified", "gauge",
	    "open connections on the main listener not yet identified as a sandbox",
	    { { "", &the_proxy.st.conns_unid } } },
	{ "egress_proxy_unidentified_closed_total", "counter",
	    "unidentified connections closed by the proxy, by reason",
	    { { "{reason=\"evicted\"}", &the_proxy.st.unid_evicted },
	      { "{reason=\"refused\"}", &the_proxy.st.unid_refused },
	      { "{reason=\"expired\"}", &the_proxy.st.unid_expired },
	      { "{reason=\"shed\"}", &the_proxy.st.unid_shed } } },
	{ "egress_proxy_accept_paused_total", "counter",
	    "times accepting paused because descriptors or memory ran short",
	    { { "", &the_proxy.st.accept_paused } } },
	{ "egress_proxy_upstream_failures_total", "counter",
	    "upstream dials that failed, by stage",
	    { { "{stage=\"resolve\"}", &the_proxy.st.resolve_failed },
	      { "{stage=\"connect\"}", &the_proxy.st.connect_failed } } },
	{ "egress_proxy_token_requests_total", "counter",
	    "GitHub App token requests sent to the token endpoint, by result",
	    { { "{result=\"ok\"}", &ghapp_requests_ok },
	      { "{result=\"failed\"}", &ghapp_requests_failed } } },
	{ "egress_proxy_token_backoff_total", "counter",
	    "token requests not sent because the installation's endpoint is backing off (failed closed)",
	    { { "", &ghapp_backoff_refused } } },
	{ "egress_proxy_token_revocations_total", "counter",
	    "GitHub App tokens of deregistered sandboxes revoked (or found invalid) and given up on",
	    { { "{result=\"ok\"}", &ghapp_revoked_ok },
	      { "{result=\"failed\"}", &ghapp_revoked_failed } } },
	{ "egress_proxy_oauth_token_requests_total", "counter",
	    "token exchanges of oauth2 and registry credentials sent to token endpoints (realms), by result",
	    { { "{result=\"ok\"}", &credtok_requests_ok },
	      { "{result=\"failed\"}", &credtok_requests_failed } } },
	{ "egress_proxy_oauth_token_backoff_total", "counter",
	    "requests failed closed without an exchange because the credential's token endpoint is backing off",
	    { { "", &credtok_backoff_refused } } },
	{ "egress_proxy_tunnels", "gauge", "open tunnels",
	    { { "{mode=\"blind\"}", &the_proxy.st.tunnels_blind },
	      { "{mode=\"intercept\"}", &the_proxy.st.tunnels_intercept } } },
	{ "egress_proxy_connect_total", "counter", "CONNECT decisions",
	    { { "{decision=\"intercept\"}", &the_proxy.st.connect_intercept },
	      { "{decision=\"tunnel\"}", &the_proxy.st.connect_tunnel },
	      { "{decision=\"deny\"}", &the_proxy.st.connect_deny },
	      { "{decision=\"error\"}", &the_proxy.st.connect_error } } },
	{ "egress_proxy_requests_total", "counter", "intercepted and plain requests",
	    { { "{injected=\"true\"}", &the_proxy.st.req_injected },
	      { "{injected=\"false\"}", &the_proxy.st.req_plain } } },
	{ "egress_proxy_secret_refreshes_total", "counter",
	    "named credentials' file: and cmd: secrets read again without a reload, by result (changed: a new value swapped in; failed: the last good value kept)",
	    { { "{result=\"changed\"}", &credwatch_changed },
	      { "{result=\"failed\"}", &credwatch_failed } } },
	{ "egress_proxy_credential_requests_total", "counter",
	    "intercepted requests that got a named credential (credentials of the addons)",
	    { { "", &the_proxy.st.req_cred } } },
	{ "egress_proxy_refused_total", "counter", "refusals by reason",
	    { { "{reason=\"auth\"}", &the_proxy.st.ref_auth },
	      { "{reason=\"limit\"}", &the_proxy.st.ref_limit },
	      { "{reason=\"ssrf\"}", &the_proxy.st.ref_ssrf },
	      { "{reason=\"misdirected\"}", &the_proxy.st.ref_misdirected },
	      { "{reason=\"badrequest\"}", &the_proxy.st.ref_badrequest },
	      { "{reason=\"addon\"}", &the_proxy.st.ref_addon },
	      { "{reason=\"upstream_tls\"}", &the_proxy.st.ref_upstream_tls },
	      { "{reason=\"policy_body\"}", &the_proxy.st.ref_gate },
	      { "{reason=\"upstream_response\"}", &the_proxy.st.ref_upstream_resp } } },
	{ "egress_proxy_bytes_total", "counter", "bytes relayed",
	    { { "{dir=\"up\"}", &the_proxy.st.bytes_up },
	      { "{dir=\"down\"}", &the_proxy.st.bytes_down } } },
	{ "egress_proxy_addon_errors_total", "counter", "addon hook errors (failed closed)",
	    { { "", &addon_errors_total } } },
	{ "egress_proxy_addon_reloads_total", "counter", "addon reloads",
	    { { "{result=\"ok\"}", &the_proxy.st.reload_ok },
	      { "{result=\"failed\"}", &the_proxy.st.reload_failed } } },
	{ "egress_proxy_upstream_pool", "gauge", "idle upstream TLS connections parked for reuse",
	    { { "", &the_proxy.st.pool_idle } } },
	{ "egress_proxy_upstream_pool_total", "counter", "upstream pool events",
	    { { "{event=\"parked\"}", &the_proxy.st.pool_parked },
	      { "{event=\"reused\"}", &the_proxy.st.pool_reused },
	      { "{event=\"lent\"}", &the_proxy.st.pool_lent },
	      { "{event=\"dropped\"}", &the_proxy.st.pool_dropped },
	      { "{event=\"retried\"}", &the_proxy.st.pool_retried } } },
};

/* The HELP and TYPE lines of a family. */
static int
metric_head(struct buf *b, const char *name, const char *type, const char *help)
{
	return buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void
metrics_text(struct buf *b)
{
	const struct metric_family *f;
	size_t i;
	int rc = 0;

	sandbox_foreach(sb_metrics, NULL);
	for (f = families; f < families + NELEM(families); f++) {
		rc |= metric_head(b, f->name, f->type, f->help);
		for (i = 0; i < METRIC_SAMPLES_MAX && f->s[i].v != NULL; i++)
			rc |= buf_addf(b, "%s%s %ld\n", f->name, f->s[i].labels,
			    atomic_load(f->s[i].v));
	}
	/* The two sizes that are not counters. */
	rc |= metric_head(b, "egress_proxy_sandboxes", "gauge", "registered sandboxes");
	rc |= buf_addf(b, "egress_proxy_sandboxes %zu\n", sandbox_count());
	rc |= metric_head(b, "egress_proxy_leaf_cache", "gauge", "leaf certificates cached");
	rc |= buf_addf(b, "egress_proxy_leaf_cache %zu\n",
	    the_proxy.cc != NULL ? certcache_size(the_proxy.cc) : (size_t)0);
	(void)rc;
}
