/**
 * Independent x402 sellers for tests: real HTTP on 127.0.0.1 random ports, real x402 libraries, no mocks.
 * - startV2Seller (sellerV2.ts): @x402/core's x402ResourceServer + x402HTTPResourceServer with the exact EVM server
 *   scheme, settling through one of our facilitators (PAYMENT-REQUIRED / PAYMENT-SIGNATURE / PAYMENT-RESPONSE).
 * - startV1Seller (sellerV1.ts): a hand-written v1 seller (JSON 402 body, X-PAYMENT, X-PAYMENT-RESPONSE).
 * - startMisbehavingSeller (sellerMisbehaving.ts): the ways a seller goes wrong.
 * Their shared HTTP plumbing is in sellerServer.ts. Here: the chain-side helpers the seller tests use with them.
 * Every seller serves the same thing on every path; buyers use `seller.resource` (`<url>/resource`).
 */
import { Wallet } from "ethers";
import { createInProcessFacilitator, type InProcessFacilitator, type InProcessFacilitatorConfig } from "../../src/x402/facilitator";
import type { ApiResponse, PerFileStack, PolicyInput, Stack } from "./stack";
import { randomOwner, startedInBefore } from "./stack";
import type { SellerOptions, TestSeller } from "./sellerServer";
import { startV2Seller } from "./sellerV2";
import { startV1Seller } from "./sellerV1";

export type { SellerOptions, TestSeller } from "./sellerServer";
export { startV2Seller } from "./sellerV2";
export { startV1Seller } from "./sellerV1";
export { startMisbehavingSeller, type MisbehavingOptions, type MisbehaviourMode } from "./sellerMisbehaving";

/**
 * An in-process facilitator for a test seller with its own fresh key, funded with ETH on the embedded chain. Never
 * share the service's facilitator key: two senders on one key race for the account nonce.
 */
export async function fundedFacilitator(
  stack: Pick<Stack, "svc">,
  opts: Pick<InProcessFacilitatorConfig, "confirmationTimeoutMs" | "pendingSettlements"> = {},
): Promise<InProcessFacilitator> {
  const wallet = Wallet.createRandom();
  await stack.svc.chain.provider.send("hardhat_setBalance", [wallet.address, `0x${(10n ** 21n).toString(16)}`]);
  return createInProcessFacilitator({
    rpcUrl: stack.svc.config.rpcUrl,
    chainId: stack.svc.config.chainId,
    privateKey: wallet.privateKey,
    ...opts,
  });
}

/** Mints TestUSDC (open mint) through the service's nonce-serialised operator sender. */
export async function mintUsdc(stack: Pick<Stack, "svc">, to: string, units: bigint): Promise<void> {
  const { chain } = stack.svc;
  await chain.sendAndWait((o) => chain.usdc.connect(chain.operator).getFunction("mint")(to, units, o));
}

/** USDC balance in base units. */
export async function usdcBalance(stack: Pick<Stack, "svc">, address: string): Promise<bigint> {
  return await stack.svc.chain.usdc.balanceOf(address);
}

const USDC = 1_000_000n;

/**
 * A v2 (or v1) seller asking `price` base units of the stack's USDC, settling through its own funded facilitator (or
 * `opts.facilitator`). The caller closes it (PerFileStack.keep).
 */
export async function stackSeller(
  stack: Pick<Stack, "svc">,
  price: bigint,
  opts: Partial<SellerOptions> & { version?: 1 | 2 } = {},
): Promise<TestSeller> {
  const { version = 2, ...rest } = opts;
  const facilitator = rest.facilitator ?? (await fundedFacilitator(stack));
  return (version === 1 ? startV1Seller : startV2Seller)({ usdc: stack.svc.config.usdcAddress, price, ...rest, facilitator });
}

/**
 * The file's stack with one stackSeller asking `price`: started in before() once the stack is up (before the file's own
 * before hooks), closed with the stack's kept values. `seller` stands for the seller once started.
 */
export function withSeller(
  file: PerFileStack,
  price: bigint,
  opts: Parameters<typeof stackSeller>[2] = {},
): PerFileStack & { seller: TestSeller } {
  let started: TestSeller | undefined;
  before(async () => {
    started = file.keep(await stackSeller(file.s, price, opts));
  });
  return { ...file, seller: startedInBefore(() => started, "withSeller: seller") };
}

export interface PayingAgent {
  agentAddress: string;
  apiKey: string;
  policyContract: string;
  owner: Wallet;
  /** POST /pay as this agent (its key, its address) for `serviceUrl`, maxAmount "5" unless given. */
  pay(serviceUrl: string, body?: Record<string, unknown>, headers?: Record<string, string>): Promise<ApiResponse>;
}

/**
 * An onboarded agent that can pay the test sellers: its owner (random unless given), a policy allowing 127.0.0.1 (the
 * rest of stack.onboard's defaults unless `policy` names them) and `funds` base units of USDC (100 USDC by default).
 */
export async function payingAgent(
  stack: Stack,
  opts: { owner?: Wallet; policy?: Partial<PolicyInput>; funds?: bigint; intent?: string } = {},
): Promise<PayingAgent> {
  const owner = opts.owner ?? randomOwner();
  const a = await stack.onboard(owner, { allowlist: ["127.0.0.1"], ...opts.policy });
  const funds = opts.funds ?? 100n * USDC;
  if (funds > 0n) await mintUsdc(stack, a.agentAddress, funds);
  const intent = opts.intent ?? "test payment";
  return {
    ...a,
    owner,
    pay: (serviceUrl, body = {}, headers) =>
      stack.api("POST", "/pay", {
        key: a.apiKey,
        headers,
        body: { agentAddress: a.agentAddress, serviceUrl, maxAmount: "5", intent, ...body },
      }),
  };
}
