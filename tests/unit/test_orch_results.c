/*
 * test_orch_results.c: every tool's result builder (tools.c, included for
 * its static builders) on agent replies good and hostile. Each result's
 * structuredContent must match the tool's own outputSchema (output_check,
 * which tools_run applies to every call; schema.c validates), the text
 * block stays, and a result that does not match goes out as a tool error.
 */
#include "mcp/tools.c"

#include "unit.h"

/* One agent reply handed to a tool's builder; arg: what else it takes. */
static const struct rcase {
	const char	*tool;
	const char	*arg;		/* edit: the command; create_sandbox: image;
					 * clear_session: "1" had a sandbox */
	const char	*reply;		/* the agent's JSON */
	int		 is_error;	/* the result is a tool error */
} cases[] = {
	{ "shell", NULL, "{\"exit_code\":0,\"output\":\"hi\\n\",\"timed_out\":false,\"interrupted\":false,\"duration_ms\":12,\"truncated\":false,\"dropped_bytes\":0,\"shell_restarted\":false,\"oom_killed\":false}", 0 },
	{ "shell", NULL, "{\"exit_code\":124,\"output\":\"\",\"timed_out\":true,\"duration_ms\":1000}", 1 },
	{ "shell", NULL, "{\"exit_code\":-1,\"output\":\"old agent\",\"timed_out\":true}", 1 },
	{ "shell", NULL, "{\"exit_code\":137,\"output\":\"\",\"oom_killed\":true}", 1 },
	{ "shell", NULL, "{\"exit_code\":3,\"output\":\"before\\u2400after \\ufffd\",\"truncated\":true,\"dropped_bytes\":1048576,\"shell_restarted\":true}", 0 },
	/* hostile: wrong types, out of range, missing */
	{ "shell", NULL, "{}", 0 },
	{ "shell", NULL, "{\"exit_code\":\"0\",\"output\":5,\"timed_out\":\"yes\",\"duration_ms\":-5,\"dropped_bytes\":1e400,\"truncated\":1}", 0 },
	{ "shell", NULL, "{\"exit_code\":1e300,\"duration_ms\":1.5,\"dropped_bytes\":-1e400,\"output\":null}", 0 },
	{ "shell", NULL, "{\"exit_code\":2.7,\"duration_ms\":9007199254740993,\"output\":{\"a\":1}}", 0 },
	{ "shell_async", NULL, "{\"id\":\"j-0123456789ab\",\"pid\":123}", 0 },
	{ "shell_async", NULL, "{\"id\":\"j-1\",\"pid\":-4}", 0 },
	{ "shell_async", NULL, "{\"id\":\"j-1\",\"pid\":1e400}", 0 },
	{ "shell_async", NULL, "{\"id\":\"../x\",\"pid\":1}", 1 },
	{ "shell_async", NULL, "{\"pid\":1}", 1 },
	{ "shell_poll", NULL, "{\"id\":\"j-1\",\"command\":\"x\",\"state\":\"running\",\"pid\":5,\"exit_code\":null,\"signal\":null,\"oom_killed\":false,\"started_ms\":1,\"ended_ms\":null,\"output_bytes\":6,\"truncated\":false,\"dropped_bytes\":0,\"output\":\"line1\\n\",\"offset\":0,\"next_offset\":6,\"eof\":false}", 0 },
	{ "shell_poll", NULL, "{\"id\":\"j-1\",\"state\":\"exited\",\"exit_code\":4,\"output\":\"a\\u2400b\",\"next_offset\":3,\"eof\":true}", 0 },
	{ "shell_poll", NULL, "{\"id\":\"j-1\",\"state\":\"signaled\",\"signal\":9,\"oom_killed\":true,\"truncated\":true,\"dropped_bytes\":99}", 0 },
	{ "shell_poll", NULL, "{}", 0 },
	{ "shell_poll", NULL, "{\"id\":\"../etc\",\"state\":\"zombie\",\"exit_code\":\"1\",\"signal\":1e400,\"next_offset\":-1,\"output\":[\"x\"],\"eof\":\"no\",\"output_bytes\":-3}", 0 },
	{ "shell_wait", NULL, "{\"id\":\"j-1\",\"state\":\"running\",\"output\":\"\",\"next_offset\":0}", 0 },
	{ "shell_wait", NULL, "{\"id\":\"j-1\",\"state\":\"exited\",\"exit_code\":0,\"output\":\"done\\n\",\"next_offset\":5,\"eof\":true}", 0 },
	{ "shell_wait", NULL, "{\"state\":7,\"exit_code\":2147483648}", 0 },
	{ "shell_stop", NULL, "{\"id\":\"j-1\",\"state\":\"stopped\",\"signal\":15,\"output_bytes\":10}", 0 },
	{ "shell_stop", NULL, "{\"id\":\"j-1\",\"state\":\"exited\",\"exit_code\":0}", 0 },
	{ "shell_stop", NULL, "{\"id\":5,\"state\":null,\"note\":\"lost\"}", 0 },
	{ "str_replace_based_edit_tool", "view", "{\"content\":\"     1\\tone\\n\"}", 0 },
	{ "str_replace_based_edit_tool", "view", "{\"content\":5}", 0 },
	{ "str_replace_based_edit_tool", "view", "{}", 0 },
	{ "str_replace_based_edit_tool", "create", "{\"ok\":true}", 0 },
	{ "str_replace_based_edit_tool", "str_replace", "{\"ok\":true,\"snippet\":\"     2\\tTWO\\n\"}", 0 },
	{ "str_replace_based_edit_tool", "str_replace", "{\"snippet\":[1]}", 0 },
	{ "str_replace_based_edit_tool", "insert", "{\"ok\":true}", 0 },
	{ "create_sandbox", "default", NULL, 0 },
	{ "create_sandbox", "busybox", NULL, 0 },
	{ "sandbox_status", NULL, "{\"id\":\"s1\",\"org\":\"acme\",\"user\":\"al\","
	    "\"state\":\"running\",\"sandbox_id\":\"sbx-1\",\"image\":\"default\","
	    "\"run_as_root\":true,\"writable_root\":true,\"use_kata\":false,"
	    "\"limits\":{\"cpu\":2,\"memory_bytes\":1073741824,\"disk_bytes\":0,"
	    "\"lifetime_ms\":3600000,\"idle_timeout_ms\":600000},\"uptime_ms\":5000,"
	    "\"lifetime_left_ms\":3595000,\"idle_left_ms\":590000,\"usage\":"
	    "{\"memory_bytes\":1048576,\"disk_bytes\":null},\"busy\":false,"
	    "\"running_jobs\":1,\"jobs\":[{\"id\":\"j-1\",\"command\":\"sleep 9\"}]}", 0 },
	{ "sandbox_status", NULL, "{\"id\":\"s2\",\"org\":\"\",\"user\":\"\","
	    "\"state\":\"none\",\"sandbox_id\":\"\",\"image\":\"\","
	    "\"limits\":{\"cpu\":2,\"memory_bytes\":1073741824,\"disk_bytes\":0,"
	    "\"lifetime_ms\":3600000,\"idle_timeout_ms\":600000},\"usage\":{},"
	    "\"busy\":false,\"running_jobs\":0,\"jobs\":[]}", 0 },
	{ "clear_session", "1", NULL, 0 },
	{ "clear_session", "0", NULL, 0 },
	{ "expose_port", "", "{\"name\":\"web\",\"port\":8000,\"url\":\"http://web-s-1.apps.test/\",\"token\":\"abc\"}", 0 },
	{ "expose_port", "Nothing listens on port 8000 yet.", "{\"name\":\"p1\",\"port\":1,\"url\":\"http://p1-s-1.apps.test:8081/\",\"token\":\"t\"}", 0 },
	{ "list_apps", NULL, "{\"apps\":[]}", 0 },
	{ "list_apps", NULL, "{\"apps\":[{\"name\":\"web\",\"port\":8000,\"url\":\"http://web-s-1.apps.test/\"},{\"name\":\"p2\",\"port\":2,\"url\":\"http://p2-s-1.apps.test/\"}]}", 0 },
	{ "unexpose_port", "web", NULL, 0 },
	/* read_file: arg is encoding:bytes read, the reply the file's entry */
	{ "read_file", "text:hello\n", "{\"path\":\"/workspace/a.txt\",\"name\":\"a.txt\",\"type\":\"file\",\"size\":6,\"mtime_ms\":1,\"mode\":\"0644\",\"version\":\"0123456789abcdef\"}", 0 },
	{ "read_file", "base64:\x01\xff", "{\"path\":\"/workspace/b\",\"type\":\"file\",\"size\":2}", 0 },
	{ "read_file", "text:\xff\xfe", "{\"path\":\"/workspace/b\",\"type\":\"file\",\"size\":2}", 1 },
	/* an incomplete character at the end of a part: left for the next */
	{ "read_file", "text:ab\xc3", "{\"path\":\"/w/c\",\"type\":\"file\",\"size\":100}", 0 },
	/* hostile entry: bad version, mode, numbers */
	{ "read_file", "text:x", "{\"path\":\"/w/c\",\"type\":\"file\",\"size\":-1,\"mtime_ms\":1e400,\"version\":\"../../etc\",\"mode\":\"rwx\"}", 0 },
	{ "write_file", "0", "{\"ok\":true,\"bytes\":5,\"size\":5,\"version\":\"0123456789abcdef\",\"created\":true}", 0 },
	{ "write_file", "1", "{\"bytes\":-5,\"size\":\"x\",\"version\":7}", 0 },
	{ "list_files", NULL, "{\"path\":\"/workspace\",\"entries\":[{\"path\":\"/workspace/a\",\"name\":\"a\",\"type\":\"file\",\"size\":3,\"mtime_ms\":5,\"mode\":\"0644\",\"version\":\"0123456789abcdef\"},{\"path\":\"/workspace/l\",\"name\":\"l\",\"type\":\"symlink\",\"size\":1,\"mtime_ms\":5,\"mode\":\"0777\",\"target\":\"/etc\"}],\"truncated\":true}", 0 },
	{ "list_files", NULL, "{\"entries\":[5,{\"type\":\"pipe\",\"size\":1e400,\"version\":\"zz\",\"target\":\"x\"}],\"truncated\":\"yes\"}", 0 },
	{ "list_files", NULL, "{\"entries\":{}}", 0 },
	{ "delete_file", "/workspace/x", "{\"ok\":true,\"deleted\":3}", 0 },
	{ "delete_file", "/workspace/x", "{\"deleted\":-1}", 0 },
};

/* Runs case c's builder into tc (structured as asked). */
static void
build(const struct rcase *c, struct tool_call *tc, int structured)
{
	cJSON *j = c->reply != NULL ? cJSON_Parse(c->reply) : NULL;

	memset(tc, 0, sizeof(*tc));
	tc->name = xstrdup(c->tool);
	tc->structured = structured;
	snprintf(tc->sid, sizeof(tc->sid), "s1");
	if (strcmp(c->tool, "shell") == 0)
		toolres_shell(tc, j, 5);
	else if (strcmp(c->tool, "shell_async") == 0)
		toolres_job_started(tc, j);
	else if (strcmp(c->tool, "shell_poll") == 0)
		toolres_job_output(tc, j, "j-1", 0, -1);
	else if (strcmp(c->tool, "shell_wait") == 0)
		toolres_job_output(tc, j, "j-1", 0, 30);
	else if (strcmp(c->tool, "shell_stop") == 0)
		toolres_job_stop(tc, j, "j-1");
	else if (strcmp(c->tool, "str_replace_based_edit_tool") == 0)
		toolres_edit(tc, c->arg, "notes/a.txt", "one\ntwo\n", 3, j);
	else if (strcmp(c->tool, "create_sandbox") == 0) {
		struct buf t;

		buf_init(&t, 4096);
		ign(buf_addstr(&t, "A new sandbox is ready."));
		toolres_sandbox(tc, &t, "sbx-0123", c->arg);
		buf_free(&t);
	} else if (strcmp(c->tool, "sandbox_status") == 0)
		toolres_status(tc, cJSON_Duplicate(j, 1));
	else if (strcmp(c->tool, "clear_session") == 0)
		toolres_cleared(tc, c->arg[0] == '1');
	else if (strcmp(c->tool, "expose_port") == 0) {
		toolres_app(tc, j, c->arg);
		j = NULL;
	} else if (strcmp(c->tool, "list_apps") == 0) {
		toolres_apps_list(tc, j);
		j = NULL;
	} else if (strcmp(c->tool, "unexpose_port") == 0)
		toolres_unexposed(tc, c->arg);
	else if (strcmp(c->tool, "read_file") == 0) {
		const char *data = strchr(c->arg, ':') + 1;
		struct tr_file f;

		if (toolres_file_from_entry(&f, j) == -1)
			memset(&f, 0, sizeof(f));
		toolres_read_file(tc, &f, strncmp(c->arg, "text", 4) == 0 ? "text" :
		    "base64", data, strlen(data), 0, (long long)strlen(data));
	} else if (strcmp(c->tool, "write_file") == 0)
		toolres_write_file(tc, "/workspace/a", c->arg[0] == '1', j);
	else if (strcmp(c->tool, "list_files") == 0)
		toolres_list_files(tc, j);
	else if (strcmp(c->tool, "delete_file") == 0)
		toolres_delete_file(tc, c->arg, j);
	cJSON_Delete(j);
}

static const char *
result_text(const struct tool_call *tc)
{
	const cJSON *c = cJSON_GetObjectItem(tc->result, "content");
	const cJSON *t = cJSON_GetObjectItem(cJSON_GetArrayItem(c, 0), "text");

	return cJSON_IsString(t) ? t->valuestring : NULL;
}

/* Every case's structuredContent matches its tool's outputSchema. */
TEST(test_results_match_output_schema)
{
	struct tool_call tc;
	char err[256];
	size_t i;

	for (i = 0; i < NELEM(cases); i++) {
		const struct tool_def *d = tool_find(cases[i].tool);
		const cJSON *st;

		CHECK(d != NULL);
		if (d == NULL)
			continue;
		build(&cases[i], &tc, 1);
		st = cJSON_GetObjectItem(tc.result, "structuredContent");
		if (output_check(d, &tc, err, sizeof(err)) != 0) {
			fprintf(stderr, "  case %zu (%s %s): %s\n", i, cases[i].tool,
			    cases[i].reply ? cases[i].reply : "", err);
			CHECK(0);
		}
		CHECK_INT(tc.is_error, cases[i].is_error);
		CHECK(result_text(&tc) != NULL);
		/* a usable result carries structuredContent; errors may not */
		if (!cases[i].is_error)
			CHECK(cJSON_IsObject(st));
		cJSON_Delete(tc.result);
		free(tc.name);
		/* 2025-03-26 clients: the same text, no structuredContent */
		build(&cases[i], &tc, 0);
		CHECK(cJSON_GetObjectItem(tc.result, "structuredContent") == NULL);
		CHECK(result_text(&tc) != NULL);
		cJSON_Delete(tc.result);
		free(tc.name);
	}
}

/* The table covers every tool (a new row needs cases here). */
TEST(test_results_cover_every_tool)
{
	size_t i, k, n;

	for (i = 0; i < NELEM(tool_defs); i++) {
		for (k = n = 0; k < NELEM(cases); k++)
			n += strcmp(cases[k].tool, tool_defs[i].name) == 0;
		if (n == 0)
			fprintf(stderr, "  tool %s has no result case\n",
			    tool_defs[i].name);
		CHECK(n > 0);
	}
}

/* What the fields say, for the cases that matter. */
TEST(test_results_values)
{
	struct tool_call tc;
	const cJSON *st;

	build(&cases[2], &tc, 1);	/* an older agent's -1 on timeout */
	st = cJSON_GetObjectItem(tc.result, "structuredContent");
	CHECK_INT(cJSON_GetObjectItem(st, "exit_code")->valuedouble, 124);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(st, "timed_out")));
	CHECK(strstr(result_text(&tc), "exit code 124") != NULL);
	CHECK_STR(cJSON_GetObjectItem(st, "output")->valuestring, "old agent");
	cJSON_Delete(tc.result);
	free(tc.name);

	build(&cases[4], &tc, 1);	/* escaped output, truncated */
	st = cJSON_GetObjectItem(tc.result, "structuredContent");
	CHECK_STR(cJSON_GetObjectItem(st, "output")->valuestring,
	    "before\xe2\x90\x80" "after \xef\xbf\xbd");
	CHECK(strncmp(result_text(&tc), "before\xe2\x90\x80" "after", 11) == 0);
	CHECK_INT(cJSON_GetObjectItem(st, "dropped_bytes")->valuedouble, 1048576);
	CHECK_INT(cJSON_GetObjectItem(st, "exit_code")->valuedouble, 3);
	cJSON_Delete(tc.result);
	free(tc.name);

	build(&cases[6], &tc, 1);	/* hostile: defaults, nothing raw */
	st = cJSON_GetObjectItem(tc.result, "structuredContent");
	CHECK_INT(cJSON_GetObjectItem(st, "exit_code")->valuedouble, -1);
	CHECK_INT(cJSON_GetObjectItem(st, "duration_ms")->valuedouble, 0);
	CHECK_INT(cJSON_GetObjectItem(st, "dropped_bytes")->valuedouble, 0);
	CHECK_STR(cJSON_GetObjectItem(st, "output")->valuestring, "");
	cJSON_Delete(tc.result);
	free(tc.name);

	build(&cases[18], &tc, 1);	/* hostile job: the asked id, "unknown" */
	st = cJSON_GetObjectItem(tc.result, "structuredContent");
	CHECK_STR(cJSON_GetObjectItem(st, "job_id")->valuestring, "j-1");
	CHECK_STR(cJSON_GetObjectItem(st, "state")->valuestring, "unknown");
	CHECK(cJSON_GetObjectItem(st, "exit_code") == NULL);
	CHECK(cJSON_GetObjectItem(st, "signal") == NULL);
	CHECK_INT(cJSON_GetObjectItem(st, "next_offset")->valuedouble, 0);
	cJSON_Delete(tc.result);
	free(tc.name);

	build(&cases[15], &tc, 1);	/* finished job with a NUL shown */
	st = cJSON_GetObjectItem(tc.result, "structuredContent");
	CHECK_STR(cJSON_GetObjectItem(st, "output")->valuestring, "a\xe2\x90\x80" "b");
	CHECK_INT(cJSON_GetObjectItem(st, "exit_code")->valuedouble, 4);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(st, "eof")));
	cJSON_Delete(tc.result);
	free(tc.name);
}

/* The file tools' values: eof and next_offset, a cut character, base64. */
TEST(test_results_files)
{
	struct tool_call tc;
	const cJSON *st;
	size_t i;

	for (i = 0; i < NELEM(cases); i++)
		if (strcmp(cases[i].tool, "read_file") == 0)
			break;
	build(&cases[i], &tc, 1);	/* text, the whole file */
	st = cJSON_GetObjectItem(tc.result, "structuredContent");
	CHECK_STR(cJSON_GetObjectItem(st, "content")->valuestring, "hello\n");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(st, "eof")));
	CHECK_INT(cJSON_GetObjectItem(st, "next_offset")->valuedouble, 6);
	CHECK_STR(cJSON_GetObjectItem(st, "version")->valuestring,
	    "0123456789abcdef");
	cJSON_Delete(tc.result);
	free(tc.name);
	build(&cases[i + 1], &tc, 1);	/* base64 */
	st = cJSON_GetObjectItem(tc.result, "structuredContent");
	CHECK_STR(cJSON_GetObjectItem(st, "content")->valuestring, "Af8=");
	cJSON_Delete(tc.result);
	free(tc.name);
	build(&cases[i + 2], &tc, 1);	/* not UTF-8: refused, base64 named */
	CHECK(strstr(result_text(&tc), "encoding \"base64\"") != NULL);
	CHECK(strstr(result_text(&tc), "offset 0") != NULL);
	cJSON_Delete(tc.result);
	free(tc.name);
	build(&cases[i + 3], &tc, 1);	/* "ab" + a cut character */
	st = cJSON_GetObjectItem(tc.result, "structuredContent");
	CHECK_STR(cJSON_GetObjectItem(st, "content")->valuestring, "ab");
	CHECK_INT(cJSON_GetObjectItem(st, "next_offset")->valuedouble, 2);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(st, "eof")));
	cJSON_Delete(tc.result);
	free(tc.name);
	build(&cases[i + 4], &tc, 1);	/* hostile entry: not a file entry */
	st = cJSON_GetObjectItem(tc.result, "structuredContent");
	CHECK_STR(cJSON_GetObjectItem(st, "version")->valuestring, "");
	CHECK_STR(cJSON_GetObjectItem(st, "mode")->valuestring, "");
	cJSON_Delete(tc.result);
	free(tc.name);
}

TEST(test_b64)
{
	static const struct { const char *raw; size_t n; const char *b64; } v[] = {
		{ "", 0, "" }, { "f", 1, "Zg==" }, { "fo", 2, "Zm8=" },
		{ "foo", 3, "Zm9v" }, { "foob", 4, "Zm9vYg==" },
		{ "\0\xff\x10", 3, "AP8Q" },
	};
	static const char *const bad[] = { "Zg=", "Z", "Zm9v!", "Zm 9v", "Zh==",
	    "Zm9=", "=Zm9", "Zm9v\n" };
	struct buf b;
	char err[256], *e;
	size_t i;

	buf_init(&b, 64);
	for (i = 0; i < NELEM(v); i++) {
		e = toolres_b64_encode((const unsigned char *)v[i].raw, v[i].n);
		CHECK_STR(e, v[i].b64);
		free(e);
		CHECK_INT(toolres_b64_decode(v[i].b64, &b, err, sizeof(err)), 0);
		CHECK_INT(b.len, v[i].n);
		CHECK(v[i].n == 0 || memcmp(b.p, v[i].raw, v[i].n) == 0);
	}
	CHECK_INT(toolres_b64_decode("Zm9v", &b, err, sizeof(err)), 0);
	CHECK_INT(toolres_b64_decode("Zg", &b, err, sizeof(err)), 0);	/* unpadded */
	CHECK_INT(b.len, 1);
	for (i = 0; i < NELEM(bad); i++) {
		CHECK_INT(toolres_b64_decode(bad[i], &b, err, sizeof(err)), -1);
		CHECK(err[0] != '\0');
	}
	buf_free(&b);
	/* over the buffer's cap: -1 with no message (the caller's cap) */
	buf_init(&b, 4);
	CHECK_INT(toolres_b64_decode("Zm9vYmFy", &b, err, sizeof(err)), -1);
	CHECK_STR(err, "");
	buf_free(&b);
}

/* A progress message: the last lines, bounded, clean. */
TEST(test_live_text)
{
	struct buf t;
	cJSON *j;
	char *m;
	int i;

	j = cJSON_Parse("{\"running\":false,\"bytes\":0,\"tail\":\"\"}");
	CHECK(toolres_live_text(j) == NULL);
	cJSON_Delete(j);
	j = cJSON_Parse("{\"running\":true,\"bytes\":0,\"tail\":\"\"}");
	m = toolres_live_text(j);
	CHECK(strstr(m, "no output yet") != NULL);
	free(m);
	cJSON_Delete(j);
	buf_init(&t, 1 << 20);
	for (i = 1; i <= 50; i++)
		ign(buf_addf(&t, "line %d\n", i));
	j = cJSON_CreateObject();
	cJSON_AddTrueToObject(j, "running");
	cJSON_AddNumberToObject(j, "bytes", (double)t.len);
	cJSON_AddStringToObject(j, "tail", t.p);
	m = toolres_live_text(j);
	CHECK(strncmp(m, "391 output bytes; latest:\n", 26) == 0);
	CHECK(strstr(m, "line 50\n") != NULL);
	CHECK(strstr(m, "line 31\n") != NULL);
	CHECK(strstr(m, "line 30\n") == NULL);	/* 20 lines, no more */
	free(m);
	cJSON_Delete(j);
	/* one long line: 2 KiB at most, starting at a character */
	buf_reset(&t);
	for (i = 0; i < 3000; i++)
		ign(buf_addstr(&t, "\xc3\xa9"));
	j = cJSON_CreateObject();
	cJSON_AddTrueToObject(j, "running");
	cJSON_AddNumberToObject(j, "bytes", (double)t.len);
	cJSON_AddStringToObject(j, "tail", t.p);
	m = toolres_live_text(j);
	CHECK(strlen(m) < TR_LIVE_BYTES + 128);
	CHECK(jsonu_utf8_valid(m, strlen(m)));
	free(m);
	cJSON_Delete(j);
	buf_free(&t);
}

/* A result that does not match goes out as a tool error, text kept. */
TEST(test_results_guard)
{
	struct tool_call tc;
	cJSON *st;

	build(&cases[0], &tc, 1);
	st = cJSON_GetObjectItem(tc.result, "structuredContent");
	cJSON_AddNumberToObject(st, "surprise", 1);
	output_guard(&tc);
	CHECK(cJSON_GetObjectItem(tc.result, "structuredContent") == NULL);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(tc.result, "isError")));
	CHECK_INT(tc.is_error, 1);
	CHECK(strncmp(result_text(&tc), "hi\n", 3) == 0);
	cJSON_Delete(tc.result);
	free(tc.name);

	/* a usable result without structuredContent, for a 2025-06-18 client */
	memset(&tc, 0, sizeof(tc));
	tc.name = xstrdup("shell");
	tc.structured = 1;
	toolres_set_text(&tc, "text only", 0);
	output_guard(&tc);
	CHECK_INT(tc.is_error, 1);
	cJSON_Delete(tc.result);
	free(tc.name);
}

/* tools/list shows each tool's outputSchema, an object schema. */
TEST(test_results_listed)
{
	cJSON *l = tools_list(), *t;
	int n = 0;

	cJSON_ArrayForEach(t, l) {
		cJSON *o = cJSON_GetObjectItem(t, "outputSchema");
		CHECK(cJSON_IsObject(o));
		CHECK_STR(cJSON_GetObjectItem(o, "type")->valuestring, "object");
		n++;
	}
	CHECK_INT(n, (int)NELEM(tool_defs));
	cJSON_Delete(l);
}

int
main(void)
{
	if (tools_init() == -1)
		return 1;
	RUN(test_results_match_output_schema);
	RUN(test_results_cover_every_tool);
	RUN(test_results_values);
	RUN(test_results_files);
	RUN(test_b64);
	RUN(test_live_text);
	RUN(test_results_guard);
	RUN(test_results_listed);
	tools_cleanup();
	return unit_done();
}
