/*
 * agent.h: what the agent's modules share (agent.c): the configuration,
 * the limits several modules enforce, activity tracking and random hex.
 * The reply API is conn.h's.
 */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

#include <stddef.h>
#include <sys/types.h>
#include "attrib.h"
#include "buf.h"

struct json;

#define AGENT_VERSION		"0.1.0"
#define AGENT_MAX_OUTPUT_CAP	((size_t)4 * 1024 * 1024)	/* per-call max_output ceiling */
#define AGENT_MAX_RESP		((size_t)64 * 1024 * 1024)	/* a response body */
#define AGENT_MAX_TIMEOUT_MS	(24LL * 3600 * 1000)
#define AGENT_JOB_OUTPUT_CAP	((size_t)64 * 1024 * 1024)	/* default spool cap */
/* All job spools of a sandbox together, default: a new job's cap is
 * what is left of it (finished jobs' output, oldest first, makes room),
 * so kept jobs cannot hold 100 x the per-job cap. */
#define AGENT_JOB_SPOOL_TOTAL	((size_t)1024 * 1024 * 1024)
#define AGENT_JOB_KEEP		100		/* finished jobs kept, default */
#define AGENT_JOB_KEEP_MS	(24LL * 3600 * 1000)	/* and for a day */
#define AGENT_MAX_UPLOAD	((size_t)1024 * 1024 * 1024)	/* default */
#define NEST_RUN_BYTES		(64LL * 1024 * 1024)	/* the sandbox's /run */

struct agent_conf {
	const char	*shell;		/* --shell */
	const char	*workdir;	/* --workdir */
	const char	*statedir;	/* --state */
	size_t		 max_output;	/* --max-output */
	size_t		 max_upload;	/* --max-upload: a raw PUT's body */
	long long	 request_timeout_ms;	/* a request must arrive within */
	long long	 idle_timeout_ms;	/* idle keep-alive connections */
	size_t		 job_output_cap;	/* --job-output-cap, 0: none */
	size_t		 job_spool_total;	/* --job-spool-total, 0: none */
	int		 job_keep;		/* --job-keep: finished jobs kept */
	long long	 job_keep_ms;		/* --job-keep-ms: and for how long */
};
extern struct agent_conf agent_conf;

/* Records activity now (end of a command or job, a file write). */
void	agent_touch(void);
/* The last agent_touch (unix ms): what GET /v1/health reports. */
long long agent_last_activity(void);
/*
 * Logs what (a shell command, an exec) with the W3C "traceparent" member of
 * its request body, when it has a well-formed one: the orchestrator's MCP
 * call or REST request that caused it.
 */
void	agent_log_trace(const char *what, const struct json *body);
/* Fills out with 2*n random hex digits and a NUL (n at most 64). */
void	agent_random_hex(char *out, size_t n);

#endif
