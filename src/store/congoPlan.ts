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

/**
 * A document's key for some fields: MISSING when a field is absent or null (no planned equality matches those),
 * undefined when some value cannot be keyed (the document is then a candidate for every lookup).
 */
export function documentKey(doc: Record<string, unknown>, fields: string[]): string | undefined {
  const parts: string[] = [];
  for (const field of fields) {
    let cur: unknown = doc;
    for (const part of field.split(".")) {
      if (cur === null || cur === undefined) break;
      if (typeof cur !== "object" || Array.isArray(cur) || Object.getPrototypeOf(cur) !== Object.prototype) return undefined;
      cur = (cur as Record<string, unknown>)[part];
    }
    if (cur === null || cur === undefined) return MISSING;
    const k = scalarKey(cur);
    if (k === undefined) return undefined;
    parts.push(k);
  }
  return JSON.stringify(parts);
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
  return combos.map((c) => JSON.stringify(c));
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
export function plan(filter: unknown, indexes: FieldIndex[], byId: (hex: string[]) => string[]): Candidates | null {
  if (typeof filter !== "object" || filter === null || Array.isArray(filter)) return null;
  const f = filter as Record<string, unknown>;
  const options: Candidates[] = [];
  const eq = new Map<string, string[]>();
  for (const [key, cond] of Object.entries(f)) {
    if (key === "$and" && Array.isArray(cond)) {
      for (const sub of cond) {
        const c = plan(sub, indexes, byId);
        if (c) options.push(c);
      }
    } else if (key === "$or" && Array.isArray(cond) && cond.length > 0) {
      const branches = cond.map((sub) => plan(sub, indexes, byId));
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
  return smallest(options);
}
