/**
 * `spendgate owner policy set`: the POST /limits body from flags or a JSON file, the SetPolicy the service's own
 * builder makes of it (src/policy/signedPolicy.ts, bundled into this CLI: one definition of what is signed), and a
 * plain summary of it for the owner to read before she signs.
 */
import { readFileSync } from "node:fs";
import { fromBaseUnits } from "../../../../src/amounts";
import { SET_POLICY_TYPES, policyDomain } from "../../../../src/chain/typedData";
import { ANY_PAYEE } from "../../../../src/policy/allowlist";
import { type BuiltPolicy, PolicyRequestError, type PolicyRequest, buildSignedPolicy } from "../../../../src/policy/signedPolicy";
import { type Args, integer, pairs, usageError, value, values } from "./args";
import type { Typed } from "./signer";

/** A POST /limits body without its signature: what the owner asks for. */
export type LimitsBody = PolicyRequest & { agentAddress?: string; payees?: Record<string, string> };

const FROM_FLAGS: [keyof PolicyRequest, string][] = [
  ["perTxLimit", "--per-tx"],
  ["dailyBudget", "--daily"],
  ["approvalThreshold", "--threshold"],
  ["hourlyBudget", "--hourly"],
  ["weeklyBudget", "--weekly"],
  ["monthlyBudget", "--monthly"],
  ["lifetimeBudget", "--lifetime"],
  ["minSwapRate", "--min-swap-rate"],
];

/** The request, from --file (a POST /limits body; its signature and timestamp are ignored) or from the flags. */
export function policyRequest(a: Args): LimitsBody {
  const file = value(a, "--file");
  if (file) {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    } catch (err) {
      throw usageError(`--file ${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const { humanSignature: _s, timestamp: _t, ...rest } = body;
    return rest as unknown as LimitsBody;
  }
  const req: Record<string, unknown> = { allowlist: values(a, "--allow") }; // and --pin's hosts (commands.ts)
  for (const [field, flag] of FROM_FLAGS) {
    const v = value(a, flag);
    if (v !== undefined) req[field] = v;
  }
  for (const [field, flag] of [
    ["maxPaymentsPerHour", "--max-per-hour"],
    ["validUntil", "--valid-until"],
    ["maxSwapSlippageBps", "--max-slippage-bps"],
    ["swapTwapSeconds", "--twap-seconds"],
  ] as const) {
    const v = integer(a, flag);
    if (v !== undefined) req[field] = v;
  }
  const caps = pairs(a, "--cap");
  const payees = pairs(a, "--payee");
  const signed = values(a, "--signed-offer");
  if (Object.keys(caps).length) req.merchantCaps = caps;
  if (Object.keys(payees).length) req.payees = payees;
  if (signed.length) req.requireSignedOffer = signed;
  const missing = FROM_FLAGS.slice(0, 3).filter(([field]) => req[field] === undefined);
  if (missing.length) throw usageError(`policy set needs ${missing.map(([, flag]) => flag).join(", ")} (or --file)`);
  return req as unknown as LimitsBody;
}

/** The SetPolicy of `req`, built as the service builds it; a request it would refuse is a bad_request. */
export function builtPolicy(req: LimitsBody): BuiltPolicy {
  try {
    return buildSignedPolicy(req);
  } catch (err) {
    if (err instanceof PolicyRequestError) throw usageError(err.message);
    if (err instanceof Error) throw usageError(`The policy is not valid: ${err.message}`);
    throw err;
  }
}

/** What the owner's wallet shows for SetPolicy, for the agent's policy contract on its chain. */
export function setPolicyTyped(chainId: number, agent: string, built: BuiltPolicy, timestamp: number): Typed {
  return { domain: policyDomain(chainId, agent), types: SET_POLICY_TYPES, message: { agent, ...built.policy, timestamp } };
}

const usdc = (units: bigint) => `${fromBaseUnits(units)} USDC`;
const limit = (units: bigint, what: string) => (units === 0n ? [] : [`${what}: ${usdc(units)}`]);

/** The policy in plain words, one line a rule: what the owner signs (and what `verify` reads back from the chain). */
export function policySummary(p: BuiltPolicy["policy"]): string[] {
  const lines = [
    `Each payment at most ${usdc(p.perTxLimit)}; at most ${usdc(p.dailyBudget)} per UTC day.`,
    p.approvalThreshold === 0n
      ? "Every payment waits for your approval."
      : `Payments above ${usdc(p.approvalThreshold)} wait for your approval.`,
    ...limit(p.hourlyBudget, "Per UTC hour at most"),
    ...limit(p.weeklyBudget, "Per week at most"),
    ...limit(p.monthlyBudget, "Per 30 days at most"),
    ...limit(p.lifetimeBudget, "In total at most"),
    ...(p.maxPaymentsPerHour === 0n ? [] : [`At most ${p.maxPaymentsPerHour} payments per UTC hour.`]),
    ...(p.validUntil === 0n ? [] : [`No payment after ${new Date(Number(p.validUntil) * 1000).toISOString()}.`]),
    p.maxSwapSlippageBps === 0n
      ? "Swaps before settlement: off."
      : `Swaps before settlement: at most ${p.maxSwapSlippageBps} bps above the ${p.swapTwapSeconds} s TWAP${p.minSwapRate ? `, never below ${fromBaseUnits(p.minSwapRate)} USDC per WETH` : ""}.`,
    p.merchants.length ? `Merchants (${p.merchants.length}):` : "Merchants: none (every payment is blocked).",
  ];
  for (const m of p.merchants) {
    const cap = m.dailyCap === 0n ? "no cap of its own" : `at most ${usdc(m.dailyCap)} a day`;
    const payee = m.payee === ANY_PAYEE ? "pays ANY address" : `pays only ${m.payee}`;
    lines.push(`  ${m.entry}: ${cap}, ${payee}${m.requireSignedOffer ? ", signed offers only" : ""}`);
  }
  return lines;
}
