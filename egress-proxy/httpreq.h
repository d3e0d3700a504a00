/*
 * httpreq.h: one HTTP/1.1 request head as the proxy sees it: framed and
 * parsed strictly (llhttp, no lenient flags, plus the head rules every
 * daemon shares, common/h1.h: framing, grammar, hop-by-hop names),
 * checked against the canonical CONNECT target (421), edited (headers
 * set/removed/injected) and rebuilt for the upstream.
 * No I/O here, so it is unit-tested and fuzzed directly.
 */
#ifndef PROXY_HTTPREQ_H
#define PROXY_HTTPREQ_H

#include <stddef.h>
#include <stdint.h>
#include <llhttp.h>

#include "buf.h"
#include "canon.h"

struct bgate;

struct hhdr {
	uint32_t	 no, nl;	/* name offset/length in data */
	uint32_t	 vo, vl;	/* value offset/length */
	uint8_t		 del;		/* removed */
	uint8_t		 set;		/* added by the proxy (hreq_set), not the client's */
};

struct hreq {
	llhttp_t	 p;		/* also parses the body (hreq_body) */
	struct buf	 data;		/* url, names, values (copied) */
	struct hhdr	*h;
	size_t		 nh, caph, maxh;
	size_t		 maxbytes;
	uint32_t	 url_o, url_l;
	uint32_t	 path_o, path_l;	/* origin-form path, set by check */
	uint8_t		 canon;		/* path_o/path_l hold the canonical target (hreq_canonicalize) */
	uint32_t	 cpath_l;	/* canon: the length of its path (a '?' and the query follow) */
	uint32_t	 raw_o, raw_l;	/* canon: the client's target (for the audit line) */
	int		 in_value;	/* parser: last callback was a value */
	int		 too_many;
	int		 allow_connect;	/* CONNECT accepted (proxy side only) */
	uint8_t		 method;	/* llhttp_method_t */
	uint8_t		 keepalive;	/* client wants the connection kept */
	uint8_t		 chunked;	/* body is chunked */
	uint8_t		 has_cl;
	uint64_t	 content_length;
	int		 body_done;	/* hreq_body saw the message end */
	/* Body sink, called with decoded body bytes. Returns 0 or -1. */
	int		(*on_body)(void *, const char *, size_t);
	void		*arg;
	/* Audit: set by hreq_inject. */
	uint8_t		 injected;	/* an addon injected a credential */
	uint8_t		 sent_cred;	/* hreq_build wrote it, non-empty (what the audit says) */
	char		 rule[64];
	char		 inj_name[64];	/* the injected header's name */
	/* Set by an addon (req:push_rules, req:refuse_graphql_mutations): decide on the body first. */
	struct bgate	*gate;
};

#define HREQ_NEED_MORE	0

void	hreq_init(struct hreq *, size_t maxbytes, size_t maxheaders);
void	hreq_free(struct hreq *);

/*
 * Parses a complete head (from h1_head_end, common/h1.h). 0, or an HTTP status to
 * answer (400, 431, 501) with a reason in err.
 */
int	hreq_parse(struct hreq *, const char *head, size_t len, char *err,
	    size_t errlen);

/*
 * Checks the request target. With tunnel (the canonical target of an
 * intercepted CONNECT) the request must be origin-form or an https:// URL
 * naming that target; with tunnel NULL it is a plain proxy request whose
 * absolute http:// URL names the target, written to *url.
 * 0, 400 (malformed), or 421 (names another host). Sets path_o/path_l.
 */
int	hreq_check_target(struct hreq *, const struct target *tunnel,
	    struct target *url, char *err, size_t errlen);

/*
 * Replaces the request target (after hreq_check_target) by its canonical
 * form (reqcanon.h), which hreq_build then sends: what an addon judged is
 * what the upstream runs. Idempotent. 0, or -1 with the reason in err
 * (the target is left as it was).
 */
int	hreq_canonicalize(struct hreq *, char *err, size_t errlen);

/* The first value of name (case-insensitive), or NULL; *len its length. */
const char *hreq_get(struct hreq *, const char *name, size_t *len);
/* Removes every header called name; returns how many. */
int	hreq_remove(struct hreq *, const char *name);
/*
 * Replaces every header called name by one with value. -1 if name is not
 * a token or value holds CR, LF, NUL or another control byte (not HTAB).
 */
int	hreq_set(struct hreq *, const char *name, const char *value);
/* hreq_set that also marks the request as carrying an injected credential. */
int	hreq_inject(struct hreq *, const char *name, const char *value,
	    const char *rule);

/*
 * Removes the client's hop-by-hop headers: Connection, Keep-Alive, TE,
 * Trailer, Upgrade, Proxy-* and every header the client's Connection
 * names (not Host, Content-Length or Transfer-Encoding, which the proxy
 * rewrites itself). Called before the addon sees the request, so that a
 * header the addon sets or injects afterwards is never taken for one.
 */
void	hreq_strip_hop(struct hreq *);
/*
 * 1 when the injected credential header is present and carries a value:
 * not empty or blank, and for Authorization-like headers a scheme with a
 * credential after it ("Bearer " alone is none). 0 otherwise (or nothing
 * was injected).
 */
int	hreq_cred_ok(const struct hreq *);

/*
 * Rebuilds the head for the upstream into out: request line (origin
 * form, HTTP/1.1), Host = t->hosthdr, the remaining headers without
 * hop-by-hop ones (and the client's headers named by Connection; never a
 * header the proxy set) and Proxy-*, then the framing. Sets r->sent_cred
 * when the injected credential is among the headers written and
 * hreq_cred_ok. 0 or -1 (out full).
 */
int	hreq_build(struct hreq *, const struct target *t, struct buf *out);

/*
 * Feeds body bytes (after the head) through the parser; decoded body goes
 * to on_body. Returns the bytes consumed (stops right after the end of
 * the message, setting body_done), or -1 on bad framing.
 */
long	hreq_body(struct hreq *, const char *p, size_t n);

/* The method name ("GET"). */
const char *hreq_method(const struct hreq *);

#endif
