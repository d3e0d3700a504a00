/*
 * pktline.c: the receive-pack command list reader and the report-status
 * writer (see pktline.h). A pkt-line is four hex digits giving its length
 * (those four included) then the payload; "0000" is a flush. The request
 * is `*shallow (command-list | push-cert)`: shallow lines are skipped, a
 * signed push (push-cert) is refused, since its commands sit inside the
 * certificate and a reader that skipped it would miss them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pktline.h"
#include "strnum.h"
#include "xmalloc.h"

void
pktl_init(struct pktl *p)
{
	memset(p, 0, sizeof(*p));
}

void
pktl_free(struct pktl *p)
{
	free(p->cmd);
	memset(p, 0, sizeof(*p));
}

/* Length of the object id at s (40 or 64 hex digits followed by a space), or 0. */
static size_t
oid_len(const char *s, size_t n, int *zero)
{
	size_t i, want;

	for (i = 0; i < n && strnum_hexdigit((unsigned char)s[i]) >= 0; i++)
		;
	want = i;
	if ((want != 40 && want != 64) || i >= n || s[i] != ' ')
		return 0;
	*zero = 1;
	for (i = 0; i < want; i++)
		if (s[i] != '0')
			*zero = 0;
	return want;
}

int
pktl_ref_ok(const char *r, size_t n)
{
	size_t i, comp = 0;	/* start of the current component */

	if (n < 6 || n > PKTL_MAX_REF || memcmp(r, "refs/", 5) != 0)
		return 0;
	if (r[n - 1] == '/' || r[n - 1] == '.')
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)r[i];
		if (c < 0x20 || c == 0x7f || strchr(" ~^:?*[\\", c) != NULL)
			return 0;
		if (c == '.' && (i == comp || (i + 1 < n && r[i + 1] == '.')))
			return 0;
		if (c == '@' && i + 1 < n && r[i + 1] == '{')
			return 0;
		if (c == '/') {
			if (i == comp)
				return 0;	/* "//" */
			if (i - comp >= 5 && memcmp(r + i - 5, ".lock", 5) == 0)
				return 0;
			comp = i + 1;
		}
	}
	if (n - comp >= 5 && memcmp(r + n - 5, ".lock", 5) == 0)
		return 0;
	return 1;
}

/* 1 if the space-separated list caps (n bytes) holds the token cap. */
static int
has_cap(const char *caps, size_t n, const char *cap)
{
	size_t cl = strlen(cap), i = 0, j;

	while (i < n) {
		for (j = i; j < n && caps[j] != ' '; j++)
			;
		if (j - i == cl && memcmp(caps + i, cap, cl) == 0)
			return 1;
		i = j + 1;
	}
	return 0;
}

static int
fail(struct pktl *p, const char *why)
{
	snprintf(p->err, sizeof(p->err), "%s", why);
	return PKTL_ERR;
}

/* One command (payload without its length, trailing LF removed). */
static int
command(struct pktl *p, const char *body, size_t o, size_t n)
{
	const char *s = body + o, *nul;
	size_t ol, nl, ro, rl;
	int zo, zn;
	struct pktl_cmd *c;

	if ((ol = oid_len(s, n, &zo)) == 0 || (nl = oid_len(s + ol + 1, n - ol - 1, &zn)) != ol)
		return fail(p, "malformed push command (want: old-id new-id ref)");
	ro = ol + 1 + nl + 1;
	nul = memchr(s + ro, '\0', n - ro);
	rl = nul != NULL ? (size_t)(nul - (s + ro)) : n - ro;
	if (nul != NULL) {
		if (p->ncmd != 0)
			return fail(p, "capabilities after a NUL are allowed on the first command only");
		p->caps_o = (uint32_t)(o + ro + rl + 1);
		p->caps_l = (uint32_t)(n - ro - rl - 1);
		if (memchr(body + p->caps_o, '\0', p->caps_l) != NULL)
			return fail(p, "NUL byte in the capabilities");
		p->sideband = has_cap(body + p->caps_o, p->caps_l, "side-band-64k");
		p->report = has_cap(body + p->caps_o, p->caps_l, "report-status") ||
		    has_cap(body + p->caps_o, p->caps_l, "report-status-v2");
	}
	if (!pktl_ref_ok(s + ro, rl))
		return fail(p, "bad ref name in push command");
	if (zo && zn)
		return fail(p, "push command with both ids zero");
	if (p->ncmd >= PKTL_MAX_CMDS)
		return fail(p, "more than 10000 push commands");
	if (p->ncmd == p->capcmd) {
		p->capcmd = p->capcmd ? p->capcmd * 2 : 16;
		p->cmd = xreallocarray(p->cmd, p->capcmd, sizeof(*p->cmd));
	}
	c = &p->cmd[p->ncmd++];
	c->ref_o = (uint32_t)(o + ro);
	c->ref_l = (uint32_t)rl;
	c->create = (uint8_t)zo;
	c->del = (uint8_t)zn;
	return PKTL_MORE;
}

int
pktl_feed(struct pktl *p, const char *body, size_t len, int eof)
{
	size_t l, n;
	int i, d;

	if (p->err[0] != '\0')
		return PKTL_ERR;
	for (;;) {
		if (p->pos + 4 > len) {
			if (p->pos + 4 > PKTL_MAX_BYTES)
				return fail(p, "push command list longer than 64 KiB");
			if (eof)
				return fail(p, p->pos == len ? "push command list without its flush" :
				    "truncated pkt-line length");
			return PKTL_MORE;
		}
		for (l = 0, i = 0; i < 4; i++) {
			if ((d = strnum_hexdigit((unsigned char)body[p->pos + (size_t)i])) < 0)
				return fail(p, "bad pkt-line length (not hex)");
			l = l * 16 + (size_t)d;
		}
		if (l == 0) {
			p->pos += 4;
			p->probe = p->ncmd == 0;
			return PKTL_DONE;
		}
		if (l <= 4 || l > PKTL_MAX_PKT)
			return fail(p, l <= 4 ? "bad pkt-line length (special or empty packet)" :
			    "bad pkt-line length (over 65520)");
		if (p->pos + l > PKTL_MAX_BYTES)
			return fail(p, "push command list longer than 64 KiB");
		if (p->pos + l > len) {
			if (eof)
				return fail(p, "truncated pkt-line");
			return PKTL_MORE;
		}
		n = l - 4;
		if (body[p->pos + 4 + n - 1] == '\n')
			n--;
		if (n >= 8 && memcmp(body + p->pos + 4, "shallow ", 8) == 0 && p->ncmd == 0) {
			size_t k;
			if (n - 8 != 40 && n - 8 != 64)
				return fail(p, "malformed shallow line");
			for (k = 12; k < 4 + n; k++)
				if (strnum_hexdigit((unsigned char)body[p->pos + k]) < 0)
					return fail(p, "malformed shallow line");
		} else if (n >= 9 && memcmp(body + p->pos + 4, "push-cert", 9) == 0 && p->ncmd == 0)
			return fail(p, "signed pushes (push-cert) are not supported under push rules");
		else if (command(p, body, p->pos + 4, n) == PKTL_ERR)
			return PKTL_ERR;
		p->pos += l;
	}
}

/* Appends one pkt-line holding s[0..n). */
static int
put(struct buf *out, int band, const char *s, size_t n)
{
	char hdr[6];
	size_t l = 4 + (band ? 1 : 0) + n;

	snprintf(hdr, sizeof(hdr), "%04zx", l);
	if (band)
		hdr[4] = (char)band;
	return buf_add(out, hdr, band ? 5 : 4) | buf_add(out, s, n);
}

int
pktl_report(const struct pktl *p, const char *body, const char *const *why, struct buf *out)
{
	struct buf in;
	size_t i, o;
	int rc = 0;

	buf_init(&in, out->max);
	rc |= put(&in, 0, "unpack ok\n", 10);
	for (i = 0; i < p->ncmd && rc == 0; i++) {
		const char *w = why[i] != NULL ? why[i] : "refused";
		size_t wl = strlen(w), l = 3 + p->cmd[i].ref_l + 1 + wl + 1;

		if (l > PKTL_MAX_PKT - 5 || memchr(w, '\n', wl) != NULL) {
			rc = -1;
			break;
		}
		/* the pkt-line "ng <ref> <why>\n", written in pieces */
		rc |= buf_addf(&in, "%04zx", l + 4) | buf_add(&in, "ng ", 3) |
		    buf_add(&in, body + p->cmd[i].ref_o, p->cmd[i].ref_l) | buf_add(&in, " ", 1) |
		    buf_add(&in, w, wl) | buf_add(&in, "\n", 1);
	}
	rc |= buf_add(&in, "0000", 4);
	if (rc == 0 && !p->sideband)
		rc = buf_add(out, in.p, in.len);
	else if (rc == 0) {
		for (o = 0; o < in.len && rc == 0; o += PKTL_MAX_PKT - 5)
			rc = put(out, 1, in.p + o, in.len - o < PKTL_MAX_PKT - 5 ?
			    in.len - o : PKTL_MAX_PKT - 5);
		rc |= buf_add(out, "0000", 4);
	}
	buf_free(&in);
	return rc == 0 ? 0 : -1;
}
