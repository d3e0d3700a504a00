/*
 * log.h: one line per event, "key=value" after the message, to stderr
 * (foreground) or a file. All functions keep errno.
 *
 *   log_warn("accept")      -> "accept: Too many open files"
 *   log_warnx("conn=%s closed reason=%s", id, why)
 */
#ifndef LOG_H
#define LOG_H

#include <stdarg.h>
#include <stddef.h>
#include "attrib.h"

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

extern int log_verbosity;	/* enum log_level; messages above it are dropped */

/* name prefixes every line ("egress-proxy"); path NULL means stderr. */
int	log_init(const char *name, int verbosity, const char *path);
void	log_set_json(int on);	/* 1: each line is a JSON object */

void	log_warn(const char *, ...) PRINTF(1, 2);	/* appends strerror(errno) */
void	log_warnx(const char *, ...) PRINTF(1, 2);
void	log_info(const char *, ...) PRINTF(1, 2);
void	log_debug_(const char *, ...) PRINTF(1, 2);
NORETURN void fatal(const char *, ...) PRINTF(1, 2);	/* appends strerror */
NORETURN void fatalx(const char *, ...) PRINTF(1, 2);

#define log_debug(...) do { \
	if (log_verbosity >= LOG_LVL_DEBUG) log_debug_(__VA_ARGS__); } while (0)

/*
 * Escape untrusted bytes for a log line: printable ASCII kept (except '"'
 * and '\\'), everything else as \xNN. Output always NUL-terminated and
 * truncated to fit dst. Returns dst.
 */
char	*log_escape(char *dst, size_t dstlen, const char *src, size_t srclen);

/*
 * A rate limit for one kind of log line (a peer can cause it at will: an
 * accept error, a malformed request): at most burst lines per interval_ms,
 * the rest counted. Zero-initialise (static struct log_rate r;); safe from
 * any thread. log_rate_ok() returns 1 when a line may be written now and
 * sets *dropped to the lines suppressed since the last one written (say
 * so in the line), 0 when this one is to be dropped (it is counted).
 *
 *   static struct log_rate rl;
 *   long n;
 *   if (log_rate_ok(&rl, 1, 10000, &n))
 *           log_warn("accept (%ld similar suppressed)", n);
 */
struct log_rate {
	_Atomic long long	 win;		/* start of the window, monotonic ms */
	_Atomic int		 n;		/* lines written in the window */
	_Atomic long		 dropped;	/* suppressed since the last written */
};

int	log_rate_ok(struct log_rate *, int burst, long long interval_ms, long *dropped);

#endif
