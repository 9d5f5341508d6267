/**
 * The README's worked example ("Worked example: pin a payee, sign the policy, pause and resume"), run as an owner would
 * run it (test/helpers/readmeExample.ts) against the default sandbox; test/e2e/startNetwork.test.ts runs it on Base
 * Sepolia's.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { allowlistRoot } from "../../src/policy/allowlist";
import { ownerKey } from "../helpers/owner";
import { runReadmeExample } from "../helpers/readmeExample";
import { stackPerFile } from "../helpers/stack";

describe("the README's worked example", function () {
  const { s } = stackPerFile({ LOG_LEVEL: "silent" });

  it("pins the seller's payee, signs SetPolicy with the allowlist in clear, deploys it, then pauses and resumes", async function () {
    this.timeout(120_000);
    const owner = new Wallet(Wallet.createRandom().privateKey);
    const key = await ownerKey(s, owner);
    const created = await s.api("POST", "/wallet/genesis", { key, body: { label: "worked example" } });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const agent: string = created.body.agentAddress;

    const run = await runReadmeExample({
      BASE: s.url,
      OWNER_API_KEY: key,
      OWNER_PRIVATE_KEY: owner.privateKey,
      AGENT: agent,
      SELLER_URL: `${s.url}/sell/agent-intel`,
    });
    expect(run.code, `${run.stderr}\n${run.stdout}`).to.equal(0);
    const out = run.stdout;
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
