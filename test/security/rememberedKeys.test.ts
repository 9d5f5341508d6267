/**
 * An instance remembers a key lookup for API_KEY_CACHE_MS for reads, and for payments for PAYING_KEY_MEMORY_MS (1 s),
 * then while the store's revocation mark, read at most that long ago, has not moved (KeyService.lookup, auth.ts
 * remembersKey, store/changeMarks.ts). A stolen agent key that the owner rotates on one instance stops paying there at
 * once and everywhere within a second: what may outlive the rotation on another instance longer is reads. Here B
 * remembers lookups for a minute, so that window is certain to be open while the test runs, and its clock is moved past
 * the paying second.
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { KeyService, PAYING_KEY_LONGEST_MS, PAYING_KEY_MEMORY_MS, hashKey } from "../../src/services/keys";
import type { Store } from "../../src/store";
import { mintUsdc } from "../helpers/sellers";
import { ownerKey } from "../helpers/owner";
import { randomOwner, type ApiResponse, type Stack } from "../helpers/stack";
import { expectErrorShape } from "../helpers/store";
import { startTwoInstances, type TwoInstances } from "../helpers/twoInstances";
import { agentHeaders, callTool, mcpClient } from "../mcp/client";

const USDC = 1_000_000n;

/** A raw JSON-RPC POST to /mcp (one message or a batch), answered in full. */
function mcpPost(s: Stack, agent: { agentAddress: string; apiKey: string }, body: unknown): Promise<ApiResponse> {
  return s.api("POST", "/mcp", {
    key: agent.apiKey,
    body,
    headers: { "X-Agent-Address": agent.agentAddress, Accept: "application/json, text/event-stream" },
  });
}

const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args },
});

describe("key lookups remembered for reads, and a rotated key", () => {
  let t: TwoInstances;
  before(async () => {
    t = await startTwoInstances({ env: { API_KEY_CACHE_MS: "60000" } });
  });
  after(async () => t?.close());

  it("a key rotated on A pays on B no more once a second has passed, though B answers its reads from memory for a while", async () => {
    const { a, b } = t;
    const owner = randomOwner();
    const agent = await a.onboard(owner, { perTxLimit: "1", dailyBudget: "20", approvalThreshold: "1", allowlist: ["127.0.0.1"] });
    await mintUsdc(a, agent.agentAddress, 5n * USDC);
    const sellUrl = `${a.url}/sell/agent-intel`;
    const pay = { serviceUrl: sellUrl, maxAmount: "1", intent: "a report" };

    // B reads with the key, and so remembers it.
    expect((await b.api("GET", `/ledger?address=${agent.agentAddress}`, { key: agent.apiKey })).status).to.equal(200);
    const client = await mcpClient(b.url, agentHeaders(agent));
    expect((await callTool(client, "list_transactions", { limit: 5 })).isError).to.not.equal(true);

    // B has read the revocation mark, and found it still, while its payments stood on its memory of the key: a second
    // on, a payment's lookup reads the mark (its first read: the key is read again), another second on, it stands on
    // the mark. (Bodies refused after the key: nothing is paid.)
    for (const skew of [PAYING_KEY_MEMORY_MS, 2 * PAYING_KEY_MEMORY_MS]) {
      t.skew = skew;
      expectErrorShape(await b.api("POST", "/pay", { key: agent.apiKey, body: {} }), 400, "bad_request");
    }

    const rotated = await a.api("POST", `/agents/${agent.agentAddress}/key`, { key: await ownerKey(a, owner) });
    expect(rotated.status, JSON.stringify(rotated.body)).to.equal(201);
    const fresh = { agentAddress: agent.agentAddress, apiKey: rotated.body.apiKey as string };

    // A, where the rotation ran, refuses the old key at once, reads included.
    expectErrorShape(await a.api("GET", `/ledger?address=${agent.agentAddress}`, { key: agent.apiKey }), 401, "unauthorized");
    expectErrorShape(await mcpPost(a, agent, call(1, "list_transactions")), 401, "unauthorized");

    // A second later on B's clock (B's memory of the key and its last read of the mark are that old now)...
    t.skew = 3 * PAYING_KEY_MEMORY_MS;
    // ...B still answers reads from its memory of the key...
    expect((await b.api("GET", `/ledger?address=${agent.agentAddress}`, { key: agent.apiKey })).status).to.equal(200);
    const read = await mcpPost(b, agent, call(2, "list_transactions", { limit: 5 }));
    expect(read.status, JSON.stringify(read.body)).to.equal(200);
    expect(read.body.result.structuredContent.total).to.equal(0);

    // ...but a payment stands on a lookup only that long, and anything else that changes something reads the key again:
    // refused.
    expectErrorShape(await mcpPost(b, agent, call(3, "pay", pay)), 401, "unauthorized");
    // verify_merchant reads, but makes the service call the seller: not on a remembered key either.
    expectErrorShape(await mcpPost(b, agent, call(8, "verify_merchant", { serviceUrl: sellUrl })), 401, "unauthorized");
    expectErrorShape(await mcpPost(b, agent, [call(4, "list_transactions"), call(5, "pay", pay)]), 401, "unauthorized");
    expectErrorShape(await mcpPost(b, agent, { jsonrpc: "2.0", id: 6, method: "initialize", params: {} }), 401, "unauthorized");
    expectErrorShape(
      await b.api("POST", "/pay", { key: agent.apiKey, body: { agentAddress: agent.agentAddress, ...pay } }),
      401,
      "unauthorized",
    );
    // Reads that show a secret are not answered from memory either.
    expectErrorShape(await b.api("GET", `/wallet/activation?address=${agent.agentAddress}`, { key: agent.apiKey }), 401, "unauthorized");
    await client.close();
    expect(await a.svc.store.payments.countDocuments({ agentAddress: agent.agentAddress })).to.equal(0);

    // The same payment with the new key goes through B: the old key was refused for being revoked, nothing else.
    const paid = await mcpPost(b, fresh, call(7, "pay", pay));
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body.result.structuredContent.status, JSON.stringify(paid.body.result)).to.equal("approved");
  });

  describe("KeyService's memory", () => {
    let now = Date.now();
    const clock = () => now;
    const keysOf = (cacheMs: number, store: Pick<Store, "apiKeys" | "collection"> = t.a.svc.store) =>
      new KeyService(store, t.a.svc.config.walletEncryptionKey, { cacheMs, clock });
    const newAgent = () => `0x${randomBytes(20).toString("hex")}`;

    it("answers reads from memory for cacheMs after a read of the store, and never what is not a read", async () => {
      const keys = keysOf(1_000);
      const key = await keys.issue({ role: "agent", agentAddress: newAgent() });
      expect((await keys.lookup(key, "read"))?.remembered).to.equal(false);
      expect((await keys.lookup(key, "read"))?.remembered).to.equal(true);
      expect((await keys.lookup(key, "fresh"))?.remembered).to.equal(false);
      now += 999;
      expect((await keys.lookup(key, "read"))?.remembered).to.equal(true);
      now += 1;
      expect((await keys.lookup(key, "read"))?.remembered).to.equal(false);
      // Revoked elsewhere (straight in the store): forgotten once the memory runs out.
      await t.a.svc.store.apiKeys.updateOne(
        { hash: hashKey(key, t.a.svc.config.walletEncryptionKey) },
        { $set: { revokedAt: new Date() } },
      );
      expect((await keys.lookup(key, "read"))?.remembered).to.equal(true);
      expect(await keys.resolve(key)).to.equal(null);
      expect(await keys.lookup(key, "read")).to.equal(null);
    });

    it("answers a payment from its own memory for at most PAYING_KEY_MEMORY_MS after a read of the store, whatever cacheMs", async () => {
      const keys = keysOf(60_000);
      const key = await keys.issue({ role: "agent", agentAddress: newAgent() });
      expect((await keys.lookup(key, "pay"))?.remembered).to.equal(false);
      now += PAYING_KEY_MEMORY_MS - 1;
      expect(await keys.lookup(key, "pay")).to.include({ remembered: true, age: PAYING_KEY_MEMORY_MS - 1 });
      now += 1;
      expect((await keys.lookup(key, "read"))?.remembered, "reads: cacheMs").to.equal(true);
      expect((await keys.lookup(key, "pay"))?.remembered, "read from the store again").to.equal(false);
      // A shorter cacheMs bounds payments too.
      const short = keysOf(300);
      await short.lookup(key, "fresh");
      now += 300;
      expect((await short.lookup(key, "pay"))?.remembered).to.equal(false);
    });

    it("past PAYING_KEY_MEMORY_MS, a payment's lookup stands while the revocation mark has not moved: one read of it for every key", async () => {
      // The store as this service has it, with reads of the mark counted.
      const { store } = t.a.svc;
      const marks = store.collection("changeMarks");
      const findOne = marks.findOne.bind(marks);
      let markReads = 0;
      Object.assign(marks, { findOne: (...args: Parameters<typeof findOne>) => (markReads++, findOne(...args)) });
      const counted = { apiKeys: store.apiKeys, collection: (name: string) => (name === "changeMarks" ? marks : store.collection(name)) };
      const keys = keysOf(60_000, counted as Pick<Store, "apiKeys" | "collection">);
      const [k1, k2] = [
        await keys.issue({ role: "agent", agentAddress: newAgent() }),
        await keys.issue({ role: "agent", agentAddress: newAgent() }),
      ];
      {
        expect((await keys.lookup(k1, "pay"))?.remembered).to.equal(false);
        expect((await keys.lookup(k2, "pay"))?.remembered).to.equal(false);
        // The first read of the mark cannot tell what came before it: those lookups are read again.
        now += PAYING_KEY_MEMORY_MS;
        expect((await keys.lookup(k1, "pay"))?.remembered).to.equal(false);
        expect((await keys.lookup(k2, "pay"))?.remembered).to.equal(false);
        expect(markReads).to.equal(1);
        for (let i = 0; i < 3; i++) {
          now += PAYING_KEY_MEMORY_MS;
          // One read of the mark (waited for: the last began a second ago) answers for both keys.
          expect(await keys.lookup(k1, "pay")).to.include({ remembered: true, age: 0 });
          expect(await keys.lookup(k2, "pay")).to.include({ remembered: true, age: 0 });
          expect(markReads).to.equal(2 + i);
        }
        // Half a second on, the mark is read again without waiting for it; the lookup still stands on the last read.
        now += PAYING_KEY_MEMORY_MS / 2;
        expect(await keys.lookup(k1, "pay")).to.include({ remembered: true, age: PAYING_KEY_MEMORY_MS / 2 });
        expect(markReads).to.equal(5);
      }
    });

    for (const [cacheMs, bound] of [
      [60_000, PAYING_KEY_MEMORY_MS],
      [300, 300],
    ]) {
      it(`a key revoked by another instance stops paying here within ${bound} ms of the mark's last read (cacheMs ${cacheMs}), remembered or not`, async () => {
        // Instance B's store client: a revocation there is not one this process's KeyService hears of.
        const [here, there] = [keysOf(cacheMs), keysOf(cacheMs, t.b.svc.store)];
        const agentAddress = newAgent();
        const key = await here.issue({ role: "agent", agentAddress });
        await here.lookup(key, "pay");
        now += bound;
        await here.lookup(key, "pay"); // the mark's first read
        now += bound;
        expect(await here.lookup(key, "pay")).to.include({ remembered: true, age: 0 });
        expect(await there.revokeAll({ agentAddress })).to.equal(1);
        // Less than half the bound after the mark was last read, the memory answers on that read...
        now += bound / 2 - 1;
        expect((await here.lookup(key, "pay"))?.remembered).to.equal(true);
        // ...and the bound after it, the payment waits for a new read, which finds the mark moved.
        now += bound / 2 + 1;
        expect(await here.lookup(key, "pay"), "the mark moved: read from the store").to.equal(null);
      });
    }

    it("a key revoked without moving the mark (by hand in the store) stops paying within PAYING_KEY_LONGEST_MS of its lookup; so does a clock that goes back", async () => {
      const keys = keysOf(60_000);
      const key = await keys.issue({ role: "agent", agentAddress: newAgent() });
      await keys.lookup(key, "pay");
      now += PAYING_KEY_MEMORY_MS;
      await keys.lookup(key, "pay"); // the mark's first read: read again
      const readAt = now;
      await t.a.svc.store.apiKeys.updateOne(
        { hash: hashKey(key, t.a.svc.config.walletEncryptionKey) },
        { $set: { revokedAt: new Date() } },
      );
      for (now = readAt + PAYING_KEY_MEMORY_MS; now < readAt + PAYING_KEY_LONGEST_MS; now += PAYING_KEY_MEMORY_MS) {
        expect((await keys.lookup(key, "pay"))?.remembered, "standing on the mark").to.equal(true);
      }
      now = readAt + PAYING_KEY_LONGEST_MS;
      expect(await keys.lookup(key, "pay"), "read from the store again").to.equal(null);

      const other = await keys.issue({ role: "agent", agentAddress: newAgent() });
      await keys.lookup(other, "pay");
      now -= 60_000; // the clock is stepped back: the lookup is from the future
      expect((await keys.lookup(other, "pay"))?.remembered).to.equal(false);
    });

    it("a revocation done again moves the mark, though nothing is left to revoke (its writer stopped before moving it)", async () => {
      const keys = keysOf(60_000);
      const agentAddress = newAgent();
      await keys.issue({ role: "agent", agentAddress });
      const marks = t.a.svc.store.collection<{ name: string; seq: number }>("changeMarks");
      const seq = async () => (await marks.findOne({ name: "apiKeys.revoked" }))?.seq ?? 0;
      const before = await seq();
      expect(await keys.revokeAll({ agentAddress })).to.equal(1);
      expect(await keys.revokeAll({ agentAddress })).to.equal(0);
      expect(await seq()).to.equal(before + 2);
    });

    it("forgets every key at once when it revokes any, a lookup that raced the revocation included", async () => {
      const keys = keysOf(60_000);
      const agentAddress = newAgent();
      const key = await keys.issue({ role: "agent", agentAddress });
      await keys.lookup(key, "read");
      const racing = keys.lookup(key, "fresh");
      expect(await keys.revokeAll({ agentAddress })).to.equal(1);
      await racing;
      expect(await keys.lookup(key, "read")).to.equal(null);
    });

    it("refuses an owner key from memory once the key itself expires", async () => {
      const keys = keysOf(60_000);
      const key = await keys.issue({ role: "owner", ownerAddress: newAgent(), expiresAt: new Date(now + 5_000) });
      expect((await keys.lookup(key, "read"))?.remembered).to.equal(false);
      now += 4_999;
      expect((await keys.lookup(key, "read"))?.remembered).to.equal(true);
      now += 1;
      expect(await keys.lookup(key, "read")).to.equal(null);
    });

    it("remembers nothing with cacheMs 0", async () => {
      const keys = keysOf(0);
      const key = await keys.issue({ role: "agent", agentAddress: newAgent() });
      for (let i = 0; i < 3; i++) expect((await keys.lookup(key, "read"))?.remembered).to.equal(false);
    });
  });
});
