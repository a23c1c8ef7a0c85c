/**
 * What every record write carried, for the adversarial review's schema-write check
 * (scripts/review/record_fields.ts): with `HARNESS_RECORD_FIELDS` naming a file, each
 * `writeResource` appends one JSON line — the model type, the spec and the data's field paths
 * (`disks[].device`). Off (and silent) unless the variable is set and readable.
 *
 * @module
 */

/** The field paths of `value`: keys joined by `.`, array items as `[]`. */
export function fieldPaths(value: unknown, prefix = ""): string[] {
  if (Array.isArray(value)) {
    return value.flatMap((item) => fieldPaths(item, `${prefix}[]`));
  }
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([key, v]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    return [path, ...fieldPaths(v, path)];
  });
}

function target(): string | undefined {
  const granted = Deno.permissions.querySync({
    name: "env",
    variable: "HARNESS_RECORD_FIELDS",
  }).state === "granted";
  return granted ? Deno.env.get("HARNESS_RECORD_FIELDS") : undefined;
}

/**
 * Appends the write's field paths (and the schema's complaint, when the data failed it) to
 * `$HARNESS_RECORD_FIELDS`, when set.
 */
export function noteFields(
  type: string,
  spec: string,
  data: unknown,
  invalid?: string,
): void {
  const file = target();
  if (!file) return;
  const paths = [...new Set(fieldPaths(data))].sort();
  const line = JSON.stringify({ type, spec, paths, invalid }) + "\n";
  Deno.writeTextFileSync(file, line, { append: true });
}
