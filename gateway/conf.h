/*
 * conf.h: the app gateway's settings (conf.c holds the key table that
 * --help, --print-docs and docs/gateway.md show).
 */
#ifndef GW_CONF_H
#define GW_CONF_H

#include <stdio.h>
#include <sys/socket.h>

#include "cfg.h"

struct gwconf {
	char		*listen;
	char		*domain;
	char		*ctl_socket;
	char		*ctl_connect;
	char		*ctl_token_file;
	char		*tls_cert;
	char		*tls_key;
	char		*user;
	char		*scheme;	/* what browsers use: http | https */
	long long	 max_conns;
	long long	 max_conns_per_addr;
	long long	 header_bytes;
	long long	 header_fields;
	long long	 high_watermark;
	long long	 head_ms;
	long long	 idle_ms;
	long long	 upgraded_ms;
	long long	 connect_ms;
	long long	 response_ms;
	long long	 activity_ms;
	long long	 wake_ms;
	long long	 upstream_keepalive;
	long long	 upstream_idle_ms;
	char		*log_file;
	int		 log_json;
	/* derived */
	struct sockaddr_storage listen_ss;
	socklen_t	 listen_sslen;
	int		 tls;		/* the listener speaks TLS (tls.cert) */
	int		 https;		/* browsers use https: tls, or scheme */
};

/* The longest request target (414 beyond). */
#define GW_TARGET_MAX	8192

struct gwconf *conf_load(const char *path, char *err, size_t errlen);
void	conf_free(struct gwconf *);
void	conf_print_help(FILE *);
void	conf_print_markdown(FILE *);
/* "host:port" into ss ("*" or empty host: any IPv4). 0 or -1. */
int	conf_parse_addr(const char *, struct sockaddr_storage *, socklen_t *);

#endif
