/**
 * The project's root (where package.json, artifacts/ and deployments/ are), the same whether this code runs from src/
 * under tsx or from dist/src/ after `npm run build`: the first folder above this file that holds a package.json.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export const PROJECT_ROOT = findRoot(__dirname);
