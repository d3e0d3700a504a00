/* test_cfg.c: the table-driven YAML loader with good and bad files. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "unit.h"

struct tconf {
	char		*name;
	long long	 port;
	int		 on;
	long long	 idle_ms;
	long long	 maxbuf;
	struct cfg_list	 addons;
	struct cfg_map	 resolve;
};

#define O(m) offsetof(struct tconf, m)
static const struct cfg_key keys[] = {
	{ "name", CFG_STR, O(name), 0, 0, "x", "TCFG_NAME", "a name" },
	{ "listen.port", CFG_INT, O(port), 1, 65535, "3128", NULL, "port" },
	{ "listen.enabled", CFG_BOOL, O(on), 0, 0, "false", NULL, "on?" },
	{ "limits.idle", CFG_DURATION, O(idle_ms), 0, 86400000, "30s", NULL, "idle" },
	{ "limits.buffer", CFG_SIZE, O(maxbuf), 1024, 1 << 30, "64KiB", NULL, "buf" },
	{ "addons", CFG_LIST, O(addons), 0, 0, NULL, NULL, "files" },
	{ "resolve", CFG_MAP, O(resolve), 0, 0, NULL, NULL, "overrides" },
};
#undef O

static int
load(struct tconf *c, const char *text, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	return cfg_load_string(keys, NELEM(keys), c, "t.yaml", text,
	    text ? strlen(text) : 0, err, errlen);
}

TEST(test_cfg_defaults_and_values)
{
	struct tconf c;
	char err[256];

	unsetenv("TCFG_NAME");
	CHECK(load(&c, NULL, err, sizeof(err)) == 0);
	CHECK_STR(c.name, "x");
	CHECK_INT(c.port, 3128);
	CHECK_INT(c.idle_ms, 30000);
	CHECK_INT(c.maxbuf, 65536);
	cfg_free(keys, NELEM(keys), &c);

	CHECK(load(&c, "name: proxy\nlisten:\n  port: 8080\n  enabled: yes\n"
	    "limits: {idle: 10m, buffer: 1MiB}\naddons: [a.lua, b.lua]\n"
	    "resolve:\n  \"github.com:443\": \"127.0.0.1:8443\"\n", err, sizeof(err)) == 0);
	CHECK_STR(c.name, "proxy");
	CHECK_INT(c.port, 8080);
	CHECK_INT(c.on, 1);
	CHECK_INT(c.idle_ms, 600000);
	CHECK_INT(c.maxbuf, 1048576);
	CHECK_INT(c.addons.n, 2);
	CHECK_STR(c.addons.v[1], "b.lua");
	CHECK_STR(cfg_map_get(&c.resolve, "github.com:443"), "127.0.0.1:8443");
	CHECK(cfg_map_get(&c.resolve, "nope") == NULL);
	cfg_free(keys, NELEM(keys), &c);

	setenv("TCFG_NAME", "fromenv", 1);
	CHECK(load(&c, "name: file\n", err, sizeof(err)) == 0);
	CHECK_STR(c.name, "fromenv");
	cfg_free(keys, NELEM(keys), &c);
	unsetenv("TCFG_NAME");
}

TEST(test_cfg_bad_files)
{
	static const struct { const char *text, *want; } t[] = {
		{ "nmae: x\n", "t.yaml:1: nmae: unknown key" },
		{ "listen:\n  port: 0\n", "t.yaml:2: listen.port: too small" },
		{ "listen:\n  port: 70000\n", "too large" },
		{ "listen:\n  port: abc\n", "listen.port: invalid" },
		{ "listen: 5\n", "listen: expected a mapping" },
		{ "listen:\n  enabled: maybe\n", "expected true or false" },
		{ "limits:\n  idle: 5 minutes\n", "expected a duration" },
		{ "limits:\n  buffer: 1\n", "too small" },
		{ "name: a\nname: b\n", "t.yaml:2: name: duplicate key" },
		{ "addons: x.lua\n", "addons: expected a list" },
		{ "addons: [[a]]\n", "list items must be scalars" },
		{ "resolve: [a]\n", "resolve: expected a mapping" },
		{ "name: [a\n", "t.yaml:" },
		{ "name: {a: b}\n", "name: expected a single value" },
		{ "- a\n- b\n", "expected a mapping" },
		{ "a: &x [1,2]\nb: *x\n", "unknown key" },
		{ "listen:\n  port: 1\n  port: 2\n", "duplicate key" },
	};
	struct tconf c;
	char err[256];
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		int rc = load(&c, t[i].text, err, sizeof(err));
		CHECK(rc == -1);
		if (rc == -1 && strstr(err, t[i].want) == NULL) {
			fprintf(stderr, "  case %zu: got '%s', want '%s'\n", i, err, t[i].want);
			unit_cur_failed++;
		}
		cfg_free(keys, NELEM(keys), &c);
	}
}

TEST(test_cfg_hostile)
{
	struct tconf c;
	char err[256], *big;
	size_t i, n = (1 << 20) + 10;

	/* Oversized file. */
	big = malloc(n + 1);
	memset(big, '#', n);
	big[n] = '\0';
	CHECK(load(&c, big, err, sizeof(err)) == -1);
	CHECK(strstr(err, "larger than") != NULL);
	cfg_free(keys, NELEM(keys), &c);
	/* Deep nesting. */
	for (i = 0; i < 64; i++)
		big[i] = '[';
	big[i] = '\0';
	CHECK(load(&c, big, err, sizeof(err)) == -1);
	cfg_free(keys, NELEM(keys), &c);
	/* Embedded NUL in a value is cut off by the parser or refused. */
	CHECK(load(&c, "name: \"a\\0b\"\n", err, sizeof(err)) == -1 || c.name != NULL);
	cfg_free(keys, NELEM(keys), &c);
	free(big);
}

int
main(void)
{
	RUN(test_cfg_defaults_and_values);
	RUN(test_cfg_bad_files);
	RUN(test_cfg_hostile);
	return unit_done();
}
