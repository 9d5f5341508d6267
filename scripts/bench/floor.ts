/**
 * `npx tsx scripts/bench/floor.ts`: the CPU this process spends on each operation an exact payment cannot do without,
 * through the libraries the service uses, with nothing of SpendGate's own around them: a store command (the mongodb
 * driver against one CongoDB server in another process), a JSON-RPC call (undici, to a server in another process), an
 * incoming request (Koa with its router, body parser and a zod schema, sent from another process), a signature
 * (src/chain/ecdsa.ts), an EIP-712 digest (ethers, prepared as src/wallets/provider.ts prepares it) and a signed
 * offer's signer (its digest and the native recovery, src/x402/offerReceipt.ts without its cache). Each is
 * measured alone and warm, one at a time and 8 at once (the throughput bench keeps about 100 payments in flight), as
 * process CPU (user + system) per operation.
 *
 * It then adds them up for the operations one approved exact payment makes (the counts below, read from the store's
 * command log and the service's own JSON-RPC counter on one payment): the least CPU a payment can cost the instance
 * with these libraries and these steps, before any of the service's own work. bench:throughput's warm window
 * measures the whole; the difference is the service's own code, the event loop's and the garbage collector's.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:http";
import { join } from "node:path";
import Koa from "koa";
import Router from "@koa/router";
import bodyParser from "koa-bodyparser";
import { z } from "zod";
import { MongoClient } from "mongodb";
import { Agent, request } from "undici";
import { SigningKey, TypedDataEncoder, Wallet, concat, keccak256, randomBytes as ethersRandom } from "ethers";
import { recoverDigestSigner, signDigest } from "../../src/chain/ecdsa";
import { offerDigest } from "../../src/x402/offerReceiptDigest";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../../src/chain/typedData";

const ROOT = join(__dirname, "..", "..");
const N = Number(process.env.FLOOR_OPS ?? 3000);

/** What one exact payment makes, as `npm run bench` counts it (the API key and webhook endpoints are cached for 1 s). */
const PAYMENT = {
  find: 1, // the agent
  findAndModify: 3, // the agent's lock, the entry, the gas charge
  update: 4, // the lock's fence, the authorisation with its tx hash, the outcome, the lock's release
  rpc: 4, // eth_call, eth_sendRawTransaction, 2 eth_getTransactionReceipt
  outgoing: 2, // the seller's 402 and the paid request
  incoming: 1, // POST /pay
  signature: 2, // the operator's authorisation transaction and the agent's transfer authorisation
  eip712: 2, // the transfer authorisation's digest and the transaction's (an RLP keccak, counted as one)
  signerChecks: 2, // a seller that signs (as /sell/agent-intel does): its offer's signer and its receipt's
};

/** CPU ms (this process) per call of `f`, after a warm-up, with `conc` calls at a time. */
async function cpuPerOp(f: (i: number) => unknown, conc: number, n = N): Promise<number> {
  for (let i = 0; i < 300; i++) await f(i);
  const c0 = process.cpuUsage();
  let next = 0;
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (next < n) await f(next++);
    }),
  );
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n / 1000;
}

function child(args: string[], ready: RegExp): Promise<{ proc: ChildProcess; match: RegExpExecArray }> {
  const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    proc.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const m = ready.exec(out);
      if (m) resolve({ proc, match: m });
    });
    proc.on("exit", (code) => reject(new Error(`${args.join(" ")} exited (${code}) before it was ready`)));
  });
}

/** Resolves when `proc` exits with 0. */
function exited(proc: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) =>
    proc.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`the load process exited with ${code}`)))),
  );
}

/** A JSON-RPC-shaped server in its own process: answers every POST with a 32-byte result. */
const RPC_SERVER = `require("http").createServer((q, r) => { let b = ""; q.on("data", (d) => (b += d)); q.on("end", () => {
  r.setHeader("content-type", "application/json"); r.end(JSON.stringify({ jsonrpc: "2.0", id: 1, result: "0x" + "00".repeat(32) })); });
}).listen(0, "127.0.0.1", function () { console.log("PORT=" + this.address().port); });`;

/** Sends argv[3] JSON POSTs to argv[1], argv[2] at a time, from its own process. */
const LOAD = `const { request, Agent } = require("undici"); const [url, conc, n] = process.argv.slice(1).map((x, i) => (i ? Number(x) : x));
const agent = new Agent({ connections: 16 }); const body = JSON.stringify({ agentAddress: "0x" + "11".repeat(20), serviceUrl: "https://example.com/x", maxAmount: "0.01" });
let next = 0; Promise.all(Array.from({ length: conc }, async () => { while (next++ < n) { const r = await request(url, { method: "POST", body, dispatcher: agent,
headers: { "content-type": "application/json", authorization: "Bearer sk_test" } }); await r.body.text(); } })).then(() => process.exit(0));`;

async function main(): Promise<void> {
  const rows: [string, number, number][] = [];
  const add = async (label: string, f: (i: number) => unknown) => rows.push([label, await cpuPerOp(f, 1), await cpuPerOp(f, 8)]);

  // The store: one CongoDB server in its own process, as in the production shape.
  const store = await child(["--import", "tsx", "scripts/cluster/mongo.ts"], /MONGODB_URI=(\S+)\n/);
  const client = new MongoClient(store.match[1], { maxPoolSize: 50, serverMonitoringMode: "poll" });
  try {
    await client.connect();
    const col = client.db("floor").collection<{ _id: number; v: number; pad: string }>("docs");
    await col.insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: i, v: 0, pad: "x".repeat(300) })));
    await add("store: findOne by _id", (i) => col.findOne({ _id: i % 100 }));
    await add("store: updateOne by _id", (i) => col.updateOne({ _id: i % 100 }, { $inc: { v: 1 } }));
    await add("store: findOneAndUpdate", (i) => col.findOneAndUpdate({ _id: i % 100 }, { $inc: { v: 1 } }, { returnDocument: "after" }));
  } finally {
    await client.close();
    store.proc.kill("SIGTERM");
  }

  // A JSON-RPC call out, over a keep-alive pool (as src/chain/rpc/rawRpc.ts).
  const rpc = await child(["-e", RPC_SERVER], /PORT=(\d+)\n/);
  const agent = new Agent({ connections: 16 });
  const call = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "eth_call",
    params: [{ to: `0x${"22".repeat(20)}`, data: `0x${"ab".repeat(196)}` }, "latest"],
  });
  try {
    await add("JSON-RPC call out (undici request)", async () => {
      const r = await request(`http://127.0.0.1:${rpc.match[1]}/`, {
        method: "POST",
        body: call,
        headers: { "content-type": "application/json" },
        dispatcher: agent,
      });
      return r.body.json();
    });
  } finally {
    await agent.close();
    rpc.proc.kill("SIGTERM");
  }

  // An incoming request: Koa, its router, the body parser and a zod schema; sent from another process.
  const app = new Koa();
  const router = new Router();
  const Body = z.object({ agentAddress: z.string().regex(/^0x[0-9a-fA-F]{40}$/), serviceUrl: z.url(), maxAmount: z.string() }).strict();
  router.post("/pay", (ctx) => {
    const body = Body.parse(ctx.request.body);
    ctx.body = { status: "approved", agentAddress: body.agentAddress, amount: body.maxAmount, txHash: `0x${"33".repeat(32)}` };
  });
  app.use(bodyParser()).use(router.routes());
  const server = createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/pay`;
  // This process's CPU per request while another process sends them, `conc` at a time (its first 300 warm it).
  const served = async (conc: number) => {
    await exited(spawn(process.execPath, ["-e", LOAD, url, String(conc), "300"], { cwd: ROOT, stdio: "inherit" }));
    const c0 = process.cpuUsage();
    await exited(spawn(process.execPath, ["-e", LOAD, url, String(conc), String(N)], { cwd: ROOT, stdio: "inherit" }));
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / N / 1000;
  };
  rows.push(["incoming request (Koa, router, body, zod)", await served(1), await served(8)]);
  server.close();

  // A signature, and an EIP-712 digest (a transfer authorisation's).
  const key = new SigningKey(ethersRandom(32));
  const digests = Array.from({ length: 64 }, () => `0x${Buffer.from(ethersRandom(32)).toString("hex")}`);
  await add("secp256k1 signature (src/chain/ecdsa.ts)", (i) => signDigest(key, digests[i % 64]));
  const domain = { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: `0x${"44".repeat(20)}` };
  const types = TRANSFER_WITH_AUTHORIZATION_TYPES;
  const from = Wallet.createRandom().address;
  // Prepared once, as src/wallets/provider.ts keeps them: the types' encoder and the domain's hash.
  const encoder = TypedDataEncoder.from(types);
  const domainHash = TypedDataEncoder.hashDomain(domain);
  await add("EIP-712 digest (ethers, encoder prepared)", (i) =>
    keccak256(
      concat([
        "0x1901",
        domainHash,
        encoder.hash({ from, to: from, value: 10_000n + BigInt(i), validAfter: 0n, validBefore: 2n ** 40n, nonce: digests[i % 64] }),
      ]),
    ),
  );

  // A signed offer's (or receipt's) signer: its EIP-712 digest and the recovery (src/x402/offerReceipt.ts, uncached).
  const offer = { version: 1, resourceUrl: url, scheme: "exact", network: "eip155:8453", asset: from, payTo: from, amount: "10000" };
  const offerSignature = signDigest(key, offerDigest({ ...offer, validUntil: 0 })!).serialized;
  await add("signer of a signed offer (digest + recovery)", (i) =>
    recoverDigestSigner(offerDigest({ ...offer, amount: String(i), validUntil: i })!, offerSignature),
  );

  console.log(`CPU of this process per operation, warm, ${N} operations each (ms):`);
  console.log(`${"".padEnd(46)}1 at a time   8 at a time`);
  for (const [label, one, eight] of rows) console.log(`${label.padEnd(46)}${one.toFixed(3).padStart(11)}${eight.toFixed(3).padStart(14)}`);
  const at = (label: string) => rows.find((r) => r[0].startsWith(label))!;
  const floor = (k: 1 | 2) =>
    PAYMENT.find * at("store: findOne")[k] +
    PAYMENT.findAndModify * at("store: findOneAndUpdate")[k] +
    PAYMENT.update * at("store: updateOne")[k] +
    (PAYMENT.rpc + PAYMENT.outgoing) * at("JSON-RPC call out")[k] +
    PAYMENT.incoming * at("incoming request")[k] +
    PAYMENT.signature * at("secp256k1")[k] +
    PAYMENT.eip712 * at("EIP-712")[k] +
    PAYMENT.signerChecks * at("signer of a signed offer")[k];
  console.log(
    `one exact payment's operations (${Object.entries(PAYMENT)
      .map(([k, v]) => `${v} ${k}`)
      .join(", ")}): ${floor(1).toFixed(2)} ms one at a time, ${floor(2).toFixed(2)} ms 8 at a time`,
  );
  process.exit(0);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
