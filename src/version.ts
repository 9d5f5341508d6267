/** What the health routes say about the running build: package.json's version and, when known, the git commit. */
import { execFileSync } from "node:child_process";
import { dirname } from "node:path";

// eslint-disable-next-line @typescript-eslint/no-require-imports
export const VERSION: string = (require("../package.json") as { version: string }).version;

let sourceCommit: string | null | undefined;

/**
 * GIT_COMMIT when set, else `git rev-parse HEAD` of the source tree (read once per process, at start); undefined when
 * neither is known (an installed package, no git).
 */
export function buildCommit(fromEnv: string | undefined): string | undefined {
  if (fromEnv) return fromEnv;
  if (sourceCommit === undefined) {
    try {
      const out = execFileSync("git", ["rev-parse", "HEAD"], {
        cwd: dirname(require.resolve("../package.json")),
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
        timeout: 2_000,
      }).trim();
      sourceCommit = /^[0-9a-f]{40}$/.test(out) ? out : null;
    } catch {
      sourceCommit = null;
    }
  }
  return sourceCommit ?? undefined;
}
