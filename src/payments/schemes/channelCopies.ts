/**
 * This instance's copies of the batch-settlement channels it paid through (each as last written or read here), so a
 * voucher needs no read of its channel before its first write.
 *
 * A copy is a guess, never an authority: every write of a channel is a compare-and-set on its version (channel.ts), so
 * a copy another writer has moved past (another instance's payment, a close, a credit, recovery) fails its first
 * write, is dropped, and the payment reads the channel from the store and starts again, with nothing signed or sent.
 * Writers here drop the copy too, so the common case costs no such retry.
 */
import type { ChannelDoc } from "../../store/channelDocuments";

const MAX_COPIES = 10_000;

export class ChannelCopies {
  /** Vouchers this process is sending now (vouchers.ts: another run waits for them, recovery leaves them alone). */
  readonly sending = new Set<string>();
  private readonly copies = new Map<string, ChannelDoc>();
  /** agent|merchant -> channelId of the open channels kept. */
  private readonly open = new Map<string, string>();

  get(channelId: string): ChannelDoc | undefined {
    return this.copies.get(channelId);
  }

  /**
   * The copy of `channelId` when it can decide a voucher alone: every voucher it records has its outcome written (this
   * instance wrote them, and knows the charge they leave). A copy read with vouchers in doubt cannot.
   */
  settled(channelId: string): ChannelDoc | undefined {
    const copy = this.copies.get(channelId);
    return copy && !copy.unsettled?.length ? copy : undefined;
  }

  /** Keeps `doc` as written or read (a new version of the channel, never an older one). */
  keep(doc: ChannelDoc): void {
    const known = this.copies.get(doc.channelId);
    if (known && known.version > doc.version) return;
    if (!known && this.copies.size >= MAX_COPIES) this.clear();
    this.copies.set(doc.channelId, doc);
    const key = pairOf(doc.agentAddress, doc.merchant);
    if (doc.status === "open") this.open.set(key, doc.channelId);
    else if (this.open.get(key) === doc.channelId) this.open.delete(key);
  }

  drop(channelId: string): void {
    const doc = this.copies.get(channelId);
    if (!doc) return;
    this.copies.delete(channelId);
    const key = pairOf(doc.agentAddress, doc.merchant);
    if (this.open.get(key) === channelId) this.open.delete(key);
  }

  /**
   * Whether the agent's last payment to `merchant` here went through an open channel: its next one is likely a voucher,
   * so the payment path leaves out the reads only an exact payment uses until the seller's quote says which it is.
   */
  likelyVoucher(agentAddress: string, merchant: string): boolean {
    return this.open.has(pairOf(agentAddress, merchant));
  }

  /**
   * The agent's next payment to `merchant` is not taken for a voucher: this one was not admitted (its policy or its
   * operator refused it, or its read failed), so the next asks the seller only after its own read (pay.ts, payHere).
   */
  unlikely(agentAddress: string, merchant: string): void {
    this.open.delete(pairOf(agentAddress, merchant));
  }

  private clear(): void {
    this.copies.clear();
    this.open.clear();
  }
}

const pairOf = (agentAddress: string, merchant: string) => `${agentAddress.toLowerCase()}|${merchant}`;
