/*
 * api.h: the CLI's one seam to the orchestrator's REST API (docs/cli.md):
 * where it is and with which key (flags, then ORCH_URL / ORCH_KEY /
 * ORCH_KEY_FILE, then the config file), a libcurl handle set up for one
 * request, JSON calls, and the one way an error leaves the program (one
 * line on stderr, the API's message; with --json also {"error":...} on
 * stdout). Nothing here needs root or the host's state directory.
 */
#ifndef CLI_API_H
#define CLI_API_H

#include <stddef.h>
#include <curl/curl.h>
#include <cjson/cJSON.h>

#include "attrib.h"

/* Exit statuses of the CLI itself (docs/cli.md, "Exit statuses"). */
#define API_EXIT_ERR	1	/* the API refused, or the transfer failed */
#define API_EXIT_USAGE	2	/* bad command line or configuration */
#define API_USAGE	(-1)	/* a command's return: print its usage, exit 2 */

/* A JSON reply is held whole: bounded (a listing of 100,000 entries fits). */
#define API_BODY_MAX	(64LL * 1024 * 1024)

struct api {
	char	*url;		/* base URL, no trailing slash */
	char	*key;		/* the bearer key */
	int	 json;		/* --json: machine output */
	int	 quiet;		/* -q: no progress, no notes */
	long	 connect_s;	/* connect timeout, seconds */
};

/*
 * Fills a from flags (url, key, key_file: NULL when not given), then the
 * environment, then the config file (cfg, or $ORCH_CONFIG, or
 * $XDG_CONFIG_HOME/orch/config, or ~/.config/orch/config; a missing
 * default file is not an error). 0, or -1 with err.
 */
int	api_conf_load(struct api *a, const char *cfg, const char *url,
	    const char *key, const char *key_file, char *err, size_t errlen);
void	api_conf_free(struct api *a);

/*
 * A handle for method on url + path (path already percent-encoded, from
 * api_path), with the key and any extra headers in *hdrs (the caller
 * frees both with curl_slist_free_all and api_easy_free).
 */
CURL	*api_easy(const struct api *a, const char *method, const char *path,
	    struct curl_slist **hdrs);

/* Frees a handle of api_easy (NULL: nothing). */
void	 api_easy_free(CURL *);
/* What went wrong with cc on handle c: libcurl's detailed message when it
 * has one ("Received HTTP/0.9 when not allowed"), else its short one. */
const char *api_strerror(CURL *c, CURLcode cc);

/* "/v1/sessions/<id>" + rest, each of id percent-encoded; caller frees. */
char	*api_spath(const char *id, const char *rest) MALLOC;
/* path (absolute) percent-encoded but for '/'; caller frees. */
char	*api_path_enc(const char *path) MALLOC;

/*
 * One request with a JSON body (or none) and a JSON reply. Returns the
 * HTTP status with *out the parsed reply (caller frees; NULL when the
 * reply is empty), or -1 with err (transport failure, or a reply that is
 * not JSON). A non-2xx status is returned as is: api_err_of reads it.
 */
int	api_json(const struct api *a, const char *method, const char *path,
	    const cJSON *body, cJSON **out, char *err, size_t errlen);

/*
 * The one-line error of a non-2xx reply (the API's message, its code and
 * the status) into err, and the API's code (or "http") into code.
 */
void	api_err_of(long status, const cJSON *reply, char *code, size_t codelen,
	    char *err, size_t errlen);
/* The same from a raw body (a stream's error reply); n bytes at p. */
void	api_err_raw(long status, const char *p, size_t n, char *code,
	    size_t codelen, char *err, size_t errlen);

/*
 * api_json for a command: 0 with *out the 2xx reply (caller frees; an
 * empty one is {}), or, its failure printed by api_fail, API_EXIT_ERR.
 */
int	api_call(const struct api *a, const char *method, const char *path,
	    const cJSON *body, cJSON **out);

/*
 * Prints err as the one error line (stderr, "orch: ..."), and with --json
 * {"error":{"code","message"}} on stdout; returns API_EXIT_ERR.
 */
int	api_fail(const struct api *a, const char *code, const char *err);

/* Prints j: --json compact on one line, else indented. */
void	api_print_json(const cJSON *j, int compact);

/* Copies s into out, one line, non-printable bytes as \xNN. */
void	api_oneline(const char *s, size_t n, char *out, size_t outlen);

#endif
