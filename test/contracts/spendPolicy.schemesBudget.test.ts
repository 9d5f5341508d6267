import type { ChannelConfigFields } from "../../src/store/channelDocuments";
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { NO_APPROVAL, usdc } from "../helpers/policyFixture";
import { BATCH_SETTLEMENT, CHANNEL_HOST, channelConfig, channelFixture, channelIdOf } from "../helpers/schemesFixture";
import type { CeilingInput } from "../../src/chain/schemeOps";
import { stockCeiling } from "../helpers/uptoFixture";
import { A, uptoSettleArgs } from "../helpers/x402SchemeContracts";

const { ethers } = hre;

/** A small deterministic generator (mulberry32): the same sequence on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface ChannelModel {
  config: ChannelConfigFields;
  id: string;
  /** The channel's latest authorised deposit, until a step tries to land it. */
  pending: { land: () => Promise<{ wait: () => Promise<unknown> }> } | null;
}

/**
 * Budget B binds every scheme together: a stolen operator drives deposits, top-ups, ceilings, payer withdrawals and
 * credits in any order (naming any deposit to credit, crediting twice, crediting before anything came back), the
 * seller claims every unit its vouchers reach on the channel contract (the wallet signs vouchers of any amount: the
 * channel bounds them by its balance) and is paid out, settles ceilings for what it likes, and refunds at random.
 * After every step, the USDC that left the wallet is at most what the policy counts today, which is at most the daily
 * budget. Deposits, claims, refunds and withdrawals go through the sandbox's channel contract and ERC-3009 collector,
 * ceilings through its Permit2 and upto proxy.
 */
describe("SpendPolicy x402 schemes: budget B is never exceeded", function () {
  for (const seed of [7, 2026]) {
    it(`holds outflow <= spentToday <= dailyBudget over 80 random steps (seed ${seed})`, async function () {
      const f = await loadFixture(channelFixture);
      // A withdrawal waits the channel's delay (chain time moves 901 s each): start at the top of a UTC day.
      await time.increaseTo((Math.floor((await time.latest()) / 86400) + 1) * 86400 + 60);
      const next = random(seed);
      const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)];
      const amount = () => BigInt(1 + Math.floor(next() * 3)) * usdc(1) - BigInt(Math.floor(next() * 1000));
      const budget = (await f.policy.policy()).dailyBudget;
      const start = await f.token.balanceOf(f.agent);
      const day = Math.floor((await time.latest()) / 86400);
      const channels: ChannelModel[] = [0, 1, 2].map(() => {
        const config = channelConfig(f.agent, f.merchant.address, f.tokenAddress);
        return { config, id: channelIdOf(config), pending: null };
      });
      const deposits: string[] = [];
      let ceiling: { id: string; values: CeilingInput; signature: string } | null = null;
      // The seller's facilitator settles ceilings through the sandbox's upto proxy (Permit2 asks the wallet's ERC-1271).
      const upto = (await ethers.getContractAt("X402UptoPermit2Proxy", A.uptoPermit2Proxy)).connect(f.other);
      const tryTx = async (tx: Promise<{ wait: () => Promise<unknown> }>) => {
        try {
          await (await tx).wait();
          return true;
        } catch {
          return false;
        }
      };
      const counts: Record<string, number> = {};

      for (let step = 0; step < 80; step++) {
        const action = pick([
          "deposit",
          "deposit",
          "land",
          "land",
          "claim",
          "refund",
          "withdraw",
          "finishWithdraw",
          "credit",
          "credit",
          "ceiling",
          "settle",
          "creditCeiling",
        ]);
        const ch = pick(channels);
        const held = await f.onChain(ch.id);
        let done = false;
        if (action === "deposit") {
          const d = await f.deposit(amount(), ch.config);
          done = await tryTx(d.tx);
          if (done && (await f.policy.paymentState(d.id)) === 1n) {
            deposits.push(d.id);
            ch.pending = { land: d.land };
          }
        } else if (action === "land" && ch.pending) {
          const p = ch.pending;
          ch.pending = null;
          done = await tryTx(p.land());
        } else if (action === "claim" && held.balance > held.totalClaimed) {
          // The seller claims any part of what the channel holds, up to all of it, with a voucher of any amount the
          // wallet signs, and is paid out; a claim past the balance fails on the channel contract.
          const upTo = held.balance - BigInt(Math.floor(next() * 2 * Number(held.balance - held.totalClaimed))) / 2n;
          done = !(await tryTx(f.claim(ch.config, held.balance + 1n))) && (await tryTx(f.claim(ch.config, upTo)));
          if (done) await (await f.settle()).wait();
        } else if (action === "refund" && held.balance > held.totalClaimed) {
          const free = held.balance - held.totalClaimed;
          done = await tryTx(f.refund(ch.config, free - BigInt(Math.floor(next() * Number(free)))));
        } else if (action === "withdraw") {
          done = await tryTx(f.schemes.connect(f.operator).withdrawChannel(ch.config));
        } else if (action === "finishWithdraw" && (await f.batch.pendingWithdrawals(ch.id)).initiatedAt !== 0n) {
          await time.increase(901);
          done = await tryTx(f.schemes.connect(f.operator).finishChannelWithdraw(ch.config));
        } else if (action === "credit" && deposits.length > 0) {
          done = await tryTx(f.schemes.connect(f.operator).creditChannel(pick(deposits)));
        } else if (action === "ceiling" && !ceiling) {
          const c = await stockCeiling(f, f.merchant.address, amount(), f.other.address);
          done = await tryTx(f.schemes.connect(f.operator).authorizeCeiling(c.id, CHANNEL_HOST, f.leaf, f.proof, c.ceiling, NO_APPROVAL));
          if (done && (await f.policy.paymentState(c.id)) === 1n) ceiling = { id: c.id, values: c.ceiling, signature: c.permit.signature };
        } else if (action === "settle" && ceiling) {
          // The facilitator settles any part of the ceiling, once (Permit2's nonce), through the upto proxy.
          const v = ceiling.values;
          const permit = {
            permitted: { token: f.tokenAddress, amount: v.amount },
            spender: A.uptoPermit2Proxy,
            nonce: v.nonce,
            deadline: v.deadline,
            witness: { to: v.payTo, facilitator: v.facilitator, validAfter: v.validAfter },
          };
          const used = v.amount - BigInt(Math.floor(next() * Number(v.amount)));
          done = await tryTx(upto.settle(...uptoSettleArgs(permit, used, f.agent, ceiling.signature)));
        } else if (action === "creditCeiling" && ceiling) {
          done = await tryTx(f.schemes.connect(f.operator).creditCeiling(ceiling.id));
          if (done) ceiling = null;
        }
        if (done) counts[action] = (counts[action] ?? 0) + 1;

        const outflow = start - (await f.token.balanceOf(f.agent));
        const spent = await f.policy.spentToday();
        expect(Math.floor((await time.latest()) / 86400), "the sequence stays within one UTC day").to.equal(day);
        expect(outflow <= spent, `step ${step} ${action}: outflow ${outflow} > spentToday ${spent}`).to.equal(true);
        expect(spent <= budget, `step ${step} ${action}: spentToday ${spent} > budget ${budget}`).to.equal(true);
      }
      // The sequence exercised every kind of step (not only refusals).
      if (process.env.SCHEMES_BUDGET_VERBOSE) console.log(seed, counts);
      for (const kind of [
        "deposit",
        "land",
        "claim",
        "refund",
        "withdraw",
        "finishWithdraw",
        "credit",
        "ceiling",
        "settle",
        "creditCeiling",
      ]) {
        expect(counts[kind] ?? 0, `${kind} steps that went through`).to.be.greaterThan(0);
      }
      expect(await ethers.provider.getCode(BATCH_SETTLEMENT)).to.not.equal("0x");
    });
  }
});
