/*
 * conncred.c: the named credentials of a connection's requests (credreq.h
 * has the rules, credtok.h the oauth2 access tokens): which ones its
 * sandbox may use on its target, and, after the hook, putting them in,
 * waiting (in CS_HOOK) for an oauth2 credential's token exchange when its
 * token is not cached. A token that cannot be had fails the request closed
 * (502 with the reason), never sent with the placeholder or without it.
 *
 * Called by proxy.c; calls conn.c (answers) and the credential modules.
 */
#include <stdatomic.h>
#include <stddef.h>

#include "addon.h"
#include "cred.h"
#include "credreq.h"
#include "credtok.h"
#include "httpreq.h"
#include "proxy_int.h"
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

int
conncred_apply(struct conn *c, void (*ready)(void *arg, const char *err))
{
	char why[512], *toks[CREDREQ_MAX];
	int st, r;

	if (c->ncred == 0)
		return 0;
	if ((r = credtok_get(c->w->ct, c->cred, c->ncred, toks, why, sizeof(why), ready,
	    c)) != 0) {
		if (r == 1) {
			/* the exchange's own timeout (timeouts.hook) ends first */
			c->deadline = util_mono_coarse_ms() + the_proxy.conf->hook_ms + 2000;
			return 1;
		}
		conncred_fail(c, why);
		return -1;
	}
	st = credreq_apply(c->req, c->cred, c->ncred, toks, c->sb->id, c->tgt->hosthdr, why,
	    sizeof(why));
	credtok_toks_free(toks, c->ncred);
	if (st != 0) {
		atomic_fetch_add(&the_proxy.st.ref_badrequest, 1);
		conn_respond(c, st, "credential", why);
		return -1;
	}
	if (c->req->creds[0] != '\0')
		atomic_fetch_add(&the_proxy.st.req_cred, 1);
	return 0;
}

void
conncred_fail(struct conn *c, const char *err)
{
	atomic_fetch_add(&the_proxy.st.ref_addon, 1);
	conn_respond(c, 502, "token_endpoint", err);
}
