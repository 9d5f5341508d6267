/** The owner CLI's command line: positional arguments and flags; a mistake is a SpendGateError (bad_request). */
import { invalidInput } from "../errors";

/** Flags that take a value; those in REPEATED may be given more than once. */
const VALUED = new Set([
  "--api",
  "--key-file",
  "--owner",
  "--signature",
  "--timestamp",
  "--message-file",
  "--code",
  "--file",
  "--per-tx",
  "--daily",
  "--threshold",
  "--allow",
  "--pin",
  "--cap",
  "--payee",
  "--signed-offer",
  "--hourly",
  "--weekly",
  "--monthly",
  "--lifetime",
  "--max-per-hour",
  "--valid-until",
  "--min-swap-rate",
  "--max-slippage-bps",
  "--twap-seconds",
  "--to",
  "--amount",
  "--token",
  "--decimals",
  "--rpc",
  "--from-block",
]);
const REPEATED = new Set(["--allow", "--pin", "--cap", "--payee", "--signed-offer"]);
const SWITCHES = new Set(["--yes", "--print-typed-data", "--quiet", "--json", "--help"]);

export interface Args {
  positional: string[];
  values: Map<string, string[]>;
  switches: Set<string>;
}

export const usageError = invalidInput;

export function parseArgs(argv: readonly string[]): Args {
  const a: Args = { positional: [], values: new Map(), switches: new Set() };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    if (!flag.startsWith("--")) {
      a.positional.push(argv[i]);
    } else if (SWITCHES.has(flag) && inline === undefined) {
      a.switches.add(flag);
    } else if (VALUED.has(flag)) {
      const v = inline ?? argv[++i];
      if (v === undefined || v === "") throw usageError(`${flag} needs a value`);
      const seen = a.values.get(flag) ?? [];
      if (seen.length && !REPEATED.has(flag)) throw usageError(`${flag} is given twice`);
      a.values.set(flag, [...seen, v]);
    } else {
      throw usageError(`unknown option ${argv[i]}`);
    }
  }
  return a;
}

/** The value of a flag given at most once. */
export const value = (a: Args, flag: string): string | undefined => a.values.get(flag)?.[0];

/** Every value of a repeatable flag, comma-separated lists split. */
export const values = (a: Args, flag: string): string[] =>
  (a.values.get(flag) ?? [])
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter(Boolean);

/** `host=value` pairs of a repeatable flag, as a record. */
export function pairs(a: Args, flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of values(a, flag)) {
    const at = p.lastIndexOf("=");
    if (at <= 0 || at === p.length - 1) throw usageError(`${flag} takes host=value, not ${p}`);
    out[p.slice(0, at)] = p.slice(at + 1);
  }
  return out;
}

/** A non-negative integer flag. */
export function integer(a: Args, flag: string): number | undefined {
  const v = value(a, flag);
  if (v === undefined) return undefined;
  if (!/^\d{1,15}$/.test(v)) throw usageError(`${flag} must be a whole number, not ${v}`);
  return Number(v);
}
