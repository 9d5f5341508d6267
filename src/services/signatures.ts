/**
 * Owner signatures checked by the server: EIP-712 typed data, a timestamp window around the server clock, and single
 * use (the digest is stored once used). Whether a signature is the signer's is asked of the chain, through the
 * factory's `isValidSignatureNow` (OpenZeppelin SignatureChecker, the check every contract uses): EOAs, ERC-1271
 * contract wallets (a Safe) and EIP-7702 accounts are judged exactly as the contracts will judge them, so the server
 * never consumes a signature the chain would refuse, nor refuses one it would accept.
 */
import { TypedDataEncoder, keccak256, toUtf8Bytes, type TypedDataDomain, type TypedDataField } from "ethers";
import type { Collection } from "mongodb";
import { invalidSignature } from "../errors";
import type { UsedSignatureDoc } from "../store/documents";

/** The chain's signature check: (signer, digest, signature) -> valid. */
export type SignatureCheck = (signer: string, digest: string, signature: string) => Promise<boolean>;

export interface TypedSignatureCheck {
  kind: string;
  domain: TypedDataDomain;
  types: Record<string, TypedDataField[]>;
  message: Record<string, unknown>;
  signature: string;
  expectedSigner: string;
  timestamp: number;
}

export class SignatureService {
  constructor(
    private readonly check: SignatureCheck,
    private readonly used: Collection<UsedSignatureDoc>,
    private readonly windowSeconds: number,
    private readonly now: () => number = () => Math.floor(Date.now() / 1000),
  ) {}

  /**
   * The one way an owner signature is accepted: verified (401 invalid_signature unless the timestamp is fresh and the
   * expected signer signed the typed data), then `beforeUse` (a refusal there does nothing and leaves the signature
   * usable), then marked used under its kind (a second use of the same signed message is refused).
   */
  async verifyAndConsume(check: TypedSignatureCheck, beforeUse?: () => Promise<void>): Promise<void> {
    const digest = await this.verify(check);
    if (beforeUse) await beforeUse();
    await this.consume(check.kind, digest);
  }

  /**
   * Throws 401 invalid_signature unless the timestamp is fresh and the expected signer signed the typed data.
   * An approval verifies first and consumes right before its payment is sent (src/payments/approve.ts); everything else
   * uses verifyAndConsume.
   */
  async verify(check: TypedSignatureCheck): Promise<string> {
    this.checkTimestamp(check.timestamp);
    const digest = TypedDataEncoder.hash(check.domain, check.types, check.message);
    if (!(await this.isValidSignature(check.expectedSigner, digest, check.signature))) {
      throw invalidSignature(`The signature is not ${check.expectedSigner}'s ${Object.keys(check.types)[0]} over these exact fields.`);
    }
    return digest;
  }

  /** Marks a verified digest used; a second use of the same signed message is refused. */
  async consume(kind: string, digest: string): Promise<void> {
    const hash = keccak256(toUtf8Bytes(`${kind}:${digest}`));
    const before = await this.used.findOneAndUpdate(
      { hash },
      { $setOnInsert: { hash, kind, usedAt: new Date() } },
      { upsert: true, returnDocument: "before" },
    );
    if (before) throw invalidSignature("This signature was already used; sign again with a new timestamp.");
  }

  checkTimestamp(timestamp: number): void {
    const skew = Math.abs(this.now() - timestamp);
    if (skew > this.windowSeconds) {
      throw invalidSignature(
        `The signed timestamp ${timestamp} is ${skew} s from the server's clock; it must be within ±${this.windowSeconds} s. Sign again now.`,
      );
    }
  }

  private async isValidSignature(signer: string, digest: string, signature: string): Promise<boolean> {
    if (!/^0x([0-9a-fA-F]{2})*$/.test(signature)) return false;
    return this.check(signer, digest, signature);
  }
}
