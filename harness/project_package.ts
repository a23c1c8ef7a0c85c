/**
 * This project's package (js/) as the harness runs it: the files its manifest ships, which the
 * models find through `ctx.extensionFile` (the core's wasm module among them).
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { makeExtensionFile } from "./extension_file.ts";
import { manifestFiles, manifestList } from "./manifest_files.ts";

/** Relative path → absolute path of every file js/manifest.yaml ships. */
export const PACKAGE_FILES: Record<string, string> = manifestFiles(
  new URL("../js/manifest.yaml", import.meta.url),
);

/** `ctx.extensionFile` over {@link PACKAGE_FILES}, for code that calls the core directly. */
export const PACKAGE: { extensionFile(relPath: string): string } = {
  extensionFile: makeExtensionFile(PACKAGE_FILES),
};

/**
 * The package's workflows: file name → absolute path of each `workflows:` entry of
 * js/manifest.yaml, kept in js/workflows/ (what a repository's `extensions/workflows/` holds once
 * the package is installed; swamp's push looks for them there).
 */
export const PACKAGE_WORKFLOWS: Record<string, string> = Object.fromEntries(
  manifestList(new URL("../js/manifest.yaml", import.meta.url), "workflows")
    .map((
      file,
    ) => [
      file,
      fileURLToPath(new URL(`../js/workflows/${file}`, import.meta.url)),
    ]),
);

/** The text of the package's workflow `file` (e.g. `provision-vm.yaml`). */
export function packageWorkflow(file: string): string {
  const path = PACKAGE_WORKFLOWS[file];
  if (!path) throw new Error(`js/manifest.yaml lists no workflow ${file}`);
  return Deno.readTextFileSync(path);
}
