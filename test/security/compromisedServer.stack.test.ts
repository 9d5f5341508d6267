/**
 * "Compromised server", against a running SpendGate: the attacker holds everything the service holds (its
 * configuration with the operator key and WALLET_ENCRYPTION_KEY, and the database with every encrypted agent key),
 * decrypts the agent's signing key as anyone with those two could, and goes to the chain directly. Every attempt
 * past the owner-signed policy is refused on-chain; in one UTC day at most the daily budget leaves the wallet.
 */
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import hre from "hardhat";
import { Wallet } from "ethers";
import { leafStruct, proveMerchant } from "../../src/policy/allowlist";
import { drainWithinPolicy, runAttacks, type Secrets, type Target } from "../helpers/attacker";
import { mintUsdc, startV2Seller, fundedFacilitator, type TestSeller } from "../helpers/sellers";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { stealAgentKey } from "../helpers/stealKey";

const USDC = 1_000_000n;
const ENCRYPTION_KEY = randomBytes(32).toString("hex");

describe("compromised server (whole service): its config, its database and the chain", function () {
  let s: Stack;
  let seller: TestSeller;

  before(async () => {
    s = await startStack({ WALLET_ENCRYPTION_KEY: ENCRYPTION_KEY });
    seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: USDC });
  });
  after(async () => {
    await seller?.close();
    await s?.close();
  });

  it("can move no more than the owner-signed policy allows, and every other way out is refused on-chain", async () => {
    const owner = randomOwner();
    const policy = { perTxLimit: "5", dailyBudget: "12", approvalThreshold: "3", allowlist: ["127.0.0.1"] };
    const a = await s.onboard(owner, policy);
    await mintUsdc(s, a.agentAddress, 100n * USDC);
    // The service in normal use first: one legitimate payment.
    const paid = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent: "legit" },
    });
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);

    const secrets: Secrets = {
      operator: new Wallet(s.svc.config.operatorPrivateKey, s.svc.chain.provider),
      agentKey: await stealAgentKey(s, ENCRYPTION_KEY, a.agentAddress),
    };
    const contract = await hre.ethers.getContractAt("SpendPolicy", a.agentAddress);
    expect(await contract.signingKey()).to.equal(secrets.agentKey.address); // the stolen key is the real one
    const token = await hre.ethers.getContractAt("TestUSDC", s.svc.config.usdcAddress);
    const proved = proveMerchant(["127.0.0.1"], "127.0.0.1")!;
    const { proof } = proved;
    const leaf = leafStruct(proved);
    const target: Target = {
      agent: contract,
      agentAddress: a.agentAddress,
      token,
      merchant: { host: "127.0.0.1", leaf, proof },
      thief: Wallet.createRandom().address,
    };
    const start = await token.balanceOf(a.agentAddress);

    const attempts = await runAttacks(secrets, target);
    for (const x of attempts) console.log(`      ${x.refused ? "refused" : "WENT THROUGH"}: ${x.name} (${x.detail})`);
    expect(attempts.filter((x) => !x.refused).map((x) => x.name)).to.deep.equal([]);

    const drained = await drainWithinPolicy(secrets, target, 3n * USDC);
    expect(drained.blockedReasons).to.deep.equal([3]); // daily_budget_exceeded
    const spentToday = await contract.spentToday();
    expect(spentToday).to.be.lessThanOrEqual(12n * USDC);
    const moved = start - (await token.balanceOf(a.agentAddress));
    console.log(
      `      a stolen server moved ${Number(moved) / 1e6} USDC of ${Number(start) / 1e6} (daily budget 12, 1 already spent by the agent)`,
    );
    expect(moved + USDC).to.be.lessThanOrEqual(12n * USDC);
    // The owner can still take everything left out, whatever the server does.
    expect(await token.balanceOf(a.agentAddress)).to.be.greaterThanOrEqual(88n * USDC);
  });
});
