/*
 * job.h: async jobs. Each job runs under a small wrapper process (a fork
 * of the agent, its own session, a child subreaper) that spools the job's
 * output to <state>/jobs/<id>/output and writes exit.json when the job's
 * main process ends, so jobs, their output and their exit status survive
 * the client going away and an agent restart.
 */
#ifndef AGENT_JOB_H
#define AGENT_JOB_H

#include <sys/types.h>

struct conn;
struct json;

int	job_init(void);
/* Request handlers; each replies on the connection (now or later). */
void	job_http_start(struct conn *, const struct json *body);
void	job_http_list(struct conn *);
void	job_http_get(struct conn *, const char *id, const char *query);
void	job_http_wait(struct conn *, const char *id, const struct json *body);
void	job_http_stop(struct conn *, const char *id);
/* GET /v1/jobs/{id}/stream: the job's output as /v1/exec's NDJSON lines
 * from ?offset, following it live to its exit line (jobx.h). */
void	job_http_stream(struct conn *, const char *id, const char *query);
/* From the SIGCHLD loop: 1 if pid was one of our job wrappers. */
int	job_child_exited(pid_t pid, int status);
int	job_running_count(void);
/* On agent exit: SIGKILL every running job's tree (wrappers record it). */
void	job_terminate_all(void);

#endif
