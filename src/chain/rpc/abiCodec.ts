/**
 * ABI encoding and decoding with the bytes and values of ethers' AbiCoder, from coders built once per parameter list.
 *
 * Why: ethers builds its coder objects again on every encode and decode (a dozen objects through defineProperties per
 * call), copies every word through Uint8Arrays, and checksums every address it encodes or decodes (a keccak each):
 * about 2 ms of CPU per payment on the instance. These coders work on hex strings, keep each address's checksum once,
 * and are built once per fragment. They are no more lenient than ethers: wherever a value or the data is anything but
 * plain (a Typed value, a bad checksum, a short buffer, a deferred decoding error), they give up and the caller runs
 * ethers' own coder, which then answers or throws exactly as it always did.
 */
import { Indexed, type ParamType, Result, Typed, getBigInt, toUtf8Bytes, toUtf8String } from "ethers";
import { getAddress } from "./checksum";

/** "Let ethers decide": thrown by a coder on anything it does not handle exactly as ethers would. */
const DEFER = new Error("deferred to ethers");

const ZERO_WORD = "0".repeat(64);

interface Reader {
  /** The data, lower-case hex without 0x. */
  readonly hex: string;
  /** Its length in bytes. */
  readonly size: number;
  /** Bytes read in all, as ethers counts them (its inflation guard). */
  read: number;
}

interface Coder {
  readonly dynamic: boolean;
  /** Its name in the enclosing tuple (ethers' localName; "_" for array items). */
  readonly name: string | null;
  /** The value's encoding, lower-case hex without 0x, whole words. */
  encode(value: unknown): string;
  /** The value at byte `at` of `r`. */
  decode(r: Reader, at: number): unknown;
  /** Bytes a static value takes in place (0 for a dynamic one: its offset word takes 32). */
  readonly width: number;
}

// ---------------------------------------------------------------- words

function word(r: Reader, at: number, length = 32): string {
  const aligned = Math.ceil(length / 32) * 32;
  if (at + aligned > r.size) throw DEFER; // ethers: data out-of-bounds (or a loose read: ethers decides)
  r.read += length;
  if (r.read > r.size) throw DEFER; // data read twice (shared offsets): ethers' inflation guard decides
  return r.hex.slice(at * 2, (at + length) * 2);
}

/** A word as an index (ethers' readIndex): a safe integer, else ethers throws. */
function index(r: Reader, at: number): number {
  const w = word(r, at);
  if (!w.startsWith("00000000000000000000000000000000000000000000000000")) throw DEFER;
  const n = parseInt(w.slice(50), 16);
  if (!Number.isSafeInteger(n)) throw DEFER;
  return n;
}

const isTyped = (v: unknown): boolean => typeof v === "object" && v !== null && Typed.isTyped(v);

/** A BytesLike value as lower-case hex without 0x (ethers' getBytesCopy accepts these two forms). */
function hexOf(v: unknown): string {
  if (typeof v === "string") {
    if (!/^0x(?:[0-9a-f][0-9a-f])*$/i.test(v)) throw DEFER;
    return v.slice(2).toLowerCase();
  }
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex");
  throw DEFER;
}

const padRight = (hex: string): string => (hex.length % 64 ? hex + ZERO_WORD.slice(hex.length % 64) : hex);
const uintWord = (n: number | bigint): string => n.toString(16).padStart(64, "0");

// ---------------------------------------------------------------- addresses, each checksummed once (checksum.ts)

function addressHex(v: unknown): string {
  if (typeof v !== "string") throw DEFER;
  try {
    return getAddress(v).slice(2).toLowerCase(); // the checks ethers makes (a mixed-case checksum, ICAP)
  } catch {
    throw DEFER;
  }
}

/** getAddress of 40 lower-case hex digits. */
export const checksumOf = (hex40: string): string => getAddress(`0x${hex40}`);

// ---------------------------------------------------------------- coders

/** A coder of a one-word static type. */
const oneWord = (name: string | null, encode: Coder["encode"], decode: Coder["decode"]): Coder => ({
  dynamic: false,
  name,
  width: 32,
  encode: (v) => {
    if (isTyped(v)) throw DEFER;
    return encode(v);
  },
  decode,
});

function coderOf(p: ParamType, name: string | null): Coder {
  if (p.isArray()) return arrayCoder(coderOf(p.arrayChildren, "_"), p.arrayLength, name);
  // prettier-ignore
  if (p.isTuple()) return tupleCoder(p.components.map((c) => coderOf(c, c.name || null)), name);
  const type = p.type;
  if (type === "address") {
    return oneWord(
      name,
      (v) => "000000000000000000000000" + addressHex(v),
      (r, at) => {
        const w = word(r, at);
        if (!w.startsWith("000000000000000000000000")) throw DEFER; // ethers: a deferred error
        return checksumOf(w.slice(24));
      },
    );
  }
  if (type === "bool")
    return oneWord(
      name,
      (v) => (v ? uintWord(1) : ZERO_WORD),
      (r, at) => word(r, at) !== ZERO_WORD,
    );
  if (type === "bytes" || type === "string") {
    const text = type === "string";
    return {
      dynamic: true,
      name,
      width: 0,
      encode: (v) => {
        if (isTyped(v) || (text && typeof v !== "string")) throw DEFER;
        const hex = text ? Buffer.from(toUtf8Bytes(v as string)).toString("hex") : hexOf(v);
        return uintWord(hex.length / 2) + padRight(hex);
      },
      decode: (r, at) => {
        const hex = word(r, at + 32, index(r, at));
        if (!text) return `0x${hex}`;
        try {
          return toUtf8String(Buffer.from(hex, "hex"));
        } catch {
          throw DEFER;
        }
      },
    };
  }
  const number = /^(u?)int(\d*)$/.exec(type);
  if (number) {
    const bits = BigInt(number[2] || "256");
    if (bits === 0n || bits > 256n || bits % 8n) throw DEFER;
    const signed = number[1] === "";
    const max = (1n << (signed ? bits - 1n : bits)) - 1n;
    const min = signed ? -max - 1n : 0n;
    const mask = (1n << bits) - 1n;
    return oneWord(
      name,
      (v) => {
        let n: bigint;
        try {
          n = getBigInt(v as bigint);
        } catch {
          throw DEFER;
        }
        if (n < min || n > max) throw DEFER;
        return uintWord(n < 0n ? (1n << 256n) + n : n);
      },
      (r, at) => {
        const n = BigInt(`0x${word(r, at)}`) & mask; // ethers masks to the type's width
        return signed && n > max ? n - (1n << bits) : n;
      },
    );
  }
  const size = Number(/^bytes(\d+)$/.exec(type)?.[1] ?? 0);
  if (size < 1 || size > 32) throw DEFER; // a type ethers' coder refuses, or one this module does not know
  return oneWord(
    name,
    (v) => {
      const hex = hexOf(v);
      if (hex.length !== size * 2) throw DEFER;
      return padRight(hex);
    },
    (r, at) => `0x${word(r, at, size)}`,
  );
}

/** Encodes `values` in ethers' pack order: heads in place, each dynamic value's tail after them. */
function pack(coders: readonly Coder[], values: unknown): string {
  let list: readonly unknown[];
  if (Array.isArray(values)) list = values;
  else if (values && typeof values === "object" && !isTyped(values)) {
    const seen = new Set<string>();
    list = coders.map((c) => {
      if (!c.name || seen.has(c.name)) throw DEFER; // ethers refuses an object for unnamed or duplicate names
      seen.add(c.name);
      return (values as Record<string, unknown>)[c.name];
    });
  } else throw DEFER;
  if (list.length !== coders.length) throw DEFER;
  const parts = coders.map((c, i) => c.encode(list[i]));
  let offset = coders.reduce((n, c, i) => n + (c.dynamic ? 32 : parts[i].length / 2), 0);
  let head = "";
  let tail = "";
  for (let i = 0; i < coders.length; i++) {
    if (!coders[i].dynamic) head += parts[i];
    else {
      head += uintWord(offset);
      offset += parts[i].length / 2;
      tail += parts[i];
    }
  }
  return head + tail;
}

/** The values of `coders` from byte `base` on, in ethers' unpack order. */
function readValues(coders: readonly Coder[], r: Reader, base: number): unknown[] {
  const out: unknown[] = [];
  let at = base;
  for (const c of coders) {
    if (c.dynamic) {
      out.push(c.decode(r, base + index(r, at)));
      at += 32;
    } else {
      out.push(c.decode(r, at));
      at += c.width;
    }
  }
  return out;
}

/** ethers' unpack: the values as a Result keyed by their coders' names. */
function unpack(coders: readonly Coder[], r: Reader, base: number): Result {
  const names = coders.map((c) => c.name);
  return Result.fromItems(readValues(coders, r, base), names);
}

function tupleCoder(coders: readonly Coder[], name: string | null): Coder {
  const dynamic = coders.some((c) => c.dynamic);
  return {
    dynamic,
    name,
    width: dynamic ? 0 : coders.reduce((n, c) => n + c.width, 0),
    encode: (v) => pack(coders, v),
    decode: (r, at) => unpack(coders, r, at),
  };
}

function arrayCoder(item: Coder, length: number, name: string | null): Coder {
  const dynamic = length === -1 || item.dynamic;
  return {
    dynamic,
    name,
    width: dynamic ? 0 : item.width * length,
    encode: (v) => {
      if (!Array.isArray(v) || (length !== -1 && v.length !== length)) throw DEFER;
      const items = v.map(() => item);
      const body = pack(items, v);
      return length === -1 ? uintWord(v.length) + body : body;
    },
    decode: (r, at) => {
      let count = length;
      let base = at;
      if (count === -1) {
        count = index(r, at);
        if (count * 32 > r.size - at) throw DEFER; // ethers: insufficient data length
        base += 32;
      }
      return unpack(
        Array.from({ length: count }, () => item),
        r,
        base,
      );
    },
  };
}

// ---------------------------------------------------------------- per parameter list

const tuples = new WeakMap<readonly ParamType[], Coder[] | null>();

function codersOf(params: readonly ParamType[]): Coder[] | null {
  let coders = tuples.get(params);
  if (coders === undefined) {
    try {
      coders = params.map((p) => coderOf(p, p.name || null));
    } catch {
      coders = null;
    }
    tuples.set(params, coders);
  }
  return coders;
}

/** AbiCoder.encode(params, values) as hex without 0x; undefined where ethers must decide. */
export function encodeParams(params: readonly ParamType[], values: readonly unknown[]): string | undefined {
  const coders = codersOf(params);
  if (!coders || values.length !== coders.length) return undefined;
  try {
    return pack(coders, values);
  } catch {
    return undefined; // DEFER, or an error ethers throws too: it decides
  }
}

/** A 0x hex string as a Reader (lower-case), or undefined when it is not whole bytes of hex. */
function readerOf(data: unknown): Reader | undefined {
  if (typeof data !== "string" || !/^0x(?:[0-9a-f][0-9a-f])*$/i.test(data)) return undefined;
  const hex = data.slice(2).toLowerCase();
  return { hex, size: hex.length / 2, read: 0 };
}

/** AbiCoder.decode(params, data) (strict, as for a function's result); undefined where ethers must decide. */
export function decodeParams(params: readonly ParamType[], data: string): Result | undefined {
  const coders = codersOf(params);
  const r = readerOf(data);
  if (!coders || !r) return undefined;
  try {
    return unpack(coders, r, 0);
  } catch {
    return undefined; // DEFER, or an error ethers throws too: it decides
  }
}

interface EventCoders {
  /** Per input: an indexed value of a dynamic type, logged as its hash. */
  hashed: boolean[];
  coders: Coder[];
  /** The coders of the inputs that are not indexed (the data's). */
  data: Coder[];
}
const events = new WeakMap<readonly ParamType[], EventCoders | null>();

function eventCodersOf(inputs: readonly ParamType[]): EventCoders | null {
  let e = events.get(inputs);
  if (e === undefined) {
    const coders = codersOf(inputs);
    e = coders && {
      hashed: inputs.map((p) => p.indexed === true && (p.type === "string" || p.type === "bytes" || p.isTuple() || p.isArray())),
      coders,
      data: coders.filter((_c, i) => inputs[i].indexed !== true),
    };
    events.set(inputs, e);
  }
  return e;
}

/**
 * Interface.decodeEventLog for `inputs` given the topics after topic0 (an anonymous fragment's, as parseLog passes
 * them); undefined where ethers must decide. Indexed values of dynamic types are their hashes (Indexed), as in ethers.
 */
export function decodeEvent(inputs: readonly ParamType[], data: string, topics: readonly string[]): Result | undefined {
  const e = eventCodersOf(inputs);
  const r = readerOf(data);
  // ethers reads the indexed values from all the topics joined: any that is not one word is for it to judge.
  if (!e || !r || !topics.every((t) => typeof t === "string" && /^0x[0-9a-f]{64}$/i.test(t))) return undefined;
  try {
    const rest = readValues(e.data, r, 0);
    const out: unknown[] = [];
    const keys: (string | null)[] = [];
    let t = 0;
    let n = 0;
    for (let i = 0; i < inputs.length; i++) {
      if (inputs[i].indexed === true) {
        if (t >= topics.length) throw DEFER;
        const tr = readerOf(topics[t++]) as Reader;
        out.push(e.hashed[i] ? new Indexed(`0x${tr.hex}`) : e.coders[i].decode(tr, 0));
      } else out.push(rest[n++]);
      keys.push(inputs[i].name || null);
    }
    return Result.fromItems(out, keys);
  } catch {
    return undefined; // DEFER, or an error ethers throws too: it decides
  }
}
