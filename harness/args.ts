/**
 * Global and method argument handling.
 *
 * Read from swamp-club/swamp:
 * - `src/libswamp/models/run.ts`: `--input` keys that are not method
 *   arguments are rejected up front ("Unknown method input(s): …", code
 *   `validation_failed`) when the method's arguments are an object schema;
 * - `src/domain/models/method_execution_service.ts` (`executeWorkflow`):
 *   global arguments are coerced, unknown keys rejected ("Global arguments
 *   validation failed: Unknown argument(s): …"), then parsed LENIENTLY
 *   (missing fields not required, defaults applied; see
 *   `parseGlobalArgsLeniently`) and the parsed values replace the
 *   definition's;
 * - same file (`execute`): method args are `{...globalArgs, ...methodArgs}`
 *   (method args only, when the arguments schema is a `z.record`), coerced,
 *   then `arguments.safeParse`d; failure → "Method arguments validation
 *   failed: <message at "path">; …" before `execute` runs.
 *
 * @module
 */

import { z } from "npm:zod@4";
import {
  coerceArgs,
  formatIssues,
  getObjectShape,
  isRecordSchema,
  parseGlobalArgsLeniently,
} from "./zod_introspect.ts";

/** The CLI's unknown-input message, or null when every key is an argument. */
export function unknownInputsError(
  schema: z.ZodType,
  inputs: Record<string, unknown>,
): string | null {
  const shape = getObjectShape(schema);
  if (!shape || Object.keys(inputs).length === 0) return null;
  const unknown = Object.keys(inputs).filter((k) => !Object.hasOwn(shape, k));
  if (unknown.length === 0) return null;
  const valid = Object.keys(shape).join(", ");
  return `Unknown method input(s): ${unknown.join(", ")}. ` +
    `Valid inputs are: ${valid || "none"}`;
}

/** Validates global arguments; returns the parsed values or throws. */
export function validateGlobalArgs(
  schema: z.ZodType | undefined,
  raw: Record<string, unknown>,
): Record<string, unknown> {
  if (!schema) return { ...raw };
  const coerced = coerceArgs(raw, schema);
  const shape = getObjectShape(schema);
  if (shape) {
    const unknown = Object.keys(coerced).filter((k) =>
      !Object.hasOwn(shape, k)
    );
    if (unknown.length > 0) {
      const valid = Object.keys(shape).join(", ");
      throw new Error(
        `Global arguments validation failed: Unknown argument(s): ${
          unknown.join(", ")
        }. Valid arguments are: ${valid || "none"}`,
      );
    }
  }
  const result = parseGlobalArgsLeniently(schema, coerced);
  if (!result.success) {
    throw new Error(
      `Global arguments validation failed: ${formatIssues(result.issues)}`,
    );
  }
  // swamp sets each parsed key on the definition, so unparsed keys stay too.
  return { ...raw, ...result.data };
}

/** Merges and parses a method's arguments; returns the parsed data or throws. */
export function parseMethodArgs(
  schema: z.ZodType,
  globalArgs: Record<string, unknown>,
  methodArgs: Record<string, unknown>,
): unknown {
  const merged = isRecordSchema(schema)
    ? methodArgs
    : { ...globalArgs, ...methodArgs };
  const result = schema.safeParse(coerceArgs(merged, schema));
  if (!result.success) {
    throw new Error(
      `Method arguments validation failed: ${
        formatIssues(result.error.issues)
      }`,
    );
  }
  return result.data;
}
