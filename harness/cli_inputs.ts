/**
 * `--input key=value` as the swamp CLI reads it (swamp-club/swamp `src/cli/input_parser.ts`
 * parseKeyValueInputs): the key ends at the first `=`; a dotted key builds nested objects
 * (`config.net0=virtio,bridge=vmbr0` → `{config: {net0: "virtio,bridge=vmbr0"}}`); a `:json`
 * suffix on the key's last segment parses the value as JSON. Values otherwise stay strings: the
 * arguments' schema coerces them later (zod_introspect.ts). `@file` values are not read here.
 *
 * @module
 */

/** Why a pair was refused, in swamp's words. */
export class InputError extends Error {}

/** The pairs as one object of arguments. */
export function parseInputPairs(pairs: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at === -1) {
      throw new InputError(
        `Invalid input format: "${pair}". Expected key=value format.`,
      );
    }
    if (at === 0) {
      throw new InputError(`Invalid input: empty key in "${pair}".`);
    }
    const [key, value] = typedValue(pair.slice(0, at), pair.slice(at + 1));
    const path = key.split(".");
    // An object's own prototype is not an argument (and must not be written through).
    if (path.some((p) => p === "__proto__")) {
      throw new InputError(`Invalid input: key "${key}" names __proto__.`);
    }
    setNested(out, path, value);
  }
  return out;
}

/** `leaf:json` → the leaf and the parsed value; any other key keeps the string. */
function typedValue(key: string, raw: string): [string, unknown] {
  const dot = key.lastIndexOf(".");
  const leaf = key.slice(dot + 1);
  if (!leaf.endsWith(":json") || leaf.length === ":json".length) {
    return [key, raw];
  }
  const bare = key.slice(0, key.length - ":json".length);
  try {
    return [bare, JSON.parse(raw)];
  } catch (err) {
    throw new InputError(
      `Invalid JSON value for input "${bare}": ${(err as Error).message}`,
    );
  }
}

function setNested(
  obj: Record<string, unknown>,
  path: string[],
  value: unknown,
): void {
  let at = obj;
  for (const part of path.slice(0, -1)) {
    const next = at[part];
    if (typeof next !== "object" || next === null || Array.isArray(next)) {
      at[part] = {};
    }
    at = at[part] as Record<string, unknown>;
  }
  at[path[path.length - 1]] = value;
}
