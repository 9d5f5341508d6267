/**
 * Interop of the sandbox's Permit2 and upto proxy with the STOCK x402 packages: @x402/evm's upto client, server and
 * facilitator (through @x402/core and @x402/fetch, over real HTTP) on the embedded chain, where the contracts sit at
 * the canonical addresses the packages call. The buyer signs the seller's price as a ceiling; the seller settles what
 * the request used, less than the ceiling. As an EOA and as an ERC-1271 contract payer.
 */
import { expect } from "chai";
import hre from "hardhat";
import { UptoEvmScheme } from "@x402/evm/upto/client";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { X402_SCHEME_ADDRESSES } from "../../src/dev/x402Schemes";
import type { TestUSDC } from "../../typechain-types";
import { contractBuyer, eoaBuyer, payingFetch, type Buyer } from "../helpers/schemeBuyers";
import { startUptoSeller, fundedStockSchemeFacilitator, type StockFacilitator, type UptoSeller } from "../helpers/schemeSellers";

const CEILING = 500_000n; // 0.50 USDC signed
const USED = 123_456n; // what the request used

describe("x402 sandbox contracts with the stock upto client, server and facilitator", function () {
  let chain: EmbeddedChain;
  let usdc: TestUSDC;
  let facilitator: StockFacilitator;
  const sellers: UptoSeller[] = [];

  before(async function () {
    chain = await startEmbeddedChain();
    usdc = await hre.ethers.getContractAt("TestUSDC", chain.addresses.usdc);
    facilitator = await fundedStockSchemeFacilitator(chain.rpcUrl);
  });
  after(async function () {
    for (const s of sellers) await s.close();
    await chain?.close();
  });

  async function payOnce(buyer: Buyer, used: bigint) {
    await usdc.mint(buyer.address, 10_000_000n);
    await buyer.call(
      chain.addresses.usdc,
      usdc.interface.encodeFunctionData("approve", [X402_SCHEME_ADDRESSES.permit2, hre.ethers.MaxUint256]),
    );
    const seller = await startUptoSeller({ facilitator: facilitator.client, usdc: chain.addresses.usdc, ceiling: CEILING });
    sellers.push(seller);
    seller.setUsage(used);
    const before = await usdc.balanceOf(buyer.address);
    const res = await payingFetch(new UptoEvmScheme(buyer.signer))(seller.resource);
    expect(res.status, await res.clone().text()).to.equal(200);
    const receipt = decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE") ?? "");
    return { seller, before, receipt };
  }

  it("an EOA signs a 0.50 ceiling; the seller settles 0.123456 through the proxy; the rest never leaves the payer", async function () {
    const buyer = await eoaBuyer();
    const { seller, before, receipt } = await payOnce(buyer, USED);
    expect(receipt.success).to.equal(true);
    expect(receipt.amount).to.equal(USED.toString());
    expect(await usdc.balanceOf(seller.payTo)).to.equal(USED);
    expect(await usdc.balanceOf(buyer.address)).to.equal(before - USED);
    const tx = await hre.ethers.provider.getTransactionReceipt(receipt.transaction);
    expect(tx?.to).to.equal(X402_SCHEME_ADDRESSES.uptoPermit2Proxy);
    expect(tx?.from.toLowerCase()).to.equal(facilitator.address.toLowerCase());
  });

  it("an ERC-1271 contract payer: its wallet approves the Permit2 witness digest; the seller settles less than the ceiling", async function () {
    const buyer = await contractBuyer();
    const { seller, before, receipt } = await payOnce(buyer, 1n);
    expect(receipt.success).to.equal(true);
    expect(await usdc.balanceOf(seller.payTo)).to.equal(1n);
    expect(await usdc.balanceOf(buyer.address)).to.equal(before - 1n);
    expect(buyer.signed).to.have.length(1); // one digest approved: the ceiling's Permit2 witness transfer
    expect(await buyer.wallet.approved(buyer.signed[0])).to.equal(true);
  });
});
