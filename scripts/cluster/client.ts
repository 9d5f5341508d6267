/**
 * The cluster's client side: onboards agents over the public API (genesis, the owner's signed link and first policy),
 * funds them with test USDC, and sends payments spread over the instances. A payment whose instance dies under it is
 * sent again, with the same Idempotency-Key, to a live instance: it then answers with that payment's outcome (or runs
 * it, when nothing had been paid yet), never a second payment.
 */
import { Contract, JsonRpcProvider, Wallet, getAddress } from "ethers";
import { LINK_AGENT_TYPES, SET_POLICY_TYPES, policyDomain, serviceDomain } from "../../src/chain/typedData";
import { buildSignedPolicy } from "../../src/policy/signedPolicy";
import type { Instance } from "./cluster";

export interface ClusterAgent {
  agentAddress: string;
  apiKey: string;
  owner: Wallet;
}

export interface PolicyInput {
  perTxLimit: string;
  dailyBudget: string;
  approvalThreshold: string;
  allowlist: string[];
}

async function call(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url + path, {
    method,
    headers: { ...(body !== undefined ? { "Content-Type": "application/json" } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON
  }
  return { status: res.status, body: parsed };
}

/** onboardAgent, tried again (a new agent each time) while a dependency answers 503 (a machine under heavy load). */
export async function onboardAgent(url: string, chainId: number, policy: PolicyInput): Promise<ClusterAgent> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await onboardOnce(url, chainId, policy);
    } catch (err) {
      if (attempt >= 5 || !/: 503 /.test((err as Error).message)) throw err;
      await new Promise((r) => setTimeout(r, 2_000 * attempt));
    }
  }
}

/** One agent, onboarded through `url`: genesis, link (owner-signed, with the activation code), first policy. */
async function onboardOnce(url: string, chainId: number, policy: PolicyInput): Promise<ClusterAgent> {
  const owner = Wallet.createRandom() as unknown as Wallet;
  const g = await call(url, "POST", "/wallet/genesis", {});
  if (g.status !== 201) throw new Error(`genesis: ${g.status} ${JSON.stringify(g.body)}`);
  const agentAddress: string = g.body.agentAddress;
  const apiKey: string = g.body.apiKey;
  const activationCode = new URL(g.body.activationUrl).searchParams.get("code") ?? undefined;
  const ts = () => Math.floor(Date.now() / 1000);
  const linkTs = ts();
  const ownerSignature = await owner.signTypedData(serviceDomain(chainId), LINK_AGENT_TYPES, {
    agent: agentAddress,
    owner: owner.address,
    timestamp: linkTs,
  });
  const link = await call(url, "POST", "/agents/link", {
    agentAddress,
    ownerAddress: owner.address,
    ownerSignature,
    timestamp: linkTs,
    ...(activationCode ? { activationCode } : {}),
  });
  if (link.status !== 200) throw new Error(`link: ${link.status} ${JSON.stringify(link.body)}`);
  const timestamp = ts();
  const message = { agent: agentAddress, ...buildSignedPolicy(policy).policy, timestamp };
  const humanSignature = await owner.signTypedData(policyDomain(chainId, getAddress(agentAddress)), SET_POLICY_TYPES, message);
  const limits = await call(
    url,
    "POST",
    "/limits",
    { agentAddress, ...policy, humanSignature, timestamp },
    { Authorization: `Bearer ${apiKey}` },
  );
  if (limits.status !== 201) throw new Error(`limits: ${limits.status} ${JSON.stringify(limits.body)}`);
  return { agentAddress, apiKey, owner };
}

/** Mints test USDC (TestUSDC's open mint) to each address, from a fresh key the chain funds with ETH. */
export async function fundAgents(rpcUrl: string, usdc: string, addresses: string[], units: bigint): Promise<void> {
  const provider = new JsonRpcProvider(rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1, pollingInterval: 50 });
  try {
    const minter = Wallet.createRandom().connect(provider);
    await provider.send("hardhat_setBalance", [minter.address, "0x56bc75e2d63100000"]);
    const token = new Contract(usdc, ["function mint(address to, uint256 amount)"], minter);
    let nonce = await provider.getTransactionCount(minter.address, "pending");
    const sent = [];
    for (const a of addresses) sent.push(await token.mint(a, units, { nonce: nonce++ }));
    await Promise.all(sent.map((tx) => tx.wait()));
  } finally {
    provider.destroy();
  }
}

export interface PaymentResult {
  index: number;
  agent: string;
  key: string;
  status: number;
  body: any;
  /** The instances it was sent to, in order (more than one when an instance died under it). */
  tried: string[];
  ms: number;
  /** When (Date.now()) each 409 it was answered before its final answer came. */
  conflictsAt: number[];
}

export interface StormOptions {
  instances: Instance[];
  agents: ClusterAgent[];
  payments: number;
  /** The seller of payment i. */
  sellerOf: (i: number) => string;
  maxAmount: string;
  onResult?: (r: PaymentResult) => void;
}

/** Sends every payment at once, payment i to instance i mod N; a payment whose instance dies goes to a live one. */
export async function storm(opts: StormOptions): Promise<PaymentResult[]> {
  const { instances, agents } = opts;
  const one = async (i: number): Promise<PaymentResult> => {
    const agent = agents[i % agents.length];
    const key = `storm-${i}`;
    const body = {
      agentAddress: agent.agentAddress,
      serviceUrl: opts.sellerOf(i),
      maxAmount: opts.maxAmount,
      intent: `storm payment ${i}`,
    };
    const tried: string[] = [];
    const conflictsAt: number[] = [];
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      const live = instances.filter((x) => x.alive);
      if (!live.length) throw new Error("no live instance");
      const inst = attempt === 0 ? instances[i % instances.length] : live[(i + attempt) % live.length];
      tried.push(inst.name);
      try {
        const res = await call(inst.url, "POST", "/pay", body, { Authorization: `Bearer ${agent.apiKey}`, "Idempotency-Key": key });
        // 409: the first request under this key is still being resolved (its instance died; an unsent payment of its
        // resolves only after its validBefore, MAX_PAYMENT_VALIDITY_SECONDS), or this run lost its lease: ask again.
        if (res.status === 409 && attempt < 480) {
          conflictsAt.push(Date.now());
          await new Promise((r) => setTimeout(r, 500));
          continue;
        }
        const r = {
          index: i,
          agent: agent.agentAddress,
          key,
          status: res.status,
          body: res.body,
          tried,
          ms: Date.now() - started,
          conflictsAt,
        };
        opts.onResult?.(r);
        return r;
      } catch {
        // The instance died under the request (connection reset or refused): the same key on a live one.
        if (attempt > 480) throw new Error(`payment ${i} found no live instance`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  return Promise.all(Array.from({ length: opts.payments }, (_, i) => one(i)));
}
