import { readFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { expect } from "chai";
import pino from "pino";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { fundedFacilitator, mintUsdc, startV2Seller, type TestSeller } from "../helpers/sellers";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { WebhookWorker, type WorkerOptions } from "../../src/webhooks/worker";
import { webhookSecretKey } from "../../src/webhooks/secrets";
import { loadConfig } from "../../src/config";
import { startService } from "../../src/server";

const WALLET_ENCRYPTION_KEY = randomBytes(32).toString("hex");
const TIMEOUT_MS = 300;

type Verify = (rawBody: string, header: unknown, secret: string, toleranceSeconds?: number, nowSeconds?: number) => boolean;

/** The verification recipe exactly as docs/webhooks.md documents it (its first js block under "Verifying a delivery"). */
function readmeRecipe(): Verify {
  const readme = readFileSync(join(__dirname, "../../docs/webhooks.md"), "utf8");
  const section = readme.slice(readme.indexOf("### Verifying a delivery"));
  const code = /```js\n([\s\S]*?)```/.exec(section)![1];
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- runs the README's snippet as a reader would paste it
  return new Function("require", `${code}\nreturn verifySpendGate;`)(require) as Verify;
}

describe("webhook deliveries to a real local receiver", () => {
  let s: Stack;
  let receiver: Receiver;
  let owner: ReturnType<typeof randomOwner>;
  let key: string;
  let seller: TestSeller;
  const logs: string[] = [];
  const logger = pino(
    { level: "info" },
    new Writable({
      write: (c, _e, cb) => {
        logs.push(c.toString());
        cb();
      },
    }),
  );

  before(async () => {
    s = await startStack({
      WALLET_ENCRYPTION_KEY,
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      WEBHOOK_BACKOFF_BASE_MS: "20",
      WEBHOOK_POLL_MS: "50",
    });
    receiver = await startReceiver();
    owner = randomOwner();
    key = await ownerKey(s, owner);
    seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 1_000_000n });
  });
  after(async () => {
    await seller?.close();
    await receiver?.close();
    await s?.close();
  });

  const register = async (events: string[], url = receiver.url, k = key) => {
    const res = await s.api("POST", "/webhooks", { key: k, body: { url, events } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { id: string; secret: string };
  };
  const deliveries = async (id: string, k = key) =>
    (await s.api("GET", `/webhooks/${id}/deliveries?limit=200`, { key: k })).body.deliveries;
  const worker = (opts: Partial<WorkerOptions> = {}) =>
    new WebhookWorker(
      s.svc.webhooks.outbox,
      webhookSecretKey(WALLET_ENCRYPTION_KEY),
      { allowHttp: true, allowPrivate: true, timeoutMs: TIMEOUT_MS, backoffBaseMs: 20, pollMs: 50, ...opts },
      logger,
    );
  const sendTest = async (id: string, k = key) => {
    const res = await s.api("POST", `/webhooks/${id}/test`, { key: k });
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    return res.body as { eventId: string; deliveryId: string };
  };

  it("signs every delivery so that the README's recipe verifies it (and refuses a changed body, another secret, an old timestamp)", async () => {
    const verify = readmeRecipe();
    const ep = await register(["agent.paused"]);
    const { eventId } = await sendTest(ep.id);
    const [req] = (await receiver.until((r) => r.some((x) => x.body.id === eventId))).filter((x) => x.body.id === eventId);
    expect(req.body).to.have.keys(["id", "type", "createdAt", "data"]);
    expect(req.body.type).to.equal("webhook.test");
    expect(req.headers["content-type"]).to.equal("application/json");
    expect(req.headers["spendgate-event-id"]).to.equal(eventId);
    const header = req.headers["spendgate-signature"] as string;
    expect(header).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verify(req.raw, header, ep.secret)).to.equal(true);
    expect(verify(req.raw.replace("test event", "tost event"), header, ep.secret)).to.equal(false);
    expect(verify(req.raw, header, `whsec_${randomBytes(32).toString("base64url")}`)).to.equal(false);
    const t = Number(/t=(\d+)/.exec(header)![1]);
    expect(verify(req.raw, header, ep.secret, 300, t + 301)).to.equal(false);
    expect(verify(req.raw, header.replace(/t=\d+/, `t=${t + 1}`), ep.secret, 300, t)).to.equal(false);
    expect(verify(req.raw, undefined, ep.secret)).to.equal(false);
  });

  it("retries after 500s and after a time-out, then delivers; the delivery log lists every attempt", async () => {
    const ep = await register(["agent.paused"]);
    receiver.script(500, 500, "hang", 200);
    const { eventId, deliveryId } = await sendTest(ep.id);
    const got = (await receiver.until((r) => r.filter((x) => x.body.id === eventId).length === 4)).filter((x) => x.body.id === eventId);
    expect(got.map((g) => g.answered)).to.deep.equal([500, 500, "hang", 200]);
    expect(new Set(got.map((g) => g.raw)).size, "the same body every time").to.equal(1);
    let d;
    for (let i = 0; i < 500 && d?.status !== "delivered"; i++)
      d = (await deliveries(ep.id)).find((x: { id: string }) => x.id === deliveryId);
    expect(d).to.include({ status: "delivered", attempts: 4, lastHttpStatus: 200, lastError: null, eventId, nextAttemptAt: null });
    expect(d.log.map((a: { attempt: number }) => a.attempt)).to.deep.equal([1, 2, 3, 4]);
    expect(d.log.map((a: { httpStatus: number | null }) => a.httpStatus)).to.deep.equal([500, 500, null, 200]);
    expect(d.log[0].error).to.equal("http_500");
    expect(d.log[2].error).to.match(/^timeout/);
    expect(d.log[2].latencyMs).to.be.at.least(TIMEOUT_MS - 20);
    expect(d.payload.id).to.equal(eventId);
  });

  it("never follows a redirect: a 3xx answer is a failed attempt, retried at the registered URL", async () => {
    const ep = await register(["agent.paused"]);
    receiver.script(307, 302);
    const { eventId, deliveryId } = await sendTest(ep.id);
    const got = (await receiver.until((r) => r.some((x) => x.body.id === eventId && x.answered === 200))).filter(
      (x) => x.body.id === eventId,
    );
    expect(got.map((g) => g.answered)).to.deep.equal([307, 302, 200]);
    expect(got.every((g) => g.path === "/hooks")).to.equal(true);
    expect(receiver.requests.some((r) => r.path === "/redirected")).to.equal(false);
    let d;
    for (let i = 0; i < 500 && d?.status !== "delivered"; i++)
      d = (await deliveries(ep.id)).find((x: { id: string }) => x.id === deliveryId);
    expect(d.log.map((a: { error: string | null }) => a.error?.slice(0, 8) ?? null)).to.deep.equal(["redirect", "redirect", null]);
  });

  it("delivers nothing to a private address in production mode: the SSRF guard refuses it, logs it, and no connection is made", async () => {
    await s.svc.webhooks.worker.stop(); // only the production-mode worker below runs
    try {
      const ep = await register(["agent.paused"]);
      const local = await register(["agent.paused"], receiver.url.replace("127.0.0.1", "localhost"));
      const a = await sendTest(ep.id);
      const b = await sendTest(local.id);
      const connections = receiver.connections;
      const requests = receiver.requests.length;
      // A long backoff: each delivery is attempted once here, however slow the machine.
      const production = worker({ allowPrivate: false, allowHttp: true, backoffBaseMs: 60_000 });
      expect(await production.drain()).to.equal(2);
      expect(receiver.connections).to.equal(connections);
      expect(receiver.requests.length).to.equal(requests);
      for (const [id, dl] of [
        [ep.id, a.deliveryId],
        [local.id, b.deliveryId],
      ]) {
        const d = (await deliveries(id)).find((x: { id: string }) => x.id === dl);
        expect(d.status).to.equal("pending");
        expect(d.log[0]).to.include({ httpStatus: null, latencyMs: null });
        expect(d.log[0].error).to.match(/^unsafe_address: .* resolves to a private address; refused by the SSRF guard/);
      }
      expect(logs.some((l) => l.includes("refused before connecting") && l.includes(a.deliveryId))).to.equal(true);
      // Plain http is refused as well where only https is allowed, before any connection.
      const httpsOnly = worker({
        allowPrivate: true,
        allowHttp: false,
        backoffBaseMs: 60_000,
        now: () => new Date(Date.now() + 5 * 60_000),
      });
      expect(await httpsOnly.drain()).to.equal(2);
      expect(receiver.connections).to.equal(connections);
      const d = (await deliveries(ep.id)).find((x: { id: string }) => x.id === a.deliveryId);
      expect(d.log[1].error).to.match(/^insecure_url/);
      // Disabled, so that the tests after this one see none of its retries.
      for (const id of [ep.id, local.id]) expect((await s.api("DELETE", `/webhooks/${id}`, { key })).status).to.equal(200);
    } finally {
      s.svc.webhooks.worker.start();
    }
  });

  it("announces a pending approval within one second of POST /pay's 202", async () => {
    const o = randomOwner();
    const k = await ownerKey(s, o);
    const ep = await register(["approval.requested"], receiver.url, k);
    const a = await s.onboard(o, { allowlist: ["127.0.0.1"], approvalThreshold: "0.5" });
    await mintUsdc(s, a.agentAddress, 10_000_000n);
    const res = await s.api("POST", "/pay", {
      key: a.apiKey,
      body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "2", intent: "needs approval" },
    });
    const answeredAt = Date.now();
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    const [req] = (await receiver.until((r) => r.some((x) => x.body.data.approvalId === res.body.approvalId), 1_000)).filter(
      (x) => x.body.data.approvalId === res.body.approvalId,
    );
    expect(req.at - answeredAt).to.be.below(1_000);
    expect(req.body.type).to.equal("approval.requested");
    expect(req.body.data).to.include({
      agentAddress: a.agentAddress,
      merchant: "127.0.0.1",
      amount: "1",
      intent: "needs approval",
      transactionId: res.body.transactionId,
    });
    expect(readmeRecipe()(req.raw, req.headers["spendgate-signature"], ep.secret)).to.equal(true);
  });

  it("resumes pending deliveries after a restart, and an attempt cut short by a crash once its lease ends", async () => {
    await s.svc.webhooks.worker.stop();
    const ep = await register(["agent.paused"]);
    const queued = [await sendTest(ep.id), await sendTest(ep.id)];
    // A worker that claims one delivery and dies before sending it (its claim is all a crash leaves behind).
    const crashed = worker();
    const claimed = await (crashed as unknown as { claim(): Promise<{ deliveryId: string } | null> }).claim();
    expect(claimed).to.not.equal(null);
    const restarted = worker();
    restarted.start();
    try {
      const others = queued.filter((q) => q.deliveryId !== claimed!.deliveryId);
      await receiver.until((r) => others.every((q) => r.some((x) => x.body.id === q.eventId)));
      await restarted.stop(); // its attempts recorded: the clock moved below must find nothing else due
      const interrupted = queued.find((q) => q.deliveryId === claimed!.deliveryId)!;
      expect(
        receiver.requests.some((x) => x.body.id === interrupted.eventId),
        "not while the lease holds",
      ).to.equal(false);
      // Later than the lease (the request's time limit twice and 30 s): the clock moves instead of the test waiting.
      const later = worker({ now: () => new Date(Date.now() + TIMEOUT_MS * 2 + 31_000) });
      expect(await later.drain()).to.equal(1);
      const d = (await deliveries(ep.id)).find((x: { id: string }) => x.id === interrupted.deliveryId);
      expect(d).to.include({ status: "delivered", attempts: 2 });
      expect(d.log.map((x: { attempt: number }) => x.attempt)).to.deep.equal([2]);
    } finally {
      await restarted.stop();
      s.svc.webhooks.worker.start();
    }
  });

  it("a second service started on the same store delivers what the first left pending, and with both running each event is sent once", async () => {
    await s.svc.webhooks.worker.stop(); // the first instance stops delivering (as if it had died)
    const ep = await register(["agent.paused"]);
    const left = [await sendTest(ep.id), await sendTest(ep.id), await sendTest(ep.id)];
    const env = {
      PORT: "0",
      MONGODB_URI: s.svc.embeddedMongo!.uri,
      MONGODB_DB: s.svc.store.db.databaseName,
      WALLET_ENCRYPTION_KEY,
      WEBHOOK_BACKOFF_BASE_MS: "20",
      WEBHOOK_POLL_MS: "50",
      LOG_LEVEL: "silent",
    };
    const second = await startService(loadConfig(env), { embeddedChain: s.svc.embeddedChain, logger });
    try {
      await receiver.until((r) => left.every((q) => r.some((x) => x.body.id === q.eventId)));
      s.svc.webhooks.worker.start();
      const before = receiver.requests.length;
      const [firstBefore, secondBefore] = [s.svc.webhooks.worker.attempted, second.webhooks.worker.attempted];
      const more: { eventId: string; deliveryId: string }[] = [];
      for (let i = 0; i < 20; i++) more.push(await sendTest(ep.id));
      await receiver.until((r) => more.every((q) => r.some((x) => x.body.id === q.eventId)));
      await second.services.ctx.webhooks.idle();
      const got = receiver.requests.slice(before).filter((x) => more.some((q) => q.eventId === x.body.id));
      expect(got).to.have.length(20);
      expect(secondBefore, "the pending ones went out through the second service").to.be.at.least(3);
      expect(s.svc.webhooks.worker.attempted - firstBefore + second.webhooks.worker.attempted - secondBefore).to.equal(20);
    } finally {
      await second.close();
    }
  });

  it("two workers on one store never send the same attempt twice", async () => {
    await s.svc.webhooks.worker.stop();
    const ep = await register(["agent.paused"]);
    const before = receiver.requests.length;
    receiver.script(...Array<number>(10).fill(500));
    const queued = [];
    for (let i = 0; i < 40; i++) queued.push(await sendTest(ep.id));
    // A generous time limit: an attempt that timed out on a loaded machine is rightly retried, and would count one more
    // (51 for 50 seen once); this test is about claims, not time limits.
    const w1 = worker({ timeoutMs: 10_000 });
    const w2 = worker({ timeoutMs: 10_000 });
    w1.start();
    w2.start();
    try {
      const ids = new Set(queued.map((q) => q.eventId));
      await receiver.until((r) => [...ids].every((id) => r.some((x) => x.body.id === id && x.answered === 200)), 20_000);
      await w1.stop();
      await w2.stop();
      expect(w1.attempted, "both workers took part").to.be.greaterThan(0);
      expect(w2.attempted, "both workers took part").to.be.greaterThan(0);
      expect(w1.attempted + w2.attempted).to.equal(50);
      const got = receiver.requests.slice(before);
      const ds = (await deliveries(ep.id)).filter((d: { eventId: string }) => ids.has(d.eventId));
      expect(ds).to.have.length(40);
      for (const d of ds) {
        const sent = got.filter((x) => x.body.id === d.eventId);
        expect(d.status).to.equal("delivered");
        expect(
          sent.filter((x) => x.answered === 200),
          d.eventId,
        ).to.have.length(1);
        expect(sent.length, `${d.eventId}: requests received vs attempts`).to.equal(d.attempts);
        expect(d.log).to.have.length(d.attempts);
      }
      expect(got.filter((x) => x.answered === 500)).to.have.length(10);
    } finally {
      await w1.stop();
      await w2.stop();
      s.svc.webhooks.worker.start();
    }
  });

  it("gives up 24 hours after the event (failed, no connection) and cancels what a disabled endpoint had pending", async () => {
    await s.svc.webhooks.worker.stop();
    try {
      const ep = await register(["agent.paused"]);
      const late = await sendTest(ep.id);
      const connections = receiver.connections;
      expect(await worker({ now: () => new Date(Date.now() + 24 * 3_600_000 + 60_000) }).drain()).to.be.at.least(1);
      expect(receiver.connections).to.equal(connections);
      const d = (await deliveries(ep.id)).find((x: { id: string }) => x.id === late.deliveryId);
      expect(d).to.include({ status: "failed", attempts: 1, nextAttemptAt: null });
      expect(d.lastError).to.match(/^expired/);

      // Under another WALLET_ENCRYPTION_KEY the secret does not open: nothing is signed or sent.
      const unreadable = await sendTest(ep.id);
      const otherKey = new WebhookWorker(
        s.svc.webhooks.outbox,
        webhookSecretKey(randomBytes(32).toString("hex")),
        { allowHttp: true, allowPrivate: true, timeoutMs: TIMEOUT_MS, backoffBaseMs: 60_000, pollMs: 50 },
        logger,
      );
      expect(await otherKey.drain()).to.be.at.least(1);
      expect(receiver.connections).to.equal(connections);
      const u = (await deliveries(ep.id)).find((x: { id: string }) => x.id === unreadable.deliveryId);
      expect(u).to.include({ status: "pending", attempts: 1 });
      expect(u.lastError).to.match(/^secret_unreadable/);

      const gone = await sendTest(ep.id);
      expect((await s.api("DELETE", `/webhooks/${ep.id}`, { key })).status).to.equal(200);
      expect(await worker().drain()).to.equal(0);
      const c = (await deliveries(ep.id)).find((x: { id: string }) => x.id === gone.deliveryId);
      expect(c).to.include({ status: "cancelled", attempts: 0 });
      expect((await deliveries(ep.id)).find((x: { id: string }) => x.id === unreadable.deliveryId).status).to.equal("cancelled");
    } finally {
      s.svc.webhooks.worker.start();
    }
  });
});
