import { expect } from "chai";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { computeAddress } from "ethers";
import { ConfigError, loadConfig, networkView, resolveConfig } from "../../src/config";

const KEY_A = "0x" + "11".repeat(32);
const KEY_B = "0x" + "22".repeat(32);
const PRODUCTION = {
  RPC_URL: "https://rpc.example.com",
  OPERATOR_PRIVATE_KEY: KEY_A,
  FACILITATOR_PRIVATE_KEY: KEY_B,
  FACTORY_ADDRESS: "0x" + "33".repeat(20),
  FACTORY_DEPLOY_BLOCK: "24000000",
  MONGODB_URI: "mongodb://db.example.com:27017",
  WALLET_ENCRYPTION_KEY: "44".repeat(32),
};

/** No deployment records: FACTORY_ADDRESS may otherwise come from deployments/<network>.json. */
const NO_RECORDS = { deploymentsDir: mkdtempSync(join(tmpdir(), "spendgate-no-deployments-")) };

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env, NO_RECORDS);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  expect.fail("loadConfig accepted a bad environment");
}

describe("config: loadConfig over the environment", () => {
  it("lists every problem at once, the bad values and the missing companions", () => {
    const problems = problemsOf({
      PORT: "abc",
      RPC_URL: "https://rpc.example.com",
      MONGODB_URI: "mongodb://db.example.com:27017",
      GENESIS_OPEN: "maybe",
    });
    const text = problems.join("\n");
    const names = [
      "PORT",
      "GENESIS_OPEN",
      "OPERATOR_PRIVATE_KEY",
      "FACTORY_ADDRESS",
      "FACTORY_DEPLOY_BLOCK",
      "FACILITATOR_PRIVATE_KEY",
      "WALLET_ENCRYPTION_KEY",
    ];
    for (const name of names) {
      expect(text, `${name} is named`).to.match(new RegExp(`^${name}: `, "m"));
    }
    expect(problems).to.have.length(names.length);
  });

  it("names every variable in the error's message so start-up output shows them all", () => {
    try {
      loadConfig({ PORT: "70000", NETWORK: "basel", BASE_URL: "ftp://x", OPERATOR_PRIVATE_KEY: "0x1234", USDC_ADDRESS: "0xnope" });
      expect.fail("accepted");
    } catch (err) {
      expect(err).to.be.instanceOf(ConfigError);
      for (const name of ["PORT", "NETWORK", "BASE_URL", "OPERATOR_PRIVATE_KEY", "USDC_ADDRESS"]) {
        expect((err as Error).message).to.include(name);
      }
    }
  });

  it("reports the cross-field rules when the values themselves are fine", () => {
    const problems = problemsOf({
      RPC_URL: "https://rpc.example.com",
      OPERATOR_PRIVATE_KEY: KEY_A,
      FACILITATOR_PRIVATE_KEY: KEY_A,
    });
    expect(problems.join("\n"))
      .to.match(/^FACTORY_ADDRESS: /m)
      .and.match(/^FACTORY_DEPLOY_BLOCK: /m)
      .and.match(/^FACILITATOR_PRIVATE_KEY: .*differ/m);
  });

  it("refuses a real chain with the embedded store: agents' keys and the ledger would die with the process", () => {
    const { MONGODB_URI: _uri, WALLET_ENCRYPTION_KEY: _key, ...rest } = PRODUCTION;
    expect(problemsOf(rest).join("\n")).to.match(/^MONGODB_URI: is required when RPC_URL is set/m);
  });

  it("never echoes a private key value in a problem", () => {
    const secret = "0x" + "ab".repeat(31); // 31 bytes: invalid, but nearly a key
    const problems = problemsOf({ OPERATOR_PRIVATE_KEY: secret, WALLET_ENCRYPTION_KEY: "cd".repeat(31) });
    expect(problems.join("\n")).to.not.include("ab".repeat(31)).and.not.include("cd".repeat(31));
  });

  it("defaults to embedded mode with open genesis and no setup", () => {
    const c = loadConfig({});
    expect(c).to.include({ embeddedChain: true, embeddedStore: true, genesisOpen: true, chainId: 8453, port: 8402 });
    expect(c.allowPrivateSellers).to.equal(true);
    expect(c.allowHttpSellers).to.equal(true);
  });

  it("accepts a complete production environment, closed genesis by default", () => {
    const c = loadConfig({ ...PRODUCTION, PORT: "8080", BASE_URL: "https://api.example.com/", GENESIS_OPEN: "false" });
    expect(c).to.include({
      embeddedChain: false,
      embeddedStore: false,
      genesisOpen: false,
      port: 8080,
      baseUrl: "https://api.example.com",
    });
    expect(c.allowPrivateSellers).to.equal(false);
    expect(c.allowHttpSellers).to.equal(false);
    expect(c.confirmations).to.be.greaterThan(0);
  });

  it("treats empty strings as unset", () => {
    expect(loadConfig({ RPC_URL: "", MONGODB_URI: "", GENESIS_OPEN: "" })).to.include({ embeddedChain: true, genesisOpen: true });
  });
});

describe("config: networks (NETWORK, NETWORKS, <NAME>_RPC_URL)", () => {
  it("runs base by default, NETWORK's chain id, USDC and explorer otherwise; the first network's fields are flat", () => {
    expect(loadConfig({})).to.include({ networkName: "base", chainId: 8453, usdcAddress: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" });
    const c = loadConfig({ ...PRODUCTION, NETWORK: "base-sepolia" }, NO_RECORDS);
    expect(c).to.include({
      networkName: "base-sepolia",
      chainId: 84532,
      usdcAddress: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
      explorerUrl: "https://sepolia.basescan.org",
      uniswapQuoterV2: "0xC5290058841028F1614F3A6F0F5816cAd0df5E27",
    });
    expect(c.networks.map((n) => n.name)).to.deep.equal(["base-sepolia"]);
    // Overrides apply to the (first) network; a network without Uniswap has no quoter (swaps off).
    const celo = loadConfig({ ...PRODUCTION, NETWORK: "celo", USDC_ADDRESS: "0x" + "12".repeat(20) }, NO_RECORDS);
    expect(celo).to.include({ chainId: 42220, usdcAddress: "0x" + "12".repeat(20), uniswapQuoterV2: undefined, wethAddress: null });
  });

  it("runs several networks, each on its <NAME>_RPC_URL, the others' factories from their deployment records", () => {
    const dir = mkdtempSync(join(tmpdir(), "spendgate-deployments-"));
    writeFileSync(join(dir, "base-sepolia.json"), JSON.stringify({ factory: { address: "0x" + "77".repeat(20), block: 42 } }));
    const { RPC_URL: _rpc, ...rest } = PRODUCTION;
    const env = {
      ...rest,
      NETWORKS: "base,base-sepolia",
      BASE_RPC_URL: "https://base.example.com",
      BASE_SEPOLIA_RPC_URL: "https://sep.example.com",
    };
    const c = resolveConfig(loadConfig(env, { deploymentsDir: dir }));
    expect(c).to.include({ embeddedChain: false, networkName: "base", rpcUrl: "https://base.example.com", factoryDeployBlock: 24_000_000 });
    expect(c.networks[1]).to.include({
      name: "base-sepolia",
      chainId: 84532,
      rpcUrl: "https://sep.example.com",
      factoryAddress: "0x" + "77".repeat(20),
      factoryDeployBlock: 42,
      operatorPrivateKey: KEY_A,
    });
    expect(networkView(c, "base-sepolia")).to.include({ chainId: 84532, rpcUrl: "https://sep.example.com", networkName: "base-sepolia" });
    expect(networkView(c, "base")).to.equal(c);
  });

  it("names what is wrong with the networks, every problem at once", () => {
    const { RPC_URL: _rpc, ...rest } = PRODUCTION;
    const text = problemsOf({ ...rest, NETWORKS: "base,base-sepolia", BASE_RPC_URL: "https://base.example.com" }).join("\n");
    expect(text)
      .to.match(/^BASE_SEPOLIA_RPC_URL: is required for network base-sepolia/m)
      .and.match(/^deployments\/base-sepolia\.json: /m);
    expect(problemsOf({ NETWORKS: "base,solana" }).join("\n")).to.match(/^NETWORKS\.1: must name networks of the table/m);
    expect(problemsOf({ NETWORKS: "base,base" }).join("\n")).to.match(/^NETWORKS: must not name a network twice/m);
    expect(problemsOf({ NETWORK: "base", NETWORKS: "base-sepolia" }).join("\n")).to.match(/^NETWORK: set NETWORK .* not both/m);
  });

  it("leaves <NAME>_RPC_URL to the deploy script without NETWORKS: a single network runs on RPC_URL (embedded without it)", () => {
    expect(loadConfig({ BASE_RPC_URL: "https://base.example.com" })).to.include({ embeddedChain: true, rpcUrl: undefined });
  });
});

describe("config: metrics and traces", () => {
  it("sends no traces by default; OTEL_EXPORTER_OTLP_ENDPOINT gets /v1/traces, the traces endpoint is taken as it is", () => {
    expect(loadConfig({})).to.include({ otlpTracesUrl: undefined, metricsToken: undefined, serviceName: "spendgate" });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://otel:4318/" }).otlpTracesUrl).to.equal("http://otel:4318/v1/traces");
    const both = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://otel:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example.com/in" };
    expect(loadConfig(both).otlpTracesUrl).to.equal("https://traces.example.com/in");
  });

  it("reads OTEL_EXPORTER_OTLP_HEADERS as key=value pairs, percent-decoded; refuses a malformed list and a short METRICS_TOKEN", () => {
    const c = loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: "api-key=abc%3D%3D, x-team = ops" });
    expect(c.otlpHeaders).to.deep.equal({ "api-key": "abc==", "x-team": "ops" });
    const problems = problemsOf({
      OTEL_EXPORTER_OTLP_HEADERS: "no-equals-sign",
      METRICS_TOKEN: "short",
      OTEL_EXPORTER_OTLP_ENDPOINT: "otel:4318",
    });
    expect(problems.join("\n"))
      .to.include("OTEL_EXPORTER_OTLP_HEADERS")
      .and.include("METRICS_TOKEN")
      .and.include("OTEL_EXPORTER_OTLP_ENDPOINT");
  });
});

describe("config: resolveConfig, once, into a frozen value", () => {
  // The shape an embedded chain hands over (addresses and keys), as startService passes it.
  const chain = {
    rpcUrl: "http://127.0.0.1:9545",
    addresses: {
      usdc: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      multicall3: "0xcA11bde05977b3631167028862bE2a173976CA11",
      factory: "0x" + "55".repeat(20),
      uniswap: {
        weth: "0x4200000000000000000000000000000000000006",
        factory: "0x" + "61".repeat(20),
        swapRouter02: "0x" + "62".repeat(20),
        quoterV2: "0x" + "63".repeat(20),
        positionManager: "0x" + "64".repeat(20),
        usdcWethPool: "0x" + "65".repeat(20),
      },
    },
    deployBlock: 7,
    operator: { address: computeAddress(KEY_A), privateKey: KEY_A },
    facilitator: { address: computeAddress(KEY_B), privateKey: KEY_B },
  };

  it("refuses any change, at any depth, to the loaded and the resolved value", () => {
    const loaded = loadConfig({ ...PRODUCTION, OWNER_ALLOWLIST: "0x" + "66".repeat(20) });
    const config = resolveConfig(loaded);
    for (const value of [loaded, config]) {
      expect(() => Object.assign(value, { rpcUrl: "http://evil.example.com" })).to.throw(TypeError);
      expect(() => (value.ownerAllowlist as string[]).push("0x" + "77".repeat(20))).to.throw(TypeError);
      expect(value.rpcUrl).to.equal("https://rpc.example.com");
      expect(value.ownerAllowlist).to.have.length(1);
    }
  });

  it("completes a production environment from the environment alone", () => {
    const config = resolveConfig(loadConfig(PRODUCTION));
    expect(config).to.include({
      rpcUrl: PRODUCTION.RPC_URL,
      factoryDeployBlock: 24_000_000,
      operatorPrivateKey: KEY_A,
      mongodbUri: PRODUCTION.MONGODB_URI,
      mongodbDb: "spendgate",
      walletEncryptionKey: PRODUCTION.WALLET_ENCRYPTION_KEY,
      instanceId: computeAddress(KEY_A).toLowerCase(),
    });
  });

  it("takes the embedded chain's addresses and keys in a new value, leaving the loaded one as it was", () => {
    const loaded = loadConfig({});
    const config = resolveConfig(loaded, { chains: [chain], store: { uri: "mongodb://127.0.0.1:1", db: "spendgate_x" } });
    expect(config).to.include({
      rpcUrl: chain.rpcUrl,
      factoryAddress: chain.addresses.factory,
      factoryDeployBlock: 7,
      usdcAddress: chain.addresses.usdc,
      uniswapQuoterV2: chain.addresses.uniswap.quoterV2,
      operatorPrivateKey: KEY_A,
      facilitatorPrivateKey: KEY_B,
      instanceId: chain.operator.address.toLowerCase(),
      mongodbUri: "mongodb://127.0.0.1:1",
      mongodbDb: "spendgate_x",
    });
    expect(config.walletEncryptionKey).to.match(/^[0-9a-f]{64}$/);
    expect(loaded).to.include({ rpcUrl: undefined, factoryAddress: undefined, operatorPrivateKey: undefined, mongodbDb: "spendgate" });
  });

  it("keeps an instance's own operator key and the configured INSTANCE_ID on a shared embedded chain", () => {
    const own = "0x" + "99".repeat(32);
    const config = resolveConfig(loadConfig({ INSTANCE_ID: "inst-a", FACILITATOR_PRIVATE_KEY: KEY_B }), {
      chains: [{ ...chain, facilitator: { address: chain.operator.address, privateKey: "0x" + "88".repeat(32) } }],
      operatorPrivateKey: own,
      store: { uri: "mongodb://127.0.0.1:1", db: "d" },
    });
    expect(config).to.include({ operatorPrivateKey: own, instanceId: "inst-a", facilitatorPrivateKey: KEY_B });
  });

  it("names what is still missing when neither the environment nor an embedded part provides it", () => {
    try {
      resolveConfig(loadConfig({}));
      expect.fail("resolved without a chain or a store");
    } catch (err) {
      expect(err).to.be.instanceOf(ConfigError);
      expect((err as ConfigError).problems.map((p) => p.split(":")[0])).to.have.members([
        "rpcUrl",
        "factoryAddress",
        "factoryDeployBlock",
        "operatorPrivateKey",
        "mongodbUri",
      ]);
    }
  });
});
