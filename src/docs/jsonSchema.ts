/** zod 4 -> JSON Schema 2020-12 for the docs: schemas with a meta id become shared components, referenced by $ref. */
import { z } from "zod";

/** A JSON value, as JSON.parse returns it. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * A JSON Schema as zod writes it, typed by the keywords the docs generators read; every other keyword
 * (`exclusiveMinimum`, `propertyNames`, …) passes through untouched as `unknown`.
 */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  const?: JsonValue;
  enum?: JsonValue[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  maxItems?: number;
  default?: JsonValue;
  example?: JsonValue;
  [keyword: string]: unknown;
}

const REF_PREFIX = "#/components/schemas/";

const isObject = (node: unknown): node is Record<string, unknown> => typeof node === "object" && node !== null;

/** The same JSON with every `#/$defs/X` reference pointed at `#/components/schemas/X`. */
function rewriteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (isObject(node)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] = k === "$ref" && typeof v === "string" ? v.replace(/^#\/\$defs\//, REF_PREFIX) : rewriteRefs(v);
    }
    return out;
  }
  return node;
}

/** A schema rewritten by rewriteRefs: an object in, an object out, with the same keywords. */
const rewriteSchema = (schema: JsonSchema) => rewriteRefs(schema) as JsonSchema;

/** Collects components while converting; the same id with another shape is an error (two schemas, one name). */
export class SchemaSet {
  readonly components: Record<string, JsonSchema> = {};

  convert(schema: z.ZodType, io: "input" | "output"): JsonSchema {
    // zod writes a JSON Schema object (its own type is JSONSchema.BaseSchema, with wider keyword types than the docs read).
    const js = z.toJSONSchema(schema, { io, target: "draft-2020-12", unrepresentable: "any" }) as JsonSchema & {
      $defs?: Record<string, JsonSchema>;
    };
    const { $schema: _drop, $defs = {}, ...root } = js;
    for (const [id, def] of Object.entries($defs)) this.add(id, rewriteSchema(def));
    return rewriteSchema(root);
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
    const ref = schema.$ref;
    return ref?.startsWith(REF_PREFIX) ? (this.components[ref.slice(REF_PREFIX.length)] ?? schema) : schema;
  }
}

export const refName = (schema: JsonSchema): string | null =>
  typeof schema.$ref === "string" && schema.$ref.startsWith(REF_PREFIX) ? schema.$ref.slice(REF_PREFIX.length) : null;
