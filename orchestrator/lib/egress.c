/*
 * egress.c: the proxy admin protocol, orchestrator side (egress.h,
 * docs/internals/proxy-admin.md). It owns the shape of every admin
 * message the orchestrator sends and the reading of every reply; the
 * runtimes only say which sandbox, which proxy and which transport.
 *
 * Transports: the unix SOCK_SEQPACKET admin socket through common/padmin
 * (one datagram each way, an fd attachable), or HTTP POST /v1/admin
 * through agentc (the project's one blocking HTTP/1.1 client), with the
 * proxy's bearer token. Replies are capped at EGRESS_MAX_REPLY.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "agentc.h"
#include "buf.h"
#include "credfiles.h"
#include "egress.h"
#include "hex.h"
#include "log.h"
#include "padmin.h"
#include "policy.h"
#include "xmalloc.h"

int
egress_admin_set(const struct egress_admin *a)
{
	return (a->unix_path != NULL && a->unix_path[0] != '\0') ||
	    (a->host != NULL && a->host[0] != '\0');
}

/* One request over HTTP: the reply body into b, the status into *st.
 * 0 or -1 with err (transport). */
static int
call_http(const struct egress_admin *a, const char *txt, int timeout_ms,
    struct buf *b, int *st, char *err, size_t errlen)
{
	struct rt_agent_addr addr;
	struct agentc *c;
	int rc = -1;

	memset(&addr, 0, sizeof(addr));
	if ((size_t)snprintf(addr.host, sizeof(addr.host), "%s", a->host) >=
	    sizeof(addr.host) || (a->token != NULL &&
	    (size_t)snprintf(addr.token, sizeof(addr.token), "%s", a->token) >=
	    sizeof(addr.token))) {
		snprintf(err, errlen, "proxy admin %s: address or token too long",
		    a->host);
		goto out;
	}
	addr.port = (int)a->port;
	if ((c = agentc_open(&addr, timeout_ms, err, errlen)) == NULL)
		goto out;
	if (agentc_request(c, "POST", "/v1/admin", "application/json", txt,
	    strlen(txt), timeout_ms, st, b, err, errlen) == 0)
		rc = 0;
	agentc_close(c);
out:
	explicit_bzero(&addr, sizeof(addr));
	return rc;
}

int
egress_call(const struct egress_admin *a, const cJSON *req, int fd,
    int timeout_ms, cJSON **reply, char *err, size_t errlen)
{
	char e[256], esc[256], *dgram = NULL;
	const char *op, *where = a->unix_path != NULL && a->unix_path[0] != '\0' ?
	    a->unix_path : a->host;
	struct buf b;
	cJSON *rep = NULL, *m;
	const char *rtxt = "";	/* the reply: the datagram or b */
	size_t rlen = 0;
	char *txt;
	int st = 200, rc = -1;

	if (reply != NULL)
		*reply = NULL;
	buf_init(&b, EGRESS_MAX_REPLY);
	txt = cJSON_PrintUnformatted(req);
	if (a->unix_path != NULL && a->unix_path[0] != '\0') {
		dgram = xmalloc(PADMIN_MAX_MSG);
		if (padmin_call(a->unix_path, txt, fd, dgram, PADMIN_MAX_MSG,
		    timeout_ms, e, sizeof(e)) == -1) {
			snprintf(err, errlen, "egress proxy: %s", e);
			goto out;
		}
		rtxt = dgram;
		rlen = strlen(dgram);
	} else if (a->host != NULL && a->host[0] != '\0') {
		if (fd != -1) {
			snprintf(err, errlen, "egress proxy: no fd over HTTP");
			goto out;
		}
		if (call_http(a, txt, timeout_ms, &b, &st, e, sizeof(e)) == -1) {
			snprintf(err, errlen, "egress proxy: %s", e);
			goto out;
		}
		if (b.p != NULL) {
			rtxt = b.p;
			rlen = b.len;
		}
	} else {
		snprintf(err, errlen, "egress proxy: no admin address");
		goto out;
	}
	rep = cJSON_ParseWithLength(rtxt, rlen);
	if (st != 200 || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
		m = cJSON_GetObjectItemCaseSensitive(rep, "error");
		if (cJSON_IsString(m))
			log_escape(esc, sizeof(esc), m->valuestring,
			    strlen(m->valuestring));
		else
			log_escape(esc, sizeof(esc), rtxt, rlen > 100 ? 100 : rlen);
		op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req,
		    "op"));
		if (st != 200)
			snprintf(err, errlen, "egress proxy %s answered %d: %s",
			    where, st, esc);
		else
			snprintf(err, errlen, "egress proxy %s refused %s: %s",
			    where, op != NULL ? op : "request", esc);
		goto out;
	}
	if (reply != NULL) {
		*reply = rep;
		rep = NULL;
	}
	rc = 0;
out:
	cJSON_Delete(rep);
	if (txt != NULL) {
		explicit_bzero(txt, strlen(txt));	/* may hold a secret */
		free(txt);
	}
	buf_free(&b);
	free(dgram);
	return rc;
}

cJSON *
egress_register_msg(const struct egress_reg *r)
{
	static const char *const who[] = { LBL_ORG, LBL_USER, LBL_SESSION };
	cJSON *req = cJSON_CreateObject(), *attrs, *labels, *pol;
	const char *v;
	size_t i;

	cJSON_AddStringToObject(req, "op", "register");
	cJSON_AddStringToObject(req, "id", r->id);
	if (r->secret != NULL)
		cJSON_AddStringToObject(req, "secret", r->secret);
	if (r->nclient_ips > 0)
		cJSON_AddItemToObject(req, "client_ips", cJSON_CreateStringArray(
		    (const char **)r->client_ips, (int)r->nclient_ips));
	attrs = cJSON_AddObjectToObject(req, "attrs");
	for (i = 0; i < NELEM(who); i++)
		if ((v = rt_kv_get(r->labels, r->nlabels, who[i])) != NULL)
			cJSON_AddStringToObject(attrs, who[i], v);
	labels = cJSON_AddObjectToObject(attrs, "labels");
	for (i = 0; i < r->nlabels; i++)
		if (strcmp(r->labels[i].k, LBL_APPS) != 0 &&	/* the gateway's */
		    strcmp(r->labels[i].k, POLICY_LABEL) != 0)
			cJSON_AddStringToObject(labels, r->labels[i].k, r->labels[i].v);
	/* The policy label is the policy (compact JSON): sent as the op's
	 * "policy" object. One that does not parse goes as the string, which
	 * the proxy refuses: the sandbox is then not registered at all
	 * rather than registered without its policy. */
	if ((v = rt_kv_get(r->labels, r->nlabels, POLICY_LABEL)) != NULL) {
		if ((pol = cJSON_Parse(v)) == NULL || !cJSON_IsObject(pol)) {
			cJSON_Delete(pol);
			pol = cJSON_CreateString(v);
		}
		cJSON_AddItemToObject(req, "policy", pol);
	}
	return req;
}

/* Whether e (a member of a credential's "env") is a variable name with a
 * placeholder, as the proxy promises: only such reach a sandbox. */
static int
env_ok(const cJSON *e)
{
	size_t n = strlen(e->string);

	return n > 0 && n <= 64 && !(e->string[0] >= '0' && e->string[0] <= '9') &&
	    strspn(e->string, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789_") == n && credfiles_placeholder_ok(e);
}

/*
 * The register reply's named credentials as "VAR=PLACEHOLDER\n" lines
 * into out: each variable of a credential's "env" object, when both are of
 * the shape the proxy promises (anything else is left out and logged:
 * nothing the proxy sends reaches a sandbox's environment unchecked).
 */
static void
cred_env(const char *id, const cJSON *reply, struct buf *out)
{
	const cJSON *creds = cJSON_GetObjectItemCaseSensitive(reply, "credentials");
	const cJSON *c, *env, *e;

	cJSON_ArrayForEach(c, creds) {
		env = cJSON_GetObjectItemCaseSensitive(c, "env");
		if (env == NULL)
			continue;
		if (!cJSON_IsObject(env)) {
			log_warnx("sandbox=%s proxy register reply: a credential's env "
			    "is not an object; left out", id);
			continue;
		}
		cJSON_ArrayForEach(e, env) {
			if (!env_ok(e)) {
				log_warnx("sandbox=%s proxy register reply: a variable or "
				    "its placeholder is malformed; left out", id);
				continue;
			}
			if (buf_addf(out, "%s=%s\n", e->string, e->valuestring) == -1)
				log_warnx("sandbox=%s credential env full; %s left out", id,
				    e->string);
		}
	}
}

/*
 * The client files for the reply's named credentials (credfiles.h) as
 * the JSON text of {"path":"content"} into out; nothing when there are
 * none. Placeholders, never values.
 */
static void
client_files(const char *id, const cJSON *reply, struct buf *out)
{
	cJSON *files = credfiles_build(id, cJSON_GetObjectItemCaseSensitive(reply,
	    "credentials"));
	char *s;

	if (files == NULL)
		return;
	if ((s = cJSON_PrintUnformatted(files)) == NULL || buf_addstr(out, s) == -1)
		log_warnx("sandbox=%s client files too large; left out", id);
	free(s);
	cJSON_Delete(files);
}

/* Whether s is 1..max of set. */
static int
all_of(const char *s, const char *set, size_t max)
{
	size_t n = strlen(s);

	return n > 0 && n <= max && strspn(s, set) == n;
}

#define EGRESS_HOSTS_MAX	64	/* a credential's hosts (the proxy's CRED_HOSTS_MAX) */

/*
 * The reply's named credentials as the JSON array egress_reg.creds
 * describes into out: names, forms, hosts, the variables cred_env sets
 * and the files credfiles_build writes; never a placeholder. A name,
 * form or host of another shape than the proxy's declaration check
 * allows leaves the credential out (logged).
 */
static void
cred_names(const char *id, const cJSON *reply, struct buf *out)
{
	const cJSON *creds = cJSON_GetObjectItemCaseSensitive(reply, "credentials");
	const cJSON *c, *h, *e, *env;
	const char *form, *paths[4];
	cJSON *a = cJSON_CreateArray(), *one, *l;
	size_t i, n;
	char *s;

	if (!cJSON_IsObject(creds))
		creds = NULL;
	cJSON_ArrayForEach(c, creds) {
		form = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "form"));
		h = cJSON_GetObjectItemCaseSensitive(c, "hosts");
		if (c->string == NULL || !all_of(c->string, "abcdefghijklmnopqrstuvwxyz0123456789_-",
		    63) || form == NULL || !all_of(form, "abcdefghijklmnopqrstuvwxyz0123456789", 16) ||
		    !cJSON_IsArray(h) || cJSON_GetArraySize(h) > EGRESS_HOSTS_MAX) {
			log_warnx("sandbox=%s proxy register reply: a credential's name, "
			    "form or hosts are malformed; not listed", id);
			continue;
		}
		one = cJSON_CreateObject();
		cJSON_AddStringToObject(one, "name", c->string);
		cJSON_AddStringToObject(one, "form", form);
		l = cJSON_AddArrayToObject(one, "hosts");
		cJSON_ArrayForEach(e, h)
			if (cJSON_IsString(e) && all_of(e->valuestring,
			    "abcdefghijklmnopqrstuvwxyz0123456789.-*?", 253))
				cJSON_AddItemToArray(l, cJSON_CreateString(e->valuestring));
		if (cJSON_GetArraySize(l) != cJSON_GetArraySize(h)) {
			log_warnx("sandbox=%s proxy register reply: credential %s has "
			    "a malformed host; not listed", id, c->string);
			cJSON_Delete(one);
			continue;
		}
		l = cJSON_AddArrayToObject(one, "env");
		if (!cJSON_IsObject(env = cJSON_GetObjectItemCaseSensitive(c, "env")))
			env = NULL;
		cJSON_ArrayForEach(e, env)
			if (env_ok(e))
				cJSON_AddItemToArray(l, cJSON_CreateString(e->string));
		l = cJSON_AddArrayToObject(one, "files");
		n = credfiles_paths(c, paths, NELEM(paths));
		for (i = 0; i < n; i++)
			cJSON_AddItemToArray(l, cJSON_CreateString(paths[i]));
		cJSON_AddItemToArray(a, one);
	}
	if ((s = cJSON_PrintUnformatted(a)) == NULL || buf_addstr(out, s) == -1) {
		log_warnx("sandbox=%s the list of credentials is too large; not kept", id);
		buf_reset(out);
	}
	free(s);
	cJSON_Delete(a);
}

int
egress_register(const struct egress_admin *a, const struct egress_reg *r,
    char *err, size_t errlen)
{
	cJSON *req = egress_register_msg(r), *reply = NULL;
	int rc;

	rc = egress_call(a, req, r->listen_fd, EGRESS_REGISTER_MS,
	    r->cred_env != NULL || r->client_files != NULL || r->creds != NULL ?
	    &reply : NULL, err, errlen);
	if (rc == 0 && r->cred_env != NULL)
		cred_env(r->id, reply, r->cred_env);
	if (rc == 0 && r->client_files != NULL)
		client_files(r->id, reply, r->client_files);
	if (rc == 0 && r->creds != NULL)
		cred_names(r->id, reply, r->creds);
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return rc;
}

void
egress_deregister(const struct egress_admin *a, const char *id)
{
	cJSON *req;
	char err[512];

	if (!egress_admin_set(a))
		return;
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "op", "deregister");
	cJSON_AddStringToObject(req, "id", id);
	if (egress_call(a, req, -1, EGRESS_ADMIN_MS, NULL, err, sizeof(err)) == -1)
		log_warnx("sandbox=%s proxy deregister failed: %s", id, err);
	cJSON_Delete(req);
}

void
egress_trace(const struct egress_admin *a, const char *id, const char *tp)
{
	static struct log_rate lr;
	cJSON *req;
	char err[512];
	long dropped;

	if (!egress_admin_set(a))
		return;
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "op", "trace");
	cJSON_AddStringToObject(req, "id", id);
	if (tp != NULL)
		cJSON_AddStringToObject(req, "traceparent", tp);
	if (egress_call(a, req, -1, EGRESS_ADMIN_MS, NULL, err, sizeof(err)) == -1 &&
	    log_rate_ok(&lr, 1, 60000, &dropped))
		log_warnx("sandbox=%s proxy trace failed: %s (%ld similar not "
		    "logged)", id, err, dropped);
	cJSON_Delete(req);
}

/* One stats request of the given form ("summary", or "ids" after after). */
static int
stats_call(const struct egress_admin *a, const char *form, const char *after,
    cJSON **rep, char *err, size_t errlen)
{
	cJSON *req = cJSON_CreateObject();
	int rc;

	cJSON_AddStringToObject(req, "op", "stats");
	cJSON_AddBoolToObject(req, form, 1);
	if (after != NULL)
		cJSON_AddStringToObject(req, "after", after);
	rc = egress_call(a, req, -1, EGRESS_ADMIN_MS, rep, err, errlen);
	cJSON_Delete(req);
	return rc;
}

/* The boot id and count of a stats reply into out. 0, or -1 with err. */
static int
stats_head(const cJSON *rep, struct egress_ids *out, char *err, size_t errlen)
{
	const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
	    rep, "boot_id"));
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(rep, "count");
	const cJSON *all = cJSON_GetObjectItemCaseSensitive(rep, "sandboxes");
	size_t n;

	/* (A proxy older than these forms ignores them and sends every
	 * sandbox's counters: counted, and read as one page of ids.) */
	if (cJSON_IsNumber(c) && c->valuedouble >= 0 && c->valuedouble <= 1e12)
		out->count = (long long)c->valuedouble;
	else if (cJSON_IsArray(all))
		out->count = cJSON_GetArraySize(all);
	else {
		snprintf(err, errlen, "egress proxy: stats: no count");
		return -1;
	}
	out->boot_id[0] = '\0';
	if (b != NULL && (n = strlen(b)) > 0 && n < sizeof(out->boot_id) &&
	    strspn(b, "0123456789abcdef") == n)
		memcpy(out->boot_id, b, n + 1);
	return 0;
}

int
egress_stats_summary(const struct egress_admin *a, struct egress_ids *out,
    char *err, size_t errlen)
{
	cJSON *rep = NULL;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (stats_call(a, "summary", NULL, &rep, err, errlen) == 0)
		rc = stats_head(rep, out, err, errlen);
	cJSON_Delete(rep);
	return rc;
}

static int
ids_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

int
egress_stats_ids(const struct egress_admin *a, struct egress_ids *out,
    char *err, size_t errlen)
{
	struct egress_ids page;
	const cJSON *it, *next, *ids, *all;
	cJSON *rep = NULL;
	char *after = NULL;
	size_t cap = 0;
	const char *s;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	for (;;) {
		if (stats_call(a, "ids", after, &rep, err, errlen) == -1 ||
		    stats_head(rep, &page, err, errlen) == -1)
			goto out;
		if (after == NULL)
			memcpy(out->boot_id, page.boot_id, sizeof(out->boot_id));
		else if (strcmp(out->boot_id, page.boot_id) != 0) {
			snprintf(err, errlen, "egress proxy: stats: the boot id "
			    "changed between pages (restarted)");
			goto out;
		}
		out->count = page.count;
		if ((ids = cJSON_GetObjectItemCaseSensitive(rep, "ids")) == NULL)
			all = cJSON_GetObjectItemCaseSensitive(rep, "sandboxes");
		else
			all = ids;
		cJSON_ArrayForEach(it, all) {
			if ((s = cJSON_GetStringValue(ids != NULL ? it :
			    cJSON_GetObjectItemCaseSensitive(it, "id"))) == NULL)
				continue;
			if (out->n == cap) {
				cap = cap != 0 ? cap * 2 : 256;
				out->v = xreallocarray(out->v, cap, sizeof(*out->v));
			}
			out->v[out->n++] = xstrdup(s);
		}
		next = cJSON_GetObjectItemCaseSensitive(rep, "next");
		if (!cJSON_IsString(next))
			break;
		/* a next not past after would loop forever */
		if (after != NULL && strcmp(next->valuestring, after) <= 0) {
			snprintf(err, errlen, "egress proxy: stats: page cursor "
			    "did not advance");
			goto out;
		}
		free(after);
		after = xstrdup(next->valuestring);
		cJSON_Delete(rep);
		rep = NULL;
	}
	if (out->n > 0)
		qsort(out->v, out->n, sizeof(*out->v), ids_cmp);
	rc = 0;
out:
	free(after);
	cJSON_Delete(rep);
	return rc;
}

int
egress_ids_has(const struct egress_ids *ids, const char *id)
{
	return ids->n > 0 && bsearch(&id, ids->v, ids->n, sizeof(*ids->v),
	    ids_cmp) != NULL;
}

void
egress_ids_free(struct egress_ids *ids)
{
	size_t i;

	for (i = 0; i < ids->n; i++)
		free(ids->v[i]);
	free(ids->v);
	ids->v = NULL;
	ids->n = 0;
}

int
egress_secret(char out[EGRESS_SECRET_LEN + 1])
{
	unsigned char r[EGRESS_SECRET_LEN / 2];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -1;
	hex_encode(r, sizeof(r), out);
	explicit_bzero(r, sizeof(r));
	return 0;
}

int
egress_proxy_env(const char *id, const char *secret, const char *hostport,
    const char *no_proxy, const char *ca_file, char *out, size_t outlen)
{
	static const char *const proxies[] = { "HTTP_PROXY", "HTTPS_PROXY",
	    "http_proxy", "https_proxy" };
	static const char *const cas[] = { "SSL_CERT_FILE", "GIT_SSL_CAINFO",
	    "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE" };
	struct buf b;
	size_t i;
	int rc = 0;

	if (outlen == 0)
		return -1;
	buf_init(&b, outlen - 1);
	for (i = 0; i < NELEM(proxies); i++)
		rc |= secret != NULL ?
		    buf_addf(&b, "%s=http://%s:%s@%s\n", proxies[i], id, secret,
		    hostport) :
		    buf_addf(&b, "%s=http://%s\n", proxies[i], hostport);
	if (no_proxy != NULL)
		rc |= buf_addf(&b, "NO_PROXY=%s\nno_proxy=%s\n", no_proxy,
		    no_proxy);
	for (i = 0; ca_file != NULL && i < NELEM(cas); i++)
		rc |= buf_addf(&b, "%s=%s\n", cas[i], ca_file);
	if (rc != 0 || b.len >= outlen) {
		out[0] = '\0';
		rc = -1;
	} else {
		memcpy(out, b.p != NULL ? b.p : "", b.len);
		out[b.len] = '\0';
	}
	if (b.p != NULL)
		explicit_bzero(b.p, b.len);
	buf_free(&b);
	return rc;
}
