/**
 * Typed contract bindings. The ABIs come from the compiled artifacts and are parsed once per process; the types are
 * the typechain output Hardhat generates beside them (typechain-types/, `import type` only), so every call, result
 * and event argument type-checks against the contracts as compiled.
 */
import {
  Contract,
  EventFragment,
  Indexed,
  Interface,
  Result,
  Utf8ErrorFuncs,
  toUtf8String,
  type BaseContract,
  type ParamType,
  type ContractRunner,
  type FunctionFragment,
  type InterfaceAbi,
  type Log,
} from "ethers";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type {
  IERC20Metadata,
  Multicall3,
  OperatorSet,
  SpendPolicy,
  SpendPolicyFactory,
  SpendPolicySchemes,
  TestUSDC,
  WETH9,
} from "../../typechain-types";
import type { TypedContractEvent, TypedContractMethod } from "../../typechain-types/common";
import { decodeEvent, decodeParams, encodeParams } from "./rpc/abiCodec";
import { PROJECT_ROOT } from "../paths";

const ARTIFACTS = {
  SpendPolicy: "contracts/SpendPolicy.sol/SpendPolicy.json",
  // The x402 schemes beyond exact, called on the agent's own address (SpendPolicy's fallback delegates them).
  SpendPolicySchemes: "contracts/SpendPolicySchemes.sol/SpendPolicySchemes.json",
  SpendPolicyFactory: "contracts/SpendPolicyFactory.sol/SpendPolicyFactory.json",
  OperatorSet: "contracts/OperatorSet.sol/OperatorSet.json",
  // FiatToken v2.2's surface (ERC-20, EIP-3009, its events), which TestUSDC reproduces: the ABI of USDC on Base too.
  Usdc: "contracts/test/TestUSDC.sol/TestUSDC.json",
  Multicall3: "contracts/test/Multicall3.sol/Multicall3.json",
  WETH9: "contracts/test/WETH9.sol/WETH9.json",
  ERC20: "@openzeppelin/contracts/token/ERC20/extensions/IERC20Metadata.sol/IERC20Metadata.json",
} as const;

/** The type of each bound contract. */
export interface Bindings {
  SpendPolicy: SpendPolicy;
  SpendPolicySchemes: SpendPolicySchemes;
  SpendPolicyFactory: SpendPolicyFactory;
  OperatorSet: OperatorSet;
  Usdc: TestUSDC;
  Multicall3: Multicall3;
  WETH9: WETH9;
  ERC20: IERC20Metadata;
}
export type ContractName = keyof typeof ARTIFACTS;

const ROOT = PROJECT_ROOT;
const interfaces = new Map<ContractName, Interface>();

/** The contract's ABI as compiled (artifacts/). */
export function abiOf(name: ContractName): InterfaceAbi {
  return (JSON.parse(readFileSync(join(ROOT, "artifacts", ARTIFACTS[name]), "utf8")) as { abi: InterfaceAbi }).abi;
}

/** The contract's Interface, parsed once: building one from the ABI for every call made garbage by the megabyte (GET /limits). */
export function interfaceOf<N extends ContractName>(name: N): Bindings[N]["interface"] {
  let iface = interfaces.get(name);
  if (!iface) {
    iface = new Interface(abiOf(name));
    interfaces.set(name, iface);
  }
  return iface as Bindings[N]["interface"];
}

/** The contract `name` at `address`, typed; it shares the one parsed Interface. */
export function bind<N extends ContractName>(name: N, address: string, runner?: ContractRunner | null): Bindings[N] {
  // What typechain's own factories do (`new Contract(...) as unknown as T`), without their Interface per call.
  return new Contract(address, interfaceOf(name), runner) as unknown as Bindings[N];
}

/** A bound contract's address (bind() always binds a string address). */
export function addressOf(contract: BaseContract): string {
  return contract.target as string;
}

// ---------------------------------------------------------------- views read through Multicall3

type ViewName<C> = {
  [K in keyof C]: C[K] extends TypedContractMethod<infer _A, infer _R, infer S> ? (S extends "view" ? K : never) : never;
}[keyof C] &
  string;
type ArgsOf<M> = M extends TypedContractMethod<infer A, infer _R, "view"> ? A : never;
type ReturnOf<M> = M extends TypedContractMethod<infer _A, infer R, "view"> ? (R extends unknown[] ? R[0] : R) : never;

/** One view call, encoded, with the decoder of its answer (the value ethers' own call would return). */
export interface ReadCall<R> {
  readonly target: string;
  readonly callData: string;
  decode(returnData: string): R;
}

/** The answers of a list of reads, in order: null where a read failed. */
export type ReadResults<T extends readonly ReadCall<unknown>[]> = {
  -readonly [K in keyof T]: T[K] extends ReadCall<infer R> ? R | null : never;
};

// ethers recomputes a function's selector (a keccak of its signature) on every encodeFunctionData: kept per Interface.
const functions = new WeakMap<Interface, Map<string, { fragment: FunctionFragment; selector: string } | null>>();

function functionOf(iface: Interface, method: string): { fragment: FunctionFragment; selector: string } | null {
  let byName = functions.get(iface);
  if (!byName) functions.set(iface, (byName = new Map<string, { fragment: FunctionFragment; selector: string } | null>()));
  let f = byName.get(method);
  if (f === undefined) {
    let fragment: FunctionFragment | null = null;
    try {
      fragment = iface.getFunction(method); // throws on an overloaded bare name: ethers then picks by the arguments
    } catch {
      // left to encodeFunctionData
    }
    f = fragment ? { fragment, selector: fragment.selector } : null;
    byName.set(method, f);
  }
  return f;
}

/** `iface.encodeFunctionData(method, args)`, the same bytes, without a keccak or ethers' coders per call (rpc/abiCodec.ts). */
export function encodeCall(iface: Interface, method: string, args: readonly unknown[]): string {
  const f = functionOf(iface, method);
  if (!f) return iface.encodeFunctionData(method, args);
  // Both are 0x-prefixed lower-case hex: joined as strings (ethers' concat parses both into bytes and back).
  return f.selector + (encodeParams(f.fragment.inputs, args) ?? iface._encodeParams(f.fragment.inputs, args).slice(2));
}

/** `iface.decodeFunctionResult(method, data)` without looking the function up by name or building coders each time. */
export function decodeResult(iface: Interface, method: string, data: string): Result {
  const fragment = functionOf(iface, method)?.fragment;
  // ethers refuses a result that is not whole words before decoding it: left to it.
  const fast = fragment && data.length % 64 === 2 ? decodeParams(fragment.outputs, data) : undefined;
  return fast ?? iface.decodeFunctionResult(fragment ?? method, data);
}

/** A typed view call of `contract` for ChainClient.readMany. */
export function readOf<C extends BaseContract, M extends ViewName<C>>(
  contract: C,
  method: M,
  ...args: ArgsOf<C[M]>
): ReadCall<ReturnOf<C[M]>> {
  const iface = contract.interface;
  return {
    target: addressOf(contract),
    callData: encodeCall(iface, method, args),
    decode: (data) => {
      const result = decodeResult(iface, method, data);
      // As ethers answers a call: the value itself when there is one output, the Result otherwise.
      return (result.length === 1 ? result[0] : result) as ReturnOf<C[M]>;
    },
  };
}

// ---------------------------------------------------------------- events

type Filters<C> = C extends { filters: infer F } ? F : never;
/** The events of a contract, by their short names. */
export type EventName<C> = { [K in keyof Filters<C>]: K extends `${string}(${string}` ? never : K }[keyof Filters<C>] & string;
type EventArgs<E> = E extends TypedContractEvent<infer _I, infer O, infer Obj> ? O & Obj : never;
/** A decoded event of contract C: its name and its typed arguments (by position and by name). */
export type EventOf<C> = { [N in EventName<C>]: { name: N; args: EventArgs<Filters<C>[N]> } }[EventName<C>];

/** The topic0 of one of a contract's events. */
export function eventTopic<N extends ContractName>(name: N, event: EventName<Bindings[N]>): string {
  const key = `${name}.${event}`;
  let topic = topics.get(key); // a keccak of the signature: settledIn asks once a payment
  if (topic === undefined) {
    const fragment = (interfaceOf(name) as Interface).getEvent(event);
    if (!fragment) throw new Error(`${name} has no event ${event}`);
    topics.set(key, (topic = fragment.topicHash));
  }
  return topic;
}
const topics = new Map<string, string>();

// Interface.parseLog finds the event by hashing every event's signature on each call (about 2 ms a payment): a map from
// topic0 per Interface instead. Each event is kept with an anonymous twin, which decodes the remaining topics without
// hashing the signature once more to check topic0 (the map lookup did).
const events = new WeakMap<Interface, Map<string, { fragment: EventFragment; decoder: EventFragment }>>();

function eventsOf(iface: Interface): Map<string, { fragment: EventFragment; decoder: EventFragment }> {
  let byTopic = events.get(iface);
  if (!byTopic) {
    byTopic = new Map();
    iface.forEachEvent((fragment) => {
      if (fragment.anonymous) return; // never found by topic0, as in parseLog
      const decoder = EventFragment.from({ type: "event", name: fragment.name, inputs: fragment.inputs, anonymous: true });
      byTopic?.set(fragment.topicHash, { fragment, decoder });
    });
    events.set(iface, byTopic);
  }
  return byTopic;
}

/**
 * What `iface.parseLog(log)` answers (the event's name, fragment and decoded arguments; null when topic0 is none of its
 * events; throws when the log does not decode), without hashing every event's signature on each call.
 */
export function parseLog(
  iface: Interface,
  log: Pick<Log, "topics" | "data">,
): { name: string; fragment: EventFragment; args: Result } | null {
  const topic0 = log.topics[0] as string | undefined;
  const found = topic0 === undefined ? undefined : eventsOf(iface).get(topic0.toLowerCase());
  if (!found) return null;
  const topics = log.topics.slice(1);
  const args = decodeEvent(found.decoder.inputs, log.data, topics) ?? iface.decodeEventLog(found.decoder, log.data, topics);
  return { name: found.fragment.name, fragment: found.fragment, args: readable(args, found.decoder, log.data, topics) };
}

/**
 * `args`, or, where reading them would throw (ethers defers a string that is not UTF-8 to the moment it is read), the
 * same log decoded with every string read leniently: an invalid sequence becomes U+FFFD. The contracts take any bytes
 * as a merchant name (the operator's choice), and one such log must not stop the indexer or the audit: they must read
 * past it; the audit reports a merchant that is no host name.
 */
function readable(args: Result, decoder: EventFragment, data: string, topics: readonly string[]): Result {
  try {
    args.toArray(true);
    return args;
  } catch {
    const bytesFor = (p: ParamType): unknown => {
      const json = JSON.parse(p.format("json")) as { type: string; components?: unknown[] };
      return { ...json, type: json.type.replace(/^string/, "bytes"), components: p.components?.map(bytesFor) };
    };
    const lenient = EventFragment.from({
      ...decoder,
      inputs: decoder.inputs.map((p) => ({ ...(bytesFor(p) as object), indexed: p.indexed })),
    });
    const raw = new Interface([lenient]).decodeEventLog(lenient, data, topics);
    return textOf(raw, decoder.inputs) as Result;
  }
}

/** `value` decoded with strings as bytes, read back as the types `params` say (strings leniently). */
function textOf(value: unknown, params: readonly ParamType[] | ParamType): unknown {
  if (Array.isArray(params)) {
    const items = (value as Result).map((v: unknown, i) => textOf(v, (params as readonly ParamType[])[i]));
    return Result.fromItems(
      items,
      (params as readonly ParamType[]).map((p) => p.name || null),
    );
  }
  const p = params as ParamType;
  if (Indexed.isIndexed(value)) return value; // a hashed indexed value
  if (p.baseType === "string") return toUtf8String(value as string, Utf8ErrorFuncs.replace);
  if (p.baseType === "tuple") return textOf(value, p.components ?? []);
  if (p.baseType === "array" && p.arrayChildren) {
    const child = p.arrayChildren;
    return Result.fromItems((value as Result).map((v: unknown) => textOf(v, child)));
  }
  return value;
}

/** Decodes a log of contract `name`, typed by event name; null when it is none of its events. */
export function parseEvent<N extends ContractName>(name: N, log: Pick<Log, "topics" | "data">): EventOf<Bindings[N]> | null {
  let parsed;
  try {
    parsed = parseLog(interfaceOf(name), log);
  } catch {
    return null;
  }
  return parsed ? ({ name: parsed.name, args: parsed.args } as unknown as EventOf<Bindings[N]>) : null;
}
