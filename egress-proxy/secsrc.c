/*
 * secsrc.c: a secret read from an external command (secsrc.h has the
 * rules). posix_spawn (a vfork underneath, safe in a threaded process):
 * the child gets its own process group, an empty signal mask, default
 * SIGPIPE and SIGCHLD, /dev/null for stdin and stderr, a pipe for stdout
 * and no other descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "secsrc.h"
#include "xmalloc.h"

static atomic_llong run_ms = SECSRC_TIMEOUT_MS;

void
secsrc_set_timeout(long long ms)
{
	if (ms >= 100 && ms <= 600000)
		atomic_store(&run_ms, ms);
}

int
secsrc_argv(const char *line, char *buf, size_t buflen, char **argv, size_t max,
    const char **why)
{
	size_t n = strlen(line), k = 0;
	char *p;

	if (n >= buflen || n > SECSRC_SPEC_MAX) {
		*why = "a cmd: spec over 4096 bytes";
		return -1;
	}
	memcpy(buf, line, n + 1);
	for (p = buf; *p != '\0';) {
		while (*p == ' ')
			*p++ = '\0';
		if (*p == '\0')
			break;
		if (k + 1 >= max) {
			*why = "a cmd: spec of more than 31 words";
			return -1;
		}
		argv[k++] = p;
		p += strcspn(p, " ");
	}
	argv[k] = NULL;
	if (k == 0) {
		*why = "cmd: names no program";
		return -1;
	}
	if (argv[0][0] != '/') {
		*why = "cmd: needs an absolute program path (no shell, no PATH search)";
		return -1;
	}
	return (int)k;
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Kills pid's group and reaps pid. */
static void
kill_reap(pid_t pid, int *status)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, status, 0) == -1 && errno == EINTR)
		;
}

/*
 * Waits for pid until deadline (monotonic ms); 0 with *status, or -1:
 * the deadline passed (the group is then killed and pid reaped).
 */
static int
wait_until(pid_t pid, long long deadline, int *status)
{
	pid_t r;

	for (;;) {
		r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r == -1 && errno != EINTR) {
			*status = 0;
			return 0;
		}
		if (now_ms() >= deadline) {
			kill_reap(pid, status);
			return -1;
		}
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
}

char *
secsrc_cmd(const char *spec, size_t max, char *err, size_t errlen)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	char words[SECSRC_SPEC_MAX + 1], *argv[SECSRC_ARGV_MAX], *out = NULL, home[1024];
	char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", home, NULL };
	const char *why, *h = getenv("HOME");
	long long tmo = atomic_load(&run_ms), deadline;
	size_t n = 0;
	int pfd[2] = { -1, -1 }, status = 0, rc, over = 0, timedout = 0;
	pid_t pid;
	ssize_t r;

	if (strncmp(spec, "cmd:", 4) != 0 ||
	    secsrc_argv(spec + 4, words, sizeof(words), argv, SECSRC_ARGV_MAX, &why) == -1) {
		snprintf(err, errlen, "%s: %s", spec, strncmp(spec, "cmd:", 4) != 0 ?
		    "not a cmd: spec" : why);
		return NULL;
	}
	snprintf(home, sizeof(home), "HOME=%s", h != NULL && *h == '/' ? h : "/");
	if (access(argv[0], X_OK) == -1) {
		snprintf(err, errlen, "%s: %s: %s", spec, argv[0], strerror(errno));
		return NULL;
	}
	if (pipe2(pfd, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "%s: pipe: %s", spec, strerror(errno));
		return NULL;
	}
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGCHLD);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
	    POSIX_SPAWN_SETPGROUP);
	rc = posix_spawn(&pid, argv[0], &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(pfd[1]);
	if (rc != 0) {
		close(pfd[0]);
		snprintf(err, errlen, "%s: %s: %s", spec, argv[0], strerror(rc));
		return NULL;
	}
	deadline = now_ms() + tmo;
	out = xmalloc(max + 2);
	for (;;) {
		long long left = deadline - now_ms();
		struct pollfd p = { pfd[0], POLLIN, 0 };

		if (left <= 0) {
			timedout = 1;
			break;
		}
		if ((rc = poll(&p, 1, (int)left)) == -1 && errno != EINTR)
			break;
		if (rc <= 0)
			continue;
		r = read(pfd[0], out + n, max + 1 - n);
		if (r == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n > max) {
			over = 1;
			break;
		}
	}
	close(pfd[0]);
	if (timedout || over)
		kill_reap(pid, &status);
	else if (wait_until(pid, deadline, &status) == -1)
		timedout = 1;
	out[n] = '\0';
	if (timedout)
		snprintf(err, errlen, "%s: no answer in %lld ms (killed)", spec, tmo);
	else if (over)
		snprintf(err, errlen, "%s: printed more than %zu bytes", spec, max);
	else if (WIFSIGNALED(status))
		snprintf(err, errlen, "%s: killed by signal %d", spec, WTERMSIG(status));
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		snprintf(err, errlen, "%s: exited with status %d", spec,
		    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	else {
		/* one trailing newline (echo's, a CLI's) is not part of it */
		if (n > 0 && out[n - 1] == '\n')
			out[--n] = '\0';
		if (n > 0 && out[n - 1] == '\r')
			out[--n] = '\0';
		if (n == 0)
			snprintf(err, errlen, "%s: printed nothing", spec);
		else if (strlen(out) != n)
			snprintf(err, errlen, "%s: printed a NUL byte", spec);
		else
			return out;
	}
	OPENSSL_cleanse(out, max + 2);
	free(out);
	return NULL;
}
