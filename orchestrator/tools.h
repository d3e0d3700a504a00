/*
 * tools.h: the MCP tools (names, JSON Schemas, descriptions) and their
 * execution against a session's sandbox. tools_run blocks: call it on a
 * worker thread.
 */
#ifndef TOOLS_H
#define TOOLS_H

#include <cjson/cJSON.h>
#include "conf.h"
#include "sess.h"

struct tool_call {
	/* in */
	char		 sid[SESS_ID_MAX + 1];
	char		 org[SESS_ID_MAX + 1];
	char		 user[SESS_ID_MAX + 1];
	char		*name;		/* owned */
	cJSON		*args;		/* owned; an object */
	int		 structured;	/* add structuredContent (2025-06-18+) */
	/* out */
	cJSON		*result;	/* CallToolResult */
	int		 is_error;
};

int	tools_init(void);		/* parses the schemas; -1 on a bug */
void	tools_cleanup(void);
int	tools_exists(const char *name);
/* A fresh copy of the tools array for tools/list (caller frees). */
cJSON	*tools_list(void);
/* Runs the call; always sets tc->result. */
void	tools_run(struct sessmgr *, const struct conf *, struct tool_call *);
void	tool_call_free(struct tool_call *);

/* A CallToolResult with one text block. */
cJSON	*tools_text_result(const char *text, int is_error);

#endif
