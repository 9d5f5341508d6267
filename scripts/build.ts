/**
 * `npm run build` (after `hardhat compile`): the service compiled to dist/ (tsc, tsconfig.build.json: dist/src/...),
 * and the dashboard bundled once into dist/dashboard, so `npm run start:prod` (`node dist/src/index.js`) compiles
 * nothing when it starts. Contract artifacts and deployment records are read from the project's own artifacts/ and
 * deployments/ (src/paths.ts), as under tsx.
 */
import { execFileSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { writeDashboard } from "../src/dashboard/build";
import { PROJECT_ROOT } from "../src/paths";

async function main(): Promise<void> {
  const started = Date.now();
  if (!existsSync(join(PROJECT_ROOT, "artifacts", "contracts"))) throw new Error("no contract artifacts: run `npx hardhat compile` first");
  const dist = join(PROJECT_ROOT, "dist");
  rmSync(dist, { recursive: true, force: true });
  execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", join(PROJECT_ROOT, "tsconfig.build.json")], {
    stdio: "inherit",
  });
  const bundle = await writeDashboard(join(dist, "dashboard"));
  console.log(`Built dist/ in ${Date.now() - started} ms: dist/src (node dist/src/index.js), dashboard ${bundle.script} ${bundle.style}.`);
}

main().catch((err: unknown) => {
  console.error("build failed:", err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
