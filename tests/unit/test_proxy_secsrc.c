/*
 * test_proxy_secsrc.c: a cmd: secret's argv split (egress-proxy/secsrc.c:
 * spaces only, an absolute program, bounded words and length) and its run
 * (the output with one newline cut; exit status, a timeout, output over
 * the bound, nothing printed and a NUL byte refused with a reason that
 * never holds the output).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../egress-proxy/secsrc.h"
#include "unit.h"

static int
split(const char *line, char **argv)
{
	static char buf[SECSRC_SPEC_MAX + 1];
	const char *why = NULL;
	int n = secsrc_argv(line, buf, sizeof(buf), argv, SECSRC_ARGV_MAX, &why);

	if (n == -1 && why == NULL)
		return -2;	/* a refusal must say why */
	return n;
}

TEST(test_argv)
{
	char *argv[SECSRC_ARGV_MAX], big[SECSRC_SPEC_MAX + 8];
	size_t i, n;

	CHECK_INT(split("/bin/echo", argv), 1);
	CHECK_STR(argv[0], "/bin/echo");
	CHECK(argv[1] == NULL);
	CHECK_INT(split("  /usr/bin/vault  kv get -field=token  secret/x ", argv), 5);
	CHECK_STR(argv[0], "/usr/bin/vault");
	CHECK_STR(argv[3], "-field=token");
	CHECK_STR(argv[4], "secret/x");
	CHECK(argv[5] == NULL);
	/* no shell: quotes and $ are plain bytes */
	CHECK_INT(split("/bin/echo \"a b\" $HOME", argv), 4);
	CHECK_STR(argv[1], "\"a");
	CHECK_STR(argv[3], "$HOME");
	CHECK_INT(split("", argv), -1);
	CHECK_INT(split("   ", argv), -1);
	CHECK_INT(split("echo hi", argv), -1);
	CHECK_INT(split("./get-secret", argv), -1);
	for (i = 0, n = 0; i < 31; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "/a ");
	CHECK_INT(split(big, argv), 31);
	snprintf(big + n, sizeof(big) - n, "/b");
	CHECK_INT(split(big, argv), -1);
	memset(big, 'a', SECSRC_SPEC_MAX + 1);
	big[0] = '/';
	big[SECSRC_SPEC_MAX + 1] = '\0';
	CHECK_INT(split(big, argv), -1);
}

static char *
run(const char *spec, char *err, size_t errlen)
{
	err[0] = '\0';
	return secsrc_cmd(spec, 8192, err, errlen);
}

TEST(test_run)
{
	char err[600], *v;

	secsrc_set_timeout(1000);
	v = run("cmd:/bin/echo s3cr3t-value", err, sizeof(err));
	CHECK(v != NULL);
	if (v != NULL)
		CHECK_STR(v, "s3cr3t-value");
	free(v);
	v = run("cmd:/bin/sh -c exit${IFS}3", err, sizeof(err));
	CHECK(v == NULL);
	CHECK(strstr(err, "status 3") != NULL);
	v = run("cmd:/bin/true", err, sizeof(err));
	CHECK(v == NULL);
	CHECK(strstr(err, "printed nothing") != NULL);
	v = run("cmd:/bin/sleep 30", err, sizeof(err));
	CHECK(v == NULL);
	CHECK(strstr(err, "killed") != NULL);
	v = run("cmd:/usr/bin/head -c 100000 /dev/zero", err, sizeof(err));
	CHECK(v == NULL);
	CHECK(strstr(err, "more than 8192") != NULL);
	v = run("cmd:/usr/bin/printf a\\0b", err, sizeof(err));
	CHECK(v == NULL);
	CHECK(strstr(err, "NUL") != NULL);
	v = run("cmd:/nonexistent/get-secret", err, sizeof(err));
	CHECK(v == NULL);
	CHECK(strstr(err, "No such file") != NULL);
	v = run("cmd:get-secret", err, sizeof(err));
	CHECK(v == NULL);
	CHECK(strstr(err, "absolute") != NULL);
	/* the environment is minimal: the proxy's own variables do not pass */
	setenv("SECSRC_TEST_LEAK", "leaked", 1);
	v = run("cmd:/bin/sh -c echo${IFS}x${SECSRC_TEST_LEAK}${PATH}", err, sizeof(err));
	CHECK(v != NULL);
	if (v != NULL)
		CHECK_STR(v, "x/usr/local/bin:/usr/bin:/bin");
	free(v);
}

int
main(void)
{
	RUN(test_argv);
	RUN(test_run);
	return unit_done();
}
