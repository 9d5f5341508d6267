/** The v1 test seller, hand-written: JSON 402 body, X-PAYMENT, X-PAYMENT-RESPONSE. */
import { Wallet } from "ethers";
import { decodePaymentSignatureHeader, encodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentPayloadV1, PaymentRequirementsV1 } from "@x402/core/types";
import { networkOfChainId } from "../../src/chain/networks";
import { USDC_EXTRA, header, listen, sellerHandle, readBody, sendJson, type SellerOptions, type TestSeller } from "./sellerServer";

function v1Requirements(url: string, o: { network: string; price: bigint; payTo: string; usdc: string }): PaymentRequirementsV1 {
  return {
    scheme: "exact",
    network: o.network as PaymentRequirementsV1["network"],
    maxAmountRequired: o.price.toString(),
    resource: url,
    description: "test v1 resource",
    mimeType: "application/json",
    payTo: o.payTo,
    maxTimeoutSeconds: 300,
    asset: o.usdc,
    extra: USDC_EXTRA,
  } as Omit<PaymentRequirementsV1, "outputSchema"> as PaymentRequirementsV1; // outputSchema is optional on the wire
}

/** A hand-written v1 seller: JSON 402 body, X-PAYMENT decoded and verified + settled through the facilitator. */
export async function startV1Seller(opts: SellerOptions): Promise<TestSeller> {
  const chainId = opts.chainId ?? 8453;
  const network = networkOfChainId(chainId)?.x402V1 ?? `eip155:${chainId}`;
  const payTo = opts.payTo ?? Wallet.createRandom().address;
  let price = opts.price;
  const hits = { paid: 0, unpaid: 0 };
  const settlements: string[] = [];

  const listener = await listen(async (req, res, url) => {
    await readBody(req);
    const requirements = v1Requirements(`${url.origin}${url.pathname}`, { network, price, payTo, usdc: opts.usdc });
    const challenge = (error: string) => sendJson(res, 402, { x402Version: 1, error, accepts: [requirements] });
    const xPayment = header(req, "x-payment");
    if (!xPayment) {
      hits.unpaid++;
      challenge("X-PAYMENT header is required");
      return;
    }
    hits.paid++;
    let payload: PaymentPayloadV1;
    try {
      payload = decodePaymentSignatureHeader(xPayment) as unknown as PaymentPayloadV1;
    } catch {
      challenge("invalid_payment: X-PAYMENT is not base64 JSON");
      return;
    }
    if (payload?.x402Version !== 1 || payload.scheme !== "exact" || payload.network !== network) {
      challenge("invalid_payment: no matching payment requirements");
      return;
    }
    const verified = await opts.facilitator.verify(payload, requirements);
    if (!verified.isValid) {
      challenge(verified.invalidReason ?? "invalid_payment");
      return;
    }
    const settled = await opts.facilitator.settle(payload, requirements);
    if (!settled.success) {
      challenge(settled.errorReason ?? "settlement_failed");
      return;
    }
    settlements.push(settled.transaction);
    sendJson(res, 200, { data: "paid content", payer: settled.payer }, { "X-PAYMENT-RESPONSE": encodePaymentResponseHeader(settled) });
  });

  return sellerHandle(listener, { payTo, hits, settlements, setPrice: (units) => (price = units) });
}
