/**
 * `npm start` under a supervisor: SIGTERM to the npm process while a payment is in flight (its payment header held
 * at the seller's door). npm's child is node itself (the script execs it), so the signal reaches the service: it stops
 * taking connections, lets the payment finish and answer, closes the store and the chain, and exits 0; the port is
 * free and the process gone within 10 s.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { expect } from "chai";
import { JsonRpcProvider, Wallet } from "ethers";
import { BASE_USDC } from "../../src/chain/addresses";
import { createInProcessFacilitator } from "../../src/x402/facilitator";
import { listen, sendJson } from "../helpers/sellerServer";
import { startV2Seller, type TestSeller } from "../helpers/sellers";
import { randomOwner, remoteStack } from "../helpers/stack";

const ROOT = join(__dirname, "..", "..");

/** Resolves with the first match of `pattern` in what the child prints (stdout and stderr together). */
function waitForOutput(child: ChildProcess, output: { text: string }, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const m = pattern.exec(output.text);
      if (m) {
        child.stdout?.off("data", check);
        child.stderr?.off("data", check);
        child.off("exit", exited);
        resolve(m);
      }
    };
    const exited = (code: number | null) => reject(new Error(`npm start exited (${code}) before printing ${pattern}:\n${output.text}`));
    child.stdout?.on("data", check);
    child.stderr?.on("data", check);
    child.once("exit", exited);
    check();
  });
}

/** True when nothing listens on the port any more (we can bind it ourselves). */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

describe("npm start and SIGTERM: a payment in flight finishes, the port is freed and the exit code is 0", function () {
  this.timeout(180_000);
  let child: ChildProcess | undefined;
  let seller: TestSeller | undefined;
  let gate: { close(): Promise<void> } | undefined;

  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await gate?.close();
    await seller?.close();
  });

  it("drains the payment its payment header is out for, then exits 0 within 10 s with the port free", async () => {
    const output = { text: "" };
    child = spawn("npm", ["start"], { cwd: ROOT, env: { ...process.env, PORT: "0", LOG_LEVEL: "info" }, stdio: "pipe" });
    child.stdout!.on("data", (d: Buffer) => (output.text += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (output.text += d.toString()));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
      child!.once("exit", (code, signal) => resolve({ code, signal, at: Date.now() })),
    );
    const [, url, port] = await waitForOutput(child, output, /SpendGate is running at (http:\/\/127\.0\.0\.1:(\d+))/);
    const [, rpcUrl] = await waitForOutput(child, output, /chain RPC:\s+(\S+)/);

    // A seller on the service's chain, settling through its own facilitator (a funded key of its own)...
    const key = Wallet.createRandom();
    const rpc = new JsonRpcProvider(rpcUrl, 8453, { staticNetwork: true });
    await rpc.send("hardhat_setBalance", [key.address, `0x${(10n ** 20n).toString(16)}`]);
    rpc.destroy();
    const facilitator = createInProcessFacilitator({ rpcUrl, chainId: 8453, privateKey: key.privateKey });
    seller = await startV2Seller({ facilitator, usdc: BASE_USDC, price: 1_000_000n });
    // ...behind a door that holds the paid request (the payment header is out: the payment is in flight) until the
    // service has begun to stop.
    let arrived!: () => void;
    const paymentOut = new Promise<void>((resolve) => (arrived = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const door = await listen(async (req, res, u) => {
      const chunks: Buffer[] = [];
      for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
      const paid = req.headers["payment-signature"] !== undefined || req.headers["x-payment"] !== undefined;
      if (paid) {
        arrived();
        await released;
      }
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter((e): e is [string, string] => typeof e[1] === "string" && e[0] !== "host"),
      );
      const upstream = await fetch(`${seller!.url}${u.pathname}`, {
        method: req.method,
        headers,
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      });
      const out: Record<string, string> = {};
      upstream.headers.forEach((v, k) => (k === "content-length" || k === "transfer-encoding" ? undefined : (out[k] = v)));
      const text = await upstream.text();
      if (!res.headersSent) res.writeHead(upstream.status, out).end(text);
      else sendJson(res, 500, { error: "door" });
    });
    gate = door;

    const s = remoteStack(url, 8453);
    const agent = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
    const faucet = await s.api("POST", "/dev/faucet", { body: { agentAddress: agent.agentAddress, amount: "5" } });
    expect(faucet.status, JSON.stringify(faucet.body)).to.equal(200);

    const pay = s.api("POST", "/pay", {
      key: agent.apiKey,
      body: { agentAddress: agent.agentAddress, serviceUrl: `${door.url}/resource`, maxAmount: "2", intent: "paid across a SIGTERM" },
    });
    await paymentOut;
    const signalled = Date.now();
    expect(process.kill(child.pid!, "SIGTERM")).to.equal(true);
    await waitForOutput(child, output, /shutting down/);
    // The listening socket is closed at once (the log line comes first; the socket's close takes a tick or two under
    // load): a new connection is refused while the payment finishes.
    expect(await freedWithin(Number(port), 2_000)).to.equal(true);
    release();

    const paid = await pay;
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body).to.include({ status: "approved", amount: "1" });
    expect(seller.settlements).to.have.length(1);

    const { code, signal, at } = await exit;
    expect({ code, signal }, output.text.slice(-2000)).to.deep.equal({ code: 0, signal: null });
    const ms = at - signalled;
    expect(ms, "SIGTERM to exit").to.be.below(10_000);
    expect(await portFree(Number(port))).to.equal(true);
    expect(output.text).to.match(/"msg":"stopped"/);
    console.log(`      SIGTERM to npm's exit: ${ms} ms (payment held until the shutdown began)`);
  });
});

/** Whether the port is free within `ms` (checked every 50 ms). */
async function freedWithin(port: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (await portFree(port)) return true;
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
