/*
 * sess.h: sessions (X-Session-Id -> sandbox), the warm pool, the reaper and
 * reconciliation. The session record lives in the runtime's labels, so the
 * runtime is the only store: a restarted orchestrator rebuilds everything
 * from runtime->list().
 *
 * Every function here may block on the runtime or an agent: call them from
 * worker threads (work.h), never from the event loop, except the *_stats
 * and snapshot helpers which only take a mutex.
 *
 * A tool call does: s = sess_get(...); sess_enter(s, ...) (ensures a running,
 * personalised sandbox and holds it shared so it is not stopped under the
 * call); sess_agent(s, ...) any number of times; sess_leave(s); sess_put(s).
 */
#ifndef SESS_H
#define SESS_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "attrib.h"
#include "buf.h"
#include "ids.h"
#include "conf.h"
#include "runtime/runtime.h"
#include "sessopt.h"

enum sess_err {
	SE_OK,
	SE_BAD,		/* bad input */
	SE_NOTFOUND,	/* no such session */
	SE_LIMIT,	/* a limit was reached */
	SE_DRAINING,	/* shutting down: no new sessions */
	SE_BUSY,	/* a call is running; lifecycle change refused */
	SE_RUNTIME,	/* the runtime failed */
	SE_AGENT,	/* the agent did not answer */
	SE_IDENTITY,	/* org or user differ from the session's (fixed) */
	SE_WIDEN,	/* a policy change would widen the session's policy */
};

struct policy;

struct sessmgr;
struct sess;

struct sessmgr *sessmgr_new(struct runtime *, const struct conf *);
void	sessmgr_free(struct sessmgr *);
/* Compares the runtime with the sessions and fixes both (see sess.c). */
int	sessmgr_reconcile(struct sessmgr *, int at_start, char *err, size_t errlen);
/* One maintenance round: reaper, pool refill, periodic reconcile. */
void	sessmgr_tick(struct sessmgr *);
void	sessmgr_set_draining(struct sessmgr *);
int	sessmgr_ready(struct sessmgr *);	/* reconciled at least once */
/* Runs the runtime's health checks (runtime.h) and keeps the result for
 * sessmgr_health; sessmgr_new and every sessmgr_tick call it. Blocks. */
void	sessmgr_health_refresh(struct sessmgr *);
/* The runtime's heal op (runtime.h), if it has one; from a worker. At
 * most one runs at a time (a call while one runs returns at once). */
void	sessmgr_heal(struct sessmgr *);
/*
 * Can sessions get sandboxes? *ready 1 when reconciled, not draining and
 * every check of the last refresh passed. A JSON object (cJSON_Delete):
 * {"ready", "checks": [...], "checked_ms_ago"} and, when not ready,
 * "failing" (the first failing check's name, or "reconcile" /
 * "draining") and "error": {"code": "not_ready", "message"}. Only takes
 * a mutex.
 */
cJSON	*sessmgr_health(struct sessmgr *, int *ready);
/* Prometheus text for the session gauges and counters. */
int	sessmgr_metrics(struct sessmgr *, struct buf *) WUNRES;

/* Validates an X-Session-Id / X-Org-Id / X-User-Id value. */

/*
 * Finds a session, or (create != 0) makes an empty record for it, with
 * org and user (NULL or "": none). Returns a reference (release with
 * sess_put), or NULL with *e and err set: SE_IDENTITY when the session
 * exists and org/user claim another identity (sess_int.h
 * sm_identity_ok_locked: naming neither claims nothing).
 */
struct sess *sess_get(struct sessmgr *, const char *sid, const char *org,
	    const char *user, int create, enum sess_err *e, char *err,
	    size_t errlen);
void	sess_put(struct sess *);
/* Makes sure the sandbox runs (create, claim from the pool, or resume) and
 * holds it for a call; what a create or a start waits for goes to the
 * call's sink pg as it changes (runtime.h rt_progress; NULL: nowhere).
 * 0, or -1 with *e and err. */
int	sess_enter(struct sess *, const struct rt_progress *pg, enum sess_err *e,
	    char *err, size_t errlen) WUNRES;
void	sess_leave(struct sess *);
/*
 * The W3C traceparent of a call in flight in the entered session s (NULL:
 * its end), passed to the egress proxy for its audit lines (runtime op
 * trace; nothing where the runtime has none). Blocks briefly.
 */
void	sess_trace(struct sess *s, const char *tp);
/* Makes s's sandbox ready for a connection without a call: thaws a
 * frozen one, starts a stopped one (may take seconds); never makes a new
 * one (-1 with *e SE_NOTFOUND when it has none). Counts as activity. 0,
 * or -1 with *e and err. Holds nothing after. */
int	sess_wake(struct sess *, enum sess_err *e, char *err, size_t errlen)
	    WUNRES;
/* Holds s shared like sess_enter, without starting anything (its sandbox
 * may be stopped or absent), waiting at most ms for a lifecycle change.
 * 0, or -1 when one is still running. Release with sess_release. */
#define LIFECYCLE_HOLD_MS 30000
int	sess_hold(struct sess *, int ms) WUNRES;
void	sess_release(struct sess *);
/* The agent's address of a session held with sess_enter (valid until
 * sess_leave): for the callers that open their own streams to the agent
 * (xfer.c). */
const struct rt_agent_addr *sess_agent_addr(struct sess *);
struct agentc_cancel;
/*
 * One request to the session's agent (held with sess_enter), given up
 * when the caller's cx is cancelled (NULL: never). Returns 0 with
 * *status, or with err: -1 the agent did not answer (its sandbox runs);
 * -2 its sandbox had stopped and the request never reached it; -3 its
 * sandbox stopped during the request. After -2 and -3 the next sess_enter
 * starts the sandbox again with its workspace.
 */
int	sess_agent(struct sess *, const char *method, const char *path,
	    const char *body, size_t bodylen, int timeout_ms,
	    const struct agentc_cancel *cx, int *status, struct buf *resp,
	    char *err, size_t errlen) WUNRES;
/*
 * Interrupts the command the session's shell runs (as its timeout does:
 * the shell abandons the rest of the command and the command's process
 * tree is killed; the shell keeps its state). 1 if a command was running
 * and was interrupted, 0 if the shell was idle, -1 if the sandbox could
 * not be asked. Does not wait for the calls that hold the session.
 */
int	sess_interrupt(struct sessmgr *, const char *sid);
/* Was a command of s interrupted in the last ms milliseconds? */
int	sess_interrupted_recently(struct sess *, int ms);
/*
 * Replaces the session's sandbox with a new one built from opts (or makes
 * its first). Everything is checked first (the operator's maxima, the
 * runtime's check: image, options, bounds); the new sandbox is built
 * beside the old one, its /workspace a copy of the old one's unless
 * opts->fresh_workspace, and only when it answers is it swapped in and
 * the old one destroyed; the creation's progress goes to pg (as for
 * sess_enter). On -1 (*e and err; err says so) the old sandbox and its
 * files are as they were.
 */
int	sess_reprovision(struct sess *, const struct sess_opts *,
	    const struct rt_progress *pg, enum sess_err *e, char *err,
	    size_t errlen) WUNRES;
/*
 * REST create: a session with no sandbox gets one from opts (*created 1);
 * one whose sandbox already has every option opts names keeps it (new
 * lifetime/idle_timeout applied, resumed if stopped; fresh_workspace
 * ignored), so the same request twice changes nothing; any other is
 * replaced as sess_reprovision does (no progress told: REST has no
 * channel for it). 0, or -1 with *e and err.
 */
int	sess_create(struct sess *, const struct sess_opts *, int *created,
	    enum sess_err *e, char *err, size_t errlen) WUNRES;
/* Stops (workspace kept) or deletes (everything gone) a session. */
int	sess_stop(struct sessmgr *, const char *sid, const char *reason,
	    enum sess_err *e, char *err, size_t errlen) WUNRES;
int	sess_delete(struct sessmgr *, const char *sid, const char *reason,
	    enum sess_err *e, char *err, size_t errlen) WUNRES;

/*
 * Sets s's credential policy (policy.h) from a trusted client's p. A
 * session nothing has made yet (put 0, no sandbox, no policy set before)
 * gets p combined with the operator's policy for its org (a p wider than
 * that: SE_BAD); any other gets p only when it is within its current
 * policy (else SE_WIDEN, 409), with the current sections p lacks. The
 * policy is kept in the session record (label "policy"), so it outlives
 * the sandbox (create_sandbox, clear_session keep it) and a restart; a
 * running sandbox is registered again at its proxy at once (put 1: even
 * when the policy did not change, so a failed registration can be
 * retried). Holds s shared: tool calls go on. 0, or -1 with *e and err.
 */
int	sess_set_policy(struct sess *s, const struct policy *p, int put,
	    enum sess_err *e, char *err, size_t errlen) WUNRES;
/* A trusted client ended session sid (REST DELETE): its record, kept for
 * its policy once its sandbox is gone, goes too. */
void	sess_policy_forget(struct sessmgr *, const char *sid);

/*
 * A JSON description of a session (caller frees): ids, state, image,
 * options, limits, times and the time left before the reaper's lifetime
 * and idle limits (docs/operator-guide.md, "REST"). Only takes a mutex.
 */
cJSON	*sess_json(struct sess *);
/*
 * sess_json plus what the sandbox uses now (memory and disk, the
 * runtime's usage), the agent's activity and its running jobs. Starts or
 * resumes nothing; blocks on the runtime and the agent (a worker only).
 */
cJSON	*sess_status(struct sess *);
/* Sessions of user whose sandbox runs or is being made (homes.c). */
int	sessmgr_user_active(struct sessmgr *, const char *user);
struct runtime *sessmgr_runtime(struct sessmgr *);
/* All sessions matching the filters (NULL: any), as a JSON array. */
cJSON	*sessmgr_list_json(struct sessmgr *, const char *org, const char *user,
	    const char *state);
const char *sess_sandbox_id(struct sess *);	/* "" if none (racy; for logs) */
const char *sess_sid(struct sess *);

#endif
