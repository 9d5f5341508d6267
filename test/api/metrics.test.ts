import { expect } from "chai";
import { randomBytes } from "node:crypto";
import type { Wallet } from "ethers";
import { startStack, randomOwner, type Stack } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { approvalDecision } from "../helpers/payments";
import { fundedFacilitator, mintUsdc, startV2Seller, type TestSeller } from "../helpers/sellers";
import { parseMetrics, samples, value, type Sample } from "../helpers/prometheus";
import { startReceiver, type Receiver } from "../helpers/receiver";

const USDC = 1_000_000n;
const TOKEN = "metrics-token-" + randomBytes(8).toString("hex");

describe("GET /metrics: Prometheus metrics of payments, steps, JSON-RPC, indexer, webhooks and rate limits", () => {
  let s: Stack;
  let seller: TestSeller;
  let receiver: Receiver;
  let owner: Wallet;
  let ownerApiKey: string;
  let metrics: Sample[];

  const scrape = async (): Promise<Sample[]> => {
    const res = await s.api("GET", "/metrics", { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(res.status, String(res.body)).to.equal(200);
    expect(res.headers.get("content-type")).to.match(/^text\/plain; version=0\.0\.4/);
    return parseMetrics(res.body as string);
  };

  before(async () => {
    // A failed webhook attempt waits an hour before the next: the delivery stays in the queue while this file runs.
    s = await startStack({ METRICS_TOKEN: TOKEN, AUTH_FAILURES_PER_MINUTE: "2", WEBHOOK_BACKOFF_BASE_MS: "3600000" });
    const facilitator = await fundedFacilitator(s);
    seller = await startV2Seller({ facilitator, usdc: s.svc.config.usdcAddress, price: USDC });
    owner = randomOwner();
    ownerApiKey = await ownerKey(s, owner);

    const agent = async (policy: Parameters<Stack["onboard"]>[1] = {}) => {
      const a = await s.onboard(owner, { allowlist: ["127.0.0.1"], ...policy });
      await mintUsdc(s, a.agentAddress, 10n * USDC);
      return a;
    };
    const pay = (a: { agentAddress: string; apiKey: string }) =>
      s.api("POST", "/pay", {
        key: a.apiKey,
        body: { agentAddress: a.agentAddress, serviceUrl: seller.resource, maxAmount: "5", intent: "metrics" },
      });

    expect((await pay(await agent())).body).to.include({ status: "approved" });
    expect((await pay(await agent({ allowlist: ["example.com"] }))).body).to.include({ status: "blocked", reason: "merchant_not_allowed" });
    const held = await pay(await agent({ approvalThreshold: "0.75" }));
    expect(held.body).to.include({ status: "pending" });
    const pending = await s.api("GET", "/approvals", { key: ownerApiKey });
    const item = pending.body.approvals.find((x: { id: string }) => x.id === held.body.approvalId);
    const denied = await s.api("POST", `/approvals/${item.id}/deny`, {
      key: ownerApiKey,
      body: await approvalDecision(s, owner, item, "deny"),
    });
    expect(denied.status, JSON.stringify(denied.body)).to.equal(200);
    // Three guesses from one address: the third is refused by the failed-authentication limit.
    for (let i = 0; i < 3; i++) await s.api("GET", "/ledger", { key: `sk_${randomBytes(32).toString("hex")}` });
    // A webhook receiver that answers 500: one failed attempt, retried later.
    receiver = await startReceiver();
    receiver.script(500);
    const endpoint = await s.api("POST", "/webhooks", { key: ownerApiKey, body: { url: receiver.url, events: ["agent.paused"] } });
    expect((await s.api("POST", `/webhooks/${endpoint.body.id}/test`, { key: ownerApiKey })).status).to.equal(202);
    await receiver.until((r) => r.length === 1);
    // The attempt is recorded just after the receiver answered: scrape until it shows (a bounded number of times).
    metrics = await scrape();
    for (let i = 0; i < 50 && value(metrics, "spendgate_webhook_attempts_total", { result: "retry" }) === 0; i++) metrics = await scrape();
  });
  after(async () => {
    await receiver?.close();
    await seller?.close();
    await s?.close();
  });

  it("counts payments by outcome and reason: approved, blocked (its reason), pending, denied", () => {
    const count = (outcome: string, reason: string) => value(metrics, "spendgate_payments_total", { outcome, reason });
    expect(count("approved", "none")).to.equal(1);
    expect(count("blocked", "merchant_not_allowed")).to.equal(1);
    expect(count("pending", "none")).to.equal(1);
    expect(count("denied", "denied_by_owner")).to.equal(1);
  });

  it("times each payment step in a histogram labelled by step", () => {
    const counted = (step: string) => value(metrics, "spendgate_payment_step_duration_seconds_count", { step });
    // admit: all three payments; quote and decide: the two the allowlist admitted; the rest: the approved one.
    expect(counted("admit")).to.equal(3);
    expect(counted("quote")).to.equal(2);
    expect(counted("decide")).to.equal(2);
    // authorize: the approved payment, and the on-chain record of the blocked one.
    expect(counted("authorize")).to.equal(2);
    for (const step of ["sign", "send", "settle"]) expect(counted(step), step).to.be.at.least(1);
    const sum = value(metrics, "spendgate_payment_step_duration_seconds_sum", { step: "authorize" })!;
    expect(sum).to.be.greaterThan(0).and.lessThan(60);
    const buckets = samples(metrics, "spendgate_payment_step_duration_seconds_bucket", { step: "admit" });
    expect(buckets.find((b) => b.labels.le === "+Inf")?.value).to.equal(3);
  });

  it("counts JSON-RPC calls by method, and errors by method and kind", () => {
    for (const method of ["eth_call", "eth_sendRawTransaction", "eth_getTransactionReceipt", "eth_blockNumber"]) {
      expect(value(metrics, "spendgate_rpc_requests_total", { method }), method).to.be.greaterThan(0);
    }
    for (const e of samples(metrics, "spendgate_rpc_errors_total")) {
      expect(e.labels.kind).to.be.oneOf(["node", "transport"]);
      expect(value(metrics, "spendgate_rpc_requests_total", { method: e.labels.method })).to.be.at.least(e.value);
    }
  });

  it("reports the indexer lag in blocks, the webhook queue, a failed webhook attempt and rate-limit refusals", () => {
    const lag = value(metrics, "spendgate_indexer_lag_blocks");
    expect(lag).to.be.a("number").and.at.least(0).and.below(100);
    expect(value(metrics, "spendgate_webhook_queue_depth")).to.equal(1);
    const attempts = (result: string) => value(metrics, "spendgate_webhook_attempts_total", { result });
    expect([attempts("retry"), attempts("delivered"), attempts("failed")]).to.deep.equal([1, 0, 0]);
    expect(value(metrics, "spendgate_rate_limited_total", { limit: "auth_failures" })).to.equal(1);
    expect(value(metrics, "spendgate_rate_limited_total", { limit: "requests" })).to.equal(0);
  });

  it("includes the process's default metrics", () => {
    expect(value(metrics, "process_cpu_user_seconds_total")).to.be.greaterThan(0);
    expect(value(metrics, "nodejs_eventloop_lag_seconds")).to.be.a("number");
    expect(value(metrics, "process_resident_memory_bytes")).to.be.greaterThan(0);
  });

  it("wants METRICS_TOKEN when it is set: 401 without it or with another token (or an API key)", async () => {
    const tries: Record<string, string>[] = [
      {},
      { Authorization: "Bearer not-the-metrics-token" },
      { Authorization: `Bearer ${ownerApiKey}` },
    ];
    for (const headers of tries) {
      const res = await s.api("GET", "/metrics", { headers });
      expect(res.status).to.equal(401);
      expect(res.body).to.include({ error: "unauthorized", status: 401 });
    }
  });

  it("is documented as an operator route in /openapi.json", async () => {
    const doc = (await s.api("GET", "/openapi.json")).body;
    const op = doc.paths["/metrics"].get;
    expect(op.tags).to.deep.equal(["Operations"]);
    expect(op.description).to.include("METRICS_TOKEN");
  });

  it("keeps no tracer when no OTLP endpoint is configured", () => {
    expect(s.svc.telemetry.tracing).to.equal(null);
  });
});
