/**
 * "Compromised server", on the contracts: an attacker with the operator key and the agent's signing key tries every
 * way to move the agent's money beyond its owner-signed policy. Each attempt is refused on-chain, and over one UTC
 * day at most the daily budget leaves the wallet.
 */
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { drainWithinPolicy, runAttacks, settleFromWallet, type Secrets, type Target } from "../helpers/attacker";
import {
  ALLOWLIST,
  DEFAULT_POLICY,
  nextTimestamp,
  policyFixture,
  proofFor,
  signSetPaused,
  signWithdraw,
  usdc,
} from "../helpers/policyFixture";

const { ethers } = hre;

describe("compromised server (contracts): every secret of the service, and the policy still holds", () => {
  async function fixture() {
    const f = await policyFixture();
    // Start at the beginning of a UTC day so the whole run stays within one day.
    const now = await time.latest();
    await time.increaseTo(Math.floor(now / 86_400) * 86_400 + 86_400 + 60);
    const thief = ethers.Wallet.createRandom().address;
    const { leaf, proof } = proofFor(ALLOWLIST, "api.example.com");
    const secrets: Secrets = { operator: f.operator, agentKey: f.agentKey };
    const target: Target = {
      agent: f.policy,
      agentAddress: f.agent,
      token: f.token,
      merchant: { host: "api.example.com", leaf, proof },
      thief,
    };
    return { ...f, secrets, target, thief };
  }

  it("refuses on-chain every transfer, permit, replay, release and owner action the policy does not allow", async () => {
    const { secrets, target } = await loadFixture(fixture);
    const attempts = await runAttacks(secrets, target);
    const through = attempts.filter((a) => !a.refused);
    for (const a of attempts) console.log(`      ${a.refused ? "refused" : "WENT THROUGH"}: ${a.name} (${a.detail})`);
    expect(through.map((a) => a.name)).to.deep.equal([]);
    expect(attempts.length).to.be.greaterThanOrEqual(17);
  });

  it("lets at most the daily budget leave the wallet in one day, whatever the operator authorises", async () => {
    const { secrets, target, token, agent, policy } = await loadFixture(fixture);
    const start = await token.balanceOf(agent);
    await runAttacks(secrets, target);
    const drained = await drainWithinPolicy(secrets, target, usdc(3));
    expect(drained.blockedReasons).to.deep.equal([3]); // daily_budget_exceeded
    // What is left of the budget goes too (the residual risk), and then nothing more.
    const rest = await policy.remainingDailyBudget();
    const last = await drainWithinPolicy(secrets, target, rest, 1);
    expect(last.moved).to.equal(rest);
    expect(await policy.remainingDailyBudget()).to.equal(0n);
    const none = await drainWithinPolicy(secrets, target, 1n);
    expect(none).to.deep.equal({ moved: 0n, blockedReasons: [3] });
    const left = start - (await token.balanceOf(agent));
    console.log(
      `      moved by a compromised server in one day: ${ethers.formatUnits(left, 6)} USDC of ${ethers.formatUnits(start, 6)} (daily budget ${ethers.formatUnits(DEFAULT_POLICY.dailyBudget, 6)})`,
    );
    expect(left).to.be.lessThanOrEqual(DEFAULT_POLICY.dailyBudget);
    expect(await policy.spentToday()).to.equal(DEFAULT_POLICY.dailyBudget);
    // The next day, amounts above the approval threshold still need the owner, whom the attacker cannot sign for.
    await time.increase(86_400);
    const big = await drainWithinPolicy(secrets, target, usdc(4));
    expect(big).to.deep.equal({ moved: 0n, blockedReasons: [5] }); // approval_required
    const huge = await drainWithinPolicy(secrets, target, usdc(6));
    expect(huge).to.deep.equal({ moved: 0n, blockedReasons: [2] }); // per_tx_limit_exceeded
  });

  it("refuses every payment while the owner has paused the agent, and the owner can still withdraw everything", async () => {
    const { secrets, target, token, agent, policy, owner, other } = await loadFixture(fixture);
    const ts = await nextTimestamp();
    await (await policy.connect(other).setPaused(true, 0n, ts, await signSetPaused(owner, agent, agent, true, ts))).wait();
    const attempt = await drainWithinPolicy(secrets, target, 1n);
    expect(attempt.blockedReasons).to.deep.equal([4]); // policy_paused
    expect(attempt.moved).to.equal(0n);
    // Nothing authorised before the pause can be forged into a transfer either.
    let refused = false;
    await settleFromWallet(secrets, target, {
      to: target.thief,
      value: 1n,
      validAfter: 0n,
      validBefore: BigInt(await time.latest()) + 600n,
      nonce: ethers.ZeroHash,
    }).catch(() => {
      refused = true;
    });
    expect(refused).to.equal(true);
    const balance = await token.balanceOf(agent);
    const w = { token: await token.getAddress(), to: owner.address, amount: balance, timestamp: await nextTimestamp() };
    await (await policy.connect(other).withdraw(w.token, w.to, w.amount, w.timestamp, await signWithdraw(owner, agent, w))).wait();
    expect(await token.balanceOf(agent)).to.equal(0n);
  });
});
