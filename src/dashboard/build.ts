/**
 * Builds the owner dashboard (client/*.ts and styles.css) with esbuild into memory, once per process: nothing is
 * fetched from a CDN and nothing is written to disk, except by `npm run build`, which writes it once to dist/dashboard for
 * the compiled service. File names carry a content hash so they can be cached forever.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { extname, join } from "node:path";
import { build, type Plugin } from "esbuild";

export interface DashboardAsset {
  body: Buffer;
  type: string;
}

export interface DashboardBundle {
  /** URL path of the script and the stylesheet, e.g. /dashboard/assets/app-3F2A….js */
  script: string;
  style: string;
  assets: Map<string, DashboardAsset>;
  builtInMs: number;
}

export const ASSET_PREFIX = "/dashboard/assets/";

const TYPES: Record<string, string> = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8" };

/** src/policy/allowlist.ts imports node:url; the browser gets the same parser from its URL class. */
const nodeUrlShim: Plugin = {
  name: "node-url-shim",
  setup(b) {
    b.onResolve({ filter: /^(node:)?url$/ }, () => ({ path: join(__dirname, "shims", "node-url.ts") }));
  },
};

export async function buildDashboard(): Promise<DashboardBundle> {
  const started = Date.now();
  const result = await build({
    entryPoints: { app: join(__dirname, "client", "main.ts"), styles: join(__dirname, "styles.css") },
    bundle: true,
    write: false,
    outdir: "/dashboard",
    entryNames: "[name]-[hash]",
    format: "esm",
    platform: "browser",
    target: ["es2022", "chrome111", "firefox115", "safari16"],
    minify: true,
    legalComments: "none",
    logLevel: "silent",
    plugins: [nodeUrlShim],
    define: { "process.env.NODE_ENV": '"production"' },
  });
  const assets = new Map<string, DashboardAsset>();
  let script = "";
  let style = "";
  for (const file of result.outputFiles) {
    const name = file.path.slice(file.path.lastIndexOf("/") + 1);
    const ext = name.slice(name.lastIndexOf("."));
    assets.set(name, { body: Buffer.from(file.contents), type: TYPES[ext] ?? "application/octet-stream" });
    if (name.startsWith("app-") && ext === ".js") script = ASSET_PREFIX + name;
    if (name.startsWith("styles-") && ext === ".css") style = ASSET_PREFIX + name;
  }
  if (!script || !style) throw new Error("the dashboard build produced no script or stylesheet");
  return { script, style, assets, builtInMs: Date.now() - started };
}

/** Where `npm run build` writes the bundle: dist/dashboard, beside dist/src (the compiled code has no client sources). */
export const PREBUILT_DIR = join(__dirname, "..", "..", "dashboard");
const MANIFEST = "manifest.json";

interface Manifest {
  script: string;
  style: string;
  files: { name: string; type: string }[];
}

/** Builds the bundle and writes it to `dir` (`npm run build`). */
export async function writeDashboard(dir: string): Promise<DashboardBundle> {
  const bundle = await buildDashboard();
  mkdirSync(dir, { recursive: true });
  const files = [...bundle.assets].map(([name, asset]) => {
    writeFileSync(join(dir, name), asset.body);
    return { name, type: asset.type };
  });
  const manifest: Manifest = { script: bundle.script, style: bundle.style, files };
  writeFileSync(join(dir, MANIFEST), JSON.stringify(manifest, null, 2));
  return bundle;
}

/** The bundle `npm run build` wrote, when this is the compiled code (dist/); null under tsx (built in memory). */
function prebuilt(): DashboardBundle | null {
  if (extname(__filename) !== ".js" || !existsSync(join(PREBUILT_DIR, MANIFEST))) return null;
  const manifest = JSON.parse(readFileSync(join(PREBUILT_DIR, MANIFEST), "utf8")) as Manifest;
  const assets = new Map(manifest.files.map((f) => [f.name, { body: readFileSync(join(PREBUILT_DIR, f.name)), type: f.type }]));
  return { script: manifest.script, style: manifest.style, assets, builtInMs: 0 };
}

let cached: Promise<DashboardBundle> | undefined;

/** The bundle, built on first use and kept for the life of the process (a failed build is retried next time). */
export function dashboardBundle(): Promise<DashboardBundle> {
  cached ??= Promise.resolve()
    .then(() => prebuilt() ?? buildDashboard())
    .catch((err: unknown) => {
      cached = undefined;
      throw err;
    });
  return cached;
}
