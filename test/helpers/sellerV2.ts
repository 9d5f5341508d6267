/**
 * The v2 test seller: @x402/core's x402ResourceServer + x402HTTPResourceServer with the exact EVM server scheme,
 * settling through one of our facilitators (PAYMENT-REQUIRED / PAYMENT-SIGNATURE / PAYMENT-RESPONSE).
 */
import type { IncomingMessage } from "node:http";
import { Wallet } from "ethers";
import {
  x402HTTPResourceServer,
  x402ResourceServer,
  type FacilitatorClient,
  type HTTPAdapter,
  type HTTPRequestContext,
} from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import type { Facilitator } from "../../src/x402/facilitator";
import { USDC_EXTRA, header, listen, readBody, sendJson, type SellerOptions, type TestSeller } from "./sellerServer";

/** The x402 FacilitatorClient the resource server wants, around our Facilitator. */
function facilitatorClient(f: Facilitator): FacilitatorClient {
  return {
    verify: (payload, requirements) => f.verify(payload, requirements),
    settle: (payload, requirements) => f.settle(payload, requirements),
    getSupported: () => f.supported(),
  };
}

function nodeAdapter(req: IncomingMessage, url: URL): HTTPAdapter {
  return {
    getHeader: (name) => header(req, name),
    getMethod: () => req.method ?? "GET",
    getPath: () => url.pathname,
    getUrl: () => url.toString(),
    getAcceptHeader: () => header(req, "accept") ?? "",
    getUserAgent: () => header(req, "user-agent") ?? "",
  };
}

/** A v2 seller built on @x402/core's resource server: 402 + PAYMENT-REQUIRED, then verify, serve, settle. */
export async function startV2Seller(opts: SellerOptions): Promise<TestSeller> {
  const network = `eip155:${opts.chainId ?? 8453}` as const;
  const payTo = opts.payTo ?? Wallet.createRandom().address;
  let price = opts.price;
  const hits = { paid: 0, unpaid: 0 };
  const settlements: string[] = [];

  const resourceServer = new x402ResourceServer(facilitatorClient(opts.facilitator));
  resourceServer.register(network, new ExactEvmScheme());
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
  };
  const httpServer = new x402HTTPResourceServer(resourceServer, { "GET /*": route, "POST /*": route });
  await httpServer.initialize();

  const listener = await listen(async (req, res, url) => {
    await readBody(req);
    const context: HTTPRequestContext = { adapter: nodeAdapter(req, url), path: url.pathname, method: req.method ?? "GET" };
    if (header(req, "payment-signature")) hits.paid++;
    else hits.unpaid++;
    const result = await httpServer.processHTTPRequest(context);
    if (result.type === "no-payment-required") {
      sendJson(res, 405, { error: "method_not_allowed" });
      return;
    }
    if (result.type === "payment-error") {
      const { status, headers, body } = result.response;
      sendJson(res, status, body ?? {}, headers);
      return;
    }
    const settled = await httpServer.processSettlement(
      result.paymentPayload,
      result.paymentRequirements,
      result.declaredExtensions,
      { request: context },
      undefined,
      result.beforeHandlerSettlement,
    );
    if (!settled.success) {
      sendJson(res, settled.response.status, settled.response.body ?? { error: settled.errorReason }, {
        ...settled.response.headers,
        ...settled.headers,
      });
      return;
    }
    settlements.push(settled.transaction);
    sendJson(res, 200, { data: "paid content", payer: settled.payer }, settled.headers);
  });

  return {
    url: listener.url,
    resource: `${listener.url}/resource`,
    payTo,
    hits,
    settlements,
    setPrice: (units) => {
      price = units;
    },
    close: listener.close,
  };
}
