#!/usr/bin/env node
"use strict";
// spendgate <command>: runs the SDK's TypeScript CLI (packages/sdk/src/cli.ts) through tsx, no build step.
require("tsx/cjs");
require(require("node:path").join(__dirname, "..", "packages", "sdk", "src", "cli.ts"));
