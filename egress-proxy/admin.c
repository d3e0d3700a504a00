/*
 * admin.c: the admin socket (docs/internals/proxy-admin.md): a unix
 * SOCK_SEQPACKET socket, one JSON object per datagram, an optional
 * listening fd attached to "register" with SCM_RIGHTS; the same requests
 * over HTTP (admin.listen) without fds. Runs on the main thread's event
 * loop. Every op is one row of admin_ops (name, fd or not, handler); every
 * request gets exactly one reply, {"ok":true,...} or {"ok":false,"error"}.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <event2/listener.h>

#include "addon.h"
#include "admin.h"
#include "buf.h"
#include "cred.h"
#include "credreq.h"
#include "ghapp.h"
#include "hex.h"
#include "ids.h"
#include "lguard.h"
#include "log.h"
#include "netcheck.h"
#include "metrics.h"
#include "padmin.h"
#include "proxy.h"
#include "sandbox.h"
#include "xmalloc.h"


#define ADMIN_CLIENTS_MAX 64

struct aclient {
	struct event	*ev;
	int		 fd;
};

static struct event_base *abase;
static struct event *listen_ev;
static int listen_fd = -1;
static int nclients;
static int (*reload_fn)(char *, size_t);
static char sock_path[108];

long
admin_lguard_shed(void *arg, long n)
{
	(void)arg;
	atomic_fetch_add(&the_proxy.st.accept_paused, 1);
	return proxy_shed((int)n);
}

static void
sb_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct sandbox *sb = arg;

	(void)l;
	(void)sa;
	(void)salen;
	if (atomic_load(&sb->dead) || proxy_open_conns() >= the_proxy.conf->max_conns) {
		evutil_closesocket(fd);
		return;
	}
	proxy_dispatch(fd, sandbox_ref(sb));
}

static void
sb_listener_free(struct sandbox *sb)
{
	if (sb->listener != NULL) {
		lguard_del(sb->listener);
		if (sb->listen_sslen != 0)
			netcheck_del_self((struct sockaddr *)&sb->listen_ss, sb->listen_sslen);
		sb->listen_sslen = 0;
		evconnlistener_free(sb->listener);
		sb->listener = NULL;
		sandbox_unref(sb);	/* the listener's reference */
	}
}


static char *
opt_str(cJSON *o, const char *k, int *bad)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (v == NULL || cJSON_IsNull(v))
		return NULL;
	if (!cJSON_IsString(v) || strlen(v->valuestring) > 1024) {
		*bad = 1;
		return NULL;
	}
	return xstrdup(v->valuestring);
}

/* Nesting depth of a JSON value: 1 for a scalar or an empty container. */
static int
json_depth(const cJSON *v, int limit)
{
	const cJSON *it;
	int d, max = 0;

	if (limit <= 0)
		return 1;
	cJSON_ArrayForEach(it, v) {
		if ((d = json_depth(it, limit - 1)) > max)
			max = d;
		if (max >= limit)
			break;
	}
	return 1 + max;
}

/*
 * The register op's "policy": absent or null (0, *out NULL), an object
 * within the bounds (0, *out a copy the caller owns), or -1 with err.
 */
static int
take_policy(cJSON *req, cJSON **out, char *err, size_t errlen)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(req, "policy");
	char *s;
	size_t n;

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v)) {
		snprintf(err, errlen, "register: policy must be an object");
		return -1;
	}
	if (json_depth(v, SB_POLICY_MAX_DEPTH + 1) > SB_POLICY_MAX_DEPTH) {
		snprintf(err, errlen, "register: policy is nested deeper than %d levels",
		    SB_POLICY_MAX_DEPTH);
		return -1;
	}
	if ((s = cJSON_PrintUnformatted(v)) == NULL) {
		snprintf(err, errlen, "register: policy cannot be stored (memory)");
		return -1;
	}
	n = strlen(s);
	free(s);
	if (n > SB_POLICY_MAX_BYTES) {
		snprintf(err, errlen, "register: policy is larger than %d bytes of compact JSON (%zu)",
		    SB_POLICY_MAX_BYTES, n);
		return -1;
	}
	if ((*out = cJSON_Duplicate(v, 1)) == NULL) {
		snprintf(err, errlen, "register: policy cannot be stored (memory)");
		return -1;
	}
	return 0;
}

static void
reply_err(struct buf *r, const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	char *s;

	cJSON_AddBoolToObject(o, "ok", 0);
	cJSON_AddStringToObject(o, "error", msg);
	s = cJSON_PrintUnformatted(o);
	buf_reset(r);
	ign(buf_addstr(r, s));
	free(s);
	cJSON_Delete(o);
}

static void
reply_ok(struct buf *r)
{
	buf_reset(r);
	ign(buf_addstr(r, "{\"ok\":true}"));
}

/*
 * The register reply: ok, and the placeholders of the credentials the
 * sandbox may use, for the orchestrator to write into it (never a value):
 * {"ok":true,"credentials":{"npm":{"form":"bearer","hosts":[...],
 * "placeholder":"PXC...","client":{"npm":"https://...","scope":"@acme"}}}}
 * (client: the file the credential feeds, when its declaration names one).
 */
static void
reply_registered(struct buf *r, const char *id, const cJSON *policy)
{
	struct addon_src *src = proxy_addons();
	struct credset *cs = src != NULL ? addon_src_creds(src) : NULL;
	struct cred *c[CREDSET_MAX];
	char ph[CRED_PH_LEN + 1], kid[CRED_PH_LEN + 1], tph[CRED_PH_LEN + 1] = "";
	cJSON *o, *all, *one, *hosts;
	size_t n, i, k;
	char *s;

	addon_src_unref(src);
	n = credreq_allowed(cs, policy, NULL, c, CREDSET_MAX);
	o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "ok", 1);
	all = cJSON_AddObjectToObject(o, "credentials");
	for (i = 0; i < n; i++) {
		one = cJSON_AddObjectToObject(all, c[i]->name);
		cJSON_AddStringToObject(one, "form", cred_form_name(c[i]->form));
		hosts = cJSON_AddArrayToObject(one, "hosts");
		for (k = 0; k < c[i]->nhosts; k++)
			cJSON_AddItemToArray(hosts, cJSON_CreateString(c[i]->hosts[k]));
		if (c[i]->field != NULL)
			cJSON_AddStringToObject(one, "field", c[i]->field);
		if (c[i]->user != NULL && (c[i]->form == CRED_BASIC || c[i]->form == CRED_REGISTRY))
			cJSON_AddStringToObject(one, "user", c[i]->user);
		cred_placeholder(credreq_key(), id, c[i]->name, CRED_PART_ID, kid);
		cred_placeholder(credreq_key(), id, c[i]->name, CRED_PART_VALUE, ph);
		cJSON_AddStringToObject(one, "placeholder", ph);
		if (c[i]->form == CRED_SIGV4)
			cJSON_AddStringToObject(one, "key_id", kid);
		if (c[i]->token != NULL) {
			cred_placeholder(credreq_key(), id, c[i]->name, CRED_PART_TOKEN, tph);
			cJSON_AddStringToObject(one, "session_token", tph);
		}
		if (c[i]->client != CRED_CLIENT_NONE) {
			cJSON *cl = cJSON_AddObjectToObject(one, "client");

			/* checked at declaration: a URL, id, registry or profile */
			cJSON_AddStringToObject(cl, cred_client_name(c[i]->client),
			    c[i]->client_ref);
			if (c[i]->client_scope != NULL)
				cJSON_AddStringToObject(cl, "scope", c[i]->client_scope);
			if (c[i]->form == CRED_SIGV4 && c[i]->nregions > 0)
				cJSON_AddStringToObject(cl, "region", c[i]->regions[0]);
		}
		if (c[i]->nenv > 0) {
			cJSON *env = cJSON_AddObjectToObject(one, "env");

			/* "NAME" gets the placeholder, "NAME=key_id" the key id's,
			 * "NAME=session_token" the session token's */
			for (k = 0; k < c[i]->nenv; k++) {
				char var[80];
				const char *eq = strchr(c[i]->env[k], '=');

				snprintf(var, sizeof(var), "%.*s", eq != NULL ? (int)(eq -
				    c[i]->env[k]) : (int)strlen(c[i]->env[k]), c[i]->env[k]);
				cJSON_AddStringToObject(env, var, eq == NULL ? ph :
				    strcmp(eq, "=key_id") == 0 ? kid : tph);
			}
		}
	}
	cred_set_unref(cs);
	s = cJSON_PrintUnformatted(o);
	buf_reset(r);
	ign(buf_addstr(r, s != NULL ? s : "{\"ok\":true}"));
	free(s);
	cJSON_Delete(o);
}

static void
op_register(cJSON *req, int fd, struct buf *r)
{
	cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	cJSON *attrs = cJSON_GetObjectItemCaseSensitive(req, "attrs"), *labels, *it;
	struct sbattrs *a;
	struct sandbox *sb;
	struct evconnlistener *l = NULL;
	cJSON *policy;
	char perr[160];
	int bad = 0, created, v;
	socklen_t vl = sizeof(v);

	if (!cJSON_IsString(id) || !id_proxy_valid(id->valuestring)) {
		reply_err(r, "register: id must be 1-127 characters of [A-Za-z0-9._:@-]");
		return;
	}
	if (attrs != NULL && !cJSON_IsObject(attrs)) {
		reply_err(r, "register: attrs must be an object");
		return;
	}
	if (fd != -1) {
		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl) == -1 || v == 0) {
			reply_err(r, "register: the attached fd is not a listening socket");
			return;
		}
		vl = sizeof(v);
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &vl) == -1 || v != SOCK_STREAM) {
			reply_err(r, "register: the attached fd is not a stream socket");
			return;
		}
	}
	if (take_policy(req, &policy, perr, sizeof(perr)) == -1) {
		reply_err(r, perr);
		return;
	}
	{
		struct addon_src *src = proxy_addons();
		struct credset *cs = src != NULL ? addon_src_creds(src) : NULL;
		char cerr[160];
		const char *why;

		addon_src_unref(src);
		why = credreq_policy_check(cs, policy, cerr, sizeof(cerr));
		cred_set_unref(cs);
		if (*why != '\0') {
			snprintf(perr, sizeof(perr), "register: %s", why);
			cJSON_Delete(policy);
			reply_err(r, perr);
			return;
		}
	}
	a = xcalloc(1, sizeof(*a));
	atomic_init(&a->refs, 1);
	a->policy = policy;
	a->secret = opt_str(req, "secret", &bad);
	if (a->secret != NULL && (strlen(a->secret) == 0 || strlen(a->secret) > 256))
		bad = 1;
	if (attrs != NULL) {
		a->org = opt_str(attrs, "org", &bad);
		a->user = opt_str(attrs, "user", &bad);
		a->session = opt_str(attrs, "session", &bad);
		labels = cJSON_GetObjectItemCaseSensitive(attrs, "labels");
		if (labels != NULL && !cJSON_IsObject(labels))
			bad = 1;
		else if (labels != NULL) {
			size_t n = (size_t)cJSON_GetArraySize(labels);
			if (n > 64)
				bad = 1;
			else {
				a->lk = xcalloc(n + 1, sizeof(char *));
				a->lv = xcalloc(n + 1, sizeof(char *));
				cJSON_ArrayForEach(it, labels) {
					if (!cJSON_IsString(it) || strlen(it->string) > 128 ||
					    strlen(it->valuestring) > 1024) {
						bad = 1;
						break;
					}
					a->lk[a->nl] = xstrdup(it->string);
					a->lv[a->nl] = xstrdup(it->valuestring);
					a->nl++;
				}
			}
		}
	}
	{
		cJSON *ips = cJSON_GetObjectItemCaseSensitive(req, "client_ips");
		if (ips != NULL && (!cJSON_IsArray(ips) || cJSON_GetArraySize(ips) > 64))
			bad = 1;
		else if (ips != NULL) {
			a->ips = xcalloc((size_t)cJSON_GetArraySize(ips) + 1, sizeof(*a->ips));
			cJSON_ArrayForEach(it, ips) {
				struct sbaddr *sa = &a->ips[a->nips];
				if (cJSON_IsString(it) && inet_pton(AF_INET, it->valuestring, sa->a) == 1)
					sa->family = AF_INET;
				else if (cJSON_IsString(it) &&
				    inet_pton(AF_INET6, it->valuestring, sa->a) == 1)
					sa->family = AF_INET6;
				else {
					bad = 1;
					break;
				}
				a->nips++;
			}
		}
	}
	if (bad) {
		sbattrs_unref(a);
		reply_err(r, "register: secret, org, user, session and labels must be strings (secret 1-256 bytes, at most 64 labels); client_ips a list of IP addresses");
		return;
	}
	if ((sb = sandbox_register(id->valuestring, a, &created)) == NULL) {
		reply_err(r, "register: too many sandboxes");
		return;
	}
	if (fd != -1) {
		int dup_fd = dup(fd);
		if (dup_fd == -1) {
			sandbox_unref(sb);
			reply_err(r, "register: cannot take the listener fd");
			return;
		}
		evutil_make_socket_nonblocking(dup_fd);
		evutil_make_socket_closeonexec(dup_fd);
		l = evconnlistener_new(abase, sb_accept, sb, LEV_OPT_CLOSE_ON_FREE, 0, dup_fd);
		if (l == NULL) {
			close(dup_fd);
			sandbox_unref(sb);
			reply_err(r, "register: cannot listen on the fd");
			return;
		}
		sb_listener_free(sb);
		sb->listener = l;
		sandbox_ref(sb);	/* held by the listener */
		lguard_add(l, admin_lguard_shed, NULL);
		/* Its address is the proxy's own: never dialled (netcheck). */
		sb->listen_sslen = sizeof(sb->listen_ss);
		if (getsockname(dup_fd, (struct sockaddr *)&sb->listen_ss, &sb->listen_sslen) == -1)
			sb->listen_sslen = 0;
		else
			netcheck_add_self((struct sockaddr *)&sb->listen_ss, sb->listen_sslen);
	}
	log_info("sandbox=%s %s%s%s", sb->id, created ? "registered" : "updated",
	    fd != -1 ? " listener=fd" : "", policy != NULL ? " policy=yes" : "");
	reply_registered(r, sb->id, policy);
	sandbox_unref(sb);
}

static void
op_deregister(cJSON *req, int fd, struct buf *r)
{
	cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	struct sandbox *sb;
	int n;

	(void)fd;
	if (!cJSON_IsString(id)) {
		reply_err(r, "deregister: id missing");
		return;
	}
	if ((sb = sandbox_deregister(id->valuestring)) == NULL) {
		reply_err(r, "deregister: no such sandbox");
		return;
	}
	sb_listener_free(sb);
	proxy_kill_sandbox(sb);
	/* Its own App tokens (minted under a policy) die with it; asynchronous. */
	n = ghapp_revoke_owner(sb->id);
	log_info("sandbox=%s deregistered%s%.0d", sb->id, n > 0 ? " tokens_revoking=" : "", n);
	sandbox_unref(sb);
	reply_ok(r);
}

/*
 * trace {id, traceparent}: the W3C trace context of the orchestrator's call
 * in flight for sandbox id, written into its audit lines until cleared
 * (traceparent null or absent). A malformed value is refused: it goes into
 * every line.
 */
static void
op_trace(cJSON *req, int fd, struct buf *r)
{
	cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	cJSON *tp = cJSON_GetObjectItemCaseSensitive(req, "traceparent");
	struct sandbox *sb;
	const char *v;

	(void)fd;
	if (!cJSON_IsString(id)) {
		reply_err(r, "trace: id missing");
		return;
	}
	if (tp != NULL && !cJSON_IsNull(tp)) {
		v = cJSON_IsString(tp) ? tp->valuestring : "";
		if (!id_traceparent_valid(v)) {
			reply_err(r, "trace: traceparent must be W3C's "
			    "00-<32 hex>-<16 hex>-<2 hex>");
			return;
		}
	} else
		v = NULL;
	if ((sb = sandbox_find(id->valuestring)) == NULL) {
		reply_err(r, "trace: no such sandbox");
		return;
	}
	sandbox_set_trace(sb, v);
	log_debug("sandbox=%s trace=%s", sb->id, v != NULL ? v : "-");
	sandbox_unref(sb);
	reply_ok(r);
}

/*
 * This process's boot id (stats "boot_id"): 128 random bits in hex, made
 * on first use and fixed for the process's life, so an orchestrator that
 * sees it change knows the proxy restarted and forgot its registrations.
 */
static const char *
boot_id(void)
{
	static char id[33];
	unsigned char r[16];

	if (id[0] != '\0')
		return id;
	if (RAND_bytes(r, sizeof(r)) != 1)
		fatalx("boot id: no randomness");
	hex_encode(r, sizeof(r), id);
	return id;
}

struct stats_arg {
	cJSON		*arr;
	const char	*only;
};

static void
stats_one(struct sandbox *sb, void *arg)
{
	struct stats_arg *sa = arg;
	cJSON *o;

	if (sa->only != NULL && strcmp(sa->only, sb->id) != 0)
		return;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", sb->id);
	cJSON_AddNumberToObject(o, "conns", (double)atomic_load(&sb->conns));
	cJSON_AddNumberToObject(o, "tunnels", (double)atomic_load(&sb->tunnels));
	cJSON_AddNumberToObject(o, "intercepted", (double)atomic_load(&sb->intercepted));
	cJSON_AddNumberToObject(o, "requests", (double)atomic_load(&sb->requests));
	cJSON_AddNumberToObject(o, "bytes_up", (double)atomic_load(&sb->bytes_up));
	cJSON_AddNumberToObject(o, "bytes_down", (double)atomic_load(&sb->bytes_down));
	cJSON_AddNumberToObject(o, "denied", (double)atomic_load(&sb->denied));
	/* Under the registry lock (sandbox_foreach): sb->attrs is stable. */
	if (sb->attrs != NULL && sb->attrs->policy != NULL)
		cJSON_AddItemToObject(o, "policy", cJSON_Duplicate(sb->attrs->policy, 1));
	cJSON_AddItemToArray(sa->arr, o);
}

/* The registered ids, copied under the registry lock (stats "ids"). */
struct ids_arg {
	char	**v;
	size_t	  n, cap;
};

static void
ids_one(struct sandbox *sb, void *arg)
{
	struct ids_arg *ia = arg;

	if (ia->n == ia->cap) {
		ia->cap = ia->cap != 0 ? ia->cap * 2 : 256;
		ia->v = xreallocarray(ia->v, ia->cap, sizeof(*ia->v));
	}
	ia->v[ia->n++] = xstrdup(sb->id);
}

static int
ids_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * stats "ids": one page of the registered ids in bytewise order, those
 * after "after" (absent: from the first), as many as fit one reply;
 * "next" (the page's last id) when more follow. Ids are of the register
 * alphabet (id_proxy_valid), so each costs its length plus 3 bytes.
 */
static void
stats_ids(cJSON *req, struct buf *r)
{
	cJSON *after = cJSON_GetObjectItemCaseSensitive(req, "after");
	cJSON *o, *arr;
	struct ids_arg ia = { NULL, 0, 0 };
	size_t i, used = 0, budget = (size_t)PADMIN_MAX_MSG - 512;
	char *s;

	if (after != NULL && !cJSON_IsString(after)) {
		reply_err(r, "stats: after must be a string");
		return;
	}
	sandbox_foreach(ids_one, &ia);
	if (ia.n > 0)
		qsort(ia.v, ia.n, sizeof(*ia.v), ids_cmp);
	o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "ok", 1);
	cJSON_AddStringToObject(o, "boot_id", boot_id());
	cJSON_AddNumberToObject(o, "count", (double)ia.n);
	arr = cJSON_AddArrayToObject(o, "ids");
	for (i = 0; i < ia.n && after != NULL &&
	    strcmp(ia.v[i], after->valuestring) <= 0; i++)
		;
	for (; i < ia.n; i++) {
		if (used + strlen(ia.v[i]) + 3 > budget) {
			cJSON_AddStringToObject(o, "next", ia.v[i - 1]);
			break;
		}
		used += strlen(ia.v[i]) + 3;
		cJSON_AddItemToArray(arr, cJSON_CreateString(ia.v[i]));
	}
	s = cJSON_PrintUnformatted(o);
	buf_reset(r);
	if (buf_addstr(r, s) == -1)
		reply_err(r, "stats: ids page too large");
	free(s);
	cJSON_Delete(o);
	for (i = 0; i < ia.n; i++)
		free(ia.v[i]);
	free(ia.v);
}

/*
 * stats: with "summary", the boot id and the number of registered
 * sandboxes only (what a periodic heal asks first); with "ids", a page of
 * the registered ids (stats_ids); else every sandbox's counters (one
 * reply: past about 300 sandboxes ask with an id).
 */
static void
op_stats(cJSON *req, int fd, struct buf *r)
{
	cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	cJSON *o;
	struct stats_arg sa;
	struct sandbox *anon;
	char *s;

	(void)fd;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "summary"))) {
		buf_reset(r);
		ign(buf_addf(r, "{\"ok\":true,\"boot_id\":\"%s\",\"count\":%zu}",
		    boot_id(), sandbox_count()));
		return;
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "ids"))) {
		stats_ids(req, r);
		return;
	}
	o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "ok", 1);
	cJSON_AddStringToObject(o, "boot_id", boot_id());
	sa.arr = cJSON_AddArrayToObject(o, "sandboxes");
	sa.only = cJSON_IsString(id) ? id->valuestring : NULL;
	sandbox_foreach(stats_one, &sa);
	if (the_proxy.conf->anonymous) {
		anon = sandbox_anonymous();
		stats_one(anon, &sa);
		sandbox_unref(anon);
	}
	if (sa.only != NULL && cJSON_GetArraySize(sa.arr) == 0) {
		cJSON_Delete(o);
		reply_err(r, "stats: no such sandbox");
		return;
	}
	s = cJSON_PrintUnformatted(o);
	buf_reset(r);
	if (buf_addstr(r, s) == -1)
		reply_err(r, "stats: reply too large; ask with an id");
	free(s);
	cJSON_Delete(o);
}

static void
op_metrics(cJSON *req, int fd, struct buf *r)
{
	struct buf m;
	cJSON *o = cJSON_CreateObject();
	char *s;

	(void)req;
	(void)fd;
	buf_init(&m, (size_t)PADMIN_MAX_MSG);
	metrics_text(&m);
	cJSON_AddBoolToObject(o, "ok", 1);
	cJSON_AddStringToObject(o, "text", m.p != NULL ? m.p : "");
	s = cJSON_PrintUnformatted(o);
	buf_reset(r);
	if (buf_addstr(r, s) == -1)
		reply_err(r, "metrics: too large");
	free(s);
	cJSON_Delete(o);
	buf_free(&m);
}

static void
op_ping(cJSON *req, int fd, struct buf *r)
{
	(void)req;
	(void)fd;
	buf_reset(r);
	ign(buf_addstr(r, "{\"ok\":true,\"version\":\"" EGRESS_PROXY_VERSION "\"}"));
}

static void
op_reload(cJSON *req, int fd, struct buf *r)
{
	char err[1024];

	(void)req;
	(void)fd;
	if (reload_fn(err, sizeof(err)) == 0)
		reply_ok(r);
	else
		reply_err(r, err);
}

/*
 * The ops (docs/internals/proxy-admin.md), one row each: the name, whether
 * the op takes the fd attached to the request (the others get -1; the
 * caller closes it either way), and the handler, which writes the whole
 * reply into r.
 */
static const struct admin_op {
	const char	*name;
	int		 takes_fd;
	void		(*handler)(cJSON *req, int fd, struct buf *r);
} admin_ops[] = {
	{ "ping",	0, op_ping },
	{ "register",	1, op_register },
	{ "deregister",	0, op_deregister },
	{ "stats",	0, op_stats },
	{ "metrics",	0, op_metrics },
	{ "reload",	0, op_reload },
	{ "trace",	0, op_trace },
};

static void
handle(const char *msg, size_t len, int fd, struct buf *r)
{
	cJSON *req = cJSON_ParseWithLength(msg, len), *op;
	const struct admin_op *o;

	if (req == NULL || !cJSON_IsObject(req)) {
		reply_err(r, "request is not a JSON object");
		goto out;
	}
	op = cJSON_GetObjectItemCaseSensitive(req, "op");
	if (!cJSON_IsString(op)) {
		reply_err(r, "op missing");
		goto out;
	}
	for (o = admin_ops; o < admin_ops + NELEM(admin_ops); o++)
		if (strcmp(op->valuestring, o->name) == 0)
			break;
	if (o == admin_ops + NELEM(admin_ops)) {
		reply_err(r, "unknown op");
		goto out;
	}
	/* (One line a request at -v: tests count what a heal asked.) */
	log_debug("admin op=%s%s", o->name,
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "summary")) ?
	    " summary" : cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req,
	    "ids")) ? " ids" : "");
	o->handler(req, o->takes_fd ? fd : -1, r);
out:
	cJSON_Delete(req);
}

static void
client_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct aclient *ac = arg;
	char *msg = xmalloc(PADMIN_MAX_MSG + 1);
	struct msghdr mh;
	struct iovec iov;
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} cm;
	struct cmsghdr *c;
	struct buf reply;
	int rfd = -1, i, nfd;
	ssize_t n;

	(void)ev;
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = msg;
	iov.iov_len = PADMIN_MAX_MSG + 1;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
		free(msg);
		return;
	}
	for (c = CMSG_FIRSTHDR(&mh); n >= 0 && c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < nfd; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (rfd == -1 && i == 0)
				rfd = f;
			else
				close(f);	/* only one fd is accepted */
		}
	}
	if (n <= 0) {
		if (rfd != -1)
			close(rfd);
		event_free(ac->ev);
		close(ac->fd);
		free(ac);
		nclients--;
		free(msg);
		return;
	}
	buf_init(&reply, (size_t)PADMIN_MAX_MSG);
	if ((size_t)n > (size_t)PADMIN_MAX_MSG || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		reply_err(&reply, "request too large");
	else
		handle(msg, (size_t)n, rfd, &reply);
	if (rfd != -1)
		close(rfd);	/* register dup()s what it keeps */
	if (send(fd, reply.p != NULL ? reply.p : "{}", reply.p != NULL ? reply.len : 2,
	    MSG_NOSIGNAL) == -1)
		log_debug("admin reply: %s", strerror(errno));
	buf_free(&reply);
	free(msg);
}

static void
accept_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct aclient *ac;
	int c;

	(void)ev;
	(void)arg;
	if ((c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) == -1) {
		/* Short of descriptors: every listener pauses (lguard.c). */
		if (lguard_is_short(errno))
			lguard_accept_failed(errno);
		return;
	}
	if (nclients >= ADMIN_CLIENTS_MAX) {
		close(c);
		return;
	}
	ac = xcalloc(1, sizeof(*ac));
	ac->fd = c;
	ac->ev = event_new(abase, c, EV_READ | EV_PERSIST, client_cb, ac);
	event_add(ac->ev, NULL);
	nclients++;
}

int
admin_start(struct event_base *base, const char *path,
    int (*reload)(char *, size_t), char *err, size_t errlen)
{
	struct sockaddr_un sun;
	mode_t old;

	abase = base;
	reload_fn = reload;
	(void)boot_id();
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "admin.socket: path too long");
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	snprintf(sock_path, sizeof(sock_path), "%s", path);
	if ((listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "admin socket: %s", strerror(errno));
		return -1;
	}
	unlink(path);
	old = umask(0177);
	if (bind(listen_fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		snprintf(err, errlen, "admin socket %s: %s", path, strerror(errno));
		close(listen_fd);
		listen_fd = -1;
		return -1;
	}
	umask(old);
	chmod(path, 0600);
	if (listen(listen_fd, 16) == -1) {
		snprintf(err, errlen, "admin socket %s: %s", path, strerror(errno));
		return -1;
	}
	listen_ev = event_new(base, listen_fd, EV_READ | EV_PERSIST, accept_cb, NULL);
	event_add(listen_ev, NULL);
	lguard_add_event(listen_ev, admin_lguard_shed, NULL);
	return 0;
}

static char *http_token;

static void
http_admin_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req), *out;
	const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	size_t tl = strlen(http_token), len;
	struct buf reply;
	char *body;

	(void)arg;
	if (auth == NULL || strncmp(auth, "Bearer ", 7) != 0 || strlen(auth + 7) != tl ||
	    CRYPTO_memcmp(auth + 7, http_token, tl) != 0) {
		evhttp_send_error(req, 401, "Unauthorized");
		return;
	}
	if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
		evhttp_send_error(req, 405, "Method Not Allowed");
		return;
	}
	len = evbuffer_get_length(in);
	if (len > (size_t)PADMIN_MAX_MSG) {
		evhttp_send_error(req, 413, "Payload Too Large");
		return;
	}
	body = (char *)evbuffer_pullup(in, -1);
	buf_init(&reply, (size_t)PADMIN_MAX_MSG);
	handle(body != NULL ? body : "", len, -1, &reply);
	out = evbuffer_new();
	evbuffer_add(out, reply.p != NULL ? reply.p : "{}", reply.p != NULL ? reply.len : 2);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	    "application/json");
	evhttp_send_reply(req, 200, "OK", out);
	evbuffer_free(out);
	buf_free(&reply);
}

static void
http_other_cb(struct evhttp_request *req, void *arg)
{
	(void)arg;
	evhttp_send_error(req, 404, "Not Found");
}

int
admin_http_start(struct event_base *base, const char *host, unsigned short port,
    const char *token, int (*reload)(char *, size_t), char *err, size_t errlen)
{
	struct evhttp *h;
	struct evhttp_bound_socket *bs;

	abase = base;
	reload_fn = reload;
	(void)boot_id();
	if (token == NULL || strlen(token) < 16) {
		snprintf(err, errlen, "admin.token_file: the token must be at least 16 characters");
		return -1;
	}
	http_token = xstrdup(token);
	if ((h = evhttp_new(base)) == NULL ||
	    (bs = evhttp_bind_socket_with_handle(h, host, port)) == NULL) {
		snprintf(err, errlen, "admin.listen %s:%u: cannot bind", host, port);
		return -1;
	}
	lguard_add(evhttp_bound_socket_get_listener(bs), admin_lguard_shed, NULL);
	evhttp_set_max_body_size(h, PADMIN_MAX_MSG);
	evhttp_set_cb(h, "/v1/admin", http_admin_cb, NULL);
	evhttp_set_gencb(h, http_other_cb, NULL);
	return 0;
}

void
admin_stop(void)
{
	if (listen_ev != NULL) {
		lguard_del(listen_ev);
		event_free(listen_ev);
	}
	listen_ev = NULL;
	if (listen_fd != -1) {
		close(listen_fd);
		unlink(sock_path);
	}
	listen_fd = -1;
}
