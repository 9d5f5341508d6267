/**
 * An auditor's view from the chain's logs alone: no calldata, no database, only eth_getLogs (and block timestamps).
 * From the factory's AgentDeployed it finds every agent, then reads their events and USDC's AuthorizationUsed of
 * their wallets, and rebuilds every payment decision, every policy version with its signed timestamp, pauses, owners,
 * operators, withdrawals and each UTC day's spend, checked against the spentToday the contract reported.
 */
import { getAddress, zeroPadValue, type Log, type Provider } from "ethers";
import { eventTopic, parseEvent } from "../chain/contracts";
import { BlockReason, reasonName } from "../chain/reasons";

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
] as const;

export type AuditPaymentStatus = "authorized" | "settled" | "released" | "blocked";

export interface AuditPayment {
  paymentId: string;
  status: AuditPaymentStatus;
  merchant: string;
  amount: string;
  payTo: string | null;
  validBefore: number | null;
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
  pauses: { paused: boolean; timestamp: number; txHash: string }[];
  withdrawals: { token: string; to: string; amount: string; timestamp: number; txHash: string }[];
  /** Authorised payments by paymentId, in order. */
  payments: AuditPayment[];
  /** Refusals (a blocked paymentId reserves nothing, so each refusal is its own entry). */
  blocked: AuditPayment[];
  /** Payment ids voided before any authorisation of them landed (PaymentVoided): none can ever be authorised. */
  voided: { paymentId: string; day: string; txHash: string }[];
  /** UTC day (YYYY-MM-DD) -> spend at the end of the day's last event (authorised minus released that day). */
  days: Record<string, string>;
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
  /** Every place where the rebuilt state disagrees with what an event reported (empty when consistent). */
  inconsistencies: string[];
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
  opts: { factory: string; usdc: string; fromBlock: number; toBlock?: number; addressChunk?: number },
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
  };

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
    };
  }
  const agents = Object.keys(report.agents);
  if (agents.length === 0) return report;

  // Nodes cap the addresses and topics of one request (Infura: 5,000 in all): ADDRESS_CHUNK agents at a time.
  const chunk = Math.max(1, opts.addressChunk ?? ADDRESS_CHUNK);
  const agentLogs: Log[] = [];
  const usedLogs: Log[] = [];
  for (let i = 0; i < agents.length; i += chunk) {
    const some = agents.slice(i, i + chunk);
    const [own, used] = await Promise.all([
      logsOf(provider, { ...range, address: some }),
      logsOf(provider, {
        ...range,
        address: opts.usdc,
        topics: [eventTopic("Usdc", "AuthorizationUsed"), some.map((a) => zeroPadValue(a, 32))],
      }),
    ]);
    agentLogs.push(...own);
    usedLogs.push(...used);
  }
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
  const pendingApproval = new Map<string, string>(); // paymentId -> approvalId (ApprovalUsed precedes PaymentAuthorized)
  const voided = new Set<string>(); // agent|paymentId
  for (const log of [...agentLogs].sort(order)) {
    const a = report.agents[getAddress(log.address)];
    const e = parseEvent("SpendPolicy", log);
    if (!a || !e) continue;
    const at = (timestamp: bigint) => ({ timestamp: Number(timestamp), txHash: log.transactionHash });
    const today = day(await timestampOf(log.blockNumber));
    const key = `${a.agent}|${today}`;
    switch (e.name) {
      case "OwnerSet":
        a.owners.push({ owner: getAddress(e.args.owner), ...at(e.args.timestamp) });
        break;
      case "OperatorSet":
        a.operators.push({ operator: getAddress(e.args.operator), ...at(e.args.timestamp) });
        break;
      case "PolicyUpdated": {
        const p = e.args.policy;
        const numbers = Object.fromEntries(POLICY_NUMBERS.map((k) => [k, (p[k] ?? 0n).toString()])) as Record<
          (typeof POLICY_NUMBERS)[number],
          string
        >;
        a.policies.push({ version: Number(e.args.version), ...numbers, allowlistRoot: p.allowlistRoot, ...at(e.args.timestamp) });
        if (Number(e.args.version) !== a.policies.length)
          report.inconsistencies.push(`${a.agent}: policy version ${e.args.version} is number ${a.policies.length} seen`);
        break;
      }
      case "PausedSet":
        a.pauses.push({ paused: e.args.paused, ...at(e.args.timestamp) });
        break;
      case "Withdrawn":
        a.withdrawals.push({
          token: getAddress(e.args.token),
          to: getAddress(e.args.to),
          amount: e.args.amount.toString(),
          ...at(e.args.timestamp),
        });
        break;
      case "ApprovalUsed":
        pendingApproval.set(e.args.paymentId, e.args.approvalId);
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
          validBefore: null,
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
        const p: AuditPayment = {
          paymentId: e.args.paymentId,
          status: "authorized",
          merchant: e.args.merchant,
          amount: e.args.amount.toString(),
          payTo: getAddress(e.args.payTo),
          validBefore: Number(e.args.validBefore),
          reason: null,
          approvalId: pendingApproval.get(e.args.paymentId) ?? null,
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
  await auditOperatorSets(provider, range, report, chunk);
  for (const log of usedLogs) {
    const e = parseEvent("Usdc", log);
    if (e?.name !== "AuthorizationUsed") continue;
    const p = byId.get(`${getAddress(e.args.authorizer)}|${e.args.nonce}`);
    if (!p) {
      report.inconsistencies.push(
        `${getAddress(e.args.authorizer)}: USDC moved under nonce ${e.args.nonce}, which its policy never authorised`,
      );
      continue;
    }
    if (p.status === "released") report.inconsistencies.push(`${p.paymentId}: settled after its release`);
    p.status = "settled";
    p.settleTx = log.transactionHash;
  }
  return report;
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
