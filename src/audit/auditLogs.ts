/**
 * The audit's reads of the chain: eth_getLogs over any range (chunked, halved when a node refuses), log order, UTC days,
 * and the membership history of the OperatorSets an agent's operator slot named.
 */
import { getAddress, type Log, type Provider } from "ethers";
import { eventTopic, parseEvent } from "../chain/contracts";
import type { AuditReport } from "./auditTypes";

/** Blocks per eth_getLogs call: nodes cap the range (Base providers at 2,000 to 10,000 blocks). */
const LOG_BLOCKS = 2000;
/** Agents (addresses, or topics) per eth_getLogs call. */
export const ADDRESS_CHUNK = 100;

/** The UTC day (YYYY-MM-DD) of a block timestamp. */
export const day = (ts: number) => new Date(ts * 1000).toISOString().slice(0, 10);
/** Chain order of logs. */
export const order = (a: Pick<Log, "blockNumber" | "index">, b: Pick<Log, "blockNumber" | "index">) =>
  a.blockNumber - b.blockNumber || a.index - b.index;

/**
 * The membership history of every operator the agents had: an operator slot may name an OperatorSet, whose owner
 * changes who relays without any event of the agent's own. An operator key (no code) emits nothing here.
 */
export async function auditOperatorSets(
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

export type LogRange = { fromBlock: number; toBlock: number; address: string | string[]; topics?: (string | string[] | null)[] };

/** eth_getLogs over a range of any length: LOG_BLOCKS at a time, and a range the node still refuses in halves. */
export async function logsOf(provider: Provider, filter: LogRange): Promise<Log[]> {
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
