/*
 * config.c: the egress proxy's key table and the derived forms. Every key
 * is documented here once; docs/proxy.md embeds `egress-proxy --print-docs`.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "config.h"
#include "strnum.h"
#include "xmalloc.h"

#define O(m) offsetof(struct pconf, m)
#define DAY (86400LL * 1000)
static const struct cfg_key keys[] = {
	{ "listen", CFG_STR, O(listen), 0, 0, "127.0.0.1:3128", "EGRESS_PROXY_LISTEN",
	  "main listener (host:port); sandboxes identify with Proxy-Authorization Basic id:secret; empty: none" },
	{ "workers", CFG_INT, O(workers), 0, 256, "0", NULL,
	  "worker threads, each with its own event loop and Lua state; 0: one per CPU" },
	{ "admin.socket", CFG_PATH, O(admin_socket), 0, 0, NULL, "EGRESS_PROXY_ADMIN_SOCKET",
	  "unix SOCK_SEQPACKET admin socket (docs/internals/proxy-admin.md), created mode 0600; empty: none" },
	{ "admin.listen", CFG_STR, O(admin_listen), 0, 0, NULL, "EGRESS_PROXY_ADMIN_LISTEN",
	  "optional host:port for the admin API over HTTP (POST /v1/admin, the same JSON; Bearer token) for remote orchestrators (Kubernetes)" },
	{ "admin.token_file", CFG_PATH, O(admin_token_file), 0, 0, NULL, "EGRESS_PROXY_ADMIN_TOKEN_FILE",
	  "file holding the bearer token admin.listen requires (required with it)" },
	{ "ca.cert", CFG_PATH, O(ca_cert), 0, 0, "/var/lib/egress-proxy/ca.crt", "EGRESS_PROXY_CA_CERT",
	  "CA certificate (PEM) that signs leaf certificates; generated with ca.key on first start if both are missing" },
	{ "ca.key", CFG_PATH, O(ca_key), 0, 0, "/var/lib/egress-proxy/ca.key", "EGRESS_PROXY_CA_KEY",
	  "CA private key (PEM, EC P-256 when generated, written mode 0600); never leaves the proxy" },
	{ "credentials.placeholder_key", CFG_PATH, O(placeholder_key), 0, 0, NULL, "EGRESS_PROXY_PLACEHOLDER_KEY",
	  "32-byte key the placeholders of named credentials derive from (made at first start, mode 0600), so placeholders written into sandboxes survive a restart; unset: derived from ca.key" },
	{ "credentials.secret_watch", CFG_DURATION, O(secret_watch_ms), 0, DAY, "2s", NULL,
	  "how often the files of named credentials' file: secrets are checked for changes (device, inode, size, mtime, ctime) and read again; 0: read at load only" },
	{ "credentials.cmd_timeout", CFG_DURATION, O(secret_cmd_ms), 100, 600000, "5s", NULL,
	  "how long a cmd: secret's command may run before it is killed (at load and at each refresh)" },
	{ "ca.export", CFG_PATH, O(ca_export), 0, 0, NULL, "EGRESS_PROXY_CA_EXPORT",
	  "a copy of the CA certificate is written here at start (mode 0644) for sandboxes to trust" },
	{ "ca.leaf_validity", CFG_DURATION, O(leaf_validity_ms), 3600000, 30 * DAY, "24h", NULL,
	  "validity of minted leaf certificates (they are re-minted before expiry)" },
	{ "ca.leaf_cache", CFG_INT, O(leaf_cache), 1, 1000000, "1024", NULL,
	  "leaf certificates kept in the per-host LRU cache" },
	{ "upstream.ca_bundle", CFG_PATH, O(upstream_ca_bundle), 0, 0, NULL, "EGRESS_PROXY_UPSTREAM_CA",
	  "extra CA certificates (PEM) trusted for upstream TLS besides the system store" },
	{ "upstream.allow_cidrs", CFG_LIST, O(allow_cidrs_l), 0, 0, NULL, NULL,
	  "destination CIDRs allowed although denied by default (loopback, link-local, RFC1918, CGNAT, ULA, multicast, the proxy's own addresses), each with an optional port: 127.0.0.1/32:8443, [::1]/128:8443 (without one: every port)" },
	{ "upstream.pool_max", CFG_INT, O(pool_max), 0, 100000, "64", NULL,
	  "idle upstream TLS connections kept per worker thread for reuse by a later intercepted connection of the SAME sandbox to the same target and address (never across sandboxes); 0: no pool" },
	{ "upstream.pool_per_target", CFG_INT, O(pool_per_target), 1, 100000, "8", NULL,
	  "pooled connections per sandbox, target and address (per worker thread)" },
	{ "resolve", CFG_MAP, O(resolve_m), 0, 0, NULL, NULL,
	  "resolve overrides \"host:port\": \"addr:port\" (like curl --resolve); the dialled address is still checked" },
	{ "anonymous", CFG_BOOL, O(anonymous), 0, 0, "false", NULL,
	  "serve unidentified connections on the main listener as sandbox \"anonymous\" instead of answering 407" },
	{ "default_action", CFG_STR, O(default_action), 0, 0, "tunnel", NULL,
	  "CONNECT decision when no addon decides: tunnel or deny" },
	{ "addons", CFG_LIST, O(addons), 0, 0, NULL, NULL,
	  "Lua addon files, asked in order (docs/addons.md)" },
	{ "addon_config", CFG_MAP, O(addon_config), 0, 0, NULL, NULL,
	  "string map exposed to addons as proxy.config" },
	{ "addon_watch", CFG_DURATION, O(addon_watch_ms), 0, DAY, "2s", NULL,
	  "how often addon files are checked for changes (mtime) and reloaded; 0: only on SIGHUP or admin reload" },
	{ "limits.conns_per_sandbox", CFG_INT, O(conns_per_sandbox), 1, 10000000, "512", NULL,
	  "open client connections per sandbox" },
	{ "limits.tunnels_per_sandbox", CFG_INT, O(tunnels_per_sandbox), 1, 10000000, "256", NULL,
	  "open CONNECT tunnels (blind or intercepted) per sandbox" },
	{ "limits.max_conns", CFG_INT, O(max_conns), 1, 10000000, "65536", NULL,
	  "open client connections in total; accept pauses beyond it" },
	{ "limits.unidentified", CFG_INT, O(unid_max), 1, 10000000, "1024", NULL,
	  "open connections on the main listener not yet identified as a registered sandbox, in total (at most a quarter of limits.max_conns); a new one beyond it closes the oldest unidentified one (idle ones first, none younger than 1 s; up to twice the cap while they all are)" },
	{ "limits.unidentified_per_source", CFG_INT, O(unid_per_source), 1, 10000000, "64", NULL,
	  "unidentified connections per client address; a new one beyond it closes that address's oldest unidentified one (idle ones first, none younger than 1 s; up to twice the cap while they all are)" },
	{ "limits.header_bytes", CFG_SIZE, O(header_bytes), 1024, 1048576, "32KiB", NULL,
	  "largest request or response head (request line and headers); larger gets 431 / 502" },
	{ "limits.headers", CFG_INT, O(max_headers), 4, 1000, "100", NULL,
	  "most header lines in one request head" },
	{ "limits.lua_instructions", CFG_INT, O(lua_instructions), 1000, 1000000000, "1000000", NULL,
	  "VM instructions plus pattern-matching steps of one hook run; exceeding it fails closed" },
	{ "limits.lua_memory", CFG_SIZE, O(lua_memory), 1048576, 4294967296LL, "64MiB", NULL,
	  "memory limit of each worker's Lua state" },
	{ "limits.lua_hook_memory", CFG_SIZE, O(lua_hook_memory), 0, 4294967296LL, "0", NULL,
	  "heap growth allowed to one addon hook run (0: a quarter of limits.lua_memory); over it, that hook fails closed" },
	{ "timeouts.handshake", CFG_DURATION, O(handshake_ms), 100, 600000, "10s", NULL,
	  "TLS handshake with the client or the upstream" },
	{ "timeouts.header", CFG_DURATION, O(header_ms), 100, 600000, "30s", NULL,
	  "time to receive a complete request head once its first byte arrived" },
	{ "timeouts.identify", CFG_DURATION, O(identify_ms), 100, 600000, "10s", NULL,
	  "a connection on the main listener that has not identified (a complete first request head with its Proxy-Authorization) this long after accept is closed (408 if it sent part of a head)" },
	{ "timeouts.idle", CFG_DURATION, O(idle_ms), 100, DAY, "5m", NULL,
	  "connection closed after this long without a byte either way" },
	{ "timeouts.upstream_idle", CFG_DURATION, O(upstream_idle_ms), 100, DAY, "1s", NULL,
	  "an intercepted connection's idle upstream TLS connection is parked or closed after this (about 15 KiB each) and the client connection sleeps (see \"Resources and performance\"); the next request takes a pooled upstream or reconnects with the same checks" },
	{ "timeouts.pool_idle", CFG_DURATION, O(pool_idle_ms), 100, 600000, "4s", NULL,
	  "a pooled idle upstream TLS connection (upstream.pool_max) is closed after this" },
	{ "timeouts.connect", CFG_DURATION, O(connect_ms), 100, 600000, "10s", NULL,
	  "DNS resolution plus TCP connect to the upstream" },
	{ "timeouts.hook", CFG_DURATION, O(hook_ms), 100, 600000, "15s", NULL,
	  "an addon hook, including any token request it waits for" },
	{ "buffers.high_watermark", CFG_SIZE, O(high_watermark), 4096, 67108864, "256KiB", NULL,
	  "a side stops being read while the other side has this much unsent" },
	{ "audit.log", CFG_PATH, O(audit_log), 0, 0, NULL, "EGRESS_PROXY_AUDIT_LOG",
	  "audit log: one JSON line per CONNECT outcome, request, refusal and closed blind tunnel (never a secret; docs/proxy.md); empty: none" },
	{ "log.file", CFG_PATH, O(log_file), 0, 0, NULL, "EGRESS_PROXY_LOG_FILE",
	  "log file; empty: stderr" },
	{ "log.json", CFG_BOOL, O(log_json), 0, 0, "false", NULL,
	  "log lines as JSON objects" },
	{ "metrics.listen", CFG_STR, O(metrics_listen), 0, 0, NULL, NULL,
	  "optional host:port serving GET /metrics (Prometheus text); keep it on loopback" },
};
#undef O

void
pconf_print_help(FILE *fp)
{
	cfg_print_help(keys, NELEM(keys), fp);
}

void
pconf_print_markdown(FILE *fp)
{
	cfg_print_markdown(keys, NELEM(keys), fp);
}

int
pconf_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char host[128];
	const char *colon, *h;
	size_t hl;
	long long port;
	const char *es;

	memset(ss, 0, sizeof(*ss));
	if ((colon = strrchr(s, ':')) == NULL)
		return -1;
	if (strnum_ll(colon + 1, 1, 65535, &port, &es) == -1)
		return -1;
	h = s;
	hl = (size_t)(colon - s);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		return -1;
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (strcmp(host, "*") == 0 || hl == 0) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		sin->sin_addr.s_addr = htonl(INADDR_ANY);
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

int
pconf_parse_cidr(const char *s, struct cidr *c)
{
	char a[64];
	const char *p = s, *end, *slash, *portp = NULL;
	size_t n;
	long long v;
	const char *es;

	memset(c, 0, sizeof(*c));
	if (*p == '[') {
		/* "[v6]", "[v6]/bits", each with an optional ":port" */
		if ((end = strchr(p, ']')) == NULL)
			return -1;
		n = (size_t)(end - p - 1);
		if (n == 0 || n >= sizeof(a))
			return -1;
		memcpy(a, p + 1, n);
		a[n] = '\0';
		if (inet_pton(AF_INET6, a, c->addr) != 1)
			return -1;
		c->family = AF_INET6;
		c->bits = 128;
		p = end + 1;
		if (*p == '/') {
			for (end = p + 1; *end != '\0' && *end != ':'; end++)
				;
			n = (size_t)(end - p - 1);
			if (n == 0 || n >= sizeof(a))
				return -1;
			memcpy(a, p + 1, n);
			a[n] = '\0';
			if (strnum_ll(a, 0, 128, &v, &es) == -1)
				return -1;
			c->bits = (int)v;
			p = end;
		}
		if (*p == ':')
			portp = p + 1;
		else if (*p != '\0')
			return -1;
	} else {
		slash = strchr(p, '/');
		if (strchr(p, ':') != strrchr(p, ':') || (slash == NULL && strchr(p, '.') == NULL)) {
			/* bare IPv6 (no brackets): no port */
			n = slash ? (size_t)(slash - p) : strlen(p);
		} else {
			/* IPv4, "a.b.c.d[/bits][:port]" */
			const char *colon = strchr(p, ':');
			n = slash ? (size_t)(slash - p) : colon ? (size_t)(colon - p) : strlen(p);
			if (colon != NULL && slash != NULL && colon < slash)
				return -1;
			if (colon != NULL)
				portp = colon + 1;
		}
		if (n == 0 || n >= sizeof(a))
			return -1;
		memcpy(a, p, n);
		a[n] = '\0';
		if (inet_pton(AF_INET, a, c->addr) == 1) {
			c->family = AF_INET;
			c->bits = 32;
		} else if (portp == NULL && inet_pton(AF_INET6, a, c->addr) == 1) {
			c->family = AF_INET6;
			c->bits = 128;
		} else
			return -1;
		if (slash != NULL) {
			char b[8];
			size_t bl = portp != NULL ? (size_t)(portp - 1 - slash - 1) : strlen(slash + 1);

			if (bl == 0 || bl >= sizeof(b))
				return -1;
			memcpy(b, slash + 1, bl);
			b[bl] = '\0';
			if (strnum_ll(b, 0, c->bits, &v, &es) == -1)
				return -1;
			c->bits = (int)v;
		}
	}
	if (portp != NULL) {
		if (strnum_ll(portp, 1, 65535, &v, &es) == -1)
			return -1;
		c->port = (int)v;
	}
	return 0;
}

int
pconf_cidr_match(const struct cidr *c, const struct sockaddr *sa)
{
	const unsigned char *a;
	int bits = c->bits, i;

	if (sa->sa_family != c->family)
		return 0;
	if (sa->sa_family == AF_INET) {
		a = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
		if (c->port != 0 && ntohs(((const struct sockaddr_in *)sa)->sin_port) != c->port)
			return 0;
	} else {
		a = (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (c->port != 0 && ntohs(((const struct sockaddr_in6 *)sa)->sin6_port) != c->port)
			return 0;
	}
	for (i = 0; bits >= 8; i++, bits -= 8)
		if (a[i] != c->addr[i])
			return 0;
	if (bits > 0) {
		unsigned char m = (unsigned char)(0xff << (8 - bits));
		if ((a[i] & m) != (c->addr[i] & m))
			return 0;
	}
	return 1;
}

struct pconf *
pconf_load(const char *path, char *err, size_t errlen)
{
	struct pconf *c = xcalloc(1, sizeof(*c));
	char why[256];
	size_t i;

	if (cfg_load(keys, NELEM(keys), c, path, err, errlen) == -1)
		goto fail;
	if (c->listen != NULL && pconf_parse_addr(c->listen, &c->listen_ss,
	    &c->listen_sslen) == -1) {
		snprintf(err, errlen, "%s: listen: expected host:port, not '%.64s'",
		    path, c->listen);
		goto fail;
	}
	if (c->metrics_listen != NULL && pconf_parse_addr(c->metrics_listen,
	    &c->metrics_ss, &c->metrics_sslen) == -1) {
		snprintf(err, errlen, "%s: metrics.listen: expected host:port, not '%.64s'",
		    path, c->metrics_listen);
		goto fail;
	}
	if (c->admin_listen != NULL && (pconf_parse_addr(c->admin_listen, &c->admin_ss,
	    &c->admin_sslen) == -1 || c->admin_token_file == NULL)) {
		snprintf(err, errlen, "%s: admin.listen: expected host:port, and admin.token_file must be set",
		    path);
		goto fail;
	}
	if (c->default_action == NULL || (strcmp(c->default_action, "tunnel") != 0 &&
	    strcmp(c->default_action, "deny") != 0)) {
		snprintf(err, errlen, "%s: default_action: expected tunnel or deny", path);
		goto fail;
	}
	c->deny_default = strcmp(c->default_action, "deny") == 0;
	c->allow = xcalloc(c->allow_cidrs_l.n + 1, sizeof(*c->allow));
	for (i = 0; i < c->allow_cidrs_l.n; i++) {
		if (pconf_parse_cidr(c->allow_cidrs_l.v[i], &c->allow[i]) == -1) {
			snprintf(err, errlen, "%s: upstream.allow_cidrs: bad CIDR '%.64s'",
			    path, c->allow_cidrs_l.v[i]);
			goto fail;
		}
		c->nallow++;
	}
	c->resolve = xcalloc(c->resolve_m.n + 1, sizeof(*c->resolve));
	for (i = 0; i < c->resolve_m.n; i++) {
		struct resolve_entry *r = &c->resolve[i];
		struct target t;
		const char *k = c->resolve_m.k[i];

		if (canon_authority(k, strlen(k), &t, why, sizeof(why)) == -1) {
			snprintf(err, errlen, "%s: resolve: key '%.64s': %s", path, k, why);
			goto fail;
		}
		if (pconf_parse_addr(c->resolve_m.v[i], &r->ss, &r->sslen) == -1 ||
		    strchr(c->resolve_m.v[i], '*') != NULL) {
			snprintf(err, errlen, "%s: resolve: '%.64s': expected addr:port, not '%.64s'",
			    path, k, c->resolve_m.v[i]);
			goto fail;
		}
		snprintf(r->hostport, sizeof(r->hostport), "%s", t.hostport);
		c->nresolve++;
	}
	if (c->addons.n > 64) {
		snprintf(err, errlen, "%s: addons: at most 64 files", path);
		goto fail;
	}
	return c;
fail:
	pconf_free(c);
	return NULL;
}

void
pconf_free(struct pconf *c)
{
	if (c == NULL)
		return;
	cfg_free(keys, NELEM(keys), c);
	free(c->allow);
	free(c->resolve);
	free(c);
}
