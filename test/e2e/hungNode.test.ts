/**
 * A hung node (issue 27): the chain's JSON-RPC endpoint accepts connections and never answers. Every call is bounded
 * by RPC_TIMEOUT_MS, so reads and payments answer 503 `unavailable` (retryable) within about that time instead of
 * hanging, and everything works again once the node answers. The node is played by a TCP server in front of the
 * embedded chain that, once told to hang, cuts its open connections and swallows new ones.
 */
import { type Server, type Socket, connect, createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { ImmediateJsonRpcProvider } from "../../src/chain/rpc/provider";
import { dependencyDown } from "../../src/errors";
import { randomOwner, startStack, type ApiResponse, type Stack } from "../helpers/stack";
import { fundedFacilitator, mintUsdc, startV2Seller, type TestSeller } from "../helpers/sellers";

const USDC = 1_000_000n;
const RPC_TIMEOUT_MS = 1_500;

interface HangingNode {
  url: string;
  hang(): void;
  answer(): void;
  close(): Promise<void>;
}

/** A TCP pass-through to `port` that can turn into a node that accepts connections and never answers. */
async function hangingNode(port: number): Promise<HangingNode> {
  let hanging = false;
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => s.destroy());
  };
  const server: Server = createServer((client) => {
    track(client);
    if (hanging) {
      client.resume(); // read, and never answer
      return;
    }
    const upstream = connect(port, "127.0.0.1");
    track(upstream);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const cut = () => {
    for (const s of sockets) s.destroy();
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hang: () => {
      hanging = true;
      cut();
    },
    answer: () => {
      hanging = false;
      cut();
    },
    close: () =>
      new Promise<void>((r) => {
        cut();
        server.close(() => r());
      }),
  };
}

function expectUnavailable(res: ApiResponse) {
  expect(res.status, JSON.stringify(res.body)).to.equal(503);
  expect(res.body).to.include({ error: "unavailable", status: 503, retryable: true });
  expect(res.body.message).to.match(/chain/);
}

describe("a hung chain node: every JSON-RPC call is bounded by RPC_TIMEOUT_MS, and the API answers 503, never hangs", function () {
  this.timeout(120_000);
  let chain: EmbeddedChain;
  let node: HangingNode;
  let s: Stack;
  let seller: TestSeller;
  let agent: { agentAddress: string; apiKey: string };

  before(async () => {
    chain = await startEmbeddedChain();
    node = await hangingNode(Number(new URL(chain.rpcUrl).port));
    s = await startStack({ RPC_TIMEOUT_MS: String(RPC_TIMEOUT_MS), LOG_LEVEL: "warn" }, { embeddedChain: { ...chain, rpcUrl: node.url } });
    seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: USDC });
    agent = await s.onboard(randomOwner(), { allowlist: ["127.0.0.1"] });
    await mintUsdc(s, agent.agentAddress, 10n * USDC);
  });
  afterEach(() => node.answer());
  after(async () => {
    node?.answer();
    await seller?.close();
    await s?.close();
    await node?.close();
    await chain?.close();
  });

  it("fails one call with ethers' TIMEOUT after the limit, which reads as the chain being down", async () => {
    const provider = new ImmediateJsonRpcProvider(node.url, 8453, { staticNetwork: true, batchMaxCount: 1 }, undefined, 300);
    try {
      node.hang();
      const t0 = Date.now();
      const err = await provider.getBlockNumber().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, "the call failed").to.not.equal(null);
      expect(Date.now() - t0).to.be.within(250, 3_000);
      expect((err as { code?: string }).code).to.equal("TIMEOUT");
      expect(dependencyDown(err)).to.equal("chain");
    } finally {
      provider.destroy();
    }
  });

  it("answers a read and a payment 503 unavailable within a few multiples of the limit, then pays once the node answers", async () => {
    node.hang();
    const t0 = Date.now();
    expectUnavailable(await s.api("GET", `/wallet/balance?address=${agent.agentAddress}`, { key: agent.apiKey }));
    const pay = () =>
      s.api("POST", "/pay", {
        key: agent.apiKey,
        headers: { "Idempotency-Key": "hung-1" },
        body: { agentAddress: agent.agentAddress, serviceUrl: seller.resource, maxAmount: "1", intent: "hung node" },
      });
    expectUnavailable(await pay());
    expect(Date.now() - t0, "both answered, not hung").to.be.below(6 * RPC_TIMEOUT_MS + 5_000);
    node.answer();
    const paid = await pay();
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(paid.body).to.include({ status: "approved" });
  });
});
