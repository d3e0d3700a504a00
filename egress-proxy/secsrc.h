/*
 * secsrc.h: a secret read from an external command (issue 30; secsrc.c).
 * The spec "cmd:/abs/path arg ..." names a program and its arguments,
 * split on spaces: no shell, no quoting, no expansion. The program runs
 * with a minimal environment (PATH, HOME), stdin and stderr on /dev/null,
 * in a process group of its own; its stdout is the secret (one trailing
 * newline cut). It must exit 0 within the timeout (secsrc_set_timeout),
 * or its whole group is killed.
 *
 * Errors name the spec and what went wrong (exit status, signal, timeout,
 * too long, empty, a NUL byte), never a byte of the output.
 * Blocking: the caller's thread waits for the command (at most the
 * timeout); never call it from a worker's event loop.
 */
#ifndef PROXY_SECSRC_H
#define PROXY_SECSRC_H

#include <stddef.h>

#define SECSRC_ARGV_MAX		32	/* words of a cmd: spec, the program's included */
#define SECSRC_SPEC_MAX		4096	/* bytes of a cmd: spec */
#define SECSRC_TIMEOUT_MS	5000	/* the default bound of one run */

/*
 * Splits line (a cmd: spec without "cmd:") into argv (room for max, the
 * last a NULL) using buf (buflen bytes, holding the words). Returns the
 * number of words, or -1 with *why: empty, too long, too many words, or a
 * program path that is not absolute.
 */
int	secsrc_argv(const char *line, char *buf, size_t buflen, char **argv, size_t max,
	    const char **why);
/*
 * Runs the command of spec ("cmd:..."), reading at most max bytes of
 * output. Returns the output, NUL-terminated without its trailing newline
 * (caller wipes and frees), or NULL with err (never holding output).
 */
char	*secsrc_cmd(const char *spec, size_t max, char *err, size_t errlen);
/* Sets the bound of one run (milliseconds, 100-600000; any thread). */
void	secsrc_set_timeout(long long ms);

#endif
