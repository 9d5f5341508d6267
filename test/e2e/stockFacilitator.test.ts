/**
 * Sellers that know nothing of SpendGate get paid from agent wallets: their facilitator is the stock x402 one
 * (@x402/core's x402Facilitator with @x402/evm's exact scheme on a plain viem wallet client, none of this service's
 * code), v1 and v2. It verifies the agent wallet's ERC-1271 signature and settles through USDC's `bytes` overload.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { x402Facilitator } from "@x402/core/facilitator";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import type { Facilitator } from "../../src/x402/facilitator";
import { stackPerFile, randomOwner, type Stack } from "../helpers/stack";
import { mintUsdc, startV1Seller, startV2Seller, usdcBalance } from "../helpers/sellers";
import { stockFacilitatorSigner } from "../../src/dev/schemeSellers";

const USDC = 1_000_000n;

/** The stock facilitator, exactly as a seller would set it up from the x402 packages' documentation. */
async function stockFacilitator(s: Stack): Promise<Facilitator> {
  const key = Wallet.createRandom();
  await s.svc.chain.provider.send("hardhat_setBalance", [key.address, `0x${(10n ** 21n).toString(16)}`]);
  const { signer } = stockFacilitatorSigner(s.svc.config.rpcUrl, s.svc.config.chainId, key.privateKey);
  const facilitator = new x402Facilitator();
  registerExactEvmScheme(facilitator, { signer, networks: "eip155:8453" });
  return {
    verify: (p, r) => facilitator.verify(p as PaymentPayload, r as PaymentRequirements),
    settle: (p, r) => facilitator.settle(p as PaymentPayload, r as PaymentRequirements),
    supported: () => Promise.resolve(facilitator.getSupported() as never),
  };
}

describe("sellers on the stock x402 facilitator are paid from agent wallets (ERC-1271)", () => {
  const { s, keep } = stackPerFile();

  for (const version of [2, 1] as const) {
    it(`pays a v${version} seller: the wallet contract is the payer, the seller gets exactly the price`, async () => {
      const facilitator = await stockFacilitator(s);
      const seller = await (version === 2 ? startV2Seller : startV1Seller)({
        facilitator,
        usdc: s.svc.config.usdcAddress,
        price: 250_000n,
      });
      keep(seller);
      const a = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
      expect(await s.svc.chain.isDeployed(a.agentAddress), "the agent is a contract").to.equal(true);
      await mintUsdc(s, a.agentAddress, 5n * USDC);
      const res = await s.api("POST", "/pay", {
        key: a.apiKey,
        body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent: `stock facilitator v${version}` },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(seller.settlements).to.have.length(1);
      expect(await usdcBalance(s, a.agentAddress)).to.equal(5n * USDC - 250_000n);
      expect(await usdcBalance(s, seller.payTo)).to.equal(250_000n);
      // The settlement is the wallet's EIP-3009 transfer of exactly the authorised payment.
      const receipt = await s.svc.chain.provider.getTransactionReceipt(seller.settlements[0]);
      const used = receipt!.logs.map((l) => s.svc.chain.usdc.interface.parseLog(l)).find((e) => e?.name === "AuthorizationUsed");
      expect(used!.args.authorizer).to.equal(a.agentAddress);
      expect(used!.args.nonce).to.equal(res.body.paymentId);
    });
  }
});
