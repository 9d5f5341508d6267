/**
 * tools/list is converted once for every caller: it must stay exactly what the SDK's McpServer would list for the same
 * declarations (same JSON Schemas, annotations, capabilities and instructions), compared through the SDK Client.
 */
import { expect } from "chai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { MCP_INSTRUCTIONS, createMcpServer } from "../../src/mcp/server";
import { TOOLS } from "../../src/mcp/tools";

/** The server as McpServer builds it from the same declarations (handlers never run here). */
function sdkServer(): McpServer {
  const mcp = new McpServer({ name: "spendgate", version: "0.1.0" }, { instructions: MCP_INSTRUCTIONS });
  for (const def of TOOLS) {
    mcp.registerTool(
      def.name,
      { title: def.title, description: def.description, inputSchema: def.input, outputSchema: def.output, annotations: def.annotations },
      () => {
        throw new Error("not called");
      },
    );
  }
  return mcp;
}

/** What goes on the wire (JSON drops undefined fields). */
const wire = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

async function connected(server: McpServer): Promise<Client> {
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  const client = new Client({ name: "tool-list-test", version: "1" });
  await client.connect(b);
  return client;
}

describe("MCP tools/list (converted once)", () => {
  it("lists exactly what the SDK's McpServer lists for the same tools, with the same capabilities and instructions", async () => {
    const ours = await connected(createMcpServer());
    const sdk = await connected(sdkServer());
    const listed = await ours.listTools();
    expect(listed.tools.map((t) => t.name)).to.deep.equal(TOOLS.map((t) => t.name));
    expect(wire(listed)).to.deep.equal(wire(await sdk.listTools()));
    expect(ours.getServerCapabilities()).to.deep.equal(sdk.getServerCapabilities());
    expect(ours.getInstructions()).to.equal(sdk.getInstructions());
    expect(ours.getServerVersion()).to.deep.equal(sdk.getServerVersion());
    await Promise.all([ours.close(), sdk.close()]);
  });

  it("answers every server and every call with the same converted list", async () => {
    const one = await connected(createMcpServer());
    const two = await connected(createMcpServer());
    const [a, b, c] = await Promise.all([one.listTools(), two.listTools(), one.listTools()]);
    expect(b).to.deep.equal(a);
    expect(c).to.deep.equal(a);
    await Promise.all([one.close(), two.close()]);
  });
});
