/*
 * shell.h: the persistent shell. One bash (or /bin/sh) per agent; each
 * command runs inside it through eval (so cwd, variables, functions,
 * aliases and options persist) with stdin from /dev/null, stdout and stderr
 * on one pipe, and completion reported on a separate fd that the command
 * cannot see, tagged with a per-command random nonce.
 */
#ifndef AGENT_SHELL_H
#define AGENT_SHELL_H

#include <stddef.h>
#include <sys/types.h>
#include "buf.h"

/* Called once with the JSON result body of a command. */
typedef void (*shell_done_cb)(void *arg, const struct buf *body);

int	shell_init(void);
/*
 * Starts cmd[0..len). Returns 0, -1 when busy (409), -2 when the command is
 * unusable (contains NUL), -3 when no shell can be started. With a
 * result_id (shellres.h; NULL: none) the result is also kept on disk when
 * the command ends, for GET /v1/shell/result/{id}.
 */
int	shell_run(const char *cmd, size_t len, long long timeout_ms,
	    size_t max_output, const char *result_id, shell_done_cb, void *arg);
int	shell_busy(void);
/*
 * Stops the running command the way its timeout does (its process tree
 * only; the shell and its state stay); its call then answers with
 * "interrupted":true. 1 if a command was stopped, 0 if none was running
 * (or it was already being stopped).
 */
int	shell_interrupt(void);
/* The command's text shown in the note of an abandoned command, bytes. */
#define SHELL_ABANDONED_SHOWN	200
/*
 * The caller of the command started with arg went away (conn_on_gone):
 * a queued call is answered (interrupted) at once; a running command is
 * stopped as shell_interrupt does, and the next command's output starts
 * with a note saying so ("previous_interrupted": true in its result).
 */
void	shell_abandon(void *arg);
/*
 * The caller of a command with a result id went away: the command (running
 * or queued) goes on, and its result is only kept (shellres.c), never
 * answered. The next command waits for it (409 busy).
 */
void	shell_detach(void *arg);
/* 1 while the command with result id id runs or is queued (*started_ms:
 * its start, unix ms; 0 while queued), else 0. */
int	shell_result_running(const char *id, long long *started_ms);
/* Stops the command with result id id as shell_interrupt does, its kept
 * result marked cancelled: 1, or 0 when no such command runs. */
int	shell_result_cancel(const char *id);
/*
 * The running /v1/shell command's output so far: its last bytes (at most
 * max, never cut inside a UTF-8 character) into out[0..*len) and the
 * count of all of them in *total. 1 while a command runs, else 0.
 */
int	shell_output_tail(char *out, size_t max, size_t *len,
	    unsigned long long *total);
pid_t	shell_pid(void);
/* From the SIGCHLD loop: 1 if pid was the shell (handled), else 0. */
int	shell_child_exited(pid_t pid, int status);
#define SHELL_ENV_MAX_NAME	256
/* A variable NAME=value must fit one exec argument string (Linux). */
#define SHELL_ENV_MAX_VAR	((size_t)128 * 1024 - 1)
/* 1 if k[0..len) is a usable variable name ([A-Za-z_][A-Za-z0-9_]*). */
int	shell_env_name_ok(const char *k, size_t len);
/* 1 if env ops of about this many script bytes still fit. */
int	shell_env_room(size_t bytes);
/* Queues an export (v != NULL) or unset into the shell and jobs. */
void	shell_env_op(const char *k, const char *v);
/*
 * Asks the idle shell for its exported environment (for a job about to
 * start); cb(arg) runs when it is in (or failed). -1 when the shell is busy:
 * the previous snapshot is used.
 */
int	shell_snapshot(void (*cb)(void *), void *arg);
/* Script lines for a new job: the shell's exported env and /v1/env ops. */
void	shell_job_prelude(struct buf *out);
/* The shell's working directory (workdir when unknown). */
void	shell_cwd(char *out, size_t len);
const char *shell_path(void);
int	shell_is_bash(void);
/* Re-reads the OOM-kill count the next command is compared with. */
void	shell_oom_refresh(void);
/* Kills the shell and everything it started (agent exit). */
void	shell_terminate(void);
/*
 * Brings back a sandbox at its process limit (cgroup_at_limit, or at once
 * with force: after a fork refused with EAGAIN): kills the child cgroup
 * holding the most processes (the shell's: the shell too, which starts
 * again, a running command answered as restarted; an exec's or a job's:
 * its whole tree), waits until processes are free again, and writes into
 * note a line saying what happened, for the output of the call that
 * needed the room. 1 if it killed something, 0 if nothing was needed (or
 * no cgroups), -1 if the sandbox is full and nothing of ours could be
 * killed (note says so).
 */
int	shell_make_room(int force, char *note, size_t len);
/* Appends a shell single-quoted form of s[0..n) to b. */
int	shell_quote(struct buf *b, const char *s, size_t n);

#endif
