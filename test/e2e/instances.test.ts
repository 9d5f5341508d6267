/**
 * Several instances on one chain and one database, each relaying with its own operator key (members of the chain's
 * OperatorSet): one agent's payments are serialised across them, one indexer runs at a time, and a killed instance's
 * in-flight payments are finished by its restart at once, or by a survivor once their lease has passed.
 */
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { Wallet } from "ethers";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { startEmbeddedMongo, type EmbeddedMongo } from "../../src/dev/embeddedStore";
import { Leases } from "../../src/store/leases";
import { idempotencyScope, requestHashOf } from "../../src/payments/idempotency";
import { startStack, randomOwner, type Stack } from "../helpers/stack";
import { fundedFacilitator, mintUsdc, startV2Seller, usdcBalance } from "../helpers/sellers";
import { startRpcProxy } from "../../scripts/bench/rpcProxy";
import { holdingSeller } from "../helpers/sellerHolding";
import { freePort } from "../helpers/sellerServer";

const USDC = 1_000_000n;
const ROOT = join(__dirname, "..", "..");

describe("several instances on one chain and one database", function () {
  this.timeout(180_000);
  let chain: EmbeddedChain;
  let mongo: EmbeddedMongo;
  let a: Stack;
  let b: Stack;
  const keyB = Wallet.createRandom();
  const keyC = Wallet.createRandom();
  const facilitatorC = Wallet.createRandom();
  let env: Record<string, string>;
  const children: ChildProcess[] = [];

  before(async () => {
    chain = await startEmbeddedChain({ operators: [keyB.address, keyC.address, facilitatorC.address] });
    mongo = await startEmbeddedMongo();
    env = {
      MONGODB_URI: mongo.uri,
      MONGODB_DB: `instances_${randomBytes(4).toString("hex")}`,
      WALLET_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      LOG_LEVEL: "warn",
    };
    a = await startStack({ ...env, INSTANCE_ID: "inst-a", LOCK_LEASE_MS: "5000" }, { embeddedChain: chain });
    b = await startStack(
      { ...env, INSTANCE_ID: "inst-b", LOCK_LEASE_MS: "5000" },
      { embeddedChain: chain, operatorPrivateKey: keyB.privateKey },
    );
  });
  after(async () => {
    for (const c of children) c.kill("SIGKILL");
    await a?.close();
    await b?.close();
    await mongo?.stop();
    await chain?.close();
  });

  it("relays from each instance's own key, and serialises one agent's payments across the instances", async () => {
    expect(a.svc.chain.operator.address).to.not.equal(b.svc.chain.operator.address);
    const agent = await a.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "20", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await mintUsdc(a, agent.agentAddress, 20n * USDC);
    const sellUrl = `${a.url}/sell/agent-intel`;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 ? b : a).api("POST", "/pay", {
          key: agent.apiKey,
          body: { agentAddress: agent.agentAddress, serviceUrl: sellUrl, maxAmount: "1", intent: `p${i}` },
        }),
      ),
    );
    expect(
      results.map((r) => r.status),
      JSON.stringify(results.map((r) => r.body)),
    ).to.deep.equal(Array(10).fill(200));
    const docs = await a.svc.store.payments.find({ agentAddress: agent.agentAddress }).sort({ createdAt: 1 }).toArray();
    expect(docs).to.have.length(10);
    expect(new Set(docs.map((d) => d.instanceId))).to.deep.equal(new Set(["inst-a", "inst-b"]));
    // One at a time: each payment began after the previous one had finished, whichever instance ran it.
    for (let i = 1; i < docs.length; i++) expect(docs[i].createdAt.getTime()).to.be.at.least(docs[i - 1].updatedAt.getTime());
    // Both instances relayed authorisations, each from its own key.
    const senders = new Set<string>();
    for (const d of docs) senders.add((await a.svc.chain.provider.getTransaction(d.authorizeTxHash!))!.from);
    expect(senders).to.deep.equal(new Set([a.svc.chain.operator.address, b.svc.chain.operator.address]));
    // The ledger is complete on both.
    for (const s of [a, b])
      expect((await s.api("GET", `/ledger?address=${agent.agentAddress}`, { key: agent.apiKey })).body.total).to.equal(10);
  });

  it("runs one indexer at a time; when its holder stops, another instance takes the lease over", async () => {
    const leases = new Leases(a.svc.store, "observer");
    const name = `indexer:${a.svc.config.chainId}`;
    const leader = async () => {
      for (;;) {
        const holder = await leases.holderOf(name);
        if (holder) return holder;
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const first = await leader();
    expect(["inst-a", "inst-b"]).to.include(first);
    expect([a.svc.indexerLease.leader, b.svc.indexerLease.leader].filter(Boolean)).to.have.length.at.most(1);
    // A new instance under the leader's id frees its predecessor's lease; here the leader simply stops.
    const [stopping, staying] = first === "inst-a" ? [a, b] : [b, a];
    await stopping.svc.indexer.stop();
    await stopping.svc.indexerLease.release();
    for (;;) {
      if ((await leases.holderOf(name)) === staying.svc.services.ctx.instanceId) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(staying.svc.indexerLease.leader).to.equal(true);
    stopping.svc.indexer.start(500, () => stopping.svc.indexerLease.hold());
  });

  it("leases: one holder at a time, taken over only once expired, and a lost lease can neither renew nor free", async () => {
    let now = Date.now();
    const one = new Leases(a.svc.store, "one", () => now);
    const two = new Leases(a.svc.store, "two", () => now);
    const t1 = await one.tryAcquire("test:lease", 1_000);
    expect(t1).to.be.a("string");
    expect(await two.tryAcquire("test:lease", 1_000)).to.equal(null);
    now += 999;
    expect(await two.tryAcquire("test:lease", 1_000)).to.equal(null);
    now += 2;
    const t2 = await two.tryAcquire("test:lease", 1_000);
    expect(t2).to.be.a("string");
    expect(await one.renew("test:lease", t1!, 1_000)).to.equal(false);
    await one.release("test:lease", t1!);
    expect(await one.tryAcquire("test:lease", 1_000)).to.equal(null);
    // A restart under the same id frees what its predecessor held.
    expect(await new Leases(a.svc.store, "two", () => now).releaseAllOf()).to.equal(1);
    expect(await one.tryAcquire("test:lease", 1_000)).to.be.a("string");
  });

  it("an Idempotency-Key whose instance died before paying is taken over by a repeat on another instance", async () => {
    const body = { intent: "takeover" };
    const scope = idempotencyScope("caller-x", "key-x");
    const now = new Date();
    await a.svc.store.idempotency.insertOne({
      scope,
      requestHash: requestHashOf(body),
      state: "in_progress",
      response: null,
      holder: "inst-gone",
      leaseUntil: new Date(now.getTime() - 1),
      createdAt: now,
      expiresAt: new Date(now.getTime() + 3_600_000),
    });
    let ran = 0;
    // Any answer will do: an error body numbered by the runs.
    const answer = () => Promise.resolve({ error: { error: "conflict", message: `run ${++ran}`, status: 409 } });
    const res = await b.svc.services.idempotency.run("caller-x", "key-x", body, answer);
    expect(res).to.deep.include({ replayed: false, error: { error: "conflict", message: "run 1", status: 409 } });
    expect(await a.svc.store.idempotency.findOne({ scope })).to.include({ state: "done", holder: "inst-b" });
    // Once answered, a repeat replays it.
    const again = await a.svc.services.idempotency.run("caller-x", "key-x", body, answer);
    expect(again).to.deep.include({ replayed: true, error: { error: "conflict", message: "run 1", status: 409 } });
  });

  async function spawnC(rpcUrl = chain.rpcUrl): Promise<{ url: string; child: ChildProcess }> {
    const port = await freePort();
    const child = spawn(process.execPath, ["--import", "tsx", "src/index.ts"], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...env,
        PORT: String(port),
        RPC_URL: rpcUrl,
        OPERATOR_PRIVATE_KEY: keyC.privateKey,
        INSTANCE_ID: "inst-c",
        FACTORY_ADDRESS: chain.addresses.factory,
        FACTORY_DEPLOY_BLOCK: String(chain.deployBlock),
        FACILITATOR_PRIVATE_KEY: facilitatorC.privateKey,
        GENESIS_OPEN: "true",
        ALLOW_PRIVATE_SELLERS: "true",
        ALLOW_HTTP_SELLERS: "true",
        CONFIRMATIONS: "0",
        LOCK_LEASE_MS: "1000",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let out = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`instance C did not start:\n${out}`)), 60_000);
      const watch = (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("SpendGate is running")) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout.on("data", watch);
      child.stderr.on("data", watch);
      child.once("exit", (code) => reject(new Error(`instance C exited (${code}):\n${out}`)));
    });
    return { url: `http://127.0.0.1:${port}`, child };
  }

  /** Pays through instance C and SIGKILLs it once the seller holds the paid request (authorised, not settled). */
  async function payAndKillC(
    seller: Awaited<ReturnType<typeof holdingSeller>>,
    agent: { agentAddress: string; apiKey: string },
    key: string,
  ) {
    const c = await spawnC();
    const held = seller.nextPaid();
    fetch(`${c.url}/pay`, {
      method: "POST",
      headers: { Authorization: `Bearer ${agent.apiKey}`, "Content-Type": "application/json", "Idempotency-Key": key },
      body: JSON.stringify({ agentAddress: agent.agentAddress, serviceUrl: seller.url, maxAmount: "1", intent: key }),
    }).catch(() => undefined);
    await held;
    c.child.kill("SIGKILL");
    await new Promise((r) => c.child.once("exit", r));
    const doc = await a.svc.store.payments.findOne({ agentAddress: agent.agentAddress, intent: key });
    expect(doc).to.include({ status: "processing", phase: "authorized", instanceId: "inst-c" });
    expect(doc!.leaseUntil!.getTime()).to.be.greaterThan(Date.now() + 60_000); // the default 180 s lease
    return doc!;
  }

  it("a killed instance restarted under its id takes over its in-flight payment at once (no lease wait)", async () => {
    const seller = await holdingSeller(a.svc.config.usdcAddress);
    const agent = await a.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "5", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await mintUsdc(a, agent.agentAddress, 5n * USDC);
    const doc = await payAndKillC(seller, agent, "restart-1");
    // The survivors leave a payment whose lease still runs alone.
    expect(await a.svc.services.payments.recover()).to.equal(0);
    const started = Date.now();
    const c = await spawnC(); // same key, same INSTANCE_ID
    const after = await a.svc.store.payments.findOne({ txnId: doc.txnId });
    expect(after).to.include({ status: "failed", phase: "done" });
    expect(Date.now() - started).to.be.below(60_000);
    expect(await a.svc.services.payments.ops.paymentState(agent.agentAddress, doc.paymentId!)).to.equal(0);
    expect(await usdcBalance(a, agent.agentAddress)).to.equal(5n * USDC);
    c.child.kill("SIGKILL");
    await seller.close();
  });

  it("a dead instance's in-flight payment is finished by a survivor once its lease has passed, and its key answers", async () => {
    const seller = await holdingSeller(a.svc.config.usdcAddress);
    const agent = await a.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "5", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await mintUsdc(a, agent.agentAddress, 5n * USDC);
    const doc = await payAndKillC(seller, agent, "dead-1");
    expect(await b.svc.services.payments.recover()).to.equal(0);
    // Recovery's clock moved past the 180 s lease (the dead instance's agent lock lease, 1 s, simply runs out).
    expect(await b.svc.services.payments.recover(new Date(Date.now() + 181_000))).to.equal(1);
    expect(await a.svc.store.payments.findOne({ txnId: doc.txnId })).to.include({ status: "failed", phase: "done", instanceId: "inst-b" });
    const retry = await a.api("POST", "/pay", {
      key: agent.apiKey,
      headers: { "Idempotency-Key": "dead-1" },
      body: { agentAddress: agent.agentAddress, serviceUrl: seller.url, maxAmount: "1", intent: "dead-1" },
    });
    expect(retry.status).to.equal(502);
    expect(retry.headers.get("idempotent-replayed")).to.equal("true");
    expect(await usdcBalance(a, agent.agentAddress)).to.equal(5n * USDC);
    await seller.close();
  });

  /**
   * Pays through instance C, whose JSON-RPC goes through a proxy, and SIGKILLs it once its authorizePayment is held at
   * the proxy: committed in the ledger, never seen by the chain. `lastSend` lets that transaction through, as a send
   * already on the wire when the process died.
   */
  async function killWithUnsentPayment(intent: string) {
    const seller = await startV2Seller({ facilitator: await fundedFacilitator(b), usdc: b.svc.config.usdcAddress, price: USDC });
    const agent = await a.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "5", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await mintUsdc(a, agent.agentAddress, 5n * USDC);
    const rpc = await startRpcProxy(chain.rpcUrl);
    const c = await spawnC(rpc.url);
    const held = rpc.holdNext("eth_sendRawTransaction");
    fetch(`${c.url}/pay`, {
      method: "POST",
      headers: { Authorization: `Bearer ${agent.apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent }),
    }).catch(() => undefined);
    const lastSend = await held;
    c.child.kill("SIGKILL");
    await new Promise((r) => c.child.once("exit", r));
    const doc = (await a.svc.store.payments.findOne({ agentAddress: agent.agentAddress, intent }))!;
    expect(doc).to.include({ status: "processing", phase: "authorizing", authorizeTxHash: null, instanceId: "inst-c" });
    const nonce = await a.svc.chain.provider.getTransactionCount(keyC.address);
    /** Lets the held authorisation reach the chain and waits until it is mined. */
    const sendLate = async () => {
      lastSend();
      for (let i = 0; i < 100 && (await a.svc.chain.provider.getTransactionCount(keyC.address)) === nonce; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await a.svc.chain.provider.getTransactionCount(keyC.address)).to.equal(nonce + 1);
    };
    const close = async () => {
      lastSend();
      await rpc.close();
      await seller.close();
    };
    return { agent, doc, seller, sendLate, close };
  }

  /** What the void leaves: the payment failed, its paymentId void, and a late authorisation of it reverted. */
  async function expectVoided(agentAddress: string, doc: { txnId: string; paymentId: string | null }) {
    const after = await a.svc.store.payments.findOne({ txnId: doc.txnId });
    expect(after).to.include({ status: "failed", phase: "done", reason: "not_authorized" });
    expect(after!.voidTxHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(await a.svc.services.payments.ops.paymentState(agentAddress, doc.paymentId!)).to.equal(2);
  }

  it("a payment a dead instance committed but never sent is voided by a survivor at once; the agent pays again; the send it left reverts", async () => {
    const { agent, doc, seller, sendLate, close } = await killWithUnsentPayment("unsent-1");
    try {
      // Past the payment's lease, long before its validBefore (which recovery used to wait for).
      expect(await b.svc.services.payments.recover(new Date(Date.now() + 181_000))).to.equal(1);
      await expectVoided(agent.agentAddress, doc);
      const again = await a.api("POST", "/pay", {
        key: agent.apiKey,
        body: { agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent: "unsent-2" },
      });
      expect(again.status, JSON.stringify(again.body)).to.equal(200);
      await sendLate();
      await expectVoided(agent.agentAddress, doc);
      expect(await usdcBalance(a, agent.agentAddress)).to.equal(4n * USDC);
      expect(await a.svc.chain.policyAt(agent.agentAddress, a.svc.chain.provider).spentToday()).to.equal(USDC);
    } finally {
      await close();
    }
  });

  it("a restart under the dead instance's id voids the payment it committed but may not have sent, at once", async () => {
    const { agent, doc, sendLate, close } = await killWithUnsentPayment("unsent-3");
    try {
      const c = await spawnC(); // same key, same INSTANCE_ID: its start-up recovery takes its own payments
      c.child.kill("SIGKILL");
      await expectVoided(agent.agentAddress, doc);
      // The restart's void took the nonce of the send C left behind, which the node now refuses; had that send been
      // there first, the void would have reverted and recovery released the authorisation (safety.test.ts).
      await sendLate();
      await expectVoided(agent.agentAddress, doc);
      expect(await usdcBalance(a, agent.agentAddress)).to.equal(5n * USDC);
      expect(await a.svc.chain.policyAt(agent.agentAddress, a.svc.chain.provider).spentToday()).to.equal(0n);
    } finally {
      await close();
    }
  });
});
