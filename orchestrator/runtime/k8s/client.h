/*
 * runtime/k8s/client.h: a thin Kubernetes REST client on libcurl's multi
 * interface, on an event loop.
 *
 * All transfers of a client run on one CURLM driven by libevent (socket
 * and timer callbacks on an event_base), so connections to the API server
 * are reused and many requests are in flight at once without a thread
 * each. The loop is the orchestrator's (k8s_conn.base) or, when none is
 * given (k8sctl, tests), a private one in a thread the client starts.
 *
 * k8s_request() stays synchronous, as runtime.h wants: the calling (worker)
 * thread queues the request to the loop and waits on a condition variable;
 * retries wait on loop timers, and the loop thread never blocks. The
 * thread that created the client with a shared base may call it before
 * that base is dispatched (it then runs the loop itself while it waits);
 * calling it from a callback on the loop is refused. Thread-safe.
 *
 * Connection settings come from in-cluster files (service-account token,
 * CA, namespace under a configurable base directory), from a kubeconfig
 * file (libyaml), or from explicit values. The bearer token file is re-read
 * when it changes (checked at most every token_check_ms and after any 401),
 * so rotated projected tokens are picked up.
 */
#ifndef K8S_CLIENT_H
#define K8S_CLIENT_H

#include <stddef.h>
#include "attrib.h"
#include "buf.h"

#define K8S_MAX_RESP	((size_t)64 * 1024 * 1024)	/* bytes of one response */
#define K8S_MAX_TOKEN	16384			/* bytes of a bearer token */

/* Where and how to connect; strings are copied by k8s_client_new. */
struct k8s_conn {
	const char	*server;	/* "https://host:port"; NULL: in-cluster/kubeconfig */
	const char	*kubeconfig;	/* path; used when server is NULL and set */
	const char	*context;	/* kubeconfig context; NULL: current-context */
	const char	*incluster_dir;	/* default /var/run/secrets/kubernetes.io/serviceaccount */
	const char	*ca_file;	/* overrides */
	const char	*token_file;
	const char	*namespace;	/* NULL: from kubeconfig/in-cluster, else "default" */
	long long	 timeout_ms;	/* per attempt */
	long long	 retries;	/* extra attempts on 429/5xx/connect errors */
	long long	 backoff_ms;	/* first backoff; doubles, capped at 8 s */
	long long	 token_check_ms; /* how often to stat the token file */
	struct event_base *base;	/* the loop to run on; NULL: a private one */
};

/* Counters since k8s_client_new (tests, diagnostics). */
struct k8s_stats {
	long long	requests;	/* k8s_request submissions */
	long long	attempts;	/* transfers started (retries included) */
	long long	connects;	/* new connections opened */
	long long	inflight;	/* transfers running now */
	long long	max_inflight;	/* most at once */
};

struct k8s_client;
struct event_base;

struct k8s_client *k8s_client_new(const struct k8s_conn *, char *err,
	    size_t errlen);
void	k8s_client_free(struct k8s_client *);
const char *k8s_client_namespace(const struct k8s_client *);
const char *k8s_client_server(const struct k8s_client *);
void	k8s_client_stats(struct k8s_client *, struct k8s_stats *);

/*
 * One request. path is absolute ("/api/v1/namespaces/x/pods?..."); body
 * may be NULL. Retries 429, 5xx and transport failures with backoff
 * (honouring Retry-After; a timer on the loop), re-reads the token after a
 * 401 and tries once more. Blocks the calling thread, never the loop. Returns 0 with *status set and the body in resp (reset first), or
 * -1 with err set when no HTTP answer arrived at all.
 */
int	k8s_request(struct k8s_client *, const char *method, const char *path,
	    const char *ctype, const char *body, int *status, struct buf *resp,
	    char *err, size_t errlen) WUNRES;

/*
 * A streamed GET (a watch), on an easy handle of its own that blocks the
 * calling thread (never the loop; one connection for the stream): fn gets
 * each piece of a 200 answer's body as it arrives, and returns -1 to end
 * the stream; stop (may be NULL) is asked about once a second and ends it
 * when it returns nonzero. No retries (the watcher backs off itself); a
 * 401 re-reads the token and tries once more. Returns 0 with *status when
 * the server answered (200: the stream ended, by the server, fn or stop;
 * else err has the Status), -1 with err when no answer came or the
 * stream broke (transport error, timeout_ms reached).
 */
int	k8s_stream(struct k8s_client *, const char *path, long long timeout_ms,
	    int (*fn)(void *, const char *, size_t), int (*stop)(void *),
	    void *arg, int *status, char *err, size_t errlen) WUNRES;

/*
 * Turns a non-2xx answer into one line: the Status message and reason
 * ("pods \"x\" not found (404 NotFound)"), or the HTTP code and a bounded,
 * escaped excerpt when the body is not a Status. Returns err.
 */
char	*k8s_status_error(int status, const char *body, size_t len, char *err,
	    size_t errlen);

/* Percent-encodes s for a query value or a path segment into dst. */
int	k8s_urlencode(const char *s, char *dst, size_t dstlen) WUNRES;

/* Kubeconfig parsing, exposed for unit tests. Fills the strings (heap;
 * free with k8s_kubeconfig_clear). *_data fields are decoded PEM. */
struct k8s_kubeconfig {
	char	*server;
	char	*ca_file, *ca_data;
	char	*cert_file, *cert_data;
	char	*key_file, *key_data;
	char	*token, *token_file;
	char	*namespace;
	size_t	 ca_len, cert_len, key_len;
};
int	k8s_kubeconfig_parse(const char *text, size_t len, const char *dir,
	    const char *context, struct k8s_kubeconfig *, char *err,
	    size_t errlen) WUNRES;
void	k8s_kubeconfig_clear(struct k8s_kubeconfig *);

#endif
