/**
 * Bounds for what a seller (or an agent) sends us before it is answered or stored: a JSON value deeper than the
 * bound cannot be serialised (JSON.stringify recurses) nor kept by the store (MongoDB refuses deep or `$`-keyed
 * documents, and the embedded server fails on them), so such a value is kept as a bounded string instead.
 */
export const MAX_JSON_DEPTH = 32;

/** The nesting depth of a JSON value, measured without recursion; stops counting past `limit`. */
export function jsonDepth(value: unknown, limit = Number.MAX_SAFE_INTEGER): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [v, d] = top;
    if (v === null || typeof v !== "object") continue;
    if (d > max) max = d;
    if (max > limit) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) stack.push([child, d + 1]);
  }
  return max;
}

/** Whether an object key could not be stored as a MongoDB field name. */
function badKey(key: string): boolean {
  return key.startsWith("$") || key.includes(".") || key.includes("\0");
}

function hasBadKey(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (v === null || typeof v !== "object") continue;
    if (!Array.isArray(v) && Object.keys(v).some(badKey)) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) stack.push(child);
  }
  return false;
}

/**
 * The value itself when it is shallow enough and every key is storable; otherwise its JSON text (or `raw`, the text
 * it was parsed from), cut to `maxChars`, so it can still be shown, answered and stored.
 */
export function boundedJson(value: unknown, opts: { maxDepth?: number; maxChars?: number; raw?: string } = {}): unknown {
  const maxDepth = opts.maxDepth ?? MAX_JSON_DEPTH;
  const maxChars = opts.maxChars ?? 1_000_000;
  if (value === null || typeof value !== "object") {
    return typeof value === "string" && value.length > maxChars ? value.slice(0, maxChars) : value;
  }
  if (jsonDepth(value, maxDepth) <= maxDepth && !hasBadKey(value)) return value;
  const text = opts.raw ?? safeStringify(value);
  return text.length > maxChars ? text.slice(0, maxChars) : text;
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "null";
  } catch {
    return "[unserialisable JSON]";
  }
}
