/*
 * proc.h: process-tree helpers over /proc (descendants of a pid, killing a
 * tree even when members called setsid or ignore SIGTERM), process start
 * times (to recognise a pid after an agent restart) and the OOM-kill count
 * of our cgroup: the file the local runtime binds at /run/sandbox, else v2
 * memory.events or v1 memory.oom_control found from /proc/self/cgroup.
 */
#ifndef AGENT_PROC_H
#define AGENT_PROC_H

#include <stddef.h>
#include <sys/types.h>

#define PROC_MAX_SCAN 65536	/* processes looked at in one scan */
/* Where the local runtime binds the sandbox cgroup's OOM counter. */
#define PROC_RUNTIME_OOM_FILE "/run/sandbox/memory.events"

/* Processes identified across pid reuse. */
struct proc_id {
	pid_t		pid;
	long long	start;
};
struct proc_set {
	struct proc_id	*v;
	size_t		 n;
};

/*
 * Records the live descendants of root (one small read when root has no
 * child). 0, or -1.
 */
int	proc_snapshot(pid_t root, struct proc_set *out);
void	proc_set_free(struct proc_set *);
/*
 * Sends sig to every live descendant of root (setsid'd ones included) that
 * is neither in old nor below a member of old (old may be NULL): what root
 * started since the snapshot. Repeats until none is left (SIGKILL) or once
 * (other signals). Returns the number of processes signalled.
 */
int	proc_kill_tree(pid_t root, const struct proc_set *old, int sig);
/* Start time of pid (clock ticks since boot), or -1 if gone/unknown. */
long long proc_starttime(pid_t);
/* OOM kills recorded for our cgroup so far, or -1 if not available. */
long long proc_oom_kills(void);
/* Closes every fd >= lowfd except keep (-1 for none). */
void	proc_closefrom(int lowfd, int keep);
/* Raises the soft RLIMIT_NOFILE to the hard limit (logs both), so that
 * connections cannot run the agent out of descriptors at the common 1024;
 * what the agent starts gets the original back (proc_child_rlimits). */
void	proc_raise_nofile(void);
/* In a child before exec: the soft limits the agent was started with
 * (programs that walk every fd up to the limit stay fast). Only system
 * calls. */
void	proc_child_rlimits(void);

#endif
