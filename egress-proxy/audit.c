/*
 * audit.c: the audit log's lines (see audit.h for the format and the
 * queue). A line is formatted whole in the queue's line buffer, then
 * appended to the queue in one piece or dropped: the file never gets half
 * a line. Only the owning worker's thread touches a queue until it stops.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "attrib.h"
#include "audit.h"
#include "buf.h"
#include "log.h"
#include "sandbox.h"
#include "util.h"
#include "xmalloc.h"

/*
 * Lines waiting for the flush past this are dropped (with a warning) rather
 * than held: a stalled audit file must not grow a worker without bound.
 */
#define AUDIT_QUEUE_MAX	((size_t)16 * 1024 * 1024)
/* A line: the path is cut at AUDIT_PATH_MAX, every other field is bounded. */
#define AUDIT_LINE_MAX	((size_t)64 * 1024)
#define AUDIT_PATH_MAX	512

struct auditq {
	int		 fd;
	struct event	*ev;		/* the flush, made active by the first line */
	struct buf	 q;		/* lines waiting for ev */
	struct buf	 line;		/* the line being formatted */
};

static void
json_str(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;
	int rc = 0;

	rc |= buf_add(b, "\"", 1);
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\') {
			char e[2] = { '\\', (char)ch };
			rc |= buf_add(b, e, 2);
		} else if (ch < 0x20 || ch >= 0x7f) {
			char e[6] = { '\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15] };
			rc |= buf_add(b, e, 6);
		} else
			rc |= buf_add(b, (const char *)&ch, 1);
	}
	rc |= buf_add(b, "\"", 1);
	(void)rc;
}

/* s as a JSON string, or null. */
static void
json_opt(struct buf *b, const char *s)
{
	if (s == NULL)
		ign(buf_add(b, "null", 4));
	else
		json_str(b, s, strlen(s));
}

/* Starts a line: the timestamp, then sandbox and host. */
static void
line_start(struct buf *b, const struct audit_rec *r)
{
	char t[40];

	buf_reset(b);
	util_iso_ms(t, sizeof(t), util_unix_ms());
	ign(buf_addf(b, "{\"ts\":\"%s\",\"sandbox\":", t));
	json_opt(b, r->sandbox);
	ign(buf_add(b, ",\"host\":", 8));
	json_str(b, r->host != NULL ? r->host : "", r->host != NULL ? strlen(r->host) : 0);
}

/* Ends a line: the connection id, the reason code and the detail. */
static void
line_end(struct buf *b, const struct audit_rec *r)
{
	char tp[56];

	/* the orchestrator's call in flight for this sandbox (admin trace) */
	if (r->sandbox != NULL && sandbox_trace_of(r->sandbox, tp))
		ign(buf_addf(b, ",\"traceparent\":\"%s\"", tp));
	ign(buf_addf(b, ",\"conn\":\"%llx\",\"reason\":", r->conn));
	json_opt(b, r->reason);
	if (r->detail != NULL) {
		ign(buf_addstr(b, ",\"detail\":"));
		json_str(b, r->detail, strlen(r->detail) > AUDIT_PATH_MAX ? AUDIT_PATH_MAX :
		    strlen(r->detail));
	}
	ign(buf_add(b, "}\n", 2));
}

/* Queues the line; the first one of a loop pass makes the flush active. */
static void
line_queue(struct auditq *aq)
{
	if (aq->line.p == NULL)
		return;
	if (aq->q.len == 0)
		event_active(aq->ev, EV_TIMEOUT, 0);
	if (buf_add(&aq->q, aq->line.p, aq->line.len) == -1)
		log_warnx("audit: buffer full, line dropped");
}

void
auditq_flush(struct auditq *aq)
{
	size_t off = 0;
	ssize_t n;

	while (off < aq->q.len) {
		n = write(aq->fd, aq->q.p + off, aq->q.len - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_warn("audit write");
			break;
		}
		off += (size_t)n;
	}
	buf_reset(&aq->q);
}

static void
auditq_flush_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	auditq_flush(arg);
}

struct auditq *
auditq_new(struct event_base *base, int fd)
{
	struct auditq *aq = xcalloc(1, sizeof(*aq));

	aq->fd = fd;
	buf_init(&aq->q, AUDIT_QUEUE_MAX);
	buf_init(&aq->line, AUDIT_LINE_MAX);
	aq->ev = event_new(base, -1, 0, auditq_flush_cb, aq);
	return aq;
}

void
audit_request(struct auditq *aq, const struct audit_rec *r)
{
	struct buf *b = &aq->line;

	line_start(b, r);
	ign(buf_addf(b, ",\"type\":\"%s\",\"method\":\"%s\",\"path\":", r->type,
	    r->method));
	json_str(b, r->path, r->path_len > AUDIT_PATH_MAX ? AUDIT_PATH_MAX : r->path_len);
	if (r->client_path != NULL) {
		ign(buf_addstr(b, ",\"client_path\":"));
		json_str(b, r->client_path, r->client_path_len > AUDIT_PATH_MAX ? AUDIT_PATH_MAX :
		    r->client_path_len);
	}
	ign(buf_addf(b, ",\"status\":%d,\"bytes_up\":%llu,\"bytes_down\":%llu,"
	    "\"injected\":%s,\"rule\":", r->status, r->bytes_up, r->bytes_down,
	    r->injected ? "true" : "false"));
	json_opt(b, r->injected ? r->rule : NULL);
	if (r->creds != NULL) {
		ign(buf_addstr(b, ",\"credentials\":"));
		json_str(b, r->creds, strlen(r->creds));
	}
	line_end(b, r);
	line_queue(aq);
}

void
audit_connect(struct auditq *aq, const struct audit_rec *r)
{
	struct buf *b = &aq->line;

	line_start(b, r);
	ign(buf_addstr(b, ",\"type\":\"connect\",\"method\":\"CONNECT\",\"path\":"));
	json_str(b, r->host != NULL ? r->host : "", r->host != NULL ? strlen(r->host) : 0);
	ign(buf_addf(b, ",\"status\":%d,\"decision\":", r->status));
	json_opt(b, r->decision);
	ign(buf_addstr(b, ",\"injected\":false"));
	line_end(b, r);
	line_queue(aq);
}

void
audit_refused(struct auditq *aq, const struct audit_rec *r)
{
	struct buf *b = &aq->line;

	line_start(b, r);
	ign(buf_addf(b, ",\"type\":\"refused\",\"status\":%d,\"injected\":false",
	    r->status));
	line_end(b, r);
	line_queue(aq);
}

void
audit_tunnel(struct auditq *aq, const struct audit_rec *r)
{
	struct buf *b = &aq->line;

	line_start(b, r);
	ign(buf_addf(b, ",\"type\":\"tunnel\",\"bytes_up\":%llu,\"bytes_down\":%llu,"
	    "\"injected\":false", r->bytes_up, r->bytes_down));
	line_end(b, r);
	line_queue(aq);
}

void
audit_token(struct auditq *aq, const struct audit_rec *r)
{
	struct buf *b = &aq->line;

	line_start(b, r);
	ign(buf_addstr(b, ",\"type\":\"token\",\"grant\":"));
	json_opt(b, r->method);
	ign(buf_addf(b, ",\"status\":%d,\"injected\":false,\"credentials\":", r->status));
	json_opt(b, r->creds);
	if (r->path != NULL) {	/* a registry's token: the scope asked for */
		ign(buf_addstr(b, ",\"scope\":"));
		json_str(b, r->path, r->path_len > AUDIT_PATH_MAX ? AUDIT_PATH_MAX : r->path_len);
	}
	line_end(b, r);
	line_queue(aq);
}
