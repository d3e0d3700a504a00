/*
 * credwatch.c: named credentials' secrets refreshed without a reload
 * (credwatch.h has the rules). Calls cred.c (reading, the set's copy),
 * addon.c (the swap) and pstate.c (the current addons); none calls it
 * but main.c and metrics.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/crypto.h>

#include "addon.h"
#include "cred.h"
#include "credwatch.h"
#include "log.h"
#include "proxy.h"
#include "util.h"

#define TICK_MS		250	/* the thread wakes this often to see what is due */

atomic_long credwatch_changed, credwatch_failed;

static pthread_t th;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static int running, stopping;
static long long file_every;

static void
wipe_free(char *s)
{
	if (s == NULL)
		return;
	OPENSSL_cleanse(s, strlen(s));
	free(s);
}

/* A failure's reason, hashed (FNV-1a): whether it is the one logged last. */
static unsigned long
why_hash(const char *s)
{
	unsigned long h = 2166136261UL;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 16777619UL;
	return h;
}

/*
 * Whether file secret c's file changed since it was last read (or was
 * never looked at); a file that cannot be stat'ed counts once, until it
 * can again.
 */
static int
file_changed(struct cred *c)
{
	struct cred_stamp n = { 1, 0, 0, 0, 0, 0 };
	struct stat st;

	if (stat(c->spec + 5, &st) == -1) {
		if (c->stamp.state == -1)
			return 0;
		c->stamp.state = -1;
		return 1;
	}
	n.dev = (unsigned long long)st.st_dev;
	n.ino = (unsigned long long)st.st_ino;
	n.size = (unsigned long long)st.st_size;
	n.mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	n.ctime_ns = (long long)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
	if (c->stamp.state == 1 && n.dev == c->stamp.dev && n.ino == c->stamp.ino &&
	    n.size == c->stamp.size && n.mtime_ns == c->stamp.mtime_ns &&
	    n.ctime_ns == c->stamp.ctime_ns)
		return 0;
	c->stamp = n;
	return 1;
}

/*
 * One look at the current credentials: the due ones read again, the set
 * swapped when a value changed.
 */
static void
tick(long long now, int files)
{
	static struct log_rate rl;
	struct addon_src *src = proxy_addons();
	struct credset *cs;
	char *vals[CREDSET_MAX] = { NULL }, err[600], *v;
	size_t i, nchanged = 0;
	long dropped;

	if (src == NULL)
		return;
	cs = addon_src_creds(src);
	for (i = 0; i < cs->n; i++) {
		struct cred *c = cs->c[i];
		int isfile = strncmp(c->spec, "file:", 5) == 0;

		if (isfile && (!files || !file_changed(c)))
			continue;
		if (!isfile) {
			if (strncmp(c->spec, "cmd:", 4) != 0 || c->every_ms == 0)
				continue;
			if (c->next_ms == 0)	/* run by the load */
				c->next_ms = now + c->every_ms;
			if (now < c->next_ms)
				continue;
		}
		v = cred_secret_read(c->spec, err, sizeof(err));
		if (!isfile)
			c->next_ms = util_mono_ms() + c->every_ms;
		if (v == NULL) {
			unsigned long h = why_hash(err);

			atomic_fetch_add(&credwatch_failed, 1);
			/* a new failure or reason is always told, a repeat rate-limited */
			if ((c->fails++ == 0 || h != c->why_hash) ||
			    log_rate_ok(&rl, 1, 60000, &dropped))
				log_warnx("credential=%s secret refresh failed (%u in a row), the last "
				    "good value stays: %s", c->name, c->fails, err);
			c->why_hash = h;
			continue;
		}
		c->fails = 0;
		if (strcmp(v, c->value) == 0) {
			wipe_free(v);
			continue;
		}
		vals[i] = v;
		nchanged++;
		atomic_fetch_add(&credwatch_changed, 1);
		log_info("credential=%s secret=%s refreshed: a new value for new requests",
		    c->name, isfile ? "file" : "cmd");
	}
	if (nchanged > 0)
		addon_src_creds_set(src, cred_set_clone(cs, vals));
	cred_set_unref(cs);
	addon_src_unref(src);
}

static void *
watch_main(void *arg)
{
	long long now, next_file = 0;
	struct timespec ts;
	int files;

	(void)arg;
	pthread_mutex_lock(&mu);
	while (!stopping) {
		pthread_mutex_unlock(&mu);
		now = util_mono_ms();
		files = file_every > 0 && now >= next_file;
		if (files)
			next_file = now + file_every;
		tick(now, files);
		pthread_mutex_lock(&mu);
		if (stopping)
			break;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += TICK_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		while (!stopping && pthread_cond_timedwait(&cv, &mu, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

int
credwatch_start(long long file_ms)
{
	pthread_condattr_t ca;

	file_every = file_ms;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&th, NULL, watch_main, NULL) != 0)
		return -1;
	running = 1;
	return 0;
}

void
credwatch_stop(void)
{
	if (!running)
		return;
	pthread_mutex_lock(&mu);
	stopping = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	running = 0;
}
