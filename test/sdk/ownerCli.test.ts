/**
 * `spendgate owner`: the owner's side from a terminal against a real service (embedded chain, CongoDB, HTTP). What the
 * published bundle signs is the service's SetPolicy to the byte; `verify` reads the policy back from the chain and
 * warns where the server's store says otherwise; any wallet signs through --print-typed-data and --signature.
 */
import { execFile } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { TypedDataEncoder, Wallet } from "ethers";
import { SpendGateError } from "../../packages/sdk/src/errors";
import { owner, type OwnerIo } from "../../packages/sdk/src/owner/main";
import { SET_POLICY_TYPES, policyDomain } from "../../src/chain/typedData";
import { buildSignedPolicy } from "../../src/policy/signedPolicy";
import { randomOwner, startStack, type Stack } from "../helpers/stack";

const ROOT = join(__dirname, "..", "..");
/** policy set's three required limits. */
const limitFlags = (perTx: string, daily: string, threshold: string) => ["--per-tx", perTx, "--daily", daily, "--threshold", threshold];
const run = promisify(execFile);

describe("spendgate owner: the owner CLI against a running service", function () {
  this.timeout(300_000);
  let s: Stack;
  let home: string;
  const me = randomOwner();
  let agent: string;
  let env: NodeJS.ProcessEnv;

  /** One command in-process; its output lines and exit code. */
  async function cli(...argv: string[]): Promise<{ code: number; out: string[] }> {
    const out: string[] = [];
    const io: OwnerIo = { out: (l) => out.push(l), err: (l) => out.push(l), env, ask: () => Promise.resolve("n") };
    const code = await owner([...argv, "--api", s.url], io);
    return { code, out };
  }

  before(async () => {
    s = await startStack();
    home = mkdtempSync(join(tmpdir(), "spendgate-owner-"));
    env = { HOME: home, SPENDGATE_OWNER_KEY: me.privateKey };
    agent = (await s.genesis({ label: "cli" })).agentAddress;
  });
  after(async () => {
    await s?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it("signs in, links the agent from its activation link, and signs a policy after showing it (asks first)", async () => {
    const login = await cli("login");
    expect(login.code).to.equal(0);
    expect(login.out.join("\n")).to.include(`as ${me.address}`);

    const link = await cli("link", `${s.url}${s.activationPath(agent)}`);
    expect(link.code, link.out.join("\n")).to.equal(0);

    const flags = [...limitFlags("1", "5", "0.5"), "--allow", "127.0.0.1,*.example.com", "--cap", "127.0.0.1=2"];
    const payee = Wallet.createRandom().address;
    const declined = await cli("policy", "set", agent, ...flags, "--payee", `127.0.0.1=${payee}`);
    expect(declined.code).to.equal(1);
    expect(declined.out).to.include("Nothing signed.");
    const summary = declined.out.join("\n");
    expect(summary).to.include("Each payment at most 1 USDC").and.include(`127.0.0.1: at most 2 USDC a day, pays only ${payee}`);
    expect(summary).to.include("*.example.com: no cap of its own, pays ANY address");

    const set = await cli("policy", "set", agent, ...flags, "--payee", `127.0.0.1=${payee}`, "--yes");
    expect(set.code, set.out.join("\n")).to.equal(0);
    const shown = await cli("policy", "show", agent);
    expect(shown.out.join("\n")).to.include("policy deployed").and.include(`127.0.0.1: at most 2 USDC a day, pays only ${payee}`);
  });

  it("the published bundle's typed data is the service's SetPolicy, byte for byte, and any wallet's signature is accepted", async () => {
    await run(process.execPath, [join(ROOT, "packages", "sdk", "build.mjs")], { cwd: ROOT });
    const timestamp = Math.floor(Date.now() / 1000) + 5;
    const policy = [...limitFlags("0.75", "3", "0.25"), "--allow", "127.0.0.1", "--hourly", "1", "--max-per-hour", "9"];
    const printed = await run(
      process.execPath,
      [
        join(ROOT, "packages", "sdk", "dist", "cli.js"),
        "owner",
        "policy",
        "set",
        agent,
        ...policy,
        "--print-typed-data",
        "--timestamp",
        String(timestamp),
        "--api",
        s.url,
      ],
      { env: { PATH: process.env.PATH, HOME: home } },
    );
    const json = printed.stdout.slice(printed.stdout.indexOf("\n{") + 1, printed.stdout.lastIndexOf("}") + 1);
    const payload = JSON.parse(json) as {
      domain: Record<string, unknown>;
      types: Record<string, { name: string; type: string }[]>;
      primaryType: string;
      message: Record<string, unknown>;
    };
    expect(payload.primaryType).to.equal("SetPolicy");
    const built = buildSignedPolicy({
      perTxLimit: "0.75",
      dailyBudget: "3",
      approvalThreshold: "0.25",
      allowlist: ["127.0.0.1"],
      hourlyBudget: "1",
      maxPaymentsPerHour: 9,
    });
    const serviceDomain = policyDomain(8453, agent);
    const serviceMessage = { agent, ...built.policy, timestamp };
    const { EIP712Domain: _d, ...types } = payload.types;
    expect(TypedDataEncoder.hash(payload.domain, types, payload.message)).to.equal(
      TypedDataEncoder.hash(serviceDomain, SET_POLICY_TYPES, serviceMessage),
    );
    expect(JSON.parse(json)).to.deep.equal(
      JSON.parse(JSON.stringify(TypedDataEncoder.getPayload(serviceDomain, SET_POLICY_TYPES, serviceMessage))),
    );

    // The owner signs that JSON in her own wallet (here: ethers, as eth_signTypedData_v4 would) and sends the signature.
    const signature = await me.signTypedData(payload.domain, types, payload.message);
    const noKey = env;
    env = { HOME: home };
    try {
      const sent = await cli("policy", "set", agent, ...policy, "--signature", signature, "--timestamp", String(timestamp), "--yes");
      expect(sent.code, sent.out.join("\n")).to.equal(0);
    } finally {
      env = noKey;
    }
    const shown = await cli("policy", "show", agent, "--json");
    expect(JSON.parse(shown.out.join("\n"))).to.include({ perTxLimit: "0.75", hourlyBudget: "1", maxPaymentsPerHour: 9 });
  });

  it("verify prints the policy from the chain, and warns on every field the server's store changed", async () => {
    const payee = Wallet.createRandom().address;
    expect(
      (
        await cli(
          "policy",
          "set",
          agent,
          ...limitFlags("1", "5", "0.5"),
          "--allow",
          "127.0.0.1",
          "--payee",
          `127.0.0.1=${payee}`,
          "--cap",
          "127.0.0.1=2",
          "--signed-offer",
          "127.0.0.1",
          "--yes",
          "--timestamp",
          String(Math.floor(Date.now() / 1000) + 10),
        )
      ).code,
    ).to.equal(0);
    const clean = await cli("verify", agent);
    const text = clean.out.join("\n");
    expect(clean.code, text).to.equal(0);
    expect(text)
      .to.include(`owner ${me.address}`)
      .and.include("not paused")
      .and.include("Each payment at most 1 USDC; at most 5 USDC per UTC day");
    expect(text).to.include(`127.0.0.1: at most 2 USDC a day, pays only ${payee}, signed offers only`).and.include("it matches");
    expect(text).to.include("The server's GET /limits matches the chain.");

    // A stolen database: the server's record of the policy drops the owner's signed-offer rule (the service keeps that
    // rule, the contract cannot), and the agent's record names another owner.
    const { store } = s.svc.services.ctx;
    await store.policies.updateOne({ agentAddress: agent }, { $set: { signedOffers: [] } });
    const warned = await cli("verify", agent);
    const warnings = warned.out.filter((l) => l.startsWith("WARNING"));
    expect(warned.code, warned.out.join("\n")).to.equal(3);
    expect(warnings).to.deep.equal([
      'WARNING: the server\'s GET /limits differs from the chain: requireSignedOffer: the server says [], the chain says ["127.0.0.1"]',
    ]);
    // The chain's own part is unchanged: what the owner signed.
    expect(warned.out.join("\n")).to.include(`127.0.0.1: at most 2 USDC a day, pays only ${payee}, signed offers only`);
  });

  it("refuses, as SpendGateErrors, a key file others may read, a policy without its limits, and a policy the contract would refuse", async () => {
    const file = join(home, "owner.key");
    writeFileSync(file, me.privateKey);
    chmodSync(file, 0o644);
    const err = (p: Promise<unknown>) =>
      p.then(
        () => expect.fail("no error"),
        (e: unknown) => e,
      );
    env = { HOME: home };
    try {
      const loose = await err(cli("login", "--key-file", file));
      expect(loose).to.be.instanceOf(SpendGateError).and.include({ error: "bad_request" });
      expect((loose as Error).message).to.include("chmod 600");
      chmodSync(file, 0o600);
      expect((await cli("login", "--key-file", file)).code).to.equal(0);
    } finally {
      env = { HOME: home, SPENDGATE_OWNER_KEY: me.privateKey };
    }
    const missing = await err(cli("policy", "set", agent, "--per-tx", "1"));
    expect(missing).to.be.instanceOf(SpendGateError);
    expect((missing as Error).message)
      .to.include("--daily")
      .and.include("--threshold");
    const overlap = await err(
      cli("policy", "set", agent, ...limitFlags("1", "1", "1"), "--allow", "*,a.example", "--payee", `a.example=${me.address}`, "--yes"),
    );
    expect(overlap).to.be.instanceOf(SpendGateError);
    expect((overlap as Error).message).to.include("also admits");
    const server = await err(cli("approve", "apr_000000000000000000000000"));
    expect(server).to.be.instanceOf(SpendGateError);
  });
});
