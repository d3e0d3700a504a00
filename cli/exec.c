/*
 * exec.c: orch exec (exec.h). The request is one JSON body (command,
 * timeout, cwd, env, and stdin as base64 when the CLI's stdin is not a
 * terminal); the reply is NDJSON read as it streams: each complete line is
 * parsed and its bytes written at once, {"s":"out"} to fd 1, {"s":"err"}
 * to fd 2, a note to stderr, until the last line: {"exit",...} (the exit
 * status) or {"error":{"code":"agent_lost"}} (EXEC_EXIT_LOST). A line that
 * is not the protocol stops the transfer (EXEC_EXIT_FAIL). --json passes
 * the lines through to stdout as they came, for scripts.
 *
 * The states of one stream: HEAD (no byte yet), LINES (a 200: lines),
 * ERRBODY (not a 200: the body is the API's error), DONE (the exit or
 * error line came; anything after it is a protocol error), BAD.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b64.h"
#include "buf.h"
#include "cmds.h"
#include "exec.h"
#include "xmalloc.h"

/* stdin travels base64 in the JSON body, bounded by the server's
 * http.max_body (4 MiB by default, at most 64 MiB): more is never sent */
#define EXEC_STDIN_MAX	(48 * 1024 * 1024)
/* one NDJSON line: the agent sends output in chunks far below this */
#define EXEC_LINE_MAX	(8 * 1024 * 1024)
#define EXEC_ERRBODY_MAX (64 * 1024)

enum xstate { XS_HEAD, XS_LINES, XS_ERRBODY, XS_DONE, XS_BAD };

struct xrun {
	const struct api *a;
	CURL		*c;
	enum xstate	 st;
	long		 status;
	struct buf	 line;		/* the line being read */
	unsigned char	*dec;		/* decode buffer */
	size_t		 decn;
	int		 exit_code;	/* from the exit line */
	int		 timed_out, lost;
	int		 epipe;		/* our reader went (| head) */
	long long	 dropped;
	char		 err[1200];	/* XS_BAD, lost: why */
};

static void
xs_enter(struct xrun *x, enum xstate s)
{
	x->st = s;
}

static int
write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, c, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static void
bad(struct xrun *x, const char *why, const char *p, size_t n)
{
	char snip[120];

	api_oneline(p, n > 60 ? 60 : n, snip, sizeof(snip));
	snprintf(x->err, sizeof(x->err), "the server's exec stream is not the "
	    "protocol (%s): %s", why, snip);
	xs_enter(x, XS_BAD);
}

/* One complete line (without its newline). */
static void
one_line(struct xrun *x, const char *p, size_t n)
{
	cJSON *j;
	const cJSON *s, *b, *e, *m;
	const char *why;
	size_t at;
	long d;

	if (n == 0)
		return;
	if (x->st == XS_DONE) {
		bad(x, "a line after the last one", p, n);
		return;
	}
	if ((j = cJSON_ParseWithLength(p, n)) == NULL || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		bad(x, "not a JSON object", p, n);
		return;
	}
	if (x->a->json &&
	    (write_all(1, p, n) == -1 || write_all(1, "\n", 1) == -1)) {
		snprintf(x->err, sizeof(x->err), "writing stdout: %s",
		    strerror(errno));
		xs_enter(x, XS_BAD);
		goto out;
	}
	s = cJSON_GetObjectItemCaseSensitive(j, "s");
	if ((e = cJSON_GetObjectItemCaseSensitive(j, "exit")) != NULL) {
		if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 255) {
			bad(x, "the exit status is not 0-255", p, n);
			goto out;
		}
		x->exit_code = e->valueint;
		x->timed_out = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j,
		    "timed_out"));
		e = cJSON_GetObjectItemCaseSensitive(j, "dropped_bytes");
		x->dropped = cJSON_IsNumber(e) ? (long long)e->valuedouble : 0;
		xs_enter(x, XS_DONE);
	} else if ((e = cJSON_GetObjectItemCaseSensitive(j, "error")) != NULL) {
		m = cJSON_GetObjectItemCaseSensitive(e, "message");
		api_oneline(cJSON_IsString(m) ? m->valuestring : "(no message)",
		    cJSON_IsString(m) ? strlen(m->valuestring) : 12, x->err,
		    sizeof(x->err));
		x->lost = 1;
		xs_enter(x, XS_DONE);
	} else if (cJSON_IsString(s) && (strcmp(s->valuestring, "out") == 0 ||
	    strcmp(s->valuestring, "err") == 0)) {
		int fd = s->valuestring[0] == 'o' ? 1 : 2;

		b = cJSON_GetObjectItemCaseSensitive(j, "b");
		if (!cJSON_IsString(b)) {
			bad(x, "an output line without its bytes", p, n);
			goto out;
		}
		n = strlen(b->valuestring);
		if (n / 4 * 3 + 2 > x->decn) {
			x->decn = n / 4 * 3 + 2;
			x->dec = xreallocarray(x->dec, 1, x->decn);
		}
		if ((d = b64_decode(b->valuestring, n, x->dec, 1, &why, &at)) == -1) {
			bad(x, why, b->valuestring, n);
			goto out;
		}
		if (!x->a->json && write_all(fd, x->dec, (size_t)d) == -1) {
			x->epipe = errno == EPIPE;
			snprintf(x->err, sizeof(x->err), "writing %s: %s", fd == 1 ?
			    "stdout" : "stderr", strerror(errno));
			xs_enter(x, XS_BAD);
		}
	} else if (cJSON_IsString(s) && strcmp(s->valuestring, "note") == 0) {
		m = cJSON_GetObjectItemCaseSensitive(j, "m");
		if (!x->a->json && !x->a->quiet && cJSON_IsString(m)) {
			char line[1024];

			api_oneline(m->valuestring, strlen(m->valuestring), line,
			    sizeof(line));
			fprintf(stderr, "orch: note: %s\n", line);
		}
	} else
		bad(x, "an unknown line", p, n);
out:
	cJSON_Delete(j);
}

static size_t
on_data(char *p, size_t sz, size_t nm, void *arg)
{
	struct xrun *x = arg;
	size_t n = sz * nm, i, start = 0;

	if (x->st == XS_HEAD) {
		curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &x->status);
		if (x->status == 200) {
			xs_enter(x, XS_LINES);
			buf_init(&x->line, EXEC_LINE_MAX);
		} else {
			xs_enter(x, XS_ERRBODY);
			buf_init(&x->line, EXEC_ERRBODY_MAX);
		}
	}
	if (x->st == XS_ERRBODY) {
		if (buf_add(&x->line, p, n) == -1)
			return 0;
		return n;
	}
	for (i = 0; i < n && x->st != XS_BAD; i++) {
		if (p[i] != '\n')
			continue;
		if (x->line.len > 0) {
			if (buf_add(&x->line, p + start, i - start) == -1) {
				bad(x, "a line too long", p + start, i - start);
				break;
			}
			one_line(x, x->line.p, x->line.len);
			buf_reset(&x->line);
		} else
			one_line(x, p + start, i - start);
		start = i + 1;
	}
	if (x->st == XS_BAD)
		return 0;	/* stops the transfer: the server kills the tree */
	if (start < n && buf_add(&x->line, p + start, n - start) == -1) {
		bad(x, "a line too long", p + start, n - start);
		return 0;
	}
	return n;
}

/* The command: one word as it is (a shell line), several quoted. */
static char *
command_of(int argc, char **argv)
{
	struct buf b;
	char *out;
	size_t n;
	int i, bad_ = 0;

	if (argc == 1)
		return xstrdup(argv[0]);
	buf_init(&b, 1 << 20);
	for (i = 0; i < argc; i++) {
		const char *s;

		bad_ |= buf_addstr(&b, i > 0 ? " '" : "'");
		for (s = argv[i]; *s != '\0'; s++)
			bad_ |= *s == '\'' ? buf_addstr(&b, "'\\''") :
			    buf_add(&b, s, 1);
		bad_ |= buf_addstr(&b, "'");
	}
	out = bad_ ? NULL : buf_steal(&b, &n);
	if (out != NULL) {
		out = xreallocarray(out, 1, n + 1);
		out[n] = '\0';
	}
	buf_free(&b);
	return out;
}

int
exec_main(struct api *a, int argc, char **argv)
{
	struct xrun x = { 0 };
	struct curl_slist *h = NULL;
	cJSON *body = cJSON_CreateObject(), *env = NULL;
	char *cmd = NULL, *js = NULL, *in = NULL, *in64 = NULL, *path = NULL,
	    err[1400], *end;
	const char *id;
	size_t inlen = 0;
	double tmo = -1;
	int ch, nostdin = 0, big = 0, rc = EXEC_EXIT_FAIL;
	CURLcode cc;

	while ((ch = getopt(argc, argv, "+t:w:e:n")) != -1) {
		switch (ch) {
		case 't':
			tmo = strtod(optarg, &end);
			if (*end != '\0' || tmo <= 0 || tmo > 86400) {
				fprintf(stderr, "orch: -t is seconds, more than 0 "
				    "and at most 86400\n");
				goto out;
			}
			break;
		case 'w': cJSON_AddStringToObject(body, "cwd", optarg); break;
		case 'e':
			if ((end = strchr(optarg, '=')) == NULL || end == optarg) {
				fprintf(stderr, "orch: -e takes NAME=VALUE\n");
				goto out;
			}
			if (env == NULL)
				env = cJSON_AddObjectToObject(body, "env");
			*end = '\0';
			cJSON_DeleteItemFromObjectCaseSensitive(env, optarg);
			cJSON_AddStringToObject(env, optarg, end + 1);
			*end = '=';
			break;
		case 'n': nostdin = 1; break;
		default: rc = API_USAGE; goto out;
		}
	}
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	if (argc - optind < 2) {
		rc = API_USAGE;
		goto out;
	}
	id = argv[optind++];
	if (strcmp(argv[optind], "--") == 0 && ++optind == argc) {
		rc = API_USAGE;
		goto out;
	}
	if ((cmd = command_of(argc - optind, argv + optind)) == NULL) {
		api_fail(a, "bad_request", "the command is longer than 1 MiB");
		goto out;
	}
	cJSON_AddStringToObject(body, "command", cmd);
	if (tmo > 0)
		cJSON_AddNumberToObject(body, "timeout", tmo);
	/* a closed stdin (<&-) is none */
	if (!nostdin && !isatty(0) && fcntl(0, F_GETFD) != -1) {
		if ((in = cmds_slurp("-", EXEC_STDIN_MAX, &inlen, &big, err,
		    sizeof(err))) == NULL && !big) {
			api_fail(a, "local", err);
			goto out;
		}
		if (in == NULL) {
			snprintf(err, sizeof(err), "stdin is more than %d MiB: exec "
			    "takes it in its request body, bounded by the server's "
			    "http.max_body; put it in a file with orch cp and read it "
			    "from there", EXEC_STDIN_MAX >> 20);
			api_fail(a, "too_large", err);
			goto out;
		}
		in64 = xmalloc(B64_ENC_LEN(inlen) + 1);
		in64[b64_encode(in, inlen, in64)] = '\0';
		free(in); in = NULL;
		cJSON_AddStringToObject(body, "stdin", in64);
		free(in64); in64 = NULL;
	}
	js = cJSON_PrintUnformatted(body);
	path = api_spath(id, "/exec");
	h = curl_slist_append(h, "Content-Type: application/json");
	if ((x.c = api_easy(a, "POST", path, &h)) == NULL) {
		api_fail(a, "transport", "libcurl could not start");
		goto out;
	}
	x.a = a;
	x.exit_code = -1;
	curl_easy_setopt(x.c, CURLOPT_POSTFIELDS, js);
	curl_easy_setopt(x.c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(js));
	curl_easy_setopt(x.c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(x.c, CURLOPT_WRITEDATA, &x);
	/* output may pause for as long as the command runs quietly */
	curl_easy_setopt(x.c, CURLOPT_LOW_SPEED_TIME, 0L);
	cc = curl_easy_perform(x.c);
	if (x.st == XS_BAD && x.epipe) {
		/* as a shell pipeline's writer would: quietly, 128 + SIGPIPE;
		 * the transfer stopped, which ended the command */
		rc = 128 + 13;
		goto out;
	}
	if (x.st == XS_BAD) {
		api_fail(a, "protocol", x.err);
		goto out;
	}
	if (x.st == XS_ERRBODY || (x.st == XS_HEAD && cc == CURLE_OK)) {
		if (x.status == 0)
			curl_easy_getinfo(x.c, CURLINFO_RESPONSE_CODE, &x.status);
		char code[64];

		api_err_raw(x.status, x.line.p, x.line.len, code, sizeof(code),
		    err, sizeof(err));
		api_fail(a, code, err);
		goto out;
	}
	if (x.st == XS_DONE && x.lost) {
		snprintf(err, sizeof(err), "%s (exit status %d: unknown)", x.err,
		    EXEC_EXIT_LOST);
		api_fail(a, "agent_lost", err);
		rc = EXEC_EXIT_LOST;
		goto out;
	}
	if (x.st == XS_DONE && cc == CURLE_OK) {
		rc = x.exit_code;
		if (x.timed_out && !a->json && !a->quiet)
			fprintf(stderr, "orch: the command timed out (exit %d)\n", rc);
		if (x.dropped > 0 && !a->json && !a->quiet)
			fprintf(stderr, "orch: %lld bytes of output were dropped "
			    "(exec.max_output)\n", x.dropped);
		goto out;
	}
	if (x.st == XS_HEAD) {
		snprintf(err, sizeof(err), "POST %s: %s", path,
		    api_strerror(x.c, cc));
		api_fail(a, "transport", err);
		goto out;
	}
	if (x.line.len > 0)
		bad(&x, "a last line without its newline", x.line.p, x.line.len);
	snprintf(err, sizeof(err), "the exec stream was cut before its last line "
	    "(%s): the command's exit status is unknown (exit %d)",
	    cc != CURLE_OK ? api_strerror(x.c, cc) : "the server ended it",
	    EXEC_EXIT_LOST);
	api_fail(a, "cut", err);
	rc = EXEC_EXIT_LOST;
out:
	api_easy_free(x.c);
	curl_slist_free_all(h);
	buf_free(&x.line);
	free(x.dec);
	free(cmd);
	free(js);
	free(in);
	free(in64);
	free(path);
	cJSON_Delete(body);
	return rc;
}
