/*
 * req.h: what the gateway does with one parsed request head and one
 * response head (req.c): route by Host, authenticate, strip what the app
 * must not see, add X-Forwarded-*, or answer itself; filter the app's
 * response head. No I/O, so the fuzz target drives it directly.
 */
#ifndef GW_REQ_H
#define GW_REQ_H

#include "buf.h"
#include "gw.h"
#include "head.h"

struct gwreq_in {
	int		 tls;
	const char	*client_ip;
	const struct route *bound;	/* the connection's app so far, or NULL */
	struct route	*(*find)(const char *host);
};

enum { GWREQ_FORWARD, GWREQ_ANSWER };

struct gwreq_out {
	struct route	*rt;		/* the request's app (NULL: none) */
	int		 status;	/* of the answer (GWREQ_ANSWER) */
	int		 close;		/* close after the answer */
	int		 authed;	/* 1 token, 2 cookie, 3 public */
	int		 upgrade;	/* forwarded as an upgrade request */
	char		 token[GW_TOKEN_MAX + 1];	/* the token that authenticated
					 * (Bearer or cookie; "" for public):
					 * the orchestrator checks it again
					 * when the connection is opened */
};

/* The gateway's cookie name. */
const char *req_cookie(int tls);

/*
 * Decides about r (edited in place). GWREQ_FORWARD: out holds the head to
 * send to the app. GWREQ_ANSWER: out holds the whole answer. -1: out full.
 */
int	req_decide(const struct gwreq_in *, struct h1head *r, struct buf *out,
	    struct gwreq_out *o);

/*
 * The app's response head for the client into out: Set-Cookie of the
 * gateway's cookie dropped, hop-by-hop headers removed (kept for a 101),
 * Connection: close when !keep (keep-alive for an HTTP/1.0 client). -1
 * out full.
 */
int	req_response(struct h1head *resp, int tls, int keep, int client_minor,
	    struct buf *out);

#endif
