/*
 * daemon.h: the start-up the proxy, the gateway and the orchestrator share
 * (daemon.c): the command line (-d -n -v -f FILE, --help with the key
 * table, --print-docs), libevent's log hooked to ours, and secret files.
 * Rules: the usage text and the key table are the daemon's; the options
 * and what they mean are decided here once. Exit status 0 done, 1 a
 * configuration or start-up error, 2 a usage error.
 */
#ifndef COMMON_DAEMON_H
#define COMMON_DAEMON_H

#include <stddef.h>
#include <stdio.h>

struct daemon_desc {
	const char	*usage;		/* the whole usage text, '\n'-ended */
	void		(*print_help)(FILE *);	/* the key table (--help) */
	void		(*print_docs)(FILE *);	/* the same in Markdown (--print-docs) */
	/*
	 * --admin ARG [ARGS...] (NULL: no such option): runs and returns
	 * the exit status.
	 */
	int		(*admin)(const char *arg, int argc, char **argv);
};

/* What the command line asks for, once it is not a one-shot (--help, ...). */
struct daemon_args {
	const char	*file;		/* -f */
	int		 check;		/* -n */
	int		 debug;		/* -d */
	int		 verbose;	/* -v, counted */
	int		 verbosity;	/* enum log_level: debug or info, plus verbose */
};

/*
 * Parses argv into a. 0: go on; -1: done, exit with *status (--help,
 * --print-docs, --admin, or a usage error: usage on stderr, 2).
 */
/*
 * The OOM killer's preference against this daemon (oom_score_adj), when
 * it runs as root: should the host run out of memory, a sandbox's process
 * (+500, runtime/local/spawn.c) goes long before a daemon. Best effort.
 */
#define DAEMON_OOM_SCORE_ADJ	"-900"
void	daemon_oom_protect(void);

int	daemon_parse_args(const struct daemon_desc *, int argc, char **argv,
	    struct daemon_args *a, int *status);
/* libevent's warnings and errors into our log, at most 10 per 10 s. */
void	daemon_libevent_log(void);
/*
 * Reads the secret in path: its first line without trailing white space,
 * at most max bytes in the file. Returns it (malloc'd; the caller wipes
 * and frees it) or NULL with err set (unreadable, too large, empty). The
 * read buffer is wiped.
 */
char	*daemon_read_secret(const char *path, size_t max, char *err, size_t errlen);

#endif
