/*
 * connaudit.c: the audit records of a connection, what it tells audit.c.
 * One line per request answered (forwarded, refused after its head, or
 * failed), with the status the client got; one per CONNECT (its 200 or its
 * refusal); one per refusal before any head was parsed; one per blind
 * tunnel when it closes; nothing when audit.log is unset (w->audit is
 * NULL). c->aud_connect / c->aud_req say a line is due: the first of the
 * answer (conn_respond), the success or the close (conn_kill) writes it,
 * so each gets exactly one.
 *
 * Called by conn.c (answers, conn_kill) and proxy.c; calls audit.c, and
 * credtok.c at a request's end: an API's 401 to a request that carried an
 * oauth2 access token drops that token (credtok_invalidate), so the next
 * request gets a new one (here because every request's end, with its final
 * status, passes here once).
 */
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "cred.h"
#include "credtok.h"
#include "httpreq.h"
#include "log.h"
#include "proxy_int.h"
#include "sandbox.h"

/* The upstream refused r with 401: drop the access tokens of the oauth2 credentials r carried. */
static void
creds_unauthorized(struct conn *c, const struct hreq *r)
{
	char item[CRED_NAME_MAX + 16];
	const char *p;
	size_t i, n;

	for (i = 0; i < c->ncred; i++) {
		if (c->cred[i]->form != CRED_OAUTH2)
			continue;
		n = (size_t)snprintf(item, sizeof(item), "%s:", c->cred[i]->name);
		/* r->creds: "name:how,name:how" */
		for (p = r->creds; (p = strstr(p, item)) != NULL; p += n)
			if (p == r->creds || p[-1] == ',') {
				credtok_invalidate(c->cred[i]);
				log_info("conn=%llx credential=%s: the API answered 401, its access "
				    "token is dropped", (unsigned long long)c->id, c->cred[i]->name);
				break;
			}
	}
}

/* The audit line of c's current request, answered with status (0: none). */
void
connaudit_req(struct conn *c, int status, const char *code, const char *detail)
{
	struct hreq *r = c->req;
	struct audit_rec a;

	c->aud_req = 0;
	if (status == 401 && r != NULL && r->sent_named)
		creds_unauthorized(c, r);
	if (c->w->audit == NULL || r == NULL)
		return;
	memset(&a, 0, sizeof(a));
	a.sandbox = c->sb != NULL ? c->sb->id : NULL;
	a.host = c->tgt->hostport;
	a.conn = c->id;
	a.type = c->mode == MODE_INTERCEPT ? "intercept" : "http";
	a.method = h1head_method(&r->hd);
	a.path = r->hd.data.p + r->path_o;
	a.path_len = r->path_l;
	if (r->canon && (r->raw_l != r->path_l ||
	    memcmp(r->hd.data.p + r->raw_o, a.path, r->raw_l) != 0)) {
		a.client_path = r->hd.data.p + r->raw_o;
		a.client_path_len = r->raw_l;
	}
	a.status = status;
	a.bytes_up = c->req_up;
	a.bytes_down = c->req_down;
	/* What was written upstream, not what the addon asked for. */
	a.injected = r->sent_cred;
	a.rule = r->rule;
	a.creds = r->creds[0] != '\0' && r->sent_named ? r->creds : NULL;
	a.reason = code;
	a.detail = detail;
	audit_request(c->w->audit, &a);
}

/* The audit line of c's CONNECT: 200 or the refusal (0: none sent). */
void
connaudit_connect(struct conn *c, int status, const char *code, const char *detail)
{
	struct audit_rec a;

	c->aud_connect = 0;
	if (c->w->audit == NULL)
		return;
	memset(&a, 0, sizeof(a));
	a.sandbox = c->sb != NULL ? c->sb->id : NULL;
	a.host = c->tgt->hostport;
	a.conn = c->id;
	a.status = status;
	a.decision = c->decision;
	a.reason = code;
	a.detail = detail;
	audit_connect(c->w->audit, &a);
}

/*
 * The line of a refusal (status) of c: its CONNECT's, its request's, or a
 * "refused" line when no head was parsed (malformed, too large, timed out).
 */
void
connaudit_refusal(struct conn *c, int status, const char *code, const char *detail)
{
	struct audit_rec a;

	if (c->aud_connect) {
		connaudit_connect(c, status, code, detail);
		return;
	}
	if (c->aud_req && c->req != NULL) {
		connaudit_req(c, status, code, detail);
		return;
	}
	c->aud_req = 0;
	if (c->w->audit == NULL || status < 400)
		return;
	memset(&a, 0, sizeof(a));
	a.sandbox = c->sb != NULL ? c->sb->id : NULL;
	a.host = c->tgt->hostport[0] != '\0' ? c->tgt->hostport : NULL;
	a.conn = c->id;
	a.status = status;
	a.reason = code;
	a.detail = detail;
	audit_refused(c->w->audit, &a);
}

/* The audit line of c, a blind tunnel closing. */
void
connaudit_tunnel(struct conn *c)
{
	struct audit_rec a;

	if (c->w->audit == NULL || c->sb == NULL)
		return;
	memset(&a, 0, sizeof(a));
	a.sandbox = c->sb->id;
	a.host = c->tgt->hostport;
	a.conn = c->id;
	a.bytes_up = c->tot_up;
	a.bytes_down = c->tot_down;
	audit_tunnel(c->w->audit, &a);
}
