/**
 * The networks part of the configuration: which networks of the table this service runs (NETWORK, or NETWORKS for
 * several), each one's JSON-RPC URL (RPC_URL for the first, `<NAME>_RPC_URL` for any), its factory (FACTORY_* for the
 * first, else deployments/<name>.json) and its addresses (the network table's; USDC_ADDRESS, UNISWAP_QUOTER_V2 and
 * EXPLORER_URL override the first network's). config.ts parses the environment with it; every service of a network
 * reads that network's view of the configuration (networkView).
 */
import { z } from "zod";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { getAddress, isAddress } from "ethers";
import { DEFAULT_NETWORK, NETWORKS, NETWORK_NAMES, type NetworkName, type RpcUrlKey, rpcUrlKey } from "./chain/networks";

const url = z.url({ protocol: /^https?$/ });
const names = z.enum(NETWORK_NAMES as [NetworkName, ...NetworkName[]], {
  error: () => `must name networks of the table: ${NETWORK_NAMES.join(", ")}`,
});

/** The environment variables of the networks part (merged into config.ts's schema). */
export const NETWORK_ENV = {
  NETWORK: names.optional(),
  NETWORKS: z
    .string()
    .transform((v) => v.split(",").map((n) => n.trim()))
    .pipe(
      z
        .array(names)
        .min(1)
        .refine((list) => new Set(list).size === list.length, "must not name a network twice"),
    )
    .optional(),
  ...(Object.fromEntries(NETWORK_NAMES.map((n) => [rpcUrlKey(n), url.optional()])) as Record<RpcUrlKey, z.ZodOptional<typeof url>>),
};

type NetworkEnv = { [K in keyof typeof NETWORK_ENV]?: z.output<(typeof NETWORK_ENV)[K]> } & {
  RPC_URL?: string;
  USDC_ADDRESS?: string;
  FACTORY_ADDRESS?: string;
  FACTORY_DEPLOY_BLOCK?: number;
  UNISWAP_QUOTER_V2?: string;
  EXPLORER_URL?: string;
};

/** One network as the environment describes it, before an embedded chain or the defaults complete it. */
export interface NetworkSettings {
  name: NetworkName;
  chainId: number;
  rpcUrl?: string;
  usdcAddress: string;
  /** WETH of the network (the table's); null: no swaps there. */
  wethAddress: string | null;
  factoryAddress?: string;
  factoryDeployBlock?: number;
  /** The QuoterV2 that prices swaps (the table's, UNISWAP_QUOTER_V2 for the first network, or the embedded one). */
  uniswapQuoterV2?: string;
  /** Explorer links; unset on an embedded chain (the service's own /dev/explorer then). */
  explorerUrl?: string;
}

/** A network complete: its chain, its factory and the keys that act on it. */
export interface ResolvedNetwork extends NetworkSettings {
  rpcUrl: string;
  factoryAddress: string;
  factoryDeployBlock: number;
  operatorPrivateKey: string;
  facilitatorPrivateKey?: string;
}

/** The networks run, in order (the first is an agent's default): NETWORKS, else NETWORK, else base. */
export function selectedNetworks(e: Pick<NetworkEnv, "NETWORK" | "NETWORKS">): readonly NetworkName[] {
  return e.NETWORKS ?? [e.NETWORK ?? DEFAULT_NETWORK];
}

/** A network's JSON-RPC URL: RPC_URL serves the first; `<NAME>_RPC_URL` serves any network named in NETWORKS. */
function rpcUrlOf(e: Record<string, unknown>, name: NetworkName, first: boolean, several: boolean): string | undefined {
  const own = first ? e.RPC_URL : undefined;
  const named = several ? e[rpcUrlKey(name)] : undefined;
  return typeof own === "string" ? own : typeof named === "string" ? named : undefined;
}

/** FACTORY_ADDRESS and FACTORY_DEPLOY_BLOCK from `<dir>/<network>.json` (written by scripts/deploy.ts), if readable. */
export function factoryFromDeployments(dir: string, network: string): { address?: string; block?: number } {
  const file = join(dir, `${network}.json`);
  if (!/^[a-z0-9-]+$/.test(network) || !existsSync(file)) return {};
  try {
    const record = JSON.parse(readFileSync(file, "utf8")) as { factory?: { address?: unknown; block?: unknown } };
    const { address, block } = record.factory ?? {};
    return {
      ...(typeof address === "string" && isAddress(address) ? { address: getAddress(address) } : {}),
      ...(typeof block === "number" && Number.isSafeInteger(block) && block >= 0 ? { block } : {}),
    };
  } catch {
    return {};
  }
}

/**
 * Rules between the networks' variables, on the raw strings (beside the schema, so every problem is listed at once).
 * `production`: some network has a JSON-RPC URL, so every one needs one, and a factory.
 */
export function networkProblems(env: Record<string, string>, deploymentsDir: string): string[] {
  const problems: string[] = [];
  if (env.NETWORK && env.NETWORKS) problems.push("NETWORK: set NETWORK (one network) or NETWORKS (several), not both");
  const list = env.NETWORKS?.split(",").map((n) => n.trim()) ?? [env.NETWORK ?? DEFAULT_NETWORK];
  const known = list.filter((n): n is NetworkName => (NETWORK_NAMES as readonly string[]).includes(n));
  if (known.length !== list.length || new Set(list).size !== list.length) return problems; // the schema names these
  const several = env.NETWORKS !== undefined;
  const rpcs = known.map((n, i) => rpcUrlOf(env, n, i === 0, several));
  if (!rpcs.some(Boolean)) return problems; // embedded chains, one per network
  known.forEach((name, i) => {
    if (!rpcs[i]) {
      problems.push(
        `${rpcUrlKey(name)}: is required for network ${name} of NETWORKS (every network needs a JSON-RPC URL once one has one)`,
      );
    }
    if (i === 0) return;
    const record = factoryFromDeployments(deploymentsDir, name);
    if (record.address === undefined || record.block === undefined) {
      problems.push(
        `deployments/${name}.json: network ${name} of NETWORKS needs its factory's address and block there (npm run deploy -- --network ${name})`,
      );
    }
  });
  return problems;
}

/** Whether the networks run on JSON-RPC URLs of the environment (production) rather than embedded chains. */
export function hasRpcUrls(e: Record<string, unknown>): boolean {
  const list = typeof e.NETWORKS === "string" ? e.NETWORKS.split(",").map((n) => n.trim()) : (e.NETWORKS as string[] | undefined);
  const names = (list ?? [typeof e.NETWORK === "string" ? e.NETWORK : DEFAULT_NETWORK]).filter((n): n is NetworkName =>
    (NETWORK_NAMES as readonly string[]).includes(n),
  );
  return names.some((n, i) => rpcUrlOf(e, n, i === 0, e.NETWORKS !== undefined) !== undefined);
}

/** Each network run, as the environment (and the deployment records of the networks after the first) describes it. */
export function networkSettings(e: NetworkEnv & Record<string, unknown>, deploymentsDir: string, embedded: boolean): NetworkSettings[] {
  const several = e.NETWORKS !== undefined;
  return selectedNetworks(e).map((name, i): NetworkSettings => {
    const n = NETWORKS[name];
    const first = i === 0;
    const record = first ? {} : factoryFromDeployments(deploymentsDir, name);
    const rpcUrl = rpcUrlOf(e, name, first, several);
    return {
      name,
      chainId: n.chainId,
      rpcUrl,
      usdcAddress: (first ? e.USDC_ADDRESS : undefined) ?? n.usdc.address,
      wethAddress: n.weth,
      ...(first
        ? { factoryAddress: e.FACTORY_ADDRESS, factoryDeployBlock: e.FACTORY_DEPLOY_BLOCK }
        : { factoryAddress: record.address, factoryDeployBlock: record.block }),
      uniswapQuoterV2: (first ? e.UNISWAP_QUOTER_V2 : undefined) ?? (embedded ? undefined : n.uniswap?.quoterV2),
      explorerUrl: (first ? e.EXPLORER_URL?.replace(/\/+$/, "") : undefined) ?? (embedded ? undefined : n.explorer),
    };
  });
}

/** The fields of a network that a network's view of the configuration puts over the first network's. */
export function networkFields(n: ResolvedNetwork) {
  return {
    networkName: n.name,
    chainId: n.chainId,
    rpcUrl: n.rpcUrl,
    usdcAddress: n.usdcAddress,
    wethAddress: n.wethAddress,
    factoryAddress: n.factoryAddress,
    factoryDeployBlock: n.factoryDeployBlock,
    uniswapQuoterV2: n.uniswapQuoterV2,
    explorerUrl: n.explorerUrl,
    operatorPrivateKey: n.operatorPrivateKey,
    facilitatorPrivateKey: n.facilitatorPrivateKey,
  };
}

/** What an embedded chain hands over to the configuration (addresses and keys). */
export interface EmbeddedChainParts {
  rpcUrl: string;
  addresses: { usdc: string; factory: string; uniswap: { quoterV2: string } | null };
  deployBlock: number;
  operator: { address: string; privateKey: string };
  facilitator: { address: string; privateKey: string };
}

/** One network completed by its embedded chain (if any); the names of what is still missing. */
export function resolveNetwork(
  loaded: { operatorPrivateKey?: string; facilitatorPrivateKey?: string },
  n: NetworkSettings,
  chain: EmbeddedChainParts | undefined,
  ownOperator: string | undefined,
): { network?: ResolvedNetwork; missing: string[] } {
  const fromChain = chain && {
    rpcUrl: chain.rpcUrl,
    factoryAddress: chain.addresses.factory,
    factoryDeployBlock: chain.deployBlock,
    usdcAddress: chain.addresses.usdc,
    uniswapQuoterV2: chain.addresses.uniswap?.quoterV2,
    // Another instance on the same embedded chain brings its own key (a member of the chain's operator set).
    operatorPrivateKey: ownOperator ?? chain.operator.privateKey,
    facilitatorPrivateKey: loaded.facilitatorPrivateKey ?? chain.facilitator.privateKey,
  };
  const merged = { ...n, operatorPrivateKey: loaded.operatorPrivateKey, facilitatorPrivateKey: loaded.facilitatorPrivateKey, ...fromChain };
  const { rpcUrl, factoryAddress, factoryDeployBlock, operatorPrivateKey } = merged;
  const missing = Object.entries({ rpcUrl, factoryAddress, factoryDeployBlock, operatorPrivateKey })
    .filter(([, v]) => v === undefined)
    .map(([k]) => k);
  if (rpcUrl === undefined || factoryAddress === undefined || factoryDeployBlock === undefined || operatorPrivateKey === undefined) {
    return { missing };
  }
  return { network: { ...merged, rpcUrl, factoryAddress, factoryDeployBlock, operatorPrivateKey }, missing };
}
