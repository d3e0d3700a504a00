/*
 * agentc.h: blocking HTTP/1.1 client for the in-sandbox agent
 * (docs/internals/agent-protocol.md), over a unix socket or TCP with a
 * bearer token. One struct agentc is one keep-alive connection, used by one
 * thread at a time. Responses are capped (AGENTC_MAX_RESP); JSON is left to
 * the caller (cJSON).
 */
#ifndef AGENTC_H
#define AGENTC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#include "attrib.h"
#include "buf.h"
#include "runtime/runtime.h"

#define AGENTC_MAX_RESP	(32 * 1024 * 1024)

struct agentc;

/* Connects (timeout_ms for the connect). NULL with err on failure. */
struct agentc *agentc_open(const struct rt_agent_addr *, int timeout_ms,
	    char *err, size_t errlen);
/*
 * Sends one request and reads the whole response into resp (reset first).
 * body may be NULL. timeout_ms bounds the whole exchange (use the command's
 * timeout plus a margin for /v1/shell). Returns 0 with *status set, or -1
 * with err (then the connection is unusable: close it).
 */
int	agentc_request(struct agentc *, const char *method, const char *path,
	    const char *ctype, const char *body, size_t bodylen, int timeout_ms,
	    int *status, struct buf *resp, char *err, size_t errlen) WUNRES;
/* Whether agentc_request's last request (any attempt) was sent whole: when
 * not, the agent never saw it and nothing of it ran. */
int	agentc_delivered(const struct agentc *);
void	agentc_close(struct agentc *);
/*
 * A call's cancellation, passed with each request (agentc_request_cx):
 * the request gives up (-1, "cancelled") grace_ms after *flag becomes
 * non-zero while it waits on the agent.
 */
struct agentc_cancel {
	const atomic_int *flag;
	int		 grace_ms;
};
/* agentc_request, cancelled by cx (NULL: never). */
int	agentc_request_cx(struct agentc *, const char *method,
	    const char *path, const char *ctype, const char *body,
	    size_t bodylen, int timeout_ms, const struct agentc_cancel *cx,
	    int *status, struct buf *resp, char *err, size_t errlen) WUNRES;

/*
 * The agent's POST /v1/env body {"set":{K:V,...}} for "K=V\n" lines (lines
 * without '=' or with an empty key are skipped); NULL if there is none.
 * Caller frees; the values may be credentials (wipe the printed text).
 */
cJSON	*agentc_env_body(const char *lines);

/*
 * A small cache of idle keep-alive connections to one sandbox's agent,
 * shared by the threads that call it (one per session). A connection is
 * taken out while in use and put back after a complete exchange; one
 * idle longer than AGENTC_CACHE_IDLE_MS is closed rather than reused, well
 * before the agent's own idle timeout can race a request on it.
 */
#define AGENTC_CACHE_MAX	8	/* concurrent calls of one session, kept */
#define AGENTC_CACHE_IDLE_MS	20000

struct agentc_cache {
	pthread_mutex_t	 mu;
	struct {
		struct agentc	*c;
		long long	 used_ms;	/* put back at (monotonic) */
	}		 v[AGENTC_CACHE_MAX];
	int		 n;
};

void	agentc_cache_init(struct agentc_cache *);
void	agentc_cache_clear(struct agentc_cache *);	/* closes every one */
void	agentc_cache_destroy(struct agentc_cache *);	/* clear, then free */
/*
 * A cached idle connection (*cached = 1) or a new one to addr (*cached =
 * 0). NULL with err if the connect fails. The caller owns the connection
 * until it puts it back or closes it.
 */
struct agentc *agentc_cache_get(struct agentc_cache *,
	    const struct rt_agent_addr *addr, int connect_ms, int *cached,
	    char *err, size_t errlen);
/* Puts c back for reuse (or closes it when the cache is full). */
void	agentc_cache_put(struct agentc_cache *, struct agentc *c);

/*
 * Streamed exchanges on the event loop ("agentx"): one request whose body
 * and response are streamed, flow-controlled both ways, on the connection
 * of ac (dialled now if it is not; ac is consumed either way). The request
 * goes out with Connection: close. body_len: the Content-Length, or -1
 * for a chunked body (agentx_body, then agentx_body_end). cb->head gets
 * the status (agentx_hdr reads the headers), cb->data the body as it
 * comes (de-chunked), cb->done ends it once (ok 0: the connection failed
 * or the reply broke off, why says so), cb->drain (may be NULL) runs when
 * the queued request bytes fall below the low mark. Callbacks may call
 * agentx_close (no callback after it). Memory: what the caller queues
 * (keep agentx_body_full() in view) plus one read buffer (256 KiB: the
 * agent's reply is read that much a call, on the socket, not through a
 * bufferevent, whose reads libevent 2.1 caps at 4 KiB).
 */
struct agentx;
struct agentx_cb {
	void	(*head)(struct agentx *, int status, void *arg);
	void	(*data)(struct agentx *, const char *p, size_t n, void *arg);
	void	(*done)(struct agentx *, int ok, const char *why, void *arg);
	void	(*drain)(struct agentx *, void *arg);
};
#define AGENTX_OUT_HIGH	(1024 * 1024)	/* request bytes queued: "full" */
struct event_base;
struct agentx *agentx_start(struct event_base *, struct agentc *ac,
	    const char *method, const char *target, const char *ctype,
	    long long body_len, const struct agentx_cb *, void *arg, char *err,
	    size_t errlen);
void	agentx_body(struct agentx *, const char *p, size_t n);
void	agentx_body_end(struct agentx *);
size_t	agentx_body_pending(const struct agentx *);
int	agentx_body_full(const struct agentx *);
/* Stops (1) or resumes (0) reading the response: the client is behind. */
void	agentx_pause(struct agentx *, int paused);
int	agentx_status(const struct agentx *);
/* The reply's first field called name (any case), a C string; NULL if none, or before cb->head. */
const char *agentx_hdr(const struct agentx *, const char *name);
void	agentx_close(struct agentx *);

#endif
