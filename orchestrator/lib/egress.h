/*
 * egress.h: the orchestrator's side of the egress proxy admin protocol
 * (docs/internals/proxy-admin.md), in one place. Every runtime registers
 * and deregisters its sandboxes through these calls; nothing else builds
 * an admin message.
 *
 * Rules:
 * - A sandbox's identity at the proxy (the "attrs" of register) is
 *   derived from its session labels alone: org, user and session are the
 *   labels of those names (absent when the label is), and "labels" is the
 *   whole set but the gateway's apps label and the policy label; the
 *   policy label (policy.h, compact JSON) is the op's "policy" object. So a runtime keeps no second copy of it: whatever rebuilds
 *   the labels (list() after a restart) can register the sandbox again.
 * - The transport is the proxy's unix admin socket (local and fake
 *   runtimes, with an optional listener fd attached) or HTTP POST
 *   /v1/admin with a bearer token (a Kubernetes proxy pod). One request,
 *   one reply, bounded by EGRESS_MAX_REPLY and a timeout.
 * - Calls are blocking and thread-safe (no shared state); runtimes call
 *   them from worker threads, never from an event loop.
 */
#ifndef EGRESS_H
#define EGRESS_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "attrib.h"
#include "buf.h"
#include "runtime/runtime.h"

/* Longest admin reply read (stats of a large fleet stay well under). */
#define EGRESS_MAX_REPLY	(1024 * 1024)
#define EGRESS_SECRET_LEN	32	/* hex chars of a generated secret */
#define EGRESS_REGISTER_MS	5000	/* register: the proxy may load addons */
#define EGRESS_ADMIN_MS		3000	/* every other op */

/* Where one proxy's admin endpoint is. Strings are borrowed. */
struct egress_admin {
	const char	*unix_path;	/* admin socket; NULL/"": use host */
	const char	*host;		/* HTTP: proxy pod IP (v4 or v6) */
	long long	 port;		/* HTTP: admin port */
	const char	*token;		/* HTTP: bearer token */
};

/* One registration. Strings are borrowed for the call. */
struct egress_reg {
	const char		*id;		/* the sandbox id */
	const struct rt_kv	*labels;	/* session labels: the identity */
	size_t			 nlabels;
	const char		*secret;	/* NULL: identified by listen_fd */
	int			 listen_fd;	/* -1: none; else sent, not closed */
	const char *const	*client_ips;	/* secret only valid from these */
	size_t			 nclient_ips;
	/* Out, or NULL: the reply's named credentials as "VAR=PLACEHOLDER\n"
	 * lines, each variable a credential's declaration asks for (issue 30;
	 * docs/addons.md, "Named credentials"). Placeholders, never values. */
	struct buf		*cred_env;
	/* Out, or NULL: the client files of those credentials (credfiles.h)
	 * as the JSON text {"relative path":"content"}; nothing when none. */
	struct buf		*client_files;
	/* Out, or NULL: the credentials in force for the sandbox (the
	 * policy's, or the proxy's defaults) as the JSON text of an array,
	 * [{"name","form","hosts":[...],"env":["VAR"],"files":["path"]}]
	 * ("[]": none), for the session's views (issue 30). Names only:
	 * no placeholder, no value. env and files are what cred_env and
	 * client_files got from each; a credential whose name, form or
	 * hosts are not of the shapes the proxy declares is left out. */
	struct buf		*creds;
};

/* 1 if a has somewhere to send to (a socket path or a host). */
int	egress_admin_set(const struct egress_admin *a);

/*
 * Sends req (an admin request object) and parses the reply. 0 if the
 * proxy answered {"ok":true}, with the reply in *reply when reply is not
 * NULL (caller frees with cJSON_Delete); -1 with err otherwise (transport
 * failure, or the proxy's own error text). fd (-1: none) is attached on
 * the unix transport and refused on HTTP.
 */
int	egress_call(const struct egress_admin *a, const cJSON *req, int fd,
	    int timeout_ms, cJSON **reply, char *err, size_t errlen) WUNRES;

/* The register request for r (caller frees with cJSON_Delete). */
cJSON	*egress_register_msg(const struct egress_reg *r);

/* Registers r at a. 0, or -1 with err ("egress proxy: ..."). */
int	egress_register(const struct egress_admin *a, const struct egress_reg *r,
	    char *err, size_t errlen) WUNRES;

/*
 * Deregisters id at a; best effort (a proxy that is gone has forgotten the
 * sandbox already): failures are logged with the id, not returned.
 */
void	egress_deregister(const struct egress_admin *a, const char *id);
/*
 * Sets (tp, a W3C traceparent) or clears (NULL) the trace context the
 * proxy writes into sandbox id's audit lines: the MCP call in flight.
 * Failures are logged (at most once a minute), never fatal.
 */
void	egress_trace(const struct egress_admin *a, const char *id,
	    const char *tp);

/*
 * What a heal asks a proxy (stats "summary" and "ids"): its boot id, the
 * number of sandboxes registered there, and with egress_stats_ids the
 * whole set of their ids, sorted (egress_ids_has: a binary search).
 */
struct egress_ids {
	char		  boot_id[64];	/* "" if the proxy sent none usable */
	long long	  count;
	char		**v;		/* sorted; egress_stats_ids only */
	size_t		  n;
};

/* Stats "summary" of a into out (no ids). 0, or -1 with err. */
int	egress_stats_summary(const struct egress_admin *a, struct egress_ids *out,
	    char *err, size_t errlen) WUNRES;

/*
 * Every id registered at a, page by page (stats "ids"), into out (caller
 * frees with egress_ids_free, on failure too). 0, or -1 with err (also
 * when the boot id changed between pages: the proxy restarted).
 */
int	egress_stats_ids(const struct egress_admin *a, struct egress_ids *out,
	    char *err, size_t errlen) WUNRES;

/* 1 if ids (from egress_stats_ids) has id. */
int	egress_ids_has(const struct egress_ids *ids, const char *id);
void	egress_ids_free(struct egress_ids *ids);

/* A fresh random secret: EGRESS_SECRET_LEN hex chars + NUL. 0 or -1. */
int	egress_secret(char out[EGRESS_SECRET_LEN + 1]) WUNRES;

/*
 * The proxy variables a sandbox's shell gets, as "K=V\n" lines written to
 * out: HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy pointing at
 * hostport ("127.0.0.1:3128", "[fd00::1]:3128"), with "id:secret@" when
 * secret is not NULL; NO_PROXY and no_proxy set to no_proxy unless it is
 * NULL; and, when
 * ca_file is not NULL, SSL_CERT_FILE, GIT_SSL_CAINFO, REQUESTS_CA_BUNDLE,
 * NODE_EXTRA_CA_CERTS and CURL_CA_BUNDLE set to it. 0, or -1 if out is
 * too small (out is then ""). out holds a credential: wipe it after use.
 */
int	egress_proxy_env(const char *id, const char *secret, const char *hostport,
	    const char *no_proxy, const char *ca_file, char *out, size_t outlen)
	    WUNRES;

#endif
