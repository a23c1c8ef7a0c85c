/**
 * The adversarial review's mandatory schema-write checks (swamp's extension skill, "Mandatory
 * Mechanical Verification" 1, 3 and 4), done on what the package really writes: the field paths
 * every record write of a test run carried (the harness logs them to `$HARNESS_RECORD_FIELDS`,
 * harness/record_fields.ts) against each spec's zod schema in the models. Prints, per spec, the
 * schema fields no write ever carried, the written fields the schema does not declare (zod
 * would drop them silently) and any write that failed its schema, and exits 1 on either of the
 * latter.
 *
 * Usage: HARNESS_RECORD_FIELDS=/tmp/fields.jsonl deno test -A tests/e2e/ tests/workflows/
 *        deno run -A scripts/review/record_fields.ts /tmp/fields.jsonl
 */
import { z } from "npm:zod@4";
import { model as qemu } from "../../js/proxmox_qemu.ts";
import { model as lxc } from "../../js/proxmox_lxc.ts";

type Def = {
  type?: string;
  innerType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  options?: z.ZodType[];
};
const def = (s: z.ZodType) => (s as unknown as { _def: Def })._def;

/** Every field path a schema declares (objects' keys, arrays as `[]`; records are leaves). */
export function schemaPaths(schema: z.ZodType, prefix = ""): string[] {
  const d = def(schema);
  switch (d.type) {
    case "optional":
    case "nullable":
    case "default":
      return schemaPaths(d.innerType!, prefix);
    case "pipe":
      return schemaPaths(d.in!, prefix);
    case "array":
      return schemaPaths(d.element!, `${prefix}[]`);
    case "union":
      return [...new Set(d.options!.flatMap((o) => schemaPaths(o, prefix)))];
    case "object":
      return Object.entries(d.shape!).flatMap(([k, v]) => {
        const path = prefix ? `${prefix}.${k}` : k;
        return [path, ...schemaPaths(v, path)];
      });
    default:
      return [];
  }
}

/** A written path is declared when the schema has it, or it lies under a record (free keys). */
function declared(path: string, paths: Set<string>, free: string[]): boolean {
  return paths.has(path) || free.some((f) => path.startsWith(`${f}.`));
}

/** Paths whose schema is a record (or unknown): their keys are the data's. */
function freePaths(schema: z.ZodType, prefix = ""): string[] {
  const d = def(schema);
  if (["optional", "nullable", "default"].includes(d.type ?? "")) {
    return freePaths(d.innerType!, prefix);
  }
  if (d.type === "pipe") return freePaths(d.in!, prefix);
  if (d.type === "record" || d.type === "unknown" || d.type === "any") {
    return [prefix];
  }
  if (d.type === "array") return freePaths(d.element!, `${prefix}[]`);
  if (d.type === "union") {
    return d.options!.flatMap((o) => freePaths(o, prefix));
  }
  if (d.type === "object") {
    return Object.entries(d.shape!).flatMap(([k, v]) =>
      freePaths(v, prefix ? `${prefix}.${k}` : k)
    );
  }
  return [];
}

if (import.meta.main) {
  const lines = (await Deno.readTextFile(Deno.args[0])).split("\n").filter(
    Boolean,
  )
    .map((l) =>
      JSON.parse(l) as {
        type: string;
        spec: string;
        paths: string[];
        invalid?: string;
      }
    );
  let bad = 0;
  for (const model of [qemu, lxc]) {
    for (const [spec, { schema }] of Object.entries(model.resources)) {
      const writes = lines.filter((l) =>
        l.type === model.type && l.spec === spec
      );
      const written = new Set(writes.flatMap((w) => w.paths));
      const paths = new Set(schemaPaths(schema as z.ZodType));
      const free = freePaths(schema as z.ZodType).filter(Boolean);
      const undeclared = [...written].filter((p) => !declared(p, paths, free));
      const never = [...paths].filter((p) =>
        !written.has(p) && !free.some((f) => p.startsWith(`${f}.`))
      );
      const invalid = [...new Set(writes.flatMap((w) => w.invalid ?? []))];
      bad += undeclared.length + invalid.length;
      for (const why of invalid) {
        console.log(`${model.type} ${spec}: a write failed its schema: ${why}`);
      }
      console.log(
        `${model.type} ${spec}: ${writes.length} writes; undeclared: ${
          undeclared.join(", ") || "none"
        }; never written: ${never.join(", ") || "none"}`,
      );
    }
  }
  Deno.exit(bad > 0 ? 1 : 0);
}
