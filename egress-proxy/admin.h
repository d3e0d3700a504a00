/*
 * admin.h: the admin socket server (docs/internals/proxy-admin.md).
 */
#ifndef PROXY_ADMIN_H
#define PROXY_ADMIN_H

#include <stddef.h>

#define EGRESS_PROXY_VERSION "0.1"

struct event_base;

/* Listens on path (mode 0600). reload is called for the "reload" op. */
int	admin_start(struct event_base *, const char *path,
	    int (*reload)(char *err, size_t errlen), char *err, size_t errlen);
void	admin_stop(void);
/*
 * The same API over HTTP: POST /v1/admin with the JSON request as body and
 * "Authorization: Bearer <token>"; the reply is the JSON reply. No fds.
 */
int	admin_http_start(struct event_base *, const char *host, unsigned short port,
	    const char *token, int (*reload)(char *err, size_t errlen), char *err,
	    size_t errlen);
/*
 * The proxy's shed callback for lguard (common/lguard.h): counts the pause
 * and asks every worker to close its n oldest unidentified connections.
 */
long	admin_lguard_shed(void *arg, long n);

#endif
