/*
 * exec.h: orch exec (exec.c): POST /v1/sessions/{id}/exec, its NDJSON
 * stream decoded as it comes, stdout to stdout and stderr to stderr.
 * The exit status is the command's (124 on timeout, 128+S on signal S),
 * or one of these when the CLI cannot say it (docs/cli.md):
 */
#ifndef CLI_EXEC_H
#define CLI_EXEC_H

#include "api.h"

#define EXEC_EXIT_LOST	123	/* the stream broke off mid-command (the
				 * agent lost, or the orchestrator gone):
				 * the command's status is unknown */
#define EXEC_EXIT_FAIL	125	/* the command was not run: the API refused,
				 * a transfer or protocol error, bad usage */

int	exec_main(struct api *, int, char **);

#endif
