/*
 * httpreq.h: one HTTP/1.1 request head as the proxy sees it, on the head
 * store every daemon shares (common/h1head.h: llhttp's strict read, the
 * rules of common/h1.h, finding, removing and adding fields, hop-by-hop
 * stripping, the body's parser). What is the proxy's own is here: the
 * target checked against the canonical CONNECT target (421) and made
 * canonical, CONNECT and upgrades, a credential injected and proved sent,
 * and the head rebuilt for the upstream with the proxy's own framing.
 * No I/O here, so it is unit-tested and fuzzed directly.
 */
#ifndef PROXY_HTTPREQ_H
#define PROXY_HTTPREQ_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "canon.h"
#include "h1head.h"

struct bgate;
struct sigv4_chunks;

#define HREQ_CRED_HELD	8	/* client fields carrying placeholders, at most (credreq.c) */

struct hreq {
	struct h1head	 hd;		/* the head and its body's parser (common/h1head.h) */
	size_t		 maxbytes;
	uint32_t	 path_o, path_l;	/* origin-form path in hd.data, set by check */
	uint8_t		 canon;		/* path_o/path_l hold the canonical target (hreq_canonicalize) */
	uint32_t	 cpath_l;	/* canon: the length of its path (a '?' and the query follow) */
	uint32_t	 raw_o, raw_l;	/* canon: the client's target (for the audit line) */
	int		 allow_connect;	/* CONNECT accepted (proxy side only) */
	/* Audit: set by hreq_inject. */
	uint8_t		 injected;	/* an addon injected a credential */
	uint8_t		 sent_cred;	/* hreq_build wrote it, non-empty (what the audit says) */
	char		 rule[64];
	char		 inj_name[64];	/* the injected header's name */
	/* Named credentials (credreq.c): the client's fields held out of the
	 * hook, the target sent upstream when a placeholder in its query was
	 * swapped (path_o stays the client's, for the audit line), and the
	 * names applied ("npm:swap,model:bearer"). */
	uint16_t	 cheld[HREQ_CRED_HELD];
	uint8_t		 ncheld;
	uint32_t	 up_o, up_l;
	char		 creds[256];
	uint8_t		 sent_named;	/* hreq_build wrote a head with them */
	/* Set by an addon (req:push_rules, req:refuse_graphql_mutations): decide on the body first. */
	struct bgate	*gate;
	/* Set by credreq.c: an aws-chunked body whose chunk signatures are
	 * signed again on the way (sigv4.h), and what goes upstream of it. */
	struct sigv4_chunks *s4c;
	struct buf	 s4out;
	/* Set by credreq.c: a SigV4 request without x-amz-content-sha256
	 * (a service other than S3), signed again over its body's SHA-256
	 * once the body is read (bodygate.h, the hash gate): the held
	 * Authorization's index in cheld plus one; 0: none. */
	uint8_t		 s4_body;
};

#define HREQ_NEED_MORE	0

void	hreq_init(struct hreq *, size_t maxbytes, size_t maxheaders);
void	hreq_free(struct hreq *);
/* Drops the chunk re-signer of the request (s4c), if any. */
void	hreq_chunks_free(struct hreq *);

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

/*
 * Replaces every header called name by one with value. -1 if name is not
 * a token or value holds CR, LF, NUL or another control byte (not HTAB).
 */
int	hreq_set(struct hreq *, const char *name, const char *value);
/* hreq_set that also marks the request as carrying an injected credential. */
int	hreq_inject(struct hreq *, const char *name, const char *value,
	    const char *rule);

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

#endif
