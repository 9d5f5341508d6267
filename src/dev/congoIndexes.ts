/**
 * Index use for the embedded store. CongoDB (@push.rocks/smartmongo 2.2.0) answers find, count, distinct, update,
 * delete, findAndModify and aggregate by running its filter over every document of the collection (its IndexEngine
 * is built but never consulted), so each read and each conditional write slowed down as the ledger grew.
 *
 * This patch, installed on one CongoServer instance, keeps hash indexes on the equality prefixes of the indexes the
 * application declares (recorded from its createIndexes commands), maintained by wrapping the storage adapter's
 * writes. For each of those commands, CongoDB's own handler then sees, instead of the whole collection, only the
 * documents that can match its filter, in storage order: a superset of the matches, so its filter, sort, skip,
 * limit, upsert and update steps give exactly the answer of a scan (test/store/congoIndexes.test.ts checks this).
 * A sorted, limited find on an index's prefix gets only the window it needs, and a count of an index's equalities is
 * answered from the index (congoWindow.ts; test/store/congoWindow.test.ts).
 * Every step stays synchronous between the adapter's calls, so a conditional findAndModify is as atomic as before.
 * Production runs on MongoDB, which uses the same declared indexes itself.
 */
import {
  addKey,
  documentKey,
  fieldIndexes,
  orderedAdd,
  orderedIndexes,
  orderedPos,
  orderedRemove,
  plan,
  removeKey,
  type Candidates,
  type FieldIndex,
  type IndexSpec,
  type OrderedIndex,
  type OrderedPos,
} from "./congoPlan";
import { countPipeline, exactCount, sortedWindow, windowed, type FindWindow } from "./congoWindow";

export type { FindWindow };

type Doc = Record<string, unknown> & { _id: { toHexString(): string } };
type Collections = Map<string, Map<string, Map<string, Doc>>>;

/** The parts of CongoDB's MemoryStorageAdapter this patch uses (private in its typings). */
interface Storage {
  databases: Collections;
  findAll(db: string, coll: string): Promise<Doc[]>;
  insertOne(db: string, coll: string, doc: Record<string, unknown>): Promise<Doc>;
  updateById(db: string, coll: string, id: { toHexString(): string }, doc: Doc): Promise<boolean>;
  deleteById(db: string, coll: string, id: { toHexString(): string }): Promise<boolean>;
  dropCollection(db: string, coll: string): Promise<boolean>;
  dropDatabase(db: string): Promise<boolean>;
  renameCollection(db: string, from: string, to: string): Promise<void>;
}

interface Context {
  storage: Storage;
  database: string;
  command: Record<string, unknown>;
  documentSequences?: Map<string, Record<string, unknown>[]>;
}

interface Handler {
  handle(context: Context): Promise<unknown>;
}

/** What this patch needs of a CongoServer: its storage and its command router's handlers. */
export interface PatchableServer {
  getStorage(): unknown;
}

interface CollState {
  indexes: FieldIndex[];
  /** Range indexes, each built when a query first needs it. */
  ordered: { oi: OrderedIndex; built: boolean }[];
  /** id (hex) -> insertion sequence (the storage's iteration order), its key in each field index, its range positions. */
  docs: Map<string, { seq: number; keys: (string | undefined)[]; pos: OrderedPos[] }>;
  next: number;
}

/** How a filter would be answered: the index and the number of candidates, or a scan of the whole collection. */
export interface Explained {
  index: string | null;
  candidates: number;
  collection: number;
}

export interface EmbeddedIndexes {
  /** With a find's sort, skip and limit: the sorted window it would get, when it gets one. */
  explain(db: string, coll: string, filter: Record<string, unknown>, win?: FindWindow): Explained;
  /** Commands narrowed by an index, those of them given only a sorted window, counts answered by an index, scans. */
  stats: { narrowed: number; windowed: number; counted: number; scanned: number };
}

const NARROWED = ["find", "count", "distinct", "update", "delete", "findAndModify", "aggregate"];

/** Installs the index layer on a CongoServer created with memory storage, before it serves any command. */
export function installEmbeddedIndexes(server: PatchableServer): EmbeddedIndexes {
  const storage = server.getStorage() as Storage;
  const router = (server as unknown as { commandRouter: { handlers: Map<string, Handler> } }).commandRouter;
  const specs = new Map<string, IndexSpec[]>();
  const states = new Map<string, CollState>();
  const stats = { narrowed: 0, windowed: 0, counted: 0, scanned: 0 };
  const ns = (db: string, coll: string) => `${db}.${coll}`;
  const collection = (db: string, coll: string) => storage.databases.get(db)?.get(coll);

  const track = (st: CollState, id: string, doc: Doc) => {
    const keys = st.indexes.map((fi) => documentKey(doc, fi.fields));
    st.indexes.forEach((fi, i) => addKey(fi, keys[i], id));
    const pos = st.ordered.map((o) => (o.built ? orderedPos(doc, o.oi) : undefined));
    st.ordered.forEach((o, i) => orderedAdd(o.oi, pos[i], id));
    st.docs.set(id, { seq: st.next++, keys, pos });
  };
  const untrack = (st: CollState, id: string) => {
    const entry = st.docs.get(id);
    if (!entry) return;
    st.indexes.forEach((fi, i) => removeKey(fi, entry.keys[i], id));
    st.ordered.forEach((o, i) => orderedRemove(o.oi, entry.pos[i], id));
    st.docs.delete(id);
  };
  const build = (st: CollState, docs: Map<string, Doc>, oi: OrderedIndex) => {
    const i = st.ordered.findIndex((o) => o.oi === oi);
    if (i < 0 || st.ordered[i].built) return;
    st.ordered[i].built = true;
    for (const [id, entry] of st.docs) {
      const doc = docs.get(id);
      entry.pos[i] = doc ? orderedPos(doc, oi) : undefined;
      orderedAdd(oi, entry.pos[i], id);
    }
  };

  /** The collection's index state, built on first use and rebuilt if a write ever went around this layer. */
  const stateOf = (db: string, coll: string): CollState | undefined => {
    const docs = collection(db, coll);
    if (!docs) return undefined;
    let st = states.get(ns(db, coll));
    if (st?.docs.size !== docs.size) {
      const declared = specs.get(ns(db, coll)) ?? [];
      st = {
        indexes: fieldIndexes(declared),
        ordered: orderedIndexes(declared).map((oi) => ({ oi, built: false })),
        docs: new Map(),
        next: 0,
      };
      for (const [id, doc] of docs) track(st, id, doc);
      states.set(ns(db, coll), st);
    }
    return st;
  };

  const candidatesOf = (db: string, coll: string, filter: unknown): { c: Candidates; st: CollState } | null => {
    const st = stateOf(db, coll);
    const docs = collection(db, coll);
    if (!st || !docs) return null;
    const c = plan(
      filter ?? {},
      st.indexes,
      (hex) => hex.filter((h) => docs.has(h)),
      st.ordered.map((o) => o.oi),
      (oi) => build(st, docs, oi),
    );
    // A lookup that keeps most of a large collection gains nothing over the scan.
    return c && (c.size * 2 <= docs.size || docs.size <= 64) ? { c, st } : null;
  };

  /** The window a sorted, limited find needs (congoWindow.ts), or null. */
  /** Documents by id, in storage order (as a scan reads them: it decides ties of the sort). */
  const inStorageOrder = (st: CollState, docs: Map<string, Doc>, ids: Iterable<string>): Doc[] => {
    const seq = (id: string) => st.docs.get(id)?.seq ?? 0;
    return [...ids].sort((a, b) => seq(a) - seq(b)).flatMap((id) => docs.get(id) ?? []);
  };

  /** The documents a sorted, limited find needs (congoWindow.ts) and what is left of its skip before them, or null. */
  const windowOf = (db: string, coll: string, filter: unknown, win: FindWindow): { docs: Doc[]; via: string; skip: number } | null => {
    const st = stateOf(db, coll);
    const docs = collection(db, coll);
    if (!st || !docs) return null;
    const ordered = st.ordered.map((o) => o.oi);
    const found = sortedWindow(filter, win, st.indexes, ordered, (oi) => build(st, docs, oi));
    const skip = (typeof win.skip === "number" ? win.skip : 0) - (found?.skipped ?? 0);
    return found && { docs: inStorageOrder(st, docs, found.ids), via: found.via, skip };
  };

  const narrowedFindAll = async (db: string, coll: string, filter: unknown): Promise<Doc[]> => {
    const found = candidatesOf(db, coll, filter);
    const docs = collection(db, coll);
    if (!found || !docs) {
      stats.scanned++;
      return storage.findAll(db, coll);
    }
    stats.narrowed++;
    const ids = new Set<string>();
    found.c.collect(ids);
    return inStorageOrder(found.st, docs, ids);
  };

  /** A count command's or countDocuments pipeline's answer from an index, or null to let CongoDB count. */
  const countOf = (context: Context): { coll: string; n: number } | null => {
    const { command, database } = context;
    const asked =
      typeof command.count === "string"
        ? { coll: command.count, filter: command.query ?? {}, skip: command.skip ?? 0, limit: command.limit ?? 0 }
        : typeof command.aggregate === "string"
          ? { coll: command.aggregate, ...countPipeline(command.pipeline) }
          : null;
    const { skip, limit } = asked ?? {};
    if (!asked || !("filter" in asked) || !Number.isSafeInteger(skip) || !Number.isSafeInteger(limit)) return null;
    const st = stateOf(database, asked.coll);
    const n = st ? exactCount(asked.filter, st.indexes) : null;
    // As CongoDB reads them: a skip or limit that is not positive is none.
    return n === null ? null : { coll: asked.coll, n: windowed(n, Math.max(0, skip as number), Math.max(0, limit as number)) };
  };

  // Writes: every document change goes through these adapter methods; the index follows synchronously.
  const insertOne = storage.insertOne.bind(storage);
  const updateById = storage.updateById.bind(storage);
  const deleteById = storage.deleteById.bind(storage);
  const dropCollection = storage.dropCollection.bind(storage);
  const dropDatabase = storage.dropDatabase.bind(storage);
  const renameCollection = storage.renameCollection.bind(storage);
  storage.insertOne = (db, coll, doc) => {
    const result = insertOne(db, coll, doc);
    const st = states.get(ns(db, coll));
    const id = doc._id as Doc["_id"] | undefined;
    if (st && typeof id?.toHexString === "function") {
      const hex = id.toHexString();
      const stored = collection(db, coll)?.get(hex);
      if (stored && !st.docs.has(hex)) track(st, hex, stored);
    }
    return result;
  };
  storage.updateById = (db, coll, id, doc) => {
    const st = states.get(ns(db, coll));
    const hex = id.toHexString();
    const existed = collection(db, coll)?.has(hex) ?? false;
    const result = updateById(db, coll, id, doc);
    if (st && existed) {
      const seq = st.docs.get(hex)?.seq;
      untrack(st, hex);
      track(st, hex, doc);
      // An update keeps the document's place in the storage's order.
      const entry = st.docs.get(hex);
      if (entry && seq !== undefined) entry.seq = seq;
    }
    return result;
  };
  storage.deleteById = (db, coll, id) => {
    const st = states.get(ns(db, coll));
    if (st) untrack(st, id.toHexString());
    return deleteById(db, coll, id);
  };
  storage.dropCollection = (db, coll) => {
    specs.delete(ns(db, coll));
    states.delete(ns(db, coll));
    return dropCollection(db, coll);
  };
  storage.dropDatabase = (db) => {
    for (const key of [...specs.keys(), ...states.keys()]) {
      if (key.startsWith(`${db}.`)) {
        specs.delete(key);
        states.delete(key);
      }
    }
    return dropDatabase(db);
  };
  storage.renameCollection = (db, from, to) => {
    const moved = specs.get(ns(db, from));
    specs.delete(ns(db, from));
    if (moved) specs.set(ns(db, to), moved);
    states.delete(ns(db, from));
    states.delete(ns(db, to));
    return renameCollection(db, from, to);
  };

  const recordIndexes = (context: Context) => {
    const { command, database } = context;
    if (typeof command.createIndexes === "string" && Array.isArray(command.indexes)) {
      const key = ns(database, command.createIndexes);
      const list = specs.get(key) ?? [];
      for (const raw of command.indexes as { name?: unknown; key?: unknown; unique?: unknown }[]) {
        if (typeof raw.key !== "object" || raw.key === null) continue;
        const name = typeof raw.name === "string" ? raw.name : JSON.stringify(raw.key);
        if (list.some((s) => s.name === name)) continue;
        list.push({ name, key: raw.key as Record<string, number>, unique: raw.unique === true });
      }
      specs.set(key, list);
      states.delete(key);
    } else if (typeof command.dropIndexes === "string") {
      const key = ns(database, command.dropIndexes);
      const which = command.index;
      const keep = (s: IndexSpec) =>
        which === "*" ? false : typeof which === "string" ? s.name !== which : JSON.stringify(s.key) !== JSON.stringify(which);
      specs.set(key, (specs.get(key) ?? []).filter(keep));
      states.delete(key);
    }
  };

  /** The filters of a command, in the order its handler reads the collection (one findAll per filter). */
  const filtersOf = (context: Context): { coll: string; filters: unknown[]; window?: FindWindow } | null => {
    const { command, documentSequences } = context;
    const name = NARROWED.find((n) => typeof command[n] === "string");
    if (!name) return null;
    const coll = command[name] as string;
    const specsOf = (field: string) => documentSequences?.get(field) ?? (command[field] as Record<string, unknown>[] | undefined) ?? [];
    switch (name) {
      case "find":
        return { coll, filters: [command.filter], window: { sort: command.sort, skip: command.skip, limit: command.limit } };
      case "count":
      case "distinct":
      case "findAndModify":
        return { coll, filters: [command.query] };
      case "update":
        return { coll, filters: specsOf("updates").map((u) => u.q || u.filter) };
      case "delete":
        return { coll, filters: specsOf("deletes").map((d) => d.q || d.filter) };
      default: {
        const first = Array.isArray(command.pipeline) ? (command.pipeline[0] as Record<string, unknown> | undefined) : undefined;
        return first && typeof first.$match === "object" ? { coll, filters: [first.$match] } : null;
      }
    }
  };

  const wrapped = new Set<Handler>();
  for (const name of [...NARROWED, "createIndexes", "dropIndexes"]) {
    const handler = router.handlers.get(name);
    if (!handler || wrapped.has(handler)) continue;
    wrapped.add(handler);
    const handle = handler.handle.bind(handler);
    handler.handle = (context) => {
      recordIndexes(context);
      const counted = countOf(context);
      if (counted) stats.counted++;
      if (counted && typeof context.command.count === "string") return Promise.resolve({ ok: 1, n: counted.n });
      const narrowing = counted ? { coll: counted.coll, filters: [] } : filtersOf(context);
      if (!narrowing) return handle(context);
      const pending = [...narrowing.filters];
      // A window is read now, in this synchronous step (the documents as they are), and CongoDB skips only what is
      // left of the skip once the matches sorted before the window are not handed to it.
      const win = narrowing.window ? windowOf(context.database, narrowing.coll, pending[0], narrowing.window) : null;
      let command = context.command;
      if (win) {
        stats.narrowed++;
        stats.windowed++;
        command = { ...command, skip: win.skip };
      }
      // Each read of the command's collection gets the next filter's candidates (or, for a counted pipeline, nothing:
      // CongoDB then builds the response, and the index's count goes in); any other read is untouched.
      const narrowed = new Proxy(context.storage, {
        get(target, prop, receiver) {
          if (prop === "findAll") {
            return async (db: string, coll: string) =>
              db !== context.database || coll !== narrowing.coll
                ? target.findAll(db, coll)
                : counted
                  ? []
                  : pending.length > 0
                    ? win
                      ? (pending.shift(), win.docs)
                      : narrowedFindAll(db, coll, pending.shift())
                    : target.findAll(db, coll);
          }
          const value: unknown = Reflect.get(target, prop, receiver);
          return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      const answer = handle({ ...context, command, storage: narrowed });
      if (!counted) return answer;
      return answer.then((r) => {
        const cursor = (r as { cursor?: { firstBatch?: unknown[] } }).cursor;
        if (cursor) cursor.firstBatch = counted.n > 0 ? [{ _id: 1, n: counted.n }] : [];
        return r;
      });
    };
  }

  return {
    stats,
    explain: (db, coll, filter, win) => {
      const w = win ? windowOf(db, coll, filter, win) : null;
      if (w) return { index: w.via, candidates: w.docs.length, collection: collection(db, coll)?.size ?? 0 };
      const found = candidatesOf(db, coll, filter);
      return {
        index: found ? found.c.via : null,
        candidates: found ? found.c.size : (collection(db, coll)?.size ?? 0),
        collection: collection(db, coll)?.size ?? 0,
      };
    },
  };
}
