/** Owner helpers for API tests: Sign-In with Ethereum the way a wallet does it (EIP-4361, personal_sign). */
import { Wallet } from "ethers";
import { createSiweMessage } from "viem/siwe";
import { SET_OPERATOR_TYPES, SET_OWNER_TYPES, policyDomain } from "../../src/chain/typedData";
import type { ApiResponse, RemoteStack, Stack } from "./stack";

export interface SiweOverrides {
  domain?: string;
  uri?: string;
  chainId?: number;
  /** Address written in the message (default: the signer's). */
  address?: string;
  expirationTime?: Date;
}

/** An EIP-4361 message for the stack's API (domain = its host, URI = its origin, chain 8453 unless `o.chainId`). */
export function siweMessage(s: Pick<RemoteStack, "url">, address: string, nonce: string, o: SiweOverrides = {}): string {
  const url = new URL(s.url);
  return createSiweMessage({
    domain: o.domain ?? url.host,
    uri: o.uri ?? url.origin,
    address: (o.address ?? address) as `0x${string}`,
    chainId: o.chainId ?? 8453,
    nonce,
    version: "1",
    statement: "Sign in to SpendGate.",
    issuedAt: new Date(),
    expirationTime: o.expirationTime,
  });
}

export async function siweNonce(s: Pick<RemoteStack, "api">, address: string): Promise<string> {
  const res = await s.api("POST", "/auth/siwe/nonce", { body: { address } });
  if (res.status !== 200) throw new Error(`nonce failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.nonce;
}

/** Asks for a nonce, signs the message with `signer` (default: the owner) and posts it to /auth/siwe/verify. */
export async function siweVerify(
  s: Pick<RemoteStack, "url" | "api">,
  owner: Wallet,
  opts: SiweOverrides & { signer?: Wallet; nonce?: string; key?: string } = {},
): Promise<ApiResponse & { message: string; signature: string }> {
  const nonce = opts.nonce ?? (await siweNonce(s, owner.address));
  const message = siweMessage(s, owner.address, nonce, opts);
  const signature = await (opts.signer ?? owner).signMessage(message);
  const res = await s.api("POST", "/auth/siwe/verify", { body: { message, signature }, ...(opts.key ? { key: opts.key } : {}) });
  return { ...res, message, signature };
}

/** Signs in and returns the owner key. */
export async function ownerKey(s: Stack, owner: Wallet, registrationToken?: string): Promise<string> {
  const res = await siweVerify(s, owner, { key: registrationToken });
  if (res.status !== 200) throw new Error(`SIWE failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.apiKey;
}

/** Genesis then link to `owner`: an agent with an owner and no policy yet. */
export async function linkedAgent(s: Stack, owner: Wallet, body: Record<string, unknown> = {}) {
  const agent = await s.genesis(body);
  const res = await s.api("POST", "/agents/link", { body: await s.signLink(owner, agent.agentAddress) });
  if (res.status !== 200) throw new Error(`link failed: ${res.status} ${JSON.stringify(res.body)}`);
  return agent;
}

/** POST /agents/:address/owner: `owner` signs SetOwner handing the agent to `heir`, sent with the owner's key. */
export async function handOver(s: Stack, owner: Wallet, agentAddress: string, heir: string, key: string): Promise<ApiResponse> {
  const timestamp = s.now();
  const humanSignature = await owner.signTypedData(policyDomain(8453, agentAddress), SET_OWNER_TYPES, {
    agent: agentAddress,
    newOwner: heir,
    timestamp,
  });
  return s.api("POST", `/agents/${agentAddress}/owner`, { key, body: { newOwner: heir, timestamp, humanSignature } });
}

let operatorChanges = 0;

/**
 * The owner's SetOperator for `policyContract`, relayed straight on the contract by a stranger with its own ETH (not
 * through the service, not from its key), as the owner or anyone holding the signature could.
 */
export async function setOperatorOnChain(s: Stack, owner: Wallet, policyContract: string, operator: string): Promise<void> {
  const { chain } = s.svc;
  // Each signature's timestamp must be newer than the last one the policy took.
  const timestamp = s.now() + operatorChanges++;
  const signature = await owner.signTypedData(policyDomain(8453, policyContract), SET_OPERATOR_TYPES, {
    agent: policyContract,
    operator,
    timestamp,
  });
  const relayer = Wallet.createRandom().connect(chain.provider);
  await chain.provider.send("hardhat_setBalance", [relayer.address, "0xde0b6b3a7640000"]);
  await (await chain.policyAt(policyContract, relayer).setOperator(operator, timestamp, signature)).wait();
}
