/**
 * Kill -9 between authorise and settle: the service runs as its own process (production mode against the
 * embedded chain and a CongoDB server), is killed while the seller holds the paid request, and a restarted service
 * resolves the payment from chain state.
 */
import { expect } from "chai";
import type { ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { JsonRpcProvider, Wallet, getAddress } from "ethers";
import { decodePaymentSignatureHeader } from "@x402/core/http";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { startEmbeddedMongo, type EmbeddedMongo } from "../../src/dev/embeddedStore";
import { loadConfig } from "../../src/config";
import { startService, type RunningService } from "../../src/server";
import { createInProcessFacilitator, type Facilitator } from "../../src/x402/facilitator";
import { LINK_AGENT_TYPES, NO_EXTRA_LIMITS, SET_POLICY_TYPES, policyDomain, serviceDomain } from "../../src/chain/typedData";
import { merchantsOf } from "../../src/policy/allowlist";
import { type ServiceProcess, processEnv, spawnService } from "../helpers/killedService";

const USDC = 1_000_000n;

/** A v1 seller that quotes normally and, once paid, optionally settles, then holds the request open forever. */
async function holdingSeller(facilitator: Facilitator, usdc: string, settleFirst: boolean) {
  const payTo = Wallet.createRandom().address;
  let onPaid: () => void = () => undefined;
  const paid = new Promise<void>((r) => (onPaid = r));
  let url = "";
  const requirement = () => ({
    scheme: "exact",
    network: "base",
    maxAmountRequired: USDC.toString(),
    resource: `${url}/r`,
    description: "held",
    mimeType: "application/json",
    payTo,
    maxTimeoutSeconds: 120,
    asset: usdc,
    extra: { name: "USD Coin", version: "2" },
  });
  const server: Server = createServer(async (req, res) => {
    const header = req.headers["x-payment"];
    if (typeof header !== "string") {
      res
        .writeHead(402, { "Content-Type": "application/json" })
        .end(JSON.stringify({ x402Version: 1, error: "payment required", accepts: [requirement()] }));
      return;
    }
    if (settleFirst) {
      const payload = decodePaymentSignatureHeader(header);
      await facilitator.settle(payload, requirement() as never);
    }
    onPaid(); // and never answer: the buyer is killed while waiting
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${url}/r`,
    paid,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

describe("a service killed between authorise and settle", function () {
  this.timeout(180_000);
  let chain: EmbeddedChain;
  let mongo: EmbeddedMongo;
  let provider: JsonRpcProvider;
  let env: Record<string, string>;
  const owner = Wallet.createRandom();
  const running: ChildProcess[] = [];
  const services: RunningService[] = [];

  before(async () => {
    chain = await startEmbeddedChain();
    mongo = await startEmbeddedMongo();
    provider = new JsonRpcProvider(chain.rpcUrl, 8453, { staticNetwork: true, cacheTimeout: -1 });
    env = {
      ...processEnv(chain, mongo.uri, "restart"),
      // The killed process's lease on its payment runs out at once, so the restart resolves it without waiting.
      PAYMENT_LEASE_MS: "1",
    };
  });
  after(async () => {
    for (const c of running) c.kill("SIGKILL");
    for (const s of services) await s.close();
    provider?.destroy();
    await mongo?.stop();
    await chain?.close();
  });

  async function start(): Promise<ServiceProcess> {
    const svc = await spawnService(env);
    running.push(svc.child);
    return svc;
  }

  async function call(url: string, method: string, path: string, body?: unknown, key?: string) {
    const res = await fetch(url + path, {
      method,
      headers: { "Content-Type": "application/json", ...(key ? { Authorization: `Bearer ${key}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }

  async function onboardedAgent(url: string) {
    const g = await call(url, "POST", "/wallet/genesis", {});
    const agent = g.body.agentAddress as string;
    const ts = Math.floor(Date.now() / 1000);
    const ownerSignature = await owner.signTypedData(serviceDomain(8453), LINK_AGENT_TYPES, { agent, owner: owner.address, timestamp: ts });
    const activationCode = new URL(g.body.activationUrl).searchParams.get("code");
    expect(
      (
        await call(url, "POST", "/agents/link", {
          agentAddress: agent,
          ownerAddress: owner.address,
          ownerSignature,
          timestamp: ts,
          activationCode,
        })
      ).status,
    ).to.equal(200);
    const policyAddress = getAddress(agent); // the agent wallet is its policy contract
    const policy = {
      perTxLimit: 5n * USDC,
      dailyBudget: 20n * USDC,
      merchants: merchantsOf(["127.0.0.1"]),
      approvalThreshold: 5n * USDC,
      ...NO_EXTRA_LIMITS,
    };
    const humanSignature = await owner.signTypedData(policyDomain(8453, policyAddress), SET_POLICY_TYPES, {
      agent,
      ...policy,
      timestamp: ts,
    });
    const limits = await call(
      url,
      "POST",
      "/limits",
      {
        agentAddress: agent,
        perTxLimit: "5",
        dailyBudget: "20",
        allowlist: ["127.0.0.1"],
        approvalThreshold: "5",
        humanSignature,
        timestamp: ts,
      },
      g.body.apiKey,
    );
    expect(limits.status, JSON.stringify(limits.body)).to.equal(201);
    expect((await call(url, "POST", "/dev/faucet", { agentAddress: agent, amount: "10" })).status).to.be.oneOf([200, 404]);
    const usdc = new (await import("ethers")).Contract(
      chain.addresses.usdc,
      [
        "function mint(address,uint256)",
        "function balanceOf(address) view returns (uint256)",
        "function authorizationState(address,bytes32) view returns (bool)",
      ],
      new Wallet(chain.facilitator.privateKey, provider),
    );
    await (await usdc.mint(agent, 10n * USDC)).wait();
    return { agent, apiKey: g.body.apiKey as string, policyAddress, usdc };
  }

  for (const settleFirst of [false, true]) {
    const name = settleFirst
      ? "resolves a payment the seller settled before the kill as approved"
      : "releases a payment that never settled (its authorisation dead on-chain), and records it as failed";
    it(name, async () => {
      const sellerKey = Wallet.createRandom();
      await provider.send("hardhat_setBalance", [sellerKey.address, "0x3635C9ADC5DEA00000"]);
      const facilitator = createInProcessFacilitator({ rpcUrl: chain.rpcUrl, chainId: 8453, privateKey: sellerKey.privateKey });
      const seller = await holdingSeller(facilitator, chain.addresses.usdc, settleFirst);
      const first = await start();
      const a = await onboardedAgent(first.url);
      const balanceBefore: bigint = await a.usdc.balanceOf(a.agent);

      const paying = call(
        first.url,
        "POST",
        "/pay",
        { agentAddress: a.agent, serviceUrl: seller.url, maxAmount: "1", intent: "killed mid-payment" },
        a.apiKey,
      ).catch(() => null);
      await seller.paid;
      first.child.kill("SIGKILL");
      await paying;

      const policy = new (await import("ethers")).Contract(
        a.policyAddress,
        ["function spentToday() view returns (uint256)", "function paymentState(bytes32) view returns (uint8)"],
        provider,
      );
      expect(await policy.spentToday()).to.equal(USDC); // authorised before the kill

      const svc = await startService(loadConfig({ ...env, PORT: "0", LOG_LEVEL: "silent" }));
      services.push(svc);
      const doc = await svc.store.payments.findOne({ agentAddress: a.agent });
      expect(doc, "the ledger entry survived the kill").to.not.equal(null);
      expect(doc!.phase).to.equal("done");
      if (settleFirst) {
        expect(doc!.status).to.equal("approved");
        expect(doc!.txHash).to.match(/^0x[0-9a-f]{64}$/);
        expect(await policy.spentToday()).to.equal(USDC);
        expect(await a.usdc.balanceOf(a.agent)).to.equal(balanceBefore - USDC);
      } else {
        expect(doc!.status).to.equal("failed");
        expect(await policy.paymentState(doc!.paymentId)).to.equal(0n); // released: the wallet refuses it from now on
        expect(doc!.releaseTxHash).to.match(/^0x[0-9a-f]{64}$/);
        expect(await policy.spentToday()).to.equal(0n);
        expect(await a.usdc.authorizationState(a.agent, doc!.paymentId)).to.equal(false);
        expect(await a.usdc.balanceOf(a.agent)).to.equal(balanceBefore);
      }
      expect(await svc.store.payments.countDocuments({ phase: { $in: ["authorizing", "authorized"] } })).to.equal(0);
      await svc.close();
      services.pop();
      await seller.close();
    });
  }
});
