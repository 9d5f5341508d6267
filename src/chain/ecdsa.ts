/**
 * secp256k1 signatures of 32-byte digests exactly as ethers' SigningKey.sign makes them (RFC 6979 nonces, low s, the
 * same r, s and yParity): through libsecp256k1's native binding (the `secp256k1` package's prebuilt addon, about 40 µs
 * a signature on this machine) when it loads, else through ethers itself (@noble/curves in JavaScript, about 370 µs).
 * A payment makes two (the operator's authorisation and the agent's transfer or voucher). test/chain/ecdsa.test.ts
 * holds the two byte for byte.
 *
 * The signer of a digest is recovered the same way (a payment under a signed offer recovers two: the offer's and the
 * receipt's; @noble/curves takes about 1.5 ms each in JavaScript, the binding about 50 µs).
 */
import { SigningKey, getAddress, keccak256, recoverAddress } from "ethers";

/** What a signature is read as here: its parts and ethers' 65-byte serialisation. */
export interface DigestSignature {
  r: string;
  s: string;
  yParity: 0 | 1;
  serialized: string;
}

interface NativeSecp256k1 {
  ecdsaSign(msg32: Uint8Array, seckey: Uint8Array): { signature: Uint8Array; recid: number };
  ecdsaRecover(sig64: Uint8Array, recid: number, msg32: Uint8Array, compressed: boolean): Uint8Array;
}

function loadNative(): NativeSecp256k1 | null {
  try {
    // Loaded only if present and built for this platform (an optional fast path, so not a static import).
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require("secp256k1/bindings") as NativeSecp256k1;
  } catch {
    return null; // no prebuilt addon for this platform, and none built at install: ethers signs
  }
}

const native = loadNative();
/** The key's secret as bytes, per SigningKey (the binding takes bytes; ethers keeps hex). */
const secrets = new WeakMap<SigningKey, Buffer>();

function nativeSign(binding: NativeSecp256k1, key: SigningKey, digest: string): DigestSignature {
  let secret = secrets.get(key);
  if (!secret) {
    secret = Buffer.alloc(32); // its own memory, not a slice of Node's shared pool
    secret.write(key.privateKey.slice(2), "hex");
    secrets.set(key, secret);
  }
  const msg = Buffer.from(digest.slice(2), "hex");
  if (msg.length !== 32) throw new Error("a digest to sign is 32 bytes");
  const { signature, recid } = binding.ecdsaSign(msg, secret);
  const hex = Buffer.from(signature).toString("hex");
  const yParity = recid & 1 ? 1 : 0;
  return { r: `0x${hex.slice(0, 64)}`, s: `0x${hex.slice(64)}`, yParity, serialized: `0x${hex}${yParity ? "1c" : "1b"}` };
}

function ethersSign(key: SigningKey, digest: string): DigestSignature {
  const sig = key.sign(digest);
  return { r: sig.r, s: sig.s, yParity: sig.yParity, serialized: sig.serialized };
}

/** The binding is used only when it signs a known digest with a known key exactly as ethers does (checked once). */
function agrees(): boolean {
  if (!native) return false;
  const key = new SigningKey(`0x${"4c".repeat(32)}`);
  const digest = `0x${"a7".repeat(32)}`;
  try {
    return nativeSign(native, key, digest).serialized === ethersSign(key, digest).serialized;
  } catch {
    return false;
  }
}

/** Whether signatures go through the native binding. */
export const nativeSigning = agrees();

/**
 * The curve's order n, as 64 lowercase hex digits. For a digest at or above it (a keccak output is, once in about
 * 2^128) the two derive their RFC 6979 nonce from it differently: valid signatures both, but not the same bytes, so
 * ethers signs those.
 */
const ORDER = "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141";

/** `key`'s signature of `digest` (0x + 32 bytes). */
export function signDigest(key: SigningKey, digest: string, useNative = nativeSigning): DigestSignature {
  return useNative && native && digest.slice(2).toLowerCase() < ORDER ? nativeSign(native, key, digest) : ethersSign(key, digest);
}

/** A signature this module recovers from: 0x and 65 bytes, r ‖ s ‖ v. */
const SIGNATURE_65 = /^0x[0-9a-fA-F]{130}$/;
const DIGEST_32 = /^0x[0-9a-fA-F]{64}$/;

function nativeRecover(binding: NativeSecp256k1, digest: string, signature: string): string | null {
  if (!DIGEST_32.test(digest) || !SIGNATURE_65.test(signature)) return null;
  const v = parseInt(signature.slice(130), 16);
  // v as viem and ethers read it: 0 or 1, or 27 or 28.
  const recid = v === 0 || v === 27 ? 0 : v === 1 || v === 28 ? 1 : -1;
  if (recid < 0) return null;
  let pub: Uint8Array;
  try {
    pub = binding.ecdsaRecover(Buffer.from(signature.slice(2, 130), "hex"), recid, Buffer.from(digest.slice(2), "hex"), false);
  } catch {
    return null; // r or s out of range, or no point: the caller's library says why
  }
  return getAddress(`0x${keccak256(pub.subarray(1)).slice(-40)}`);
}

/** The binding recovers only when it recovers known signatures exactly as ethers does (checked once). */
function recoversAlike(): boolean {
  if (!native) return false;
  try {
    const key = new SigningKey(`0x${"4c".repeat(32)}`);
    for (const digest of [`0x${"a7".repeat(32)}`, `0x${"00".repeat(32)}`, `0x${"ff".repeat(32)}`]) {
      const sig = key.sign(digest).serialized;
      if (nativeRecover(native, digest, sig) !== recoverAddress(digest, sig)) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/** Whether signers are recovered through the native binding. */
export const nativeRecovering = recoversAlike();

/**
 * The address whose key signed `digest` (0x + 32 bytes) as `signature` (0x + 65 bytes, v 0, 1, 27 or 28), through the
 * native binding; null when this path does not take it (no binding, another form, or nothing recoverable): the caller
 * then asks the library whose answer it follows, which recovers or says why not.
 */
export function recoverDigestSigner(digest: string, signature: string, useNative = nativeRecovering): string | null {
  return useNative && native ? nativeRecover(native, digest, signature) : null;
}
