import { expect } from "chai";
import type { Wallet } from "ethers";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { ownerKey } from "../helpers/owner";
import { documentCounts, expectErrorShape } from "../helpers/store";
import { WEBHOOK_EVENT_TYPES } from "../../src/schemas/webhooks";
import { checkWebhookUrl } from "../../src/webhooks/endpoints";
import { open, webhookSecretKey } from "../../src/webhooks/secrets";
import { randomBytes } from "node:crypto";

const WALLET_ENCRYPTION_KEY = randomBytes(32).toString("hex");

describe("webhook endpoints: POST/GET/DELETE /webhooks, owner keys only", () => {
  let s: Stack;
  let owner: Wallet;
  let key: string;
  before(async () => {
    s = await startStack({ WALLET_ENCRYPTION_KEY });
    owner = randomOwner();
    key = await ownerKey(s, owner);
  });
  after(async () => s?.close());

  const create = (body: unknown, k = key) => s.api("POST", "/webhooks", { key: k, body });

  it("registers an endpoint: 201 with the secret once, listed without it, stored encrypted under WALLET_ENCRYPTION_KEY", async () => {
    const res = await create({ url: "https://hooks.example.com/a", events: ["payment.blocked", "approval.requested"], description: "ops" });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body).to.include({ url: "https://hooks.example.com/a", description: "ops", status: "active", disabledAt: null });
    expect(res.body.id).to.match(/^whk_[0-9a-f]{24}$/);
    expect(res.body.secret).to.match(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(res.body.events).to.deep.equal(["payment.blocked", "approval.requested"]);

    const list = await s.api("GET", "/webhooks", { key });
    expect(list.status).to.equal(200);
    const listed = list.body.endpoints.find((e: { id: string }) => e.id === res.body.id);
    const { secret: _shownOnce, ...withoutSecret } = res.body;
    expect(listed).to.deep.equal(withoutSecret);
    expect(JSON.stringify(list.body)).to.not.include(res.body.secret);

    const doc = await s.svc.webhooks.outbox.c.endpoints.findOne({ endpointId: res.body.id });
    expect(JSON.stringify(doc)).to.not.include(res.body.secret);
    expect(JSON.stringify(doc)).to.not.include(res.body.secret.slice(6));
    expect(open(webhookSecretKey(WALLET_ENCRYPTION_KEY), res.body.id, doc!.secret)).to.equal(res.body.secret);
    // Bound to its endpoint: the same ciphertext under another endpoint id does not open.
    expect(() => open(webhookSecretKey(WALLET_ENCRYPTION_KEY), "whk_" + "0".repeat(24), doc!.secret)).to.throw();
  });

  it("refuses agent keys (403), no key (401) and another owner's endpoints (404), changing nothing", async () => {
    const a = await s.onboard(owner);
    const mine = await create({ url: "https://hooks.example.com/b", events: ["agent.paused"] });
    const before = await documentCounts(s.svc.store.db);
    expectErrorShape(await create({ url: "https://hooks.example.com/c", events: ["agent.paused"] }, a.apiKey), 403, "forbidden");
    expectErrorShape(await s.api("GET", "/webhooks", { key: a.apiKey }), 403, "forbidden");
    expectErrorShape(await s.api("DELETE", `/webhooks/${mine.body.id}`, { key: a.apiKey }), 403, "forbidden");
    expectErrorShape(await s.api("GET", `/webhooks/${mine.body.id}/deliveries`, { key: a.apiKey }), 403, "forbidden");
    expectErrorShape(
      await s.api("POST", "/webhooks", { body: { url: "https://hooks.example.com/c", events: ["agent.paused"] } }),
      401,
      "unauthorized",
    );
    const stranger = await ownerKey(s, randomOwner());
    expectErrorShape(await s.api("DELETE", `/webhooks/${mine.body.id}`, { key: stranger }), 404, "not_found");
    expectErrorShape(await s.api("GET", `/webhooks/${mine.body.id}/deliveries`, { key: stranger }), 404, "not_found");
    expectErrorShape(await s.api("POST", `/webhooks/${mine.body.id}/test`, { key: stranger }), 404, "not_found");
    expect((await s.api("GET", "/webhooks", { key: stranger })).body.endpoints).to.deep.equal([]);
    const after = await documentCounts(s.svc.store.db);
    // Only the stranger's sign-in wrote anything (its owner record, nonce and key).
    for (const name of ["webhookEndpoints", "webhookEvents", "webhookDeliveries"])
      expect(after[name] ?? 0, name).to.equal(before[name] ?? 0);
  });

  it("answers bad input with 400 in the error shape and stores nothing", async () => {
    const before = await s.svc.webhooks.outbox.c.endpoints.countDocuments();
    const bad: unknown[] = [
      {},
      { url: "https://hooks.example.com/x" },
      { url: "https://hooks.example.com/x", events: [] },
      { url: "https://hooks.example.com/x", events: ["payment.maybe"] },
      { url: "https://hooks.example.com/x", events: ["agent.paused", "agent.paused"] },
      { url: "ftp://hooks.example.com/x", events: ["agent.paused"] },
      { url: "not a url", events: ["agent.paused"] },
      { url: "https://user:pw@hooks.example.com/x", events: ["agent.paused"] },
      { url: `https://hooks.example.com/${"a".repeat(2048)}`, events: ["agent.paused"] },
      { url: "https://hooks.example.com/x", events: ["agent.paused"], description: "d".repeat(201) },
      { url: "https://hooks.example.com/x", events: ["agent.paused"], extra: 1 },
      { url: 42, events: "agent.paused" },
    ];
    for (const body of bad) expectErrorShape(await create(body), 400, "bad_request");
    expectErrorShape(await s.api("GET", "/webhooks/whk_nope/deliveries", { key }), 404, "not_found");
    const first = (await s.api("GET", "/webhooks", { key })).body.endpoints[0].id;
    expectErrorShape(await s.api("GET", `/webhooks/${first}/deliveries?limit=500`, { key }), 400, "bad_request");
    expectErrorShape(await s.api("GET", `/webhooks/${first}/deliveries?offset=-1`, { key }), 400, "bad_request");
    expect(await s.svc.webhooks.outbox.c.endpoints.countDocuments()).to.equal(before);
  });

  it("accepts every event type, and at most 10 active endpoints per owner (a disabled one frees a place)", async () => {
    const o = randomOwner();
    const k = await ownerKey(s, o);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await create({ url: `https://hooks.example.com/${i}`, events: [...WEBHOOK_EVENT_TYPES] }, k);
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      ids.push(res.body.id);
    }
    expectErrorShape(await create({ url: "https://hooks.example.com/11", events: ["agent.paused"] }, k), 409, "conflict");
    const del = await s.api("DELETE", `/webhooks/${ids[3]}`, { key: k });
    expect(del.status).to.equal(200);
    expect(del.body).to.include({ id: ids[3], status: "disabled" });
    expect(del.body.disabledAt).to.be.a("string");
    expect((await s.api("DELETE", `/webhooks/${ids[3]}`, { key: k })).body.status).to.equal("disabled");
    expect((await create({ url: "https://hooks.example.com/11", events: ["agent.paused"] }, k)).status).to.equal(201);
    const list = await s.api("GET", "/webhooks", { key: k });
    expect(list.body.endpoints).to.have.length(11);
    expect(list.body.endpoints.filter((e: { status: string }) => e.status === "active")).to.have.length(10);
    expectErrorShape(await s.api("POST", `/webhooks/${ids[3]}/test`, { key: k }), 409, "conflict");
  });

  it("applies the seller URL rules: https only and no private address in production mode", async () => {
    const production = { allowHttp: false, allowPrivate: false };
    const codeOf = (url: string) =>
      checkWebhookUrl(url, production).then(
        () => "ok",
        (e: unknown) => (e as { code: string }).code,
      );
    expect(await codeOf("http://hooks.example.com/x")).to.equal("insecure_webhook_url");
    for (const url of [
      "https://127.0.0.1/x",
      "https://10.1.2.3/x",
      "https://[::1]/x",
      "https://169.254.169.254/latest",
      "https://[::ffff:192.168.0.1]/x",
      "https://localhost/x",
    ]) {
      expect(await codeOf(url), url).to.equal("unsafe_webhook_url");
    }
    expect(await codeOf("https://93.184.215.14/x")).to.equal("ok");
    // Embedded mode allows what it allows sellers (a receiver on this machine).
    await checkWebhookUrl("http://127.0.0.1:9/x", { allowHttp: true, allowPrivate: true }); // resolves: allowed
  });
});
