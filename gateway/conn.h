/*
 * conn.h: one client connection of the gateway (conn.c): its state, its
 * upstream, its timers. Internal to conn.c and req.c.
 */
#ifndef GW_CONN_H
#define GW_CONN_H

#include <stdint.h>
#include <sys/queue.h>

#include "buf.h"
#include "gw.h"
#include "head.h"

enum cst {
	CS_TLS,		/* client TLS handshake */
	CS_HEAD,	/* between requests, or reading a request head */
	CS_OPEN,	/* waiting for the control channel's answer to open (the
			 * orchestrator may be waking the sandbox: timeouts.wake) */
	CS_CONNECT,	/* connecting to the address the orchestrator gave */
	CS_FWD,		/* request forwarded (its body may be streaming), response relayed */
	CS_UPGRADED,	/* a byte stream both ways (after a 101) */
	CS_CLOSING,	/* flushing a last response, then closed */
};

struct addrcount_ent;

struct conn {
	LIST_ENTRY(conn)	 rlink;		/* in rt->conns */
	TAILQ_ENTRY(conn)	 all;		/* the connection list (conn.c), or the graveyard */
	TAILQ_ENTRY(conn)	 idle;		/* idle list (CS_HEAD, nothing received) */
	struct bufferevent	*cl, *up;
	struct route		*rt;		/* bound at the first routed request */
	struct addrcount_ent	*ae;
	struct event		*tmo;
	struct h1head		*req, *resp;	/* NULL once upgraded */
	struct buf		*fwd;		/* head waiting for the upstream */
	uint64_t		 id, open_id;
	uint64_t		 up_epoch;	/* rt->epoch when up was opened or taken */
	long long		 since;		/* entered the state / head started */
	long long		 last;		/* last byte either way */
	uint8_t			 st;
	uint8_t			 dead, in_idle, tls, head_started, req_done;
	uint8_t			 keep, cl_eof, sent, lingering;	/* sent: bytes of a response went out */
	uint8_t			 authed;	/* 1 bearer/query, 2 cookie, 3 public */
	uint8_t			 up_reuse;	/* up's last exchange ended cleanly: poolable */
	uint8_t			 cl_close;	/* the last request asked to close: no lingering */
	uint32_t		 nreq;
};

#endif
