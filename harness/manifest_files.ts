/**
 * The files an extension manifest ships — its `additionalFiles` and `binaries` — as the map
 * {@link makeExtensionFile} resolves `ctx.extensionFile` over. swamp resolves the same relative
 * paths against the manifest's folder (a local extension) or the archive's `files/` folder (a
 * pulled one); a file the manifest does not list is not there once the package is pulled, so the
 * harness does not find it either.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "npm:yaml@2";

/** The lists of shipped files a manifest may have. */
export type ShippedList = "additionalFiles" | "binaries";

/** Relative path → absolute path of every file `manifest.yaml` at `manifestPath` ships in `lists`. */
export function manifestFiles(
  manifestPath: string | URL,
  lists: ShippedList[] = ["additionalFiles", "binaries"],
): Record<string, string> {
  const path = manifestPath instanceof URL
    ? fileURLToPath(manifestPath)
    : manifestPath;
  const manifest = parse(Deno.readTextFileSync(path)) as Record<
    string,
    unknown
  >;
  const files: Record<string, string> = {};
  for (const field of lists) {
    const listed = manifest[field] ?? [];
    if (!Array.isArray(listed)) {
      throw new Error(`${path}: ${field} is not a list`);
    }
    for (const rel of listed) {
      files[String(rel).replace(/^\.\//, "")] = join(
        dirname(path),
        String(rel),
      );
    }
  }
  return files;
}

/** The entries of one list of a manifest (`workflows`, `skills`, …), as written. */
export function manifestList(
  manifestPath: string | URL,
  list: string,
): string[] {
  const path = manifestPath instanceof URL
    ? fileURLToPath(manifestPath)
    : manifestPath;
  const manifest = parse(Deno.readTextFileSync(path)) as Record<
    string,
    unknown
  >;
  const listed = manifest[list] ?? [];
  if (!Array.isArray(listed)) throw new Error(`${path}: ${list} is not a list`);
  return listed.map(String);
}
