/** `npm start` with no environment: the embedded sandbox starts, says what it started, and answers. */
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";

const ROOT = join(__dirname, "..", "..");

describe("npm start (embedded mode, no setup)", function () {
  this.timeout(120_000);
  let child: ChildProcess | undefined;
  let out = "";

  before(async () => {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, PORT: "0" };
    child = spawn(process.execPath, ["--import", "tsx", "src/index.ts"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start-up banner within 90 s:\n${out}`)), 90_000);
      const watch = (b: Buffer) => {
        out += b.toString();
        if (/multicall3:.*\n/.test(out) && out.includes("database:")) {
          clearTimeout(timer);
          resolve();
        }
      };
      child!.stdout!.on("data", watch);
      child!.stderr!.on("data", watch);
      child!.once("exit", (code) => reject(new Error(`exited with ${code}:\n${out}`)));
    });
  });
  after(() => {
    child?.kill("SIGTERM");
  });

  it("prints the API URL, the chain's RPC URL, chain id 8453 and the contract addresses, and says it is a sandbox", () => {
    expect(out).to.match(/EMBEDDED MODE/);
    expect(out).to.match(/network:\s+base \(chain id 8453\), a sandbox/);
    expect(out).to.match(/chain RPC:\s+http:\/\/127\.0\.0\.1:\d+/);
    expect(out).to.match(/USDC:\s+0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913/);
    expect(out).to.match(/factory:\s+0x[0-9a-fA-F]{40}/);
    expect(out).to.match(/multicall3:\s+0xcA11bde05977b3631167028862bE2a173976CA11/);
    expect(out).to.match(
      /Uniswap v3:\s+SwapRouter02 0x[0-9a-fA-F]{40}, QuoterV2 0x[0-9a-fA-F]{40}, USDC\/WETH 0\.05% pool 0x[0-9a-fA-F]{40} \(WETH 0x4200000000000000000000000000000000000006\)/,
    );
    expect(out).to.not.match(/0x[0-9a-fA-F]{64}/); // no private key is ever printed
  });

  it("answers eth_chainId = 0x2105 on the printed RPC URL and GET /health on the printed API URL", async () => {
    const rpc = /chain RPC:\s+(\S+)/.exec(out)![1];
    const res = await fetch(rpc, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    expect(((await res.json()) as { result: string }).result).to.equal("0x2105");
    const api = /API:\s+(\S+)/.exec(out)![1];
    const health = await fetch(`${api}/health`);
    expect(health.status).to.equal(200);
    expect(await health.json()).to.include({ status: "ok", mode: "embedded", chainId: 8453 });
  });

  it("stops cleanly on SIGTERM", async () => {
    const exited = new Promise<number | null>((r) => child!.once("exit", (code) => r(code)));
    child!.kill("SIGTERM");
    expect(await exited).to.equal(0);
    child = undefined;
  });
});
