/**
 * What an operator meets before the first request: `.env` read when present, `.env.example` listing exactly what the
 * service and the deploy script read, and a store that refuses connections named as MONGODB_URI with what to check.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { expect } from "chai";
import { ENV_KEYS } from "../../src/config";
import { storeUnreachable } from "../../src/server";
import { connectStore } from "../../src/store";

const ROOT = join(__dirname, "..", "..");
const DEPLOY_ONLY = "# scripts/deploy.ts only";

describe("process set-up: .env, .env.example and the store's connection error", () => {
  it(".env.example lists every variable of the config schema, and only those and the deploy script's", () => {
    const text = readFileSync(join(ROOT, ".env.example"), "utf8");
    const [service, deploy] = text.split(DEPLOY_ONLY);
    const keysOf = (t: string) => [...t.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]);
    expect(deploy, `.env.example has a "${DEPLOY_ONLY}" section`).to.be.a("string");
    expect(keysOf(service).sort()).to.deep.equal([...ENV_KEYS].sort());
    const deploySources = ["scripts/deploy.ts", "hardhat.config.ts"].map((f) => readFileSync(join(ROOT, f), "utf8")).join("\n");
    for (const key of keysOf(deploy)) {
      const read = deploySources.includes(`process.env.${key}`) || (ENV_KEYS as readonly string[]).includes(key);
      expect(read, `${key} in .env.example is read by nothing`).to.equal(true);
    }
    expect(keysOf(deploy)).to.include.members(["OPERATOR_ADDRESS", "OPERATOR_ADDRESSES"]);
  });

  it("reads .env from the working directory when there is one (a bad value there stops the start naming it)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "spendgate-env-"));
    try {
      writeFileSync(join(dir, ".env"), "# from .env\nPORT=not-a-port\nSIGNATURE_WINDOW=\n");
      const tsx = pathToFileURL(require.resolve("tsx", { paths: [ROOT] })).href;
      const run = await new Promise<{ code: number | null; out: string }>((resolve) => {
        const env = { ...process.env };
        delete env.PORT;
        execFile(
          process.execPath,
          ["--import", tsx, join(ROOT, "src", "index.ts")],
          { cwd: dir, env, timeout: 60_000 },
          (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
        );
      });
      expect(run.code, run.out).to.equal(2);
      expect(run.out).to.include("Invalid configuration").and.include("PORT");
      expect(run.out).not.to.include("SIGNATURE_WINDOW"); // empty counts as unset
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a MongoDB that refuses is named as MONGODB_URI, without its password, with what to check", async () => {
    const uri = "mongodb://spendgate:s3cret@127.0.0.1:1/spendgate?authSource=admin";
    let error: Error | undefined;
    await connectStore(uri, "spendgate").catch((err: unknown) => (error = storeUnreachable(err, uri, false)));
    expect(error?.message).to.match(/^Cannot connect to MongoDB at mongodb:\/\/\*\*\*@127\.0\.0\.1:1\/spendgate \(MONGODB_URI\): /);
    expect(error?.message).to.include("ECONNREFUSED").and.include("reachable").and.include("TLS").and.not.include("s3cret");
  });
});
