/*
 * appctl.h: the control channel of the app gateways (appctl.c,
 * docs/internals/gateway-control.md).
 */
#ifndef APPCTL_H
#define APPCTL_H

#include <stddef.h>

#include "conf.h"
#include "session/sess.h"

/* Listens on apps.control_socket and/or apps.control_listen (nothing when
 * neither is set). 0, or -1 with err. */
int	appctl_start(struct sessmgr *, const struct conf *, char *err,
	    size_t errlen);
/* Stops listening and ends the gateway connections (bounded wait). */
void	appctl_stop(void);

#endif
