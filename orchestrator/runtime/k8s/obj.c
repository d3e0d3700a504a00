/*
 * runtime/k8s/obj.c: builders and readers for the kubernetes runtime's objects.
 * The pod follows docs/kubernetes.md ("What a sandbox is"): the requested
 * image, runtimeClass, every capability dropped (a root sandbox gets
 * K8S_ROOT_CAPS back, nothing else), seccomp RuntimeDefault, no privilege
 * escalation, no service-account token, no host namespaces or paths,
 * requests and limits for cpu, memory and ephemeral storage, the
 * static agent copied by an init container into an emptyDir and run as the
 * entrypoint, its token mounted from a per-sandbox Secret.
 */
#include <ctype.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "digest.h"
#include "log.h"
#include "obj.h"
#include "strnum.h"
#include "xmalloc.h"

void
k8s_name_pod(const char *id, char *dst, size_t len)
{
	snprintf(dst, len, "sbx-%s", id);
}

void
k8s_name_pvc(const char *id, char *dst, size_t len)
{
	snprintf(dst, len, "sbx-%s-ws", id);
}

void
k8s_name_secret(const char *id, char *dst, size_t len)
{
	snprintf(dst, len, "sbx-%s-agent", id);
}

void
k8s_name_netpol(const char *id, char *dst, size_t len)
{
	snprintf(dst, len, "sbx-%s", id);
}

void
k8s_home_hash(const char *user, char out[K8S_HOME_HASH + 1])
{
	char h[DIGEST_SHA256_HEX + 1];
	int bad;

	_Static_assert(K8S_HOME_HASH <= DIGEST_SHA256_HEX, "a home hash is a SHA-256 prefix");
	bad = digest_sha256_hex(user, strlen(user), h);
	ASSERT(bad == 0);	/* SHA-256 of memory does not fail */
	memcpy(out, h, K8S_HOME_HASH);
	out[K8S_HOME_HASH] = '\0';
}

void
k8s_name_home(const char *user, char *dst, size_t len)
{
	char h[K8S_HOME_HASH + 1];

	k8s_home_hash(user, h);
	snprintf(dst, len, "home-%s", h);
}

/*
 * An image reference (distribution/reference): an optional registry host
 * (DNS labels, optional port) and '/', lower-case path components joined
 * by '/' with '.', '_', '__' or '-' runs inside, an optional tag of at
 * most 128 characters, an optional digest (algorithm, ':', 32+ hex).
 */
#define REF_DOMAIN "([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])" \
	"(\\.([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(:[0-9]+)?/"
#define REF_COMP "[a-z0-9]+((\\.|_|__|-+)[a-z0-9]+)*"
#define REF_RE "^(" REF_DOMAIN ")?" REF_COMP "(/" REF_COMP ")*" \
	"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?" \
	"(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$"

static pthread_once_t ref_once = PTHREAD_ONCE_INIT;
static regex_t ref_re;
static int ref_ok;

static void
ref_compile(void)
{
	ref_ok = regcomp(&ref_re, REF_RE, REG_EXTENDED | REG_NOSUB) == 0;
}

int
k8s_image_valid(const char *img, char *err, size_t errlen)
{
	size_t i, n = strlen(img);

	if (n == 0 || n > 255) {
		snprintf(err, errlen, "image name must be 1 to 255 characters");
		return -1;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)img[i];
		if (c <= ' ' || c >= 0x7f) {
			snprintf(err, errlen, "image name must not contain spaces "
			    "or control characters");
			return -1;
		}
	}
	if (img[0] == '-' || img[0] == '/' || img[0] == ':' || img[0] == '@') {
		snprintf(err, errlen, "image name must start with a letter or digit");
		return -1;
	}
	pthread_once(&ref_once, ref_compile);
	if (!ref_ok || regexec(&ref_re, img, 0, NULL, 0) != 0) {
		snprintf(err, errlen, "image \"%.64s\" is not a valid image "
		    "reference ([registry[:port]/]name[:tag][@sha256:digest], the "
		    "name in lower case)", img);
		return -1;
	}
	return 0;
}

int
k8s_env_name_valid(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 255 || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

void
k8s_sbx_clear(struct k8s_sbx *s)
{
	size_t i;

	for (i = 0; i < s->nenv; i++) {
		free((char *)s->env[i].k);
		free((char *)s->env[i].v);
	}
	free(s->env);
	memset(s, 0, sizeof(*s));
}

int
k8s_sbx_from_spec(struct k8s_sbx *s, const struct rt_spec *sp,
    const char *default_image, char *err, size_t errlen)
{
	const char *img = sp->image && sp->image[0] ? sp->image : default_image;
	size_t i;

	memset(s, 0, sizeof(*s));
	if (sp->id == NULL || !id_sandbox_valid(sp->id)) {
		snprintf(err, errlen, "invalid sandbox id");
		return -1;
	}
	if (img == NULL || k8s_image_valid(img, err, errlen) == -1)
		return -1;
	if (sp->nenv > K8S_MAX_ENV) {
		snprintf(err, errlen, "too many environment variables (max %d)",
		    K8S_MAX_ENV);
		return -1;
	}
	if (sp->mem_bytes < 0 || sp->cpu_millis < 0 || sp->pids_max < 0 ||
	    sp->disk_bytes < 0 || sp->mem_reserve_bytes < 0) {
		snprintf(err, errlen, "resource limits must not be negative");
		return -1;
	}
	snprintf(s->id, sizeof(s->id), "%s", sp->id);
	snprintf(s->image, sizeof(s->image), "%s", img);
	s->use_kata = sp->use_kata != 0;
	s->run_as_root = sp->run_as_root != 0;
	s->writable_root = sp->writable_root != 0;
	s->mem = sp->mem_bytes;
	s->mem_req = sp->mem_reserve_bytes;
	s->cpu = sp->cpu_millis;
	s->pids = sp->pids_max;
	s->disk = sp->disk_bytes;
	s->ws = sp->disk_bytes;	/* a sandbox's disk: its claim and the rest */
	if (sp->home_user != NULL) {
		if (!id_session_valid(sp->home_user)) {
			snprintf(err, errlen, "invalid home user id");
			return -1;
		}
		snprintf(s->home, sizeof(s->home), "%s", sp->home_user);
	}
	if (sp->nenv > 0)
		s->env = xcalloc(sp->nenv, sizeof(*s->env));
	for (i = 0; i < sp->nenv; i++) {
		if (sp->env[i].k == NULL || sp->env[i].v == NULL ||
		    !k8s_env_name_valid(sp->env[i].k)) {
			snprintf(err, errlen, "invalid environment variable name");
			k8s_sbx_clear(s);
			return -1;
		}
		s->env[i].k = xstrdup(sp->env[i].k);
		s->env[i].v = xstrdup(sp->env[i].v);
		s->nenv++;
	}
	return 0;
}

char *
k8s_sbx_encode(const struct k8s_sbx *s)
{
	cJSON *o = cJSON_CreateObject(), *env;
	char *out;
	size_t i;

	cJSON_AddStringToObject(o, "image", s->image);
	cJSON_AddBoolToObject(o, "use_kata", s->use_kata);
	cJSON_AddBoolToObject(o, "run_as_root", s->run_as_root);
	cJSON_AddBoolToObject(o, "writable_root", s->writable_root);
	cJSON_AddNumberToObject(o, "mem", (double)s->mem);
	if (s->mem_req > 0)
		cJSON_AddNumberToObject(o, "mem_req", (double)s->mem_req);
	cJSON_AddNumberToObject(o, "cpu", (double)s->cpu);
	cJSON_AddNumberToObject(o, "pids", (double)s->pids);
	cJSON_AddNumberToObject(o, "disk", (double)s->disk);
	cJSON_AddNumberToObject(o, "ws", (double)s->ws);
	if (s->home[0] != '\0') {
		cJSON_AddStringToObject(o, "home", s->home);
		cJSON_AddNumberToObject(o, "home_bytes", (double)s->home_bytes);
	}
	env = cJSON_AddObjectToObject(o, "env");
	for (i = 0; i < s->nenv; i++)
		cJSON_AddStringToObject(env, s->env[i].k, s->env[i].v);
	out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (out == NULL)
		abort();
	return out;
}

static long long
num_ge0(const cJSON *o, const char *k)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(n) || n->valuedouble < 0 || n->valuedouble > 9.0e15)
		return 0;
	return (long long)n->valuedouble;
}

int
k8s_sbx_decode(const char *json, const char *id, struct k8s_sbx *s, char *err,
    size_t errlen)
{
	cJSON *o, *img, *env, *e;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	if (json == NULL || (o = cJSON_Parse(json)) == NULL || !cJSON_IsObject(o)) {
		snprintf(err, errlen, "sandbox %s: missing or bad %s annotation",
		    id, K8S_ANN_SPEC);
		if (json != NULL)
			cJSON_Delete(o);
		return -1;
	}
	img = cJSON_GetObjectItemCaseSensitive(o, "image");
	if (!cJSON_IsString(img) || k8s_image_valid(img->valuestring, err,
	    errlen) == -1 || !id_sandbox_valid(id)) {
		snprintf(err, errlen, "sandbox %s: bad image in %s", id, K8S_ANN_SPEC);
		goto out;
	}
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->image, sizeof(s->image), "%s", img->valuestring);
	s->use_kata = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "use_kata"));
	s->run_as_root = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "run_as_root"));
	s->writable_root = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "writable_root"));
	s->mem = num_ge0(o, "mem");
	s->mem_req = num_ge0(o, "mem_req");
	s->cpu = num_ge0(o, "cpu");
	s->pids = num_ge0(o, "pids");
	s->disk = num_ge0(o, "disk");
	s->ws = num_ge0(o, "ws");
	e = cJSON_GetObjectItemCaseSensitive(o, "home");
	if (e != NULL) {
		if (!cJSON_IsString(e) || !id_session_valid(e->valuestring)) {
			snprintf(err, errlen, "sandbox %s: bad home in %s", id,
			    K8S_ANN_SPEC);
			goto out;
		}
		snprintf(s->home, sizeof(s->home), "%s", e->valuestring);
		s->home_bytes = num_ge0(o, "home_bytes");
	}
	env = cJSON_GetObjectItemCaseSensitive(o, "env");
	if (cJSON_IsObject(env)) {
		size_t n = (size_t)cJSON_GetArraySize(env);
		if (n > K8S_MAX_ENV) {
			snprintf(err, errlen, "sandbox %s: too many env entries", id);
			goto out;
		}
		s->env = n ? xcalloc(n, sizeof(*s->env)) : NULL;
		cJSON_ArrayForEach(e, env) {
			if (s->env == NULL || s->nenv >= n)
				break;
			if (!cJSON_IsString(e) || !k8s_env_name_valid(e->string))
				continue;
			s->env[s->nenv].k = xstrdup(e->string);
			s->env[s->nenv].v = xstrdup(e->valuestring);
			s->nenv++;
		}
	}
	rc = 0;
out:
	if (rc == -1)
		k8s_sbx_clear(s);
	cJSON_Delete(o);
	return rc;
}

char *
k8s_labels_encode(const struct rt_kv *kv, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	char *out;
	size_t i;

	for (i = 0; i < n; i++) {
		if (kv[i].k == NULL || kv[i].v == NULL)
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(o, kv[i].k);
		cJSON_AddStringToObject(o, kv[i].k, kv[i].v);
	}
	out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (out == NULL)
		abort();
	return out;
}

int
k8s_labels_decode(const char *json, struct rt_kv **out, size_t *n)
{
	cJSON *o, *e;
	size_t cnt;

	*out = NULL;
	*n = 0;
	if (json == NULL)
		return 0;
	if ((o = cJSON_Parse(json)) == NULL || !cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return -1;
	}
	cnt = (size_t)cJSON_GetArraySize(o);
	if (cnt > K8S_MAX_LABELS) {
		cJSON_Delete(o);
		return -1;
	}
	if (cnt > 0)
		*out = xcalloc(cnt, sizeof(**out));
	cJSON_ArrayForEach(e, o) {
		if (*out == NULL || *n >= cnt)
			break;
		if (!cJSON_IsString(e))
			continue;
		(*out)[*n].k = xstrdup(e->string);
		(*out)[*n].v = xstrdup(e->valuestring);
		(*n)++;
	}
	cJSON_Delete(o);
	return 0;
}

/* A quantity: plain bytes/units, or millis with the "m" suffix. */
static void
add_qty(cJSON *o, const char *k, int millis, long long v)
{
	char q[32];

	snprintf(q, sizeof(q), "%lld%s", v, millis ? "m" : "");
	cJSON_AddStringToObject(o, k, q);
}

static void
add_ll_str(cJSON *o, const char *k, long long v)
{
	char q[32];

	snprintf(q, sizeof(q), "%lld", v);
	cJSON_AddStringToObject(o, k, q);
}

/* metadata with our labels; role "sandbox" only on pods. */
static cJSON *
meta(const struct k8s_params *p, cJSON *parent, const char *name,
    const char *id, const char *role)
{
	cJSON *m = cJSON_AddObjectToObject(parent, "metadata"), *l;

	cJSON_AddStringToObject(m, "name", name);
	cJSON_AddStringToObject(m, "namespace", p->ns);
	l = cJSON_AddObjectToObject(m, "labels");
	cJSON_AddStringToObject(l, K8S_LBL_MANAGED, K8S_MANAGER);
	cJSON_AddStringToObject(l, K8S_LBL_INSTANCE, p->instance);
	cJSON_AddStringToObject(l, K8S_LBL_ID, id);
	if (role != NULL)
		cJSON_AddStringToObject(l, K8S_LBL_ROLE, role);
	return m;
}

static void
session_annotations(cJSON *m, const struct k8s_sbx *s, const char *labels_json,
    long long created_ms, long long started_ms)
{
	cJSON *a = cJSON_AddObjectToObject(m, "annotations");
	char *spec = k8s_sbx_encode(s);

	cJSON_AddStringToObject(a, K8S_ANN_SPEC, spec);
	free(spec);
	cJSON_AddStringToObject(a, K8S_ANN_LABELS, labels_json ? labels_json : "{}");
	add_ll_str(a, K8S_ANN_CREATED, created_ms);
	if (started_ms > 0)
		add_ll_str(a, K8S_ANN_STARTED, started_ms);
}

cJSON *
k8s_build_pvc(const struct k8s_params *p, const struct k8s_sbx *s,
    const char *labels_json, long long created_ms)
{
	cJSON *o = cJSON_CreateObject(), *m, *spec, *r;
	char name[128];

	cJSON_AddStringToObject(o, "apiVersion", "v1");
	cJSON_AddStringToObject(o, "kind", "PersistentVolumeClaim");
	k8s_name_pvc(s->id, name, sizeof(name));
	m = meta(p, o, name, s->id, NULL);
	session_annotations(m, s, labels_json, created_ms, 0);
	spec = cJSON_AddObjectToObject(o, "spec");
	cJSON_AddItemToObject(spec, "accessModes",
	    cJSON_CreateStringArray((const char *[]){ "ReadWriteOnce" }, 1));
	r = cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "resources"),
	    "requests");
	add_qty(r, "storage", 0, s->ws > 0 ? s->ws : p->workspace_bytes);
	if (p->storage_class != NULL && p->storage_class[0] != '\0')
		cJSON_AddStringToObject(spec, "storageClassName", p->storage_class);
	cJSON_AddStringToObject(spec, "volumeMode", "Filesystem");
	if (s->ws_from[0] != '\0') {
		/* CSI volume cloning: the new claim starts as a copy */
		r = cJSON_AddObjectToObject(spec, "dataSource");
		cJSON_AddStringToObject(r, "kind", "PersistentVolumeClaim");
		cJSON_AddStringToObject(r, "name", s->ws_from);
	}
	return o;
}

cJSON *
k8s_build_home_pvc(const struct k8s_params *p, const char *user,
    long long size_bytes, long long now_ms)
{
	cJSON *o = cJSON_CreateObject(), *m, *l, *a, *spec, *r;
	char name[128], hash[K8S_HOME_HASH + 1];

	cJSON_AddStringToObject(o, "apiVersion", "v1");
	cJSON_AddStringToObject(o, "kind", "PersistentVolumeClaim");
	k8s_home_hash(user, hash);
	k8s_name_home(user, name, sizeof(name));
	m = cJSON_AddObjectToObject(o, "metadata");
	cJSON_AddStringToObject(m, "name", name);
	cJSON_AddStringToObject(m, "namespace", p->ns);
	/* No sandbox id: the sandbox list (and so reconcile) never sees it. */
	l = cJSON_AddObjectToObject(m, "labels");
	cJSON_AddStringToObject(l, K8S_LBL_MANAGED, K8S_MANAGER);
	cJSON_AddStringToObject(l, K8S_LBL_INSTANCE, p->instance);
	cJSON_AddStringToObject(l, K8S_LBL_HOME, hash);
	a = cJSON_AddObjectToObject(m, "annotations");
	cJSON_AddStringToObject(a, K8S_ANN_HOME_USER, user);
	add_ll_str(a, K8S_ANN_HOME_USED, now_ms);
	spec = cJSON_AddObjectToObject(o, "spec");
	cJSON_AddItemToObject(spec, "accessModes", cJSON_CreateStringArray(
	    (const char *[]){ p->home_access_mode != NULL &&
	    p->home_access_mode[0] != '\0' ? p->home_access_mode :
	    "ReadWriteOnce" }, 1));
	r = cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "resources"),
	    "requests");
	add_qty(r, "storage", 0, size_bytes);
	if (p->home_storage_class != NULL && p->home_storage_class[0] != '\0')
		cJSON_AddStringToObject(spec, "storageClassName",
		    p->home_storage_class);
	cJSON_AddStringToObject(spec, "volumeMode", "Filesystem");
	return o;
}

cJSON *
k8s_build_secret(const struct k8s_params *p, const char *id, const char *token,
    const char *pvc_uid)
{
	cJSON *o = cJSON_CreateObject(), *m, *refs, *ref, *d;
	char name[128], pvc[128];

	cJSON_AddStringToObject(o, "apiVersion", "v1");
	cJSON_AddStringToObject(o, "kind", "Secret");
	k8s_name_secret(id, name, sizeof(name));
	m = meta(p, o, name, id, NULL);
	if (pvc_uid != NULL && pvc_uid[0] != '\0') {
		/* Garbage-collected with the workspace claim. */
		k8s_name_pvc(id, pvc, sizeof(pvc));
		refs = cJSON_AddArrayToObject(m, "ownerReferences");
		ref = cJSON_CreateObject();
		cJSON_AddStringToObject(ref, "apiVersion", "v1");
		cJSON_AddStringToObject(ref, "kind", "PersistentVolumeClaim");
		cJSON_AddStringToObject(ref, "name", pvc);
		cJSON_AddStringToObject(ref, "uid", pvc_uid);
		cJSON_AddItemToArray(refs, ref);
	}
	cJSON_AddStringToObject(o, "type", "Opaque");
	cJSON_AddBoolToObject(o, "immutable", 1);
	d = cJSON_AddObjectToObject(o, "stringData");
	cJSON_AddStringToObject(d, "token", token);
	return o;
}

static cJSON *
seccomp(const char *localhost)
{
	cJSON *s = cJSON_CreateObject();

	if (localhost != NULL && localhost[0] != '\0') {
		cJSON_AddStringToObject(s, "type", "Localhost");
		cJSON_AddStringToObject(s, "localhostProfile", localhost);
	} else
		cJSON_AddStringToObject(s, "type", "RuntimeDefault");
	return s;
}

/*
 * A container's security context: ALL capabilities dropped, and for
 * root (1) exactly K8S_ROOT_CAPS added back; 0: non-root (runAsNonRoot,
 * the pod's non-zero uid), -1: as the pod says (the init container).
 * allowPrivilegeEscalation is false in both: no_new_privs keeps root at
 * the set it starts with (setuid and file-capability binaries gain
 * nothing) and is what Pod Security "restricted" and "baseline" expect.
 */
static cJSON *
hardened_ctx(int ro_root, const char *localhost, int root)
{
	static const char *const root_caps[] = K8S_ROOT_CAPS;
	cJSON *c = cJSON_CreateObject(), *caps;

	cJSON_AddBoolToObject(c, "allowPrivilegeEscalation", 0);
	cJSON_AddBoolToObject(c, "privileged", 0);
	cJSON_AddBoolToObject(c, "readOnlyRootFilesystem", ro_root);
	if (root == 0)
		cJSON_AddBoolToObject(c, "runAsNonRoot", 1);
	caps = cJSON_AddObjectToObject(c, "capabilities");
	cJSON_AddItemToObject(caps, "drop",
	    cJSON_CreateStringArray((const char *[]){ "ALL" }, 1));
	if (root == 1)
		cJSON_AddItemToObject(caps, "add", cJSON_CreateStringArray(
		    (const char **)root_caps, (int)NELEM(root_caps)));
	cJSON_AddItemToObject(c, "seccompProfile", seccomp(localhost));
	return c;
}

static void
mount(cJSON *arr, const char *name, const char *path, int ro)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "name", name);
	cJSON_AddStringToObject(m, "mountPath", path);
	if (ro)
		cJSON_AddBoolToObject(m, "readOnly", 1);
	cJSON_AddItemToArray(arr, m);
}

static void
env_add(cJSON *arr, const char *k, const char *v)
{
	cJSON *e = cJSON_CreateObject();

	cJSON_AddStringToObject(e, "name", k);
	cJSON_AddStringToObject(e, "value", v);
	cJSON_AddItemToArray(arr, e);
}

static cJSON *
empty_dir(cJSON *vols, const char *name, const char *medium, const char *size)
{
	cJSON *v = cJSON_CreateObject(), *e;

	cJSON_AddStringToObject(v, "name", name);
	e = cJSON_AddObjectToObject(v, "emptyDir");
	if (medium != NULL)
		cJSON_AddStringToObject(e, "medium", medium);
	cJSON_AddStringToObject(e, "sizeLimit", size);
	cJSON_AddItemToArray(vols, v);
	return v;
}

/*
 * A ReadWriteOnce home attaches to one node at a time: a pod mounting it
 * must go where the pods already mounting it run (the first one anywhere:
 * a pod matching its own required term may start a group), else it
 * would wait in ContainerCreating (Multi-Attach) until ready_timeout.
 */
/* A label value: at most 63 of [A-Za-z0-9._-], alphanumeric at both ends
 * (or empty). */
static int
label_value_ok(const char *v)
{
	size_t i, n = strlen(v);

	if (n > 63)
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && !((v[i] == '.' || v[i] == '_' ||
		    v[i] == '-') && i > 0 && i + 1 < n))
			return 0;
	return 1;
}

/* A label key: [prefix/]name, the prefix a DNS subdomain (at most 253 of
 * [a-z0-9.-]), the name a non-empty label value. */
static int
label_key_ok(const char *k)
{
	const char *sl = strchr(k, '/'), *name = sl ? sl + 1 : k;
	size_t i, n = sl ? (size_t)(sl - k) : 0;

	if (sl != NULL) {
		if (n == 0 || n > 253 || k[0] == '-' || k[0] == '.' ||
		    k[n - 1] == '-' || k[n - 1] == '.')
			return 0;
		for (i = 0; i < n; i++)
			if (!((k[i] >= 'a' && k[i] <= 'z') || isdigit((unsigned char)k[i]) ||
			    k[i] == '-' || k[i] == '.'))
				return 0;
	}
	return name[0] != '\0' && label_value_ok(name);
}

int
k8s_label_ok(const char *key, const char *value)
{
	return key != NULL && value != NULL && label_key_ok(key) &&
	    label_value_ok(value);
}

/* Splits "key[=value][:Effect]" into its parts (in buf); -1 if malformed. */
static int
toleration_split(const char *t, char *buf, size_t len, const char **key,
    const char **value, const char **effect)
{
	char *c, *e;

	if (t == NULL || snprintf(buf, len, "%s", t) >= (int)len || buf[0] == '\0')
		return -1;
	*value = *effect = NULL;
	if ((c = strrchr(buf, ':')) != NULL) {
		*c = '\0';
		*effect = c + 1;
		if (strcmp(*effect, "NoSchedule") != 0 &&
		    strcmp(*effect, "PreferNoSchedule") != 0 &&
		    strcmp(*effect, "NoExecute") != 0)
			return -1;
	}
	if ((e = strchr(buf, '=')) != NULL) {
		*e = '\0';
		*value = e + 1;
		if (!label_value_ok(*value))
			return -1;
	}
	*key = buf;
	return label_key_ok(buf) ? 0 : -1;
}

int
k8s_toleration_valid(const char *t, char *err, size_t errlen)
{
	const char *k, *v, *e;
	char buf[512];

	if (toleration_split(t, buf, sizeof(buf), &k, &v, &e) == -1) {
		snprintf(err, errlen, "kubernetes.sandbox.tolerations: \"%.64s\": "
		    "expected key[=value][:NoSchedule|PreferNoSchedule|NoExecute]",
		    t ? t : "");
		return -1;
	}
	return 0;
}

/* The configured extra nodeSelector and tolerations (the RuntimeClass's
 * own are merged in by its admission plugin). */
static void
scheduling(const struct k8s_params *p, cJSON *spec)
{
	const char *k, *v, *e;
	cJSON *o, *arr;
	char buf[512];
	size_t i;

	if (p->node_selector != NULL && p->node_selector->n > 0) {
		o = cJSON_AddObjectToObject(spec, "nodeSelector");
		for (i = 0; i < p->node_selector->n; i++)
			cJSON_AddStringToObject(o, p->node_selector->k[i],
			    p->node_selector->v[i]);
	}
	if (p->tolerations == NULL || p->tolerations->n == 0)
		return;
	arr = cJSON_AddArrayToObject(spec, "tolerations");
	for (i = 0; i < p->tolerations->n; i++) {
		if (toleration_split(p->tolerations->v[i], buf, sizeof(buf), &k, &v,
		    &e) == -1)
			continue;	/* refused at setup */
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "key", k);
		cJSON_AddStringToObject(o, "operator", v ? "Equal" : "Exists");
		if (v != NULL)
			cJSON_AddStringToObject(o, "value", v);
		if (e != NULL)
			cJSON_AddStringToObject(o, "effect", e);
		cJSON_AddItemToArray(arr, o);
	}
}

static void
home_affinity(cJSON *spec, const char *hash)
{
	cJSON *t = cJSON_CreateObject(), *arr;

	cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(t,
	    "labelSelector"), "matchLabels"), K8S_LBL_HOME, hash);
	cJSON_AddStringToObject(t, "topologyKey", "kubernetes.io/hostname");
	arr = cJSON_AddArrayToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(
	    spec, "affinity"), "podAffinity"),
	    "requiredDuringSchedulingIgnoredDuringExecution");
	cJSON_AddItemToArray(arr, t);
}

cJSON *
k8s_build_pod(const struct k8s_params *p, const struct k8s_sbx *s,
    const char *labels_json, long long created_ms, long long started_ms)
{
	cJSON *o = cJSON_CreateObject(), *m, *spec, *sc, *arr, *c, *r, *cmd;
	cJSON *vols, *v, *x, *probe;
	char name[128], pvc[128], secret[128], port[16], tokpath[128];
	char home[K8S_HOME_HASH + 1];
	const char *rc = s->use_kata ? p->kata_runtime_class : p->runtime_class;
	long long cpu = s->cpu, creq = p->cpu_request;
	size_t i;

	cJSON_AddStringToObject(o, "apiVersion", "v1");
	cJSON_AddStringToObject(o, "kind", "Pod");
	k8s_name_pod(s->id, name, sizeof(name));
	k8s_name_pvc(s->id, pvc, sizeof(pvc));
	k8s_name_secret(s->id, secret, sizeof(secret));
	m = meta(p, o, name, s->id, "sandbox");
	if (s->home[0] != '\0') {
		/* who mounts a home: home_delete refuses while any pod does */
		k8s_home_hash(s->home, home);
		cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(m, "labels"),
		    K8S_LBL_HOME, home);
	}
	session_annotations(m, s, labels_json, created_ms, started_ms);

	spec = cJSON_AddObjectToObject(o, "spec");
	if (rc != NULL && rc[0] != '\0')
		cJSON_AddStringToObject(spec, "runtimeClassName", rc);
	scheduling(p, spec);
	cJSON_AddBoolToObject(spec, "automountServiceAccountToken", 0);
	cJSON_AddBoolToObject(spec, "enableServiceLinks", 0);
	cJSON_AddStringToObject(spec, "restartPolicy", "Never");
	cJSON_AddNumberToObject(spec, "terminationGracePeriodSeconds", (double)p->grace_s);
	cJSON_AddBoolToObject(spec, "hostNetwork", 0);
	cJSON_AddBoolToObject(spec, "hostPID", 0);
	cJSON_AddBoolToObject(spec, "hostIPC", 0);
	cJSON_AddBoolToObject(spec, "shareProcessNamespace", 0);
	if (!p->cluster_dns) {
		/* No cluster DNS: a sandbox reaches only its proxy, by IP. */
		cJSON_AddStringToObject(spec, "dnsPolicy", "None");
		x = cJSON_AddObjectToObject(spec, "dnsConfig");
		cJSON_AddItemToObject(x, "nameservers",
		    cJSON_CreateStringArray((const char *[]){ "127.0.0.1" }, 1));
	}
	sc = cJSON_AddObjectToObject(spec, "securityContext");
	if (s->run_as_root) {
		cJSON_AddBoolToObject(sc, "runAsNonRoot", 0);
		cJSON_AddNumberToObject(sc, "runAsUser", 0);
		cJSON_AddNumberToObject(sc, "runAsGroup", 0);
	} else {
		cJSON_AddBoolToObject(sc, "runAsNonRoot", 1);
		cJSON_AddNumberToObject(sc, "runAsUser", (double)p->run_as_user);
		cJSON_AddNumberToObject(sc, "runAsGroup", (double)p->run_as_user);
		cJSON_AddNumberToObject(sc, "fsGroup", (double)p->run_as_user);
		/* A home is reused and can be large: chown it only when its
		 * top directory is not the fsGroup's yet, not every start. */
		if (s->home[0] != '\0')
			cJSON_AddStringToObject(sc, "fsGroupChangePolicy",
			    "OnRootMismatch");
	}
	cJSON_AddItemToObject(sc, "seccompProfile", seccomp(NULL));
	if (s->home[0] != '\0' && (p->home_access_mode == NULL ||
	    p->home_access_mode[0] == '\0' ||
	    strcmp(p->home_access_mode, "ReadWriteOnce") == 0))
		home_affinity(spec, home);

	/* Init container: copy the static agent into the emptyDir. */
	arr = cJSON_AddArrayToObject(spec, "initContainers");
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "name", "install-agent");
	cJSON_AddStringToObject(c, "image", p->agent_image);
	cJSON_AddStringToObject(c, "imagePullPolicy", p->pull_policy);
	cJSON_AddItemToObject(c, "command", cJSON_CreateStringArray((const char *[]){
	    "/agent-install", "/sandbox-agent", K8S_AGENT_BIN }, 3));
	mount(cJSON_AddArrayToObject(c, "volumeMounts"), "agent-bin", K8S_AGENT_DIR, 0);
	cJSON_AddItemToObject(c, "securityContext", hardened_ctx(1, NULL, -1));
	r = cJSON_AddObjectToObject(c, "resources");
	x = cJSON_AddObjectToObject(r, "requests");
	cJSON_AddStringToObject(x, "cpu", "50m");
	cJSON_AddStringToObject(x, "memory", "32Mi");
	x = cJSON_AddObjectToObject(r, "limits");
	cJSON_AddStringToObject(x, "cpu", "500m");
	cJSON_AddStringToObject(x, "memory", "64Mi");
	cJSON_AddItemToArray(arr, c);

	/* The sandbox: the agent is the entrypoint of any image. */
	arr = cJSON_AddArrayToObject(spec, "containers");
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "name", "sandbox");
	cJSON_AddStringToObject(c, "image", s->image);
	cJSON_AddStringToObject(c, "imagePullPolicy", p->pull_policy);
	snprintf(port, sizeof(port), "tcp:0.0.0.0:%lld", p->agent_port);
	snprintf(tokpath, sizeof(tokpath), "%s/token", K8S_TOKEN_DIR);
	cmd = cJSON_CreateStringArray((const char *[]){
	    K8S_AGENT_BIN, "--listen", port, "--token-file",
	    tokpath, "--state", "/run/agent", "--workdir", "/workspace" }, 9);
	cJSON_AddItemToObject(c, "command", cmd);
	cJSON_AddStringToObject(c, "workingDir", "/workspace");
	x = cJSON_AddArrayToObject(c, "env");
	env_add(x, "SANDBOX_ID", s->id);
	env_add(x, "HOME", s->home[0] != '\0' ? RT_HOME_PATH : s->run_as_root ?
	    "/root" : "/workspace");
	for (i = 0; i < s->nenv; i++)
		if (strcmp(s->env[i].k, "SANDBOX_ID") != 0 &&
		    strcmp(s->env[i].k, "HOME") != 0)
			env_add(x, s->env[i].k, s->env[i].v);
	x = cJSON_AddArrayToObject(c, "ports");
	v = cJSON_CreateObject();
	cJSON_AddStringToObject(v, "name", "agent");
	cJSON_AddNumberToObject(v, "containerPort", (double)p->agent_port);
	cJSON_AddStringToObject(v, "protocol", "TCP");
	cJSON_AddItemToArray(x, v);
	x = cJSON_AddArrayToObject(c, "volumeMounts");
	mount(x, "agent-bin", K8S_AGENT_DIR, 1);
	mount(x, "agent-token", K8S_TOKEN_DIR, 1);
	mount(x, "agent-state", "/run/agent", 0);
	mount(x, "workspace", "/workspace", 0);
	if (s->home[0] != '\0')
		mount(x, "home", RT_HOME_PATH, 0);
	mount(x, "tmp", "/tmp", 0);
	if (p->proxy_ca_configmap != NULL && p->proxy_ca_configmap[0] != '\0')
		mount(x, "proxy-ca", K8S_PROXY_CA_DIR, 1);
	cJSON_AddItemToObject(c, "securityContext", hardened_ctx(!s->writable_root,
	    p->seccomp_localhost, s->run_as_root));
	r = cJSON_AddObjectToObject(c, "resources");
	if (creq > cpu)
		creq = cpu;
	x = cJSON_AddObjectToObject(r, "requests");
	add_qty(x, "cpu", 1, creq);
	/* the reservation; the limit below stays the ceiling */
	add_qty(x, "memory", 0, s->mem_req > 0 && s->mem_req <= s->mem ?
	    s->mem_req : s->mem);
	add_qty(x, "ephemeral-storage", 0, s->disk / 4 > 0 ? s->disk / 4 : s->disk);
	x = cJSON_AddObjectToObject(r, "limits");
	add_qty(x, "cpu", 1, cpu);
	add_qty(x, "memory", 0, s->mem);
	add_qty(x, "ephemeral-storage", 0, s->disk);
	/* The agent needs a token for HTTP; readiness is its TCP port. */
	probe = cJSON_AddObjectToObject(c, "readinessProbe");
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(probe, "tcpSocket"), "port",
	    (double)p->agent_port);
	cJSON_AddNumberToObject(probe, "periodSeconds", 2);
	cJSON_AddNumberToObject(probe, "failureThreshold", 3);
	cJSON_AddItemToArray(arr, c);

	vols = cJSON_AddArrayToObject(spec, "volumes");
	empty_dir(vols, "agent-bin", "Memory", "64Mi");
	empty_dir(vols, "agent-state", NULL, "1Gi");
	empty_dir(vols, "tmp", NULL, "2Gi");
	v = cJSON_CreateObject();
	cJSON_AddStringToObject(v, "name", "workspace");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(v, "persistentVolumeClaim"),
	    "claimName", pvc);
	cJSON_AddItemToArray(vols, v);
	if (s->home[0] != '\0') {
		k8s_name_home(s->home, pvc, sizeof(pvc));
		v = cJSON_CreateObject();
		cJSON_AddStringToObject(v, "name", "home");
		cJSON_AddStringToObject(cJSON_AddObjectToObject(v,
		    "persistentVolumeClaim"), "claimName", pvc);
		cJSON_AddItemToArray(vols, v);
	}
	v = cJSON_CreateObject();
	cJSON_AddStringToObject(v, "name", "agent-token");
	x = cJSON_AddObjectToObject(v, "secret");
	cJSON_AddStringToObject(x, "secretName", secret);
	cJSON_AddNumberToObject(x, "defaultMode", 0440);
	cJSON_AddItemToArray(vols, v);
	if (p->proxy_ca_configmap != NULL && p->proxy_ca_configmap[0] != '\0') {
		v = cJSON_CreateObject();
		cJSON_AddStringToObject(v, "name", "proxy-ca");
		x = cJSON_AddObjectToObject(v, "configMap");
		cJSON_AddStringToObject(x, "name", p->proxy_ca_configmap);
		cJSON_AddBoolToObject(x, "optional", 1);
		cJSON_AddItemToArray(vols, v);
	}
	return o;
}

long long
k8s_qty_bytes(const char *q)
{
	static const struct { const char *sfx; long long mul; } u[] = {
		{ "Ki", 1LL << 10 }, { "Mi", 1LL << 20 }, { "Gi", 1LL << 30 },
		{ "Ti", 1LL << 40 }, { "Pi", 1LL << 50 }, { "k", 1000LL },
		{ "M", 1000000LL }, { "G", 1000000000LL }, { "T", 1000000000000LL },
		{ "", 1 },
	};
	char num[32];
	const char *es;
	long long v;
	size_t i, n;

	if (q == NULL)
		return -1;
	n = strspn(q, "0123456789");
	if (n == 0 || n >= sizeof(num))
		return -1;
	memcpy(num, q, n);
	num[n] = '\0';
	if (strnum_ll(num, 0, 1LL << 53, &v, &es) == -1)
		return -1;
	for (i = 0; i < NELEM(u); i++)
		if (strcmp(q + n, u[i].sfx) == 0)
			return v > (1LL << 62) / u[i].mul ? -1 : v * u[i].mul;
	return -1;
}

const char *
k8s_ann(const cJSON *a, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

long long
k8s_ann_ll(const cJSON *a, const char *key)
{
	const char *s = k8s_ann(a, key), *es;
	long long v;

	if (s == NULL || strnum_ll(s, 0, (1LL << 53), &v, &es) == -1)
		return 0;
	return v;
}

static const char *
jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Container states that will not get better by waiting. */
static int
fatal_wait_reason(const char *r)
{
	static const char *bad[] = { "ErrImagePull", "ImagePullBackOff",
	    "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError",
	    "CreateContainerError", "CrashLoopBackOff", "RunContainerError" };
	size_t i;

	for (i = 0; i < NELEM(bad); i++)
		if (strcmp(r, bad[i]) == 0)
			return 1;
	return 0;
}

static void
scan_statuses(const cJSON *arr, struct k8s_podview *v)
{
	const cJSON *cs, *st, *w, *t;
	const char *r, *msg, *cname;

	cJSON_ArrayForEach(cs, arr) {
		cname = jstr(cs, "name");
		st = cJSON_GetObjectItemCaseSensitive(cs, "state");
		if ((w = cJSON_GetObjectItemCaseSensitive(st, "waiting")) != NULL &&
		    (r = jstr(w, "reason")) != NULL) {
			msg = jstr(w, "message");
			if (fatal_wait_reason(r)) {
				v->failed = 1;
				v->hard = 1;
				snprintf(v->reason, sizeof(v->reason), "%s: %s%s%s",
				    cname ? cname : "container", r, msg ? ": " : "",
				    msg ? msg : "");
				return;
			}
			if (v->reason[0] == '\0')
				snprintf(v->reason, sizeof(v->reason), "%s: %s",
				    cname ? cname : "container", r);
		}
		if ((t = cJSON_GetObjectItemCaseSensitive(st, "terminated")) != NULL &&
		    (r = jstr(t, "reason")) != NULL && strcmp(r, "OOMKilled") == 0) {
			snprintf(v->reason, sizeof(v->reason), "oom");
			v->failed = 1;
			v->hard = 0;
			return;
		}
	}
}

void
k8s_pod_view(const cJSON *pod, struct k8s_podview *v)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(pod, "status"), *c;
	const char *r, *msg;

	memset(v, 0, sizeof(*v));
	v->name = jstr(md, "name");
	v->labels = cJSON_GetObjectItemCaseSensitive(md, "labels");
	v->annotations = cJSON_GetObjectItemCaseSensitive(md, "annotations");
	v->id = jstr(v->labels, K8S_LBL_ID);
	v->uid = jstr(md, "uid");
	v->deleting = cJSON_GetObjectItemCaseSensitive(md, "deletionTimestamp") != NULL &&
	    !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(md, "deletionTimestamp"));
	v->phase = jstr(st, "phase");
	if (v->phase == NULL)
		v->phase = "";
	v->ip = jstr(st, "podIP");
	if (v->ip != NULL && v->ip[0] == '\0')
		v->ip = NULL;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(st, "conditions")) {
		const char *t = jstr(c, "type"), *s = jstr(c, "status");
		if (t == NULL || s == NULL)
			continue;
		if (strcmp(t, "Ready") == 0 && strcmp(s, "True") == 0)
			v->ready = 1;
		if (strcmp(t, "PodScheduled") == 0 && strcmp(s, "False") == 0 &&
		    (r = jstr(c, "reason")) != NULL) {
			v->unschedulable = strcmp(r, "Unschedulable") == 0;
			msg = jstr(c, "message");
			snprintf(v->reason, sizeof(v->reason), "%s%s%s", r,
			    msg ? ": " : "", msg ? msg : "");
		}
	}
	if (strcmp(v->phase, "Failed") == 0 || strcmp(v->phase, "Succeeded") == 0) {
		v->failed = 1;
		r = jstr(st, "reason");
		msg = jstr(st, "message");
		v->reason[0] = '\0';
		scan_statuses(cJSON_GetObjectItemCaseSensitive(st, "containerStatuses"), v);
		if (v->reason[0] == '\0' && r != NULL && strcmp(r, "Evicted") == 0)
			snprintf(v->reason, sizeof(v->reason), "evicted%s%s",
			    msg ? ": " : "", msg ? msg : "");
		else if (v->reason[0] == '\0')
			snprintf(v->reason, sizeof(v->reason), "pod %s%s%s%s%s",
			    strcmp(v->phase, "Failed") == 0 ? "failed" : "exited",
			    r ? ": " : "", r ? r : "", msg ? ": " : "", msg ? msg : "");
		v->ready = 0;
		v->hard = 0;
		return;
	}
	scan_statuses(cJSON_GetObjectItemCaseSensitive(st, "initContainerStatuses"), v);
	if (!v->failed)
		scan_statuses(cJSON_GetObjectItemCaseSensitive(st, "containerStatuses"), v);
}

/* Event reasons that waiting will not cure (k8s_events_scan). */
static int
hard_event(const char *r)
{
	return strcmp(r, "FailedCreatePodSandBox") == 0 ||
	    strcmp(r, "ProvisioningFailed") == 0;
}

/* An event's time for ordering: its RFC 3339 text compares as a string. */
static const char *
event_time(const cJSON *ev)
{
	const char *t;

	if ((t = jstr(ev, "lastTimestamp")) != NULL ||
	    (t = jstr(ev, "eventTime")) != NULL ||
	    (t = jstr(ev, "firstTimestamp")) != NULL)
		return t;
	t = jstr(cJSON_GetObjectItemCaseSensitive(ev, "metadata"),
	    "creationTimestamp");
	return t ? t : "";
}

void
k8s_events_scan(const cJSON *items, char *hard, size_t hardlen, char *pulling,
    size_t pulllen)
{
	const char *r, *msg, *t, *th = "", *tpull = "", *tpulled = "";
	const cJSON *ev;

	hard[0] = pulling[0] = '\0';
	cJSON_ArrayForEach(ev, items) {
		if ((r = jstr(ev, "reason")) == NULL)
			continue;
		msg = jstr(ev, "message");
		t = event_time(ev);
		if (hard_event(r) && strcmp(t, th) >= 0) {
			th = t;
			snprintf(hard, hardlen, "%s: %s", r, msg ? msg : "");
		} else if (strcmp(r, "Pulling") == 0 && strcmp(t, tpull) >= 0) {
			tpull = t;
			snprintf(pulling, pulllen, "%s", msg ? msg : "pulling image");
		} else if (strcmp(r, "Pulled") == 0 && strcmp(t, tpulled) >= 0) {
			tpulled = t;
		}
	}
	if (pulling[0] != '\0' && tpulled[0] != '\0' && strcmp(tpulled, tpull) >= 0)
		pulling[0] = '\0';
	/* A pull began after it: the kubelet got past the sandbox (a retry). */
	if (hard[0] != '\0' && (strcmp(tpull, th) > 0 || strcmp(tpulled, th) > 0))
		hard[0] = '\0';
}
