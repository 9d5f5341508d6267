/**
 * The production build: `npm run build` compiles the service to dist/ and bundles the dashboard once; `npm run
 * start:prod` runs `node dist/src/index.js` (no compiler, no tsx) against a separate chain process and a MongoDB-wire
 * store process, answers /health, serves the prebuilt dashboard, and stops on SIGTERM with exit code 0.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { Wallet } from "ethers";

const ROOT = join(__dirname, "..", "..");

interface Proc {
  child: ChildProcess;
  text: () => string;
  match(pattern: RegExp): Promise<RegExpExecArray>;
  exit: Promise<{ code: number | null; at: number }>;
}

function run(command: string, args: string[], env: Record<string, string> = {}): Proc {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  const listeners = new Set<() => void>();
  const add = (d: Buffer) => {
    text += d.toString();
    for (const l of listeners) l();
  };
  child.stdout.on("data", add);
  child.stderr.on("data", add);
  const exit = new Promise<{ code: number | null; at: number }>((resolve) =>
    child.once("exit", (code) => resolve({ code, at: Date.now() })),
  );
  return {
    child,
    text: () => text,
    exit,
    match: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(text);
          if (m) {
            listeners.delete(check);
            resolve(m);
          }
        };
        listeners.add(check);
        void exit.then(({ code }) =>
          reject(new Error(`${command} ${args.join(" ")} exited (${code}) before ${pattern}:\n${text.slice(-3000)}`)),
        );
        check();
      }),
  };
}

describe("npm run build, then npm run start:prod (node dist/src/index.js) in production shape", function () {
  this.timeout(420_000);
  const procs: Proc[] = [];
  after(() => {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  });

  it("builds dist/, starts from it without compiling, answers /health and the prebuilt dashboard, and stops on SIGTERM", async () => {
    const build = run("npm", ["run", "build"]);
    procs.push(build);
    expect((await build.exit).code, build.text().slice(-3000)).to.equal(0);
    expect(existsSync(join(ROOT, "dist", "src", "index.js"))).to.equal(true);
    expect(existsSync(join(ROOT, "dist", "dashboard", "manifest.json"))).to.equal(true);

    // With an empty environment the build refuses to become the sandbox, and says what to set.
    const bare = spawn("npm", ["run", "start:prod"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let bareOut = "";
    bare.stdout.on("data", (b: Buffer) => (bareOut += b.toString()));
    bare.stderr.on("data", (b: Buffer) => (bareOut += b.toString()));
    const bareCode = await new Promise<number | null>((resolve) => bare.once("exit", resolve));
    expect(bareCode, bareOut).to.not.equal(0);
    expect(bareOut).to.include("RPC_URL").and.include("SANDBOX=1").and.not.include("SpendGate is running");

    const operator = Wallet.createRandom();
    const facilitator = Wallet.createRandom();
    const chainProc = run(process.execPath, [
      "--import",
      "tsx",
      "scripts/chain.ts",
      "--port",
      "0",
      "--json",
      "--operators",
      `${operator.address},${facilitator.address}`,
    ]);
    const mongoProc = run(process.execPath, ["--import", "tsx", "scripts/cluster/mongo.ts"]);
    procs.push(chainProc, mongoProc);
    const chain = JSON.parse((await chainProc.match(/CHAIN (\{.*\})\n/))[1]) as {
      rpcUrl: string;
      addresses: { factory: string };
      deployBlock: number;
    };
    const mongoUri = (await mongoProc.match(/MONGODB_URI=(\S+)\n/))[1];

    const started = Date.now();
    const prod = run("npm", ["run", "start:prod"], {
      PORT: "0",
      RPC_URL: chain.rpcUrl,
      FACTORY_ADDRESS: chain.addresses.factory,
      FACTORY_DEPLOY_BLOCK: String(chain.deployBlock),
      MONGODB_URI: mongoUri,
      MONGODB_DB: `prod_${randomBytes(4).toString("hex")}`,
      WALLET_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      OPERATOR_PRIVATE_KEY: operator.privateKey,
      FACILITATOR_PRIVATE_KEY: facilitator.privateKey,
      NETWORK_NAME: "prodcheck",
      CONFIRMATIONS: "0",
    });
    procs.push(prod);
    const url = (await prod.match(/SpendGate is running at (\S+)\n/))[1];
    const health = await fetch(`${url}/health`);
    const ready = Date.now() - started;
    expect(health.status).to.equal(200);
    expect(await health.json()).to.include({ status: "ok", mode: "production", store: "ok", chain: "ok" });
    // The sandbox's demo sellers do not exist in production, whatever their query.
    for (const q of ["price=0.5", "price=0"]) expect((await fetch(`${url}/dev/seller/exact?${q}`)).status, q).to.equal(404);
    for (const p of ["upto?ceiling=0.1", "batch-settlement"]) expect((await fetch(`${url}/dev/seller/${p}`)).status, p).to.equal(404);
    // Started from dist: node ran the compiled entry, with no compile step before it.
    expect(prod.text()).to.include("node dist/src/index.js").and.not.include("hardhat compile");

    const page = await (await fetch(`${url}/agents`, { headers: { Accept: "text/html" } })).text();
    const script = /src="(\/dashboard\/assets\/app-[A-Z0-9]+\.js)"/.exec(page)![1];
    const asset = await fetch(`${url}${script}`);
    expect(asset.status).to.equal(200);
    expect((await asset.text()).length).to.be.above(1000);

    const signalled = Date.now();
    prod.child.kill("SIGTERM");
    const { code, at } = await prod.exit;
    expect(code, prod.text().slice(-2000)).to.equal(0);
    expect(at - signalled).to.be.below(10_000);
    console.log(`      start:prod to /health 200: ${ready} ms; SIGTERM to exit: ${at - signalled} ms`);
    chainProc.child.kill("SIGTERM");
    mongoProc.child.kill("SIGTERM");
    await Promise.all([chainProc.exit, mongoProc.exit]);
  });
});
