/**
 * The situations behind the error statuses the generic walk (operations.test.ts) cannot produce from a schema or a
 * key alone: each driver makes the situation with the real service and observes the documented status and code.
 */
import type { Wallet } from "ethers";
import { getAddress } from "ethers";
import type { AnyOperation } from "../../src/api/operation";
import { ownerKey, siweVerify } from "../helpers/owner";
import { approvalDecision } from "../helpers/payments";
import { fundedFacilitator, startMisbehavingSeller, startV2Seller } from "../helpers/sellers";
import { randomOwner, type ApiResponse, type Stack } from "../helpers/stack";

export type Observe = (op: AnyOperation, res: ApiResponse, status: number, code: string) => void;

export interface DriveContext {
  s: Stack;
  owner: Wallet;
  agent: { agentAddress: string; apiKey: string };
  keys: { agent: string; owner: string; registrar: string };
  ops: readonly AnyOperation[];
  observe: Observe;
  call: (
    op: AnyOperation,
    opts?: { key?: string; body?: unknown; query?: string; path?: string; headers?: Record<string, string> },
  ) => Promise<ApiResponse>;
  sampleBody: (op: AnyOperation) => unknown;
}

/** Documented statuses this walk does not drive, and where they are driven or why they cannot be here. */
export const NOT_DRIVEN: Record<string, string> = {
  "POST /wallet/genesis 401": "registration closed (GENESIS_OPEN=false): test/api/registration.test.ts",
  "POST /limits 503": "the service is not the policy's operator: test/e2e/instances.test.ts",
  "POST /limits 429": "the owner's daily gas allowance spent (OWNER_GAS_ALLOWANCE_GWEI): test/api/gas.test.ts",
  "POST /agents/:address/pause 503": "the service is not the policy's operator: test/e2e/instances.test.ts",
  "POST /pay 429": "the owner's daily gas allowance spent (OWNER_GAS_ALLOWANCE_GWEI): test/api/gas.test.ts",
  "POST /approvals/:id/approve 422": "a blocked or unsupported approved payment: test/e2e/payments.test.ts",
  "POST /approvals/:id/approve 504": "a seller slower than SELLER_TIMEOUT_MS at approval (not driven anywhere yet)",
  "POST /dev/faucet 404": "outside embedded mode only; this walk runs embedded",
  "GET /dev/seller/exact 404": "outside embedded mode only (this walk runs embedded): test/e2e/startProd.test.ts",
  "POST /dev/seller/exact 404": "outside embedded mode only (this walk runs embedded): test/e2e/startProd.test.ts",
  "GET /dev/seller/upto 404": "outside embedded mode only (this walk runs embedded): test/e2e/startProd.test.ts",
  "POST /dev/seller/upto 404": "outside embedded mode only (this walk runs embedded): test/e2e/startProd.test.ts",
  "GET /dev/seller/batch-settlement 404": "outside embedded mode only (this walk runs embedded): test/e2e/startProd.test.ts",
  "POST /dev/seller/batch-settlement 404": "outside embedded mode only (this walk runs embedded): test/e2e/startProd.test.ts",
  "GET /dev/seller/exact 502": "a facilitator that fails: the seller of /sell/agent-intel, test/x402/sellRoute.test.ts",
  "POST /dev/seller/exact 502": "a facilitator that fails: the seller of /sell/agent-intel, test/x402/sellRoute.test.ts",
  "GET /metrics 401": "a wrong or missing METRICS_TOKEN (this walk sets none): test/api/metrics.test.ts",
  "GET /metrics 403": "a forwarded or non-loopback scrape without METRICS_TOKEN: test/api/tracing.test.ts",
  "GET /sell/agent-intel 502": "a facilitator that fails: test/x402/sellRoute.test.ts",
  "POST /sell/agent-intel 502": "a facilitator that fails: test/x402/sellRoute.test.ts",
  "POST /agents/:address/channels/:channelId/close 502":
    "a seller that refuses the refund (the channel stays open): test/dashboard/channels.test.ts",
  "POST /agents/:address/channels/:channelId/withdraw 409":
    "a withdrawal before the channel's delay, or of nothing: test/schemes/channelPolicy.test.ts",
  "POST /webhooks 422": "embedded mode allows http and private receivers: test/webhooks/endpoints.test.ts",
  "POST /merchants/quote 422":
    "a seller without an x402 quote: the payment path's own quote code (POST /pay 422), not driven for this route",
  "POST /merchants/quote 502":
    "an unreachable or broken seller: the payment path's own quote code (POST /pay 502), not driven for this route",
  "POST /merchants/quote 504":
    "a seller slower than SELLER_TIMEOUT_MS: the payment path's own quote code (POST /pay 504), not driven for this route",
};

const find = (ops: readonly AnyOperation[], method: string, path: string) => {
  const op = ops.find((o) => o.method === method && o.path === path);
  if (!op) throw new Error(`no operation ${method} ${path}`);
  return op;
};

export const drivers: ((c: DriveContext) => Promise<void>)[] = [
  // Accounts: a registration that exists, a link to an unknown, a linked or a wrongly signed agent, a bad SIWE signer.
  async ({ s, ops, observe, call, owner }) => {
    const genesis = find(ops, "POST", "/wallet/genesis");
    const body = { email: "walk@example.com", label: "walk" };
    await call(genesis, { body });
    observe(genesis, await call(genesis, { body }), 409, "conflict");

    const link = find(ops, "POST", "/agents/link");
    const fresh = await s.genesis();
    const signed = await s.signLink(owner, fresh.agentAddress);
    observe(link, await call(link, { body: { ...signed, agentAddress: getAddress("0x" + "42".repeat(20)) } }), 404, "not_found");
    observe(link, await call(link, { body: { ...signed, activationCode: "A".repeat(22) } }), 403, "forbidden");
    const impostor = await s.signLink(randomOwner(), fresh.agentAddress);
    observe(link, await call(link, { body: { ...signed, ownerSignature: impostor.ownerSignature } }), 401, "invalid_signature");
    await call(link, { body: signed });
    observe(link, await call(link, { body: await s.signLink(owner, fresh.agentAddress) }), 409, "conflict");

    const verify = find(ops, "POST", "/auth/siwe/verify");
    observe(verify, await siweVerify(s, owner, { signer: randomOwner() }), 401, "invalid_signature");
  },

  // An agent without an owner: its policy and pause switch cannot be set (409).
  async ({ s, ops, observe, call, sampleBody }) => {
    const loose = await s.genesis();
    const limits = find(ops, "POST", "/limits");
    const policy = { perTxLimit: "1", dailyBudget: "2", allowlist: [], approvalThreshold: "1" };
    observe(
      limits,
      await call(limits, { key: loose.apiKey, body: await s.policyBody(randomOwner(), loose.agentAddress, policy) }),
      409,
      "conflict",
    );
    const pause = find(ops, "POST", "/agents/:address/pause");
    const path = `/agents/${loose.agentAddress}/pause`;
    observe(pause, await call(pause, { key: loose.apiKey, path, body: sampleBody(pause) }), 409, "conflict");
  },

  // Payments: no policy yet, an unreachable seller, an Idempotency-Key reused with another body.
  async ({ s, ops, observe, call, agent, owner, sampleBody }) => {
    const pay = find(ops, "POST", "/pay");
    const other = await s.genesis();
    const noPolicy = { ...(sampleBody(pay) as object), agentAddress: other.agentAddress };
    observe(pay, await call(pay, { key: other.apiKey, body: noPolicy }), 422, "no_policy");
    observe(pay, await call(pay, { key: agent.apiKey, body: sampleBody(pay) }), 502, "upstream_error");
    const slow = await startMisbehavingSeller("slow");
    try {
      const late = await call(pay, { key: agent.apiKey, body: { ...(sampleBody(pay) as object), serviceUrl: slow.resource } });
      observe(pay, late, 504, "upstream_timeout");
    } finally {
      await slow.close();
    }
    // A final answer (no_policy) is kept under the key; an unreachable seller's transient 502 would free it.
    const keyed = { key: other.apiKey, headers: { "Idempotency-Key": "walk-1" } };
    await call(pay, { ...keyed, body: noPolicy });
    observe(pay, await call(pay, { ...keyed, body: { ...noPolicy, intent: "another" } }), 409, "conflict");

    // Withdraw and hand-over need the agent's wallet contract: a linked agent without a policy has none (422).
    const linked = await s.genesis();
    await s.api("POST", "/agents/link", { body: await s.signLink(owner, linked.agentAddress) });
    const ownerKeyNow = await ownerKey(s, owner);
    for (const path of ["/agents/:address/withdraw", "/agents/:address/owner"]) {
      const op = find(ops, "POST", path);
      const res = await call(op, { key: ownerKeyNow, path: path.replace(":address", linked.agentAddress), body: sampleBody(op) });
      observe(op, res, 422, "no_policy");
    }
  },

  // Approvals: payments above the threshold wait; once denied, approving or denying one again is 409; approving one
  // whose seller is gone is 502.
  async ({ s, ops, observe, call, agent, owner, keys }) => {
    const facilitator = await fundedFacilitator(s);
    const seller = await startV2Seller({ facilitator, usdc: s.svc.config.usdcAddress, price: 3_000000n });
    const pendingPayment = async () => {
      const body = { agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount: "4", intent: "above the threshold" };
      const res = await s.api("POST", "/pay", { key: agent.apiKey, body });
      if (res.status !== 202) throw new Error(`expected a pending payment: ${res.status} ${JSON.stringify(res.body)}`);
      return { id: res.body.approvalId, agentAddress: agent.agentAddress, merchant: res.body.merchant, amount: res.body.amount };
    };
    const [deny, approve] = [find(ops, "POST", "/approvals/:id/deny"), find(ops, "POST", "/approvals/:id/approve")];
    const decide = async (op: AnyOperation, a: Awaited<ReturnType<typeof pendingPayment>>, action: "approve" | "deny") =>
      call(op, { key: keys.owner, path: op.path.replace(":id", a.id), body: await approvalDecision(s, owner, a, action) });
    try {
      const [a, b] = [await pendingPayment(), await pendingPayment()];
      const denied = await decide(deny, a, "deny");
      if (denied.status !== 200) throw new Error(`deny failed: ${denied.status} ${JSON.stringify(denied.body)}`);
      observe(deny, await decide(deny, a, "deny"), 409, "conflict");
      observe(approve, await decide(approve, a, "approve"), 409, "conflict");
      await seller.close();
      observe(approve, await decide(approve, b, "approve"), 502, "upstream_error");
    } finally {
      await seller.close();
    }
  },

  // MCP: an owner key without an agent header (an agent key needs none), a message too large, a body in an encoding the
  // service does not read, and GET/DELETE.
  async ({ ops, observe, call, agent, keys }) => {
    const mcp = find(ops, "POST", "/mcp");
    const headers = { "X-Agent-Address": agent.agentAddress, Accept: "application/json, text/event-stream" };
    observe(mcp, await call(mcp, { key: keys.owner, body: { jsonrpc: "2.0", id: 1, method: "tools/list" } }), 400, "bad_request");
    observe(mcp, await call(mcp, { key: agent.apiKey, headers, body: JSON.stringify("x".repeat(300 * 1024)) }), 413, "payload_too_large");
    const encoded = await call(mcp, { key: agent.apiKey, headers: { ...headers, "Content-Encoding": "zstd-x" }, body: { jsonrpc: "2.0" } });
    observe(mcp, encoded, 415, "unsupported_media_type");
    for (const method of ["GET", "DELETE"]) {
      const op = find(ops, method, "/mcp");
      const res = await call(op, { key: agent.apiKey });
      observe(op, res, 405, "method_not_allowed");
      if (res.headers.get("Allow") !== "POST") throw new Error(`${method} /mcp: Allow ${res.headers.get("Allow")}`);
    }
  },

  // Webhooks: the eleventh active endpoint, and a test event for a disabled one (409).
  async ({ ops, observe, call, keys }) => {
    const create = find(ops, "POST", "/webhooks");
    const body = { url: "http://127.0.0.1:9/hook", events: ["payment.approved"] };
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push((await call(create, { key: keys.owner, body })).body.id);
    observe(create, await call(create, { key: keys.owner, body }), 409, "conflict");
    await call(find(ops, "DELETE", "/webhooks/:id"), { key: keys.owner, path: `/webhooks/${ids[0]}` });
    const test = find(ops, "POST", "/webhooks/:id/test");
    observe(test, await call(test, { key: keys.owner, path: `/webhooks/${ids[0]}/test` }), 409, "conflict");
  },

  // The dashboard's public answers: an asset and an agent that do not exist (404).
  async ({ ops, observe, call }) => {
    const asset = find(ops, "GET", "/dashboard/assets/:name");
    observe(asset, await call(asset), 404, "not_found");
    const agent = find(ops, "GET", "/agents/:address");
    observe(agent, await call(agent, { path: `/agents/${"0x" + "42".repeat(20)}` }), 404, "not_found");
  },

  // The sandbox's explorer: a transaction the chain never saw, something that is no address (404), a network it does not run (400).
  async ({ ops, observe, call }) => {
    const tx = find(ops, "GET", "/dev/explorer/tx/:hash");
    observe(tx, await call(tx, { path: `/dev/explorer/tx/0x${"ab".repeat(32)}` }), 404, "not_found");
    const address = find(ops, "GET", "/dev/explorer/address/:address");
    observe(address, await call(address, { path: "/dev/explorer/address/0x12" }), 404, "not_found");
    // A network this service does not run (400).
    observe(address, await call(address, { path: `/dev/explorer/address/0x${"12".repeat(20)}?network=solana` }), 400, "bad_request");
  },

  // The sandbox's demo sellers: a price it cannot ask (400).
  async ({ ops, observe, call }) => {
    for (const method of ["GET", "POST"]) {
      const seller = find(ops, method, "/dev/seller/exact");
      observe(seller, await call(seller, { path: "/dev/seller/exact?price=0" }), 400, "bad_request");
      for (const path of ["/dev/seller/upto?ceiling=0", "/dev/seller/batch-settlement?price=0"]) {
        const other = find(ops, method, path.split("?")[0]);
        observe(other, await call(other, { path }), 400, "bad_request");
      }
    }
  },
];
