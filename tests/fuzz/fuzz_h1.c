/*
 * fuzz_h1.c: the shared HTTP/1 head rules (common/h1.c) over any bytes, as
 * every daemon applies them: where a head ends (h1_head_end, at a large
 * limit and at a limit of the input's own length), then, for a head,
 * llhttp's strict read of it with each field through the token and value
 * grammar, the hop-by-hop names, the Connection lists, the body framing
 * and the version rule, and the status text of every verdict. Its corpus
 * is seeded from the proxy's, the gateway's and the orchestrator's HTTP
 * corpora (proxy_request, gw_http, orch_http).
 *
 * The same head then goes through the head store every daemon reads with
 * (h1head.c), as a request and as a response: a head it accepts must be
 * one llhttp's plain read, h1_version and h1_framing accept too; its
 * fields must be the head's field lines scanned without llhttp (names,
 * values without OWS, in order), and h1head_count and h1head_get must
 * answer as a naive scan of them; written back (h1head_write) it must
 * read again to the same method, target, status and fields; with the
 * hop-by-hop fields stripped, none is left that h1_hop_name or a
 * Connection field names, and it still reads.
 * The bytes after the head go through as its body, as a reply reader
 * takes them (orchestrator/lib/agentc.c, the gateway): h1head_body then
 * h1head_finish for the close, whole and split in two where the input's
 * first byte says, to the same body, the same end and the same verdict.
 *
 * Besides the sanitizers it checks what h1.h promises, aborting when a
 * promise breaks: a head's length is within the input and the limit and
 * ends with an empty line (at a limit of 32 KiB, of the input's length
 * and of one byte less, where a head of exactly the limit is decided); the same head alone gives the same length, one
 * byte less gives "more"; a verdict is one of the statuses h1.h names and
 * has a text; a Connection list that "has" a token holds it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "h1.h"
#include "h1head.h"
#include "llhttp.h"

/* The head limit of the gateway and the orchestrator (32 KiB). */
#define FUZZ_H1_MAX	32768
/* Fields kept per head: more are counted but not cross-checked. */
#define FUZZ_H1_FIELDS	64
/* The head store's field-line limit (the proxy's and the gateway's). */
#define FUZZ_H1_LINES	100

struct fh {
	const char	*name[FUZZ_H1_FIELDS];
	size_t		 nl[FUZZ_H1_FIELDS];
	const char	*val[FUZZ_H1_FIELDS];
	size_t		 vl[FUZZ_H1_FIELDS];
	int		 n;		/* fields kept */
	int		 in_value;
	int		 done;
};

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* llhttp hands a field in one piece when the whole head is in one buffer. */
static int
cb_field(llhttp_t *p, const char *at, size_t len)
{
	struct fh *f = p->data;

	if (f->in_value || f->n == 0 || f->name[f->n - 1] + f->nl[f->n - 1] != at) {
		if (f->n == FUZZ_H1_FIELDS)
			return 0;
		f->name[f->n] = at;
		f->nl[f->n] = len;
		f->val[f->n] = at;
		f->vl[f->n] = 0;
		f->n++;
		f->in_value = 0;
		return 0;
	}
	f->nl[f->n - 1] += len;
	return 0;
}

static int
cb_value(llhttp_t *p, const char *at, size_t len)
{
	struct fh *f = p->data;

	if (f->n == 0)
		return 0;
	if (!f->in_value) {
		f->val[f->n - 1] = at;
		f->vl[f->n - 1] = 0;
		f->in_value = 1;
	}
	f->vl[f->n - 1] += len;
	return 0;
}

static int
cb_done(llhttp_t *p)
{
	struct fh *f = p->data;

	f->done = 1;
	return HPE_PAUSED;
}

static int
is_name(const struct fh *f, int i, const char *s)
{
	return f->nl[i] == strlen(s) && strncasecmp(f->name[i], s, f->nl[i]) == 0;
}

/* Whether v[0..vl) holds tok[0..tl) anywhere, case-insensitively. */
static int
holds(const char *v, size_t vl, const char *tok, size_t tl)
{
	size_t i;

	for (i = 0; tl <= vl && i + tl <= vl; i++)
		if (strncasecmp(v + i, tok, tl) == 0)
			return 1;
	return 0;
}

static void
verdict(int st)
{
	const char *r = h1_reason(st);

	if (r == NULL || r[0] == '\0')
		abort();
}

/* llhttp's plain read of p[0..n): 0 when it, the version and the framing accept it. */
static int
head(const char *p, size_t n)
{
	llhttp_settings_t s;
	llhttp_t ps;
	struct fh f;
	char err[128];
	const char *te = NULL;
	size_t tel = 0;
	int i, j, ncl = 0, nte = 0, st;

	memset(&f, 0, sizeof(f));
	llhttp_settings_init(&s);
	s.on_header_field = cb_field;
	s.on_header_value = cb_value;
	s.on_headers_complete = cb_done;
	llhttp_init(&ps, HTTP_REQUEST, &s);
	ps.data = &f;
	(void)llhttp_execute(&ps, p, n);
	if (!f.done)
		return 400;
	st = h1_version(ps.http_major, ps.http_minor, err, sizeof(err));
	if (st != 0 && st != 505)
		abort();
	verdict(st);
	if (st != 0)
		return st;
	for (i = 0; i < f.n; i++) {
		(void)h1_token_ok(f.name[i], f.nl[i]);
		(void)h1_value_ok(f.val[i], f.vl[i]);
		(void)h1_hop_name(f.name[i], f.nl[i]);
		if (is_name(&f, i, "content-length"))
			ncl++;
		if (is_name(&f, i, "transfer-encoding")) {
			nte++;
			te = f.val[i];
			tel = f.vl[i];
		}
		if (!is_name(&f, i, "connection"))
			continue;
		for (j = 0; j < f.n; j++) {
			if (f.nl[j] == 0)
				continue;
			if (h1_list_has(f.val[i], f.vl[i], f.name[j], f.nl[j]) &&
			    !holds(f.val[i], f.vl[i], f.name[j], f.nl[j]))
				abort();
		}
	}
	st = h1_framing(ps.http_minor, ncl, nte, nte ? te : NULL, nte ? tel : 0, err, sizeof(err));
	if (st != 0 && st != 400 && st != 501)
		abort();
	if (st != 0 && err[0] == '\0')
		abort();
	verdict(st);
	return st;
}

/* Whether a and b hold the same message head, field for field. */
static void
same(const struct h1head *a, const struct h1head *b)
{
	size_t i, j;

	if (a->method != b->method || a->status != b->status || a->url_l != b->url_l ||
	    memcmp(a->data.p + a->url_o, b->data.p + b->url_o, a->url_l) != 0)
		abort();
	for (i = j = 0; i < a->nh; i++) {
		const struct h1field *x = &a->h[i], *y;

		if (x->del)
			continue;
		if (j >= b->nh)
			abort();
		y = &b->h[j++];
		if (x->nl != y->nl || x->vl != y->vl ||
		    memcmp(a->data.p + x->no, b->data.p + y->no, x->nl) != 0 ||
		    memcmp(a->data.p + x->vo, b->data.p + y->vo, x->vl) != 0)
			abort();
	}
	if (j != b->nh)
		abort();
}

/*
 * The field lines of p[0..n), a head h1head_parse took, scanned without
 * llhttp: past any empty lines and the start line, each CRLF-ended line
 * up to the empty one is name ":" OWS value OWS (the store took no bare
 * LF, obs-fold or space before the colon). The store must hold exactly
 * these fields, in order: each name as written, each value without its
 * OWS, none more, none fewer.
 */
static void
fields_match(const struct h1head *a, const char *p, size_t n)
{
	const char *e = p + n, *l, *c, *v, *ve;
	size_t i = 0;

	while (e - p >= 2 && p[0] == '\r' && p[1] == '\n')
		p += 2;
	if ((l = memchr(p, '\n', (size_t)(e - p))) == NULL)
		abort();
	for (p = l + 1;; p = l + 1) {
		const struct h1field *h;

		l = memchr(p, '\n', (size_t)(e - p));
		if (l == NULL || l == p || l[-1] != '\r')
			abort();
		if (l - 1 == p)
			break;			/* the empty line */
		if ((c = memchr(p, ':', (size_t)(l - 1 - p))) == NULL || i >= a->nh)
			abort();
		for (v = c + 1; v < l - 1 && (*v == ' ' || *v == '\t'); v++)
			;
		for (ve = l - 1; ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--)
			;
		h = &a->h[i++];
		if (h->del || h->set ||
		    h->nl != (size_t)(c - p) || memcmp(a->data.p + h->no, p, h->nl) != 0 ||
		    h->vl != (size_t)(ve - v) || memcmp(a->data.p + h->vo, v, h->vl) != 0)
			abort();
	}
	if (i != a->nh)
		abort();
}

/* The head store's promises for the head p[0..n) read as type. */
static void
store(const char *p, size_t n, int type, int plain)
{
	struct h1head a, b;
	struct buf out;
	char err[128];
	const char *v;
	size_t i, k, vl;
	int st;

	h1head_init(&a, FUZZ_H1_MAX);
	h1head_init(&b, 2 * FUZZ_H1_MAX);
	buf_init(&out, 2 * FUZZ_H1_MAX + 1024);
	err[0] = '\0';
	st = h1head_parse(&a, type, p, n, FUZZ_H1_LINES, err, sizeof(err));
	if (st != 0 && st != 400 && st != 431 && st != 501 && st != 505)
		abort();
	if (st != 0 && err[0] == '\0')
		abort();
	if (st != 0)
		goto done;
	verdict(st);
	/* What the store accepts, a plain read of the same rules accepts. */
	if (type == HTTP_REQUEST && plain != 0)
		abort();
	for (i = 0; i < a.nh; i++) {
		const struct h1field *h = &a.h[i];

		if (!h1_token_ok(a.data.p + h->no, h->nl) ||
		    !h1_value_ok(a.data.p + h->vo, h->vl))
			abort();
	}
	fields_match(&a, p, n);
	/*
	 * The accessors against a naive scan of the stored fields (the raw
	 * field lines, by fields_match): for each
	 * field's name (and "host", which may be absent), h1head_count is the
	 * number of fields so called (case-insensitive) and h1head_get the
	 * first one's value.
	 */
	for (i = 0; i <= a.nh; i++) {
		char name[256];
		size_t j, nl, cnt = 0, first = 0;

		if (i < a.nh) {
			nl = a.h[i].nl;
			if (nl >= sizeof(name))
				continue;
			memcpy(name, a.data.p + a.h[i].no, nl);
		} else
			memcpy(name, "host", nl = 4);
		name[nl] = '\0';
		for (j = 0; j < a.nh; j++)
			if (!a.h[j].del && a.h[j].nl == nl &&
			    strncasecmp(a.data.p + a.h[j].no, name, nl) == 0 && cnt++ == 0)
				first = j;
		k = (size_t)-1;
		if ((size_t)h1head_count(&a, name, &k) != cnt || (cnt > 0 && k != first))
			abort();
		v = h1head_get(&a, name, &vl);
		if (cnt == 0 ? v != NULL :
		    v != a.data.p + a.h[first].vo || vl != a.h[first].vl)
			abort();
	}
	/* Written back, it reads again to the same head. */
	if (h1head_write(&a, NULL, 0, &out) == -1 ||
	    h1head_parse(&b, type, out.p, out.len, FUZZ_H1_LINES, err, sizeof(err)) != 0)
		abort();
	same(&a, &b);
	/* Stripped, no hop-by-hop field is left, and it still reads. */
	h1head_strip_hop(&a);
	for (i = 0; i < a.nh; i++) {
		const struct h1field *h = &a.h[i];

		if (h->del || h1head_is(&a, i, "host") ||
		    h1head_is(&a, i, "content-length") || h1head_is(&a, i, "transfer-encoding"))
			continue;
		if (h1_hop_name(a.data.p + h->no, h->nl))
			abort();
		for (k = 0; k < a.nh; k++)
			if (h1head_is(&a, k, "connection") &&
			    h1_list_has(a.data.p + a.h[k].vo, a.h[k].vl, a.data.p + h->no, h->nl))
				abort();
	}
	buf_reset(&out);
	if (h1head_write(&a, NULL, 0, &out) == -1 ||
	    h1head_parse(&b, type, out.p, out.len, FUZZ_H1_LINES, err, sizeof(err)) != 0)
		abort();
	same(&a, &b);
done:
	buf_free(&out);
	h1head_free(&a);
	h1head_free(&b);
}

/* The body's sink: decoded bytes kept, never an empty call. */
static int
sink(void *arg, const char *p, size_t n)
{
	if (n == 0)
		abort();
	return buf_add(arg, p, n) == -1 ? -1 : 0;
}

/* How the body p[0..n) after head h[0..hl) reads, fed at cut, then the close. */
struct fbody {
	struct buf	 dec;		/* decoded */
	size_t		 used;		/* bytes of the message */
	int		 bad;		/* h1head_body said -1 */
	int		 done;		/* whole before the close */
	int		 fin;		/* h1head_finish */
};

static int
body(const char *h, size_t hl, const char *p, size_t n, size_t cut, int type,
    struct fbody *f)
{
	struct h1head a;
	char err[128];
	size_t piece[2], i, off = 0;
	long u;

	memset(f, 0, sizeof(*f));
	buf_init(&f->dec, 1 << 20);
	h1head_init(&a, FUZZ_H1_MAX);
	a.on_body = sink;
	a.arg = &f->dec;
	if (h1head_parse(&a, type, h, hl, FUZZ_H1_LINES, err, sizeof(err)) != 0) {
		h1head_free(&a);
		return -1;
	}
	piece[0] = cut;
	piece[1] = n - cut;
	for (i = 0; i < 2 && !f->bad; i++) {
		if (a.msg_done) {
			/* over: nothing more is taken */
			if (h1head_body(&a, p + off, piece[i]) != 0)
				abort();
			break;
		}
		u = h1head_body(&a, p + off, piece[i]);
		if (u == -1) {
			f->bad = 1;
			break;
		}
		if (u < 0 || (size_t)u > piece[i] || ((size_t)u < piece[i] && !a.msg_done))
			abort();
		f->used += (size_t)u;
		off += piece[i];
	}
	f->done = a.msg_done;
	f->fin = h1head_finish(&a);
	/* whole stays whole; finish answers the same twice; a body never grows */
	if ((f->done && f->fin != 0) || (f->fin == 0) != (a.msg_done != 0) ||
	    h1head_finish(&a) != f->fin || (f->bad && f->fin == 0) || f->dec.len > n)
		abort();
	h1head_free(&a);
	return 0;
}

/* The body after a head: in one piece and in two, the same reading. */
static void
bodies(const char *h, size_t hl, const char *p, size_t n, int type)
{
	struct fbody one, two;
	size_t cut;

	if (body(h, hl, p, n, n, type, &one) == -1) {
		buf_free(&one.dec);
		return;
	}
	cut = n > 0 ? (unsigned char)h[0] * 7919u % (n + 1) : 0;
	if (body(h, hl, p, n, cut, type, &two) == -1 || one.bad != two.bad ||
	    (!one.bad && (one.used != two.used || one.done != two.done ||
	    one.fin != two.fin || one.dec.len != two.dec.len ||
	    (one.dec.len > 0 && memcmp(one.dec.p, two.dec.p, one.dec.len) != 0))))
		abort();
	buf_free(&one.dec);
	buf_free(&two.dec);
}

/* h1_head_end's promises for p[0..n) under max. */
static long
end(const char *p, size_t n, size_t max)
{
	long r = h1_head_end(p, n, max);

	if (r != H1_HEAD_MORE && r != H1_HEAD_BAD && r != H1_HEAD_LARGE && r <= 0)
		abort();
	if (r <= 0)
		return r;
	if ((size_t)r > n || (size_t)r > max || r < 4 ||
	    memcmp(p + r - 4, "\r\n\r\n", 4) != 0)
		abort();
	if (h1_head_end(p, (size_t)r, max) != r)
		abort();
	if (h1_head_end(p, (size_t)r - 1, max) != H1_HEAD_MORE)
		abort();
	return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	long r;

	verdict(400);
	verdict(431);
	r = end(p, size, FUZZ_H1_MAX);
	/* A limit of the input's own length and one byte less: the edge. */
	if (size > 0)
		(void)end(p, size, size);
	if (size > 1)
		(void)end(p, size, size - 1);
	if (r > 0) {
		int plain = head(p, (size_t)r);

		store(p, (size_t)r, HTTP_REQUEST, plain);
		store(p, (size_t)r, HTTP_RESPONSE, plain);
		bodies(p, (size_t)r, p + r, size - (size_t)r, HTTP_REQUEST);
		bodies(p, (size_t)r, p + r, size - (size_t)r, HTTP_RESPONSE);
	}
	return 0;
}
