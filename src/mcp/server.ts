/** createMcpServer: one stateless MCP server per request, its tools bound to the caller resolved over HTTP. */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { Services } from "../services";
import { TOOLS, runTool, type ToolCaller } from "./tools";

export const MCP_INSTRUCTIONS = [
  "SpendGate pays x402 sellers in USDC for this agent, under a spend policy its human owner set on-chain.",
  "Rules: call get_limits before spending; call verify_merchant before paying a merchant that is new to you;",
  "give every payment a meaningful intent; never retry a blocked payment: report the reason to your owner and stop;",
  "a pending payment waits for your owner: do not retry it; you can never approve your own payments.",
].join(" ");

// Built once: by default every McpServer compiles a new Ajv instance (about 0.5 ms), and one is made per request.
const VALIDATOR = new AjvJsonSchemaValidator();

export function createMcpServer(s: Services, caller: ToolCaller): McpServer {
  const server = new McpServer({ name: "spendgate", version: "0.1.0" }, { instructions: MCP_INSTRUCTIONS, jsonSchemaValidator: VALIDATOR });
  const ctx = { ...caller, s, logger: s.ctx.logger.child({ mcp: true, agent: caller.agent.address }) };
  for (const def of TOOLS) {
    server.registerTool(
      def.name,
      { title: def.title, description: def.description, inputSchema: def.input, outputSchema: def.output, annotations: def.annotations },
      (args: unknown) => runTool(def, ctx, args),
    );
  }
  return server;
}
