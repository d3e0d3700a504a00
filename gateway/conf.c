/*
 * conf.c: the app gateway's key table. Every key is documented here once;
 * docs/gateway.md embeds `app-gateway --print-docs`.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "strnum.h"
#include "xmalloc.h"

#define O(m) offsetof(struct gwconf, m)
#define DAY (86400LL * 1000)
static const struct cfg_key keys[] = {
	{ "listen", CFG_STR, O(listen), 0, 0, "127.0.0.1:8081", "APP_GATEWAY_LISTEN",
	  "host:port browsers connect to (plain HTTP, or HTTPS with tls.cert)" },
	{ "domain", CFG_STR, O(domain), 0, 0, NULL, "APP_GATEWAY_DOMAIN",
	  "apps domain (required): an app is served at <name>-<sandbox>.<domain>; the orchestrator's apps.domain" },
	{ "control.socket", CFG_PATH, O(ctl_socket), 0, 0, NULL, "APP_GATEWAY_CONTROL_SOCKET",
	  "the orchestrator's unix control socket (apps.control_socket); this or control.connect is required" },
	{ "control.connect", CFG_STR, O(ctl_connect), 0, 0, NULL, "APP_GATEWAY_CONTROL_CONNECT",
	  "host:port of the orchestrator's TCP control listener (apps.control_listen, Kubernetes)" },
	{ "control.token_file", CFG_PATH, O(ctl_token_file), 0, 0, NULL, "APP_GATEWAY_CONTROL_TOKEN_FILE",
	  "file holding the token sent in hello (required with control.connect)" },
	{ "tls.cert", CFG_PATH, O(tls_cert), 0, 0, NULL, "APP_GATEWAY_TLS_CERT",
	  "certificate chain (PEM) for HTTPS, normally a wildcard *.<domain>; empty: plain HTTP" },
	{ "tls.key", CFG_PATH, O(tls_key), 0, 0, NULL, "APP_GATEWAY_TLS_KEY",
	  "private key (PEM) of tls.cert (required with it)" },
	{ "scheme", CFG_STR, O(scheme), 0, 0, NULL, "APP_GATEWAY_SCHEME",
	  "the scheme browsers use: https behind an Ingress or load balancer that ends TLS (cookies __Host- and Secure, origins https://, X-Forwarded-Proto https); empty: https with tls.cert, else http" },
	{ "user", CFG_STR, O(user), 0, 0, NULL, NULL,
	  "user to run as after binding the listener and reading the key and token (started as root); empty: stay" },
	{ "limits.max_conns", CFG_INT, O(max_conns), 1, 10000000, "4096", NULL,
	  "open client connections in total; beyond it the oldest idle keep-alive connection is closed, or the new one if none is idle" },
	{ "limits.max_conns_per_addr", CFG_INT, O(max_conns_per_addr), 1, 10000000, "512", NULL,
	  "open client connections per client address; beyond it new ones are closed at once" },
	{ "limits.header_bytes", CFG_SIZE, O(header_bytes), 1024, 1048576, "32KiB", NULL,
	  "largest request or response head; larger gets 431 (request) or 502 (response)" },
	{ "limits.header_fields", CFG_INT, O(header_fields), 4, 1000, "100", NULL,
	  "most header lines in one head; more gets 431 (request) or 502 (response)" },
	{ "buffers.high_watermark", CFG_SIZE, O(high_watermark), 4096, 67108864, "256KiB", NULL,
	  "a side stops being read while the other side has this much unsent" },
	{ "timeouts.head", CFG_DURATION, O(head_ms), 100, 600000, "30s", NULL,
	  "time to receive a complete request head once its first byte arrived (408 and close)" },
	{ "timeouts.idle", CFG_DURATION, O(idle_ms), 100, DAY, "60s", NULL,
	  "keep-alive connection closed after this long between requests (also: a new connection that sends nothing)" },
	{ "timeouts.upgraded", CFG_DURATION, O(upgraded_ms), 0, 30 * DAY, "1h", NULL,
	  "an upgraded connection (WebSocket) is closed after this long with no byte either way; 0: never" },
	{ "timeouts.connect", CFG_DURATION, O(connect_ms), 100, 600000, "10s", NULL,
	  "for an address answer to open (Kubernetes), the TCP connect to the app (504 beyond)" },
	{ "timeouts.wake", CFG_DURATION, O(wake_ms), 100, 600000, "30s", NULL,
	  "a request waits this long for the orchestrator's answer to open, which may wake (thaw or start) the sandbox first; beyond it 503 with Retry-After and a page saying the sandbox is starting" },
	{ "timeouts.response", CFG_DURATION, O(response_ms), 0, DAY, "5m", NULL,
	  "the app must start its response head this long after the request was sent (504 beyond); also the longest pause in a body either way; 0: none" },
	{ "upstream.keepalive", CFG_INT, O(upstream_keepalive), 0, 10000, "32", NULL,
	  "idle connections to an app kept per route after their client connection ended, reused by the next client connection without asking the orchestrator (at most limits.max_conns over all routes); 0: none" },
	{ "timeouts.upstream_idle", CFG_DURATION, O(upstream_idle_ms), 100, 600000, "15s", NULL,
	  "an idle kept connection to an app is closed after this long; while it is kept, its sandbox counts as in use (activity) and is not frozen" },
	{ "activity_interval", CFG_DURATION, O(activity_ms), 100, DAY, "10s", NULL,
	  "at most one activity message per interval, naming the app hosts that carried traffic or have an open client connection" },
	{ "log.file", CFG_PATH, O(log_file), 0, 0, NULL, "APP_GATEWAY_LOG_FILE",
	  "log file; empty: stderr" },
	{ "log.json", CFG_BOOL, O(log_json), 0, 0, "false", NULL,
	  "log lines as JSON objects" },
};
#undef O

void
conf_print_help(FILE *fp)
{
	cfg_print_help(keys, NELEM(keys), fp);
}

void
conf_print_markdown(FILE *fp)
{
	cfg_print_markdown(keys, NELEM(keys), fp);
}

int
conf_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char host[128];
	const char *colon, *es;
	size_t hl;
	long long port;

	memset(ss, 0, sizeof(*ss));
	if ((colon = strrchr(s, ':')) == NULL ||
	    strnum_ll(colon + 1, 1, 65535, &port, &es) == -1)
		return -1;
	hl = (size_t)(colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		return -1;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (hl == 0 || strcmp(host, "*") == 0) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		*len = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		*len = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*sin6);
		return 0;
	}
	return -1;
}

struct gwconf *
conf_load(const char *path, char *err, size_t errlen)
{
	struct gwconf *c = xcalloc(1, sizeof(*c));
	const char *f = path != NULL ? path : "(defaults)";

	if (cfg_load(keys, NELEM(keys), c, path, err, errlen) == -1)
		goto fail;
	if (c->listen == NULL || conf_parse_addr(c->listen, &c->listen_ss, &c->listen_sslen) == -1) {
		snprintf(err, errlen, "%s: listen: expected host:port", f);
		goto fail;
	}
	if (c->domain == NULL || c->domain[0] == '\0' || c->domain[0] == '.' ||
	    strlen(c->domain) > 200) {
		snprintf(err, errlen, "%s: domain: required (the apps domain, e.g. apps.localhost)", f);
		goto fail;
	}
	for (char *p = c->domain; *p != '\0'; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	if ((c->ctl_socket == NULL) == (c->ctl_connect == NULL)) {
		snprintf(err, errlen, "%s: exactly one of control.socket and control.connect is required", f);
		goto fail;
	}
	if (c->ctl_connect != NULL && c->ctl_token_file == NULL) {
		snprintf(err, errlen, "%s: control.connect needs control.token_file", f);
		goto fail;
	}
	if (c->ctl_connect != NULL && strrchr(c->ctl_connect, ':') == NULL) {
		snprintf(err, errlen, "%s: control.connect: expected host:port", f);
		goto fail;
	}
	if ((c->tls_cert == NULL) != (c->tls_key == NULL)) {
		snprintf(err, errlen, "%s: tls.cert and tls.key go together", f);
		goto fail;
	}
	c->tls = c->tls_cert != NULL;
	if (c->scheme != NULL && strcmp(c->scheme, "http") != 0 &&
	    strcmp(c->scheme, "https") != 0) {
		snprintf(err, errlen, "%s: scheme: expected http or https", f);
		goto fail;
	}
	if (c->tls && c->scheme != NULL && strcmp(c->scheme, "http") == 0) {
		snprintf(err, errlen, "%s: scheme: http, but tls.cert makes the "
		    "listener https", f);
		goto fail;
	}
	c->https = c->tls || (c->scheme != NULL && strcmp(c->scheme, "https") == 0);
	return c;
fail:
	conf_free(c);
	return NULL;
}

void
conf_free(struct gwconf *c)
{
	if (c == NULL)
		return;
	cfg_free(keys, NELEM(keys), c);
	free(c);
}
