/*
 * sigv4.h: AWS Signature Version 4, the pieces a proxy needs to re-sign a
 * request that a sandbox signed with a placeholder key (sigv4.c): read the
 * client's Authorization, build the canonical request from what goes
 * upstream, verify the client's signature with the key it used, sign again
 * with the real one, and rewrite the chunk signatures of a streaming
 * (aws-chunked) body on the way.
 *
 * The rules are AWS's ("Create a signed AWS API request", "Signature
 * calculations for the Authorization header: transferring payload in
 * multiple chunks"), as the SDKs implement them:
 *  - the canonical URI: S3 signs the path exactly as sent; every other
 *    service signs it with dot segments removed and percent-encoded once
 *    more (an escape %XX becomes %25XX);
 *  - the canonical query: each name and value decoded and encoded again
 *    with only A-Z a-z 0-9 - _ . ~ left bare (upper-case hex), sorted by
 *    name then value; a '+' is a plus sign, never a space;
 *  - the canonical headers: the signed names (lower case, sorted), each
 *    value with outer blanks cut and inner runs of blanks made one space,
 *    repeated fields joined with ',';
 *  - the payload: x-amz-content-sha256 as sent (S3) or the hash given.
 * Anything these rules cannot read (a malformed escape, a signed header
 * that is absent, names out of order) is refused, never guessed: the
 * caller answers the client rather than send a request AWS would read
 * another way.
 *
 * No I/O, no state: unit-tested (tests/unit/test_proxy_sigv4.c, against
 * vectors from AWS's test suite and botocore) and fuzzed
 * (tests/fuzz/fuzz_proxy_sigv4.c).
 */
#ifndef PROXY_SIGV4_H
#define PROXY_SIGV4_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define SIGV4_AKID_MAX		128	/* access key ids are 16-128 characters */
#define SIGV4_NAME_MAX		63	/* region and service names */
#define SIGV4_SH_MAX		2048	/* the SignedHeaders list */
#define SIGV4_SHN_MAX		64	/* signed headers in one request */
#define SIGV4_CREQ_MAX		((size_t)64 * 1024)	/* a canonical request */
/*
 * Path segments a non-S3 canonical URI keeps (after "." and ".." are
 * removed): canon_uri holds each segment's offset and length on the stack,
 * 2 x 8 KiB at this size. AWS's REST paths have a handful of segments, and
 * S3 (whose keys may have many) is signed as sent, without them; a path
 * with more is refused ("the path cannot be signed").
 */
#define SIGV4_SEGS_MAX		1024
/*
 * Largest chunk of a streaming upload held to be signed again: the new
 * signature goes before the data it covers. The SDKs send 64 KiB (S3's
 * example, the Java SDK 128 KiB); 8 MiB leaves room and bounds a
 * connection's memory.
 */
#define SIGV4_CHUNK_MAX		((size_t)8 * 1024 * 1024)

/* The Authorization header of a request signed with AWS4-HMAC-SHA256. */
struct sigv4_auth {
	char	akid[SIGV4_AKID_MAX + 1];
	char	date[9];			/* YYYYMMDD */
	char	region[SIGV4_NAME_MAX + 1];
	char	service[SIGV4_NAME_MAX + 1];
	char	signed_headers[SIGV4_SH_MAX];	/* as sent: lower case, ';', sorted */
	char	sig[65];			/* lower-case hex */
};

/* One field of the request as it goes upstream (not NUL-terminated). */
struct sigv4_field {
	const char	*name, *value;
	size_t		 nl, vl;
};

struct sigv4_req {
	const char			*method;
	const char			*target;	/* origin form: path[?query] */
	size_t				 tl;
	const struct sigv4_field	*f;
	size_t				 nf;
	const char			*payload_hash;	/* hex, UNSIGNED-PAYLOAD, STREAMING-... */
	int				 s3;		/* the path as sent (S3) */
};

/* Reads an Authorization value; 0, or -1 with err. */
int	sigv4_auth_parse(const char *v, size_t n, struct sigv4_auth *, char *err,
	    size_t errlen);
/*
 * Adds name (lower case) to the sorted SignedHeaders list sh (cap bytes
 * with its NUL) where it sorts; 0 (also when it is there), -1 no room.
 */
int	sigv4_signed_add(char *sh, size_t cap, const char *name);
/* Removes name from the SignedHeaders list sh: 1, or 0 (it was not there). */
int	sigv4_signed_del(char *sh, const char *name);
/* Writes the Authorization value for a with its signature; 0, or -1 (too long). */
int	sigv4_auth_write(const struct sigv4_auth *, const char *akid, const char *sig,
	    char *out, size_t outlen);
/* The canonical request of r over signed (a SignedHeaders list); 0, or -1 with err. */
int	sigv4_canonical(const struct sigv4_req *r, const char *signed_headers,
	    struct buf *out, char *err, size_t errlen);
/*
 * A presigned URL's query q (n bytes, after the '?'): 1 when it is none
 * (no X-Amz-Signature); 0 with a (X-Amz-Credential's key id and scope,
 * X-Amz-SignedHeaders, X-Amz-Signature, read by sigv4_auth_parse's rules)
 * and amzdate (X-Amz-Date, of the scope's day); -1 with err when one of
 * those is missing, repeated or malformed; -2 with err when
 * X-Amz-Algorithm is not AWS4-HMAC-SHA256 (SigV4a).
 */
int	sigv4_presign_parse(const char *q, size_t n, struct sigv4_auth *, char amzdate[17],
	    char *err, size_t errlen);
/*
 * The presigned target (tl bytes, with a query) to sign again into out:
 * X-Amz-Credential's key id replaced by akid (percent-encoded), the rest
 * of it and every other parameter as sent, X-Amz-Signature left out (the
 * caller appends the new one). 0, or -1 (no query, no room).
 */
int	sigv4_presign_target(const char *target, size_t tl, const char *akid, struct buf *out);
/* The signing key of secret for date/region/service. */
void	sigv4_key(const char *secret, const char *date, const char *region,
	    const char *service, unsigned char key[32]);
/* "date/region/service/aws4_request" into out (at least 200 bytes). */
void	sigv4_scope(const struct sigv4_auth *, char *out, size_t outlen);
/* The signature (hex) of a canonical request, signed at amzdate (YYYYMMDDTHHMMSSZ). */
void	sigv4_sign(const unsigned char key[32], const char *amzdate, const char *scope,
	    const char *creq, size_t creql, char hex[65]);
/* One chunk's signature, chained from prev (the seed signature for the first). */
void	sigv4_chunk_sign(const unsigned char key[32], const char *amzdate,
	    const char *scope, const char *prev, const unsigned char hash[32], char hex[65]);

/*
 * A streaming body (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) signed again on
 * its way: each chunk "hex-size;chunk-signature=SIG\r\nDATA\r\n", the last
 * of size 0, optionally followed by trailer lines and "\r\n". Each chunk's
 * signature is checked against the client's key chain (ckey from the
 * client's seed signature) and replaced by the real key's chain (key from
 * the new seed); sizes and framing stay as sent, so Content-Length and
 * x-amz-decoded-content-length hold.
 */
struct sigv4_chunks {
	unsigned char	 ckey[32], key[32];
	char		 amzdate[17], scope[200];
	char		 cprev[65], prev[65];
	int		 state;
	uint64_t	 left;		/* data bytes of the current chunk still to come */
	uint64_t	 size;		/* the current chunk's size */
	char		 line[256];	/* the chunk header being read */
	size_t		 linelen;
	char		 csig[65];	/* the client's signature of the current chunk */
	struct buf	 data;		/* the current chunk's data */
};

void	sigv4_chunks_init(struct sigv4_chunks *, const unsigned char ckey[32],
	    const char *cseed, const unsigned char key[32], const char *seed,
	    const char *amzdate, const char *scope);
void	sigv4_chunks_free(struct sigv4_chunks *);
/*
 * Reads n bytes of the body, appending what can go upstream to out. 0;
 * 1 once the body is complete (bytes after it are an error); -1 with err
 * (malformed framing, a chunk over SIGV4_CHUNK_MAX, a chunk signature that
 * does not verify).
 */
int	sigv4_chunks_feed(struct sigv4_chunks *, const char *in, size_t n,
	    struct buf *out, char *err, size_t errlen);

#endif
