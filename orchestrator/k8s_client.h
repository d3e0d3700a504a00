/*
 * k8s_client.h: a thin, blocking Kubernetes REST client on libcurl.
 *
 * The runtime interface (runtime.h) is synchronous and called from the
 * orchestrator's worker threads, so each request runs a private libcurl
 * easy handle in the calling thread; the orchestrator's event loop is never
 * blocked. Thread-safe: one client may be used by many threads at once.
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
};

struct k8s_client;

struct k8s_client *k8s_client_new(const struct k8s_conn *, char *err,
	    size_t errlen);
void	k8s_client_free(struct k8s_client *);
const char *k8s_client_namespace(const struct k8s_client *);
const char *k8s_client_server(const struct k8s_client *);

/*
 * One request. path is absolute ("/api/v1/namespaces/x/pods?..."); body
 * may be NULL. Retries 429, 5xx and transport failures with backoff
 * (honouring Retry-After), re-reads the token after a 401 and tries once
 * more. Returns 0 with *status set and the body in resp (reset first), or
 * -1 with err set when no HTTP answer arrived at all.
 */
int	k8s_request(struct k8s_client *, const char *method, const char *path,
	    const char *ctype, const char *body, int *status, struct buf *resp,
	    char *err, size_t errlen) WUNRES;

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
