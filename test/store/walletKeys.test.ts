import { expect } from "chai";
import { createDecipheriv, randomBytes } from "node:crypto";
import { Wallet, verifyTypedData } from "ethers";
import { startEmbeddedMongo, type EmbeddedMongo } from "../../src/dev/embeddedStore";
import { connectStore, type Store } from "../../src/store";
import { LocalWalletProvider } from "../../src/wallets/provider";
import type { WalletKeyDoc } from "../../src/store/documents";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../../src/chain/typedData";

const TYPES = TRANSFER_WITH_AUTHORIZATION_TYPES;
const TRANSFER = {
  EIP712Domain: [
    { name: "name", type: "string" },
    { name: "version", type: "string" },
    { name: "chainId", type: "uint256" },
    { name: "verifyingContract", type: "address" },
  ],
  ...TYPES,
};

describe("agent keys: the local provider signs EIP-712 data as an ethers Wallet with the agent's key does", function () {
  let mongo: EmbeddedMongo;
  let store: Store;
  const encryptionKey = randomBytes(32).toString("hex");

  before(async function () {
    mongo = await startEmbeddedMongo();
    store = await connectStore(mongo.uri, "walletkeys");
  });

  after(async function () {
    await store?.close();
    await mongo?.stop();
  });

  /** The agent's key as the provider seals it (AES-256-GCM, the address as associated data). */
  function unseal(doc: WalletKeyDoc): Wallet {
    const decipher = createDecipheriv("aes-256-gcm", Buffer.from(encryptionKey, "hex"), Buffer.from(doc.iv, "base64"));
    decipher.setAAD(Buffer.from(doc.address.toLowerCase()));
    decipher.setAuthTag(Buffer.from(doc.tag, "base64"));
    return new Wallet("0x" + Buffer.concat([decipher.update(Buffer.from(doc.ciphertext, "base64")), decipher.final()]).toString("hex"));
  }

  it("gives Wallet.signTypedData's bytes for every domain and message, reusing no other domain's separator", async function () {
    const provider = new LocalWalletProvider(store.walletKeys, encryptionKey);
    const address = await provider.create();
    const doc = await store.walletKeys.findOne({ address });
    if (!doc) throw new Error("no key document");
    const wallet = unseal(doc);
    expect(wallet.address).to.equal(address);
    const signer = await provider.signer(address.toLowerCase());
    expect(signer.address).to.equal(address);

    const tokens = [Wallet.createRandom().address, Wallet.createRandom().address];
    const seen = new Set<string>();
    for (const [i, verifyingContract] of [...tokens, ...tokens].entries()) {
      for (const chainId of [8453, 84532n]) {
        const domain = { name: i % 2 ? "USDC" : "USD Coin", version: "2", chainId, verifyingContract };
        const message = {
          from: address,
          to: tokens[1],
          value: BigInt(i + 1) * 10_000n,
          validAfter: 0n,
          validBefore: BigInt(2_000_000_000 + i),
          nonce: "0x" + randomBytes(32).toString("hex"),
        };
        const signature = await signer.signTypedData({ domain, types: TRANSFER, primaryType: "TransferWithAuthorization", message });
        expect(signature).to.equal(await wallet.signTypedData(domain, TYPES, message));
        expect(verifyTypedData(domain, TYPES, message, signature)).to.equal(address);
        seen.add(signature);
      }
    }
    expect(seen.size).to.equal(8);

    // A seller names the token's domain: two domains whose fields would run together alike (the name carrying what
    // looks like the version) are two domains, each signed under its own separator.
    const verifyingContract = tokens[0];
    const message = { from: address, to: tokens[1], value: 1n, validAfter: 0n, validBefore: 2_000_000_000n, nonce: "0x" + "ab".repeat(32) };
    for (const domain of [
      { name: "A|version:string:B", version: "C", chainId: 8453, verifyingContract },
      { name: "A", version: "B|version:string:C", chainId: 8453, verifyingContract },
      { name: 'A","string","B', version: "C", chainId: 8453, verifyingContract },
    ]) {
      const signature = await signer.signTypedData({ domain, types: TRANSFER, primaryType: "TransferWithAuthorization", message });
      expect(signature, domain.name).to.equal(await wallet.signTypedData(domain, TYPES, message));
    }
  });

  it("rejects (does not throw) a message that does not encode, and signs the next one", async function () {
    const provider = new LocalWalletProvider(store.walletKeys, encryptionKey);
    const address = await provider.create();
    const signer = await provider.signer(address);
    const domain = { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: Wallet.createRandom().address };
    const message = { from: address, to: "not-an-address.eth", value: 1n, validAfter: 0n, validBefore: 1n, nonce: "0x" + "00".repeat(32) };
    let threw = false;
    const pending = (() => {
      try {
        return signer.signTypedData({ domain, types: TRANSFER, primaryType: "TransferWithAuthorization", message });
      } catch {
        threw = true;
        return Promise.resolve("");
      }
    })();
    expect(threw).to.equal(false);
    await pending.then(
      () => expect.fail("signed a message with a name where an address belongs"),
      (err: unknown) => expect(String(err)).to.match(/address/i),
    );
    const ok = { ...message, to: Wallet.createRandom().address };
    expect(
      verifyTypedData(
        domain,
        TYPES,
        ok,
        await signer.signTypedData({ domain, types: TRANSFER, primaryType: "TransferWithAuthorization", message: ok }),
      ),
    ).to.equal(address);
  });
});
