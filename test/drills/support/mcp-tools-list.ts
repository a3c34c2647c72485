import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

/**
 * `node mcp-tools-list.ts <daemon url>`: an anonymous MCP client (no token) lists the daemon's
 * tools and prints `{"tools": [names]}`; it exits non-zero when the daemon refuses it. The
 * multi-host drill runs it inside a host's namespace, against that host's loopback.
 */
const url = process.argv[2];
if (!url) throw new Error("usage: mcp-tools-list.ts <daemon url>");
const client = new Client({ name: "svc-drill", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
const { tools } = await client.listTools();
process.stdout.write(`${JSON.stringify({ tools: tools.map((tool) => tool.name) })}\n`);
await client.close();
