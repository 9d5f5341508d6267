/**
 * Event decoding for the indexer: the events it reads from the factory, the SpendPolicy contracts and USDC, their
 * topics, and the decoding of a log into the plain JSON of a `chainEvents` document.
 */
import { ZeroAddress, type Interface, type Log, type ParamType } from "ethers";
import { getAddress } from "../chain/rpc/checksum";
import type { ChainClient } from "../chain/client";
import { addressOf, eventTopic, parseLog } from "../chain/contracts";
import type { ChainEventArg, ChainEventDoc } from "../store/documents";

/** The SpendPolicy events indexed: the auditors' interface of contracts/ISpendPolicy.sol. */
export const POLICY_EVENTS = [
  "PaymentAuthorized",
  "PaymentBlocked",
  "PaymentReleased",
  "PaymentVoided",
  "ApprovalUsed",
  "PolicyUpdated",
  "PausedSet",
  "OperatorSet",
  "OwnerSet",
  "Withdrawn",
  "SwapExecuted",
  // x402 channel deposits and upto ceilings (SpendPolicySchemes, run on the wallet's address by delegatecall).
  "SchemePayment",
  "SchemeCredited",
] as const;

/** The POLICY_EVENTS emitted at the agent's address with no `agent` argument. */
const SCHEME_EVENTS = new Set(["SchemePayment", "SchemeCredited"]);

type Args = ChainEventDoc["args"];

/** A log decoded into the fields of a chainEvents document. */
export type Decoded = Omit<ChainEventDoc, "_id" | "chainId" | "confirmed" | "removed">;

export interface Source {
  iface: Interface;
  /** Lower-case addresses this source may emit from. */
  addresses: Set<string>;
  /** topic0 -> event name, for the events indexed from this source. */
  topics: Map<string, string>;
}

/** The configured contracts, their indexed events' topics and the sources their logs are decoded against. */
export interface EventSources {
  factoryAddress: string;
  usdcAddress: string;
  agentDeployedTopic: string;
  authorizationUsedTopic: string;
  /** topic0 of every POLICY_EVENTS entry. */
  policyTopics: string[];
  /** The factory's AgentDeployed. */
  factory: Source;
  /** USDC AuthorizationUsed. */
  usdc: Source;
  /** The POLICY_EVENTS of these (lower-case) policy addresses. */
  policies(addresses: Iterable<string>): Source;
}

export function eventSources(chain: ChainClient): EventSources {
  const factoryAddress = getAddress(addressOf(chain.factory));
  const usdcAddress = getAddress(addressOf(chain.usdc));
  const policyIface = chain.policyAt(ZeroAddress).interface;
  const agentDeployedTopic = eventTopic("SpendPolicyFactory", "AgentDeployed");
  const authorizationUsedTopic = eventTopic("Usdc", "AuthorizationUsed");
  const policyTopics = new Map<string, string>(POLICY_EVENTS.map((name) => [eventTopic("SpendPolicy", name), name]));
  return {
    factoryAddress,
    usdcAddress,
    agentDeployedTopic,
    authorizationUsedTopic,
    policyTopics: [...policyTopics.keys()],
    factory: {
      iface: chain.factory.interface,
      addresses: new Set([factoryAddress.toLowerCase()]),
      topics: new Map([[agentDeployedTopic, "AgentDeployed"]]),
    },
    usdc: {
      iface: chain.usdc.interface,
      addresses: new Set([usdcAddress.toLowerCase()]),
      topics: new Map([[authorizationUsedTopic, "AuthorizationUsed"]]),
    },
    policies: (addresses) => ({ iface: policyIface, addresses: new Set(addresses), topics: policyTopics }),
  };
}

/** Decodes a log from a trusted source into plain JSON; null for anything else. */
export function decode(log: Log, source: Source): Decoded | null {
  if (log.removed) return null;
  if (!source.addresses.has(log.address.toLowerCase())) return null;
  const name = source.topics.get(log.topics[0]);
  if (!name) return null;
  let parsed;
  try {
    parsed = parseLog(source.iface, log);
  } catch {
    return null;
  }
  if (!parsed || parsed.name !== name) return null;
  const args: Args = {};
  parsed.fragment.inputs.forEach((input, i) => {
    // A tuple (PolicyUpdated's policy) is flattened into its fields: stored field names may not contain dots.
    if (input.baseType === "tuple" && input.components) {
      input.components.forEach((c, j) => (args[c.name] = argOf((parsed.args[i] as unknown[])[j], c)));
    } else {
      args[input.name] = plain(parsed.args[i], input.type);
    }
  });
  // SchemePayment and SchemeCredited name no agent: the wallet that emits them is the agent (SpendPolicySchemes runs
  // on the agent's address by delegatecall).
  const agent =
    typeof args.agent === "string"
      ? args.agent
      : typeof args.authorizer === "string"
        ? args.authorizer
        : SCHEME_EVENTS.has(name)
          ? getAddress(log.address)
          : null;
  const paymentId = typeof args.paymentId === "string" ? args.paymentId : typeof args.nonce === "string" ? args.nonce : null;
  return {
    txHash: log.transactionHash.toLowerCase(),
    logIndex: log.index,
    blockNumber: log.blockNumber,
    blockHash: log.blockHash.toLowerCase(),
    address: getAddress(log.address),
    event: name,
    args,
    agentAddress: agent,
    paymentId,
  };
}

/** A tuple's field as stored: an array of structs (PolicyUpdated's merchants) as plain records, anything else plain. */
function argOf(value: unknown, type: ParamType): ChainEventArg {
  const fields = type.arrayChildren?.components;
  if (type.baseType !== "array" || !fields) return plain(value, type.type);
  return (value as unknown[][]).map((item) =>
    Object.fromEntries(
      fields.map((f, k) => {
        const v = plain(item[k], f.type);
        return [f.name, typeof v === "number" ? String(v) : v];
      }),
    ),
  );
}

/** A decoded event argument as plain JSON: bigints as decimal strings, addresses checksummed, bytes lower case. */
function plain(value: unknown, type: string): string | number | boolean {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "boolean") return value;
  if (typeof value === "number") return value;
  if (type === "address" && typeof value === "string") return getAddress(value);
  if (typeof value === "string") return type.startsWith("bytes") ? value.toLowerCase() : value;
  return String(value);
}
