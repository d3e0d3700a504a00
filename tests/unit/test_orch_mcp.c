/*
 * test_orch_mcp.c: JSON-RPC dispatch for MCP (mcp.c): status codes, error
 * codes, version negotiation, batches per version, pending tool calls, ids
 * echoed byte for byte, NUL characters refused rather than cut.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "mcp/mcp.h"
#include "mcp/schema.h"
#include "mcp/tools.h"
#include "unit.h"

/* The JSON text of member k of o ("" if absent; static buffer). */
static const char *
member_text(const cJSON *o, const char *k)
{
	static char buf[256];
	char *t = cJSON_PrintUnformatted(cJSON_GetObjectItem(o, k));

	snprintf(buf, sizeof(buf), "%s", t ? t : "");
	free(t);
	return buf;
}

static int
err_code(cJSON *o)
{
	cJSON *e = cJSON_GetObjectItem(o, "error");
	cJSON *c = cJSON_GetObjectItem(e, "code");

	return cJSON_IsNumber(c) ? c->valueint : 0;
}

TEST(test_mcp_table)
{
	static const struct {
		const char	*body;
		const char	*proto;
		const char	*sid;
		int		 status;	/* HTTP */
		int		 code;		/* JSON-RPC error, 0: none */
		size_t		 npend;
	} t[] = {
		/* parse errors */
		{ "", NULL, NULL, 400, -32700, 0 },
		{ "{", NULL, NULL, 400, -32700, 0 },
		{ "{\"jsonrpc\":\"2.0\"} x", NULL, NULL, 400, -32700, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xff\"}", NULL, NULL, 400, -32700, 0 },
		/* invalid requests */
		{ "42", NULL, NULL, 400, -32600, 0 },
		{ "\"str\"", NULL, NULL, 400, -32600, 0 },
		{ "{}", NULL, NULL, 400, -32600, 0 },
		{ "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", NULL, NULL, 400, -32600, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", NULL, NULL, 400, -32600, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", NULL, NULL, 400, -32600, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", NULL, NULL, 400, -32600, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", NULL, NULL, 400, -32600, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}", NULL, NULL, 400, -32600, 0 },
		/* ping, id 0 is a real id */
		{ "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}", NULL, NULL, 200, 0, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\",\"params\":{}}", NULL, NULL, 200, 0, 0 },
		/* notifications and responses: 202 */
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", NULL, NULL, 202, 0, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/unknown\"}", NULL, NULL, 202, 0, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}", NULL, NULL, 202, 0, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":1,\"message\":\"x\"}}", NULL, NULL, 202, 0, 0 },
		/* unknown method / bad params */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}", NULL, NULL, 200, -32601, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[1]}", NULL, NULL, 200, -32602, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", NULL, NULL, 200, -32602, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"cursor\":\"x\"}}", NULL, NULL, 200, -32602, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}", NULL, "s", 200, -32602, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}", NULL, "s", 200, -32602, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":[]}}", NULL, "s", 200, -32602, 0 },
		/* tools/call needs X-Session-Id */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"true\"}}}", NULL, NULL, 400, -32602, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"true\"}}}", NULL, "s", 200, 0, 1 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"clear_session\"}}", NULL, "s", 200, 0, 1 },
		/* protocol version header */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", "2025-06-18", NULL, 200, 0, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", "1999-01-01", NULL, 400, -32022, 0 },
		/* a 2026-07-28 header without the _meta that version requires */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"}", "2026-07-28", NULL, 400, -32602, 0 },
		/* batches: 2025-03-26 (no header) yes, later versions no */
		{ "[]", NULL, NULL, 400, -32600, 0 },
		{ "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", "2025-06-18", NULL, 400, -32600, 0 },
		{ "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", "2025-11-25", NULL, 400, -32600, 0 },
		{ "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}]", NULL, NULL, 202, 0, 0 },
	};
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		struct mcp_in in = { t[i].body, strlen(t[i].body), t[i].proto, t[i].sid, NULL, NULL, NULL, NULL };
		struct mcp_out out;

		mcp_dispatch(&in, &out);
		if (out.status != t[i].status || out.npend != t[i].npend ||
		    (t[i].code != 0 && (out.body == NULL || err_code(out.body) != t[i].code)) ||
		    (t[i].code == 0 && out.body != NULL && err_code(out.body) != 0) ||
		    (t[i].status == 202 && out.body != NULL))
			fprintf(stderr, "  case %zu (%s): status %d code %d npend %zu\n", i,
			    t[i].body, out.status, out.body ? err_code(out.body) : 0, out.npend);
		CHECK_INT(out.status, t[i].status);
		CHECK_INT(out.npend, t[i].npend);
		if (t[i].code != 0)
			CHECK(out.body != NULL && err_code(out.body) == t[i].code);
		if (t[i].status == 202)
			CHECK(out.body == NULL);
		mcp_out_free(&out);
	}
}

TEST(test_mcp_initialize_negotiation)
{
	static const struct { const char *req, *want; } t[] = {
		{ "2025-03-26", "2025-03-26" },
		{ "2025-06-18", "2025-06-18" },
		{ "2025-11-25", "2025-11-25" },
		{ "2024-11-05", "2025-11-25" },
		{ "2099-01-01", "2025-11-25" },
	};
	size_t i;
	char body[512];

	for (i = 0; i < NELEM(t); i++) {
		struct mcp_out out;
		struct mcp_in in;
		cJSON *r, *v, *caps;

		snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
		    "\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
		    "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
		    t[i].req);
		memset(&in, 0, sizeof(in));
		in.body = body;
		in.len = strlen(body);
		mcp_dispatch(&in, &out);
		CHECK_INT(out.status, 200);
		r = cJSON_GetObjectItem(out.body, "result");
		v = cJSON_GetObjectItem(r, "protocolVersion");
		CHECK(cJSON_IsString(v) && strcmp(v->valuestring, t[i].want) == 0);
		caps = cJSON_GetObjectItem(r, "capabilities");
		CHECK(cJSON_IsObject(cJSON_GetObjectItem(caps, "tools")));
		CHECK_STR(member_text(out.body, "id"), "0");
		mcp_out_free(&out);
	}
}

/* The 2026-07-28 era (era.c): headers against the body, _meta, methods. */
#define PV	"\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\""
#define CAPS	"\"io.modelcontextprotocol/clientCapabilities\":{}"
#define META	"\"_meta\":{" PV "," CAPS "}"
TEST(test_mcp_modern)
{
	static const struct {
		const char	*body;
		const char	*proto, *hmethod, *hname, *sid;
		int		 status, code;
		size_t		 npend;
	} t[] = {
		/* 0: discover */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}",
		  "2026-07-28", "server/discover", NULL, NULL, 200, 0, 0 },
		/* 1-2: the version header missing, or another than _meta's */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}",
		  NULL, "server/discover", NULL, NULL, 400, -32020, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}",
		  "2025-11-25", "server/discover", NULL, NULL, 400, -32020, 0 },
		/* 3-4: Mcp-Method missing, or another method */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}",
		  "2026-07-28", NULL, NULL, NULL, 400, -32020, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}",
		  "2026-07-28", "tools/list", NULL, NULL, 400, -32020, 0 },
		/* 5-9: Mcp-Name: missing, other, base64 equal, bad base64, control byte */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"true\"}," META "}}",
		  "2026-07-28", "tools/call", NULL, "s", 400, -32020, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"true\"}," META "}}",
		  "2026-07-28", "tools/call", "sandbox_status", "s", 400, -32020, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"true\"}," META "}}",
		  "2026-07-28", "tools/call", "=?base64?c2hlbGw=?=", "s", 200, 0, 1 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"true\"}," META "}}",
		  "2026-07-28", "tools/call", "=?base64?c2h!bGw=?=", "s", 400, -32020, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"true\"}," META "}}",
		  "2026-07-28", "tools/call", "she\x01ll", "s", 400, -32020, 0 },
		/* 10: a plain call; 11: without X-Session-Id */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"true\"}," META "}}",
		  "2026-07-28", "tools/call", "shell", "s", 200, 0, 1 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"true\"}," META "}}",
		  "2026-07-28", "tools/call", "shell", NULL, 400, -32602, 0 },
		/* 12-14: _meta without capabilities; a version not a string; no params */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{" PV "}}}",
		  "2026-07-28", "tools/list", NULL, NULL, 400, -32602, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":5," CAPS "}}}",
		  "2026-07-28", "tools/list", NULL, NULL, 400, -32602, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
		  "2026-07-28", "tools/list", NULL, NULL, 400, -32602, 0 },
		/* 15: an unknown version in _meta and header: -32022 */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2027-01-01\"," CAPS "}}}",
		  "2027-01-01", "tools/list", NULL, NULL, 400, -32022, 0 },
		/* 16-17: log levels */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{" PV "," CAPS ",\"io.modelcontextprotocol/logLevel\":\"loud\"}}}",
		  "2026-07-28", "tools/list", NULL, NULL, 400, -32602, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{" PV "," CAPS ",\"io.modelcontextprotocol/logLevel\":\"info\"}}}",
		  "2026-07-28", "tools/list", NULL, NULL, 200, 0, 0 },
		/* 18-20: removed and unknown methods: 404 -32601 */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{" META "}}",
		  "2026-07-28", "initialize", NULL, NULL, 404, -32601, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{" META "}}",
		  "2026-07-28", "ping", NULL, NULL, 404, -32601, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\",\"params\":{" META "}}",
		  "2026-07-28", "resources/list", NULL, NULL, 404, -32601, 0 },
		/* 21: listen; 22: a notification; 23: clientInfo not an object */
		{ "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"subscriptions/listen\",\"params\":{" META ",\"notifications\":{\"toolsListChanged\":true}}}",
		  "2026-07-28", "subscriptions/listen", NULL, NULL, 200, 0, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{" META ",\"requestId\":1}}",
		  "2026-07-28", "notifications/cancelled", NULL, NULL, 202, 0, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{" PV "," CAPS ",\"io.modelcontextprotocol/clientInfo\":\"me\"}}}",
		  "2026-07-28", "tools/list", NULL, NULL, 400, -32602, 0 },
		/* 24: _meta naming a 2025 version: served by the 2025 rules */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2025-11-25\"}}}",
		  "2025-11-25", NULL, NULL, "s", 200, 0, 0 },
	};
	size_t i;
	cJSON *r, *d;

	for (i = 0; i < NELEM(t); i++) {
		struct mcp_in in = { t[i].body, strlen(t[i].body), t[i].proto,
		    t[i].sid, NULL, NULL, t[i].hmethod, t[i].hname };
		struct mcp_out out;

		mcp_dispatch(&in, &out);
		if (out.status != t[i].status || out.npend != t[i].npend ||
		    (t[i].code != 0 && (out.body == NULL ||
		    err_code(out.body) != t[i].code)) ||
		    (t[i].code == 0 && out.body != NULL && err_code(out.body) != 0))
			fprintf(stderr, "  modern case %zu: status %d code %d npend %zu\n",
			    i, out.status, out.body ? err_code(out.body) : 0, out.npend);
		CHECK_INT(out.status, t[i].status);
		CHECK_INT(out.npend, t[i].npend);
		if (t[i].code != 0)
			CHECK(out.body != NULL && err_code(out.body) == t[i].code);
		r = cJSON_GetObjectItem(out.body, "result");
		switch (i) {
		case 0:
			CHECK_STR(cJSON_GetObjectItem(r, "resultType")->valuestring, "complete");
			CHECK_STR(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "supportedVersions"), 0)->valuestring, "2026-07-28");
			CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "supportedVersions")), 4);
			CHECK(cJSON_IsObject(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "capabilities"), "tools")));
			CHECK(cJSON_IsNumber(cJSON_GetObjectItem(r, "ttlMs")));
			CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "_meta"),
			    "io.modelcontextprotocol/serverInfo"), "name")->valuestring, "sandbox-orchestrator");
			break;
		case 7: case 10:
			CHECK_INT(out.modern, 1);
			CHECK_INT(out.version, MCP_V_0728);
			CHECK_INT(out.pend[0].tc->structured, 1);
			out.pend[0].tc->result = toolres_text("done", 0);
			CHECK_INT(mcp_complete(&out, 0), 1);
			r = cJSON_GetObjectItem(out.body, "result");
			CHECK_STR(cJSON_GetObjectItem(r, "resultType")->valuestring, "complete");
			CHECK(cJSON_IsObject(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "_meta"),
			    "io.modelcontextprotocol/serverInfo")));
			break;
		case 15:
			d = cJSON_GetObjectItem(cJSON_GetObjectItem(out.body, "error"), "data");
			CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(d, "supported")), 4);
			CHECK_STR(cJSON_GetObjectItem(d, "requested")->valuestring, "2027-01-01");
			CHECK_STR(cJSON_GetObjectItem(out.body, "id")->valuestring, "1");
			break;
		case 17:
			CHECK_INT(out.era.log_level, 1);
			CHECK_STR(cJSON_GetObjectItem(r, "cacheScope")->valuestring, "public");
			CHECK(cJSON_GetObjectItem(r, "ttlMs")->valuedouble > 0);
			CHECK_STR(cJSON_GetObjectItem(r, "resultType")->valuestring, "complete");
			break;
		case 21:
			CHECK_INT(out.listen, 1);
			CHECK(out.listen_id != NULL);
			break;
		case 24:
			CHECK_INT(out.modern, 0);
			CHECK(cJSON_GetObjectItem(r, "resultType") == NULL);
			break;
		}
		mcp_out_free(&out);
	}
}

/* What _meta asks beyond the version: tasks, trace context. */
TEST(test_mcp_modern_meta)
{
	const char *b = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{" PV ","
	    "\"io.modelcontextprotocol/clientCapabilities\":{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}},"
	    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"c\\u0001\",\"version\":\"2\"},"
	    "\"traceparent\":\"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01\",\"tracestate\":\"a=b\"}}}";
	const char *bad = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{" PV "," CAPS ","
	    "\"traceparent\":\"00-00000000000000000000000000000000-00f067aa0ba902b7-01\"}}}";
	struct mcp_in in = { b, strlen(b), "2026-07-28", NULL, NULL, NULL, "tools/list", NULL };
	struct mcp_out out;

	mcp_dispatch(&in, &out);
	CHECK_INT(out.status, 200);
	CHECK_INT(out.era.tasks, 1);
	CHECK_STR(out.era.traceparent, "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01");
	CHECK_STR(out.era.tracestate, "a=b");
	CHECK(strchr(out.era.client, '\x01') == NULL);	/* escaped for logs */
	mcp_out_free(&out);
	in.body = bad;
	in.len = strlen(bad);
	mcp_dispatch(&in, &out);
	CHECK_INT(out.status, 200);
	CHECK_INT(out.era.tasks, 0);
	CHECK_STR(out.era.traceparent, "");	/* an all-zero trace id is invalid */
	mcp_out_free(&out);
}

TEST(test_mcp_batch_0326)
{
	const char *b = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
	    "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"true\"}}},"
	    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nope\"},"
	    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-03-26\"}},"
	    "7]";
	struct mcp_in in = { b, strlen(b), NULL, "sess", NULL, NULL, NULL, NULL };
	struct mcp_out out;
	cJSON *item;

	mcp_dispatch(&in, &out);
	CHECK_INT(out.status, 200);
	CHECK_INT(out.npend, 1);
	CHECK(cJSON_IsArray(out.body));
	CHECK_INT(cJSON_GetArraySize(out.body), 5);
	CHECK_INT(err_code(cJSON_GetArrayItem(out.body, 2)), -32601);
	CHECK_INT(err_code(cJSON_GetArrayItem(out.body, 3)), -32600);
	CHECK_INT(err_code(cJSON_GetArrayItem(out.body, 4)), -32600);
	/* complete the pending call: the placeholder is replaced */
	out.pend[0].tc->result = toolres_text("done", 0);
	CHECK_INT(mcp_complete(&out, 0), 1);
	item = cJSON_GetArrayItem(out.body, 1);
	CHECK(cJSON_IsString(cJSON_GetObjectItem(item, "id")));
	CHECK(cJSON_IsObject(cJSON_GetObjectItem(item, "result")));
	mcp_out_free(&out);
}

TEST(test_mcp_tools_list)
{
	const char *b = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}";
	struct mcp_in in = { b, strlen(b), "2025-11-25", NULL, NULL, NULL, NULL, NULL };
	struct mcp_out out;
	cJSON *tools, *t;
	int n = 0;

	mcp_dispatch(&in, &out);
	CHECK_INT(out.status, 200);
	tools = cJSON_GetObjectItem(cJSON_GetObjectItem(out.body, "result"), "tools");
	cJSON_ArrayForEach(t, tools) {
		cJSON *s = cJSON_GetObjectItem(t, "inputSchema");
		CHECK(cJSON_IsString(cJSON_GetObjectItem(t, "name")));
		CHECK(cJSON_IsString(cJSON_GetObjectItem(t, "description")));
		CHECK(cJSON_IsObject(s));
		CHECK_STR(cJSON_GetObjectItem(s, "type")->valuestring, "object");
		n++;
	}
	CHECK_INT(n, 16);
	mcp_out_free(&out);
}

TEST(test_mcp_progress_token)
{
	const char *b = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"shell\",\"arguments\":{\"command\":\"sleep 1\"},\"_meta\":{\"progressToken\":0}}}";
	struct mcp_in in = { b, strlen(b), NULL, "s1", "org", "user", NULL, NULL };
	struct mcp_out out;

	mcp_dispatch(&in, &out);
	CHECK_INT(out.npend, 1);
	CHECK_INT(out.want_progress, 1);	/* token 0 is a token */
	CHECK_STR(out.pend[0].tc->sid, "s1");
	CHECK_STR(out.pend[0].tc->org, "org");
	mcp_out_free(&out);
}

TEST(test_mcp_cancel)
{
	static const struct {
		const char	*body;
		int		 ncancel;	/* ids collected for the HTTP layer */
	} t[] = {
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"c-1\",\"reason\":\"x\"}}", 1 },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":0}}", 1 },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":null}}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":{}}}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":[1]}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"requestId\":1}}", 0 },
		{ "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}},"
		  "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"2\"}}]", 2 },
	};
	struct mcp_out out;
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		struct mcp_in in = { t[i].body, strlen(t[i].body), NULL, "s", NULL, NULL, NULL, NULL };

		mcp_dispatch(&in, &out);
		CHECK_INT(out.status, 202);	/* notifications: never answered */
		CHECK(out.body == NULL);
		CHECK_INT(out.cancels ? cJSON_GetArraySize(out.cancels) : 0, t[i].ncancel);
		mcp_out_free(&out);
	}
}

/* A cancelled call gets no response: single -> no body (202); batch -> left out. */
TEST(test_mcp_cancelled_no_response)
{
	const char *one = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"sleep 9\"}}}";
	const char *batch = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"a\"}}},"
	    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"b\"}}}]";
	struct mcp_in in = { one, strlen(one), NULL, "s", NULL, NULL, NULL, NULL };
	struct mcp_out out;

	mcp_dispatch(&in, &out);
	CHECK_INT(out.npend, 1);
	atomic_store(&out.pend[0].tc->cancelled, 1);
	out.pend[0].tc->result = toolres_text("interrupted", 1);
	CHECK_INT(mcp_complete(&out, 0), 1);
	CHECK(out.body == NULL);
	CHECK_INT(out.status, 202);
	mcp_out_free(&out);

	in.body = batch;
	in.len = strlen(batch);
	mcp_dispatch(&in, &out);
	CHECK_INT(out.npend, 2);
	atomic_store(&out.pend[0].tc->cancelled, 1);
	CHECK_INT(mcp_complete(&out, 0), 0);
	out.pend[1].tc->result = toolres_text("b done", 0);
	CHECK_INT(mcp_complete(&out, 1), 1);
	CHECK_INT(cJSON_GetArraySize(out.body), 2);	/* ping + id 3 */
	CHECK_STR(member_text(cJSON_GetArrayItem(out.body, 1), "id"), "3");
	mcp_out_free(&out);
}

/*
 * Ids come back exactly as sent: integers past 2^53 and past 2^64 digit
 * for digit, strings with escapes and NULs as written; ids that are no
 * integer (a fraction, an exponent, a leading zero, too long) are -32600.
 */
TEST(test_mcp_ids_exact)
{
	static const struct {
		const char	*id;	/* as written in the request */
		int		 status;
		const char	*echo;	/* the reply's id; NULL: as written */
	} t[] = {
		{ "0", 200, NULL },
		{ "-7", 200, NULL },
		{ "9007199254740993", 200, NULL },
		{ "12345678901234567890", 200, NULL },
		{ "-123456789012345678901234567890", 200, NULL },
		{ "1234567890123456789012345678901234567890123456789012345678901234", 200, NULL },
		{ "12345678901234567890123456789012345678901234567890123456789012345", 400, "null" },
		{ "1.5", 400, "null" },
		{ "1.0", 400, "null" },
		{ "1e3", 400, "null" },
		{ "-0.0", 400, "null" },
		{ "\"a\\u0000b\"", 200, NULL },
		{ "\"\\u00e9\\ud83d\\ude00\"", 200, "\"\xc3\xa9\xf0\x9f\x98\x80\"" },
		{ "\"x\"", 200, NULL },
	};
	char body[512], want[512];
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		struct mcp_out out;
		struct mcp_in in = { body, 0, NULL, "s", NULL, NULL, NULL, NULL };
		char *txt;

		snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":%s,"
		    "\"method\":\"ping\"}", t[i].id);
		in.len = strlen(body);
		mcp_dispatch(&in, &out);
		CHECK_INT(out.status, t[i].status);
		if (t[i].status == 400)
			CHECK_INT(err_code(out.body), -32600);
		CHECK_STR(member_text(out.body, "id"), t[i].echo ? t[i].echo : t[i].id);
		txt = cJSON_PrintUnformatted(out.body);
		snprintf(want, sizeof(want), "\"id\":%s,", t[i].echo ? t[i].echo :
		    t[i].id);
		CHECK(txt != NULL && strstr(txt, want) != NULL);
		free(txt);
		mcp_out_free(&out);
	}
}

/* Big integer ids of a batch, a progressToken and a requestId too. */
TEST(test_mcp_ids_exact_elsewhere)
{
	const char *b = "[{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"method\":\"ping\"},"
	    " {\"method\":\"ping\",\"jsonrpc\":\"2.0\",\"id\":18446744073709551617}]";
	const char *p = "{\"params\":{\"_meta\":{\"progressToken\":9007199254740995},"
	    "\"name\":\"shell\",\"arguments\":{\"command\":\"true\"}},\"jsonrpc\":\"2.0\","
	    "\"method\":\"tools/call\",\"id\":12345678901234567891}";
	const char *c = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
	    "\"params\":{\"requestId\":12345678901234567891}}";
	struct mcp_in in = { b, strlen(b), NULL, "s", NULL, NULL, NULL, NULL };
	struct mcp_out out;
	char *txt;

	mcp_dispatch(&in, &out);
	CHECK_INT(out.status, 200);
	CHECK_STR(member_text(cJSON_GetArrayItem(out.body, 0), "id"), "9007199254740993");
	CHECK_STR(member_text(cJSON_GetArrayItem(out.body, 1), "id"), "18446744073709551617");
	mcp_out_free(&out);

	in.body = p;
	in.len = strlen(p);
	mcp_dispatch(&in, &out);
	CHECK_INT(out.npend, 1);
	CHECK_INT(out.want_progress, 1);
	txt = cJSON_PrintUnformatted(out.progress_token);
	CHECK_STR(txt, "9007199254740995");
	free(txt);
	out.pend[0].tc->result = toolres_text("ok", 0);
	CHECK_INT(mcp_complete(&out, 0), 1);
	CHECK_STR(member_text(out.body, "id"), "12345678901234567891");
	{
		/* the cancel names the same request: the ids compare equal */
		struct mcp_in ci = { c, strlen(c), NULL, "s", NULL, NULL, NULL, NULL };
		struct mcp_out co;
		cJSON *id = cJSON_GetObjectItem(out.body, "id");

		mcp_dispatch(&ci, &co);
		CHECK(co.cancels != NULL &&
		    cJSON_Compare(cJSON_GetArrayItem(co.cancels, 0), id, 1));
		mcp_out_free(&co);
	}
	mcp_out_free(&out);
}

/*
 * A NUL (\u0000) never reaches a reader cut short: in a method it is no
 * method, in a tool name no tool, in an argument the tool refuses it; a
 * raw NUL byte is no JSON.
 */
TEST(test_mcp_nul_refused)
{
	static const struct {
		const char	*body;
		int		 status, code;
		size_t		 npend;
	} t[] = {
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\\u0000x\"}", 400, -32600, 0 },
		{ "{\"jsonrpc\":\"2.0\\u0000\",\"id\":1,\"method\":\"ping\"}", 400, -32600, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\\u0000\",\"arguments\":{}}}", 200, -32602, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\\u0000\"}}", 200, -32602, 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"ls\\u0000rm -rf /\"}}}", 200, 0, 1 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\\u0000x\":\"ls\"}}}", 200, 0, 1 },
		/* an escaped backslash before u0000 is no NUL */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"echo \\\\u0000\"}}}", 200, 0, 1 },
	};
	static const char rawnul[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"a\0b\"}";
	struct mcp_in in = { rawnul, sizeof(rawnul) - 1, NULL, "s", NULL, NULL, NULL, NULL };
	struct mcp_out out;
	char err[512];
	size_t i;

	for (i = 0; i < NELEM(t); i++) {
		in.body = t[i].body;
		in.len = strlen(t[i].body);
		mcp_dispatch(&in, &out);
		CHECK_INT(out.status, t[i].status);
		CHECK_INT(out.npend, t[i].npend);
		if (t[i].code != 0)
			CHECK_INT(err_code(out.body), t[i].code);
		if (out.npend == 1) {
			int r = tools_check(out.pend[0].tc->name, out.pend[0].tc->args,
			    err, sizeof(err));
			if (i + 1 == NELEM(t)) {
				CHECK_INT(r, 0);
				CHECK_STR(schema_str(out.pend[0].tc->args, "command"),
				    "echo \\u0000");
			} else {
				CHECK_INT(r, -1);
				CHECK(strncmp(err, "argument 'command' contains a NUL "
				    "character (\\u0000)", 52) == 0);
			}
		}
		mcp_out_free(&out);
	}
	in.body = rawnul;
	in.len = sizeof(rawnul) - 1;
	mcp_dispatch(&in, &out);
	CHECK_INT(out.status, 400);
	CHECK_INT(err_code(out.body), -32700);
	mcp_out_free(&out);
}

int
main(void)
{
	if (tools_init() == -1)
		return 1;
	RUN(test_mcp_table);
	RUN(test_mcp_initialize_negotiation);
	RUN(test_mcp_modern);
	RUN(test_mcp_modern_meta);
	RUN(test_mcp_batch_0326);
	RUN(test_mcp_tools_list);
	RUN(test_mcp_progress_token);
	RUN(test_mcp_cancel);
	RUN(test_mcp_cancelled_no_response);
	RUN(test_mcp_ids_exact);
	RUN(test_mcp_ids_exact_elsewhere);
	RUN(test_mcp_nul_refused);
	tools_cleanup();
	return unit_done();
}
