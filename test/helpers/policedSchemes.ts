/**
 * The agent wallet paying x402 `batch-settlement` and `upto` sellers through the STOCK @x402/evm client schemes: the
 * wallet signs as walletClientSigner does (schemesFixture.ts), and before a payload carrying a channel deposit or an
 * upto ceiling leaves, the operator authorises it on-chain (authorizeDeposit / authorizeCeiling on the agent's address),
 * as the service does, so the seller's facilitator finds the wallet's ERC-1271 answer valid.
 */
import { type Permit2Authorization, ceilingOf } from "../../src/payments/schemes/uptoPayment";
import { ZeroAddress, type Signer, type SigningKey } from "ethers";
import type { PaymentPayloadContext, PaymentPayloadResult, PaymentRequirements } from "@x402/core/types";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";
import { UptoEvmScheme } from "@x402/evm/upto/client";
import type { SpendPolicySchemes } from "../../typechain-types";
import { ALLOWLIST, NO_APPROVAL, paymentId, proofFor } from "./policyFixture";
import { type Signed, walletClientSigner } from "./schemesFixture";

/** The merchant the operator names (an ALLOWLIST entry; any payee). */
export const MERCHANT = "api.example.com";

export interface PolicedWallet {
  agent: string;
  agentKey: { signingKey: SigningKey };
  /** SpendPolicySchemes at the agent's address, connected to the operator. */
  schemes: SpendPolicySchemes;
  operator: Signer;
}

/** Each authorisation the operator sent: the payment id, what it was for and its transaction. */
export interface Authorised {
  id: string;
  kind: "deposit" | "ceiling";
  ref: string;
  amount: bigint;
  txHash: string;
}

interface DepositPayload {
  type: string;
  channelConfig: Parameters<SpendPolicySchemes["authorizeDeposit"]>[4];
  voucher: { channelId: string };
  deposit?: { amount: string; authorization: { erc3009Authorization?: { validAfter: string; validBefore: string; salt: string } } };
}

interface UptoPayload {
  permit2Authorization: Permit2Authorization;
}

const { leaf, proof } = proofFor(ALLOWLIST, MERCHANT);

/** The stock batch-settlement client paying from the wallet (payerAuthorizer 0), each deposit authorised first. */
export class PolicedBatchScheme extends BatchSettlementEvmScheme {
  readonly authorised: Authorised[] = [];
  readonly signed: Signed[] = [];
  private readonly current: { id: string };

  constructor(
    private readonly w: PolicedWallet,
    rpcUrl: string,
  ) {
    const current = { id: paymentId() };
    const signed: Signed[] = [];
    super(
      walletClientSigner(w.agent, w.agentKey, () => current.id, signed),
      { payerAuthorizer: ZeroAddress as `0x${string}`, rpcUrl },
    );
    this.current = current;
    this.signed = signed;
  }

  override async createPaymentPayload(
    x402Version: number,
    requirements: PaymentRequirements,
    context?: PaymentPayloadContext,
  ): Promise<PaymentPayloadResult> {
    const id = (this.current.id = paymentId());
    const result = await super.createPaymentPayload(x402Version, requirements, context);
    const payload = result.payload as unknown as DepositPayload;
    const auth = payload.deposit?.authorization.erc3009Authorization;
    if (payload.type === "deposit" && payload.deposit && auth) {
      const amount = BigInt(payload.deposit.amount);
      const values = { amount, validAfter: BigInt(auth.validAfter), validBefore: BigInt(auth.validBefore), nonceSalt: auth.salt };
      const tx = await this.w.schemes
        .connect(this.w.operator)
        .authorizeDeposit(id, MERCHANT, leaf, proof, payload.channelConfig, values, NO_APPROVAL);
      await tx.wait();
      this.authorised.push({ id, kind: "deposit", ref: payload.voucher.channelId, amount, txHash: tx.hash });
    }
    return result;
  }
}

/** The stock upto client paying from the wallet, each ceiling authorised first (Permit2 approved for exactly it). */
export class PolicedUptoScheme extends UptoEvmScheme {
  readonly authorised: Authorised[] = [];
  private readonly current: { id: string };

  constructor(private readonly w: PolicedWallet) {
    const current = { id: paymentId() };
    super(walletClientSigner(w.agent, w.agentKey, () => current.id));
    this.current = current;
  }

  override async createPaymentPayload(
    x402Version: number,
    requirements: PaymentRequirements,
    context?: PaymentPayloadContext,
  ): Promise<PaymentPayloadResult> {
    const id = (this.current.id = paymentId());
    const result = await super.createPaymentPayload(x402Version, requirements, context);
    const a = (result.payload as unknown as UptoPayload).permit2Authorization;
    const ceiling = ceilingOf(a);
    const tx = await this.w.schemes.connect(this.w.operator).authorizeCeiling(id, MERCHANT, leaf, proof, ceiling, NO_APPROVAL);
    const receipt = await tx.wait();
    const digest = await this.w.schemes.ceilingDigest(ceiling);
    this.authorised.push({ id, kind: "ceiling", ref: digest, amount: ceiling.amount, txHash: receipt?.hash ?? tx.hash });
    return result;
  }
}
