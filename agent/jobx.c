/*
 * jobx.c: jobs run as execs (jobx.h). The options are checked with
 * /v1/exec's own code (exec.c exec_parse_io) and messages; the job itself is
 * job.c's (its wrapper writes the split spool: jobx_frame_hdr).
 *
 * A stream (struct jstream) reads the job's output file from its offset
 * with pread, only whole records, and writes one NDJSON line a record
 * while the connection's queue is below CONN_STREAM_HIGH (else it waits
 * for conn_on_drain). At the file's end it asks the job's state (state
 * first, then the file again: a job that had ended has all its output in
 * the file), and either sends the exit line and ends, or looks again
 * after JOBX_TICK_MS. A client that goes away ends the stream only: the
 * job runs on. The stream is freed from a timer, never on the stack of
 * the connection's callback.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "b64.h"
#include "conn.h"
#include "exec.h"
#include "ev.h"
#include "json.h"
#include "jobx.h"
#include "log.h"
#include "shell.h"
#include "util.h"
#include "xmalloc.h"

#define JOBX_TICK_MS		50
#define JOBX_READ		((size_t)256 * 1024)	/* file bytes a turn */
#define JOBX_MIN_OUTPUT		1024LL
#define JOBX_MAX_OUTPUT		(1024LL * 1024 * 1024)
#define JOBX_MAX_STREAMS	64	/* streams at once (as execs) */

int
jobx_opts_parse(struct conn *c, const struct json *body,
    int (*valid_id)(const char *), struct jobx_opts *o)
{
	const char *s;
	size_t slen;
	int r;

	memset(o, 0, sizeof(*o));
	buf_init(&o->env, (size_t)8 * 1024 * 1024);
	r = json_get_str(body, "id", &s, &slen);
	if (r == -1 || (r == 0 && (slen >= sizeof(o->id) ||
	    memchr(s, '\0', slen) != NULL))) {
		conn_reply_error(c, 400, "bad_request", "\"id\" must look like "
		    "j-0123456789ab");
		goto bad;
	}
	if (r == 0) {
		memcpy(o->id, s, slen);
		o->id[slen] = '\0';
		if (!valid_id(o->id)) {
			conn_reply_error(c, 400, "bad_request", "\"id\" must look "
			    "like j-0123456789ab");
			goto bad;
		}
	}
	r = json_get_str(body, "streams", &s, &slen);
	if (r == -1 || (r == 0 && !(slen == 5 && memcmp(s, "split", 5) == 0) &&
	    !(slen == 6 && memcmp(s, "merged", 6) == 0))) {
		conn_reply_error(c, 400, "bad_request", "\"streams\" is \"split\" "
		    "(stdout and stderr apart) or \"merged\"");
		goto bad;
	}
	o->split = r == 0 && slen == 5;
	if (json_get_bool(body, "kill_leftovers", &o->kill_leftovers) == -1) {
		conn_reply_error(c, 400, "bad_request", "kill_leftovers must be "
		    "a boolean");
		goto bad;
	}
	if (json_get_int(body, "timeout_ms", &o->timeout_ms) == -1 ||
	    o->timeout_ms < 0 || o->timeout_ms > AGENT_MAX_TIMEOUT_MS) {
		conn_reply_error(c, 400, "bad_request", "timeout_ms must be an "
		    "integer from 0 (none) to %lld", AGENT_MAX_TIMEOUT_MS);
		goto bad;
	}
	if (json_get_int(body, "max_output", &o->max_output) == -1 ||
	    (o->max_output != 0 && (o->max_output < JOBX_MIN_OUTPUT ||
	    o->max_output > JOBX_MAX_OUTPUT))) {
		conn_reply_error(c, 400, "bad_request", "max_output must be an "
		    "integer from %lld to %lld", JOBX_MIN_OUTPUT, JOBX_MAX_OUTPUT);
		goto bad;
	}
	/* the rest as an exec takes it; no cwd: the shell's */
	if (exec_parse_io(c, body, o->cwd, 0, &o->env, &o->in, &o->inlen) == -1)
		goto bad;
	return 0;
bad:
	jobx_opts_free(o);
	return -1;
}

void
jobx_opts_free(struct jobx_opts *o)
{
	buf_free(&o->env);
	free(o->in);
	o->in = NULL;
}

void
jobx_frame_hdr(unsigned char hdr[JOBX_HDR], char tag, uint32_t n)
{
	hdr[0] = (unsigned char)tag;
	hdr[1] = (unsigned char)(n >> 24);
	hdr[2] = (unsigned char)(n >> 16);
	hdr[3] = (unsigned char)(n >> 8);
	hdr[4] = (unsigned char)n;
}

/*
 * The whole records at the start of p[0..n): calls one(arg, tag, payload,
 * len) for each; returns the bytes they took. A record longer than
 * JOBX_REC_MAX is a broken file: its bytes are given as they are (tag
 * 'o') so that a stream cannot stall on it.
 */
static size_t
frames_each(const unsigned char *p, size_t n,
    void (*one)(void *, char, const unsigned char *, size_t), void *arg)
{
	size_t at = 0, len;

	while (n - at >= JOBX_HDR) {
		len = (size_t)p[at + 1] << 24 | (size_t)p[at + 2] << 16 |
		    (size_t)p[at + 3] << 8 | (size_t)p[at + 4];
		if (len > JOBX_REC_MAX) {
			one(arg, 'o', p + at, n - at);
			return n;
		}
		if (n - at - JOBX_HDR < len)
			break;
		one(arg, (char)p[at], p + at + JOBX_HDR, len);
		at += JOBX_HDR + len;
	}
	return at;
}

/* Reads up to max bytes of path at off into a new buffer (*got). */
static unsigned char *
read_at(const char *path, long long off, size_t max, size_t *got)
{
	unsigned char *p = xmalloc(max > 0 ? max : 1);
	ssize_t n;
	int fd;

	*got = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) == -1)
		return p;
	while (*got < max) {
		n = pread(fd, p + *got, max - *got, off + (long long)*got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		*got += (size_t)n;
	}
	close(fd);
	return p;
}

/* ---- GET /v1/jobs/{id} of a split job ---- */

struct chunks {
	struct jw	*w;
	size_t		 taken, max;
	int		 full;
	size_t		 stop;		/* bytes of records taken */
	size_t		 at;
};

static void
chunk_one(void *arg, char tag, const unsigned char *p, size_t n)
{
	struct chunks *k = arg;
	char *enc;
	size_t e;

	if (k->full)
		return;
	if (k->taken > 0 && k->taken + n > k->max) {
		k->full = 1;
		return;
	}
	k->taken += n;
	k->at += JOBX_HDR + n;
	jw_obj(k->w);
	jw_key(k->w, "s");
	jw_cstr(k->w, tag == 'e' ? "err" : tag == 'n' ? "note" : "out");
	if (tag == 'n') {
		jw_key(k->w, "m"); jw_str(k->w, (const char *)p, n);
	} else {
		enc = xmalloc(B64_ENC_LEN(n) + 1);
		e = b64_encode(p, n, enc);
		jw_key(k->w, "b"); jw_str(k->w, enc, e);
		free(enc);
	}
	jw_obj_end(k->w);
}

long long
jobx_chunks(struct jw *w, const char *path, long long offset, size_t max)
{
	struct chunks k = { w, 0, max, 0, 0, 0 };
	unsigned char *p;
	size_t got, want = max + JOBX_HDR * 64 + JOBX_REC_MAX + JOBX_HDR;

	p = read_at(path, offset, want, &got);
	(void)frames_each(p, got, chunk_one, &k);
	free(p);
	return offset + (long long)k.at;
}

/* ---- GET /v1/jobs/{id}/stream ---- */

struct jstream {
	struct conn	*c;
	char		 id[32];
	char		*path;
	int		 split;
	long long	 off;
	jobx_state_fn	 state;
	uint64_t	 timer;
	int		 gone;
	int		 failed;	/* a write found the peer gone */
};

static int nstreams;
static char line[JOBX_REC_MAX / 3 * 4 + 256];

int
jobx_stream_count(void)
{
	return nstreams;
}

static void
js_free_cb(void *arg)
{
	struct jstream *s = arg;

	conn_stream_abort(s->c);
	free(s->path);
	free(s);
	nstreams--;
}

static void
js_gone(void *arg)
{
	struct jstream *s = arg;

	if (s->gone)
		return;
	s->gone = 1;
	if (s->timer != 0)
		ev_timer_del(s->timer);
	s->timer = ev_timer_add(0, js_free_cb, s);
}

static void
js_line(struct jstream *s, const char *p, size_t n)
{
	if (s->gone || s->failed)
		return;
	if (conn_stream_write(s->c, p, n) == -1)
		s->failed = 1;
}

static void
js_one(void *arg, char tag, const unsigned char *p, size_t n)
{
	struct jstream *s = arg;
	struct buf b;
	struct jw w;
	size_t o, k;

	if (tag == 'n') {
		buf_init(&b, 4096);
		jw_init(&w, &b);
		jw_obj(&w);
		jw_key(&w, "s"); jw_cstr(&w, "note");
		jw_key(&w, "m"); jw_str(&w, (const char *)p, n);
		jw_obj_end(&w);
		if (jw_finish(&w) == 0 && buf_add(&b, "\n", 1) == 0)
			js_line(s, b.p, b.len);
		buf_free(&b);
		return;
	}
	while (n > 0) {
		k = n < JOBX_REC_MAX ? n : JOBX_REC_MAX;
		o = (size_t)snprintf(line, sizeof(line), "{\"s\":\"%s\",\"b\":\"",
		    tag == 'e' ? "err" : "out");
		o += b64_encode(p, k, line + o);
		line[o++] = '"';
		line[o++] = '}';
		line[o++] = '\n';
		js_line(s, line, o);
		p += k;
		n -= k;
	}
}

static void
raw_one(struct jstream *s, const unsigned char *p, size_t n)
{
	js_one(s, 'o', p, n);
}

/* The last line: exec's exit line, or an error when the exit is lost. */
static void
js_exit(struct jstream *s, const struct jobx_end *e)
{
	struct buf b;
	long long code = e->exit_code, sig = e->sig;
	long long dur = e->ended_ms >= 0 && e->started_ms >= 0 ?
	    e->ended_ms - e->started_ms : 0;

	buf_init(&b, 1024);
	if (!e->have_exit) {
		ign(buf_addf(&b, "{\"error\":{\"code\":\"exit_unknown\",\"message\":"
		    "\"job %s ended without recording its exit status (its "
		    "wrapper was killed): its exit status is unknown\"}}\n", s->id));
		js_line(s, b.p, b.len);
		buf_free(&b);
		return;
	}
	if (e->timed_out) {
		code = 124;
		sig = -1;
	} else if (sig > 0)
		code = 128 + sig;
	ign(buf_addf(&b, "{\"exit\":%lld,\"timed_out\":%s,\"duration_ms\":%lld,"
	    "\"dropped_bytes\":%lld,\"signal\":", code, e->timed_out ? "true" :
	    "false", dur < 0 ? 0 : dur, e->dropped));
	if (sig > 0)
		ign(buf_addf(&b, "%lld", sig));
	else
		ign(buf_addstr(&b, "null"));
	ign(buf_addf(&b, ",\"oom_killed\":%s}\n", e->oom ? "true" : "false"));
	js_line(s, b.p, b.len);
	buf_free(&b);
}

static void js_pump(void *);

#define JOBX_REMOVED	"{\"error\":{\"code\":\"not_found\",\"message\":" \
	"\"the job was removed while its output was streamed\"}}\n"

static void
js_resume(void *arg)
{
	js_pump(arg);
}

/* Sends what the file holds past s->off; ends the stream, or waits. */
static void
js_pump(void *arg)
{
	struct jstream *s = arg;
	struct jobx_end e;
	unsigned char *p;
	size_t got, used;
	int ended = 0, have, turns;

	s->timer = 0;
	if (s->gone)
		return;
	for (turns = 0; turns < 4; turns++) {
		if (conn_stream_pending(s->c) >= CONN_STREAM_HIGH) {
			conn_on_drain(s->c, js_resume, s);
			return;
		}
		memset(&e, 0, sizeof(e));
		have = s->state(s->id, &e) == 0;
		ended = !have || !e.running;
		p = read_at(s->path, s->off, JOBX_READ, &got);
		if (s->split)
			used = frames_each(p, got, js_one, s);
		else {
			/* a job still writing: not a cut UTF-8 character */
			used = got;
			if (used > 0)
				raw_one(s, p, used);
		}
		free(p);
		s->off += (long long)used;
		if (s->failed || s->gone)
			break;
		if (got < JOBX_READ && (used == got || !ended))
			break;		/* at the end of what is there */
	}
	if (s->gone)
		return;		/* the connection said so: js_gone frees s */
	if (s->failed) {
		js_gone(s);
		return;
	}
	if (ended && got < JOBX_READ) {
		if (have)
			js_exit(s, &e);
		else
			js_line(s, JOBX_REMOVED, strlen(JOBX_REMOVED));
		if (s->gone)
			return;
		conn_stream_end(s->c);
		free(s->path);
		free(s);
		nstreams--;
		return;
	}
	s->timer = ev_timer_add(got >= JOBX_READ ? 0 : JOBX_TICK_MS, js_pump, s);
}

void
jobx_http_stream(struct conn *c, const char *id, const char *path, int split,
    long long offset, jobx_state_fn state)
{
	struct jstream *s;

	if (nstreams >= JOBX_MAX_STREAMS) {
		conn_reply_error(c, 429, "busy", "%d job streams are open (the "
		    "most at once)", JOBX_MAX_STREAMS);
		return;
	}
	s = xcalloc(1, sizeof(*s));
	s->c = c;
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->path = xstrdup(path);
	s->split = split;
	s->off = offset;
	s->state = state;
	nstreams++;
	if (conn_stream_begin(c, 200, "application/x-ndjson", -1, NULL) == -1) {
		js_gone(s);
		return;
	}
	conn_on_gone(c, js_gone, s);
	s->timer = ev_timer_add(0, js_pump, s);
}
