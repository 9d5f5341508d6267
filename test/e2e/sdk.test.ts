/**
 * @spendgate/sdk as a stranger gets it: `npm pack` of packages/sdk, the tarball installed offline into a temporary
 * project outside the repository, then a plain Node script there pays through the running service (real HTTP, real
 * chain, a real x402 seller), reads limits and the ledger, and sees the service's errors as SpendGateError. Its bin
 * (`npx spendgate onboard`) resolves inside that project, with no registry lookup. TypeScript sees its types.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { fundedFacilitator, mintUsdc, startV2Seller, usdcBalance, type TestSeller } from "../helpers/sellers";

const ROOT = join(__dirname, "..", "..");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Asynchronous on purpose: the service answers from this process. */
function run(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env: { ...process.env, ...env }, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const AGENT_SCRIPT = `
const { SpendGateClient, SpendGateError, isSpendGateError } = require("@spendgate/sdk");
(async () => {
  const [baseUrl, apiKey, agentAddress, sellerUrl] = process.argv.slice(2);
  const sg = new SpendGateClient({ baseUrl, apiKey, agentAddress });
  const out = {};
  out.limits = await sg.limits();
  out.approved = await sg.pay({ serviceUrl: sellerUrl, maxAmount: "0.05", intent: "a paid lookup through the SDK" }, { idempotencyKey: "sdk-test-1" });
  out.replayed = await sg.pay({ serviceUrl: sellerUrl, maxAmount: "0.05", intent: "a paid lookup through the SDK" }, { idempotencyKey: "sdk-test-1" });
  out.blocked = await sg.pay({ serviceUrl: "https://not-allowed.example/data", maxAmount: "0.05", intent: "outside the allowlist" });
  out.ledger = await sg.ledger({ limit: 10 });
  for (const [name, call] of [
    ["badAmount", () => sg.pay({ serviceUrl: sellerUrl, maxAmount: "0.0000001", intent: "too many decimals" })],
    ["agentApproves", () => sg.approve("apr_000000000000000000000000", { humanSignature: "0x00", timestamp: 1 })],
    ["badKey", () => new SpendGateClient({ baseUrl, apiKey: "sk_" + "0".repeat(64), agentAddress }).limits()],
    ["unreachable", () => new SpendGateClient({ baseUrl: "http://127.0.0.1:9", apiKey, agentAddress }).limits()],
  ]) {
    try {
      await call();
      out[name] = "no error";
    } catch (err) {
      out[name] = { isClass: err instanceof SpendGateError, isGuard: isSpendGateError(err), json: err.toJSON(), retryable: err.retryable };
    }
  }
  console.log(JSON.stringify(out));
})().catch((err) => { console.error(err); process.exit(1); });
`;

const TYPES_CHECK = `
import { SpendGateClient, type PayResult, type SpendGateError } from "@spendgate/sdk";
const sg = new SpendGateClient({ baseUrl: "http://127.0.0.1:8402", apiKey: "sk_x", agentAddress: "0x0" });
async function f(): Promise<string> {
  const r: PayResult = await sg.pay({ serviceUrl: "https://a.example", maxAmount: "1", intent: "x" });
  if (r.status === "approved") return r.settledAt;
  if (r.status === "pending") return r.approvalId;
  const e: SpendGateError | undefined = undefined;
  return r.reason + String(e);
}
void f;
`;

describe("@spendgate/sdk: npm pack, installed in a temporary project, pays through the running service", function () {
  this.timeout(240_000);
  let s: Stack;
  let seller: TestSeller;
  let agent: { agentAddress: string; apiKey: string };
  let work: string;
  let project: string;
  let tarball: string;

  before(async () => {
    s = await startStack();
    seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 20_000n });
    agent = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"], perTxLimit: "1", dailyBudget: "5", approvalThreshold: "1" });
    await mintUsdc(s, agent.agentAddress, 1_000_000n);

    work = mkdtempSync(join(tmpdir(), "spendgate-sdk-"));
    const packed = await run("npm", ["pack", "./packages/sdk", "--pack-destination", work], ROOT);
    expect(packed.code, packed.stderr).to.equal(0);
    tarball = join(
      work,
      readdirSync(work).find((f) => f.endsWith(".tgz"))!,
    );
    project = join(work, "agent-project");
    rmSync(project, { recursive: true, force: true });
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "agent-project", version: "1.0.0", private: true }));
    // Offline: the SDK has no dependencies, so the tarball is all npm needs.
    const installed = await run("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], project);
    expect(installed.code, installed.stderr).to.equal(0);
  });
  after(async () => {
    await seller?.close();
    await s?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("packs a dependency-free package with its types, its bin and no sources", () => {
    // The owner CLI is one bundle with its libraries (ethers, the Merkle tree): about 195 KiB packed.
    expect(statSync(tarball).size).to.be.below(256 * 1024);
    const manifest = JSON.parse(readFileSync(join(project, "node_modules", "@spendgate", "sdk", "package.json"), "utf8"));
    expect(manifest).to.include({ name: "@spendgate/sdk", main: "dist/index.js", types: "dist/index.d.ts" });
    expect(manifest.dependencies ?? {}).to.deep.equal({});
    expect(manifest.bin).to.deep.equal({ spendgate: "dist/cli.js" });
    const files = readdirSync(join(project, "node_modules", "@spendgate", "sdk", "dist"));
    expect(files).to.include.members(["index.js", "index.d.ts", "client.js", "cli.js"]);
    expect(files.some((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).to.equal(false);
  });

  it("pays, replays by Idempotency-Key, returns blocked as a result, and throws the service's errors as SpendGateError", async () => {
    writeFileSync(join(project, "agent.js"), AGENT_SCRIPT);
    const r = await run(process.execPath, ["agent.js", s.url, agent.apiKey, agent.agentAddress, seller.resource], project);
    expect(r.code, r.stderr).to.equal(0);
    const out = JSON.parse(r.stdout);

    expect(out.limits).to.include({ address: agent.agentAddress, deployed: true, perTxLimit: "1", dailyBudget: "5" });
    expect(out.approved).to.include({ status: "approved", amount: "0.02", currency: "USDC" });
    expect(out.replayed).to.deep.equal(out.approved);
    expect(await usdcBalance(s, seller.payTo)).to.equal(20_000n);
    expect(out.blocked).to.include({ status: "blocked", reason: "merchant_not_allowed" });
    expect(out.ledger.total).to.equal(2);
    expect(out.ledger.transactions.map((t: { status: string }) => t.status).sort()).to.deep.equal(["approved", "blocked"]);

    expect(out.badAmount).to.deep.include({ isClass: true, isGuard: true, retryable: false });
    expect(out.badAmount.json).to.include({ status: 400 });
    expect(out.agentApproves.json.status).to.be.oneOf([401, 403]);
    expect(out.badKey.json).to.include({ status: 401, error: "unauthorized" });
    expect(out.unreachable).to.deep.include({ isClass: true, retryable: true });
    expect(out.unreachable.json).to.include({ error: "network_error", status: 0 });
  });

  it("runs `npx spendgate onboard` from the installed package (no registry lookup) and writes the agent's config", async () => {
    const home = join(work, "home");
    mkdirSync(home);
    const r = await run("npx", ["--no-install", "spendgate", "onboard", "--base-url", s.url, "--label", "sdk-cli"], project, {
      HOME: home,
    });
    expect(r.code, r.stderr).to.equal(0);
    const config = JSON.parse(readFileSync(join(home, ".spendgate", "config.json"), "utf8"));
    expect(config).to.include({ label: "sdk-cli", baseUrl: s.url });
    expect(r.stdout).to.include(`${s.url}/onboarding?agent=${config.agentAddress}`);
  });

  it("runs `npx spendgate owner verify` from the installed package: the policy read from the chain by the bundle alone", async () => {
    const home = join(work, "home-owner");
    mkdirSync(home);
    const r = await run("npx", ["--no-install", "spendgate", "owner", "verify", agent.agentAddress, "--api", s.url], project, {
      HOME: home,
    });
    expect(r.code, r.stderr + r.stdout).to.equal(0);
    expect(r.stdout).to.include("Each payment at most 1 USDC; at most 5 USDC per UTC day.").and.include("127.0.0.1: no cap of its own");
    expect(r.stdout).to.include("it matches").and.include("Not signed in");
  });

  it("gives TypeScript the client's types (a discriminated PayResult), checked with the declarations", async () => {
    writeFileSync(join(project, "check.ts"), TYPES_CHECK);
    const tsc = require.resolve("typescript/bin/tsc");
    const r = await run(
      process.execPath,
      // An agent's project has Node's types (@types/node, from the repository here: the project itself installed nothing else).
      [tsc, "--noEmit", "--strict", "--module", "node16", "--moduleResolution", "node16", "--target", "es2022", "--lib", "es2023"].concat([
        "--typeRoots",
        join(ROOT, "node_modules", "@types"),
        "--types",
        "node",
        "check.ts",
      ]),
      project,
    );
    expect(r.code, r.stdout + r.stderr).to.equal(0);
  });
});
