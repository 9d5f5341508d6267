/**
 * ethers' keccak-256, computed by the `keccak` package's JavaScript (its unrolled permutation): 3 to 4 times faster
 * than @noble/hashes, which ethers uses by default, on the short inputs a payment hashes (EIP-712 structs and domains,
 * the transactions it signs, checksummed addresses; about 0.8 ms of a payment's CPU went to keccak before). ethers'
 * keccak256 lets an application register its implementation; every ethers hash in this process then uses it.
 *
 * Registered only once it hashes known inputs (every length around the sponge's 136-byte block, and more) exactly as
 * @noble/hashes does; otherwise ethers keeps its own. test/chain/keccak.test.ts holds the two equal on random inputs.
 * viem (the x402 libraries) keeps @noble/hashes: only ethers' calls change.
 */
import { keccak_256 } from "@noble/hashes/sha3";
import { keccak256 } from "ethers";

interface KeccakHash {
  update(data: Buffer): KeccakHash;
  digest(): Buffer;
}

function loadKeccak(): ((algorithm: "keccak256") => KeccakHash) | null {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require("keccak/js") as (algorithm: "keccak256") => KeccakHash;
  } catch {
    return null;
  }
}

/** keccak-256 of `data` through the `keccak` package (null when it does not load). */
export const fastKeccak: ((data: Uint8Array) => Uint8Array) | null = (() => {
  const create = loadKeccak();
  if (!create) return null;
  return (data: Uint8Array) =>
    create("keccak256")
      .update(Buffer.from(data.buffer, data.byteOffset, data.byteLength))
      .digest();
})();

/** Inputs of every length from 0 to 300 bytes (both sides of one and two 136-byte blocks), and 1,000 and 5,000. */
function vectors(): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const n of [...Array.from({ length: 301 }, (_, i) => i), 1_000, 5_000]) {
    const bytes = new Uint8Array(n);
    for (let i = 0; i < n; i++) bytes[i] = (i * 131 + n * 7 + 1) & 0xff;
    out.push(bytes);
  }
  return out;
}

function agrees(fn: (data: Uint8Array) => Uint8Array): boolean {
  try {
    return vectors().every((v) => Buffer.from(fn(v)).equals(Buffer.from(keccak_256(v))));
  } catch {
    return false;
  }
}

let registered: boolean | undefined;

/**
 * Registers the fast keccak-256 as ethers' (once; idempotent), when it agrees with @noble/hashes on every known input.
 * Whether ethers now uses it.
 */
export function useFastKeccak(): boolean {
  if (registered !== undefined) return registered;
  registered = fastKeccak !== null && agrees(fastKeccak);
  if (registered) keccak256.register(fastKeccak as (data: Uint8Array) => Uint8Array);
  return registered;
}
