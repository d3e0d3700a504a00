/*
 * evrelay.h: bufferevent helpers for relaying bytes between two sockets
 * (the proxy's tunnels, the gateway's upstream relay). Both run on every
 * event of a hot path: no allocation, no log.
 */
#ifndef EVRELAY_H
#define EVRELAY_H

#include <stddef.h>

struct bufferevent;
struct evbuffer;

/* bufferevent_enable() for the bits of what not enabled yet. */
void	evrelay_bev_enable(struct bufferevent *, short what);
/*
 * After libevent's own read: pulls what src's socket still holds straight
 * into dst until drained or dst holds hwm bytes. EOF is left for libevent;
 * a read error goes to src's event callback (which may free src's owner).
 * Returns the bytes pulled.
 */
size_t	evrelay_tunnel_pull(struct bufferevent *src, struct evbuffer *dst, size_t hwm);

#endif
