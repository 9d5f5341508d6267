/**
 * Query planning for the embedded store's hash indexes (see congoIndexes.ts). A plan only ever narrows a command to
 * a superset of the documents that can match: CongoDB's own filter still decides which of them do.
 *
 * Soundness rests on one property: values that CongoDB's matcher (mingo's isEqual) calls equal get the same key.
 * mingo compares primitives strictly (no number/string coercion), Dates by time and ObjectIds by hex, so the key is
 * the value's type plus its canonical text. Two different values may share a key (that only adds candidates), never
 * the other way round. Anything else (arrays, embedded documents, regexes, null, BSON wrappers) is not planned on.
 */

/** A field path set hashed by the index layer: one declared index's equality prefix. */
export interface FieldIndex {
  /** The declared index it comes from (key pattern), for explain output. */
  index: string;
  fields: string[];
  /** Key of the fields' values -> ids (hex) of the documents holding them. */
  buckets: Map<string, Set<string>>;
  /** Documents whose values cannot be keyed (an array or embedded document on the path): candidates for any lookup. */
  always: Set<string>;
}

/** Candidates of one filter: an estimate (exact for hash lookups) and a way to collect the ids. */
export interface Candidates {
  size: number;
  via: string;
  collect(into: Set<string>): void;
}

const MAX_KEYS = 256;

function isObjectId(v: unknown): v is { toHexString(): string } {
  return typeof v === "object" && v !== null && (v as { _bsontype?: unknown })._bsontype === "ObjectId";
}

/** The key of one scalar value, or undefined when the value is not one the plans handle. */
export function scalarKey(v: unknown): string | undefined {
  switch (typeof v) {
    case "string":
      return `s${v}`;
    case "number":
      return `n${String(v)}`; // String(-0) is "0", as mingo holds -0 equal to 0
    case "boolean":
      return v ? "bt" : "bf";
    default:
      if (v instanceof Date) return `d${String(v.getTime())}`;
      if (isObjectId(v)) return `o${v.toHexString()}`;
      return undefined;
  }
}

const MISSING = "-";

/** The key of several fields' value keys: one key per combination of values (exact counts rely on it). */
export function keyOf(parts: string[]): string {
  return parts.length === 1 ? parts[0] : JSON.stringify(parts);
}
const UNKEYABLE = Symbol("unkeyable");

/** A field's value in a document, or UNKEYABLE when the path crosses an array or a non-plain object. */
function valueAt(doc: Record<string, unknown>, field: string): unknown {
  let cur: unknown = doc;
  for (const part of field.includes(".") ? field.split(".") : [field]) {
    if (cur === null || cur === undefined) return cur;
    if (typeof cur !== "object" || Array.isArray(cur) || Object.getPrototypeOf(cur) !== Object.prototype) return UNKEYABLE;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

/**
 * A document's key for some fields: MISSING when a field is absent or null (no planned equality matches those),
 * undefined when some value cannot be keyed (the document is then a candidate for every lookup).
 */
export function documentKey(doc: Record<string, unknown>, fields: string[]): string | undefined {
  const parts: string[] = [];
  for (const field of fields) {
    const v = valueAt(doc, field);
    if (v === null || v === undefined) return MISSING;
    const k = scalarKey(v);
    if (k === undefined) return undefined;
    parts.push(k);
  }
  return keyOf(parts);
}

/**
 * A range over the last field of an index, within each key of its other fields. mingo compares only values of the
 * same type ($gte on a Date never matches a number), so Dates and numbers are kept in two sorted runs; arrays and
 * other unorderable values stay candidates of every range. Missing or null values match no bound and are left out.
 */
export interface OrderedIndex {
  index: string;
  prefix: string[];
  field: string;
  runs: Map<string, { d: Run; n: Run; others: Set<string> }>;
}

export interface Run {
  v: number[];
  ids: string[];
}

/** Where a document sits in an ordered index: its prefix key, and its kind and value in the field (or "x": other). */
export type OrderedPos = { key: string; kind: "d" | "n" | "x"; v: number } | undefined;

export function orderedPos(doc: Record<string, unknown>, oi: OrderedIndex): OrderedPos {
  const key = oi.prefix.length ? documentKey(doc, oi.prefix) : "[]";
  if (key === undefined) return { key: "*", kind: "x", v: 0 };
  const v = valueAt(doc, oi.field);
  if (v === null || v === undefined) return undefined;
  if (v instanceof Date && !Number.isNaN(v.getTime())) return { key, kind: "d", v: v.getTime() };
  if (typeof v === "number" && !Number.isNaN(v)) return { key, kind: "n", v };
  return { key, kind: "x", v: 0 };
}

/** First index whose value is >= v (strict: > v). */
export function bound(run: Run, v: number, strict: boolean): number {
  let lo = 0;
  let hi = run.v.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (run.v[mid] < v || (strict && run.v[mid] === v)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function orderedAdd(oi: OrderedIndex, pos: OrderedPos, id: string): void {
  if (!pos) return;
  let runs = oi.runs.get(pos.key);
  if (!runs) oi.runs.set(pos.key, (runs = { d: { v: [], ids: [] }, n: { v: [], ids: [] }, others: new Set() }));
  if (pos.kind === "x") runs.others.add(id);
  else {
    const run = runs[pos.kind];
    const at = bound(run, pos.v, true);
    run.v.splice(at, 0, pos.v);
    run.ids.splice(at, 0, id);
  }
}

export function orderedRemove(oi: OrderedIndex, pos: OrderedPos, id: string): void {
  const runs = pos && oi.runs.get(pos.key);
  if (!pos || !runs) return;
  if (pos.kind === "x") runs.others.delete(id);
  else {
    const run = runs[pos.kind];
    for (let i = bound(run, pos.v, false); i < run.v.length && run.v[i] === pos.v; i++) {
      if (run.ids[i] === id) {
        run.v.splice(i, 1);
        run.ids.splice(i, 1);
        break;
      }
    }
  }
}

/** The bounds of a range condition ($gt, $gte, $lt, $lte on Dates or on numbers), or undefined. */
function rangeOf(cond: unknown): { kind: "d" | "n"; lo: number; hi: number } | undefined {
  if (typeof cond !== "object" || cond === null || Object.getPrototypeOf(cond) !== Object.prototype) return undefined;
  let kind: "d" | "n" | undefined;
  let lo = -Infinity;
  let hi = Infinity;
  for (const [op, b] of Object.entries(cond as Record<string, unknown>)) {
    const k = b instanceof Date ? "d" : typeof b === "number" ? "n" : undefined;
    const v = b instanceof Date ? b.getTime() : typeof b === "number" ? b : NaN;
    if (!["$gt", "$gte", "$lt", "$lte"].includes(op) || !k || Number.isNaN(v) || (kind && k !== kind)) continue;
    kind = k;
    // Strict bounds are kept inclusive: a superset is enough.
    if (op.startsWith("$gt")) lo = Math.max(lo, v);
    else hi = Math.min(hi, v);
  }
  return kind ? { kind, lo, hi } : undefined;
}

/** Values an equality condition on one field allows ($eq, $in or a plain scalar), or undefined if not plannable. */
function equalityValues(cond: unknown): string[] | undefined {
  const direct = scalarKey(cond);
  if (direct !== undefined) return [direct];
  if (typeof cond !== "object" || cond === null || Array.isArray(cond) || Object.getPrototypeOf(cond) !== Object.prototype)
    return undefined;
  const ops = cond as Record<string, unknown>;
  if (Object.keys(ops).some((k) => !k.startsWith("$"))) return undefined;
  if ("$eq" in ops) {
    const k = scalarKey(ops.$eq);
    if (k !== undefined) return [k];
  }
  if (Array.isArray(ops.$in)) {
    const keys = ops.$in.map(scalarKey);
    if (keys.every((k): k is string => k !== undefined)) return keys;
  }
  return undefined;
}

/** Every combination of the fields' allowed values, as document keys; undefined when there are too many. */
function lookupKeys(values: string[][]): string[] | undefined {
  let combos: string[][] = [[]];
  for (const vs of values) {
    if (combos.length * vs.length > MAX_KEYS) return undefined;
    combos = combos.flatMap((c) => vs.map((v) => [...c, v]));
  }
  return combos.map(keyOf);
}

function union(parts: Candidates[]): Candidates {
  return {
    size: parts.reduce((n, p) => n + p.size, 0),
    via: parts.map((p) => p.via).join(" | "),
    collect: (into) => {
      for (const p of parts) p.collect(into);
    },
  };
}

function smallest(options: Candidates[]): Candidates | null {
  let best: Candidates | null = null;
  for (const c of options) if (!best || c.size < best.size) best = c;
  return best;
}

/**
 * The smallest candidate set the hash indexes give for a filter, or null when none applies (then the caller scans).
 * A conjunction may use any one of its conjuncts; a disjunction needs a plan for every branch.
 * `byId` answers an _id lookup: the ids that exist among the given hex ids.
 */
export function plan(
  filter: unknown,
  indexes: FieldIndex[],
  byId: (hex: string[]) => string[],
  ordered: OrderedIndex[] = [],
  build: (oi: OrderedIndex) => void = () => undefined,
): Candidates | null {
  if (typeof filter !== "object" || filter === null || Array.isArray(filter)) return null;
  const f = filter as Record<string, unknown>;
  const options: Candidates[] = [];
  const eq = new Map<string, string[]>();
  for (const [key, cond] of Object.entries(f)) {
    if (key === "$and" && Array.isArray(cond)) {
      for (const sub of cond) {
        const c = plan(sub, indexes, byId, ordered, build);
        if (c) options.push(c);
      }
    } else if (key === "$or" && Array.isArray(cond) && cond.length > 0) {
      // Each branch is planned with the conditions beside the $or (a branch alone may not name an index's prefix).
      const beside = Object.fromEntries(Object.entries(f).filter(([k]) => !k.startsWith("$")));
      const branches = cond.map((sub: unknown) =>
        typeof sub === "object" && sub !== null && !Array.isArray(sub) ? plan({ ...beside, ...sub }, indexes, byId, ordered, build) : null,
      );
      if (branches.every((b): b is Candidates => b !== null)) options.push(union(branches));
    } else if (key === "_id") {
      const values = equalityValues(cond);
      if (values?.every((v) => v.startsWith("o"))) {
        const ids = byId(values.map((v) => v.slice(1)));
        options.push({ size: ids.length, via: "_id_", collect: (into) => ids.forEach((id) => into.add(id)) });
      }
    } else if (!key.startsWith("$")) {
      const values = equalityValues(cond);
      if (values) eq.set(key, values);
    }
  }
  for (const fi of indexes) {
    const values = fi.fields.map((field) => eq.get(field));
    if (!values.every((v): v is string[] => v !== undefined)) continue;
    const keys = lookupKeys(values);
    if (!keys) continue;
    const size = keys.reduce((n, k) => n + (fi.buckets.get(k)?.size ?? 0), fi.always.size);
    options.push({
      size,
      via: `${fi.index} on ${fi.fields.join(", ")}`,
      collect: (into) => {
        for (const k of keys) fi.buckets.get(k)?.forEach((id) => into.add(id));
        fi.always.forEach((id) => into.add(id));
      },
    });
  }
  for (const oi of ordered) {
    const range = rangeOf(f[oi.field]);
    const values = oi.prefix.map((field) => eq.get(field));
    if (!range || !values.every((v): v is string[] => v !== undefined)) continue;
    const keys = oi.prefix.length ? lookupKeys(values) : ["[]"];
    if (!keys) continue;
    build(oi);
    const slices = [...keys, "*"].flatMap((k) => {
      const runs = oi.runs.get(k);
      if (!runs) return [];
      const run = runs[range.kind];
      return [{ run, from: bound(run, range.lo, false), to: bound(run, range.hi, true), others: runs.others }];
    });
    options.push({
      size: slices.reduce((n, x) => n + x.to - x.from + x.others.size, 0),
      via: `${oi.index} on ${[...oi.prefix, oi.field].join(", ")} (range)`,
      collect: (into) => {
        for (const x of slices) {
          for (let i = x.from; i < x.to; i++) into.add(x.run.ids[i]);
          x.others.forEach((id) => into.add(id));
        }
      },
    });
  }
  return smallest(options);
}

// ---------------------------------------------------------------- building the indexes from declared specs

export interface IndexSpec {
  name: string;
  key: Record<string, number>;
  unique: boolean;
}

/** The fields the hash and range indexes use: a trailing _id only breaks sort ties, which CongoDB's own sort does. */
export function keyFields(spec: IndexSpec): string[] | null {
  const fields = Object.keys(spec.key);
  if (fields.length > 1 && fields[fields.length - 1] === "_id") fields.pop();
  if (fields.length === 0 || fields.includes("_id") || Object.values(spec.key).some((d) => d !== 1 && d !== -1)) return null;
  return fields;
}

export function fieldIndexes(specs: IndexSpec[]): FieldIndex[] {
  const out = new Map<string, FieldIndex>();
  for (const spec of specs) {
    const fields = keyFields(spec);
    if (!fields) continue;
    // Every equality prefix; the whole key only when unique or single-field (a key ending in a timestamp is unique
    // per document and would only cost memory).
    const last = spec.unique || fields.length === 1 ? fields.length : fields.length - 1;
    for (let n = 1; n <= last; n++) {
      const prefix = fields.slice(0, n);
      const id = prefix.join("\u0000");
      if (!out.has(id)) {
        const pattern = Object.entries(spec.key)
          .map(([f, d]) => `${f}: ${d}`)
          .join(", ");
        out.set(id, { index: `{ ${pattern} }`, fields: prefix, buckets: new Map(), always: new Set() });
      }
    }
  }
  return [...out.values()];
}

/** One range index per declared index: its last field, ordered within each key of the fields before it. */
export function orderedIndexes(specs: IndexSpec[]): OrderedIndex[] {
  const out = new Map<string, OrderedIndex>();
  for (const spec of specs) {
    const fields = keyFields(spec);
    if (!fields) continue;
    const id = fields.join("\u0000");
    const pattern = Object.entries(spec.key)
      .map(([f, d]) => `${f}: ${d}`)
      .join(", ");
    if (!out.has(id))
      out.set(id, { index: `{ ${pattern} }`, prefix: fields.slice(0, -1), field: fields[fields.length - 1], runs: new Map() });
  }
  return [...out.values()];
}

export function addKey(fi: FieldIndex, key: string | undefined, id: string): void {
  if (key === undefined) fi.always.add(id);
  else {
    let set = fi.buckets.get(key);
    if (!set) fi.buckets.set(key, (set = new Set()));
    set.add(id);
  }
}

export function removeKey(fi: FieldIndex, key: string | undefined, id: string): void {
  if (key === undefined) fi.always.delete(id);
  else {
    const set = fi.buckets.get(key);
    set?.delete(id);
    if (set?.size === 0) fi.buckets.delete(key);
  }
}
