/*
 * cp.h: files in and out of sandboxes (cp.c, docs/cli.md "cp"): orch cp
 * (files and trees, streamed both ways, never held whole; downloads into a
 * temp file beside the target renamed over it, resumed from where a
 * broken one stopped while the remote file is unchanged), orch ls, orch rm.
 */
#ifndef CLI_CP_H
#define CLI_CP_H

#include "api.h"

int	cp_main(struct api *, int, char **);
int	cp_ls(struct api *, int, char **);
int	cp_rm(struct api *, int, char **);

#endif
