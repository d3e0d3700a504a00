/*
 * exec.h: POST /v1/exec, a command in a fresh process tree (not the
 * persistent shell) whose stdout and stderr stream back apart as NDJSON
 * lines while it runs, then one exit line. Several run at once.
 */
#ifndef AGENT_EXEC_H
#define AGENT_EXEC_H

struct conn;
struct json;

#define EXEC_MAX_RUNNING	64	/* at once; beyond, 429 busy */

void	exec_http_start(struct conn *, const struct json *body);
int	exec_running_count(void);
/* On agent exit: SIGKILL every running exec's tree. */
void	exec_terminate_all(void);

#endif
