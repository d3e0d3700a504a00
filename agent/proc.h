/*
 * proc.h: process-tree helpers over /proc (descendants of a pid, killing a
 * tree even when members called setsid or ignore SIGTERM), process start
 * times (to recognise a pid after an agent restart) and the OOM-kill count
 * of our cgroup: the file the local runtime binds at /run/sandbox, else v2
 * memory.events or v1 memory.oom_control found from /proc/self/cgroup.
 */
#ifndef AGENT_PROC_H
#define AGENT_PROC_H

#include <sys/types.h>

#define PROC_MAX_SCAN 65536	/* processes looked at in one scan */
/* Where the local runtime binds the sandbox cgroup's OOM counter. */
#define PROC_RUNTIME_OOM_FILE "/run/sandbox/memory.events"

/*
 * Sends sig to every live descendant of each root (roots excluded), and, if
 * orphans_of is > 0, to every child of orphans_of that is not in keep[]
 * (plus its descendants). Repeats until nothing is left (SIGKILL) or once
 * (other signals). Returns the number of processes signalled.
 */
int	proc_kill_tree(const pid_t *roots, int nroots, int sig, pid_t orphans_of,
	    const pid_t *keep, int nkeep);
/* Start time of pid (clock ticks since boot), or -1 if gone/unknown. */
long long proc_starttime(pid_t);
/* OOM kills recorded for our cgroup so far, or -1 if not available. */
long long proc_oom_kills(void);
/* Closes every fd >= lowfd except keep (-1 for none). */
void	proc_closefrom(int lowfd, int keep);

#endif
