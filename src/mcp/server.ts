/**
 * The MCP servers: built once with their tools and reused across requests (one request at a time each); the caller and
 * services of a request reach its tools through that request's authInfo, never through the server.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { Services } from "../services";
import { TOOLS, runTool, type ToolCaller, type ToolContext } from "./tools";

export const MCP_INSTRUCTIONS = [
  "SpendGate pays x402 sellers in USDC for this agent, under a spend policy its human owner set on-chain.",
  "Rules: call get_limits before spending; call verify_merchant before paying a merchant that is new to you;",
  "give every payment a meaningful intent; never retry a blocked payment: report the reason to your owner and stop;",
  "a pending payment waits for your owner: do not retry it; you can never approve your own payments.",
].join(" ");

// Built once: by default every McpServer compiles a new Ajv instance (about 0.5 ms).
const VALIDATOR = new AjvJsonSchemaValidator();
// Idle servers kept for reuse; more concurrent requests build more, the surplus is dropped when they end.
const MAX_IDLE = 16;

/** The tool context of each request, keyed by the authInfo object the SDK hands to that request's handlers. */
const callers = new WeakMap<AuthInfo, ToolContext>();

export function createMcpServer(): McpServer {
  const server = new McpServer({ name: "spendgate", version: "0.1.0" }, { instructions: MCP_INSTRUCTIONS, jsonSchemaValidator: VALIDATOR });
  for (const def of TOOLS) {
    server.registerTool(
      def.name,
      { title: def.title, description: def.description, inputSchema: def.input, outputSchema: def.output, annotations: def.annotations },
      (args: unknown, extra: { authInfo?: AuthInfo }) => {
        const ctx = extra.authInfo && callers.get(extra.authInfo);
        // The route always binds a caller: a request without one is a bug, and it must not run a tool.
        if (!ctx) throw new Error("MCP tool call without a resolved caller");
        return runTool(def, ctx, args);
      },
    );
  }
  return server;
}

/** The authInfo for one request: the SDK passes it to every handler of that request, and only of that request. */
export function bindCaller(s: Services, caller: ToolCaller): AuthInfo {
  const authInfo: AuthInfo = { token: "", clientId: caller.principal.keyPrefix, scopes: [] };
  callers.set(authInfo, { ...caller, s, logger: s.ctx.logger.child({ mcp: true, agent: caller.address }) });
  return authInfo;
}

/**
 * Reusable servers. An McpServer holds one transport at a time, so each request takes its own. A server that saw an
 * `initialize` keeps that client's capabilities, and one whose request did not end cleanly may still run a handler:
 * neither goes back to the pool.
 */
export class McpServerPool {
  private readonly idle: McpServer[] = [];

  acquire(): McpServer {
    return this.idle.pop() ?? createMcpServer();
  }

  release(server: McpServer): void {
    if (this.idle.length < MAX_IDLE) this.idle.push(server);
  }
}
