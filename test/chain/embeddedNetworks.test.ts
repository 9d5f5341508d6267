/**
 * The embedded chain of other networks than Base: the network's chain id, TestUSDC at its USDC address answering its
 * EIP-712 name and version (and signing under them), Uniswap only where the network has it; and the in-process chain
 * back on the configuration's chain id once one of another network closes.
 */
import { expect } from "chai";
import hre from "hardhat";
import { Contract, JsonRpcProvider, TypedDataEncoder, Wallet } from "ethers";
import { NETWORKS } from "../../src/chain/networks";
import { startEmbeddedChain } from "../../src/dev/embeddedChain";
import { startEmbeddedChainThread, type EmbeddedChainThread } from "../../src/dev/embeddedChainThread";

const USDC_ABI = [
  "function name() view returns (string)",
  "function version() view returns (string)",
  "function DOMAIN_SEPARATOR() view returns (bytes32)",
  "function setEip712Domain(string, string)",
];

describe("embedded chains of the network table", function () {
  const chains: EmbeddedChainThread[] = [];
  const providers: JsonRpcProvider[] = [];
  const open = async (network: "base-sepolia" | "celo-sepolia") => {
    const chain = await startEmbeddedChainThread({ network });
    chains.push(chain);
    const provider = new JsonRpcProvider(chain.rpcUrl, chain.chainId, { staticNetwork: true, cacheTimeout: -1 });
    providers.push(provider);
    return { chain, provider };
  };
  after(async function () {
    for (const p of providers) p.destroy();
    for (const c of chains) await c.close();
  });

  it("base-sepolia: chain id 0x14a34, USDC at 0x036C…CF7e answering USDC / 2 and signing under that domain", async function () {
    const { chain, provider } = await open("base-sepolia");
    expect(chain).to.include({ network: "base-sepolia", chainId: 84532 });
    expect(await provider.send("eth_chainId", [])).to.equal("0x14a34");
    expect(chain.addresses.usdc).to.equal("0x036CbD53842c5426634e7929541eC2318f3dCF7e");
    const usdc = new Contract(chain.addresses.usdc, USDC_ABI, provider);
    expect(await usdc.name()).to.equal("USDC");
    expect(await usdc.version()).to.equal("2");
    const domain = { name: "USDC", version: "2", chainId: 84532, verifyingContract: chain.addresses.usdc };
    expect(await usdc.DOMAIN_SEPARATOR()).to.equal(TypedDataEncoder.hashDomain(domain));
    // Base Sepolia has WETH at the OP Stack predeploy and Uniswap: the sandbox deploys its own there.
    expect(chain.addresses.uniswap?.weth).to.equal(NETWORKS["base-sepolia"].weth);
    expect(await provider.getCode(NETWORKS["base-sepolia"].weth)).to.not.equal("0x");
  });

  it("keeps the domain it was given: a second setEip712Domain is refused", async function () {
    const [chain, provider] = [chains[0], providers[0]];
    const someone = Wallet.createRandom().connect(provider);
    await provider.send("hardhat_setBalance", [someone.address, "0xde0b6b3a7640000"]);
    const usdc = new Contract(chain.addresses.usdc, USDC_ABI, someone);
    await expect(usdc.setEip712Domain.staticCall("USD Coin", "2")).to.be.revertedWith("TestUSDC: EIP-712 domain already set");
  });

  it("celo-sepolia: its chain id and USDC, and no Uniswap (swaps off there, as on the network)", async function () {
    const { chain, provider } = await open("celo-sepolia");
    expect(await provider.send("eth_chainId", [])).to.equal("0x" + (11142220).toString(16));
    expect(chain.addresses.uniswap).to.equal(null);
    const usdc = new Contract(NETWORKS["celo-sepolia"].usdc.address, USDC_ABI, provider);
    expect([await usdc.name(), await usdc.version()]).to.deep.equal(["USDC", "2"]);
  });

  it("in this thread: another network's chain id while it runs, the configuration's again once it closes", async function () {
    const chain = await startEmbeddedChain({ network: "arbitrum-sepolia" });
    try {
      expect(await hre.network.provider.request({ method: "eth_chainId" })).to.equal("0x66eee");
      const usdc = new Contract(chain.addresses.usdc, USDC_ABI, hre.ethers.provider);
      expect(await usdc.name()).to.equal("USD Coin");
      expect(chain.addresses.uniswap?.weth).to.equal(NETWORKS["arbitrum-sepolia"].weth);
    } finally {
      await chain.close();
    }
    expect(await hre.network.provider.request({ method: "eth_chainId" })).to.equal("0x2105");
  });
});
