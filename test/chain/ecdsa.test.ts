import { expect } from "chai";
import { SigningKey, Wallet, keccak256, recoverAddress, toUtf8Bytes } from "ethers";
import { nativeSigning, signDigest } from "../../src/chain/ecdsa";

describe("signing a digest: libsecp256k1's native binding, byte for byte as ethers signs", function () {
  it("loads here (linux-x64 has a prebuilt addon) and agrees with ethers on random keys and digests", function () {
    // On this platform the binding must load; elsewhere ethers signs and this comparison is ethers against itself.
    if (process.platform === "linux" && process.arch === "x64") expect(nativeSigning, "the native binding loaded").to.equal(true);
    for (let i = 0; i < 300; i++) {
      const key = new SigningKey(Wallet.createRandom().privateKey);
      const digest = keccak256(toUtf8Bytes(`digest ${i}`));
      const expected = key.sign(digest);
      const got = signDigest(key, digest);
      expect(got, `key ${i}`).to.deep.equal({ r: expected.r, s: expected.s, yParity: expected.yParity, serialized: expected.serialized });
      expect(recoverAddress(digest, got.serialized)).to.equal(new Wallet(key.privateKey).address);
      expect(signDigest(key, digest, false)).to.deep.equal(got);
    }
  });

  it("signs edge digests (0 and near the curve order) and refuses one that is not 32 bytes", function () {
    const key = new SigningKey(`0x${"01".padStart(64, "0")}`);
    const order = "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141";
    const belowOrder = `0x${order.slice(0, 63)}0`;
    for (const digest of [`0x${"00".repeat(32)}`, `0x${"ff".repeat(32)}`, belowOrder, `0x${order}`, `0x${order.toUpperCase()}`]) {
      expect(signDigest(key, digest).serialized).to.equal(key.sign(digest).serialized);
    }
    if (nativeSigning) expect(() => signDigest(key, "0x1234")).to.throw(/32 bytes/);
  });
});
