/*
 * fsview.h: the file operations of the agent's file service, run against
 * a root directory with the identity of the process that runs them
 * (fsview.c). In a nested sandbox that process is the agent's file helper
 * (fsd.c), inside the sandbox's user and mount namespaces with the
 * sandbox's ids and capabilities; without nesting it is the agent.
 */
#ifndef AGENT_FSVIEW_H
#define AGENT_FSVIEW_H

#include <stddef.h>

/*
 * Where the replies go: one message (msg[0..len)) and its descriptors,
 * which the callee takes (sends and closes, or keeps). 0, or -1 when the
 * replies cannot go on (the requester went away): the operation stops.
 */
typedef int (*fsview_emit_cb)(void *arg, const char *msg, size_t len,
    const int *fds, int nfds);

/*
 * Runs the request msg[0..n) (fswire.h) with its descriptors (taken:
 * closed before it returns) against root, every path resolved inside root
 * (RESOLVE_IN_ROOT, no /proc magic links), and sends its replies, the
 * last one FSW_K_END, through emit. A malformed request is answered
 * with step FSW_S_PROTO.
 */
void	fsview_serve(int root, const char *msg, size_t n, int *fds, int nfds,
	    fsview_emit_cb emit, void *arg);

#endif
