#!/usr/bin/env node
"use strict";
// spendgate <command>: runs the TypeScript scripts through tsx, no build step.
const path = require("node:path");

const [command, ...args] = process.argv.slice(2);
if (command === "onboard") {
  require("tsx/cjs");
  const { main } = require(path.join(__dirname, "..", "scripts", "onboard.ts"));
  main(args).then(
    (code) => (process.exitCode = code),
    (err) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
} else {
  console.log("Usage: spendgate onboard [--base-url URL] [--email EMAIL] [--label LABEL] [--token KEY] [--force]");
  console.log("       (spendgate onboard --help for details)");
  process.exitCode = command && command !== "help" && command !== "--help" ? 64 : 0;
}
