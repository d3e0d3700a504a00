/*
 * curlev.c: libcurl's multi interface on a worker's libevent loop (see
 * curlev.h). One per owner per worker; everything runs on that worker's
 * thread. curl_global_init runs once in the process.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "config.h"
#include "curlev.h"
#include "log.h"
#include "netcheck.h"
#include "xmalloc.h"

struct curlev {
	struct event_base	*base;
	const struct pconf	*conf;
	CURLM			*multi;
	struct event		*timer;
	struct curl_slist	*resolve;
	curlev_done_cb		 done;
	void			*owner;
};

/* A socket libcurl watches: its event. */
struct sockev {
	struct event	*ev;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void
curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Hands every finished transfer to the owner. */
static void
check_done(struct curlev *cv)
{
	CURLMsg *m;
	int left;
	void *p;

	while ((m = curl_multi_info_read(cv->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		p = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&p);
		if (p != NULL)
			cv->done(cv->owner, p, m->data.result);
	}
}

static void
sock_cb_ev(evutil_socket_t fd, short what, void *arg)
{
	struct curlev *cv = arg;
	int running, flags = 0;

	if (what & EV_READ)
		flags |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(cv->multi, fd, flags, &running);
	check_done(cv);
}

static int
sock_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct curlev *cv = userp;
	struct sockev *se = socketp;
	short kind;

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		if (se != NULL) {
			event_free(se->ev);
			free(se);
			curl_multi_assign(cv->multi, s, NULL);
		}
		return 0;
	}
	kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) |
	    ((what & CURL_POLL_OUT) ? EV_WRITE : 0) | EV_PERSIST);
	if (se == NULL) {
		se = xcalloc(1, sizeof(*se));
		curl_multi_assign(cv->multi, s, se);
	} else
		event_free(se->ev);
	se->ev = event_new(cv->base, s, kind, sock_cb_ev, cv);
	event_add(se->ev, NULL);
	return 0;
}

static void
timer_cb_ev(evutil_socket_t fd, short what, void *arg)
{
	struct curlev *cv = arg;
	int running;

	(void)fd;
	(void)what;
	curl_multi_socket_action(cv->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(cv);
}

static int
timer_cb(CURLM *m, long ms, void *userp)
{
	struct curlev *cv = userp;
	struct timeval tv;

	(void)m;
	if (ms < 0) {
		evtimer_del(cv->timer);
		return 0;
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(cv->timer, &tv);
	return 0;
}

struct curlev *
curlev_new(struct event_base *base, const struct pconf *conf, curlev_done_cb done,
    void *owner)
{
	struct curlev *cv = xcalloc(1, sizeof(*cv));
	char entry[400], a[INET6_ADDRSTRLEN];
	size_t i;

	pthread_once(&curl_once, curl_init_once);
	cv->base = base;
	cv->conf = conf;
	cv->done = done;
	cv->owner = owner;
	cv->multi = curl_multi_init();
	cv->timer = evtimer_new(base, timer_cb_ev, cv);
	curl_multi_setopt(cv->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
	curl_multi_setopt(cv->multi, CURLMOPT_SOCKETDATA, cv);
	curl_multi_setopt(cv->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(cv->multi, CURLMOPT_TIMERDATA, cv);
	for (i = 0; i < conf->nresolve; i++) {
		const struct resolve_entry *r = &conf->resolve[i];
		const struct sockaddr *sa = (const struct sockaddr *)&r->ss;

		if (sa->sa_family == AF_INET) {
			inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, a, sizeof(a));
			snprintf(entry, sizeof(entry), "%s:%s:%u", r->hostport, a,
			    ntohs(((const struct sockaddr_in *)sa)->sin_port));
		} else {
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, a, sizeof(a));
			snprintf(entry, sizeof(entry), "%s:[%s]:%u", r->hostport, a,
			    ntohs(((const struct sockaddr_in6 *)sa)->sin6_port));
		}
		/* host:port to addr:port, as the proxy's own dial maps it */
		cv->resolve = curl_slist_append(cv->resolve, entry);
	}
	return cv;
}

void
curlev_free(struct curlev *cv)
{
	if (cv == NULL)
		return;
	curl_multi_cleanup(cv->multi);
	event_free(cv->timer);
	curl_slist_free_all(cv->resolve);
	free(cv);
}

CURLM *
curlev_multi(const struct curlev *cv)
{
	return cv->multi;
}

/* CURLOPT_SSL_CTX_FUNCTION: adds the bundle (CURLOPT_SSL_CTX_DATA) to the system store. */
static CURLcode
sslctx_cb(CURL *e, void *sslctx, void *bundle)
{
	X509_STORE *st = SSL_CTX_get_cert_store(sslctx);

	(void)e;
	if (bundle != NULL && X509_STORE_load_file(st, bundle) != 1) {
		ERR_clear_error();
		return CURLE_SSL_CACERT_BADFILE;
	}
	return CURLE_OK;
}

/*
 * The socket of a transfer to address: opened only where the proxy's own
 * connections may go (netcheck_addr: upstream.allow_cidrs, never the
 * proxy's own listeners and addresses), so a token_url or a realm cannot
 * reach what a sandbox could not. libcurl then tries the next address or
 * fails the transfer with CURLE_COULDNT_CONNECT; the reason is logged here,
 * at most five lines in ten seconds.
 */
static curl_socket_t
opensock_cb(void *conf, curlsocktype purpose, struct curl_sockaddr *a)
{
	static struct log_rate rl;
	const struct pconf *c = conf;
	const char *why;
	char host[INET6_ADDRSTRLEN] = "?";
	long dropped;

	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKET_BAD;
	if ((why = netcheck_addr(&a->addr, c->allow, c->nallow)) == NULL)
		return socket(a->family, a->socktype, a->protocol);
	if (a->family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)&a->addr)->sin_addr, host,
		    sizeof(host));
	else if (a->family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)(void *)&a->addr)->sin6_addr, host,
		    sizeof(host));
	if (log_rate_ok(&rl, 5, 10000, &dropped))
		log_warnx("proxy's own call to %s refused: %s (upstream.allow_cidrs)%s", host, why,
		    dropped > 0 ? " (and others)" : "");
	return CURL_SOCKET_BAD;
}

CURL *
curlev_easy(const struct curlev *cv, const char *url, void *priv, struct curl_slist *hdrs,
    char *errbuf)
{
	CURL *e = curl_easy_init();

	if (e == NULL)
		return NULL;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, priv);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "egress-proxy");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)cv->conf->hook_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)cv->conf->connect_ms);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, opensock_cb);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, (void *)cv->conf);
	if (cv->resolve != NULL)
		curl_easy_setopt(e, CURLOPT_CONNECT_TO, cv->resolve);
	if (cv->conf->upstream_ca_bundle != NULL) {
		curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, sslctx_cb);
		curl_easy_setopt(e, CURLOPT_SSL_CTX_DATA, cv->conf->upstream_ca_bundle);
	}
	return e;
}
