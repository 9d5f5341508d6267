/**
 * ethers' keccak-256, computed by the `keccak` package's JavaScript sponge (its unrolled permutation): 3 to 4 times faster
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

/** The `keccak` package's sponge (its `lib/keccak.js`, pinned at 3.0.4): no stream around it, unlike its `keccak/js`. */
interface KeccakSponge {
  initialize(rate: number, capacity: number): void;
  absorb(data: Uint8Array): void;
  absorbLastFewBits(bits: number): void;
  squeeze(length: number): Buffer;
}

function loadSponge(): (new () => KeccakSponge) | null {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require("keccak/lib/keccak") as new () => KeccakSponge;
  } catch {
    return null;
  }
}

/** keccak-256 of `data` through the `keccak` package (null when it does not load). */
export const fastKeccak: ((data: Uint8Array) => Uint8Array) | null = (() => {
  const Sponge = loadSponge();
  if (!Sponge) return null;
  return (data: Uint8Array) => {
    const sponge = new Sponge();
    sponge.initialize(1088, 512); // keccak-256: a 136-byte rate
    sponge.absorb(data);
    sponge.absorbLastFewBits(0x01); // keccak's padding (SHA-3's would be 0x06)
    return sponge.squeeze(32);
  };
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

const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;

/**
 * keccak-256 of the bytes `hex` spells ("0x" and pairs of hex digits), as "0x" and 64 hex digits: ethers' keccak256
 * (the fast one once registered) less its parsing of the hex one character at a time (Node's decoder instead).
 * Anything else goes to ethers as it is, which reads or refuses it as before.
 */
export function keccakHex(hex: string): string {
  // Node's decoder stops at a pair that is not hex, and reads a character beyond Latin-1 by its low byte: only what
  // ethers would read goes to it.
  return keccak256(HEX.test(hex) ? Buffer.from(hex.slice(2), "hex") : hex);
}

let registered: boolean | undefined;

/**
 * Registers the fast keccak-256 as ethers' (once), when it agrees with @noble/hashes on every known input. Whether
 * ethers now uses it.
 */
export function useFastKeccak(): boolean {
  if (registered !== undefined) return registered;
  registered = false;
  if (fastKeccak === null || !agrees(fastKeccak)) return false;
  try {
    keccak256.register(fastKeccak);
  } catch {
    return false; // ethers' keccak256 was locked by someone else: it keeps its own
  }
  return (registered = true);
}
