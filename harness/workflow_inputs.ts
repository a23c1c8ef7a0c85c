/**
 * A workflow run's inputs as swamp settles them before anything runs
 * (swamp-club/swamp `src/libswamp/workflows/run.ts`): string values coerced to
 * the declared type (`src/domain/inputs/input_coercion.ts`), schema defaults
 * applied to keys still missing, then validated
 * (`src/domain/inputs/input_validation_service.ts`: required, type, enum, array
 * items and bounds, object properties); a failure is `Input validation
 * failed:` with one line per problem. A trigger-fired run (a schedule, a
 * webhook) first layers the caller's inputs over the trigger's own
 * (`Workflow.baselineInputs`, a deep merge: `src/domain/inputs/input_merge.ts`).
 *
 * @module
 */

/** A JSON-schema property as workflows declare inputs. */
export interface InputProperty {
  type?: "string" | "number" | "integer" | "boolean" | "array" | "object";
  default?: unknown;
  enum?: unknown[];
  items?: InputProperty;
  properties?: Record<string, InputProperty>;
  required?: string[];
  additionalProperties?: boolean | InputProperty;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  description?: string;
}

/** A workflow's `inputs`. */
export interface InputsSchema {
  properties?: Record<string, InputProperty>;
  required?: string[];
  additionalProperties?: boolean | InputProperty;
}

const isPlain = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** `overrides` over `base`, plain objects merged key by key (arrays replaced). */
export function deepMerge(
  base: Record<string, unknown>,
  overrides: Record<string, unknown>,
): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(overrides)) {
    out[k] = isPlain(out[k]) && isPlain(v) ? deepMerge(out[k], v) : v;
  }
  return out;
}

function coerce(value: string, type: InputProperty["type"]): unknown {
  if (type === "number" || type === "integer") {
    const n = Number(value);
    return Number.isNaN(n) ? value : type === "integer" ? Math.trunc(n) : n;
  }
  if (type === "boolean") {
    return value === "true" ? true : value === "false" ? false : value;
  }
  if (type === "array" || type === "object") {
    try {
      const parsed = JSON.parse(value);
      return (type === "array") === Array.isArray(parsed) &&
          (type === "array" || isPlain(parsed))
        ? parsed
        : value;
    } catch {
      return value;
    }
  }
  return value;
}

function typeError(path: string, value: unknown, type: string): string | null {
  if (type === "integer") {
    return typeof value === "number" && Number.isInteger(value)
      ? null
      : `${path} must be an integer`;
  }
  const actual = value === null
    ? "null"
    : Array.isArray(value)
    ? "array"
    : typeof value;
  return actual === type ? null : `${path} must be a ${type}`;
}

function check(path: string, value: unknown, schema: InputProperty): string[] {
  if (value === null || value === undefined) {
    return schema.default === undefined
      ? [`${path} cannot be null or undefined`]
      : [];
  }
  if (schema.type) {
    const wrong = typeError(path, value, schema.type);
    if (wrong) return [wrong];
  }
  const errors: string[] = [];
  if (schema.enum?.length && !schema.enum.includes(value)) {
    const allowed = schema.enum.map((v) =>
      typeof v === "string" ? `"${v}"` : String(v)
    ).join(", ");
    errors.push(`${path} must be one of: ${allowed}`);
  }
  if (schema.type === "array" && Array.isArray(value)) {
    const s = (n: number) => n === 1 ? "" : "s";
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      errors.push(
        `${path} must have at least ${schema.minItems} item${
          s(schema.minItems)
        }`,
      );
    }
    if (schema.maxItems !== undefined && value.length > schema.maxItems) {
      errors.push(
        `${path} must have at most ${schema.maxItems} item${
          s(schema.maxItems)
        }`,
      );
    }
    if (
      schema.uniqueItems &&
      new Set(value.map((v) => JSON.stringify(v))).size !== value.length
    ) {
      errors.push(`${path} must have unique items`);
    }
    value.forEach((item, i) => {
      if (schema.items) {
        errors.push(...check(`${path}[${i}]`, item, schema.items));
      }
    });
  }
  if (schema.type === "object" && isPlain(value)) {
    errors.push(...checkObject(path, value, schema));
  }
  return errors;
}

function checkObject(
  path: string,
  value: Record<string, unknown>,
  schema: InputProperty,
): string[] {
  const errors: string[] = [];
  for (const key of schema.required ?? []) {
    if (value[key] === undefined) errors.push(`${path}.${key} is required`);
  }
  const extra = schema.additionalProperties;
  for (const [key, v] of Object.entries(value)) {
    const prop = schema.properties?.[key];
    if (prop) errors.push(...check(`${path}.${key}`, v, prop));
    else if (schema.properties && extra === false) {
      errors.push(`${path}.${key} is not a valid property`);
    } else if (typeof extra === "object") {
      errors.push(...check(`${path}.${key}`, v, extra));
    }
  }
  return errors;
}

/**
 * The inputs a run starts with: coerced, defaulted and validated against `schema`; throws
 * `Input validation failed:` naming each problem. Without a schema the inputs pass as given.
 */
export function settleInputs(
  given: Record<string, unknown>,
  schema: InputsSchema | undefined,
): Record<string, unknown> {
  if (!schema) return given;
  const props = schema.properties ?? {};
  const inputs: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(given)) {
    inputs[key] = typeof value === "string" && props[key]?.type
      ? coerce(value, props[key].type)
      : value;
  }
  for (const [key, prop] of Object.entries(props)) {
    if (prop.default !== undefined && !(key in inputs)) {
      inputs[key] = structuredClone(prop.default);
    }
  }
  const errors: string[] = [];
  for (const key of schema.required ?? []) {
    if (inputs[key] === undefined) errors.push(`${key} is required`);
  }
  for (const [key, value] of Object.entries(inputs)) {
    if (props[key]) errors.push(...check(key, value, props[key]));
    else if (schema.additionalProperties === false) {
      errors.push(`${key} is not a valid input property`);
    }
  }
  if (errors.length) {
    throw new Error(
      `Input validation failed:\n${errors.map((e) => `  ${e}`).join("\n")}`,
    );
  }
  return inputs;
}
