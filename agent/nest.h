/*
 * nest.h: the sandbox below the agent (nest.c). With --nest-caps, the
 * commands the agent runs live in user, pid and mount namespaces of
 * their own, one level below the agent's, so that what they run, root
 * with its capabilities included, cannot see, signal, ptrace or take
 * descriptors from the agent, the job wrappers or the sandbox's init.
 */
#ifndef AGENT_NEST_H
#define AGENT_NEST_H

#include <stdint.h>
#include <sys/types.h>

/* Makes the namespaces and the sandbox's init. Called once, before the
 * shell and jobs start; needs CAP_SYS_ADMIN, CAP_SETUID and CAP_SETGID in
 * the agent's user namespace and drops every capability when done.
 * caps: what root keeps in the sandbox (common/caps.h). -1 on failure. */
int	nest_init(uint64_t caps, long long run_bytes, char *err, size_t errlen);
/* Whether nest_init ran: without it nest_fork is fork. */
int	nest_on(void);
/*
 * fork(2), with the child inside the sandbox: in the parent, the child's
 * pid (as the agent's pid namespace numbers it) or -1; in the child 0.
 * The caller must be a child subreaper: the child is reparented to it.
 * The child is still privileged; it calls nest_child_drop before exec.
 */
pid_t	nest_fork(void);
/* nest_fork with the child started in the cgroup whose directory cgfd is
 * (cgroup.h; O_PATH is enough), or plainly with cgfd -1. -1 with errno
 * (EAGAIN: the sandbox's process limit, or its cgroup's). */
pid_t	nest_fork_into(int cgfd);
/* closefrom(lowfd) that keeps what nest_fork needs (a job's wrapper). */
void	nest_closefrom(int lowfd);
/* In a child of nest_fork: takes the sandbox's ids (the agent's uid and
 * gid) and capabilities. _exit(126) if it cannot. */
void	nest_child_drop(void);
/*
 * In a fork of the agent: enters the sandbox's user and mount namespaces
 * (N3, M3), not its pid namespace, so the process sees the files as the
 * sandbox's commands do while sandbox code cannot see or signal it. Still
 * privileged in N3: nest_child_drop comes next. 0, or -1 with errno.
 */
int	nest_join_view(void);
/* The sandbox init's pid (the agent's numbering), or -1. */
pid_t	nest_init_pid(void);

#endif
