/*
 * padmin.h: client for the egress proxy's admin socket
 * (docs/internals/proxy-admin.md). Blocking; safe to call from any thread.
 */
#ifndef PADMIN_H
#define PADMIN_H

#include <stddef.h>
#include "attrib.h"

#define PADMIN_MAX_MSG	(64 * 1024)

/*
 * Sends one JSON request (with fd attached if fd != -1) to the admin socket
 * at path and waits up to timeout_ms for the reply, stored NUL-terminated in
 * reply (at most replylen - 1 bytes). Returns 0 if a reply arrived (which may
 * still say "ok":false), -1 with err set on a transport failure.
 */
int	padmin_call(const char *path, const char *json, int fd, char *reply,
	    size_t replylen, int timeout_ms, char *err, size_t errlen) WUNRES;

#endif
