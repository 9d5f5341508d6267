import { expect } from "chai";
import { SigningKey, Transaction, getAddress } from "ethers";
import { signCallTx } from "../../src/chain/rpc/callTx";

describe("the operator's call transaction: the bytes ethers' Transaction signs and serializes", function () {
  it("matches Transaction.from + unsignedHash + serialized on edge and random fields (long data, zero, max, short r or s)", function () {
    // A fixed key and fixed fields: signatures are deterministic (RFC 6979), so the short r or s below is always there.
    const key = new SigningKey(`0x${"11".repeat(32)}`);
    const fill = (n: number, seed: number) => `0x${(seed % 256).toString(16).padStart(2, "0").repeat(n)}`;
    const max = (1n << 256n) - 1n;
    const cases = [
      { chainId: 8453, nonce: 0, gasLimit: 0n, maxFeePerGas: 0n, maxPriorityFeePerGas: 0n, data: "0x" },
      { chainId: 1, nonce: 127, gasLimit: 128n, maxFeePerGas: max, maxPriorityFeePerGas: 1n, data: "0x00" },
      { chainId: 84532, nonce: 2 ** 40, gasLimit: 250_000n, maxFeePerGas: 10n ** 9n, maxPriorityFeePerGas: 10n ** 6n, data: "0x7f" },
      { chainId: 8453, nonce: 56, gasLimit: 55n, maxFeePerGas: 256n, maxPriorityFeePerGas: 255n, data: fill(55, 1) },
      { chainId: 8453, nonce: 1, gasLimit: 1n, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n, data: fill(56, 2) },
      {
        chainId: 8453,
        nonce: 1,
        gasLimit: 1n,
        maxFeePerGas: 1n,
        maxPriorityFeePerGas: 1n,
        data: fill(70_000, 0xab).toUpperCase().replace("0X", "0x"),
      },
    ];
    // Enough that some signature has an r or s below 2^248 (a shorter RLP item).
    for (let i = 0; i < 400; i++) {
      cases.push({
        chainId: 8453,
        nonce: i,
        gasLimit: 250_000n + BigInt(i),
        maxFeePerGas: BigInt(i) * 10n ** 7n,
        maxPriorityFeePerGas: BigInt(i),
        data: fill(i % 600, i),
      });
    }
    let short = 0;
    const to = getAddress(`0x${"5b".repeat(20)}`);
    for (const c of cases) {
      const tx = Transaction.from({ type: 2, ...c, to: to.toLowerCase(), value: 0n });
      tx.signature = key.sign(tx.unsignedHash);
      expect(signCallTx({ ...c, to }, key)).to.equal(tx.serialized);
      if (tx.signature.r.startsWith("0x00") || tx.signature.s.startsWith("0x00")) short++;
    }
    expect(short).to.be.greaterThan(0);
    expect(() => signCallTx({ ...cases[0], to: "0x1234" }, key)).to.throw(/invalid address/);
    expect(() => signCallTx({ ...cases[0], to, nonce: -1 }, key)).to.throw(/out of range/);
  });
});
