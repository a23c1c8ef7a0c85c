/**
 * Holds a request's parameters and an answer's data against PVE 9's schema,
 * the way PVE does it: pve-common src/PVE/JSONSchema.pm `validate` →
 * `check_object` → `check_prop` → `check_type`/`check_format`, with PVE's
 * per-parameter messages. Parameters arrive as a node decodes them: a form
 * body over HTTP (every value a string; a boolean only `0`/`1`), or pvesh
 * options over ssh (`get_options`: booleans through `parse_boolean`, `-list`
 * formats joined with commas).
 *
 * @module
 */

import { type EndpointFacts, propertyOf, type PropSchema } from "./facts.ts";
import { checkNamedFormat, NAMED_HASH_FORMATS } from "./formats.ts";

/** How the node received the parameters. */
export type Decoding = "http" | "cli";

/** Raw parameters: every value of every key (query and body merged, or pvesh options). */
export type RawParams = Map<string, string[]>;

/** The outcome of checking one request's parameters. */
export interface ParamVerdict {
  /** Per-parameter messages: PVE's 400 `Parameter verification failed.` when non-empty. */
  errors: Record<string, string>;
  /** A 400 raised before validation (pvesh's option parsing), e.g. `unable to parse boolean option`. */
  refusal?: string;
  /** The parameters as the handler receives them (booleans as `0`/`1`). */
  values: Map<string, string | string[]>;
}

const NOT_IN_SCHEMA =
  "property is not defined in schema and the schema does not allow additional properties";
const MISSING = "property is missing and it is not optional";

/** pve-common is_number / is_integer. */
const IS_NUMBER = /^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$/;
const IS_INTEGER = /^[+-]?\d+$/;

/** pve-common parse_boolean. */
export function parseBoolean(value: string): "1" | "0" | undefined {
  if (/^(1|on|yes|true)$/i.test(value)) return "1";
  if (/^(0|off|no|false)$/i.test(value)) return "0";
  return undefined;
}

function isListFormat(schema: PropSchema): boolean {
  return typeof schema.format === "string" && schema.format.includes("-list");
}

/**
 * Checks `raw` against the parameters of `facts` (endpoint `template`).
 * Path parameters must be in `raw` too: PVE validates them like any other.
 */
export function checkParameters(
  facts: EndpointFacts,
  template: string,
  raw: RawParams,
  decoding: Decoding,
): ParamVerdict {
  const props = facts.parameters?.properties ?? {};
  // check_object: only an explicit 0 closes the schema.
  const closed = facts.parameters?.additionalProperties === 0;
  const errors: Record<string, string> = {};
  const values = new Map<string, string | string[]>();
  for (const [key, list] of raw) {
    const schema = propertyOf(props, key, template);
    if (!schema) {
      // pvesh's Getopt::Long knows only the schema's options (JSONSchema.pm get_options).
      if (decoding === "cli") {
        return { errors: {}, refusal: "unable to parse option", values };
      }
      if (closed) errors[key] = NOT_IN_SCHEMA;
      continue;
    }
    const decoded = decode(schema, list, decoding);
    if (decoded === undefined) {
      return { errors: {}, refusal: "unable to parse boolean option", values };
    }
    values.set(key, decoded);
  }
  for (const [key, value] of values) {
    const schema = propertyOf(props, key, template)!;
    const error = checkValue(value, schema, key);
    if (error) errors[key] = error;
  }
  for (const [key, schema] of Object.entries(props)) {
    if (key.endsWith("[n]") || schema.alias) continue;
    if (!schema.optional && !values.has(key) && !(key in errors)) {
      errors[key] = MISSING;
    }
    const requires = schema.requires;
    if (requires && values.has(key) && !values.has(requires)) {
      errors[requires] = `missing property required by '${key}'`;
    }
  }
  return { errors, values };
}

/** One parameter's values as the handler receives them; undefined = pvesh refuses a boolean. */
function decode(
  schema: PropSchema,
  list: string[],
  decoding: Decoding,
): string | string[] | undefined {
  if (schema.type === "array") return list;
  if (decoding === "http") {
    // A guess at pve-http-server: a repeated key reaches the handler as one
    // value (its parts joined), so a scalar parameter given twice fails its check.
    return list.join("\0");
  }
  // pvesh (JSONSchema.pm get_options): repeated `-list` options are joined
  // with commas, booleans parsed (a bare flag is 1), other repeats keep the last.
  if (isListFormat(schema)) return list.join(",");
  const value = list[list.length - 1];
  if (schema.type === "boolean") {
    return value === "" ? "1" : parseBoolean(value);
  }
  return value;
}

/** check_prop for one parameter value: PVE's message, or undefined when valid. */
export function checkValue(
  value: string | string[],
  schema: PropSchema,
  path: string,
): string | undefined {
  if (Array.isArray(value)) {
    if (schema.type !== "array") return `type check ('${schema.type}') failed`;
    for (const [i, item] of value.entries()) {
      const error = schema.items &&
        checkValue(item, schema.items, `${path}[${i}]`);
      if (error) return error;
    }
    return undefined;
  }
  const typeError = checkType(value, schema.type);
  if (typeError) return typeError;
  if (schema.format !== undefined) {
    const error = checkFormat(schema.format, value, path);
    if (error) return `invalid format - ${error}`;
  }
  if (schema.pattern !== undefined && !patternOf(schema.pattern).test(value)) {
    return "value does not match the regex pattern";
  }
  // Perl's length counts characters (the form body is decoded as UTF-8).
  const length = [...value].length;
  if (schema.maxLength !== undefined && length > schema.maxLength) {
    return `value may only be ${schema.maxLength} characters long`;
  }
  if (schema.minLength !== undefined && length < schema.minLength) {
    return `value must be at least ${schema.minLength} characters long`;
  }
  if (IS_NUMBER.test(value)) {
    if (
      schema.maximum !== undefined && Number(value) > Number(schema.maximum)
    ) {
      return `value must have a maximum value of ${schema.maximum}`;
    }
    if (
      schema.minimum !== undefined && Number(value) < Number(schema.minimum)
    ) {
      return `value must have a minimum value of ${schema.minimum}`;
    }
  }
  if (schema.enum && !schema.enum.includes(value)) {
    return `value '${value}' does not have a value in the enumeration '${
      schema.enum.join(", ")
    }'`;
  }
  return undefined;
}

/** check_type for a string value (a form value or a property-string part). */
function checkType(
  value: string,
  type: string | undefined,
): string | undefined {
  switch (type) {
    case "boolean":
      // Only 0 and 1: `yes`/`true` are pvesh's (parse_boolean), never the HTTP API's.
      return value === "0" || value === "1"
        ? undefined
        : `type check ('boolean') failed - got '${value}'`;
    case "integer":
      return IS_INTEGER.test(value)
        ? undefined
        : `type check ('integer') failed - got '${value}'`;
    case "number":
      return IS_NUMBER.test(value)
        ? undefined
        : `type check ('number') failed - got '${value}'`;
    case "array":
    case "object":
      return `type check ('${type}') failed`;
    default:
      return undefined;
  }
}

const PATTERNS = new Map<string, RegExp>();

/** A schema pattern anchored like Perl's `m/^$pattern$/`. */
function patternOf(pattern: string): RegExp {
  let re = PATTERNS.get(pattern);
  if (!re) {
    re = new RegExp(`^(?:${pattern})$`);
    PATTERNS.set(pattern, re);
  }
  return re;
}

/** check_format: named formats, `-list`/`-opt`, and property strings. */
function checkFormat(
  format: string | Record<string, PropSchema>,
  value: string,
  path: string,
): string | undefined {
  if (typeof format !== "string") {
    return checkPropertyString(format, value, path);
  }
  const hash = NAMED_HASH_FORMATS[format];
  if (hash) return checkPropertyString(hash, value, path);
  return checkNamedFormat(format, value);
}

/**
 * parse_property_string: `key=value` parts (or the default key's bare value),
 * aliases resolved, booleans parsed, then each part checked like a property
 * with additional properties refused. Returns the die text PVE puts after
 * `invalid format - `.
 */
export function checkPropertyString(
  format: Record<string, PropSchema>,
  data: string,
  path: string,
): string | undefined {
  const parsed = new Map<string, string>();
  let defaultKey: string | undefined;
  for (const part of data.split(",")) {
    if (/^\s*$/.test(part)) continue;
    const kv = /^([^=]+)=(.+)$/s.exec(part);
    if (kv) {
      let [, key, value] = kv;
      if (parsed.has(key)) {
        return `duplicate key in comma-separated list property: ${key}\n`;
      }
      let schema = format[key];
      if (schema?.alias) {
        if (schema.keyAlias) {
          if (parsed.has(schema.keyAlias)) {
            return `key alias '${schema.keyAlias}' is already defined\n`;
          }
          parsed.set(schema.keyAlias, key);
        }
        key = schema.alias;
        schema = format[key];
        if (parsed.has(key)) {
          return `key '${key}' is already defined (via alias)\n`;
        }
      }
      if (!schema) {
        return `invalid key in comma-separated list property: ${key}\n`;
      }
      parsed.set(
        key,
        schema.type === "boolean" ? parseBoolean(value) ?? value : value,
      );
    } else if (!part.includes("=")) {
      if (defaultKey) {
        return `duplicate key in comma-separated list property: ${defaultKey}\n`;
      }
      defaultKey = Object.keys(format).find((k) => format[k].default_key);
      if (!defaultKey) {
        return "value without key, but schema does not define a default key\n";
      }
      if (parsed.has(defaultKey)) {
        return `duplicate key in comma-separated list property: ${defaultKey}\n`;
      }
      const schema = format[defaultKey];
      parsed.set(
        defaultKey,
        schema.type === "boolean" ? parseBoolean(part) ?? part : part,
      );
    } else {
      return "missing key in comma-separated list property\n";
    }
  }
  const errors: string[] = [];
  for (const [key, schema] of Object.entries(format)) {
    if (schema.alias) continue;
    const value = parsed.get(key);
    if (value === undefined) {
      if (!schema.optional) errors.push(`${path}.${key}: ${MISSING}`);
      continue;
    }
    const error = checkValue(value, schema, `${path}.${key}`);
    if (error) errors.push(`${path}.${key}: ${error}`);
    if (schema.requires && !parsed.has(schema.requires)) {
      errors.push(
        `${path}.${schema.requires}: missing property required by '${path}.${key}'`,
      );
    }
  }
  // PVE::Exception stringify: the message, then one `<path>: <error>` line each.
  return errors.length > 0 ? `format error\n${errors.join("\n")}\n` : undefined;
}

/** One way an answer departs from the endpoint's `returns`. */
export interface AnswerViolation {
  /** Where in `data`, e.g. `data[0].name`. */
  at: string;
  rule: string;
}

/**
 * Holds answer `data` against `returns`. JSON types are checked as a client
 * sees them: `string` must be a JSON string, `integer`/`number` a JSON number,
 * `boolean` 0/1 (or a JSON boolean); objects admit unlisted keys unless the
 * schema says `additionalProperties: 0`.
 */
export function checkAnswer(
  schema: PropSchema | undefined,
  data: unknown,
  template: string,
  at = "data",
): AnswerViolation[] {
  if (!schema || data === null || data === undefined) return [];
  // A `a|b` type passes when any of its types does (check_type with a list).
  const types = (schema.type ?? "").split("|");
  let best: AnswerViolation[] | undefined;
  for (const type of types) {
    const found = checkAnswerType(type, schema, data, template, at);
    if (found.length === 0) return [];
    best ??= found;
  }
  return best ?? [];
}

function checkAnswerType(
  type: string,
  schema: PropSchema,
  data: unknown,
  template: string,
  at: string,
): AnswerViolation[] {
  const out: AnswerViolation[] = [];
  const fail = (rule: string) => out.push({ at, rule });
  switch (type) {
    case "string":
      if (typeof data !== "string") {
        fail(`must be a JSON string (got ${JSON.stringify(data)})`);
      } else if (schema.enum && !schema.enum.includes(data)) {
        fail(`must be one of ${schema.enum.join(", ")} (got '${data}')`);
      }
      break;
    case "integer":
      if (typeof data !== "number" || !Number.isInteger(data)) {
        fail(`must be a JSON integer (got ${JSON.stringify(data)})`);
      }
      break;
    case "number":
      if (typeof data !== "number") {
        fail(`must be a JSON number (got ${JSON.stringify(data)})`);
      }
      break;
    case "boolean":
      if (data !== 0 && data !== 1 && typeof data !== "boolean") {
        fail(`must be 0 or 1 (got ${JSON.stringify(data)})`);
      }
      break;
    case "array":
      if (!Array.isArray(data)) fail("must be a JSON array");
      else {
        data.forEach((item, i) =>
          out.push(...checkAnswer(schema.items, item, template, `${at}[${i}]`))
        );
      }
      break;
    case "object":
      if (typeof data !== "object" || Array.isArray(data)) {
        fail("must be a JSON object");
        break;
      }
      out.push(
        ...checkObjectAnswer(
          schema,
          data as Record<string, unknown>,
          template,
          at,
        ),
      );
      break;
  }
  return out;
}

function checkObjectAnswer(
  schema: PropSchema,
  data: Record<string, unknown>,
  template: string,
  at: string,
): AnswerViolation[] {
  const out: AnswerViolation[] = [];
  const props = schema.properties ?? {};
  for (const [key, sub] of Object.entries(props)) {
    if (key.endsWith("[n]")) continue;
    if (data[key] === undefined) {
      if (!sub.optional) {
        out.push({ at: `${at}.${key}`, rule: "is required by returns" });
      }
      continue;
    }
    out.push(...checkAnswer(sub, data[key], template, `${at}.${key}`));
  }
  for (const [key, value] of Object.entries(data)) {
    if (Object.hasOwn(props, key)) continue;
    const sub = propertyOf(props, key, template);
    if (sub) out.push(...checkAnswer(sub, value, template, `${at}.${key}`));
    else if (schema.additionalProperties === 0) {
      out.push({ at: `${at}.${key}`, rule: "is not in returns" });
    }
  }
  return out;
}
