/*
 * bench_runtime.c: figures for the local runtime (tests/bench/runtime/run.sh
 * builds and runs it). Through the library API and agentc, like the
 * orchestrator:
 *   create N   cold create (create() returns when the agent answers) to the
 *              first command's result, p50/p99
 *   rtt N      shell round trip of `true` on one kept-alive connection
 *   idle N     creates N sandboxes and leaves them up; prints host memory
 *   pipe N     the floor: a round trip through a bash pipe
 *   floor N IMAGE_DIR  the floor: bare bwrap start-and-exit with the same
 *              namespaces and mounts as a sandbox (spawned like the
 *              runtime spawns it: no shell in between), running /bin/true
 * Config from the YAML file given with -c (the `local:` section).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <sys/wait.h>
#include <spawn.h>

extern char **environ;

#include "lib/agentc.h"
#include "buf.h"
#include "cfg.h"
#include "log.h"
#include "runtime/local/local.h"

static const struct cfg_key keys[] = { RUNTIME_LOCAL_CFG_KEYS("local.", 0) };

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
report(const char *what, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), dcmp);
	printf("%-34s n=%-5d p50=%8.3f ms  p99=%8.3f ms  max=%8.3f ms\n", what, n,
	    v[n / 2], v[(n * 99) / 100 >= n ? n - 1 : (n * 99) / 100], v[n - 1]);
}

static int
shell(struct agentc *ac, const char *cmd, struct buf *b)
{
	char body[512], err[256];
	int st;

	snprintf(body, sizeof(body), "{\"command\":\"%s\",\"timeout_ms\":30000}", cmd);
	if (agentc_request(ac, "POST", "/v1/shell", "application/json", body,
	    strlen(body), 60000, &st, b, err, sizeof(err)) == -1 || st != 200) {
		fprintf(stderr, "shell: %s (status %d)\n", err, st);
		return -1;
	}
	return 0;
}

static long long
meminfo(const char *key)
{
	char line[256];
	long long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0)
			v = strtoll(line + strlen(key), NULL, 10);
	if (f != NULL)
		fclose(f);
	return v;
}

int
main(int argc, char **argv)
{
	struct rt_local_conf conf;
	struct runtime *rt;
	struct rt_spec sp;
	struct rt_info ri;
	struct rt_agent_addr a;
	struct agentc *ac;
	struct buf b;
	char err[512], id[64];
	const char *mode, *prefix = "bench";
	double *v, t0;
	int n, i, ch;
	const char *cfgpath = NULL;

	while ((ch = getopt(argc, argv, "c:p:")) != -1) {
		if (ch == 'c')
			cfgpath = optarg;
		else if (ch == 'p')
			prefix = optarg;
		else
			return 2;
	}
	if (argc - optind < 2)
		return 2;
	mode = argv[optind];
	n = (int)strtol(argv[optind + 1], NULL, 10);
	if (n <= 0 || n > 100000)
		return 2;
	log_init("bench", LOG_LVL_WARN, NULL);
	v = calloc((size_t)n, sizeof(*v));
	buf_init(&b, 1 << 20);

	if (strcmp(mode, "floor") == 0) {
		char *av[] = { "bwrap", "--unshare-user", "--disable-userns",
		    "--unshare-pid", "--unshare-net", "--unshare-ipc",
		    "--unshare-uts", "--unshare-cgroup-try", "--uid", "0",
		    "--gid", "0", "--ro-bind", NULL, "/", "--proc", "/proc",
		    "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run",
		    "--new-session", "--clearenv", "--", "/bin/true", NULL };
		pid_t p;
		int st;

		if (argc - optind < 3)
			return 2;
		av[13] = argv[optind + 2];
		for (i = 0; i < n; i++) {
			t0 = now_ms();
			if (posix_spawn(&p, "/usr/bin/bwrap", NULL, NULL, av,
			    environ) != 0 || waitpid(p, &st, 0) == -1 ||
			    !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "bwrap floor failed\n");
				return 1;
			}
			v[i] = now_ms() - t0;
		}
		report("floor: bare bwrap start-and-exit", v, n);
		return 0;
	}
	if (strcmp(mode, "pipe") == 0) {
		int in[2], out[2];
		char rb[64];
		pid_t p;

		if (pipe(in) == -1 || pipe(out) == -1)
			return 1;
		if ((p = fork()) == 0) {
			dup2(in[0], 0);
			dup2(out[1], 1);
			close(in[0]);
			close(in[1]);
			close(out[0]);
			close(out[1]);
			execl("/bin/bash", "bash", "--noprofile", "--norc", (char *)NULL);
			_exit(127);
		}
		for (i = 0; i < n; i++) {
			t0 = now_ms();
			if (write(in[1], "true; echo x\n", 13) != 13 ||
			    read(out[0], rb, sizeof(rb)) <= 0)
				return 1;
			v[i] = now_ms() - t0;
		}
		report("floor: bash pipe round trip", v, n);
		close(in[1]);
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
		return 0;
	}

	memset(&conf, 0, sizeof(conf));
	if (cfg_load(keys, NELEM(keys), &conf, cfgpath, err, sizeof(err)) == -1 ||
	    (rt = runtime_local_new(&conf, err, sizeof(err))) == NULL) {
		fprintf(stderr, "bench: %s\n", err);
		return 1;
	}
	memset(&sp, 0, sizeof(sp));
	sp.run_as_root = 1;
	sp.writable_root = 1;
	sp.id = id;

	if (strcmp(mode, "create") == 0) {
		double *c = calloc((size_t)n, sizeof(*c));

		for (i = 0; i < n; i++) {
			snprintf(id, sizeof(id), "%s-c%d", prefix, i);
			t0 = now_ms();
			if (rt->ops->create(rt, &sp, NULL, &ri, err,
			    sizeof(err)) == -1) {
				fprintf(stderr, "create: %s\n", err);
				return 1;
			}
			c[i] = now_ms() - t0;
			rt_info_clear(&ri);
			if (rt->ops->agent_addr(rt, id, &a, err, sizeof(err)) == -1 ||
			    (ac = agentc_open(&a, 5000, err, sizeof(err))) == NULL ||
			    shell(ac, "true", &b) == -1) {
				fprintf(stderr, "first command: %s\n", err);
				return 1;
			}
			v[i] = now_ms() - t0;
			agentc_close(ac);
			if (rt->ops->destroy(rt, id, err, sizeof(err)) == -1)
				fprintf(stderr, "destroy: %s\n", err);
		}
		report("create() (agent answers)", c, n);
		report("cold create to first command", v, n);
		free(c);
	} else if (strcmp(mode, "rtt") == 0) {
		snprintf(id, sizeof(id), "%s-rtt", prefix);
		if (rt->ops->create(rt, &sp, NULL, &ri, err,
		    sizeof(err)) == -1) {
			fprintf(stderr, "create: %s\n", err);
			return 1;
		}
		rt_info_clear(&ri);
		if (rt->ops->agent_addr(rt, id, &a, err, sizeof(err)) == -1 ||
		    (ac = agentc_open(&a, 5000, err, sizeof(err))) == NULL)
			return 1;
		for (i = 0; i < 20; i++)
			(void)shell(ac, "true", &b);
		for (i = 0; i < n; i++) {
			t0 = now_ms();
			if (shell(ac, "true", &b) == -1)
				return 1;
			v[i] = now_ms() - t0;
		}
		report("shell round trip (true)", v, n);
		agentc_close(ac);
		printf("rtt-sandbox %s\n", id);
	} else if (strcmp(mode, "idle") == 0) {
		long long m0 = meminfo("MemAvailable:"), m1;
		int made = 0;

		t0 = now_ms();
		for (i = 0; i < n; i++) {
			snprintf(id, sizeof(id), "%s-i%d", prefix, i);
			if (rt->ops->create(rt, &sp, NULL, &ri, err,
			    sizeof(err)) == -1) {
				fprintf(stderr, "create %d: %s\n", i, err);
				break;
			}
			rt_info_clear(&ri);
			made++;
			if (made % 100 == 0)
				fprintf(stderr, "  %d idle sandboxes (%.0f s)\n", made,
				    (now_ms() - t0) / 1e3);
		}
		sleep(2);
		m1 = meminfo("MemAvailable:");
		printf("idle sandboxes held               %d of %d asked (%.1f s to create)\n",
		    made, n, (now_ms() - t0) / 1e3);
		if (made > 0)
			printf("host memory per idle sandbox      %.2f MiB (MemAvailable drop "
			    "%.1f MiB)\n", (m0 - m1) / 1024.0 / made, (m0 - m1) / 1024.0);
	} else
		return 2;
	rt->ops->free(rt);
	cfg_free(keys, NELEM(keys), &conf);
	buf_free(&b);
	free(v);
	return 0;
}
