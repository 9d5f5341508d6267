// The SDK's build (npm run build:sdk, and prepack): the library compiled by tsc (tsconfig.build.json: its types), and
// the CLI bundled by esbuild into dist/cli.js with what it imports from the service (the EIP-712 types, the policy
// builder, the allowlist, ISpendPolicy's ABI) and their libraries, so the package keeps no dependencies and signs what
// the service verifies, from one source.
import { execFileSync } from "node:child_process";
import { chmodSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
rmSync(join(here, "dist"), { recursive: true, force: true });
execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", join(here, "tsconfig.build.json")], { stdio: "inherit" });
const { build } = await import("esbuild");
const outfile = join(here, "dist", "cli.js");
await build({
  entryPoints: [join(here, "src", "cli.ts")],
  outfile,
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  minify: true,
  legalComments: "none",
  logLevel: "warning",
});
chmodSync(outfile, 0o755);
