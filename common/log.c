/* log.c: line-oriented logging to stderr or a file, thread-safe. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

int log_verbosity = LOG_LVL_INFO;

static const char *log_name = "";
static FILE *log_fp;
static int log_json;
static pthread_mutex_t log_mtx = PTHREAD_MUTEX_INITIALIZER;

int
log_init(const char *name, int verbosity, const char *path)
{
	FILE *fp;

	log_name = name;
	log_verbosity = verbosity;
	if (path == NULL || strcmp(path, "-") == 0)
		return 0;
	if ((fp = fopen(path, "ae")) == NULL)
		return -1;
	setvbuf(fp, NULL, _IOLBF, 0);
	log_fp = fp;
	return 0;
}

void
log_set_json(int on)
{
	log_json = on;
}

static void
json_quote(char *dst, size_t len, const char *s)
{
	size_t o = 0;

	for (; *s != '\0' && o + 7 < len; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			dst[o++] = '\\';
			dst[o++] = (char)c;
		} else if (c < 0x20) {
			o += (size_t)snprintf(dst + o, len - o, "\\u%04x", c);
		} else
			dst[o++] = (char)c;
	}
	dst[o] = '\0';
}

static void
log_emit(const char *lvl, const char *fmt, va_list ap, int with_errno, int err)
{
	char msg[4096], q[8192], ts[32];
	struct timeval tv;
	FILE *fp = log_fp != NULL ? log_fp : stderr;
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (with_errno) {
		n = strlen(msg);
		snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(err));
	}
	gettimeofday(&tv, NULL);
	util_iso_ms(ts, sizeof(ts), (long long)tv.tv_sec * 1000 +
	    tv.tv_usec / 1000);

	pthread_mutex_lock(&log_mtx);
	if (log_json) {
		json_quote(q, sizeof(q), msg);
		fprintf(fp, "{\"ts\":\"%s\",\"prog\":\"%s\",\"level\":\"%s\",\"msg\":\"%s\"}\n",
		    ts, log_name, lvl, q);
	} else
		fprintf(fp, "%s %s %s %s\n", ts, log_name, lvl, msg);
	fflush(fp);
	pthread_mutex_unlock(&log_mtx);
}

#define LOG_BODY(lvl, minlvl, witherr) do {			\
	int saved = errno;					\
	va_list ap;						\
	if (log_verbosity >= (minlvl)) {			\
		va_start(ap, fmt);				\
		log_emit(lvl, fmt, ap, witherr, saved);		\
		va_end(ap);					\
	}							\
	errno = saved;						\
} while (0)

void log_warn(const char *fmt, ...)   { LOG_BODY("warn", LOG_LVL_WARN, 1); }
void log_warnx(const char *fmt, ...)  { LOG_BODY("warn", LOG_LVL_WARN, 0); }
void log_info(const char *fmt, ...)   { LOG_BODY("info", LOG_LVL_INFO, 0); }
void log_debug_(const char *fmt, ...) { LOG_BODY("debug", LOG_LVL_DEBUG, 0); }

void
fatal(const char *fmt, ...)
{
	LOG_BODY("fatal", LOG_LVL_ERROR, 1);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	LOG_BODY("fatal", LOG_LVL_ERROR, 0);
	exit(1);
}

char *
log_escape(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	if (dstlen == 0)
		return dst;
	for (i = 0; i < srclen; i++) {
		unsigned char c = (unsigned char)src[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			if (o + 1 >= dstlen)
				break;
			dst[o++] = (char)c;
		} else {
			if (o + 4 >= dstlen)
				break;
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[c >> 4];
			dst[o++] = hex[c & 15];
		}
	}
	dst[o] = '\0';
	return dst;
}

int
log_rate_ok(struct log_rate *r, int burst, long long interval_ms, long *dropped)
{
	struct timespec ts;
	long long now, w;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + 1;	/* never 0 */
	w = atomic_load(&r->win);
	if ((w == 0 || now - w >= interval_ms) &&
	    atomic_compare_exchange_strong(&r->win, &w, now))
		atomic_store(&r->n, 0);
	if (atomic_fetch_add(&r->n, 1) < burst) {
		*dropped = atomic_exchange(&r->dropped, 0);
		return 1;
	}
	atomic_fetch_add(&r->dropped, 1);
	return 0;
}
