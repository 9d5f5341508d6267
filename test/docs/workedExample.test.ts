/**
 * The README's worked example ("Worked example: pin a payee, sign the policy, pause and resume"), run as an owner would
 * run it: its one js block, written to a file and run by Node with the environment it names, against the sandbox.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { Wallet } from "ethers";
import { allowlistRoot } from "../../src/policy/allowlist";
import { ownerKey } from "../helpers/owner";
import { stackPerFile } from "../helpers/stack";

const ROOT = join(__dirname, "..", "..");

/** The first js block under the README heading `heading`. */
export function readmeBlock(heading: string): string {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const at = readme.indexOf(heading);
  if (at < 0) throw new Error(`README has no "${heading}"`);
  const block = /```js\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!block) throw new Error(`no js block under "${heading}"`);
  return block[1];
}

/** Runs a README script with `env`, from a file inside the checkout (so `import "ethers"` resolves). */
export async function runReadmeScript(name: string, script: string, env: Record<string, string>): Promise<string> {
  const dir = join(ROOT, "test-output", "readme");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.mjs`);
  writeFileSync(file, script);
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [file], { env: { ...process.env, ...env }, timeout: 60_000 });
    return stdout;
  } finally {
    rmSync(file, { force: true });
  }
}

describe("the README's worked example", function () {
  const { s } = stackPerFile({ LOG_LEVEL: "silent" });

  it("pins the seller's payee, signs SetPolicy with the allowlist in clear, deploys it, then pauses and resumes", async function () {
    this.timeout(120_000);
    const owner = new Wallet(Wallet.createRandom().privateKey);
    const key = await ownerKey(s, owner);
    const created = await s.api("POST", "/wallet/genesis", { key, body: { label: "worked example" } });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const agent: string = created.body.agentAddress;

    const out = await runReadmeScript(
      "worked-example",
      readmeBlock("#### Worked example: pin a payee, sign the policy, pause and resume"),
      {
        BASE: s.url,
        OWNER_API_KEY: key,
        OWNER_PRIVATE_KEY: owner.privateKey,
        AGENT: agent,
        SELLER_URL: `${s.url}/sell/agent-intel`,
      },
    );
    expect(out).to.match(/^policy deployed \[ '127\.0\.0\.1' \]/m);
    expect(out).to.match(/^paused at epoch \d+ true$/m);
    expect(out).to.match(/^resumed at epoch \d+ false$/m);

    // What the chain enforces is the list the script signed: the seller's host, pinned to the payee its quote named.
    const view = (await s.api("GET", `/limits?address=${agent}`, { key })).body.agents[0];
    expect(view).to.include({ deployed: true, paused: false });
    expect(view.payees).to.have.property("127.0.0.1");
    const onchain = await s.svc.chain.policyAt(agent, s.svc.chain.provider).policy();
    expect(onchain.allowlistRoot).to.equal(allowlistRoot(["127.0.0.1"], {}, view.payees));
  });
});
