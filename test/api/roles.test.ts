import { expect } from "chai";
import { randomBytes } from "node:crypto";
import type { Wallet } from "ethers";
import { hashKey } from "../../src/services/keys";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { linkedAgent, ownerKey } from "../helpers/owner";
import { expectErrorShape } from "../helpers/store";

const POLICY = { perTxLimit: "1", dailyBudget: "5", allowlist: ["api.example.com"], approvalThreshold: "1" };

describe("keys and roles: agent keys, owner keys, missing and wrong keys", () => {
  let s: Stack;
  // Two owners, each with one onboarded agent and one linked agent without a policy.
  let alice: Wallet, bob: Wallet;
  let aliceKey: string, bobKey: string;
  let a1: { agentAddress: string; apiKey: string }, a2: { agentAddress: string; apiKey: string };
  let b1: { agentAddress: string; apiKey: string };
  let loose: { agentAddress: string; apiKey: string };

  before(async () => {
    s = await startStack();
    [alice, bob] = [randomOwner(), randomOwner()];
    a1 = await s.onboard(alice);
    a2 = await linkedAgent(s, alice);
    b1 = await s.onboard(bob);
    loose = await s.genesis();
    [aliceKey, bobKey] = [await ownerKey(s, alice), await ownerKey(s, bob)];
  });
  after(async () => s?.close());

  const addresses = (res: { body: { agents: { address: string }[] } }) => res.body.agents.map((a) => a.address).sort();

  describe("missing or wrong key: 401 unauthorized", () => {
    const protectedCalls = (): [string, string, unknown?][] => [
      ["GET", `/wallet/balance?address=${a1.agentAddress}`],
      ["GET", "/wallet/agents"],
      ["GET", "/limits"],
      ["GET", `/limits?address=${a1.agentAddress}`],
      ["POST", "/limits", { agentAddress: a1.agentAddress, ...POLICY, humanSignature: "0x" + "11".repeat(65), timestamp: s.now() }],
    ];

    it("answers 401 without an Authorization header", async () => {
      for (const [method, path, body] of protectedCalls()) {
        expectErrorShape(await s.api(method, path, { body }), 401, "unauthorized");
      }
    });

    it("answers 401 for an unknown key, a malformed key and a non-Bearer scheme", async () => {
      const wrong = [
        { Authorization: `Bearer sk_${randomBytes(32).toString("hex")}` },
        { Authorization: `Bearer ${a1.apiKey.slice(0, -1)}` },
        { Authorization: `Bearer ${a1.apiKey.toUpperCase()}` },
        { Authorization: `Basic ${Buffer.from(`x:${a1.apiKey}`).toString("base64")}` },
        { Authorization: a1.apiKey },
        { Authorization: "Bearer" },
      ];
      for (const [method, path, body] of protectedCalls()) {
        for (const headers of wrong) {
          expectErrorShape(await s.api(method, path, { body, headers }), 401, "unauthorized");
        }
      }
    });

    it("answers 401 for an owner key past its expiry", async () => {
      const owner = randomOwner();
      const key = await ownerKey(s, owner);
      expect((await s.api("GET", "/wallet/agents", { key })).status).to.equal(200);
      await s.svc.store.apiKeys.updateOne(
        { hash: hashKey(key, s.svc.config.walletEncryptionKey) },
        { $set: { expiresAt: new Date(Date.now() - 1000) } },
      );
      expectErrorShape(await s.api("GET", "/wallet/agents", { key }), 401, "unauthorized");
    });
  });

  describe("agent keys act for their own agent only", () => {
    it("answers 403 for another agent's balance", async () => {
      const res = await s.api("GET", `/wallet/balance?address=${b1.agentAddress}`, { key: a1.apiKey });
      expectErrorShape(res, 403, "forbidden");
    });

    it("answers 403 for another agent's limits", async () => {
      const res = await s.api("GET", `/limits?address=${b1.agentAddress}`, { key: a1.apiKey });
      expectErrorShape(res, 403, "forbidden");
    });

    it("answers 403 when setting another agent's limits, even with that agent's owner's signature", async () => {
      const body = await s.policyBody(alice, a2.agentAddress, POLICY);
      const res = await s.api("POST", "/limits", { key: a1.apiKey, body });
      expectErrorShape(res, 403, "forbidden");
      expect(await s.svc.chain.isDeployed(a2.agentAddress)).to.equal(false);
      // The same body is still good for the agent's own key: the refusal consumed nothing.
      expect((await s.api("POST", "/limits", { key: a2.apiKey, body })).status).to.equal(201);
    });

    it("answers 403 to a payment for another agent, before taking that agent's lock or the Idempotency-Key", async () => {
      const leases = s.svc.store.collection<{ name: string; fence?: number }>("leases");
      const lockOfB = async () => (await leases.findOne({ name: `agent:${b1.agentAddress.toLowerCase()}` }))?.fence ?? 0;
      const fence = await lockOfB();
      const keys = await s.svc.store.idempotency.countDocuments({});
      const body = { agentAddress: b1.agentAddress, serviceUrl: "https://api.example.com/data", maxAmount: "0.01", intent: "not mine" };
      expectErrorShape(await s.api("POST", "/pay", { key: a1.apiKey, body }), 403, "forbidden");
      expectErrorShape(
        await s.api("POST", "/pay", { key: a1.apiKey, body, headers: { "Idempotency-Key": "not-mine-1" } }),
        403,
        "forbidden",
      );
      // An agent key pays without waiting for its own document (read beside its lock): never so for another agent's.
      expect(await lockOfB()).to.equal(fence);
      expect(await s.svc.store.idempotency.countDocuments({})).to.equal(keys);
    });

    it("answers 403 for an agent that does not exist (same answer as not yours)", async () => {
      const res = await s.api("GET", `/wallet/balance?address=${randomOwner().address}`, { key: a1.apiKey });
      expectErrorShape(res, 403, "forbidden");
    });

    it("sees only itself in GET /limits and GET /wallet/agents", async () => {
      expect(addresses(await s.api("GET", "/limits", { key: a1.apiKey }))).to.deep.equal([a1.agentAddress]);
      expect(addresses(await s.api("GET", "/wallet/agents", { key: a1.apiKey }))).to.deep.equal([a1.agentAddress]);
    });
  });

  describe("owner keys act for the owner's linked agents", () => {
    it("lists only the owner's agents in GET /wallet/agents and GET /limits", async () => {
      const mine = [a1.agentAddress, a2.agentAddress].sort();
      expect(addresses(await s.api("GET", "/wallet/agents", { key: aliceKey }))).to.deep.equal(mine);
      expect(addresses(await s.api("GET", "/limits", { key: aliceKey }))).to.deep.equal(mine);
      expect(addresses(await s.api("GET", "/wallet/agents", { key: bobKey }))).to.deep.equal([b1.agentAddress]);
      expect(addresses(await s.api("GET", "/limits", { key: bobKey }))).to.deep.equal([b1.agentAddress]);
    });

    it("answers 403 for another owner's agent and for an unlinked agent", async () => {
      for (const path of [
        `/wallet/balance?address=${b1.agentAddress}`,
        `/limits?address=${b1.agentAddress}`,
        `/limits?address=${loose.agentAddress}`,
      ]) {
        expectErrorShape(await s.api("GET", path, { key: aliceKey }), 403, "forbidden");
      }
      const body = await s.policyBody(bob, b1.agentAddress, POLICY, s.now() + 2);
      expectErrorShape(await s.api("POST", "/limits", { key: aliceKey, body }), 403, "forbidden");
    });

    it("reads one of its agents with ?address=", async () => {
      const res = await s.api("GET", `/limits?address=${a1.agentAddress}`, { key: aliceKey });
      expect(res.status).to.equal(200);
      expect(addresses(res)).to.deep.equal([a1.agentAddress]);
    });
  });

  describe("X-Owner-Address", () => {
    it("answers 200 when it names the agent's owner, for agent and owner keys", async () => {
      const headers = { "X-Owner-Address": alice.address.toLowerCase() };
      expect((await s.api("GET", "/limits", { key: a1.apiKey, headers })).status).to.equal(200);
      expect((await s.api("GET", "/limits", { key: aliceKey, headers })).status).to.equal(200);
    });

    it("answers 403 when it names another owner", async () => {
      const headers = { "X-Owner-Address": bob.address };
      expectErrorShape(await s.api("GET", "/limits", { key: a1.apiKey, headers }), 403, "forbidden");
      expectErrorShape(await s.api("GET", `/limits?address=${a1.agentAddress}`, { key: aliceKey, headers }), 403, "forbidden");
    });

    it("answers 403 for an agent that has no owner yet", async () => {
      const headers = { "X-Owner-Address": alice.address };
      expectErrorShape(await s.api("GET", "/limits", { key: loose.apiKey, headers }), 403, "forbidden");
    });

    it("answers 400 when it is not an address", async () => {
      const headers = { "X-Owner-Address": "alice" };
      expectErrorShape(await s.api("GET", "/limits", { key: a1.apiKey, headers }), 400, "bad_request");
    });
  });
});
