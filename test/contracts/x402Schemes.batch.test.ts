/**
 * The sandbox's x402 batch-settlement channel contract and its deposit collectors on their own: deposits through
 * ERC-3009 and Permit2 bound to one channel, cumulative vouchers claimed up to the deposit and the signed ceiling,
 * settle, cooperative refunds with their nonce, and the payer's timed withdrawal; for EOA payers and an ERC-1271
 * payer whose vouchers are signed through the wallet (payerAuthorizer = 0).
 */
import type { ChannelConfigFields } from "../../src/store/channelDocuments";
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { readFileSync } from "node:fs";
import { Wallet } from "ethers";
import * as x402Evm from "@x402/evm";
import {
  A,
  BASE_USDC,
  DEPOSIT_WITNESS_TYPES,
  PERMIT2_DOMAIN,
  channelIdOf,
  erc3009Deposit,
  placeSchemeFixture,
  signClaimBatch,
  signRefund,
  signVoucher,
  voucherDigest,
  type VoucherClaim,
} from "../helpers/x402SchemeContracts";

const { ethers } = hre;
const DELAY = 900;
const DEPOSIT = 1_000_000n;

describe("x402 sandbox: batch-settlement channels and deposit collectors", function () {
  async function fixture() {
    const c = await placeSchemeFixture();
    const [relayer, receiver, stranger] = await ethers.getSigners();
    const authorizer = Wallet.createRandom(); // the receiver authorizer signs claims and refunds
    const payer = Wallet.createRandom().connect(ethers.provider);
    await relayer.sendTransaction({ to: payer.address, value: ethers.parseEther("1") });
    await c.usdc.mint(payer.address, 100_000_000n);
    const wallet = await (await ethers.getContractFactory("Test1271Wallet")).deploy(relayer.address);
    await c.usdc.mint(await wallet.getAddress(), 100_000_000n);
    const config = (p: string, overrides: Partial<ChannelConfigFields> = {}): ChannelConfigFields => ({
      payer: p,
      payerAuthorizer: p === payer.address ? payer.address : ethers.ZeroAddress,
      receiver: receiver.address,
      receiverAuthorizer: authorizer.address,
      token: BASE_USDC,
      withdrawDelay: DELAY,
      salt: ethers.ZeroHash,
      ...overrides,
    });
    return { ...c, relayer, receiver, stranger, authorizer, payer, wallet, config };
  }
  type F = Awaited<ReturnType<typeof fixture>>;

  async function depositEoa(f: F, cfg: ChannelConfigFields, amount = DEPOSIT) {
    const { data } = await erc3009Deposit(f.payer, cfg.payer, channelIdOf(cfg), amount, {
      validBefore: BigInt(await time.latest()) + 600n,
    });
    return f.batch.deposit(cfg, amount, A.erc3009DepositCollector, data);
  }

  async function claimRow(f: F, cfg: ChannelConfigFields, ceiling: bigint, claimed: bigint, signer = f.payer): Promise<VoucherClaim> {
    return {
      voucher: { channel: cfg, maxClaimableAmount: ceiling },
      signature: await signVoucher(signer, channelIdOf(cfg), ceiling),
      totalClaimed: claimed,
    };
  }

  it("sits at the addresses the installed @x402/evm calls", function () {
    expect(A.permit2).to.equal(x402Evm.PERMIT2_ADDRESS);
    expect(A.uptoPermit2Proxy).to.equal(x402Evm.x402UptoPermit2ProxyAddress);
    expect(A.batchSettlement).to.equal(x402Evm.BATCH_SETTLEMENT_ADDRESS);
    expect(A.erc3009DepositCollector).to.equal(x402Evm.ERC3009_DEPOSIT_COLLECTOR_ADDRESS);
    const dist = readFileSync(require.resolve("@x402/evm/batch-settlement/facilitator"), "utf8");
    expect(dist).to.include(`PERMIT2_DEPOSIT_COLLECTOR_ADDRESS = "${A.permit2DepositCollector}"`);
  });

  it("computes channel ids and digests as the x402 packages do (EIP-712, this chain and address)", async function () {
    const f = await loadFixture(fixture);
    const cfg = f.config(f.payer.address);
    expect(await f.batch.getChannelId(cfg)).to.equal(channelIdOf(cfg));
    expect(await f.batch.getVoucherDigest(channelIdOf(cfg), 7n)).to.equal(voucherDigest(channelIdOf(cfg), 7n));
  });

  it("an ERC-3009 deposit opens the channel; the authorisation cannot be used by anyone else or for another channel", async function () {
    const f = await loadFixture(fixture);
    const cfg = f.config(f.payer.address);
    const id = channelIdOf(cfg);
    const { data } = await erc3009Deposit(f.payer, cfg.payer, id, DEPOSIT, { validBefore: BigInt(await time.latest()) + 600n });
    // Straight to the collector: it serves the channel contract only.
    await expect(
      f.erc3009Collector.connect(f.stranger).collect(f.payer.address, BASE_USDC, DEPOSIT, id, data),
    ).to.be.revertedWithCustomError(f.erc3009Collector, "OnlyBatchSettlement");
    // Into another channel (another salt): the signed nonce is bound to the first one.
    await expect(f.batch.deposit({ ...cfg, salt: ethers.id("other") }, DEPOSIT, A.erc3009DepositCollector, data)).to.be.revertedWith(
      "FiatTokenV2: invalid signature",
    );
    await expect(f.batch.deposit(cfg, DEPOSIT, A.erc3009DepositCollector, data))
      .to.emit(f.batch, "ChannelCreated")
      .and.to.emit(f.batch, "Deposited")
      .withArgs(id, f.relayer.address, DEPOSIT, DEPOSIT);
    expect(await f.batch.channels(id)).to.deep.equal([DEPOSIT, 0n]);
    expect(await f.usdc.balanceOf(A.batchSettlement)).to.equal(DEPOSIT);
    await expect(f.batch.deposit(cfg, DEPOSIT, A.erc3009DepositCollector, data)).to.be.revertedWith(
      "FiatTokenV2: authorization is used or canceled",
    );
  });

  it("refuses channels with a delay out of range, a zero deposit or no collector", async function () {
    const f = await loadFixture(fixture);
    for (const withdrawDelay of [899, 30 * 86400 + 1]) {
      await expect(depositEoa(f, f.config(f.payer.address, { withdrawDelay }))).to.be.revertedWithCustomError(
        f.batch,
        "WithdrawDelayOutOfRange",
      );
    }
    const cfg = f.config(f.payer.address);
    await expect(f.batch.deposit(cfg, 0n, A.erc3009DepositCollector, "0x")).to.be.revertedWithCustomError(f.batch, "ZeroDeposit");
    await expect(f.batch.deposit(cfg, 1n, ethers.ZeroAddress, "0x")).to.be.revertedWithCustomError(f.batch, "InvalidCollector");
    await expect(depositEoa(f, f.config(f.payer.address, { receiverAuthorizer: ethers.ZeroAddress }))).to.be.revertedWithCustomError(
      f.batch,
      "InvalidChannel",
    );
  });

  it("a Permit2 deposit: the witness binds the channel, the collector is the spender", async function () {
    const f = await loadFixture(fixture);
    await f.usdc.connect(f.payer).approve(A.permit2, ethers.MaxUint256);
    const cfg = f.config(f.payer.address);
    const id = channelIdOf(cfg);
    const deadline = BigInt(await time.latest()) + 600n;
    const nonce = 42n;
    const sig = await f.payer.signTypedData(PERMIT2_DOMAIN, DEPOSIT_WITNESS_TYPES, {
      permitted: { token: BASE_USDC, amount: DEPOSIT },
      spender: A.permit2DepositCollector,
      nonce,
      deadline,
      witness: { channelId: id },
    });
    const data = ethers.AbiCoder.defaultAbiCoder().encode(["uint256", "uint256", "bytes", "bytes"], [nonce, deadline, sig, "0x"]);
    await expect(f.batch.deposit({ ...cfg, salt: ethers.id("x") }, DEPOSIT, A.permit2DepositCollector, data)).to.be.revertedWithCustomError(
      f.permit2,
      "InvalidSigner",
    );
    await expect(
      f.permit2Collector.connect(f.stranger).collect(f.payer.address, BASE_USDC, DEPOSIT, id, data),
    ).to.be.revertedWithCustomError(f.permit2Collector, "OnlyBatchSettlement");
    await f.batch.deposit(cfg, DEPOSIT, A.permit2DepositCollector, data);
    expect(await f.batch.channels(id)).to.deep.equal([DEPOSIT, 0n]);
    await expect(f.batch.deposit(cfg, DEPOSIT, A.permit2DepositCollector, data)).to.be.revertedWithCustomError(f.permit2, "InvalidNonce");
  });

  it("claims move accounting only; settle pays the receiver once; an old voucher replayed changes nothing", async function () {
    const f = await loadFixture(fixture);
    const cfg = f.config(f.payer.address);
    const id = channelIdOf(cfg);
    await depositEoa(f, cfg);
    const first = await claimRow(f, cfg, 300n, 250n);
    await expect(f.batch.claimWithSignature([first], await signClaimBatch(f.authorizer, [first])))
      .to.emit(f.batch, "Claimed")
      .withArgs(id, f.relayer.address, 250n, 250n);
    expect(await f.usdc.balanceOf(f.receiver.address)).to.equal(0n);
    const second = await claimRow(f, cfg, 900n, 900n);
    await f.batch.claimWithSignature([second], await signClaimBatch(f.authorizer, [second]));
    // Replaying the first row again: at or below what was claimed, a no-op.
    await expect(f.batch.claimWithSignature([first], await signClaimBatch(f.authorizer, [first]))).not.to.emit(f.batch, "Claimed");
    expect(await f.batch.channels(id)).to.deep.equal([DEPOSIT, 900n]);
    expect(await f.batch.receivers(f.receiver.address, BASE_USDC)).to.deep.equal([900n, 0n]);
    await expect(f.batch.connect(f.stranger).settle(f.receiver.address, BASE_USDC))
      .to.emit(f.batch, "Settled")
      .withArgs(f.receiver.address, BASE_USDC, f.stranger.address, 900n);
    await expect(f.batch.settle(f.receiver.address, BASE_USDC)).not.to.emit(f.batch, "Settled");
    expect(await f.usdc.balanceOf(f.receiver.address)).to.equal(900n);
  });

  it("refuses a claim past the deposit, past the voucher's ceiling, or on a voucher of the wrong signer", async function () {
    const f = await loadFixture(fixture);
    const cfg = f.config(f.payer.address);
    await depositEoa(f, cfg);
    const over = await claimRow(f, cfg, DEPOSIT * 2n, DEPOSIT + 1n);
    await expect(f.batch.claimWithSignature([over], await signClaimBatch(f.authorizer, [over]))).to.be.revertedWithCustomError(
      f.batch,
      "ClaimExceedsBalance",
    );
    const aboveCeiling = await claimRow(f, cfg, 100n, 101n);
    await expect(
      f.batch.claimWithSignature([aboveCeiling], await signClaimBatch(f.authorizer, [aboveCeiling])),
    ).to.be.revertedWithCustomError(f.batch, "ClaimExceedsCeiling");
    const forged = await claimRow(f, cfg, 100n, 100n, Wallet.createRandom().connect(ethers.provider));
    await expect(f.batch.claimWithSignature([forged], await signClaimBatch(f.authorizer, [forged]))).to.be.revertedWithCustomError(
      f.batch,
      "InvalidSignature",
    );
  });

  it("only the receiver side claims: a direct claim by a stranger, a batch signed by another key, mixed authorizers", async function () {
    const f = await loadFixture(fixture);
    const cfg = f.config(f.payer.address);
    await depositEoa(f, cfg);
    const row = await claimRow(f, cfg, 100n, 100n);
    await expect(f.batch.connect(f.stranger).claim([row])).to.be.revertedWithCustomError(f.batch, "NotAuthorizedToClaim");
    await expect(f.batch.claimWithSignature([row], await signClaimBatch(Wallet.createRandom(), [row]))).to.be.revertedWithCustomError(
      f.batch,
      "InvalidSignature",
    );
    const otherCfg = f.config(f.payer.address, { receiverAuthorizer: f.stranger.address });
    const rows = [row, await claimRow(f, otherCfg, 1n, 1n)];
    await expect(f.batch.claimWithSignature(rows, await signClaimBatch(f.authorizer, rows))).to.be.revertedWithCustomError(
      f.batch,
      "NotReceiverAuthorizer",
    );
    await expect(f.batch.connect(f.receiver).claim([row])).to.emit(f.batch, "Claimed");
  });

  it("refunds return only unclaimed money, each signed refund once (its nonce), and the nonce moves even when nothing is left", async function () {
    const f = await loadFixture(fixture);
    const cfg = f.config(f.payer.address);
    const id = channelIdOf(cfg);
    await depositEoa(f, cfg);
    const row = await claimRow(f, cfg, 400n, 400n);
    await f.batch.claimWithSignature([row], await signClaimBatch(f.authorizer, [row]));
    const before = await f.usdc.balanceOf(f.payer.address);
    const sig0 = await signRefund(f.authorizer, id, 0n, 100n);
    await expect(f.batch.refundWithSignature(cfg, 100n, 1n, sig0)).to.be.revertedWithCustomError(f.batch, "InvalidRefundNonce");
    await expect(f.batch.refundWithSignature(cfg, 101n, 0n, sig0)).to.be.revertedWithCustomError(f.batch, "InvalidSignature");
    await expect(f.batch.refundWithSignature(cfg, 100n, 0n, sig0))
      .to.emit(f.batch, "Refunded")
      .withArgs(id, f.relayer.address, 100n);
    await expect(f.batch.refundWithSignature(cfg, 100n, 0n, sig0)).to.be.revertedWithCustomError(f.batch, "InvalidRefundNonce");
    // Asking for everything returns what is unclaimed: deposit - claimed - refunded.
    const all = await signRefund(f.authorizer, id, 1n, DEPOSIT);
    await expect(f.batch.refundWithSignature(cfg, DEPOSIT, 1n, all))
      .to.emit(f.batch, "Refunded")
      .withArgs(id, f.relayer.address, DEPOSIT - 500n);
    expect(await f.usdc.balanceOf(f.payer.address)).to.equal(before + DEPOSIT - 400n);
    expect(await f.batch.channels(id)).to.deep.equal([400n, 400n]);
    // Nothing free: the nonce still advances, no transfer, no event.
    await expect(f.batch.refundWithSignature(cfg, 1n, 2n, await signRefund(f.authorizer, id, 2n, 1n))).not.to.emit(f.batch, "Refunded");
    expect(await f.batch.refundNonce(id)).to.equal(3n);
    await expect(f.batch.connect(f.receiver).refund(cfg, 0n)).to.be.revertedWithCustomError(f.batch, "ZeroRefund");
    await expect(f.batch.connect(f.stranger).refund(cfg, 1n)).to.be.revertedWithCustomError(f.batch, "NotAuthorizedToRefund");
  });

  it("multicall: claim and refund in one transaction (as the facilitator sends a refund)", async function () {
    const f = await loadFixture(fixture);
    const cfg = f.config(f.payer.address);
    const id = channelIdOf(cfg);
    await depositEoa(f, cfg);
    const row = await claimRow(f, cfg, 250n, 250n);
    const calls = [
      f.batch.interface.encodeFunctionData("claimWithSignature", [[row], await signClaimBatch(f.authorizer, [row])]),
      f.batch.interface.encodeFunctionData("refundWithSignature", [cfg, DEPOSIT, 0n, await signRefund(f.authorizer, id, 0n, DEPOSIT)]),
    ];
    await expect(f.batch.multicall(calls))
      .to.emit(f.batch, "Refunded")
      .withArgs(id, f.relayer.address, DEPOSIT - 250n);
    expect(await f.batch.channels(id)).to.deep.equal([250n, 250n]);
  });

  it("a timed withdrawal: payer side only, within the unclaimed balance, after the delay, capped by claims made meanwhile", async function () {
    const f = await loadFixture(fixture);
    const cfg = f.config(f.payer.address);
    const id = channelIdOf(cfg);
    await depositEoa(f, cfg);
    await expect(f.batch.connect(f.stranger).initiateWithdraw(cfg, 1n)).to.be.revertedWithCustomError(f.batch, "NotPayerSide");
    await expect(f.batch.connect(f.payer).initiateWithdraw(cfg, DEPOSIT + 1n)).to.be.revertedWithCustomError(
      f.batch,
      "WithdrawAmountExceedsAvailable",
    );
    await expect(f.batch.connect(f.payer).initiateWithdraw(cfg, DEPOSIT)).to.emit(f.batch, "WithdrawInitiated");
    await expect(f.batch.connect(f.payer).initiateWithdraw(cfg, 1n)).to.be.revertedWithCustomError(f.batch, "WithdrawalAlreadyPending");
    expect((await f.batch.pendingWithdrawals(id))[0]).to.equal(DEPOSIT);
    await expect(f.batch.connect(f.payer).finalizeWithdraw(cfg)).to.be.revertedWithCustomError(f.batch, "WithdrawDelayNotElapsed");
    // The receiver claims its vouchers during the delay.
    const row = await claimRow(f, cfg, 300n, 300n);
    await f.batch.claimWithSignature([row], await signClaimBatch(f.authorizer, [row]));
    await time.increase(DELAY);
    const before = await f.usdc.balanceOf(f.payer.address);
    await expect(f.batch.connect(f.payer).finalizeWithdraw(cfg))
      .to.emit(f.batch, "WithdrawFinalized")
      .withArgs(id, f.payer.address, DEPOSIT - 300n);
    expect(await f.usdc.balanceOf(f.payer.address)).to.equal(before + DEPOSIT - 300n);
    await expect(f.batch.connect(f.payer).finalizeWithdraw(cfg)).to.be.revertedWithCustomError(f.batch, "WithdrawalNotPending");
    // What was claimed stays payable to the receiver.
    await f.batch.settle(f.receiver.address, BASE_USDC);
    expect(await f.usdc.balanceOf(f.receiver.address)).to.equal(300n);
  });

  it("a refund shrinks a pending withdrawal, and closes the channel when it empties it", async function () {
    const f = await loadFixture(fixture);
    const cfg = f.config(f.payer.address);
    const id = channelIdOf(cfg);
    await depositEoa(f, cfg);
    await f.batch.connect(f.payer).initiateWithdraw(cfg, 600n);
    await f.batch.connect(f.receiver).refund(cfg, 200n);
    expect((await f.batch.pendingWithdrawals(id))[0]).to.equal(400n);
    await expect(f.batch.connect(f.receiver).refund(cfg, DEPOSIT)).to.emit(f.batch, "ChannelClosed");
    expect(await f.batch.pendingWithdrawals(id)).to.deep.equal([0n, 0n]);
  });

  it("an ERC-1271 payer (payerAuthorizer = 0): deposit and vouchers valid exactly for the digests its wallet approved", async function () {
    const f = await loadFixture(fixture);
    const payer = await f.wallet.getAddress();
    const cfg = f.config(payer);
    const id = channelIdOf(cfg);
    const { data, digest } = await erc3009Deposit(null, payer, id, DEPOSIT, { validBefore: BigInt(await time.latest()) + 600n });
    await expect(f.batch.deposit(cfg, DEPOSIT, A.erc3009DepositCollector, data)).to.be.revertedWith("FiatTokenV2: invalid signature");
    await f.wallet.setApproved(digest, true);
    await f.batch.deposit(cfg, DEPOSIT, A.erc3009DepositCollector, data);

    const row: VoucherClaim = { voucher: { channel: cfg, maxClaimableAmount: 500n }, signature: "0x01", totalClaimed: 500n };
    await expect(f.batch.claimWithSignature([row], await signClaimBatch(f.authorizer, [row]))).to.be.revertedWithCustomError(
      f.batch,
      "InvalidSignature",
    );
    await f.wallet.setApproved(voucherDigest(id, 500n), true);
    await f.batch.claimWithSignature([row], await signClaimBatch(f.authorizer, [row]));
    expect(await f.batch.channels(id)).to.deep.equal([DEPOSIT, 500n]);
    // With a payer authorizer set, only that key's ECDSA signature counts, not the wallet's ERC-1271 answer.
    const withKey = f.config(payer, { payerAuthorizer: f.payer.address, salt: ethers.id("k") });
    const d2 = await erc3009Deposit(null, payer, channelIdOf(withKey), DEPOSIT, { validBefore: BigInt(await time.latest()) + 600n });
    await f.wallet.setApproved(d2.digest, true);
    await f.batch.deposit(withKey, DEPOSIT, A.erc3009DepositCollector, d2.data);
    await f.wallet.setApproved(voucherDigest(channelIdOf(withKey), 10n), true);
    const viaWallet: VoucherClaim = { voucher: { channel: withKey, maxClaimableAmount: 10n }, signature: "0x01", totalClaimed: 10n };
    await expect(f.batch.claimWithSignature([viaWallet], await signClaimBatch(f.authorizer, [viaWallet]))).to.be.revertedWithCustomError(
      f.batch,
      "InvalidSignature",
    );
    const viaKey = await claimRow(f, withKey, 10n, 10n);
    await f.batch.claimWithSignature([viaKey], await signClaimBatch(f.authorizer, [viaKey]));
  });
});
