import { exec } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { startStack, randomOwner, type Stack } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { fundedFacilitator, mintUsdc, startV2Seller, type TestSeller } from "../helpers/sellers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { callTool, textOf } from "../mcp/client";

const sh = promisify(exec);
const USDC = 1_000_000n;

/** The fenced code blocks of a markdown text, in order. */
function codeBlocks(markdown: string): { lang: string; code: string }[] {
  return [...markdown.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], code: m[2].trim() }));
}

describe("/skill.md followed literally by a script ends with a paid call through the pay tool", () => {
  let s: Stack;
  let seller: TestSeller;
  let home: string;

  before(async () => {
    s = await startStack();
    seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: USDC / 4n });
    home = mkdtempSync(join(tmpdir(), "spendgate-skill-"));
  });
  after(async () => {
    await seller?.close();
    await s?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it("config check, genesis, config file, MCP registration, owner activation, limits, then pay", async () => {
    const res = await s.api("GET", "/skill.md");
    expect(res.status).to.equal(200);
    const skill: string = res.body;
    const blocks = codeBlocks(skill);
    const block = (needle: string) => {
      const found = blocks.find((b) => b.code.includes(needle));
      expect(found, `no code block with ${needle}`).to.exist;
      return found!.code;
    };
    // The agent's shell: its own HOME, so "~" is where the config goes.
    const shell = async (command: string) => (await sh(command, { env: { ...process.env, HOME: home }, timeout: 30_000 })).stdout;
    let values: Record<string, string> = { "<owner email>": "owner@example.com", "<agent name>": "skill-bot" };
    const fill = (text: string) => Object.entries(values).reduce((t, [k, v]) => t.split(k).join(v), text);

    // 1. Check for the config first: there is none yet.
    expect(block("cat ~/.spendgate/config.json")).to.equal("cat ~/.spendgate/config.json");
    expect(existsSync(join(home, ".spendgate/config.json"))).to.equal(false);

    // 2. Genesis, with the curl command as written.
    const genesis = JSON.parse(await shell(fill(block("/wallet/genesis"))));
    expect(genesis.agentAddress).to.match(/^0x[0-9a-fA-F]{40}$/);
    values = {
      ...values,
      "<agentAddress>": genesis.agentAddress,
      "<apiKey>": genesis.apiKey,
      "<label>": genesis.label,
      "<createdAt>": genesis.createdAt,
      "<activationCode>": new URL(genesis.activationUrl).searchParams.get("code")!,
    };

    // 3. Write the config: the folder command, the file from the template, the chmod command.
    await shell(block("mkdir -p ~/.spendgate"));
    const template = blocks.find((b) => b.lang === "json" && b.code.includes('"createdAt"'))!.code;
    writeFileSync(join(home, ".spendgate/config.json"), fill(template));
    await shell(block("chmod 600"));
    const config = JSON.parse(await shell("cat ~/.spendgate/config.json"));
    expect(config).to.deep.equal({
      agentAddress: genesis.agentAddress,
      apiKey: genesis.apiKey,
      label: "skill-bot",
      createdAt: genesis.createdAt,
      baseUrl: s.url,
    });
    expect(statSync(join(home, ".spendgate/config.json")).mode & 0o777).to.equal(0o600);

    // 4. The MCP client configuration, as given.
    const mcp = JSON.parse(fill(blocks.find((b) => b.lang === "json" && b.code.includes("mcpServers"))!.code)).mcpServers.spendgate;
    expect(mcp).to.include({ type: "http", url: `${s.url}/mcp` });

    // 5. The owner opens the activation link, links the agent and signs its policy.
    const link = fill(/^(http\S+\/onboarding\?agent=\S+)$/m.exec(skill)![1]);
    expect(genesis.message).to.include(link);
    expect(genesis.activationUrl).to.equal(link);
    const owner = randomOwner();
    const activationCode = new URL(link).searchParams.get("code");
    const linked = await s.api("POST", "/agents/link", { body: { ...(await s.signLink(owner, genesis.agentAddress)), activationCode } });
    expect(linked.status).to.equal(200);
    const policy = await s.policyBody(owner, genesis.agentAddress, {
      perTxLimit: "1",
      dailyBudget: "5",
      allowlist: ["127.0.0.1"],
      approvalThreshold: "0.5",
    });
    const set = await s.api("POST", "/limits", { key: await ownerKey(s, owner), body: policy });
    expect(set.status, JSON.stringify(set.body)).to.equal(201);
    await mintUsdc(s, genesis.agentAddress, 10n * USDC);

    // 6. Check the limits with the curl command as written.
    const limits = JSON.parse(await shell(fill(block("/limits?address="))));
    expect(limits.agents[0]).to.include({ address: genesis.agentAddress, deployed: true, perTxLimit: "1", dailyBudget: "5" });

    // 7. "Restart": a fresh MCP client from the configuration; the tools are there. Then the rules: limits, verify, pay.
    const client = new Client({ name: "skill-follower", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcp.url), { requestInit: { headers: mcp.headers } }));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).to.include.members(["get_limits", "verify_merchant", "pay"]);
      expect((await callTool(client, "get_limits")).structuredContent).to.include({ remainingDailyBudget: "5" });
      const verified = await callTool(client, "verify_merchant", { serviceUrl: seller.resource });
      expect(verified.structuredContent).to.include({ allowed: true, newMerchant: true, expectedOutcome: "approved" });
      const paid = await callTool(client, "pay", {
        serviceUrl: seller.resource,
        maxAmount: "0.25",
        intent: "sample data to check the onboarding works",
      });
      expect(paid.isError ?? false, textOf(paid)).to.equal(false);
      expect(paid.structuredContent).to.include({
        status: "approved",
        amount: "0.25",
        merchant: "127.0.0.1",
        remainingDailyBudget: "4.75",
      });
      expect(seller.settlements).to.include(paid.structuredContent.txHash);
    } finally {
      await client.close();
    }
  });

  it("teaches the behaviour rules", async () => {
    const skill: string = (await s.api("GET", "/skill.md")).body;
    for (const rule of [
      "Always read your limits (`get_limits`) before spending",
      "Verify a merchant that is new to you (`verify_merchant`)",
      "Send a meaningful `intent` with every payment",
      "Never retry a blocked payment. Report the `reason` to your owner and stop",
      "Never approve your own payments",
    ]) {
      expect(skill).to.include(rule);
    }
    expect(skill).to.include(`Owner dashboard: ${s.svc.services.ctx.urls.dashboard}`);
  });
});
