/*
 * pktline.h: git's pkt-line framing, as far as the push rules need it
 * (docs/proxy.md "Push rules"): the command list at the start of a
 * git-receive-pack request body (`old new ref\0caps`, `old new ref`, ...,
 * flush), read incrementally from a growing prefix of the body and
 * bounded, and the report-status answer that refuses a push (inside
 * side-band-64k when the client asked for it). No I/O here: unit-tested
 * (tests/unit/test_pktline.c) and fuzzed (tests/fuzz/fuzz_pktline.c).
 */
#ifndef PROXY_PKTLINE_H
#define PROXY_PKTLINE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define PKTL_MAX_BYTES	(64 * 1024)	/* the command list, flush included */
#define PKTL_MAX_CMDS	10000
#define PKTL_MAX_PKT	65520		/* git's LARGE_PACKET_MAX */
#define PKTL_MAX_REF	1024		/* bytes of one ref name */

enum { PKTL_ERR = -1, PKTL_MORE = 0, PKTL_DONE = 1 };

struct pktl_cmd {
	uint32_t	 ref_o, ref_l;	/* the ref name within the body */
	uint8_t		 create;	/* old id is all zeros */
	uint8_t		 del;		/* new id is all zeros */
};

struct pktl {
	size_t		 pos;		/* bytes of the body parsed so far */
	struct pktl_cmd	*cmd;		/* the commands, in order */
	size_t		 ncmd, capcmd;
	uint32_t	 caps_o, caps_l;	/* the first command's capabilities */
	unsigned	 probe:1;	/* DONE: the list was a flush alone (git's probe) */
	unsigned	 sideband:1;	/* client asked for side-band-64k */
	unsigned	 report:1;	/* ... for report-status or report-status-v2 */
	char		 err[160];	/* ERR: why, for the client and the log */
};

void	pktl_init(struct pktl *);
void	pktl_free(struct pktl *);

/*
 * Parses more of the command list from body[0..len) (the body so far;
 * the same prefix grows between calls). eof: the body ends at len.
 * PKTL_DONE once the flush that ends the list is read (p->pos is the
 * offset just after it: the rest is the pack and goes through untouched),
 * PKTL_MORE if more bytes are needed, PKTL_ERR with p->err (bad framing,
 * a bad command or ref name, a signed push, more than PKTL_MAX_BYTES or
 * PKTL_MAX_CMDS).
 */
int	pktl_feed(struct pktl *, const char *body, size_t len, int eof);

/* 1 if ref (n bytes) is a name git's receive-pack accepts: refs/..., check-ref-format rules. */
int	pktl_ref_ok(const char *ref, size_t n);

/*
 * Appends the report-status refusing every command of p to out: "unpack
 * ok", then "ng <ref> <why[i]>" for each command, then a flush; all inside
 * side-band-64k band 1 packets when p->sideband. why[i] must hold no LF.
 * 0 or -1 (out full).
 */
int	pktl_report(const struct pktl *, const char *body, const char *const *why,
	    struct buf *out);

#endif
