/**
 * Interop of the sandbox's batch-settlement channel contract and ERC-3009 deposit collector with the STOCK x402
 * packages: @x402/evm's batch-settlement client, server (with its channel manager) and facilitator, through
 * @x402/core and @x402/fetch over real HTTP, on the embedded chain where the contracts sit at the canonical addresses.
 * A deposit (topped up when spent), many vouchers; the seller claims and settles; the unused deposit is refunded. As an EOA payer and as
 * an ERC-1271 contract payer signing vouchers through its wallet (payerAuthorizer = 0).
 */
import { expect } from "chai";
import hre from "hardhat";
import { BatchSettlementEvmScheme, computeChannelId } from "@x402/evm/batch-settlement/client";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { X402_SCHEME_ADDRESSES } from "../../src/dev/x402Schemes";
import type { TestUSDC, X402BatchSettlement } from "../../typechain-types";
import { contractBuyer, eoaBuyer, payingFetch, type Buyer } from "../helpers/schemeBuyers";
import { NETWORK, startBatchSeller, fundedStockSchemeFacilitator, type BatchSeller, type StockFacilitator } from "../helpers/schemeSellers";

const PRICE = 1_000n; // 0.001 USDC a request
const REQUESTS = 25; // not a multiple of the deposit the stock parties size (10 requests), so some is left to refund

describe("x402 sandbox contracts with the stock batch-settlement client, server and facilitator", function () {
  let chain: EmbeddedChain;
  let usdc: TestUSDC;
  let batch: X402BatchSettlement;
  let facilitator: StockFacilitator;
  const sellers: BatchSeller[] = [];

  before(async function () {
    chain = await startEmbeddedChain();
    usdc = await hre.ethers.getContractAt("TestUSDC", chain.addresses.usdc);
    batch = await hre.ethers.getContractAt("X402BatchSettlement", X402_SCHEME_ADDRESSES.batchSettlement);
    facilitator = await fundedStockSchemeFacilitator(chain.rpcUrl);
  });
  after(async function () {
    for (const s of sellers) await s.close();
    await chain?.close();
  });

  async function session(buyer: Buyer, payerAuthorizer?: `0x${string}`, assetTransferMethod?: "permit2") {
    await usdc.mint(buyer.address, 10_000_000n);
    const seller = await startBatchSeller({
      facilitator: facilitator.client,
      usdc: chain.addresses.usdc,
      price: PRICE,
      assetTransferMethod,
    });
    sellers.push(seller);
    const scheme = new BatchSettlementEvmScheme(buyer.signer, {
      rpcUrl: chain.rpcUrl,
      ...(payerAuthorizer ? { payerAuthorizer } : {}),
    });
    const pay = payingFetch(scheme);
    const start = await usdc.balanceOf(buyer.address);
    const transactions: string[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      const res = await pay(seller.resource);
      expect(res.status, `request ${i}: ${await res.clone().text()}`).to.equal(200);
      transactions.push(decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE") ?? "").transaction);
    }
    const config = scheme.buildChannelConfig({
      scheme: "batch-settlement",
      network: NETWORK,
      asset: chain.addresses.usdc,
      amount: PRICE.toString(),
      payTo: seller.payTo,
      maxTimeoutSeconds: 300,
      extra: { receiverAuthorizer: facilitator.receiverAuthorizer, withdrawDelay: 900 },
    });
    const channelId = computeChannelId(config, NETWORK);
    return { seller, scheme, start, transactions, channelId };
  }

  async function claimSettleRefund(
    buyer: Buyer,
    s: Awaited<ReturnType<typeof session>>,
    collector: string = X402_SCHEME_ADDRESSES.erc3009DepositCollector,
  ) {
    // Deposits (the first request, then a top-up whenever the channel runs dry) are the only chain transactions:
    // every other request is a voucher.
    const deposits = s.transactions.filter((t) => t !== "");
    expect(s.transactions[0]).to.match(/^0x[0-9a-f]{64}$/);
    expect(deposits.length).to.be.below(REQUESTS / 4);
    for (const hash of deposits) {
      const tx = await hre.ethers.provider.getTransaction(hash);
      expect(tx?.to).to.equal(X402_SCHEME_ADDRESSES.batchSettlement);
      const call = batch.interface.parseTransaction({ data: tx?.data ?? "0x" });
      expect([call?.name, call?.args[2]]).to.deep.equal(["deposit", collector]);
    }
    const [deposited, claimedBefore] = await batch.channels(s.channelId);
    expect(claimedBefore).to.equal(0n);
    expect(await usdc.balanceOf(buyer.address)).to.equal(s.start - deposited);
    const spent = BigInt(REQUESTS) * PRICE;
    expect(deposited >= spent).to.equal(true);

    // The seller claims the latest voucher (claimWithSignature by its facilitator's receiver authorizer) and settles.
    const { claims, settle } = await s.seller.manager.claimAndSettle();
    expect(claims.reduce((n, c) => n + c.vouchers, 0)).to.equal(1);
    expect(settle?.transaction).to.match(/^0x[0-9a-f]{64}$/);
    expect(await usdc.balanceOf(s.seller.payTo)).to.equal(spent);
    expect(await batch.channels(s.channelId)).to.deep.equal([deposited, spent]);
    expect(await batch.receivers(s.seller.payTo, chain.addresses.usdc)).to.deep.equal([spent, spent]);

    // The buyer asks for its unused deposit back (refundWithSignature, relayed by the facilitator).
    const refund = await s.scheme.refund(s.seller.resource);
    expect(refund.success, JSON.stringify(refund)).to.equal(true);
    expect(refund.amount).to.equal((deposited - spent).toString());
    expect(await usdc.balanceOf(buyer.address)).to.equal(s.start - spent);
    expect(await batch.channels(s.channelId)).to.deep.equal([spent, spent]);
    expect(await batch.refundNonce(s.channelId)).to.equal(1n);
    return deposits.length;
  }

  it(`an EOA: deposits and ${REQUESTS} vouchers, claim and settle, the unused deposit refunded`, async function () {
    const buyer = await eoaBuyer();
    const s = await session(buyer);
    const deposits = await claimSettleRefund(buyer, s);
    // Signed: each deposit's ERC-3009 authorisation, one voucher per request, the refund's zero-charge voucher.
    expect(buyer.signed).to.have.length(deposits + REQUESTS + 1);
  });

  it(`an ERC-1271 contract payer (payerAuthorizer = 0): the same, every digest approved by its wallet`, async function () {
    const buyer = await contractBuyer();
    const s = await session(buyer, "0x0000000000000000000000000000000000000000");
    await claimSettleRefund(buyer, s);
    for (const digest of buyer.signed) expect(await buyer.wallet.approved(digest)).to.equal(true);
  });

  it("an EOA depositing through Permit2 and the Permit2 deposit collector (approved once): the same", async function () {
    const buyer = await eoaBuyer();
    await buyer.call(
      chain.addresses.usdc,
      usdc.interface.encodeFunctionData("approve", [X402_SCHEME_ADDRESSES.permit2, hre.ethers.MaxUint256]),
    );
    const s = await session(buyer, undefined, "permit2");
    await claimSettleRefund(buyer, s, X402_SCHEME_ADDRESSES.permit2DepositCollector);
  });
});
