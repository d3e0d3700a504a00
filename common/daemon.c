/*
 * daemon.c: the daemons' shared start-up (see daemon.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "buf.h"
#include "daemon.h"
#include "log.h"
#include "util.h"
#include "xmalloc.h"

/* libevent lines kept per interval: its warnings can come once per loop turn. */
#define DAEMON_EVLOG_BURST	10
#define DAEMON_EVLOG_INTERVAL_MS	10000

int
daemon_parse_args(const struct daemon_desc *d, int argc, char **argv,
    struct daemon_args *a, int *status)
{
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "print-docs", no_argument, NULL, 'D' },
		{ "admin", required_argument, NULL, 'A' },
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	memset(a, 0, sizeof(*a));
	*status = 0;
	while ((ch = getopt_long(argc, argv, "df:nv", lopts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			a->debug = 1;
			break;
		case 'f':
			a->file = optarg;
			break;
		case 'n':
			a->check = 1;
			break;
		case 'v':
			a->verbose++;
			break;
		case 'h':
			fputs(d->usage, stdout);
			printf("\nconfiguration keys (YAML; dotted names are nested mappings):\n");
			d->print_help(stdout);
			return -1;
		case 'D':
			d->print_docs(stdout);
			return -1;
		case 'A':
			if (d->admin != NULL) {
				*status = d->admin(optarg, argc - optind, argv + optind);
				return -1;
			}
			/* FALLTHROUGH */
		default:
			fputs(d->usage, stderr);
			*status = 2;
			return -1;
		}
	}
	if (a->file == NULL || optind != argc) {
		fputs(d->usage, stderr);
		*status = 2;
		return -1;
	}
	a->verbosity = (a->debug ? LOG_LVL_DEBUG : LOG_LVL_INFO) + a->verbose;
	return 0;
}

static void
evlog_cb(int severity, const char *msg)
{
	static struct log_rate rl;
	long dropped;

	if (severity < EVENT_LOG_WARN)
		return;
	if (log_rate_ok(&rl, DAEMON_EVLOG_BURST, DAEMON_EVLOG_INTERVAL_MS, &dropped))
		log_warnx("libevent: %s (%ld similar suppressed)", msg, dropped);
}

void
daemon_libevent_log(void)
{
	event_set_log_callback(evlog_cb);
}

void
daemon_oom_protect(void)
{
	int fd;

	/* Only root may lower it; anyone else keeps the default. */
	if (geteuid() != 0 ||
	    (fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC)) == -1)
		return;
	if (write(fd, DAEMON_OOM_SCORE_ADJ, sizeof(DAEMON_OOM_SCORE_ADJ) - 1) == -1)
		log_info("oom_score_adj not lowered to %s (%s): should the host "
		    "run out of memory, the OOM killer weighs this daemon as any "
		    "other process", DAEMON_OOM_SCORE_ADJ, strerror(errno));
	close(fd);
}

char *
daemon_read_secret(const char *path, size_t max, char *err, size_t errlen)
{
	struct buf b;
	char *s = NULL;
	size_t n;

	buf_init(&b, max);
	if (util_read_file(path, &b, err, errlen) == -1)
		goto out;
	n = b.p != NULL ? strcspn(b.p, "\r\n") : 0;
	while (n > 0 && (b.p[n - 1] == ' ' || b.p[n - 1] == '\t'))
		n--;
	if (n == 0) {
		snprintf(err, errlen, "%s is empty", path);
		goto out;
	}
	s = xmalloc(n + 1);
	memcpy(s, b.p, n);
	s[n] = '\0';
out:
	if (b.p != NULL)
		explicit_bzero(b.p, b.cap);
	buf_free(&b);
	return s;
}
