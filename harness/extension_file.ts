/**
 * `ctx.extensionFile(relPath)`, after swamp-club/swamp
 * `src/domain/extensions/extension_file_resolver.ts`: it throws when the model
 * ships without a manifest, when the path is unsafe (absolute, starting with
 * `/`, or with a `..` segment) and when the file is not there. The harness
 * takes the shipped files as a map (relative → absolute path) instead of a
 * files root, so "not there" means "not in the map".
 *
 * @module
 */

function isSafeRelativePath(relPath: string): boolean {
  if (relPath === "" || /^([/\\]|[A-Za-z]:)/.test(relPath)) return false;
  return !relPath.split(/[/\\]/).includes("..");
}

/** Builds `ctx.extensionFile` over the files a run was given. */
export function makeExtensionFile(
  files: Record<string, string> | undefined,
): (relPath: string) => string {
  return (relPath: string): string => {
    if (files === undefined) {
      throw new Error(
        "ctx.extensionFile() is only available for models and reports " +
          "shipped via an extension manifest. This model does not have an " +
          "associated manifest.yaml.",
      );
    }
    if (!isSafeRelativePath(relPath)) {
      throw new Error(
        `Unsafe relative path passed to ctx.extensionFile(): "${relPath}". ` +
          `Paths must be relative, must not start with "/", and must not ` +
          `contain ".." segments.`,
      );
    }
    const normalized = relPath.replace(/^\.\//, "");
    if (!Object.hasOwn(files, normalized)) {
      throw new Error(
        `Extension file not found: "${relPath}". Check that the file exists ` +
          `on disk and matches the manifest's additionalFiles entry.`,
      );
    }
    return files[normalized];
  };
}
