/*
 * credreq.c: named credentials on the request path (credreq.h has the
 * rules; the credentials and placeholders are cred.c's).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "b64.h"
#include "cred.h"
#include "credreq.h"
#include "digest.h"
#include "h1.h"
#include "httpreq.h"
#include "sigv4.h"
#include "xmalloc.h"

static unsigned char ph_key[32];

int
credreq_key_load(const char *path, char *err, size_t errlen)
{
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) != -1) {
		n = read(fd, ph_key, sizeof(ph_key));
		close(fd);
		if (n != (ssize_t)sizeof(ph_key)) {
			snprintf(err, errlen, "%s: not a 32-byte placeholder key", path);
			return -1;
		}
		return 0;
	}
	if (errno != ENOENT) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (RAND_bytes(ph_key, sizeof(ph_key)) != 1) {
		snprintf(err, errlen, "no random bytes for the placeholder key");
		return -1;
	}
	/* Made once: placeholders written into sandboxes survive a restart. */
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)) == -1 ||
	    write(fd, ph_key, sizeof(ph_key)) != (ssize_t)sizeof(ph_key) || fsync(fd) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd != -1) {
			close(fd);
			unlink(path);
		}
		return -1;
	}
	close(fd);
	return 0;
}

int
credreq_key_derive(const char *path, char *err, size_t errlen)
{
	static const char label[] = "egress-proxy placeholder key v1";
	unsigned char buf[65536];
	ssize_t n, r;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	for (n = 0; n < (ssize_t)sizeof(buf) && (r = read(fd, buf + n, sizeof(buf) -
	    (size_t)n)) != 0; n += r)
		if (r == -1) {
			if (errno == EINTR) {
				r = 0;
				continue;
			}
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			close(fd);
			OPENSSL_cleanse(buf, sizeof(buf));
			return -1;
		}
	close(fd);
	if (n < 32 || digest_hmac_sha256(buf, (size_t)n, label, sizeof(label) - 1, ph_key) == -1) {
		snprintf(err, errlen, "%s: too short to derive a key from", path);
		OPENSSL_cleanse(buf, sizeof(buf));
		return -1;
	}
	OPENSSL_cleanse(buf, sizeof(buf));
	return 0;
}

const unsigned char *
credreq_key(void)
{
	return ph_key;
}


#define CREDREQ_BODY	1	/* resign() waits for the body's hash: not a status */
/* policy's "credentials" list, or NULL when it has none. */
static const cJSON *
policy_list(const cJSON *policy)
{
	const cJSON *l;

	if (policy == NULL)
		return NULL;
	l = cJSON_GetObjectItemCaseSensitive(policy, "credentials");
	return cJSON_IsArray(l) ? l : NULL;
}

static int
listed(const cJSON *l, const char *name)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, l)
		if (cJSON_IsString(it) && strcmp(it->valuestring, name) == 0)
			return 1;
	return 0;
}

size_t
credreq_allowed(const struct credset *cs, const cJSON *policy, const char *host,
    struct cred **out, size_t max)
{
	const cJSON *l = policy_list(policy);
	size_t i, n = 0;

	for (i = 0; cs != NULL && i < cs->n && n < max; i++) {
		struct cred *c = cs->c[i];

		if (l != NULL ? !listed(l, c->name) : !c->dflt)
			continue;
		if (host != NULL && !cred_host_ok(c, host))
			continue;
		out[n++] = c;
	}
	return n;
}

const char *
credreq_policy_check(const struct credset *cs, const cJSON *policy, char *err, size_t errlen)
{
	const cJSON *l, *it;

	if (policy == NULL || (l = cJSON_GetObjectItemCaseSensitive(policy, "credentials")) == NULL)
		return "";
	if (!cJSON_IsArray(l) || cJSON_GetArraySize(l) > CREDSET_MAX)
		return "policy.credentials must be a list of credential names";
	cJSON_ArrayForEach(it, l) {
		if (!cJSON_IsString(it))
			return "policy.credentials must be a list of credential names";
		if (cs == NULL || cred_set_find(cs, it->valuestring) == NULL) {
			char shown[CRED_NAME_MAX + 1];

			snprintf(shown, sizeof(shown), "%s", *cred_name_check(it->valuestring) ==
			    '\0' ? it->valuestring : "?");
			snprintf(err, errlen, "policy.credentials names %s, which no addon declares",
			    shown);
			return err;
		}
	}
	return "";
}

/*
 * The placeholders sandbox may have swapped by cs (n of them). An oauth2
 * credential's goes for its token, toks[i] (toks NULL: only finding them,
 * nothing is sent; an oauth2 credential without a token is left out).
 */
static size_t
swaps_of(struct cred *const *cs, size_t n, const char *sandbox, char *const *toks,
    struct cred_swap *sw)
{
	size_t i, k = 0;

	for (i = 0; i < n && k < CREDREQ_MAX; i++) {
		if (cs[i]->form == CRED_SIGV4) {
			/* its session token's placeholder (X-Amz-Security-Token), signed again after */
			if (cs[i]->token == NULL)
				continue;
			sw[k].c = cs[i];
			sw[k].part = CRED_PART_TOKEN;
			sw[k].used = 0;
			sw[k].val = NULL;
			cred_placeholder(ph_key, sandbox, cs[i]->name, CRED_PART_TOKEN, sw[k].ph);
			k++;
			continue;
		}
		if ((cs[i]->form == CRED_OAUTH2 || cs[i]->form == CRED_REGISTRY) && toks != NULL &&
		    toks[i] == NULL)
			continue;
		sw[k].c = cs[i];
		sw[k].part = CRED_PART_VALUE;
		sw[k].used = 0;
		sw[k].val = cs[i]->form != CRED_OAUTH2 && cs[i]->form != CRED_REGISTRY ? NULL :
		    toks != NULL ? toks[i] : "held";
		cred_placeholder(ph_key, sandbox, cs[i]->name, CRED_PART_VALUE, sw[k].ph);
		k++;
	}
	return k;
}

/* Whether v (n bytes) holds one of sw's placeholders, as text or inside a Basic pair. */
static int
carries(struct cred_swap *sw, size_t nsw, const char *v, size_t n, int auth)
{
	struct buf scratch;
	int r;

	/* The common case, no placeholder anywhere: no work. Inside a Basic
	 * pair it is base64, so an Authorization field is always decoded. */
	if (!auth && memmem(v, n, "PXC", 3) == NULL)
		return 0;
	buf_init(&scratch, (size_t)CRED_VALUE_MAX * 4 + 64);
	r = cred_swap_text(sw, nsw, v, n, auth, 0, &scratch);
	if (scratch.p != NULL)
		OPENSSL_cleanse(scratch.p, scratch.len);
	buf_free(&scratch);
	return r != 0;	/* -1 (too long) is held too: refused rather than sent as is */
}

static int
is_auth(const struct h1head *hd, size_t i)
{
	return h1head_is(hd, i, "authorization") || h1head_is(hd, i, "proxy-authorization");
}

/* Whether field i is an Authorization signed with AWS SigV4. */
static int
is_sigv4(const struct h1head *hd, size_t i)
{
	return h1head_is(hd, i, "authorization") && hd->h[i].vl > 17 &&
	    strncmp(hd->data.p + hd->h[i].vo, "AWS4-HMAC-SHA256 ", 17) == 0;
}

/* Whether a SigV4 Authorization v names the key id placeholder of a sigv4 credential of cs. */
static int
names_sigv4(struct cred *const *cs, size_t n, const char *sandbox, const char *v, size_t vl)
{
	char ph[CRED_PH_LEN + 1];
	size_t i;

	for (i = 0; i < n; i++) {
		if (cs[i]->form != CRED_SIGV4)
			continue;
		cred_placeholder(ph_key, sandbox, cs[i]->name, CRED_PART_ID, ph);
		if (memmem(v, vl, ph, CRED_PH_LEN) != NULL)
			return 1;
	}
	return 0;
}

int
credreq_hold(struct hreq *r, struct cred *const *cs, size_t n, const char *sandbox)
{
	struct h1head *hd = &r->hd;
	struct cred_swap sw[CREDREQ_MAX];
	size_t nsw, i;

	r->ncheld = 0;
	nsw = swaps_of(cs, n, sandbox, NULL, sw);
	for (i = 0; i < hd->nh; i++) {
		struct h1field *h = &hd->h[i];

		if (h->del || h->set || h1head_is(hd, i, "proxy-authorization"))
			continue;
		if (is_sigv4(hd, i) ? !names_sigv4(cs, n, sandbox, hd->data.p + h->vo, h->vl) :
		    nsw == 0 || !carries(sw, nsw, hd->data.p + h->vo, h->vl, is_auth(hd, i)))
			continue;
		if (r->ncheld == HREQ_CRED_HELD)
			return -1;
		r->cheld[r->ncheld++] = (uint16_t)i;
		h->del = 1;
	}
	return 0;
}

/* Appends "name:how" to r->creds (once per name and how). */
static void
note(struct hreq *r, const char *name, const char *how)
{
	char item[CRED_NAME_MAX + 16];
	size_t l = strlen(r->creds);

	snprintf(item, sizeof(item), "%s:%s", name, how);
	if (strstr(r->creds, item) != NULL)
		return;
	snprintf(r->creds + l, sizeof(r->creds) - l, "%s%s", l > 0 ? "," : "", item);
}

/* Adds name: value (vl bytes) marked set, then wipes the scratch value. */
static int
add_wiped(struct hreq *r, const char *name, struct buf *v)
{
	int rc = h1head_add(&r->hd, name, v->p != NULL ? v->p : "", v->len);

	if (v->p != NULL)
		OPENSSL_cleanse(v->p, v->len);
	v->len = 0;
	return rc;
}

/* Whether the request has a field called name (the client's kept, or one set). */
static int
has_field(const struct hreq *r, const char *name)
{
	return h1head_count(&r->hd, name, NULL) > 0;
}

/* The query of the target: where it starts in data and its length, or -1. */
static int
query_of(const struct hreq *r, uint32_t *qo, uint32_t *ql)
{
	const char *p = r->hd.data.p + r->path_o, *q;

	if ((q = memchr(p, '?', r->path_l)) == NULL)
		return -1;
	*qo = (uint32_t)(q + 1 - r->hd.data.p);
	*ql = r->path_l - (uint32_t)(q + 1 - p);
	return 0;
}

/* Whether query (ql bytes) has parameter name. */
static int
query_has(const char *q, size_t ql, const char *name)
{
	size_t nl = strlen(name), i = 0;

	while (i < ql) {
		if (ql - i > nl && memcmp(q + i, name, nl) == 0 && q[i + nl] == '=')
			return 1;
		if (ql - i == nl && memcmp(q + i, name, nl) == 0)
			return 1;
		while (i < ql && q[i] != '&')
			i++;
		i++;
	}
	return 0;
}

/* The upstream target: the client's with the query swapped and the query forms added. */
static int
apply_query(struct hreq *r, struct cred *const *cs, size_t n, struct cred_swap *sw, size_t nsw)
{
	struct buf t;
	uint32_t qo = 0, ql = 0;
	const char *p = r->hd.data.p + r->path_o;
	int has_q = query_of(r, &qo, &ql) == 0, sws = 0, added = 0, rc = 0;
	size_t i;

	buf_init(&t, r->path_l + (size_t)CRED_VALUE_MAX * 3 * (nsw + 1) + 256);
	if (has_q) {
		rc |= buf_add(&t, p, (size_t)(qo - r->path_o));
		sws = cred_swap_text(sw, nsw, r->hd.data.p + qo, ql, 0, 1, &t);
		if (sws < 0)
			rc = -1;
		else if (sws == 0)
			rc |= buf_add(&t, r->hd.data.p + qo, ql);
	} else
		rc |= buf_add(&t, p, r->path_l);
	for (i = 0; i < n && rc == 0; i++) {
		if (cs[i]->form != CRED_QUERY || (has_q && query_has(r->hd.data.p + qo, ql,
		    cs[i]->field)))
			continue;
		rc |= buf_add(&t, has_q || added ? "&" : "?", 1);
		rc |= buf_addstr(&t, cs[i]->field);
		rc |= buf_add(&t, "=", 1);
		rc |= cred_put(&t, cs[i]->value, strlen(cs[i]->value), 1);
		note(r, cs[i]->name, "query");
		added = 1;
	}
	if (rc == 0 && (sws > 0 || added)) {
		/* After data's end: path_o stays the client's target, for the audit. */
		r->up_o = (uint32_t)r->hd.data.len;
		r->up_l = (uint32_t)t.len;
		if (buf_add(&r->hd.data, t.p, t.len) == -1)
			rc = -1;
	}
	if (t.p != NULL)
		OPENSSL_cleanse(t.p, t.len);
	buf_free(&t);
	return rc == 0 ? 0 : -1;
}

/* The sigv4 credential of cs whose key id placeholder for sandbox a names, or NULL. */
static struct cred *
sigv4_cred(struct cred *const *cs, size_t n, const char *sandbox, const struct sigv4_auth *a)
{
	char ph[CRED_PH_LEN + 1];
	size_t i;

	for (i = 0; i < n; i++) {
		if (cs[i]->form != CRED_SIGV4)
			continue;
		cred_placeholder(ph_key, sandbox, cs[i]->name, CRED_PART_ID, ph);
		if (strcmp(ph, a->akid) == 0)
			return cs[i];
	}
	return NULL;
}

/* Whether c signs for a's region and service: 0, or 403 with why. */
static int
sigv4_scope_ok(const struct cred *c, const struct sigv4_auth *a, char *why, size_t whylen)
{
	size_t k;

	for (k = 0; k < c->nregions && strcmp(c->regions[k], a->region) != 0; k++)
		;
	if (c->nregions > 0 && k == c->nregions) {
		snprintf(why, whylen, "credential %s does not sign for region %s", c->name,
		    a->region);
		return 403;
	}
	for (k = 0; k < c->nservices && strcmp(c->services[k], a->service) != 0; k++)
		;
	if (c->nservices > 0 && k == c->nservices) {
		snprintf(why, whylen, "credential %s does not sign for service %s", c->name,
		    a->service);
		return 403;
	}
	return 0;
}

/* The fields of hd as they go upstream, for signing; Host as hreq_build writes it. */
static struct sigv4_field *
sigv4_fields(const struct h1head *hd, const char *hosthdr, size_t *nfp)
{
	struct sigv4_field *f = xcalloc(hd->nh + 1, sizeof(*f));
	size_t i, nf = 0;

	for (i = 0; i < hd->nh; i++) {
		if (hd->h[i].del || h1head_is(hd, i, "host"))
			continue;
		f[nf].name = hd->data.p + hd->h[i].no;
		f[nf].nl = hd->h[i].nl;
		f[nf].value = hd->data.p + hd->h[i].vo;
		f[nf++].vl = hd->h[i].vl;
	}
	f[nf].name = "host";
	f[nf].nl = 4;
	f[nf].value = hosthdr;
	f[nf++].vl = strlen(hosthdr);
	*nfp = nf;
	return f;
}

/*
 * The signature of the request as it goes upstream (target, tl bytes;
 * hd's fields with Host as hosthdr) under a's SignedHeaders and scope, made
 * with c's real key at amzdate over payload_hash (s3: S3's path rule):
 * into sig, with the signing key into key (the chunk chain starts from it;
 * the caller wipes it) and the scope into scope (200 bytes). 0, or -1 with err.
 */
static int
sign_upstream(const struct h1head *hd, const char *hosthdr, const struct sigv4_auth *a,
    const struct cred *c, const char *target, size_t tl, const char *payload_hash, int s3,
    const char *amzdate, unsigned char key[32], char *scope, char sig[65], char *err,
    size_t errlen)
{
	struct sigv4_field *f;
	struct sigv4_req q;
	struct buf creq;
	size_t nf;
	int rc = 0;

	f = sigv4_fields(hd, hosthdr, &nf);
	memset(&q, 0, sizeof(q));
	q.method = h1head_method(hd);
	q.target = target;
	q.tl = tl;
	q.f = f;
	q.nf = nf;
	q.payload_hash = payload_hash;
	q.s3 = s3;
	buf_init(&creq, SIGV4_CREQ_MAX);
	if (sigv4_canonical(&q, a->signed_headers, &creq, err, errlen) == -1)
		rc = -1;
	else {
		sigv4_key(c->value, a->date, a->region, a->service, key);
		sigv4_scope(a, scope, 200);
		sigv4_sign(key, amzdate, scope, creq.p, creq.len, sig);
	}
	buf_free(&creq);
	free(f);
	return rc;
}

/*
 * Signs r again (AWS SigV4, a presigned URL: the query form) when its
 * X-Amz-Credential names this sandbox's key id placeholder of one of cs:
 * the target as it goes upstream with the real key id, X-Amz-Signature
 * made with the real key (UNSIGNED-PAYLOAD, S3's rule for presigned URLs),
 * the client's SignedHeaders, scope, X-Amz-Date and X-Amz-Expires kept; a
 * session's token added to the query when the client left it out.
 * 1: not such a URL (a presigned URL of another key goes as it was sent);
 * 0 signed; else a status with why.
 */
static int
presign(struct hreq *r, struct cred *const *cs, size_t n, const char *sandbox,
    const char *hosthdr, char *why, size_t whylen)
{
	struct h1head *hd = &r->hd;
	struct sigv4_auth a;
	struct cred *c;
	struct buf t;
	unsigned char key[32];
	char amzdate[17], err[200], scope[200], sig[65];
	const char *target = hd->data.p + (r->up_l > 0 ? r->up_o : r->path_o), *qs;
	size_t tl = r->up_l > 0 ? r->up_l : r->path_l;
	int rc, st = 0;

	if ((qs = memchr(target, '?', tl)) == NULL)
		return 1;
	rc = sigv4_presign_parse(qs + 1, tl - (size_t)(qs + 1 - target), &a, amzdate, err,
	    sizeof(err));
	if (rc == -2) {
		snprintf(why, whylen, "%s", err);
		return 501;
	}
	if (rc != 0 || (c = sigv4_cred(cs, n, sandbox, &a)) == NULL)
		return 1;
	if ((st = sigv4_scope_ok(c, &a, why, whylen)) != 0)
		return st;
	if (strcmp(a.service, "s3") != 0) {
		snprintf(why, whylen, "a presigned URL for a service other than S3 (%s) cannot be "
		    "signed again yet", a.service);
		return 501;
	}
	buf_init(&t, tl + SIGV4_AKID_MAX * 3 + CRED_VALUE_MAX * 3 + 128);
	rc = sigv4_presign_target(target, tl, c->user, &t);
	if (rc == 0 && c->token != NULL && !query_has(qs + 1, tl - (size_t)(qs + 1 - target),
	    "X-Amz-Security-Token")) {
		/* A session's key signs only with its token: added, and signed. */
		rc |= buf_addstr(&t, "&X-Amz-Security-Token=");
		rc |= cred_put(&t, c->token, strlen(c->token), 1);
	}
	if (rc != 0) {
		buf_free(&t);
		snprintf(why, whylen, "no room to sign the presigned URL again");
		return 414;
	}
	if (sign_upstream(hd, hosthdr, &a, c, t.p, t.len, "UNSIGNED-PAYLOAD", 1, amzdate, key,
	    scope, sig, err, sizeof(err)) == -1) {
		snprintf(why, whylen, "the presigned URL cannot be signed again: %s", err);
		st = 400;
	} else {
		OPENSSL_cleanse(key, sizeof(key));
		if (buf_addstr(&t, "&X-Amz-Signature=") != 0 || buf_addstr(&t, sig) != 0) {
			snprintf(why, whylen, "no room to sign the presigned URL again");
			st = 414;
		} else {
			/* After data's end, as apply_query's: path_o stays the client's. */
			r->up_o = (uint32_t)hd->data.len;
			r->up_l = (uint32_t)t.len;
			if (buf_add(&hd->data, t.p, t.len) == -1) {
				snprintf(why, whylen, "no room to sign the presigned URL again");
				st = 414;
			} else
				note(r, c->name, "sigv4");
		}
	}
	OPENSSL_cleanse(t.p, t.len);
	buf_free(&t);
	return st;
}

/*
 * Signs r again (AWS SigV4, header form) for the sigv4 credential whose
 * key id placeholder the client's held Authorization h names: the request
 * as it goes upstream (its target, its fields, Host as the proxy writes
 * it) with the real key, the client's SignedHeaders, scope and date kept.
 * Without x-amz-content-sha256 the payload's hash is body_hash; when that
 * is NULL too, CREDREQ_BODY (nothing changed: the body is to be hashed).
 * 0, or a status with why.
 */
static int
resign(struct hreq *r, struct cred *const *cs, size_t n, const char *sandbox,
    const struct h1field *h, const char *hosthdr, const char *body_hash, char *why,
    size_t whylen)
{
	struct h1head *hd = &r->hd;
	struct sigv4_auth a;
	struct cred *c = NULL;
	unsigned char key[32], ckey[32];
	char ph[CRED_PH_LEN + 1], err[200], scope[200], sig[65], out[SIGV4_SH_MAX + 512];
	int chunks;
	const char *amz, *hash;
	char amzb[17], hashb[128];
	size_t k;
	int st = 0;

	if (sigv4_auth_parse(hd->data.p + h->vo, h->vl, &a, err, sizeof(err)) == -1) {
		snprintf(why, whylen, "the request's AWS signature cannot be read: %s", err);
		return 400;
	}
	if ((c = sigv4_cred(cs, n, sandbox, &a)) == NULL) {
		snprintf(why, whylen, "the request is signed with an access key id that is not "
		    "this sandbox's placeholder for this host");
		return 403;
	}
	if ((st = sigv4_scope_ok(c, &a, why, whylen)) != 0)
		return st;
	/*
	 * Copies: a field added below (the session token) may move the head's
	 * data, and with it what h1head_get pointed into.
	 */
	if ((amz = h1head_get(hd, "x-amz-date", &k)) == NULL || k != 16 ||
	    strncmp(amz, a.date, 8) != 0) {
		snprintf(why, whylen, "an AWS request needs x-amz-date of its scope's day");
		return 400;
	}
	memcpy(amzb, amz, 16);
	amzb[16] = '\0';
	amz = amzb;
	if ((hash = h1head_get(hd, "x-amz-content-sha256", &k)) != NULL) {
		if (k >= sizeof(hashb)) {
			snprintf(why, whylen, "a malformed x-amz-content-sha256");
			return 400;
		}
		memcpy(hashb, hash, k);
		hashb[k] = '\0';
		hash = hashb;
	} else {
		/*
		 * A service other than S3 signs its body's hash without
		 * sending it: the body is read first (the proxy's hash gate),
		 * then this runs again with its hash (credreq_resign_body).
		 */
		if (body_hash == NULL)
			return CREDREQ_BODY;
		hash = body_hash;
		/*
		 * The proxy answered the client's Expect: 100-continue itself
		 * while it read the body, and sends none: a client that signed
		 * it (curl --aws-sigv4 signs every header) has it left out.
		 */
		if (h1head_count(hd, "expect", NULL) == 0)
			(void)sigv4_signed_del(a.signed_headers, "expect");
	}
	if (strncmp(hash, "STREAMING-AWS4-ECDSA", 20) == 0) {
		snprintf(why, whylen, "an upload signed with SigV4a (%s) cannot be signed again",
		    hash);
		return 501;
	}
	chunks = strcmp(hash, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") == 0;
	if (chunks && (h1head_get(hd, "content-length", NULL) == NULL || hd->chunked)) {
		snprintf(why, whylen, "an upload with signed chunks needs a Content-Length");
		return 400;
	}
	if (c->token != NULL && h1head_count(hd, "x-amz-security-token", NULL) == 0) {
		/* A session's key signs only with its token: added, and signed. */
		if (sigv4_signed_add(a.signed_headers, sizeof(a.signed_headers),
		    "x-amz-security-token") == -1) {
			snprintf(why, whylen, "no room to sign the session token");
			return 431;
		}
		if (h1head_add(hd, "X-Amz-Security-Token", c->token, strlen(c->token)) == -1) {
			snprintf(why, whylen, "no room for the session token");
			return 431;
		}
	}
	if (sign_upstream(hd, hosthdr, &a, c, hd->data.p + (r->up_l > 0 ? r->up_o : r->path_o),
	    r->up_l > 0 ? r->up_l : r->path_l, hash, strcmp(a.service, "s3") == 0, amz, key,
	    scope, sig, err, sizeof(err)) == -1) {
		snprintf(why, whylen, "the request cannot be signed again: %s", err);
		st = 400;
	} else {
		if (chunks) {
			/*
			 * Each chunk is signed in a chain from the seed (the
			 * Authorization's signature): the client's chain under
			 * its placeholder secret is checked, the real one
			 * written in its place (sigv4.h, proxy.c body_sink).
			 */
			cred_placeholder(ph_key, sandbox, c->name, CRED_PART_VALUE, ph);
			sigv4_key(ph, a.date, a.region, a.service, ckey);
			hreq_chunks_free(r);
			r->s4c = xmalloc(sizeof(*r->s4c));
			sigv4_chunks_init(r->s4c, ckey, a.sig, key, sig, amz, scope);
			OPENSSL_cleanse(ckey, sizeof(ckey));
		}
		OPENSSL_cleanse(key, sizeof(key));
		if (sigv4_auth_write(&a, c->user, sig, out, sizeof(out)) == -1 ||
		    h1head_add(hd, "Authorization", out, strlen(out)) == -1) {
			snprintf(why, whylen, "no room for the AWS signature");
			st = 431;
		} else
			note(r, c->name, "sigv4");
		OPENSSL_cleanse(out, sizeof(out));
	}
	return st;
}

int
credreq_resign_body(struct hreq *r, struct cred *const *cs, size_t n, const char *sandbox,
    const char *hosthdr, const char *body_hash, char *why, size_t whylen)
{
	int st;

	if (r->s4_body == 0 || r->s4_body > r->ncheld) {
		snprintf(why, whylen, "no AWS signature waits for the body");
		return 500;
	}
	st = resign(r, cs, n, sandbox, &r->hd.h[r->cheld[r->s4_body - 1]], hosthdr, body_hash,
	    why, whylen);
	r->s4_body = 0;
	return st == CREDREQ_BODY ? 500 : st;
}

int
credreq_apply(struct hreq *r, struct cred *const *cs, size_t n, char *const *toks,
    const char *sandbox, const char *hosthdr, char *why, size_t whylen)
{
	struct h1head *hd = &r->hd;
	struct cred_swap sw[CREDREQ_MAX];
	struct buf v;
	char name[CRED_FIELD_MAX * 4 + 1];
	size_t nsw, i, k;
	int rc = 0, s, st = 0, aws = -1, reg = 0;

	for (i = 0; i < n; i++) {
		if ((cs[i]->form == CRED_OAUTH2 || cs[i]->form == CRED_REGISTRY) &&
		    (toks == NULL || toks[i] == NULL)) {
			snprintf(why, whylen, "no access token for credential %s", cs[i]->name);
			return 502;	/* never sent without it (credtok_get fills them) */
		}
		reg |= cs[i]->form == CRED_REGISTRY;
	}
	nsw = swaps_of(cs, n, sandbox, toks, sw);
	buf_init(&v, (size_t)CRED_VALUE_MAX * 4 + 256);
	/* The held fields, swapped; a field the addon set wins over the client's. */
	for (i = 0; i < r->ncheld && rc == 0; i++) {
		struct h1field *h = &hd->h[r->cheld[i]];

		if (is_sigv4(hd, r->cheld[i])) {
			aws = r->cheld[i];	/* signed again once the rest is final */
			continue;
		}
		if (h->nl >= sizeof(name))
			continue;
		memcpy(name, hd->data.p + h->no, h->nl);
		name[h->nl] = '\0';
		/* a registry's token replaces the client's Authorization, whatever it held */
		if (has_field(r, name) || (reg && is_auth(hd, r->cheld[i])))
			continue;
		s = cred_swap_text(sw, nsw, hd->data.p + h->vo, h->vl, is_auth(hd, r->cheld[i]), 0,
		    &v);
		if (s == 0)
			continue;	/* held for a credential not applied here (a registry
					   credential's outside /v2/): dropped */
		if (s < 0 || add_wiped(r, name, &v) == -1)
			rc = -1;
	}
	for (k = 0; k < nsw; k++)
		if (sw[k].used > 0)
			note(r, sw[k].c->name, "swap");
	if (rc == 0 && r->path_l > 0)
		rc = apply_query(r, cs, n, sw, nsw);
	if (rc == 0 && aws >= 0 && !has_field(r, "authorization")) {
		st = resign(r, cs, n, sandbox, &hd->h[aws], hosthdr, NULL, why, whylen);
		if (st == CREDREQ_BODY) {
			for (k = 0; k < r->ncheld && r->cheld[k] != aws; k++)
				;
			r->s4_body = (uint8_t)(k + 1);
			st = 0;
		}
	}
	else if (rc == 0 && aws < 0 && r->path_l > 0 && !has_field(r, "authorization") &&
	    (s = presign(r, cs, n, sandbox, hosthdr, why, whylen)) != 1)
		st = s;
	/* The forms the request still lacks. */
	for (i = 0; i < n && rc == 0 && st == 0; i++) {
		const struct cred *c = cs[i];

		switch (c->form) {
		case CRED_BEARER:
		case CRED_OAUTH2:
		case CRED_REGISTRY:
			if (has_field(r, "authorization"))
				break;
			rc |= buf_addstr(&v, "Bearer ");
			rc |= buf_addstr(&v, c->form == CRED_BEARER ? c->value : toks[i]);
			if (rc == 0 && add_wiped(r, "Authorization", &v) == -1)
				rc = -1;
			note(r, c->name, cred_form_name(c->form));
			break;
		case CRED_BASIC: {
			size_t ul = strlen(c->user), vl = strlen(c->value), el;
			char *pair, *enc;

			if (has_field(r, "authorization"))
				break;
			pair = xmalloc(ul + vl + 2);
			memcpy(pair, c->user, ul);
			pair[ul] = ':';
			memcpy(pair + ul + 1, c->value, vl + 1);
			enc = xmalloc(B64_ENC_LEN(ul + vl + 1) + 1);
			el = b64_encode(pair, ul + vl + 1, enc);
			rc |= buf_addstr(&v, "Basic ");
			rc |= buf_add(&v, enc, el);
			OPENSSL_cleanse(pair, ul + vl + 1);
			OPENSSL_cleanse(enc, el);
			free(pair);
			free(enc);
			if (rc == 0 && add_wiped(r, "Authorization", &v) == -1)
				rc = -1;
			note(r, c->name, "basic");
			break;
		}
		case CRED_HEADER:
			if (has_field(r, c->field))
				break;
			rc |= buf_addstr(&v, c->value);
			if (rc == 0 && add_wiped(r, c->field, &v) == -1)
				rc = -1;
			note(r, c->name, "header");
			break;
		case CRED_QUERY:
		case CRED_SIGV4:	/* only ever signed again, never added */
			break;
		}
	}
	if (v.p != NULL)
		OPENSSL_cleanse(v.p, v.cap > 0 ? v.cap : v.len);
	buf_free(&v);
	OPENSSL_cleanse(sw, sizeof(sw));
	if (st == 0 && rc != 0) {
		snprintf(why, whylen, "the request head has no room for its credentials");
		st = 431;
	}
	return st;
}
