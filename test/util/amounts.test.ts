import { expect } from "chai";
import { formatUnits, parseUnits } from "ethers";
import { fromBaseUnits, numberToDecimal, toBaseUnits } from "../../src/amounts";

/** What fromBaseUnits answered through ethers' formatUnits. */
const viaEthers = (u: bigint | string) => {
  const s = formatUnits(BigInt(u), 6);
  return s.endsWith(".0") ? s.slice(0, -2) : s;
};
const outcome = (f: () => unknown) => {
  try {
    return String(f());
  } catch (err) {
    return `threw ${(err as Error).message}`;
  }
};

describe("amounts: USDC decimal strings and base units, as ethers' parseUnits and formatUnits answer", function () {
  it("formats and parses edge and many other values to ethers' answers (and its errors outside the plain form)", function () {
    const units: (bigint | string)[] = [
      0n,
      1n,
      -1n,
      10n,
      999_999n,
      1_000_000n,
      1_000_001n,
      -1_500_000n,
      (1n << 96n) - 1n,
      10n ** 40n,
      "42",
      "0x10",
    ];
    let x = 12345n;
    for (let i = 0; i < 2000; i++) {
      x = (x * 6364136223846793005n + 1442695040888963407n) % (1n << 64n); // a fixed pseudo-random sequence
      units.push(i % 5 === 0 ? -(x % 10n ** 12n) : x % 10n ** (BigInt(i % 20) + 1n));
    }
    for (const u of units) {
      expect(fromBaseUnits(u), String(u)).to.equal(viaEthers(u));
      expect(toBaseUnits(fromBaseUnits(u).replace("-", ""))).to.equal(parseUnits(viaEthers(u).replace("-", ""), 6));
    }
    for (const s of [
      "0",
      "1",
      "1.5",
      "0.000001",
      "12.340000",
      "1234567890123456789012345678",
      "0.0",
      "00",
      "1.",
      ".5",
      "-1",
      "1.1234567",
      "",
      "1e5",
      " 1",
    ]) {
      expect(
        outcome(() => toBaseUnits(s)),
        JSON.stringify(s),
      ).to.equal(outcome(() => parseUnits(s, 6)));
    }
  });
});

describe("numberToDecimal: a JSON number as the decimal it is written as, never rounded", function () {
  it("writes the shortest round-trip form with any exponent expanded", function () {
    const cases: [number, string | null][] = [
      [0.05, "0.05"],
      [1.5, "1.5"],
      [5, "5"],
      [0.1 + 0.2, "0.30000000000000004"],
      [1e-7, "0.0000001"],
      [1.5e-7, "0.00000015"],
      [-2.5e-8, "-0.000000025"],
      [1e21, "1000000000000000000000"],
      [1.25e22, "12500000000000000000000"],
      [123456.123456, "123456.123456"],
      [-0, "0"],
      [Number.NaN, null],
      [Number.POSITIVE_INFINITY, null],
    ];
    for (const [n, expected] of cases) expect(numberToDecimal(n), String(n)).to.equal(expected);
    // Whatever it writes reads back as the same number.
    for (const n of [0.1, 0.000001, 9007199254740993, 3.14159e-12, 6.02e23]) expect(Number(numberToDecimal(n))).to.equal(n);
  });
});
