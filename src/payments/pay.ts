/**
 * POST /pay and the MCP pay tool, composed of the payment's steps: admit (the policy's allowlist, before any value
 * moves), quote (the seller's 402), decide (the contract's simulation), then one of three outcomes: blocked
 * (refuse.ts: recorded on-chain as PaymentBlocked), pending (pending.ts: waits for the owner) or approved (execute.ts:
 * authorised on-chain, paid through x402, settled). Payments of one agent run one at a time, across instances.
 */
import { toBaseUnits } from "../amounts";
import { AppError, LeaseLostError } from "../errors";
import { NO_LEAF } from "../policy/allowlist";
import type { PayAnswer, PayRequest } from "../schemas/payments";
import type { AgentDoc } from "../store/documents";
import type { Fence } from "../store/leases";
import { phaseTimer } from "../util/timer";
import type { Principal } from "../principal";
import { pickQuote } from "../x402/pick";
import { sellerOptions } from "../x402/buyer";
import { type PaymentContext, type Room, fencesOf, ledgerBase, merchantOf } from "./context";
import { type Admission, noPolicyError } from "./decide";
import { type ExecuteInput, execute } from "./execute";
import { idempotencyCaller } from "./idempotency";
import { newTxnId } from "./outcomes";
import { requestApproval } from "./pending";
import { quote } from "./quote";
import { awaitQuiet } from "./recover";
import { type Refusal, refuse } from "./refuse";
import { type Blocked, type PaymentResult, answerOf, refused } from "./result";
import { NEEDS_LOCK, payVoucherHere } from "./schemes/channel";
import { approvalNeedsExact, payScheme } from "./schemes/scheme";
import { sign } from "./sign";
import { type SwapCheck, swapForPayment } from "./swap";

/**
 * A payment, run once per Idempotency-Key when there is one. Every refusal or failure the service explains is an
 * answer, kept under the key like a success, unless it is transient (`retryable`: nothing was paid and it may go
 * otherwise later), which frees the key (idempotency.ts).
 */
export async function payOnce(
  room: Room,
  principal: Principal,
  /** `input.agentAddress`'s document: read by the caller just now, its read under way, or a function that reads it. */
  agent: AgentSource,
  input: PayRequest,
  key?: string,
): Promise<PayAnswer & { replayed: boolean }> {
  // A payment of the agent that runs or waits here already is waited for, and a document read before that wait would
  // be read again after it (pay): a document only this payment's turn may read is then read once its turn comes.
  const read = agentReader(agent, typeof agent === "function" && room.ctx.agentLock.busy(input.agentAddress));
  const attempt = async (scope?: string, keyFence?: Fence): Promise<PayAnswer> => {
    try {
      return answerOf(await pay(room, read, input, scope, keyFence));
    } catch (err) {
      // A lost lease paid nothing and is no answer to keep: the key is another run's, or free to run again.
      if (err instanceof AppError && !(err instanceof LeaseLostError)) return answerOf(refused(err));
      throw err;
    }
  };
  // One trace and one count per payment run (an answer replayed under its key is neither).
  const t = room.ctx.telemetry;
  const run = (scope?: string, keyFence?: Fence) => t.payment(input.agentAddress, "pay", () => attempt(scope, keyFence).then(t.counted));
  return key ? room.idempotency.run(idempotencyCaller(principal), key, input, run) : { ...(await run()), replayed: false };
}

/**
 * The paying agent's document: read already, its read under way, or a function that reads it when called (each call a
 * new read, checked as the caller checks it).
 */
export type AgentSource = AgentDoc | Promise<AgentDoc> | (() => Promise<AgentDoc>);

/** The agent's document as a request read it, and when (performance.now()). */
export interface AgentRead {
  doc: AgentDoc;
  at: number;
}

/** Reads the agent's document once: the first call starts the read, unless it began already. */
export interface AgentReader {
  (): Promise<AgentRead>;
  /** Whether the read has begun. */
  started(): boolean;
}

/**
 * The agent's document of `source` as a payment reads it: started at once, or with `defer`, only when first asked for.
 * A read that fails is answered by the run that awaits it (none when an Idempotency-Key replays its answer).
 */
function agentReader(source: AgentSource, defer: boolean): AgentReader {
  let reading: Promise<AgentRead> | undefined;
  const begin = async (): Promise<AgentRead> => {
    const doc = await (typeof source === "function" ? source() : source);
    // How long ago the read ended, once the lock is held, decides whether its policy mark may admit the payment (pay).
    return { doc, at: performance.now() };
  };
  const read = Object.assign(() => (reading ??= observed(begin())), { started: () => reading !== undefined });
  if (!defer) void read();
  return read;
}

/**
 * One payment of the agent `input.agentAddress`, under its agent lock. `read` reads its document as the request reads
 * it, once (agentReader): usually under way already, beside the lock's acquisition.
 */
export async function pay(
  room: Room,
  read: AgentReader,
  input: PayRequest,
  idempotencyScope?: string,
  keyFence?: Fence,
): Promise<PaymentResult> {
  const merchant = merchantOf(input.serviceUrl);
  // A voucher from this instance's copy of the agent's channel to this seller runs without the agent's lock, its
  // channel's compare-and-set its fence (docs/schemes.md): the agent's read, then the voucher's record and its outcome.
  // Anything else it would meet (a deposit, a refusal, a copy another instance moved past) runs under the lock below.
  if (room.channelCopies.likelyVoucher(input.agentAddress, merchant) && (!input.schemes || input.schemes.includes("batch-settlement"))) {
    const paid = await room.ctx.agentLock.runHere(input.agentAddress, () =>
      payHere(room, read, input, merchant, idempotencyScope, keyFence),
    );
    if (paid !== NEEDS_LOCK) return paid;
  }
  // The policy (the cached copy while the agent's policySeq has not moved, the chain otherwise) is read beside the lock's
  // acquisition, from the agent's document as the request read it. Used only when that document and this read are at
  // most EARLY_ADMISSION_MS old once the lock is held; otherwise (a wait for the lock or for an Idempotency-Key, a
  // take-over) the document is read again and the payment admitted from it, so a pause relayed meanwhile counts.
  // Not started when another payment of the agent runs or waits here: this one waits for it, and would read twice.
  const recent = (at: number) => performance.now() - at <= EARLY_ADMISSION_MS;
  const admitting = room.ctx.agentLock.busy(input.agentAddress)
    ? undefined
    : observed(read().then(({ doc, at }) => (recent(at) ? room.decisions.admit(doc, merchant, { fresh: false }) : undefined)));
  // Fenced: what this task sends goes out only after its commit held the lock's fence (authorize.ts begin), so a lock
  // handed over from the agent's payment before runs with no store command of its own (DistributedMutex.run).
  return room.ctx.agentLock.run(
    input.agentAddress,
    async (lock) => {
      // A document not read yet (agentReader's deferred read) is read now, under the lock: it is not read again, but
      // after a take-over, whose wait for the payments in flight comes after it.
      const underLock = !read.started();
      const { doc, at } = await read();
      if (doc.address !== input.agentAddress) throw new Error(`the agent read (${doc.address}) is not the payer (${input.agentAddress})`);
      if (lock.tookOver) await awaitQuiet(room, doc.address);
      // Only when the document was recent at its arrival too: then `admitting` is that document's admission.
      const early = admitting && !lock.tookOver && recent(at) ? (admitting as Promise<Admission>) : undefined;
      const current =
        early || (underLock && !lock.tookOver) ? doc : ((await room.ctx.store.agents.findOne({ address: doc.address })) ?? doc);
      return payLocked(
        room,
        paymentContext(current, input, merchant, idempotencyScope, { lock, key: keyFence }),
        toBaseUnits(input.maxAmount),
        early,
      );
    },
    { fenced: true },
  );
}

/** A voucher without the agent's lock (pay), or NEEDS_LOCK with nothing written or sent. */
async function payHere(
  room: Room,
  read: AgentReader,
  input: PayRequest,
  merchant: string,
  idempotencyScope: string | undefined,
  keyFence: Fence | undefined,
): Promise<PaymentResult | typeof NEEDS_LOCK> {
  const { ctx, decisions } = room;
  // The seller's 402 is asked beside the agent's read, usually still under way, when the agent's last payment to this
  // seller here went through an open channel (so the policy admitted it) and the policy as this instance last read it
  // was in force and not paused: an unpaid request, which signs and pays nothing. Its answer counts only once the read
  // admits the payment and its operator, as below; otherwise it is dropped, and the agent's next payment to the seller
  // asks only after its read, under the lock (docs/schemes.md).
  const asking = () => ctx.telemetry.step("quote", () => quote(room, { agent: { address: input.agentAddress }, ...sellerOf(input) }));
  const likely = room.channelCopies.likelyVoucher(input.agentAddress, merchant) && decisions.lastReadActive(input.agentAddress);
  const early = likely ? observed(asking()) : undefined;
  let agent: AgentDoc;
  let admission: Admission;
  try {
    const { doc, at } = await read();
    if (doc.address !== input.agentAddress) throw new Error(`the agent read (${doc.address}) is not the payer (${input.agentAddress})`);
    // A document read before a wait in this process's queue is read again, as under the lock: a pause counts.
    agent = performance.now() - at <= EARLY_ADMISSION_MS ? doc : ((await ctx.store.agents.findOne({ address: doc.address })) ?? doc);
    admission = await ctx.telemetry.step("admit", () => decisions.admit(agent, merchant, { fresh: false }));
    if (admission.status === "admitted") await decisions.checkOperator(agent, admission.policy, admission.cached);
  } catch (err) {
    room.channelCopies.unlikely(input.agentAddress, merchant);
    throw err;
  }
  if (admission.status !== "admitted") {
    room.channelCopies.unlikely(input.agentAddress, merchant);
    return NEEDS_LOCK;
  }
  const pc = paymentContext(agent, input, merchant, idempotencyScope, { key: keyFence });
  const quoted = await (early ?? asking());
  if (quoted.kind === "refused") return quoted;
  const q = quoted.quote;
  if (q?.scheme !== "batch-settlement" || q.amount > toBaseUnits(input.maxAmount)) return NEEDS_LOCK;
  // Refused under the lock (payLocked), as any payment the owner's requireSignedOffer refuses.
  if (!q.offer && (await decisions.requiresSignedOffer(agent, admission))) return NEEDS_LOCK;
  const paid = await payVoucherHere(room, pc, q, admission);
  // A failed payment reads the policy again next time (a stale copy fails once, not in a loop).
  if (paid !== NEEDS_LOCK && paid.kind === "refused") decisions.forget(agent);
  return paid;
}

/** The payment's context, for `agent` as admitted. */
function paymentContext(
  agent: AgentDoc,
  input: PayRequest,
  merchant: string,
  idempotencyScope: string | undefined,
  fences: PaymentContext["fences"],
): PaymentContext {
  return { agent, idempotencyScope, merchant, intent: input.intent, ...sellerOf(input), fences };
}

/** The request the payment makes of its seller, as the payment's context carries it. */
function sellerOf(input: PayRequest): Pick<PaymentContext, "serviceUrl" | "seller" | "schemes"> {
  // As URL parsing spells it (punycode host, no look-alike characters): what the owner reads is what is requested.
  const serviceUrl = new URL(input.serviceUrl).href;
  return {
    serviceUrl,
    seller: { url: serviceUrl, method: input.method, body: input.method === "POST" ? input.body : undefined },
    ...(input.schemes ? { schemes: input.schemes } : {}),
  };
}

/** How old the policy read beside the lock's acquisition may be when the lock is held (pay). */
const EARLY_ADMISSION_MS = 25;

async function payLocked(room: Room, pc: PaymentContext, maxAmount: bigint, admitted?: Promise<Admission>): Promise<PaymentResult> {
  const { ctx, decisions } = room;
  const timer = phaseTimer();
  const { step } = ctx.telemetry;
  // An agent whose last payment to this seller went through an open channel is likely to pay a voucher, which needs
  // neither the gas allowance nor the simulation at the ceiling: both wait for the seller's quote then.
  const likelyVoucher =
    room.channelCopies.likelyVoucher(pc.agent.address, pc.merchant) && (!pc.schemes || pc.schemes.includes("batch-settlement"));
  // The owner's gas allowance is read beside the policy and the quote; a 429 still comes only where it did (below,
  // before anything is signed or sent), and never for a payment refused before.
  let gasChecked = likelyVoucher ? undefined : observed(ctx.gas.check(pc.agent.ownerAddress));
  // admit
  const admission = await step("admit", () => admitted ?? decisions.admit(pc.agent, pc.merchant, { fresh: false }));
  timer.mark("policy");
  if (admission.status === "no_policy") return refused(noPolicyError(pc.agent));
  await decisions.checkOperator(pc.agent, admission.policy, admission.status === "admitted" && admission.cached);
  if (admission.status === "not_allowed")
    return refuse(room, pc, { amount: maxAmount, amountIs: "maxAmount", reason: "merchant_not_allowed", proof: NO_LEAF });

  // Simulated at the caller's ceiling beside the seller's quote: every limit only tightens as the amount grows, so a
  // price under a ceiling the policy allows is allowed too, and the usual payment waits for no simulation after it.
  const atCeiling = likelyVoucher ? undefined : decisions.atCeiling(pc.agent, pc.merchant, admission, maxAmount);
  // quote
  const quoted = await step("quote", () => quote(room, pc));
  timer.mark("quote");
  if (quoted.kind === "refused") return quoted;
  let q = quoted.quote;
  // The owner's requireSignedOffer, kept by the service: a seller that signs no offer is refused before anything is signed.
  if (!quoted.offers.offers.length && (await decisions.requiresSignedOffer(pc.agent, admission))) {
    return refuse(room, pc, {
      amount: q?.amount ?? maxAmount,
      ...(q ? {} : { amountIs: "maxAmount" as const }),
      reason: "signed_offer_required",
      proof: null,
      detail: signedOfferDetail(quoted.offers.sent),
    });
  }
  if (!q)
    return refuse(room, pc, {
      amount: maxAmount,
      amountIs: "maxAmount",
      reason: "unsupported_payment",
      proof: null,
      detail: quoted.detail,
    });
  if (q.amount > maxAmount) return refuse(room, pc, { amount: q.amount, reason: "max_amount_exceeded", proof: null });
  if (q.scheme !== "exact") {
    const paid = await payScheme(room, pc, q, admission);
    if (paid !== "exact") return paid;
    // Above the approval threshold: an owner approves one exact transfer, so the seller's exact offer, if any.
    const exact = pickQuote(q.paymentRequired, {
      ...sellerOptions(room.ctx.config),
      payer: pc.agent.address,
      schemes: ["exact"],
      offers: quoted.offers,
    });
    if (!exact) return approvalNeedsExact(q);
    if (exact.amount > maxAmount) return refuse(room, pc, { amount: exact.amount, reason: "max_amount_exceeded", proof: null });
    q = exact;
  }

  // Signing overlaps any simulation left; a signature the policy refuses is dropped, never sent anywhere.
  const signed = step("sign", () => sign(room, pc.agent, q));
  signed.catch(() => undefined);
  // decide: the wallet's USDC is read in the simulation's call (a swap quote, only when it lacks some, alongside it).
  const decision = await step("decide", () => decisions.decide(pc.agent, pc.merchant, admission, q.amount, q.requirement.payTo, atCeiling));
  timer.mark("simulate");
  // Read again after a cached refusal: what it found is checked like the first read.
  if (decision.policy !== admission.policy) await decisions.checkOperator(pc.agent, decision.policy, false);
  if (decision.status === "block") {
    return refuse(room, pc, { amount: q.amount, reason: decision.reason, proof: decision.proof, payTo: q.requirement.payTo });
  }
  if (decision.status === "requires_approval") return requestApproval(room, pc, q, maxAmount);
  const swap = await swapStep(room, pc, decision.swap, q.amount);
  timer.mark("swapQuote");
  if ("kind" in swap) return swap;
  const paid = execute(room, {
    txnId: newTxnId(),
    base: ledgerBase(pc, null),
    seller: pc.seller,
    quote: q,
    proof: decision.proof,
    dailyBudget: decision.policy.dailyBudget,
    timer,
    signed,
    fences: fencesOf(pc),
    gasChecked: (gasChecked ??= observed(ctx.gas.check(pc.agent.ownerAddress))),
    usdcHeld: (await decision.usdc) ?? undefined,
    ...swap,
  });
  // A failed payment reads the policy (and the operator set) again next time: a stale copy (another operator, a key
  // taken out of the set) fails once, not in a loop.
  void paid.then(
    (r) => (r.kind === "refused" ? decisions.forget(pc.agent) : undefined),
    () => decisions.forget(pc.agent),
  );
  return paid;
}

/** Why a seller was refused under requireSignedOffer: it signed nothing, or nothing that verifies. */
export function signedOfferDetail(sent: number): string {
  return sent
    ? `the seller's 402 carries ${sent} signed offer(s), none with a signature that verifies for this host`
    : "the seller's 402 carries no signed offer (x402 offer-receipt)";
}

/** `p`, whose rejection is handled where it is awaited (never unobserved before then). */
function observed<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

/**
 * Policy, then swap, then x402 settlement: a shortfall nothing can buy is refused (insufficient_funds, off-chain)
 * before any transaction; otherwise what execute runs once the payment is authorised, if anything.
 */
export async function swapStep(
  room: Room,
  pc: PaymentContext,
  check: Promise<SwapCheck>,
  amount: bigint,
  approval: Pick<Refusal, "approvalId" | "txnId"> = {},
): Promise<Blocked | Pick<ExecuteInput, "swap">> {
  const c = await check;
  if (c.kind === "refuse") return refuse(room, pc, { amount, reason: "insufficient_funds", proof: null, detail: c.detail, ...approval });
  if (c.kind === "none") return {};
  const a = pc.agent;
  const target = {
    agent: a.address,
    ownerAddress: a.ownerAddress,
    policyAddress: a.policyAddress,
    merchant: pc.merchant,
    intent: pc.intent,
  };
  return { swap: (p) => swapForPayment(room, { ...p, ...target }) };
}
