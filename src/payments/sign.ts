/** The sign step: the agent wallet's EIP-3009 authorisation for a quote, signed with the agent's signing key. */
import type { AgentDoc } from "../store/documents";
import { type Quote, type SignedPayment, signPayment, walletPayer } from "../x402/buyer";
import type { Room } from "./context";

/**
 * Worth nothing until the policy authorises exactly this transfer on-chain (the wallet answers ERC-1271 for it only
 * then), and it stays in memory until then.
 */
export function sign(room: Room, agent: AgentDoc, quote: Quote): Promise<SignedPayment> {
  return room.ctx.wallets
    .signer(agent.signerAddress)
    .then((key) => signPayment(walletPayer(agent.address, key), quote, room.ctx.config.maxPaymentValiditySeconds));
}
