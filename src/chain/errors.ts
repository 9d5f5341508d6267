/** Turns a reverted contract call into an AppError the caller can act on. */
import type { BaseContract } from "ethers";
import { appError, badRequest, conflict, invalidSignature, unavailable, type AppError } from "../errors";

/** The custom error's name and args when a call reverted with one of this contract's errors. */
export function decodeRevert(contract: BaseContract, err: unknown): { name: string; args: unknown[] } | null {
  const e = err as { revert?: { name: string; args: unknown[] }; data?: string; info?: { error?: { data?: string } } };
  if (e?.revert?.name) return { name: e.revert.name, args: [...e.revert.args] };
  const data = e?.data ?? e?.info?.error?.data;
  if (typeof data === "string" && data.startsWith("0x") && data.length >= 10) {
    try {
      const parsed = contract.interface.parseError(data);
      if (parsed) return { name: parsed.name, args: [...parsed.args] };
    } catch {
      return null;
    }
  }
  return null;
}

const MESSAGES: Record<string, (args: unknown[]) => AppError> = {
  SpendPolicyInvalidSignature: () => invalidSignature("The contract did not accept the owner's signature."),
  SpendPolicyStaleTimestamp: (a) =>
    conflict(`A newer signed change (timestamp ${String(a[1])}) is already on-chain; sign again with a later timestamp.`),
  SpendPolicyTimestampOutOfWindow: (a) =>
    invalidSignature(`The signed timestamp ${String(a[0])} is too far from the chain's time ${String(a[1])}; sign again now.`),
  SpendPolicyInvalidPolicy: () => badRequest("A limit is larger than the contract can store."),
  SpendPolicyAlreadyDeployed: () => conflict("The agent's policy contract is already deployed."),
  SpendPolicySignatureUsed: () => conflict("This signature was already used on-chain; sign again with a new timestamp."),
  SpendPolicyZeroAddress: () => badRequest("The zero address is not allowed here."),
  SpendPolicyWithdrawFailed: () =>
    appError("withdraw_failed", "The recipient refused the transfer (a contract that does not accept ETH?)."),
  SpendPolicyUnauthorizedDeployer: () => unavailable("This service's operator is not the factory's deployer."),
  SpendPolicyUnauthorizedOperator: () => unavailable("This service is not the operator of the agent's policy contract."),
};

/** Maps a revert to a client error where it is the client's to fix; rethrows anything else. */
export function revertToAppError(contract: BaseContract, err: unknown): never {
  const decoded = decodeRevert(contract, err);
  if (decoded && MESSAGES[decoded.name]) throw MESSAGES[decoded.name](decoded.args);
  throw err;
}
