/*
 * test_orch_idem.c: idem.c, the Idempotency-Key store: key syntax, the
 * canonical fingerprint, new/same/mismatch per scope, an exec's job id
 * and started flag, a create's pending and result, the bounds per scope
 * and in all, expiry after the ttl, and the records written to disk
 * before begin returns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api/idem.h"
#include "conf.h"
#include "unit.h"

static struct conf c;
static char dir[64];

static enum idem_rc
begin(enum idem_kind k, const char *scope, const char *key, const char *fp,
    struct idem_view *v)
{
	char err[512];
	enum idem_rc rc = idem_begin(&c, k, scope, key, fp, v, err, sizeof(err));

	if (rc != IDEM_NEW && rc != IDEM_SAME && err[0] == '\0')
		fprintf(stderr, "  no error text for rc %d\n", rc);
	return rc;
}

static int
nfiles(void)
{
	char cmd[128];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls %s | grep -c '\\.json$'", dir);
	if ((p = popen(cmd, "r")) != NULL) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n;
}

TEST(test_key_syntax)
{
	char k[300];

	CHECK(idem_key_valid("a"));
	CHECK(idem_key_valid("550e8400-e29b-41d4-a716-446655440000"));
	CHECK(idem_key_valid("with space ~!"));
	CHECK(!idem_key_valid(""));
	CHECK(!idem_key_valid("tab\there"));
	CHECK(!idem_key_valid("del\x7f"));
	CHECK(!idem_key_valid("cl\xc3\xa9"));
	memset(k, 'k', 255);
	k[255] = '\0';
	CHECK(idem_key_valid(k));
	k[255] = 'k';
	k[256] = '\0';
	CHECK(!idem_key_valid(k));
}

TEST(test_fingerprint)
{
	char a[IDEM_FP_HEX + 1], b[IDEM_FP_HEX + 1];
	cJSON *x = cJSON_Parse("{\"command\":\"ls\",\"env\":{\"B\":\"2\",\"A\":\"1\"},\"timeout\":5}");
	cJSON *y = cJSON_Parse("{\"timeout\":5,\"env\":{\"A\":\"1\",\"B\":\"2\"},\"command\":\"ls\"}");
	cJSON *z = cJSON_Parse("{\"timeout\":6,\"env\":{\"A\":\"1\",\"B\":\"2\"},\"command\":\"ls\"}");

	CHECK(idem_fingerprint("POST", "/r", x, a) == 0);
	CHECK(idem_fingerprint("POST", "/r", y, b) == 0);
	CHECK_INT(strlen(a), IDEM_FP_HEX);
	CHECK_STR(a, b);	/* members in another order: the same */
	CHECK(idem_fingerprint("POST", "/r", z, b) == 0);
	CHECK(strcmp(a, b) != 0);
	CHECK(idem_fingerprint("POST", "/other", x, b) == 0);
	CHECK(strcmp(a, b) != 0);
	CHECK(idem_fingerprint("PUT", "/r", x, b) == 0);
	CHECK(strcmp(a, b) != 0);
	cJSON_Delete(x);
	cJSON_Delete(y);
	cJSON_Delete(z);
}

TEST(test_exec_records)
{
	struct idem_view v, w;
	char path[256], buf[1024];
	FILE *f;
	size_t n;

	CHECK_INT(begin(IDEM_EXEC, "s1", "k1", "fp-a", &v), IDEM_NEW);
	CHECK(strncmp(v.job, "j-", 2) == 0 && strlen(v.job) == 14);
	CHECK_INT(nfiles(), 1);	/* on disk before begin returned */
	CHECK_INT(begin(IDEM_EXEC, "s1", "k1", "fp-a", &w), IDEM_SAME);
	CHECK_STR(w.job, v.job);
	CHECK_INT(w.started, 0);
	idem_started(&c, "s1", "k1");
	CHECK_INT(begin(IDEM_EXEC, "s1", "k1", "fp-a", &w), IDEM_SAME);
	CHECK_INT(w.started, 1);
	snprintf(path, sizeof(path), "ls %s/*.json | head -1 | xargs cat", dir);
	if ((f = popen(path, "r")) != NULL) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		pclose(f);
		CHECK(strstr(buf, "\"started\":true") != NULL);
		CHECK(strstr(buf, v.job) != NULL);
	}
	CHECK_INT(begin(IDEM_EXEC, "s1", "k1", "fp-b", &w), IDEM_MISMATCH);
	CHECK_INT(begin(IDEM_CREATE, "s1", "k1", "fp-a", &w), IDEM_MISMATCH);
	/* another scope: another record */
	CHECK_INT(begin(IDEM_EXEC, "s2", "k1", "fp-b", &w), IDEM_NEW);
	CHECK(strcmp(w.job, v.job) != 0);
	idem_forget(&c, "s2", "k1");
	CHECK_INT(begin(IDEM_EXEC, "s2", "k1", "fp-c", &w), IDEM_NEW);
	idem_forget(&c, "s2", "k1");
	idem_forget(&c, "s1", "k1");
	CHECK_INT(nfiles(), 0);
}

TEST(test_create_records)
{
	struct idem_view v;

	CHECK_INT(begin(IDEM_CREATE, "c1", "k", "fp", &v), IDEM_NEW);
	CHECK_INT(begin(IDEM_CREATE, "c1", "k", "fp", &v), IDEM_BUSY);
	idem_done(&c, "c1", "k", 201, "{\"id\":\"c1\"}");
	CHECK_INT(begin(IDEM_CREATE, "c1", "k", "fp", &v), IDEM_SAME);
	CHECK_INT(v.status, 201);
	CHECK_STR(v.body, "{\"id\":\"c1\"}");
	free(v.body);
	idem_forget(&c, "c1", "k");
}

TEST(test_bounds_and_ttl)
{
	struct idem_view v;

	c.idem_max_session = 2;
	c.idem_max_total = 3;
	CHECK_INT(begin(IDEM_EXEC, "b1", "k1", "fp", &v), IDEM_NEW);
	CHECK_INT(begin(IDEM_EXEC, "b1", "k2", "fp", &v), IDEM_NEW);
	CHECK_INT(begin(IDEM_EXEC, "b1", "k3", "fp", &v), IDEM_FULL_SCOPE);
	CHECK_INT(begin(IDEM_EXEC, "b2", "k1", "fp", &v), IDEM_NEW);
	CHECK_INT(begin(IDEM_EXEC, "b3", "k1", "fp", &v), IDEM_FULL);
	CHECK_INT(begin(IDEM_EXEC, "b1", "k1", "fp", &v), IDEM_SAME);	/* still there */
	c.idem_ttl_ms = 100;
	usleep(150 * 1000);
	/* expired: new again, other arguments welcome, the bounds free */
	CHECK_INT(begin(IDEM_EXEC, "b1", "k1", "other", &v), IDEM_NEW);
	CHECK_INT(begin(IDEM_EXEC, "b3", "k1", "fp", &v), IDEM_NEW);
	CHECK_INT(nfiles(), 2);	/* the expired ones' files removed */
}

int
main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test-idem.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 2;
	c.runtime = "fake";
	c.idem_dir = dir;
	c.idem_ttl_ms = 86400000;
	c.idem_max_session = 1000;
	c.idem_max_total = 100000;
	RUN(test_key_syntax);
	RUN(test_fingerprint);
	RUN(test_exec_records);
	RUN(test_create_records);
	RUN(test_bounds_and_ttl);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
	}
	return unit_done();
}
