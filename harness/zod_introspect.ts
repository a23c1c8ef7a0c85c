/**
 * Zod schema introspection the way swamp does it: shape lookup, CLI-string
 * coercion, lenient global-argument parsing and error formatting.
 *
 * Behaviour read from swamp-club/swamp `src/domain/models/zod_type_coercion.ts`
 * (coerceMethodArgs, getObjectShape, isRecordSchema,
 * parseGlobalArgumentsLeniently) and `method_execution_service.ts`
 * (formatZodError).
 *
 * @module
 */

import { z } from "npm:zod@4";

interface ZodDefLike {
  type?: string;
  innerType?: z.ZodType;
  schema?: z.ZodType;
  shape?: Record<string, z.ZodType>;
}

function defOf(schema: z.ZodType): ZodDefLike {
  return (schema as unknown as { _def?: ZodDefLike })._def ?? {};
}

/** Zod v4 `_def.type` of a schema ("object", "optional", "pipe", ...). */
export function schemaType(schema: z.ZodType): string {
  return defOf(schema).type ?? "";
}

// swamp unwraps optional/nullable/default (and v3 "effects"); a v4 `.transform`
// is a "pipe" and is deliberately NOT looked through, as in swamp.
const WRAPPERS = ["optional", "nullable", "default"];

/** Strips optional/nullable/default wrappers down to the leaf schema. */
export function unwrapSchema(schema: z.ZodType): z.ZodType {
  const def = defOf(schema);
  if (WRAPPERS.includes(def.type ?? "") && def.innerType) {
    return unwrapSchema(def.innerType);
  }
  if (def.type === "effects" && def.schema) return unwrapSchema(def.schema);
  return schema;
}

/** Field shape of the object behind a schema, or undefined when not an object. */
export function getObjectShape(
  schema: z.ZodType,
): Record<string, z.ZodType> | undefined {
  const inner = unwrapSchema(schema);
  return schemaType(inner) === "object" ? defOf(inner).shape : undefined;
}

/** True when the schema is (a wrapped) `z.record`: no key routing applies. */
export function isRecordSchema(schema: z.ZodType): boolean {
  return schemaType(unwrapSchema(schema)) === "record";
}

function coerceString(value: string, leafType: string): unknown {
  if (leafType === "boolean") {
    return value === "true" ? true : value === "false" ? false : value;
  }
  if (leafType === "number") {
    const num = Number(value);
    return Number.isNaN(num) ? value : num;
  }
  if (leafType === "array" || leafType === "object") {
    try {
      const parsed: unknown = JSON.parse(value);
      const isArray = Array.isArray(parsed);
      const fits = leafType === "array"
        ? isArray
        : typeof parsed === "object" && parsed !== null && !isArray;
      return fits ? parsed : value;
    } catch {
      return value;
    }
  }
  return value;
}

/**
 * CLI values arrive as strings; swamp turns `"true"`/`"false"`, numeric
 * strings and JSON arrays/objects into the field's type before validating.
 * Non-strings and keys outside the shape pass through unchanged.
 */
export function coerceArgs(
  args: Record<string, unknown>,
  schema: z.ZodType,
): Record<string, unknown> {
  const shape = getObjectShape(schema);
  if (!shape) return args;
  const out: Record<string, unknown> = { ...args };
  for (const [key, value] of Object.entries(out)) {
    const field = shape[key];
    if (typeof value !== "string" || !field) continue;
    out[key] = coerceString(value, schemaType(unwrapSchema(field)));
  }
  return out;
}

/** A Zod issue, reduced to what the harness reports. */
export interface IssueLike {
  code?: string;
  message: string;
  path: PropertyKey[];
}

/** Parse outcome of {@link parseGlobalArgsLeniently}. */
export type LenientResult =
  | { success: true; data: Record<string, unknown> }
  | { success: false; issues: IssueLike[] };

function tryPartial(schema: z.ZodType): z.ZodType | "none" | "refused" {
  const partial = (schema as unknown as { partial?: unknown }).partial;
  if (typeof partial !== "function") return "none";
  try {
    return partial.call(schema) as z.ZodType;
  } catch {
    // Zod v4 refuses .partial() on an object carrying refinements.
    return "refused";
  }
}

function parseFieldByField(
  schema: z.ZodType,
  shape: Record<string, z.ZodType>,
  input: Record<string, unknown>,
): LenientResult {
  const data: Record<string, unknown> = {};
  const issues: IssueLike[] = [];
  for (const [key, field] of Object.entries(shape)) {
    const present = Object.hasOwn(input, key);
    const result = field.safeParse(present ? input[key] : undefined);
    if (result.success) {
      if (present || result.data !== undefined) data[key] = result.data;
    } else if (present) {
      for (const issue of result.error.issues) {
        issues.push({ ...issue, path: [key, ...issue.path] });
      }
    }
  }
  if (issues.length > 0) return { success: false, issues };
  // Object-level refinements run only once every present field passed; an
  // issue that merely says a top-level field is missing does not count.
  const raw = Object.fromEntries(
    Object.entries(input).filter(([key]) => Object.hasOwn(shape, key)),
  );
  const whole = schema.safeParse(raw);
  if (whole.success) return { success: true, data };
  const refined = whole.error.issues.filter((issue) =>
    issue.code === "custom" || issue.path.length !== 1 ||
    Object.hasOwn(raw, issue.path[0] as PropertyKey)
  );
  return refined.length > 0
    ? { success: false, issues: refined }
    : { success: true, data };
}

/**
 * Validates global arguments without requiring missing fields: provided
 * fields are checked, missing ones get their defaults. swamp does this for
 * `model method run` because a `get` needs no creation-time fields.
 */
export function parseGlobalArgsLeniently(
  schema: z.ZodType,
  args: Record<string, unknown>,
): LenientResult {
  const input = Object.fromEntries(Object.entries(args));
  const partial = tryPartial(schema);
  const shape = partial === "refused" ? getObjectShape(schema) : undefined;
  if (shape) return parseFieldByField(schema, shape, input);
  const result = (typeof partial === "string" ? schema : partial).safeParse(
    input,
  );
  return result.success
    ? { success: true, data: { ...(result.data as Record<string, unknown>) } }
    : { success: false, issues: result.error.issues };
}

/**
 * swamp's `formatZodError`: `message at "a.b"` per issue (the path part only
 * when the path is non-empty), issues joined by `; `.
 */
export function formatIssues(issues: readonly IssueLike[]): string {
  return issues.map((issue) =>
    issue.path.length > 0
      ? `${issue.message} at "${issue.path.map(String).join(".")}"`
      : issue.message
  ).join("; ");
}

/**
 * The resource writer's own variant (data_writer.ts): it always appends
 * ` at "<path>"`, even for an empty path.
 */
export function formatWriterIssues(issues: readonly IssueLike[]): string {
  return issues.map((issue) =>
    `${issue.message} at "${issue.path.map(String).join(".")}"`
  ).join("; ");
}
