/*
 * fuzz_orch_jsonrpc.c: the MCP JSON-RPC dispatch (mcp.c) on arbitrary
 * bodies. The first byte picks the MCP-Protocol-Version header and whether
 * X-Session-Id is present; pending tool calls are completed with a canned
 * result so the batch reply assembly runs too.
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
	    "2025-11-25", "bogus" };
	struct mcp_in in = { 0 };
	struct mcp_out out;
	size_t i;
	char *txt;

	if (tools_init() == -1)
		abort();
	if (len == 0)
		return 0;
	in.proto = protos[data[0] % 5];
	in.sid = (data[0] & 0x80) ? "fuzz-session" : NULL;
	in.body = (const char *)data + 1;
	in.len = len - 1;
	mcp_dispatch(&in, &out);
	if (out.status < 200 || out.status > 599)
		abort();
	if (out.status == 202 && out.body != NULL)
		abort();
	for (i = 0; i < out.npend; i++) {
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
