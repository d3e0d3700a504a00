/*
 * shellres.h: the kept results of /v1/shell commands started with a
 * result id (shellres.c).
 */
#ifndef AGENT_SHELLRES_H
#define AGENT_SHELLRES_H

#include <stddef.h>
#include "buf.h"

#define SHELLRES_ID_MAX	48

int	shellres_init(void);
/* 1 if s[0..n) is a usable result id: 1-48 of [A-Za-z0-9_-]. */
int	shellres_id_ok(const char *s, size_t n);
/* Keeps body (the command's result) under id; logged, never fails. */
void	shellres_save(const char *id, long long started_ms, int cancelled,
	    const struct buf *body);
/* A caller's fingerprint of the command (hex, at most 64 digits), kept
 * with its result: a re-issue under the same id compares it. */
#define SHELLRES_FP_MAX	64
int	shellres_fp_ok(const char *s, size_t n);
/* Marks id started, with its fingerprint fp ("" none); its result is kept
 * when it ends. */
void	shellres_started(const char *id, const char *fp);
/* id's fingerprint while it runs (or "" when none). */
void	shellres_fp(const char *id, char out[SHELLRES_FP_MAX + 1]);
/* 1 if a command with result id id ran (its result is kept) or was lost
 * here (shell_result_running says whether one runs). */
int	shellres_known(const char *id);
/* 1 if id was started and never kept a result (call it when it does not
 * run): its command ended with its shell unseen, e.g. a sandbox stop. */
int	shellres_lost(const char *id);
/* Appends the kept record of id to out: 0, or -1 (none, or unreadable). */
int	shellres_load(const char *id, struct buf *out);

#endif
