import { expect } from "chai";
import { Wallet, getAddress as ethersGetAddress, getIcapAddress, isAddress as ethersIsAddress } from "ethers";
import { getAddress, isAddress } from "../../src/chain/rpc/checksum";

/** The answer or the error message. */
function outcome(f: () => unknown): unknown {
  try {
    return f();
  } catch (err) {
    return `threw ${(err as Error).message}`;
  }
}

describe("checksum: ethers' getAddress and isAddress, each address checksummed once", function () {
  it("answers and refuses as ethers does, twice in a row (answers kept, refusals not)", function () {
    const a = Wallet.createRandom().address;
    const flipped = "0x" + a.slice(2).replace(/[a-fA-F]/g, (c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()));
    const values = [
      a,
      a.toLowerCase(),
      "0x" + a.slice(2).toUpperCase(),
      flipped,
      getIcapAddress(a),
      "0x123",
      "",
      `${a} `,
      "0X" + a.slice(2),
    ];
    for (const v of values) {
      for (let i = 0; i < 2; i++) {
        expect(
          outcome(() => getAddress(v)),
          v,
        ).to.deep.equal(outcome(() => ethersGetAddress(v)));
        expect(isAddress(v), v).to.equal(ethersIsAddress(v));
      }
    }
    expect(isAddress(12)).to.equal(ethersIsAddress(12));
    expect(isAddress(null)).to.equal(false);
  });
});
