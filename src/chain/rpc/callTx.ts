/**
 * The operator's signed EIP-1559 contract call, RLP-encoded here: the bytes ethers' Transaction makes (unsignedHash,
 * then serialized once signed), without it running every field through getBigInt, toBeArray, hexlify and concat twice
 * and checksumming the target (about 0.5 ms of CPU per payment). test/chain/operatorSends.test.ts compares the bytes.
 */
import { type BigNumberish, type SigningKey, getBigInt } from "ethers";
import { keccakHex } from "../keccak";
import { signDigest } from "../ecdsa";
import { getAddress } from "./checksum";

export interface CallTx {
  chainId: BigNumberish;
  nonce: BigNumberish;
  gasLimit: BigNumberish;
  maxFeePerGas: BigNumberish;
  maxPriorityFeePerGas: BigNumberish;
  to: string;
  /** 0x hex (an encoded call). */
  data: string;
}

const MAX_UINT = (1n << 256n) - 1n;

/** An RLP length prefix for `length` bytes of a string (offset 0x80) or a list (0xc0). */
function prefix(length: number, offset: number): string {
  if (length <= 55) return (offset + length).toString(16);
  const hex = even(length.toString(16));
  return (offset + 55 + hex.length / 2).toString(16) + hex;
}

const even = (hex: string): string => (hex.length % 2 ? `0${hex}` : hex);

/** Bytes (hex without 0x) as an RLP string. */
function bytes(hex: string): string {
  return hex.length === 2 && parseInt(hex, 16) < 0x80 ? hex : prefix(hex.length / 2, 0x80) + hex;
}

/** A number as ethers writes it: its minimal big-endian bytes, none for 0. */
function quantity(value: BigNumberish): string {
  const n = getBigInt(value);
  if (n < 0n || n > MAX_UINT) throw new RangeError(`transaction field out of range: ${n}`);
  return n === 0n ? "80" : bytes(even(n.toString(16)));
}

const list = (items: string[]): string => {
  const body = items.join("");
  return prefix(body.length / 2, 0xc0) + body;
};

/** The signed transaction (0x02 || rlp([...fields, yParity, r, s])), value 0 and no access list. */
export function signCallTx(tx: CallTx, key: SigningKey): string {
  const fields = [
    quantity(tx.chainId),
    quantity(tx.nonce),
    quantity(tx.maxPriorityFeePerGas),
    quantity(tx.maxFeePerGas),
    quantity(tx.gasLimit),
    bytes(getAddress(tx.to).slice(2).toLowerCase()),
    "80", // value
    bytes(tx.data.slice(2).toLowerCase()),
    "c0", // access list
  ];
  const sig = signDigest(key, keccakHex(`0x02${list(fields)}`));
  return `0x02${list([...fields, quantity(sig.yParity), quantity(sig.r), quantity(sig.s)])}`;
}
