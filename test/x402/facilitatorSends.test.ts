import { expect } from "chai";
import { Contract, JsonRpcProvider, Wallet } from "ethers";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { createInProcessFacilitator, type InProcessFacilitator } from "../../src/x402/facilitator";
import { startRpcProxy, type RpcProxy } from "../../scripts/bench/rpcProxy";
import { eoaPayment, usdcRequirement } from "../helpers/x402Payments";

const USDC_ABI = ["function mint(address to, uint256 amount) returns (bool)", "function balanceOf(address) view returns (uint256)"];
const AMOUNT = 10_000n;

describe("x402 facilitator sends: the nonce counted locally, fee data kept for seconds", function () {
  let chain: EmbeddedChain;
  let proxy: RpcProxy;
  let provider: JsonRpcProvider;
  let usdc: Contract;
  let facilitator: InProcessFacilitator;
  const payTo = Wallet.createRandom().address;

  const requirements = (): PaymentRequirements => usdcRequirement(chain.addresses.usdc, payTo, AMOUNT);

  const signedPayment = (): Promise<PaymentPayload> =>
    eoaPayment(requirements(), async (address) => (await usdc.mint(address, AMOUNT)).wait());

  before(async function () {
    chain = await startEmbeddedChain();
    proxy = await startRpcProxy(chain.rpcUrl);
    provider = new JsonRpcProvider(chain.rpcUrl, chain.chainId, { staticNetwork: true, cacheTimeout: -1 });
    usdc = new Contract(chain.addresses.usdc, USDC_ABI, new Wallet(chain.operator.privateKey, provider));
    // Every call of the facilitator goes through the counting proxy.
    facilitator = createInProcessFacilitator({ rpcUrl: proxy.url, chainId: chain.chainId, privateKey: chain.facilitator.privateKey });
  });

  after(async function () {
    provider?.destroy();
    await proxy?.close();
    await chain?.close();
  });

  it("settles one payment after another without asking the node for the nonce, and for fee data at most once", async function () {
    const payloads = [await signedPayment(), await signedPayment(), await signedPayment(), await signedPayment()];
    expect((await facilitator.settle(payloads[0], requirements())).success).to.equal(true);
    proxy.reset();
    for (const p of payloads.slice(1)) expect((await facilitator.settle(p, requirements())).success).to.equal(true);
    expect(proxy.counts.get("eth_getTransactionCount") ?? 0).to.equal(0);
    expect(proxy.counts.get("eth_sendRawTransaction")).to.equal(3);
    // Fee data is refreshed beside the sends every 2 s: a slow run may see one refresh, never one per settlement.
    expect(proxy.counts.get("eth_maxPriorityFeePerGas") ?? 0).to.be.at.most(1);
    expect(await usdc.balanceOf(payTo)).to.equal(4n * AMOUNT);
  });

  it("settles through when another sender used nonces under its key: the node's count is asked and the send retried", async function () {
    const address = chain.facilitator.address;
    const used = await provider.getTransactionCount(address, "pending");
    // Another sender took nonces under this key: the facilitator's count is behind.
    await provider.send("hardhat_setNonce", [address, `0x${(used + 3).toString(16)}`]);
    const [first, second] = [await signedPayment(), await signedPayment()];
    const before = (await usdc.balanceOf(payTo)) as bigint;
    proxy.reset();
    expect((await facilitator.settle(first, requirements())).success).to.equal(true);
    expect(proxy.counts.get("eth_getTransactionCount")).to.equal(1);
    expect((await facilitator.settle(second, requirements())).success).to.equal(true);
    expect(await usdc.balanceOf(payTo)).to.equal(before + 2n * AMOUNT);
    expect(await provider.getTransactionCount(address, "latest")).to.equal(used + 5);
  });
});
