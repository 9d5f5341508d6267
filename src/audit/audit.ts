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
import { allowlistRoot, normalizeHost } from "../policy/allowlist";
import { ADDRESS_CHUNK, auditOperatorSets, day, logsOf, order } from "./auditLogs";
import { auditOutflows, auditSettlements, emptyExplanations, type TxExplanations } from "./auditOutflows";
import { replayRules } from "./auditRules";
import { SchemeAudit, X402_CONTRACTS } from "./auditSchemes";
import { CONTRACT_OWNER, SignatureAuditor, type SignedEvent } from "./auditSignatures";
import {
  POLICY_NUMBERS,
  newAgent,
  type AuditLeaf,
  type AuditMerchant,
  type AuditPayment,
  type AuditReport,
  type AuditAgent,
  type EpochCause,
} from "./auditTypes";

export type * from "./auditTypes";

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
    /** The x402 channel contract and the deposit collectors (default: their canonical addresses, X402_CONTRACTS). */
    x402?: { batchSettlement?: string; depositCollectors?: string[] };
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
    report.agents[agent] = newAgent(agent, log.transactionHash);
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
  const batchSettlement = getAddress(opts.x402?.batchSettlement ?? X402_CONTRACTS.batchSettlement);
  const schemes = new SchemeAudit(
    report,
    { epochAt, timestampOf },
    {
      batchSettlement,
      depositCollectors: new Set((opts.x402?.depositCollectors ?? [X402_CONTRACTS.erc3009DepositCollector]).map((x) => getAddress(x))),
    },
  );
  // The service names a merchant by its normalised host name; the contracts take any bytes (not UTF-8 reads as U+FFFD).
  const hostName = (agent: string, merchant: string, paymentId: string, txHash: string) => {
    if (normalizeHost(merchant) !== merchant) {
      report.inconsistencies.push(
        `${agent}: payment ${paymentId} in ${txHash} names merchant ${JSON.stringify(merchant)}, which is no host name`,
      );
    }
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
        const merchants: AuditMerchant[] = p.merchants.map((m) => ({
          entry: m.entry,
          dailyCap: m.dailyCap.toString(),
          payee: getAddress(m.payee),
          requireSignedOffer: m.requireSignedOffer,
        }));
        const root = e.args.allowlistRoot;
        const entry = { version: Number(e.args.version), ...numbers, merchants, allowlistRoot: root, ...at(e.args.timestamp) };
        a.policies.push(entry);
        policies.set(a.agent, entry);
        if (Number(e.args.version) !== a.policies.length)
          report.inconsistencies.push(`${a.agent}: policy version ${e.args.version} is number ${a.policies.length} seen`);
        // The root the contract says it derived, recomputed from the signed entries with the OpenZeppelin library.
        const rebuilt = allowlistRoot(
          merchants.map((m) => m.entry),
          Object.fromEntries(merchants.map((m) => [m.entry, BigInt(m.dailyCap)])),
          Object.fromEntries(merchants.map((m) => [m.entry, m.payee])),
        );
        if (rebuilt !== root)
          report.inconsistencies.push(`${a.agent}: policy ${e.args.version} stored root ${root}, its signed entries give ${rebuilt}`);
        const fields = Object.fromEntries(POLICY_NUMBERS.map((k) => [k, p[k] ?? 0n]));
        const signedMerchants = p.merchants.map((m) => ({
          entry: m.entry,
          dailyCap: m.dailyCap,
          payee: m.payee,
          requireSignedOffer: m.requireSignedOffer,
        }));
        await signed("PolicyUpdated", { ...fields, merchants: signedMerchants, timestamp: e.args.timestamp }, e.args.signature);
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
        hostName(a.agent, e.args.merchant, e.args.paymentId, log.transactionHash);
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
          leaf: e.args.leafEntry
            ? { entry: e.args.leafEntry, dailyCap: e.args.leafDailyCap.toString(), payee: getAddress(e.args.leafPayee) }
            : null,
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
        hostName(a.agent, e.args.merchant, e.args.paymentId, log.transactionHash);
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
        // A deposit's or ceiling's credit (SchemeCredited follows) gives back only what came back; a release, all of it.
        if (schemes.isScheme(a.agent, p.paymentId)) schemes.onRelease(a.agent, p.paymentId, e.args.amount);
        else {
          if (e.args.amount !== BigInt(p.amount))
            report.inconsistencies.push(`${a.agent} ${p.paymentId}: released ${e.args.amount} of ${p.amount}`);
          p.status = "released";
          p.releaseTx = log.transactionHash;
        }
        // The contract gives the amount back only to the day it was authorised on, if that is today.
        const rebuilt = p.day === today ? (spend.get(key) ?? 0n) - e.args.amount : (spend.get(key) ?? 0n);
        spend.set(key, rebuilt);
        if (rebuilt !== e.args.spentToday)
          report.inconsistencies.push(`${a.agent} ${p.paymentId}: released, spentToday ${e.args.spentToday}, rebuilt ${rebuilt}`);
        a.days[today] = rebuilt.toString();
        break;
      }
      case "SchemePayment":
        schemes.onSchemePayment(a, log, e.args);
        break;
      case "SchemeCredited":
        schemes.onSchemeCredited(a, log, e.args);
        break;
    }
  }
  for (const [id, approval] of pendingApproval)
    report.inconsistencies.push(
      `${id.split("|")[0]}: ApprovalUsed in ${approval.txHash} for payment ${id.split("|")[1]}, never authorised`,
    );
  await auditOperatorSets(provider, range, report, chunk);
  report.events += await schemes.readChannels(provider, range, chunk);
  await auditSettlements(report, usedLogs, byId, schemes, explain, { epochAt, timestampOf });
  await auditOutflows(report, outLogs, inLogs, explanations, byId, schemes, {
    tokens: { usdc, weth },
    counterparties: new Set((opts.swapCounterparties ?? []).map((x) => getAddress(x))),
    depositTargets: new Set([...schemes.contracts.depositCollectors, batchSettlement]),
  });
  schemes.checkCredits();
  return report;
}
