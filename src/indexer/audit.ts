/**
 * An auditor's view from the chain's logs alone: no calldata, no database, only eth_getLogs (and block timestamps).
 * From the factory's AgentDeployed it finds every agent, then reads their events, USDC's AuthorizationUsed of their
 * wallets and every USDC and WETH Transfer out of them, and rebuilds every payment decision, every policy version with
 * its signed timestamp, pauses, owners, operators, withdrawals and each UTC day's spend, checked against the spentToday
 * the contract reported; the authorisation epochs (checked against each PaymentAuthorized's), the allowlist leaves and
 * payees (per-entry daily caps and payee rules replayed from PaymentAuthorized alone), the signer of every owner action
 * (recovered from its event's signature, held against the owner in force), and what explains each outflow.
 */
import { ZeroAddress, getAddress, zeroPadValue, type Log, type Provider } from "ethers";
import { WETH_ADDRESS } from "../chain/addresses";
import { eventTopic, parseEvent } from "../chain/contracts";
import { BlockReason, reasonName } from "../chain/reasons";
import { leafMatches } from "../policy/allowlist";
import { emptyExplanations, explainOutflow, transferOf, type AuditOutflow, type TxExplanations } from "./auditOutflows";
import { CONTRACT_OWNER, SignatureAuditor, type AuditSignature, type SignedEvent } from "./auditSignatures";

/** The numeric fields of PolicyUpdated's policy tuple (the grown SetPolicy: README, "The EIP-712 types owners sign"). */
const POLICY_NUMBERS = [
  "perTxLimit",
  "dailyBudget",
  "approvalThreshold",
  "hourlyBudget",
  "weeklyBudget",
  "monthlyBudget",
  "lifetimeBudget",
  "maxPaymentsPerHour",
  "validUntil",
  "maxSwapSlippageBps",
  "swapTwapSeconds",
  "minSwapRate",
] as const;

/** Every event that starts a new authorisation epoch, as the audit rebuilds it (ISpendPolicy.sol, owner actions). */
export type EpochCause = "PolicyUpdated" | "PausedSet" | "OperatorSet" | "OwnerSet";

/** The allowlist leaf that admitted a payment (PaymentAuthorized's leafEntry, leafDailyCap, leafPayee). */
export interface AuditLeaf {
  entry: string;
  dailyCap: string;
  /** 0x0: any payee. */
  payee: string;
}

export type AuditPaymentStatus = "authorized" | "settled" | "released" | "blocked";

export interface AuditPayment {
  paymentId: string;
  status: AuditPaymentStatus;
  merchant: string;
  amount: string;
  payTo: string | null;
  /** The EIP-3009 transfer's validity (PaymentAuthorized): it may settle only strictly between the two. */
  validAfter: number | null;
  validBefore: number | null;
  /** The authorisation epoch it was authorised in: it may settle only while the epoch is still that one. */
  epoch: number | null;
  /** The allowlist leaf that admitted it. */
  leaf: AuditLeaf | null;
  reason: string | null;
  approvalId: string | null;
  day: string;
  authorizeTx: string;
  /** The block of its PaymentAuthorized (or PaymentBlocked). */
  authorizeBlock: number;
  settleTx: string | null;
  releaseTx: string | null;
  /** The swap that bought this payment's USDC shortfall (SwapExecuted): tokenIn is WETH, or 0x0 for wrapped ETH. */
  swap?: { txHash: string; tokenIn: string; amountIn: string; amountOut: string };
}

export interface AuditAgent {
  agent: string;
  deployTx: string;
  owners: { owner: string; timestamp: number; txHash: string }[];
  operators: { operator: string; timestamp: number; txHash: string }[];
  /** Each signed policy: its version, every SetPolicy field (amounts and integers as decimal strings), when and where. */
  policies: ({ version: number; allowlistRoot: string; timestamp: number; txHash: string } & Record<
    (typeof POLICY_NUMBERS)[number],
    string
  >)[];
  /** Each pause or resume; `epoch` is the one SetPaused named (for a resume, the epoch it resumed). */
  pauses: { paused: boolean; epoch: number; timestamp: number; txHash: string }[];
  withdrawals: { token: string; to: string; amount: string; timestamp: number; txHash: string }[];
  /** Authorised payments by paymentId, in order. */
  payments: AuditPayment[];
  /** Refusals (a blocked paymentId reserves nothing, so each refusal is its own entry). */
  blocked: AuditPayment[];
  /** Payment ids voided before any authorisation of them landed (PaymentVoided): none can ever be authorised. */
  voided: { paymentId: string; day: string; txHash: string }[];
  /** UTC day (YYYY-MM-DD) -> spend at the end of the day's last event (authorised minus released that day). */
  days: Record<string, string>;
  /** The authorisation epoch rebuilt from events alone: 0 before the first policy, then one more for every
   * PolicyUpdated, every PausedSet pausing and every OperatorSet and OwnerSet after deployment (16 bits, wrapping). */
  epoch: number;
  /** Each epoch started, by what and where. */
  epochs: { epoch: number; cause: EpochCause; txHash: string }[];
  /** Every allowlist leaf that admitted a payment: what it admitted in all, and each UTC day's spend counted against
   * its entry's cap (capped leaves only, as the contract counts: a release does not give it back). */
  leaves: (AuditLeaf & { payments: number; amount: string; days: Record<string, string> })[];
  /** Every payee of an authorised payment: how many, how much, and the entries that named it as their payee (empty:
   * paid only under leaves with payee 0, "any payee"). */
  payees: Record<string, { payments: number; amount: string; namedBy: string[] }>;
  /** The signer of every owner action, recovered from its event's signature. */
  signatures: AuditSignature[];
  /** Every USDC and WETH Transfer out of the wallet, with what explains it. */
  outflows: AuditOutflow[];
}

/** A contract an agent's operator slot named (an OperatorSet): whoever it lets in relays for the agent. */
export interface AuditOperatorSet {
  address: string;
  /** OwnershipTransferred: who adds and removes members. */
  owners: { owner: string; txHash: string }[];
  /** OperatorAdded / OperatorRemoved, in order. */
  changes: { member: string; added: boolean; blockNumber: number; txHash: string }[];
  /** The members after the last change read. */
  members: string[];
}

export interface AuditReport {
  factory: string;
  fromBlock: number;
  toBlock: number;
  agents: Record<string, AuditAgent>;
  /** Every operator an agent had that emitted OperatorSet membership events, by address. */
  operatorSets: Record<string, AuditOperatorSet>;
  /** Every place where the rebuilt state disagrees with what an event reported (empty when consistent): the
   * anomalies. */
  inconsistencies: string[];
  /** What an auditor should know that is no anomaly (a contract owner's signature, a transfer of 0). */
  notes: string[];
  /** How many logs the audit read. */
  events: number;
}

/** Blocks per eth_getLogs call: nodes cap the range (Base providers at 2,000 to 10,000 blocks). */
const LOG_BLOCKS = 2000;
/** Agents (addresses, or topics) per eth_getLogs call. */
const ADDRESS_CHUNK = 100;

const day = (ts: number) => new Date(ts * 1000).toISOString().slice(0, 10);
const order = (a: Log, b: Log) => a.blockNumber - b.blockNumber || a.index - b.index;

/** Rebuilds the history of every agent of `factory` from the logs of blocks fromBlock..toBlock. */
export async function auditFromLogs(
  provider: Provider,
  opts: {
    factory: string;
    usdc: string;
    /** WETH (default: Base's, also the embedded chain's). */
    weth?: string;
    /** Addresses a swap may pay WETH to besides the pool seen paying USDC back (a router, a pool). */
    swapCounterparties?: string[];
    fromBlock: number;
    toBlock?: number;
    addressChunk?: number;
  },
): Promise<AuditReport> {
  const toBlock = opts.toBlock ?? (await provider.getBlockNumber());
  const range = { fromBlock: opts.fromBlock, toBlock };
  const report: AuditReport = {
    factory: getAddress(opts.factory),
    fromBlock: opts.fromBlock,
    toBlock,
    agents: {},
    operatorSets: {},
    inconsistencies: [],
    notes: [],
    events: 0,
  };
  const usdc = getAddress(opts.usdc);
  const weth = getAddress(opts.weth ?? WETH_ADDRESS);

  const deployed = await logsOf(provider, { ...range, address: opts.factory, topics: [eventTopic("SpendPolicyFactory", "AgentDeployed")] });
  for (const log of deployed) {
    const e = parseEvent("SpendPolicyFactory", log);
    if (e?.name !== "AgentDeployed") continue;
    const agent = getAddress(e.args.agent);
    report.agents[agent] = {
      agent,
      deployTx: log.transactionHash,
      owners: [],
      operators: [],
      policies: [],
      pauses: [],
      withdrawals: [],
      payments: [],
      blocked: [],
      voided: [],
      days: {},
      epoch: 0,
      epochs: [],
      leaves: [],
      payees: {},
      signatures: [],
      outflows: [],
    };
  }
  report.events += deployed.length;
  const agents = Object.keys(report.agents);
  if (agents.length === 0) return report;

  // Nodes cap the addresses and topics of one request (Infura: 5,000 in all): ADDRESS_CHUNK agents at a time.
  const chunk = Math.max(1, opts.addressChunk ?? ADDRESS_CHUNK);
  const agentLogs: Log[] = [];
  const usedLogs: Log[] = [];
  const outLogs: Log[] = []; // USDC and WETH Transfers out of the wallets
  const inLogs: Log[] = []; // USDC Transfers into them (the pool's side of a swap)
  const transfer = eventTopic("Usdc", "Transfer");
  for (let i = 0; i < agents.length; i += chunk) {
    const some = agents.slice(i, i + chunk).map((a) => zeroPadValue(a, 32));
    const [own, used, out, into] = await Promise.all([
      logsOf(provider, { ...range, address: agents.slice(i, i + chunk) }),
      logsOf(provider, { ...range, address: usdc, topics: [eventTopic("Usdc", "AuthorizationUsed"), some] }),
      logsOf(provider, { ...range, address: [usdc, weth], topics: [transfer, some] }),
      logsOf(provider, { ...range, address: usdc, topics: [transfer, null, some] }),
    ]);
    agentLogs.push(...own);
    usedLogs.push(...used);
    outLogs.push(...out);
    inLogs.push(...into);
  }
  report.events += agentLogs.length + usedLogs.length + outLogs.length + inLogs.length;
  const chainId = (await provider.getNetwork()).chainId;
  const signatures = new SignatureAuditor(provider, chainId);
  const explanations = new Map<string, TxExplanations>(); // txHash -> what may explain an outflow in it
  const explain = (txHash: string) => {
    let x = explanations.get(txHash.toLowerCase());
    if (!x) explanations.set(txHash.toLowerCase(), (x = emptyExplanations()));
    return x;
  };
  const timestamps = new Map<number, number>();
  const timestampOf = async (n: number): Promise<number> => {
    let t = timestamps.get(n);
    if (t === undefined) {
      const block = await provider.getBlock(n);
      if (!block) throw new Error(`block ${n} of a log is no longer on the chain (a reorganisation): audit again`);
      timestamps.set(n, (t = block.timestamp));
    }
    return t;
  };

  const byId = new Map<string, AuditPayment>();
  const spend = new Map<string, bigint>(); // agent|day -> rebuilt spend
  const entrySpend = new Map<string, bigint>(); // agent|day|entry -> rebuilt spend under a capped entry
  // paymentId -> ApprovalUsed (it precedes its PaymentAuthorized, whose merchant and payTo its signature covers)
  const pendingApproval = new Map<string, { approvalId: string; amount: bigint; timestamp: bigint; signature: string; txHash: string }>();
  const voided = new Set<string>(); // agent|paymentId
  // Per agent: the owner in force, the policy in force, and where each epoch started (block, log index).
  const owners = new Map<string, string>();
  const policies = new Map<string, AuditAgent["policies"][number]>();
  const epochStarts = new Map<string, { block: number; index: number; epoch: number }[]>();
  const epochAt = (agent: string, block: number, index: number) => {
    let epoch = 0;
    for (const x of epochStarts.get(agent) ?? []) if (x.block < block || (x.block === block && x.index < index)) epoch = x.epoch;
    return epoch;
  };
  for (const log of [...agentLogs].sort(order)) {
    const a = report.agents[getAddress(log.address)];
    const e = parseEvent("SpendPolicy", log);
    if (!a || !e) continue;
    const at = (timestamp: bigint) => ({ timestamp: Number(timestamp), txHash: log.transactionHash });
    const today = day(await timestampOf(log.blockNumber));
    const key = `${a.agent}|${today}`;
    const owner = owners.get(a.agent) ?? ZeroAddress;
    const bump = (cause: EpochCause) => {
      a.epoch = (a.epoch + 1) & 0xffff;
      a.epochs.push({ epoch: a.epoch, cause, txHash: log.transactionHash });
      epochStarts.set(a.agent, [...(epochStarts.get(a.agent) ?? []), { block: log.blockNumber, index: log.index, epoch: a.epoch }]);
    };
    const signed = async (event: SignedEvent, message: Record<string, unknown>, signature: string, signer = owner) => {
      const checked = await signatures.check(a.agent, signer, event, { agent: a.agent, ...message }, signature, log.transactionHash);
      a.signatures.push(checked);
      if (checked.verdict === "not the owner") {
        report.inconsistencies.push(
          `${a.agent}: ${event} in ${log.transactionHash} signed by ${checked.signer ?? "no recoverable key"}, not by the owner ${signer}`,
        );
      } else if (checked.verdict === CONTRACT_OWNER) {
        report.notes.push(`${a.agent}: ${event} in ${log.transactionHash}: ${CONTRACT_OWNER} (owner ${signer})`);
      }
    };
    switch (e.name) {
      case "OwnerSet": {
        const next = getAddress(e.args.owner);
        a.owners.push({ owner: next, ...at(e.args.timestamp) });
        // Timestamp 0: set at deployment (no signature). Otherwise signed by the owner it replaces.
        if (e.args.timestamp !== 0n) {
          await signed("OwnerSet", { newOwner: next, timestamp: e.args.timestamp }, e.args.signature);
          bump("OwnerSet");
        }
        owners.set(a.agent, next);
        break;
      }
      case "OperatorSet":
        a.operators.push({ operator: getAddress(e.args.operator), ...at(e.args.timestamp) });
        if (e.args.timestamp !== 0n) {
          await signed("OperatorSet", { operator: e.args.operator, timestamp: e.args.timestamp }, e.args.signature);
          bump("OperatorSet");
        }
        break;
      case "PolicyUpdated": {
        const p = e.args.policy;
        const numbers = Object.fromEntries(POLICY_NUMBERS.map((k) => [k, (p[k] ?? 0n).toString()])) as Record<
          (typeof POLICY_NUMBERS)[number],
          string
        >;
        const entry = { version: Number(e.args.version), ...numbers, allowlistRoot: p.allowlistRoot, ...at(e.args.timestamp) };
        a.policies.push(entry);
        policies.set(a.agent, entry);
        if (Number(e.args.version) !== a.policies.length)
          report.inconsistencies.push(`${a.agent}: policy version ${e.args.version} is number ${a.policies.length} seen`);
        const fields = Object.fromEntries(POLICY_NUMBERS.map((k) => [k, p[k] ?? 0n]));
        await signed("PolicyUpdated", { ...fields, allowlistRoot: p.allowlistRoot, timestamp: e.args.timestamp }, e.args.signature);
        bump("PolicyUpdated");
        break;
      }
      case "PausedSet": {
        const named = Number(e.args.epoch);
        a.pauses.push({ paused: e.args.paused, epoch: named, ...at(e.args.timestamp) });
        await signed("PausedSet", { paused: e.args.paused, epoch: e.args.epoch, timestamp: e.args.timestamp }, e.args.signature);
        // A pause takes effect whatever epoch it names and starts a new one; a resume names the epoch it resumes.
        if (e.args.paused) bump("PausedSet");
        else if (named !== a.epoch)
          report.inconsistencies.push(`${a.agent}: resume in ${log.transactionHash} names epoch ${named}, rebuilt ${a.epoch}`);
        break;
      }
      case "Withdrawn":
        a.withdrawals.push({
          token: getAddress(e.args.token),
          to: getAddress(e.args.to),
          amount: e.args.amount.toString(),
          ...at(e.args.timestamp),
        });
        await signed(
          "Withdrawn",
          { token: e.args.token, to: e.args.to, amount: e.args.amount, timestamp: e.args.timestamp },
          e.args.signature,
        );
        explain(log.transactionHash).withdrawals.push({
          agent: a.agent,
          token: getAddress(e.args.token),
          to: getAddress(e.args.to),
          amount: e.args.amount,
          index: log.index,
          used: false,
        });
        break;
      case "ApprovalUsed":
        pendingApproval.set(`${a.agent}|${e.args.paymentId}`, {
          approvalId: e.args.approvalId,
          amount: e.args.approvedAmount,
          timestamp: e.args.timestamp,
          signature: e.args.signature,
          txHash: log.transactionHash,
        });
        break;
      case "SwapExecuted": {
        const p = byId.get(`${a.agent}|${e.args.paymentId}`);
        if (!p || p.status !== "authorized" || p.swap) {
          report.inconsistencies.push(
            `${a.agent}: SwapExecuted for ${p ? `a payment already ${p.swap ? "swapped" : p.status}` : "an unknown payment"} ${e.args.paymentId}`,
          );
          break;
        }
        if (e.args.amountOut > BigInt(p.amount))
          report.inconsistencies.push(`${a.agent} ${p.paymentId}: swap bought ${e.args.amountOut}, more than the payment's ${p.amount}`);
        p.swap = {
          txHash: log.transactionHash,
          tokenIn: getAddress(e.args.tokenIn),
          amountIn: e.args.amountIn.toString(),
          amountOut: e.args.amountOut.toString(),
        };
        explain(log.transactionHash).swaps.push({
          agent: a.agent,
          paymentId: p.paymentId,
          amountIn: e.args.amountIn,
          amountOut: e.args.amountOut,
          index: log.index,
          used: false,
        });
        break;
      }
      case "PaymentBlocked":
        // Reason 13 comes from swapForPayment for an authorised payment (PaymentReleased follows): same merchant.
        if (Number(e.args.reason) === BlockReason.SwapSlippageExceeded) {
          const p = byId.get(`${a.agent}|${e.args.paymentId}`);
          if (!p || p.status !== "authorized" || p.merchant !== e.args.merchant) {
            report.inconsistencies.push(
              `${a.agent}: swap_slippage_exceeded for ${p ? `payment ${e.args.paymentId} (${p.status}, merchant ${p.merchant})` : `unknown payment ${e.args.paymentId}`}`,
            );
          }
        }
        a.blocked.push({
          paymentId: e.args.paymentId,
          status: "blocked",
          merchant: e.args.merchant,
          amount: e.args.amount.toString(),
          payTo: null,
          validAfter: null,
          validBefore: null,
          epoch: null,
          leaf: null,
          reason: reasonName(e.args.reason),
          approvalId: null,
          day: today,
          authorizeTx: log.transactionHash,
          authorizeBlock: log.blockNumber,
          settleTx: null,
          releaseTx: null,
        });
        break;
      case "PaymentVoided": {
        const p = byId.get(`${a.agent}|${e.args.paymentId}`);
        if (p && p.status !== "released") report.inconsistencies.push(`${a.agent}: PaymentVoided of ${p.status} payment ${p.paymentId}`);
        voided.add(`${a.agent}|${e.args.paymentId}`);
        a.voided.push({ paymentId: e.args.paymentId, day: today, txHash: log.transactionHash });
        break;
      }
      case "PaymentAuthorized": {
        if (voided.has(`${a.agent}|${e.args.paymentId}`))
          report.inconsistencies.push(`${a.agent}: PaymentAuthorized of voided payment ${e.args.paymentId}`);
        const approval = pendingApproval.get(`${a.agent}|${e.args.paymentId}`);
        pendingApproval.delete(`${a.agent}|${e.args.paymentId}`);
        const leaf: AuditLeaf = {
          entry: e.args.leafEntry,
          dailyCap: e.args.leafDailyCap.toString(),
          payee: getAddress(e.args.leafPayee),
        };
        const p: AuditPayment & { payTo: string } = {
          paymentId: e.args.paymentId,
          status: "authorized",
          merchant: e.args.merchant,
          amount: e.args.amount.toString(),
          payTo: getAddress(e.args.payTo),
          validAfter: Number(e.args.validAfter),
          validBefore: Number(e.args.validBefore),
          epoch: Number(e.args.epoch),
          leaf,
          reason: null,
          approvalId: approval?.approvalId ?? null,
          day: today,
          authorizeTx: log.transactionHash,
          authorizeBlock: log.blockNumber,
          settleTx: null,
          releaseTx: null,
        };
        a.payments.push(p);
        byId.set(`${a.agent}|${p.paymentId}`, p);
        const rebuilt = (spend.get(key) ?? 0n) + BigInt(p.amount);
        spend.set(key, rebuilt);
        if (rebuilt !== e.args.spentToday)
          report.inconsistencies.push(`${a.agent} ${p.paymentId}: spentToday ${e.args.spentToday}, rebuilt ${rebuilt}`);
        a.days[today] = rebuilt.toString();
        if (p.epoch !== a.epoch)
          report.inconsistencies.push(`${a.agent} ${p.paymentId}: authorised under epoch ${p.epoch}, rebuilt ${a.epoch}`);
        replayRules(report, a, p, leaf, policies.get(a.agent), entrySpend, approval !== undefined);
        if (approval) {
          await signed(
            "ApprovalUsed",
            {
              action: "approve",
              approvalId: approval.approvalId,
              merchant: p.merchant,
              payTo: p.payTo,
              amount: approval.amount,
              timestamp: approval.timestamp,
            },
            approval.signature,
          );
        }
        break;
      }
      case "PaymentReleased": {
        const p = byId.get(`${a.agent}|${e.args.paymentId}`);
        if (!p) {
          report.inconsistencies.push(`${a.agent}: PaymentReleased of unknown payment ${e.args.paymentId}`);
          break;
        }
        p.status = "released";
        p.releaseTx = log.transactionHash;
        // The contract gives the amount back only to the day it was authorised on, if that is today.
        const rebuilt = p.day === today ? (spend.get(key) ?? 0n) - BigInt(p.amount) : (spend.get(key) ?? 0n);
        spend.set(key, rebuilt);
        if (rebuilt !== e.args.spentToday)
          report.inconsistencies.push(`${a.agent} ${p.paymentId}: released, spentToday ${e.args.spentToday}, rebuilt ${rebuilt}`);
        a.days[today] = rebuilt.toString();
        break;
      }
    }
  }
  for (const [id, approval] of pendingApproval)
    report.inconsistencies.push(
      `${id.split("|")[0]}: ApprovalUsed in ${approval.txHash} for payment ${id.split("|")[1]}, never authorised`,
    );
  await auditOperatorSets(provider, range, report, chunk);
  for (const log of usedLogs) {
    const e = parseEvent("Usdc", log);
    if (e?.name !== "AuthorizationUsed") continue;
    const agent = getAddress(e.args.authorizer);
    const p = byId.get(`${agent}|${e.args.nonce}`);
    if (!p) {
      report.inconsistencies.push(`${agent}: USDC moved under nonce ${e.args.nonce}, which its policy never authorised`);
      continue;
    }
    if (p.status === "released") report.inconsistencies.push(`${p.paymentId}: settled after its release`);
    p.status = "settled";
    p.settleTx = log.transactionHash;
    explain(log.transactionHash).settlements.push({ agent, paymentId: p.paymentId, index: log.index, used: false });
    // The wallet answers only for a payment of the current epoch, and USDC only strictly inside its validity.
    const epoch = epochAt(agent, log.blockNumber, log.index);
    if (epoch !== p.epoch)
      report.inconsistencies.push(`${agent} ${p.paymentId}: settled under epoch ${epoch}, authorised under ${p.epoch}`);
    const t = await timestampOf(log.blockNumber);
    if (!(t > (p.validAfter ?? 0) && t < (p.validBefore ?? Infinity)))
      report.inconsistencies.push(`${agent} ${p.paymentId}: settled at ${t}, outside its validity (${p.validAfter}, ${p.validBefore})`);
  }
  auditOutflows(
    report,
    outLogs,
    inLogs,
    explanations,
    byId,
    { usdc, weth },
    new Set((opts.swapCounterparties ?? []).map((x) => getAddress(x))),
  );
  return report;
}

/**
 * The rules an authorised payment passed, replayed from its PaymentAuthorized and the policy in force: its leaf admits
 * its merchant, names its payTo (or payee 0), and its entry's daily cap holds the day's authorisations under it (counted
 * as the contract counts them: capped leaves only, a release gives nothing back); the policy was not paused, and the
 * amount is within perTxLimit and, unless the owner approved it, the approval threshold. Fills the leaf and payee summary.
 */
function replayRules(
  report: AuditReport,
  a: AuditAgent,
  p: AuditPayment & { payTo: string },
  leaf: AuditLeaf,
  policy: AuditAgent["policies"][number] | undefined,
  entrySpend: Map<string, bigint>,
  approved: boolean,
): void {
  const amount = BigInt(p.amount);
  const where = `${a.agent} ${p.paymentId}`;
  if (!leafMatches(leaf.entry, p.merchant))
    report.inconsistencies.push(`${where}: leaf ${JSON.stringify(leaf.entry)} does not admit ${p.merchant}`);
  if (leaf.payee !== ZeroAddress && leaf.payee !== p.payTo)
    report.inconsistencies.push(`${where}: pays ${p.payTo}, but its leaf ${JSON.stringify(leaf.entry)} names payee ${leaf.payee}`);
  if (leaf.dailyCap !== "0") {
    const key = `${a.agent}|${p.day}|${leaf.entry}`;
    const spent = (entrySpend.get(key) ?? 0n) + amount;
    entrySpend.set(key, spent);
    if (spent > BigInt(leaf.dailyCap))
      report.inconsistencies.push(
        `${where}: ${spent} authorised under ${JSON.stringify(leaf.entry)} on ${p.day}, past its cap ${leaf.dailyCap}`,
      );
  }
  if (a.pauses.at(-1)?.paused) report.inconsistencies.push(`${where}: authorised while paused`);
  if (policy && amount > BigInt(policy.perTxLimit))
    report.inconsistencies.push(`${where}: ${amount} is above perTxLimit ${policy.perTxLimit} of policy ${policy.version}`);
  if (policy && !approved && amount > BigInt(policy.approvalThreshold))
    report.inconsistencies.push(`${where}: ${amount} is above the approval threshold ${policy.approvalThreshold} with no ApprovalUsed`);

  let summary = a.leaves.find((l) => l.entry === leaf.entry && l.dailyCap === leaf.dailyCap && l.payee === leaf.payee);
  if (!summary) a.leaves.push((summary = { ...leaf, payments: 0, amount: "0", days: {} }));
  summary.payments++;
  summary.amount = (BigInt(summary.amount) + amount).toString();
  if (leaf.dailyCap !== "0") summary.days[p.day] = (entrySpend.get(`${a.agent}|${p.day}|${leaf.entry}`) ?? 0n).toString();
  const payee = (a.payees[p.payTo] ??= { payments: 0, amount: "0", namedBy: [] });
  payee.payments++;
  payee.amount = (BigInt(payee.amount) + amount).toString();
  if (leaf.payee === p.payTo && !payee.namedBy.includes(leaf.entry)) payee.namedBy.push(leaf.entry);
}

/** Every USDC and WETH Transfer out of an agent wallet, explained or reported (see auditOutflows.ts). */
function auditOutflows(
  report: AuditReport,
  outLogs: Log[],
  inLogs: Log[],
  explanations: Map<string, TxExplanations>,
  byId: Map<string, AuditPayment>,
  tokens: { usdc: string; weth: string },
  counterparties: ReadonlySet<string>,
): void {
  for (const log of inLogs) {
    const x = explanations.get(log.transactionHash.toLowerCase());
    const t = transferOf(log);
    if (!x || x.swaps.length === 0 || !t || !report.agents[t.to]) continue;
    x.usdcIn.push({ from: t.from, agent: t.to, amount: t.amount });
  }
  for (const log of [...outLogs].sort(order)) {
    const t = transferOf(log);
    const a = t && report.agents[t.from];
    if (!t || !a) continue;
    const address = getAddress(log.address);
    const symbol = address === tokens.usdc ? "USDC" : address === tokens.weth ? "WETH" : null;
    if (!symbol) continue;
    const out = explainOutflow(
      log,
      t,
      { symbol, address },
      explanations.get(log.transactionHash.toLowerCase()),
      (agent, paymentId) => byId.get(`${agent}|${paymentId}`),
      counterparties,
    );
    a.outflows.push(out);
    if (out.explainedBy) continue;
    const what = `${out.amount} ${symbol} (${address}) left ${a.agent} to ${out.to} in ${out.txHash}`;
    if (t.amount === 0n) report.notes.push(`${what}: moves nothing`);
    else report.inconsistencies.push(`${what}: no authorised settlement, withdrawal or swap explains it`);
  }
}

/**
 * The membership history of every operator the agents had: an operator slot may name an OperatorSet, whose owner
 * changes who relays without any event of the agent's own. An operator key (no code) emits nothing here.
 */
async function auditOperatorSets(
  provider: Provider,
  range: { fromBlock: number; toBlock: number },
  report: AuditReport,
  chunk: number,
): Promise<void> {
  const operators = [...new Set(Object.values(report.agents).flatMap((a) => a.operators.map((o) => o.operator)))];
  if (operators.length === 0) return;
  const topics = [
    [
      eventTopic("OperatorSet", "OperatorAdded"),
      eventTopic("OperatorSet", "OperatorRemoved"),
      eventTopic("OperatorSet", "OwnershipTransferred"),
    ],
  ];
  const logs: Log[] = [];
  for (let i = 0; i < operators.length; i += chunk)
    logs.push(...(await logsOf(provider, { ...range, address: operators.slice(i, i + chunk), topics })));
  for (const log of logs.sort(order)) {
    const e = parseEvent("OperatorSet", log);
    if (!e) continue;
    const address = getAddress(log.address);
    const set = (report.operatorSets[address] ??= { address, owners: [], changes: [], members: [] });
    if (e.name === "OwnershipTransferred") {
      set.owners.push({ owner: getAddress(e.args.newOwner), txHash: log.transactionHash });
    } else if (e.name === "OperatorAdded" || e.name === "OperatorRemoved") {
      const member = getAddress(e.args.account);
      const added = e.name === "OperatorAdded";
      set.changes.push({ member, added, blockNumber: log.blockNumber, txHash: log.transactionHash });
      set.members = added ? [...set.members, member] : set.members.filter((m) => m !== member);
    }
  }
}

type LogRange = { fromBlock: number; toBlock: number; address: string | string[]; topics?: (string | string[] | null)[] };

/** eth_getLogs over a range of any length: LOG_BLOCKS at a time, and a range the node still refuses in halves. */
async function logsOf(provider: Provider, filter: LogRange): Promise<Log[]> {
  const logs: Log[] = [];
  for (let a = filter.fromBlock; a <= filter.toBlock; a += LOG_BLOCKS) {
    logs.push(...(await logsIn(provider, { ...filter, fromBlock: a, toBlock: Math.min(filter.toBlock, a + LOG_BLOCKS - 1) })));
  }
  return logs;
}

async function logsIn(provider: Provider, filter: LogRange): Promise<Log[]> {
  const { fromBlock: from, toBlock: to } = filter;
  try {
    return await provider.getLogs(filter);
  } catch (err) {
    const message = String((err as { message?: unknown } | null)?.message ?? err);
    if (to <= from || !/range|limit|too many|exceed|too large|size|results/i.test(message)) throw err;
    const mid = Math.floor((from + to) / 2);
    return [...(await logsIn(provider, { ...filter, toBlock: mid })), ...(await logsIn(provider, { ...filter, fromBlock: mid + 1 }))];
  }
}
