/*
 * toollive.h: a tool call's live progress message (toollive.c), for
 * tools.c: the shell's output tail while it runs, a sandbox start's note.
 */
#ifndef TOOLLIVE_H
#define TOOLLIVE_H

#include "conf.h"
#include "session/sess.h"
#include "tools.h"

struct live;

/* Replaces tc's progress message with m (owned; NULL: none). */
void	toollive_set(struct tool_call *tc, char *m);
/* A sandbox start's progress sink (struct rt_progress's fn, arg: the
 * tool_call; tools_run sets it in tc->starting): msg becomes its message. */
void	toollive_start_note(void *arg, const char *msg);
/* Starts polling the agent of s for tc's shell output when tc's client
 * takes progress; NULL when it does not, or the thread did not start. */
struct live *toollive_start(struct tool_call *tc, struct sess *s,
	    const struct conf *c);
/* Stops it (at most one poll's request later); NULL: nothing. */
void	toollive_stop(struct live *l);

#endif
