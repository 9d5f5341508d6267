/**
 * The public views of stored documents, in one place: what REST, MCP and the owner's webhooks show of an agent, a
 * ledger entry and an approval. Amounts leave as decimal strings, dates as ISO 8601.
 */
import { formatEther } from "ethers";
import { fromBaseUnits } from "../amounts";
import type { AgentDoc, ApprovalDoc, PaymentDoc } from "../store/documents";

/** Where an agent or a payment lives: its network and chain id. */
export interface NetworkRef {
  network: string;
  chainId: number;
}

/**
 * An agent as GET /wallet/agents lists it; `where`: its network; `deployed`: whether its wallet and policy contract
 * are on-chain (there).
 */
export function agentView(a: AgentDoc, where: NetworkRef, deployed: boolean) {
  return {
    address: a.address,
    network: where.network,
    chainId: where.chainId,
    label: a.label,
    createdAt: a.createdAt.toISOString(),
    ownerAddress: a.ownerAddress,
    policyContract: a.policyAddress,
    deployed,
  };
}

/** The swap as the answer and the ledger show it: amounts as decimal strings in the token's units. */
export interface SwapView {
  txHash: string;
  tokenIn: "WETH" | "ETH";
  amountIn: string;
  amountOut: string;
}

export function swapView(s: NonNullable<PaymentDoc["swap"]>): SwapView;
export function swapView(s: PaymentDoc["swap"] | undefined): SwapView | null;
export function swapView(s: PaymentDoc["swap"] | undefined): SwapView | null {
  if (!s) return null;
  return { txHash: s.txHash, tokenIn: s.tokenIn, amountIn: formatEther(s.amountIn), amountOut: fromBaseUnits(s.amountOut) };
}

/**
 * Where explorer links point: EXPLORER_URL (the network's explorer by default), or in embedded mode the service's own
 * view of its sandbox chains (/dev/explorer/tx/<hash>): a sandbox has its network's chain id, so the public explorer
 * would show another chain's data.
 */
export function explorerBase(ctx: { config: { explorerUrl?: string }; urls: { base: string } }): string {
  return ctx.config.explorerUrl ?? `${ctx.urls.base}/dev/explorer`;
}

type NetworksOf = { config: { networks: readonly { name: string; chainId: number; explorerUrl?: string }[] }; urls: { base: string } };

/** The network of a payment (its own, or the first network's for one from before networks were recorded) and its explorer. */
export function paymentWhere(ctx: NetworksOf, doc: Pick<PaymentDoc, "network">): NetworkRef & { explorerUrl: string } {
  const first = ctx.config.networks[0];
  const n = ctx.config.networks.find((x) => x.name === (doc.network ?? first.name));
  return {
    network: doc.network ?? first.name,
    // A network no longer run: its explorer unknown here (the chain id 0 says so).
    chainId: n?.chainId ?? 0,
    explorerUrl: explorerBase({ config: { explorerUrl: n?.explorerUrl }, urls: ctx.urls }),
  };
}

/** A ledger entry (GET /ledger, GET /payments/:id, MCP get_payment, payment webhooks), on network `where`. */
export function paymentView(doc: PaymentDoc, where: NetworkRef & { explorerUrl: string }) {
  // A channel voucher has no on-chain paymentId (it is signed off-chain); a deposit's is its authorisation's.
  const paymentId = doc.scheme === "batch-settlement" ? (doc.channel?.depositPaymentId ?? null) : doc.paymentId;
  const { explorerUrl } = where;
  return {
    id: doc.txnId,
    agentAddress: doc.agentAddress,
    network: where.network,
    chainId: where.chainId,
    merchant: doc.merchant,
    amount: fromBaseUnits(doc.amount),
    amountIs: doc.amountIs ?? ("price" as const),
    currency: doc.currency,
    intent: doc.intent,
    status: doc.status,
    txHash: doc.txHash,
    createdAt: doc.createdAt.toISOString(),
    reason: doc.reason,
    approvalId: doc.approvalId,
    paymentId,
    payTo: paymentId ? doc.payTo : null,
    authorizeTxHash: doc.authorizeTxHash ?? null,
    releaseTxHash: doc.releaseTxHash ?? null,
    serviceUrl: doc.serviceUrl,
    settledAt: doc.settledAt ? doc.settledAt.toISOString() : null,
    explorerUrl: doc.txHash ? `${explorerUrl}/tx/${doc.txHash}` : null,
    onchain: doc.onchain,
    swap: swapView(doc.swap),
    receipt: receiptView(doc),
    ...(doc.pendingSettlementTx && doc.phase !== "done" ? { pendingSettlementTx: doc.pendingSettlementTx } : {}),
    ...schemeView(doc),
    // A seller that moved its payTo: the owner's alert (payment.blocked) and the ledger name the new address.
    ...(doc.refusedPayTo ? { refusedPayTo: doc.refusedPayTo, ...(doc.pinnedPayee ? { pinnedPayee: doc.pinnedPayee } : {}) } : {}),
  };
}

/** The seller's receipt of a payment made under a signed offer (docs/receipts.md); null when it signed no offer. */
function receiptView(doc: PaymentDoc) {
  const r = doc.receipt;
  if (!r) return null;
  return { signer: r.signer, issuedAt: r.issuedAt, verified: r.verified, ...(r.problem ? { problem: r.problem } : {}) };
}

/** How an entry was paid (docs/schemes.md): the scheme, an upto entry's ceiling, a voucher's place in its channel. */
function schemeView(doc: PaymentDoc) {
  const c = doc.channel;
  return {
    scheme: doc.scheme ?? ("exact" as const),
    ceiling: doc.ceiling ? fromBaseUnits(doc.ceiling) : null,
    creditTxHash: doc.creditTxHash ?? null,
    channel: c
      ? {
          channelId: c.channelId,
          cumulative: fromBaseUnits(c.cumulative),
          deposit: c.deposit === null ? null : fromBaseUnits(c.deposit),
          depositPaymentId: c.depositPaymentId,
        }
      : null,
  };
}

/** An approval as GET /approvals lists it. */
export function approvalView(a: ApprovalDoc) {
  return {
    id: a.approvalId,
    agentAddress: a.agentAddress,
    merchant: a.merchant,
    serviceUrl: a.serviceUrl,
    amount: fromBaseUnits(a.amount),
    payTo: a.payTo ?? null,
    intent: a.intent,
    status: a.status,
    requestedAt: a.requestedAt.toISOString(),
    resolvedAt: a.resolvedAt ? a.resolvedAt.toISOString() : null,
    expiresAt: a.expiresAt.toISOString(),
  };
}

/** An approval as the approval.requested and approval.expired webhooks tell it, with where the owner decides. */
export function approvalAlertView(a: ApprovalDoc, dashboardUrl: string) {
  return {
    approvalId: a.approvalId,
    transactionId: a.txnId,
    agentAddress: a.agentAddress,
    merchant: a.merchant,
    serviceUrl: a.serviceUrl,
    amount: fromBaseUnits(a.amount),
    currency: "USDC",
    intent: a.intent,
    requestedAt: a.requestedAt.toISOString(),
    expiresAt: a.expiresAt.toISOString(),
    approveAt: `${dashboardUrl}/approvals`,
  };
}
