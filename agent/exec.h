/*
 * exec.h: POST /v1/exec, a command in a fresh process tree (not the
 * persistent shell) whose stdout and stderr stream back apart as NDJSON
 * lines while it runs, then one exit line. Several run at once.
 */
#ifndef AGENT_EXEC_H
#define AGENT_EXEC_H

#include <limits.h>
#include <stddef.h>

#include "buf.h"

struct conn;
struct json;

#define EXEC_MAX_RUNNING	64	/* at once; beyond, 429 busy */

void	exec_http_start(struct conn *, const struct json *body);
/*
 * The options an exec and a job run as one share (jobx.c), checked with
 * the same rules and messages (400/413 replied, -1): "cwd" into cwd
 * (relative: below the workdir; absent: the workdir with def_workdir, else
 * ""), "env" as export lines appended to env_out, "stdin" (base64) into
 * *in and *inlen (the caller frees *in, also after -1).
 */
int	exec_parse_io(struct conn *, const struct json *body, char cwd[PATH_MAX],
	    int def_workdir, struct buf *env_out, unsigned char **in,
	    size_t *inlen);
int	exec_running_count(void);
/* On agent exit: SIGKILL every running exec's tree. */
void	exec_terminate_all(void);

#endif
