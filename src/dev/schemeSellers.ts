/**
 * The sandbox's demo sellers of the x402 schemes beyond exact (embedded mode only): `upto` (the buyer signs a ceiling,
 * the seller charges what was used) and `batch-settlement` (a channel, then a voucher per request). Each is what a
 * seller would set up from the x402 packages alone: @x402/core's x402ResourceServer and x402HTTPResourceServer with
 * @x402/evm's server scheme, paid through @x402/core's x402Facilitator with @x402/evm's facilitator schemes, sending
 * from a key of its own (given test ETH on the embedded chain) to the sandbox's scheme contracts. Nothing of SpendGate's
 * payment code is on the seller's side.
 */
import { Wallet, getAddress, id } from "ethers";
import { x402Facilitator } from "@x402/core/facilitator";
import {
  type FacilitatorClient,
  type HTTPAdapter,
  type HTTPRequestContext,
  x402HTTPResourceServer,
  x402ResourceServer,
} from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme as BatchFacilitatorScheme } from "@x402/evm/batch-settlement/facilitator";
import { BatchSettlementEvmScheme as BatchServerScheme } from "@x402/evm/batch-settlement/server";
import { UptoEvmScheme as UptoFacilitatorScheme } from "@x402/evm/upto/facilitator";
import { UptoEvmScheme as UptoServerScheme } from "@x402/evm/upto/server";
import { type Abi, createWalletClient, defineChain, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { DemoScheme, DemoSellerAnswer, DemoSellerRequest, DemoSellers } from "../api/operation";
import type { ChainClient } from "../chain/client";
import { networkOfChainId } from "../chain/networks";
import type { Config } from "../config";

/** The demo sellers' payee: an address nobody holds the key of, the same in every sandbox. */
export const SCHEME_PAYEE = getAddress(id("SpendGate sandbox seller: scheme payee").slice(0, 42));

/**
 * A stock facilitator's signer, as the x402 packages' documentation sets it up: @x402/evm's toFacilitatorEvmSigner on a
 * plain viem wallet client for chain `chainId` at `rpcUrl`, sending from `privateKey` (which must hold ETH for gas).
 */
export function stockFacilitatorSigner(rpcUrl: string, chainId: number, privateKey: string) {
  const viemChain = defineChain({
    id: chainId,
    name: networkOfChainId(chainId)?.displayName ?? "sandbox",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const client = createWalletClient({
    account: privateKeyToAccount(privateKey as `0x${string}`),
    chain: viemChain,
    transport: http(rpcUrl, { retryCount: 0 }),
  }).extend(publicActions);
  const signer = toFacilitatorEvmSigner({
    address: client.account.address,
    readContract: (a) =>
      client.readContract({
        account: client.account,
        address: a.address,
        abi: a.abi as Abi,
        functionName: a.functionName,
        args: a.args ?? [],
      }),
    verifyTypedData: (a) => client.verifyTypedData(a as Parameters<typeof client.verifyTypedData>[0]),
    writeContract: (a) =>
      client.writeContract({ address: a.address, abi: a.abi as Abi, functionName: a.functionName, args: a.args, gas: a.gas }),
    sendTransaction: (a) => client.sendTransaction({ to: a.to, data: a.data }),
    waitForTransactionReceipt: (a) => client.waitForTransactionReceipt({ hash: a.hash }),
    getCode: (a) => client.getCode({ address: a.address }),
  });
  return { signer, address: client.account.address };
}

/** A facilitator of the upto and batch-settlement schemes on the embedded chain, from a new key given 1,000 ETH. */
async function demoFacilitator(config: Config, chain: ChainClient): Promise<FacilitatorClient> {
  const key = Wallet.createRandom();
  await chain.provider.send("hardhat_setBalance", [key.address, "0x3635C9ADC5DEA00000"]);
  const { signer } = stockFacilitatorSigner(config.rpcUrl, config.chainId, key.privateKey);
  const network = `eip155:${config.chainId}` as const;
  const facilitator = new x402Facilitator();
  facilitator.register(network, new UptoFacilitatorScheme(signer));
  facilitator.register(network, new BatchFacilitatorScheme(signer, privateKeyToAccount(Wallet.createRandom().privateKey as `0x${string}`)));
  return {
    verify: (p: PaymentPayload, r: PaymentRequirements) => facilitator.verify(p, r),
    settle: (p: PaymentPayload, r: PaymentRequirements) => facilitator.settle(p, r),
    getSupported: () => Promise.resolve(facilitator.getSupported() as Awaited<ReturnType<FacilitatorClient["getSupported"]>>),
  };
}

/** The demo sellers of one service: one facilitator, one HTTP server per scheme and price (a handful in a sandbox). */
export class DemoSchemeSellers implements DemoSellers {
  private facilitator: Promise<FacilitatorClient> | null = null;
  private readonly servers = new Map<string, Promise<x402HTTPResourceServer>>();

  constructor(
    private readonly config: Config,
    private readonly chain: ChainClient,
  ) {}

  /**
   * Answers `req` as the `scheme` seller of `price` (USDC base units: upto's ceiling, batch-settlement's price per
   * request); `charge` is what an upto payment settles (at most the ceiling; default all of it).
   */
  async handle(scheme: DemoScheme, price: bigint, req: DemoSellerRequest, charge?: bigint): Promise<DemoSellerAnswer> {
    const server = await this.server(scheme, price);
    const adapter: HTTPAdapter = {
      getHeader: req.header,
      getMethod: () => req.method,
      getPath: () => req.url.pathname,
      getUrl: () => req.url.toString(),
      getAcceptHeader: () => req.header("accept") ?? "",
      getUserAgent: () => req.header("user-agent") ?? "",
    };
    const context: HTTPRequestContext = { adapter, path: req.url.pathname, method: req.method };
    const result = await server.processHTTPRequest(context);
    if (result.type === "no-payment-required") return { status: 405, headers: {}, body: { error: "method_not_allowed" } };
    if (result.type === "payment-error")
      return { status: result.response.status, headers: result.response.headers, body: result.response.body ?? {} };
    const overrides = scheme === "upto" && charge !== undefined ? { amount: charge.toString() } : undefined;
    const settled = await server.processSettlement(
      result.paymentPayload,
      result.paymentRequirements,
      result.declaredExtensions,
      { request: context },
      result.beforeHandlerSettlement ? undefined : overrides,
      result.beforeHandlerSettlement,
    );
    if (!settled.success) {
      return {
        status: settled.response.status,
        headers: { ...settled.response.headers, ...settled.headers },
        body: settled.response.body ?? { error: settled.errorReason },
      };
    }
    return { status: 200, headers: settled.headers, body: { scheme, paid: true, note: "SpendGate sandbox demo resource" } };
  }

  private server(scheme: DemoScheme, price: bigint): Promise<x402HTTPResourceServer> {
    const key = `${scheme}|${price}`;
    let server = this.servers.get(key);
    if (!server) {
      if (this.servers.size > 50) this.servers.clear();
      server = this.build(scheme, price);
      server.catch(() => this.servers.delete(key));
      this.servers.set(key, server);
    }
    return server;
  }

  private async build(scheme: DemoScheme, price: bigint): Promise<x402HTTPResourceServer> {
    const { config } = this;
    this.facilitator ??= demoFacilitator(config, this.chain).catch((err: unknown) => {
      this.facilitator = null;
      throw err;
    });
    const resourceServer = new x402ResourceServer(await this.facilitator);
    const network = `eip155:${config.chainId}` as const;
    resourceServer.register(
      network,
      scheme === "upto" ? new UptoServerScheme() : new BatchServerScheme(SCHEME_PAYEE as `0x${string}`, { withdrawDelay: 900 }),
    );
    const table = networkOfChainId(config.chainId);
    if (!table) throw new Error(`chain id ${config.chainId} is not a network of the table`);
    const { name, version } = table.usdc;
    const route = {
      accepts: {
        scheme,
        network,
        payTo: SCHEME_PAYEE,
        price: { amount: price.toString(), asset: config.usdcAddress, extra: { name, version } },
        maxTimeoutSeconds: 300,
      },
      description: `SpendGate sandbox demo ${scheme} resource`,
      mimeType: "application/json",
    };
    const server = new x402HTTPResourceServer(resourceServer, { "GET /*": route, "POST /*": route });
    await server.initialize();
    return server;
  }
}
