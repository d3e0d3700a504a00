/*
 * config.h: the egress proxy's configuration: one key table (config.c)
 * feeds the YAML loader, --help, --print-docs (docs/proxy.md) and the
 * environment overrides. pconf_load() also parses the derived forms
 * (addresses, CIDRs, resolve overrides) so that the rest of the proxy never
 * sees text.
 */
#ifndef PROXY_CONFIG_H
#define PROXY_CONFIG_H

#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

#include "cfg.h"

struct cidr {
	int		 family;	/* AF_INET or AF_INET6 */
	unsigned char	 addr[16];	/* network, in network byte order */
	int		 bits;
	int		 port;		/* host byte order; 0: every port */
};

struct resolve_entry {
	char			 hostport[300];	/* canonical "host:port" */
	struct sockaddr_storage	 ss;
	socklen_t		 sslen;
};

struct pconf {
	/* Set from the key table. */
	char		*listen;
	long long	 workers;
	char		*admin_socket;
	char		*admin_listen;
	char		*admin_token_file;
	char		*ca_cert;
	char		*ca_key;
	char		*ca_export;
	char		*placeholder_key;
	long long	 leaf_validity_ms;
	long long	 leaf_cache;
	char		*upstream_ca_bundle;
	struct cfg_list	 allow_cidrs_l;
	struct cfg_map	 resolve_m;
	int		 anonymous;
	char		*default_action;
	struct cfg_list	 addons;
	struct cfg_map	 addon_config;
	long long	 addon_watch_ms;
	long long	 secret_watch_ms;	/* credentials.secret_watch */
	long long	 secret_cmd_ms;		/* credentials.cmd_timeout */
	long long	 conns_per_sandbox;
	long long	 tunnels_per_sandbox;
	long long	 max_conns;
	long long	 unid_max;		/* limits.unidentified */
	long long	 unid_per_source;	/* limits.unidentified_per_source */
	long long	 identify_ms;		/* timeouts.identify */
	long long	 header_bytes;
	long long	 max_headers;
	long long	 lua_instructions;
	long long	 lua_memory;
	long long	 lua_hook_memory;	/* 0: lua_memory / 4 */
	long long	 handshake_ms;
	long long	 header_ms;
	long long	 idle_ms;
	long long	 upstream_idle_ms;
	long long	 pool_idle_ms;
	long long	 pool_max;
	long long	 pool_per_target;
	long long	 connect_ms;
	long long	 hook_ms;
	long long	 high_watermark;
	char		*audit_log;
	char		*log_file;
	int		 log_json;
	char		*metrics_listen;

	/* Derived by pconf_load. */
	struct sockaddr_storage	 listen_ss;
	socklen_t		 listen_sslen;	/* 0: no main listener */
	struct sockaddr_storage	 admin_ss;
	socklen_t		 admin_sslen;	/* 0: no HTTP admin */
	struct sockaddr_storage	 metrics_ss;
	socklen_t		 metrics_sslen;	/* 0: no metrics listener */
	struct cidr		*allow;
	size_t			 nallow;
	struct resolve_entry	*resolve;
	size_t			 nresolve;
	int			 deny_default;	/* default_action == deny */
};

/*
 * Loads path into a new pconf. NULL with a message naming file, line and
 * key in err on failure. Free with pconf_free.
 */
struct pconf	*pconf_load(const char *path, char *err, size_t errlen);
void		 pconf_free(struct pconf *);
void		 pconf_print_help(FILE *);
void		 pconf_print_markdown(FILE *);

/* "host:port" / "[v6]:port" / "*:port" to a sockaddr. 0 or -1. */
int	pconf_parse_addr(const char *, struct sockaddr_storage *, socklen_t *);
/*
 * "10.0.0.0/8", "::1/128" or a bare address, each with an optional port:
 * "127.0.0.1/32:8443", "127.0.0.1:8443", "[::1]/128:8443", "[::1]:8443".
 * 0 or -1.
 */
int	pconf_parse_cidr(const char *, struct cidr *);
/* 1 when sa's address is inside c and, if c has a port, sa's port is it. */
int	pconf_cidr_match(const struct cidr *, const struct sockaddr *);

#endif
