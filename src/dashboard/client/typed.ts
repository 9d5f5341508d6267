/**
 * The EIP-712 typed data the dashboard asks wallets to sign, built from the same type definitions the server and the
 * contracts use (src/chain/typedData.ts), in the JSON form of eth_signTypedData_v4. uint256 values are decimal strings.
 */
import {
  APPROVAL_DECISION_TYPES,
  DOMAIN_NAME,
  DOMAIN_VERSION,
  LINK_AGENT_TYPES,
  NO_EXTRA_LIMITS,
  SET_PAUSED_TYPES,
  SET_POLICY_TYPES,
  type SignedPolicyFields,
  WITHDRAW_TYPES,
} from "../../chain/typedData";

type Field = { name: string; type: string };

/** A value of the JSON message: uint256 as decimal strings, structs as records (SetPolicy's merchants). */
type MessageValue = string | number | boolean | Record<string, string | boolean>[];

export interface TypedData {
  types: Record<string, Field[]>;
  primaryType: string;
  domain: { name: string; version: string; chainId: number; verifyingContract?: string };
  message: Record<string, MessageValue>;
}

const SERVICE_DOMAIN_TYPE: Field[] = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
];
const POLICY_DOMAIN_TYPE: Field[] = [...SERVICE_DOMAIN_TYPE, { name: "verifyingContract", type: "address" }];

function typed(
  types: Record<string, readonly { name: string; type: string }[]>,
  chainId: number,
  verifyingContract: string | null,
  message: TypedData["message"],
): TypedData {
  // The primary type first, then the structs it uses (SetPolicy's Merchant).
  const [primaryType] = Object.keys(types);
  return {
    types: {
      EIP712Domain: verifyingContract ? POLICY_DOMAIN_TYPE : SERVICE_DOMAIN_TYPE,
      ...Object.fromEntries(Object.entries(types).map(([name, fields]) => [name, fields.map((f) => ({ name: f.name, type: f.type }))])),
    },
    primaryType,
    domain: {
      name: DOMAIN_NAME,
      version: DOMAIN_VERSION,
      chainId,
      ...(verifyingContract ? { verifyingContract } : {}),
    },
    message,
  };
}

/**
 * The owner's clock: every signature the dashboard asks for is dated max(this browser's clock, the chain's latest block
 * time), never by the server's clock (a server that lied about the time could otherwise date an owner's signature).
 * The block time is read once per page (GET /dashboard/config `chainTime`) and kept as an offset to the browser's clock.
 */
let chainOffset: number | null = null;

/** Remembers the chain's latest block time (seconds), read just now; null when the chain did not answer. */
export function syncChainClock(chainTime: number | null): void {
  chainOffset = chainTime === null ? null : chainTime - Math.floor(Date.now() / 1000);
}

/** How far the chain's clock is from this browser's (seconds, positive when the chain is ahead), or null if unknown. */
export const clockSkew = (): number | null => chainOffset;

/** A skew above this is shown to the owner (SKEW_WARNING_SECONDS). */
export const SKEW_WARNING_SECONDS = 60;

export const nowSeconds = (): number => {
  const local = Math.floor(Date.now() / 1000);
  return chainOffset === null ? local : Math.max(local, local + chainOffset);
};

/** LinkAgent, service domain (POST /agents/link). */
export function linkAgentData(chainId: number, agent: string, owner: string, timestamp: number): TypedData {
  return typed(LINK_AGENT_TYPES, chainId, null, { agent, owner, timestamp });
}

/** The signed policy: the first fields and the allowlist in clear, and any of the later ones (absent = 0, "no such limit"). */
export type PolicyUnits = Pick<SignedPolicyFields, "perTxLimit" | "dailyBudget" | "merchants" | "approvalThreshold"> &
  Partial<SignedPolicyFields>;

/**
 * SetPolicy, policy domain of the agent's SpendPolicy (POST /limits), every field in the signed type's order: the owner's
 * wallet shows each allowlist entry with its daily cap, payee and offer rule (the contract derives its root from them).
 */
export function setPolicyData(chainId: number, policyContract: string, agent: string, p: PolicyUnits, timestamp: number): TypedData {
  const full: SignedPolicyFields = { ...NO_EXTRA_LIMITS, ...p };
  const message: TypedData["message"] = { agent };
  for (const { name } of SET_POLICY_TYPES.SetPolicy) {
    if (name === "agent" || name === "timestamp" || name === "merchants") continue;
    const v = full[name as Exclude<keyof SignedPolicyFields, "merchants">];
    message[name] = v.toString();
  }
  message.merchants = full.merchants.map((m) => ({
    entry: m.entry,
    dailyCap: m.dailyCap.toString(),
    payee: m.payee,
    requireSignedOffer: m.requireSignedOffer,
  }));
  message.timestamp = timestamp;
  // Keep the signed type's field order in the JSON too (wallets show the message as given).
  const ordered = Object.fromEntries(SET_POLICY_TYPES.SetPolicy.map(({ name }) => [name, message[name]]));
  return typed(SET_POLICY_TYPES, chainId, policyContract, ordered);
}

/**
 * SetPaused, policy domain (POST /agents/:address/pause). `epoch` is the agent's current authorisation epoch (GET
 * /limits `epoch`): a resume must name it, so a resume signed before a later pause can never undo that pause.
 */
export function setPausedData(
  chainId: number,
  policyContract: string,
  agent: string,
  s: { paused: boolean; epoch: number },
  timestamp: number,
): TypedData {
  return typed(SET_PAUSED_TYPES, chainId, policyContract, { agent, paused: s.paused, epoch: String(s.epoch), timestamp });
}

/** Withdraw, policy domain (POST /agents/:address/withdraw); token 0x0 for ETH, amount in the token's base units. */
export function withdrawData(
  chainId: number,
  agent: string,
  w: { token: string; to: string; amount: bigint },
  timestamp: number,
): TypedData {
  return typed(WITHDRAW_TYPES, chainId, agent, { agent, token: w.token, to: w.to, amount: w.amount.toString(), timestamp });
}

/**
 * ApprovalDecision, policy domain (POST /approvals/:id/approve|deny); amount in base units. `payTo` is the address the
 * seller asked to be paid at (GET /approvals `payTo`; the zero address when the request named none): the contract
 * pays only that address under this approval.
 */
export function approvalDecisionData(
  chainId: number,
  policyContract: string,
  d: { action: "approve" | "deny"; approvalId: string; agent: string; merchant: string; payTo: string; amount: bigint },
  timestamp: number,
): TypedData {
  return typed(APPROVAL_DECISION_TYPES, chainId, policyContract, {
    action: d.action,
    approvalId: d.approvalId,
    agent: d.agent,
    merchant: d.merchant,
    payTo: d.payTo,
    amount: d.amount.toString(),
    timestamp,
  });
}
