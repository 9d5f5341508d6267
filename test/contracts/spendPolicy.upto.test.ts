import { expect } from "chai";
import { anyValue } from "@nomicfoundation/hardhat-chai-matchers/withArgs";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { merchantsOf } from "../../src/policy/allowlist";
import { ALLOWLIST, NO_APPROVAL, blockedArgs, merchantHash, proofFor, usdc } from "../helpers/policyFixture";
import { PERMIT2, schemesFixture } from "../helpers/schemesFixture";
import type { CeilingInput } from "../../src/chain/schemeOps";
import { stockCeiling } from "../helpers/uptoFixture";

const { ethers } = hre;
const MAGIC = "0x1626ba7e";
const INVALID = "0xffffffff";
const HOST = "api.example.com";
const UPTO = 2;

/** Upto ceilings: a Permit2 witness transfer of at most the ceiling, settled for what was used. */
describe("SpendPolicy x402 schemes: upto ceilings", function () {
  async function fixture() {
    const f = await schemesFixture();
    const payees = { [HOST]: f.merchant.address };
    await f.setPolicy({ merchants: merchantsOf(ALLOWLIST, {}, payees) });
    const { leaf, proof } = proofFor(ALLOWLIST, HOST, {}, payees);
    const facilitator = ethers.Wallet.createRandom().address;

    /** The stock client's ceiling of `amount` to `payTo`, authorised by the operator. */
    async function ceiling(amount: bigint, payTo = f.merchant.address) {
      const c = await stockCeiling(f, payTo, amount, facilitator);
      const tx = f.schemes.connect(f.operator).authorizeCeiling(c.id, HOST, leaf, proof, c.ceiling, NO_APPROVAL);
      return { ...c, tx };
    }

    /** What the upto proxy's settle makes Permit2 do: pull `used` from the wallet to the seller. */
    const settle = async (used: bigint) => (await f.token.connect(f.permit2).transferFrom(f.agent, f.merchant.address, used)).wait();
    const answer = (c: { permit: { digest: string; signature: string } }) => f.policy.isValidSignature(c.permit.digest, c.permit.signature);
    return { ...f, leaf, proof, facilitator, ceiling, settle, answer };
  }

  it("authorises a ceiling like a payment, approves Permit2 for exactly it, and answers ERC-1271 for the stock client's permit", async function () {
    const f = await loadFixture(fixture);
    const c = await f.ceiling(usdc(3));
    await expect(c.tx)
      .to.emit(f.schemes, "PaymentAuthorized")
      .withArgs(
        c.id,
        f.agent,
        merchantHash(HOST),
        HOST,
        f.merchant.address,
        usdc(3),
        0n,
        c.ceiling.deadline,
        usdc(3),
        anyValue,
        HOST,
        0n,
        f.merchant.address,
      )
      .and.to.emit(f.schemes, "SchemePayment")
      .withArgs(c.id, UPTO, c.permit.digest, true);
    expect(await f.schemes.ceilingDigest(c.ceiling)).to.equal(c.permit.digest);
    expect(await f.token.allowance(f.agent, PERMIT2)).to.equal(usdc(3));
    expect(await f.schemes.openCeiling()).to.equal(c.id);
    expect(await f.policy.spentToday()).to.equal(usdc(3));
    expect(await f.answer(c)).to.equal(MAGIC);
  });

  it("answers no other Permit2 transfer: another amount, recipient or facilitator", async function () {
    const f = await loadFixture(fixture);
    const c = await f.ceiling(usdc(3));
    await (await c.tx).wait();
    const variants: Partial<CeilingInput>[] = [
      { amount: usdc(3) + 1n },
      { payTo: f.other.address },
      { facilitator: f.other.address },
      { nonce: c.ceiling.nonce + 1n },
    ];
    for (const v of variants) {
      const digest = await f.schemes.ceilingDigest({ ...c.ceiling, ...v });
      expect(
        await f.policy.isValidSignature(digest, c.permit.signature),
        JSON.stringify(v, (_k, x: unknown) => String(x)),
      ).to.equal(INVALID);
    }
  });

  it("credits the unsettled part of the ceiling to its windows, once, and closes Permit2's allowance", async function () {
    const f = await loadFixture(fixture);
    const c = await f.ceiling(usdc(3));
    await (await c.tx).wait();
    await f.settle(usdc(1));
    await expect(f.schemes.connect(f.operator).creditCeiling(c.id))
      .to.emit(f.schemes, "PaymentReleased")
      .withArgs(c.id, f.agent, usdc(2), usdc(1))
      .and.to.emit(f.schemes, "SchemeCredited")
      .withArgs(c.id, UPTO, c.permit.digest, usdc(2), usdc(2));
    expect(await f.policy.spentToday()).to.equal(usdc(1));
    expect(await f.token.allowance(f.agent, PERMIT2)).to.equal(0n);
    expect(await f.schemes.openCeiling()).to.equal(ethers.ZeroHash);
    expect(await f.answer(c)).to.equal(INVALID);
    await expect(f.schemes.connect(f.operator).creditCeiling(c.id))
      .to.be.revertedWithCustomError(f.schemes, "SpendPolicyUnknownSchemePayment")
      .withArgs(c.id);
  });

  it("credits nothing of a ceiling settled in full, and lets only the operator credit", async function () {
    const f = await loadFixture(fixture);
    const c = await f.ceiling(usdc(2));
    await (await c.tx).wait();
    await f.settle(usdc(2));
    await expect(f.schemes.connect(f.other).creditCeiling(c.id)).to.be.revertedWithCustomError(
      f.schemes,
      "SpendPolicyUnauthorizedOperator",
    );
    await expect(f.schemes.connect(f.operator).creditCeiling(c.id))
      .to.emit(f.schemes, "SchemeCredited")
      .withArgs(c.id, UPTO, c.permit.digest, 0n, 0n);
    expect(await f.policy.spentToday()).to.equal(usdc(2));
  });

  it("keeps one ceiling open at a time: the next waits for the credit of the last", async function () {
    const f = await loadFixture(fixture);
    const first = await f.ceiling(usdc(1));
    await (await first.tx).wait();
    const second = await f.ceiling(usdc(1));
    await expect(second.tx).to.be.revertedWithCustomError(f.schemes, "SpendPolicyCeilingOpen").withArgs(first.id);
    await (await f.schemes.connect(f.operator).creditCeiling(first.id)).wait();
    const third = await f.ceiling(usdc(1));
    await (await third.tx).wait();
    expect(await f.token.allowance(f.agent, PERMIT2)).to.equal(usdc(1));
  });

  it("blocks ceilings to an unnamed payee (14), over the limit (2) or while paused (4), and a pause kills an open one", async function () {
    const f = await loadFixture(fixture);
    const stranger = await f.ceiling(usdc(1), f.other.address);
    await expect(stranger.tx)
      .to.emit(f.schemes, "PaymentBlocked")
      .withArgs(...blockedArgs(stranger.id, f.agent, HOST, usdc(1), 14))
      .and.to.emit(f.schemes, "SchemePayment")
      .withArgs(stranger.id, UPTO, stranger.permit.digest, false);
    const big = await f.ceiling(usdc(6));
    await expect(big.tx)
      .to.emit(f.schemes, "PaymentBlocked")
      .withArgs(...blockedArgs(big.id, f.agent, HOST, usdc(6), 2));
    expect(await f.token.allowance(f.agent, PERMIT2)).to.equal(0n);
    const open = await f.ceiling(usdc(1));
    await (await open.tx).wait();
    await f.setPaused(true);
    expect(await f.answer(open)).to.equal(INVALID);
    // Crediting it while paused gives its whole unsettled ceiling back and closes the allowance.
    await (await f.schemes.connect(f.operator).creditCeiling(open.id)).wait();
    expect(await f.policy.spentToday()).to.equal(0n);
    const paused = await f.ceiling(usdc(1));
    await expect(paused.tx)
      .to.emit(f.schemes, "PaymentBlocked")
      .withArgs(...blockedArgs(paused.id, f.agent, HOST, usdc(1), 4));
  });
});
