/**
 * Transient answers never become an Idempotency-Key's answer (issue 27): a seller out of reach before anything was
 * paid, or another payment of the agent still in flight on another instance, answers `retryable: true` with
 * Retry-After and frees the key; the same key, once the cause is gone, gets the real outcome, which is then kept and
 * replayed with `Idempotent-Replayed: true`. Real chain, store, x402 seller and HTTP; the seller's outage is a real
 * server stopped and started again on the same port, and the wait behind another instance's payment is played with
 * the lease clock (no sleeping).
 */
import { expect } from "chai";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { idempotencyCaller, idempotencyScope } from "../../src/payments/idempotency";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { startTwoInstances, type TwoInstances } from "../helpers/twoInstances";
import { fundedFacilitator, mintUsdc, startV2Seller, usdcBalance, type TestSeller } from "../helpers/sellers";

const USDC = 1_000_000n;

/** A pass-through HTTP front of a seller, on one port, that can be stopped (nothing listens) and started again. */
interface Front {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Holds the next paid request until the returned function is called (resolves once it arrived). */
  holdPaid(): Promise<() => void>;
}

async function startFront(target: string): Promise<Front> {
  let port = 0;
  let server: Server | null = null;
  const holds: ((release: () => void) => void)[] = [];
  const paid = (req: IncomingMessage) =>
    typeof req.headers["payment-signature"] === "string" || typeof req.headers["x-payment"] === "string";
  const start = async () => {
    const s = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const forward = async () => {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(req.headers))
            if (typeof v === "string" && !["host", "connection", "content-length"].includes(k)) headers[k] = v;
          const r = await fetch(target + (req.url ?? "/"), {
            method: req.method,
            headers,
            body: chunks.length ? Buffer.concat(chunks) : undefined,
          });
          const out: Record<string, string> = {};
          r.headers.forEach((v, k) => {
            if (!["content-length", "content-encoding", "transfer-encoding", "connection"].includes(k)) out[k] = v;
          });
          res.writeHead(r.status, out).end(Buffer.from(await r.arrayBuffer()));
        };
        const hold = paid(req) ? holds.shift() : undefined;
        if (hold) hold(() => void forward());
        else void forward();
      });
    });
    await new Promise<void>((resolve, reject) => {
      s.once("error", reject);
      s.listen(port, "127.0.0.1", () => resolve());
    });
    port = (s.address() as AddressInfo).port;
    server = s;
  };
  await start();
  return {
    url: `http://127.0.0.1:${port}`,
    start,
    stop: () =>
      new Promise<void>((resolve) => {
        const s = server;
        server = null;
        if (!s) {
          resolve();
          return;
        }
        s.close(() => resolve());
        s.closeAllConnections();
      }),
    holdPaid: () => new Promise((arrived) => holds.push(arrived)),
  };
}

async function until<T>(what: () => Promise<T | null | undefined | false> | T | null | undefined | false): Promise<T> {
  for (;;) {
    const v = await what();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}

type Agent = { agentAddress: string; apiKey: string };
const pay = (s: Stack, ag: Agent, serviceUrl: string, key?: string) =>
  s.api("POST", "/pay", {
    key: ag.apiKey,
    headers: key ? { "Idempotency-Key": key } : {},
    body: { agentAddress: ag.agentAddress, serviceUrl, maxAmount: "1", intent: "transient" },
  });

describe("Idempotency-Key: a transient answer frees the key; the real outcome is kept and replayed", function () {
  this.timeout(120_000);

  describe("a seller unreachable before paying", () => {
    let s: Stack;
    let seller: TestSeller;
    let front: Front;

    before(async () => {
      s = await startStack();
      seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: USDC });
      front = await startFront(seller.url);
    });
    after(async () => {
      await front?.stop();
      await seller?.close();
      await s?.close();
    });

    it("answers 502 retryable with Retry-After, then the same key pays once the seller is back, and replays that", async () => {
      const ag = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
      await mintUsdc(s, ag.agentAddress, 5n * USDC);
      const url = `${front.url}/resource`;

      await front.stop();
      const down = await pay(s, ag, url, "seller-down-1");
      expect(down.status, JSON.stringify(down.body)).to.equal(502);
      expect(down.body).to.include({ error: "upstream_error", status: 502, retryable: true });
      expect(Number(down.headers.get("retry-after"))).to.be.greaterThan(0);
      expect(down.headers.get("idempotent-replayed")).to.equal(null);
      expect(seller.hits.paid).to.equal(0);

      await front.start();
      const paid = await pay(s, ag, url, "seller-down-1");
      expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
      expect(paid.body).to.include({ status: "approved", amount: "1" });
      expect(paid.headers.get("idempotent-replayed")).to.equal(null);

      const again = await pay(s, ag, url, "seller-down-1");
      expect(again.status).to.equal(200);
      expect(again.headers.get("idempotent-replayed")).to.equal("true");
      expect(again.body.transactionId).to.equal(paid.body.transactionId);
      expect(await usdcBalance(s, ag.agentAddress)).to.equal(4n * USDC);
      expect(seller.hits.paid).to.equal(1);
    });

    it("keeps a final refusal under its key and replays it with Idempotent-Replayed (a blocked payment)", async () => {
      const ag = await s.onboard(randomOwner(), { allowlist: ["api.example.com"] });
      const first = await pay(s, ag, `${front.url}/resource`, "final-1");
      expect(first.status).to.equal(422);
      expect(first.body).to.include({ status: "blocked", reason: "merchant_not_allowed" });
      expect(first.body).to.not.have.property("retryable");
      const again = await pay(s, ag, `${front.url}/resource`, "final-1");
      expect(again.status).to.equal(422);
      expect(again.headers.get("idempotent-replayed")).to.equal("true");
      expect(again.body).to.deep.equal(first.body);
    });
  });

  describe("another payment of the agent in flight on another instance", () => {
    const LEASE_MS = 5_000;
    let pair: TwoInstances;
    let seller: TestSeller;
    let front: Front;

    before(async () => {
      pair = await startTwoInstances({ env: { LOCK_LEASE_MS: String(LEASE_MS) } });
      seller = await startV2Seller({ facilitator: await fundedFacilitator(pair.a), usdc: pair.a.svc.config.usdcAddress, price: USDC });
      front = await startFront(seller.url);
    });
    after(async () => {
      await front?.stop();
      await seller?.close();
      await pair?.close();
    });

    it("answers 409 retryable and frees the key; once that payment is final the same key pays and is replayed", async () => {
      const { a, b } = pair;
      const ag = await a.onboard(randomOwner(), { perTxLimit: "1", dailyBudget: "20", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
      await mintUsdc(a, ag.agentAddress, 10n * USDC);
      const url = `${front.url}/resource`;

      // A's payment has left for the seller and is held there: A stalls with it in flight (as a crash would leave it).
      const arrived = front.holdPaid();
      const first = pay(a, ag, url);
      const release = await arrived;

      // B sees A's agent lock expire, takes it over, and waits for A's payment in flight...
      pair.skew = LEASE_MS + 1_000;
      const waiting = pay(b, ag, url, "behind-1");
      await until(() => b.logs.some((l) => l.includes("waiting for its payments in flight")));
      // ...until its wait runs out (two minutes on its lease clock).
      pair.skew += 125_000;
      const busy = await waiting;
      expect(busy.status, JSON.stringify(busy.body)).to.equal(409);
      expect(busy.body).to.include({ error: "conflict", status: 409, retryable: true });
      expect(busy.body.message).to.match(/still in flight/);
      expect(Number(busy.headers.get("retry-after"))).to.be.greaterThan(0);
      const caller = idempotencyCaller({ role: "agent", agentAddress: ag.agentAddress, keyPrefix: ag.apiKey.slice(0, 9) });
      const scope = idempotencyScope(caller, "behind-1");
      expect(await b.svc.store.idempotency.findOne({ scope })).to.equal(null); // freed

      // A wakes up and finishes its payment: the cause is gone.
      release();
      expect((await first).status).to.equal(200);
      pair.skew = 0;

      const retry = await pay(b, ag, url, "behind-1");
      expect(retry.status, JSON.stringify(retry.body)).to.equal(200);
      expect(retry.body).to.include({ status: "approved" });
      expect(retry.headers.get("idempotent-replayed")).to.equal(null);
      const replay = await pay(a, ag, url, "behind-1");
      expect(replay.status).to.equal(200);
      expect(replay.headers.get("idempotent-replayed")).to.equal("true");
      expect(replay.body.transactionId).to.equal(retry.body.transactionId);
      expect(await usdcBalance(a, ag.agentAddress)).to.equal(8n * USDC);
    });
  });
});
