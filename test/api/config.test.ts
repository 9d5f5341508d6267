import { expect } from "chai";
import { ConfigError, loadConfig } from "../../src/config";

const KEY_A = "0x" + "11".repeat(32);
const KEY_B = "0x" + "22".repeat(32);

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
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
      NETWORK_NAME: "no-deployment-file", // FACTORY_ADDRESS may come from deployments/<network>.json
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
      loadConfig({ PORT: "70000", CHAIN_ID: "-1", BASE_URL: "ftp://x", OPERATOR_PRIVATE_KEY: "0x1234", USDC_ADDRESS: "0xnope" });
      expect.fail("accepted");
    } catch (err) {
      expect(err).to.be.instanceOf(ConfigError);
      for (const name of ["PORT", "CHAIN_ID", "BASE_URL", "OPERATOR_PRIVATE_KEY", "USDC_ADDRESS"]) {
        expect((err as Error).message).to.include(name);
      }
    }
  });

  it("reports the cross-field rules when the values themselves are fine", () => {
    const problems = problemsOf({
      RPC_URL: "https://rpc.example.com",
      NETWORK_NAME: "no-deployment-file",
      OPERATOR_PRIVATE_KEY: KEY_A,
      FACILITATOR_PRIVATE_KEY: KEY_A,
    });
    expect(problems.join("\n"))
      .to.match(/^FACTORY_ADDRESS: /m)
      .and.match(/^FACTORY_DEPLOY_BLOCK: /m)
      .and.match(/^FACILITATOR_PRIVATE_KEY: .*differ/m);
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
    const c = loadConfig({
      PORT: "8080",
      RPC_URL: "https://rpc.example.com",
      OPERATOR_PRIVATE_KEY: KEY_A,
      FACILITATOR_PRIVATE_KEY: KEY_B,
      FACTORY_ADDRESS: "0x" + "33".repeat(20),
      FACTORY_DEPLOY_BLOCK: "24000000",
      MONGODB_URI: "mongodb://db.example.com:27017",
      WALLET_ENCRYPTION_KEY: "44".repeat(32),
      BASE_URL: "https://api.example.com/",
      GENESIS_OPEN: "false",
    });
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
