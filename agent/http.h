/*
 * http.h: the agent's HTTP/1.1 request-head parser (hand written, strict,
 * bounded) and query-string helpers. Bodies are Content-Length only;
 * Transfer-Encoding is refused.
 */
#ifndef AGENT_HTTP_H
#define AGENT_HTTP_H

#include <stddef.h>
#include "attrib.h"

#define HTTP_MAX_HEAD		((size_t)16 * 1024)	/* request line + headers */
#define HTTP_MAX_HEADERS	64
#define HTTP_MAX_TARGET		4096
#define HTTP_MAX_BODY		((size_t)16 * 1024 * 1024)
#define HTTP_MAX_AUTH		512

struct http_req {
	char	 method[8];
	char	 path[HTTP_MAX_TARGET + 1];	/* target before '?' (raw) */
	char	 query[HTTP_MAX_TARGET + 1];	/* after '?' (raw), may be "" */
	size_t	 head_len;	/* bytes of the head incl. the blank line */
	unsigned long long content_length;
	int	 has_length;
	int	 keepalive;	/* connection may be reused */
	int	 expect_continue;
	int	 has_auth;
	char	 auth[HTTP_MAX_AUTH + 1];	/* Authorization value */
};

enum { HTTP_NEED_MORE = 0, HTTP_DONE = 1, HTTP_BAD = -1, HTTP_TOO_LARGE = -2,
	HTTP_UNSUPPORTED = -3 };

/*
 * Parses the head in p[0..n). Returns HTTP_DONE with r filled in,
 * HTTP_NEED_MORE, or an error with a message in err (HTTP_BAD -> 400,
 * HTTP_TOO_LARGE -> 431/413, HTTP_UNSUPPORTED -> 501).
 */
int	http_parse_head(const char *p, size_t n, struct http_req *r, char *err,
	    size_t errlen);

/*
 * Finds key (non-empty) in a query string and percent-decodes its value
 * into out (NUL-terminated; values with %00 are refused). Returns 0, 1 when
 * absent, -1 when malformed or too long.
 */
int	http_query_get(const char *query, const char *key, char *out,
	    size_t outlen);

const char *http_status_text(int status);

#endif
