/**
 * Webhook signing secrets: generated here, shown once, kept encrypted (AES-256-GCM, like the agents' keys) under a key
 * derived from WALLET_ENCRYPTION_KEY, and decrypted only to sign a delivery.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from "node:crypto";

export interface Sealed {
  ciphertext: string; // base64
  iv: string; // base64
  tag: string; // base64
}

/** The secrets' key: its own derivation of the wallet encryption key, so neither key can decrypt the other's data. */
export function webhookSecretKey(walletEncryptionKeyHex: string): Buffer {
  return createHash("sha256")
    .update(`spendgate webhook secrets\n${walletEncryptionKeyHex.replace(/^0x/, "").toLowerCase()}`)
    .digest();
}

export const newWebhookSecret = () => `whsec_${randomBytes(32).toString("base64url")}`;

/** Encrypts `plain`, bound to `context` (the endpoint id): a ciphertext moved to another endpoint does not open. */
export function seal(key: Buffer, context: string, plain: string): Sealed {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(context));
  const ciphertext = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  return { ciphertext: ciphertext.toString("base64"), iv: iv.toString("base64"), tag: cipher.getAuthTag().toString("base64") };
}

export function open(key: Buffer, context: string, sealed: Sealed): string {
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(sealed.iv, "base64"));
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
  return Buffer.concat([decipher.update(Buffer.from(sealed.ciphertext, "base64")), decipher.final()]).toString("utf8");
}

/** The SpendGate-Signature header: `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">` (the style of payment processors). */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const v1 = createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex");
  return `t=${unixSeconds},v1=${v1}`;
}
