import { expect } from "chai";
import { anyValue } from "@nomicfoundation/hardhat-chai-matchers/withArgs";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import type { ContractTransactionResponse } from "ethers";
import {
  ALLOWLIST,
  CHAIN_ID,
  NO_APPROVAL,
  nextTimestamp,
  paymentId,
  policyFixture,
  policyTuple,
  proofFor,
  signSetPolicy,
  transferOf,
  usdc,
} from "../helpers/policyFixture";
import { SET_POLICY_TYPES, policyDomain } from "../../src/chain/typedData";
import { allowlistRoot, merchantsOf } from "../../src/policy/allowlist";
import type { SpendPolicy } from "../../typechain-types";

const DAY = 86_400;
const PAYEE = "0x00000000000000000000000000000000000bee01";
const LOOSE = { perTxLimit: usdc(100), dailyBudget: usdc(1000), approvalThreshold: usdc(100) };
const CAPS = { "api.example.com": usdc(2), "*.data.io": usdc(3) };

async function reasonOf(policy: SpendPolicy, tx: Promise<ContractTransactionResponse>): Promise<number> {
  const receipt = await (await tx).wait();
  for (const log of receipt!.logs) {
    const parsed = policy.interface.parseLog(log);
    if (parsed?.name === "PaymentAuthorized") return 0;
    if (parsed?.name === "PaymentBlocked") return Number(parsed.args.reason);
  }
  throw new Error("neither PaymentAuthorized nor PaymentBlocked");
}

describe("SpendPolicy per-entry daily caps and the grown SetPolicy", function () {
  async function capped() {
    const f = await loadFixture(policyFixture);
    const start = (Math.floor((await time.latest()) / DAY) + 1) * DAY;
    await time.increaseTo(start + 60);
    await f.setPolicy({ ...LOOSE, merchants: merchantsOf(ALLOWLIST, CAPS) });
    return { ...f, start };
  }

  it("caps an exact entry per UTC day: the last unit fits, the first over is blocked (reason 12), the next day is fresh", async function () {
    const { policy, pay, start } = await capped();
    expect(await reasonOf(policy, pay(usdc(2) - 1n, "api.example.com", { caps: CAPS }))).to.equal(0);
    expect(await reasonOf(policy, pay(1n, "api.example.com", { caps: CAPS }))).to.equal(0);
    expect(await policy.entrySpentToday("api.example.com")).to.equal(usdc(2));
    expect(await reasonOf(policy, pay(1n, "api.example.com", { caps: CAPS }))).to.equal(12);
    // Uncapped entries and the daily budget are untouched by the cap.
    expect(await reasonOf(policy, pay(usdc(50), "weather.xyz", { caps: CAPS }))).to.equal(0);
    await time.increaseTo(start + DAY);
    expect(await reasonOf(policy, pay(usdc(2), "api.example.com", { caps: CAPS }))).to.equal(0);
  });

  it("caps a wildcard entry across all the subdomains it admits", async function () {
    const { policy, pay } = await capped();
    expect(await reasonOf(policy, pay(usdc(2), "a.data.io", { caps: CAPS }))).to.equal(0);
    expect(await reasonOf(policy, pay(usdc(1), "b.data.io", { caps: CAPS }))).to.equal(0);
    expect(await reasonOf(policy, pay(1n, "c.data.io", { caps: CAPS }))).to.equal(12);
    expect(await policy.entrySpentToday("*.data.io")).to.equal(usdc(3));
  });

  it("refuses a capped entry presented with another cap or with no cap (reason 1)", async function () {
    const { policy, operator } = await capped();
    const { leaf, proof } = proofFor(ALLOWLIST, "api.example.com", CAPS);
    for (const [cap, p] of [
      [0n, proof],
      [usdc(1000), proof],
    ] as const) {
      const tx = policy
        .connect(operator)
        .authorizePayment(paymentId(), "api.example.com", { ...leaf, dailyCap: cap }, p, await transferOf(1n, PAYEE), NO_APPROVAL);
      expect(await reasonOf(policy, tx)).to.equal(1);
    }
  });

  it("does not give an entry's cap back on release (the record keeps no entry): it can only block more", async function () {
    const { policy, pay, release } = await capped();
    const id = paymentId();
    expect(await reasonOf(policy, pay(usdc(2), "api.example.com", { caps: CAPS, id }))).to.equal(0);
    await (await release(id)).wait();
    expect(await policy.spentToday()).to.equal(0n);
    expect(await reasonOf(policy, pay(1n, "api.example.com", { caps: CAPS }))).to.equal(12);
  });

  it("accepts a SetPolicy signed over the allowlist in clear, and refuses one signed over a root (the 4-field or grown root type)", async function () {
    const { policy, policyAddress, agent, owner, other } = await loadFixture(policyFixture);
    const values = {
      ...LOOSE,
      merchants: merchantsOf(ALLOWLIST),
      hourlyBudget: 0n,
      weeklyBudget: usdc(7),
      monthlyBudget: 0n,
      lifetimeBudget: 0n,
      maxPaymentsPerHour: 9n,
      validUntil: 0n,
      maxSwapSlippageBps: 50n,
      swapTwapSeconds: 1_800n,
      minSwapRate: 0n,
    };
    const OLD = {
      SetPolicy: [
        { name: "agent", type: "address" },
        { name: "perTxLimit", type: "uint256" },
        { name: "dailyBudget", type: "uint256" },
        { name: "allowlistRoot", type: "bytes32" },
        { name: "approvalThreshold", type: "uint256" },
        { name: "timestamp", type: "uint256" },
      ],
    };
    // Version 3: the same fields, the allowlist as a root the owner could not read.
    const ROOT_TYPE = {
      SetPolicy: SET_POLICY_TYPES.SetPolicy.map((f) => (f.name === "merchants" ? { name: "allowlistRoot", type: "bytes32" } : f)),
    };
    const root = allowlistRoot(ALLOWLIST);
    const ts = await nextTimestamp();
    const domain = policyDomain(CHAIN_ID, policyAddress);
    const { merchants: _signed, ...rest } = values;
    for (const oldSig of [
      await owner.signTypedData(domain, OLD, { agent, ...LOOSE, allowlistRoot: root, timestamp: ts }),
      await owner.signTypedData(domain, ROOT_TYPE, { agent, ...rest, allowlistRoot: root, timestamp: ts }),
    ]) {
      await expect(policy.connect(other).updatePolicy(values, ts, oldSig)).to.be.revertedWithCustomError(
        policy,
        "SpendPolicyInvalidSignature",
      );
    }
    // Any field changed after signing breaks the signature (the swap fields too).
    const sig = await signSetPolicy(owner, policyAddress, agent, values, ts);
    await expect(policy.connect(other).updatePolicy({ ...values, maxSwapSlippageBps: 51n }, ts, sig)).to.be.revertedWithCustomError(
      policy,
      "SpendPolicyInvalidSignature",
    );
    await expect(policy.connect(other).updatePolicy(values, ts, sig))
      .to.emit(policy, "PolicyUpdated")
      .withArgs(agent, 2n, policyTuple(values), root, ts, anyValue);
    hre;
  });
});
