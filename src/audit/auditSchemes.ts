/**
 * The x402 scheme payments of the event-only audit (DESIGN.md 13, docs/schemes-wallet.md): channel deposits
 * (`batch-settlement`) and upto ceilings, rebuilt from events alone.
 * - SchemePayment, just after a PaymentAuthorized (or PaymentBlocked) of the same paymentId and transaction, names the
 *   payment's scheme and ref (the channel id, or the Permit2 digest); the amount counts in the windows like any payment.
 * - A deposit lands in one transaction of the channel contract: USDC AuthorizationUsed by the wallet under the
 *   collector's nonce keccak256(channelId, salt) (not the paymentId), the Transfer from the wallet to the deposit
 *   collector, then the channel contract's Deposited(channelId, ..., amount). The authorised deposit of that channel and
 *   amount explains both; it may land only in its epoch, strictly inside its validity, and before its credit.
 * - A ceiling's USDC leaves by Permit2's transferFrom for the upto proxy (no AuthorizationUsed): a Transfer from the
 *   wallet to the ceiling's payTo (PaymentAuthorized payTo, the witness `to`) is explained by an open ceiling (authorised
 *   before it, not yet credited) with that much left, in its epoch and between its validAfter and deadline.
 * - PaymentReleased then SchemeCredited give back what came back: for a channel at most what the channel contract
 *   refunded or paid out by withdrawal to the wallet (Refunded, WithdrawFinalized) plus deposits that never landed; for
 *   a ceiling exactly the part not settled (the Permit2 allowance left).
 */
import { Interface, type Log, type Provider } from "ethers";
import { logsOf, order } from "./auditLogs";
import type { AuditAgent, AuditPayment, AuditReport } from "./auditTypes";

/** The x402 contracts at their canonical addresses (the same on Base and on the embedded chain, @x402/evm 2.27). */
export const X402_CONTRACTS = {
  batchSettlement: "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003",
  erc3009DepositCollector: "0x4020806089470a89826cB9fB1f4059150b550004",
} as const;

/** The channel contract's events the audit reads (IX402BatchSettlement). */
const CHANNEL_EVENTS = new Interface([
  "event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 newBalance)",
  "event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount)",
  "event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount)",
]);
const CHANNEL_TOPICS = ["Deposited", "Refunded", "WithdrawFinalized"].flatMap((n) => CHANNEL_EVENTS.getEvent(n)?.topicHash ?? []);

export type SchemeName = "batch-settlement" | "upto";
/** ISpendPolicy.Scheme, by its value. */
const SCHEME_NAMES = ["exact", "batch-settlement", "upto"] as const;

/** What a deposit or a ceiling became (AuditPayment.scheme). */
export interface AuditScheme {
  name: SchemeName;
  /** The channel id (batch-settlement) or the Permit2 digest the wallet signs (upto). */
  ref: string;
  /** What left the wallet under it: the deposit once landed, or the sum settled under the ceiling. */
  moved: string;
  /** What SchemeCredited gave back to the windows (null: not credited). */
  credited: string | null;
  creditTx: string | null;
}

/** A channel the wallet deposited into, from its own and the channel contract's events. */
export interface AuditChannel {
  channelId: string;
  /** Its deposits' paymentIds, in order. */
  deposits: string[];
  /** Authorised deposits, landed deposits, what the channel paid back to the wallet, and what was credited. */
  authorized: string;
  landed: string;
  returned: string;
  credited: string;
}

/** A deposit landed in a transaction, for the outflow it explains (auditOutflows.ts). */
export interface DepositLanding {
  agent: string;
  paymentId: string;
  amount: bigint;
  index: number;
  used: boolean;
}

type Position = { blockNumber: number; index: number };
const before = (a: Position, b: Position) => order(a, b) < 0;
const keyOf = (agent: string, id: string) => `${agent}|${id.toLowerCase()}`;

/** A Deposited of one of the agents' channels. */
interface Landing {
  channelId: string;
  amount: bigint;
  log: Log;
  used: boolean;
}

interface Entry {
  p: AuditPayment & { scheme: AuditScheme };
  opened: Position;
}

interface Credit {
  at: Position;
  amount: bigint;
  returned: bigint;
}

/** Checks of one payment's validity at a log: epoch and time, as the wallet and the token hold them. */
export interface Checks {
  epochAt(agent: string, block: number, index: number): number;
  timestampOf(block: number): Promise<number>;
}

/** The scheme side of one audit: fed the agents' scheme events in order, then the channel contract's. */
export class SchemeAudit {
  /** agent|paymentId -> an authorised deposit or ceiling and where its SchemePayment was logged. */
  private readonly payments = new Map<string, Entry>();
  private readonly channels = new Map<string, { agent: string; c: AuditChannel; entries: Entry[] }>(); // agent|channelId
  private readonly credits = new Map<string, Credit>(); // agent|paymentId
  private readonly released = new Map<string, bigint>(); // agent|paymentId -> the PaymentReleased just before a credit
  private readonly returns = new Map<string, { amount: bigint; at: Position }[]>(); // channelId -> paid back to the payer
  private readonly landings = new Map<string, Landing[]>(); // txHash -> Deposited of the agents' channels

  constructor(
    private readonly report: AuditReport,
    private readonly checks: Checks,
    readonly contracts: { batchSettlement: string; depositCollectors: ReadonlySet<string> },
  ) {}

  /** SchemePayment: names the scheme of the PaymentAuthorized (or PaymentBlocked) just logged in the same transaction. */
  onSchemePayment(a: AuditAgent, log: Log, args: { paymentId: string; scheme: bigint; ref: string; authorized: boolean }): void {
    const name = SCHEME_NAMES[Number(args.scheme)];
    const where = `${a.agent} ${args.paymentId}`;
    const p = args.authorized
      ? a.payments.find((x) => x.paymentId === args.paymentId && x.authorizeTx === log.transactionHash)
      : a.blocked.findLast((x) => x.paymentId === args.paymentId && x.authorizeTx === log.transactionHash);
    if (!p || p.scheme || name === undefined || name === "exact") {
      this.report.inconsistencies.push(
        `${where}: SchemePayment (${name ?? `scheme ${args.scheme}`}) in ${log.transactionHash} follows no ${args.authorized ? "authorisation" : "refusal"} of it`,
      );
      return;
    }
    p.scheme = { name, ref: args.ref, moved: "0", credited: null, creditTx: null };
    if (!args.authorized) return;
    const entry: Entry = { p: p as Entry["p"], opened: log };
    this.payments.set(keyOf(a.agent, p.paymentId), entry);
    if (name === "batch-settlement") {
      const key = keyOf(a.agent, args.ref);
      let ch = this.channels.get(key);
      if (!ch) {
        ch = {
          agent: a.agent,
          c: { channelId: args.ref, deposits: [], authorized: "0", landed: "0", returned: "0", credited: "0" },
          entries: [],
        };
        (a.channels ??= []).push(ch.c);
        this.channels.set(key, ch);
      }
      ch.c.deposits.push(p.paymentId);
      ch.entries.push(entry);
      ch.c.authorized = (BigInt(ch.c.authorized) + BigInt(p.amount)).toString();
    }
  }

  /** Whether `paymentId` is a deposit or a ceiling (its PaymentReleased is a credit: SchemeCredited follows). */
  isScheme(agent: string, paymentId: string): boolean {
    return this.payments.has(keyOf(agent, paymentId));
  }

  /** PaymentReleased of a deposit or a ceiling: the part credited, which SchemeCredited must repeat. */
  onRelease(agent: string, paymentId: string, amount: bigint): void {
    this.released.set(keyOf(agent, paymentId), amount);
  }

  /** SchemeCredited: once per payment, of its scheme and ref, after a PaymentReleased of the same amount. */
  onSchemeCredited(
    a: AuditAgent,
    log: Log,
    args: { paymentId: string; scheme: bigint; ref: string; amount: bigint; returned: bigint },
  ): void {
    const key = keyOf(a.agent, args.paymentId);
    const p = this.payments.get(key)?.p;
    const where = `${a.agent} ${args.paymentId}`;
    const released = this.released.get(key);
    this.released.delete(key);
    if (!p || p.scheme.name !== SCHEME_NAMES[Number(args.scheme)] || p.scheme.ref !== args.ref) {
      this.report.inconsistencies.push(
        `${where}: SchemeCredited in ${log.transactionHash} of no authorised deposit or ceiling of that ref`,
      );
      return;
    }
    if (p.scheme.credited !== null) this.report.inconsistencies.push(`${where}: credited twice (${log.transactionHash})`);
    if (released !== args.amount)
      this.report.inconsistencies.push(`${where}: credited ${args.amount} with ${released ?? "no"} PaymentReleased before it`);
    if (args.amount > BigInt(p.amount)) this.report.inconsistencies.push(`${where}: credited ${args.amount}, more than its ${p.amount}`);
    p.scheme.credited = args.amount.toString();
    p.scheme.creditTx = log.transactionHash;
    p.releaseTx = log.transactionHash;
    p.status = "credited";
    this.credits.set(key, { at: log, amount: args.amount, returned: args.returned });
    const ch = p.scheme.name === "batch-settlement" ? this.channels.get(keyOf(a.agent, p.scheme.ref)) : undefined;
    if (ch) ch.c.credited = (BigInt(ch.c.credited) + args.amount).toString();
  }

  /** The channel ids of every authorised deposit. */
  channelIds(): string[] {
    return [...new Set([...this.channels.values()].map((c) => c.c.channelId))];
  }

  /** Reads the channel contract's Deposited, Refunded and WithdrawFinalized of the agents' channels. */
  async readChannels(provider: Provider, range: { fromBlock: number; toBlock: number }, chunk: number): Promise<number> {
    const ids = this.channelIds();
    const topics = CHANNEL_TOPICS;
    let read = 0;
    for (let i = 0; i < ids.length; i += chunk) {
      const logs = await logsOf(provider, { ...range, address: this.contracts.batchSettlement, topics: [topics, ids.slice(i, i + chunk)] });
      read += logs.length;
      for (const log of logs.sort(order)) {
        const e = CHANNEL_EVENTS.parseLog(log);
        if (!e) continue;
        const channelId = (e.args.channelId as string).toLowerCase();
        const amount = e.args.amount as bigint;
        if (e.name === "Deposited") {
          const tx = log.transactionHash.toLowerCase();
          this.landings.set(tx, [...(this.landings.get(tx) ?? []), { channelId, amount, log, used: false }]);
        } else {
          // The channel pays refunds and withdrawals to its payer: the wallet, for every channel it authorised.
          this.returns.set(channelId, [...(this.returns.get(channelId) ?? []), { amount, at: log }]);
        }
      }
    }
    return read;
  }

  /**
   * A USDC AuthorizationUsed of the wallet under a nonce that is no paymentId: a deposit landing if the channel
   * contract's Deposited of one of the wallet's channels follows in the same transaction. Returns the landing (for the
   * outflow it explains), the anomaly when no authorised deposit of the channel explains it, or null (no deposit).
   */
  async landDeposit(agent: string, used: Log): Promise<DepositLanding | string | null> {
    const landing = (this.landings.get(used.transactionHash.toLowerCase()) ?? []).find(
      (x) => !x.used && x.log.index > used.index && this.channels.has(keyOf(agent, x.channelId)),
    );
    if (!landing) return null;
    landing.used = true;
    const ch = this.channels.get(keyOf(agent, landing.channelId));
    if (!ch) return null;
    const p = ch.entries.find((x) => x.p.scheme.moved === "0" && BigInt(x.p.amount) === landing.amount && before(x.opened, used))?.p;
    const where = `${agent} channel ${ch.c.channelId}`;
    if (!p) return `${where}: a deposit of ${landing.amount} landed in ${used.transactionHash}, which no authorised deposit of it explains`;
    p.scheme.moved = p.amount;
    p.settleTx = used.transactionHash;
    if (p.status === "authorized") p.status = "settled";
    ch.c.landed = (BigInt(ch.c.landed) + landing.amount).toString();
    const credit = this.credits.get(keyOf(agent, p.paymentId));
    if (credit && before(credit.at, used)) this.report.inconsistencies.push(`${agent} ${p.paymentId}: deposit landed after its credit`);
    await this.checkValidity(agent, p, used, true);
    return { agent, paymentId: p.paymentId, amount: landing.amount, index: used.index, used: false };
  }

  /**
   * An outflow no settlement, withdrawal, swap or deposit explains: the open ceiling of `agent` to `t.to` with at least
   * `t.amount` left at that log, if any (its paymentId), its settled amount grown by it.
   */
  async ceilingFor(agent: string, t: { to: string; amount: bigint }, log: Log): Promise<string | null> {
    for (const [key, { p, opened }] of this.payments) {
      if (!key.startsWith(`${agent}|`) || p.scheme.name !== "upto" || p.payTo !== t.to) continue;
      const credit = this.credits.get(key);
      // Open: authorised before this transfer and not credited yet (the credit zeroes Permit2's allowance).
      if (!before(opened, log) || (credit && before(credit.at, log))) continue;
      if (BigInt(p.scheme.moved) + t.amount > BigInt(p.amount)) continue;
      p.scheme.moved = (BigInt(p.scheme.moved) + t.amount).toString();
      p.settleTx ??= log.transactionHash;
      if (p.status === "authorized") p.status = "settled";
      await this.checkValidity(agent, p, log, false);
      return p.paymentId;
    }
    return null;
  }

  /** After the outflows: every credit against what came back (channels) or what was left (ceilings). */
  checkCredits(): void {
    for (const ch of this.channels.values()) {
      const returns = this.returns.get(ch.c.channelId.toLowerCase()) ?? [];
      ch.c.returned = returns.reduce((s, r) => s + r.amount, 0n).toString();
      for (const id of ch.c.deposits) {
        const credit = this.credits.get(keyOf(ch.agent, id));
        if (!credit) continue;
        // What the wallet counted as back when it credited: refunds and withdrawals so far, and deposits that never landed.
        const back = returns.filter((r) => before(r.at, credit.at)).reduce((s, r) => s + r.amount, 0n);
        const neverLanded = ch.entries.filter((d) => d.p.scheme.moved === "0").reduce((s, d) => s + BigInt(d.p.amount), 0n);
        if (credit.returned > back + neverLanded)
          this.report.inconsistencies.push(
            `${ch.agent} ${id}: credited with ${credit.returned} back from channel ${ch.c.channelId}, but it paid back ${back} (and ${neverLanded} never landed)`,
          );
      }
      if (BigInt(ch.c.credited) > BigInt(ch.c.returned) + BigInt(ch.c.authorized) - BigInt(ch.c.landed))
        this.report.inconsistencies.push(`${ch.agent} channel ${ch.c.channelId}: ${ch.c.credited} credited, more than came back`);
    }
    for (const [key, credit] of this.credits) {
      const p = this.payments.get(key)?.p;
      if (p?.scheme.name !== "upto") continue;
      const settled = BigInt(p.scheme.moved); // every transfer explained by it came before its credit
      if (settled + credit.returned !== BigInt(p.amount))
        this.report.inconsistencies.push(
          `${key.split("|")[0]} ${p.paymentId}: ceiling ${p.amount} credited with ${credit.returned} left, but ${settled} settled under it`,
        );
    }
  }

  /** The wallet answers only in the payment's epoch; USDC takes a deposit strictly inside its validity, Permit2 and the
   * proxy a ceiling from its validAfter to its deadline. */
  private async checkValidity(agent: string, p: AuditPayment, log: Log, strict: boolean): Promise<void> {
    const epoch = this.checks.epochAt(agent, log.blockNumber, log.index);
    const what = p.scheme?.name === "upto" ? "settled under" : "landed";
    if (epoch !== p.epoch)
      this.report.inconsistencies.push(`${agent} ${p.paymentId}: ${what} under epoch ${epoch}, authorised under ${p.epoch}`);
    const t = await this.checks.timestampOf(log.blockNumber);
    const after = p.validAfter ?? 0;
    const until = p.validBefore ?? Infinity;
    if (strict ? !(t > after && t < until) : !(t >= after && t <= until))
      this.report.inconsistencies.push(`${agent} ${p.paymentId}: ${what} at ${t}, outside its validity (${after}, ${until})`);
  }
}
