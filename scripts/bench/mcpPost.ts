/**
 * A tool call the way a stateless MCP client sends it: one JSON-RPC `tools/call` (or `tools/list`) POSTed to /mcp on
 * a kept-alive connection, answer read whole. Measures the server, not an SDK client's own validation and bookkeeping.
 */
import http from "node:http";

export interface McpPoster {
  call(name: string, args?: Record<string, unknown>): Promise<unknown>;
  /** tools/list: the tools and their schemas. */
  list(): Promise<unknown>;
  close(): void;
}

export function mcpPoster(baseUrl: string, headers: Record<string, string>): McpPoster {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let id = 0;
  const post = (body: string) =>
    new Promise<string>((resolve, reject) => {
      const req = http.request(
        `${baseUrl}/mcp`,
        {
          method: "POST",
          agent,
          headers: {
            ...headers,
            "Content-Type": "application/json",
            Accept: "application/json, text/event-stream",
            "Content-Length": Buffer.byteLength(body),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            if (res.statusCode === 200) resolve(text);
            else reject(new Error(`POST /mcp answered ${String(res.statusCode)}: ${text}`));
          });
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  return {
    async call(name, args = {}) {
      const text = await post(JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name, arguments: args } }));
      const answer = JSON.parse(text) as { result?: { isError?: boolean }; error?: unknown };
      if (!answer.result || answer.result.isError) throw new Error(`${name} failed: ${text}`);
      return answer.result;
    },
    async list() {
      const text = await post(JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/list" }));
      const answer = JSON.parse(text) as { result?: { tools?: unknown[] } };
      if (!answer.result?.tools?.length) throw new Error(`tools/list failed: ${text.slice(0, 200)}`);
      return answer.result;
    },
    close: () => agent.destroy(),
  };
}
