/*
 * agent.c: what every agent module shares and nothing else owns: the
 * configuration (defaults here, set once by main.c's flags before the loop
 * starts, read-only after), the last-activity stamp health reports, and
 * random hex for nonces and ids. It calls no other agent module.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "agent.h"
#include "hex.h"
#include "ids.h"
#include "json.h"
#include "log.h"
#include "util.h"

struct agent_conf agent_conf = {
	.shell = "/bin/bash",
	.workdir = "/workspace",
	.statedir = "/run/agent",
	.max_output = ((size_t)1024 * 1024),
	.max_upload = AGENT_MAX_UPLOAD,
	.request_timeout_ms = 30000,
	.idle_timeout_ms = 3600LL * 1000,
	.job_output_cap = AGENT_JOB_OUTPUT_CAP,
	.job_spool_total = AGENT_JOB_SPOOL_TOTAL,
	.job_keep = AGENT_JOB_KEEP,
	.job_keep_ms = AGENT_JOB_KEEP_MS,
};

static long long last_activity;	/* unix ms, see agent_touch */

void
agent_touch(void)
{
	last_activity = util_unix_ms();
}

void
agent_random_hex(char *out, size_t n)
{
	unsigned char r[64];
	size_t got = 0;
	ssize_t k;

	if (n > sizeof(r))
		n = sizeof(r);
	while (got < n) {
		k = getrandom(r + got, n - got, 0);
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0)
			fatal("getrandom");
		got += (size_t)k;
	}
	hex_encode(r, n, out);
}

long long
agent_last_activity(void)
{
	return last_activity;
}

void
agent_log_trace(const char *what, const struct json *body)
{
	const char *tp;
	size_t n;
	char v[ID_TRACEPARENT_LEN + 1];

	if (json_get_str(body, "traceparent", &tp, &n) != 0 ||
	    n != ID_TRACEPARENT_LEN)
		return;
	memcpy(v, tp, n);
	v[n] = '\0';
	if (id_traceparent_valid(v))
		log_info("%s started traceparent=%s", what, v);
}
