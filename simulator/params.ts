/**
 * Parameter checking the way PVE's JSONSchema does it: unknown parameters,
 * missing ones and type errors all answer 400 "Parameter verification failed."
 * with one message per parameter. Catching a client that sends a wrong shape
 * (a JSON array instead of repeated keys, `true` for a boolean…) is the point.
 *
 * @module
 */

import { paramError } from "./http.ts";

/** A parameter's declared type and constraints. */
export interface ParamSpec {
  type: "string" | "integer" | "boolean" | "array";
  optional?: boolean;
  pattern?: RegExp;
  enum?: readonly string[];
  minimum?: number;
  maximum?: number;
  maxLength?: number;
}

/** Declared parameters of an endpoint; `dynamic` admits keys by name (config options). */
export interface ParamSchema {
  props: Record<string, ParamSpec>;
  dynamic?: (key: string) => ParamSpec | undefined;
}

/** Raw parameters: every value of every key, query and body merged. */
export type RawParams = Map<string, string[]>;

/** Checked parameters: integers as numbers, booleans as booleans, arrays as string[]. */
export type Params = Record<string, string | number | boolean | string[]>;

/** PVE's VMID option: an integer in 100..999999999. */
export const VMID_SPEC: ParamSpec = {
  type: "integer",
  minimum: 100,
  maximum: 999999999,
};

/** PVE's node name option. */
export const NODE_SPEC: ParamSpec = {
  type: "string",
  pattern: /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/,
};

const TRUE = new Set(["1", "true", "yes", "on"]);
const FALSE = new Set(["0", "false", "no", "off"]);

/** Checks `raw` against `schema`; throws the 400 ApiError listing every bad parameter. */
export function checkParams(raw: RawParams, schema: ParamSchema): Params {
  const out: Params = {};
  const errors: Record<string, string> = {};
  for (const [key, values] of raw) {
    const spec = schema.props[key] ?? schema.dynamic?.(key);
    if (!spec) {
      errors[key] =
        "property is not defined in schema and the schema does not allow additional properties";
      continue;
    }
    const result = spec.type === "array"
      ? { value: values }
      : checkOne(values[values.length - 1], spec);
    if ("error" in result) errors[key] = result.error;
    else out[key] = result.value;
  }
  for (const [key, spec] of Object.entries(schema.props)) {
    if (!spec.optional && !raw.has(key) && !(key in errors)) {
      errors[key] = "property is missing and it is not optional";
    }
  }
  if (Object.keys(errors).length > 0) throw paramError(errors);
  return out;
}

function checkOne(
  value: string,
  spec: ParamSpec,
): { value: string | number | boolean } | { error: string } {
  switch (spec.type) {
    case "integer": {
      if (!/^-?\d+$/.test(value)) {
        return { error: `type check ('integer') failed - got '${value}'` };
      }
      const n = Number(value);
      if (spec.minimum !== undefined && n < spec.minimum) {
        return { error: `value must have a minimum value of ${spec.minimum}` };
      }
      if (spec.maximum !== undefined && n > spec.maximum) {
        return { error: `value must have a maximum value of ${spec.maximum}` };
      }
      return { value: n };
    }
    case "boolean": {
      const v = value.toLowerCase();
      if (TRUE.has(v)) return { value: true };
      if (FALSE.has(v)) return { value: false };
      return { error: `type check ('boolean') failed - got '${value}'` };
    }
    default: {
      if (spec.maxLength !== undefined && value.length > spec.maxLength) {
        return { error: `value may only be ${spec.maxLength} characters long` };
      }
      if (spec.enum && !spec.enum.includes(value)) {
        return {
          error: `value '${value}' does not have a value in the enumeration '${
            spec.enum.join(", ")
          }'`,
        };
      }
      if (spec.pattern && !spec.pattern.test(value)) {
        return { error: "value does not match the regex pattern" };
      }
      return { value };
    }
  }
}

/**
 * Reads a request body into key/value pairs: form-encoded (what PVE clients
 * send; a repeated key is an array) or JSON (newer PVE accepts it too; an array
 * value becomes repeated pairs).
 */
export function parseBody(
  text: string,
  contentType: string | null,
): [string, string][] {
  if (text.trim() === "") return [];
  if (contentType?.includes("application/json")) {
    const pairs: [string, string][] = [];
    const obj = JSON.parse(text) as Record<string, unknown>;
    for (const [k, v] of Object.entries(obj)) {
      for (const item of Array.isArray(v) ? v : [v]) {
        pairs.push([k, typeof item === "string" ? item : JSON.stringify(item)]);
      }
    }
    return pairs;
  }
  return [...new URLSearchParams(text)];
}

/** Merges query and body pairs into RawParams, keeping every value of a repeated key. */
export function mergeParams(
  ...sources: Iterable<[string, string]>[]
): RawParams {
  const raw: RawParams = new Map();
  for (const source of sources) {
    for (const [k, v] of source) {
      const list = raw.get(k);
      if (list) list.push(v);
      else raw.set(k, [v]);
    }
  }
  return raw;
}
