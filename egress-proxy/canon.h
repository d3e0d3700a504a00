/*
 * canon.h: the one canonical form of a CONNECT target (docs/proxy.md, "What
 * the proxy does with a CONNECT", step 1).
 * The canonical target is the only input to the addon decision, the leaf
 * certificate's SAN, the upstream SNI and hostname check, the Host header
 * sent upstream and the credential lookup.
 *
 *   names:   lower case, one trailing dot removed, IDN to A-label (libidn2),
 *            letters, digits, '-' and '_' only, labels 1..63, total <= 253
 *   IPv4:    every inet_aton spelling (0x7f.1, 2130706433, 0177.0.0.1,
 *            127.1) becomes a dotted quad; a name whose last label is
 *            numeric but is not a valid address is refused
 *   IPv6:    bracketed, parsed and printed by inet_ntop (no zone ids)
 *   port:    explicit, decimal, 1..65535
 */
#ifndef PROXY_CANON_H
#define PROXY_CANON_H

#include <stddef.h>
#include <stdint.h>

#define CANON_HOST_MAX	253

enum canon_kind { CANON_NAME, CANON_IPV4, CANON_IPV6 };

struct target {
	char		 host[CANON_HOST_MAX + 1];	/* no brackets */
	uint16_t	 port;
	enum canon_kind	 kind;
	char		 hostport[CANON_HOST_MAX + 10];	/* "h:p" or "[v6]:p" */
	char		 hosthdr[CANON_HOST_MAX + 10];	/* Host header value */
};

/*
 * Canonicalises an authority "host:port" (CONNECT request target). 0, or
 * -1 with a reason in err.
 */
int	canon_authority(const char *in, size_t len, struct target *, char *err,
	    size_t errlen);
/*
 * Canonicalises a host (no port) with the given port, e.g. a Host header
 * whose port is defaulted. Same rules.
 */
int	canon_host(const char *in, size_t len, uint16_t port, struct target *,
	    char *err, size_t errlen);
/*
 * Parses an IPv4 address in any inet_aton spelling. 0 and *out (host
 * order), or -1.
 */
int	canon_ipv4(const char *s, size_t len, uint32_t *out);

#endif
