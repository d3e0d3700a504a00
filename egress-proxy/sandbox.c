/*
 * sandbox.c: the sandbox registry (see sandbox.h).
 */
#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sandbox.h"
#include "xmalloc.h"

#define SB_MAX 65536

static pthread_mutex_t reg_mtx = PTHREAD_MUTEX_INITIALIZER;
/* Sandboxes with a trace context: none, the usual case, costs nothing. */
static atomic_int ntraced;
static struct sandbox **reg;
static size_t nreg, capreg;
static struct sbattrs anon_attrs = { .refs = 1, .serial = 1 };
static uint64_t next_serial = 1;	/* under reg_mtx */
static struct sandbox anon = { .id = "anonymous", .refs = 1, .attrs = &anon_attrs };

struct sandbox *
sandbox_anonymous(void)
{
	return sandbox_ref(&anon);
}

int
sandbox_is_anonymous(const struct sandbox *sb)
{
	return sb == &anon;
}

struct sandbox *
sandbox_ref(struct sandbox *sb)
{
	atomic_fetch_add(&sb->refs, 1);
	return sb;
}

struct sbattrs *
sbattrs_ref(struct sbattrs *a)
{
	atomic_fetch_add(&a->refs, 1);
	return a;
}

void
sbattrs_unref(struct sbattrs *a)
{
	size_t i;

	if (a == NULL || atomic_fetch_sub(&a->refs, 1) != 1)
		return;
	if (a->secret != NULL)
		OPENSSL_cleanse(a->secret, strlen(a->secret));
	free(a->secret);
	free(a->org);
	free(a->user);
	free(a->session);
	for (i = 0; i < a->nl; i++) {
		free(a->lk[i]);
		free(a->lv[i]);
	}
	free(a->lk);
	free(a->lv);
	free(a->ips);
	cJSON_Delete(a->policy);
	free(a);
}

void
sandbox_unref(struct sandbox *sb)
{
	if (sb == NULL || atomic_fetch_sub(&sb->refs, 1) != 1)
		return;
	if (sb == &anon)
		return;
	sbattrs_unref(sb->attrs);
	free(sb);
}

struct sbattrs *
sandbox_attrs(struct sandbox *sb)
{
	struct sbattrs *a;

	pthread_mutex_lock(&reg_mtx);
	a = sbattrs_ref(sb->attrs);
	pthread_mutex_unlock(&reg_mtx);
	return a;
}

static size_t
find_locked(const char *id, int *found)
{
	size_t i;

	for (i = 0; i < nreg; i++)
		if (strcmp(reg[i]->id, id) == 0) {
			*found = 1;
			return i;
		}
	*found = 0;
	return nreg;
}

struct sandbox *
sandbox_register(const char *id, struct sbattrs *attrs, int *created)
{
	struct sandbox *sb;
	struct sbattrs *old;
	size_t i;
	int found;

	pthread_mutex_lock(&reg_mtx);
	attrs->serial = ++next_serial;
	i = find_locked(id, &found);
	if (found) {
		sb = reg[i];
		old = sb->attrs;
		sb->attrs = attrs;
		*created = 0;
		sandbox_ref(sb);
		pthread_mutex_unlock(&reg_mtx);
		sbattrs_unref(old);
		return sb;
	}
	if (nreg >= SB_MAX) {
		pthread_mutex_unlock(&reg_mtx);
		sbattrs_unref(attrs);
		return NULL;
	}
	sb = xcalloc(1, sizeof(*sb));
	atomic_init(&sb->refs, 2);	/* registry + caller */
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	sb->attrs = attrs;
	if (nreg == capreg) {
		capreg = capreg ? capreg * 2 : 64;
		reg = xreallocarray(reg, capreg, sizeof(struct sandbox *));
	}
	reg[nreg++] = sb;
	*created = 1;
	pthread_mutex_unlock(&reg_mtx);
	return sb;
}

struct sandbox *
sandbox_deregister(const char *id)
{
	struct sandbox *sb = NULL;
	size_t i;
	int found;

	pthread_mutex_lock(&reg_mtx);
	i = find_locked(id, &found);
	if (found) {
		sb = reg[i];	/* the registry's reference passes to the caller */
		reg[i] = reg[--nreg];
		atomic_store(&sb->dead, 1);
		if (sb->trace[0] != '\0') {
			sb->trace[0] = '\0';
			atomic_fetch_sub(&ntraced, 1);
		}
	}
	pthread_mutex_unlock(&reg_mtx);
	return sb;
}

void
sandbox_set_trace(struct sandbox *sb, const char *tp)
{
	pthread_mutex_lock(&reg_mtx);
	if (sb->trace[0] != '\0')
		atomic_fetch_sub(&ntraced, 1);
	if (tp != NULL && tp[0] != '\0' && strlen(tp) < sizeof(sb->trace)) {
		memcpy(sb->trace, tp, strlen(tp) + 1);
		atomic_fetch_add(&ntraced, 1);
	} else
		sb->trace[0] = '\0';
	pthread_mutex_unlock(&reg_mtx);
}

int
sandbox_trace_of(const char *id, char out[56])
{
	size_t i;
	int found, rc = 0;

	if (atomic_load(&ntraced) == 0)
		return 0;
	pthread_mutex_lock(&reg_mtx);
	i = find_locked(id, &found);
	if (found && reg[i]->trace[0] != '\0') {
		memcpy(out, reg[i]->trace, sizeof(reg[i]->trace));
		rc = 1;
	}
	pthread_mutex_unlock(&reg_mtx);
	return rc;
}

struct sandbox *
sandbox_find(const char *id)
{
	struct sandbox *sb = NULL;
	size_t i;
	int found;

	pthread_mutex_lock(&reg_mtx);
	i = find_locked(id, &found);
	if (found)
		sb = sandbox_ref(reg[i]);
	pthread_mutex_unlock(&reg_mtx);
	return sb;
}

struct sandbox *
sandbox_auth(const char *v, size_t len, struct sbattrs **attrs)
{
	unsigned char dec[512];
	char id[128];
	const char *colon, *secret;
	struct sandbox *sb = NULL;
	size_t i, sl;
	int n;

	*attrs = NULL;
	if (len < 6 || strncasecmp(v, "Basic ", 6) != 0)
		return NULL;
	v += 6;
	len -= 6;
	while (len > 0 && *v == ' ') {
		v++;
		len--;
	}
	if (len == 0 || len > 680 || len % 4 != 0)
		return NULL;
	n = EVP_DecodeBlock(dec, (const unsigned char *)v, (int)len);
	if (n < 0)
		return NULL;
	/* EVP_DecodeBlock counts padding as zero bytes. */
	if (len >= 1 && v[len - 1] == '=')
		n--;
	if (len >= 2 && v[len - 2] == '=')
		n--;
	dec[n] = '\0';
	if ((colon = memchr(dec, ':', (size_t)n)) == NULL)
		return NULL;
	i = (size_t)(colon - (char *)dec);
	if (i == 0 || i >= sizeof(id) || memchr(dec, '\0', (size_t)n) != NULL)
		goto out;
	memcpy(id, dec, i);
	id[i] = '\0';
	secret = colon + 1;
	sl = (size_t)n - i - 1;
	pthread_mutex_lock(&reg_mtx);
	i = find_locked(id, &n);
	if (n) {
		struct sbattrs *a = reg[i]->attrs;
		if (a->secret != NULL && strlen(a->secret) == sl &&
		    CRYPTO_memcmp(a->secret, secret, sl) == 0) {
			sb = sandbox_ref(reg[i]);
			*attrs = sbattrs_ref(a);
		}
	}
	pthread_mutex_unlock(&reg_mtx);
out:
	OPENSSL_cleanse(dec, sizeof(dec));
	return sb;
}

void
sandbox_foreach(void (*fn)(struct sandbox *, void *), void *arg)
{
	size_t i;

	pthread_mutex_lock(&reg_mtx);
	for (i = 0; i < nreg; i++)
		fn(reg[i], arg);
	pthread_mutex_unlock(&reg_mtx);
}

size_t
sandbox_count(void)
{
	size_t n;

	pthread_mutex_lock(&reg_mtx);
	n = nreg;
	pthread_mutex_unlock(&reg_mtx);
	return n;
}
