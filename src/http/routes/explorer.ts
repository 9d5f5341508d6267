/**
 * /dev/explorer: the embedded sandbox's transactions and addresses, decoded (embedded mode only; 404 otherwise). A
 * sandbox chain has its network's chain id (8453 for base, like real Base), so the public explorer would show another
 * chain's data: explorer links point here instead (unless EXPLORER_URL is set). With several networks, a transaction
 * is looked for on each sandbox chain; an address is read on `?network=` (default: an agent's network, else the first).
 * A browser's navigation gets a page (src/dashboard/explorerPage.ts: the decoded events, linked); tools get JSON.
 */
import { formatEther, isHexString, type Log } from "ethers";
import { z } from "zod";
import { dashboardBundle } from "../../dashboard/build";
import { EXPLORER_CSP, renderExplorerAddress, renderExplorerMissing, renderExplorerTx } from "../../dashboard/explorerPage";
import { fromBaseUnits } from "../../amounts";
import { interfaceOf, parseLog, type ContractName } from "../../chain/contracts";
import { AppError, notFound } from "../../errors";
import { NETWORKS } from "../../chain/networks";
import { Address } from "../../schemas/common";
import type { Services } from "../../services";
import type { NetworkServices } from "../../services/networks";
import { ExplorerAddress, ExplorerTx } from "../../schemas/explorer";
import { html, json, operation, rawOperation, reply } from "../../api/operation";
import type { AppContext } from "../../api/types";

/** The note of every answer: which real network the sandbox chain is not. */
const note = (s: Services) =>
  `SpendGate's view of its embedded sandbox chain (not ${NETWORKS[s.ctx.config.networkName].displayName}): nothing here exists on a public explorer.`;
const DECODERS: ContractName[] = ["SpendPolicy", "SpendPolicyFactory", "Usdc", "OperatorSet", "WETH9"];

/** Integers as decimal strings and nested results (the PolicyUpdated tuple) as plain objects. */
function plain(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) {
    const keys = Object.keys(value).filter((k) => !/^\d+$/.test(k));
    const named = (value as unknown as { toObject?: () => Record<string, unknown> }).toObject;
    if (named && keys.length === 0) {
      try {
        return Object.fromEntries(Object.entries(named.call(value)).map(([k, v]) => [k, plain(v)]));
      } catch {
        // unnamed members: a list
      }
    }
    return value.map(plain);
  }
  return value;
}

function decodeLog(log: Log) {
  for (const name of DECODERS) {
    try {
      const parsed = parseLog(interfaceOf(name), log);
      if (!parsed) continue;
      const args = Object.fromEntries(parsed.fragment.inputs.map((input, i) => [input.name || String(i), plain(parsed.args[i])]));
      return { address: log.address, contract: name === "Usdc" ? "USDC" : name, name: parsed.name, args };
    } catch {
      // another contract's event with the same topic: try the next
    }
  }
  return { address: log.address, contract: null, name: null, args: { topics: [...log.topics], data: log.data } };
}

const embeddedOnly = (embedded: boolean, path: string) => {
  if (!embedded) throw notFound(`No route for GET ${path}: set EXPLORER_URL's explorer instead.`);
};

/** A sandbox transaction with its decoded events, looked for on every sandbox chain. */
async function txView(networks: NetworkServices, hash: string) {
  const found = isHexString(hash, 32)
    ? (await Promise.all(networks.all.map(async (n) => ({ n, receipt: await n.ctx.chain.provider.getTransactionReceipt(hash) })))).find(
        (x) => x.receipt !== null,
      )
    : undefined;
  if (!found?.receipt) throw notFound(`No transaction ${hash.slice(0, 80)} on the sandbox chain (it forgets everything when it stops).`);
  const { n, receipt } = found;
  const block = await n.ctx.chain.provider.getBlock(receipt.blockNumber);
  return {
    network: n.ctx.config.networkName,
    hash: receipt.hash,
    status: receipt.status === 1 ? ("success" as const) : ("reverted" as const),
    blockNumber: receipt.blockNumber,
    timestamp: block ? new Date(block.timestamp * 1000).toISOString() : null,
    from: receipt.from,
    to: receipt.to,
    gasUsed: receipt.gasUsed.toString(),
    events: receipt.logs.map(decodeLog),
    note: note(n),
  };
}

/** A sandbox address's ETH and USDC, read on `network`'s chain (default: an agent's own network, else the first). */
async function addressView(networks: NetworkServices, raw: string, network: string | undefined) {
  const address = Address.safeParse(raw);
  if (!address.success) throw notFound(`${raw.slice(0, 80)} is not an address.`);
  const on = network ? networks.named(network) : await networks.forAddress(address.data);
  const { provider, usdc } = on.ctx.chain;
  const [code, eth, units] = await Promise.all([
    provider.getCode(address.data),
    provider.getBalance(address.data),
    usdc.balanceOf(address.data),
  ]);
  return {
    network: on.ctx.config.networkName,
    address: address.data,
    contract: code !== "0x",
    eth: formatEther(eth),
    usdc: fromBaseUnits(units),
    note: note(on),
  };
}

/** A browser's navigation (HTML first, no key) in embedded mode gets the page; anything else the JSON operation. */
const wantsPage = (ctx: AppContext, s: Services) =>
  s.ctx.config.embeddedChain && !ctx.get("Authorization") && ctx.accepts("json", "html") === "html";

/**
 * The explorer's page for `path`, mounted before its JSON operation (listed first), to which every other request passes
 * on. A refusal (no such transaction, not an address) is a page too, with its status.
 */
function explorerPage<I extends z.ZodObject>(
  path: string,
  input: I,
  render: (input: z.output<I>, networks: NetworkServices, style: string) => Promise<string>,
) {
  return rawOperation({
    method: "GET",
    path,
    tag: "System",
    summary: `The sandbox explorer's page for ${path} (a browser's navigation)`,
    auth: "none",
    input,
    hidden: true,
    responses: { 200: html("the page") },
    errors: ["not_found"],
    serve: async ({ ctx, input: parsed, deps: { s, networks } }, next) => {
      if (!wantsPage(ctx, s)) {
        await next();
        return;
      }
      const { style } = await dashboardBundle();
      ctx.vary("Accept");
      ctx.set({
        "Content-Security-Policy": EXPLORER_CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
      });
      ctx.type = "text/html; charset=utf-8";
      try {
        ctx.body = await render(parsed, networks, style);
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500) throw err;
        ctx.status = err.status;
        ctx.body = renderExplorerMissing(err.message, style);
      }
    },
  });
}

const TxInput = z.object({ params: z.object({ hash: z.string().meta({ description: "transaction hash" }) }) });
const AddressInput = z.object({
  params: z.object({ address: z.string().meta({ description: "0x address" }) }),
  query: z.object({
    network: z.string().optional().meta({ description: "the sandbox chain to read (default: an agent's own network, else the first)" }),
  }),
});

export const EXPLORER_OPERATIONS = [
  explorerPage("/dev/explorer/tx/:hash", TxInput, async ({ params }, networks, style) =>
    renderExplorerTx(await txView(networks, params.hash), style),
  ),
  explorerPage("/dev/explorer/address/:address", AddressInput, async ({ params, query }, networks, style) =>
    renderExplorerAddress(await addressView(networks, params.address, query.network), style),
  ),
  operation({
    method: "GET",
    path: "/dev/explorer/tx/:hash",
    tag: "System",
    summary: "A sandbox transaction with its decoded SpendGate, USDC and WETH events (embedded mode only)",
    description: "A browser's navigation (HTML first) gets the same as a page.",
    auth: "none",
    input: TxInput,
    responses: { 200: json("the transaction", ExplorerTx) },
    errors: ["not_found"],
    handle: async ({ input, deps: { s, networks } }) => {
      embeddedOnly(s.ctx.config.embeddedChain, "/dev/explorer/tx/:hash");
      return reply(200, await txView(networks, input.params.hash));
    },
  }),
  operation({
    method: "GET",
    path: "/dev/explorer/address/:address",
    tag: "System",
    summary: "A sandbox address: its ETH and USDC, and whether it is a contract (embedded mode only)",
    description: "A browser's navigation (HTML first) gets the same as a page.",
    auth: "none",
    input: AddressInput,
    responses: { 200: json("the address", ExplorerAddress) },
    errors: ["bad_request", "not_found"],
    handle: async ({ input, deps: { s, networks } }) => {
      embeddedOnly(s.ctx.config.embeddedChain, "/dev/explorer/address/:address");
      return reply(200, await addressView(networks, input.params.address, input.query.network));
    },
  }),
];
