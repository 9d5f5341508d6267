/**
 * The in-process facilitator's settlements carry a gas limit instead of viem's estimate: enough for an agent wallet's
 * ERC-1271 signature and heavier wallets, a bound on what a hostile payer's wallet can make it burn, and what would
 * fail still refused before anything is sent (one simulation with that limit, in the send queue).
 */
import { expect } from "chai";
import hre from "hardhat";
import { Contract, JsonRpcProvider, Wallet, hexlify, randomBytes } from "ethers";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { SETTLE_GAS_LIMIT, reusedSignatureChecks, type InProcessFacilitator } from "../../src/x402/facilitator";
import { startRpcProxy, type RpcProxy } from "../../scripts/bench/rpcProxy";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { fundedFacilitator, mintUsdc } from "../helpers/sellers";
import { eoaPayment, usdcRequirement } from "../helpers/x402Payments";

const AMOUNT = 10_000n;
const USDC_ABI = ["function balanceOf(address) view returns (uint256)"];

describe("x402 facilitator gas: a limit, not an estimate", function () {
  let chain: EmbeddedChain;
  let proxy: RpcProxy;
  let s: Stack;
  let provider: JsonRpcProvider;
  let usdc: Contract;
  let facilitator: InProcessFacilitator;
  const payTo = Wallet.createRandom().address;

  const requirements = (): PaymentRequirements => usdcRequirement(chain.addresses.usdc, payTo, AMOUNT);

  /** A funded ERC-1271 wallet that hashes `rounds` times in isValidSignature, and a payment from it. */
  async function burnerPayment(rounds: number): Promise<{ wallet: string; payload: PaymentPayload }> {
    const wallet = await (await hre.ethers.deployContract("GasBurningWallet", [rounds])).getAddress();
    await mintUsdc(s, wallet, AMOUNT);
    const now = Math.floor(Date.now() / 1000);
    const authorization = {
      from: wallet,
      to: payTo,
      value: AMOUNT.toString(),
      validAfter: "0",
      validBefore: String(now + 300),
      nonce: hexlify(randomBytes(32)),
    };
    // The wallet accepts any signature; not 65 bytes, so it is settled through the `bytes signature` form.
    const signature = `0x${"ab".repeat(70)}`;
    const payload = {
      x402Version: 2,
      resource: { url: "http://127.0.0.1/sell" },
      accepted: requirements(),
      payload: { authorization, signature },
    } as unknown as PaymentPayload;
    return { wallet, payload };
  }

  const newEoaPayment = (): Promise<PaymentPayload> => eoaPayment(requirements(), (address) => mintUsdc(s, address, AMOUNT));

  before(async function () {
    chain = await startEmbeddedChain();
    proxy = await startRpcProxy(chain.rpcUrl);
    // Every call of the service, its facilitator and the one below goes through the counting proxy.
    s = await startStack({ RATE_LIMIT_PER_MINUTE: "1000000" }, { embeddedChain: { ...chain, rpcUrl: proxy.url } });
    await s.svc.indexer.stop(); // its polling is no part of a payment
    provider = new JsonRpcProvider(chain.rpcUrl, chain.chainId, { staticNetwork: true, cacheTimeout: -1 });
    usdc = new Contract(chain.addresses.usdc, USDC_ABI, provider);
    facilitator = await fundedFacilitator(s);
  });

  after(async function () {
    await s?.close();
    provider?.destroy();
    await proxy?.close();
    await chain?.close();
  });

  it("settles an agent wallet's payment (ERC-1271) under the limit, with no gas estimate and no second ERC-1271 ask", async function () {
    const agent = await s.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "100", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await mintUsdc(s, agent.agentAddress, 1_000_000n);
    const pay = () =>
      s.api("POST", "/pay", {
        key: agent.apiKey,
        body: { agentAddress: agent.agentAddress, serviceUrl: `${s.url}/sell/agent-intel`, maxAmount: "0.01", intent: "gas" },
      });
    expect((await pay()).status).to.equal(200); // caches warm
    proxy.reset();
    const res = await pay();
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const tx = await provider.getTransaction(res.body.txHash as string);
    const receipt = await provider.getTransactionReceipt(res.body.txHash as string);
    expect(tx?.gasLimit).to.equal(SETTLE_GAS_LIMIT);
    expect(receipt?.status).to.equal(1);
    expect(receipt!.gasUsed * 4n).to.be.below(SETTLE_GAS_LIMIT);
    // The whole payment, both sides: SpendGate's policy read and simulation, authorisation (its verify makes no call
    // once the authorisation landed: execute.ts); the seller's verify (ERC-1271 ask, simulation), settlement
    // (simulation, send) and holdings (one Multicall3 read).
    expect(proxy.counts.get("eth_estimateGas") ?? 0).to.equal(0);
    expect(proxy.counts.get("eth_getBalance") ?? 0).to.equal(0);
    expect(proxy.counts.get("eth_call")).to.equal(5);
    expect(proxy.counts.get("eth_sendRawTransaction")).to.equal(2);
  });

  it("settles a heavier ERC-1271 wallet within the limit, sent with the limit and paying only the gas used", async function () {
    const { wallet, payload } = await burnerPayment(1_000); // about 180,000 gas in its ERC-1271 check
    expect(await facilitator.verify(payload, requirements())).to.include({ isValid: true, payer: wallet });
    const settled = await facilitator.settle(payload, requirements());
    expect(settled.success, JSON.stringify(settled)).to.equal(true);
    const tx = await provider.getTransaction(settled.transaction);
    const receipt = await provider.getTransactionReceipt(settled.transaction);
    expect(tx?.gasLimit).to.equal(SETTLE_GAS_LIMIT);
    expect(receipt!.gasUsed).to.be.above(150_000n).and.below(SETTLE_GAS_LIMIT);
    expect(await usdc.balanceOf(wallet)).to.equal(0n);
  });

  it("refuses, without sending anything, a payer whose ERC-1271 wallet burns more than the limit; its nonce count is kept", async function () {
    expect((await facilitator.settle(await newEoaPayment(), requirements())).success).to.equal(true);
    const { wallet, payload } = await burnerPayment(20_000); // millions of gas
    const nonce = await provider.getTransactionCount(facilitator.address, "pending");
    const eth = await provider.getBalance(facilitator.address);
    proxy.reset();
    const verified = await facilitator.verify(payload, requirements());
    expect(verified).to.include({ isValid: false, invalidReason: "invalid_exact_evm_transaction_simulation_failed" });
    const settled = await facilitator.settle(payload, requirements());
    expect(settled.success).to.equal(false);
    expect(settled.transaction).to.equal("");
    expect(proxy.counts.get("eth_sendRawTransaction") ?? 0).to.equal(0);
    expect(await provider.getTransactionCount(facilitator.address, "pending")).to.equal(nonce);
    expect(await provider.getBalance(facilitator.address)).to.equal(eth);
    expect(await usdc.balanceOf(wallet)).to.equal(AMOUNT);
    // The refusal came before the send: the locally counted nonce still holds, the node is not asked for it.
    expect((await facilitator.settle(await newEoaPayment(), requirements())).success).to.equal(true);
    expect(proxy.counts.get("eth_getTransactionCount") ?? 0).to.equal(0);
  });

  it("refuses, unsent, a payment whose wallet stops accepting its signature between verify and settle", async function () {
    const { wallet, payload } = await burnerPayment(0);
    expect(await facilitator.verify(payload, requirements())).to.include({ isValid: true });
    // The wallet's code becomes a wallet that accepts only another key's signatures: verify's ERC-1271 answer, kept for
    // the settle, is stale, and the simulation before the send runs the check again inside USDC.
    const other = await hre.ethers.deployContract("ERC1271Wallet", [Wallet.createRandom().address]);
    await provider.send("hardhat_setCode", [wallet, await provider.getCode(await other.getAddress())]);
    proxy.reset();
    const settled = await facilitator.settle(payload, requirements());
    expect(settled).to.include({ success: false, transaction: "" });
    expect(proxy.counts.get("eth_sendRawTransaction") ?? 0).to.equal(0);
    expect(await usdc.balanceOf(wallet)).to.equal(AMOUNT);
  });

  it("keeps a valid ERC-1271 answer for the one ask that follows; an invalid one is asked each time", async function () {
    const asked: string[] = [];
    const check = reusedSignatureChecks();
    const ask = (wallet: `0x${string}`, digest: string) =>
      check({ address: wallet, abi: [], functionName: "isValidSignature", args: [digest, "0x01"] }, (a) => {
        asked.push(`${a.address}:${String(a.args?.[0])}`);
        return Promise.resolve(a.address === "0x1111111111111111111111111111111111111111" ? "0x1626ba7e" : "0xffffffff");
      });
    const [good, bad] = ["0x1111111111111111111111111111111111111111", "0x2222222222222222222222222222222222222222"] as const;
    for (let i = 0; i < 3; i++) expect(await ask(good, "0xaa")).to.equal("0x1626ba7e");
    for (let i = 0; i < 2; i++) expect(await ask(bad, "0xaa")).to.equal("0xffffffff");
    expect(await ask(good, "0xbb")).to.equal("0x1626ba7e");
    // verify asks, its settle is answered; a third ask goes to the chain again. Another digest is its own question.
    expect(asked).to.deep.equal([`${good}:0xaa`, `${good}:0xaa`, `${bad}:0xaa`, `${bad}:0xaa`, `${good}:0xbb`]);
  });

  it("sends one of two concurrent settlements of one authorization; the other is refused by its simulation, unsent", async function () {
    const payload = await newEoaPayment();
    const before = (await usdc.balanceOf(payTo)) as bigint;
    proxy.reset();
    const results = await Promise.all([facilitator.settle(payload, requirements()), facilitator.settle(payload, requirements())]);
    expect(results.map((r) => r.success).sort()).to.deep.equal([false, true]);
    const refused = results.find((r) => !r.success)!;
    expect(refused).to.include({ transaction: "", errorReason: "invalid_exact_evm_nonce_already_used" });
    expect(proxy.counts.get("eth_sendRawTransaction")).to.equal(1);
    expect(await usdc.balanceOf(payTo)).to.equal(before + AMOUNT);
  });
});
