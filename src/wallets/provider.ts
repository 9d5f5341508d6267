/**
 * Key custody. Agent keys are generated here, encrypted at rest with AES-256-GCM and decrypted only to sign.
 * WalletProvider is the seam where a hosted custody API can replace the local provider.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { SigningKey, TypedDataEncoder, Wallet } from "ethers";
import { keccakHex } from "../chain/keccak";
import { signDigest } from "../chain/ecdsa";
import { getAddress } from "../chain/rpc/checksum";
import type { Collection } from "mongodb";
import type { WalletKeyDoc } from "../store/documents";

export interface TypedDataToSign {
  domain: Record<string, unknown>;
  types: Record<string, { name: string; type: string }[]>;
  primaryType: string;
  message: Record<string, unknown>;
}

// EIP-712 type strings and domain separators are hashed once, not on every signature (the same few serve all payments).
const encoders = new Map<string, TypedDataEncoder>();
const domains = new Map<string, string>();
function encoderOf(types: Record<string, { name: string; type: string }[]>): TypedDataEncoder {
  const k = JSON.stringify(types);
  let encoder = encoders.get(k);
  if (!encoder) {
    if (encoders.size >= 100) encoders.clear();
    encoders.set(k, (encoder = TypedDataEncoder.from(types)));
  }
  return encoder;
}

function domainHash(domain: Record<string, unknown>): string {
  // JSON keeps fields apart whatever they contain (a seller names the token's domain); bigints become strings.
  const k = JSON.stringify(Object.entries(domain).map(([name, v]) => [name, typeof v, String(v)]));
  let hash = domains.get(k);
  if (hash === undefined) {
    if (domains.size >= 1_000) domains.clear();
    domains.set(k, (hash = TypedDataEncoder.hashDomain(domain)));
  }
  return hash;
}

/** What x402's exact EVM client needs from a buyer (a viem-compatible signer). */
export interface AgentSigner {
  address: `0x${string}`;
  signTypedData(data: TypedDataToSign): Promise<`0x${string}`>;
}

export interface WalletProvider {
  /** Creates a new agent wallet and returns its checksummed address. */
  create(): Promise<string>;
  /** A signer for an agent wallet this provider holds. */
  signer(address: string): Promise<AgentSigner>;
}

export class LocalWalletProvider implements WalletProvider {
  private readonly key: Buffer;
  /** Encrypted key documents (never the keys) kept, so a payment does not read its key from the database again. */
  private readonly sealed = new Map<string, WalletKeyDoc>();

  constructor(
    private readonly keys: Collection<WalletKeyDoc>,
    encryptionKeyHex: string,
  ) {
    this.key = Buffer.from(encryptionKeyHex.replace(/^0x/, ""), "hex");
    if (this.key.length !== 32) throw new Error("WALLET_ENCRYPTION_KEY must be 32 bytes");
  }

  async create(): Promise<string> {
    const wallet = Wallet.createRandom();
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(wallet.address.toLowerCase()));
    const ciphertext = Buffer.concat([cipher.update(Buffer.from(wallet.privateKey.slice(2), "hex")), cipher.final()]);
    await this.keys.insertOne({
      address: wallet.address,
      provider: "local",
      ciphertext: ciphertext.toString("base64"),
      iv: iv.toString("base64"),
      tag: cipher.getAuthTag().toString("base64"),
      createdAt: new Date(),
    });
    return wallet.address;
  }

  async signer(address: string): Promise<AgentSigner> {
    const checksummed = getAddress(address);
    const doc = this.sealed.get(checksummed) ?? (await this.keys.findOne({ address: checksummed }));
    if (!doc) throw new Error(`no key held for ${checksummed}`);
    if (!this.sealed.has(checksummed)) {
      if (this.sealed.size >= 10_000) this.sealed.clear();
      this.sealed.set(checksummed, doc);
    }
    // A SigningKey, not a Wallet: a Wallet derives the public key (an elliptic-curve multiplication) to know its address.
    const key = new SigningKey(this.decrypt(doc));
    return {
      address: checksummed as `0x${string}`,
      signTypedData: ({ domain, types, message }) =>
        Promise.resolve().then(() => {
          const { EIP712Domain: _ignored, ...rest } = types as Record<string, { name: string; type: string }[]>;
          // What Wallet.signTypedData signs, less its ENS lookups (a name where an address belongs fails to encode).
          const digest = keccakHex(`0x1901${domainHash(domain).slice(2)}${encoderOf(rest).hash(message).slice(2)}`);
          return signDigest(key, digest).serialized as `0x${string}`;
        }),
    };
  }

  private decrypt(doc: WalletKeyDoc): string {
    const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(doc.iv, "base64"));
    decipher.setAAD(Buffer.from(doc.address.toLowerCase()));
    decipher.setAuthTag(Buffer.from(doc.tag, "base64"));
    const plain = Buffer.concat([decipher.update(Buffer.from(doc.ciphertext, "base64")), decipher.final()]);
    return "0x" + plain.toString("hex");
  }
}
