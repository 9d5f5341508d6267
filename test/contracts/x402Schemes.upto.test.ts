/**
 * The sandbox's Permit2 (signature transfers with a witness) and x402 upto proxy on their own: what a signed
 * ceiling lets the named facilitator do, and every way it refuses (replay, over the ceiling, another caller, another
 * payee, expiry, too early, wrong signer), for an EOA payer and an ERC-1271 contract payer.
 */
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { Signature, Wallet } from "ethers";
import {
  A,
  BASE_USDC,
  PERMIT_TYPES,
  USDC_DOMAIN,
  placeSchemeFixture,
  signUpto,
  uptoDigest,
  uptoSettleArgs,
  type UptoPermit,
} from "../helpers/x402SchemeContracts";

const { ethers } = hre;
const CEILING = 5_000_000n;

describe("x402 sandbox: Permit2 and the upto proxy", function () {
  async function fixture() {
    const c = await placeSchemeFixture();
    const [facilitator, other, payee] = await ethers.getSigners();
    const alice = Wallet.createRandom().connect(ethers.provider);
    await facilitator.sendTransaction({ to: alice.address, value: ethers.parseEther("1") });
    await c.usdc.mint(alice.address, 100_000_000n);
    await c.usdc.connect(alice).approve(A.permit2, ethers.MaxUint256);
    const wallet = await (await ethers.getContractFactory("Test1271Wallet")).deploy(facilitator.address);
    await c.usdc.mint(await wallet.getAddress(), 100_000_000n);
    return { ...c, facilitator, other, payee, alice, wallet };
  }

  async function permitFor(f: Awaited<ReturnType<typeof fixture>>, overrides: Partial<UptoPermit["witness"]> = {}) {
    const now = BigInt(await time.latest());
    const p: UptoPermit = {
      permitted: { token: BASE_USDC, amount: CEILING },
      spender: A.uptoPermit2Proxy,
      nonce: BigInt(ethers.hexlify(ethers.randomBytes(32))),
      deadline: now + 300n,
      witness: { to: f.payee.address, facilitator: f.facilitator.address, validAfter: now - 5n, ...overrides },
    };
    return p;
  }

  it("the named facilitator settles less than the ceiling to the payee; the rest stays with the payer", async function () {
    const f = await loadFixture(fixture);
    const p = await permitFor(f);
    const sig = await signUpto(f.alice, p);
    const before = await f.usdc.balanceOf(f.alice.address);
    await expect(f.upto.settle(...uptoSettleArgs(p, 1_234_567n, f.alice.address, sig))).to.emit(f.upto, "Settled");
    expect(await f.usdc.balanceOf(f.payee.address)).to.equal(1_234_567n);
    expect(await f.usdc.balanceOf(f.alice.address)).to.equal(before - 1_234_567n);
    expect(await f.upto.PERMIT2()).to.equal(A.permit2);
  });

  it("a ceiling settles once: the same signature again is refused by Permit2's nonce", async function () {
    const f = await loadFixture(fixture);
    const p = await permitFor(f);
    const sig = await signUpto(f.alice, p);
    await f.upto.settle(...uptoSettleArgs(p, 1n, f.alice.address, sig));
    await expect(f.upto.settle(...uptoSettleArgs(p, 1n, f.alice.address, sig))).to.be.revertedWithCustomError(f.permit2, "InvalidNonce");
    const word = await f.permit2.nonceBitmap(f.alice.address, p.nonce >> 8n);
    expect((word >> (p.nonce & 0xffn)) & 1n).to.equal(1n);
  });

  it("refuses more than the ceiling, zero, another caller, and a payer of address zero", async function () {
    const f = await loadFixture(fixture);
    const p = await permitFor(f);
    const sig = await signUpto(f.alice, p);
    await expect(f.upto.settle(...uptoSettleArgs(p, CEILING + 1n, f.alice.address, sig))).to.be.revertedWithCustomError(
      f.upto,
      "AmountExceedsPermitted",
    );
    await expect(f.upto.settle(...uptoSettleArgs(p, 0n, f.alice.address, sig))).to.be.revertedWithCustomError(f.upto, "InvalidAmount");
    await expect(f.upto.connect(f.other).settle(...uptoSettleArgs(p, 1n, f.alice.address, sig))).to.be.revertedWithCustomError(
      f.upto,
      "UnauthorizedFacilitator",
    );
    await expect(f.upto.settle(...uptoSettleArgs(p, 1n, ethers.ZeroAddress, sig))).to.be.revertedWithCustomError(f.upto, "InvalidOwner");
    await f.upto.settle(...uptoSettleArgs(p, CEILING, f.alice.address, sig)); // the exact ceiling is fine
  });

  it("the witness is signed: another payee, facilitator or start time, or another signer, breaks the signature", async function () {
    const f = await loadFixture(fixture);
    const p = await permitFor(f);
    const sig = await signUpto(f.alice, p);
    const redirected = { ...p, witness: { ...p.witness, to: f.other.address } };
    await expect(f.upto.settle(...uptoSettleArgs(redirected, 1n, f.alice.address, sig))).to.be.revertedWithCustomError(
      f.permit2,
      "InvalidSigner",
    );
    const otherFacilitator = { ...p, witness: { ...p.witness, facilitator: f.other.address } };
    await expect(
      f.upto.connect(f.other).settle(...uptoSettleArgs(otherFacilitator, 1n, f.alice.address, sig)),
    ).to.be.revertedWithCustomError(f.permit2, "InvalidSigner");
    const bobSig = await signUpto(Wallet.createRandom(), p);
    await expect(f.upto.settle(...uptoSettleArgs(p, 1n, f.alice.address, bobSig))).to.be.revertedWithCustomError(
      f.permit2,
      "InvalidSigner",
    );
    await expect(f.upto.settle(...uptoSettleArgs(p, 1n, f.alice.address, "0x1234"))).to.be.revertedWithCustomError(
      f.permit2,
      "InvalidSignature",
    );
  });

  it("refuses an expired ceiling and one not yet valid", async function () {
    const f = await loadFixture(fixture);
    const early = await permitFor(f, { validAfter: BigInt(await time.latest()) + 100n });
    await expect(
      f.upto.settle(...uptoSettleArgs(early, 1n, f.alice.address, await signUpto(f.alice, early))),
    ).to.be.revertedWithCustomError(f.upto, "PaymentTooEarly");
    const p = await permitFor(f);
    const sig = await signUpto(f.alice, p);
    await time.increaseTo(p.deadline + 1n);
    await expect(f.upto.settle(...uptoSettleArgs(p, 1n, f.alice.address, sig)))
      .to.be.revertedWithCustomError(f.permit2, "SignatureExpired")
      .withArgs(p.deadline);
  });

  it("an owner can invalidate its unused nonces", async function () {
    const f = await loadFixture(fixture);
    const p = await permitFor(f);
    const sig = await signUpto(f.alice, p);
    await expect(f.permit2.connect(f.alice).invalidateUnorderedNonces(p.nonce >> 8n, 1n << (p.nonce & 0xffn)))
      .to.emit(f.permit2, "UnorderedNonceInvalidation")
      .withArgs(f.alice.address, p.nonce >> 8n, 1n << (p.nonce & 0xffn));
    await expect(f.upto.settle(...uptoSettleArgs(p, 1n, f.alice.address, sig))).to.be.revertedWithCustomError(f.permit2, "InvalidNonce");
  });

  it("an ERC-1271 payer: refused until its wallet approves the digest, then settled", async function () {
    const f = await loadFixture(fixture);
    const payer = await f.wallet.getAddress();
    await f.wallet.execute(BASE_USDC, f.usdc.interface.encodeFunctionData("approve", [A.permit2, ethers.MaxUint256]));
    const p = await permitFor(f);
    const sig = "0x" + "11".repeat(65); // the wallet ignores the bytes; it answers for digests it approved
    await expect(f.upto.settle(...uptoSettleArgs(p, 700n, payer, sig))).to.be.revertedWithCustomError(
      f.permit2,
      "InvalidContractSignature",
    );
    await f.wallet.setApproved(uptoDigest(p), true);
    await f.upto.settle(...uptoSettleArgs(p, 700n, payer, sig));
    expect(await f.usdc.balanceOf(f.payee.address)).to.equal(700n);
  });

  it("settleWithPermit approves Permit2 by EIP-2612 first (gasless first use), and checks the permit's value", async function () {
    const f = await loadFixture(fixture);
    const carol = Wallet.createRandom();
    await f.usdc.mint(carol.address, 10_000_000n);
    const p = await permitFor(f);
    const sig = await signUpto(carol, p);
    const deadline = p.deadline;
    const permitSig = Signature.from(
      await carol.signTypedData(USDC_DOMAIN, PERMIT_TYPES, {
        owner: carol.address,
        spender: A.permit2,
        value: CEILING,
        nonce: 0n,
        deadline,
      }),
    );
    const eip2612 = { value: CEILING, deadline, r: permitSig.r, s: permitSig.s, v: permitSig.v };
    await expect(
      f.upto.settleWithPermit({ ...eip2612, value: CEILING - 1n }, ...uptoSettleArgs(p, 10n, carol.address, sig)),
    ).to.be.revertedWithCustomError(f.upto, "Permit2612AmountMismatch");
    await expect(f.upto.settleWithPermit(eip2612, ...uptoSettleArgs(p, 10n, carol.address, sig))).to.emit(f.upto, "SettledWithPermit");
    expect(await f.usdc.balanceOf(f.payee.address)).to.equal(10n);
  });
});
