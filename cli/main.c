/*
 * main.c: orch, the client CLI of the orchestrator's REST API
 * (docs/cli.md). Global options, then one command from the table below;
 * each row holds the command's name, its handler, its usage and a line of
 * help, and the handler gets its own argv (argv[0] the command's name).
 * Exit statuses: 0, API_EXIT_ERR (1) when the API refused or a transfer
 * failed, API_EXIT_USAGE (2) for a bad command line; exec exits with the
 * command's status (exec.h).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "api.h"
#include "cmds.h"
#include "cp.h"
#include "exec.h"

struct cmd {
	const char	*name;
	int		(*fn)(struct api *, int, char **);
	const char	*usage;
	const char	*help;
};

static const struct cmd cmds[] = {
	{ "list", cmds_list, "list [--org O] [--user U] [--state S]",
	  "list sessions" },
	{ "show", cmds_show, "show ID", "one session, with what it uses now" },
	{ "create", cmds_create, "create ID [--org O] [--user U] [--image I] "
	  "[--policy FILE] [--set OPTION=VALUE]...",
	  "get or create a session (sandbox options: docs/operator-guide.md)" },
	{ "stop", cmds_stop, "stop ID", "stop a session (files kept)" },
	{ "start", cmds_start, "start ID", "start a stopped session" },
	{ "delete", cmds_delete, "delete ID", "delete a session, its sandbox "
	  "and workspace" },
	{ "exec", exec_main, "exec [-t SECONDS] [-w DIR] [-e NAME=VALUE]... "
	  "[-n] ID [--] COMMAND [ARG]...",
	  "run a command; stdout and stderr apart, its exit status" },
	{ "cp", cp_main, "cp [-q] [-l BYTES_PER_S] SRC DST   (ID:/path on one side)",
	  "copy files and directories in or out, streamed, resumable" },
	{ "ls", cp_ls, "ls [-r] ID:/path", "list a directory in a sandbox" },
	{ "rm", cp_rm, "rm [-r] ID:/path", "delete a file (-r: a directory) in "
	  "a sandbox" },
	{ "apps", cmds_apps, "apps ID", "a session's published apps" },
	{ "expose", cmds_expose, "expose ID PORT [--name NAME]",
	  "publish a port; prints the URL and its token (once)" },
	{ "unexpose", cmds_unexpose, "unexpose ID NAME", "unpublish an app" },
	{ "policy", cmds_policy, "policy ID [FILE|-]",
	  "show a session's credential policy, or narrow it" },
	{ "home", cmds_home, "home USER [--delete]",
	  "a user's durable home, or delete it" },
};

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: orch [--url URL] [--key-file FILE] [--config FILE] "
	    "[--json] [-q] COMMAND ...\n\ncommands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\nsettings: --url, ORCH_URL or url = in the config file; "
	    "the key: ORCH_KEY, --key-file,\nORCH_KEY_FILE or key / key_file = "
	    "in ~/.config/orch/config (ORCH_CONFIG, --config).\n"
	    "orch COMMAND --help shows a command's usage.\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct api a = { 0 };
	const char *url = NULL, *kf = NULL, *cfg = NULL;
	char err[1024];
	size_t i;
	int ch, rc;

	a.connect_s = 10;
	while ((ch = getopt_long(argc, argv, "+u:k:c:jqh", opts, NULL)) != -1) {
		switch (ch) {
		case 'u': url = optarg; break;
		case 'k': kf = optarg; break;
		case 'c': cfg = optarg; break;
		case 'j': a.json = 1; break;
		case 'q': a.quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return API_EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		usage(stderr);
		return API_EXIT_USAGE;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[0], cmds[i].name) == 0)
			break;
	if (i == sizeof(cmds) / sizeof(cmds[0])) {
		fprintf(stderr, "orch: unknown command %s\n", argv[0]);
		usage(stderr);
		return API_EXIT_USAGE;
	}
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)) {
		printf("usage: orch %s\n", cmds[i].usage);
		return 0;
	}
	if (api_conf_load(&a, cfg, url, NULL, kf, err, sizeof(err)) == -1) {
		fprintf(stderr, "orch: %s\n", err);
		api_conf_free(&a);
		return API_EXIT_USAGE;
	}
	/* a closed stdout (| head) is a write error we report, not a signal */
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	optind = 0;	/* each command parses its argv afresh */
	rc = cmds[i].fn(&a, argc, argv);
	if (rc == API_USAGE) {
		fprintf(stderr, "usage: orch %s\n", cmds[i].usage);
		rc = API_EXIT_USAGE;
	}
	if (fflush(stdout) == EOF && rc == 0)
		rc = api_fail(NULL, NULL, "writing stdout failed");
	curl_global_cleanup();
	api_conf_free(&a);
	return rc;
}
