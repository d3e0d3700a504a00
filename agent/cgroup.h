/*
 * cgroup.h: kill domains for what the agent runs (cgroup.c). With
 * --cgroup DIR (a cgroup v2 directory handed to the agent: the local
 * runtime delegates the sandbox's), the shell, each exec and each job's
 * command live in a child cgroup of their own, which one write kills
 * whole, fork bombs included; and the sandbox's process count and limit
 * say when it is full (the files the local runtime binds at
 * CGROUP_PIDS_DIR). Without them every call here fails or says "no", and
 * the callers walk /proc instead (proc.h).
 */
#ifndef AGENT_CGROUP_H
#define AGENT_CGROUP_H

#include <stddef.h>

/* Where the local runtime binds the sandbox's pids.current, pids.max and
 * pids.events (cgroup v1 or v2: the same format). */
#define CGROUP_PIDS_DIR		"/run/sandbox"
/* A child's name: "shell", "x-" + 16 hex (an exec), a job's id. */
#define CGROUP_NAME_MAX		40
/* Processes a call needs to start (nest_fork's two forks, the wrapper's
 * command, a pipeline or two): with fewer left, the sandbox is full. */
#define CGROUP_PIDS_RESERVE	8

/*
 * Opens dir (the delegated cgroup) for the rest of the agent's life; with
 * unmount, takes away its mount (the local runtime's bind), so nothing
 * reaches it by path afterwards: call before nest_init, which drops the
 * capability that needs. -1 with err when dir is unusable (cgroups stay
 * off); the pids files need no call.
 */
int	cgroup_init(const char *dir, int unmount, char *err, size_t errlen);
/* Whether cgroup_init succeeded. */
int	cgroup_on(void);
/* The child name's directory (O_PATH, close-on-exec; made if missing) for
 * nest_fork_into, which the caller closes; -1 (errno) when off or when it
 * cannot be made (the cgroup.max.descendants bound). */
int	cgroup_open(const char *name);
/* SIGKILLs every process in the child name, at once and for good (the
 * kernel also kills what is being forked). 0, or -1. */
int	cgroup_kill(const char *name);
/* Freezes (on 1) or thaws the child name; freezing waits up to wait_ms
 * until every member is frozen. 0, or -1 (off, or not frozen in time:
 * then it is thawed again). */
int	cgroup_freeze(const char *name, int on, int wait_ms);
/* 1 if a process lives in the child name, 0 if none, -1 unknown. */
int	cgroup_populated(const char *name);
/* Removes the child name now if it is empty, else at a later
 * cgroup_tidy (at most a few hundred are remembered). */
void	cgroup_release(const char *name);
/* Removes the released children that have become empty. */
void	cgroup_tidy(void);
/* The child holding the most processes (threads count, as the pids limit
 * counts them): its name (CGROUP_NAME_MAX) and count. 0, or -1 (none). */
int	cgroup_largest(char *name, size_t len, long *tasks);

/* The sandbox's process count and limit; -1 when unknown (no files, or
 * no limit). */
int	cgroup_pids(long long *cur, long long *max);
/*
 * Whether the sandbox is at its process limit: fewer than
 * CGROUP_PIDS_RESERVE processes left, or a fork refused by the limit
 * since the last look while at least half of it is in use (a fork bomb
 * keeps the count moving just below the limit). 0 when unknown.
 */
int	cgroup_at_limit(void);
/* Waits (blocking, at most ms) until CGROUP_PIDS_RESERVE processes are
 * free again. 0, or -1 if they are not. */
int	cgroup_wait_room(int ms);

#endif
