/**
 * Loads a swamp package that exposes the `@stateless/proxmox/qemu` model — this project's `js/` or a
 * baseline folder — and fits arguments to what its zod schemas declare.
 *
 * The entry is found the way swamp finds models: the manifest's `models:` list when there is one,
 * else every `.ts` file (outside `_`-folders, not `*_test.ts`) whose text has `export const model`.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { ModelLike } from "../../harness/types.ts";
import { getObjectShape } from "../../harness/zod_introspect.ts";
import type { z } from "npm:zod@4";

/** The model type every compared package must expose. */
export const QEMU_TYPE = "@stateless/proxmox/qemu";

/** A loaded package. */
export interface Package {
  /** Short name for table columns: the manifest's `name@version`, else the folder name. */
  label: string;
  /** Absolute folder. */
  dir: string;
  /** Absolute path of the model file exporting the qemu model. */
  entry: string;
  /** How the entry was found. */
  foundBy: "manifest" | "scan";
  model: ModelLike;
}

/** The `models:` entries of a manifest.yaml (a block list or a flow list), or undefined when absent. */
export function manifestModels(text: string): string[] | undefined {
  const lines = text.split(/\r?\n/);
  const at = lines.findIndex((l) => /^models:/.test(l));
  if (at < 0) return undefined;
  const flow = /^models:\s*\[(.*)\]\s*$/.exec(lines[at]);
  if (flow) {
    return flow[1].split(",").map(unquote).filter((s) => s !== "");
  }
  const out: string[] = [];
  for (const line of lines.slice(at + 1)) {
    if (/^\s*(#.*)?$/.test(line)) continue;
    const item = /^\s+-\s+(.+?)\s*$/.exec(line);
    if (!item) break;
    out.push(unquote(item[1]));
  }
  return out;
}

/** A manifest's top-level scalar `key: value`, unquoted. */
function manifestScalar(text: string, key: string): string | undefined {
  const m = new RegExp(`^${key}:\\s*(.+?)\\s*$`, "m").exec(text);
  return m ? unquote(m[1]) : undefined;
}

function unquote(s: string): string {
  const t = s.trim();
  return /^(["']).*\1$/.test(t) ? t.slice(1, -1) : t;
}

/** Model files under `dir` as swamp's loader sees them: `.ts`, not `*_test.ts`, no `_`-folder, `export const model`. */
export async function scanForModels(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (at: string, depth: number) => {
    if (depth > 8) return;
    const entries = [];
    for await (const e of Deno.readDir(at)) entries.push(e);
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const e of entries) {
      const path = join(at, e.name);
      if (e.isDirectory) {
        if (!e.name.startsWith("_") && !e.name.startsWith(".")) {
          await walk(path, depth + 1);
        }
      } else if (e.isFile && e.name.endsWith(".ts")) {
        if (e.name.endsWith("_test.ts")) continue;
        const text = await Deno.readTextFile(path);
        if (/export\s+const\s+model\s*(:[^=]+)?=\s*\{/.test(text)) {
          found.push(path);
        }
      }
    }
  };
  await walk(dir, 0);
  return found;
}

/** Imports the package in `dir` and returns its qemu model; throws with what was looked at. */
export async function loadPackage(dir: string): Promise<Package> {
  const abs = resolve(dir);
  let manifest: string | undefined;
  try {
    manifest = await Deno.readTextFile(join(abs, "manifest.yaml"));
  } catch {
    manifest = undefined;
  }
  const listed = manifest ? manifestModels(manifest) : undefined;
  const candidates = listed?.length
    ? listed.map((m) => join(abs, m))
    : await scanForModels(abs);
  const tried: string[] = [];
  for (const file of candidates) {
    const mod = await import(pathToFileURL(file).href) as { model?: ModelLike };
    tried.push(`${file} (type ${mod.model?.type ?? "none"})`);
    if (mod.model?.type === QEMU_TYPE) {
      const name = manifest ? manifestScalar(manifest, "name") : undefined;
      const version = manifest
        ? manifestScalar(manifest, "version")
        : undefined;
      return {
        label: name ? `${name}@${version ?? mod.model.version}` : abs,
        dir: abs,
        entry: file,
        foundBy: listed?.length ? "manifest" : "scan",
        model: mod.model,
      };
    }
  }
  throw new Error(
    `no model of type ${QEMU_TYPE} in ${abs}; looked at: ${
      tried.join(", ") || "no model file"
    }`,
  );
}

/** Result of {@link fitArgs}. */
export interface FittedArgs {
  /** The arguments the schema declares. */
  args: Record<string, unknown>;
  /** Keys left out because the schema does not declare them. */
  dropped: string[];
}

/**
 * Keeps only the keys an object schema declares (swamp rejects any other `--input`). A schema that is
 * not an object (e.g. a record) takes everything.
 */
export function fitArgs(
  schema: z.ZodType | undefined,
  args: Record<string, unknown>,
): FittedArgs {
  const shape = schema ? getObjectShape(schema) : undefined;
  if (!shape) return { args: { ...args }, dropped: [] };
  const out: Record<string, unknown> = {};
  const dropped: string[] = [];
  for (const [k, v] of Object.entries(args)) {
    if (Object.hasOwn(shape, k)) out[k] = v;
    else dropped.push(k);
  }
  return { args: out, dropped };
}

/** Whether the package has `method`. */
export function hasMethod(pkg: Package, method: string): boolean {
  return Object.hasOwn(pkg.model.methods, method);
}

/** Every file under `dir` (recursively), with its bytes. */
export async function packageFiles(
  dir: string,
): Promise<{ path: string; bytes: Uint8Array }[]> {
  const out: { path: string; bytes: Uint8Array }[] = [];
  const walk = async (at: string, depth: number) => {
    if (depth > 8) return;
    const entries = [];
    for await (const e of Deno.readDir(at)) entries.push(e);
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const e of entries) {
      const path = join(at, e.name);
      if (e.isDirectory) await walk(path, depth + 1);
      else if (e.isFile) out.push({ path, bytes: await Deno.readFile(path) });
    }
  };
  await walk(dir, 0);
  return out;
}
