/*
 * fuzz_orch_http.c: the orchestrator's HTTP/1.1 server (orchestrator/http/http.c,
 * included: its connection state machine is static) on arbitrary client
 * bytes, through a real connection (a socketpair) on a real event loop.
 * The first byte picks how the bytes are sent (in pieces of 1-8 bytes or
 * at once) and whether the client closes before reading, so pipelining,
 * partial heads, 413/431/400 answers, the sink, and a client gone while
 * its request is with a handler (answered later, from a deferred event)
 * all run. Routes: /sync (a reply at once), /stream (a chunked reply),
 * /later (a reply from the next loop turn, abort callback set) and /mcp
 * (behind the key, JSON-RPC error shape).
 */
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <fcntl.h>

#include "http/http.c"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct event_base *fbase;
static struct conf fconf;
static struct http *fht;
static int pending;		/* /later replies not sent yet */

struct later {
	struct http	*ht;
	struct http_req	*req;
};

static void
h_sync(struct http *h, struct http_req *r, const char *path UNUSED, void *arg UNUSED)
{
	size_t n;
	const char *b = http_req_body(r, &n);

	(void)http_hdr(r, "Host");
	(void)http_req_query(r);
	http_add_header(r, "X-Fuzz", "1");
	http_send_body(h, r, 200, "application/octet-stream", b, n);
}

static void
h_stream(struct http *h, struct http_req *r, const char *path UNUSED, void *arg UNUSED)
{
	http_add_header(r, "Content-Type", "text/event-stream");
	http_stream_start(h, r, 200);
	http_stream_chunk(r, "event: x\ndata: 1\n\n", 18);
	http_stream_end(h, r);
}

static void
later_cb(evutil_socket_t fd UNUSED, short ev UNUSED, void *arg)
{
	struct later *l = arg;

	http_send_err(l->ht, l->req, 200, "ok", "later");
	free(l);
	pending--;
}

static void
later_abort(struct http_req *r UNUSED, enum http_abort why UNUSED, void *arg UNUSED)
{
}

static void
h_later(struct http *h, struct http_req *r, const char *path UNUSED, void *arg UNUSED)
{
	static const struct timeval zero = { 0, 0 };
	struct later *l = calloc(1, sizeof(*l));

	l->ht = h;
	l->req = r;
	http_req_on_abort(r, later_abort, NULL);
	pending++;
	if (event_base_once(fbase, -1, EV_TIMEOUT, later_cb, l, &zero) == -1)
		abort();
}

static cJSON *
rpc_err(int status UNUSED, const char *code UNUSED, const char *msg)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddNullToObject(o, "id");
	cJSON_AddStringToObject(o, "message", msg);
	return o;
}

static const struct http_route froutes[] = {
	{ "/sync", 0, 0, HTTP_EP_OTHER, NULL, h_sync, NULL, NULL },
	{ "/stream", 0, 0, HTTP_EP_OTHER, NULL, h_stream, NULL, NULL },
	{ "/later", 0, 0, HTTP_EP_OTHER, NULL, h_later, NULL, NULL },
	{ "/mcp", 0, 1, HTTP_EP_MCP, rpc_err, h_sync, NULL, NULL },
};

static void
drain_peer(int fd)
{
	char buf[65536];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

static void
turn(int peer)
{
	event_base_loop(fbase, EVLOOP_NONBLOCK);
	if (peer != -1)
		drain_peer(peer);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct hconn *c;
	size_t off = 0, step, k;
	char err[256];
	ssize_t w;
	int sv[2], i, piece, close_early;

	if (fbase == NULL) {
		(void)log_init("fuzz", LOG_LVL_ERROR, NULL);
		fbase = event_base_new();
		if (conf_load(&fconf, NULL, err, sizeof(err)) == -1)
			abort();
		fconf.max_body = 4096;
		fconf.max_headers = 2048;
		fht = http_alloc(fbase, &fconf, "k-0123456789abcdef", froutes,
		    NELEM(froutes), 0);
		fht->loopback = 1;
		snprintf(fht->listen_host, sizeof(fht->listen_host), "127.0.0.1");
	}
	if (len == 0 || len > 60000)
		return 0;
	piece = data[0] & 0x7;
	close_early = (data[0] & 0x8) != 0;
	data++;
	len--;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == -1)
		abort();
	memset(&ss, 0, sizeof(ss));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	conn_new(fht, sv[0], &ss);
	for (i = 0; off < len && i < 100000; i++) {
		step = piece == 0 ? len - off : (size_t)piece;
		if (step > len - off)
			step = len - off;
		w = write(sv[1], data + off, step);
		if (w > 0)
			off += (size_t)w;
		turn(close_early ? -1 : sv[1]);
	}
	if (close_early) {
		close(sv[1]);
		sv[1] = -1;
	} else
		(void)shutdown(sv[1], SHUT_WR);
	for (i = 0; i < 64 && (!TAILQ_EMPTY(&fht->conns) || pending > 0); i++)
		turn(sv[1]);
	if (sv[1] != -1)
		close(sv[1]);
	for (i = 0; i < 64 && (!TAILQ_EMPTY(&fht->conns) || pending > 0); i++)
		turn(-1);
	/* Whatever is left (a reply the peer never took): closed now. */
	while ((c = TAILQ_FIRST(&fht->conns)) != NULL)
		conn_kill(c, "fuzz");
	for (k = 0; k < 4; k++)
		turn(-1);
	if (pending != 0 || fht->nconns != 0)
		abort();
	return 0;
}
