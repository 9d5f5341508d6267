/**
 * How the owner signs: her key from SPENDGATE_OWNER_KEY or --key-file (refused when others may read the file), or any
 * wallet: --print-typed-data prints what to sign (eth_signTypedData_v4's JSON) and --signature takes the result back.
 */
import { readFileSync, statSync } from "node:fs";
import { TypedDataEncoder, Wallet, getAddress, type TypedDataDomain, type TypedDataField } from "ethers";
import type { Io } from "../onboard";
import { type Args, usageError, value } from "./args";

export interface Typed {
  domain: TypedDataDomain;
  types: Record<string, TypedDataField[]>;
  message: Record<string, unknown>;
}

/** The owner's key, if one is given (the environment, or a file only its owner may read). */
export function ownerWallet(a: Args, env: NodeJS.ProcessEnv): Wallet | null {
  const file = value(a, "--key-file");
  let raw = env.SPENDGATE_OWNER_KEY;
  if (file) {
    let mode: number;
    try {
      mode = statSync(file).mode;
    } catch {
      throw usageError(`--key-file ${file}: no such file`);
    }
    if ((mode & 0o077) !== 0)
      throw usageError(`--key-file ${file} may be read by others (mode ${(mode & 0o777).toString(8)}): chmod 600 ${file}`);
    raw = readFileSync(file, "utf8");
  }
  if (!raw) return null;
  const key = raw.trim();
  if (!/^(0x)?[0-9a-fA-F]{64}$/.test(key)) throw usageError(`the owner key${file ? ` in ${file}` : ""} is not a 32-byte hex private key`);
  return new Wallet(key.startsWith("0x") ? key : `0x${key}`);
}

/** The owner's address: her key's, or --owner when she signs elsewhere. */
export function ownerAddress(a: Args, wallet: Wallet | null): string {
  const named = value(a, "--owner");
  if (wallet) {
    if (named && getAddress(named) !== wallet.address) throw usageError(`--owner ${named} is not the address of the owner key`);
    return wallet.address;
  }
  if (!named)
    throw usageError("no owner key: set SPENDGATE_OWNER_KEY or --key-file, or pass --owner ADDRESS with --print-typed-data / --signature");
  try {
    return getAddress(named);
  } catch {
    throw usageError(`--owner ${named} is not an address`);
  }
}

/** The timestamp every signed message carries: --timestamp (the one the printed typed data named) or now. */
export function signingTime(a: Args): number {
  const t = value(a, "--timestamp");
  if (t === undefined) return Math.floor(Date.now() / 1000);
  if (!/^\d{1,12}$/.test(t)) throw usageError(`--timestamp must be Unix seconds, not ${t}`);
  return Number(t);
}

/** eth_signTypedData_v4's argument: the domain, every type (EIP712Domain included), primaryType and the message. */
export function typedDataJson(t: Typed): string {
  return JSON.stringify(TypedDataEncoder.getPayload(t.domain, t.types, t.message), null, 2);
}

/**
 * The owner's signature of `t`: --signature as given, her key's, or null after printing the typed data
 * (--print-typed-data) with the command to run with the signature.
 */
export async function signTyped(a: Args, wallet: Wallet | null, t: Typed, io: Pick<Io, "out">): Promise<string | null> {
  if (a.switches.has("--print-typed-data")) {
    io.out(typedDataJson(t));
    io.out(`Sign it (eth_signTypedData_v4), then run the same command with --signature 0x… --timestamp ${String(t.message.timestamp)}`);
    return null;
  }
  const given = value(a, "--signature");
  if (given) {
    if (!/^0x[0-9a-fA-F]{130,}$/.test(given)) throw usageError("--signature must be a hex signature (0x…)");
    return given;
  }
  if (!wallet) throw usageError("no owner key: set SPENDGATE_OWNER_KEY or --key-file, or use --print-typed-data and --signature");
  return wallet.signTypedData(t.domain, t.types, t.message);
}
