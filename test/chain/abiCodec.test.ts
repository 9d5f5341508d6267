import { expect } from "chai";
import { AbiCoder, Indexed, Interface, Result, Typed, Wallet, hexlify, randomBytes, type ParamType } from "ethers";
import { ZeroAddress } from "ethers";
import { decodeEvent, decodeParams, encodeParams } from "../../src/chain/rpc/abiCodec";
import { decodeResult, encodeCall, interfaceOf, parseLog } from "../../src/chain/contracts";

const MAX = 2n ** 256n - 1n;
const word = () => hexlify(randomBytes(32));
const address = () => Wallet.createRandom().address;

/** A Result's values and names, deep (what a caller can read of it by index and by name). */
function shape(v: unknown): unknown {
  if (v instanceof Result) {
    let names: string[] | string;
    try {
      names = Object.keys(v.toObject());
    } catch {
      names = "unnamed";
    }
    return { items: v.toArray().map(shape), names };
  }
  if (Indexed.isIndexed(v)) return { indexed: v.hash };
  return typeof v === "bigint" ? `${v}n` : v;
}
const same = (ours: unknown, theirs: unknown) => expect(JSON.stringify(shape(ours))).to.equal(JSON.stringify(shape(theirs)));

/** What a call throws (its message), or null. */
function thrown(f: () => unknown): string | null {
  try {
    f();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

const policy = interfaceOf("SpendPolicy") as Interface;
const usdc = interfaceOf("Usdc") as Interface;
const multicall = interfaceOf("Multicall3") as Interface;
const transferWithAuthorization = "transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)";

/** authorizePayment's arguments, as PolicyOps.authorize passes them. */
function authorizeArgs(proof: string[], over: { amount?: unknown; approval?: string; signature?: string; merchant?: string } = {}) {
  return [
    word(),
    over.merchant ?? "api.example.com",
    { entry: "api.example.com", dailyCap: MAX, payee: address() },
    proof,
    { payTo: address(), amount: over.amount ?? 10_000n, validAfter: 0n, validBefore: 2n ** 48n },
    { approvalId: over.approval ?? "", amount: 0n, timestamp: 0, signature: over.signature ?? "0x" },
  ];
}

describe("abiCodec: ethers' AbiCoder bytes and values, with coders built once", function () {
  it("encodes the payment path's calls to encodeFunctionData's bytes, edge values included, without ethers' coder", function () {
    const calls: [Interface, string, unknown[]][] = [
      [policy, "authorizePayment", authorizeArgs([])],
      [policy, "authorizePayment", authorizeArgs(Array.from({ length: 20 }, word), { amount: MAX })],
      [policy, "authorizePayment", authorizeArgs([word()], { approval: "apr_✓é€𝄞", signature: hexlify(randomBytes(65)), merchant: "" })],
      [policy, "checkPayment", ["api.example.com", { entry: "api.example.com", dailyCap: 0n, payee: ZeroAddress }, [], ZeroAddress, 0n]],
      [policy, "checkPayment", ["a", { entry: "b", dailyCap: MAX, payee: address() }, [word(), word()], address(), MAX]],
      [policy, "releasePayment", [word(), { payTo: address().toLowerCase(), amount: 1n, validAfter: 2n, validBefore: 3n }]],
      [usdc, "balanceOf", [address()]],
      [usdc, "balanceOf", [address().toLowerCase()]],
      [usdc, "authorizationState", [address(), word()]],
      // As verifyTransfer passes them: the amounts as decimal strings, the signature as bytes.
      [usdc, transferWithAuthorization, [address(), address(), "10000", "0", "1893456000", word(), hexlify(randomBytes(65))]],
      [usdc, transferWithAuthorization, [address(), address(), "0x2710", 0, Number.MAX_SAFE_INTEGER, word(), "0x"]],
      [multicall, "aggregate3", [[]]],
      [
        multicall,
        "aggregate3",
        [
          [
            { target: address(), allowFailure: true, callData: encodeCall(usdc, "balanceOf", [address()]) },
            [address(), false, "0x"],
            { target: address(), allowFailure: true, callData: hexlify(randomBytes(33)) },
          ],
        ],
      ],
    ];
    for (const [iface, method, args] of calls) {
      const f = iface.getFunction(method);
      if (!f) throw new Error(method);
      const ours = encodeParams(f.inputs, args);
      expect(ours, method).to.be.a("string"); // encoded here, not handed to ethers
      expect(`0x${ours}`).to.equal(iface._encodeParams(f.inputs, args));
      expect(encodeCall(iface, method, args)).to.equal(iface.encodeFunctionData(method, args));
    }
  });

  it("leaves to ethers, and so throws as it does, every value it would refuse or read otherwise", function () {
    const a = address();
    const badChecksum = a.slice(0, 2) + (a[2] === a[2].toUpperCase() ? a[2].toLowerCase() : a[2].toUpperCase()) + a.slice(3);
    const cases: [Interface, string, unknown[]][] = [
      [usdc, "balanceOf", [badChecksum === a ? "0xnot" : badChecksum]],
      [usdc, "balanceOf", ["api.example.com"]],
      [usdc, "balanceOf", [12]],
      [usdc, "mint", [a, MAX + 1n]],
      [usdc, "mint", [a, -1n]],
      [usdc, "mint", [a, 1.5]],
      [usdc, "mint", [a, "ten"]],
      [usdc, "authorizationState", [a, hexlify(randomBytes(31))]],
      [usdc, "authorizationState", [a, "0x123"]],
      [usdc, "authorizationState", [a, word(), "one too many"]],
      [policy, "checkPayment", ["a", { entry: "b", dailyCap: 0n, payee: ZeroAddress }, "not an array", ZeroAddress, 0n]],
      [policy, "checkPayment", ["a", { entry: "b", dailyCap: 0n, payee: ZeroAddress }, [word().slice(0, 10)], ZeroAddress, 0n]],
      [policy, "checkPayment", [7, "b", 0n, [], 0n]],
      [policy, "releasePayment", [word(), { payTo: a, amount: 1n, validAfter: 2n }]],
      [policy, "releasePayment", [word(), [a, 1n, 2n]]],
      [policy, "releasePayment", [word(), null]],
    ];
    for (const [iface, method, args] of cases) {
      const f = iface.getFunction(method);
      if (!f) throw new Error(method);
      expect(encodeParams(f.inputs, args), `${method} ${String(args[args.length - 1])}`).to.equal(undefined);
      const theirs = thrown(() => iface.encodeFunctionData(method, args));
      expect(theirs, method).to.be.a("string");
      expect(thrown(() => encodeCall(iface, method, args))).to.equal(theirs);
    }
    // A Typed value is ethers' to read: the same bytes through it.
    const typed = [a, Typed.uint256(5)];
    const mint = usdc.getFunction("mint");
    if (!mint) throw new Error("mint");
    expect(encodeParams(mint.inputs, typed)).to.equal(undefined);
    expect(encodeCall(usdc, "mint", typed)).to.equal(usdc.encodeFunctionData("mint", typed));
  });

  it("decodes the payment path's results to decodeFunctionResult's values and names", function () {
    const results: [Interface, string, unknown[]][] = [
      [multicall, "aggregate3", [[]]],
      [multicall, "aggregate3", [[[true, hexlify(randomBytes(64))]]]], // one item: ethers names it "_"
      [
        multicall,
        "aggregate3",
        [
          [
            [true, AbiCoder.defaultAbiCoder().encode(["uint8", "uint8"], [1, 9])],
            [false, "0x"],
            [true, hexlify(randomBytes(35))],
          ],
        ],
      ],
      [policy, "checkPayment", [2, 17]],
      [usdc, "balanceOf", [MAX]],
      [usdc, "balanceOf", [0n]],
      [usdc, "authorizationState", [true]],
      [usdc, "name", ["USD Coin ✓"]],
      [usdc, "name", [""]],
    ];
    for (const [iface, method, values] of results) {
      const f = iface.getFunction(method);
      if (!f) throw new Error(method);
      const data = iface.encodeFunctionResult(f, values);
      const ours = decodeParams(f.outputs, data);
      expect(ours, method).to.be.instanceOf(Result); // decoded here
      same(ours, iface.decodeFunctionResult(f, data));
      same(decodeResult(iface, method, data), iface.decodeFunctionResult(f, data));
    }
  });

  it("leaves odd result data to ethers: the same values, deferred errors and throws", function () {
    const coder = AbiCoder.defaultAbiCoder();
    const balanceOf = usdc.getFunction("balanceOf");
    const aggregate3 = multicall.getFunction("aggregate3");
    const check = policy.getFunction("checkPayment");
    if (!balanceOf || !aggregate3 || !check) throw new Error("fragments");
    const good = multicall.encodeFunctionResult(aggregate3, [[[true, "0x1234"]]]);
    const odd: [ParamType[] | readonly ParamType[], string, boolean][] = [
      // [outputs, data, decoded here]
      [balanceOf.outputs, "0x", false],
      [balanceOf.outputs, "0x" + "00".repeat(31), false],
      [balanceOf.outputs, "0x" + "00".repeat(33), true], // AbiCoder reads it (decodeResult refuses it, below)
      [aggregate3.outputs, good.slice(0, good.length - 64), false], // truncated
      [aggregate3.outputs, "0x" + "00".repeat(31) + "ff" + good.slice(66), false], // offset past the end
      [aggregate3.outputs, good.slice(0, 66) + "f".repeat(64) + good.slice(130), false], // count past the end
      [check.outputs, coder.encode(["uint256", "uint256"], [2n ** 8n + 1n, 2n ** 8n - 1n]), true], // masked to uint8, as ethers does
      [
        ParamTypesOf(["address"]),
        coder.encode(["uint256"], [2n ** 160n + 5n]), // high bits set: ethers defers an error
        false,
      ],
      [
        ParamTypesOf(["bool", "uint8", "int8", "bytes1"]),
        coder.encode(["uint256", "uint256", "uint256", "bytes32"], [2n, 511n, 255n, word()]),
        true,
      ],
      [ParamTypesOf(["string"]), coder.encode(["bytes"], ["0xff80"]), false], // invalid UTF-8: a deferred error
      [ParamTypesOf(["bytes", "uint256"]), "0X" + coder.encode(["bytes", "uint256"], ["0xABCD", 3n]).slice(2).toUpperCase(), true], // upper-case hex, as ethers reads it
    ];
    for (const [outputs, data, here] of odd) {
      const ours = decodeParams(outputs, data);
      expect(ours !== undefined, data).to.equal(here);
      const theirs = thrown(() => coder.decode(outputs, data));
      if (theirs !== null) {
        expect(thrown(() => decodeParams(outputs, data))).to.equal(null); // never throws: ethers does
        continue;
      }
      const decoded = coder.decode(outputs, data);
      const read = (r: Result) => r.map((_v, i) => thrown(() => r[i]) ?? shape(r[i]));
      if (ours) expect(JSON.stringify(read(ours))).to.equal(JSON.stringify(read(decoded)));
    }
    // Through decodeResult: what decodeFunctionResult answers or throws, whatever the data.
    for (const data of ["0x", "0x" + "00".repeat(33), good.slice(0, good.length - 64), good, "0xzz"]) {
      const theirs = thrown(() => multicall.decodeFunctionResult("aggregate3", data));
      expect(thrown(() => decodeResult(multicall, "aggregate3", data))).to.equal(theirs);
      if (theirs === null) same(decodeResult(multicall, "aggregate3", data), multicall.decodeFunctionResult("aggregate3", data));
    }
  });

  it("decodes events with indexed values of every kind as decodeEventLog does (hashes for dynamic ones)", function () {
    const iface = new Interface([
      "event E(string indexed s, address indexed a, uint256 v, (uint8 x, bytes y) t, bytes32[] w, int16 indexed n)",
      "event F(bytes b, string text, address[2] pair)",
    ]);
    const e = iface.getEvent("E");
    const f = iface.getEvent("F");
    if (!e || !f) throw new Error("events");
    const logs = [
      iface.encodeEventLog(e, ["shop ✓", address(), MAX, [255, "0x"], [], -300]),
      iface.encodeEventLog(e, ["", address(), 0n, [0, hexlify(randomBytes(100))], [word(), word()], 32767]),
      iface.encodeEventLog(f, [hexlify(randomBytes(3)), "€", [address(), address()]]),
    ];
    for (const log of logs) {
      const theirs = iface.parseLog(log);
      const fragment = theirs?.fragment;
      if (!fragment) throw new Error("unparsed");
      const ours = decodeEvent(fragment.inputs, log.data, log.topics.slice(1));
      expect(ours).to.be.instanceOf(Result);
      same(ours, theirs.args);
      same(parseLog(iface, log)?.args, theirs.args);
    }
    // Too few topics, or one that is not a word: ethers' to refuse.
    const [log] = logs;
    expect(decodeEvent(e.inputs, log.data, log.topics.slice(1, 3))).to.equal(undefined);
    expect(thrown(() => parseLog(iface, { topics: log.topics.slice(0, 3), data: log.data }))).to.equal(
      thrown(() => iface.parseLog({ topics: log.topics.slice(0, 3), data: log.data })),
    );
    expect(decodeEvent(e.inputs, log.data, [...log.topics.slice(1), "0x12"])).to.equal(undefined);
  });

  it("matches ethers on random values of nested types (tuples of arrays of tuples, fixed arrays, small ints)", function () {
    const types = [
      "(address a, (bytes b, uint48 c)[] d, string[2] e, int8 f) g",
      "bytes1[3]",
      "(bool x, bytes32 y)[2][]",
      "uint256[]",
      "(string s)",
      "int256",
    ];
    const params = ParamTypesOf(types);
    const rnd = (n: number) => Math.floor(Math.random() * n);
    const value = (p: ParamType): unknown => {
      if (p.isTuple()) return p.components.map(value);
      if (p.isArray()) return Array.from({ length: p.arrayLength >= 0 ? p.arrayLength : rnd(4) }, () => value(p.arrayChildren));
      if (p.type === "address") return rnd(2) ? address() : address().toLowerCase();
      if (p.type === "bool") return rnd(2) === 1;
      if (p.type === "string") return ["", "a", "✓".repeat(rnd(40)), "x".repeat(33)][rnd(4)];
      if (p.type === "bytes") return hexlify(randomBytes(rnd(70)));
      if (p.type.startsWith("bytes")) return hexlify(randomBytes(Number(p.type.slice(5))));
      const bits = Number(p.type.replace(/^u?int/, "") || 256);
      const signed = !p.type.startsWith("u");
      const top = 2n ** BigInt(signed ? bits - 1 : bits);
      return [0n, top - 1n, signed ? -top : 1n, BigInt(rnd(1000)) % top][rnd(4)];
    };
    const coder = AbiCoder.defaultAbiCoder();
    for (let i = 0; i < 200; i++) {
      const values = params.map(value);
      const theirs = coder.encode(params, values);
      expect(`0x${encodeParams(params, values)}`).to.equal(theirs);
      same(decodeParams(params, theirs), coder.decode(params, theirs));
    }
  });
});

function ParamTypesOf(types: string[]): ParamType[] {
  const f = new Interface([`function f(${types.join(", ")})`]).getFunction("f");
  if (!f) throw new Error("f");
  return [...f.inputs];
}
