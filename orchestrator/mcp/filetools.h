/*
 * filetools.h: the MCP file tools (read_file, write_file, list_files,
 * delete_file) against the agent's file endpoints (docs/internals/
 * agent-protocol.md). tools.c holds their rows (schemas, descriptions) and
 * calls these as their handlers, with the arguments checked against the
 * row's inputSchema and the session entered.
 */
#ifndef FILETOOLS_H
#define FILETOOLS_H

#include <cjson/cJSON.h>

#include "conf.h"
#include "session/sess.h"
#include "tools.h"

void	filetools_read(struct tool_call *, struct sessmgr *, struct sess *,
	    const struct conf *, const cJSON *args);
void	filetools_write(struct tool_call *, struct sessmgr *, struct sess *,
	    const struct conf *, const cJSON *args);
void	filetools_list(struct tool_call *, struct sessmgr *, struct sess *,
	    const struct conf *, const cJSON *args);
void	filetools_delete(struct tool_call *, struct sessmgr *, struct sess *,
	    const struct conf *, const cJSON *args);

#endif
