/** zod 4 -> JSON Schema 2020-12 for the docs: schemas with a meta id become shared components, referenced by $ref. */
import { z } from "zod";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a JSON Schema is arbitrary JSON, walked and rewritten by key
export type JsonSchema = Record<string, any>;

const REF_PREFIX = "#/components/schemas/";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- returns arbitrary JSON (see JsonSchema)
function rewriteRefs(node: unknown): any {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node && typeof node === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] = k === "$ref" && typeof v === "string" ? v.replace(/^#\/\$defs\//, REF_PREFIX) : rewriteRefs(v);
    }
    return out;
  }
  return node;
}

/** Collects components while converting; the same id with another shape is an error (two schemas, one name). */
export class SchemaSet {
  readonly components: Record<string, JsonSchema> = {};

  convert(schema: z.ZodType, io: "input" | "output"): JsonSchema {
    const js = z.toJSONSchema(schema, { io, target: "draft-2020-12", unrepresentable: "any" }) as JsonSchema;
    const { $schema: _drop, $defs = {}, ...root } = js;
    for (const [id, def] of Object.entries($defs as Record<string, JsonSchema>)) this.add(id, rewriteRefs(def));
    return rewriteRefs(root);
  }

  private add(id: string, schema: JsonSchema): void {
    const existing = this.components[id];
    if (existing && JSON.stringify(existing) !== JSON.stringify(schema)) {
      throw new Error(`Two different schemas share the id "${id}" (is one used as input and as output?)`);
    }
    this.components[id] = schema;
  }

  /** The component a $ref points to, or the schema itself. */
  resolve(schema: JsonSchema): JsonSchema {
    const ref = schema.$ref as string | undefined;
    return ref?.startsWith(REF_PREFIX) ? (this.components[ref.slice(REF_PREFIX.length)] ?? schema) : schema;
  }
}

export const refName = (schema: JsonSchema): string | null =>
  typeof schema.$ref === "string" && schema.$ref.startsWith(REF_PREFIX) ? schema.$ref.slice(REF_PREFIX.length) : null;
