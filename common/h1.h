/*
 * h1.h: the HTTP/1.1 rules every daemon applies to a message head, in one
 * place: where a head ends and what framing is refused on the way, the
 * token and field-value grammar, Connection lists and hop-by-hop names,
 * the body framing a head may declare, and the status texts. Each rule is
 * decided once, with RFC 9112/9110 and the reason beside it in h1.c; the
 * proxy (egress-proxy/httpreq.c), the gateway (gateway/head.c) and the agent
 * (agent/http.c), all three through the head store h1head.c on llhttp, and
 * the orchestrator (orchestrator/http/http.c) apply them and keep only what
 * is theirs. The agent takes the head end, the grammar, h1_framing,
 * h1_version (505) and the status texts; it forwards nothing, so the
 * Connection lists and hop-by-hop names are not its concern. No I/O, no
 * library: linked into the static agent too (as h1head.c and llhttp's C
 * sources). Table-tested in tests/unit/test_h1.c.
 */
#ifndef COMMON_H1_H
#define COMMON_H1_H

#include <stddef.h>

/*
 * At most this many empty lines (CRLF) may come before a head: RFC 9112
 * 2.2 asks a server to skip "at least one" (a client's stray CRLF after a
 * body); a few more cost nothing, an endless stream of them is refused.
 */
#define H1_LEADING_CRLF_MAX	4

/* What h1_head_end found, besides a head's length (> 0). */
#define H1_HEAD_MORE	0	/* no end yet, more bytes may complete it */
#define H1_HEAD_BAD	(-1)	/* bad framing: 400 */
#define H1_HEAD_LARGE	(-2)	/* no end within max bytes: 431 */

/*
 * Finds the end of a head in p[0..n): its length through the empty line
 * (leading empty lines included, at most H1_LEADING_CRLF_MAX of them),
 * or H1_HEAD_MORE, H1_HEAD_BAD (bare CR or LF, obs-fold, NUL, only empty
 * lines) or H1_HEAD_LARGE (a head, leading empty lines included, may be
 * max bytes; n >= max bytes without its end can never fit).
 */
long	h1_head_end(const char *p, size_t n, size_t max);

/* Whether s[0..n) is a token (RFC 9110 5.6.2), n > 0. */
int	h1_token_ok(const char *s, size_t n);
/*
 * Whether v[0..n) may be a field value (RFC 9110 5.5): no control byte
 * but HTAB, no DEL. Bytes >= 0x80 (obs-text) pass.
 */
int	h1_value_ok(const char *v, size_t n);

/*
 * Whether the comma-separated list v[0..len) holds tok[0..tl) as one of
 * its elements (case-insensitive, optional whitespace around each;
 * RFC 9110 5.6.1). Empty elements are skipped, never matched.
 */
int	h1_list_has(const char *v, size_t len, const char *tok, size_t tl);

/*
 * Whether a field called name[0..nl) is hop-by-hop by its name alone
 * (RFC 9110 7.6.1): Connection, Keep-Alive, TE, Trailer, Upgrade, and
 * every Proxy-* field (Proxy-Connection, Proxy-Authorization, ...: meant
 * for a proxy, never forwarded). Host, Content-Length and
 * Transfer-Encoding are not: each daemon rewrites its framing itself.
 */
int	h1_hop_name(const char *name, size_t nl);

/*
 * The body framing a request or response head of HTTP/1.minor declares,
 * from how many Content-Length and Transfer-Encoding fields it has and the
 * value of its Transfer-Encoding (te, tel; NULL when nte is 0): 0 when it
 * is none, one Content-Length or exactly "chunked", else the status to
 * answer with the reason in err: 400 (two lengths, a length and a coding,
 * several Transfer-Encoding fields, chunked not the final coding, any
 * Transfer-Encoding in an HTTP/1.0 message) or 501 (a coding before
 * chunked that the daemons do not decode). RFC 9112 6.1, 6.3.
 */
int	h1_framing(int minor, int ncl, int nte, const char *te, size_t tel, char *err,
	    size_t errlen);

/*
 * The protocol version of a request: 0 for HTTP/1.x, else 505 with the
 * reason in err (RFC 9110 15.6.6: the major version is not served; a
 * request line without a version, HTTP/0.9, included).
 */
int	h1_version(int major, int minor, char *err, size_t errlen);

/*
 * Whether the first line of a head (a request: "METHOD TARGET HTTP/d.d",
 * two spaces exactly; else "HTTP/d.d ...") names its version in the
 * grammar of RFC 9112 2.3,
 * after up to the leading empty lines h1_head_end allows. A version
 * llhttp cannot read (HTTP/1.2, 9.9) but so written is one not served,
 * 505, not a malformed line.
 */
int	h1_version_token(const char *head, size_t len, int request);

/*
 * The reason phrase of a status, RFC 9110 15 ("Not Found"); "Unknown"
 * for a status the table does not hold.
 */
const char *h1_reason(int status);

#endif
