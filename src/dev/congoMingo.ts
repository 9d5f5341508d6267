/**
 * CongoDB matches documents with mingo, building a `new Query(filter)` (and `new Aggregator(pipeline)`) for every
 * command. mingo 7 then copies its whole operator table (six maps of several hundred operators) into a fresh context
 * for each one: about 0.1 ms a command, more than the match itself on an indexed lookup, and a key lookup, a ledger
 * page and its count are three of them.
 *
 * This builds mingo's options once, with the same operators and defaults as mingo's own `Query` and `Aggregator`,
 * and has CongoDB's QueryEngine and AggregationEngine build theirs from it: mingo copies options it is handed as a
 * ComputeOptions instance without copying the operators. Nothing in mingo changes an operator it already has (the
 * two pipeline stages that add operators, $fill and $setWindowFields, add ones the full table already holds, and an
 * existing operator wins), so one shared table answers exactly as a copy would. test/store/congoMingo.test.ts holds
 * the answers equal to mingo's own on filters and pipelines of every kind the service sends and more.
 *
 * ComputeOptions is not among mingo's package exports, so it is loaded by file from the mingo that CongoDB resolves;
 * when that file or class is not there (another mingo version), nothing is patched and CongoDB works as it came.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

type Operators = Record<string, unknown>;
interface ComputeOptionsClass {
  init(options: Record<string, unknown>): object;
}
interface MingoQuery {
  test(doc: unknown): boolean;
}
type QueryClass = new (condition: unknown, options: object) => MingoQuery;
type AggregatorClass = new (pipeline: unknown[], options: object) => { run(docs: unknown[]): unknown };

/** CongoDB's engines, as `congodb` exports them (static methods). */
export interface CongoEngines {
  QueryEngine: {
    filter(documents: unknown[], filter: unknown): unknown[];
    matches(document: unknown, filter: unknown): boolean;
    findOne(documents: unknown[], filter: unknown): unknown;
  };
  AggregationEngine: { aggregate(documents: unknown[], pipeline: unknown[], options?: { collation?: unknown }): unknown[] };
}

interface Mingo {
  Query: QueryClass;
  Aggregator: AggregatorClass;
  options: object;
}

/** mingo's core Query and Aggregator and one ComputeOptions holding its full operator table, or null. */
function loadMingo(): Mingo | null {
  try {
    // The mingo CongoDB uses: resolved from its package, as Node resolves its `import ... from "mingo"`.
    const fromCongo = createRequire(require.resolve("@push.rocks/smartmongo/package.json"));
    const root = dirname(fromCongo.resolve("mingo/package.json"));
    const load = (path: string) => fromCongo(join(root, path)) as Record<string, unknown>;
    const internal = load("cjs/core/_internal.js") as { ComputeOptions?: ComputeOptionsClass; Context?: { init(ops: object): object } };
    const Query = load("cjs/query.js").Query as QueryClass | undefined;
    const Aggregator = load("cjs/aggregator.js").Aggregator as AggregatorClass | undefined;
    if (!internal.ComputeOptions || !internal.Context || !Query || !Aggregator) return null;
    // The table mingo's index module builds for its own Query and Aggregator.
    const ops: Record<string, Operators> = {};
    for (const type of ["accumulator", "expression", "pipeline", "projection", "query", "window"]) {
      ops[type] = { ...load(`cjs/operators/${type}/index.js`) };
    }
    const options = internal.ComputeOptions.init({ context: internal.Context.init(ops) });
    return { Query, Aggregator, options };
  } catch {
    return null;
  }
}

let installed: boolean | undefined;

/** Has CongoDB's engines build mingo queries from shared options; once per process. Whether it did. */
export function installSharedMingoOptions(engines: CongoEngines): boolean {
  if (installed !== undefined) return installed;
  const mingo = loadMingo();
  installed = mingo !== null;
  if (!mingo) return false;
  const { Query, Aggregator, options } = mingo;
  const q = engines.QueryEngine;
  const empty = (filter: unknown) => !filter || Object.keys(filter).length === 0;
  // Each as CongoDB's own (dist_ts/congodb/engine/QueryEngine.js), with the shared options.
  q.filter = (documents, filter) => {
    if (empty(filter)) return documents;
    const query = new Query(filter, options);
    return documents.filter((doc) => query.test(doc));
  };
  q.matches = (document, filter) => empty(filter) || new Query(filter, options).test(document);
  q.findOne = (documents, filter) => {
    if (empty(filter)) return documents[0] ?? null;
    const query = new Query(filter, options);
    return documents.find((doc) => query.test(doc)) ?? null;
  };
  const a = engines.AggregationEngine;
  const aggregate = a.aggregate.bind(a);
  a.aggregate = (documents, pipeline, opts) => {
    // A collation is an option of its own: that aggregation is built as CongoDB builds it.
    if (opts?.collation !== undefined) return aggregate(documents, pipeline, opts);
    if (!pipeline.length) return documents;
    const result = new Aggregator(pipeline, options).run(documents);
    return Array.isArray(result) ? (result as unknown[]) : [];
  };
  return true;
}
