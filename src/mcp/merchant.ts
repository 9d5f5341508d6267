/**
 * verify_merchant: what paying a URL would do, without paying. The allowlist decision and the contract's own
 * check come from the same services as POST /pay, and so does the seller's quote (the same request and parser).
 * The seller is asked for its quote only when the agent's on-chain allowlist admits the merchant: an agent key must
 * not be able to make the service request arbitrary URLs.
 */
import { formatEther } from "ethers";
import { ANY_PAYEE } from "../policy/allowlist";
import { fromBaseUnits } from "../amounts";
import { AppError } from "../errors";
import type { Services } from "../services";
import { merchantOf } from "../payments/context";
import type { AgentDoc } from "../store/documents";
import type { Quote } from "../x402/buyer";
import type { VerifyMerchantResult } from "./schemas";

export async function verifyMerchant(s: Services, agent: AgentDoc, serviceUrl: string): Promise<VerifyMerchantResult> {
  const merchant = merchantOf(serviceUrl);
  const [admission, approvedPayments] = await Promise.all([
    s.decisions.admit(agent, merchant, { fresh: true }),
    s.ctx.store.payments.countDocuments({ agentAddress: agent.address, merchant, status: "approved" }),
  ]);
  const { policy } = admission;
  const proof = admission.status === "admitted" ? admission.proof : null;

  let quote: Quote | null = null;
  let quoteError: VerifyMerchantResult["quoteError"] = null;
  if (admission.status === "no_policy") {
    // No policy, no allowlist: pay would refuse it, so the seller is not contacted (the tool is no request proxy).
    quoteError = { error: "no_policy", message: "Not asked: this agent has no spend policy yet, so its seller was not contacted." };
  } else if (admission.status === "not_allowed") {
    quoteError = {
      error: "merchant_not_allowed",
      message: `Not asked: ${merchant} is not on this agent's allowlist, so its seller was not contacted.`,
    };
  } else {
    try {
      quote = await s.payments.quote({
        agent,
        merchant,
        serviceUrl,
        intent: "verify_merchant",
        seller: { url: serviceUrl, method: "GET" },
      });
      if (!quote) {
        const where = `${s.ctx.config.networkName} (eip155:${s.ctx.config.chainId}), this agent's network`;
        quoteError = { error: "unsupported_payment", message: `The seller offers no USDC payment this agent can make on ${where}.` };
      }
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      quoteError = { error: err.code, message: err.message };
    }
  }

  let expectedOutcome: VerifyMerchantResult["expectedOutcome"] = "unknown";
  let reason: string | null = null;
  if (admission.status === "no_policy") [expectedOutcome, reason] = ["blocked", "no_policy"];
  else if (admission.status === "not_allowed") [expectedOutcome, reason] = ["blocked", "merchant_not_allowed"];
  else if (!quote && quoteError?.error === "unsupported_payment") [expectedOutcome, reason] = ["blocked", "unsupported_payment"];
  let swapNote = "";
  if (quote && admission.status === "admitted") {
    const decision = await s.decisions.decide(agent, merchant, admission, quote.amount, quote.requirement.payTo);
    const swap = decision.status === "block" ? null : await decision.swap;
    if (decision.status === "block") [expectedOutcome, reason] = ["blocked", decision.reason];
    else if (swap?.kind === "refuse") [expectedOutcome, reason] = ["blocked", "insufficient_funds"];
    else if (swap?.kind === "swap" && swap.exceeded) [expectedOutcome, reason] = ["blocked", "swap_slippage_exceeded"];
    else expectedOutcome = decision.status === "allow" ? "approved" : "pending";
    if (swap?.kind === "swap" && !swap.exceeded) {
      swapNote = ` Your wallet lacks ${fromBaseUnits(swap.shortfall)} USDC: it would first buy it with about ${formatEther(swap.quote.amountIn)} WETH (or ETH).`;
    }
  }

  const price = quote ? fromBaseUnits(quote.amount) : null;
  const newMerchant = approvedPayments === 0;
  return {
    serviceUrl,
    merchant,
    allowed: proof !== null,
    allowlistEntry: proof?.leaf ?? null,
    payee: proof && proof.payee !== ANY_PAYEE ? proof.payee : null,
    policyDeployed: policy.deployed,
    paused: policy.paused,
    quote: quote
      ? {
          price: fromBaseUnits(quote.amount),
          amount: quote.amount.toString(),
          currency: "USDC",
          scheme: quote.requirement.scheme,
          network: quote.requirement.network,
          asset: quote.requirement.asset,
          payTo: quote.requirement.payTo,
          x402Version: quote.version,
        }
      : null,
    quoteError,
    newMerchant,
    approvedPayments,
    expectedOutcome,
    reason,
    advice:
      advise(s, agent, merchant, { expectedOutcome, reason, price, newMerchant, quoteError }) +
      (expectedOutcome === "blocked" ? "" : swapNote),
  };
}

function advise(
  s: Services,
  agent: AgentDoc,
  merchant: string,
  v: { expectedOutcome: string; reason: string | null; price: string | null; newMerchant: boolean; quoteError: { message: string } | null },
): string {
  if (v.reason === "no_policy") {
    return `This agent has no spend policy yet: ask your owner to activate it at ${s.agents.activationLink(agent.address)}. Do not pay.`;
  }
  if (v.reason === "merchant_not_allowed") {
    return `${merchant} is not on your allowlist: a payment would be blocked and recorded on-chain. Ask your owner to add it; do not pay.`;
  }
  if (v.expectedOutcome === "unknown") return `No x402 price could be read from the seller (${v.quoteError?.message}). Do not pay it now.`;
  if (v.expectedOutcome === "blocked")
    return `Paying ${v.price ?? "it"} USDC would be blocked (${v.reason}). Do not pay; tell your owner if you need it.`;
  const fresh = v.newMerchant ? ` ${merchant} is new to you: make sure it is the service you mean to pay.` : "";
  if (v.expectedOutcome === "pending")
    return `Paying ${v.price} USDC would wait for your owner's approval (above the approval threshold).${fresh}`;
  return `Paying ${v.price} USDC is within your policy and would be approved.${fresh}`;
}
