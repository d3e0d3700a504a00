/*
 * audit.h: the audit log's records (audit.c): one JSON line per request
 * (intercepted or plain http) and per blind tunnel, never a secret; the
 * line format is docs/proxy.md "Audit log and logs". Each worker has its
 * own queue, touched only on its thread: lines are queued, and written
 * together once the current event loop pass is done (one write for many
 * requests under load).
 */
#ifndef PROXY_AUDIT_H
#define PROXY_AUDIT_H

#include <stddef.h>

struct event_base;
struct auditq;

/* What one line says; every pointer is borrowed for the call. */
struct audit_rec {
	const char		*sandbox;	/* sandbox id; NULL: not identified (null) */
	const char		*host;		/* canonical "host:port"; NULL: none yet ("") */
	unsigned long long	 conn;		/* the connection id, as the log's conn= */
	const char		*type;		/* requests: "intercept" or "http" */
	const char		*method;	/* requests: "GET" */
	const char		*path;		/* requests: path_len bytes, any bytes */
	size_t			 path_len;
	const char		*client_path;	/* requests: the client's target when the
						   canonical one (path) was sent; NULL: none */
	size_t			 client_path_len;
	int			 status;	/* requests: what the client got */
	unsigned long long	 bytes_up, bytes_down;	/* requests: body bytes */
	int			 injected;	/* requests: a credential was written upstream */
	const char		*rule;		/* requests: the injecting rule; NULL: none */
	const char		*creds;		/* requests: named credentials applied
						   ("npm:swap,model:bearer"); NULL: none */
	const char		*decision;	/* connect: the addon decision; NULL: none reached */
	const char		*reason;	/* refusals: a reason code ("deny"); NULL: none */
	const char		*detail;	/* refusals: what the client was told; NULL: none */
};

/*
 * A queue of lines for fd (borrowed; stays open), written from base's
 * loop (the worker's). Never freed: workers live as long as the process.
 */
struct auditq	*auditq_new(struct event_base *base, int fd);
/* Writes what is queued now (the worker has stopped: from any thread). */
void	auditq_flush(struct auditq *);

/* Queues the line of a request that got status r->status. */
void	audit_request(struct auditq *, const struct audit_rec *r);
/* Queues the line of a CONNECT's outcome: 200 (decision) or a refusal. */
void	audit_connect(struct auditq *, const struct audit_rec *r);
/* Queues the line of a refusal before any request was parsed (400, 431, 407, 408). */
void	audit_refused(struct auditq *, const struct audit_rec *r);
/*
 * Queues the line of an OAuth2 token exchange (credtok.c): r->host the
 * token endpoint's host, r->method the grant, r->status the endpoint's
 * HTTP status (0: none), r->creds the credential's name, r->reason and
 * r->detail the failure (NULL: obtained), r->path a registry token's
 * scope (NULL: none). Never a token.
 */
void	audit_token(struct auditq *, const struct audit_rec *r);
/* Queues the line of a closed blind tunnel (sandbox, host, byte counts). */
void	audit_tunnel(struct auditq *, const struct audit_rec *r);

#endif
