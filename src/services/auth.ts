/** Owner sign-in with Sign-In with Ethereum (EIP-4361): a one-time nonce, then an owner API key. */
import { randomBytes } from "node:crypto";
import { getAddress, hashMessage, isAddress } from "ethers";
import { parseSiweMessage, validateSiweMessage } from "viem/siwe";
import { badRequest, forbidden, invalidSignature } from "../errors";
import type { ServiceContext } from "./context";

const NONCE_TTL_MS = 10 * 60 * 1000;

export class AuthService {
  constructor(private readonly ctx: ServiceContext) {}

  async nonce(address: string): Promise<{ nonce: string }> {
    const nonce = randomBytes(16).toString("hex");
    const now = new Date();
    await this.ctx.store.siweNonces.insertOne({
      nonce,
      address,
      createdAt: now,
      expiresAt: new Date(now.getTime() + NONCE_TTL_MS),
      usedAt: null,
    });
    return { nonce };
  }

  /**
   * SIWE sign-in. With registration closed (GENESIS_OPEN=false), only owners SpendGate already knows, owners on
   * OWNER_ALLOWLIST, or a request carrying the operator's REGISTRATION_TOKEN get a key: a closed service is closed to
   * new owners too (every owner key can create agents, and every agent costs the operator gas).
   */
  async verify(
    message: string,
    signature: string,
    opts: { registrar?: boolean } = {},
  ): Promise<{ apiKey: string; ownerAddress: string; expiresAt: string }> {
    const fields = parseSiweMessage(message);
    if (!fields.address || !fields.nonce || !fields.domain || !fields.uri) {
      throw badRequest("The message is not an EIP-4361 (SIWE) message.");
    }
    // viem's parser takes any 40 hex digits; a broken EIP-55 checksum must be the client's error, not a 500.
    if (!isAddress(fields.address)) throw badRequest("The message's address has an invalid EIP-55 checksum.");
    const base = new URL(this.ctx.urls.base);
    const valid = validateSiweMessage({ message: fields, domain: base.host, nonce: fields.nonce, time: new Date() });
    if (!valid || fields.uri.replace(/\/+$/, "") !== base.origin || fields.chainId !== this.ctx.config.chainId) {
      throw invalidSignature(
        `The SIWE message must name domain ${base.host}, URI ${base.origin} and chain ${this.ctx.config.networks.map((n) => n.chainId).join(" or ")}, and not be expired.`,
      );
    }
    const address = getAddress(fields.address);
    if (!(await this.signedBy(address, message, signature))) throw invalidSignature(`The message is not signed by ${address}.`);
    if (!this.ctx.config.genesisOpen && !opts.registrar && !this.ctx.config.ownerAllowlist.includes(address)) {
      if (!(await this.ctx.store.owners.findOne({ address }))) {
        throw forbidden(
          "Registration is closed: this owner is not known here. Ask the operator to add you to OWNER_ALLOWLIST, or sign in with the registration token.",
        );
      }
    }

    const now = new Date();
    // The nonce is used once: only the request that flips usedAt from null gets a key.
    const claimed = await this.ctx.store.siweNonces.findOneAndUpdate(
      { nonce: fields.nonce, address, usedAt: null, expiresAt: { $gt: now } },
      { $set: { usedAt: now } },
      { returnDocument: "after" },
    );
    if (!claimed) throw invalidSignature("The sign-in nonce is unknown, expired or already used; ask for a new one.");

    const expiresAt = new Date(now.getTime() + this.ctx.config.ownerKeyTtlSeconds * 1000);
    const apiKey = await this.ctx.keys.issue({ role: "owner", ownerAddress: address, expiresAt });
    await this.ctx.store.owners.updateOne(
      { address },
      { $set: { lastSignInAt: now }, $setOnInsert: { address, createdAt: now } },
      { upsert: true },
    );
    return { apiKey, ownerAddress: address, expiresAt: expiresAt.toISOString() };
  }

  /**
   * The owner's EIP-191 signature of the message, judged by the chain's SignatureChecker (EOA, ERC-1271, EIP-7702),
   * exactly as the contracts judge the owner's other signatures.
   */
  private async signedBy(address: string, message: string, signature: string): Promise<boolean> {
    if (!/^0x([0-9a-fA-F]{2})+$/.test(signature)) return false;
    try {
      return await this.ctx.chain.factory.isValidSignatureNow(address, hashMessage(message), signature);
    } catch {
      return false;
    }
  }
}
