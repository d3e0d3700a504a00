// apps-sdk.mjs: one app-tool call made with the official MCP TypeScript SDK
// client (tests/e2e/72-apps-local.sh). The client checks each result's
// structuredContent against the tool's outputSchema (after listTools).
// Prints the structuredContent as JSON, or {"error": text} for a tool error.
//
//   node apps-sdk.mjs URL KEY SESSION TOOL 'ARGS_JSON'
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, key, sid, tool, args] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}`, 'X-Session-Id': sid } },
});
const client = new Client({ name: 'apps-e2e', version: '1.0.0' });
try {
  await client.connect(transport);
  await client.listTools();
  const r = await client.callTool({ name: tool, arguments: JSON.parse(args || '{}') },
    undefined, { timeout: 120000 });
  if (r.isError)
    console.log(JSON.stringify({ error: r.content.map((c) => c.text || '').join('') }));
  else
    console.log(JSON.stringify(r.structuredContent));
  await client.close();
} catch (e) {
  console.log(JSON.stringify({ error: `threw ${e && e.message ? e.message : e}` }));
  process.exitCode = 1;
}
