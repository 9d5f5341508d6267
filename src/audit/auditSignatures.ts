/**
 * The owner's signature in each owner action's event (version 3 of the auditors' interface): the audit recovers its
 * signer with the same EIP-712 types the contract checked (src/chain/typedData.ts, policy domain of the agent) and holds
 * it against the owner in force at that point, followed through OwnerSet. An owner with code (an ERC-1271 or EIP-7702
 * account) is not recovered here: the contract checked its signature with SignatureChecker, which the audit notes.
 */
import { getAddress, verifyTypedData, type Provider, type TypedDataField } from "ethers";
import {
  APPROVAL_DECISION_TYPES,
  SET_OPERATOR_TYPES,
  SET_OWNER_TYPES,
  SET_PAUSED_TYPES,
  SET_POLICY_TYPES,
  WITHDRAW_TYPES,
  policyDomain,
} from "../chain/typedData";

/** The events whose signature an audit recovers, and the EIP-712 type each carries. */
export const SIGNED_EVENTS = {
  PolicyUpdated: SET_POLICY_TYPES,
  PausedSet: SET_PAUSED_TYPES,
  OperatorSet: SET_OPERATOR_TYPES,
  OwnerSet: SET_OWNER_TYPES,
  Withdrawn: WITHDRAW_TYPES,
  ApprovalUsed: APPROVAL_DECISION_TYPES,
} as const satisfies Record<string, Record<string, TypedDataField[]>>;

export type SignedEvent = keyof typeof SIGNED_EVENTS;

/** What the audit found of one owner action's signature. */
export interface AuditSignature {
  event: SignedEvent;
  txHash: string;
  /** The address the signature recovers to (null when it does not recover: not a 65-byte ECDSA signature). */
  signer: string | null;
  /** The owner in force when the event was emitted (for OwnerSet, the previous owner: the one who signs it). */
  owner: string;
  /** "owner": recovered the owner; "contract owner: ...": the owner has code, its signature was checked by the
   * contract (ERC-1271 / EIP-7702); "not the owner": an anomaly. */
  verdict: "owner" | typeof CONTRACT_OWNER | "not the owner";
}

export const CONTRACT_OWNER = "contract owner: signature checked by the contract";

/** The signer of an owner action from its typed data; null when the signature does not recover. */
export function recoverOwnerAction(
  chainId: bigint | number,
  agent: string,
  event: SignedEvent,
  message: Record<string, unknown>,
  signature: string,
): string | null {
  try {
    return getAddress(verifyTypedData(policyDomain(chainId, agent), SIGNED_EVENTS[event], message, signature));
  } catch {
    return null;
  }
}

/** Checks owner actions' signatures against the owner in force, asking the chain for an owner's code once. */
export class SignatureAuditor {
  private readonly code = new Map<string, Promise<boolean>>();
  constructor(
    private readonly provider: Provider,
    private readonly chainId: bigint | number,
  ) {}

  async check(
    agent: string,
    owner: string,
    event: SignedEvent,
    message: Record<string, unknown>,
    signature: string,
    txHash: string,
  ): Promise<AuditSignature> {
    const signer = recoverOwnerAction(this.chainId, agent, event, message, signature);
    const base = { event, txHash, signer, owner };
    if (signer === owner) return { ...base, verdict: "owner" };
    return { ...base, verdict: (await this.hasCode(owner)) ? CONTRACT_OWNER : "not the owner" };
  }

  private hasCode(address: string): Promise<boolean> {
    let has = this.code.get(address);
    if (!has) {
      has = this.provider.getCode(address).then((c) => c !== "0x");
      this.code.set(address, has);
    }
    return has;
  }
}
