/*
 * jobwrap.h: a job's wrapper process (jobwrap.c), started by job.c in a
 * fork of the agent.
 */
#ifndef AGENT_JOBWRAP_H
#define AGENT_JOBWRAP_H

#include <stddef.h>

#include "attrib.h"

struct jobx_opts;

/*
 * Runs the job whose directory is dir: outfd its output file, pipefd the
 * pipe on which the job's pid goes to the agent, cgfd its cgroup (-1:
 * none), cwd where it starts, script its script, o its options, cap its
 * spool cap (0: none). Never returns.
 */
void	jobwrap_main(const char *dir, int outfd, int pipefd, int cgfd,
	    const char *cwd, const char *script, const struct jobx_opts *o,
	    size_t cap) NORETURN;

#endif
