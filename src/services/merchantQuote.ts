/**
 * POST /merchants/quote: asks a seller for its x402 quote (the 402, no payment) so that an owner can pin the payee
 * the seller names (POST /limits `payees`). Same request code and rules as a payment (src/payments/quote.ts).
 * An agent key may ask only merchants its on-chain allowlist admits, as verify_merchant: the service is no request
 * proxy for agents; an owner key may ask any seller, since she asks before adding it.
 */
import { fromBaseUnits } from "../amounts";
import { badRequest, forbidden } from "../errors";
import { ANY_PAYEE } from "../policy/allowlist";
import type { MerchantQuoteRequest, MerchantQuoteResponse } from "../schemas/merchants";
import type { Services } from ".";
import type { Principal } from "../principal";
import { merchantOf } from "../payments/context";

const MAX_ACCEPTS = 20;

/** The URL asked: as given when it has a scheme, else https://<host>/. Only http and https. */
function sellerUrl(raw: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `https://${raw}/`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw badRequest(`url is neither a URL nor a host name: ${raw.slice(0, 100)}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw badRequest("url must be an http or https URL.");
  return url.toString();
}

const text = (v: unknown, max = 200): string | null => (typeof v === "string" && v.length <= max ? v : null);

export async function quoteMerchant(s: Services, principal: Principal, input: MerchantQuoteRequest): Promise<MerchantQuoteResponse> {
  const agent = await s.agents.authorize(principal, input.agentAddress);
  const serviceUrl = sellerUrl(input.url);
  const merchant = merchantOf(serviceUrl);
  const admission = await s.decisions.admit(agent, merchant, { fresh: true });
  const proof = admission.status === "admitted" ? admission.proof : null;
  if (principal.role === "agent" && !proof) {
    throw forbidden(
      `${merchant} is not on this agent's on-chain allowlist: an agent key may ask only merchants it may pay. Its owner can ask with her key.`,
    );
  }
  const { paymentRequired, quote } = await s.payments.sellerQuote({ url: serviceUrl, method: "GET" }, agent.address);
  const version = paymentRequired.x402Version === 1 ? 1 : 2;
  const accepts = (paymentRequired.accepts as unknown as unknown[]).slice(0, MAX_ACCEPTS).flatMap((raw) => {
    if (!raw || typeof raw !== "object") return [];
    const r = raw as Record<string, unknown>;
    return [
      {
        scheme: text(r.scheme),
        network: text(r.network),
        asset: text(r.asset),
        amount: text(version === 1 ? r.maxAmountRequired : r.amount, 80),
        payTo: text(r.payTo),
        payable: quote !== null && raw === (quote.requirement as unknown),
      },
    ];
  });
  const payTo = quote?.requirement.payTo ?? null;
  const pinnedPayee = proof && proof.payee !== ANY_PAYEE ? proof.payee : null;
  const payeeMatches = pinnedPayee && payTo ? pinnedPayee.toLowerCase() === payTo.toLowerCase() : null;
  let advice: string;
  if (!payTo)
    advice = `${merchant} offers no USDC payment on ${s.ctx.config.networkName}, the agent's network: SpendGate could not pay it, so there is no payee to pin.`;
  else if (payeeMatches === true) advice = `${payTo} is already the pinned payee of ${proof?.leaf}: nothing to change.`;
  else if (payeeMatches === false) {
    advice = `${merchant} now asks to be paid at ${payTo}, but ${proof?.leaf} pins ${pinnedPayee}: payments are refused (payee_not_allowed) until the owner signs a policy with the new payee, if she trusts it.`;
  } else {
    advice = `To pin it, sign a policy with payees { "${proof?.leaf ?? merchant}": "${payTo}" } (POST /limits): then only ${payTo} can be paid under that entry, even by a compromised server.`;
  }
  return {
    agentAddress: agent.address,
    serviceUrl,
    merchant,
    x402Version: version,
    accepts,
    payTo,
    price: quote ? fromBaseUnits(quote.amount) : null,
    allowlistEntry: proof?.leaf ?? null,
    pinnedPayee,
    payeeMatches,
    advice,
  };
}
