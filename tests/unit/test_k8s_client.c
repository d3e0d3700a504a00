/* test_k8s_client.c: kubeconfig parsing, URL encoding, Status objects as
 * errors, client construction errors, and the request loop: a private
 * loop thread, a shared event_base driven by its owner before dispatch, a
 * worker while another thread dispatches, retries as loop timers, and a
 * call from a loop callback refused (orchestrator/runtime/k8s/client.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "buf.h"
#include "runtime/k8s/client.h"
#include "unit.h"
#include "util.h"

static const char KC_HEAD[] =
    "apiVersion: v1\nkind: Config\ncurrent-context: a\n"
    "contexts:\n- name: a\n  context: {cluster: c1, user: u1, namespace: ns1}\n"
    "- name: b\n  context: {cluster: c2, user: u2}\n";

static int
parse(const char *text, const char *ctx, struct k8s_kubeconfig *kc, char *err,
    size_t errlen)
{
	return k8s_kubeconfig_parse(text, strlen(text), "/etc/kc", ctx, kc, err,
	    errlen);
}

TEST(test_kubeconfig_good)
{
	struct k8s_kubeconfig kc;
	char err[256], text[2048];

	snprintf(text, sizeof(text), "%s"
	    "clusters:\n- name: c1\n  cluster:\n    server: https://h:6443\n"
	    "    certificate-authority-data: aGVsbG8=\n"
	    "- name: c2\n  cluster: {server: https://x, certificate-authority: ca.pem}\n"
	    "users:\n- name: u1\n  user: {token: abc, client-certificate-data: "
	    "Y2VydA==, client-key-data: a2V5}\n"
	    "- name: u2\n  user: {tokenFile: /abs/tok}\n", KC_HEAD);
	CHECK(parse(text, NULL, &kc, err, sizeof(err)) == 0);
	CHECK_STR(kc.server, "https://h:6443");
	CHECK_STR(kc.ca_data, "hello");
	CHECK_INT(kc.ca_len, 5);
	CHECK_STR(kc.cert_data, "cert");
	CHECK_STR(kc.key_data, "key");
	CHECK_STR(kc.token, "abc");
	CHECK_STR(kc.namespace, "ns1");
	k8s_kubeconfig_clear(&kc);
	CHECK(parse(text, "b", &kc, err, sizeof(err)) == 0);
	CHECK_STR(kc.ca_file, "/etc/kc/ca.pem");
	CHECK_STR(kc.token_file, "/abs/tok");
	CHECK(kc.namespace == NULL);
	k8s_kubeconfig_clear(&kc);
}

TEST(test_kubeconfig_bad)
{
	static const struct { const char *body, *ctx, *want; } t[] = {
		{ "", NULL, "not a mapping" },
		{ "[1, 2]", NULL, "not a mapping" },
		{ "a: [unclosed", NULL, "kubeconfig: line" },
		{ "contexts: []", NULL, "no current-context" },
		{ "current-context: x\ncontexts: []", NULL, "context \"x\" not found" },
		{ "current-context: a\ncontexts: 5", NULL, "not found" },
		{ "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n",
		  NULL, "cluster of context" },
		{ "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
		  "clusters:\n- name: c\n  cluster: {}\n", NULL, "has no server" },
		{ "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
		  "clusters:\n- name: c\n  cluster: {server: https://x, "
		  "insecure-skip-tls-verify: true}\n", NULL, "insecure-skip-tls-verify is refused" },
		{ "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
		  "clusters:\n- name: c\n  cluster: {server: https://x}\n"
		  "users:\n- name: u\n  user: {exec: {command: aws}}\n", NULL,
		  "exec and auth-provider credentials are not supported" },
		{ "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
		  "clusters:\n- name: c\n  cluster: {server: https://x}\n"
		  "users:\n- name: u\n  user: {client-certificate-data: Y2VydA==}\n", NULL,
		  "needs its key" },
		{ "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
		  "clusters:\n- name: c\n  cluster: {server: https://x, "
		  "certificate-authority-data: \"!!!\"}\n", NULL, "not valid base64" },
		{ "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: nobody}\n"
		  "clusters:\n- name: c\n  cluster: {server: https://x}\n", NULL,
		  "user \"nobody\" not found" },
		{ "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
		  "clusters:\n- name: c\n  cluster: {server: https://x}\n", "zz",
		  "context \"zz\" not found" },
		/* anchors and aliases do not blow up */
		{ "x: &a [1, 2]\ny: [*a, *a, *a, *a]\n", NULL, "no current-context" },
	};
	struct k8s_kubeconfig kc;
	char err[256];
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		err[0] = '\0';
		CHECK(parse(t[i].body, t[i].ctx, &kc, err, sizeof(err)) == -1);
		if (strstr(err, t[i].want) == NULL) {
			fprintf(stderr, "  case %zu: \"%s\" lacks \"%s\"\n", i, err, t[i].want);
			unit_cur_failed++;
		}
	}
	/* A NUL inside a scalar is not a server name. */
	CHECK(k8s_kubeconfig_parse("current-context: \"a\\0b\"\n", 22, ".", NULL,
	    &kc, err, sizeof(err)) == -1);
}

TEST(test_urlencode)
{
	char b[64];

	CHECK(k8s_urlencode("a=b,c/d e", b, sizeof(b)) == 0);
	CHECK_STR(b, "a%3Db%2Cc%2Fd%20e");
	CHECK(k8s_urlencode("Az09-_.~", b, sizeof(b)) == 0);
	CHECK_STR(b, "Az09-_.~");
	CHECK(k8s_urlencode("\xff\n", b, sizeof(b)) == 0);
	CHECK_STR(b, "%FF%0A");
	CHECK(k8s_urlencode("abcd", b, 4) == -1);
	CHECK(k8s_urlencode("abc", b, 4) == 0);
	CHECK(k8s_urlencode("==", b, 6) == -1);
	CHECK(k8s_urlencode("", b, 1) == 0 && b[0] == '\0');
}

TEST(test_status_error)
{
	static const struct { int code; const char *body, *want; } t[] = {
		{ 404, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
		  "\"message\":\"pods \\\"x\\\" not found\",\"reason\":\"NotFound\",\"code\":404}",
		  "pods \"x\" not found (404 NotFound)" },
		{ 500, "<html>oops</html>", "API server answered 500: <html>oops</html>" },
		{ 403, "{\"kind\":\"Status\",\"message\":\"bad\\u0001\\nline\"}", "bad??line (403)" },
		{ 502, "", "API server answered 502: " },
		{ 400, "{\"kind\":\"Pod\",\"message\":\"not a status\"}", "API server answered 400" },
	};
	char err[512], big[5000];
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		k8s_status_error(t[i].code, t[i].body, strlen(t[i].body), err, sizeof(err));
		if (strncmp(err, t[i].want, strlen(t[i].want)) != 0) {
			fprintf(stderr, "  case %zu: \"%s\"\n", i, err);
			unit_cur_failed++;
		}
	}
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	k8s_status_error(500, big, strlen(big), err, sizeof(err));
	CHECK(strlen(err) < 200);
	k8s_status_error(500, NULL, 0, err, sizeof(err));
	CHECK(strstr(err, "500") != NULL);
}

TEST(test_client_new_errors)
{
	struct k8s_conn cc;
	struct k8s_client *c;
	char err[512], dir[] = "/tmp/k8sunitXXXXXX", p[600];
	FILE *f;

	memset(&cc, 0, sizeof(cc));
	unsetenv("KUBERNETES_SERVICE_HOST");
	cc.incluster_dir = "/nonexistent";
	CHECK((c = k8s_client_new(&cc, err, sizeof(err))) == NULL);
	CHECK(strstr(err, "not in a cluster") != NULL);
	cc.server = "http://127.0.0.1:1";
	CHECK((c = k8s_client_new(&cc, err, sizeof(err))) == NULL);
	CHECK(strstr(err, "CA file") != NULL || strstr(err, "https") != NULL);

	CHECK(mkdtemp(dir) != NULL);
	snprintf(p, sizeof(p), "%s/ca.crt", dir);
	f = fopen(p, "w");
	fputs("x\n", f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/token", dir);
	f = fopen(p, "w");
	fputs("tok\n", f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/namespace", dir);
	f = fopen(p, "w");
	fputs(" team-a \n", f);
	fclose(f);
	cc.incluster_dir = dir;
	CHECK((c = k8s_client_new(&cc, err, sizeof(err))) == NULL);
	CHECK(strstr(err, "only https:// is supported") != NULL);
	cc.server = "https://127.0.0.1:1///";
	CHECK((c = k8s_client_new(&cc, err, sizeof(err))) != NULL);
	if (c != NULL) {
		CHECK_STR(k8s_client_namespace(c), "team-a");
		CHECK_STR(k8s_client_server(c), "https://127.0.0.1:1");
		k8s_client_free(c);
	}
	setenv("POD_NAMESPACE", "from-env", 1);
	CHECK((c = k8s_client_new(&cc, err, sizeof(err))) != NULL);
	if (c != NULL) {
		CHECK_STR(k8s_client_namespace(c), "from-env");
		k8s_client_free(c);
	}
	unsetenv("POD_NAMESPACE");
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	cc.server = NULL;
	CHECK((c = k8s_client_new(&cc, err, sizeof(err))) != NULL);
	if (c != NULL) {
		CHECK_STR(k8s_client_server(c), "https://[fd00::1]:443");
		k8s_client_free(c);
	}
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	snprintf(p, sizeof(p), "%s/token", dir);
	unlink(p);
	cc.server = "https://127.0.0.1:1";
	CHECK((c = k8s_client_new(&cc, err, sizeof(err))) == NULL);
	CHECK(strstr(err, "token file") != NULL);
	snprintf(p, sizeof(p), "%s/ca.crt", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/namespace", dir);
	unlink(p);
	rmdir(dir);
}

/* A client for https://127.0.0.1:1 (refused) with 2 retries 40 ms apart. */
static struct k8s_client *
loop_client(struct event_base *base, char *dir, size_t dirlen)
{
	struct k8s_conn cc;
	char err[512], p[600];
	FILE *f;

	snprintf(dir, dirlen, "/tmp/k8sloopXXXXXX");
	if (mkdtemp(dir) == NULL)
		return NULL;
	snprintf(p, sizeof(p), "%s/ca.crt", dir);
	if ((f = fopen(p, "w")) != NULL) {
		fputs("x\n", f);
		fclose(f);
	}
	snprintf(p, sizeof(p), "%s/token", dir);
	if ((f = fopen(p, "w")) != NULL) {
		fputs("tok\n", f);
		fclose(f);
	}
	memset(&cc, 0, sizeof(cc));
	cc.server = "https://127.0.0.1:1";
	cc.incluster_dir = dir;
	cc.namespace = "ns";
	cc.timeout_ms = 2000;
	cc.retries = 2;
	cc.backoff_ms = 40;
	cc.base = base;
	return k8s_client_new(&cc, err, sizeof(err));
}

static void
loop_client_dir_rm(const char *dir)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/ca.crt", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/token", dir);
	unlink(p);
	rmdir(dir);
}

struct call {
	struct k8s_client	*c;
	struct event_base	*base;
	int			 rc, status;
	long long		 ms;
	char			 err[512];
};

static void
do_call(struct call *k)
{
	long long t0 = util_mono_ms();
	struct buf b;

	buf_init(&b, 4096);
	k->rc = k8s_request(k->c, "GET", "/api/v1/namespaces/ns/pods", NULL, NULL,
	    &k->status, &b, k->err, sizeof(k->err));
	k->ms = util_mono_ms() - t0;
	buf_free(&b);
}

static void *
worker_main(void *arg)
{
	struct call *k = arg;

	do_call(k);
	event_base_loopbreak(k->base);
	return NULL;
}

static void
in_loop_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	do_call(arg);
}

/* Three attempts (two backoffs of 40 and 80 ms on the loop), then an
 * error naming the server. */
static void
check_refused(struct k8s_client *c, const struct call *k, long long requests)
{
	struct k8s_stats st;

	CHECK(k->rc == -1);
	CHECK(strstr(k->err, "https://127.0.0.1:1/api/v1/namespaces/ns/pods") != NULL);
	CHECK(k->ms >= 110);
	k8s_client_stats(c, &st);
	CHECK_INT(st.requests, requests);
	CHECK_INT(st.attempts, requests * 3);
	CHECK_INT(st.inflight, 0);
}

TEST(test_request_loop)
{
	struct event_base *base;
	struct k8s_client *c;
	struct event *ev;
	struct timeval tv = { 0, 1000 };
	struct call k;
	pthread_t t;
	char dir[64];

	/* A private loop thread (k8sctl, tests). */
	CHECK((c = loop_client(NULL, dir, sizeof(dir))) != NULL);
	if (c == NULL)
		return;
	memset(&k, 0, sizeof(k));
	k.c = c;
	do_call(&k);
	check_refused(c, &k, 1);
	k8s_client_free(c);
	loop_client_dir_rm(dir);

	/* The orchestrator's loop: its owner calls before dispatching it,
	 * a worker while it is dispatched, and a callback on it is refused. */
	CHECK((base = event_base_new()) != NULL);
	CHECK((c = loop_client(base, dir, sizeof(dir))) != NULL);
	if (c == NULL || base == NULL)
		return;
	memset(&k, 0, sizeof(k));
	k.c = c;
	k.base = base;
	do_call(&k);
	check_refused(c, &k, 1);
	memset(&k, 0, sizeof(k));
	k.c = c;
	k.base = base;
	CHECK(pthread_create(&t, NULL, worker_main, &k) == 0);
	event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);
	pthread_join(t, NULL);
	check_refused(c, &k, 2);
	memset(&k, 0, sizeof(k));
	k.c = c;
	ev = evtimer_new(base, in_loop_cb, &k);
	evtimer_add(ev, &tv);
	event_base_dispatch(base);
	CHECK(k.rc == -1);
	CHECK(strstr(k.err, "event loop thread") != NULL);
	event_free(ev);
	k8s_client_free(c);
	event_base_free(base);
	loop_client_dir_rm(dir);
}

int
main(void)
{
	RUN(test_kubeconfig_good);
	RUN(test_kubeconfig_bad);
	RUN(test_urlencode);
	RUN(test_status_error);
	RUN(test_client_new_errors);
	if (evthread_use_pthreads() == -1)
		return 1;
	RUN(test_request_loop);
	return unit_done();
}
