import { expect } from "chai";
import { Interface, Wallet, getAddress, hexlify, randomBytes, type EventFragment, type ParamType } from "ethers";
import { decodeResult, encodeCall, interfaceOf, parseLog, type ContractName } from "../../src/chain/contracts";

const NAMES: ContractName[] = ["SpendPolicy", "SpendPolicyFactory", "OperatorSet", "Usdc", "Multicall3", "WETH9", "ERC20"];

/** A value of an ABI type, varied by `seed` (nested tuples and arrays included). */
function valueOf(p: ParamType, seed: number): unknown {
  if (p.baseType === "tuple") return (p.components ?? []).map((c, i) => valueOf(c, seed + i));
  if (p.baseType === "array") {
    const length = p.arrayLength !== null && p.arrayLength >= 0 ? p.arrayLength : seed % 3;
    return Array.from({ length }, (_, i) => (p.arrayChildren ? valueOf(p.arrayChildren, seed + i) : null));
  }
  if (p.type === "address") return getAddress(hexlify(randomBytes(20)));
  if (p.type === "bool") return seed % 2 === 0;
  if (p.type === "string") return `text ${seed} ✓`;
  if (p.type === "bytes") return hexlify(randomBytes(seed % 70));
  if (p.type.startsWith("bytes")) return hexlify(randomBytes(Number(p.type.slice(5))));
  const bits = Number(p.type.replace(/^u?int/, "") || 256);
  const max = (1n << BigInt(p.type.startsWith("u") ? bits : bits - 1)) - 1n;
  return p.type.startsWith("u") ? max - BigInt(seed) : -max + BigInt(seed);
}

const plain = (v: unknown): string => JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? `${x}n` : x));

function eventsOf(iface: Interface): EventFragment[] {
  const all: EventFragment[] = [];
  iface.forEachEvent((e) => all.push(e));
  return all;
}

describe("ABI coding without ethers' per-call hashing: the same answers as Interface", function () {
  it("parseLog decodes every event of every ABI as Interface.parseLog does", function () {
    let checked = 0;
    for (const name of NAMES) {
      const iface = interfaceOf(name) as Interface;
      for (const event of eventsOf(iface)) {
        for (const seed of [0, 1, 2]) {
          const { data, topics } = iface.encodeEventLog(
            event,
            event.inputs.map((p, i) => valueOf(p, seed + i)),
          );
          const theirs = iface.parseLog({ topics, data });
          const ours = parseLog(iface, { topics, data });
          expect(ours?.name, `${name}.${event.name}`).to.equal(theirs?.name);
          expect(ours?.fragment).to.equal(theirs?.fragment);
          expect(plain(ours?.args.toArray(true))).to.equal(plain(theirs?.args.toArray(true)));
          // Upper-case hex in topic0 finds the event too, as in parseLog.
          expect(
            plain(parseLog(iface, { topics: [topics[0].toUpperCase().replace("0X", "0x"), ...topics.slice(1)], data })?.args.toArray(true)),
          ).to.equal(plain(theirs?.args.toArray(true)));
          checked++;
        }
      }
    }
    expect(checked).to.be.greaterThan(60);
  });

  it("parseLog answers null for an unknown or missing topic and throws on undecodable data, as parseLog does", function () {
    const iface = interfaceOf("Usdc") as Interface;
    const transfer = iface.getEvent("Transfer");
    if (!transfer) throw new Error("no Transfer");
    const { data, topics } = iface.encodeEventLog(transfer, [Wallet.createRandom().address, Wallet.createRandom().address, 5n]);
    const unknown = { topics: [hexlify(randomBytes(32)), ...topics.slice(1)], data };
    expect(parseLog(iface, unknown)).to.equal(null);
    expect(iface.parseLog(unknown)).to.equal(null);
    expect(parseLog(iface, { topics: [], data })).to.equal(null);
    expect(() => iface.parseLog({ topics, data: "0x01" })).to.throw();
    expect(() => parseLog(iface, { topics, data: "0x01" })).to.throw();
    expect(() => iface.parseLog({ topics: topics.slice(0, 2), data })).to.throw();
    expect(() => parseLog(iface, { topics: topics.slice(0, 2), data })).to.throw();
  });

  it("encodeCall and decodeResult give the bytes and values of encodeFunctionData and decodeFunctionResult", function () {
    let checked = 0;
    for (const name of NAMES) {
      const iface = interfaceOf(name) as Interface;
      iface.forEachFunction((fn) => {
        const overloaded = iface.fragments.filter((f) => f.type === "function" && "name" in f && f.name === fn.name).length > 1;
        const key = overloaded ? fn.format() : fn.name;
        for (const seed of [0, 5]) {
          const args = fn.inputs.map((p, i) => valueOf(p, seed + i));
          expect(encodeCall(iface, key, args), `${name}.${key}`).to.equal(iface.encodeFunctionData(key, args));
          // The second call comes from the cache.
          expect(encodeCall(iface, key, args)).to.equal(iface.encodeFunctionData(key, args));
          const result = iface.encodeFunctionResult(
            fn,
            fn.outputs.map((p, i) => valueOf(p, seed + i)),
          );
          expect(plain(decodeResult(iface, key, result).toArray(true))).to.equal(
            plain(iface.decodeFunctionResult(key, result).toArray(true)),
          );
          checked++;
        }
      });
    }
    expect(checked).to.be.greaterThan(100);
    // An overloaded bare name is refused as encodeFunctionData refuses it.
    const usdc = interfaceOf("Usdc") as Interface;
    const args = [Wallet.createRandom().address, Wallet.createRandom().address, 1n, 0n, 9n, hexlify(randomBytes(32)), "0x"];
    expect(() => usdc.encodeFunctionData("transferWithAuthorization", args)).to.throw(/ambiguous/);
    expect(() => encodeCall(usdc, "transferWithAuthorization", args)).to.throw(/ambiguous/);
    expect(() => encodeCall(usdc, "noSuchFunction", [])).to.throw(/no matching function|unknown function/);
    expect(() => encodeCall(usdc, "balanceOf", ["not an address"])).to.throw();
  });
});
