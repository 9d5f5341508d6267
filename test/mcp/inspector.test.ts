import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { startStack, randomOwner, type Stack } from "../helpers/stack";
import { fundedFacilitator, mintUsdc, startV2Seller, usdcBalance, type TestSeller } from "../helpers/sellers";
import { AGENT_TOOLS } from "./client";

const run = promisify(execFile);
// The package's launcher (bin mcp-inspector); with --cli it runs the Inspector's own MCP client.
const INSPECTOR = join(dirname(require.resolve("@modelcontextprotocol/inspector/package.json")), "cli/build/cli.js");

describe("MCP Inspector CLI (a client we did not write) against the running service", () => {
  let s: Stack;
  let home: string;
  let agent: { agentAddress: string; apiKey: string };
  let seller: TestSeller;

  before(async () => {
    s = await startStack();
    seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 50_000n });
    agent = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"], perTxLimit: "4", dailyBudget: "16" });
    await mintUsdc(s, agent.agentAddress, 1_000_000n);
    home = mkdtempSync(join(tmpdir(), "spendgate-inspector-"));
  });
  after(async () => {
    await seller?.close();
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
      // Run from the CLI's own folder: it looks for its package.json at "../package.json" of the working directory
      // first, so a package.json one level above the checkout (a monorepo, a scratch file) broke it.
      { env: { ...process.env, HOME: home }, timeout: 60_000, cwd: dirname(INSPECTOR) },
    );
    return JSON.parse(stdout);
  }

  it("tools/list answers the six tools", async () => {
    const out = await inspector("--method", "tools/list");
    expect(out.tools.map((t: { name: string }) => t.name).sort()).to.deep.equal(AGENT_TOOLS);
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

  it("tools/call pay with maxAmount=0.05 as the Inspector sends it (a JSON number) is approved", async () => {
    const out = await inspector(
      "--method",
      "tools/call",
      "--tool-name",
      "pay",
      "--tool-arg",
      `serviceUrl=${seller.resource}`,
      "--tool-arg",
      "maxAmount=0.05",
      "--tool-arg",
      "intent=a paid lookup from the Inspector",
    );
    expect(out.isError ?? false, JSON.stringify(out)).to.equal(false);
    expect(out.structuredContent).to.include({ status: "approved", amount: "0.05" });
    expect(await usdcBalance(s, seller.payTo)).to.equal(50_000n);
  });
});
