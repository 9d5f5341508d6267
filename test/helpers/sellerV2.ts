/**
 * The v2 test seller: @x402/core's x402ResourceServer + x402HTTPResourceServer with the exact EVM server scheme,
 * settling through one of our facilitators (PAYMENT-REQUIRED / PAYMENT-SIGNATURE / PAYMENT-RESPONSE).
 */
import { Wallet } from "ethers";
import { x402HTTPResourceServer, x402ResourceServer, type FacilitatorClient } from "@x402/core/server";
import type { ResourceServerExtension } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import type { Facilitator } from "../../src/x402/facilitator";
import { USDC_EXTRA, header, listen, sellerHandle, sendJson, type SellerOptions, type TestSeller } from "./sellerServer";
import { settleX402Request } from "./sellerX402";

/** The x402 FacilitatorClient the resource server wants, around our Facilitator. */
function facilitatorClient(f: Facilitator): FacilitatorClient {
  return {
    verify: (payload, requirements) => f.verify(payload, requirements),
    settle: (payload, requirements) => f.settle(payload, requirements),
    getSupported: () => f.supported(),
  };
}

/** What a v2 seller may add to the stock resource server: its extensions, and their declaration on its route. */
export interface V2SellerExtras {
  extensions?: ResourceServerExtension[];
  declared?: Record<string, unknown>;
}

/** A v2 seller built on @x402/core's resource server: 402 + PAYMENT-REQUIRED, then verify, serve, settle. */
export async function startV2Seller(opts: SellerOptions & V2SellerExtras): Promise<TestSeller> {
  const network = `eip155:${opts.chainId ?? 8453}` as const;
  const payTo = opts.payTo ?? Wallet.createRandom().address;
  let price = opts.price;
  const hits = { paid: 0, unpaid: 0 };
  const settlements: string[] = [];

  const resourceServer = new x402ResourceServer(facilitatorClient(opts.facilitator));
  resourceServer.register(network, new ExactEvmScheme());
  for (const e of opts.extensions ?? []) resourceServer.registerExtension(e);
  const route = {
    accepts: {
      scheme: "exact",
      network,
      payTo,
      price: () => ({ amount: price.toString(), asset: opts.usdc, extra: opts.extra ?? USDC_EXTRA }),
      maxTimeoutSeconds: 300,
    },
    description: "test v2 resource",
    mimeType: "application/json",
    ...(opts.declared ? { extensions: opts.declared } : {}),
  };
  const httpServer = new x402HTTPResourceServer(resourceServer, { "GET /*": route, "POST /*": route });
  await httpServer.initialize();

  const listener = await listen(async (req, res, url) => {
    if (header(req, "payment-signature")) hits.paid++;
    else hits.unpaid++;
    const settled = await settleX402Request(httpServer, req, res, url);
    if (!settled) return;
    settlements.push(settled.transaction);
    sendJson(res, 200, { data: "paid content", payer: settled.payer }, settled.headers);
  });

  return sellerHandle(listener, { payTo, hits, settlements, setPrice: (units) => (price = units) });
}
