/**
 * A stock x402 v2 seller offering one or several networks: @x402/core's x402ResourceServer and x402HTTPResourceServer
 * with the exact EVM server scheme registered for each network, one requirement per network (its USDC and that
 * token's EIP-712 domain, from the network table), each settled through that network's own facilitator.
 */
import { Wallet } from "ethers";
import { x402HTTPResourceServer, x402ResourceServer, type FacilitatorClient } from "@x402/core/server";
import type { Network } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { NETWORKS, type NetworkName } from "../../src/chain/networks";
import { createInProcessFacilitator, type Facilitator } from "../../src/x402/facilitator";
import type { RunningNetwork } from "../../src/server";
import { listen, sellerHandle, sendJson, type TestSeller } from "./sellerServer";
import { settleX402Request } from "./sellerX402";

/** An in-process facilitator on `n`'s chain with a fresh key funded there (never the service's key). */
export async function facilitatorOn(n: RunningNetwork): Promise<Facilitator> {
  const wallet = Wallet.createRandom();
  await n.chain.provider.send("hardhat_setBalance", [wallet.address, `0x${(10n ** 21n).toString(16)}`]);
  return createInProcessFacilitator({ rpcUrl: n.config.rpcUrl, chainId: n.config.chainId, privateKey: wallet.privateKey });
}

/** One FacilitatorClient over each network's facilitator: a payment goes to the facilitator of its requirement's network. */
function facilitatorClient(byNetwork: ReadonlyMap<string, Facilitator>): FacilitatorClient {
  const of = (network: string) => {
    const f = byNetwork.get(network);
    if (!f) throw new Error(`no facilitator for ${network}`);
    return f;
  };
  return {
    verify: (payload, requirements) => of(requirements.network).verify(payload, requirements),
    settle: (payload, requirements) => of(requirements.network).settle(payload, requirements),
    getSupported: async () => {
      const all = await Promise.all([...byNetwork.values()].map((f) => f.supported()));
      return { ...all[0], kinds: all.flatMap((s) => s.kinds) };
    },
  };
}

/** A seller asking `price` base units of USDC on each of `offers` (the first first), paid to one random payTo. */
export async function startNetworksSeller(
  offers: { network: NetworkName; facilitator: Facilitator }[],
  price: bigint,
): Promise<TestSeller & { paidOn: string[] }> {
  const payTo = Wallet.createRandom().address;
  const hits = { paid: 0, unpaid: 0 };
  const settlements: string[] = [];
  const paidOn: string[] = [];
  const caip2 = (name: NetworkName) => NETWORKS[name].caip2 as Network;
  const resourceServer = new x402ResourceServer(facilitatorClient(new Map(offers.map((o) => [caip2(o.network), o.facilitator]))));
  for (const o of offers) resourceServer.register(caip2(o.network), new ExactEvmScheme());
  const route = {
    accepts: offers.map((o) => {
      const usdc = NETWORKS[o.network].usdc;
      return {
        scheme: "exact",
        network: caip2(o.network),
        payTo,
        price: { amount: price.toString(), asset: usdc.address, extra: { name: usdc.name, version: usdc.version } },
        maxTimeoutSeconds: 300,
      };
    }),
    description: "test resource on several networks",
    mimeType: "application/json",
  };
  const httpServer = new x402HTTPResourceServer(resourceServer, { "GET /*": route, "POST /*": route });
  await httpServer.initialize();
  const listener = await listen(async (req, res, url) => {
    if (req.headers["payment-signature"]) hits.paid++;
    else hits.unpaid++;
    const settled = await settleX402Request(httpServer, req, res, url);
    if (!settled) return;
    settlements.push(settled.transaction);
    paidOn.push(settled.network);
    sendJson(res, 200, { data: "paid content", payer: settled.payer }, settled.headers);
  });
  return { ...sellerHandle(listener, { payTo, hits, settlements, setPrice: () => undefined }), paidOn };
}
