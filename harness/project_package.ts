/**
 * This project's package (js/) as the harness runs it: the files its manifest ships, which the
 * models find through `ctx.extensionFile` (the core's wasm module among them).
 *
 * @module
 */
import { makeExtensionFile } from "./extension_file.ts";
import { manifestFiles } from "./manifest_files.ts";

/** Relative path → absolute path of every file js/manifest.yaml ships. */
export const PACKAGE_FILES: Record<string, string> = manifestFiles(
  new URL("../js/manifest.yaml", import.meta.url),
);

/** `ctx.extensionFile` over {@link PACKAGE_FILES}, for code that calls the core directly. */
export const PACKAGE: { extensionFile(relPath: string): string } = {
  extensionFile: makeExtensionFile(PACKAGE_FILES),
};
