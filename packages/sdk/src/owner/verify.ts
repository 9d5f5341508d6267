/**
 * `spendgate owner verify [AGENT]`: the policy in force read from the chain alone (the agent's latest PolicyUpdated:
 * every field as signed, each merchant with its cap and payee; its root rebuilt and checked against the contract's
 * policy()), the owner, the epoch and the pause; then every difference with what the server's GET /limits says.
 */
import { Contract, Interface, JsonRpcProvider, getAddress, zeroPadValue, type Log, type Result } from "ethers";
import ISpendPolicy from "../../../../artifacts/contracts/ISpendPolicy.sol/ISpendPolicy.json";
import { fromBaseUnits } from "../../../../src/amounts";
import { POLICY_NUMBERS as NUMBERS } from "../../../../src/audit/auditTypes";
import type { SignedPolicyFields } from "../../../../src/chain/typedData";
import { ANY_PAYEE, allowlistRoot } from "../../../../src/policy/allowlist";
import { SpendGateError } from "../errors";
import { usageError, value } from "./args";
import type { Run } from "./commands";
import { policySummary } from "./policy";
import { anonymousClient, ownerClient } from "./session";

const POLICY = new Interface(ISpendPolicy.abi);
/** Counts, seconds and basis points among the policy's numbers; the others are USDC amounts (base units). */
const NOT_AMOUNTS = new Set(["maxPaymentsPerHour", "validUntil", "maxSwapSlippageBps", "swapTwapSeconds"]);

/** What the chain says of an agent, in GET /limits' terms, for the comparison. */
export interface ChainView {
  owner: string;
  epoch: number;
  paused: boolean;
  version: number;
  policy: SignedPolicyFields | null;
  allowlistRoot: string;
  /** Where the chain disagrees with itself (the event's root against policy() or the signed entries): never expected. */
  alerts: string[];
}

/** The RPC URL: --rpc, or the one of the service's networks (GET /dashboard/config) where the agent has code. */
async function rpcOf(r: Run, agent: string): Promise<JsonRpcProvider> {
  const given = value(r.a, "--rpc");
  const urls = given
    ? [given]
    : (
        await anonymousClient(r.baseUrl).request<{ networks: { rpcUrl: string | null }[] }>("/dashboard/config", { anonymous: true })
      ).networks
        .map((n) => n.rpcUrl)
        .filter((u): u is string => u !== null);
  for (const url of urls) {
    const provider = new JsonRpcProvider(url, undefined, { batchMaxCount: 1 });
    try {
      if ((await provider.getCode(agent)) !== "0x") return provider;
    } catch (err) {
      if (given)
        throw new SpendGateError({ error: "network_error", message: `Cannot read the chain at ${url}: ${String(err)}`, status: 0 });
    }
    provider.destroy();
  }
  throw new SpendGateError({
    error: "not_found",
    message: `No contract at ${agent} on ${given ?? "the service's networks"}: its policy is not deployed (or pass --rpc).`,
    status: 404,
  });
}

export async function readChain(provider: JsonRpcProvider, agent: string, fromBlock: number): Promise<ChainView> {
  const c = new Contract(agent, POLICY, provider);
  const [owner, epoch, paused, policy, version] = (await Promise.all([
    c.owner(),
    c.epoch(),
    c.paused(),
    c.policy(),
    c.policyVersion(),
  ])) as [string, bigint, boolean, Result, bigint];
  const stored = policy.toObject() as Record<string, bigint | string>;
  const event = POLICY.getEvent("PolicyUpdated");
  if (!event) throw new Error("ISpendPolicy has no PolicyUpdated event");
  const logs: Log[] = await provider.getLogs({ address: agent, topics: [event.topicHash, zeroPadValue(agent, 32)], fromBlock });
  const view: ChainView = {
    owner: getAddress(owner),
    epoch: Number(epoch),
    paused,
    version: Number(version),
    policy: null,
    allowlistRoot: String(stored.allowlistRoot),
    alerts: [],
  };
  const last = logs.at(-1);
  if (!last) {
    if (version > 0n)
      view.alerts.push(`policy version ${version} in force, but no PolicyUpdated found from block ${fromBlock} (pass --from-block)`);
    return view;
  }
  const args = POLICY.parseLog(last)?.args;
  if (!args) throw new Error(`cannot decode PolicyUpdated in ${last.transactionHash}`);
  // A Result answers its fields by name; its array of structs is read element by element.
  const p = args.policy as Result & Record<string, unknown>;
  const merchants = (p.merchants as Result).toArray().map((m: Record<string, unknown>) => ({
    entry: String(m.entry),
    dailyCap: m.dailyCap as bigint,
    payee: getAddress(String(m.payee)),
    requireSignedOffer: m.requireSignedOffer === true,
  }));
  view.policy = { ...(Object.fromEntries(NUMBERS.map((k) => [k, p[k] as bigint])) as Omit<SignedPolicyFields, "merchants">), merchants };
  if (Number(args.version) !== view.version)
    view.alerts.push(`the latest PolicyUpdated is version ${args.version}, the contract is at ${view.version}`);
  // The root the contract enforces, the one the event names, and the one the signed entries give must all agree.
  const rebuilt = allowlistRoot(
    merchants.map((m) => m.entry),
    Object.fromEntries(merchants.map((m) => [m.entry, m.dailyCap])),
    Object.fromEntries(merchants.map((m) => [m.entry, m.payee])),
  );
  for (const [what, root] of [
    ["the event's allowlistRoot", String(args.allowlistRoot)],
    ["the signed entries' root", rebuilt],
  ] as const)
    if (root !== view.allowlistRoot) view.alerts.push(`${what} ${root} is not the root in force ${view.allowlistRoot}`);
  for (const k of NUMBERS)
    if (k in stored && BigInt(stored[k]) !== view.policy[k])
      view.alerts.push(`policy().${k} ${stored[k]} is not the signed ${view.policy[k]}`);
  return view;
}

/** The chain's view in GET /limits' fields and formats. */
function asLimits(v: ChainView): Record<string, unknown> {
  const p = v.policy;
  const base = { ownerAddress: v.owner, epoch: v.epoch, paused: v.paused, deployed: true, allowlistRoot: v.allowlistRoot };
  if (!p) return base;
  const number = (k: (typeof NUMBERS)[number]) => (NOT_AMOUNTS.has(k) ? Number(p[k]) : fromBaseUnits(p[k]));
  return {
    ...base,
    ...Object.fromEntries(NUMBERS.map((k) => [k, number(k)])),
    allowlist: p.merchants.map((m) => m.entry),
    merchantCaps: Object.fromEntries(p.merchants.filter((m) => m.dailyCap > 0n).map((m) => [m.entry, fromBaseUnits(m.dailyCap)])),
    payees: Object.fromEntries(p.merchants.filter((m) => m.payee !== ANY_PAYEE).map((m) => [m.entry, m.payee])),
    requireSignedOffer: p.merchants.filter((m) => m.requireSignedOffer).map((m) => m.entry),
  };
}

/** One comparable form: addresses and entries in one case, lists and records in one order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return JSON.stringify(v.map((x) => canonical(x)).sort());
  if (v !== null && typeof v === "object")
    return JSON.stringify(
      Object.entries(v)
        .map(([k, x]) => [k.toLowerCase(), canonical(x)])
        .sort(),
    );
  return String(v).toLowerCase();
}

/** Every field where the server's GET /limits differs from the chain. */
export function differences(chain: Record<string, unknown>, server: Record<string, unknown>): string[] {
  return Object.keys(chain)
    .filter((k) => canonical(chain[k]) !== canonical(server[k]))
    .map((k) => `${k}: the server says ${JSON.stringify(server[k])}, the chain says ${JSON.stringify(chain[k])}`);
}

export async function verify(r: Run): Promise<number> {
  let client;
  try {
    client = ownerClient(r.baseUrl, r.io.env);
  } catch {
    client = null; // the chain alone then: nothing to compare with
  }
  const agent = r.a.positional[0];
  if (!agent) throw usageError("verify needs the agent's address");
  const fromBlock = Number(value(r.a, "--from-block") ?? 0);
  const provider = await rpcOf(r, getAddress(agent));
  let view: ChainView;
  try {
    view = await readChain(provider, getAddress(agent), fromBlock);
  } finally {
    provider.destroy();
  }
  const out = (line: string) => {
    r.io.out(line);
  };
  out(
    `On-chain (${getAddress(agent)}): owner ${view.owner}, epoch ${view.epoch}, ${view.paused ? "PAUSED" : "not paused"}, policy version ${view.version}.`,
  );
  if (view.policy) for (const line of policySummary(view.policy)) out(`  ${line}`);
  else out("  No policy signed yet.");
  out(`  Allowlist root in force: ${view.allowlistRoot}${view.alerts.length ? "" : " (rebuilt from the signed entries: it matches)"}.`);
  for (const a of view.alerts) out(`ALERT: the chain disagrees with itself: ${a}`);
  if (!client) {
    out("Not signed in: the server's GET /limits was not compared (spendgate owner login).");
    return view.alerts.length ? 3 : 0;
  }
  const server = (await client.limits(agent)) as Record<string, unknown>;
  const diffs = differences(asLimits(view), server);
  for (const d of diffs) out(`WARNING: the server's GET /limits differs from the chain: ${d}`);
  if (!diffs.length) out("The server's GET /limits matches the chain.");
  return diffs.length || view.alerts.length ? 3 : 0;
}
