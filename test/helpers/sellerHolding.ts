/**
 * A hand-written v1 seller that quotes `price` (1 USDC by default) and, once paid (an X-PAYMENT header), settles the
 * payment through `settleWith` if given, then never answers: its buyer times out, or is killed while it waits.
 */
import { Wallet } from "ethers";
import { decodePaymentSignatureHeader } from "@x402/core/http";
import type { Facilitator } from "../../src/x402/facilitator";
import { USDC_EXTRA, header, listen, sendJson } from "./sellerServer";

export interface HoldingSeller {
  /** `<base>/r`, the resource buyers call. */
  url: string;
  payTo: string;
  /** Resolves on the first paid request (after its settlement, with settleWith). */
  paid: Promise<void>;
  /** Resolves on the next paid request from now on. */
  nextPaid(): Promise<void>;
  /** How many paid requests came (counted when they arrive). */
  paidCount(): number;
  close(): Promise<void>;
}

export async function holdingSeller(usdc: string, opts: { settleWith?: Facilitator; price?: bigint } = {}): Promise<HoldingSeller> {
  const payTo = Wallet.createRandom().address;
  const price = opts.price ?? 1_000_000n;
  let count = 0;
  let waiting: (() => void)[] = [];
  let onFirst: () => void = () => undefined;
  const paid = new Promise<void>((resolve) => (onFirst = resolve));
  let base = "";
  const requirement = () => ({
    scheme: "exact",
    network: "base",
    maxAmountRequired: price.toString(),
    resource: `${base}/r`,
    description: "held",
    mimeType: "application/json",
    payTo,
    maxTimeoutSeconds: 120,
    asset: usdc,
    extra: USDC_EXTRA,
  });
  const server = await listen(async (req, res) => {
    const payment = header(req, "x-payment");
    if (payment === undefined) {
      sendJson(res, 402, { x402Version: 1, error: "payment required", accepts: [requirement()] });
      return;
    }
    count++;
    if (opts.settleWith) await opts.settleWith.settle(decodePaymentSignatureHeader(payment), requirement() as never);
    onFirst();
    const woken = waiting;
    waiting = [];
    for (const wake of woken) wake();
    // and never answer
  });
  base = server.url;
  return {
    url: `${base}/r`,
    payTo,
    paid,
    nextPaid: () => new Promise<void>((resolve) => waiting.push(resolve)),
    paidCount: () => count,
    close: () => server.close(),
  };
}
