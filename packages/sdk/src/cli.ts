#!/usr/bin/env node
/**
 * `spendgate <command>`: the bin of @spendgate/sdk (`npx spendgate onboard` in a project that installed it). Published
 * as one bundle (build.mjs), so the owner commands carry the service's own signed types and policy builder.
 */
import { main as onboard } from "./onboard";
import { main as owner } from "./owner/main";

const [command, ...args] = process.argv.slice(2);
const run = command === "onboard" ? onboard : command === "owner" ? owner : null;
if (run) {
  run(args).then(
    (code) => (process.exitCode = code),
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
} else {
  console.log("Usage: spendgate onboard [--base-url URL] [--email EMAIL] [--label LABEL] [--token KEY] [--force]");
  console.log("       spendgate owner login | link | policy show | policy set | approvals | approve ID | deny ID |");
  console.log("                       pause | resume | withdraw | verify   [--api URL] (spendgate owner help)");
  console.log("       (spendgate onboard --help for details)");
  process.exitCode = command && command !== "help" && command !== "--help" ? 64 : 0;
}
