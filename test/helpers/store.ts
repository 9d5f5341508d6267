/** Store inspection for API tests: document counts and full dumps of every collection. */
import type { Db, Document } from "mongodb";
import { expect } from "chai";
import type { ApiResponse } from "./stack";

export async function collectionNames(db: Db): Promise<string[]> {
  const cols = await db.listCollections({}, { nameOnly: true }).toArray();
  return cols.map((c) => c.name).sort();
}

/**
 * Collections written in the background, not by requests: the indexer mirrors on-chain events as blocks arrive
 * (tests that compare counts check the chain itself instead) and moves the previous release's policy-change marks;
 * leases are the instances' bookkeeping (the indexer's is renewed as it runs).
 */
export const BACKGROUND_COLLECTIONS = ["chainEvents", "indexerState", "policyChanges", "leases"];

/** Number of documents in every collection written by requests, by name. */
export async function documentCounts(db: Db, exclude: string[] = BACKGROUND_COLLECTIONS): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const name of await collectionNames(db)) {
    if (!exclude.includes(name)) counts[name] = await db.collection(name).countDocuments({});
  }
  return counts;
}

/** Every document of every collection. */
export async function allDocuments(db: Db): Promise<{ collection: string; doc: Document }[]> {
  const out: { collection: string; doc: Document }[] = [];
  for (const name of await collectionNames(db)) {
    for (const doc of await db.collection(name).find({}).toArray()) out.push({ collection: name, doc });
  }
  return out;
}

/** Asserts the error shape of the interface: { error, message, status } with status equal to the HTTP status. */
export function expectErrorShape(res: ApiResponse, status?: number, code?: string): void {
  const where = `${res.status} ${JSON.stringify(res.body)}`;
  if (status !== undefined) expect(res.status, where).to.equal(status);
  expect(res.status, where).to.be.within(400, 499);
  expect(res.body, where).to.be.an("object");
  expect(res.body.error, where).to.be.a("string").and.not.equal("");
  expect(res.body.message, where).to.be.a("string").and.not.equal("");
  expect(res.body.status, where).to.equal(res.status);
  if (code !== undefined) expect(res.body.error, where).to.equal(code);
}
