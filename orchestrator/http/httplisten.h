/*
 * httplisten.h: the orchestrator's listening socket, for http.c.
 */
#ifndef HTTPLISTEN_H
#define HTTPLISTEN_H

#include <stddef.h>

/* Splits "host:port" or "[v6]:port". 0 or -1 with err. */
int	httplisten_split(const char *listen, char *host, size_t hostlen,
	    long long *port, char *err, size_t errlen);
/* Is host (from httplisten_split) a loopback name or address? */
int	httplisten_loopback(const char *host);
/* A listening socket on host:port (nonblocking, TCP_NODELAY). -1 with err. */
int	httplisten_open(const char *host, long long port, char *err,
	    size_t errlen);

#endif
