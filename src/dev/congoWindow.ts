/**
 * Exact answers from the embedded store's indexes (see congoIndexes.ts), for the shapes a paginated list asks:
 *
 * - A sorted window: a find whose filter is exactly single equalities on a range index's prefix (and at most a range
 *   on its field), sorted first on that field, with a limit, needs only the matches from its skip to skip+limit in
 *   that field's order, widened to every match tied with the first and the last of them. Those are a contiguous run
 *   of the whole sorted answer, after `skipped` matches: CongoDB's own sort over them, skipping skip - skipped, then
 *   limiting, gives the answer of a scan, whatever the later sort keys (the ledger's _id).
 * - A count: a filter of exactly single equalities on a hash index's fields matches exactly that index's bucket.
 *
 * Both hold only when every document is keyable on those fields and every match sits in one sorted run (no arrays,
 * missing values or mixed types): otherwise they answer null and the caller falls back to its superset plan.
 * Exactness rests on keys being equal exactly when mingo calls the values equal (congoPlan.ts), NaN aside.
 */
import { bound, keyOf, scalarKey, type FieldIndex, type OrderedIndex, type Run } from "./congoPlan";

/** What a find asks beyond its filter (CongoDB reads `skip || 0` and `limit || 0`). */
export interface FindWindow {
  sort?: unknown;
  skip?: unknown;
  limit?: unknown;
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

/** The key of one single-valued equality (a scalar or { $eq: scalar }); undefined for anything else. */
function equalityKey(cond: unknown): string | undefined {
  const v = isPlain(cond) && Object.keys(cond).length === 1 && "$eq" in cond ? cond.$eq : cond;
  if ((typeof v === "number" && Number.isNaN(v)) || (v instanceof Date && Number.isNaN(v.getTime()))) return undefined;
  return scalarKey(v);
}

/** The key of the filter's equalities on `fields`, when the filter has exactly those fields (plus `extra`). */
function exactKey(filter: Record<string, unknown>, fields: string[], extra?: string): string | undefined {
  const names = Object.keys(filter);
  if (names.length > fields.length + 1 || !names.every((n) => fields.includes(n) || n === extra)) return undefined;
  const parts: string[] = [];
  for (const field of fields) {
    if (!(field in filter)) return undefined;
    const k = equalityKey(filter[field]);
    if (k === undefined) return undefined;
    parts.push(k);
  }
  return keyOf(parts);
}

/** The slice of a run that a range condition matches exactly ($gt, $gte, $lt, $lte on one kind), or null. */
function rangeSlice(cond: unknown, runs: { d: Run; n: Run }): { run: Run; from: number; to: number } | null {
  if (!isPlain(cond) || Object.keys(cond).length === 0) return null;
  let kind: "d" | "n" | undefined;
  const bounds: [string, number][] = [];
  for (const [op, b] of Object.entries(cond)) {
    const k = b instanceof Date ? "d" : typeof b === "number" ? "n" : undefined;
    const v = b instanceof Date ? b.getTime() : typeof b === "number" ? b : NaN;
    if (!["$gt", "$gte", "$lt", "$lte"].includes(op) || !k || Number.isNaN(v) || (kind && k !== kind)) return null;
    kind = k;
    bounds.push([op, v]);
  }
  if (!kind) return null;
  const run = runs[kind];
  let from = 0;
  let to = run.v.length;
  for (const [op, v] of bounds) {
    if (op === "$gt") from = Math.max(from, bound(run, v, true));
    else if (op === "$gte") from = Math.max(from, bound(run, v, false));
    else if (op === "$lt") to = Math.min(to, bound(run, v, false));
    else to = Math.min(to, bound(run, v, true));
  }
  return { run, from, to: Math.max(from, to) };
}

const sameFields = (a: string[], b: string[]) => a.length === b.length && a.every((f, i) => f === b[i]);

/**
 * The ids (hex) of the documents a sorted find needs, how many matches sort before them, and the index giving them;
 * null when its shape or the data does not allow it.
 * `build` makes sure a range index is built before it is read.
 */
export function sortedWindow(
  filter: unknown,
  win: FindWindow,
  indexes: FieldIndex[],
  ordered: OrderedIndex[],
  build: (oi: OrderedIndex) => void,
): { ids: string[]; skipped: number; via: string } | null {
  const skip = win.skip ?? 0;
  if (!isPlain(filter) || !isPlain(win.sort) || !isCount(win.limit) || win.limit === 0 || !isCount(skip)) return null;
  const [first, dir] = Object.entries(win.sort)[0] ?? [];
  if (dir !== 1 && dir !== -1) return null;
  for (const oi of ordered) {
    if (oi.field !== first || oi.prefix.length === 0) continue;
    const key = exactKey(filter, oi.prefix, oi.field);
    const via = `${oi.index} on ${[...oi.prefix, oi.field].join(", ")} (sorted window)`;
    const fi = indexes.find((i) => sameFields(i.fields, oi.prefix));
    if (key === undefined || !fi || fi.always.size > 0) continue;
    build(oi);
    const runs = oi.runs.get(key);
    const matching = fi.buckets.get(key)?.size ?? 0;
    let slice: { run: Run; from: number; to: number } | null;
    if (runs && runs.others.size > 0) continue;
    if (oi.field in filter) {
      if (!runs)
        return rangeSlice(filter[oi.field], { d: { v: [], ids: [] }, n: { v: [], ids: [] } }) ? { ids: [], skipped: 0, via } : null;
      slice = rangeSlice(filter[oi.field], runs);
    } else {
      // Every match must sit in one run: a missing value or a second type would sort outside it.
      const run = runs && (runs.d.v.length > 0 ? runs.d : runs.n);
      if (matching === 0) return { ids: [], skipped: 0, via };
      slice = run && run.v.length === matching ? { run, from: 0, to: run.v.length } : null;
    }
    if (!slice) continue;
    const { run, from, to } = slice;
    // [lo, hi) of the run: the page's first and last matches, widened to their ties.
    const want = Math.min(to - from, skip + win.limit);
    const start = Math.min(to - from, skip);
    let lo = dir === 1 ? from + start : to - want;
    let hi = dir === 1 ? from + want : to - start;
    while (lo > from && lo < to && run.v[lo - 1] === run.v[lo]) lo--;
    while (hi < to && hi > from && run.v[hi] === run.v[hi - 1]) hi++;
    return { ids: run.ids.slice(lo, hi), skipped: dir === 1 ? lo - from : to - hi, via };
  }
  return null;
}

/** How many documents a filter of exactly single equalities on a hash index's fields matches, or null. */
export function exactCount(filter: unknown, indexes: FieldIndex[]): number | null {
  if (!isPlain(filter)) return null;
  const names = Object.keys(filter);
  for (const fi of indexes) {
    if (fi.fields.length !== names.length || fi.always.size > 0) continue;
    const key = exactKey(filter, fi.fields);
    if (key !== undefined) return fi.buckets.get(key)?.size ?? 0;
  }
  return null;
}

/** The count a driver's countDocuments pipeline ($match, optional $skip and $limit, $group { _id: 1, n: { $sum: 1 } }) asks. */
export function countPipeline(pipeline: unknown): { filter: unknown; skip: number; limit: number } | null {
  if (!Array.isArray(pipeline) || pipeline.length < 2) return null;
  const stages = pipeline as unknown[];
  const only = (stage: unknown, name: string): unknown =>
    isPlain(stage) && Object.keys(stage).length === 1 && name in stage ? stage[name] : undefined;
  const filter = only(stages[0], "$match");
  const group = only(stages[stages.length - 1], "$group");
  if (!isPlain(filter) || !isPlain(group) || JSON.stringify(group) !== JSON.stringify({ _id: 1, n: { $sum: 1 } })) return null;
  let skip = 0;
  let limit = 0;
  const middle = stages.slice(1, -1);
  if (middle.length > 2) return null;
  for (const [i, stage] of middle.entries()) {
    const s = only(stage, "$skip");
    const l = only(stage, "$limit");
    if (isCount(s) && i === 0 && skip === 0) skip = s;
    else if (isCount(l) && l > 0 && i === middle.length - 1) limit = l;
    else return null;
  }
  return { filter, skip, limit };
}

/** A count after skip and limit (0: no limit). */
export function windowed(n: number, skip: number, limit: number): number {
  const left = Math.max(0, n - skip);
  return limit > 0 ? Math.min(left, limit) : left;
}
