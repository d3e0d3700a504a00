/*
 * conncred.c: the named credentials of a connection's requests (credreq.h
 * has the rules, credtok.h the oauth2 access tokens): which ones its
 * sandbox may use on its target, and, after the hook, putting them in,
 * waiting (in CS_HOOK) for an oauth2 credential's token exchange when its
 * token is not cached. A token that cannot be had fails the request closed
 * (502 with the reason), never sent with the placeholder or without it.
 *
 * A registry credential (credtok.h) gets the token of the scope the
 * request needs (regscope.h): a request whose scope cannot be derived is
 * refused (400); one outside the registry API (not under /v2/) goes
 * without the registry credential.
 *
 * A SigV4 request of a service other than S3 (no x-amz-content-sha256) is
 * signed again once its body is read and hashed (proxy.c's hash gate,
 * conncred_body_signed).
 *
 * An API's 401 to a request that carried an oauth2 or registry access
 * token drops that token (conncred_answered, at the reply's end), so the
 * next request gets a new one; a registry token granted moments ago is
 * kept a while instead (credtok.h).
 *
 * Called by proxy.c; calls conn.c (answers) and the credential modules.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "addon.h"
#include "cred.h"
#include "credreq.h"
#include "credtok.h"
#include "httpreq.h"
#include "log.h"
#include "proxy_int.h"
#include "regscope.h"
#include "sandbox.h"
#include "tgtab.h"
#include "util.h"

/*
 * The named credentials c's sandbox may use on its target (credreq.h), by
 * the addons' current declarations and the sandbox's current policy, into
 * c->cred. The anonymous sandbox gets none. Returns how many.
 */
size_t
conncred_select(struct conn *c)
{
	struct addon_src *src;

	c->ncred = 0;
	cred_set_unref(c->creds);
	c->creds = NULL;
	if (c->sb == NULL || sandbox_is_anonymous(c->sb) || (src = proxy_addons()) == NULL)
		return 0;
	c->creds = addon_src_creds(src);
	addon_src_unref(src);
	conn_attrs_refresh(c);
	c->ncred = credreq_allowed(c->creds, c->attrs != NULL ? c->attrs->policy : NULL,
	    c->tgt->host, c->cred, CREDREQ_MAX);
	return c->ncred;
}

/*
 * The scope r needs from registry credentials into scope (regscope_derive):
 * 0, 1 (not the registry API: none) or -1 with why.
 */
static int
req_scope(const struct hreq *r, char scope[REGSCOPE_MAX], char *why, size_t whylen)
{
	return regscope_derive(h1head_method(&r->hd), r->hd.data.p + r->path_o, r->path_l, scope,
	    REGSCOPE_MAX, why, whylen);
}

int
conncred_apply(struct conn *c, void (*ready)(void *arg, const char *err))
{
	char why[512], scope[REGSCOPE_MAX], *toks[CREDREQ_MAX];
	struct cred *cs[CREDREQ_MAX];
	size_t i, n = 0;
	int st, r, rs = 1;

	if (c->ncred == 0)
		return 0;
	for (i = 0; i < c->ncred; i++)
		if (c->cred[i]->form == CRED_REGISTRY) {
			if ((rs = req_scope(c->req, scope, why, sizeof(why))) == -1) {
				atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
				conn_respond(c, 400, "bad_request", why);
				return -1;
			}
			break;
		}
	for (i = 0; i < c->ncred; i++)
		if (c->cred[i]->form != CRED_REGISTRY || rs == 0)
			cs[n++] = c->cred[i];
	if (n == 0)
		return 0;
	if ((r = credtok_get(c->w->ct, cs, n, rs == 0 ? scope : NULL, toks, why, sizeof(why),
	    ready, c)) != 0) {
		if (r == 1) {
			/* the exchange's own timeout (timeouts.hook) ends first */
			c->deadline = util_mono_coarse_ms() + the_proxy.conf->hook_ms + 2000;
			return 1;
		}
		conncred_fail(c, why);
		return -1;
	}
	st = credreq_apply(c->req, cs, n, toks, c->sb->id, c->tgt->hosthdr, why, sizeof(why));
	credtok_toks_free(toks, n);
	if (st != 0) {
		atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
		conn_respond(c, st, "credential", why);
		return -1;
	}
	if (c->req->creds[0] != '\0')
		atomic_fetch_add(&the_proxy.st.req_cred, 1);
	return 0;
}

int
conncred_body_signed(struct conn *c, const char *hash)
{
	char why[512];
	int st;

	st = credreq_resign_body(c->req, c->cred, c->ncred, c->sb->id, c->tgt->hosthdr, hash,
	    why, sizeof(why));
	if (st != 0) {
		atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
		conn_respond(c, st, "credential", why);
		return -1;
	}
	atomic_fetch_add(&the_proxy.st.req_cred, 1);
	return 0;
}

void
conncred_fail(struct conn *c, const char *err)
{
	atomic_fetch_add(&the_proxy.st.ref_addon, 1);
	conn_respond(c, 502, "token_endpoint", err);
}

void
conncred_answered(struct conn *c, int status)
{
	static struct log_rate rl;	/* the API's 401s are its peer's to make */
	const struct hreq *r = c->req;
	char item[CRED_NAME_MAX + 16], scope[REGSCOPE_MAX], why[256];
	const char *p;
	size_t i, n;
	long dropped;
	int reg, kept;

	if (status != 401 || r == NULL || !r->sent_named)
		return;
	for (i = 0; i < c->ncred; i++) {
		reg = c->cred[i]->form == CRED_REGISTRY;
		if (c->cred[i]->form != CRED_OAUTH2 && !reg)
			continue;
		/* the request's own scope, derived again: its token is the one dropped */
		if (reg && req_scope(r, scope, why, sizeof(why)) != 0)
			continue;
		n = (size_t)snprintf(item, sizeof(item), "%s:", c->cred[i]->name);
		/* r->creds: "name:how,name:how" */
		for (p = r->creds; (p = strstr(p, item)) != NULL; p += n)
			if (p == r->creds || p[-1] == ',') {
				kept = credtok_invalidate(c->cred[i], reg ? scope : NULL);
				if (log_rate_ok(&rl, 5, 10000, &dropped))
					log_info("conn=%llx credential=%s: the API answered 401, "
					    "%s (%ld similar suppressed)",
					    (unsigned long long)c->id, c->cred[i]->name, kept ?
					    "the token just granted lacks the access, kept a "
					    "while" : "its access token is dropped", dropped);
				break;
			}
	}
}
