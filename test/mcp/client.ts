/** An MCP client the way agents connect: the SDK's own Client over Streamable HTTP with the two headers. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

export async function mcpClient(baseUrl: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: "spendgate-test-agent", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers } }));
  return client;
}

/** The six tools an agent is given, by name in alphabetical order: none approves, denies or sets limits. */
export const AGENT_TOOLS = ["get_balance", "get_limits", "get_payment", "list_transactions", "pay", "verify_merchant"];

export const agentHeaders = (a: { apiKey: string; agentAddress: string }) => ({
  Authorization: `Bearer ${a.apiKey}`,
  "X-Agent-Address": a.agentAddress,
});

export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult & { structuredContent?: any }> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult & { structuredContent?: any };
}

/** The text of a result's first content block. */
export const textOf = (r: CallToolResult): string => (r.content[0] as { type: "text"; text: string }).text;

/** The REST-shaped error body an isError result carries as text. */
export const errorOf = (r: CallToolResult): { error: string; message: string; status: number } => JSON.parse(textOf(r));
