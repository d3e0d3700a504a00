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

#endif
