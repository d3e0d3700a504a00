/*
 * rest.h: the REST surface (rest.c), served by http.c through its route
 * table (server.c).
 */
#ifndef REST_H
#define REST_H

#include "http.h"
#include "sess.h"

/* The /v1/sessions route's handler; arg: the struct sessmgr. */
void	rest_handle(struct http *, struct evhttp_request *, const char *path,
	    void *arg);

#endif
