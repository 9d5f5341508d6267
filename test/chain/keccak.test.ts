import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { keccak_256 } from "@noble/hashes/sha3";
import { Transaction, TypedDataEncoder, Wallet, getAddress, id, keccak256 } from "ethers";
import { fastKeccak, keccakHex, useFastKeccak } from "../../src/chain/keccak";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../../src/chain/typedData";

const noble = (data: Uint8Array) => `0x${Buffer.from(keccak_256(data)).toString("hex")}`;

describe("ethers' keccak-256 through the keccak package, equal to @noble/hashes'", function () {
  it("loads, and hashes random inputs of every length up to 700 bytes (and long ones) as @noble/hashes does", function () {
    expect(fastKeccak, "the keccak package loaded").to.not.equal(null);
    const fast = fastKeccak as (data: Uint8Array) => Uint8Array;
    for (let n = 0; n <= 700; n++) {
      const data = randomBytes(n);
      expect(`0x${Buffer.from(fast(data)).toString("hex")}`, `${n} bytes`).to.equal(noble(data));
    }
    for (const n of [4_095, 4_096, 65_537]) {
      const data = randomBytes(n);
      expect(`0x${Buffer.from(fast(data)).toString("hex")}`, `${n} bytes`).to.equal(noble(data));
    }
    // A view into a larger buffer hashes only its own bytes.
    const big = randomBytes(300);
    const view = big.subarray(17, 250);
    expect(`0x${Buffer.from(fast(view)).toString("hex")}`).to.equal(noble(new Uint8Array(view)));
  });

  it("is registered as ethers' keccak256, and ethers' hashes, addresses and signatures are unchanged", function () {
    expect(useFastKeccak(), "registered").to.equal(true);
    expect(useFastKeccak(), "idempotent").to.equal(true);
    // Known answers: the empty input, and the ERC-20 Transfer topic.
    expect(keccak256("0x")).to.equal("0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
    expect(id("Transfer(address,address,uint256)")).to.equal("0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");
    for (let i = 0; i < 200; i++) {
      const data = randomBytes(i * 3);
      expect(keccak256(data)).to.equal(noble(data));
    }
    // EIP-712: a struct under a domain (EIP-3009's transfer), as @noble/hashes computes it field by field.
    const domain = { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" };
    const types = TRANSFER_WITH_AUTHORIZATION_TYPES;
    const message = {
      from: Wallet.createRandom().address,
      to: Wallet.createRandom().address,
      value: 10_000n,
      validAfter: 0n,
      validBefore: 2n ** 40n,
      nonce: `0x${"ab".repeat(32)}`,
    };
    const word = (v: bigint | string) => BigInt(v).toString(16).padStart(64, "0");
    const typeHash = noble(
      Buffer.from("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"),
    );
    const structHash = noble(
      Buffer.from(
        typeHash.slice(2) +
          [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce].map((v) => word(v)).join(""),
        "hex",
      ),
    );
    const domainTypeHash = noble(Buffer.from("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"));
    const domainHash = noble(
      Buffer.from(
        domainTypeHash.slice(2) +
          noble(Buffer.from(domain.name)).slice(2) +
          noble(Buffer.from(domain.version)).slice(2) +
          word(BigInt(domain.chainId)) +
          word(domain.verifyingContract),
        "hex",
      ),
    );
    expect(TypedDataEncoder.hash(domain, types, message)).to.equal(
      noble(Buffer.from(`1901${domainHash.slice(2)}${structHash.slice(2)}`, "hex")),
    );
    // Checksums (EIP-55) and a signed transaction's sender.
    const wallet = Wallet.createRandom();
    expect(getAddress(wallet.address.toLowerCase())).to.equal(wallet.address);
    const tx = Transaction.from({
      type: 2,
      chainId: 8453,
      nonce: 7,
      to: wallet.address,
      value: 1n,
      gasLimit: 21_000n,
      maxFeePerGas: 2n,
      maxPriorityFeePerGas: 1n,
    });
    tx.signature = wallet.signingKey.sign(tx.unsignedHash);
    expect(tx.from).to.equal(wallet.address);
    expect(tx.unsignedHash).to.equal(noble(Buffer.from(tx.unsignedSerialized.slice(2), "hex")));
  });

  it("keccakHex hashes what a hex string spells as ethers' keccak256 does, and refuses what ethers refuses", function () {
    expect(keccakHex("0x")).to.equal("0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
    for (let n = 0; n < 400; n += 7) {
      const hex = `0x${randomBytes(n).toString("hex")}`;
      expect(keccakHex(hex), `${n} bytes`).to.equal(noble(Buffer.from(hex.slice(2), "hex")));
      expect(keccakHex(hex.toUpperCase().replace("0X", "0x")), `${n} bytes, upper case`).to.equal(keccakHex(hex));
    }
    expect(keccakHex("0X12AB"), "ethers reads 0X too").to.equal(keccak256("0x12ab"));
    // Node's decoder would stop at the bad pair and hash what came before it: these go to ethers, which throws.
    for (const bad of ["0x123", "0xzz", "0x12zz34", "1234", "0x12 4", "", "0x\u0130\u0131", "0x١٢"]) {
      expect(() => keccakHex(bad), JSON.stringify(bad)).to.throw();
      expect(() => keccak256(bad)).to.throw();
    }
  });
});
