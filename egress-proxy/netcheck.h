/*
 * netcheck.h: the SSRF guard. Decides whether an address the proxy is about
 * to dial is allowed: loopback, link-local, private, CGNAT, unique-local,
 * multicast, reserved, IPv4 embedded in IPv6 forms of those, the proxy's own
 * interface addresses and its own listeners are refused unless the address
 * is inside one of upstream.allow_cidrs (the listeners: always refused).
 */
#ifndef PROXY_NETCHECK_H
#define PROXY_NETCHECK_H

#include <sys/socket.h>
#include "config.h"

/* Records the host's interface addresses (call once at start; 0 or -1). */
int	netcheck_init(void);
/*
 * A listener address of this proxy (never dialled): the configured ones at
 * start, and each registered sandbox's listener while it is registered.
 * Counted: the same address added twice needs two netcheck_del_self.
 */
void	netcheck_add_self(const struct sockaddr *, socklen_t);
void	netcheck_del_self(const struct sockaddr *, socklen_t);
/*
 * NULL if sa may be dialled, else a static reason ("loopback", ...).
 * allow/nallow: upstream.allow_cidrs.
 */
const char *netcheck_addr(const struct sockaddr *sa, const struct cidr *allow,
	    size_t nallow);

#endif
