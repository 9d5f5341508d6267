#!/usr/bin/env node
/** `spendgate <command>`: the bin of @spendgate/sdk (`npx spendgate onboard` in a project that installed it). */
import { main } from "./onboard";

const [command, ...args] = process.argv.slice(2);
if (command === "onboard") {
  main(args).then(
    (code) => (process.exitCode = code),
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
} else {
  console.log("Usage: spendgate onboard [--base-url URL] [--email EMAIL] [--label LABEL] [--token KEY] [--force]");
  console.log("       (spendgate onboard --help for details)");
  process.exitCode = command && command !== "help" && command !== "--help" ? 64 : 0;
}
