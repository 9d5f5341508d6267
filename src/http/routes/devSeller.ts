/**
 * GET|POST /dev/seller/exact: the sandbox's demo seller (embedded mode only; 404 otherwise), to try what a policy does
 * with any price: `?price=` (USDC, default 0.01), `?payee=2` (a second payee, to see a pinned payee refuse it) and
 * `?delay=` (seconds before it answers: a slow seller). The service's own seller (x402/seller.ts) with these settings.
 * GET|POST /dev/seller/upto (`?ceiling=`, default 0.10, and `?charge=`, what is settled, default all of it) and
 * /dev/seller/batch-settlement (`?price=` per request, default 0.01): stock x402 sellers of those schemes
 * (src/dev/schemeSellers.ts, handed over by src/start/ as the faucet is).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { getAddress, id } from "ethers";
import { z } from "zod";
import { DECIMAL_AMOUNT, toBaseUnits } from "../../amounts";
import { badRequest, notFound } from "../../errors";
import { AgentIntel, PaymentChallenge } from "../../schemas/system";
import type { NetworkServices } from "../../services/networks";
import { AgentIntelSeller } from "../../x402/seller";
import { type DemoScheme, json, rawOperation } from "../../api/operation";
import { offerOf } from "./sell";

export const DEV_SELLER_PATH = "/dev/seller/exact";
/** The second payee: an address nobody holds the key of, the same in every sandbox. */
export const SECOND_PAYEE = getAddress(id("SpendGate sandbox seller: payee 2").slice(0, 42));
const MAX_PRICE = 1_000_000_000n; // 1,000 USDC
const MAX_DELAY_SECONDS = 30;

/** Checked after the embedded check, so that production answers 404 whatever the query. */
const Query = z.object({ price: z.string().optional(), payee: z.string().optional(), delay: z.string().optional() });

/** The demo seller's settings from its query; a 400 for one it cannot be. */
function settingsOf(q: z.infer<typeof Query>): { price: string; payee: 1 | 2; delayMs: number } {
  const price = q.price ?? "0.01";
  if (!DECIMAL_AMOUNT.test(price) || toBaseUnits(price) === 0n || toBaseUnits(price) > MAX_PRICE)
    throw badRequest(`price must be a USDC amount above 0 and at most 1000 (up to 6 decimals), not ${price}.`);
  if (q.payee !== undefined && q.payee !== "1" && q.payee !== "2") throw badRequest("payee must be 1 or 2.");
  const delay = q.delay ?? "0";
  if (!/^\d{1,2}$/.test(delay) || Number(delay) > MAX_DELAY_SECONDS) throw badRequest(`delay must be 0 to ${MAX_DELAY_SECONDS} seconds.`);
  return { price, payee: q.payee === "2" ? 2 : 1, delayMs: Number(delay) * 1000 };
}

/** One seller per service, price and payee, made on its first request (a handful in a sandbox's life). */
const sellers = new WeakMap<NetworkServices, Map<string, AgentIntelSeller>>();
function sellerFor(networks: NetworkServices, price: string, payee: 1 | 2): AgentIntelSeller {
  const mine = sellers.get(networks) ?? new Map<string, AgentIntelSeller>();
  sellers.set(networks, mine);
  const key = `${toBaseUnits(price)}|${payee}`;
  let seller = mine.get(key);
  if (!seller) {
    const { config, chain, logger } = networks.first.ctx;
    const [first, ...rest] = networks.all;
    const payTo = payee === 2 ? SECOND_PAYEE : (config.sellPayTo ?? chain.operator.address);
    seller = new AgentIntelSeller(
      { price, payTo, description: "SpendGate sandbox demo seller" },
      [offerOf(first), ...rest.map(offerOf)],
      logger,
    );
    if (mine.size > 100) mine.clear();
    mine.set(key, seller);
  }
  return seller;
}

export const DEV_SELLER_OPERATIONS = (["GET", "POST"] as const).map((method) =>
  rawOperation({
    method,
    path: DEV_SELLER_PATH,
    tag: "Seller",
    summary: `The sandbox's demo x402 seller, any price, a second payee, a slow answer (embedded mode only; ${method})`,
    description:
      "Embedded mode only (404 otherwise). `price` (USDC, default 0.01), `payee` (1: the service's own seller's payTo, 2: another " +
      "address, to see a pinned payee refuse it), `delay` (0 to 30 s before answering). Otherwise as /sell/agent-intel: exact, " +
      "one requirement per network, the payer's portfolio once paid.",
    auth: "x402",
    input: z.object({ query: Query }),
    headers: [
      { name: "PAYMENT-SIGNATURE", required: false, description: "x402 v2 payment payload (base64 JSON)" },
      { name: "X-PAYMENT", required: false, description: "x402 v1 payment payload (base64 JSON)" },
    ],
    responses: {
      200: json("paid: the resource", AgentIntel),
      402: json("payment required, or the payment was refused (`error` says why)", PaymentChallenge),
    },
    errors: ["bad_request", "not_found", "upstream_error"],
    serve: async ({ input, ctx, deps: { s, networks } }) => {
      if (!s.ctx.config.embeddedChain) throw notFound(`No ${method} ${DEV_SELLER_PATH}: the demo seller is the sandbox's.`);
      const { price, payee, delayMs } = settingsOf(input.query);
      if (delayMs) await sleep(delayMs);
      const answer = await sellerFor(networks, price, payee).handle({
        resourceUrl: `${s.ctx.urls.base || ctx.origin}${ctx.url}`,
        paymentSignature: ctx.get("PAYMENT-SIGNATURE") || undefined,
        xPayment: ctx.get("X-PAYMENT") || undefined,
      });
      ctx.status = answer.status;
      ctx.set(answer.headers);
      ctx.body = answer.body;
    },
  }),
);

/** A USDC amount of the query, above 0 and at most 1,000; a 400 otherwise. */
function amountOf(name: string, value: string): bigint {
  if (!DECIMAL_AMOUNT.test(value) || toBaseUnits(value) === 0n || toBaseUnits(value) > MAX_PRICE)
    throw badRequest(`${name} must be a USDC amount above 0 and at most 1000 (up to 6 decimals), not ${value}.`);
  return toBaseUnits(value);
}

const SchemeQuery = z.object({ ceiling: z.string().optional(), charge: z.string().optional(), price: z.string().optional() });

export const DEV_SCHEME_SELLER_OPERATIONS = (["upto", "batch-settlement"] as const satisfies readonly DemoScheme[]).flatMap((scheme) =>
  (["GET", "POST"] as const).map((method) =>
    rawOperation({
      method,
      path: `/dev/seller/${scheme}`,
      tag: "Seller",
      summary: `The sandbox's demo x402 ${scheme} seller (embedded mode only; ${method})`,
      description:
        scheme === "upto"
          ? "Embedded mode only (404 otherwise). A stock x402 upto seller: the buyer signs `ceiling` (USDC, default 0.10), the seller settles `charge` (default the whole ceiling)."
          : "Embedded mode only (404 otherwise). A stock x402 batch-settlement seller: a channel deposit, then one voucher of `price` (USDC, default 0.01) per request.",
      auth: "x402",
      input: z.object({ query: SchemeQuery }),
      headers: [{ name: "PAYMENT-SIGNATURE", required: false, description: "x402 v2 payment payload (base64 JSON)" }],
      responses: {
        200: json("paid: the demo resource", z.object({ scheme: z.string(), paid: z.boolean(), note: z.string() })),
        402: json("payment required, or the payment was refused", PaymentChallenge),
      },
      errors: ["bad_request", "not_found"],
      serve: async ({ input, ctx, deps: { s, demoSellers } }) => {
        if (!demoSellers) throw notFound(`No ${method} /dev/seller/${scheme}: the demo seller is the sandbox's.`);
        const q = input.query;
        const price = scheme === "upto" ? amountOf("ceiling", q.ceiling ?? "0.10") : amountOf("price", q.price ?? "0.01");
        const charge = scheme === "upto" && q.charge !== undefined ? amountOf("charge", q.charge) : undefined;
        if (charge !== undefined && charge > price) throw badRequest("charge must be at most the ceiling.");
        const answer = await demoSellers.handle(
          scheme,
          price,
          { method, url: new URL(`${s.ctx.urls.base || ctx.origin}${ctx.url}`), header: (name) => ctx.get(name) || undefined },
          charge,
        );
        ctx.status = answer.status;
        ctx.set(answer.headers);
        ctx.body = answer.body;
      },
    }),
  ),
);
