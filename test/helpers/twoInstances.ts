/**
 * Two SpendGate instances, A and B, on one chain and one store, each relaying with its own operator key (B's is in the
 * chain's operator set): the set-up of the stall tests. B's lease clock runs `skew` ms ahead, which is how B sees A's
 * leases once A stalls and stops renewing them.
 */
import { randomBytes } from "node:crypto";
import { Wallet } from "ethers";
import { startEmbeddedChain, type EmbeddedChain } from "../../src/dev/embeddedChain";
import { startEmbeddedMongo, type EmbeddedMongo } from "../../src/dev/embeddedStore";
import { startStack, type Stack } from "./stack";

export interface TwoInstances {
  chain: EmbeddedChain;
  a: Stack;
  b: Stack;
  /** How far B's lease clock is ahead of the wall clock. */
  skew: number;
  close(): Promise<void>;
}

export async function startTwoInstances(opts: {
  env: Record<string, string>;
  /** The JSON-RPC URL A uses instead of the chain's (a proxy that can hold A's calls), started once the chain is up. */
  rpcForA?: (chain: EmbeddedChain) => Promise<{ url: string; close(): Promise<void> }>;
  /** The JSON-RPC URL B uses instead of the chain's (a pass-through that can be cut); the caller closes it. */
  rpcForB?: (chain: EmbeddedChain) => Promise<string>;
}): Promise<TwoInstances> {
  const keyB = Wallet.createRandom();
  const chain = await startEmbeddedChain({ operators: [keyB.address] });
  let mongo: EmbeddedMongo | undefined;
  let rpc: { url: string; close(): Promise<void> } | undefined;
  let a: Stack | undefined;
  try {
    mongo = await startEmbeddedMongo();
    rpc = await opts.rpcForA?.(chain);
    const env = {
      MONGODB_URI: mongo.uri,
      MONGODB_DB: `two_instances_${randomBytes(4).toString("hex")}`,
      WALLET_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      LOG_LEVEL: "warn",
      ...opts.env,
    };
    a = await startStack({ ...env, INSTANCE_ID: "inst-a" }, { embeddedChain: rpc ? { ...chain, rpcUrl: rpc.url } : chain });
    let skew = 0;
    const b = await startStack(
      { ...env, INSTANCE_ID: "inst-b" },
      {
        embeddedChain: opts.rpcForB ? { ...chain, rpcUrl: await opts.rpcForB(chain) } : chain,
        operatorPrivateKey: keyB.privateKey,
        clock: () => Date.now() + skew,
      },
    );
    const [stackA, proxy, store] = [a, rpc, mongo];
    return {
      chain,
      a: stackA,
      b,
      get skew() {
        return skew;
      },
      set skew(ms: number) {
        skew = ms;
      },
      close: async () => {
        await stackA.close();
        await b.close();
        await proxy?.close();
        await store.stop();
        await chain.close();
      },
    };
  } catch (err) {
    await a?.close();
    await rpc?.close();
    await mongo?.stop();
    await chain.close();
    throw err;
  }
}
