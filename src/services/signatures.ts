/**
 * Owner signatures checked by the server: EIP-712 typed data from EOAs (ECDSA) or contract wallets (ERC-1271),
 * a timestamp window around the server clock, and single use (the digest is stored once used).
 */
import { Contract, TypedDataEncoder, getAddress, keccak256, toUtf8Bytes, verifyTypedData, type Provider, type TypedDataDomain, type TypedDataField } from "ethers";
import type { Collection } from "mongodb";
import { invalidSignature } from "../errors";
import type { UsedSignatureDoc } from "../store/documents";

const ERC1271_MAGIC = "0x1626ba7e";
const ERC1271_ABI = ["function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)"];

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
    private readonly provider: Provider,
    private readonly used: Collection<UsedSignatureDoc>,
    private readonly windowSeconds: number,
    private readonly now: () => number = () => Math.floor(Date.now() / 1000),
  ) {}

  /** Throws 401 invalid_signature unless the timestamp is fresh and the expected signer signed the typed data. */
  async verify(check: TypedSignatureCheck): Promise<string> {
    this.checkTimestamp(check.timestamp);
    const digest = TypedDataEncoder.hash(check.domain, check.types, check.message);
    if (!(await this.isValidSignature(check.expectedSigner, digest, check))) {
      throw invalidSignature(
        `The signature is not ${check.expectedSigner}'s ${Object.keys(check.types)[0]} over these exact fields.`,
      );
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

  /** Whether a digest was already consumed (for a read-only check before an on-chain step). */
  async isUsed(kind: string, digest: string): Promise<boolean> {
    return (await this.used.countDocuments({ hash: keccak256(toUtf8Bytes(`${kind}:${digest}`)) })) > 0;
  }

  checkTimestamp(timestamp: number): void {
    const skew = Math.abs(this.now() - timestamp);
    if (skew > this.windowSeconds) {
      throw invalidSignature(
        `The signed timestamp ${timestamp} is ${skew} s from the server's clock; it must be within ±${this.windowSeconds} s. Sign again now.`,
      );
    }
  }

  private async isValidSignature(signer: string, digest: string, check: TypedSignatureCheck): Promise<boolean> {
    try {
      const recovered = verifyTypedData(check.domain, check.types, check.message, check.signature);
      if (getAddress(recovered) === getAddress(signer)) return true;
    } catch {
      // not an ECDSA signature: it may still be a contract wallet's
    }
    if ((await this.provider.getCode(signer)) === "0x") return false;
    try {
      const wallet = new Contract(signer, ERC1271_ABI, this.provider);
      return (await wallet.isValidSignature(digest, check.signature)) === ERC1271_MAGIC;
    } catch {
      return false;
    }
  }
}
