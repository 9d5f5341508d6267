import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { startStack, randomOwner, type Stack } from "../helpers/stack";

const run = promisify(execFile);
// The package's launcher (bin mcp-inspector); with --cli it runs the Inspector's own MCP client.
const INSPECTOR = join(dirname(require.resolve("@modelcontextprotocol/inspector/package.json")), "cli/build/cli.js");

describe("MCP Inspector CLI (a client we did not write) against the running service", () => {
  let s: Stack;
  let home: string;
  let agent: { agentAddress: string; apiKey: string };

  before(async () => {
    s = await startStack();
    agent = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"], perTxLimit: "4", dailyBudget: "16" });
    home = mkdtempSync(join(tmpdir(), "spendgate-inspector-"));
  });
  after(async () => {
    await s?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  // Asynchronous on purpose: the service answers from this same process.
  async function inspector(...method: string[]): Promise<any> {
    const { stdout } = await run(
      process.execPath,
      [
        INSPECTOR,
        "--cli",
        `${s.url}/mcp`,
        "--transport",
        "http",
        "--header",
        `Authorization: Bearer ${agent.apiKey}`,
        "--header",
        `X-Agent-Address: ${agent.agentAddress}`,
        ...method,
      ],
      { env: { ...process.env, HOME: home }, timeout: 60_000 },
    );
    return JSON.parse(stdout);
  }

  it("tools/list answers the six tools", async () => {
    const out = await inspector("--method", "tools/list");
    expect(out.tools.map((t: { name: string }) => t.name).sort()).to.deep.equal([
      "get_balance",
      "get_limits",
      "get_payment",
      "list_transactions",
      "pay",
      "verify_merchant",
    ]);
  });

  it("tools/call get_limits answers the agent's on-chain policy", async () => {
    const out = await inspector("--method", "tools/call", "--tool-name", "get_limits");
    expect(out.isError ?? false).to.equal(false);
    expect(out.structuredContent).to.include({ address: agent.agentAddress, perTxLimit: "4", dailyBudget: "16", deployed: true });
  });

  it("tools/call with arguments: list_transactions with a limit", async () => {
    const out = await inspector("--method", "tools/call", "--tool-name", "list_transactions", "--tool-arg", "limit=5");
    expect(out.structuredContent).to.deep.include({ total: 0, limit: 5, offset: 0, transactions: [] });
  });
});
