/*
 * ids.h: the three id grammars the parts exchange, defined once.
 *
 *   session id   X-Session-Id, X-Org-Id, X-User-Id: chosen by clients, so
 *                a generous but log- and label-safe set:
 *                [A-Za-z0-9._:@+=-]{1,128}
 *   sandbox id   chosen by the orchestrator, used as a directory name, a
 *                cgroup, a pod name and a DNS label: [a-z0-9][a-z0-9-]{0,62}
 *   proxy id     the identity a sandbox has at the egress proxy (a sandbox
 *                id, or a proxy pod's registration key): [A-Za-z0-9._:@-]{1,127}
 *
 * Each check takes a NUL-terminated string and returns 1 if it matches.
 */
#ifndef IDS_H
#define IDS_H

#define ID_SESSION_MAX	128	/* longest session/org/user id */
#define ID_SANDBOX_MAX	64	/* buffer size for a sandbox id, NUL included */
#define ID_PROXY_MAX	127	/* longest proxy id */

int	id_session_valid(const char *);
int	id_sandbox_valid(const char *);
int	id_proxy_valid(const char *);
/* A W3C trace context traceparent: "<2 hex>-<32 hex>-<16 hex>-<2 hex>",
 * lower case, version not ff, trace and parent ids not all zero. */
#define ID_TRACEPARENT_LEN	55
int	id_traceparent_valid(const char *);

#endif
