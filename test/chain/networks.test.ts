/**
 * The network table (src/chain/networks.ts) held against what the stock x402 packages themselves use: every USDC
 * address and EIP-712 domain against @x402/evm's DEFAULT_ASSETS, every x402 v1 name against its v1 network map.
 */
import { expect } from "chai";
import { getAddress } from "ethers";
import { DEFAULT_ASSETS } from "@x402/evm";
import { EVM_NETWORK_CHAIN_ID_MAP } from "@x402/evm/v1";
import {
  NETWORK_LIST,
  NETWORKS,
  chainIdOfX402Network,
  isNetworkName,
  networkOfChainId,
  rpcUrlKey,
  x402NetworkId,
} from "../../src/chain/networks";

describe("the network table", function () {
  it("has Base, Base Sepolia and two more mainnets with their testnets", function () {
    const names = NETWORK_LIST.map((n) => n.name);
    expect(names).to.include.members(["base", "base-sepolia", "arbitrum", "arbitrum-sepolia", "celo", "celo-sepolia"]);
    expect(NETWORKS["base-sepolia"].usdc).to.deep.equal({
      address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
      name: "USDC",
      version: "2",
    });
    expect(NETWORKS.base.usdc).to.deep.include({ name: "USD Coin", version: "2" });
  });

  for (const n of NETWORK_LIST) {
    it(`${n.name}: USDC, its EIP-712 domain and the x402 names are @x402/evm 2.27.0's`, function () {
      const assets = DEFAULT_ASSETS[n.caip2] as
        readonly { asset: string; name: string; version: string; symbol: string; assetTransferMethod?: string }[] | undefined;
      const usdc = assets?.find((a) => a.symbol === "USDC");
      expect(usdc, `@x402/evm lists no USDC for ${n.caip2}`).to.not.equal(undefined);
      expect(usdc?.assetTransferMethod, "an EIP-3009 token, not Permit2 only").to.equal(undefined);
      expect(n.usdc).to.deep.equal({ address: usdc?.asset, name: usdc?.name, version: usdc?.version });
      expect(n.caip2).to.equal(`eip155:${n.chainId}`);
      const v1 = Object.entries(EVM_NETWORK_CHAIN_ID_MAP).find(([, id]) => id === n.chainId)?.[0] ?? null;
      expect(n.x402V1).to.equal(v1);
    });

    it(`${n.name}: checksummed addresses, swaps only with both WETH and Uniswap, https links`, function () {
      const addresses: string[] = [n.usdc.address, ...(n.weth ? [n.weth] : []), ...Object.values<string>(n.uniswap ?? {})];
      for (const a of addresses) expect(getAddress(a), a).to.equal(a);
      expect(n.weth === null).to.equal(n.uniswap === null);
      expect(n.explorer).to.match(/^https:\/\/[^/]+$/);
      expect(n.publicRpcUrl).to.match(/^https:\/\//);
    });
  }

  it("finds networks by chain id, x402 id and name", function () {
    expect(networkOfChainId(84532)?.name).to.equal("base-sepolia");
    expect(networkOfChainId(31337)).to.equal(undefined);
    expect(chainIdOfX402Network("eip155:42161")).to.equal(42161);
    expect(chainIdOfX402Network("base-sepolia")).to.equal(84532);
    expect(chainIdOfX402Network("arbitrum")).to.equal(undefined); // no x402 v1 name
    expect(chainIdOfX402Network("eip155:0x1")).to.equal(undefined);
    expect(x402NetworkId(NETWORKS.arbitrum, 1)).to.equal(null);
    expect(x402NetworkId(NETWORKS.celo, 1)).to.equal("celo");
    expect(isNetworkName("base-sepolia")).to.equal(true);
    expect(isNetworkName("toString")).to.equal(false);
    expect(rpcUrlKey("base-sepolia")).to.equal("BASE_SEPOLIA_RPC_URL");
  });
});
