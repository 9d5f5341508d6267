/**
 * What the compromised-server attacks share: the stolen secrets, the target wallet, the record of one attempt, and
 * settling an EIP-3009 transfer from the wallet with the stolen agent key.
 */
import hre from "hardhat";
import type { BaseWallet, Signer } from "ethers";
import { TRANSFER_WITH_AUTHORIZATION_TYPES, walletSignature } from "../../src/chain/typedData";
import type { SpendPolicy, TestUSDC } from "../../typechain-types";

const { ethers } = hre;

export interface Secrets {
  /** The operator's key: authorises and releases payments, deploys agents. */
  operator: Signer;
  /** The agent's signing key (the service decrypts it to sign). */
  agentKey: BaseWallet;
}

export interface Target {
  agent: SpendPolicy;
  agentAddress: string;
  token: TestUSDC;
  /** A merchant host the owner allowlisted, its leaf and proof. */
  merchant: { host: string; leaf: { entry: string; dailyCap: bigint; payee: string }; proof: string[] };
  /** Where the attacker wants the money. */
  thief: string;
}

export interface Attempt {
  name: string;
  /** Resolves when the attempt was refused on-chain (a revert, or a refusal the contract reports). */
  refused: boolean;
  detail: string;
}

export const NO_APPROVAL = { approvalId: "", amount: 0n, timestamp: 0n, signature: "0x" };

/** The USDC TransferWithAuthorization digest of a transfer from `from`. */
export async function transferDigest(
  token: TestUSDC,
  from: string,
  t: { to: string; value: bigint; validAfter: bigint; validBefore: bigint; nonce: string },
): Promise<string> {
  const domain = { name: await token.name(), version: await token.version(), chainId: 8453n, verifyingContract: await token.getAddress() };
  return ethers.TypedDataEncoder.hash(domain, TRANSFER_WITH_AUTHORIZATION_TYPES, { from, ...t });
}

/** Sends an EIP-3009 transfer from the agent wallet signed by the agent key, as a facilitator would settle it. */
export async function settleFromWallet(
  s: Secrets,
  target: Target,
  t: { to: string; value: bigint; validAfter: bigint; validBefore: bigint; nonce: string },
): Promise<void> {
  const digest = await transferDigest(target.token, target.agentAddress, t);
  const sig = walletSignature(t.nonce, s.agentKey.signingKey.sign(digest).serialized);
  await (
    await target.token
      .connect(s.operator)
      ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
        target.agentAddress,
        t.to,
        t.value,
        t.validAfter,
        t.validBefore,
        t.nonce,
        sig,
      )
  ).wait();
}

export async function refusedOnChain(name: string, action: () => Promise<unknown>): Promise<Attempt> {
  try {
    await action();
    return { name, refused: false, detail: "went through" };
  } catch (err) {
    const msg = (err as Error).message;
    const reason = /reverted with (?:reason string|custom error) '([^']+)'/.exec(msg)?.[1] ?? msg.split("\n")[0].slice(0, 120);
    return { name, refused: true, detail: reason };
  }
}
