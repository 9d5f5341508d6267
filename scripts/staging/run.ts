/**
 * `npm run staging`: SpendGate in production mode on this machine, every part a process of its own:
 *
 *   1. a local chain, `hardhat node` on 127.0.0.1:CHAIN_PORT (default 8545; the chain id of NETWORK, default base's
 *      8453; automine);
 *   2. a MongoDB-wire store (the embedded CongoDB served over TCP, scripts/cluster/mongo.ts), unless MONGODB_URI is set;
 *   3. `npm run deploy -- --network localhost`: TestUSDC at the network's USDC address (with its EIP-712 domain),
 *      Multicall3, the OperatorSet and the factory (no Uniswap: swaps are off), recorded in deployments/localhost.json;
 *   4. the service with NETWORK, RPC_URL and MONGODB_URI set (production mode: `node --import tsx src/index.ts`, the
 *      code `npm start` runs; with `--dist`, `node dist/src/index.js` after `npm run build`), with the factory of that
 *      record.
 *
 * The operator and facilitator keys are random and funded with test ETH on that chain; WALLET_ENCRYPTION_KEY is random
 * unless set. Genesis is open and local (http, 127.0.0.1) sellers are allowed: it is a staging sandbox, nothing
 * persists across runs. Fund an agent: `npm run staging:fund -- <agentAddress> [amount]`. Ctrl-C (or SIGTERM) stops
 * the service first (it drains), then the store and the chain.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Wallet } from "ethers";
import { DEFAULT_NETWORK, NETWORKS, isNetworkName } from "../../src/chain/networks";
import { PROJECT_ROOT } from "../../src/paths";
import { rpc, startChild, type Child } from "./processes";

const ETH_FUNDING = `0x${(10n ** 21n).toString(16)}`; // 1,000 test ETH for gas

const children: Child[] = [];
let stopping = false;

/** Stops the service first (it drains its payments), then what it uses, and exits. */
async function stopAll(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  for (const c of [...children].reverse()) await c.stop();
  process.exit(code);
}

async function main(): Promise<void> {
  const started = Date.now();
  const dist = process.argv.includes("--dist");
  const chainPort = Number(process.env.CHAIN_PORT || 8545);
  if (!Number.isInteger(chainPort) || chainPort < 1 || chainPort > 65535)
    throw new Error(`CHAIN_PORT must be a port, got ${process.env.CHAIN_PORT}`);
  const rpcUrl = `http://127.0.0.1:${chainPort}`;
  const name = process.env.NETWORK || DEFAULT_NETWORK;
  if (!isNetworkName(name)) throw new Error(`NETWORK=${name} is not a network of the table`);
  const network = NETWORKS[name];
  // What the service must not see: CHAIN_PORT is the embedded chain's (refused with RPC_URL set).
  const { CHAIN_PORT: _chainPort, ...env } = process.env;
  process.on("SIGINT", () => void stopAll(0));
  process.on("SIGTERM", () => void stopAll(0));
  const fail = (c: Child) => (code: number | null) => {
    if (stopping) return;
    console.error(`staging: ${c.name} exited (code ${code}); stopping the rest. Its last output:\n${c.tail().slice(-3000)}`);
    void stopAll(1);
  };

  console.log(`staging: 1/4 the chain (hardhat node, a sandbox of ${network.displayName}, chain id ${network.chainId}) on ${rpcUrl}…`);
  const chain = startChild(
    "chain",
    process.execPath,
    [require.resolve("hardhat/internal/cli/bootstrap.js"), "node", "--hostname", "127.0.0.1", "--port", String(chainPort)],
    {
      cwd: PROJECT_ROOT,
      env,
    },
  );
  children.push(chain);
  void chain.exited.then(fail(chain));

  // The store starts while the chain does.
  let mongodbUri = env.MONGODB_URI;
  if (mongodbUri) {
    console.log("staging: 2/4 the store: MONGODB_URI as given");
  } else {
    console.log("staging: 2/4 the store: CongoDB over the MongoDB wire protocol (in memory)…");
    const store = startChild("store", process.execPath, ["--import", "tsx", "scripts/cluster/mongo.ts"], { cwd: PROJECT_ROOT, env });
    children.push(store);
    void store.exited.then(fail(store));
    mongodbUri = (await store.match(/MONGODB_URI=(\S+)\n/))[1];
  }
  await chain.match(/Started HTTP and WebSocket JSON-RPC server at/);

  const operator = Wallet.createRandom();
  const facilitator = Wallet.createRandom();
  for (const key of [operator, facilitator]) await rpc(rpcUrl, "hardhat_setBalance", [key.address, ETH_FUNDING]);

  console.log("staging: 3/4 npm run deploy -- --network localhost…");
  const deploy = startChild("deploy", "npm", ["run", "deploy", "--", "--network", "localhost"], {
    cwd: PROJECT_ROOT,
    show: true,
    env: { ...env, CHAIN_PORT: String(chainPort), OPERATOR_ADDRESS: operator.address, DEPLOYER_PRIVATE_KEY: "" },
  });
  const deployed = await deploy.exited;
  if (deployed !== 0) {
    console.error(`staging: npm run deploy failed (code ${deployed}):\n${deploy.tail().slice(-3000)}`);
    return stopAll(1);
  }
  const record = JSON.parse(readFileSync(join(PROJECT_ROOT, "deployments", "localhost.json"), "utf8")) as {
    factory: { address: string; block: number };
    usdc: string;
  };
  console.log(`staging: deployed the factory at ${record.factory.address} (block ${record.factory.block})`);

  console.log(`staging: 4/4 the service in production mode (${dist ? "node dist/src/index.js" : "node --import tsx src/index.ts"})…`);
  const service = startChild("service", process.execPath, dist ? ["dist/src/index.js"] : ["--import", "tsx", "src/index.ts"], {
    cwd: PROJECT_ROOT,
    show: true,
    env: {
      ...env,
      NETWORK: name,
      RPC_URL: rpcUrl,
      MONGODB_URI: mongodbUri,
      MONGODB_DB: env.MONGODB_DB || `staging_${randomBytes(4).toString("hex")}`,
      WALLET_ENCRYPTION_KEY: env.WALLET_ENCRYPTION_KEY || randomBytes(32).toString("hex"),
      OPERATOR_PRIVATE_KEY: operator.privateKey,
      FACILITATOR_PRIVATE_KEY: facilitator.privateKey,
      // A local node never reorganises: the indexer confirms at once.
      CONFIRMATIONS: env.CONFIRMATIONS || "0",
      GENESIS_OPEN: env.GENESIS_OPEN || "true",
      ALLOW_PRIVATE_SELLERS: env.ALLOW_PRIVATE_SELLERS || "true",
      ALLOW_HTTP_SELLERS: env.ALLOW_HTTP_SELLERS || "true",
      // The factory of deployments/localhost.json, which this run just wrote.
      FACTORY_ADDRESS: record.factory.address,
      FACTORY_DEPLOY_BLOCK: String(record.factory.block),
    },
  });
  children.push(service);
  void service.exited.then(fail(service));
  const url = (await service.match(/SpendGate is running at (\S+)\n/))[1];

  console.log(
    [
      "",
      `STAGING ready in ${Date.now() - started} ms (production mode; a sandbox chain, nothing persists):`,
      `  service:      ${url}   (GET ${url}/health/ready)`,
      `  chain:        ${rpcUrl}  chain id ${network.chainId} (a local node: not ${network.displayName}, whatever its id says)`,
      `  USDC (test):  ${record.usdc}`,
      `  factory:      ${record.factory.address}`,
      `  fund agent:   npm run staging:fund -- <agentAddress> [amount]${chainPort === 8545 ? "" : `   (with CHAIN_PORT=${chainPort})`}`,
      "Ctrl-C to stop.",
      `STAGING ${JSON.stringify({ url, rpcUrl, network: name, chainId: network.chainId, usdc: record.usdc, factory: record.factory.address })}`,
    ].join("\n"),
  );
  if (record.usdc !== network.usdc.address) console.log(`  (USDC_ADDRESS set: the test USDC is at ${record.usdc})`);
}

main().catch((err: unknown) => {
  console.error("staging failed:", err instanceof Error ? err.message : err);
  void stopAll(1);
});
