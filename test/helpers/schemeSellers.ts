/**
 * Stock x402 parties for the `upto` and `batch-settlement` schemes, as a seller would set them up from the x402
 * packages' documentation and nothing of SpendGate's: @x402/core's x402Facilitator with @x402/evm's upto and
 * batch-settlement facilitator schemes on a plain viem wallet client, and a seller built on x402ResourceServer +
 * x402HTTPResourceServer with the matching server schemes, over real HTTP on 127.0.0.1. Buyers are @x402/core's
 * x402Client with the stock client schemes, through @x402/fetch.
 */
import hre from "hardhat";
import { x402Facilitator } from "@x402/core/facilitator";
import { x402HTTPResourceServer, x402ResourceServer, type FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { ExactEvmScheme as ExactFacilitatorScheme } from "@x402/evm/exact/facilitator";
import { ExactEvmScheme as ExactServerScheme } from "@x402/evm/exact/server";
import { BatchSettlementEvmScheme as BatchFacilitatorScheme } from "@x402/evm/batch-settlement/facilitator";
import { BatchSettlementChannelManager, BatchSettlementEvmScheme as BatchServerScheme } from "@x402/evm/batch-settlement/server";
import { UptoEvmScheme as UptoFacilitatorScheme } from "@x402/evm/upto/facilitator";
import { UptoEvmScheme as UptoServerScheme } from "@x402/evm/upto/server";
import { Wallet } from "ethers";
import { privateKeyToAccount } from "viem/accounts";
import { stockFacilitatorSigner } from "../../src/dev/schemeSellers";
import { USDC_EXTRA, listen, sendJson } from "./sellerServer";
import { settleX402Request } from "./sellerX402";

export const NETWORK = "eip155:8453" as const;

export interface StockFacilitator {
  client: FacilitatorClient;
  /** The key that sends (and, for upto, the facilitator named in the payer's witness). */
  address: `0x${string}`;
  /** The batch-settlement receiver authorizer the facilitator signs claims and refunds with. */
  receiverAuthorizer: `0x${string}`;
}

/** stockSchemeFacilitator sending from a new key given 1,000 ETH on the in-process Hardhat network (served at `rpcUrl`). */
export async function fundedStockSchemeFacilitator(rpcUrl: string): Promise<StockFacilitator> {
  const key = Wallet.createRandom();
  await hre.network.provider.request({ method: "hardhat_setBalance", params: [key.address, "0x3635C9ADC5DEA00000"] });
  return stockSchemeFacilitator(rpcUrl, key.privateKey);
}

/** The stock facilitator with the upto, batch-settlement and exact EVM schemes, sending from its own funded key. */
export function stockSchemeFacilitator(rpcUrl: string, privateKey: string): StockFacilitator {
  const { signer, address } = stockFacilitatorSigner(rpcUrl, 8453, privateKey);
  const authorizer = privateKeyToAccount(Wallet.createRandom().privateKey as `0x${string}`);
  const facilitator = new x402Facilitator();
  facilitator.register(NETWORK, new UptoFacilitatorScheme(signer));
  facilitator.register(NETWORK, new BatchFacilitatorScheme(signer, authorizer));
  facilitator.register(NETWORK, new ExactFacilitatorScheme(signer));
  return {
    address,
    receiverAuthorizer: authorizer.address,
    client: {
      verify: (p: PaymentPayload, r: PaymentRequirements) => facilitator.verify(p, r),
      settle: (p: PaymentPayload, r: PaymentRequirements) => facilitator.settle(p, r),
      getSupported: () => Promise.resolve(facilitator.getSupported() as Awaited<ReturnType<FacilitatorClient["getSupported"]>>),
    },
  };
}

export interface SchemeSeller {
  url: string;
  resource: string;
  payTo: string;
  /** Paid responses served (200) and settle responses seen (their `transaction`, "" for a voucher). */
  served: number;
  settlements: { transaction: string; amount?: string }[];
  /**
   * From now on, answers a paid request only once `until` resolves, after settling it (a buyer that dies meanwhile
   * leaves a settled payment behind); resolves when the next one settled.
   */
  holdAfterSettlement(until: Promise<void>): Promise<void>;
  /** How long the seller's handler took on each request it answered (402s included), in ms, in arrival order. */
  handlerMs: number[];
  close(): Promise<void>;
}

export interface UptoSeller extends SchemeSeller {
  /** What the next request is charged (at most the ceiling, the route's price). */
  setUsage(units: bigint): void;
}

export interface BatchSeller extends SchemeSeller {
  manager: BatchSettlementChannelManager;
}

async function serve(
  resourceServer: x402ResourceServer,
  scheme: string,
  payTo: string,
  price: bigint,
  usdc: string,
  extra: Record<string, unknown>,
  overrides: () => { amount: string } | undefined,
): Promise<SchemeSeller> {
  const route = {
    accepts: { scheme, network: NETWORK, payTo, price: { amount: price.toString(), asset: usdc, extra }, maxTimeoutSeconds: 300 },
    description: `test ${scheme} resource`,
    mimeType: "application/json",
  };
  const httpServer = new x402HTTPResourceServer(resourceServer, { "GET /*": route, "POST /*": route });
  await httpServer.initialize();
  let hold: Promise<void> | null = null;
  const settledWaiters: (() => void)[] = [];
  const seller: SchemeSeller = {
    url: "",
    resource: "",
    payTo,
    served: 0,
    settlements: [],
    handlerMs: [],
    holdAfterSettlement: (until) => {
      hold = until;
      return new Promise((resolve) => settledWaiters.push(resolve));
    },
    close: () => Promise.resolve(),
  };
  const listener = await listen(async (req, res, url) => {
    const started = performance.now();
    res.once("finish", () => seller.handlerMs.push(performance.now() - started));
    const settled = await settleX402Request(httpServer, req, res, url, overrides);
    if (!settled) return;
    seller.settlements.push({ transaction: settled.transaction, amount: settled.amount });
    for (const w of settledWaiters.splice(0)) w();
    if (hold) await hold;
    seller.served++;
    sendJson(res, 200, { data: "paid content" }, settled.headers);
  });
  seller.url = listener.url;
  seller.resource = `${listener.url}/resource`;
  seller.close = listener.close;
  return seller;
}

/** An upto seller: the buyer signs the route's price as its ceiling; each request settles `usage` (default: all). */
export async function startUptoSeller(opts: { facilitator: FacilitatorClient; usdc: string; ceiling: bigint }): Promise<UptoSeller> {
  const resourceServer = new x402ResourceServer(opts.facilitator);
  resourceServer.register(NETWORK, new UptoServerScheme());
  let usage: bigint | undefined;
  const payTo = Wallet.createRandom().address;
  const seller = await serve(resourceServer, "upto", payTo, opts.ceiling, opts.usdc, { ...USDC_EXTRA }, () =>
    usage === undefined ? undefined : { amount: usage.toString() },
  );
  return Object.assign(seller, {
    setUsage: (units: bigint) => {
      usage = units;
    },
  });
}

/** An exact seller in the same shape (stock x402ResourceServer with @x402/evm's exact server scheme), for comparisons. */
export async function startExactSeller(opts: { facilitator: FacilitatorClient; usdc: string; price: bigint }): Promise<SchemeSeller> {
  const resourceServer = new x402ResourceServer(opts.facilitator);
  resourceServer.register(NETWORK, new ExactServerScheme());
  return serve(resourceServer, "exact", Wallet.createRandom().address, opts.price, opts.usdc, { ...USDC_EXTRA }, () => undefined);
}

/** A batch-settlement seller whose receiver authorizer is its facilitator's; `manager` claims, settles and refunds. */
export async function startBatchSeller(opts: {
  facilitator: FacilitatorClient;
  usdc: string;
  price: bigint;
  /** How deposits are pulled: "eip3009" (default, USDC's receiveWithAuthorization) or "permit2". */
  assetTransferMethod?: "eip3009" | "permit2";
}): Promise<BatchSeller> {
  const payTo = Wallet.createRandom().address as `0x${string}`;
  const scheme = new BatchServerScheme(payTo, { withdrawDelay: 900 });
  const resourceServer = new x402ResourceServer(opts.facilitator);
  resourceServer.register(NETWORK, scheme);
  const extra = { ...USDC_EXTRA, ...(opts.assetTransferMethod ? { assetTransferMethod: opts.assetTransferMethod } : {}) };
  const seller = await serve(resourceServer, "batch-settlement", payTo, opts.price, opts.usdc, extra, () => undefined);
  const manager = new BatchSettlementChannelManager({
    scheme,
    facilitator: opts.facilitator,
    receiver: payTo,
    token: opts.usdc as `0x${string}`,
    network: NETWORK,
  });
  return Object.assign(seller, { manager });
}
