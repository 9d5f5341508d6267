/**
 * The indexer follows a hand-over relayed by anyone (OwnerSet), but never back to an owner the chain no longer has: a
 * confirmed OwnerSet that a later hand-over (already written by the service, or not confirmed yet) replaced must not
 * give the agent back to its old owner and revoke the new owner's keys.
 */
import { expect } from "chai";
import { LedgerLinker } from "../../src/indexer/ledgerLinks";
import { type Store, connectStore } from "../../src/store";
import type { AgentDoc, ChainEventDoc } from "../../src/store/documents";
import { type EmbeddedMongo, startEmbeddedMongo } from "../../src/dev/embeddedStore";

const CHAIN = 8453;
const AGENT = "0x00000000000000000000000000000000000000a1";
const OLD = "0x00000000000000000000000000000000000000b1";
const NEW = "0x00000000000000000000000000000000000000b2";

function ownerSet(owner: string, blockNumber: number): ChainEventDoc {
  return {
    chainId: CHAIN,
    txHash: `0x${blockNumber.toString(16).padStart(64, "0")}`,
    logIndex: 0,
    blockNumber,
    blockHash: `0x${(blockNumber + 1).toString(16).padStart(64, "0")}`,
    address: AGENT,
    event: "OwnerSet",
    args: { agent: AGENT, owner, timestamp: "0", signature: "0x" },
    agentAddress: AGENT,
    paymentId: null,
    confirmed: true,
    removed: false,
  };
}

describe("indexer: an OwnerSet is followed only while the chain still names that owner", () => {
  let mongo: EmbeddedMongo;
  let store: Store;

  before(async () => {
    mongo = await startEmbeddedMongo();
    store = await connectStore(mongo.uri, "followOwner");
  });
  after(async () => {
    await store.close();
    await mongo.stop();
  });

  beforeEach(async () => {
    await store.agents.deleteMany({});
    await store.chainEvents.deleteMany({});
    // The service wrote the new owner as soon as its hand-over was mined.
    await store.agents.insertOne({ address: AGENT, ownerAddress: NEW } as AgentDoc);
  });

  it("a confirmed OwnerSet of the old owner, replaced on-chain since, changes nothing", async () => {
    const old = ownerSet(OLD, 5);
    await store.chainEvents.insertOne(old);
    const linker = new LedgerLinker({ store, chainId: CHAIN, ownerOf: () => Promise.resolve(NEW) });
    await linker.link([old]);
    expect((await store.agents.findOne({ address: AGENT }))?.ownerAddress).to.equal(NEW);
  });

  it("a hand-over relayed by someone else is followed once the chain names its owner", async () => {
    const relayed = ownerSet(OLD, 6);
    await store.chainEvents.insertOne(relayed);
    const linker = new LedgerLinker({ store, chainId: CHAIN, ownerOf: () => Promise.resolve(OLD) });
    await linker.link([relayed]);
    expect((await store.agents.findOne({ address: AGENT }))?.ownerAddress).to.equal(OLD);
  });

  it("an owner the chain cannot tell right now fails the run (retried), and changes nothing", async () => {
    const relayed = ownerSet(OLD, 7);
    await store.chainEvents.insertOne(relayed);
    const linker = new LedgerLinker({ store, chainId: CHAIN, ownerOf: () => Promise.reject(new Error("node down")) });
    const err = await linker.link([relayed]).catch((e: unknown) => e);
    expect(String(err)).to.match(/node down/);
    expect((await store.agents.findOne({ address: AGENT }))?.ownerAddress).to.equal(NEW);
  });
});
