/**
 * The facilitator's viem account signs through src/chain/ecdsa.ts (libsecp256k1's binding): every signature must be
 * the one viem's own private-key account makes, byte for byte, or the settlements it sends would not be the ones viem
 * would send (and a hash the facilitator computed would name another transaction).
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { nativeSigning } from "../../src/chain/ecdsa";
import { nativeSigningAccount, viem, viemAccounts } from "../../src/chain/viem";

describe("the facilitator's viem account, signing natively", function () {
  it("signs transactions, messages, typed data and hashes exactly as viem's private-key account does", async function () {
    if (process.platform === "linux" && process.arch === "x64") expect(nativeSigning, "the native binding signs").to.equal(true);
    const to = Wallet.createRandom().address as `0x${string}`;
    const data = `0xa9059cbb${"00".repeat(64)}` as const;
    for (let i = 0; i < 20; i++) {
      const key = Wallet.createRandom().privateKey as `0x${string}`;
      const ours = nativeSigningAccount(key);
      const theirs = viemAccounts.privateKeyToAccount(key);
      expect(ours.address).to.equal(theirs.address);
      const transactions = [
        {
          type: "eip1559",
          chainId: 8453,
          nonce: i,
          to,
          data,
          gas: 90_000n,
          maxFeePerGas: 2_000_000n + BigInt(i),
          maxPriorityFeePerGas: 1n,
        },
        { type: "eip2930", chainId: 84532, nonce: i, to, data, gas: 90_000n, gasPrice: 7n, accessList: [] },
        { type: "legacy", chainId: 31337, nonce: i, to, value: 1n, gas: 21_000n, gasPrice: 1_000_000_000n },
      ] as const;
      for (const tx of transactions) {
        const signed = await ours.signTransaction(tx);
        expect(signed, `${tx.type} ${i}`).to.equal(await theirs.signTransaction(tx));
        expect(await viem.recoverTransactionAddress({ serializedTransaction: signed as never })).to.equal(theirs.address);
      }
      const message = `settle ${i} ✓`;
      expect(await ours.signMessage({ message })).to.equal(await theirs.signMessage({ message }));
      const typedData = {
        domain: { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: to },
        types: {
          Mail: [
            { name: "to", type: "address" },
            { name: "amount", type: "uint256" },
          ],
        },
        primaryType: "Mail",
        message: { to, amount: BigInt(i) },
      } as const;
      expect(await ours.signTypedData(typedData)).to.equal(await theirs.signTypedData(typedData));
      const hash = viem.keccak256(viem.toHex(`hash ${i}`));
      expect(await ours.sign({ hash })).to.equal(await theirs.sign({ hash }));
    }
  });
});
