/**
 * `spendgate owner <command>`: the owner's side of SpendGate from a terminal, against `--api URL`. Every signature is
 * made here with the owner's key (SPENDGATE_OWNER_KEY or --key-file), or by any wallet (--print-typed-data, then
 * --signature); what is signed is built by the service's own modules, bundled in. Errors are SpendGateErrors.
 */
import { createInterface } from "node:readline/promises";
import { isSpendGateError } from "../errors";
import { DEFAULT_BASE_URL, type Io } from "../onboard";
import { parseArgs, usageError, value } from "./args";
import { type Run, approvals, decide, link, login, policySet, policyShow, setPaused, withdraw } from "./commands";
import { verify } from "./verify";

export interface OwnerIo extends Io {
  /** Asks the owner a question (policy set's confirmation) and answers her reply. */
  ask(question: string): Promise<string>;
}

export const OWNER_USAGE = `Usage: spendgate owner <command> [--api URL] [options]

  login                         sign in (SIWE): keeps an owner key in ~/.spendgate/owner.json (mode 0600)
  link [LINK | AGENT --code C]  link an agent to you (default: this machine's agent, ~/.spendgate/config.json)
  policy show [AGENT]           the policy as the server reports it (--json for all of GET /limits)
  policy set [AGENT] (--per-tx N --daily N --threshold N [--allow HOST]... [--pin SELLER_URL]... [--cap HOST=N]...
             [--payee HOST=0x…]...
             [--signed-offer HOST]... [--hourly N --weekly N --monthly N --lifetime N --max-per-hour N
             --valid-until T --max-slippage-bps N --twap-seconds N --min-swap-rate N] | --file BODY.json) [--yes]
                                sign and send a spend policy: shows what will be signed and asks first;
                                --pin allows a seller's host paying only the payee it names (POST /merchants/quote)
  approvals [AGENT]             payments waiting for you (--quiet: their ids only)
  approve ID | deny ID          sign your decision on one
  pause [AGENT] | resume [AGENT]  the kill switch, on-chain
  withdraw [AGENT] --to ADDRESS --amount N [--token USDC|ETH|0x… --decimals N]
  verify AGENT [--rpc URL] [--from-block N]
                                the policy in force read from the chain (owner, epoch, pause, limits, merchants,
                                caps, payees, root), and every difference with the server's GET /limits (exit 3)

  --api URL            the SpendGate (default $SPENDGATE_API or ${DEFAULT_BASE_URL})
  --key-file FILE      the owner's private key (hex), a file only you may read; or set SPENDGATE_OWNER_KEY
  --print-typed-data   print what to sign (eth_signTypedData_v4 JSON) for any wallet, and send nothing;
  --signature 0x…      then run the same command with the wallet's signature and --timestamp T as printed
  --owner ADDRESS      your address when you sign elsewhere (login, link)
AGENT defaults to your only agent. SPENDGATE_OWNER_API_KEY replaces the key login keeps.`;

const COMMANDS: Record<string, (r: Run) => Promise<number>> = {
  login,
  link,
  approvals,
  approve: (r) => decide(r, "approve"),
  deny: (r) => decide(r, "deny"),
  pause: (r) => setPaused(r, true),
  resume: (r) => setPaused(r, false),
  withdraw,
  verify,
  policy: (r) => {
    const sub = r.a.positional[0];
    if (sub === "show") return policyShow(r);
    if (sub === "set") return policySet(r);
    throw usageError("policy show or policy set");
  },
};

/** Runs one owner command; throws SpendGateError for every refusal, the service's or the command line's. */
export async function owner(argv: readonly string[], io: OwnerIo): Promise<number> {
  const [command, ...rest] = argv;
  const a = parseArgs(rest);
  if (!command || command === "help" || a.switches.has("--help")) {
    io.out(OWNER_USAGE);
    return command && command !== "help" && !a.switches.has("--help") ? 64 : 0;
  }
  const run = COMMANDS[command];
  if (!Object.hasOwn(COMMANDS, command)) throw usageError(`unknown command ${command} (spendgate owner help)`);
  const api = value(a, "--api") ?? io.env.SPENDGATE_API ?? DEFAULT_BASE_URL;
  let url: URL;
  try {
    url = new URL(api);
  } catch {
    throw usageError(`--api ${api} is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw usageError("--api must be http or https");
  return run({ a, baseUrl: api.replace(/\/+$/, ""), io });
}

/** The process's side: stdin for questions; a SpendGateError printed as `error: message` (exit 1; 2: no answer). */
export async function main(argv: readonly string[]): Promise<number> {
  const io: OwnerIo = {
    out: (l) => console.log(l),
    err: (l) => console.error(l),
    env: process.env,
    ask: async (q) => {
      const rl = createInterface({ input: process.stdin, output: process.stdout });
      try {
        return await rl.question(q);
      } finally {
        rl.close();
      }
    },
  };
  try {
    return await owner(argv, io);
  } catch (err) {
    if (!isSpendGateError(err)) throw err;
    io.err(`spendgate owner: ${err.error}: ${err.message}`);
    return err.error === "network_error" ? 2 : 1;
  }
}
