/*
 * cred.c: named credentials and their placeholders (cred.h has the rules).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "attrib.h"
#include "b64.h"
#include "cred.h"
#include "digest.h"
#include "log.h"
#include "pglob.h"
#include "secsrc.h"
#include "xmalloc.h"

#define PH_PREFIX	"PXC"

const char *
cred_name_check(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > CRED_NAME_MAX)
		return "a credential name is 1-63 characters";
	if (strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != n)
		return "a credential name is lower-case letters, digits, '_' and '-'";
	return "";
}

const char *
cred_value_check(const char *v)
{
	size_t n = strlen(v), i;

	if (n == 0)
		return "an empty secret";
	if (n > CRED_VALUE_MAX)
		return "a secret over 8192 bytes";
	for (i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return "a secret with a control byte (a header cannot carry it)";
	return "";
}

int
cred_host_ok(const struct cred *c, const char *host)
{
	size_t i, hl = strlen(host);

	for (i = 0; i < c->nhosts; i++)
		if (pglob_match(c->hosts[i], strlen(c->hosts[i]), host, hl, 1))
			return 1;
	return 0;
}

void
cred_placeholder(const unsigned char key[32], const char *sandbox, const char *name,
    enum cred_part part, char out[CRED_PH_LEN + 1])
{
	static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
	unsigned char md[DIGEST_SHA256_LEN];
	char msg[512];
	int n, bad;
	size_t i, bit;

	n = snprintf(msg, sizeof(msg), "placeholder%c%s%c%s%c%d", 0, sandbox, 0, name, 0,
	    (int)part);
	/* ids and names are bounded far below; HMAC of memory does not fail */
	ASSERT(n > 0 && (size_t)n < sizeof(msg));
	bad = digest_hmac_sha256(key, 32, msg, (size_t)n, md);
	ASSERT(bad == 0);
	memcpy(out, PH_PREFIX, 3);
	for (i = 3, bit = 0; i < CRED_PH_LEN; i++, bit += 5) {
		unsigned v = (unsigned)(md[bit / 8] << 8 | md[bit / 8 + 1]);
		out[i] = b32[(v >> (11 - bit % 8)) & 31];
	}
	out[CRED_PH_LEN] = '\0';
	OPENSSL_cleanse(md, sizeof(md));
}

size_t
cred_swaps(struct cred *const *cs, size_t n, const unsigned char key[32], const char *sandbox,
    const char *host, struct cred_swap *sw, size_t max)
{
	size_t i, k = 0;

	for (i = 0; i < n && k < max; i++) {
		if (cs[i]->form == CRED_SIGV4 || cs[i]->form == CRED_OAUTH2 ||
		    cs[i]->form == CRED_REGISTRY || !cred_host_ok(cs[i], host))
			continue;
		sw[k].c = cs[i];
		sw[k].part = CRED_PART_VALUE;
		sw[k].used = 0;
		sw[k].val = NULL;
		cred_placeholder(key, sandbox, cs[i]->name, CRED_PART_VALUE, sw[k].ph);
		k++;
	}
	return k;
}

/* The real value for sw's part. */
static const char *
real(const struct cred_swap *sw)
{
	if (sw->val != NULL)
		return sw->val;
	switch (sw->part) {
	case CRED_PART_ID:
		return sw->c->user;
	case CRED_PART_TOKEN:
		return sw->c->token;
	default:
		return sw->c->value;
	}
}

int
cred_put(struct buf *out, const char *s, size_t n, int query)
{
	static const char hx[] = "0123456789ABCDEF";
	size_t i;
	int r = 0;

	if (!query)
		return buf_add(out, s, n);
	for (i = 0; i < n && r == 0; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~')
			r = buf_add(out, s + i, 1);
		else
			r = buf_add(out, (char[]){ '%', hx[c >> 4], hx[c & 15] }, 3);
	}
	return r;
}

/* The plain swap: every placeholder of sw in v replaced. */
static int
swap_plain(struct cred_swap *sw, size_t nsw, const char *v, size_t n, int query,
    struct buf *out)
{
	size_t i = 0, from = 0, k;
	int swaps = 0;

	while (i + CRED_PH_LEN <= n) {
		const char *p = memchr(v + i, 'P', n - i - CRED_PH_LEN + 1);
		if (p == NULL)
			break;
		i = (size_t)(p - v);
		for (k = 0; k < nsw; k++)
			if (memcmp(v + i, sw[k].ph, CRED_PH_LEN) == 0 && real(&sw[k]) != NULL)
				break;
		if (k == nsw) {
			i++;
			continue;
		}
		if (buf_add(out, v + from, i - from) != 0 ||
		    cred_put(out, real(&sw[k]), strlen(real(&sw[k])), query) != 0)
			return -1;
		sw[k].used++;
		swaps++;
		i += CRED_PH_LEN;
		from = i;
	}
	if (swaps > 0 && buf_add(out, v + from, n - from) != 0)
		return -1;
	return swaps;
}

int
cred_swap_text(struct cred_swap *sw, size_t nsw, const char *v, size_t n, int basic,
    int query, struct buf *out)
{
	unsigned char *dec = NULL;
	char *enc = NULL;
	struct buf in;
	const char *why;
	size_t at, s, el = 0;
	long dl;
	int swaps;

	if (nsw == 0)
		return 0;
	if (!basic || n < 6 || strncasecmp(v, "Basic ", 6) != 0)
		return swap_plain(sw, nsw, v, n, query, out);
	/* A Basic pair: the placeholder is inside the base64. */
	for (s = 6; s < n && v[s] == ' '; s++)
		;
	dec = malloc((n - s) / 4 * 3 + 3);
	if (dec == NULL)
		return -1;
	dl = b64_decode(v + s, n - s, dec, 1, &why, &at);
	if (dl <= 0) {
		free(dec);
		return swap_plain(sw, nsw, v, n, query, out);	/* not base64: as text */
	}
	buf_init(&in, (size_t)CRED_VALUE_MAX * 4);
	swaps = swap_plain(sw, nsw, (const char *)dec, (size_t)dl, 0, &in);
	if (swaps > 0) {
		enc = malloc(B64_ENC_LEN(in.len) + 1);
		if (enc != NULL)
			el = b64_encode(in.p, in.len, enc);
		if (enc == NULL || buf_add(out, "Basic ", 6) != 0 || buf_add(out, enc, el) != 0)
			swaps = -1;
	}
	if (in.p != NULL)
		OPENSSL_cleanse(in.p, in.len);
	if (swaps == 0)		/* base64 by chance ("PXC..." is): read as text too */
		swaps = swap_plain(sw, nsw, v, n, query, out);
	buf_free(&in);
	OPENSSL_cleanse(dec, (size_t)dl);
	free(dec);
	if (enc != NULL) {
		OPENSSL_cleanse(enc, el);
		free(enc);
	}
	return swaps;
}

/* ---- the declared set ---- */

struct credset *
cred_set_new(void)
{
	struct credset *cs = xcalloc(1, sizeof(*cs));

	atomic_init(&cs->refs, 1);
	return cs;
}

struct credset *
cred_set_ref(struct credset *cs)
{
	atomic_fetch_add(&cs->refs, 1);
	return cs;
}

void
cred_set_unref(struct credset *cs)
{
	size_t i;

	if (cs == NULL || atomic_fetch_sub(&cs->refs, 1) != 1)
		return;
	for (i = 0; i < cs->n; i++)
		cred_free(cs->c[i]);
	free(cs);
}

static void
wipe_free(char *s)
{
	if (s == NULL)
		return;
	OPENSSL_cleanse(s, strlen(s));
	free(s);
}

void
cred_free(struct cred *c)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < c->nhosts; i++)
		free(c->hosts[i]);
	wipe_free(c->value);
	wipe_free(c->user);
	wipe_free(c->token);
	for (i = 0; i < c->nenv; i++)
		free(c->env[i]);
	for (i = 0; i < c->nregions; i++)
		free(c->regions[i]);
	for (i = 0; i < c->nservices; i++)
		free(c->services[i]);
	free(c->field);
	free(c->client_ref);
	free(c->client_scope);
	free(c->spec);
	free(c->addon);
	free(c->token_url);
	free(c->service);
	wipe_free(c->client_id);
	free(c->scope);
	wipe_free(c->refresh);
	free(c->refresh_path);
	free(c);
}

int
cred_set_add(struct credset *cs, struct cred *c, char *err, size_t errlen)
{
	if (cred_set_find(cs, c->name) != NULL) {
		snprintf(err, errlen, "credential %s is declared twice", c->name);
		cred_free(c);
		return -1;
	}
	if (cs->n == CREDSET_MAX) {
		snprintf(err, errlen, "more than %d credentials", CREDSET_MAX);
		cred_free(c);
		return -1;
	}
	cs->c[cs->n++] = c;
	return 0;
}

struct cred *
cred_set_find(const struct credset *cs, const char *name)
{
	size_t i;

	for (i = 0; i < cs->n; i++)
		if (strcmp(cs->c[i]->name, name) == 0)
			return cs->c[i];
	return NULL;
}

static char *
dup0(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

/* A deep copy of c (with its refresh state), value its secret (taken). */
static struct cred *
cred_dup(const struct cred *c, char *value)
{
	struct cred *d = xmalloc(sizeof(*d));
	size_t i;

	*d = *c;
	for (i = 0; i < c->nhosts; i++)
		d->hosts[i] = xstrdup(c->hosts[i]);
	for (i = 0; i < c->nenv; i++)
		d->env[i] = xstrdup(c->env[i]);
	for (i = 0; i < c->nregions; i++)
		d->regions[i] = xstrdup(c->regions[i]);
	for (i = 0; i < c->nservices; i++)
		d->services[i] = xstrdup(c->services[i]);
	d->value = value;
	d->user = dup0(c->user);
	d->token = dup0(c->token);
	d->field = dup0(c->field);
	d->spec = dup0(c->spec);
	d->addon = dup0(c->addon);
	d->client_ref = dup0(c->client_ref);
	d->client_scope = dup0(c->client_scope);
	d->token_url = dup0(c->token_url);
	d->service = dup0(c->service);
	d->client_id = dup0(c->client_id);
	d->scope = dup0(c->scope);
	d->refresh = dup0(c->refresh);
	d->refresh_path = dup0(c->refresh_path);
	return d;
}

struct credset *
cred_set_clone(const struct credset *cs, char **values)
{
	struct credset *n = cred_set_new();
	size_t i;

	for (i = 0; i < cs->n; i++) {
		n->c[i] = cred_dup(cs->c[i], values[i] != NULL ? values[i] :
		    xstrdup(cs->c[i]->value));
		values[i] = NULL;
	}
	n->n = cs->n;
	return n;
}

static const char *const form_names[] = {
	[CRED_BEARER] = "bearer", [CRED_HEADER] = "header", [CRED_BASIC] = "basic",
	[CRED_QUERY] = "query", [CRED_SIGV4] = "sigv4", [CRED_OAUTH2] = "oauth2",
	[CRED_REGISTRY] = "registry",
};

int
cred_form_parse(const char *s, enum cred_form *out)
{
	size_t i;

	for (i = 0; i < sizeof(form_names) / sizeof(form_names[0]); i++)
		if (strcmp(s, form_names[i]) == 0) {
			*out = (enum cred_form)i;
			return 0;
		}
	return -1;
}

const char *
cred_form_name(enum cred_form f)
{
	return (size_t)f < sizeof(form_names) / sizeof(form_names[0]) ? form_names[f] : "?";
}

const char *
cred_client_name(enum cred_client k)
{
	static const char *const names[] = { "", "npm", "pip", "maven", "docker", "aws",
	    "cargo" };

	return (size_t)k < sizeof(names) / sizeof(names[0]) ? names[k] : "";
}

char *
cred_secret_read(const char *spec, char *err, size_t errlen)
{
	char *v = NULL;
	const char *why;
	ssize_t r;
	size_t n = 0;
	int fd;

	if (strncmp(spec, "env:", 4) == 0) {
		const char *e = getenv(spec + 4);

		if (e == NULL) {
			snprintf(err, errlen, "%s: the variable is not set", spec);
			return NULL;
		}
		v = xstrdup(e);
	} else if (strncmp(spec, "file:", 5) == 0) {
		struct stat st;

		/* O_NONBLOCK: a FIFO put there must not hang the open */
		if ((fd = open(spec + 5, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) == -1) {
			snprintf(err, errlen, "%s: %s", spec, strerror(errno));
			return NULL;
		}
		if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "%s: not a regular file", spec);
			close(fd);
			return NULL;
		}
		v = xmalloc(CRED_VALUE_MAX + 2);
		while (n < CRED_VALUE_MAX + 1 && (r = read(fd, v + n, CRED_VALUE_MAX + 1 - n)) != 0) {
			if (r == -1 && errno == EINTR)
				continue;
			if (r == -1) {
				snprintf(err, errlen, "%s: %s", spec, strerror(errno));
				close(fd);
				OPENSSL_cleanse(v, n);
				free(v);
				return NULL;
			}
			n += (size_t)r;
		}
		close(fd);
		v[n] = '\0';
		/* One trailing newline (an editor's, echo's) is not part of it. */
		if (n > 0 && v[n - 1] == '\n')
			v[--n] = '\0';
		if (n > 0 && v[n - 1] == '\r')
			v[--n] = '\0';
		if (strlen(v) != n) {
			snprintf(err, errlen, "%s: a secret with a NUL byte", spec);
			OPENSSL_cleanse(v, n);
			free(v);
			return NULL;
		}
	} else if (strncmp(spec, "cmd:", 4) == 0) {
		if ((v = secsrc_cmd(spec, CRED_VALUE_MAX, err, errlen)) == NULL)
			return NULL;
	} else {
		snprintf(err, errlen, "a secret is env:NAME, file:PATH or cmd:/PATH ARG...");
		return NULL;
	}
	if (*(why = cred_value_check(v)) != '\0') {
		snprintf(err, errlen, "%s: %s", spec, why);
		wipe_free(v);
		return NULL;
	}
	return v;
}

int
cred_is_placeholder(const char *s, size_t n)
{
	size_t i;

	if (n != CRED_PH_LEN || memcmp(s, PH_PREFIX, 3) != 0)
		return 0;
	for (i = 3; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '2' && s[i] <= '7')))
			return 0;
	return 1;
}
