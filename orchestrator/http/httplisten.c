/*
 * httplisten.c: the orchestrator's listening socket (httplisten.h): the
 * "host:port" of `listen`, whether it is loopback, the socket itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "httplisten.h"
#include "log.h"
#include "strnum.h"

/* Splits "host:port" or "[v6]:port". 0 or -1 with err. */
int
httplisten_split(const char *listen, char *host, size_t hostlen, long long *port,
    char *err, size_t errlen)
{
	const char *colon, *es;

	if ((colon = strrchr(listen, ':')) == NULL ||
	    (size_t)(colon - listen) >= hostlen ||
	    strnum_ll(colon + 1, 1, 65535, port, &es) == -1) {
		snprintf(err, errlen, "listen: expected host:port, got '%s'", listen);
		return -1;
	}
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	return 0;
}

/* Is host (from split_listen) a loopback name or address? */
int
httplisten_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (strcasecmp(host, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) &&
		    a6.s6_addr[12] == 127);
	return 0;
}

/* A listening socket on host:port (nonblocking). -1 with err. */
int
httplisten_open(const char *host, long long port, char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL, *ai;
	char ps[16];
	int fd = -1, one = 1, rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	snprintf(ps, sizeof(ps), "%lld", port);
	if ((rc = getaddrinfo(host[0] != '\0' ? host : NULL, ps, &hints, &res)) != 0) {
		snprintf(err, errlen, "listen: %s: %s", host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if ((fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, ai->ai_protocol)) == -1)
			continue;
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* Small replies on keep-alive connections must not wait for
		 * the client's delayed ACK (Nagle): accepted sockets inherit
		 * this. */
		if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
			log_warn("listen: TCP_NODELAY");
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, SOMAXCONN) == 0)
			break;
		snprintf(err, errlen, "cannot listen on %s:%lld: %s", host, port,
		    strerror(errno));
		close(fd);
		fd = -1;
	}
	if (ai == NULL && fd == -1 && res == NULL)
		snprintf(err, errlen, "cannot listen on %s:%lld", host, port);
	freeaddrinfo(res);
	return fd;
}
