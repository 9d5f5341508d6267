/**
 * The fast paths of two helpers every request goes through: fromBaseUnits in integer arithmetic and the Address
 * schema's remembered checksums must answer exactly what ethers answers.
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { formatUnits, getAddress, isAddress } from "ethers";
import { fromBaseUnits, MAX_AMOUNT } from "../../src/amounts";
import { Address } from "../../src/schemas/common";

/** The former implementation, on ethers. */
const reference = (units: bigint): string => {
  const s = formatUnits(units, 6);
  return s.endsWith(".0") ? s.slice(0, -2) : s;
};

/** The same address with one letter's case flipped: a broken checksum. */
function flipOneLetter(checksummed: string): string {
  const i = 2 + checksummed.slice(2).search(/[a-fA-F]/);
  const c = checksummed[i];
  return checksummed.slice(0, i) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + checksummed.slice(i + 1);
}

describe("fromBaseUnits and Address (fast paths, same answers as ethers)", () => {
  it("fromBaseUnits formats every amount as ethers' formatUnits did, strings and negatives included", () => {
    const values = [0n, 1n, 9n, 10n, 100_000n, 999_999n, 1_000_000n, 1_000_001n, 1_500_000n, 10_000n, 123_456_789n, MAX_AMOUNT];
    for (let i = 0; i < 500; i++) values.push(BigInt(`0x${randomBytes(1 + (i % 12)).toString("hex")}`));
    for (const v of [...values, ...values.map((x) => -x)]) {
      expect(fromBaseUnits(v), String(v)).to.equal(reference(v));
      expect(fromBaseUnits(v.toString()), String(v)).to.equal(reference(v));
    }
    expect(fromBaseUnits("1500000")).to.equal("1.5");
    expect(fromBaseUnits(1n)).to.equal("0.000001");
    expect(fromBaseUnits(12_000_000n)).to.equal("12");
  });

  it("Address answers the checksummed address for every spelling of a valid one, and refuses a broken checksum every time", () => {
    for (let i = 0; i < 200; i++) {
      const checksummed = getAddress(`0x${randomBytes(20).toString("hex")}`);
      for (const spelling of [checksummed, checksummed.toLowerCase(), `0x${checksummed.slice(2).toUpperCase()}`, ` ${checksummed} `]) {
        const parsed = Address.safeParse(spelling);
        expect(parsed.success && parsed.data, spelling).to.equal(checksummed);
      }
      const broken = flipOneLetter(checksummed);
      if (isAddress(broken)) continue; // an address with no letters, or a flip that happens to be valid
      // Before and after the valid spelling is remembered, and twice: never accepted.
      expect(Address.safeParse(broken).success, broken).to.equal(false);
      expect(Address.safeParse(broken).success, broken).to.equal(false);
    }
    for (const bad of ["", "0x", "0x1234", `0x${"g".repeat(40)}`, `0x${"1".repeat(41)}`, `1x${"1".repeat(40)}`]) {
      expect(Address.safeParse(bad).success, bad).to.equal(false);
    }
  });

  it("Address stays right past the number of checksums it remembers", () => {
    const addresses = Array.from({ length: 10_050 }, () => `0x${randomBytes(20).toString("hex")}`);
    for (const a of addresses) Address.parse(a);
    for (const a of [addresses[0], addresses[5_000], addresses[10_049]]) {
      expect(Address.parse(a)).to.equal(getAddress(a));
      expect(Address.safeParse(flipOneLetter(getAddress(a))).success).to.equal(isAddress(flipOneLetter(getAddress(a))));
    }
  });
});
