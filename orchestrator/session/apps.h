/*
 * apps.h: web apps a sandbox publishes through the app gateway
 * (docs/gateway.md). An app is a name, a port inside the sandbox and the
 * SHA-256 of its token; the set is part of the session record (label
 * "apps"), so a restarted orchestrator announces the same apps, and it
 * ends with the sandbox it was made in (clear_session, re-provisioning).
 *
 * The tool and REST operations block on the runtime: call them from
 * workers. The control-channel helpers (appctl.c) only take mutexes,
 * except apps_open, which asks the runtime for a connection.
 */
#ifndef APPS_H
#define APPS_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "ids.h"
#include "sess.h"

#define APP_NAME_MAX	40	/* a DNS label with room for "-<sandbox id>" */
#define APP_TOKEN_BYTES	32	/* random bytes of a token (base64url: 43) */
#define APP_HASH_HEX	64	/* SHA-256 in hex */
#define APP_HOST_MAX	256

/* One app as the gateways see it. */
struct app_route {
	char	host[APP_HOST_MAX];
	char	app[APP_NAME_MAX + 1];
	int	port;
	char	sandbox[ID_SANDBOX_MAX];
	char	session[ID_SESSION_MAX + 1];
	char	hash[APP_HASH_HEX + 1];
};

/*
 * expose_port: publishes port of s's sandbox (s entered) as name (NULL:
 * "p<port>"); the same name again replaces that app with a new token.
 * {name, port, url, token} (cJSON_Delete), or NULL with *e and err. note
 * gets a line for the model when nothing listens on the port yet.
 */
cJSON	*apps_expose(struct sess *s, int port, const char *name,
	    enum sess_err *e, char *err, size_t errlen, char *note,
	    size_t notelen);
/* {apps: [{name, port, url}]} of s's current sandbox. */
cJSON	*apps_list(struct sess *s);
/* unexpose_port; returns when the gateways have dropped it (at most a
 * second). 0, or -1 with *e (SE_NOTFOUND: no such app) and err. */
int	apps_unexpose(struct sess *s, const char *name, enum sess_err *e,
	    char *err, size_t errlen);
/* Is publishing on? 0 with err saying why not. */
int	apps_enabled(struct sessmgr *, char *err, size_t errlen);

/* ---- for the control channel (appctl.c) ---- */
/* Every live app, sorted by host (free *out). */
size_t	apps_routes(struct sessmgr *, struct app_route **out);
/*
 * A connection to the app at host for a gateway, the token checked again
 * (NULL: none presented; fine only when apps.public). 0 with *out, or -1
 * with *status (401, 404, 502, 503) and err (text for the person's page).
 */
int	apps_open(struct sessmgr *, const char *host, const char *token,
	    struct rt_app_conn *out, int *status, char *err, size_t errlen);
/* Traffic reached the app at host: its session was active now. */
void	apps_activity(struct sessmgr *, const char *host);

/* Wakes a control connection when the routes change (a byte to fd). */
struct apps_watch;
struct apps_watch *apps_watch_new(int fd);
void	apps_watch_free(struct apps_watch *);
/* The change count now; a watcher reports what its gateway applied. */
unsigned long long apps_gen(void);
void	apps_watch_acked(struct apps_watch *, unsigned long long gen);

#endif
