/*
 * fuzz_orch_jsonrpc.c: the MCP JSON-RPC dispatch (mcp.c, era.c) on
 * arbitrary bodies. The first byte picks the MCP-Protocol-Version header
 * (2026-07-28 among them) and whether X-Session-Id is present, the second
 * the Mcp-Method and Mcp-Name headers and whether tasks are served;
 * pending calls are completed with a canned result (or, for every other
 * one, a JSON-RPC error as a task method can give) so the reply assembly
 * runs too.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "mcp/mcp.h"
#include "mcp/tools.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const char *const protos[] = { NULL, "2025-03-26", "2025-06-18",
	    "2025-11-25", "bogus", "2026-07-28", "2026-07-28" };
	static const char *const methods[] = { NULL, "tools/call", "tools/list",
	    "server/discover", "tasks/get", "subscriptions/listen", "initialize",
	    "Tools/List" };
	static const char *const names[] = { NULL, "shell", "=?base64?c2hlbGw=?=",
	    "s-00~fuzz-session", "=?base64?!?=", "sandbox_status", "", "shell " };
	struct mcp_in in = { 0 };
	struct mcp_out out;
	size_t i;
	char *txt;

	if (tools_init() == -1)
		abort();
	if (len < 2)
		return 0;
	in.proto = protos[data[0] % 7];
	in.sid = (data[0] & 0x80) ? "fuzz-session" : NULL;
	in.hmethod = methods[data[1] & 7];
	in.hname = names[(data[1] >> 3) & 7];
	in.tasks = (data[1] & 0x40) != 0;
	in.body = (const char *)data + 2;
	in.len = len - 2;
	mcp_dispatch(&in, &out);
	if (out.status < 200 || out.status > 599)
		abort();
	if (out.status == 202 && out.body != NULL)
		abort();
	for (i = 0; i < out.npend; i++) {
		if (i % 2 == 1)
			out.pend[i].tc->rpc_error = cJSON_Parse("{\"code\":-32602,"
			    "\"message\":\"Unknown task\"}");
		else
			out.pend[i].tc->result = toolres_text("ok", 0);
		(void)mcp_complete(&out, i);
	}
	if (out.body != NULL) {
		txt = cJSON_PrintUnformatted(out.body);
		free(txt);
	}
	mcp_out_free(&out);
	return 0;
}
