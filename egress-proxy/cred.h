/*
 * cred.h: named credentials and their placeholders (issue 30; cred.c).
 * The operator declares a credential: a name, its secret, the hosts it may
 * go to (globs of canonical host names) and how it goes (its form). A
 * sandbox never holds the secret: it gets placeholders, strings derived
 * from a key only the proxy holds, the sandbox's id and the credential's
 * name, which its clients put where they would put the secret. On an
 * intercepted request to one of the credential's hosts the proxy swaps
 * the sandbox's own placeholders for the real value, wherever the client
 * put them (a header value, inside a Basic pair, the query); bound for any
 * other host a placeholder goes out as the meaningless string it is.
 *
 * Rules:
 *  - a placeholder is CRED_PH_LEN characters, "PXC" then base32 (A-Z2-7):
 *    letters and digits only, so it fits every client's key syntax (an AWS
 *    access key id included) and can never be confused with what wraps it;
 *  - only the requesting sandbox's placeholders are swapped (another
 *    sandbox's are just text), and only for credentials it may use whose
 *    hosts match the request's canonical host (never Host or SNI);
 *  - the real value never goes into a request to another host, a response,
 *    a log line or an error;
 *  - values are checked at declaration: no byte a header cannot carry.
 * No I/O: unit-tested (tests/unit/test_proxy_cred.c).
 */
#ifndef PROXY_CRED_H
#define PROXY_CRED_H

#include <stdatomic.h>
#include <stddef.h>

#include "buf.h"

#define CRED_PH_LEN		32	/* "PXC" + 29 base32 characters (145 bits) */
#define CRED_NAME_MAX		63	/* [a-z0-9_-], as policies name them */
#define CRED_HOSTS_MAX		64	/* host globs of one credential */
#define CRED_VALUE_MAX		8192	/* a secret: tokens, keys; a JWT fits */
#define CREDSET_MAX		128	/* credentials the addons declare in all */
#define CRED_FIELD_MAX		64	/* a header or query parameter name */
#define CRED_ENV_MAX		8	/* environment variables set to the placeholder */
#define CRED_SCOPE_MAX		16	/* regions or services a sigv4 credential serves */
#define CRED_CLIENT_MAX		256	/* a client file's URL, server id, registry or profile */

enum cred_form {
	CRED_BEARER,	/* Authorization: Bearer VALUE */
	CRED_HEADER,	/* FIELD: VALUE */
	CRED_BASIC,	/* Authorization: Basic base64(USER:VALUE) */
	CRED_QUERY,	/* ?FIELD=VALUE */
	CRED_SIGV4,	/* AWS: the request signed again with (USER, VALUE[, TOKEN]) */
	CRED_OAUTH2,	/* Authorization: Bearer T, T from an OAuth2 token endpoint
			   (credtok.c), VALUE the client secret */
	CRED_REGISTRY	/* Authorization: Bearer T, T from an OCI/Docker registry's
			   token endpoint (the realm) for the request's scope
			   (regscope.h, credtok.c); USER and VALUE the realm's Basic pair */
};

/*
 * The client configuration file a credential feeds in the sandbox's home
 * (its declaration's "client"; the orchestrator writes the file): which
 * client, and ref, what the file names (checked at declaration, so it
 * never needs escaping): npm and pip a https URL on one of the hosts,
 * maven a server id, docker a registry "host[:port]", aws a profile,
 * cargo a sparse index's https URL on one of the hosts.
 */
enum cred_client {
	CRED_CLIENT_NONE,
	CRED_CLIENT_NPM,	/* ~/.npmrc: //host/path/:_authToken= (bearer) */
	CRED_CLIENT_PIP,	/* ~/.config/pip/pip.conf: index-url with user:placeholder (basic) */
	CRED_CLIENT_MAVEN,	/* ~/.m2/settings.xml: a <server> (basic) */
	CRED_CLIENT_DOCKER,	/* ~/.docker/config.json: an auths entry (basic) */
	CRED_CLIENT_AWS,	/* ~/.aws/credentials and config: a profile (sigv4) */
	CRED_CLIENT_CARGO	/* ~/.cargo/config.toml and credentials.toml: a sparse
				   registry (header Authorization: cargo sends the token bare) */
};

/* What a sandbox gets a placeholder for. */
enum cred_part {
	CRED_PART_VALUE,	/* the secret: a token, a password, AWS's secret key */
	CRED_PART_ID,		/* AWS's access key id */
	CRED_PART_TOKEN		/* AWS's session token */
};

struct cred {
	char		 name[CRED_NAME_MAX + 1];
	enum cred_form	 form;
	char		*hosts[CRED_HOSTS_MAX];
	size_t		 nhosts;
	char		*value;		/* the secret */
	char		*user;		/* Basic user; AWS access key id */
	char		*token;		/* AWS session token, or NULL */
	char		*field;		/* header or query parameter name */
	char		*spec;		/* where the secret came from ("env:NPM_TOKEN"), for logs */
	char		*addon;		/* the addon that declared it */
	int		 dflt;		/* a sandbox registered without a credentials list gets it */
	char		*env[CRED_ENV_MAX];	/* variables the sandbox gets set to its
						 * placeholder: "NAME", or "NAME=key_id" (sigv4) */
	size_t		 nenv;
	char		*regions[CRED_SCOPE_MAX];	/* sigv4: the regions it signs for (none: any) */
	size_t		 nregions;
	char		*services[CRED_SCOPE_MAX];	/* sigv4: the services (none: any) */
	size_t		 nservices;
	enum cred_client client;	/* the client file it feeds, or NONE */
	char		*client_ref;	/* its URL, server id, registry or profile */
	char		*client_scope;	/* npm: the "@scope" the URL serves, or NULL */
	/* oauth2 and registry (credtok.h): where tokens come from and how they are asked for */
	char		*token_url;	/* https:// only; registry: the realm */
	char		*service;	/* registry: the realm's service parameter */
	char		*client_id;
	char		*scope;		/* NULL: the client's default */
	char		*refresh;	/* the refresh token read at declaration; NULL: client
					   credentials grant */
	char		*refresh_path;	/* the file a rotated refresh token is written back
					   to (refresh_write); NULL: kept in memory only */
	/* the secret's refresh (credwatch.h): set at declaration, then only
	   the refreshing thread reads or writes them */
	long long	 every_ms;	/* cmd: run again every; 0: at load only */
	long long	 next_ms;	/* cmd: the next run (monotonic); 0: not yet planned */
	struct cred_stamp {
		int		 state;	/* 0: not seen yet, 1: seen, -1: stat failed */
		unsigned long long dev, ino, size;
		long long	 mtime_ns, ctime_ns;
	}		 stamp;		/* file: the file as last read */
	unsigned	 fails;		/* refreshes failed in a row */
	unsigned long	 why_hash;	/* the last failure's reason, hashed */
};

/*
 * The credentials the addons declare, read once per addon load (the
 * validation load of addon_src_load) with their secrets, shared read-only
 * by every worker and replaced whole by a reload. Freed (secrets wiped)
 * with its last reference.
 */
struct credset {
	atomic_int	 refs;
	size_t		 n;
	struct cred	*c[CREDSET_MAX];
};

struct credset *cred_set_new(void);
struct credset *cred_set_ref(struct credset *);
void	cred_set_unref(struct credset *);
/* Adds c (taken, freed on failure); -1 with err: a name taken, the set full. */
int	cred_set_add(struct credset *, struct cred *c, char *err, size_t errlen);
/*
 * A new set (one reference) of copies of cs's credentials, the i-th with
 * secret values[i] when not NULL (taken: values[i] is set to NULL), else
 * a copy of its own. For a refreshed secret; cs is not changed.
 */
struct credset *cred_set_clone(const struct credset *cs, char **values);
/* The credential called name, or NULL. */
struct cred *cred_set_find(const struct credset *, const char *name);
void	cred_free(struct cred *);
/*
 * The form a declaration names ("bearer", "header", "basic", "query",
 * "sigv4", "oauth2", "registry"); -1: none.
 */
int	cred_form_parse(const char *s, enum cred_form *out);
const char *cred_form_name(enum cred_form);
/* "npm", "pip", "maven", "docker", "aws", "cargo" (the declaration's keys), or "". */
const char *cred_client_name(enum cred_client);
/*
 * Reads a secret from spec: "env:NAME" (the proxy's environment),
 * "file:PATH" (a regular file's content, a trailing newline cut) or
 * "cmd:/PATH ARG..." (a command's output, secsrc.h: blocks up to its
 * timeout). The value (caller frees, wiping it) or NULL with err, which
 * never holds the value.
 */
char	*cred_secret_read(const char *spec, char *err, size_t errlen);
/* Whether s is a placeholder's shape ("PXC" and 29 base32 characters). */
int	cred_is_placeholder(const char *s, size_t n);

/* Appends s[0..n) to out, with all but unreserved bytes percent-encoded when query is set. 0 or -1. */
int	cred_put(struct buf *out, const char *s, size_t n, int query);
/* "", or why name cannot name a credential. */
const char *cred_name_check(const char *name);
/* "", or why value cannot be a credential's (empty, too long, a byte a header cannot carry). */
const char *cred_value_check(const char *value);
/* Whether host (canonical: lower case, no trailing dot) is one of c's hosts. */
int	cred_host_ok(const struct cred *c, const char *host);
/*
 * The placeholder of part of credential name for sandbox, from key (32
 * bytes only the proxy holds): out gets CRED_PH_LEN characters and a NUL.
 */
void	cred_placeholder(const unsigned char key[32], const char *sandbox, const char *name,
	    enum cred_part part, char out[CRED_PH_LEN + 1]);

/* The placeholders a sandbox may have swapped on one request. */
struct cred_swap {
	const struct cred	*c;
	enum cred_part		 part;
	char			 ph[CRED_PH_LEN + 1];
	unsigned		 used;		/* times swapped */
	const char		*val;		/* the value swapped in; NULL: c's own for part
						   (an oauth2 or registry credential's is its
						   current token) */
};

/*
 * Fills sw (room for max) with the placeholders of the credentials in cs
 * (n of them: those the sandbox may use) whose hosts match host and whose
 * form is swapped as text with a value of its own (not SIGV4, OAUTH2 or
 * REGISTRY);
 * returns how many.
 */
size_t	cred_swaps(struct cred *const *cs, size_t n, const unsigned char key[32],
	    const char *sandbox, const char *host, struct cred_swap *sw, size_t max);
/*
 * Writes value v (n bytes) to out with every placeholder of sw swapped for
 * its real value; with basic set a Basic pair ("Basic " and base64) is
 * decoded, swapped and encoded again (and read as text when nothing in it
 * swaps); in a query (query set) the value goes in percent-encoded.
 * Returns the number of swaps (0: nothing written, v stands as it is), or
 * -1 when out would exceed its bound.
 */
int	cred_swap_text(struct cred_swap *sw, size_t nsw, const char *v, size_t n, int basic,
	    int query, struct buf *out);

#endif
