/**
 * The MCP servers: built once with their tools and reused across requests (one request at a time each); the caller and
 * services of a request reach its tools through that request's authInfo, never through the server.
 *
 * Their tools are not registered with McpServer.registerTool: its handlers convert every schema on every tools/list and
 * validate each input and output a second time. Two handlers of ours on the underlying server do instead: tools/list
 * answers a list converted to JSON Schema once, and tools/call validates a tool's input and output once each, with the
 * tool's own schemas.
 */
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  ToolSchema,
  type ListToolsResult,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { notFound } from "../errors";
import type { Services } from "../services";
import { errorResult } from "./results";
import { TOOLS, runTool, type AnyToolDef, type ToolCaller, type ToolContext } from "./tools";

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

const BY_NAME = new Map(TOOLS.map((def) => [def.name, def]));

/** A tool as tools/list shows it: its schemas converted exactly as the SDK's McpServer converts them (draft-7). */
export function listedTool(def: AnyToolDef): Tool {
  return ToolSchema.parse({
    name: def.name,
    title: def.title,
    description: def.description,
    inputSchema: z.toJSONSchema(def.input, { target: "draft-7", io: "input" }),
    annotations: def.annotations,
    execution: { taskSupport: "forbidden" },
    outputSchema: z.toJSONSchema(def.output, { target: "draft-7", io: "output" }),
  });
}

// The same for every caller (every key that reaches /mcp sees the same six tools), so converted once.
let toolList: ListToolsResult | undefined;
const listTools = (): ListToolsResult => (toolList ??= { tools: TOOLS.map(listedTool) });

/** The tool context of each request, keyed by the authInfo object the SDK hands to that request's handlers. */
const callers = new WeakMap<AuthInfo, ToolContext>();

export function createMcpServer(): McpServer {
  const mcp = new McpServer({ name: "spendgate", version: "0.1.0" }, { instructions: MCP_INSTRUCTIONS, jsonSchemaValidator: VALIDATOR });
  // The capability McpServer.registerTool would declare.
  mcp.server.registerCapabilities({ tools: { listChanged: true } });
  mcp.server.setRequestHandler(ListToolsRequestSchema, listTools);
  mcp.server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const ctx = extra.authInfo && callers.get(extra.authInfo);
    // The route always binds a caller: a request without one is a bug, and it must not run a tool.
    if (!ctx) throw new Error("MCP tool call without a resolved caller");
    const def = BY_NAME.get(request.params.name);
    if (!def) {
      const known = TOOLS.map((t) => t.name).join(", ");
      return errorResult(notFound(`No tool named ${request.params.name.slice(0, 64)}; the tools are ${known}.`), ctx.logger, "");
    }
    return runTool(def, ctx, request.params.arguments ?? {});
  });
  return mcp;
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
