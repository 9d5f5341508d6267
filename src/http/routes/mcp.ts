/**
 * /mcp: the tool server for agents, stateless Streamable HTTP (a new transport per POST on a reused server, JSON answers).
 * The Bearer key and X-Agent-Address are checked here, before the MCP layer, and answer in the REST error shape.
 */
import type { IncomingMessage } from "node:http";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";
import { appError, badRequest, forbidden, payloadTooLarge, unauthorized } from "../../errors";
import { McpServerPool, bindCaller, createMcpServer } from "../../mcp/server";
import { TOOLS, type ToolCaller } from "../../mcp/tools";
import { UNKNOWN_KEY, bearerToken } from "../auth";
import { PAYING_KEY_MEMORY_MS } from "../../services/keys";
import type { Services } from "../../services";
import type { NetworkServices } from "../../services/networks";
import type { AgentDoc } from "../../store/documents";
import { Address } from "../../schemas/common";
import { JsonRpcMessage, JsonRpcResponse } from "../../schemas/system";
import { json, operation, rawOperation } from "../../api/operation";

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

const servers = new McpServerPool();

/**
 * Who the tools act for, and the services of its network. With one network, an agent key naming its own agent is
 * allowed without a read: agents are never deleted and an agent key is issued only once its agent exists; the agent's
 * document is read (and checked the same way, its network too) only by the tools that need more than its address.
 * Every other caller, and any agent of a service of several networks, is checked against the agent's document first.
 */
async function callerOf(
  networks: NetworkServices,
  principal: ToolCaller["principal"],
  address: string,
): Promise<{ caller: ToolCaller; s: Services }> {
  if (principal.role === "agent" && principal.agentAddress === address && networks.all.length === 1) {
    const s = networks.first;
    let doc: Promise<AgentDoc> | undefined;
    const read = () => s.agents.authorize(principal, address).then((a) => (networks.of(a), a));
    const agent = () => (doc ??= read());
    // A payment reads it itself, when it pays (payOnce): a read by an earlier tool of the same message may be old by then.
    return { caller: { principal, address, agent, payer: () => read }, s };
  }
  const { agent: doc, s } = await networks.authorize(principal, address);
  // A payment reads it again (checked the same way) when it pays: the message's body may have taken long to arrive.
  const payer = () => () => s.agents.authorize(principal, doc.address);
  return { caller: { principal, address: doc.address, agent: () => Promise.resolve(doc), payer }, s };
}

/**
 * Tools that change nothing and reach nothing outside the service (readOnlyHint, no openWorldHint): a call of one may run
 * on a remembered key lookup. verify_merchant asks the seller for its price, so it is not one of them.
 */
const READ_TOOLS = new Set(
  TOOLS.filter((t) => t.annotations.readOnlyHint === true && t.annotations.openWorldHint === false).map((t) => t.name),
);

/** A JSON-RPC message's method (undefined for a response or anything that is not an object). */
const methodOf = (m: unknown): unknown => (typeof m === "object" && m !== null ? (m as { method?: unknown }).method : undefined);

/** A message that can change nothing: tools/list, ping, a read-only tool's call, or a response or notification. */
function changesNothing(m: unknown): boolean {
  if (typeof m !== "object" || m === null) return false;
  const method = methodOf(m);
  if (method === undefined) return true; // a response: the stateless server asked nothing, so it is dropped
  if (method === "tools/list" || method === "ping" || (typeof method === "string" && method.startsWith("notifications/"))) return true;
  const name = toolOf(m);
  return typeof name === "string" && READ_TOOLS.has(name);
}

/** The tool a message calls (undefined for any other message). */
const toolOf = (m: unknown): unknown => (methodOf(m) === "tools/call" ? (m as { params?: { name?: unknown } }).params?.name : undefined);

const namesCancelled = (m: unknown): boolean => methodOf(m) === "notifications/cancelled";

const namesInitialize = (m: unknown): boolean => methodOf(m) === "initialize";

/** The request as the SDK's web-standard transport reads it: its headers (the body is already parsed). */
function webRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return new Request(`http://${req.headers.host ?? "localhost"}${req.url ?? MCP_PATH}`, { method: "POST", headers });
}

/**
 * Closes a transport whose requests are all answered, which frees its server. Closing builds a "Connection closed"
 * error for requests still waiting, of which there are none here: its stack trace (a tenth of a call's time) is not
 * captured. close() runs synchronously up to the server's onclose.
 */
function closeQuietly(transport: WebStandardStreamableHTTPServerTransport): void {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    void transport.close();
  } finally {
    Error.stackTraceLimit = limit;
  }
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
      "agent the key may not act for. X-Agent-Address may be left out with an agent key (it names its one agent); an owner " +
      "key must send it. Clients must accept application/json and text/event-stream.",
    auth: "mcp",
    input: z.object({}),
    headers: [
      {
        name: "X-Agent-Address",
        required: false,
        description: "the agent the tools act for; required with an owner key, optional with an agent key (default: its agent)",
      },
    ],
    ownBody: JsonRpcMessage,
    responses: {
      200: json("the JSON-RPC response", JsonRpcResponse),
      202: { description: "a notification or response was accepted (no body)" },
      406: json("JSON-RPC error: the Accept header must allow application/json and text/event-stream", JsonRpcResponse),
    },
    errors: ["bad_request", "unauthorized", "forbidden", "payload_too_large", "unsupported_media_type"],
    serve: async ({ ctx, principal, deps: { networks } }) => {
      if (!principal) throw unauthorized("The MCP server needs 'Authorization: Bearer <API key>' and 'X-Agent-Address: <agent address>'.");
      if (principal.role === "registrar") throw forbidden("The registration token cannot use the MCP server; use the agent's API key.");
      // An agent key names its one agent: the header may be left out. An owner key must say which agent.
      const header = ctx.get("X-Agent-Address") || (principal.role === "agent" ? principal.agentAddress : "");
      if (!header)
        throw badRequest("With an owner key the MCP server needs the header 'X-Agent-Address: <agent address>' (an agent key needs none).");
      const address = Address.safeParse(header);
      if (!address.success) throw badRequest("X-Agent-Address must be a 0x-prefixed 20-byte address.");
      const { caller, s } = await callerOf(networks, principal, address.data);

      const text = await readBody(ctx.req);
      let message: unknown;
      try {
        message = JSON.parse(text);
      } catch {
        ctx.status = 400;
        ctx.body = { jsonrpc: "2.0", error: { code: -32700, message: "Parse error: the body is not JSON." }, id: null };
        return;
      }
      let messages = Array.isArray(message) ? (message as unknown[]) : [message];
      // Stateless, with one JSON answer per POST: a cancellation can only name a request of its own batch, and the SDK
      // then never answers that request, which would hold the connection open for nothing. Such a cancellation is
      // dropped: the batch is answered whole.
      if (messages.length > 1 && messages.some(namesCancelled)) {
        messages = messages.filter((m) => !namesCancelled(m));
        message = messages;
      }
      // A key lookup remembered for reads stands only for messages that change nothing, and for payments as POST /pay's
      // does: while it is at most PAYING_KEY_MEMORY_MS old, or the revocation mark says no key was revoked since (a key
      // revoked on another instance stops paying within PAYING_KEY_MEMORY_MS); anything else reads the key again. A
      // key's role and agent never change: the caller stands once the key is found live.
      const paysOrReads = (m: unknown) => changesNothing(m) || toolOf(m) === "pay";
      const recent = (ctx.state.principalAge ?? Number.POSITIVE_INFINITY) < PAYING_KEY_MEMORY_MS;
      if (ctx.state.principalRemembered && !messages.every(changesNothing) && !(recent && messages.every(paysOrReads))) {
        const token = bearerToken(ctx.get("Authorization"));
        const found = token && (await (messages.every(paysOrReads) ? s.ctx.keys.lookup(token, "pay") : s.ctx.keys.resolve(token)));
        if (!found) throw unauthorized(UNKNOWN_KEY);
      }

      // A server that answers an initialize keeps that client's capabilities: it serves that request only. Any message
      // named initialize counts, valid or not (the SDK's isInitializeRequest is a whole schema parse, failing on most).
      const fresh = messages.some(namesInitialize);
      const server = fresh ? createMcpServer() : servers.acquire();
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      ctx.respond = false; // the answer is written below
      const gone = new Promise<null>((resolve) => ctx.res.once("close", () => resolve(null)));
      try {
        await server.connect(transport);
        const authInfo = bindCaller(s, caller);
        // A client that leaves stops the wait (a JSON answer is never resolved once its transport is closed).
        const response = await Promise.race([transport.handleRequest(webRequest(ctx.req), { parsedBody: message, authInfo }), gone]);
        if (!response) {
          // Its handlers may still be running: the server is not reused.
          await transport.close();
          return;
        }
        const text = await response.text();
        // With its length the answer leaves in one piece, not chunked.
        const headers: Record<string, string | number> = { "content-length": Buffer.byteLength(text) };
        response.headers.forEach((value, name) => (headers[name] = value));
        ctx.res.writeHead(response.status, headers);
        ctx.res.end(text);
        closeQuietly(transport);
        if (!fresh) servers.release(server);
      } catch (err) {
        // Koa no longer answers for us: never leave the request hanging.
        void transport.close();
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
      handle: () => {
        throw appError("method_not_allowed", "The MCP server is stateless: send JSON-RPC messages with POST /mcp.", {
          headers: { Allow: "POST" },
        });
      },
    }),
  ),
];
