/**
 * Failover in seconds: when a peer's heartbeat goes stale (src/store/heartbeats.ts), a live instance takes over its
 * payments in flight at once, not after PAYMENT_LEASE_MS, whatever INSTANCE_ID either runs under:
 *
 * - its agent locks and Idempotency-Keys are taken at once (Leases and IdempotencyService treat a dead holder's lease
 *   as expired), so the agents' next payments and the retries of its requests do not wait for a lease;
 * - its payments in flight are claimed by recovery (recover.ts, started here on each tick that finds a
 *   dead peer with work left, and by awaitQuiet when an agent's next payment takes its lock over) and FENCED ON-CHAIN
 *   before they are finished: a paymentId whose authorisation was never seen mined is voided (voidUnrecordedPayment),
 *   after which its authorisation can only revert; one that is authorised is released (releasePayment), after which the
 *   agent wallet refuses the signed transfer's digest, so no settlement of it can land; the contract refuses the
 *   release once the transfer settled, and the payment is then approved. Then the payment is final and its key answers
 *   with that outcome (afterRecovery -> settleFromPayment).
 *
 * Why a holder that was only stalled (GC pause, frozen VM, partitioned from the store), not dead, can never have its
 * payment sent twice or sent after it was called failed:
 *
 * 1. Before sending anything, a run commits to its leases (authorize.ts begin -> HeldLease.hold, the key's fence):
 *    a conditional update on the lease's fencing token (`fence`, increased by every acquisition, the dead-holder take-over
 *    included). A stalled run that wakes up after its lock or key was taken finds the token moved and stops with nothing
 *    sent; its ledger entry, written before the check, is what the new holder waits for (awaitQuiet) or answers with.
 * 2. A run past its commit has written its paymentId to the ledger first. The survivor never sends that payment again:
 *    it only voids or releases that paymentId, and each of those is one contract call that is atomic against the
 *    stalled run's authorise and against the seller's settle. Whatever order they land in, the paymentId is either
 *    voided (the stalled authorise reverts), released (the stalled run's signed transfer is refused by the wallet, so
 *    its seller cannot settle it) or settled once (the release reverts; the payment is approved). The EIP-3009 nonce
 *    is the paymentId and can be used once, so a payment moves USDC at most once whatever either instance does.
 * 3. The stalled run's own later writes read the chain too (release.ts): it ends on the same outcome.
 * So a false "dead" verdict (a peer slower than HEARTBEAT_STALE_MS to beat) costs that peer its payments in flight
 * (failed, budget released, nothing paid), never money; HEARTBEAT_STALE_MS trades that against failover time.
 */
import type { ServiceContext } from "../services/context";
import { IN_FLIGHT } from "./phases";

/**
 * Takes over the payments in flight of `dead` peers (the heartbeats' onDead): answers true when none is left in flight
 * (a payment left for a later turn: its authorisation is still pending, or the chain did not answer).
 */
export async function takeOverDead(
  ctx: Pick<ServiceContext, "store" | "logger">,
  recover: () => Promise<number>,
  dead: readonly string[],
): Promise<boolean> {
  const inFlight = { phase: { $in: [...IN_FLIGHT] }, instanceId: { $in: [...dead] } };
  const before = await ctx.store.payments.find(inFlight, { projection: { txnId: 1 } }).toArray();
  if (!before.length) return true;
  ctx.logger.warn({ dead, payments: before.length }, "instances stopped beating: finishing their payments in flight");
  const finished = await recover();
  const left = await ctx.store.payments.find(inFlight, { projection: { txnId: 1 } }).toArray();
  ctx.logger.warn({ dead, finished, left: left.length }, "took over the payments of stopped instances");
  return left.length === 0;
}
