/**
 * /mcp: the tool server for agents, stateless Streamable HTTP (a new server and transport per POST, JSON answers).
 * The Bearer key and X-Agent-Address are checked here, before the MCP layer, and answer in the REST error shape.
 */
import type { IncomingMessage } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import { AppError, badRequest, forbidden, payloadTooLarge, unauthorized } from "../../errors";
import { createMcpServer } from "../../mcp/server";
import { Address } from "../../schemas/common";
import { JsonRpcMessage, JsonRpcResponse } from "../../schemas/system";
import { json, operation, rawOperation } from "../operation";

export const MCP_PATH = "/mcp";
const MAX_BODY_BYTES = 256 * 1024;

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw payloadTooLarge(`An MCP message may be at most ${MAX_BODY_BYTES} bytes.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

export const MCP_OPERATIONS = [
  rawOperation({
    method: "POST",
    path: MCP_PATH,
    tag: "MCP",
    summary: "MCP tool server (stateless Streamable HTTP, JSON answers)",
    description:
      "Tools: get_limits, verify_merchant, pay, get_balance, list_transactions, get_payment (see MCP tools). The key and " +
      "X-Agent-Address are checked before the MCP layer: 401 without a valid key, 400 without a valid address, 403 for an " +
      "agent the key may not act for. Clients must accept application/json and text/event-stream.",
    auth: "mcp",
    input: z.object({}),
    headers: [{ name: "X-Agent-Address", required: true, description: "the agent the tools act for" }],
    ownBody: JsonRpcMessage,
    responses: {
      200: json("the JSON-RPC response", JsonRpcResponse),
      202: { description: "a notification or response was accepted (no body)" },
      406: json("JSON-RPC error: the Accept header must allow application/json and text/event-stream", JsonRpcResponse),
    },
    errors: ["bad_request", "unauthorized", "forbidden", "payload_too_large", "unsupported_media_type"],
    serve: async ({ ctx, principal, deps: { s } }) => {
      if (!principal) throw unauthorized("The MCP server needs 'Authorization: Bearer <API key>' and 'X-Agent-Address: <agent address>'.");
      if (principal.role === "registrar") throw forbidden("The registration token cannot use the MCP server; use the agent's API key.");
      const header = ctx.get("X-Agent-Address");
      if (!header) throw badRequest("The MCP server needs the header 'X-Agent-Address: <agent address>'.");
      const address = Address.safeParse(header);
      if (!address.success) throw badRequest("X-Agent-Address must be a 0x-prefixed 20-byte address.");
      const agent = await s.agents.authorize(principal, address.data);

      const text = await readBody(ctx.req);
      let message: unknown;
      try {
        message = JSON.parse(text);
      } catch {
        ctx.status = 400;
        ctx.body = { jsonrpc: "2.0", error: { code: -32700, message: "Parse error: the body is not JSON." }, id: null };
        return;
      }

      const server = createMcpServer(s, { principal, agent });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      ctx.respond = false; // the transport writes the answer
      ctx.res.on("close", () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(ctx.req, ctx.res, message);
      } catch (err) {
        // Koa no longer answers for us: never leave the request hanging.
        s.ctx.logger.error({ err, requestId: ctx.state.requestId }, "mcp transport failed");
        if (!ctx.res.headersSent) {
          ctx.res.writeHead(500, { "Content-Type": "application/json" });
          ctx.res.end(
            JSON.stringify({ error: "internal", message: "Something went wrong on our side; nothing was charged.", status: 500 }),
          );
        } else ctx.res.end();
      }
    },
  }),
  // Stateless: no server-sent event stream to open (GET) and no session to end (DELETE).
  ...(["GET", "DELETE"] as const).map((method) =>
    operation({
      method,
      path: MCP_PATH,
      tag: "MCP",
      summary: `Not offered by the stateless MCP server (${method})`,
      description: "No server-sent event stream and no session: 405 with `Allow: POST`.",
      auth: "none",
      input: z.object({}),
      responses: {},
      errors: ["method_not_allowed"],
      handle: async () => {
        throw new AppError(405, "method_not_allowed", "The MCP server is stateless: send JSON-RPC messages with POST /mcp.", undefined, {
          Allow: "POST",
        });
      },
    }),
  ),
];
