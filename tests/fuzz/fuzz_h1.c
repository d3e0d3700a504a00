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

#include "h1.h"
#include "llhttp.h"

/* The head limit of the gateway and the orchestrator (32 KiB). */
#define FUZZ_H1_MAX	32768
/* Fields kept per head: more are counted but not cross-checked. */
#define FUZZ_H1_FIELDS	64

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

static void
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
		return;
	st = h1_version(ps.http_major, ps.http_minor, err, sizeof(err));
	if (st != 0 && st != 505)
		abort();
	verdict(st);
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
	st = h1_framing(ncl, nte, nte ? te : NULL, nte ? tel : 0, err, sizeof(err));
	if (st != 0 && st != 400 && st != 501)
		abort();
	if (st != 0 && err[0] == '\0')
		abort();
	verdict(st);
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
	if (r > 0)
		head(p, (size_t)r);
	return 0;
}
