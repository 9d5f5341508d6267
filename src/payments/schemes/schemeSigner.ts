/**
 * The agent wallet as the signer of the stock @x402/evm upto and batch-settlement clients. The wallet (a contract)
 * answers ERC-1271 only for what its policy authorised: a Permit2 witness transfer of an authorised upto ceiling, a
 * USDC ReceiveWithAuthorization of an authorised channel deposit (both: the 97-byte format, paymentId then the agent
 * signing key's signature), and Vouchers of a channel it deposited into in the current epoch (129 bytes: channelId,
 * maxClaimableAmount, then the key's signature). Signing here is local and free; the signature is worth nothing until
 * the operator's authorisation lands on-chain.
 */
import type { ClientEvmSigner } from "@x402/evm";
import { getAddress } from "../../chain/rpc/checksum";
import { walletSignature } from "../../chain/typedData";
import type { AgentSigner } from "../../wallets/provider";

/** One digest the wallet was asked to sign, with its typed message (what the payment's steps read back). */
export interface SchemeSignature {
  primaryType: string;
  message: Record<string, unknown>;
  signature: `0x${string}`;
}

const word = (v: bigint) => v.toString(16).padStart(64, "0");

/**
 * A ClientEvmSigner for the wallet at `walletAddress`, signing with `key`. Ceilings and deposits carry `paymentId`
 * (the operator's authorisation names it); `log` gets every signature made.
 */
export function schemeSigner(walletAddress: string, key: AgentSigner, paymentId: string, log: SchemeSignature[] = []): ClientEvmSigner {
  return {
    address: getAddress(walletAddress) as `0x${string}`,
    signTypedData: async (td) => {
      const data = td as unknown as { domain: Record<string, unknown>; types: Record<string, { name: string; type: string }[]> };
      const message = td.message;
      const ecdsa = await key.signTypedData({ domain: data.domain, types: data.types, primaryType: td.primaryType, message });
      let signature: `0x${string}`;
      if (td.primaryType === "Voucher") {
        const channelId = String(message.channelId).toLowerCase().replace(/^0x/, "");
        if (!/^[0-9a-f]{64}$/.test(channelId)) throw new Error("a voucher without a bytes32 channelId");
        signature = `0x${channelId}${word(BigInt(message.maxClaimableAmount as bigint | string))}${ecdsa.slice(2)}`;
      } else if (td.primaryType === "PermitWitnessTransferFrom" || td.primaryType === "ReceiveWithAuthorization") {
        signature = walletSignature(paymentId, ecdsa) as `0x${string}`;
      } else {
        throw new Error(`an agent wallet does not sign ${td.primaryType} for the x402 schemes`);
      }
      log.push({ primaryType: td.primaryType, message, signature });
      return signature;
    },
  };
}
