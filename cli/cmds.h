/*
 * cmds.h: the CLI's commands on sessions, apps, credential policies and
 * homes (cmds.c): one JSON call each, printed for people or, with --json,
 * the API's JSON as it came (docs/cli.md, "Output for scripts"). Each takes
 * its own argv (argv[0] the command's name) and returns the exit status.
 */
#ifndef CLI_CMDS_H
#define CLI_CMDS_H

#include "api.h"

int	cmds_list(struct api *, int, char **);
int	cmds_show(struct api *, int, char **);
int	cmds_create(struct api *, int, char **);
int	cmds_stop(struct api *, int, char **);
int	cmds_start(struct api *, int, char **);
int	cmds_delete(struct api *, int, char **);
int	cmds_apps(struct api *, int, char **);
int	cmds_expose(struct api *, int, char **);
int	cmds_unexpose(struct api *, int, char **);
int	cmds_policy(struct api *, int, char **);
int	cmds_home(struct api *, int, char **);

/* The whole of a file (or stdin for "-"), capped at max bytes; NUL
 * terminated, caller frees; NULL with err, and *toobig set when it was
 * longer than max (toobig may be NULL). */
char	*cmds_slurp(const char *path, size_t max, size_t *lenp, int *toobig,
	    char *err, size_t errlen);

#endif
