/** What the health routes say about the running build: package.json's version and, when known, the git commit. */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { PROJECT_ROOT } from "./paths";

// From the project root whether this runs from src/ or from dist/src/ (npm run build).
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const VERSION: string = (require(join(PROJECT_ROOT, "package.json")) as { version: string }).version;

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
        cwd: PROJECT_ROOT,
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
