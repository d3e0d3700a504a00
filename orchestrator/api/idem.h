/*
 * idem.h: Idempotency-Key records of REST requests (docs/operator-guide.md,
 * "Idempotency-Key"): a key names one request per scope (the session id),
 * with the SHA-256 fingerprint of its method, route and canonical body; a
 * keyed exec's record holds the agent job id that runs it, a keyed
 * create's the first result (status and body). Records are written
 * durably (util_write_file_atomic: write, fsync, rename) before what they
 * record starts, loaded when the store is first used, kept for
 * idempotency.ttl, and bounded per scope and in all. Thread-safe; calls
 * that write a file block (they run on workers).
 */
#ifndef IDEM_H
#define IDEM_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "attrib.h"
#include "conf.h"

#define IDEM_KEY_MAX	255	/* bytes of a key */
#define IDEM_FP_HEX	64	/* a fingerprint: SHA-256 in hex */
#define IDEM_JOB_MAX	32	/* an agent job id, NUL included */
#define IDEM_BODY_MAX	((size_t)256 * 1024)	/* a create's result kept */

enum idem_kind { IDEM_EXEC, IDEM_CREATE };

enum idem_rc {
	IDEM_NEW,	/* recorded now: run it (then idem_started/_done) */
	IDEM_SAME,	/* the same request was recorded: attach to it */
	IDEM_MISMATCH,	/* the key was used with other arguments: 422 */
	IDEM_BUSY,	/* a create with this key is running now: 409 */
	IDEM_FULL_SCOPE,	/* idempotency.max_per_session reached: 429 */
	IDEM_FULL,	/* idempotency.max_total reached: 503 */
	IDEM_OFF,	/* no directory for the records: 501 */
	IDEM_ERR	/* the record could not be written: 503 */
};

/* What a record says (IDEM_SAME), or what was recorded (IDEM_NEW). */
struct idem_view {
	char	 job[IDEM_JOB_MAX];	/* exec: the agent job id */
	int	 started;		/* exec: the job was started */
	int	 status;		/* create: 0 until done */
	char	*body;			/* create: its result (caller frees) */
};

/* A key's syntax: 1 to 255 printable ASCII characters. */
int	idem_key_valid(const char *key);
/*
 * The fingerprint of a request: SHA-256 (hex) of method, route and body
 * (JSON, canonical: objects' members sorted by name, no white space).
 * 0, or -1 when body is not JSON.
 */
int	idem_fingerprint(const char *method, const char *route,
	    const cJSON *body, char out[IDEM_FP_HEX + 1]) WUNRES;
/*
 * Looks up (scope, key); a new one is recorded (an exec's with a new job
 * id in v->job) before this returns IDEM_NEW. err says why for anything
 * but IDEM_NEW and IDEM_SAME.
 */
enum idem_rc idem_begin(const struct conf *, enum idem_kind, const char *scope,
	    const char *key, const char *fp, struct idem_view *v, char *err,
	    size_t errlen);
/* An exec's job has started (or was found started): recorded. */
void	idem_started(const struct conf *, const char *scope, const char *key);
/* A create's result: recorded, and what re-issues get. */
void	idem_done(const struct conf *, const char *scope, const char *key,
	    int status, const char *body);
/* Forgets (scope, key): what it recorded did not happen. */
void	idem_forget(const struct conf *, const char *scope, const char *key);

#endif
