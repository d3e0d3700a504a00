/*
 * runtime/k8s/client.c: Kubernetes REST client on one libcurl multi handle driven
 * by a libevent loop (the orchestrator's, or a private one in a thread);
 * synchronous for its callers, which queue requests to the loop and wait.
 * In-cluster and kubeconfig settings, token rotation, retries with
 * backoff timers on the loop, Status objects as errors.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <openssl/evp.h>
#include <yaml.h>

#include "attrib.h"
#include "client.h"
#include "log.h"
#include "strnum.h"
#include "xmalloc.h"
#include "util.h"

#define K8S_DEFAULT_SA_DIR	"/var/run/secrets/kubernetes.io/serviceaccount"
#define K8S_MAX_SMALL_FILE	((size_t)1024 * 1024)	/* CA, kubeconfig, namespace */
#define K8S_MAX_BACKOFF_MS	8000
#define K8S_MAX_CONNS		32	/* kept open to the API server */

struct k8s_req;

static int	engine_init(struct k8s_client *, struct event_base *, char *,
	    size_t);
static void	engine_free(struct k8s_client *);

struct k8s_client {
	char		*server;
	char		*ns;
	char		*ca_file;
	char		*ca_data;	/* PEM, from kubeconfig data fields */
	size_t		 ca_len;
	char		*cert_file, *key_file;
	char		*cert_data, *key_data;
	size_t		 cert_len, key_len;
	char		*token_file;	/* re-read as it rotates */
	char		*static_token;	/* kubeconfig "token" */
	long long	 timeout_ms, retries, backoff_ms, token_check_ms;

	pthread_mutex_t	 tok_mtx;	/* guards the fields below */
	char		 token[K8S_MAX_TOKEN];
	long long	 tok_checked_ms;
	struct timespec	 tok_mtime;
	off_t		 tok_size;
	ino_t		 tok_ino;
	int		 tok_loaded;

	/* the request loop (see k8s_request); the multi handle, the events
	 * and the requests in flight belong to the loop thread */
	struct event_base *base;
	int		 own_base, thr_started, sync_init, closing;
	pthread_t	 loop_thr;
	pthread_t	 owner;		/* gave us the shared base */
	CURLM		*multi;
	struct event	*timer, *wake;
	pthread_mutex_t	 mtx;		/* guards the fields below */
	pthread_cond_t	 done_cv;
	struct k8s_req	*head, *tail;	/* submitted, not yet started */
	int		 stop;		/* private loop: leave */
	struct k8s_stats st;
};

/* Reads a whole small file into a heap string; NULL with err. */
static char *
read_small(const char *path, size_t max, size_t *lenp, char *err, size_t errlen)
{
	struct buf b;

	buf_init(&b, max);
	if (util_read_file(path, &b, err, errlen) == -1) {
		buf_free(&b);
		return NULL;
	}
	if (b.p == NULL && buf_add(&b, "", 0) == -1)
		abort();
	if (lenp != NULL)
		*lenp = b.len;
	return buf_steal(&b, NULL);
}

static void
trim(char *s)
{
	size_t n = strlen(s), i = 0;

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' ||
	    s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
		i++;
	if (i > 0)
		memmove(s, s + i, n - i + 1);
}

static char *
path_join(const char *dir, const char *name)
{
	char *p;

	if (name[0] == '/' || dir == NULL || dir[0] == '\0')
		return xstrdup(name);
	if (xasprintf(&p, "%s/%s", dir, name) == -1)
		abort();
	return p;
}

/* ---- kubeconfig (libyaml document tree) ---- */

static yaml_node_t *
ymap_get(yaml_document_t *d, yaml_node_t *m, const char *key)
{
	yaml_node_pair_t *p;

	if (m == NULL || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(d, p->key);
		if (k != NULL && k->type == YAML_SCALAR_NODE &&
		    strlen(key) == k->data.scalar.length &&
		    memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
			return yaml_document_get_node(d, p->value);
	}
	return NULL;
}

/* A scalar's text as a new heap string, NULL if absent or not a scalar. */
static char *
yscalar(yaml_document_t *d, yaml_node_t *m, const char *key)
{
	yaml_node_t *n = ymap_get(d, m, key);

	if (n == NULL || n->type != YAML_SCALAR_NODE)
		return NULL;
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length) != NULL)
		return NULL;
	return xstrndup((const char *)n->data.scalar.value, n->data.scalar.length);
}

/* The entry of a named list ("clusters") whose name is want; its inner
 * mapping (under inner, e.g. "cluster"). */
static yaml_node_t *
ynamed(yaml_document_t *d, yaml_node_t *root, const char *list,
    const char *want, const char *inner)
{
	yaml_node_t *seq = ymap_get(d, root, list);
	yaml_node_item_t *it;

	if (seq == NULL || seq->type != YAML_SEQUENCE_NODE)
		return NULL;
	for (it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
		yaml_node_t *e = yaml_document_get_node(d, *it);
		char *name = yscalar(d, e, "name");
		int match = name != NULL && strcmp(name, want) == 0;

		free(name);
		if (match)
			return ymap_get(d, e, inner);
	}
	return NULL;
}

static int
b64_decode(const char *in, char **out, size_t *outlen)
{
	size_t i, n = 0, len = strlen(in), pad = 0;
	char *clean = xmalloc(len + 1);
	unsigned char *dst;
	int r;

	for (i = 0; i < len; i++)
		if (in[i] != '\n' && in[i] != '\r' && in[i] != ' ' && in[i] != '\t')
			clean[n++] = in[i];
	clean[n] = '\0';
	if (n == 0 || n % 4 != 0 || n > INT_MAX) {
		free(clean);
		return -1;
	}
	if (clean[n - 1] == '=')
		pad++;
	if (clean[n - 2] == '=')
		pad++;
	dst = xmalloc(n / 4 * 3 + 1);
	r = EVP_DecodeBlock(dst, (unsigned char *)clean, (int)n);
	free(clean);
	if (r < 0 || (size_t)r < pad) {
		free(dst);
		return -1;
	}
	*outlen = (size_t)r - pad;
	dst[*outlen] = '\0';
	*out = (char *)dst;
	return 0;
}

void
k8s_kubeconfig_clear(struct k8s_kubeconfig *kc)
{
	free(kc->server);
	free(kc->ca_file);
	free(kc->ca_data);
	free(kc->cert_file);
	free(kc->cert_data);
	free(kc->key_file);
	free(kc->key_data);
	free(kc->token);
	free(kc->token_file);
	free(kc->namespace);
	memset(kc, 0, sizeof(*kc));
}

/* Loads key (a path) and key-data (base64) into *file / *data. */
static int
kc_pem(yaml_document_t *d, yaml_node_t *m, const char *key, const char *dir,
    char **file, char **data, size_t *len, char *err, size_t errlen)
{
	char dkey[64], *v;

	if ((v = yscalar(d, m, key)) != NULL) {
		*file = path_join(dir, v);
		free(v);
	}
	snprintf(dkey, sizeof(dkey), "%s-data", key);
	if ((v = yscalar(d, m, dkey)) != NULL) {
		int r = b64_decode(v, data, len);
		free(v);
		if (r == -1) {
			snprintf(err, errlen, "kubeconfig: %s is not valid base64", dkey);
			return -1;
		}
	}
	return 0;
}

int
k8s_kubeconfig_parse(const char *text, size_t len, const char *dir,
    const char *context, struct k8s_kubeconfig *kc, char *err, size_t errlen)
{
	yaml_parser_t p;
	yaml_document_t d;
	yaml_node_t *root, *ctx, *cl, *us;
	char *cur = NULL, *cname = NULL, *uname = NULL, *v;
	int rc = -1, have_doc = 0;

	memset(kc, 0, sizeof(*kc));
	if (!yaml_parser_initialize(&p)) {
		snprintf(err, errlen, "kubeconfig: yaml init failed");
		return -1;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, &d)) {
		snprintf(err, errlen, "kubeconfig: line %zu: %s",
		    (size_t)p.problem_mark.line + 1,
		    p.problem ? p.problem : "syntax error");
		goto out;
	}
	have_doc = 1;
	root = yaml_document_get_root_node(&d);
	if (root == NULL || root->type != YAML_MAPPING_NODE) {
		snprintf(err, errlen, "kubeconfig: not a mapping");
		goto out;
	}
	if (context != NULL && context[0] != '\0')
		cur = xstrdup(context);
	else if ((cur = yscalar(&d, root, "current-context")) == NULL ||
	    cur[0] == '\0') {
		snprintf(err, errlen, "kubeconfig: no current-context");
		goto out;
	}
	if ((ctx = ynamed(&d, root, "contexts", cur, "context")) == NULL) {
		snprintf(err, errlen, "kubeconfig: context \"%.64s\" not found", cur);
		goto out;
	}
	if ((cname = yscalar(&d, ctx, "cluster")) == NULL ||
	    (cl = ynamed(&d, root, "clusters", cname, "cluster")) == NULL) {
		snprintf(err, errlen, "kubeconfig: cluster of context \"%.64s\" not found", cur);
		goto out;
	}
	kc->namespace = yscalar(&d, ctx, "namespace");
	if ((kc->server = yscalar(&d, cl, "server")) == NULL) {
		snprintf(err, errlen, "kubeconfig: cluster \"%.64s\" has no server", cname);
		goto out;
	}
	if ((v = yscalar(&d, cl, "insecure-skip-tls-verify")) != NULL) {
		int on = strcmp(v, "true") == 0;
		free(v);
		if (on) {
			snprintf(err, errlen, "kubeconfig: insecure-skip-tls-verify "
			    "is refused; give the cluster's CA");
			goto out;
		}
	}
	if (kc_pem(&d, cl, "certificate-authority", dir, &kc->ca_file,
	    &kc->ca_data, &kc->ca_len, err, errlen) == -1)
		goto out;
	if ((uname = yscalar(&d, ctx, "user")) != NULL) {
		if ((us = ynamed(&d, root, "users", uname, "user")) == NULL) {
			snprintf(err, errlen, "kubeconfig: user \"%.64s\" not found", uname);
			goto out;
		}
		if (ymap_get(&d, us, "exec") != NULL ||
		    ymap_get(&d, us, "auth-provider") != NULL) {
			snprintf(err, errlen, "kubeconfig: user \"%.64s\": exec and "
			    "auth-provider credentials are not supported; use a "
			    "token, tokenFile or client certificate", uname);
			goto out;
		}
		kc->token = yscalar(&d, us, "token");
		if ((v = yscalar(&d, us, "tokenFile")) != NULL) {
			kc->token_file = path_join(dir, v);
			free(v);
		}
		if (kc_pem(&d, us, "client-certificate", dir, &kc->cert_file,
		    &kc->cert_data, &kc->cert_len, err, errlen) == -1 ||
		    kc_pem(&d, us, "client-key", dir, &kc->key_file,
		    &kc->key_data, &kc->key_len, err, errlen) == -1)
			goto out;
		if ((kc->cert_file || kc->cert_data) != (kc->key_file || kc->key_data)) {
			snprintf(err, errlen, "kubeconfig: user \"%.64s\": a client "
			    "certificate needs its key (and the key its certificate)", uname);
			goto out;
		}
	}
	rc = 0;
out:
	if (rc == -1)
		k8s_kubeconfig_clear(kc);
	free(cur);
	free(cname);
	free(uname);
	if (have_doc)
		yaml_document_delete(&d);
	yaml_parser_delete(&p);
	return rc;
}

/* ---- client ---- */

static int
load_kubeconfig(struct k8s_client *c, const struct k8s_conn *cc, char *err,
    size_t errlen)
{
	struct k8s_kubeconfig kc;
	char *text, *dir, *slash;
	size_t len;
	int rc;

	if ((text = read_small(cc->kubeconfig, K8S_MAX_SMALL_FILE, &len, err,
	    errlen)) == NULL)
		return -1;
	dir = xstrdup(cc->kubeconfig);
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	else {
		free(dir);
		dir = xstrdup(".");
	}
	rc = k8s_kubeconfig_parse(text, len, dir, cc->context, &kc, err, errlen);
	free(text);
	free(dir);
	if (rc == -1)
		return -1;
	c->server = kc.server; kc.server = NULL;
	c->ca_file = kc.ca_file; kc.ca_file = NULL;
	c->ca_data = kc.ca_data; c->ca_len = kc.ca_len; kc.ca_data = NULL;
	c->cert_file = kc.cert_file; kc.cert_file = NULL;
	c->cert_data = kc.cert_data; c->cert_len = kc.cert_len; kc.cert_data = NULL;
	c->key_file = kc.key_file; kc.key_file = NULL;
	c->key_data = kc.key_data; c->key_len = kc.key_len; kc.key_data = NULL;
	c->static_token = kc.token; kc.token = NULL;
	c->token_file = kc.token_file; kc.token_file = NULL;
	if (kc.namespace != NULL && kc.namespace[0] != '\0') {
		c->ns = kc.namespace;
		kc.namespace = NULL;
	}
	k8s_kubeconfig_clear(&kc);
	return 0;
}

struct k8s_client *
k8s_client_new(const struct k8s_conn *cc, char *err, size_t errlen)
{
	struct k8s_client *c = xcalloc(1, sizeof(*c));
	const char *dir = cc->incluster_dir ? cc->incluster_dir : K8S_DEFAULT_SA_DIR;
	char *p;

	pthread_mutex_init(&c->tok_mtx, NULL);
	c->timeout_ms = cc->timeout_ms > 0 ? cc->timeout_ms : 30000;
	c->retries = cc->retries >= 0 ? cc->retries : 0;
	c->backoff_ms = cc->backoff_ms > 0 ? cc->backoff_ms : 200;
	c->token_check_ms = cc->token_check_ms > 0 ? cc->token_check_ms : 60000;

	if ((cc->server == NULL || cc->server[0] == '\0') &&
	    cc->kubeconfig != NULL && cc->kubeconfig[0] != '\0') {
		if (load_kubeconfig(c, cc, err, errlen) == -1)
			goto fail;
	} else {
		/* In-cluster (client-go InClusterConfig), or an explicit server
		 * that still uses the service-account files. */
		if (cc->server != NULL && cc->server[0] != '\0')
			c->server = xstrdup(cc->server);
		else {
			const char *h = getenv("KUBERNETES_SERVICE_HOST");
			const char *pt = getenv("KUBERNETES_SERVICE_PORT");
			if (h == NULL || pt == NULL || h[0] == '\0' || pt[0] == '\0') {
				snprintf(err, errlen, "not in a cluster "
				    "(KUBERNETES_SERVICE_HOST/PORT unset) and no "
				    "kubernetes.kubeconfig or kubernetes.api_server set");
				goto fail;
			}
			if (xasprintf(&c->server, strchr(h, ':') ? "https://[%s]:%s" :
			    "https://%s:%s", h, pt) == -1)
				abort();
		}
		if (xasprintf(&c->ca_file, "%s/ca.crt", dir) == -1 ||
		    xasprintf(&c->token_file, "%s/token", dir) == -1)
			abort();
		if (cc->namespace == NULL || cc->namespace[0] == '\0') {
			const char *pn = getenv("POD_NAMESPACE");
			if (pn != NULL && pn[0] != '\0')
				c->ns = xstrdup(pn);
			else if (xasprintf(&p, "%s/namespace", dir) != -1) {
				char e2[64];
				char *t = read_small(p, 4096, NULL, e2, sizeof(e2));
				free(p);
				if (t != NULL) {
					trim(t);
					if (t[0] != '\0')
						c->ns = t;
					else
						free(t);
				}
			}
		}
	}
	if (cc->ca_file != NULL && cc->ca_file[0] != '\0') {
		free(c->ca_file);
		c->ca_file = xstrdup(cc->ca_file);
		free(c->ca_data);
		c->ca_data = NULL;
	}
	if (cc->token_file != NULL && cc->token_file[0] != '\0') {
		free(c->token_file);
		c->token_file = xstrdup(cc->token_file);
	}
	if (cc->namespace != NULL && cc->namespace[0] != '\0') {
		free(c->ns);
		c->ns = xstrdup(cc->namespace);
	}
	if (c->ns == NULL)
		c->ns = xstrdup("default");
	if (strncmp(c->server, "https://", 8) != 0) {
		snprintf(err, errlen, "API server %.200s: only https:// is supported",
		    c->server);
		goto fail;
	}
	/* Trailing slashes would double up with our absolute paths. */
	while (strlen(c->server) > 8 && c->server[strlen(c->server) - 1] == '/')
		c->server[strlen(c->server) - 1] = '\0';
	if (c->ca_file != NULL && access(c->ca_file, R_OK) == -1 && c->ca_data == NULL) {
		snprintf(err, errlen, "CA file %s: %s", c->ca_file, strerror(errno));
		goto fail;
	}
	if (c->token_file != NULL && access(c->token_file, R_OK) == -1) {
		/* A kubeconfig with a client certificate needs no token. */
		if (c->cert_file == NULL && c->cert_data == NULL &&
		    c->static_token == NULL) {
			snprintf(err, errlen, "token file %s: %s", c->token_file,
			    strerror(errno));
			goto fail;
		}
		free(c->token_file);
		c->token_file = NULL;
	}
	if (engine_init(c, cc->base, err, errlen) == -1)
		goto fail;
	return c;
fail:
	k8s_client_free(c);
	return NULL;
}

void
k8s_client_free(struct k8s_client *c)
{
	if (c == NULL)
		return;
	engine_free(c);
	free(c->server);
	free(c->ns);
	free(c->ca_file);
	free(c->ca_data);
	free(c->cert_file);
	free(c->key_file);
	free(c->cert_data);
	if (c->key_data != NULL)
		explicit_bzero(c->key_data, c->key_len);
	free(c->key_data);
	free(c->token_file);
	free(c->static_token);
	explicit_bzero(c->token, sizeof(c->token));
	pthread_mutex_destroy(&c->tok_mtx);
	free(c);
}

const char *
k8s_client_namespace(const struct k8s_client *c)
{
	return c->ns;
}

const char *
k8s_client_server(const struct k8s_client *c)
{
	return c->server;
}

/*
 * Copies the current bearer token into out ("" when none). Re-reads the
 * file when it changed (stat at most every token_check_ms) or when force.
 * Returns 1 if the token changed, 0 if not, -1 on error.
 */
static int
token_get(struct k8s_client *c, int force, char *out, size_t outlen,
    char *err, size_t errlen)
{
	struct stat st;
	long long now = util_mono_ms();
	int changed = 0, rc = 0;

	pthread_mutex_lock(&c->tok_mtx);
	if (c->token_file == NULL) {
		snprintf(out, outlen, "%s", c->static_token ? c->static_token : "");
		goto out;
	}
	if (force || !c->tok_loaded || now - c->tok_checked_ms >= c->token_check_ms) {
		c->tok_checked_ms = now;
		if (stat(c->token_file, &st) == -1) {
			if (!c->tok_loaded) {
				snprintf(err, errlen, "token file %s: %s",
				    c->token_file, strerror(errno));
				rc = -1;
				goto out;
			}
			/* Mid-rotation (the kubelet swaps a symlink); keep the old. */
		} else if (!c->tok_loaded || force ||
		    st.st_mtim.tv_sec != c->tok_mtime.tv_sec ||
		    st.st_mtim.tv_nsec != c->tok_mtime.tv_nsec ||
		    st.st_size != c->tok_size || st.st_ino != c->tok_ino) {
			char *t = read_small(c->token_file, K8S_MAX_TOKEN - 1, NULL,
			    err, errlen);
			if (t == NULL) {
				if (!c->tok_loaded) {
					rc = -1;
					goto out;
				}
			} else {
				trim(t);
				if (strcmp(t, c->token) != 0) {
					changed = c->tok_loaded;
					if (changed)
						log_info("k8s token=%s reloaded (rotated)",
						    c->token_file);
				}
				snprintf(c->token, sizeof(c->token), "%s", t);
				explicit_bzero(t, strlen(t));
				free(t);
				c->tok_mtime = st.st_mtim;
				c->tok_size = st.st_size;
				c->tok_ino = st.st_ino;
				c->tok_loaded = 1;
			}
		}
	}
	snprintf(out, outlen, "%s", c->token);
	rc = changed;
out:
	pthread_mutex_unlock(&c->tok_mtx);
	return rc;
}

/* ---- requests on the event loop (libcurl multi driven by libevent) ---- */

/*
 * One request, owned by the worker thread that waits for it (it lives on
 * that thread's stack). The worker fills it and queues it; from then on
 * only the loop thread touches it until done is set (under c->mtx), after
 * which only the worker does.
 */
struct k8s_req {
	struct k8s_req		*next;		/* pending queue */
	struct k8s_client	*c;
	const char		*method, *path, *url, *body;
	struct curl_slist	*hdrs;
	struct buf		*resp;
	CURL			*easy;
	struct event		*backoff_ev;
	char			 ebuf[CURL_ERROR_SIZE];
	int			 overflow;
	long long		 retry_after_ms;
	long long		 backoff_ms;
	int			 attempt;	/* attempts started */
	/* result */
	int			 done;
	int			 rc;		/* 0: an HTTP answer; -1: none */
	int			 status;
	char			 err[512];
};

static void req_start(struct k8s_req *);

static size_t
write_cb(char *p, size_t sz, size_t nm, void *arg)
{
	struct k8s_req *q = arg;

	if (buf_add(q->resp, p, sz * nm) == -1) {
		q->overflow = 1;
		return 0;
	}
	return sz * nm;
}

static size_t
header_cb(char *p, size_t sz, size_t nm, void *arg)
{
	struct k8s_req *q = arg;
	size_t n = sz * nm;
	char v[32];
	long long s;
	const char *es;

	if (n > 12 && strncasecmp(p, "Retry-After:", 12) == 0 && n - 12 < sizeof(v)) {
		memcpy(v, p + 12, n - 12);
		v[n - 12] = '\0';
		trim(v);
		if (strnum_ll(v, 0, 3600, &s, &es) == 0)
			q->retry_after_ms = s * 1000;
	}
	return n;
}

/* Loop thread: hands the result to the waiting worker. q is the worker's
 * from the moment the lock is released. */
static void
req_finish(struct k8s_req *q, int rc)
{
	struct k8s_client *c = q->c;

	if (q->backoff_ev != NULL) {
		event_free(q->backoff_ev);
		q->backoff_ev = NULL;
	}
	if (q->easy != NULL) {
		curl_easy_cleanup(q->easy);
		q->easy = NULL;
	}
	pthread_mutex_lock(&c->mtx);
	q->rc = rc;
	q->done = 1;
	pthread_cond_broadcast(&c->done_cv);
	pthread_mutex_unlock(&c->mtx);
}

static void
backoff_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	req_start(arg);
}

/* Loop thread: the next attempt after wait_ms, as a timer on the loop. */
static void
req_retry(struct k8s_req *q, long long wait_ms)
{
	struct timeval tv;

	log_warnx("k8s %s %s attempt=%d failed: %s; retrying in %lld ms",
	    q->method, q->path, q->attempt, q->err, wait_ms);
	if (q->backoff_ev == NULL &&
	    (q->backoff_ev = evtimer_new(q->c->base, backoff_cb, q)) == NULL) {
		snprintf(q->err, sizeof(q->err), "evtimer_new failed");
		req_finish(q, -1);
		return;
	}
	tv.tv_sec = (time_t)(wait_ms / 1000);
	tv.tv_usec = (suseconds_t)((wait_ms % 1000) * 1000);
	evtimer_add(q->backoff_ev, &tv);
	q->backoff_ms = q->backoff_ms * 2 > K8S_MAX_BACKOFF_MS ?
	    K8S_MAX_BACKOFF_MS : q->backoff_ms * 2;
}

/* A PEM (CA, client certificate or key) from memory (copied) or a file;
 * typeopt 0: no type option. */
static void
set_pem(CURL *h, CURLoption blobopt, CURLoption fileopt, CURLoption typeopt,
    char *data, size_t len, const char *file)
{
	struct curl_blob b = { data, len, CURL_BLOB_COPY };

	if (data != NULL) {
		curl_easy_setopt(h, blobopt, &b);
		if (typeopt != 0)
			curl_easy_setopt(h, typeopt, "PEM");
	} else if (file != NULL)
		curl_easy_setopt(h, fileopt, file);
}

/* Loop thread: one easy handle for the whole request (its connection
 * comes from, and goes back to, the multi handle's cache). */
static CURL *
req_easy(struct k8s_req *q)
{
	struct k8s_client *c = q->c;
	CURL *h;

	if ((h = curl_easy_init()) == NULL)
		return NULL;
	curl_easy_setopt(h, CURLOPT_PRIVATE, q);
	curl_easy_setopt(h, CURLOPT_URL, q->url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, q->hdrs);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "sandbox-orchestrator/k8s");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(c->timeout_ms < 10000 ? c->timeout_ms : 10000));
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, q->ebuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, q);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, q);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (q->body != NULL) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)strlen(q->body));
	} else if (strcmp(q->method, "GET") == 0)
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	set_pem(h, CURLOPT_CAINFO_BLOB, CURLOPT_CAINFO, 0, c->ca_data, c->ca_len,
	    c->ca_file);
	set_pem(h, CURLOPT_SSLCERT_BLOB, CURLOPT_SSLCERT, CURLOPT_SSLCERTTYPE,
	    c->cert_data, c->cert_len, c->cert_file);
	set_pem(h, CURLOPT_SSLKEY_BLOB, CURLOPT_SSLKEY, CURLOPT_SSLKEYTYPE,
	    c->key_data, c->key_len, c->key_file);
	return h;
}

/* Loop thread: starts the next attempt. */
static void
req_start(struct k8s_req *q)
{
	struct k8s_client *c = q->c;
	CURLMcode mc;

	if (c->closing) {
		snprintf(q->err, sizeof(q->err), "%s %s: client shutting down",
		    q->method, q->url);
		req_finish(q, -1);
		return;
	}
	if (q->easy == NULL && (q->easy = req_easy(q)) == NULL) {
		snprintf(q->err, sizeof(q->err), "curl_easy_init failed");
		req_finish(q, -1);
		return;
	}
	buf_free(q->resp);
	q->resp->max = K8S_MAX_RESP;
	q->overflow = 0;
	q->retry_after_ms = -1;
	q->ebuf[0] = '\0';
	q->attempt++;
	if ((mc = curl_multi_add_handle(c->multi, q->easy)) != CURLM_OK) {
		snprintf(q->err, sizeof(q->err), "%s %s: %s", q->method, q->url,
		    curl_multi_strerror(mc));
		req_finish(q, -1);
		return;
	}
	pthread_mutex_lock(&c->mtx);
	c->st.attempts++;
	if (++c->st.inflight > c->st.max_inflight)
		c->st.max_inflight = c->st.inflight;
	pthread_mutex_unlock(&c->mtx);
}

/* Loop thread: an attempt ended with cr; retry, or hand the result over. */
static void
req_done(struct k8s_req *q, CURLcode cr)
{
	struct k8s_client *c = q->c;
	long code = 0, nconn = 0;
	int last = q->attempt > c->retries;

	curl_multi_remove_handle(c->multi, q->easy);
	curl_easy_getinfo(q->easy, CURLINFO_NUM_CONNECTS, &nconn);
	pthread_mutex_lock(&c->mtx);
	c->st.inflight--;
	c->st.connects += nconn;
	pthread_mutex_unlock(&c->mtx);
	if (cr != CURLE_OK) {
		if (q->overflow)
			snprintf(q->err, sizeof(q->err), "%s %s: response larger "
			    "than %zu bytes", q->method, q->url, K8S_MAX_RESP);
		else if (cr == CURLE_OPERATION_TIMEDOUT)
			snprintf(q->err, sizeof(q->err), "%s %s: timed out after "
			    "%lld ms", q->method, q->url, c->timeout_ms);
		else
			snprintf(q->err, sizeof(q->err), "%s %s: %s", q->method,
			    q->url, q->ebuf[0] ? q->ebuf : curl_easy_strerror(cr));
		if (q->overflow || last)
			req_finish(q, -1);
		else
			req_retry(q, q->backoff_ms);
		return;
	}
	curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &code);
	q->status = (int)code;
	if (q->resp->p == NULL && buf_add(q->resp, "", 0) == -1)
		abort();
	if ((q->status == 429 || q->status >= 500) && !last) {
		k8s_status_error(q->status, q->resp->p, q->resp->len, q->err,
		    sizeof(q->err));
		req_retry(q, q->retry_after_ms >= 0 ? q->retry_after_ms :
		    q->backoff_ms);
		return;
	}
	req_finish(q, 0);	/* the caller sees the last answer */
}

static void
multi_check(struct k8s_client *c)
{
	CURLMsg *m;
	int left;
	void *priv;

	while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		priv = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&priv);
		if (priv != NULL)
			req_done(priv, m->data.result);
	}
}

static void
sock_ev_cb(evutil_socket_t fd, short what, void *arg)
{
	struct k8s_client *c = arg;
	int running, act = 0;

	if (what & EV_READ)
		act |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		act |= CURL_CSELECT_OUT;
	curl_multi_socket_action(c->multi, fd, act, &running);
	multi_check(c);
}

static void
timer_ev_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct k8s_client *c = arg;
	int running;

	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	multi_check(c);
}

/* CURLMOPT_SOCKETFUNCTION: one libevent event per socket curl uses. */
static int
multi_sock_fn(CURL *e UNUSED, curl_socket_t s, int what, void *userp,
    void *sockp)
{
	struct k8s_client *c = userp;
	struct event *ev = sockp;
	short fl = EV_PERSIST;

	if (what == CURL_POLL_REMOVE) {
		if (ev != NULL) {
			event_free(ev);
			curl_multi_assign(c->multi, s, NULL);
		}
		return 0;
	}
	if (what & CURL_POLL_IN)
		fl |= EV_READ;
	if (what & CURL_POLL_OUT)
		fl |= EV_WRITE;
	if (ev == NULL) {
		if ((ev = event_new(c->base, s, fl, sock_ev_cb, c)) == NULL)
			return -1;
		curl_multi_assign(c->multi, s, ev);
	} else {
		event_del(ev);
		event_assign(ev, c->base, s, fl, sock_ev_cb, c);
	}
	event_add(ev, NULL);
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: curl's single timeout as an evtimer. */
static int
multi_timer_fn(CURLM *m UNUSED, long ms, void *userp)
{
	struct k8s_client *c = userp;
	struct timeval tv;

	if (ms < 0) {
		evtimer_del(c->timer);
		return 0;
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(c->timer, &tv);
	return 0;
}

/* The workers' queue, drained on the loop. */
static void
wake_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct k8s_client *c = arg;
	struct k8s_req *q, *next;

	int stop;

	pthread_mutex_lock(&c->mtx);
	q = c->head;
	c->head = c->tail = NULL;
	stop = c->stop;
	pthread_mutex_unlock(&c->mtx);
	for (; q != NULL; q = next) {
		next = q->next;
		req_start(q);
	}
	if (stop)
		event_base_loopbreak(c->base);	/* our own loop only */
}

static void *
loop_main(void *arg)
{
	struct k8s_client *c = arg;

	event_base_loop(c->base, EVLOOP_NO_EXIT_ON_EMPTY);
	return NULL;
}

static int
engine_init(struct k8s_client *c, struct event_base *base, char *err,
    size_t errlen)
{
	pthread_mutex_init(&c->mtx, NULL);
	pthread_cond_init(&c->done_cv, NULL);
	c->sync_init = 1;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (base == NULL) {
		/* No loop given (k8sctl, tests): a private one in a thread. */
		if (evthread_use_pthreads() == -1 ||
		    (c->base = event_base_new()) == NULL) {
			snprintf(err, errlen, "cannot create an event loop");
			return -1;
		}
		c->own_base = 1;
	} else
		c->base = base;
	c->owner = pthread_self();
	if ((c->multi = curl_multi_init()) == NULL ||
	    (c->timer = evtimer_new(c->base, timer_ev_cb, c)) == NULL ||
	    (c->wake = event_new(c->base, -1, 0, wake_cb, c)) == NULL) {
		snprintf(err, errlen, "cannot set up the request loop");
		return -1;
	}
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, multi_sock_fn);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, multi_timer_fn);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)K8S_MAX_CONNS);
	curl_multi_setopt(c->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
	    (long)K8S_MAX_CONNS);
	if (c->own_base) {
		if (pthread_create(&c->loop_thr, NULL, loop_main, c) != 0) {
			snprintf(err, errlen, "pthread_create failed");
			return -1;
		}
		c->thr_started = 1;
	}
	return 0;
}

static void
engine_free(struct k8s_client *c)
{
	if (c->thr_started) {
		/* A loopbreak before the thread entered the loop would be lost;
		 * an active event is not. */
		pthread_mutex_lock(&c->mtx);
		c->stop = 1;
		pthread_mutex_unlock(&c->mtx);
		event_active(c->wake, EV_READ, 0);
		pthread_join(c->loop_thr, NULL);
	}
	/* The loop no longer runs here: nothing else touches the multi. */
	c->closing = 1;
	if (c->multi != NULL)
		curl_multi_cleanup(c->multi);	/* frees the socket events */
	if (c->timer != NULL)
		event_free(c->timer);
	if (c->wake != NULL)
		event_free(c->wake);
	if (c->own_base && c->base != NULL)
		event_base_free(c->base);
	if (c->sync_init) {
		pthread_mutex_destroy(&c->mtx);
		pthread_cond_destroy(&c->done_cv);
	}
}

/*
 * Worker side of one attempt series: queue q for the loop and wait. The
 * thread that gave us the shared loop (the orchestrator's main thread,
 * before it dispatches) runs the loop itself while it waits.
 */
static int
submit_wait(struct k8s_client *c, struct k8s_req *q)
{
	int drive = !c->own_base && pthread_equal(pthread_self(), c->owner);

	if (drive && event_base_loop(c->base, EVLOOP_NONBLOCK) == -1) {
		snprintf(q->err, sizeof(q->err), "k8s request on the event loop "
		    "thread (must come from a worker)");
		return -1;
	}
	q->done = 0;
	q->next = NULL;
	pthread_mutex_lock(&c->mtx);
	if (c->tail != NULL)
		c->tail->next = q;
	else
		c->head = q;
	c->tail = q;
	c->st.requests++;
	pthread_mutex_unlock(&c->mtx);
	event_active(c->wake, EV_READ, 0);
	pthread_mutex_lock(&c->mtx);
	while (!q->done) {
		if (drive) {
			pthread_mutex_unlock(&c->mtx);
			event_base_loop(c->base, EVLOOP_ONCE);
			pthread_mutex_lock(&c->mtx);
		} else
			pthread_cond_wait(&c->done_cv, &c->mtx);
	}
	pthread_mutex_unlock(&c->mtx);
	return q->rc;
}

static struct curl_slist *
req_headers(const char *token, const char *body, const char *ctype)
{
	struct curl_slist *hdrs = NULL;
	char line[K8S_MAX_TOKEN + 32];

	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	hdrs = curl_slist_append(hdrs, "Expect:");
	if (token[0] != '\0') {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
		hdrs = curl_slist_append(hdrs, line);
		explicit_bzero(line, sizeof(line));
	}
	if (body != NULL) {
		snprintf(line, sizeof(line), "Content-Type: %s",
		    ctype ? ctype : "application/json");
		hdrs = curl_slist_append(hdrs, line);
	}
	return hdrs;
}

static void
headers_free(struct curl_slist *h)
{
	struct curl_slist *p;

	for (p = h; p != NULL; p = p->next)
		explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(h);
}

int
k8s_request(struct k8s_client *c, const char *method, const char *path,
    const char *ctype, const char *body, int *status, struct buf *resp,
    char *err, size_t errlen)
{
	char *url = NULL, token[K8S_MAX_TOKEN];
	struct k8s_req q;
	int rc = -1, reauthed = 0;

	if (xasprintf(&url, "%s%s", c->server, path) == -1)
		abort();
	if (token_get(c, 0, token, sizeof(token), err, errlen) == -1)
		goto out;
	for (;;) {
		memset(&q, 0, sizeof(q));
		q.c = c;
		q.method = method;
		q.path = path;
		q.url = url;
		q.body = body;
		q.resp = resp;
		q.backoff_ms = c->backoff_ms;
		q.hdrs = req_headers(token, body, ctype);
		rc = submit_wait(c, &q);
		headers_free(q.hdrs);
		if (rc == -1) {
			snprintf(err, errlen, "%s", q.err);
			goto out;
		}
		*status = q.status;
		/* The token may have rotated under us: re-read it (here, not
		 * on the loop) and try once more. */
		if (q.status == 401 && !reauthed) {
			reauthed = 1;
			if (token_get(c, 1, token, sizeof(token), err, errlen) == 1)
				continue;
		}
		if (q.status == 429 || q.status >= 500)
			snprintf(err, errlen, "%s", q.err);
		break;
	}
	rc = 0;
out:
	explicit_bzero(token, sizeof(token));
	free(url);
	return rc;
}

void
k8s_client_stats(struct k8s_client *c, struct k8s_stats *st)
{
	pthread_mutex_lock(&c->mtx);
	*st = c->st;
	pthread_mutex_unlock(&c->mtx);
}

/* Copies peer text for an error message: control bytes become '?'. */
static void
clean_text(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	size_t i, o = 0;

	for (i = 0; i < srclen && src[i] != '\0' && o + 1 < dstlen; i++) {
		unsigned char c = (unsigned char)src[i];
		if (c < 0x20 || c == 0x7f)
			dst[o++] = '?';
		else
			dst[o++] = src[i];
	}
	if (dstlen > 0)
		dst[o] = '\0';
}

char *
k8s_status_error(int status, const char *body, size_t len, char *err,
    size_t errlen)
{
	cJSON *j = NULL, *msg, *reason, *kind;
	char esc[400];

	if (body != NULL && len > 0)
		j = cJSON_ParseWithLength(body, len);
	kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
	msg = cJSON_GetObjectItemCaseSensitive(j, "message");
	reason = cJSON_GetObjectItemCaseSensitive(j, "reason");
	if (cJSON_IsString(kind) && strcmp(kind->valuestring, "Status") == 0 &&
	    cJSON_IsString(msg)) {
		clean_text(esc, sizeof(esc), msg->valuestring, strlen(msg->valuestring));
		if (cJSON_IsString(reason) && reason->valuestring[0] != '\0')
			snprintf(err, errlen, "%s (%d %s)", esc, status,
			    reason->valuestring);
		else
			snprintf(err, errlen, "%s (%d)", esc, status);
	} else {
		clean_text(esc, sizeof(esc), body ? body : "", body ? (len > 120 ?
		    120 : len) : 0);
		snprintf(err, errlen, "API server answered %d: %s", status, esc);
	}
	cJSON_Delete(j);
	return err;
}

int
k8s_urlencode(const char *s, char *dst, size_t dstlen)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
		    ch == '.' || ch == '~') {
			if (o + 1 >= dstlen)
				return -1;
			dst[o++] = (char)ch;
		} else {
			if (o + 3 >= dstlen)
				return -1;
			dst[o++] = '%';
			dst[o++] = hex[ch >> 4];
			dst[o++] = hex[ch & 15];
		}
	}
	if (o >= dstlen)
		return -1;
	dst[o] = '\0';
	return 0;
}

/* ---- streamed GETs (watches) ---- */

#define STRM_ERR_MAX	4096	/* bytes of a refused watch's body kept */

struct k8s_strm {
	CURL		*h;
	int		 (*fn)(void *, const char *, size_t);
	int		 (*stop)(void *);
	void		*arg;
	struct buf	 errbody;	/* a non-200 answer's body, bounded */
	long		 code;
	int		 aborted;
};

static size_t
strm_write_cb(char *p, size_t sz, size_t nm, void *arg)
{
	struct k8s_strm *s = arg;
	size_t n = sz * nm, room;

	if (s->code == 0)
		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->code);
	if (s->code != 200) {
		/* Kept up to STRM_ERR_MAX bytes for the message; the rest dropped. */
		room = s->errbody.len < STRM_ERR_MAX ? STRM_ERR_MAX - s->errbody.len : 0;
		if (room > 0 && buf_add(&s->errbody, p, n < room ? n : room) == -1)
			return 0;
		return n;
	}
	if (s->fn(s->arg, p, n) == -1) {
		s->aborted = 1;
		return 0;
	}
	return n;
}

static int
strm_progress_cb(void *arg, curl_off_t dt UNUSED, curl_off_t dn UNUSED,
    curl_off_t ut UNUSED, curl_off_t un UNUSED)
{
	struct k8s_strm *s = arg;

	if (s->stop != NULL && s->stop(s->arg)) {
		s->aborted = 1;
		return 1;
	}
	return 0;
}

int
k8s_stream(struct k8s_client *c, const char *path, long long timeout_ms,
    int (*fn)(void *, const char *, size_t), int (*stop)(void *), void *arg,
    int *status, char *err, size_t errlen)
{
	char *url = NULL, token[K8S_MAX_TOKEN], ebuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	struct k8s_strm s;
	CURLcode cr;
	int rc = -1, force = 0, tries;

	*status = 0;
	if (xasprintf(&url, "%s%s", c->server, path) == -1)
		abort();
	for (tries = 0; tries < 2; tries++) {
		memset(&s, 0, sizeof(s));
		s.fn = fn;
		s.stop = stop;
		s.arg = arg;
		buf_init(&s.errbody, STRM_ERR_MAX + 1);
		if (token_get(c, force, token, sizeof(token), err, errlen) == -1) {
			buf_free(&s.errbody);
			break;
		}
		hdrs = req_headers(token, NULL, NULL);
		explicit_bzero(token, sizeof(token));
		if ((s.h = curl_easy_init()) == NULL) {
			snprintf(err, errlen, "curl_easy_init failed");
			headers_free(hdrs);
			buf_free(&s.errbody);
			break;
		}
		curl_easy_setopt(s.h, CURLOPT_URL, url);
		curl_easy_setopt(s.h, CURLOPT_PROTOCOLS_STR, "https");
		curl_easy_setopt(s.h, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(s.h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(s.h, CURLOPT_USERAGENT, "sandbox-orchestrator/k8s");
		curl_easy_setopt(s.h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(s.h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
		curl_easy_setopt(s.h, CURLOPT_CONNECTTIMEOUT_MS,
		    (long)(c->timeout_ms < 10000 ? c->timeout_ms : 10000));
		curl_easy_setopt(s.h, CURLOPT_ERRORBUFFER, ebuf);
		curl_easy_setopt(s.h, CURLOPT_WRITEFUNCTION, strm_write_cb);
		curl_easy_setopt(s.h, CURLOPT_WRITEDATA, &s);
		curl_easy_setopt(s.h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(s.h, CURLOPT_XFERINFOFUNCTION, strm_progress_cb);
		curl_easy_setopt(s.h, CURLOPT_XFERINFODATA, &s);
		curl_easy_setopt(s.h, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(s.h, CURLOPT_SSL_VERIFYHOST, 2L);
		set_pem(s.h, CURLOPT_CAINFO_BLOB, CURLOPT_CAINFO, 0, c->ca_data,
		    c->ca_len, c->ca_file);
		set_pem(s.h, CURLOPT_SSLCERT_BLOB, CURLOPT_SSLCERT,
		    CURLOPT_SSLCERTTYPE, c->cert_data, c->cert_len, c->cert_file);
		set_pem(s.h, CURLOPT_SSLKEY_BLOB, CURLOPT_SSLKEY, CURLOPT_SSLKEYTYPE,
		    c->key_data, c->key_len, c->key_file);
		cr = curl_easy_perform(s.h);
		if (s.code == 0)
			curl_easy_getinfo(s.h, CURLINFO_RESPONSE_CODE, &s.code);
		curl_easy_cleanup(s.h);
		headers_free(hdrs);
		hdrs = NULL;
		*status = (int)s.code;
		if (s.code == 401 && !force) {
			buf_free(&s.errbody);
			force = 1;
			continue;	/* the token may have rotated */
		}
		/* A refusal is an answer, not a stream: *status and err tell. */
		if (!s.aborted && s.code != 0 && s.code != 200)
			k8s_status_error((int)s.code, s.errbody.p, s.errbody.len,
			    err, errlen);
		else if (!s.aborted && cr != CURLE_OK) {
			snprintf(err, errlen, "watch %s: %s", path,
			    ebuf[0] ? ebuf : curl_easy_strerror(cr));
			buf_free(&s.errbody);
			break;
		}
		rc = 0;		/* ended by the server, fn or stop, or refused */
		buf_free(&s.errbody);
		break;
	}
	free(url);
	return rc;
}
